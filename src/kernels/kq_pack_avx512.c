/* kq_pack: Q4_K, Q5_K and Q6_K read from their packed groups (kquants.h
 * KQ_P16_*) at the
 * AVX-512 levels; compiled a second time with VNNI as
 * kq_pack_avx512vnni.c (avx512_lanes.h). The 16 rows of a group are the
 * 16 dword lanes of a register:
 *   per sub-block s of 32 elements, 8 vpdpbusd (4-element groups of the
 *   16 rows' nibbles against one broadcast group of the activations) give
 *   the 16 rows' exact sub-block sums; times the 16 scales (vpmulld) they
 *   add up to sumi; the mins against the activations' sub-block sums give
 *   summ (vpmaddwd, two sub-blocks a step);
 *   then kq_k_step's float step in 16 lanes at once: each lane the same
 *   IEEE operations in the same order as the scalar step, so every output
 *   is kq_dot_generic's bits.
 * The sums are exact: a sub-block sum is at most 32 * 15 * 128 in
 * magnitude, times a scale < 64, and 8 of them fit int32; a pair of mins
 * times sub-block sums (each <= 32 * 128) fits vpmaddwd's int32.
 * Q6_K the same with sub-blocks of 16, its 6-bit quants made unsigned
 * (u = q + 32: the - 32 sum x of a sub-block is its sum's start value)
 * and no mins.
 * Without VNNI, dpbusd512_u7 is vpmaddubsw + vpmaddwd (quants < 128: no
 * saturation). */
#include "kernels/kernels_impl.h"
#include "kernels/kquants.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include "kernels/avx512_lanes.h"

#define KT 8 /* tokens per pass of the packed gemm */

/* Software prefetch distance of the matvecs, in super-blocks of a group
 * ahead of the one being read. A packed super-block is read as two or
 * three interleaved ascending streams (Q6_K: QL, QH and the scales; Q5_K:
 * QS and QH), which the hardware prefetchers alone follow at about half
 * of one core's read bandwidth; prefetching each whole super-block a few
 * ahead into L1 brings the packed matvecs from memory to the row forms'
 * speed or past it, and Q4_K (one stream after its scales) gains too
 * (2, 3 and 4 ahead were close, the L2 and L3 hints slower, and one
 * burst per super-block faster than prefetches spread over its
 * sub-blocks, which cost less in cache; the burst is a loop on purpose:
 * fully unrolled it too cost less in cache and lost from memory;
 * doc/measurements.md). The stream runs on across groups (they are
 * contiguous) and past the end of the range by KQ_PF_SB super-blocks (a
 * prefetch never faults; the bytes there are usually the next chunk).
 * The gemm, which does up to KT tokens' work per byte read, has none. */
#ifndef KQ_PF_SB
#define KQ_PF_SB 3
#endif

/* prefetch the bytes [p, p + n): every line they touch but a partial last
 * one, which the next span's first line covers */
AVX512_INLINE void prefetch_span(const uint8_t *p, size_t n)
{
	for (size_t o = 0; o < n; o += 64)
		_mm_prefetch((const char *)p + o, _MM_HINT_T0);
}

/* An activation super-block's sub-block pair sums as vpmaddwd operands:
 * pair p = (bsum(2p), bsum(2p + 1)) as int16 (|bsum| <= 32 * 128), where
 * bsum(s) = bsums[2s] + bsums[2s + 1] (Q8_K keeps sums per 16). */
AVX512_INLINE void bsum_pairs(const uint8_t *xb, int32_t *pr)
{
	/* bsum(s) in dword s, then packed to int16 per 128-bit lane: dwords
	 * 0, 1 hold pairs 0, 1 and dwords 4, 5 pairs 2, 3 */
	__m256i s32 = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(xb + 4 + QK_K)),
					_mm256_set1_epi16(1));
	int32_t v[8];
	_mm256_storeu_si256((__m256i *)v, _mm256_packs_epi32(s32, s32));
	pr[0] = v[0];
	pr[1] = v[1];
	pr[2] = v[4];
	pr[3] = v[5];
}

/* The 8 weight vectors of sub-block s: w[2u] the low nibbles of vector
 * 4s + u (group 2u), w[2u + 1] the high (group 2u + 1); Q5_K (five) ORs
 * in bit 4 from bit g of its QH vector (a 16-bit shift moves each byte's
 * bit g to its bit 4; what crosses into the other byte is masked off). */
AVX512_INLINE void sub_weights(const uint8_t *h, int s, __m512i *w, const int five)
{
	const __m512i m4 = _mm512_set1_epi8(0x0F), b4 = _mm512_set1_epi8(0x10);
#pragma GCC unroll 4
	for (int u = 0; u < 4; u++) {
		__m512i z = _mm512_loadu_si512((const void *)(h + KQ_P16_QS + 64 * (4 * s + u)));
		w[2 * u] = _mm512_and_si512(z, m4);
		w[2 * u + 1] = _mm512_and_si512(_mm512_srli_epi16(z, 4), m4);
	}
	if (five) {
		__m512i hb = _mm512_loadu_si512((const void *)(h + KQ_P16_Q5K_QH + 64 * s));
		w[0] = _mm512_or_si512(w[0], _mm512_and_si512(_mm512_slli_epi16(hb, 4), b4));
		w[1] = _mm512_or_si512(w[1], _mm512_and_si512(_mm512_slli_epi16(hb, 3), b4));
		w[2] = _mm512_or_si512(w[2], _mm512_and_si512(_mm512_slli_epi16(hb, 2), b4));
		w[3] = _mm512_or_si512(w[3], _mm512_and_si512(_mm512_slli_epi16(hb, 1), b4));
		w[4] = _mm512_or_si512(w[4], _mm512_and_si512(hb, b4));
		w[5] = _mm512_or_si512(w[5], _mm512_and_si512(_mm512_srli_epi16(hb, 1), b4));
		w[6] = _mm512_or_si512(w[6], _mm512_and_si512(_mm512_srli_epi16(hb, 2), b4));
		w[7] = _mm512_or_si512(w[7], _mm512_and_si512(_mm512_srli_epi16(hb, 3), b4));
	}
}

/* sub-block s of one token: the 16 rows' exact sums, times their scales */
AVX512_INLINE __m512i sub_dot(const __m512i *w, const uint8_t *xq, __m512i sc)
{
	__m512i acc = _mm512_setzero_si512();
#pragma GCC unroll 8
	for (int g = 0; g < 8; g++)
		acc = dpbusd512_u7(acc, w[g], _mm512_set1_epi32((int)ld_u32(xq + 4 * g)));
	return _mm512_mullo_epi32(acc, sc);
}

/* A super-block's per-row values, the same for every token: the mins
 * paired as int16 (m[p]: sub-blocks 2p, 2p + 1), d and dmin as floats */
typedef struct {
	__m512i m[4];
	__m512 d, dmin;
} k_rows_t;

AVX512_INLINE void k_rows(const uint8_t *h, k_rows_t *r)
{
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++)
		r->m[p] = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(h + KQ_P16_MN + 32 * p)));
	r->d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + KQ_P16_D)));
	r->dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + KQ_P16_DMIN)));
}

/* summ of the 16 rows for one token (xb: its Q8_K super-block) */
AVX512_INLINE __m512i mins_dot(const k_rows_t *r, const uint8_t *xb)
{
	int32_t pr[4];
	bsum_pairs(xb, pr);
	__m512i sm = _mm512_setzero_si512();
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++)
		sm = _mm512_add_epi32(sm, _mm512_madd_epi16(r->m[p], _mm512_set1_epi32(pr[p])));
	return sm;
}

/* kq_k_step in 16 lanes: acc + ((dx d) sumi - (dx dmin) summ), each
 * product rounded */
AVX512_INLINE __m512 k_step16(__m512 acc, float dx, const k_rows_t *r, __m512i si, __m512i sm)
{
	const __m512 vx = _mm512_set1_ps(dx);
	__m512 a = _mm512_mul_ps(vx, r->d);
	VEC_ROUNDED(a);
	__m512 p = _mm512_mul_ps(a, _mm512_cvtepi32_ps(si));
	VEC_ROUNDED(p);
	__m512 am = _mm512_mul_ps(vx, r->dmin);
	VEC_ROUNDED(am);
	__m512 pm = _mm512_mul_ps(am, _mm512_cvtepi32_ps(sm));
	VEC_ROUNDED(pm);
	p = _mm512_sub_ps(p, pm);
	VEC_ROUNDED(p);
	return _mm512_add_ps(acc, p);
}

AVX512_INLINE __m512i sub_scales(const uint8_t *h, int s)
{
	return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(h + KQ_P16_SC + 16 * s)));
}

/* Q4_K / Q5_K (five) groups @ one token */
AVX512_INLINE void matvec_q45(const void *P, const void *xa, float *y, int64_t n, int64_t ng,
			      const int five)
{
	const int64_t nsb = n / QK_K;
	const size_t bb = five ? KQ_P16_Q5K_BYTES : KQ_P16_Q4K_BYTES;
	const uint8_t *h = P;
	/* the range's first KQ_PF_SB super-blocks at once, then each
	 * super-block KQ_PF_SB ahead as the loop reaches it: every line is
	 * asked for once, and a chunk that starts a new stream (a wave's
	 * first, a stolen one) does not wait for the hardware prefetcher */
	prefetch_span(h, KQ_PF_SB * bb);
	for (int64_t g = 0; g < ng; g++) {
		__m512 acc = _mm512_setzero_ps();
		for (int64_t b = 0; b < nsb; b++, h += bb) {
			const uint8_t *xb = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K);
			prefetch_span(h + KQ_PF_SB * bb, bb);
			__m512i si = _mm512_setzero_si512();
#pragma GCC unroll 2
			for (int s = 0; s < 8; s++) {
				__m512i w[8];
				sub_weights(h, s, w, five);
				si = _mm512_add_epi32(si, sub_dot(w, xb + 4 + 32 * s, sub_scales(h, s)));
			}
			k_rows_t kr;
			k_rows(h, &kr);
			acc = k_step16(acc, ld_f32(xb), &kr, si, mins_dot(&kr, xb));
		}
		_mm512_storeu_ps(y + 16 * g, acc);
	}
}

void AVX512 AVX512_SYM(matvec_p16_q4_K_avx512)(const void *P, const void *xa, float *y,
						  int64_t n, int64_t ng)
{
	matvec_q45(P, xa, y, n, ng, 0);
}

void AVX512 AVX512_SYM(matvec_p16_q5_K_avx512)(const void *P, const void *xa, float *y,
						  int64_t n, int64_t ng)
{
	matvec_q45(P, xa, y, n, ng, 1);
}

/* nt (<= KT) tokens at X (xs apart) against one Q4_K / Q5_K (five) group:
 * Y[k ys + i] */
AVX512_INLINE void group_tokens(const uint8_t *G, const uint8_t *X, size_t xs, float *Y,
				int64_t ys, int64_t nsb, const int nt, const int five)
{
	__m512 acc[KT];
	for (int k = 0; k < nt; k++)
		acc[k] = _mm512_setzero_ps();
	const uint8_t *h = G;
	const size_t bb = five ? KQ_P16_Q5K_BYTES : KQ_P16_Q4K_BYTES;
	for (int64_t b = 0; b < nsb; b++, h += bb) {
		const size_t xo = (size_t)b * sizeof(block_q8_K);
		__m512i si[KT];
		for (int k = 0; k < nt; k++)
			si[k] = _mm512_setzero_si512();
		for (int s = 0; s < 8; s++) {
			__m512i w[8];
			sub_weights(h, s, w, five);
			__m512i sc = sub_scales(h, s);
#pragma GCC unroll 8
			for (int k = 0; k < nt; k++)
				si[k] = _mm512_add_epi32(si[k], sub_dot(w, X + (size_t)k * xs + xo + 4 + 32 * s, sc));
		}
		k_rows_t kr;
		k_rows(h, &kr);
		for (int k = 0; k < nt; k++) {
			const uint8_t *xb = X + (size_t)k * xs + xo;
			acc[k] = k_step16(acc[k], ld_f32(xb), &kr, si[k], mins_dot(&kr, xb));
		}
	}
	for (int k = 0; k < nt; k++)
		_mm512_storeu_ps(Y + k * ys, acc[k]);
}

#define Q4K_TOKENS(G, X, xs, Y, ys, nsb, nt) group_tokens(G, X, xs, Y, ys, nsb, nt, 0)
#define Q5K_TOKENS(G, X, xs, Y, ys, nsb, nt) group_tokens(G, X, xs, Y, ys, nsb, nt, 1)

/* ---- Q6_K ---- */

/* The 4 weight vectors of sub-block s (groups 0..3 of 4 elements, 16 rows
 * each): low nibbles from the two QL vectors, the high 2 bits from QH. */
AVX512_INLINE void q6_sub_weights(const uint8_t *h, int s, __m512i *w)
{
	const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
	__m512i z0 = _mm512_loadu_si512((const void *)(h + KQ_P16_Q6K_QL + 128 * s));
	__m512i z1 = _mm512_loadu_si512((const void *)(h + KQ_P16_Q6K_QL + 128 * s + 64));
	__m512i hb = _mm512_loadu_si512((const void *)(h + KQ_P16_Q6K_QH + 64 * s));
	w[0] = _mm512_or_si512(_mm512_and_si512(z0, m4), _mm512_and_si512(_mm512_slli_epi16(hb, 4), m30));
	w[1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(z0, 4), m4),
			       _mm512_and_si512(_mm512_slli_epi16(hb, 2), m30));
	w[2] = _mm512_or_si512(_mm512_and_si512(z1, m4), _mm512_and_si512(hb, m30));
	w[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(z1, 4), m4),
			       _mm512_and_si512(_mm512_srli_epi16(hb, 2), m30));
}

/* sub-block s of one token (xb: its Q8_K super-block): the 16 rows' exact
 * sums of (u - 32) x, times their scales */
AVX512_INLINE __m512i q6_sub_dot(const __m512i *w, const uint8_t *xb, int s, __m512i sc)
{
	const uint8_t *xq = xb + 4 + 16 * s;
	__m512i acc = _mm512_set1_epi32(-32 * (int16_t)ld_u16(xb + 4 + QK_K + 2 * s));
#pragma GCC unroll 4
	for (int g = 0; g < 4; g++)
		acc = dpbusd512_u7(acc, w[g], _mm512_set1_epi32((int)ld_u32(xq + 4 * g)));
	return _mm512_mullo_epi32(acc, sc);
}

AVX512_INLINE __m512i q6_scales(const uint8_t *h, int s)
{
	return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(h + KQ_P16_Q6K_SC + 16 * s)));
}

/* kq_k_step without the min term in 16 lanes: acc + (dx d) sumi */
AVX512_INLINE __m512 q6_step16(__m512 acc, float dx, const uint8_t *h, __m512i si)
{
	__m512 a = _mm512_mul_ps(_mm512_set1_ps(dx),
				 _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + KQ_P16_Q6K_D))));
	VEC_ROUNDED(a);
	__m512 p = _mm512_mul_ps(a, _mm512_cvtepi32_ps(si));
	VEC_ROUNDED(p);
	return _mm512_add_ps(acc, p);
}

void AVX512 AVX512_SYM(matvec_p16_q6_K_avx512)(const void *P, const void *xa, float *y,
						  int64_t n, int64_t ng)
{
	const int64_t nsb = n / QK_K;
	const uint8_t *h = P;
	prefetch_span(h, KQ_PF_SB * KQ_P16_Q6K_BYTES); /* as matvec_q45 */
	for (int64_t g = 0; g < ng; g++) {
		__m512 acc = _mm512_setzero_ps();
		for (int64_t b = 0; b < nsb; b++, h += KQ_P16_Q6K_BYTES) {
			const uint8_t *xb = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K);
			prefetch_span(h + KQ_PF_SB * KQ_P16_Q6K_BYTES, KQ_P16_Q6K_BYTES);
			__m512i si = _mm512_setzero_si512();
#pragma GCC unroll 2
			for (int s = 0; s < 16; s++) {
				__m512i w[4];
				q6_sub_weights(h, s, w);
				si = _mm512_add_epi32(si, q6_sub_dot(w, xb, s, q6_scales(h, s)));
			}
			acc = q6_step16(acc, ld_f32(xb), h, si);
		}
		_mm512_storeu_ps(y + 16 * g, acc);
	}
}

AVX512_INLINE void q6_group_tokens(const uint8_t *G, const uint8_t *X, size_t xs, float *Y,
				   int64_t ys, int64_t nsb, const int nt)
{
	__m512 acc[KT];
	for (int k = 0; k < nt; k++)
		acc[k] = _mm512_setzero_ps();
	const uint8_t *h = G;
	for (int64_t b = 0; b < nsb; b++, h += KQ_P16_Q6K_BYTES) {
		const size_t xo = (size_t)b * sizeof(block_q8_K);
		__m512i si[KT];
		for (int k = 0; k < nt; k++)
			si[k] = _mm512_setzero_si512();
		for (int s = 0; s < 16; s++) {
			__m512i w[4];
			q6_sub_weights(h, s, w);
			__m512i sc = q6_scales(h, s);
#pragma GCC unroll 8
			for (int k = 0; k < nt; k++)
				si[k] = _mm512_add_epi32(si[k], q6_sub_dot(w, X + (size_t)k * xs + xo, s, sc));
		}
		for (int k = 0; k < nt; k++)
			acc[k] = q6_step16(acc[k], ld_f32(X + (size_t)k * xs + xo), h, si[k]);
	}
	for (int k = 0; k < nt; k++)
		_mm512_storeu_ps(Y + k * ys, acc[k]);
}

/* The packed gemms (kquants.h KQ_P16_MATMAT_PASSES; fn: the group kernel,
 * gb: a super-block's bytes in a group) */
#define MATMAT_P16(name, fn, gb)                                                       \
	void AVX512 AVX512_SYM(name)(const void *P, const void *X_, size_t xs, float *Y, \
				     int64_t ys, int64_t n, int64_t ng, int64_t ntok) \
	KQ_P16_MATMAT_PASSES(fn, gb, KT)
MATMAT_P16(matmat_p16_q4_K_avx512, Q4K_TOKENS, KQ_P16_Q4K_BYTES)
MATMAT_P16(matmat_p16_q5_K_avx512, Q5K_TOKENS, KQ_P16_Q5K_BYTES)
MATMAT_P16(matmat_p16_q6_K_avx512, q6_group_tokens, KQ_P16_Q6K_BYTES)

#endif
