/* kernels: type table, fp16/bf16 conversion, quantization, the generic
 * (scalar) kernels, and the run-time dispatch to a SIMD level.
 *
 * Reading order: type table; conversions; quantization; generic dot
 * products and matvec; the generic level's table; dispatch (the level
 * tables by ISA, the absent kernels); public entry points; the non-matvec
 * math of the forward pass (rmsnorm, softmax, rope, attention: generic
 * twins written to match llama2.c's run.c operation for operation, then
 * their dispatchers, whose SIMD versions give the same bits; swiglu, whose
 * SIMD versions give the same bits too).
 *
 * See kernels_impl.h for the reduction orders and what is bit-exact. */
#include "kernels/kernels_impl.h"
#include "kernels/kquants.h"

#include <assert.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#endif
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base.h"

/* ---------------------------------------------------------------- types */

const dtype_info_t dtype_info[DTYPE_COUNT] = {
	[DTYPE_F32] = { "f32", 0, 1, 4, DTYPE_F32 },
	[DTYPE_F16] = { "f16", 1, 1, 2, DTYPE_F32 },
	[DTYPE_BF16] = { "bf16", 30, 1, 2, DTYPE_F32 },
	[DTYPE_Q8_0] = { "q8_0", 8, QK, sizeof(block_q8_0), DTYPE_Q8_0 },
	[DTYPE_Q4_0] = { "q4_0", 2, QK, sizeof(block_q4_0), DTYPE_Q8_0 },
	[DTYPE_Q4_1] = { "q4_1", 3, QK, sizeof(block_q4_1), DTYPE_Q8_1 },
	[DTYPE_Q5_0] = { "q5_0", 6, QK, sizeof(block_q5_0), DTYPE_Q8_0 },
	[DTYPE_Q5_1] = { "q5_1", 7, QK, sizeof(block_q5_1), DTYPE_Q8_1 },
	[DTYPE_Q8_K] = { "q8_k", 15, QK_K, sizeof(block_q8_K), DTYPE_Q8_K },
	[DTYPE_Q2_K] = { "q2_k", 10, QK_K, sizeof(block_q2_K), DTYPE_Q8_K },
	[DTYPE_Q3_K] = { "q3_k", 11, QK_K, sizeof(block_q3_K), DTYPE_Q8_K },
	[DTYPE_Q4_K] = { "q4_k", 12, QK_K, sizeof(block_q4_K), DTYPE_Q8_K },
	[DTYPE_Q5_K] = { "q5_k", 13, QK_K, sizeof(block_q5_K), DTYPE_Q8_K },
	[DTYPE_Q6_K] = { "q6_k", 14, QK_K, sizeof(block_q6_K), DTYPE_Q8_K },
	[DTYPE_Q8_1] = { "q8_1", 9, QK, sizeof(block_q8_1), DTYPE_Q8_1 },
	[DTYPE_IQ4_NL] = { "iq4_nl", 20, QK, sizeof(block_iq4_nl), DTYPE_Q8_0 },
	[DTYPE_IQ4_XS] = { "iq4_xs", 23, QK_K, sizeof(block_iq4_xs), DTYPE_Q8_K },
};

_Static_assert(sizeof(block_q8_0) == 34, "block_q8_0 must be 34 bytes");
_Static_assert(sizeof(block_q4_0) == 18, "block_q4_0 must be 18 bytes");

int dtype_from_ggml(uint32_t ggml_id)
{
	for (int t = 0; t < DTYPE_COUNT; t++)
		if (dtype_info[t].ggml_id == ggml_id && t != DTYPE_Q8_K && t != DTYPE_Q8_1)
			return t;
	return -1;
}

int dtype_from_name(const char *name)
{
	for (int t = 0; t < DTYPE_COUNT; t++)
		if (name && strcasecmp(dtype_info[t].name, name) == 0)
			return t;
	return -1;
}

size_t dtype_row_bytes(dtype_t t, int64_t n)
{
	if ((unsigned)t >= DTYPE_COUNT || n < 0 || n % dtype_info[t].block)
		return 0;
	return (size_t)(n / dtype_info[t].block) * dtype_info[t].block_bytes;
}

/* ---------------------------------------------------------- conversions */

float fp16_to_f32(uint16_t h) { return fp16_to_f32_inline(h); }
uint16_t f32_to_fp16(float f) { return f32_to_fp16_inline(f); }

float bf16_to_f32(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

/* Round to nearest even; NaN stays NaN (made quiet); subnormals kept. */
uint16_t f32_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7FFFFFFFu) > 0x7F800000u)
		return (uint16_t)((x >> 16) | 0x40);
	return (uint16_t)((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}

static void fp16_to_f32_row_generic(const void *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = fp16_to_f32_inline(ld_u16((const uint8_t *)x + 2 * i));
}

static void f32_to_fp16_row_generic(const float *x, void *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		st_u16((uint8_t *)y + 2 * i, f32_to_fp16_inline(x[i]));
}

/* --------------------------------------------------------- quantization */

/* Q8_0 (the activations of Q8_0 / Q4_0 / Q4_1 / Q5_x matrices): per block
 * of 32, d = amax / 127 stored as f16, q = x * (127 / amax) rounded half to
 * even (rintf in the default rounding mode) and clamped to [-127, 127] (a
 * NaN element gives -127, a zero block all zeros). This is llama.cpp's x86
 * quantize_row_q8_0 (multiply by the inverse, _MM_ROUND_NEAREST), so both
 * engines feed the same quants to the same weights; dividing by d and
 * rounding half away from zero, as before, changed a quant now and then
 * and with it near-tied greedy tokens. The SIMD twins reproduce this bit
 * for bit. */
static void quantize_q8_0_generic(const float *x, void *yv, int64_t n)
{
	uint8_t *y = yv;
	for (int64_t b = 0; b < n / QK; b++) {
		uint8_t *yb = y + b * sizeof(block_q8_0);
		float d = q8_block_generic(x + b * QK, (int8_t *)(yb + 2));
		st_u16(yb, f32_to_fp16_inline(d));
	}
}

/* Q4_0 (weights only): max = the element of largest magnitude (first one),
 * d = max / -8, q = min(15, (int8)(x / d + 8.5)), as ggml. */
static void quantize_q4_0(const float *x, void *yv, int64_t n)
{
	uint8_t *y = yv;
	for (int64_t b = 0; b < n / QK; b++) {
		const float *xb = x + b * QK;
		float amax = 0.0f, max = 0.0f;
		for (int j = 0; j < QK; j++) {
			if (amax < fabsf(xb[j])) {
				amax = fabsf(xb[j]);
				max = xb[j];
			}
		}
		float d = max / -8.0f;
		float id = d != 0.0f ? 1.0f / d : 0.0f;
		uint8_t *yb = y + b * sizeof(block_q4_0);
		st_u16(yb, f32_to_fp16_inline(d));
		for (int j = 0; j < QK / 2; j++) {
			float v0 = xb[j] * id + 8.5f, v1 = xb[j + QK / 2] * id + 8.5f;
			/* clamp before the cast keeps it defined; same result */
			int q0 = (int)fminf(fmaxf(v0, 0.0f), 15.0f);
			int q1 = (int)fminf(fmaxf(v1, 0.0f), 15.0f);
			yb[2 + j] = (uint8_t)(q0 | (q1 << 4));
		}
	}
}

void quantize_q8_K_generic(const float *x, void *y, int64_t n)
{
	kq_quantize(DTYPE_Q8_K, x, y, n);
}

static void dequantize_q8_0(const void *x, float *y, int64_t n)
{
	for (int64_t b = 0; b < n / QK; b++) {
		const uint8_t *xb = (const uint8_t *)x + b * sizeof(block_q8_0);
		float d = fp16_to_f32_inline(ld_u16(xb));
		for (int j = 0; j < QK; j++)
			y[b * QK + j] = d * (float)(int8_t)xb[2 + j];
	}
}

static void dequantize_q4_0(const void *x, float *y, int64_t n)
{
	for (int64_t b = 0; b < n / QK; b++) {
		const uint8_t *xb = (const uint8_t *)x + b * sizeof(block_q4_0);
		float d = fp16_to_f32_inline(ld_u16(xb));
		for (int j = 0; j < QK / 2; j++) {
			y[b * QK + j] = d * (float)((xb[2 + j] & 0xF) - 8);
			y[b * QK + j + QK / 2] = d * (float)((xb[2 + j] >> 4) - 8);
		}
	}
}

/* ------------------------------------------------- generic dot products */

/* Float weights: one sequential float accumulation, no FMA. */
static float dot_f32_generic(const void *w, const void *xa, int64_t n)
{
	const uint8_t *a = w;
	const float *x = xa;
	float acc = 0.0f;
	for (int64_t i = 0; i < n; i++)
		acc += ld_f32(a + 4 * i) * x[i];
	return acc;
}

static float dot_f16_generic(const void *w, const void *xa, int64_t n)
{
	const uint8_t *a = w;
	const float *x = xa;
	float acc = 0.0f;
	for (int64_t i = 0; i < n; i++)
		acc += fp16_to_f32_inline(ld_u16(a + 2 * i)) * x[i];
	return acc;
}

static float dot_bf16_generic(const void *w, const void *xa, int64_t n)
{
	const uint8_t *a = w;
	const float *x = xa;
	float acc = 0.0f;
	for (int64_t i = 0; i < n; i++)
		acc += bf16_to_f32(ld_u16(a + 2 * i)) * x[i];
	return acc;
}

/* Quantized weights: exact integer block sums, then the sequential float
 * accumulation every level reproduces (kernels_impl.h). */
static float dot_q8_0_generic(const void *w, const void *xa, int64_t n)
{
	float acc = 0.0f;
	for (int64_t b = 0; b < n / QK; b++) {
		const uint8_t *a = (const uint8_t *)w + b * sizeof(block_q8_0);
		const uint8_t *x = (const uint8_t *)xa + b * sizeof(block_q8_0);
		int32_t sumi = 0;
		for (int j = 0; j < QK; j++)
			sumi += (int32_t)(int8_t)a[2 + j] * (int32_t)(int8_t)x[2 + j];
		float d = fp16_to_f32_inline(ld_u16(a)) * fp16_to_f32_inline(ld_u16(x));
		float prod = (float)sumi * d;
		FP_ROUNDED(prod);
		acc = acc + prod;
	}
	return acc;
}

static float dot_q4_0_generic(const void *w, const void *xa, int64_t n)
{
	float acc = 0.0f;
	for (int64_t b = 0; b < n / QK; b++) {
		const uint8_t *a = (const uint8_t *)w + b * sizeof(block_q4_0);
		const uint8_t *x = (const uint8_t *)xa + b * sizeof(block_q8_0);
		int32_t sumi = 0;
		for (int j = 0; j < QK / 2; j++) {
			sumi += ((a[2 + j] & 0xF) - 8) * (int32_t)(int8_t)x[2 + j];
			sumi += ((a[2 + j] >> 4) - 8) * (int32_t)(int8_t)x[2 + j + QK / 2];
		}
		float d = fp16_to_f32_inline(ld_u16(a)) * fp16_to_f32_inline(ld_u16(x));
		float prod = (float)sumi * d;
		FP_ROUNDED(prod);
		acc = acc + prod;
	}
	return acc;
}

KERNEL_MATVEC_BY_DOT(matvec_f32_generic, static, dot_f32_generic)
KERNEL_MATVEC_BY_DOT(matvec_f16_generic, static, dot_f16_generic)
KERNEL_MATVEC_BY_DOT(matvec_bf16_generic, static, dot_bf16_generic)
KERNEL_MATVEC_BY_DOT(matvec_q8_0_generic, static, dot_q8_0_generic)
KERNEL_MATVEC_BY_DOT(matvec_q4_0_generic, static, dot_q4_0_generic)

/* The kquants.c types, one function each for the table (ATTR: static, or
 * empty for Q8_K's, which the SIMD tables name too). */
#define KQ_GENERIC(T, lower, ATTR)                                                 \
	ATTR float dot_##lower##_generic(const void *w, const void *xa, int64_t n) \
	{                                                                          \
		return kq_dot_generic(T, w, xa, n);                                \
	}                                                                          \
	KERNEL_MATVEC_BY_DOT(matvec_##lower##_generic, ATTR, dot_##lower##_generic)
KQ_GENERIC(DTYPE_Q4_1, q4_1, static)
KQ_GENERIC(DTYPE_Q5_0, q5_0, static)
KQ_GENERIC(DTYPE_Q5_1, q5_1, static)
KQ_GENERIC(DTYPE_Q8_K, q8_K, )
KQ_GENERIC(DTYPE_Q2_K, q2_K, static)
KQ_GENERIC(DTYPE_Q3_K, q3_K, static)
KQ_GENERIC(DTYPE_Q4_K, q4_K, static)
KQ_GENERIC(DTYPE_Q5_K, q5_K, static)
KQ_GENERIC(DTYPE_Q6_K, q6_K, static)
KQ_GENERIC(DTYPE_IQ4_NL, iq4_nl, static)
KQ_GENERIC(DTYPE_IQ4_XS, iq4_xs, static)

static void rope_apply_generic(float *x, int n_heads, int head_dim, int rot_dim,
			       const float *cs, int neox);

const kernel_ops_t kops_generic = {
	.name = "generic",
	.type = {
		[DTYPE_F32] = {
			.vec_dot = dot_f32_generic, .matvec = matvec_f32_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_F16] = {
			.vec_dot = dot_f16_generic, .matvec = matvec_f16_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_BF16] = {
			.vec_dot = dot_bf16_generic, .matvec = matvec_bf16_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q8_0] = {
			.vec_dot = dot_q8_0_generic, .matvec = matvec_q8_0_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q4_0] = {
			.vec_dot = dot_q4_0_generic, .matvec = matvec_q4_0_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q4_1] = {
			.vec_dot = dot_q4_1_generic, .matvec = matvec_q4_1_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q5_0] = {
			.vec_dot = dot_q5_0_generic, .matvec = matvec_q5_0_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q5_1] = {
			.vec_dot = dot_q5_1_generic, .matvec = matvec_q5_1_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q8_K] = {
			.vec_dot = dot_q8_K_generic, .matvec = matvec_q8_K_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q2_K] = {
			.vec_dot = dot_q2_K_generic, .matvec = matvec_q2_K_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q3_K] = {
			.vec_dot = dot_q3_K_generic, .matvec = matvec_q3_K_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q4_K] = {
			.vec_dot = dot_q4_K_generic, .matvec = matvec_q4_K_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q5_K] = {
			.vec_dot = dot_q5_K_generic, .matvec = matvec_q5_K_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q6_K] = {
			.vec_dot = dot_q6_K_generic, .matvec = matvec_q6_K_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		/* activations only: no weight has this type */
		[DTYPE_Q8_1] = {
			.vec_dot = dot_absent, .matvec = matvec_absent,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_IQ4_NL] = {
			.vec_dot = dot_iq4_nl_generic, .matvec = matvec_iq4_nl_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_IQ4_XS] = {
			.vec_dot = dot_iq4_xs_generic, .matvec = matvec_iq4_xs_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
	},
	.quantize_q8_0 = quantize_q8_0_generic,
	.quantize_q8_K = quantize_q8_K_generic,
	.fp16_to_f32_row = fp16_to_f32_row_generic,
	.f32_to_fp16_row = f32_to_fp16_row_generic,
	.rmsnorm = rmsnorm_generic,
	.softmax = softmax_generic,
	.rope_apply = rope_apply_generic,
	.swiglu = swiglu_generic,
	.gemm_quant = gemm_quant_absent,
	.gemm_aux = gemm_aux_generic,
	.kv = {
		[KV_F16] = {attention_f16_generic, attn_rows_f16_generic,
			    attn_rows_heads_f16_generic},
		[KV_F32] = {attention_f32_generic, attn_rows_f32_generic,
			    attn_rows_heads_f32_generic},
		[KV_Q8_0] = {attention_q8_0_generic, attn_rows_q8_0_generic,
			     attn_rows_heads_q8_0_generic},
	},
};

/* ------------------------------------------------------------- dispatch */

/* The levels (enum isa, kernels_impl.h), lowest first; a CPU has the
 * levels of one architecture only and isa_best takes the highest it has.
 * Each names the CPU features it checks for and its kernels use nothing
 * else (every SIMD function carries a target list of exactly those
 * features, simd_x86.h):
 *   avx2        AVX2, FMA, F16C (Haswell and later, Zen 1 and later)
 *   avx512      avx2 + AVX-512 F, BW, VL, DQ (Skylake-SP/X): vpdpbusd is
 *               emulated with vpmaddubsw/vpmaddwd, same integer sums
 *   avx512vnni  avx512 + AVX512-VNNI (Cascade Lake, Ice Lake, Zen 4/5)
 *   amx         avx512vnni + AMX-TILE, AMX-INT8 and AMX-BF16 (Sapphire
 *               Rapids and later), and Linux granting the process the tile
 *               state (amx_granted): the quantized gemm on tiles
 *               (gemm_amx.c), BF16 weights in TDPBF16PS's order
 *               (gemm_amx_bf16.c)
 *   neon        ARM64 Advanced SIMD
 *   dotprod     neon + the dot product extension (SDOT/UDOT)
 * No level checks for AVX512-BF16: no kernel uses vdpbf16ps, whose pair
 * sums under DAZ/FTZ are not the generic's order of adds. BF16 weights are
 * widened with a shift and multiplied in f32 by activations act_prepare
 * has already rounded to bf16 (ggml's vec_dot_type), so a BF16 level would
 * equal avx512vnni. */
static const char *const isa_names[ISA_COUNT] = { "generic", "avx2", "avx512",
						  "avx512vnni", "amx", "neon", "dotprod" };

/* The level in use. NULL until the first kernels_init() has chosen one.
 * Stored with release by kernels_init()/kernels_set_isa(), read with acquire
 * by every entry point (ops_get), so a reader that sees the pointer also
 * sees the (constant) table it points to; without the pairing a thread
 * could in principle call through a table it has not yet observed. */
static _Atomic(const kernel_ops_t *) g_ops;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Each level's table, complete where it is defined (kernels_impl.h); NULL
 * for the levels of the other architecture. */
static const kernel_ops_t *const isa_tables[ISA_COUNT] = {
	[ISA_GENERIC] = &kops_generic,
#if defined(__x86_64__)
	[ISA_AVX2] = &kops_avx2,
	[ISA_AVX512] = &kops_avx512,
	[ISA_AVX512VNNI] = &kops_avx512vnni,
	[ISA_AMX] = &kops_amx,
#endif
#if defined(__aarch64__)
	[ISA_NEON] = &kops_neon,
	[ISA_DOTPROD] = &kops_dotprod,
#endif
};

const kernel_ops_t *kernels_table(int isa)
{
	return isa >= 0 && isa < ISA_COUNT ? isa_tables[isa] : NULL;
}

#if defined(__x86_64__)
/* Linux's arch_prctl codes (asm/prctl.h, Linux 5.16; absent from older
 * headers): ask for permission to use an XSAVE feature that the kernel
 * enables per process, here the AMX tile data (XSAVE feature 18). */
#define EG_ARCH_REQ_XCOMP_PERM 0x1023
#define EG_XFEATURE_XTILEDATA 18

/* Why the amx level is absent ("" once granted), and whether it is. */
static char g_amx_why[112];
static bool g_amx_ok;
static pthread_once_t g_amx_once = PTHREAD_ONCE_INIT;

/* CPUID.(7,0):EDX bit 24 AMX-TILE, bit 25 AMX-INT8, bit 22 AMX-BF16 (the
 * BF16 kernels, gemm_amx_bf16.c; every CPU with AMX-INT8 so far has it:
 * requiring it keeps the level one table); then the permission,
 * asked once per process: Linux starts a process without the 8 KiB tile
 * state, and a tile instruction before the grant is a SIGILL. The grant
 * holds for every thread of the process; each kernel call loads its own
 * tile configuration (gemm_amx.c). */
static void amx_grant_once(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) ||
	    !(d & (1u << 25)) || !(d & (1u << 22))) {
		snprintf(g_amx_why, sizeof g_amx_why,
			 "no amx_tile, amx_int8 and amx_bf16 in CPUID");
		return;
	}
	if (syscall(SYS_arch_prctl, EG_ARCH_REQ_XCOMP_PERM, EG_XFEATURE_XTILEDATA) != 0) {
		snprintf(g_amx_why, sizeof g_amx_why,
			 "Linux refused the tile state: arch_prctl(ARCH_REQ_XCOMP_PERM): %s",
			 strerror(errno));
		return;
	}
	g_amx_ok = true;
}

/* Whether this process may run AMX tile instructions. */
static bool amx_granted(void)
{
	pthread_once(&g_amx_once, amx_grant_once);
	return g_amx_ok;
}
#endif

/* Why level isa is absent on this CPU, for the message that refuses it
 * ("" when there is nothing to add to "this CPU lacks it"); read after
 * isa_supported(isa) on the same thread (amx_granted's once orders it). */
static const char *isa_lacking_why(int isa)
{
#if defined(__x86_64__)
	if (isa == ISA_AMX && g_amx_why[0])
		return g_amx_why;
#endif
	(void)isa;
	return "";
}

static bool isa_supported(int isa)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
	/* F16C is not a __builtin_cpu_supports name in clang 14: CPUID.1:ECX
	 * (AVX2 implies the OS saves the ymm state, checked by the builtin). */
	unsigned a, b, c, d;
	bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
	bool avx2 = __builtin_cpu_supports("avx2") &&
		    __builtin_cpu_supports("fma") && f16c;
	if (isa == ISA_AVX2)
		return avx2;
	bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
		      __builtin_cpu_supports("avx512bw") &&
		      __builtin_cpu_supports("avx512vl") &&
		      __builtin_cpu_supports("avx512dq");
	if (isa == ISA_AVX512)
		return avx512;
	bool vnni = avx512 && __builtin_cpu_supports("avx512vnni");
	if (isa == ISA_AVX512VNNI)
		return vnni;
	if (isa == ISA_AMX) /* its other kernels are avx512vnni's */
		return vnni && amx_granted();
#endif
#if defined(__aarch64__)
	unsigned long hw = getauxval(AT_HWCAP);
	if (isa == ISA_NEON)
		return (hw & HWCAP_ASIMD) != 0;
	if (isa == ISA_DOTPROD)
		return (hw & HWCAP_ASIMD) && (hw & HWCAP_ASIMDDP);
#endif
	return isa == ISA_GENERIC;
}

static int isa_best(void)
{
	for (int isa = ISA_COUNT - 1; isa > ISA_GENERIC; isa--)
		if (isa_supported(isa))
			return isa;
	return ISA_GENERIC;
}

/* Set once by kernels_init_once when EGANG_ISA names an unknown level or
 * one this CPU lacks (read after the pthread_once, which orders it). */
static char g_env_error[256];

static void kernels_init_once(void)
{
	int isa = isa_best();
	const char *env = getenv("EGANG_ISA");
	if (env && *env) {
		int want = -1;
		for (int i = 0; i < ISA_COUNT; i++)
			if (strcmp(env, isa_names[i]) == 0)
				want = i;
		if (want < 0)
			snprintf(g_env_error, sizeof g_env_error,
				 "EGANG_ISA=%.32s: unknown level (generic, avx2, avx512, "
				 "avx512vnni, amx, neon, dotprod)", env);
		else if (!isa_supported(want))
			snprintf(g_env_error, sizeof g_env_error,
				 "EGANG_ISA=%s: this CPU lacks it (%s%sbest level here: %s)",
				 env, isa_lacking_why(want), *isa_lacking_why(want) ? "; " : "",
				 isa_names[isa]);
		else
			isa = want;
	}
	/* release: pairs with the acquire in ops_get */
	atomic_store_explicit(&g_ops, isa_tables[isa], memory_order_release);
}

void kernels_init(void) { pthread_once(&g_once, kernels_init_once); }

int kernels_check_env(void)
{
	kernels_init();
	if (g_env_error[0])
		return err_set("%s", g_env_error);
	return 0;
}

int kernels_set_isa(const char *name)
{
	kernels_init();
	for (int i = 0; i < ISA_COUNT; i++) {
		if (name && strcmp(name, isa_names[i]) == 0) {
			if (!isa_supported(i))
				return err_set("kernels_set_isa: this CPU lacks %s%s%s", name,
					       *isa_lacking_why(i) ? ": " : "", isa_lacking_why(i));
			/* release: pairs with the acquire in ops_get */
			atomic_store_explicit(&g_ops, isa_tables[i],
					      memory_order_release);
			return 0;
		}
	}
	return err_set("kernels_set_isa: unknown level '%s'", name ? name : "(null)");
}

static inline const kernel_ops_t *ops_get(void)
{
	/* acquire: pairs with the release store in kernels_init_once */
	const kernel_ops_t *o = atomic_load_explicit(&g_ops, memory_order_acquire);
	if (__builtin_expect(o == NULL, 0)) {
		kernels_init();
		o = atomic_load_explicit(&g_ops, memory_order_acquire);
	}
	return o;
}

const char *kernels_isa(void) { return ops_get()->name; }

const kernel_ops_t *kernels_ops(void) { return ops_get(); }

/* ------------------------------------------------------- absent kernels */

/* The value of an optional entry that a level lacks by contract
 * (kernels_impl.h); a call means a caller skipped its check. One absent
 * kernel stands for its entry in every table, so the message names the
 * entry, not a level. */
_Noreturn static void absent_called(const char *kernel, const char *entry)
{
	fprintf(stderr, "egang: %s called: %s (kernels_impl.h: callers check for it)\n",
		kernel, entry);
	abort();
}

float dot_absent(const void *w, const void *xa, int64_t n)
{
	absent_called("dot_absent", "the vec_dot of Q8_1, an activation type no weight has");
}

void matvec_absent(const void *W, size_t rb, const void *xa, float *y, int64_t n, int64_t r0,
		   int64_t r1)
{
	absent_called("matvec_absent", "the matvec of Q8_1, an activation type no weight has");
}

void matvec_p16_absent(const void *P, const void *xa, float *y, int64_t n, int64_t ng)
{
	absent_called("matvec_p16_absent", "a packed matvec that this level or type lacks");
}

void matmat_absent(const void *W, size_t rb, const void *X, size_t xs, float *Y, int64_t ys,
		   int64_t n, int64_t r0, int64_t r1, int64_t ntok)
{
	absent_called("matmat_absent", "a matmat that this level or type lacks");
}

void matmat_p16_absent(const void *P, const void *X, size_t xs, float *Y, int64_t ys, int64_t n,
		       int64_t ng, int64_t ntok)
{
	absent_called("matmat_p16_absent", "a packed matmat that this level or type lacks");
}

void gemm_quant_absent(GEMM_QUANT_ARGS)
{
	absent_called("gemm_quant_absent", "a quantized gemm that this level lacks");
}

/* ------------------------------------------------- public entry points */

void quantize_row(dtype_t t, const float *x, void *y, int64_t n)
{
	switch (t) {
	case DTYPE_F32:
		if ((const void *)x != y)
			memmove(y, x, (size_t)n * sizeof(float));
		break;
	case DTYPE_F16:
		ops_get()->f32_to_fp16_row(x, y, n);
		break;
	case DTYPE_BF16:
		for (int64_t i = 0; i < n; i++)
			st_u16((uint8_t *)y + 2 * i, f32_to_bf16(x[i]));
		break;
	case DTYPE_Q8_0:
		ops_get()->quantize_q8_0(x, y, n);
		break;
	case DTYPE_Q4_0:
		quantize_q4_0(x, y, n);
		break;
	default:
		assert((unsigned)t < DTYPE_COUNT);
		kq_quantize(t, x, y, n);
	}
}

void dequantize_row(dtype_t t, const void *x, float *y, int64_t n)
{
	switch (t) {
	case DTYPE_F32:
		if (x != (const void *)y)
			memmove(y, x, (size_t)n * sizeof(float));
		break;
	case DTYPE_F16:
		ops_get()->fp16_to_f32_row(x, y, n);
		break;
	case DTYPE_BF16:
		for (int64_t i = 0; i < n; i++)
			y[i] = bf16_to_f32(ld_u16((const uint8_t *)x + 2 * i));
		break;
	case DTYPE_Q8_0:
		dequantize_q8_0(x, y, n);
		break;
	case DTYPE_Q4_0:
		dequantize_q4_0(x, y, n);
		break;
	default:
		assert((unsigned)t < DTYPE_COUNT);
		kq_dequantize(t, x, y, n);
	}
}

/* Quantizes x (n) to the activation type a (Q8_0, Q8_1, Q8_K) in xa. */
static void act_quantize(dtype_t a, const float *x, void *xa, int64_t n)
{
	if (a == DTYPE_Q8_0)
		ops_get()->quantize_q8_0(x, xa, n);
	else if (a == DTYPE_Q8_K)
		ops_get()->quantize_q8_K(x, xa, n);
	else
		kq_quantize(DTYPE_Q8_1, x, xa, n);
}

/* act_prepare's quantized types when x holds a NaN or an infinity: each
 * block is quantized with those values read as 0, then a block that held
 * one gets a NaN scale (Q8_1: its sum too), so that every dot product
 * reading it is NaN, as with float activations. A quantizer would round
 * NaN to some integer and its amax would pass over it, hiding a
 * non-finite hidden state from the engine's check of the logits. */
static void act_quantize_nonfinite(dtype_t a, const float *x, void *xa, int64_t n)
{
	int64_t bk = dtype_info[a].block;
	size_t bb = dtype_info[a].block_bytes;
	float tmp[QK_K];
	assert(bk <= QK_K);
	for (int64_t b = 0; b < n / bk; b++) {
		bool bad = false;
		for (int64_t i = 0; i < bk; i++) {
			float v = x[b * bk + i];
			bad |= !isfinite(v);
			tmp[i] = isfinite(v) ? v : 0.0f;
		}
		uint8_t *y = (uint8_t *)xa + (size_t)b * bb;
		act_quantize(a, tmp, y, bk);
		if (!bad)
			continue;
		if (a == DTYPE_Q8_K) {
			float nan = NAN;
			memcpy(y, &nan, sizeof nan); /* block_q8_K.d */
		} else {
			st_u16(y, 0x7E00); /* f16 d (and Q8_1's s): a quiet NaN */
			if (a == DTYPE_Q8_1)
				st_u16(y + 2, 0x7E00);
		}
	}
}

/* Whether the n floats at x are all finite: no exponent field all ones.
 * Four at a time in the baseline's vectors (SSE2, NEON), since it runs on
 * every activation row before it is quantized, in a wave's serial finish:
 * a scalar isfinite per element took as long as the quantization. */
static bool all_finite(const float *x, int64_t n)
{
	typedef int32_t i32x4 __attribute__((vector_size(16)));
	const int32_t e = 0x7F800000;
	int64_t i = 0;
	i32x4 bad = { 0 };
	for (; i + 4 <= n; i += 4) {
		i32x4 u;
		memcpy(&u, x + i, sizeof u);
		bad |= (u & e) == e;
	}
	int32_t any = bad[0] | bad[1] | bad[2] | bad[3];
	for (; i < n; i++)
		any |= !isfinite(x[i]);
	return !any;
}

void act_prepare(dtype_t wt, const float *x, void *xa, int64_t n)
{
	assert((unsigned)wt < DTYPE_COUNT);
	dtype_t a = dtype_info[wt].act;
	if ((a == DTYPE_Q8_0 || a == DTYPE_Q8_1 || a == DTYPE_Q8_K) &&
	    !all_finite(x, n)) {
		assert(n % dtype_info[a].block == 0);
		act_quantize_nonfinite(a, x, xa, n);
	} else if (dtype_info[wt].act == DTYPE_Q8_0) {
		assert(n % QK == 0);
		ops_get()->quantize_q8_0(x, xa, n);
	} else if (dtype_info[wt].act == DTYPE_Q8_K) {
		assert(n % QK_K == 0);
		ops_get()->quantize_q8_K(x, xa, n);
	} else if (dtype_info[wt].act == DTYPE_Q8_1) {
		assert(n % QK == 0);
		kq_quantize(DTYPE_Q8_1, x, xa, n);
	} else if (wt == DTYPE_F16) {
		/* ggml's CPU backend converts the activations of an F16 matrix
		 * to F16 (its vec_dot_type) before the dot product; rounding
		 * them here (to nearest even) gives both engines the same
		 * operands, kept as floats for the F16 x F32 kernels */
		float *y = xa;
		for (int64_t i = 0; i < n; i++)
			y[i] = fp16_to_f32(f32_to_fp16(x[i]));
	} else if (wt == DTYPE_BF16) {
		float *y = xa; /* as F16: ggml's vec_dot_type of BF16 is BF16 */
		for (int64_t i = 0; i < n; i++)
			y[i] = bf16_to_f32(f32_to_bf16(x[i]));
	} else if ((const void *)x != xa) {
		memmove(xa, x, (size_t)n * sizeof(float));
	}
}

/* Weights of an activation-only type are a caller's bug: its vec_dot and
 * matvec are absent (kernels_impl.h). */
#define ASSERT_WEIGHT_TYPE(wt)                                                   \
	assert((wt) != DTYPE_Q8_1 && "Q8_1 is an activation type, never weights")

float vec_dot(dtype_t wt, const void *w, const void *xa, int64_t n)
{
	ASSERT_WEIGHT_TYPE(wt);
	assert((unsigned)wt < DTYPE_COUNT && n % dtype_info[wt].block == 0);
	return ops_get()->type[wt].vec_dot(w, xa, n);
}

float vec_dot_generic(dtype_t wt, const void *w, const void *xa, int64_t n)
{
	ASSERT_WEIGHT_TYPE(wt);
	assert((unsigned)wt < DTYPE_COUNT && n % dtype_info[wt].block == 0);
	return kops_generic.type[wt].vec_dot(w, xa, n);
}

void matvec_rows(dtype_t wt, const void *W, const void *xa, float *y,
		 int64_t n, int64_t r0, int64_t r1)
{
	ASSERT_WEIGHT_TYPE(wt);
	assert((unsigned)wt < DTYPE_COUNT && n % dtype_info[wt].block == 0);
	if (r1 <= r0)
		return;
	ops_get()->type[wt].matvec(W, dtype_row_bytes(wt, n), xa, y, n, r0, r1);
}

/* ------------------------------------------------------------ pack16 */

static bool is_float(dtype_t t)
{
	return dtype_info[t].block == 1; /* F32, F16, BF16 */
}

int pack16_group_rows(dtype_t t)
{
	return is_float(t) ? 4 : 16;
}

size_t pack16_group_bytes(dtype_t t, int64_t n)
{
	if (n <= 0 || n % QK || (unsigned)t >= DTYPE_COUNT)
		return 0;
	if (is_float(t))
		return 4 * dtype_row_bytes(t, n);
	if (t == DTYPE_Q4_K || t == DTYPE_Q5_K || t == DTYPE_Q6_K)
		return n % QK_K ? 0 : (size_t)(n / QK_K) *
			(t == DTYPE_Q4_K ? KQ_P16_Q4K_BYTES :
			 t == DTYPE_Q5_K ? KQ_P16_Q5K_BYTES : KQ_P16_Q6K_BYTES);
	if (q8_1_form(t))
		return (size_t)(n / QK) * p16_min_block_bytes(t);
	if (!q8_form(t) && t != DTYPE_Q4_0)
		return 0;
	/* Q5_0 in Q8_0's layout: 34/22 of its rows' bytes, for the VNNI
	 * kernels' vectors with the same bits (kernels_impl.h q8_form) */
	size_t nb = (size_t)(n / QK), qv = q8_form(t) ? 512 : 256;
	return (nb + 1) / 2 * 64 + nb * qv;
}

size_t pack16_bytes(dtype_t t, int64_t rows, int64_t n)
{
	if ((unsigned)t >= DTYPE_COUNT)
		return 0;
	int64_t g = pack16_group_rows(t);
	return rows < g ? 0 : (size_t)(rows / g) * pack16_group_bytes(t, n);
}

/* Q4_1 / Q5_1 groups (kernels_impl.h q8_1_form): per block the 16 rows'
 * d, their m, Q5_1's qh words, then 4 vectors of the nibble bytes (vector
 * v: bytes 4v .. 4v + 3 of each row's qs, row i at 4 i). */
static void pack16_min(dtype_t t, const void *W, size_t rb, int64_t rows, int64_t n, void *P)
{
	const size_t bb = dtype_info[t].block_bytes, qo = t == DTYPE_Q5_1 ? 8 : 4;
	uint8_t *o = P;
	for (int64_t g = 0; g < rows / 16; g++) {
		const uint8_t *w = (const uint8_t *)W + (size_t)g * 16 * rb;
		for (int64_t b = 0; b < n / QK; b++) {
			for (int i = 0; i < 16; i++) {
				const uint8_t *blk = w + (size_t)i * rb + (size_t)b * bb;
				memcpy(o + 2 * i, blk, 2);
				memcpy(o + 32 + 2 * i, blk + 2, 2);
				if (t == DTYPE_Q5_1)
					memcpy(o + 64 + 4 * i, blk + 4, 4);
				for (int v = 0; v < 4; v++)
					memcpy(o + p16_min_block_bytes(t) - 256 + 64 * v + 4 * i,
					       blk + qo + 4 * v, 4);
			}
			o += p16_min_block_bytes(t);
		}
	}
}

void pack16(dtype_t t, const void *W, int64_t rows, int64_t n, void *P)
{
	const size_t rb = dtype_row_bytes(t, n), gb = pack16_group_bytes(t, n);
	if (is_float(t)) { /* per step of 32 elements, the 4 rows' steps */
		const size_t sb = rb / (size_t)(n / QK);
		for (int64_t g = 0; g < rows / 4; g++) {
			const uint8_t *w = (const uint8_t *)W + (size_t)g * 4 * rb;
			uint8_t *o = (uint8_t *)P + (size_t)g * gb;
			for (int64_t k = 0; k < n / QK; k++)
				for (int i = 0; i < 4; i++, o += sb)
					memcpy(o, w + (size_t)i * rb + (size_t)k * sb, sb);
		}
		return;
	}
	if (t == DTYPE_Q4_K || t == DTYPE_Q5_K || t == DTYPE_Q6_K) {
		(t == DTYPE_Q4_K ? kq_pack16_q4_K :
		 t == DTYPE_Q5_K ? kq_pack16_q5_K : kq_pack16_q6_K)(W, rb, rows, n, P);
		return;
	}
	if (q8_1_form(t)) {
		pack16_min(t, W, rb, rows, n, P);
		return;
	}
	const size_t bb = dtype_info[t].block_bytes;
	const int nv = q8_form(t) ? 8 : 4; /* 64-byte quant vectors a block */
	const int64_t nb = n / QK;
	for (int64_t g = 0; g < rows / 16; g++) {
		const uint8_t *w = (const uint8_t *)W + (size_t)g * 16 * rb;
		uint8_t *o = (uint8_t *)P + (size_t)g * gb;
		for (int64_t b = 0; b < nb; b += 2) {
			memset(o, 0, 64);
			for (int64_t k = 0; k < 2 && b + k < nb; k++)
				for (int i = 0; i < 16; i++)
					memcpy(o + 32 * k + 2 * i, w + (size_t)i * rb + (size_t)(b + k) * bb, 2);
			o += 64;
			for (int64_t k = 0; k < 2 && b + k < nb; k++) {
				for (int v = 0; v < nv; v++)
					for (int i = 0; i < 16; i++) {
						const uint8_t *blk = w + (size_t)i * rb + (size_t)(b + k) * bb;
						uint32_t u;
						if (q8_form(t)) /* unsigned, w + 128 */
							u = q8_group_u(t, blk, v);
						else /* Q4_0: the nibble bytes as stored */
							memcpy(&u, blk + 2 + 4 * v, 4);
						memcpy(o + 64 * v + 4 * i, &u, 4);
					}
				o += 64 * nv;
			}
		}
	}
}

/* Float rows are read packed only while a group of 4 is at most this many
 * bytes: packing helped groups of 4.5 and 12 KiB (smollm-135m f16) and
 * hurt groups of 16 and 44 KiB (tinyllama-1.1b f16), where four row
 * streams, each prefetched 2 KiB ahead, keep more reads in flight than one
 * packed stream (figures: doc/measurements.md). */
#define PACK_FLOAT_GROUP_MAX (12u << 10)

int pack16_used(dtype_t t, int64_t n)
{
	if ((unsigned)t >= DTYPE_COUNT || ops_get()->type[t].matvec_p16 == matvec_p16_absent)
		return 0;
	size_t gb = pack16_group_bytes(t, n);
	return is_float(t) ? gb && gb <= PACK_FLOAT_GROUP_MAX : gb && n / QK <= P16_NBMAX;
}

void pack16_split(dtype_t t, int64_t rows, int64_t r0, int64_t r1, int64_t *a, int64_t *b)
{
	const int64_t G = pack16_group_rows(t);
	*a = (r0 + G - 1) / G * G;
	*b = (r1 < rows ? r1 : rows) / G * G;
	if (*a > r1)
		*a = r1;
	if (*b < *a)
		*b = *a;
}

void matvec_range(dtype_t wt, const void *W, const void *P, int64_t rows,
		  const void *xa, float *y, int64_t n, int64_t r0, int64_t r1)
{
	assert((unsigned)wt < DTYPE_COUNT && n % dtype_info[wt].block == 0);
	if (r1 <= r0)
		return;
	const kernel_ops_t *ops = ops_get();
	const size_t rb = dtype_row_bytes(wt, n);
	const uint8_t *w = (const uint8_t *)W + (size_t)r0 * rb;
	int64_t a = r1, b = r1;
	const int64_t G = pack16_group_rows(wt);
	if (P && pack16_used(wt, n))
		pack16_split(wt, rows, r0, r1, &a, &b);
	if (a > r0)
		ops->type[wt].matvec(w, rb, xa, y, n, 0, a - r0);
	if (b > a)
		ops->type[wt].matvec_p16((const uint8_t *)P + (size_t)(a / G) * pack16_group_bytes(wt, n),
				    xa, y + (a - r0), n, (b - a) / G);
	if (r1 > b)
		ops->type[wt].matvec(w + (size_t)(b - r0) * rb, rb, xa, y + (b - r0), n, 0, r1 - b);
}

/* ------------------------------------------ forward-pass math (generic) */

/* As ggml's rms_norm: each square rounded to float, summed sequentially in
 * double, the mean (double) rounded to float, 1 / sqrtf(mean + eps) in
 * float, then o = w * (ss * x). A float sum (llama2.c's) moves the scale
 * by ~1e-6 relative, enough to cross quantization boundaries downstream
 * and to part greedy paths from llama.cpp's at near-ties. */
void rmsnorm_generic(float *o, const float *x, const float *w, int64_t n, float eps)
{
	const float ss = rmsnorm_scale(x, n, eps);
	for (int64_t j = 0; j < n; j++)
		o[j] = w[j] * (ss * x[j]);
}

/* As llama2.c: max, x = expf(x - max) with a sequential sum, x /= sum. */
void softmax_generic(float *x, int64_t n)
{
	if (n <= 0)
		return;
	float max = x[0];
	for (int64_t i = 1; i < n; i++)
		if (x[i] > max)
			max = x[i];
	float sum = 0.0f;
	for (int64_t i = 0; i < n; i++) {
		x[i] = expf(x[i] - max);
		sum += x[i];
	}
	for (int64_t i = 0; i < n; i++)
		x[i] /= sum;
}

/* neox = 0 is llama2.c's loop (there rot_dim = head_dim):
 *   freq = 1 / powf(theta, i / (float)rot_dim), i the even index in the head,
 *   val = pos * freq, (v0, v1) -> (v0 cos - v1 sin, v0 sin + v1 cos).
 * neox = 1 rotates (x[i], x[i + rot_dim/2]) for i < rot_dim/2 with
 * freq = 1 / powf(theta, 2i / (float)rot_dim). */
void rope_generic(float *x, int n_heads, int head_dim, int rot_dim, int pos,
		  float theta, int neox)
{
	assert(rot_dim <= head_dim && rot_dim % 2 == 0);
	for (int h = 0; h < n_heads; h++) {
		float *v = x + (size_t)h * head_dim;
		for (int i = 0; i < rot_dim; i += 2) {
			float freq = 1.0f / powf(theta, (float)i / (float)rot_dim);
			float val = (float)pos * freq;
			float fcr = cosf(val), fci = sinf(val);
			int a = neox ? i / 2 : i, b = neox ? i / 2 + rot_dim / 2 : i + 1;
			float v0 = v[a], v1 = v[b];
			v[a] = v0 * fcr - v1 * fci;
			v[b] = v0 * fci + v1 * fcr;
		}
	}
}

/* The rotation of rope_generic with the (cos, sin) of each pair taken from
 * a table (the same values: they depend on the pair, not on the head). */
static void rope_apply_generic(float *x, int n_heads, int head_dim, int rot_dim,
			       const float *cs, int neox)
{
	for (int h = 0; h < n_heads; h++) {
		float *v = x + (size_t)h * head_dim;
		for (int i = 0; i < rot_dim; i += 2) {
			float fcr = cs[i], fci = cs[i + 1];
			int a = neox ? i / 2 : i, b = neox ? i / 2 + rot_dim / 2 : i + 1;
			float v0 = v[a], v1 = v[b];
			v[a] = v0 * fcr - v1 * fci;
			v[b] = v0 * fci + v1 * fcr;
		}
	}
}

/* As llama2.c's attention loop, one head, with each key and value element
 * read through kv_elem (the f32 loads for KV_F32). */
static void attention_one_generic(kv_type_t kt, float *out, const float *q,
				  const uint8_t *k, const uint8_t *v, size_t rb, int n_pos,
				  int hd, float *scores)
{
	float scale = sqrtf((float)hd);
	for (int t = 0; t < n_pos; t++) {
		const uint8_t *kt_row = k + (size_t)t * rb;
		float dot = 0.0f;
		for (int i = 0; i < hd; i++)
			dot += q[i] * kv_elem(kt, kt_row, i);
		scores[t] = dot / scale;
	}
	softmax_generic(scores, n_pos);
	memset(out, 0, (size_t)hd * sizeof *out);
	for (int t = 0; t < n_pos; t++) {
		const uint8_t *vt = v + (size_t)t * rb;
		float a = scores[t];
		for (int i = 0; i < hd; i++)
			out[i] += a * kv_elem(kt, vt, i);
	}
}

void attention_heads_kv_generic(kv_type_t kt, float *out, const float *q, const void *k,
				const void *v, size_t rb, int n_pos, int hd, float *scores,
				int nh, int64_t ss)
{
	for (int h = 0; h < nh; h++)
		attention_one_generic(kt, out + (size_t)h * (size_t)hd, q + (size_t)h * (size_t)hd,
				      k, v, rb, n_pos, hd, scores + (size_t)h * (size_t)ss);
}

#define ATTENTION_GENERIC(tag, KT)                                                      \
	void attention_##tag##_generic(float *out, const float *q, const void *k,          \
				       const void *v, size_t rb, int n_pos, int hd,        \
				       float *scores, int nh, int64_t ss)                  \
	{                                                                                  \
		attention_heads_kv_generic(KT, out, q, k, v, rb, n_pos, hd, scores, nh, ss); \
	}
ATTENTION_GENERIC(f32, KV_F32)
ATTENTION_GENERIC(f16, KV_F16)
ATTENTION_GENERIC(q8_0, KV_Q8_0)

void attention_heads_generic(float *out, const float *q, const float *k,
			     const float *v, int64_t stride, int n_pos, int hd,
			     float *scores, int nh, int64_t ss)
{
	attention_heads_kv_generic(KV_F32, out, q, k, v, (size_t)stride * sizeof(float), n_pos,
				   hd, scores, nh, ss);
}

void attention_head_generic(float *out, const float *q, const float *k,
			    const float *v, int64_t stride, int n_pos, int hd,
			    float *scores)
{
	attention_heads_generic(out, q, k, v, stride, n_pos, hd, scores, 1, n_pos);
}

/* ------------------------------------------------------- the KV cache rows */

const char *const kv_type_names[KV_TYPE_COUNT + 1] = {
	[KV_F16] = "f16", [KV_F32] = "f32", [KV_Q8_0] = "q8_0", [KV_TYPE_COUNT] = NULL,
};

size_t kv_row_bytes(kv_type_t t, int64_t n)
{
	switch (t) {
	case KV_F16:
		return (size_t)n * 2;
	case KV_Q8_0:
		return n % QK ? 0 : (size_t)(n / QK) * sizeof(block_q8_0);
	default:
		return (size_t)n * sizeof(float);
	}
}

void kv_store_row(kv_type_t t, const float *x, void *row, int64_t n)
{
	quantize_row(t == KV_F16 ? DTYPE_F16 : t == KV_Q8_0 ? DTYPE_Q8_0 : DTYPE_F32, x, row, n);
}

void kv_load_row(kv_type_t t, const void *row, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = kv_elem(t, row, i);
}

/* ------------------------------------------ forward-pass math (dispatch) */

void rmsnorm(float *o, const float *x, const float *w, int64_t n, float eps)
{
	ops_get()->rmsnorm(o, x, w, n, eps);
}

void softmax(float *x, int64_t n) { ops_get()->softmax(x, n); }

void rope_table(float *cs, int rot_dim, int pos, float theta)
{
	/* the generic's expressions, once per pair */
	for (int i = 0; i < rot_dim; i += 2) {
		float freq = 1.0f / powf(theta, (float)i / (float)rot_dim);
		float val = (float)pos * freq;
		cs[i] = cosf(val);
		cs[i + 1] = sinf(val);
	}
}

void rope_with(float *x, int n_heads, int head_dim, int rot_dim, const float *cs,
	       int neox)
{
	assert(rot_dim <= head_dim && rot_dim % 2 == 0);
	ops_get()->rope_apply(x, n_heads, head_dim, rot_dim, cs, neox);
}

void rope(float *x, int n_heads, int head_dim, int rot_dim, int pos,
	  float theta, int neox)
{
	assert(rot_dim <= head_dim && rot_dim % 2 == 0);
	enum { MAX_ROT = 1024 };
	if (rot_dim > MAX_ROT) {
		rope_generic(x, n_heads, head_dim, rot_dim, pos, theta, neox);
		return;
	}
	float cs[MAX_ROT];
	rope_table(cs, rot_dim, pos, theta);
	rope_with(x, n_heads, head_dim, rot_dim, cs, neox);
}

void attention_head(float *out, const float *q, const float *k, const float *v,
		    int64_t stride, int n_pos, int hd, float *scores)
{
	attention_heads(out, q, k, v, stride, n_pos, hd, scores, 1, n_pos);
}

void attention_heads(float *out, const float *q, const float *k, const float *v,
		     int64_t stride, int n_pos, int hd, float *scores, int nh, int64_t ss)
{
	attention_heads_kv(KV_F32, out, q, k, v, (size_t)stride * sizeof(float), n_pos, hd,
			   scores, nh, ss);
}

void attention_heads_kv(kv_type_t kt, float *out, const float *q, const void *k,
			const void *v, size_t rb, int n_pos, int hd, float *scores, int nh,
			int64_t ss)
{
	assert((unsigned)kt < KV_TYPE_COUNT);
	ops_get()->kv[kt].attention(out, q, k, v, rb, n_pos, hd, scores, nh, ss);
}

/* As llama2.c, val *= 1 / (1 + e^-val); val *= b, with exp_eg for expf
 * (kernels_impl.h). */
void swiglu_generic(float *o, const float *a, const float *b, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		float val = a[i];
		val *= (1.0f / (1.0f + exp_eg(-val)));
		val *= b[i];
		o[i] = val;
	}
}

void swiglu(float *o, const float *a, const float *b, int64_t n)
{
	ops_get()->swiglu(o, a, b, n);
}
