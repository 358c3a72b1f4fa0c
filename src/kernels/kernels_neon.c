/* kernels: the ARM64 levels, "neon" (ASIMD, in every ARMv8-A CPU) and
 * "dotprod" (ASIMD with the ARMv8.2 dot product SDOT, detected at run time
 * by kernels.c from AT_HWCAP). See kernels_impl.h for what is bit-exact;
 * doc/arm64/README.md counts the loads and multiply-accumulates per block.
 *
 *  - Float weights (F32 / F16 / BF16): the AVX2 level's order, lane for
 *    lane: two 8-lane FMA accumulators (here each a pair of 4-lane
 *    registers) over steps of 16 elements, a ragged tail zero-padded into
 *    one more step, then (acc0 + acc1), lanes 0-3 + lanes 4-7, (0+2, 1+3),
 *    0+1. FMLA and VFMADD are both one IEEE fused rounding, so a row gives
 *    the same bits here as at the avx2 level (and stories260K the same
 *    logits as an x86 machine with EGANG_ISA=avx2).
 *  - Q8_0 / Q4_0 weights: each block's exact int32 sum (SMULL + SADALP, or
 *    SDOT at the dotprod level), then the generic's float step per row:
 *    the same bits as the generic at both levels.
 *  - The forward pass's float math (rmsnorm, softmax, rope, attention,
 *    swiglu): the generic's operations, vectorized only where lanes are
 *    independent outputs, every product rounded before its add: the same
 *    bits as the generic.
 *  - Q4_K / Q6_K weights (Q8_K activations): each super-block's exact
 *    integer sums, then kq_k_step, the generic's float step: the same bits.
 *  - Q2_K, Q3_K, Q5_K, IQ4_XS (Q8_K activations) and Q5_0, Q4_1, Q5_1,
 *    IQ4_NL (Q8_0 / Q8_1): the same scheme, exact integer sums then the
 *    generic's float step: the same bits.
 * The K-quants and legacy types run rows one at a time (no 4-row group:
 * the block's scale decode dominates) and the GEMM as the matvec per token;
 * except that the Q4_K and Q6_K decode matvec reads the 16-row packed
 * groups (kquants.h KQ_P16_*, the x86 levels' layout) where the matrix has
 * them: the scales decoded at load, a group of activations broadcast
 * against 4 rows, the float step in 4 lanes ("packed Q4_K / Q6_K" below).
 *
 * Row groups: a row-group template takes R row pointers (R = 4 in the body
 * of a range, 1 for the rest and vec_dot) and runs the same operations per
 * row whatever R is, so a row's bits never depend on the chunking. */
#include "kernels/gemm_impl.h"
#include "kernels/kquants.h"

#if defined(__aarch64__)

#include <arm_neon.h>
#include <math.h>
#include <stdbool.h>

#define NEON_INLINE static inline __attribute__((always_inline))
/* GCC's arm_neon.h defines SDOT under arch=armv8.2-a+dotprod; a CPU with
 * dotprod (HWCAP_ASIMDDP) implements ARMv8.2-A at least. */
#define DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#define DOTPROD_INLINE static inline __attribute__((always_inline, target("arch=armv8.2-a+dotprod")))

/* bytes ahead of each row of a 4-row group that are prefetched */
#define PF_DIST 1024

/* ------------------------------------------------------ conversions */

static void fp16_to_f32_row_neon(const void *xv, float *y, int64_t n)
{
	const uint8_t *x = xv;
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		float16x8_t h = vreinterpretq_f16_u8(vld1q_u8(x + 2 * i));
		vst1q_f32(y + i, vcvt_f32_f16(vget_low_f16(h)));
		vst1q_f32(y + i + 4, vcvt_high_f32_f16(h));
	}
	for (; i < n; i++)
		y[i] = fp16_to_f32_inline(ld_u16(x + 2 * i));
}

/* FCVTN rounds as FPCR says: to nearest even (Linux's default mode), NaN
 * quieted with its payload's top bits, overflow to inf, halves' subnormals
 * exact; the generic's rules. */
static void f32_to_fp16_row_neon(const float *x, void *yv, int64_t n)
{
	uint8_t *y = yv;
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		float16x8_t h = vcvt_high_f16_f32(vcvt_f16_f32(vld1q_f32(x + i)),
						  vld1q_f32(x + i + 4));
		vst1q_u8(y + 2 * i, vreinterpretq_u8_f16(h));
	}
	for (; i < n; i++)
		st_u16(y + 2 * i, f32_to_fp16_inline(x[i]));
}

/* Q8_0 quantization, bit-exact with quantize_q8_0_generic: FMAXNM ignores
 * a NaN operand as "if (a > amax)" does (the running max starts at 0, never
 * NaN), and maps a NaN product to -127 as fmaxf does; FCVTNS rounds half to
 * even as rintf. */
static void quantize_q8_0_neon(const float *x, void *yv, int64_t n)
{
	uint8_t *y = yv;
	for (int64_t b = 0; b < n / QK; b++) {
		const float *xb = x + b * QK;
		float32x4_t v[8], m = vdupq_n_f32(0.0f);
		for (int k = 0; k < 8; k++) {
			v[k] = vld1q_f32(xb + 4 * k);
			m = vmaxnmq_f32(m, vabsq_f32(v[k]));
		}
		float amax = vmaxnmvq_f32(m);
		float d = amax / 127.0f;
		float id = amax != 0.0f ? 127.0f / amax : 0.0f;
		uint8_t *yb = y + b * sizeof(block_q8_0);
		st_u16(yb, f32_to_fp16_inline(d));
		const float32x4_t vid = vdupq_n_f32(id);
		int16x8_t q16[4];
		for (int k = 0; k < 4; k++) {
			int32x4_t q[2];
			for (int h = 0; h < 2; h++) {
				float32x4_t t = vmulq_f32(v[2 * k + h], vid);
				t = vminnmq_f32(vmaxnmq_f32(t, vdupq_n_f32(-127.0f)),
						vdupq_n_f32(127.0f));
				q[h] = vcvtnq_s32_f32(t);
			}
			q16[k] = vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1]));
		}
		vst1q_s8((int8_t *)(yb + 2), vcombine_s8(vmovn_s16(q16[0]), vmovn_s16(q16[1])));
		vst1q_s8((int8_t *)(yb + 18), vcombine_s8(vmovn_s16(q16[2]), vmovn_s16(q16[3])));
	}
}

/* ------------------------------------------------ float-weight rows */

/* 4 weights of type t at element i of row w, as floats. */
NEON_INLINE float32x4_t load4(dtype_t t, const uint8_t *w, int64_t i)
{
	if (t == DTYPE_F32)
		return vld1q_f32((const float *)(const void *)(w + 4 * i));
	uint16x4_t h = vld1_u16((const uint16_t *)(const void *)(w + 2 * i));
	if (t == DTYPE_F16)
		return vcvt_f32_f16(vreinterpret_f16_u16(h));
	return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

/* acc[r][0..1] are the avx2 level's acc[r][0] (lanes 0-3, 4-7), acc[r][2..3]
 * its acc[r][1]; one step adds elements i..i+15. */
NEON_INLINE void step_float(dtype_t t, const uint8_t *const *w, int64_t i, const float *x,
			    float32x4_t acc[][4], const int R)
{
	/* a quarter of the step at a time: 16 accumulators, 1 activation and
	 * 4 weight registers live. GCC's scheduler hoists all 20 loads of a
	 * step otherwise (36 registers of the 32: spills); the empty asm with
	 * a memory clobber keeps each quarter's loads after the one before. */
#pragma GCC unroll 4
	for (int c = 0; c < 4; c++) {
		float32x4_t xc = vld1q_f32(x + 4 * c);
#pragma GCC unroll 4
		for (int r = 0; r < R; r++)
			acc[r][c] = vfmaq_f32(acc[r][c], load4(t, w[r], i + 4 * c), xc);
		if (R == 4)
			__asm__ __volatile__("" ::: "memory");
	}
}

NEON_INLINE void dot_rows_float(dtype_t t, const uint8_t *const *w, const float *x,
				int64_t n, float *out, const int R)
{
	const size_t es = t == DTYPE_F32 ? 4 : 2;
	float32x4_t acc[4][4];
#pragma GCC unroll 4
	for (int r = 0; r < R; r++)
		acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = vdupq_n_f32(0.0f);
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		if (R == 4 && ((size_t)i * es) % 64 < 16 * es) /* one per line */
#pragma GCC unroll 4
			for (int r = 0; r < R; r++)
				__builtin_prefetch(w[r] + (size_t)i * es + PF_DIST);
		step_float(t, w, i, x + i, acc, R);
	}
	if (i < n) {
		size_t rem = (size_t)(n - i);
		float xt[16] = { 0 };
		uint8_t wt[4][16 * 4];
		const uint8_t *wp[4];
		memcpy(xt, x + i, rem * 4);
#pragma GCC unroll 4
		for (int r = 0; r < R; r++) {
			memset(wt[r], 0, sizeof wt[r]);
			memcpy(wt[r], w[r] + (size_t)i * es, rem * es);
			wp[r] = wt[r];
		}
		step_float(t, wp, 0, xt, acc, R);
	}
#pragma GCC unroll 4
	for (int r = 0; r < R; r++) {
		/* avx2 hsum256_ps(acc0 + acc1): 8 lanes, then 4, then 2, then 1 */
		float32x4_t lo = vaddq_f32(acc[r][0], acc[r][2]);
		float32x4_t hi = vaddq_f32(acc[r][1], acc[r][3]);
		float32x4_t s = vaddq_f32(lo, hi);
		float32x2_t h = vadd_f32(vget_low_f32(s), vget_high_f32(s));
		out[r] = vget_lane_f32(h, 0) + vget_lane_f32(h, 1);
	}
}

/* ------------------------------------------------------------ quantized */

/* Quants and scale of activation block b (x: Q8_0 blocks as bytes). */
#define XQS(x, b) ((x) + (size_t)(b) * sizeof(block_q8_0) + 2)
#define XD(x, b) ((x) + (size_t)(b) * sizeof(block_q8_0))

/* The 32 signed weights of block b of row w, elements 0-15 and 16-31. */
NEON_INLINE void block_w(dtype_t t, const uint8_t *w, int64_t b, int8x16_t *w0, int8x16_t *w1)
{
	if (t == DTYPE_Q8_0) {
		const uint8_t *qs = w + (size_t)b * sizeof(block_q8_0) + 2;
		*w0 = vld1q_s8((const int8_t *)qs);
		*w1 = vld1q_s8((const int8_t *)qs + 16);
		return;
	}
	uint8x16_t q = vld1q_u8(w + (size_t)b * sizeof(block_q4_0) + 2);
	const int8x16_t eight = vdupq_n_s8(8);
	*w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0F))), eight);
	*w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), eight);
}

/* Block sums as 4 int32 lanes, exact: products |w x| <= 128 * 127, two of
 * them summed in int16 (<= 32512), pairs widened into int32. */
NEON_INLINE int32x4_t bsum_neon(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1)
{
	int16x8_t p0 = vmull_s8(vget_low_s8(w0), vget_low_s8(x0));
	int16x8_t p1 = vmull_high_s8(w0, x0);
	p0 = vmlal_s8(p0, vget_low_s8(w1), vget_low_s8(x1));
	p1 = vmlal_high_s8(p1, w1, x1);
	return vpadalq_s16(vpaddlq_s16(p0), p1);
}

DOTPROD_INLINE int32x4_t bsum_dotprod(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1)
{
	return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, x0), w1, x1);
}

/* An f16 scale as a float by FCVTL: exact, as fp16_to_f32_inline (which
 * takes a dozen scalar instructions and branches). */
NEON_INLINE float ld_f16_neon(const uint8_t *p)
{
	uint16x4_t h = vld1_dup_u16((const uint16_t *)(const void *)p);
	return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(h)), 0);
}

NEON_INLINE const uint8_t *block_d(dtype_t t, const uint8_t *w, int64_t b)
{
	return w + (size_t)b * (t == DTYPE_Q8_0 ? sizeof(block_q8_0) : sizeof(block_q4_0));
}

/* R = 4 rows: the four block sums are reduced together (ADDP) and the
 * float step acc += (float)sumi * (dw * dx) runs in four lanes; R = 1: the
 * same float operations on one scalar. Bit-exact with the generic. One
 * copy per level (BSUM: bsum_neon or bsum_dotprod). */
#define DOT_ROWS_QUANT(NAME, ATTR, BSUM)                                              \
	ATTR void NAME(dtype_t t, const uint8_t *const *w, const uint8_t *x, int64_t nb, \
		       float *out, const int R)                                         \
	{                                                                               \
		float32x4_t acc4 = vdupq_n_f32(0.0f);                                   \
		float acc1 = 0.0f;                                                      \
		for (int64_t b = 0; b < nb; b++) {                                      \
			int8x16_t x0 = vld1q_s8((const int8_t *)XQS(x, b));             \
			int8x16_t x1 = vld1q_s8((const int8_t *)XQS(x, b) + 16);        \
			float dx = ld_f16_neon(XD(x, b));                                       \
			int8x16_t w0, w1;                                               \
			if (R == 4) {                                                   \
				int32x4_t s[4];                                         \
				_Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)     \
				{                                                       \
					__builtin_prefetch(w[r] + (size_t)b * gemm_qbytes(t) + PF_DIST); \
					block_w(t, w[r], b, &w0, &w1);                  \
					s[r] = BSUM(w0, w1, x0, x1);                    \
				}                                                       \
				int32x4_t sum = vpaddq_s32(vpaddq_s32(s[0], s[1]),      \
							   vpaddq_s32(s[2], s[3]));     \
				uint16x4_t dh = vdup_n_u16(0);                          \
				dh = vld1_lane_u16((const uint16_t *)(const void *)block_d(t, w[0], b), dh, 0); \
				dh = vld1_lane_u16((const uint16_t *)(const void *)block_d(t, w[1], b), dh, 1); \
				dh = vld1_lane_u16((const uint16_t *)(const void *)block_d(t, w[2], b), dh, 2); \
				dh = vld1_lane_u16((const uint16_t *)(const void *)block_d(t, w[3], b), dh, 3); \
				float32x4_t d = vmulq_n_f32(                            \
					vcvt_f32_f16(vreinterpret_f16_u16(dh)), dx);    \
				float32x4_t prod = vmulq_f32(vcvtq_f32_s32(sum), d);    \
				FP_ROUNDED(prod);                                       \
				acc4 = vaddq_f32(acc4, prod);                           \
			} else {                                                        \
				block_w(t, w[0], b, &w0, &w1);                          \
				int32_t s = vaddvq_s32(BSUM(w0, w1, x0, x1));           \
				float d = ld_f16_neon(block_d(t, w[0], b)) * dx;                \
				float prod = (float)s * d;                              \
				FP_ROUNDED(prod);                                       \
				acc1 = acc1 + prod;                                     \
			}                                                               \
		}                                                                       \
		if (R == 4)                                                             \
			vst1q_f32(out, acc4);                                           \
		else                                                                    \
			out[0] = acc1;                                                  \
	}
DOT_ROWS_QUANT(dot_rows_quant_neon, NEON_INLINE, bsum_neon)
DOT_ROWS_QUANT(dot_rows_quant_dotprod, DOTPROD_INLINE, bsum_dotprod)

/* ------------------------------------------------------ entry points */

#define ROWS_FLOAT(T, wr, xa, n, out, R) dot_rows_float(T, wr, (const float *)(xa), n, out, R)
#define ROWS_QN(T, wr, xa, n, out, R) \
	dot_rows_quant_neon(T, wr, (const uint8_t *)(xa), (n) / QK, out, R)
#define ROWS_QD(T, wr, xa, n, out, R) \
	dot_rows_quant_dotprod(T, wr, (const uint8_t *)(xa), (n) / QK, out, R)
#define NOATTR

/* float weights: no dot product instruction, so both levels run these */
KERNEL_ROWS4(f32_neon, static, DTYPE_F32, ROWS_FLOAT)
KERNEL_ROWS4(f16_neon, static, DTYPE_F16, ROWS_FLOAT)
KERNEL_ROWS4(bf16_neon, static, DTYPE_BF16, ROWS_FLOAT)
KERNEL_ROWS4(q8_0_neon, static, DTYPE_Q8_0, ROWS_QN)
KERNEL_ROWS4(q4_0_neon, static, DTYPE_Q4_0, ROWS_QN)
KERNEL_ROWS4(q8_0_dotprod, DOTPROD static, DTYPE_Q8_0, ROWS_QD)
KERNEL_ROWS4(q4_0_dotprod, DOTPROD static, DTYPE_Q4_0, ROWS_QD)

/* ------------------------------------------------------------ K-quants */

/* 16 products q x as 4 int32 lanes, exact (|q x| <= 63 * 127 here). */
NEON_INLINE int32x4_t bsum16_neon(int8x16_t q, int8x16_t x)
{
	return vpadalq_s16(vpaddlq_s16(vmull_s8(vget_low_s8(q), vget_low_s8(x))),
			   vmull_high_s8(q, x));
}

DOTPROD_INLINE int32x4_t bsum16_dotprod(int8x16_t q, int8x16_t x)
{
	return vdotq_s32(vdupq_n_s32(0), q, x);
}

/* Q4_K / Q5_K: chunk c of 32 bytes holds sub-block 2c in its low nibbles
 * and 2c + 1 in its high ones (Q5_K: the fifth bit of element l of
 * sub-block s is (qh[l] >> s) & 1, as 16); sumi = sum over sub-blocks of
 * sc * (q . x), summ = sum of mn * the activations' bsums (as
 * kquants_avx2.c); all integer, so exact in any order; then kq_k_step. */
#define DEFINE_K32(NAME, ATTR, BSUM16, FIVE)                                             \
	ATTR static float NAME(const void *w, const void *xa, int64_t n)               \
	{                                                                              \
		const uint8x16_t m4 = vdupq_n_u8(0x0F), b4 = vdupq_n_u8(0x10);         \
		const size_t bb = FIVE ? sizeof(block_q5_K) : sizeof(block_q4_K);     \
		float acc = 0.0f;                                                      \
		for (int64_t b = 0; b < n / QK_K; b++) {                               \
			const uint8_t *wb = (const uint8_t *)w + (size_t)b * bb;       \
			const uint8_t *x = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K); \
			const uint8_t *qs = wb + (FIVE ? 48 : 16);                     \
			const int8_t *xq = (const int8_t *)(x + 4);                    \
			uint8_t sc[8], mn[8];                                          \
			for (int s = 0; s < 8; s++)                                    \
				kq_scale_min_k4(wb + 4, s, &sc[s], &mn[s]);            \
			uint8x16_t h0 = vdupq_n_u8(0), h1 = vdupq_n_u8(0);             \
			if (FIVE) {                                                    \
				h0 = vld1q_u8(wb + 16);                                \
				h1 = vld1q_u8(wb + 32);                                \
			}                                                              \
			int32x4_t acc32 = vdupq_n_s32(0);                              \
			for (int c = 0; c < 4; c++) {                                  \
				uint8x16_t q0 = vld1q_u8(qs + 32 * c), q1 = vld1q_u8(qs + 32 * c + 16); \
				uint8x16_t l0 = vandq_u8(q0, m4), l1 = vandq_u8(q1, m4); \
				uint8x16_t u0 = vshrq_n_u8(q0, 4), u1 = vshrq_n_u8(q1, 4); \
				if (FIVE) {                                            \
					const uint8x16_t bl = vdupq_n_u8((uint8_t)(1u << (2 * c))); \
					const uint8x16_t bh = vdupq_n_u8((uint8_t)(2u << (2 * c))); \
					l0 = vorrq_u8(l0, vandq_u8(vtstq_u8(h0, bl), b4)); \
					l1 = vorrq_u8(l1, vandq_u8(vtstq_u8(h1, bl), b4)); \
					u0 = vorrq_u8(u0, vandq_u8(vtstq_u8(h0, bh), b4)); \
					u1 = vorrq_u8(u1, vandq_u8(vtstq_u8(h1, bh), b4)); \
				}                                                      \
				const int8_t *xc = xq + 64 * c;                        \
				int32x4_t lo = vaddq_s32(                              \
					BSUM16(vreinterpretq_s8_u8(l0), vld1q_s8(xc)),  \
					BSUM16(vreinterpretq_s8_u8(l1), vld1q_s8(xc + 16))); \
				int32x4_t hi = vaddq_s32(                              \
					BSUM16(vreinterpretq_s8_u8(u0), vld1q_s8(xc + 32)), \
					BSUM16(vreinterpretq_s8_u8(u1), vld1q_s8(xc + 48))); \
				acc32 = vmlaq_n_s32(acc32, lo, sc[2 * c]);             \
				acc32 = vmlaq_n_s32(acc32, hi, sc[2 * c + 1]);         \
			}                                                              \
			int32_t summ = 0;                                              \
			for (int s = 0; s < 8; s++)                                    \
				summ += mn[s] * ((int16_t)ld_u16(x + 4 + QK_K + 4 * s) + \
						 (int16_t)ld_u16(x + 4 + QK_K + 4 * s + 2)); \
			acc = kq_k_step(acc, ld_f32(x), fp16_to_f32_inline(ld_u16(wb)), \
					fp16_to_f32_inline(ld_u16(wb + 2)), vaddvq_s32(acc32), \
					summ, 1);                                      \
		}                                                                      \
		return acc;                                                            \
	}

/* Q2_K / Q3_K: element 128 h + 32 j + l (sub-block 8 h + 2 j + l / 16)
 * has low bits (qs[32 h + l] >> 2 j) & 3; Q2_K: scale scales[s] & 15, min
 * scales[s] >> 4 (summ against the bsums); Q3_K: high bit (hmask[l] >>
 * (4 h + j)) & 1 as 4, q = low + 4 high - 4, 6-bit scales - 32
 * (kq_scales_q3), no min. Exact integer sums, then kq_k_step. */
#define DEFINE_K2_3(NAME, ATTR, BSUM16, Q3)                                              \
	ATTR static float NAME(const void *w, const void *xa, int64_t n)               \
	{                                                                              \
		const uint8x16_t m3 = vdupq_n_u8(0x03), four = vdupq_n_u8(0x04);      \
		const size_t bb = Q3 ? sizeof(block_q3_K) : sizeof(block_q2_K);       \
		float acc = 0.0f;                                                      \
		for (int64_t b = 0; b < n / QK_K; b++) {                               \
			const uint8_t *wb = (const uint8_t *)w + (size_t)b * bb;       \
			const uint8_t *x = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K); \
			const int8_t *xq = (const int8_t *)(x + 4);                    \
			const uint8_t *qs = wb + (Q3 ? 32 : 16);                       \
			int8_t sc[16];                                                 \
			int32_t summ = 0;                                              \
			float d, dmin = 0.0f;                                          \
			if (Q3) {                                                      \
				const block_q3_K *k = (const void *)wb;                \
				kq_scales_q3(k->scales, sc);                           \
				d = fp16_to_f32_inline(k->d);                          \
			} else {                                                       \
				const block_q2_K *k = (const void *)wb;                \
				for (int s = 0; s < 16; s++) {                         \
					sc[s] = (int8_t)(k->scales[s] & 15);           \
					summ += (k->scales[s] >> 4) *                  \
						(int16_t)ld_u16(x + 4 + QK_K + 2 * s); \
				}                                                      \
				d = fp16_to_f32_inline(k->d);                          \
				dmin = fp16_to_f32_inline(k->dmin);                    \
			}                                                              \
			uint8x16_t hm0 = vdupq_n_u8(0), hm1 = vdupq_n_u8(0);           \
			if (Q3) {                                                      \
				hm0 = vld1q_u8(wb);                                    \
				hm1 = vld1q_u8(wb + 16);                               \
			}                                                              \
			int32x4_t acc32 = vdupq_n_s32(0);                              \
			for (int h = 0; h < 2; h++) {                                  \
				uint8x16_t v0 = vld1q_u8(qs + 32 * h), v1 = vld1q_u8(qs + 32 * h + 16); \
				for (int j = 0; j < 4; j++) {                          \
					const int8x16_t sh = vdupq_n_s8((int8_t)(-2 * j)); \
					uint8x16_t a0 = vandq_u8(vshlq_u8(v0, sh), m3);  \
					uint8x16_t a1 = vandq_u8(vshlq_u8(v1, sh), m3);  \
					int8x16_t q0 = vreinterpretq_s8_u8(a0);          \
					int8x16_t q1 = vreinterpretq_s8_u8(a1);          \
					if (Q3) {                                      \
						const uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << (4 * h + j))); \
						/* low + 4 high - 4: 4 high - 4 is 0 or -4 */ \
						q0 = vsubq_s8(q0, vreinterpretq_s8_u8(vbicq_u8(four, vtstq_u8(hm0, bit)))); \
						q1 = vsubq_s8(q1, vreinterpretq_s8_u8(vbicq_u8(four, vtstq_u8(hm1, bit)))); \
					}                                              \
					const int8_t *xc = xq + 128 * h + 32 * j;      \
					const int s = 8 * h + 2 * j;                   \
					acc32 = vmlaq_n_s32(acc32, BSUM16(q0, vld1q_s8(xc)), sc[s]); \
					acc32 = vmlaq_n_s32(acc32, BSUM16(q1, vld1q_s8(xc + 16)), sc[s + 1]); \
				}                                                      \
			}                                                              \
			acc = kq_k_step(acc, ld_f32(x), d, dmin, vaddvq_s32(acc32), summ, !(Q3)); \
		}                                                                      \
		return acc;                                                            \
	}

/* Q6_K: q = (ql nibble | 2 bits of qh << 4) - 32 in -32 .. 31 (the layout
 * of kquants.c unpack_q6_K), a scale per 16; then kq_k_step (no min). */
#define DEFINE_Q6_K(NAME, ATTR, BSUM16)                                                  \
	ATTR static float NAME(const void *w, const void *xa, int64_t n)               \
	{                                                                              \
		const uint8x16_t m4 = vdupq_n_u8(0x0F), m3 = vdupq_n_u8(0x03);         \
		const int8x16_t m32 = vdupq_n_s8(32);                                  \
		float acc = 0.0f;                                                      \
		for (int64_t b = 0; b < n / QK_K; b++) {                               \
			const block_q6_K *k = (const void *)((const uint8_t *)w +      \
							     (size_t)b * sizeof(block_q6_K)); \
			const uint8_t *x = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K); \
			const int8_t *xq = (const int8_t *)(x + 4);                    \
			int32x4_t acc32 = vdupq_n_s32(0);                              \
			for (int h = 0; h < 2; h++) {                                  \
				const uint8_t *ql = k->ql + 64 * h, *qhp = k->qh + 32 * h; \
				uint8x16_t l[4] = { vld1q_u8(ql), vld1q_u8(ql + 16),   \
						    vld1q_u8(ql + 32), vld1q_u8(ql + 48) }; \
				uint8x16_t qh[2] = { vld1q_u8(qhp), vld1q_u8(qhp + 16) }; \
				for (int kk = 0; kk < 4; kk++) {                       \
					for (int j = 0; j < 2; j++) {                  \
						uint8x16_t lo = l[2 * (kk & 1) + j];   \
						lo = kk < 2 ? vandq_u8(lo, m4) : vshrq_n_u8(lo, 4); \
						uint8x16_t hi = vandq_u8(vshlq_u8(qh[j], \
							vdupq_n_s8((int8_t)(-2 * kk))), m3); \
						int8x16_t q = vsubq_s8(vreinterpretq_s8_u8( \
							vorrq_u8(lo, vshlq_n_u8(hi, 4))), m32); \
						int32x4_t p = BSUM16(q, vld1q_s8(xq + 128 * h + 32 * kk + 16 * j)); \
						acc32 = vmlaq_n_s32(acc32, p,          \
							k->scales[8 * h + 2 * kk + j]); \
					}                                              \
				}                                                      \
			}                                                              \
			acc = kq_k_step(acc, ld_f32(x), fp16_to_f32_inline(k->d), 0.0f, \
					vaddvq_s32(acc32), 0, 0);                      \
		}                                                                      \
		return acc;                                                            \
	}

DEFINE_K32(dot_q4_K_neon, NOATTR, bsum16_neon, 0)
DEFINE_K32(dot_q4_K_dotprod, DOTPROD, bsum16_dotprod, 0)
DEFINE_K32(dot_q5_K_neon, NOATTR, bsum16_neon, 1)
DEFINE_K32(dot_q5_K_dotprod, DOTPROD, bsum16_dotprod, 1)
DEFINE_K2_3(dot_q2_K_neon, NOATTR, bsum16_neon, 0)
DEFINE_K2_3(dot_q2_K_dotprod, DOTPROD, bsum16_dotprod, 0)
DEFINE_K2_3(dot_q3_K_neon, NOATTR, bsum16_neon, 1)
DEFINE_K2_3(dot_q3_K_dotprod, DOTPROD, bsum16_dotprod, 1)
DEFINE_Q6_K(dot_q6_K_neon, NOATTR, bsum16_neon)
DEFINE_Q6_K(dot_q6_K_dotprod, DOTPROD, bsum16_dotprod)

/* The 32 bits of h (Q5_0 / Q5_1's fifth bits, element j at bit j) as 0x10
 * in bytes 0-15 (e0) and 16-31 (e1) where set. */
NEON_INLINE void q5_high(uint32_t h, uint8x16_t *e0, uint8x16_t *e1)
{
	const uint8x16_t bits = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
	const uint8x16_t b4 = vdupq_n_u8(0x10);
	uint8x16_t lo = vcombine_u8(vdup_n_u8((uint8_t)h), vdup_n_u8((uint8_t)(h >> 8)));
	uint8x16_t hi = vcombine_u8(vdup_n_u8((uint8_t)(h >> 16)), vdup_n_u8((uint8_t)(h >> 24)));
	*e0 = vandq_u8(vtstq_u8(lo, bits), b4);
	*e1 = vandq_u8(vtstq_u8(hi, bits), b4);
}

/* Q5_0 (against Q8_0), Q4_1 and Q5_1 (against Q8_1): the block's exact
 * int32 sum of q x (q = u - 16 for Q5_0, u for the others), then
 * dot_legacy's float steps (kquants.c): acc + (float)sumi * (dw * dx) and
 * for Q4_1 / Q5_1 summ + m * s_x, each product rounded; acc + summ. */
enum { LEG_Q5_0, LEG_Q4_1, LEG_Q5_1, LEG_IQ4_NL };
#define DEFINE_LEGACY(NAME, ATTR, BSUM16, KIND)                                          \
	ATTR static float NAME(const void *w, const void *xa, int64_t n)               \
	{                                                                              \
		const bool q8_0_act = KIND == LEG_Q5_0 || KIND == LEG_IQ4_NL;         \
		const size_t bb = KIND == LEG_Q5_0 ? sizeof(block_q5_0)               \
				  : KIND == LEG_Q4_1 ? sizeof(block_q4_1)               \
				  : KIND == LEG_Q5_1 ? sizeof(block_q5_1) : sizeof(block_iq4_nl); \
		const size_t xb = q8_0_act ? sizeof(block_q8_0) : sizeof(block_q8_1);  \
		const size_t qoff = KIND == LEG_Q5_0 ? 6 : KIND == LEG_Q4_1 ? 4       \
				    : KIND == LEG_Q5_1 ? 8 : 2;                         \
		const uint8x16_t m4 = vdupq_n_u8(0x0F);                                \
		float acc = 0.0f, summ = 0.0f;                                         \
		for (int64_t b = 0; b < n / QK; b++) {                                 \
			const uint8_t *wb = (const uint8_t *)w + (size_t)b * bb;       \
			const uint8_t *x = (const uint8_t *)xa + (size_t)b * xb;       \
			const int8_t *xq = (const int8_t *)x + (q8_0_act ? 2 : 4);     \
			uint8x16_t q = vld1q_u8(wb + qoff);                            \
			uint8x16_t u0 = vandq_u8(q, m4), u1 = vshrq_n_u8(q, 4);        \
			if (KIND == LEG_Q5_0 || KIND == LEG_Q5_1) {                    \
				uint8x16_t e0, e1;                                     \
				q5_high(ld_u32(wb + (KIND == LEG_Q5_0 ? 2 : 4)), &e0, &e1); \
				u0 = vorrq_u8(u0, e0);                                 \
				u1 = vorrq_u8(u1, e1);                                 \
			}                                                              \
			int8x16_t q0 = vreinterpretq_s8_u8(u0), q1 = vreinterpretq_s8_u8(u1); \
			if (KIND == LEG_IQ4_NL) {                                      \
				const int8x16_t g = vld1q_s8(kq_iq4_grid);             \
				q0 = vqtbl1q_s8(g, u0);                                \
				q1 = vqtbl1q_s8(g, u1);                                \
			}                                                              \
			if (KIND == LEG_Q5_0) {                                        \
				q0 = vsubq_s8(q0, vdupq_n_s8(16));                     \
				q1 = vsubq_s8(q1, vdupq_n_s8(16));                     \
			}                                                              \
			int32_t sumi = vaddvq_s32(vaddq_s32(BSUM16(q0, vld1q_s8(xq)),  \
							    BSUM16(q1, vld1q_s8(xq + 16)))); \
			float dw = fp16_to_f32_inline(ld_u16(wb));                     \
			float dd = dw * fp16_to_f32_inline(ld_u16(x));                 \
			float p = (float)sumi * dd;                                    \
			FP_ROUNDED(p);                                                 \
			acc = acc + p;                                                 \
			if (!q8_0_act) {                                               \
				float pm = fp16_to_f32_inline(ld_u16(wb + 2)) *        \
					   fp16_to_f32_inline(ld_u16(x + 2));          \
				FP_ROUNDED(pm);                                        \
				summ = summ + pm;                                      \
			}                                                              \
		}                                                                      \
		return acc + summ;                                                     \
	}
DEFINE_LEGACY(dot_q5_0_neon, NOATTR, bsum16_neon, LEG_Q5_0)
DEFINE_LEGACY(dot_q5_0_dotprod, DOTPROD, bsum16_dotprod, LEG_Q5_0)
DEFINE_LEGACY(dot_q4_1_neon, NOATTR, bsum16_neon, LEG_Q4_1)
DEFINE_LEGACY(dot_q4_1_dotprod, DOTPROD, bsum16_dotprod, LEG_Q4_1)
DEFINE_LEGACY(dot_q5_1_neon, NOATTR, bsum16_neon, LEG_Q5_1)
DEFINE_LEGACY(dot_q5_1_dotprod, DOTPROD, bsum16_dotprod, LEG_Q5_1)
DEFINE_LEGACY(dot_iq4_nl_neon, NOATTR, bsum16_neon, LEG_IQ4_NL)
DEFINE_LEGACY(dot_iq4_nl_dotprod, DOTPROD, bsum16_dotprod, LEG_IQ4_NL)

/* IQ4_XS: 8 sub-blocks of 32 as IQ4_NL blocks (TBL of the grid by the
 * indices) with 6-bit scales - 32; the exact integer sum of scale x block
 * sum, then kq_k_step (no min). */
#define DEFINE_IQ4_XS(NAME, ATTR, BSUM16)                                                \
	ATTR static float NAME(const void *w, const void *xa, int64_t n)               \
	{                                                                              \
		const int8x16_t g = vld1q_s8(kq_iq4_grid);                             \
		const uint8x16_t m4 = vdupq_n_u8(0x0F);                                \
		float acc = 0.0f;                                                      \
		for (int64_t b = 0; b < n / QK_K; b++) {                               \
			const block_iq4_xs *k = (const void *)((const uint8_t *)w +    \
							       (size_t)b * sizeof(block_iq4_xs)); \
			const uint8_t *x = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K); \
			const int8_t *xq = (const int8_t *)(x + 4);                    \
			const uint16_t h = ld_u16(&k->scales_h);                       \
			int32x4_t acc32 = vdupq_n_s32(0);                              \
			for (int ib = 0; ib < 8; ib++) {                               \
				uint8x16_t q = vld1q_u8(k->qs + 16 * ib);              \
				int8x16_t q0 = vqtbl1q_s8(g, vandq_u8(q, m4));         \
				int8x16_t q1 = vqtbl1q_s8(g, vshrq_n_u8(q, 4));        \
				int ls = ((k->scales_l[ib / 2] >> (4 * (ib % 2))) & 15) | \
					 ((h >> (2 * ib)) & 3) << 4;                   \
				int32x4_t p = vaddq_s32(BSUM16(q0, vld1q_s8(xq + 32 * ib)), \
							BSUM16(q1, vld1q_s8(xq + 32 * ib + 16))); \
				acc32 = vmlaq_n_s32(acc32, p, ls - 32);                \
			}                                                              \
			acc = kq_k_step(acc, ld_f32(x), fp16_to_f32_inline(ld_u16(&k->d)), 0.0f, \
					vaddvq_s32(acc32), 0, 0);                      \
		}                                                                      \
		return acc;                                                            \
	}
DEFINE_IQ4_XS(dot_iq4_xs_neon, NOATTR, bsum16_neon)
DEFINE_IQ4_XS(dot_iq4_xs_dotprod, DOTPROD, bsum16_dotprod)

/* K-quant rows one at a time (the super-block's decode dominates). */
KERNEL_MATVEC_BY_DOT(matvec_q4_K_neon, static, dot_q4_K_neon)
KERNEL_MATVEC_BY_DOT(matvec_q4_K_dotprod, DOTPROD static, dot_q4_K_dotprod)
KERNEL_MATVEC_BY_DOT(matvec_q6_K_neon, static, dot_q6_K_neon)
KERNEL_MATVEC_BY_DOT(matvec_q6_K_dotprod, DOTPROD static, dot_q6_K_dotprod)
KERNEL_MATVEC_BY_DOT(matvec_q2_K_neon, static, dot_q2_K_neon)
KERNEL_MATVEC_BY_DOT(matvec_q2_K_dotprod, DOTPROD static, dot_q2_K_dotprod)
KERNEL_MATVEC_BY_DOT(matvec_q3_K_neon, static, dot_q3_K_neon)
KERNEL_MATVEC_BY_DOT(matvec_q3_K_dotprod, DOTPROD static, dot_q3_K_dotprod)
KERNEL_MATVEC_BY_DOT(matvec_q5_K_neon, static, dot_q5_K_neon)
KERNEL_MATVEC_BY_DOT(matvec_q5_K_dotprod, DOTPROD static, dot_q5_K_dotprod)
KERNEL_MATVEC_BY_DOT(matvec_q5_0_neon, static, dot_q5_0_neon)
KERNEL_MATVEC_BY_DOT(matvec_q5_0_dotprod, DOTPROD static, dot_q5_0_dotprod)
KERNEL_MATVEC_BY_DOT(matvec_q4_1_neon, static, dot_q4_1_neon)
KERNEL_MATVEC_BY_DOT(matvec_q4_1_dotprod, DOTPROD static, dot_q4_1_dotprod)
KERNEL_MATVEC_BY_DOT(matvec_q5_1_neon, static, dot_q5_1_neon)
KERNEL_MATVEC_BY_DOT(matvec_q5_1_dotprod, DOTPROD static, dot_q5_1_dotprod)
KERNEL_MATVEC_BY_DOT(matvec_iq4_nl_neon, static, dot_iq4_nl_neon)
KERNEL_MATVEC_BY_DOT(matvec_iq4_nl_dotprod, DOTPROD static, dot_iq4_nl_dotprod)
KERNEL_MATVEC_BY_DOT(matvec_iq4_xs_neon, static, dot_iq4_xs_neon)
KERNEL_MATVEC_BY_DOT(matvec_iq4_xs_dotprod, DOTPROD static, dot_iq4_xs_dotprod)

/* ------------------------------------------------ packed Q4_K / Q6_K */

/* Q4_K and Q6_K read from their packed groups of 16 rows (kquants.h
 * KQ_P16_*, the x86 levels' layout): each 64-byte vector of a group is
 * four 16-byte registers, quarter r holding rows 4r .. 4r + 3, a dword
 * lane 4 bytes of one row. A 4-byte group of the activations is one
 * broadcast against 4 rows: SDOT by element (dotprod), or SMULL / SMLAL
 * into int16 against a DUP of the group (neon). Per quarter and
 * super-block the rows' exact int32 sums (sumi, Q4_K's summ) sit in the
 * 4 lanes, and kq_k_step's float step runs once in 4 lanes, each lane the
 * scalar step's operations in its order: every output is
 * kq_dot_generic's bits. The int16 sums of the neon form are exact:
 * Q4_K adds 8 products per lane (|q x| <= 15 * 128, 8 of them 15360),
 * Q6_K 4 (u = q + 32 < 64: 4 * 63 * 128 = 32256). The int32 sums fit as
 * in the row form; wrapping adds are associative, so order is free.
 * Counts per group and super-block: doc/arm64/README.md. */

/* A sub-block's activations as the sub-block sums take them: x[0], x[1]
 * 16 bytes each (Q4_K: 32 elements; Q6_K: x[0] its 16, x[1] unset), and
 * for the neon form g[k], group k of 4 broadcast to 4 lanes (SMULL
 * operands; Q6_K: k < 4) */
typedef struct { int8x16_t x[2], g[8]; } p16_act_t;

NEON_INLINE void p16_prep_dotprod(p16_act_t *a, const int q6) { (void)a, (void)q6; }

NEON_INLINE void p16_prep_neon(p16_act_t *x, const int q6)
{
	const int32x4_t a = vreinterpretq_s32_s8(x->x[0]);
	int8x16_t *xg = x->g;
	xg[0] = vreinterpretq_s8_s32(vdupq_laneq_s32(a, 0));
	xg[1] = vreinterpretq_s8_s32(vdupq_laneq_s32(a, 1));
	xg[2] = vreinterpretq_s8_s32(vdupq_laneq_s32(a, 2));
	xg[3] = vreinterpretq_s8_s32(vdupq_laneq_s32(a, 3));
	if (q6)
		return;
	const int32x4_t b = vreinterpretq_s32_s8(x->x[1]);
	xg[4] = vreinterpretq_s8_s32(vdupq_laneq_s32(b, 0));
	xg[5] = vreinterpretq_s8_s32(vdupq_laneq_s32(b, 1));
	xg[6] = vreinterpretq_s8_s32(vdupq_laneq_s32(b, 2));
	xg[7] = vreinterpretq_s8_s32(vdupq_laneq_s32(b, 3));
}

/* 4 rows' (w: lane i row i's 4 bytes) products with a broadcast group g,
 * added into int16 (lo: rows 0-1, hi: rows 2-3) */
NEON_INLINE void p16_mlal(int16x8_t *lo, int16x8_t *hi, int8x16_t w, int8x16_t g)
{
	*lo = vmlal_s8(*lo, vget_low_s8(w), vget_low_s8(g));
	*hi = vmlal_high_s8(*hi, w, g);
}

/* the int16 lanes' row sums (4 lanes a row) as int32 lanes 0..3 */
NEON_INLINE int32x4_t p16_rows(int16x8_t lo, int16x8_t hi)
{
	return vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi));
}

/* Q4_K: the nibble vectors of sub-block s, quarter r at q (vector u at
 * q + 64 u: its low nibbles group 2u, its high group 2u + 1) against the
 * sub-block's 32 activations: the 4 rows' exact sums */
NEON_INLINE int32x4_t p16_q4_sub_neon(const uint8_t *q, const p16_act_t *x)
{
	const int8x16_t *xg = x->g;
	const uint8x16_t m4 = vdupq_n_u8(0x0F);
	int16x8_t lo = vdupq_n_s16(0), hi = lo;
#pragma GCC unroll 4
	for (int u = 0; u < 4; u++) {
		uint8x16_t z = vld1q_u8(q + 64 * u);
		p16_mlal(&lo, &hi, vreinterpretq_s8_u8(vandq_u8(z, m4)), xg[2 * u]);
		p16_mlal(&lo, &hi, vreinterpretq_s8_u8(vshrq_n_u8(z, 4)), xg[2 * u + 1]);
	}
	return p16_rows(lo, hi);
}

DOTPROD_INLINE int32x4_t p16_q4_sub_dotprod(const uint8_t *q, const p16_act_t *x)
{
	const int8x16_t x0 = x->x[0], x1 = x->x[1];
	const uint8x16_t m4 = vdupq_n_u8(0x0F);
	const uint8x16_t z0 = vld1q_u8(q), z1 = vld1q_u8(q + 64);
	const uint8x16_t z2 = vld1q_u8(q + 128), z3 = vld1q_u8(q + 192);
	int32x4_t a = vdupq_n_s32(0), b = a;
	a = vdotq_laneq_s32(a, vreinterpretq_s8_u8(vandq_u8(z0, m4)), x0, 0);
	b = vdotq_laneq_s32(b, vreinterpretq_s8_u8(vshrq_n_u8(z0, 4)), x0, 1);
	a = vdotq_laneq_s32(a, vreinterpretq_s8_u8(vandq_u8(z1, m4)), x0, 2);
	b = vdotq_laneq_s32(b, vreinterpretq_s8_u8(vshrq_n_u8(z1, 4)), x0, 3);
	a = vdotq_laneq_s32(a, vreinterpretq_s8_u8(vandq_u8(z2, m4)), x1, 0);
	b = vdotq_laneq_s32(b, vreinterpretq_s8_u8(vshrq_n_u8(z2, 4)), x1, 1);
	a = vdotq_laneq_s32(a, vreinterpretq_s8_u8(vandq_u8(z3, m4)), x1, 2);
	b = vdotq_laneq_s32(b, vreinterpretq_s8_u8(vshrq_n_u8(z3, 4)), x1, 3);
	return vaddq_s32(a, b);
}

/* 16 u8 (16 rows' scales or mins) widened to the 4 quarters' int32 */
NEON_INLINE void p16_widen_u8(uint8x16_t v, int32x4_t *o)
{
	const uint16x8_t l = vmovl_u8(vget_low_u8(v)), h = vmovl_high_u8(v);
	o[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(l)));
	o[1] = vreinterpretq_s32_u32(vmovl_high_u16(l));
	o[2] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(h)));
	o[3] = vreinterpretq_s32_u32(vmovl_high_u16(h));
}

NEON_INLINE void p16_widen_s8(int8x16_t v, int32x4_t *o)
{
	const int16x8_t l = vmovl_s8(vget_low_s8(v)), h = vmovl_high_s8(v);
	o[0] = vmovl_s16(vget_low_s16(l));
	o[1] = vmovl_high_s16(l);
	o[2] = vmovl_s16(vget_low_s16(h));
	o[3] = vmovl_high_s16(h);
}

/* Q4_K's summ of the 16 rows (quarter r in sm[r]): the mins of sub-blocks
 * 2p, 2p + 1 (LD2 splits a row's adjacent pair) against the activations'
 * sub-block sums bsum(s) = bsums[2s] + bsums[2s + 1] (|bsum| <= 4096) */
NEON_INLINE void p16_q4_mins(const uint8_t *h, const uint8_t *xb, int32x4_t *sm)
{
#pragma GCC unroll 4
	for (int r = 0; r < 4; r++)
		sm[r] = vdupq_n_s32(0);
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++) {
		const uint8x16x2_t m = vld2q_u8(h + KQ_P16_MN + 32 * p);
#pragma GCC unroll 2
		for (int k = 0; k < 2; k++) {
			const uint8_t *bs = xb + 4 + QK_K + 4 * (2 * p + k);
			const int16_t bsum = (int16_t)((int16_t)ld_u16(bs) + (int16_t)ld_u16(bs + 2));
			const int16x8_t l = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(m.val[k])));
			const int16x8_t hh = vreinterpretq_s16_u16(vmovl_high_u8(m.val[k]));
			sm[0] = vmlal_n_s16(sm[0], vget_low_s16(l), bsum);
			sm[1] = vmlal_high_n_s16(sm[1], l, bsum);
			sm[2] = vmlal_n_s16(sm[2], vget_low_s16(hh), bsum);
			sm[3] = vmlal_high_n_s16(sm[3], hh, bsum);
		}
	}
}

/* 4 of a group's f16 (quarter r of the 16 at p) as floats (FCVTL: exact) */
NEON_INLINE float32x4_t p16_f16x4(const uint8_t *p, int r)
{
	return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p + 8 * r)));
}

/* kq_k_step in 4 lanes: acc + ((dx d) sumi - (dx dmin) summ), each
 * product rounded (has_min 0: acc + (dx d) sumi) */
NEON_INLINE float32x4_t p16_k_step(float32x4_t acc, float dx, float32x4_t d, float32x4_t dmin,
				   int32x4_t si, int32x4_t sm, const int has_min)
{
	const float32x4_t vx = vdupq_n_f32(dx);
	float32x4_t a = vmulq_f32(vx, d);
	FP_ROUNDED(a);
	float32x4_t p = vmulq_f32(a, vcvtq_f32_s32(si));
	FP_ROUNDED(p);
	if (has_min) {
		float32x4_t am = vmulq_f32(vx, dmin);
		FP_ROUNDED(am);
		float32x4_t pm = vmulq_f32(am, vcvtq_f32_s32(sm));
		FP_ROUNDED(pm);
		p = vsubq_f32(p, pm);
		FP_ROUNDED(p);
	}
	return vaddq_f32(acc, p);
}

/* Q4_K groups @ one token: per super-block, sub-block by sub-block, the
 * 4 quarters against the same activations (PREP, SUB: the level's
 * p16_prep_* and p16_q4_sub_*) */
#define DEFINE_P16_Q4_K(NAME, ATTR, PREP, SUB)                                           \
	ATTR void NAME(const void *P, const void *xa, float *y, int64_t n, int64_t ng)  \
	{                                                                              \
		const int64_t nsb = n / QK_K;                                          \
		const uint8_t *h = P;                                                  \
		for (int64_t g = 0; g < ng; g++) {                                     \
			float32x4_t acc[4];                                            \
			_Pragma("GCC unroll 4")                                        \
			for (int r = 0; r < 4; r++)                                    \
				acc[r] = vdupq_n_f32(0.0f);                            \
			for (int64_t b = 0; b < nsb; b++, h += KQ_P16_Q4K_BYTES) {     \
				const uint8_t *xb = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K); \
				int32x4_t si[4], sm[4];                                \
				_Pragma("GCC unroll 4")                                \
				for (int r = 0; r < 4; r++)                            \
					si[r] = vdupq_n_s32(0);                        \
				for (int s = 0; s < 8; s++) {                          \
					p16_act_t x;                                   \
					x.x[0] = vld1q_s8((const int8_t *)xb + 4 + 32 * s); \
					x.x[1] = vld1q_s8((const int8_t *)xb + 20 + 32 * s); \
					PREP(&x, 0);                                   \
					int32x4_t sc[4];                               \
					p16_widen_u8(vld1q_u8(h + KQ_P16_SC + 16 * s), sc); \
					const uint8_t *q = h + KQ_P16_QS + 256 * s;    \
					_Pragma("GCC unroll 4")                        \
					for (int r = 0; r < 4; r++)                    \
						si[r] = vmlaq_s32(si[r], SUB(q + 16 * r, &x), sc[r]); \
				}                                                      \
				p16_q4_mins(h, xb, sm);                                \
				const float dx = ld_f32(xb);                           \
				_Pragma("GCC unroll 4")                                \
				for (int r = 0; r < 4; r++)                            \
					acc[r] = p16_k_step(acc[r], dx, p16_f16x4(h + KQ_P16_D, r), \
							    p16_f16x4(h + KQ_P16_DMIN, r), si[r], sm[r], 1); \
			}                                                              \
			_Pragma("GCC unroll 4")                                        \
			for (int r = 0; r < 4; r++)                                    \
				vst1q_f32(y + 16 * g + 4 * r, acc[r]);                 \
		}                                                                      \
	}
DEFINE_P16_Q4_K(matvec_p16_q4_K_neon, static, p16_prep_neon, p16_q4_sub_neon)
DEFINE_P16_Q4_K(matvec_p16_q4_K_dotprod, DOTPROD static, p16_prep_dotprod, p16_q4_sub_dotprod)

/* Q6_K: the 4 weight vectors (group g = 0..3, u = q + 32) of sub-block s,
 * quarter r (ql: its first QL vector, qh: its QH vector): the low nibbles
 * of the two QL vectors, the high 2 bits from QH (bit 2g) */
NEON_INLINE void p16_q6_weights(const uint8_t *ql, const uint8_t *qh, int8x16_t *w)
{
	const uint8x16_t m4 = vdupq_n_u8(0x0F), m30 = vdupq_n_u8(0x30);
	const uint8x16_t z0 = vld1q_u8(ql), z1 = vld1q_u8(ql + 64), hb = vld1q_u8(qh);
	w[0] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(z0, m4), vandq_u8(vshlq_n_u8(hb, 4), m30)));
	w[1] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(z0, 4), vandq_u8(vshlq_n_u8(hb, 2), m30)));
	w[2] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(z1, m4), vandq_u8(hb, m30)));
	w[3] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(z1, 4), vandq_u8(vshrq_n_u8(hb, 2), m30)));
}

/* the 4 rows' exact sums of u x over sub-block s (x->x[0]: its 16
 * activations) */
NEON_INLINE int32x4_t p16_q6_sub_neon(const uint8_t *ql, const uint8_t *qh, const p16_act_t *x)
{
	int8x16_t w[4];
	p16_q6_weights(ql, qh, w);
	int16x8_t lo = vdupq_n_s16(0), hi = lo;
#pragma GCC unroll 4
	for (int g = 0; g < 4; g++)
		p16_mlal(&lo, &hi, w[g], x->g[g]);
	return p16_rows(lo, hi);
}

DOTPROD_INLINE int32x4_t p16_q6_sub_dotprod(const uint8_t *ql, const uint8_t *qh,
					    const p16_act_t *x)
{
	int8x16_t w[4];
	p16_q6_weights(ql, qh, w);
	int32x4_t a = vdupq_n_s32(0), b = a;
	a = vdotq_laneq_s32(a, w[0], x->x[0], 0);
	b = vdotq_laneq_s32(b, w[1], x->x[0], 1);
	a = vdotq_laneq_s32(a, w[2], x->x[0], 2);
	b = vdotq_laneq_s32(b, w[3], x->x[0], 3);
	return vaddq_s32(a, b);
}

/* Q6_K groups @ one token: per sub-block s the rows' sums of u x less 32
 * bsums[s] (the - 32 of q = u - 32, exact), times the int8 scales; then
 * kq_k_step without the min */
#define DEFINE_P16_Q6_K(NAME, ATTR, PREP, SUB)                                           \
	ATTR void NAME(const void *P, const void *xa, float *y, int64_t n, int64_t ng)  \
	{                                                                              \
		const int64_t nsb = n / QK_K;                                          \
		const uint8_t *h = P;                                                  \
		for (int64_t g = 0; g < ng; g++) {                                     \
			float32x4_t acc[4];                                            \
			_Pragma("GCC unroll 4")                                        \
			for (int r = 0; r < 4; r++)                                    \
				acc[r] = vdupq_n_f32(0.0f);                            \
			for (int64_t b = 0; b < nsb; b++, h += KQ_P16_Q6K_BYTES) {     \
				const uint8_t *xb = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K); \
				int32x4_t si[4];                                       \
				_Pragma("GCC unroll 4")                                \
				for (int r = 0; r < 4; r++)                            \
					si[r] = vdupq_n_s32(0);                        \
				for (int s = 0; s < 16; s++) {                         \
					p16_act_t x;                                   \
					x.x[0] = vld1q_s8((const int8_t *)xb + 4 + 16 * s); \
					PREP(&x, 1);                                   \
					const int32x4_t b32 = vdupq_n_s32(             \
						32 * (int16_t)ld_u16(xb + 4 + QK_K + 2 * s)); \
					int32x4_t sc[4];                               \
					p16_widen_s8(vld1q_s8((const int8_t *)h + KQ_P16_Q6K_SC + 16 * s), sc); \
					const uint8_t *ql = h + KQ_P16_Q6K_QL + 128 * s; \
					const uint8_t *qh = h + KQ_P16_Q6K_QH + 64 * s; \
					_Pragma("GCC unroll 4")                        \
					for (int r = 0; r < 4; r++)                    \
						si[r] = vmlaq_s32(si[r],               \
							vsubq_s32(SUB(ql + 16 * r, qh + 16 * r, &x), b32), sc[r]); \
				}                                                      \
				const float dx = ld_f32(xb);                           \
				_Pragma("GCC unroll 4")                                \
				for (int r = 0; r < 4; r++)                            \
					acc[r] = p16_k_step(acc[r], dx, p16_f16x4(h + KQ_P16_Q6K_D, r), \
							    vdupq_n_f32(0.0f), si[r], vdupq_n_s32(0), 0); \
			}                                                              \
			_Pragma("GCC unroll 4")                                        \
			for (int r = 0; r < 4; r++)                                    \
				vst1q_f32(y + 16 * g + 4 * r, acc[r]);                 \
		}                                                                      \
	}
DEFINE_P16_Q6_K(matvec_p16_q6_K_neon, static, p16_prep_neon, p16_q6_sub_neon)
DEFINE_P16_Q6_K(matvec_p16_q6_K_dotprod, DOTPROD static, p16_prep_dotprod, p16_q6_sub_dotprod)

/* ------------------------------------------------------------------ gemm */

/* Q8_0 / Q4_0 weights x a batch (gemm_impl.h): per group of 4 rows, every
 * token with the matvec's 4-row template, so every output is the matvec's
 * bits (the generic's); the group's blocks stay in L1 across the tokens.
 * Not register-blocked across tokens (doc/arm64/README.md). */
#define DEFINE_GEMM(NAME, ATTR, ROWS)                                                  \
	ATTR void NAME(GEMM_QUANT_ARGS)                                                \
	{                                                                              \
		(void)P, (void)np, (void)dx, (void)sx;                                 \
		int64_t r = r0;                                                        \
		for (; r + 4 <= r1; r += 4) {                                          \
			const uint8_t *wr[4] = { W + (size_t)r * rb, W + (size_t)(r + 1) * rb, \
						 W + (size_t)(r + 2) * rb,             \
						 W + (size_t)(r + 3) * rb };           \
			for (int64_t k = 0; k < ntok; k++) {                           \
				float o[4];                                            \
				ROWS(t, wr, X + (size_t)k * xs, nb * QK, o, 4);        \
				for (int i = 0; i < 4; i++)                            \
					Y[k * ys + r + i] = o[i];                      \
			}                                                              \
		}                                                                      \
		for (; r < r1; r++) {                                                  \
			const uint8_t *wr[1] = { W + (size_t)r * rb };                 \
			for (int64_t k = 0; k < ntok; k++)                             \
				ROWS(t, wr, X + (size_t)k * xs, nb * QK, Y + k * ys + r, 1); \
		}                                                                      \
	}
DEFINE_GEMM(gemm_quant_neon, static, ROWS_QN)
DEFINE_GEMM(gemm_quant_dotprod, DOTPROD static, ROWS_QD)

/* ------------------------------------------ forward-pass float math */

/* ss from rmsnorm_scale (kernels_impl.h); o = w * (ss * x) 4 lanes at once. */
static void rmsnorm_neon(float *o, const float *x, const float *w, int64_t n, float eps)
{
	const float ss = rmsnorm_scale(x, n, eps);
	int64_t j = 0;
	for (; j + 4 <= n; j += 4) {
		float32x4_t sx = vmulq_n_f32(vld1q_f32(x + j), ss);
		FP_ROUNDED(sx);
		vst1q_f32(o + j, vmulq_f32(vld1q_f32(w + j), sx));
	}
	for (; j < n; j++)
		o[j] = w[j] * (ss * x[j]);
}

/* The max over lanes (a NaN anywhere takes the generic path, whose
 * comparisons define the result), expf and the sum in the generic's order,
 * the division 4 lanes at once. */
static void softmax_neon(float *x, int64_t n)
{
	if (n <= 0)
		return;
	float32x4_t mx = vdupq_n_f32(x[0]);
	uint32x4_t ok = vdupq_n_u32(~0u);
	int64_t i = 0;
	for (; i + 4 <= n; i += 4) {
		float32x4_t v = vld1q_f32(x + i);
		ok = vandq_u32(ok, vceqq_f32(v, v));
		mx = vmaxq_f32(mx, v);
	}
	float max = vmaxvq_f32(mx);
	bool nan = vminvq_u32(ok) == 0;
	for (; i < n; i++) {
		nan |= x[i] != x[i];
		max = x[i] > max ? x[i] : max;
	}
	if (nan) {
		softmax_generic(x, n);
		return;
	}
	float sum = 0.0f;
	for (i = 0; i < n; i++) {
		x[i] = expf(x[i] - max);
		sum += x[i];
	}
	i = 0;
	for (; i + 4 <= n; i += 4)
		vst1q_f32(x + i, vdivq_f32(vld1q_f32(x + i), vdupq_n_f32(sum)));
	for (; i < n; i++)
		x[i] /= sum;
}

/* exp_eg (kernels_impl.h) 4 lanes at once, the same operations in the same
 * order (FRINTN rounds to nearest even as rintf): the same bits per lane. */
NEON_INLINE float32x4_t exp_eg_neon(float32x4_t x)
{
	float32x4_t n = vrndnq_f32(vmulq_n_f32(x, EXP_EG_LOG2E));
	float32x4_t a = vmulq_n_f32(n, EXP_EG_C1);
	FP_ROUNDED(a);
	float32x4_t r = vsubq_f32(x, a);
	a = vmulq_n_f32(n, EXP_EG_C2);
	FP_ROUNDED(a);
	r = vsubq_f32(r, a);
	float32x4_t z = vmulq_f32(r, r);
	float32x4_t p = vdupq_n_f32(exp_eg_poly[0]);
#pragma GCC unroll 5
	for (int i = 1; i < 6; i++) {
		p = vmulq_f32(p, r);
		FP_ROUNDED(p);
		p = vaddq_f32(p, vdupq_n_f32(exp_eg_poly[i]));
	}
	p = vmulq_f32(p, z);
	FP_ROUNDED(p);
	p = vaddq_f32(vaddq_f32(p, r), vdupq_n_f32(1.0f));
	int32x4_t k = vcvtq_s32_f32(n), h = vshrq_n_s32(k, 1);
	const int32x4_t bias = vdupq_n_s32(127);
	p = vmulq_f32(p, vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(h, bias), 23)));
	FP_ROUNDED(p);
	p = vmulq_f32(p, vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vsubq_s32(k, h), bias), 23)));
	/* the scalar's early returns, in its order: NaN, low, high */
	p = vbslq_f32(vcgtq_f32(x, vdupq_n_f32(EXP_EG_HI)), vdupq_n_f32(__builtin_inff()), p);
	p = vbslq_f32(vcleq_f32(x, vdupq_n_f32(EXP_EG_LO)), vdupq_n_f32(0.0f), p);
	return vbslq_f32(vceqq_f32(x, x), p, x);
}

/* swiglu_generic 4 lanes at once (same operations: the same bits). */
static void swiglu_neon(float *o, const float *a, const float *b, int64_t n)
{
	const float32x4_t one = vdupq_n_f32(1.0f);
	int64_t i = 0;
	for (; i + 4 <= n; i += 4) {
		float32x4_t v = vld1q_f32(a + i);
		float32x4_t e = exp_eg_neon(vnegq_f32(v));
		FP_ROUNDED(e);
		float32x4_t s = vdivq_f32(one, vaddq_f32(one, e));
		v = vmulq_f32(v, s);
		FP_ROUNDED(v);
		vst1q_f32(o + i, vmulq_f32(v, vld1q_f32(b + i)));
	}
	for (; i < n; i++) {
		float val = a[i];
		val *= (1.0f / (1.0f + exp_eg(-val)));
		val *= b[i];
		o[i] = val;
	}
}

/* One pair's rotation, as rope_apply_generic. */
static inline void rope_pair(float *v, int a, int b, float c, float s)
{
	float v0 = v[a], v1 = v[b];
	v[a] = v0 * c - v1 * s;
	v[b] = v0 * s + v1 * c;
}

/* neox = 0: 4 adjacent pairs per step, de-interleaved by LD2 (x[2i] and
 * x[2i+1], cos and sin); neox = 1: the halves a and a + rot/2 as two
 * vectors. Each product rounded, then the generic's sub / add. */
static void rope_apply_neon(float *x, int n_heads, int head_dim, int rot_dim, const float *cs,
			    int neox)
{
	const int half = rot_dim / 2;
	for (int h = 0; h < n_heads; h++) {
		float *v = x + (size_t)h * head_dim;
		int j = 0;
		for (; j + 4 <= half; j += 4) {
			float32x4x2_t t = vld2q_f32(cs + 2 * j);
			float32x4_t a, b;
			float32x4x2_t ab;
			if (!neox) {
				ab = vld2q_f32(v + 2 * j);
				a = ab.val[0];
				b = ab.val[1];
			} else {
				a = vld1q_f32(v + j);
				b = vld1q_f32(v + j + half);
			}
			float32x4_t ac = vmulq_f32(a, t.val[0]), bs = vmulq_f32(b, t.val[1]);
			float32x4_t as = vmulq_f32(a, t.val[1]), bc = vmulq_f32(b, t.val[0]);
			FP_ROUNDED(ac);
			FP_ROUNDED(bs);
			FP_ROUNDED(as);
			FP_ROUNDED(bc);
			a = vsubq_f32(ac, bs);
			b = vaddq_f32(as, bc);
			if (!neox) {
				ab.val[0] = a;
				ab.val[1] = b;
				vst2q_f32(v + 2 * j, ab);
			} else {
				vst1q_f32(v + j, a);
				vst1q_f32(v + j + half, b);
			}
		}
		for (; j < half; j++)
			rope_pair(v, neox ? j : 2 * j, neox ? j + half : 2 * j + 1, cs[2 * j],
				  cs[2 * j + 1]);
	}
}

/* Scores of one head, 4 positions per vector (lane l = position t + l),
 * each summed over i in order from +0 (the generic's dot per lane): the 4
 * keys are read 4 dimensions at a time and transposed in registers; then
 * the division by sqrtf(hd) per lane. Positions past the last multiple of
 * 4 and dimensions past the last multiple of 4 run the generic's scalar
 * loop (the same operations). */
static void att_scores_neon(const float *q, const float *k, int64_t stride, int n_pos, int hd,
			    float *scores)
{
	const float scale = sqrtf((float)hd);
	int t = 0;
	for (; t + 4 <= n_pos; t += 4) {
		const float *k0 = k + (size_t)t * (size_t)stride, *k1 = k0 + stride;
		const float *k2 = k1 + stride, *k3 = k2 + stride;
		float32x4_t acc = vdupq_n_f32(0.0f);
		int i = 0;
		for (; i + 4 <= hd; i += 4) {
			/* 4x4 transpose: c[j] lane l = key l's element i + j */
			float32x4_t r0 = vld1q_f32(k0 + i), r1 = vld1q_f32(k1 + i);
			float32x4_t r2 = vld1q_f32(k2 + i), r3 = vld1q_f32(k3 + i);
			float32x4_t t01l = vtrn1q_f32(r0, r1), t01h = vtrn2q_f32(r0, r1);
			float32x4_t t23l = vtrn1q_f32(r2, r3), t23h = vtrn2q_f32(r2, r3);
			float32x4_t c[4];
			c[0] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t01l),
								vreinterpretq_f64_f32(t23l)));
			c[1] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t01h),
								vreinterpretq_f64_f32(t23h)));
			c[2] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t01l),
								vreinterpretq_f64_f32(t23l)));
			c[3] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t01h),
								vreinterpretq_f64_f32(t23h)));
#pragma GCC unroll 4
			for (int j = 0; j < 4; j++) {
				float32x4_t p = vmulq_n_f32(c[j], q[i + j]);
				FP_ROUNDED(p);
				acc = vaddq_f32(acc, p);
			}
		}
		for (; i < hd; i++) {
			float32x4_t kv = { k0[i], k1[i], k2[i], k3[i] };
			float32x4_t p = vmulq_n_f32(kv, q[i]);
			FP_ROUNDED(p);
			acc = vaddq_f32(acc, p);
		}
		vst1q_f32(scores + t, vdivq_f32(acc, vdupq_n_f32(scale)));
	}
	for (; t < n_pos; t++) {
		const float *kt = k + (size_t)t * (size_t)stride;
		float dot = 0.0f;
		for (int i = 0; i < hd; i++)
			dot += q[i] * kt[i];
		scores[t] = dot / scale;
	}
}

/* out (hd) = sum_u s[u] v_u: 16 dimensions (four independent chains) per
 * pass over the values, each summed over u in order from +0, or, with
 * cont, on from out's values (the sum over earlier positions). */
static void att_wsum_neon(float *out, const float *s, const float *v, int64_t stride, int n_pos,
			  int hd, bool cont)
{
	int i = 0;
	for (; i + 16 <= hd; i += 16) {
		float32x4_t o0 = vdupq_n_f32(0.0f), o1 = o0, o2 = o0, o3 = o0;
		if (cont) {
			o0 = vld1q_f32(out + i);
			o1 = vld1q_f32(out + i + 4);
			o2 = vld1q_f32(out + i + 8);
			o3 = vld1q_f32(out + i + 12);
		}
		for (int u = 0; u < n_pos; u++) {
			const float *vu = v + (size_t)u * (size_t)stride + i;
			float32x4_t p0 = vmulq_n_f32(vld1q_f32(vu), s[u]);
			float32x4_t p1 = vmulq_n_f32(vld1q_f32(vu + 4), s[u]);
			float32x4_t p2 = vmulq_n_f32(vld1q_f32(vu + 8), s[u]);
			float32x4_t p3 = vmulq_n_f32(vld1q_f32(vu + 12), s[u]);
			FP_ROUNDED(p0);
			FP_ROUNDED(p1);
			FP_ROUNDED(p2);
			FP_ROUNDED(p3);
			o0 = vaddq_f32(o0, p0);
			o1 = vaddq_f32(o1, p1);
			o2 = vaddq_f32(o2, p2);
			o3 = vaddq_f32(o3, p3);
		}
		vst1q_f32(out + i, o0);
		vst1q_f32(out + i + 4, o1);
		vst1q_f32(out + i + 8, o2);
		vst1q_f32(out + i + 12, o3);
	}
	for (; i + 4 <= hd; i += 4) {
		float32x4_t o0 = cont ? vld1q_f32(out + i) : vdupq_n_f32(0.0f);
		for (int u = 0; u < n_pos; u++) {
			float32x4_t p0 = vmulq_n_f32(vld1q_f32(v + (size_t)u * (size_t)stride + i), s[u]);
			FP_ROUNDED(p0);
			o0 = vaddq_f32(o0, p0);
		}
		vst1q_f32(out + i, o0);
	}
	for (; i < hd; i++) {
		float o0 = cont ? out[i] : 0.0f;
		for (int u = 0; u < n_pos; u++)
			o0 += s[u] * v[(size_t)u * (size_t)stride + i];
		out[i] = o0;
	}
}

/* The f32 cache's decode attention (rb bytes between positions). */
static void attention_f32_neon(float *out, const float *q, const void *kv_k, const void *kv_v,
			       size_t rb, int n_pos, int hd, float *scores, int nh, int64_t ss)
{
	const float *k = kv_k, *v = kv_v;
	int64_t stride = (int64_t)(rb / sizeof(float));
	for (int h = 0; h < nh; h++) {
		float *s = scores + (size_t)h * (size_t)ss;
		att_scores_neon(q + (size_t)h * (size_t)hd, k, stride, n_pos, hd, s);
		softmax_neon(s, n_pos);
		att_wsum_neon(out + (size_t)h * (size_t)hd, s, v, stride, n_pos, hd, false);
	}
}

/* n rows of an f16 or q8_0 cache (rb bytes apart) as floats, hd each, into
 * y: the values kv_load_row gives (a half, or a Q8_0 element d * q, is
 * exact as a float, so FCVTL and one multiply give the same bits). */
static void kv_rows_neon(kv_type_t kt, const uint8_t *row, size_t rb, int n, int hd, float *y)
{
	for (int t = 0; t < n; t++, row += rb, y += hd) {
		if (kt == KV_F16) {
			fp16_to_f32_row_neon(row, y, hd);
			continue;
		}
		for (int b = 0; b < hd / QK; b++) {
			const uint8_t *blk = row + (size_t)b * sizeof(block_q8_0);
			const float32x4_t d = vdupq_n_f32(fp16_to_f32_inline(ld_u16(blk)));
			const int8x16_t q[2] = { vld1q_s8((const int8_t *)blk + 2),
						 vld1q_s8((const int8_t *)blk + 18) };
			float *yb = y + b * QK;
			for (int h = 0; h < 2; h++) {
				int16x8_t lo = vmovl_s8(vget_low_s8(q[h])), hi = vmovl_high_s8(q[h]);
				int32x4_t w[4] = { vmovl_s16(vget_low_s16(lo)), vmovl_high_s16(lo),
						   vmovl_s16(vget_low_s16(hi)), vmovl_high_s16(hi) };
				for (int k = 0; k < 4; k++)
					vst1q_f32(yb + 16 * h + 4 * k, vmulq_f32(vcvtq_f32_s32(w[k]), d));
			}
		}
	}
}

/* floats of converted rows on the stack of the f16 / q8_0 decode attention */
enum { ATT_ROWS_FLOATS = 4096 };

/* The f16 and q8_0 caches' decode attention: the KV head's rows converted
 * once a chunk (not once per query head), then the f32 cache's steps on
 * them: every head's scores, every head's softmax, every head's weighted
 * sum continued chunk by chunk (the same sum over u in order). */
static void attention_kv_neon(kv_type_t kt, float *out, const float *q, const void *kv_k,
			      const void *kv_v, size_t rb, int n_pos, int hd, float *scores,
			      int nh, int64_t ss)
{
	float buf[ATT_ROWS_FLOATS];
	const int rows = ATT_ROWS_FLOATS / hd / 4 * 4;
	if (n_pos < 1 || rows < 4) {
		attention_heads_kv_generic(kt, out, q, kv_k, kv_v, rb, n_pos, hd, scores, nh, ss);
		return;
	}
	const uint8_t *k = kv_k, *v = kv_v;
	for (int t0 = 0; t0 < n_pos; t0 += rows) {
		int n = n_pos - t0 < rows ? n_pos - t0 : rows;
		kv_rows_neon(kt, k + (size_t)t0 * rb, rb, n, hd, buf);
		for (int h = 0; h < nh; h++)
			att_scores_neon(q + (size_t)h * (size_t)hd, buf, hd, n, hd,
					scores + (size_t)h * (size_t)ss + t0);
	}
	for (int h = 0; h < nh; h++)
		softmax_neon(scores + (size_t)h * (size_t)ss, n_pos);
	for (int t0 = 0; t0 < n_pos; t0 += rows) {
		int n = n_pos - t0 < rows ? n_pos - t0 : rows;
		kv_rows_neon(kt, v + (size_t)t0 * rb, rb, n, hd, buf);
		for (int h = 0; h < nh; h++)
			att_wsum_neon(out + (size_t)h * (size_t)hd,
				      scores + (size_t)h * (size_t)ss + t0, buf, hd, n, hd, t0 > 0);
	}
}

static void attention_f16_neon(float *out, const float *q, const void *kv_k, const void *kv_v,
			       size_t rb, int n_pos, int hd, float *scores, int nh, int64_t ss)
{
	attention_kv_neon(KV_F16, out, q, kv_k, kv_v, rb, n_pos, hd, scores, nh, ss);
}

static void attention_q8_0_neon(float *out, const float *q, const void *kv_k, const void *kv_v,
				size_t rb, int n_pos, int hd, float *scores, int nh, int64_t ss)
{
	attention_kv_neon(KV_Q8_0, out, q, kv_k, kv_v, rb, n_pos, hd, scores, nh, ss);
}

/* ---------------------------------------------------------------- tables */

const kernel_ops_t kops_neon = {
	.name = "neon",
	.type = {
		[DTYPE_F32] = {
			.vec_dot = dot_f32_neon, .matvec = matvec_f32_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_F16] = {
			.vec_dot = dot_f16_neon, .matvec = matvec_f16_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_BF16] = {
			.vec_dot = dot_bf16_neon, .matvec = matvec_bf16_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q8_0] = {
			.vec_dot = dot_q8_0_neon, .matvec = matvec_q8_0_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q4_0] = {
			.vec_dot = dot_q4_0_neon, .matvec = matvec_q4_0_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q4_1] = {
			.vec_dot = dot_q4_1_neon, .matvec = matvec_q4_1_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q5_0] = {
			.vec_dot = dot_q5_0_neon, .matvec = matvec_q5_0_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q5_1] = {
			.vec_dot = dot_q5_1_neon, .matvec = matvec_q5_1_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		/* activations only, but a dot product with itself: the generic's */
		[DTYPE_Q8_K] = {
			.vec_dot = dot_q8_K_generic, .matvec = matvec_q8_K_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q2_K] = {
			.vec_dot = dot_q2_K_neon, .matvec = matvec_q2_K_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q3_K] = {
			.vec_dot = dot_q3_K_neon, .matvec = matvec_q3_K_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q4_K] = {
			.vec_dot = dot_q4_K_neon, .matvec = matvec_q4_K_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_q4_K_neon, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q5_K] = {
			.vec_dot = dot_q5_K_neon, .matvec = matvec_q5_K_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q6_K] = {
			.vec_dot = dot_q6_K_neon, .matvec = matvec_q6_K_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_q6_K_neon, .matmat_p16 = matmat_p16_absent,
		},
		/* activations only: no weight has this type */
		[DTYPE_Q8_1] = {
			.vec_dot = dot_absent, .matvec = matvec_absent,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_IQ4_NL] = {
			.vec_dot = dot_iq4_nl_neon, .matvec = matvec_iq4_nl_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_IQ4_XS] = {
			.vec_dot = dot_iq4_xs_neon, .matvec = matvec_iq4_xs_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
	},
	.quantize_q8_0 = quantize_q8_0_neon,
	.quantize_q8_K = quantize_q8_K_generic,
	.fp16_to_f32_row = fp16_to_f32_row_neon,
	.f32_to_fp16_row = f32_to_fp16_row_neon,
	.rmsnorm = rmsnorm_neon,
	.softmax = softmax_neon,
	.rope_apply = rope_apply_neon,
	.swiglu = swiglu_neon,
	.gemm_quant = gemm_quant_neon,
	.gemm_aux = gemm_aux_generic,
	.kv = {
		[KV_F16] = {attention_f16_neon, attn_rows_f16_neon, attn_rows_heads_f16_neon},
		[KV_F32] = {attention_f32_neon, attn_rows_f32_neon, attn_rows_heads_f32_neon},
		[KV_Q8_0] = {attention_q8_0_neon, attn_rows_q8_0_neon,
			     attn_rows_heads_q8_0_neon},
	},
};


const kernel_ops_t kops_dotprod = {
	.name = "dotprod",
	.type = {
		[DTYPE_F32] = {
			.vec_dot = dot_f32_neon, .matvec = matvec_f32_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_F16] = {
			.vec_dot = dot_f16_neon, .matvec = matvec_f16_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_BF16] = {
			.vec_dot = dot_bf16_neon, .matvec = matvec_bf16_neon,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q8_0] = {
			.vec_dot = dot_q8_0_dotprod, .matvec = matvec_q8_0_dotprod,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q4_0] = {
			.vec_dot = dot_q4_0_dotprod, .matvec = matvec_q4_0_dotprod,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q4_1] = {
			.vec_dot = dot_q4_1_dotprod, .matvec = matvec_q4_1_dotprod,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q5_0] = {
			.vec_dot = dot_q5_0_dotprod, .matvec = matvec_q5_0_dotprod,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q5_1] = {
			.vec_dot = dot_q5_1_dotprod, .matvec = matvec_q5_1_dotprod,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		/* activations only, but a dot product with itself: the generic's */
		[DTYPE_Q8_K] = {
			.vec_dot = dot_q8_K_generic, .matvec = matvec_q8_K_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q2_K] = {
			.vec_dot = dot_q2_K_dotprod, .matvec = matvec_q2_K_dotprod,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q3_K] = {
			.vec_dot = dot_q3_K_dotprod, .matvec = matvec_q3_K_dotprod,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q4_K] = {
			.vec_dot = dot_q4_K_dotprod, .matvec = matvec_q4_K_dotprod,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_q4_K_dotprod, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q5_K] = {
			.vec_dot = dot_q5_K_dotprod, .matvec = matvec_q5_K_dotprod,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q6_K] = {
			.vec_dot = dot_q6_K_dotprod, .matvec = matvec_q6_K_dotprod,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_q6_K_dotprod, .matmat_p16 = matmat_p16_absent,
		},
		/* activations only: no weight has this type */
		[DTYPE_Q8_1] = {
			.vec_dot = dot_absent, .matvec = matvec_absent,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_IQ4_NL] = {
			.vec_dot = dot_iq4_nl_dotprod, .matvec = matvec_iq4_nl_dotprod,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_IQ4_XS] = {
			.vec_dot = dot_iq4_xs_dotprod, .matvec = matvec_iq4_xs_dotprod,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
	},
	.quantize_q8_0 = quantize_q8_0_neon,
	.quantize_q8_K = quantize_q8_K_generic,
	.fp16_to_f32_row = fp16_to_f32_row_neon,
	.f32_to_fp16_row = f32_to_fp16_row_neon,
	.rmsnorm = rmsnorm_neon,
	.softmax = softmax_neon,
	.rope_apply = rope_apply_neon,
	.swiglu = swiglu_neon,
	.gemm_quant = gemm_quant_dotprod,
	.gemm_aux = gemm_aux_generic,
	.kv = {
		[KV_F16] = {attention_f16_neon, attn_rows_f16_neon, attn_rows_heads_f16_neon},
		[KV_F32] = {attention_f32_neon, attn_rows_f32_neon, attn_rows_heads_f32_neon},
		[KV_Q8_0] = {attention_q8_0_neon, attn_rows_q8_0_neon,
			     attn_rows_heads_q8_0_neon},
	},
};


#endif
