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

/* Pins an integer accumulator's add chain in program order: without it
 * GCC reassociated a token's 8 adds into a tree whose partial sums went
 * through the stack (gemm_avx2.c has the same). */
#define KEEP(v) __asm__("" : "+x"(v))

AVX2_INLINE __m256i ld256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* Two adjacent halves at p as floats (vcvtph2ps: the bits of
 * fp16_to_f32_inline, without its branches). */
AVX2_INLINE void f16x2(const uint8_t *p, float *a, float *b)
{
	__m128 v = _mm_cvtph_ps(_mm_cvtsi32_si128((int)ld_u32(p)));
	*a = _mm_cvtss_f32(v);
	*b = _mm_cvtss_f32(_mm_shuffle_ps(v, v, 1));
}

AVX2_INLINE float f16x1(const uint8_t *p)
{
	return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(ld_u16(p))));
}

/* The sums of 4 vectors' int32 lanes, in one vector (exact; the order of
 * integer adds does not matter). */
AVX2_INLINE __m128i hsum4_i32(__m256i a, __m256i b, __m256i c, __m256i d)
{
	__m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
	return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/* ---- Q4_K and Q6_K: one row x a run of tokens ----
 *
 * Per super-block of a row, the weight side is decoded once (nibbles,
 * 6-bit scales and mins, the scale vectors pmaddwd wants) and used for
 * every token of the run: the prefill gemm (kq_matmat_*_avx2: a row
 * against up to KQ_TOK tokens) and the decode dot product (one token) run
 * the same code, so a gemm output is the bits of the matvec (and of the
 * generic: the sums are exact, the float step is kq_k_step, super-blocks
 * in ascending order). */
#define KQ_TOK 64 /* tokens per run: their float accumulators on the stack */

/* pshufb patterns broadcasting int16 lane s (0..7) of each 128-bit half */
#define BCAST16(s) _mm256_set1_epi16((short)(0x0202 * (s) + 0x0100))

/* Q4_K / Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins. */
typedef struct {
	__m256i lo[4], hi[4]; /* sub-blocks 2c and 2c + 1: quants 0..15 (Q5_K 0..31) */
	__m256i sc;           /* the 8 scales as int16, in both halves */
	__m256i mdup;         /* m0 m0 m1 m1 .. m7 m7 (int16), against bsums */
	float d, dmin;
} k32_w_t;

/* The 12 scale bytes as 8 scales and 8 mins (kq_scale_min_k4) four at a
 * time in 32-bit words: for s < 4 the low 6 bits of bytes s and s + 4; for
 * s >= 4 the nibbles of byte s + 4 with the top 2 bits of bytes s - 4 and
 * s as bits 4-5. Then the nibbles of qs (Q5_K: with the fifth bit of qh,
 * (qh[l] >> s) & 1 for sub-block s, as bit 4). */
AVX2_INLINE void k32_weights(const uint8_t *wb, k32_w_t *w, const int five)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
	uint32_t a = ld_u32(wb + 4), b = ld_u32(wb + 8), c = ld_u32(wb + 12);
	uint32_t sc_lo = a & 0x3F3F3F3Fu, m_lo = b & 0x3F3F3F3Fu;
	uint32_t sc_hi = (c & 0x0F0F0F0Fu) | ((a >> 2) & 0x30303030u);
	uint32_t m_hi = ((c >> 4) & 0x0F0F0F0Fu) | ((b >> 2) & 0x30303030u);
	__m128i sc = _mm_cvtepu8_epi16(_mm_setr_epi32((int)sc_lo, (int)sc_hi, 0, 0));
	__m128i mn = _mm_cvtepu8_epi16(_mm_setr_epi32((int)m_lo, (int)m_hi, 0, 0));
	w->sc = _mm256_broadcastsi128_si256(sc);
	w->mdup = _mm256_set_m128i(_mm_unpackhi_epi16(mn, mn), _mm_unpacklo_epi16(mn, mn));
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
	f16x2(wb, &w->d, &w->dmin);
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
		w->d = f16x1((const uint8_t *)&k->d);
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
			w->d = f16x1((const uint8_t *)&k->d);
			w->dmin = 0.0f;
		} else {
			const block_q2_K *k = (const void *)wb;
			__m128i s = _mm_loadu_si128((const __m128i *)k->scales);
			sc8 = _mm_and_si128(s, _mm_set1_epi8(0x0F));
			w->m16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4),
								    _mm_set1_epi8(0x0F)));
			f16x2((const uint8_t *)&k->d, &w->d, &w->dmin);
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

/* Row w (nb super-blocks of bb bytes) against tokens X + k xs, k < nt
 * (<= KQ_TOK): out[k * os] = the dot product. Tokens 4 at a time share
 * one transposed reduction of their sums. */
#define KQ_ROW_TOKENS(name, W_T, WEIGHTS, TOKEN, bb, has_min)                          \
	AVX2_INLINE void name(const uint8_t *w, const uint8_t *X, size_t xs, int64_t nb, \
			      int nt, float *out, int64_t os)                         \
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
				_mm_storeu_si128((__m128i *)vi, hsum4_i32(si[0], si[1], si[2], si[3])); \
				_mm_storeu_si128((__m128i *)vm, hsum4_i32(sm[0], sm[1], sm[2], sm[3])); \
				_Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)   \
					acc[k + j] = kq_k_step(acc[k + j], ld_f32(xb + (size_t)(k + j) * xs), \
							       wt.d, wt.dmin, vi[j], vm[j], has_min); \
			}                                                             \
			for (; k < nt; k++) {                                         \
				__m256i si, sm;                                       \
				TOKEN(&wt, xb + (size_t)k * xs, &si, &sm);            \
				acc[k] = kq_k_step(acc[k], ld_f32(xb + (size_t)k * xs), wt.d, \
						   wt.dmin, hsum_i32(si), has_min ? hsum_i32(sm) : 0, \
						   has_min);                          \
			}                                                             \
		}                                                                     \
		for (int k = 0; k < nt; k++)                                          \
			out[k * os] = acc[k];                                         \
	}

#define Q4K_W(p, w) k32_weights(p, w, 0)
#define Q5K_W(p, w) k32_weights(p, w, 1)
#define Q2K_W(p, w) k16_weights(p, w, K16_Q2)
#define Q3K_W(p, w) k16_weights(p, w, K16_Q3)
#define Q6K_W(p, w) k16_weights(p, w, K16_Q6)
#define Q2K_T(w, x, si, sm) k16_token(w, x, si, sm, K16_Q2)
#define Q3K_T(w, x, si, sm) k16_token(w, x, si, sm, K16_Q3)
#define Q6K_T(w, x, si, sm) k16_token(w, x, si, sm, K16_Q6)
KQ_ROW_TOKENS(q4k_row_tokens, k32_w_t, Q4K_W, k32_token, sizeof(block_q4_K), 1)
KQ_ROW_TOKENS(q5k_row_tokens, k32_w_t, Q5K_W, k32_token, sizeof(block_q5_K), 1)
KQ_ROW_TOKENS(q2k_row_tokens, k16_w_t, Q2K_W, Q2K_T, sizeof(block_q2_K), 1)
KQ_ROW_TOKENS(q3k_row_tokens, k16_w_t, Q3K_W, Q3K_T, sizeof(block_q3_K), 0)
KQ_ROW_TOKENS(q6k_row_tokens, k16_w_t, Q6K_W, Q6K_T, sizeof(block_q6_K), 0)

/* The dot product (one token) and matmat_fn (kernels_impl.h: rows r0..r1-1
 * x ntok tokens of Q8_K activations, runs of KQ_TOK tokens per row) of
 * each K-quant. */
#define KQ_ENTRY(lower, rowfn)                                                        \
	float AVX2 kq_dot_##lower##_avx2(const void *w, const void *xa, int64_t n)      \
	{                                                                             \
		float out;                                                            \
		rowfn(w, xa, 0, n / QK_K, 1, &out, 1);                                \
		return out;                                                           \
	}                                                                             \
	void AVX2 kq_matmat_##lower##_avx2(const void *W, size_t rb, const void *X,    \
					   size_t xs, float *Y, int64_t ys, int64_t n, \
					   int64_t r0, int64_t r1, int64_t ntok)       \
	{                                                                             \
		for (int64_t k0 = 0; k0 < ntok; k0 += KQ_TOK) {                       \
			int nt = ntok - k0 < KQ_TOK ? (int)(ntok - k0) : KQ_TOK;      \
			for (int64_t r = r0; r < r1; r++)                             \
				rowfn((const uint8_t *)W + (size_t)r * rb,            \
				      (const uint8_t *)X + (size_t)k0 * xs, xs, n / QK_K, \
				      nt, Y + k0 * ys + r, ys);                       \
		}                                                                     \
	}
KQ_ENTRY(q2_K, q2k_row_tokens)
KQ_ENTRY(q3_K, q3k_row_tokens)
KQ_ENTRY(q4_K, q4k_row_tokens)
KQ_ENTRY(q5_K, q5k_row_tokens)
KQ_ENTRY(q6_K, q6k_row_tokens)

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
	w->d = f16x1(wb);
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

KQ_ROW_TOKENS(iq4xs_row_tokens, iq4xs_w_t, iq4xs_weights, iq4xs_token, sizeof(block_iq4_xs), 0)
KQ_ENTRY(iq4_xs, iq4xs_row_tokens)

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
		w->d = f16x1(wb);
		w->m = 0.0f;
	} else {
		f16x2(wb, &w->d, &w->m);
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
	float dd = w->d * f16x1(x);
	float p = (float)sumi * dd;
	FP_ROUNDED(p);
	*acc = *acc + p;
	if (!LEG_Q8_0_ACT(kind)) {
		float pm = w->m * f16x1(x + 2);
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
			_mm_storeu_si128((__m128i *)vi, hsum4_i32(si[0], si[1], si[2], si[3]));
#pragma GCC unroll 4
			for (int j = 0; j < 4; j++)
				leg_step(&acc[k + j], &summ[k + j], &wt, xb + (size_t)(k + j) * xs,
					 vi[j], kind);
		}
		for (; k < nt; k++)
			leg_step(&acc[k], &summ[k], &wt, xb + (size_t)k * xs,
				 hsum_i32(leg_token(&wt, xb + (size_t)k * xs, kind)), kind);
	}
	for (int k = 0; k < nt; k++)
		out[k * os] = acc[k] + summ[k];
}

#define LEG_DOT(lower, kind)                                                          \
	float AVX2 kq_dot_##lower##_avx2(const void *w, const void *xa, int64_t n)      \
	{                                                                             \
		float out;                                                            \
		leg_row_tokens(w, xa, 0, n / QK, 1, &out, 1, kind);                   \
		return out;                                                           \
	}
#define LEG_ENTRY(lower, kind)                                                        \
	LEG_DOT(lower, kind)                                                          \
	void AVX2 kq_matmat_##lower##_avx2(const void *W, size_t rb, const void *X,    \
					   size_t xs, float *Y, int64_t ys, int64_t n, \
					   int64_t r0, int64_t r1, int64_t ntok)       \
	{                                                                             \
		for (int64_t k0 = 0; k0 < ntok; k0 += KQ_TOK) {                       \
			int nt = ntok - k0 < KQ_TOK ? (int)(ntok - k0) : KQ_TOK;      \
			for (int64_t r = r0; r < r1; r++)                             \
				leg_row_tokens((const uint8_t *)W + (size_t)r * rb,   \
					       (const uint8_t *)X + (size_t)k0 * xs, xs, \
					       n / QK, nt, Y + k0 * ys + r, ys, kind); \
		}                                                                     \
	}
/* Q5_0's gemm is the Q8_0 one (gemm.c quant_type, kernels_impl.h q8_form) */
LEG_DOT(q5_0, LEG_Q5_0)
LEG_ENTRY(q4_1, LEG_Q4_1)
LEG_ENTRY(q5_1, LEG_Q5_1)
LEG_ENTRY(iq4_nl, LEG_IQ4_NL)

#endif

#if defined(__x86_64__)
/* The Q8_K activation quantizer (kquants.c quantize_q8_K), the same bytes:
 * amax over the block with NaNs never winning (vmaxps returns its second
 * operand, the running max, when the first is a NaN), the first element
 * of that magnitude as max, q = the clamp of x * (-127 / max) to
 * [-128, 127] (a NaN to -128, as fmaxf), rounded to nearest even
 * (vcvtps2dq: lrintf's rounding), and the sums of 16. */
AVX2_INLINE float hmax_ps(__m256 v)
{
	__m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	m = _mm_max_ps(m, _mm_movehl_ps(m, m));
	m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
	return _mm_cvtss_f32(m);
}

void AVX2 kq_quantize_q8_K_avx2(const float *x, void *yv, int64_t n)
{
	const __m256 sign = _mm256_set1_ps(-0.0f), lo = _mm256_set1_ps(-128.0f),
		     hi = _mm256_set1_ps(127.0f);
	for (int64_t b = 0; b < n / QK_K; b++) {
		const float *xb = x + b * QK_K;
		uint8_t *y = (uint8_t *)yv + (size_t)b * sizeof(block_q8_K);
		__m256 am = _mm256_setzero_ps();
		for (int j = 0; j < QK_K; j += 8)
			am = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(xb + j)), am);
		const float amax = hmax_ps(am);
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
			       (uint16_t)(int16_t)hsum_i32(_mm256_add_epi32(q0, q1)));
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
#endif
