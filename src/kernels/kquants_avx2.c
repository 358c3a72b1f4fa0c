/* kquants: the AVX2 forms of the kquants.h types, each a row against a
 * run of tokens (kquants.h KQ_ROW_TOKENS): the K-quants and IQ4_XS against
 * Q8_K activations, the legacy Q4_1, Q5_0, Q5_1 and IQ4_NL against Q8_0 /
 * Q8_1; and the Q8_K activation quantizer. The avx2 level's kernels, and
 * the avx512 levels' where these have no 512-bit form.
 *
 * Each super-block's integer sums are exact (so their order does not
 * matter) and the float step is kq_k_step, the generic's: the same bits as
 * kq_dot_generic. pmaddubsw (unsigned weight quants x signed activation
 * bytes, pairs summed to int16) never saturates here: Q4_K quants are
 * 0..15 (pairs <= 2 * 15 * 128), Q6_K quants taken unsigned 0..63 (pairs
 * <= 2 * 63 * 128 = 16128); pmaddwd by the sub-block scales (<= 63, resp.
 * int8) widens to int32. */
#include "kernels/kernels_impl.h"
#include "kernels/kquants.h"

#if defined(__x86_64__)

#include "kernels/simd_x86.h"

/* The Q8_K activation quantizer (kquants.c quantize_q8_K), the same bytes:
 * amax over the block with NaNs never winning (vmaxps returns its second
 * operand, the running max, when the first is a NaN), the first element
 * of that magnitude as max, q = the clamp of x * (-127 / max) to
 * [-128, 127] (a NaN to -128, as fmaxf), rounded to nearest even
 * (vcvtps2dq: lrintf's rounding), and the sums of 16. */
void AVX2 quantize_q8_K_avx2(const float *x, void *yv, int64_t n)
{
	const __m256 sign = _mm256_set1_ps(-0.0f), lo = _mm256_set1_ps(-128.0f),
		     hi = _mm256_set1_ps(127.0f);
	for (int64_t b = 0; b < n / QK_K; b++) {
		const float *xb = x + b * QK_K;
		uint8_t *y = (uint8_t *)yv + (size_t)b * sizeof(block_q8_K);
		__m256 am = _mm256_setzero_ps();
		for (int j = 0; j < QK_K; j += 8)
			am = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(xb + j)), am);
		const float amax = hmax256_ps(am);
		memset(y, 0, sizeof(block_q8_K));
		if (amax == 0.0f)
			continue;
		int idx = 0;
		for (int j = 0; j < QK_K; j += 8) {
			int m = _mm256_movemask_ps(_mm256_cmp_ps(
				_mm256_andnot_ps(sign, _mm256_loadu_ps(xb + j)), _mm256_set1_ps(amax),
				_CMP_EQ_OQ));
			if (m) {
				idx = j + __builtin_ctz((unsigned)m);
				break;
			}
		}
		const float iscale = -127.0f / xb[idx];
		const __m256 vs = _mm256_set1_ps(iscale);
		for (int s = 0; s < 16; s++) {
			__m256 f0 = _mm256_mul_ps(_mm256_loadu_ps(xb + 16 * s), vs);
			__m256 f1 = _mm256_mul_ps(_mm256_loadu_ps(xb + 16 * s + 8), vs);
			__m256i q0 = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(f0, lo), hi));
			__m256i q1 = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(f1, lo), hi));
			st_u16(y + 4 + QK_K + 2 * s,
			       (uint16_t)(int16_t)hsum256_epi32(_mm256_add_epi32(q0, q1)));
			/* int16 per 128-bit lane [q0 0-3, q1 0-3 | q0 4-7, q1 4-7]:
			 * qwords 0, 2, 1, 3 put them in order */
			__m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(q0, q1), 0xD8);
			_mm_storeu_si128((__m128i *)(y + 4 + 16 * s),
					 _mm_packs_epi16(_mm256_castsi256_si128(p),
							 _mm256_extracti128_si256(p, 1)));
		}
		const float d = 1.0f / iscale;
		memcpy(y, &d, 4);
	}
}

/* pshufb patterns broadcasting int16 lane s (0..7) of each 128-bit half */
#define BCAST16(s) _mm256_set1_epi16((short)(0x0202 * (s) + 0x0100))

/* Q4_K / Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins. */
typedef struct {
	__m256i lo[4], hi[4]; /* sub-blocks 2c and 2c + 1: quants 0..15 (Q5_K 0..31) */
	__m256i sc;           /* the 8 scales as int16, in both halves */
	__m256i mdup;         /* m0 m0 m1 m1 .. m7 m7 (int16), against bsums */
	float d, dmin;
} k32_w_t;

/* The 8 scales and mins (kq_scales_mins_q4K), then the nibbles of qs
 * (Q5_K: with the fifth bit of qh, (qh[l] >> s) & 1 for sub-block s, as
 * bit 4). */
AVX2_INLINE void k32_weights(const uint8_t *wb, k32_w_t *w, const int five)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
	__m128i sc;
	kq_scales_mins_q4K(wb, &sc, &w->mdup);
	w->sc = _mm256_broadcastsi128_si256(sc);
	const uint8_t *qs = wb + (five ? 48 : 16);
	__m256i qh = five ? ld256(wb + 16) : _mm256_setzero_si256();
#pragma GCC unroll 4
	for (int k = 0; k < 4; k++) {
		__m256i q = ld256(qs + 32 * k);
		w->lo[k] = _mm256_and_si256(q, m4);
		w->hi[k] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
		if (five) {
			w->lo[k] = _mm256_or_si256(w->lo[k], _mm256_and_si256(
				_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * k), 4), b4));
			w->hi[k] = _mm256_or_si256(w->hi[k], _mm256_and_si256(
				_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * k + 1), 4), b4));
		}
	}
	ld_f16x2_f16c(wb, &w->d, &w->dmin);
}

/* One token's super-block (x: its Q8_K block): the int32 lanes of sumi =
 * sum sc (q . x) and of summ = sum m bsum. */
AVX2_INLINE void k32_token(const k32_w_t *w, const uint8_t *x, __m256i *si, __m256i *sm)
{
	const uint8_t *xq = x + 4;
	__m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 4
	for (int k = 0; k < 4; k++) {
		__m256i plo = _mm256_maddubs_epi16(w->lo[k], ld256(xq + 64 * k));
		__m256i phi = _mm256_maddubs_epi16(w->hi[k], ld256(xq + 64 * k + 32));
		acc = _mm256_add_epi32(acc, _mm256_madd_epi16(plo, _mm256_shuffle_epi8(w->sc, BCAST16(2 * k))));
		KEEP(acc);
		acc = _mm256_add_epi32(acc, _mm256_madd_epi16(phi, _mm256_shuffle_epi8(w->sc, BCAST16(2 * k + 1))));
		KEEP(acc);
	}
	*si = acc;
	*sm = _mm256_madd_epi16(ld256(x + 4 + QK_K), w->mdup);
}

/* Q2_K / Q3_K / Q6_K: 16 sub-blocks of 16; vector j (0..7) holds elements
 * 32 j .. 32 j + 31 (sub-blocks 2j and 2j + 1) as unsigned quants u, and
 * q = u - bias (Q3_K 4, Q6_K 32, Q2_K 0 with mins). */
typedef struct {
	__m256i q[8];
	__m256i sc16;         /* the 16 scales as int16 */
	__m256i dup_a, dup_b; /* (s, s) dword pairs: unpacklo / unpackhi of sc16 */
	__m256i m16;          /* Q2_K: the 16 mins as int16 */
	float d, dmin;
} k16_w_t;

enum { K16_Q2, K16_Q3, K16_Q6 };

/* Q2_K / Q3_K element 128 h + 32 j + l: low bits (qs[32 h + l] >> 2 j) & 3;
 * Q3_K high bit (hmask[l] >> (4 h + j)) & 1 as bit 2. Q6_K element
 * 128 h + 32 k + l: low nibble of ql[64 h + l + 32 (k & 1)] (k >= 2: the
 * high nibble), high bits (qh[32 h + l] >> 2 k) & 3 as bits 4-5. */
AVX2_INLINE void k16_weights(const uint8_t *wb, k16_w_t *w, const int kind)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(0x03),
		      m1 = _mm256_set1_epi8(0x01);
	__m128i sc8;
	if (kind == K16_Q6) {
		const block_q6_K *k = (const void *)wb;
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i qh = ld256(k->qh + 32 * h);
			__m256i l0 = ld256(k->ql + 64 * h), l1 = ld256(k->ql + 64 * h + 32);
			__m256i lo4[4] = { _mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4),
					   _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
					   _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4) };
#pragma GCC unroll 4
			for (int kk = 0; kk < 4; kk++) {
				__m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * kk), m3);
				w->q[4 * h + kk] = _mm256_or_si256(lo4[kk], _mm256_slli_epi16(hi, 4));
			}
		}
		sc8 = _mm_loadu_si128((const __m128i *)k->scales);
		w->d = ld_f16_f16c((const uint8_t *)&k->d);
		w->dmin = 0.0f;
	} else {
		const uint8_t *qs = kind == K16_Q3 ? wb + 32 : wb + 16;
		__m256i hm = kind == K16_Q3 ? ld256(wb) : _mm256_setzero_si256();
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i qv = ld256(qs + 32 * h);
#pragma GCC unroll 4
			for (int j = 0; j < 4; j++) {
				__m256i u = _mm256_and_si256(_mm256_srli_epi16(qv, 2 * j), m3);
				if (kind == K16_Q3)
					u = _mm256_or_si256(u, _mm256_slli_epi16(_mm256_and_si256(
						_mm256_srli_epi16(hm, 4 * h + j), m1), 2));
				w->q[4 * h + j] = u;
			}
		}
		if (kind == K16_Q3) {
			/* 6-bit scales (kq_scales_q3): low nibbles of bytes 0-7
			 * (scales 0-7) and their high nibbles (8-15); 2 high bits
			 * from byte 8 + i % 4 at bit 2 (i / 4); then - 32 */
			const block_q3_K *k = (const void *)wb;
			uint64_t a;
			memcpy(&a, k->scales, 8);
			uint32_t c = ld_u32(k->scales + 8);
			uint64_t h03 = (uint64_t)(c & 0x03030303u) |
				       (uint64_t)((c >> 2) & 0x03030303u) << 32;
			uint64_t h47 = (uint64_t)((c >> 4) & 0x03030303u) |
				       (uint64_t)((c >> 6) & 0x03030303u) << 32;
			uint64_t s07 = (a & 0x0F0F0F0F0F0F0F0Full) | h03 << 4;
			uint64_t s8f = ((a >> 4) & 0x0F0F0F0F0F0F0F0Full) | h47 << 4;
			sc8 = _mm_sub_epi8(_mm_set_epi64x((long long)s8f, (long long)s07),
					   _mm_set1_epi8(32));
			w->d = ld_f16_f16c((const uint8_t *)&k->d);
			w->dmin = 0.0f;
		} else {
			const block_q2_K *k = (const void *)wb;
			__m128i s = _mm_loadu_si128((const __m128i *)k->scales);
			sc8 = _mm_and_si128(s, _mm_set1_epi8(0x0F));
			w->m16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4),
								    _mm_set1_epi8(0x0F)));
			ld_f16x2_f16c((const uint8_t *)&k->d, &w->d, &w->dmin);
		}
	}
	w->sc16 = _mm256_cvtepi8_epi16(sc8);
	w->dup_a = _mm256_unpacklo_epi16(w->sc16, w->sc16);
	w->dup_b = _mm256_unpackhi_epi16(w->sc16, w->sc16);
}

/* One token: sumi = sum sc (u . x) - bias sum sc bsum (Q2_K: bias 0, and
 * summ = sum m bsum), in int32 lanes. Vector j's two scales come from
 * dup_a (j = 0, 1, 4, 5) or dup_b (2, 3, 6, 7), dword 4 (j >> 2) +
 * 2 (j & 1), broadcast to each half by vpermd. */
AVX2_INLINE void k16_token(const k16_w_t *w, const uint8_t *x, __m256i *si, __m256i *sm,
			   const int kind)
{
	const uint8_t *xq = x + 4;
	__m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 8
	for (int j = 0; j < 8; j++) {
		const int a = 4 * (j >> 2) + 2 * (j & 1);
		__m256i scv = _mm256_permutevar8x32_epi32((j >> 1) & 1 ? w->dup_b : w->dup_a,
			_mm256_setr_epi32(a, a, a, a, a + 1, a + 1, a + 1, a + 1));
		__m256i p = _mm256_maddubs_epi16(w->q[j], ld256(xq + 32 * j));
		acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, scv));
		KEEP(acc);
	}
	__m256i bs = ld256(x + 4 + QK_K);
	if (kind == K16_Q2) {
		*si = acc;
		*sm = _mm256_madd_epi16(w->m16, bs);
	} else {
		__m256i sb = _mm256_madd_epi16(w->sc16, bs);
		*si = _mm256_sub_epi32(acc, _mm256_slli_epi32(sb, kind == K16_Q6 ? 5 : 2));
		*sm = _mm256_setzero_si256();
	}
}

#define Q4K_W(p, w) k32_weights(p, w, 0)
#define Q5K_W(p, w) k32_weights(p, w, 1)
#define Q2K_W(p, w) k16_weights(p, w, K16_Q2)
#define Q3K_W(p, w) k16_weights(p, w, K16_Q3)
#define Q6K_W(p, w) k16_weights(p, w, K16_Q6)
#define Q2K_T(w, x, si, sm) k16_token(w, x, si, sm, K16_Q2)
#define Q3K_T(w, x, si, sm) k16_token(w, x, si, sm, K16_Q3)
#define Q6K_T(w, x, si, sm) k16_token(w, x, si, sm, K16_Q6)
KQ_ROW_TOKENS(q4k_row_tokens, AVX2_INLINE, k32_w_t, Q4K_W, k32_token, sizeof(block_q4_K), 1)
KQ_ROW_TOKENS(q5k_row_tokens, AVX2_INLINE, k32_w_t, Q5K_W, k32_token, sizeof(block_q5_K), 1)
KQ_ROW_TOKENS(q2k_row_tokens, AVX2_INLINE, k16_w_t, Q2K_W, Q2K_T, sizeof(block_q2_K), 1)
KQ_ROW_TOKENS(q3k_row_tokens, AVX2_INLINE, k16_w_t, Q3K_W, Q3K_T, sizeof(block_q3_K), 0)
KQ_ROW_TOKENS(q6k_row_tokens, AVX2_INLINE, k16_w_t, Q6K_W, Q6K_T, sizeof(block_q6_K), 0)

/* dot, matvec and matmat of each K-quant */
KQ_ENTRY(q2_K, avx2, AVX2, q2k_row_tokens, QK_K)
KQ_ENTRY(q3_K, avx2, AVX2, q3k_row_tokens, QK_K)
KQ_ENTRY(q4_K, avx2, AVX2, q4k_row_tokens, QK_K)
KQ_ENTRY(q5_K, avx2, AVX2, q5k_row_tokens, QK_K)
KQ_ENTRY(q6_K, avx2, AVX2, q6k_row_tokens, QK_K)

/* IQ4_XS: 8 sub-blocks of 32, each as an IQ4_NL block (the grid values
 * of its 16 index bytes, low nibbles then high), with a 6-bit scale - 32;
 * pmaddubsw takes |q| and x with q's sign (pairs <= 2 * 127 * 127), then
 * pmaddwd by the sub-block's scale. Exact sums, then kq_k_step (no min). */
typedef struct {
	__m256i q[8];
	__m256i sc; /* the 8 scales as int16, in both halves */
	float d, dmin;
} iq4xs_w_t;

AVX2_INLINE void iq4xs_weights(const uint8_t *wb, iq4xs_w_t *w)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F);
	const __m256i g = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)kq_iq4_grid));
	const block_iq4_xs *k = (const void *)wb;
#pragma GCC unroll 8
	for (int ib = 0; ib < 8; ib++) {
		__m128i q = _mm_loadu_si128((const __m128i *)(k->qs + 16 * ib));
		__m256i u = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), m4);
		w->q[ib] = _mm256_shuffle_epi8(g, u);
	}
	int16_t sc[8];
	uint16_t h = ld_u16(&k->scales_h);
	for (int ib = 0; ib < 8; ib++)
		sc[ib] = (int16_t)((((k->scales_l[ib / 2] >> (4 * (ib % 2))) & 15) |
				    ((h >> (2 * ib)) & 3) << 4) - 32);
	w->sc = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)sc));
	w->d = ld_f16_f16c(wb);
	w->dmin = 0.0f;
}

AVX2_INLINE void iq4xs_token(const iq4xs_w_t *w, const uint8_t *x, __m256i *si, __m256i *sm)
{
	const uint8_t *xq = x + 4;
	__m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 8
	for (int ib = 0; ib < 8; ib++) {
		__m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w->q[ib], w->q[ib]),
						 _mm256_sign_epi8(ld256(xq + 32 * ib), w->q[ib]));
		acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_shuffle_epi8(w->sc, BCAST16(ib))));
	}
	*si = acc;
	*sm = _mm256_setzero_si256();
}

KQ_ROW_TOKENS(iq4xs_row_tokens, AVX2_INLINE, iq4xs_w_t, iq4xs_weights, iq4xs_token, sizeof(block_iq4_xs), 0)
KQ_ENTRY(iq4_xs, avx2, AVX2, iq4xs_row_tokens, QK_K)

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

/* ---- Q5_0, Q4_1, Q5_1 (blocks of 32 against Q8_0 / Q8_1): one row x a run of
 * tokens, as the K-quants above: a block's weight quants u (0..15 or
 * 0..31, pmaddubsw never saturates) are unpacked once for every token of
 * the run, and 4 tokens share one transposed reduction of their sums. The
 * float step per block is the generic's (dot_legacy in kquants.c):
 *   Q5_0:        acc + (float)sumi * (dw * dx),  sumi = (u . x) - 16 (1 . x)
 *   Q4_1 / Q5_1: acc + (float)(u . x) * (dw * dx), summ + m * s_x (Q8_1's s),
 *                the result acc + summ
 * each product rounded before its add; the dot product (one token) and
 * the gemm run the same code. */
typedef struct {
	__m256i u;
	float d, m;
} leg_w_t;

/* IQ4_NL (against Q8_0) runs the same code: its u are the signed grid
 * values (pshufb of the 16-byte grid by the indices), multiplied by
 * pmaddubsw as |u| times x with u's sign (|u| <= 127: pairs <= 32258). */
enum { LEG_Q5_0, LEG_Q4_1, LEG_Q5_1, LEG_IQ4_NL };
#define LEG_Q8_0_ACT(kind) ((kind) == LEG_Q5_0 || (kind) == LEG_IQ4_NL)

/* ggml's IQ4 grid in both 128-bit halves, for pshufb */
AVX2_INLINE __m256i iq4_grid256(void)
{
	return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)kq_iq4_grid));
}

AVX2_INLINE void leg_weights(const uint8_t *wb, leg_w_t *w, const int kind)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F);
	const size_t qoff = kind == LEG_Q5_0 ? 6 : kind == LEG_Q4_1 ? 4 : kind == LEG_Q5_1 ? 8 : 2;
	__m128i q = _mm_loadu_si128((const __m128i *)(wb + qoff));
	w->u = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), m4);
	if (kind == LEG_Q5_0 || kind == LEG_Q5_1)
		w->u = _mm256_or_si256(w->u, bits_to_0x10(ld_u32(wb + (kind == LEG_Q5_0 ? 2 : 4))));
	if (kind == LEG_IQ4_NL)
		w->u = _mm256_shuffle_epi8(iq4_grid256(), w->u);
	if (LEG_Q8_0_ACT(kind)) {
		w->d = ld_f16_f16c(wb);
		w->m = 0.0f;
	} else {
		ld_f16x2_f16c(wb, &w->d, &w->m);
	}
}

/* One token's block: the int32 lanes of sumi (Q5_0: with the - 16 sum x
 * folded in). Q5_0's activations are Q8_0 (quants at +2), Q4_1's and
 * Q5_1's are Q8_1 (quants at +4; their min term comes from the block's s). */
AVX2_INLINE __m256i leg_token(const leg_w_t *w, const uint8_t *x, const int kind)
{
	const __m256i one8 = _mm256_set1_epi8(1), one16 = _mm256_set1_epi16(1);
	__m256i xv = ld256(x + (LEG_Q8_0_ACT(kind) ? 2 : 4));
	if (kind == LEG_IQ4_NL)
		return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w->u, w->u),
							      _mm256_sign_epi8(xv, w->u)), one16);
	__m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(w->u, xv), one16);
	if (kind != LEG_Q5_0)
		return s;
	__m256i sx = _mm256_madd_epi16(_mm256_maddubs_epi16(one8, xv), one16);
	return _mm256_sub_epi32(s, _mm256_slli_epi32(sx, 4));
}

/* dot_legacy's float steps: acc + (float)sumi * (dw * dx), and for Q4_1 /
 * Q5_1 summ + m * s_x, each product rounded; the result is acc + summ. */
AVX2_INLINE void leg_step(float *acc, float *summ, const leg_w_t *w, const uint8_t *x,
			  int32_t sumi, const int kind)
{
	float dd = w->d * ld_f16_f16c(x);
	float p = (float)sumi * dd;
	FP_ROUNDED(p);
	*acc = *acc + p;
	if (!LEG_Q8_0_ACT(kind)) {
		float pm = w->m * ld_f16_f16c(x + 2);
		FP_ROUNDED(pm);
		*summ = *summ + pm;
	}
}

AVX2_INLINE void leg_row_tokens(const uint8_t *w, const uint8_t *X, size_t xs, int64_t nb,
				int nt, float *out, int64_t os, const int kind)
{
	const size_t bb = kind == LEG_Q5_0 ? sizeof(block_q5_0)
			  : kind == LEG_Q4_1 ? sizeof(block_q4_1)
			  : kind == LEG_Q5_1 ? sizeof(block_q5_1) : sizeof(block_iq4_nl);
	const size_t xbb = LEG_Q8_0_ACT(kind) ? sizeof(block_q8_0) : sizeof(block_q8_1);
	float acc[KQ_TOK], summ[KQ_TOK];
	for (int k = 0; k < nt; k++)
		acc[k] = summ[k] = 0.0f;
	for (int64_t b = 0; b < nb; b++) {
		leg_w_t wt;
		leg_weights(w + (size_t)b * bb, &wt, kind);
		const uint8_t *xb = X + (size_t)b * xbb;
		int k = 0;
		for (; k + 4 <= nt; k += 4) {
			__m256i si[4];
#pragma GCC unroll 4
			for (int j = 0; j < 4; j++)
				si[j] = leg_token(&wt, xb + (size_t)(k + j) * xs, kind);
			int32_t vi[4];
			_mm_storeu_si128((__m128i *)vi, hsum4x256_epi32(si[0], si[1], si[2], si[3]));
#pragma GCC unroll 4
			for (int j = 0; j < 4; j++)
				leg_step(&acc[k + j], &summ[k + j], &wt, xb + (size_t)(k + j) * xs,
					 vi[j], kind);
		}
		for (; k < nt; k++)
			leg_step(&acc[k], &summ[k], &wt, xb + (size_t)k * xs,
				 hsum256_epi32(leg_token(&wt, xb + (size_t)k * xs, kind)), kind);
	}
	for (int k = 0; k < nt; k++)
		out[k * os] = acc[k] + summ[k];
}

/* dot, matvec and matmat of each legacy type; Q5_0 has no matmat: its
 * gemm is the Q8_0 one (gemm.c quant_type, kernels_impl.h q8_form) */
#define Q4_1_ROWS(...) leg_row_tokens(__VA_ARGS__, LEG_Q4_1)
#define Q5_0_ROWS(...) leg_row_tokens(__VA_ARGS__, LEG_Q5_0)
#define Q5_1_ROWS(...) leg_row_tokens(__VA_ARGS__, LEG_Q5_1)
#define IQ4_NL_ROWS(...) leg_row_tokens(__VA_ARGS__, LEG_IQ4_NL)
KQ_ENTRY_DOT(q5_0, avx2, AVX2, Q5_0_ROWS, QK)
KQ_ENTRY(q4_1, avx2, AVX2, Q4_1_ROWS, QK)
KQ_ENTRY(q5_1, avx2, AVX2, Q5_1_ROWS, QK)
KQ_ENTRY(iq4_nl, avx2, AVX2, IQ4_NL_ROWS, QK)
#undef Q4_1_ROWS
#undef Q5_0_ROWS
#undef Q5_1_ROWS
#undef IQ4_NL_ROWS
#endif
