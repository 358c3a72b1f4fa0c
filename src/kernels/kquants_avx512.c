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

#include "kernels/simd_x86.h"

#define AVX512 AVX512_BASE
#define AVX512_INLINE AVX512_BASE_INLINE

AVX512_INLINE __m512i ld512(const void *p) { return _mm512_loadu_si512(p); }

AVX512_INLINE __m256i fold512(__m512i v)
{
	return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
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

/* The 8 scales and mins (kq_scales_mins_q4K), then the nibbles (Q5_K:
 * with the fifth bit) as kquants_avx2.c k32_weights, 64 to a register. */
AVX512_INLINE void k32_weights(const uint8_t *wb, k32_w_t *w, const int five)
{
	const __m512i m4 = _mm512_set1_epi8(0x0F), b4 = _mm512_set1_epi8(0x10);
	__m128i sc;
	kq_scales_mins_q4K(wb, &sc, &w->mdup);
	w->sc = _mm512_castsi128_si512(sc);
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
	ld_f16x2_f16c(wb, &w->d, &w->dmin);
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
	w->d = ld_f16_f16c((const uint8_t *)&k->d);
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

#define Q4K_W(p, w) k32_weights(p, w, 0)
#define Q5K_W(p, w) k32_weights(p, w, 1)
KQ_ROW_TOKENS(q4k_row_tokens, AVX512_INLINE, k32_w_t, Q4K_W, k32_token, sizeof(block_q4_K), 1)
KQ_ROW_TOKENS(q5k_row_tokens, AVX512_INLINE, k32_w_t, Q5K_W, k32_token, sizeof(block_q5_K), 1)
KQ_ROW_TOKENS(q6k_row_tokens, AVX512_INLINE, k16_w_t, q6_weights, q6_token, sizeof(block_q6_K), 0)

/* dot, matvec and matmat of each type */
KQ_ENTRY(q4_K, avx512, AVX512, q4k_row_tokens, QK_K)
KQ_ENTRY(q5_K, avx512, AVX512, q5k_row_tokens, QK_K)
KQ_ENTRY(q6_K, avx512, AVX512, q6k_row_tokens, QK_K)

#endif
