/* gemm: AVX2 level of the quantized matrix-matrix kernel (see gemm.c for
 * the design and what is bit-exact).
 *
 * As gemm_avx512.c with 8 weight rows per 256-bit register and tiles of 4
 * tokens (16 registers). AVX2 has no vpdpbusd; pmaddubsw multiplies
 * unsigned by signed bytes into saturating int16 pair sums, so the weights
 * are repacked as |w| (unsigned, <= 128) and w (for the sign), the broadcast
 * activations get w's sign (psignb: 0 where w = 0), and
 *     pmaddubsw(|w|, sign(x, w)) = w x per byte, |pair sum| <= 2*128*127
 * never saturates; pmaddwd by 1 widens to int32. The block sum is exact, and
 * the float step is the generic's per lane, with no FMA. */
#include "kernels/gemm_impl.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX2_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c")))

#define RG 8 /* weight rows per register */
#define TG 4 /* tokens per tile */

#define VEC_ROUNDED(v) __asm__("" : "+x"(v))

static inline int32_t ld_i32(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* Rows r..r+7 (rows at or past r1 repeat row r1-1, not stored) ->
 * pk[b][g] = { |w| for the 8 rows (32 bytes), w for the 8 rows } and
 * dw[b][row]. */
AVX2_INLINE void pack_rows(dtype_t t, const uint8_t *W, size_t rb, int64_t r,
			   int64_t r1, int64_t nb, uint32_t *pk, float *dw)
{
	const uint8_t *row[RG];
	const size_t qb = gemm_qbytes(t);
	for (int i = 0; i < RG; i++)
		row[i] = W + (size_t)(r + i < r1 ? r + i : r1 - 1) * rb;
	for (int64_t b = 0; b < nb; b++) {
		uint32_t *p = pk + (size_t)b * 8 * 2 * RG;
		for (int i = 0; i < RG; i++) {
			const uint8_t *blk = row[i] + (size_t)b * qb;
#pragma GCC unroll 8
			for (int g = 0; g < 8; g++)
				p[g * 2 * RG + RG + i] = gemm_wgroup_s(t, blk, g);
			dw[b * RG + i] = fp16_to_f32_inline(ld_u16(blk));
		}
#pragma GCC unroll 8
		for (int g = 0; g < 8; g++) {
			__m256i w = _mm256_load_si256((const __m256i *)(p + g * 2 * RG + RG));
			_mm256_store_si256((__m256i *)(p + g * 2 * RG), _mm256_abs_epi8(w));
		}
	}
}

AVX2_INLINE void tile(const uint32_t *pk, const float *dw, const uint8_t *X,
		      size_t xs, const float *dx, int64_t nb, float *Y, int64_t ys,
		      int nrows, const int T)
{
	const __m256i ones = _mm256_set1_epi16(1);
	__m256 acc[TG];
#pragma GCC unroll 8
	for (int k = 0; k < T; k++)
		acc[k] = _mm256_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		const __m256i *wb = (const __m256i *)(pk + (size_t)b * 8 * 2 * RG);
		const uint8_t *xq = X + (size_t)b * sizeof(block_q8_0) + 2;
		__m256i s[TG];
#pragma GCC unroll 8
		for (int k = 0; k < T; k++)
			s[k] = _mm256_setzero_si256();
#pragma GCC unroll 8
		for (int g = 0; g < 8; g++) {
			__m256i wa = _mm256_load_si256(wb + 2 * g);
			__m256i ws = _mm256_load_si256(wb + 2 * g + 1);
#pragma GCC unroll 8
			for (int k = 0; k < T; k++) {
				__m256i x = _mm256_set1_epi32(ld_i32(xq + (size_t)k * xs + 4 * g));
				__m256i p = _mm256_maddubs_epi16(wa, _mm256_sign_epi8(x, ws));
				s[k] = _mm256_add_epi32(s[k], _mm256_madd_epi16(p, ones));
			}
		}
		__m256 d = _mm256_load_ps(dw + b * RG);
#pragma GCC unroll 8
		for (int k = 0; k < T; k++) {
			__m256 dk = _mm256_mul_ps(d, _mm256_set1_ps(dx[k * nb + b]));
			__m256 p = _mm256_mul_ps(_mm256_cvtepi32_ps(s[k]), dk);
			VEC_ROUNDED(p);
			acc[k] = _mm256_add_ps(acc[k], p);
		}
	}
#pragma GCC unroll 8
	for (int k = 0; k < T; k++) {
		if (nrows == RG) {
			_mm256_storeu_ps(Y + k * ys, acc[k]);
		} else {
			float tmp[RG];
			_mm256_storeu_ps(tmp, acc[k]);
			memcpy(Y + k * ys, tmp, (size_t)nrows * sizeof(float));
		}
	}
}

AVX2 void gemm_quant_avx2(GEMM_QUANT_ARGS)
{
	(void)sx; /* the sign trick needs no correction */
	(void)P; /* the rows as stored */
	(void)np;
	size_t pk_bytes = (size_t)nb * 8 * 2 * RG * 4;
	uint8_t *s1 = gemm_scratch(1, pk_bytes + (size_t)nb * RG * sizeof(float));
	if (!s1) { /* out of memory: the generic twin needs none */
		gemm_rows_generic(t, W, X, xs, Y, ys, nb * QK, r0, r1, ntok);
		return;
	}
	uint32_t *pk = (uint32_t *)s1;
	float *dw = (float *)(s1 + pk_bytes);
	for (int64_t r = r0; r < r1; r += RG) {
		pack_rows(t, W, rb, r, r1, nb, pk, dw);
		int nrows = r1 - r >= RG ? RG : (int)(r1 - r);
		for (int64_t k = 0; k < ntok; k += TG) {
			const uint8_t *xk = X + (size_t)k * xs;
			float *yk = Y + k * ys + r;
			switch (ntok - k >= TG ? TG : (int)(ntok - k)) {
			case 4: tile(pk, dw, xk, xs, dx + k * nb, nb, yk, ys, nrows, 4); break;
			case 3: tile(pk, dw, xk, xs, dx + k * nb, nb, yk, ys, nrows, 3); break;
			case 2: tile(pk, dw, xk, xs, dx + k * nb, nb, yk, ys, nrows, 2); break;
			default: tile(pk, dw, xk, xs, dx + k * nb, nb, yk, ys, nrows, 1); break;
			}
		}
	}
}

#endif
