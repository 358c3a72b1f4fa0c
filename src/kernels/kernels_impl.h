/* kernels: private interface between the dispatcher (kernels.c) and the
 * per-ISA implementations (kernels_avx2.c, kernels_avx512.c, kernels_neon.c
 * and the files they name kernels from).
 *
 * A kernel_ops_t ("the tables", at the end of this header) is one ISA
 * level: every entry is a complete implementation of one kernel for that
 * level, filled in where the table is defined. kernels.c holds the generic
 * table and picks one table per process.
 *
 * Weights, blocks and half rows are addressed as bytes and read with
 * memcpy-style loads: they may sit at any address.
 *
 * Reduction orders (what "bit-exact" means here):
 *  - Q8_0 / Q4_0 weights against Q8_0 activations: every level computes each
 *    block's integer sum sumi exactly (int32; |sumi| <= 32*128*127), then
 *    accumulates, block by block in ascending order, in float:
 *        acc = acc + (float)sumi * (fp16(w.d) * fp16(x.d))
 *    with one rounding per operation and no FMA. The result is therefore the
 *    same bits at every ISA level and for any row grouping.
 *  - F32 / F16 / BF16 weights: each level has its own fixed order (lane
 *    layout, FMA, final horizontal sum); within a level a row gives the same
 *    bits alone or inside a group of rows, and vec_dot() gives the same bits
 *    as matvec_rows() for that row. Across levels results agree only within
 *    a tolerance.
 *  - act_prepare / quantize_row(Q8_0) and the fp16/bf16 row conversions are
 *    bit-exact at every level (same amax, same division, round half away
 *    from zero, same clamp).
 *
 * No file of this layer may let the compiler contract a*b+c into an FMA on
 * its own (GCC's default -ffp-contract=fast would do so inside functions
 * compiled with target("fma"), or anywhere under -march=native): the exact
 * paths above depend on it. Each .c file includes this header first, which
 * switches contraction off; and the exact paths round their products
 * through FP_ROUNDED, which also holds under clang -ffp-contract=fast
 * (that mode ignores the pragma). */
#ifndef EGANG_KERNELS_IMPL_H
#define EGANG_KERNELS_IMPL_H

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Forces v (a float or an SSE/AVX vector) to be materialized, rounded, in a
 * register, so a following add cannot be fused with the product that made
 * it. Emits no instruction. */
#if defined(__x86_64__) && defined(__GNUC__)
#define FP_ROUNDED(v) __asm__("" : "+x"(v))
#elif defined(__aarch64__) && defined(__GNUC__)
#define FP_ROUNDED(v) __asm__("" : "+w"(v)) /* an FP/SIMD register */
#else
#define FP_ROUNDED(v) ((void)0)
#endif

#include "kernels/kernels.h"

/* e^x for SwiGLU (kernels.c swiglu_generic), written out so that a SIMD
 * level can repeat it operation for operation and give the same bits: libm's
 * expf has no vector twin with its results (libmvec's differ), and SwiGLU
 * was ~1.3% of a tinyllama-1.1b token in scalar expf calls.
 * Cephes' expf: n = rint(x log2 e); r = x - n C1 - n C2 (C1 has 16
 * significant bits, so n C1 is exact; C1 + C2 = ln 2); e^r by a degree-7
 * polynomial, 1 + r + r^2 P(r); times 2^n in two exact power-of-two steps
 * (2^(n>>1), then 2^(n - (n>>1))) so the results down to the subnormals
 * round once. tests/test_kernels.c test_exp_eg asserts, against double exp
 * over every 4099th float of (-104, 88.72], a relative error <= 1e-7 where
 * the result is normal and <= 1 unit (2^-149) below, and prints what it
 * measured (8.2e-8 and 0.75 of a unit over every 7th float, where libm's
 * expf has 6.0e-8). Every
 * product is rounded before its add (FP_ROUNDED; no FMA), rint rounds to
 * nearest even. */
#define EXP_EG_HI 0x1.62e42ep+6f /* 88.7228317, the largest x with e^x finite */
#define EXP_EG_LO (-104.0f)       /* at or below: 0 */
#define EXP_EG_LOG2E 1.44269504088896341f
#define EXP_EG_C1 0.693359375f
#define EXP_EG_C2 (-2.12194440e-4f)
/* P(r), highest degree first (Horner) */
static const float exp_eg_poly[6] = { 1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
				      4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f };

static inline float exp_eg_pow2(int32_t k) /* 2^k, -126 <= k <= 127 */
{
	uint32_t b = (uint32_t)(k + 127) << 23;
	float f;
	memcpy(&f, &b, 4);
	return f;
}

static inline float exp_eg(float x)
{
	if (x != x)
		return x;
	if (x <= EXP_EG_LO)
		return 0.0f;
	if (x > EXP_EG_HI)
		return __builtin_inff();
	float t = x * EXP_EG_LOG2E;
	float n = __builtin_rintf(t);
	float a = n * EXP_EG_C1;
	FP_ROUNDED(a);
	float r = x - a;
	a = n * EXP_EG_C2;
	FP_ROUNDED(a);
	r = r - a;
	float z = r * r;
	float p = exp_eg_poly[0];
	for (int i = 1; i < 6; i++) {
		p = p * r;
		FP_ROUNDED(p);
		p = p + exp_eg_poly[i];
	}
	p = p * z;
	FP_ROUNDED(p);
	p = p + r;
	p = p + 1.0f;
	int32_t k = (int32_t)n, h = k >> 1;
	p = p * exp_eg_pow2(h);
	FP_ROUNDED(p);
	return p * exp_eg_pow2(k - h);
}

/* Q5_0 rides the Q8_0 kernels. Its dot product against Q8_0 activations
 * is, per block, the exact sum of (q - 16) x, then Q8_0's float step
 * acc = acc + (float)sumi * (d_w * d_x) (kquants.c dot_legacy): a Q5_0
 * block is losslessly the Q8_0 block with the same d and quants q - 16 (in
 * -16 .. 15). So a Q5_0 matrix packs into the Q8_0 packed layout (pack16,
 * kernels.h) and the packed matvec and the quantized gemm read it as Q8_0,
 * with the same bits as Q5_0's own dot product. */
static inline int q8_form(dtype_t t) { return t == DTYPE_Q8_0 || t == DTYPE_Q5_0; }

/* Q4_1 and Q5_1, the legacy types with a min, read against Q8_1
 * activations (kquants.c dot_legacy): their quants are unsigned (Q4_1 the
 * nibble, Q5_1 the nibble | the fifth bit << 4), so vpdpbusd takes them as
 * they are and its sums start at 0. Packed (pack16, kernels.h) per block:
 * the 16 rows' d then m (64 bytes), Q5_1's 16 qh words (64 bytes), the
 * nibble bytes as stored (4 vectors of 64): 320 / 384 bytes, the size of
 * the 16 rows' blocks. */
static inline int q8_1_form(dtype_t t) { return t == DTYPE_Q4_1 || t == DTYPE_Q5_1; }

/* Bytes of one block of 16 rows in a Q4_1 / Q5_1 packed group. */
static inline size_t p16_min_block_bytes(dtype_t t) { return t == DTYPE_Q5_1 ? 384 : 320; }

/* The 4 quants of group g (elements 4g .. 4g + 3, g < 8) of a Q8_0 or Q5_0
 * block blk as Q8_0's unsigned bytes w + 128 in a little-endian word (Q5_0:
 * w = q - 16, so w + 128 = q + 112; q = the nibble of qs (element j < 16:
 * low nibble of qs[j], j >= 16: high nibble of qs[j - 16]) | bit j of qh
 * << 4, block { f16 d; u8 qh[4]; u8 qs[16] }, kquants.c unpack_q5). */
static inline uint32_t q8_group_u(dtype_t t, const uint8_t *blk, int g)
{
	uint32_t v;
	if (t == DTYPE_Q8_0) {
		memcpy(&v, blk + 2 + 4 * g, 4);
		return v ^ 0x80808080u;
	}
	uint32_t qh;
	memcpy(&qh, blk + 2, 4);
	memcpy(&v, blk + 6 + 4 * (g & 3), 4);
	uint32_t nib = g < 4 ? v & 0x0F0F0F0Fu : (v >> 4) & 0x0F0F0F0Fu;
	/* qh bits 4g .. 4g + 3 to bit 4 of bytes 0 .. 3 (the shifted copies
	 * do not overlap, so the multiply has no carries) */
	uint32_t hb = (((qh >> (4 * g)) & 0xFu) * 0x00204081u) & 0x01010101u;
	return (nib | hb << 4) + 0x70707070u; /* bytes q + 112 <= 143: no carry */
}

/* Unaligned scalar access: weight rows and blocks may sit at any byte
 * address (a Q8_0 block is 34 bytes; tests use odd addresses). */
static inline uint16_t ld_u16(const void *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

static inline void st_u16(void *p, uint16_t v) { memcpy(p, &v, 2); }

static inline uint32_t ld_u32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline int32_t ld_i32(const void *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline float ld_f32(const void *p)
{
	float v;
	memcpy(&v, p, 4);
	return v;
}

/* Scalar conversions usable from every file (the generic reference). */
static inline float fp16_to_f32_inline(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FF, bits;
	if (e == 0) {
		if (m == 0) {
			bits = sign;
		} else { /* subnormal: normalize */
			e = 113;
			while (!(m & 0x400)) {
				m <<= 1;
				e--;
			}
			bits = sign | (e << 23) | ((m & 0x3FF) << 13);
		}
	} else if (e == 31) { /* inf, or NaN made quiet (as vcvtph2ps) */
		bits = sign | 0x7F800000u | (m ? 0x400000u | (m << 13) : 0);
	} else {
		bits = sign | ((e + 112) << 23) | (m << 13);
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

/* The half at p as a float (a block's f16 scale). */
static inline float ld_f16(const void *p) { return fp16_to_f32_inline(ld_u16(p)); }

/* Element i of a KV row of type t as attention reads it (kernels.h
 * kv_type_t; exact: d * q of a Q8_0 block has at most 18 significant
 * bits). */
static inline float kv_elem(kv_type_t t, const uint8_t *row, int64_t i)
{
	if (t == KV_F16)
		return fp16_to_f32_inline(ld_u16(row + 2 * i));
	if (t == KV_Q8_0) {
		const uint8_t *b = row + (i / QK) * (int64_t)sizeof(block_q8_0);
		return ld_f16(b) * (float)(int8_t)b[2 + i % QK];
	}
	return ld_f32(row + 4 * i);
}

/* Round to nearest even; NaN stays NaN, quiet, payload truncated (as
 * vcvtps2ph); overflow gives inf; subnormal halves are produced exactly. */
static inline uint16_t f32_to_fp16_inline(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7FFFFFFFu;
	if (ax >= 0x7F800000u) /* inf / NaN */
		return (uint16_t)(sign | 0x7C00 |
				  (ax > 0x7F800000u ? 0x200 | ((ax >> 13) & 0x3FF) : 0));
	if (ax >= 0x477FF000u) /* >= 65520 rounds to inf */
		return (uint16_t)(sign | 0x7C00);
	if (ax < 0x38800000u) { /* below 2^-14: subnormal half or zero */
		if (ax <= 0x33000000u) /* <= 2^-25 rounds to zero */
			return (uint16_t)sign;
		uint32_t e = ax >> 23, mant = (ax & 0x7FFFFF) | 0x800000;
		uint32_t shift = 126 - e; /* 14..24 */
		uint32_t m = mant >> shift, rem = mant & ((1u << shift) - 1);
		uint32_t half = 1u << (shift - 1);
		if (rem > half || (rem == half && (m & 1)))
			m++;
		return (uint16_t)(sign | m);
	}
	uint32_t h = (ax - 0x38000000u) >> 13, rem = ax & 0x1FFF;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++;
	return (uint16_t)(sign | h);
}

/* RMSNorm's scale as ggml computes it (ggml_compute_forward_rms_norm_f32):
 * each x*x rounded to float, summed in order in double, the mean
 * (double) rounded to float, then 1 / sqrtf(mean + eps) in float. Every
 * level calls this one scalar loop, so the scale has the same bits at all
 * of them; only o = w * (ss * x) is vectorized. */
static inline float rmsnorm_scale(const float *x, int64_t n, float eps)
{
	double sum = 0.0;
	for (int64_t j = 0; j < n; j++) {
		float p = x[j] * x[j];
		FP_ROUNDED(p);
		sum += (double)p;
	}
	const float mean = (float)(sum / (double)n);
	return 1.0f / sqrtf(mean + eps);
}

/* One block of 32 activations as Q8_0 quants (the generic rule of
 * quantize_q8_0_generic, kernels.c: q = x * (127 / amax) rounded half to
 * even, clamped to [-127, 127], a NaN element -127); returns the unrounded
 * d = amax / 127, which Q8_0 stores as f16 and Q8_1 also multiplies by the
 * quants' sum. */
static inline float q8_block_generic(const float *xb, int8_t *q)
{
	float amax = 0.0f;
	for (int j = 0; j < 32; j++) {
		float a = fabsf(xb[j]);
		if (a > amax) /* a NaN never wins */
			amax = a;
	}
	float id = amax != 0.0f ? 127.0f / amax : 0.0f;
	for (int j = 0; j < 32; j++) {
		float v = xb[j] * id;
		v = fminf(fmaxf(v, -127.0f), 127.0f); /* NaN -> -127 */
		q[j] = (int8_t)rintf(v); /* half to even */
	}
	return amax / 127.0f;
}


/* ============================================================ the tables */

/* The kernel types, one per kind of table entry. Function types (not
 * pointers), so that a file declares its kernels by name:
 * `vec_dot_kernel_t dot_q4_K_avx2;`. Kernels are named
 * <op>_<type>_<level> (dot_q4_K_avx2, matvec_p16_q6_K_avx512vnni), or
 * <op>_<level> where the op takes no weight type (rmsnorm_neon,
 * gemm_quant_avx2). */

/* w (n,) of type wt . xa (n,) prepared activations. */
typedef float vec_dot_kernel_t(const void *w, const void *xa, int64_t n);
/* W rows r0..r1-1 (row stride rb bytes) @ xa -> y[r0..r1-1]. */
typedef void matvec_kernel_t(const void *W, size_t rb, const void *xa, float *y,
			     int64_t n, int64_t r0, int64_t r1);
/* Weights W rows r0..r1-1 (row stride rb bytes) x ntok activation rows
 * (float, or the type's prepared activations; token k at X + k * xs
 * bytes) -> Y[k * ys + r]; every output the same bits as the level's
 * matvec of that row and token. */
typedef void matmat_kernel_t(const void *W, size_t rb, const void *X, size_t xs,
			     float *Y, int64_t ys, int64_t n, int64_t r0, int64_t r1,
			     int64_t ntok);
/* Packed groups (pack16): ng groups of G rows (pack16_group_rows) from P @
 * xa -> y[0 .. G ng). */
typedef void matvec_p16_kernel_t(const void *P, const void *xa, float *y, int64_t n,
				 int64_t ng);
/* Packed groups x ntok tokens, as matmat: outputs Y[k * ys + r] for the
 * groups' rows r = 0 .. G ng - 1. */
typedef void matmat_p16_kernel_t(const void *P, const void *X, size_t xs, float *Y,
				 int64_t ys, int64_t n, int64_t ng, int64_t ntok);
/* x (n,) floats -> y, n elements of another type. */
typedef void quantize_kernel_t(const float *x, void *y, int64_t n);
/* x, n halves at any byte address -> y (n,). */
typedef void fp16_to_f32_kernel_t(const void *x, float *y, int64_t n);
typedef void rmsnorm_kernel_t(float *o, const float *x, const float *w, int64_t n,
			      float eps);
typedef void softmax_kernel_t(float *x, int64_t n);
/* rotation of n_heads heads with a precomputed table of rot_dim / 2
 * (cos, sin) pairs: cs[2j] = cos, cs[2j + 1] = sin of pair j */
typedef void rope_apply_kernel_t(float *x, int n_heads, int head_dim, int rot_dim,
				 const float *cs, int neox);
/* attention_heads_kv (kernels.h) for one KV type */
typedef void attention_kernel_t(float *out, const float *q, const void *k,
				const void *v, size_t rb, int n_pos, int hd,
				float *scores, int nh, int64_t ss);
typedef void swiglu_kernel_t(float *o, const float *a, const float *b, int64_t n);
/* Quantized weights (Q8_0, Q4_0 or Q5_0, t) rows r0..r1-1 (row stride rb
 * bytes) against ntok Q8_0 activation rows (row t at X + t * xs bytes), nb
 * blocks each, with their aux (dx: scales as floats, sx: sums of the
 * quants; token t's block b at [t * nb + b]) -> Y[t * ys + r]; or Q4_1 /
 * Q5_1 weights (avx512vnni only) against Q8_1 rows, sx then holding the
 * blocks' s as floats (gemm.c aux_region). Every
 * output is the same bits as vec_dot_generic(t, row r, X + t * xs, nb *
 * QK). P: W's packed copy of rows 0..np-1 (pack16, kernels.h), or NULL; a
 * level may read the whole groups there instead of the rows. */
#define GEMM_QUANT_ARGS                                                       \
	dtype_t t, const uint8_t *W, size_t rb, const uint8_t *P, int64_t np, \
		const uint8_t *X, size_t xs, const float *dx,                 \
		const int32_t *sx, float *Y, int64_t ys, int64_t nb,          \
		int64_t r0, int64_t r1, int64_t ntok
typedef void gemm_quant_kernel_t(GEMM_QUANT_ARGS);
/* The aux of gemm_quant for ntok Q8_0 activation rows (row k at X + k xs
 * bytes, nb blocks each): dx[k nb + b] = block b's scale, sx[k nb + b] =
 * the sum of its quants. */
typedef void gemm_aux_kernel_t(const uint8_t *X, size_t xs, int64_t nb, int64_t ntok,
			       float *dx, int32_t *sx);
/* attn_rows_heads_kv (kernels.h) for one KV type. */
typedef int attn_rows_kernel_t(const float *q, int64_t qs, const void *K,
			       const void *V, size_t rb, float *out, int64_t os,
			       int64_t hd, int32_t pos, int32_t nh);
/* attn_rows_group_kv (kernels.h) for one KV type. */
typedef int attn_group_kernel_t(const float *q, int64_t qs, int64_t qh, const void *K,
				const void *V, size_t rb, float *out, int64_t os, int64_t oh,
				int64_t hd, int32_t pos0, int32_t nq, int32_t nh);

typedef matmat_kernel_t *matmat_fn;
typedef matmat_p16_kernel_t *matmat_p16_fn;
typedef gemm_quant_kernel_t *gemm_quant_fn;

/* The most blocks per row a packed kernel takes (16384 elements). */
#define P16_NBMAX 512

/* What one level runs for one weight type (ggml's type_traits). */
typedef struct kernel_type_ops {
	vec_dot_kernel_t *vec_dot;
	matvec_kernel_t *matvec;
	/* rows read from pack16's groups; absent: the level has no packed
	 * form of the type (pack16_used says 0) */
	matvec_p16_kernel_t *matvec_p16;
	/* rows x a token batch; absent: gemm_rows runs the level's
	 * gemm_quant (Q8_0, Q4_0, and Q5_0 on x86: gemm.c quant_type) or its
	 * matvec once per token */
	matmat_kernel_t *matmat;
	/* packed groups x a token batch (where matvec_p16 is); absent:
	 * gemm_rows reads the rows as stored */
	matmat_p16_kernel_t *matmat_p16;
} kernel_type_ops_t;

/* What one level runs for one KV cache type (kernels.h kv_type_t): decode
 * attention, batched causal attention, the heads of a decode token. */
typedef struct kernel_kv_ops {
	attention_kernel_t *attention;
	attn_group_kernel_t *attn_rows; /* the query heads of a KV head */
	attn_rows_kernel_t *attn_rows_heads;
} kernel_kv_ops_t;

/* One ISA level. Every entry is a complete implementation, named where the
 * table is defined (kops_generic in kernels.c; the SIMD levels' at the
 * end of kernels_avx2.c, kernels_avx512.c (both avx512 levels and amx) and
 * kernels_neon.c (both ARM64 levels)); where a level has no better kernel
 * than a lower level's, its entry names that one. No entry is NULL
 * (tests/test_kernels.c test_tables_complete checks every entry of every
 * table): an optional entry that a level lacks by contract holds the
 * absent kernel of its kind (below). */
typedef struct kernel_ops {
	const char *name; /* the level, as EGANG_ISA names it */
	kernel_type_ops_t type[DTYPE_COUNT];
	/* x (n,) -> Q8_0 blocks (n/32); bit-exact with the generic. */
	quantize_kernel_t *quantize_q8_0;
	/* x (n,) -> Q8_K blocks (n/256), the K-quants' activations; the
	 * generic's bytes. */
	quantize_kernel_t *quantize_q8_K;
	/* Row conversions (halves at any byte address); bit-exact with the
	 * scalar generic converters. */
	fp16_to_f32_kernel_t *fp16_to_f32_row;
	quantize_kernel_t *f32_to_fp16_row;
	/* The forward pass's float math, bit-exact with the generic twins
	 * (kernels.h). */
	rmsnorm_kernel_t *rmsnorm;
	softmax_kernel_t *softmax;
	rope_apply_kernel_t *rope_apply;
	swiglu_kernel_t *swiglu;
	/* Prefill (gemm.c): the quantized gemm (absent: gemm_rows_generic),
	 * its aux. */
	gemm_quant_kernel_t *gemm_quant;
	gemm_aux_kernel_t *gemm_aux;
	/* Attention per KV cache type (kernels.c, attn.c), bit-exact with
	 * the generic twins. */
	kernel_kv_ops_t kv[KV_TYPE_COUNT];
} kernel_ops_t;

/* The absent kernels: the value of an optional entry that a level lacks
 * by contract, where NULL would be an entry forgotten. The optional
 * entries: matvec_p16, matmat, matmat_p16, gemm_quant, and the vec_dot and
 * matvec of Q8_1, an activation type that no weight has. Callers check
 * for them (kernels.c pack16_used, gemm.c); the public vec_dot,
 * vec_dot_generic and matvec_rows assert that the weight type is not Q8_1
 * (a caller's bug). Called anyway, each names itself and its entry on
 * stderr and aborts. */
vec_dot_kernel_t dot_absent;
matvec_kernel_t matvec_absent;
matvec_p16_kernel_t matvec_p16_absent;
matmat_kernel_t matmat_absent;
matmat_p16_kernel_t matmat_p16_absent;
gemm_quant_kernel_t gemm_quant_absent;

/* Every entry of kernel_type_ops_t and of kernel_ops_t as X(field, absent,
 * optional), for walks over a table (test_tables_complete): absent, the
 * field's absent kernel (NULL: it has none); optional, an expression of
 * the weight type t that says whether the entry may hold it. The asserts
 * below hold the lists to the structs: a field added to a struct and not
 * to its list fails to compile. */
#define KERNEL_TYPE_OPS(X)                            \
	X(vec_dot, dot_absent, t == DTYPE_Q8_1)       \
	X(matvec, matvec_absent, t == DTYPE_Q8_1)     \
	X(matvec_p16, matvec_p16_absent, 1)           \
	X(matmat, matmat_absent, 1)                   \
	X(matmat_p16, matmat_p16_absent, 1)
#define KERNEL_OPS(X)                                 \
	X(quantize_q8_0, NULL, 0)                     \
	X(quantize_q8_K, NULL, 0)                     \
	X(fp16_to_f32_row, NULL, 0)                   \
	X(f32_to_fp16_row, NULL, 0)                   \
	X(rmsnorm, NULL, 0)                           \
	X(softmax, NULL, 0)                           \
	X(rope_apply, NULL, 0)                        \
	X(swiglu, NULL, 0)                            \
	X(gemm_quant, gemm_quant_absent, 1)           \
	X(gemm_aux, NULL, 0)                          \
	X(kv[KV_F16].attention, NULL, 0)              \
	X(kv[KV_F16].attn_rows, NULL, 0)              \
	X(kv[KV_F16].attn_rows_heads, NULL, 0)        \
	X(kv[KV_F32].attention, NULL, 0)              \
	X(kv[KV_F32].attn_rows, NULL, 0)              \
	X(kv[KV_F32].attn_rows_heads, NULL, 0)        \
	X(kv[KV_Q8_0].attention, NULL, 0)             \
	X(kv[KV_Q8_0].attn_rows, NULL, 0)             \
	X(kv[KV_Q8_0].attn_rows_heads, NULL, 0)
#define KERNEL_OPS_COUNT_ONE(field, absent, optional) +1
_Static_assert(sizeof(kernel_type_ops_t) ==
		       (0 KERNEL_TYPE_OPS(KERNEL_OPS_COUNT_ONE)) * sizeof(void (*)(void)),
	       "KERNEL_TYPE_OPS must list every entry of kernel_type_ops_t");
_Static_assert(KV_TYPE_COUNT == 3, "KERNEL_OPS lists the kv entries of three KV types");
_Static_assert(sizeof(kernel_ops_t) ==
		       sizeof(const char *) + DTYPE_COUNT * sizeof(kernel_type_ops_t) +
			       (0 KERNEL_OPS(KERNEL_OPS_COUNT_ONE)) * sizeof(void (*)(void)),
	       "KERNEL_OPS must list every entry of kernel_ops_t");

/* The levels, lowest first; a CPU has the levels of one architecture only
 * (kernels.c isa_supported lists the features of each). */
enum isa {
	ISA_GENERIC,
	ISA_AVX2,
	ISA_AVX512,
	ISA_AVX512VNNI,
	ISA_AMX,
	ISA_NEON,
	ISA_DOTPROD,
	ISA_COUNT
};

/* The table of level isa (< ISA_COUNT), whether or not this CPU runs it;
 * NULL for the levels of the other architecture. */
const kernel_ops_t *kernels_table(int isa);
/* The table of the level in use (kernels_init chooses it). */
const kernel_ops_t *kernels_ops(void);

extern const kernel_ops_t kops_generic;
#if defined(__x86_64__)
extern const kernel_ops_t kops_avx2;       /* kernels_avx2.c */
extern const kernel_ops_t kops_avx512;     /* kernels_avx512.c */
extern const kernel_ops_t kops_avx512vnni; /* kernels_avx512.c, as kernels_avx512vnni.c */
extern const kernel_ops_t kops_amx;        /* kernels_avx512.c, as kernels_avx512vnni.c */
#endif
#if defined(__aarch64__)
extern const kernel_ops_t kops_neon;    /* kernels_neon.c: ASIMD */
extern const kernel_ops_t kops_dotprod; /* kernels_neon.c: ASIMD + dot product */
#endif

/* ------------------------------------------ kernels named across files */

/* generic: what a SIMD level has no kernel of its own for (kernels.c,
 * gemm.c; attn_rows_generic and attn_rows_heads_generic: kernels.h) */
vec_dot_kernel_t dot_q8_K_generic;
matvec_kernel_t matvec_q8_K_generic;
quantize_kernel_t quantize_q8_K_generic;
gemm_aux_kernel_t gemm_aux_generic;
/* kernels.c, attn.c: per KV type */
attention_kernel_t attention_f32_generic, attention_f16_generic, attention_q8_0_generic;
attn_group_kernel_t attn_rows_f32_generic, attn_rows_f16_generic, attn_rows_q8_0_generic;
attn_rows_kernel_t attn_rows_heads_f32_generic, attn_rows_heads_f16_generic,
	attn_rows_heads_q8_0_generic;

#if defined(__x86_64__)
/* kquants_avx2.c: the legacy types, IQ4_NL / IQ4_XS and the K-quants,
 * each the same bits as kq_dot_generic; the avx2 level's, and the avx512
 * levels' where these have no 512-bit form (Q5_0's gemm is gemm_quant:
 * no matmat) */
vec_dot_kernel_t dot_q4_1_avx2, dot_q5_0_avx2, dot_q5_1_avx2, dot_iq4_nl_avx2,
	dot_q2_K_avx2, dot_q3_K_avx2, dot_q4_K_avx2, dot_q5_K_avx2, dot_q6_K_avx2,
	dot_iq4_xs_avx2;
matvec_kernel_t matvec_q4_1_avx2, matvec_q5_0_avx2, matvec_q5_1_avx2, matvec_iq4_nl_avx2,
	matvec_q2_K_avx2, matvec_q3_K_avx2, matvec_q4_K_avx2, matvec_q5_K_avx2,
	matvec_q6_K_avx2, matvec_iq4_xs_avx2;
matmat_kernel_t matmat_q4_1_avx2, matmat_q5_1_avx2, matmat_iq4_nl_avx2, matmat_q2_K_avx2,
	matmat_q3_K_avx2, matmat_q4_K_avx2, matmat_q5_K_avx2, matmat_q6_K_avx2,
	matmat_iq4_xs_avx2;
/* the Q8_K activation quantizer, kq_quantize(DTYPE_Q8_K)'s bytes */
quantize_kernel_t quantize_q8_K_avx2;
/* kq_pack_avx2.c: packed Q4_K, Q5_K, Q6_K */
matvec_p16_kernel_t matvec_p16_q4_K_avx2, matvec_p16_q5_K_avx2, matvec_p16_q6_K_avx2;
matmat_p16_kernel_t matmat_p16_q4_K_avx2, matmat_p16_q5_K_avx2, matmat_p16_q6_K_avx2;
/* gemm_avx2.c: the quantized gemm (also the avx512 level's: faster than
 * vpdpbusd emulated) and its aux (every x86 level's) */
gemm_quant_kernel_t gemm_quant_avx2;
gemm_aux_kernel_t gemm_aux_avx2;
/* attn.c, per KV type */
attn_group_kernel_t attn_rows_f32_avx2, attn_rows_f16_avx2, attn_rows_q8_0_avx2;
attn_group_kernel_t attn_rows_f32_avx512, attn_rows_f16_avx512, attn_rows_q8_0_avx512;
/* kernels_avx2.c, kernels_avx512.c: the decode attention per KV type
 * (attn_decode_x86.h; the avx512 ones in both avx512 tables) */
attention_kernel_t attention_f32_avx2, attention_f16_avx2, attention_q8_0_avx2;
attn_rows_kernel_t attn_rows_heads_f32_avx2, attn_rows_heads_f16_avx2, attn_rows_heads_q8_0_avx2;
attention_kernel_t attention_f32_avx512, attention_f16_avx512, attention_q8_0_avx512;
attn_rows_kernel_t attn_rows_heads_f32_avx512, attn_rows_heads_f16_avx512,
	attn_rows_heads_q8_0_avx512;
/* kernels_avx512.c: the avx512 level's kernels that do not depend on VNNI
 * (float weights, conversions, the forward pass's float math), compiled
 * once and named by the avx512vnni table too */
vec_dot_kernel_t dot_f32_avx512, dot_f16_avx512, dot_bf16_avx512;
matvec_kernel_t matvec_f32_avx512, matvec_f16_avx512, matvec_bf16_avx512;
matmat_kernel_t matmat_f32_avx512, matmat_f16_avx512, matmat_bf16_avx512;
matvec_p16_kernel_t matvec_p16_f32_avx512, matvec_p16_f16_avx512, matvec_p16_bf16_avx512;
matmat_p16_kernel_t matmat_p16_f32_avx512, matmat_p16_f16_avx512, matmat_p16_bf16_avx512;
quantize_kernel_t quantize_q8_0_avx512, f32_to_fp16_row_avx512;
fp16_to_f32_kernel_t fp16_to_f32_row_avx512;
rmsnorm_kernel_t rmsnorm_avx512;
softmax_kernel_t softmax_avx512;
rope_apply_kernel_t rope_apply_avx512;
swiglu_kernel_t swiglu_avx512;
/* kquants_avx512.c: 512-bit Q4_K, Q5_K, Q6_K (no VNNI: both avx512 levels) */
vec_dot_kernel_t dot_q4_K_avx512, dot_q5_K_avx512, dot_q6_K_avx512;
matvec_kernel_t matvec_q4_K_avx512, matvec_q5_K_avx512, matvec_q6_K_avx512;
matmat_kernel_t matmat_q4_K_avx512, matmat_q5_K_avx512, matmat_q6_K_avx512;
/* kq_pack_avx512.c, compiled once per avx512 level */
matvec_p16_kernel_t matvec_p16_q4_K_avx512, matvec_p16_q5_K_avx512, matvec_p16_q6_K_avx512;
matmat_p16_kernel_t matmat_p16_q4_K_avx512, matmat_p16_q5_K_avx512, matmat_p16_q6_K_avx512;
matvec_p16_kernel_t matvec_p16_q4_K_avx512vnni, matvec_p16_q5_K_avx512vnni,
	matvec_p16_q6_K_avx512vnni;
matmat_p16_kernel_t matmat_p16_q4_K_avx512vnni, matmat_p16_q5_K_avx512vnni,
	matmat_p16_q6_K_avx512vnni;
/* gemm_avx512.c */
gemm_quant_kernel_t gemm_quant_avx512vnni;
/* gemm_amx.c: the amx level's quantized gemm (below GEMM_AMX_MIN_TOKENS
 * tokens gemm_quant_avx512vnni, else gemm_tiles_amx), and its tile kernel
 * for any number of tokens: callable only where the amx level is
 * supported (kernels_set_isa("amx") succeeds). gemm_amx_emu.c: the same
 * tile kernel with the tile instructions emulated in C (amx_tile.h), for
 * tests only, in no table; it needs the avx512vnni level's features. All
 * three give gemm_quant's bits. */
gemm_quant_kernel_t gemm_quant_amx, gemm_tiles_amx, gemm_tiles_amx_emu;
/* gemm_amx_bf16.c: the amx level's BF16 kernels, every output in
 * TDPBF16PS's order (the file's contract): vec_dot and matvec in AVX-512
 * lanes (no tile instruction: they run wherever avx512vnni does), matmat
 * on the tiles from 16 tokens (gemm_tiles_bf16_amx, any number of tokens;
 * callable only where the amx level is supported), in the lanes below;
 * the *_emu twins (gemm_amx_bf16_emu.c, tests only, in no table) with the
 * tile instructions emulated in C. All give the same bits. */
vec_dot_kernel_t dot_bf16_amx, dot_bf16_amx_emu;
matvec_kernel_t matvec_bf16_amx, matvec_bf16_amx_emu;
matmat_kernel_t matmat_bf16_amx, matmat_bf16_amx_emu, gemm_tiles_bf16_amx,
	gemm_tiles_bf16_amx_emu;
/* K-quant weights (Q4_K, Q5_K or Q6_K, t) rows r0..r1-1 (stored at W, rb
 * bytes apart) against ntok Q8_K activation rows (row k at X + k xs
 * bytes), n elements each -> Y[k ys + r], every output the bits of
 * vec_dot_generic(t, row r, X + k xs, n). P: W's packed copy of rows
 * 0..np-1 (pack16), or NULL; the whole groups are read there. W may be
 * NULL when [r0, r1) is whole groups of P. */
#define GEMM_KQ_ARGS                                                          \
	dtype_t t, const uint8_t *W, size_t rb, const uint8_t *P, int64_t np, \
		const uint8_t *X, size_t xs, float *Y, int64_t ys, int64_t n,  \
		int64_t r0, int64_t r1, int64_t ntok
typedef void gemm_kq_kernel_t(GEMM_KQ_ARGS);
/* gemm_amx.c: the K-quant tile kernel (gemm_tiles_kq_amx; _emu: emulated
 * tiles, for tests only, in no table) and the amx level's K-quant gemms
 * over it, the avx512vnni kernels below GEMM_AMX_MIN_TOKENS tokens */
gemm_kq_kernel_t gemm_tiles_kq_amx, gemm_tiles_kq_amx_emu;
matmat_kernel_t matmat_q4_K_amx, matmat_q5_K_amx, matmat_q6_K_amx;
matmat_p16_kernel_t matmat_p16_q4_K_amx, matmat_p16_q5_K_amx, matmat_p16_q6_K_amx;
#endif

#if defined(__aarch64__)
/* attn.c (both ARM64 levels), per KV type */
attn_group_kernel_t attn_rows_f32_neon, attn_rows_f16_neon, attn_rows_q8_0_neon;
attn_rows_kernel_t attn_rows_heads_f32_neon, attn_rows_heads_f16_neon, attn_rows_heads_q8_0_neon;
#endif

/* ---------------------------------------------------------- kernel shapes */

/* name: a matvec that runs dot on each row in turn (the generic level,
 * and the types a level decodes one row at a time). ATTR: storage class
 * and target attribute. */
#define KERNEL_MATVEC_BY_DOT(name, ATTR, dot)                                 \
	ATTR void name(const void *W, size_t rb, const void *xa, float *y,     \
		       int64_t n, int64_t r0, int64_t r1)                      \
	{                                                                     \
		for (int64_t r = r0; r < r1; r++)                             \
			y[r] = dot((const char *)W + (size_t)r * rb, xa, n);  \
	}

/* dot_<tag> and matvec_<tag> of type T over a row-group template
 * ROWS(T, wr, xa, n, out, R), which runs R row pointers wr (R = 4 in the
 * body of a range, 1 for the rest and for the dot product) through the
 * same operations per row whatever R is, so that a row's bits never
 * depend on how the rows were grouped. */
#define KERNEL_ROWS4(tag, ATTR, T, ROWS)                                        \
	ATTR float dot_##tag(const void *w, const void *xa, int64_t n)           \
	{                                                                        \
		const uint8_t *wr[1] = { w };                                    \
		float out[1];                                                    \
		ROWS(T, wr, xa, n, out, 1);                                      \
		return out[0];                                                   \
	}                                                                        \
	ATTR void matvec_##tag(const void *W, size_t rb, const void *xa, float *y, \
			       int64_t n, int64_t r0, int64_t r1)                \
	{                                                                        \
		const uint8_t *base = W;                                         \
		int64_t r = r0;                                                  \
		for (; r + 4 <= r1; r += 4) {                                    \
			const uint8_t *wr[4] = {                                 \
				base + (size_t)r * rb, base + (size_t)(r + 1) * rb, \
				base + (size_t)(r + 2) * rb, base + (size_t)(r + 3) * rb }; \
			ROWS(T, wr, xa, n, y + r, 4);                            \
		}                                                                \
		for (; r < r1; r++) {                                            \
			const uint8_t *wr[1] = { base + (size_t)r * rb };        \
			ROWS(T, wr, xa, n, y + r, 1);                            \
		}                                                                \
	}

#endif
