/* kquants: AVX2 dot products of Q4_K and Q6_K weights against Q8_K
 * activations. Each super-block's integer sums are exact (so their order
 * does not matter) and the float step is kq_k_step, the generic's: the
 * same bits as kq_dot_generic. pmaddubsw (unsigned weight quants x signed
 * activation bytes, pairs summed to int16) never saturates here: Q4_K
 * quants are 0..15 (pairs <= 2 * 15 * 128), Q6_K quants taken unsigned
 * 0..63 (pairs <= 2 * 63 * 128 = 16128); pmaddwd by the sub-block scales
 * (<= 63, resp. int8) widens to int32. */
#include "kernels/kernels_impl.h"
#include "kernels/kquants.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX2_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c")))

AVX2_INLINE int32_t hsum_i32(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
	s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
	return _mm_cvtsi128_si32(s);
}

AVX2_INLINE __m256i ld256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* Q4_K: sumi = sum over the 8 sub-blocks of sc * (q . x), summ = sum of
 * m * (the sub-block's two bsums). */
float AVX2 kq_dot_q4_K_avx2(const void *w, const void *xa, int64_t n)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F);
	float acc = 0.0f;
	for (int64_t b = 0; b < n / QK_K; b++) {
		const uint8_t *wb = (const uint8_t *)w + (size_t)b * sizeof(block_q4_K);
		const uint8_t *x = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K);
		const uint8_t *qs = wb + 16, *xq = x + 4;
		uint8_t sc[8], mn[8];
		for (int s = 0; s < 8; s++)
			kq_scale_min_k4(wb + 4, s, &sc[s], &mn[s]);
		__m256i acc32 = _mm256_setzero_si256();
		for (int c = 0; c < 4; c++) {
			__m256i q = ld256(qs + 32 * c);
			__m256i lo = _mm256_and_si256(q, m4);
			__m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
			__m256i plo = _mm256_maddubs_epi16(lo, ld256(xq + 64 * c));
			__m256i phi = _mm256_maddubs_epi16(hi, ld256(xq + 64 * c + 32));
			acc32 = _mm256_add_epi32(acc32, _mm256_madd_epi16(plo, _mm256_set1_epi16(sc[2 * c])));
			acc32 = _mm256_add_epi32(acc32,
						 _mm256_madd_epi16(phi, _mm256_set1_epi16(sc[2 * c + 1])));
		}
		int32_t summ = 0;
		for (int s = 0; s < 8; s++)
			summ += mn[s] * ((int16_t)ld_u16(x + 4 + QK_K + 4 * s) +
					 (int16_t)ld_u16(x + 4 + QK_K + 4 * s + 2));
		acc = kq_k_step(acc, ld_f32(x), fp16_to_f32_inline(ld_u16(wb)),
				fp16_to_f32_inline(ld_u16(wb + 2)), hsum_i32(acc32), summ, 1);
	}
	return acc;
}

/* Q6_K: the quants q = lo | hi << 4 taken unsigned (0..63):
 * sum sc (q - 32) x = sum sc (q . x) - 32 sum sc bsum. */
float AVX2 kq_dot_q6_K_avx2(const void *w, const void *xa, int64_t n)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(0x03);
	float acc = 0.0f;
	for (int64_t b = 0; b < n / QK_K; b++) {
		const block_q6_K *k = (const void *)((const uint8_t *)w + (size_t)b * sizeof(block_q6_K));
		const uint8_t *x = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K);
		const uint8_t *xq = x + 4;
		__m256i acc32 = _mm256_setzero_si256();
		for (int h = 0; h < 2; h++) {
			const uint8_t *ql = k->ql + 64 * h;
			__m256i qh = ld256(k->qh + 32 * h);
			__m256i l0 = ld256(ql), l1 = ld256(ql + 32);
			const __m256i lo4[4] = { _mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4),
						 _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
						 _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4) };
			for (int kk = 0; kk < 4; kk++) {
				__m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * kk), m3);
				__m256i q = _mm256_or_si256(lo4[kk], _mm256_slli_epi16(hi, 4));
				__m256i p = _mm256_maddubs_epi16(q, ld256(xq + 128 * h + 32 * kk));
				int s0 = k->scales[8 * h + 2 * kk], s1 = k->scales[8 * h + 2 * kk + 1];
				__m256i scv = _mm256_setr_epi16(
					(int16_t)s0, (int16_t)s0, (int16_t)s0, (int16_t)s0, (int16_t)s0,
					(int16_t)s0, (int16_t)s0, (int16_t)s0, (int16_t)s1, (int16_t)s1,
					(int16_t)s1, (int16_t)s1, (int16_t)s1, (int16_t)s1, (int16_t)s1,
					(int16_t)s1);
				acc32 = _mm256_add_epi32(acc32, _mm256_madd_epi16(p, scv));
			}
		}
		int32_t sb = 0;
		for (int s = 0; s < 16; s++)
			sb += k->scales[s] * (int16_t)ld_u16(x + 4 + QK_K + 2 * s);
		acc = kq_k_step(acc, ld_f32(x), fp16_to_f32_inline(ld_u16(&k->d)), 0.0f,
				hsum_i32(acc32) - 32 * sb, 0, 0);
	}
	return acc;
}

/* The 32 bits of h as 32 bytes, 0x10 where the bit is set (Q5_0's fifth
 * bit, element j at byte j). */
AVX2_INLINE __m256i bits_to_0x10(uint32_t h)
{
	const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
					      2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
	const __m256i bit = _mm256_set1_epi64x(0x8040201008040201ll);
	__m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)h), shuf);
	v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
	return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

/* Q5_0 against Q8_0: sumi = sum (u - 16) x with u = lo | hi << 4 in 0..31
 * = (u . x) - 16 (1 . x); the float step is dot_legacy's. */
float AVX2 kq_dot_q5_0_avx2(const void *w, const void *xa, int64_t n)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), one8 = _mm256_set1_epi8(1),
		      one16 = _mm256_set1_epi16(1);
	float acc = 0.0f;
	for (int64_t b = 0; b < n / QK; b++) {
		const uint8_t *wb = (const uint8_t *)w + (size_t)b * sizeof(block_q5_0);
		const uint8_t *x = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_0);
		__m128i q = _mm_loadu_si128((const __m128i *)(wb + 6));
		__m256i u = _mm256_and_si256(
			_mm256_set_m128i(_mm_srli_epi16(q, 4), q), m4);
		u = _mm256_or_si256(u, bits_to_0x10(ld_u32(wb + 2)));
		__m256i xv = ld256(x + 2);
		__m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(u, xv), one16);
		__m256i sx = _mm256_madd_epi16(_mm256_maddubs_epi16(one8, xv), one16);
		int32_t sumi = hsum_i32(s) - 16 * hsum_i32(sx);
		float dd = fp16_to_f32_inline(ld_u16(wb)) * fp16_to_f32_inline(ld_u16(x));
		float p = (float)sumi * dd;
		FP_ROUNDED(p);
		acc = acc + p;
	}
	return acc;
}

/* Q4_1 / Q5_1 against Q8_1: sumi = u . x (u the unsigned quants); the
 * float steps are dot_legacy's (the min term from the activations' s). */
AVX2_INLINE float dot_legacy_min(const void *w, const void *xa, int64_t n, int five)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), one16 = _mm256_set1_epi16(1);
	const size_t bb = five ? sizeof(block_q5_1) : sizeof(block_q4_1);
	float acc = 0.0f, summ = 0.0f;
	for (int64_t b = 0; b < n / QK; b++) {
		const uint8_t *wb = (const uint8_t *)w + (size_t)b * bb;
		const uint8_t *x = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_1);
		__m128i q = _mm_loadu_si128((const __m128i *)(wb + (five ? 8 : 4)));
		__m256i u = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), m4);
		if (five)
			u = _mm256_or_si256(u, bits_to_0x10(ld_u32(wb + 4)));
		__m256i xv = ld256(x + 4);
		int32_t sumi = hsum_i32(_mm256_madd_epi16(_mm256_maddubs_epi16(u, xv), one16));
		float dw = fp16_to_f32_inline(ld_u16(wb)), m = fp16_to_f32_inline(ld_u16(wb + 2));
		float dx = fp16_to_f32_inline(ld_u16(x));
		float dd = dw * dx;
		float p = (float)sumi * dd;
		FP_ROUNDED(p);
		acc = acc + p;
		float pm = m * fp16_to_f32_inline(ld_u16(x + 2));
		FP_ROUNDED(pm);
		summ = summ + pm;
	}
	return acc + summ;
}

float AVX2 kq_dot_q4_1_avx2(const void *w, const void *xa, int64_t n)
{
	return dot_legacy_min(w, xa, n, 0);
}

float AVX2 kq_dot_q5_1_avx2(const void *w, const void *xa, int64_t n)
{
	return dot_legacy_min(w, xa, n, 1);
}

/* Q5_K: Q4_K's sums with the fifth bit, (qh[l] >> s) & 1 for sub-block s. */
float AVX2 kq_dot_q5_K_avx2(const void *w, const void *xa, int64_t n)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
	float acc = 0.0f;
	for (int64_t b = 0; b < n / QK_K; b++) {
		const uint8_t *wb = (const uint8_t *)w + (size_t)b * sizeof(block_q5_K);
		const uint8_t *x = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K);
		const uint8_t *qs = wb + 48, *xq = x + 4;
		__m256i qh = ld256(wb + 16);
		uint8_t sc[8], mn[8];
		for (int s = 0; s < 8; s++)
			kq_scale_min_k4(wb + 4, s, &sc[s], &mn[s]);
		__m256i acc32 = _mm256_setzero_si256();
		for (int c = 0; c < 4; c++) {
			__m256i q = ld256(qs + 32 * c);
			__m256i hl = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * c), 4), b4);
			__m256i hh = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * c + 1), 4), b4);
			__m256i lo = _mm256_or_si256(_mm256_and_si256(q, m4), hl);
			__m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), hh);
			__m256i plo = _mm256_maddubs_epi16(lo, ld256(xq + 64 * c));
			__m256i phi = _mm256_maddubs_epi16(hi, ld256(xq + 64 * c + 32));
			acc32 = _mm256_add_epi32(acc32, _mm256_madd_epi16(plo, _mm256_set1_epi16(sc[2 * c])));
			acc32 = _mm256_add_epi32(acc32,
						 _mm256_madd_epi16(phi, _mm256_set1_epi16(sc[2 * c + 1])));
		}
		int32_t summ = 0;
		for (int s = 0; s < 8; s++)
			summ += mn[s] * ((int16_t)ld_u16(x + 4 + QK_K + 4 * s) +
					 (int16_t)ld_u16(x + 4 + QK_K + 4 * s + 2));
		acc = kq_k_step(acc, ld_f32(x), fp16_to_f32_inline(ld_u16(wb)),
				fp16_to_f32_inline(ld_u16(wb + 2)), hsum_i32(acc32), summ, 1);
	}
	return acc;
}

/* The int16 scales of two sub-blocks of 16, one per 128-bit half (what
 * pmaddwd needs after pmaddubsw of 32 elements). */
AVX2_INLINE __m256i two_scales(int a, int b)
{
	return _mm256_set_m128i(_mm_set1_epi16((int16_t)b), _mm_set1_epi16((int16_t)a));
}

/* Q2_K: quants 0..3; sumi = sum sc (q . x), summ = sum mn bsum. */
float AVX2 kq_dot_q2_K_avx2(const void *w, const void *xa, int64_t n)
{
	const __m256i m3 = _mm256_set1_epi8(0x03);
	float acc = 0.0f;
	for (int64_t b = 0; b < n / QK_K; b++) {
		const block_q2_K *k = (const void *)((const uint8_t *)w + (size_t)b * sizeof(block_q2_K));
		const uint8_t *x = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K);
		__m256i acc32 = _mm256_setzero_si256();
		for (int h = 0; h < 2; h++) {
			__m256i qv = ld256(k->qs + 32 * h);
			for (int j = 0; j < 4; j++) {
				__m256i q = _mm256_and_si256(_mm256_srli_epi16(qv, 2 * j), m3);
				__m256i p = _mm256_maddubs_epi16(q, ld256(x + 4 + 128 * h + 32 * j));
				int s = 8 * h + 2 * j;
				acc32 = _mm256_add_epi32(acc32, _mm256_madd_epi16(
					p, two_scales(k->scales[s] & 15, k->scales[s + 1] & 15)));
			}
		}
		int32_t summ = 0;
		for (int s = 0; s < 16; s++)
			summ += (k->scales[s] >> 4) * (int16_t)ld_u16(x + 4 + QK_K + 2 * s);
		acc = kq_k_step(acc, ld_f32(x), fp16_to_f32_inline(ld_u16(&k->d)),
				fp16_to_f32_inline(ld_u16(&k->dmin)), hsum_i32(acc32), summ, 1);
	}
	return acc;
}

/* Q3_K: u = low + 4 high in 0..7, q = u - 4:
 * sum sc (q . x) = sum sc (u . x) - 4 sum sc bsum. */
float AVX2 kq_dot_q3_K_avx2(const void *w, const void *xa, int64_t n)
{
	const __m256i m3 = _mm256_set1_epi8(0x03), m1 = _mm256_set1_epi8(0x01);
	float acc = 0.0f;
	for (int64_t b = 0; b < n / QK_K; b++) {
		const block_q3_K *k = (const void *)((const uint8_t *)w + (size_t)b * sizeof(block_q3_K));
		const uint8_t *x = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K);
		int8_t sc[16];
		kq_scales_q3(k->scales, sc);
		__m256i hm = ld256(k->hmask);
		__m256i acc32 = _mm256_setzero_si256();
		for (int h = 0; h < 2; h++) {
			__m256i qv = ld256(k->qs + 32 * h);
			for (int j = 0; j < 4; j++) {
				__m256i lo = _mm256_and_si256(_mm256_srli_epi16(qv, 2 * j), m3);
				__m256i hi = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + j), m1);
				__m256i u = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 2));
				__m256i p = _mm256_maddubs_epi16(u, ld256(x + 4 + 128 * h + 32 * j));
				int s = 8 * h + 2 * j;
				acc32 = _mm256_add_epi32(acc32,
							 _mm256_madd_epi16(p, two_scales(sc[s], sc[s + 1])));
			}
		}
		int32_t sb = 0;
		for (int s = 0; s < 16; s++)
			sb += sc[s] * (int16_t)ld_u16(x + 4 + QK_K + 2 * s);
		acc = kq_k_step(acc, ld_f32(x), fp16_to_f32_inline(ld_u16(&k->d)), 0.0f,
				hsum_i32(acc32) - 4 * sb, 0, 0);
	}
	return acc;
}

#endif
