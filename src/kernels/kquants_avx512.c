/* kquants: AVX-512 (F, BW, VL, DQ; no VNNI, so both AVX-512 levels) forms
 * of the Q4_K, Q5_K and Q6_K kernels of kquants_avx2.c: the same row x a
 * run of tokens structure and the same exact integer sums, 64 elements per
 * instruction instead of 32; the float step is kq_k_step, super-blocks in
 * ascending order, so every output is the generic's bits (and a gemm
 * output the matvec's). pmaddubsw of quants 0..63 against Q8_K bytes never
 * saturates (pairs <= 2 * 63 * 128); pmaddwd by the sub-block scales widens
 * to int32. */
#include "kernels/kernels_impl.h"
#include "kernels/kquants.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define T512 "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"
#define AVX512 __attribute__((target(T512)))
#define AVX512_INLINE static inline __attribute__((always_inline, target(T512)))

#define KQ_TOK 64 /* tokens per run (as kquants_avx2.c) */

AVX512_INLINE __m256i ld256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* Two adjacent halves at p as floats (vcvtph2ps: the bits of
 * fp16_to_f32_inline, without its branches). */
AVX512_INLINE void f16x2(const uint8_t *p, float *a, float *b)
{
	__m128 v = _mm_cvtph_ps(_mm_cvtsi32_si128((int)ld_u32(p)));
	*a = _mm_cvtss_f32(v);
	*b = _mm_cvtss_f32(_mm_shuffle_ps(v, v, 1));
}

AVX512_INLINE float f16x1(const uint8_t *p)
{
	return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(ld_u16(p))));
}
AVX512_INLINE __m512i ld512(const void *p) { return _mm512_loadu_si512(p); }

AVX512_INLINE __m256i fold512(__m512i v)
{
	return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

AVX512_INLINE int32_t hsum256(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
	s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
	return _mm_cvtsi128_si32(s);
}

/* the sums of 4 vectors' int32 lanes, in one vector (exact) */
AVX512_INLINE __m128i hsum4(__m256i a, __m256i b, __m256i c, __m256i d)
{
	__m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
	return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/* int16 index vector for vpermw: lanes 16 i .. 16 i + 15 take lane a + i
 * (scales of consecutive sub-blocks, 16 lanes each: sub-blocks of 32) */
#define IDX2(a) _mm512_set_epi64(0x0001000100010001ll * ((a) + 1), 0x0001000100010001ll * ((a) + 1), \
				 0x0001000100010001ll * ((a) + 1), 0x0001000100010001ll * ((a) + 1), \
				 0x0001000100010001ll * (a), 0x0001000100010001ll * (a),             \
				 0x0001000100010001ll * (a), 0x0001000100010001ll * (a))
/* lanes 8 i .. 8 i + 7 take lane a + i (sub-blocks of 16) */
#define IDX4(a) _mm512_set_epi64(0x0001000100010001ll * ((a) + 3), 0x0001000100010001ll * ((a) + 3), \
				 0x0001000100010001ll * ((a) + 2), 0x0001000100010001ll * ((a) + 2), \
				 0x0001000100010001ll * ((a) + 1), 0x0001000100010001ll * ((a) + 1), \
				 0x0001000100010001ll * (a), 0x0001000100010001ll * (a))

/* Q4_K / Q5_K: q[c] = elements 64 c .. 64 c + 63 (sub-blocks 2c, 2c + 1) */
typedef struct {
	__m512i q[4];
	__m512i sc;   /* the 8 scales as int16 (lanes 0..7) */
	__m256i mdup; /* m0 m0 m1 m1 .. m7 m7 (int16), against bsums */
	float d, dmin;
} k32_w_t;

AVX512_INLINE void k32_weights(const uint8_t *wb, k32_w_t *w, const int five)
{
	const __m512i m4 = _mm512_set1_epi8(0x0F), b4 = _mm512_set1_epi8(0x10);
	uint32_t a = ld_u32(wb + 4), b = ld_u32(wb + 8), c = ld_u32(wb + 12);
	uint32_t sc_lo = a & 0x3F3F3F3Fu, m_lo = b & 0x3F3F3F3Fu;
	uint32_t sc_hi = (c & 0x0F0F0F0Fu) | ((a >> 2) & 0x30303030u);
	uint32_t m_hi = ((c >> 4) & 0x0F0F0F0Fu) | ((b >> 2) & 0x30303030u);
	__m128i sc = _mm_cvtepu8_epi16(_mm_setr_epi32((int)sc_lo, (int)sc_hi, 0, 0));
	__m128i mn = _mm_cvtepu8_epi16(_mm_setr_epi32((int)m_lo, (int)m_hi, 0, 0));
	w->sc = _mm512_castsi128_si512(sc);
	w->mdup = _mm256_set_m128i(_mm_unpackhi_epi16(mn, mn), _mm_unpacklo_epi16(mn, mn));
	const uint8_t *qs = wb + (five ? 48 : 16);
	__m256i qh = five ? ld256(wb + 16) : _mm256_setzero_si256();
#pragma GCC unroll 4
	for (int k = 0; k < 4; k++) {
		__m256i q = ld256(qs + 32 * k);
		__m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
		v = _mm512_and_si512(v, m4);
		if (five) {
			/* bit 2k of qh for the low half, 2k + 1 for the high */
			__m256i h0 = _mm256_srli_epi16(qh, 2 * k), h1 = _mm256_srli_epi16(qh, 2 * k + 1);
			__m512i h = _mm512_inserti64x4(_mm512_castsi256_si512(h0), h1, 1);
			v = _mm512_or_si512(v, _mm512_and_si512(_mm512_slli_epi16(h, 4), b4));
		}
		w->q[k] = v;
	}
	f16x2(wb, &w->d, &w->dmin);
}

AVX512_INLINE void k32_token(const k32_w_t *w, const uint8_t *x, __m256i *si, __m256i *sm)
{
	const uint8_t *xq = x + 4;
	__m512i acc = _mm512_setzero_si512();
#pragma GCC unroll 4
	for (int k = 0; k < 4; k++) {
		__m512i p = _mm512_maddubs_epi16(w->q[k], ld512(xq + 64 * k));
		acc = _mm512_add_epi32(acc, _mm512_madd_epi16(p, _mm512_permutexvar_epi16(IDX2(2 * k), w->sc)));
	}
	*si = fold512(acc);
	*sm = _mm256_madd_epi16(ld256(x + 4 + QK_K), w->mdup);
}

/* Q6_K: q[j] = elements 64 j .. 64 j + 63 (sub-blocks 4j .. 4j + 3), quants
 * 0..63 (q - 32 folded into the bsum term) */
typedef struct {
	__m512i q[4];
	__m512i sc; /* the 16 scales as int16 (lanes 0..15) */
	__m256i sc16;
	float d, dmin;
} k16_w_t;

AVX512_INLINE void q6_weights(const uint8_t *wb, k16_w_t *w)
{
	const block_q6_K *k = (const void *)wb;
	const __m512i m4 = _mm512_set1_epi8(0x0F), m3 = _mm512_set1_epi8(0x03);
#pragma GCC unroll 2
	for (int h = 0; h < 2; h++) {
		__m512i l = ld512(k->ql + 64 * h);
		__m256i qh = ld256(k->qh + 32 * h);
		/* k = 0, 1: low nibbles, qh bits 0-1 then 2-3; k = 2, 3: high
		 * nibbles, bits 4-5 then 6-7 */
		__m512i h01 = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
		__m512i h23 = _mm512_srli_epi16(h01, 4);
		w->q[2 * h] = _mm512_or_si512(_mm512_and_si512(l, m4),
					      _mm512_slli_epi16(_mm512_and_si512(h01, m3), 4));
		w->q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
						  _mm512_slli_epi16(_mm512_and_si512(h23, m3), 4));
	}
	w->sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)k->scales));
	w->sc = _mm512_castsi256_si512(w->sc16);
	w->d = f16x1((const uint8_t *)&k->d);
	w->dmin = 0.0f;
}

AVX512_INLINE void q6_token(const k16_w_t *w, const uint8_t *x, __m256i *si, __m256i *sm)
{
	const uint8_t *xq = x + 4;
	__m512i acc = _mm512_setzero_si512();
#pragma GCC unroll 4
	for (int j = 0; j < 4; j++) {
		__m512i p = _mm512_maddubs_epi16(w->q[j], ld512(xq + 64 * j));
		acc = _mm512_add_epi32(acc, _mm512_madd_epi16(p, _mm512_permutexvar_epi16(IDX4(4 * j), w->sc)));
	}
	__m256i sb = _mm256_madd_epi16(w->sc16, ld256(x + 4 + QK_K));
	*si = _mm256_sub_epi32(fold512(acc), _mm256_slli_epi32(sb, 5));
	*sm = _mm256_setzero_si256();
}

/* Row w (nb super-blocks of bb bytes) against tokens X + k xs, k < nt
 * (<= KQ_TOK): out[k * os] = the dot product. */
#define KQ_ROW_TOKENS(name, W_T, WEIGHTS, TOKEN, bb, has_min)                          \
	AVX512_INLINE void name(const uint8_t *w, const uint8_t *X, size_t xs, int64_t nb, \
				int nt, float *out, int64_t os)                       \
	{                                                                             \
		float acc[KQ_TOK];                                                    \
		for (int k = 0; k < nt; k++)                                          \
			acc[k] = 0.0f;                                                \
		for (int64_t b = 0; b < nb; b++) {                                    \
			W_T wt;                                                       \
			WEIGHTS(w + (size_t)b * (bb), &wt);                           \
			const uint8_t *xb = X + (size_t)b * sizeof(block_q8_K);       \
			int k = 0;                                                    \
			for (; k + 4 <= nt; k += 4) {                                 \
				__m256i si[4], sm[4];                                 \
				_Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)   \
					TOKEN(&wt, xb + (size_t)(k + j) * xs, &si[j], &sm[j]); \
				int32_t vi[4], vm[4];                                 \
				_mm_storeu_si128((__m128i *)vi, hsum4(si[0], si[1], si[2], si[3])); \
				_mm_storeu_si128((__m128i *)vm, hsum4(sm[0], sm[1], sm[2], sm[3])); \
				_Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)   \
					acc[k + j] = kq_k_step(acc[k + j], ld_f32(xb + (size_t)(k + j) * xs), \
							       wt.d, wt.dmin, vi[j], vm[j], has_min); \
			}                                                             \
			for (; k < nt; k++) {                                         \
				__m256i si, sm;                                       \
				TOKEN(&wt, xb + (size_t)k * xs, &si, &sm);            \
				acc[k] = kq_k_step(acc[k], ld_f32(xb + (size_t)k * xs), wt.d, \
						   wt.dmin, hsum256(si), has_min ? hsum256(sm) : 0, \
						   has_min);                          \
			}                                                             \
		}                                                                     \
		for (int k = 0; k < nt; k++)                                          \
			out[k * os] = acc[k];                                         \
	}

#define Q4K_W(p, w) k32_weights(p, w, 0)
#define Q5K_W(p, w) k32_weights(p, w, 1)
KQ_ROW_TOKENS(q4k_row_tokens, k32_w_t, Q4K_W, k32_token, sizeof(block_q4_K), 1)
KQ_ROW_TOKENS(q5k_row_tokens, k32_w_t, Q5K_W, k32_token, sizeof(block_q5_K), 1)
KQ_ROW_TOKENS(q6k_row_tokens, k16_w_t, q6_weights, q6_token, sizeof(block_q6_K), 0)

/* dot product, matvec and matmat_fn of each type */
#define KQ_ENTRY(lower, rowfn)                                                        \
	float AVX512 kq_dot_##lower##_avx512(const void *w, const void *xa, int64_t n)  \
	{                                                                             \
		float out;                                                            \
		rowfn(w, xa, 0, n / QK_K, 1, &out, 1);                                \
		return out;                                                           \
	}                                                                             \
	void AVX512 kq_matvec_##lower##_avx512(const void *W, size_t rb, const void *xa, \
					       float *y, int64_t n, int64_t r0, int64_t r1) \
	{                                                                             \
		for (int64_t r = r0; r < r1; r++)                                     \
			rowfn((const uint8_t *)W + (size_t)r * rb, xa, 0, n / QK_K, 1, y + r, 1); \
	}                                                                             \
	void AVX512 kq_matmat_##lower##_avx512(const void *W, size_t rb, const void *X,  \
					       size_t xs, float *Y, int64_t ys, int64_t n, \
					       int64_t r0, int64_t r1, int64_t ntok)   \
	{                                                                             \
		for (int64_t k0 = 0; k0 < ntok; k0 += KQ_TOK) {                       \
			int nt = ntok - k0 < KQ_TOK ? (int)(ntok - k0) : KQ_TOK;      \
			for (int64_t r = r0; r < r1; r++)                             \
				rowfn((const uint8_t *)W + (size_t)r * rb,            \
				      (const uint8_t *)X + (size_t)k0 * xs, xs, n / QK_K, \
				      nt, Y + k0 * ys + r, ys);                       \
		}                                                                     \
	}
KQ_ENTRY(q4_K, q4k_row_tokens)
KQ_ENTRY(q5_K, q5k_row_tokens)
KQ_ENTRY(q6_K, q6k_row_tokens)

#endif
