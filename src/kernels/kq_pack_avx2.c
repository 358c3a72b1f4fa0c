/* kq_pack: Q4_K, Q5_K and Q6_K read from their packed groups (kquants.h
 * KQ_P16_*) at the AVX2 level, the layout of kq_pack_avx512.c read in two
 * 256-bit halves: each 64-byte vector of a group is rows 0-7 (half 0) and
 * rows 8-15 (half 1), dword lane i of a half holding 4 bytes of one row.
 * Per 8 rows and sub-block s of 32 elements (Q4_K):
 *   8 vpmaddubsw (the rows' nibbles against one broadcast 4-byte group of
 *   the activations) give int16 pair sums, added in int16; one vpmaddwd
 *   by the rows' scales (each dword's two int16 times its row's scale)
 *   gives each row's sc times its exact sub-block sum; the mins against
 *   the activations' sub-block sums give summ (vpmaddwd, two sub-blocks a
 *   step); then kq_k_step's float step in 8 lanes: each lane the same
 *   IEEE operations in the same order as the scalar step, so every output
 *   is kq_dot_generic's bits.
 * The int16 sums are exact: a pair is at most 2 * 15 * 128 in magnitude
 * (no vpmaddubsw saturation) and 8 of them fit int16 (30720); Q5_K's
 * pairs (quants < 32: 2 * 31 * 128) are added 4 at a time, Q6_K's
 * (u = q + 32 < 64: 2 * 63 * 128 = 16128) 2 at a time, each partial sum
 * then widened by its own vpmaddwd. The int32 sums fit (kq_pack_avx512.c);
 * wrapping int32 adds are associative, so their order does not matter.
 * Q6_K: sub-blocks of 16, int8 scales and no mins; the - 32 of u - 32 is
 * one term per row and token, 32 sum_s sc(s) bsum(s), from the scales
 * paired against the activations' paired bsums (vpmaddwd). */
#include "kernels/kernels_impl.h"
#include "kernels/kquants.h"

#if defined(__x86_64__)

#include "kernels/simd_x86.h"

#define KT 8 /* tokens per pass of the packed gemm */

/* The matvecs' software prefetch distance, in super-blocks (a group's
 * super-blocks and the groups are contiguous, so it runs on across group
 * ends). */
#define PF_SB 4

AVX2_INLINE __m256i bcast32(const uint8_t *p) { return _mm256_set1_epi32((int)ld_u32(p)); }

/* 8 unsigned (u8) or signed (s8) bytes at p as int16 pairs (v, v) in
 * dwords 0..7: the scales vpmaddwd multiplies a dword's two int16 by */
AVX2_INLINE __m256i sc_pairs_u8(const uint8_t *p)
{
	__m128i v = _mm_loadl_epi64((const __m128i *)p);
	return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(v, v));
}

AVX2_INLINE __m256i sc_pairs_s8(const uint8_t *p)
{
	__m128i v = _mm_loadl_epi64((const __m128i *)p);
	return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(v, v));
}

/* ---- Q4_K / Q5_K ---- */

/* An activation super-block's sub-block pair sums as vpmaddwd operands:
 * pair p = (bsum(2p), bsum(2p + 1)) as int16 (|bsum| <= 32 * 128), where
 * bsum(s) = bsums[2s] + bsums[2s + 1] (Q8_K keeps sums per 16). */
AVX2_INLINE void bsum_pairs(const uint8_t *xb, int32_t *pr)
{
	__m256i s32 = _mm256_madd_epi16(ld256(xb + 4 + QK_K), _mm256_set1_epi16(1));
	int32_t v[8];
	_mm256_storeu_si256((__m256i *)v, _mm256_packs_epi32(s32, s32));
	pr[0] = v[0];
	pr[1] = v[1];
	pr[2] = v[4];
	pr[3] = v[5];
}

/* The 8 weight vectors of sub-block s for half hf: w[2u] the low nibbles
 * of vector 4s + u (group 2u), w[2u + 1] the high (group 2u + 1); Q5_K
 * (five) ORs in bit 4 from bit g of its QH vector. */
AVX2_INLINE void sub_weights(const uint8_t *h, int s, int hf, __m256i *w, const int five)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
#pragma GCC unroll 4
	for (int u = 0; u < 4; u++) {
		__m256i z = ld256(h + KQ_P16_QS + 64 * (4 * s + u) + 32 * hf);
		w[2 * u] = _mm256_and_si256(z, m4);
		w[2 * u + 1] = _mm256_and_si256(_mm256_srli_epi16(z, 4), m4);
	}
	if (five) {
		__m256i hb = ld256(h + KQ_P16_Q5K_QH + 64 * s + 32 * hf);
		w[0] = _mm256_or_si256(w[0], _mm256_and_si256(_mm256_slli_epi16(hb, 4), b4));
		w[1] = _mm256_or_si256(w[1], _mm256_and_si256(_mm256_slli_epi16(hb, 3), b4));
		w[2] = _mm256_or_si256(w[2], _mm256_and_si256(_mm256_slli_epi16(hb, 2), b4));
		w[3] = _mm256_or_si256(w[3], _mm256_and_si256(_mm256_slli_epi16(hb, 1), b4));
		w[4] = _mm256_or_si256(w[4], _mm256_and_si256(hb, b4));
		w[5] = _mm256_or_si256(w[5], _mm256_and_si256(_mm256_srli_epi16(hb, 1), b4));
		w[6] = _mm256_or_si256(w[6], _mm256_and_si256(_mm256_srli_epi16(hb, 2), b4));
		w[7] = _mm256_or_si256(w[7], _mm256_and_si256(_mm256_srli_epi16(hb, 3), b4));
	}
}

/* sub-block s of one token (xq: its 32 quants) against 8 rows: each row's
 * exact sum times its scale (sc: sc_pairs_u8) */
AVX2_INLINE __m256i sub_dot(const __m256i *w, const uint8_t *xq, __m256i sc, const int five)
{
	__m256i a = _mm256_maddubs_epi16(w[0], bcast32(xq));
	__m256i b = _mm256_maddubs_epi16(w[4], bcast32(xq + 16));
#pragma GCC unroll 3
	for (int g = 1; g < 4; g++) {
		a = _mm256_add_epi16(a, _mm256_maddubs_epi16(w[g], bcast32(xq + 4 * g)));
		b = _mm256_add_epi16(b, _mm256_maddubs_epi16(w[4 + g], bcast32(xq + 16 + 4 * g)));
	}
	if (five)
		return _mm256_add_epi32(_mm256_madd_epi16(a, sc), _mm256_madd_epi16(b, sc));
	return _mm256_madd_epi16(_mm256_add_epi16(a, b), sc);
}

AVX2_INLINE __m256i sub_scales(const uint8_t *h, int s, int hf)
{
	return sc_pairs_u8(h + KQ_P16_SC + 16 * s + 8 * hf);
}

/* summ of half hf's 8 rows for one token (pr: bsum_pairs) */
AVX2_INLINE __m256i mins_dot(const uint8_t *h, int hf, const int32_t *pr)
{
	__m256i sm = _mm256_setzero_si256();
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++) {
		__m256i m = _mm256_cvtepu8_epi16(
			_mm_loadu_si128((const __m128i *)(h + KQ_P16_MN + 32 * p + 16 * hf)));
		sm = _mm256_add_epi32(sm, _mm256_madd_epi16(m, _mm256_set1_epi32(pr[p])));
	}
	return sm;
}

AVX2_INLINE __m256 f16x8(const uint8_t *p)
{
	return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* kq_k_step in 8 lanes: acc + ((dx d) sumi - (dx dmin) summ), each
 * product rounded (d, dmin: the 8 rows') */
AVX2_INLINE __m256 k_step8(__m256 acc, float dx, __m256 d, __m256 dmin, __m256i si, __m256i sm)
{
	const __m256 vx = _mm256_set1_ps(dx);
	__m256 a = _mm256_mul_ps(vx, d);
	FP_ROUNDED(a);
	__m256 p = _mm256_mul_ps(a, _mm256_cvtepi32_ps(si));
	FP_ROUNDED(p);
	__m256 am = _mm256_mul_ps(vx, dmin);
	FP_ROUNDED(am);
	__m256 pm = _mm256_mul_ps(am, _mm256_cvtepi32_ps(sm));
	FP_ROUNDED(pm);
	p = _mm256_sub_ps(p, pm);
	FP_ROUNDED(p);
	return _mm256_add_ps(acc, p);
}

/* step s (of 8) of a super-block prefetches its share of the one PF_SB
 * ahead: Q4_K 5 lines a step (37 a super-block), Q5_K 6 (45) */
AVX2_INLINE void prefetch_ahead(const uint8_t *h, size_t bb, int s, const int five)
{
	const int nl = five ? 6 : 5;
#pragma GCC unroll 6
	for (int j = 0; j < nl; j++)
		_mm_prefetch((const char *)h + PF_SB * bb + 64 * (nl * s + j), _MM_HINT_T0);
}

/* Q4_K / Q5_K (five) groups @ one token: both halves per sub-block, the
 * activations' broadcasts shared */
AVX2_INLINE void matvec_q45(const void *P, const void *xa, float *y, int64_t n, int64_t ng,
			    const int five)
{
	const int64_t nsb = n / QK_K;
	const size_t bb = five ? KQ_P16_Q5K_BYTES : KQ_P16_Q4K_BYTES;
	const uint8_t *h = P;
	for (int64_t g = 0; g < ng; g++) {
		__m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
		for (int64_t b = 0; b < nsb; b++, h += bb) {
			const uint8_t *xb = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K);
			__m256i si0 = _mm256_setzero_si256(), si1 = si0;
			for (int s = 0; s < 8; s++) {
				prefetch_ahead(h, bb, s, five);
				const uint8_t *xq = xb + 4 + 32 * s;
				__m256i w[8];
				sub_weights(h, s, 0, w, five);
				si0 = _mm256_add_epi32(si0, sub_dot(w, xq, sub_scales(h, s, 0), five));
				sub_weights(h, s, 1, w, five);
				si1 = _mm256_add_epi32(si1, sub_dot(w, xq, sub_scales(h, s, 1), five));
			}
			int32_t pr[4];
			bsum_pairs(xb, pr);
			const float dx = ld_f32(xb);
			acc0 = k_step8(acc0, dx, f16x8(h + KQ_P16_D), f16x8(h + KQ_P16_DMIN), si0,
				       mins_dot(h, 0, pr));
			acc1 = k_step8(acc1, dx, f16x8(h + KQ_P16_D + 16), f16x8(h + KQ_P16_DMIN + 16),
				       si1, mins_dot(h, 1, pr));
		}
		_mm256_storeu_ps(y + 16 * g, acc0);
		_mm256_storeu_ps(y + 16 * g + 8, acc1);
	}
}

void AVX2 matvec_p16_q4_K_avx2(const void *P, const void *xa, float *y, int64_t n, int64_t ng)
{
	matvec_q45(P, xa, y, n, ng, 0);
}

void AVX2 matvec_p16_q5_K_avx2(const void *P, const void *xa, float *y, int64_t n, int64_t ng)
{
	matvec_q45(P, xa, y, n, ng, 1);
}

/* nt (<= KT) tokens at X (xs apart) against one Q4_K / Q5_K (five) group:
 * Y[k ys + i]; per super-block each half's weights decoded once for the
 * nt tokens */
AVX2_INLINE void group_tokens(const uint8_t *G, const uint8_t *X, size_t xs, float *Y,
			      int64_t ys, int64_t nsb, const int nt, const int five)
{
	__m256 acc[2][KT];
	for (int k = 0; k < nt; k++)
		acc[0][k] = acc[1][k] = _mm256_setzero_ps();
	const uint8_t *h = G;
	const size_t bb = five ? KQ_P16_Q5K_BYTES : KQ_P16_Q4K_BYTES;
	for (int64_t b = 0; b < nsb; b++, h += bb) {
		const size_t xo = (size_t)b * sizeof(block_q8_K);
		for (int hf = 0; hf < 2; hf++) {
			__m256i si[KT];
			for (int k = 0; k < nt; k++)
				si[k] = _mm256_setzero_si256();
			for (int s = 0; s < 8; s++) {
				__m256i w[8];
				sub_weights(h, s, hf, w, five);
				__m256i sc = sub_scales(h, s, hf);
#pragma GCC unroll 8
				for (int k = 0; k < nt; k++) {
					const uint8_t *xq = X + (size_t)k * xs + xo + 4 + 32 * s;
					si[k] = _mm256_add_epi32(si[k], sub_dot(w, xq, sc, five));
				}
			}
			const __m256 d = f16x8(h + KQ_P16_D + 16 * hf);
			const __m256 dmin = f16x8(h + KQ_P16_DMIN + 16 * hf);
			for (int k = 0; k < nt; k++) {
				const uint8_t *xb = X + (size_t)k * xs + xo;
				int32_t pr[4];
				bsum_pairs(xb, pr);
				acc[hf][k] = k_step8(acc[hf][k], ld_f32(xb), d, dmin, si[k],
						     mins_dot(h, hf, pr));
			}
		}
	}
	for (int k = 0; k < nt; k++) {
		_mm256_storeu_ps(Y + k * ys, acc[0][k]);
		_mm256_storeu_ps(Y + k * ys + 8, acc[1][k]);
	}
}

#define Q4K_TOKENS(G, X, xs, Y, ys, nsb, nt) group_tokens(G, X, xs, Y, ys, nsb, nt, 0)
#define Q5K_TOKENS(G, X, xs, Y, ys, nsb, nt) group_tokens(G, X, xs, Y, ys, nsb, nt, 1)

/* ---- Q6_K ---- */

/* The 4 weight vectors of sub-block s for half hf (groups 0..3 of 4
 * elements, u = q + 32): low nibbles from the two QL vectors, the high 2
 * bits from QH. */
AVX2_INLINE void q6_sub_weights(const uint8_t *h, int s, int hf, __m256i *w)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
	__m256i z0 = ld256(h + KQ_P16_Q6K_QL + 128 * s + 32 * hf);
	__m256i z1 = ld256(h + KQ_P16_Q6K_QL + 128 * s + 64 + 32 * hf);
	__m256i hb = ld256(h + KQ_P16_Q6K_QH + 64 * s + 32 * hf);
	w[0] = _mm256_or_si256(_mm256_and_si256(z0, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30));
	w[1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(z0, 4), m4),
			       _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30));
	w[2] = _mm256_or_si256(_mm256_and_si256(z1, m4), _mm256_and_si256(hb, m30));
	w[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(z1, 4), m4),
			       _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30));
}

/* sub-block s of one token (xq: its 16 quants) against 8 rows: each row's
 * sc times its exact sum of u x (sc: sc_pairs_s8) */
AVX2_INLINE __m256i q6_sub_dot(const __m256i *w, const uint8_t *xq, __m256i sc)
{
	__m256i a = _mm256_add_epi16(_mm256_maddubs_epi16(w[0], bcast32(xq)),
				     _mm256_maddubs_epi16(w[1], bcast32(xq + 4)));
	__m256i b = _mm256_add_epi16(_mm256_maddubs_epi16(w[2], bcast32(xq + 8)),
				     _mm256_maddubs_epi16(w[3], bcast32(xq + 12)));
	return _mm256_add_epi32(_mm256_madd_epi16(a, sc), _mm256_madd_epi16(b, sc));
}

AVX2_INLINE __m256i q6_scales(const uint8_t *h, int s, int hf)
{
	return sc_pairs_s8(h + KQ_P16_Q6K_SC + 16 * s + 8 * hf);
}

/* Half hf's scales of sub-blocks 2p, 2p + 1 as int16 pairs per row: the
 * operand of q6_bias against the activations' bsums pair p */
AVX2_INLINE __m256i q6_scale_pair(const uint8_t *h, int p, int hf)
{
	const uint8_t *sc = h + KQ_P16_Q6K_SC + 32 * p + 8 * hf;
	return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)sc),
						      _mm_loadl_epi64((const __m128i *)(sc + 16))));
}

/* sum_s sc(s) bsum(s) of 8 rows for one token (xb: its Q8_K super-block;
 * bsums[2p], bsums[2p + 1] are one int16 pair) */
AVX2_INLINE __m256i q6_bias(const __m256i *scp, const uint8_t *xb)
{
	__m256i a = _mm256_madd_epi16(scp[0], bcast32(xb + 4 + QK_K));
	__m256i b = _mm256_madd_epi16(scp[1], bcast32(xb + 4 + QK_K + 4));
#pragma GCC unroll 3
	for (int p = 1; p < 4; p++) {
		a = _mm256_add_epi32(a, _mm256_madd_epi16(scp[2 * p], bcast32(xb + 4 + QK_K + 8 * p)));
		b = _mm256_add_epi32(b, _mm256_madd_epi16(scp[2 * p + 1],
							  bcast32(xb + 4 + QK_K + 8 * p + 4)));
	}
	return _mm256_add_epi32(a, b);
}

/* kq_k_step without the min term in 8 lanes: acc + (dx d) sumi, sumi =
 * si - 32 bias */
AVX2_INLINE __m256 q6_step8(__m256 acc, float dx, __m256 d, __m256i si, __m256i bias)
{
	si = _mm256_sub_epi32(si, _mm256_slli_epi32(bias, 5));
	__m256 a = _mm256_mul_ps(_mm256_set1_ps(dx), d);
	FP_ROUNDED(a);
	__m256 p = _mm256_mul_ps(a, _mm256_cvtepi32_ps(si));
	FP_ROUNDED(p);
	return _mm256_add_ps(acc, p);
}

/* Q6_K groups @ one token: both halves per sub-block, one super-block
 * finished (its float step) before the next is read */
void AVX2 matvec_p16_q6_K_avx2(const void *P, const void *xa, float *y, int64_t n, int64_t ng)
{
	const int64_t nsb = n / QK_K;
	const size_t bb = KQ_P16_Q6K_BYTES;
	const uint8_t *h = P;
	for (int64_t g = 0; g < ng; g++) {
		__m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
		for (int64_t b = 0; b < nsb; b++, h += bb) {
			const uint8_t *xb = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K);
			__m256i si0 = _mm256_setzero_si256(), si1 = si0;
			for (int s = 0; s < 16; s++) {
				/* 53 lines a super-block: 4 a step of 16 covers 64 */
#pragma GCC unroll 4
				for (int j = 0; j < 4; j++)
					_mm_prefetch((const char *)h + PF_SB * bb + 64 * (4 * s + j),
						     _MM_HINT_T0);
				const uint8_t *xq = xb + 4 + 16 * s;
				__m256i w[4];
				q6_sub_weights(h, s, 0, w);
				si0 = _mm256_add_epi32(si0, q6_sub_dot(w, xq, q6_scales(h, s, 0)));
				q6_sub_weights(h, s, 1, w);
				si1 = _mm256_add_epi32(si1, q6_sub_dot(w, xq, q6_scales(h, s, 1)));
			}
			const float dx = ld_f32(xb);
			__m256i scp[8];
			for (int p = 0; p < 8; p++)
				scp[p] = q6_scale_pair(h, p, 0);
			acc0 = q6_step8(acc0, dx, f16x8(h + KQ_P16_Q6K_D), si0, q6_bias(scp, xb));
			for (int p = 0; p < 8; p++)
				scp[p] = q6_scale_pair(h, p, 1);
			acc1 = q6_step8(acc1, dx, f16x8(h + KQ_P16_Q6K_D + 16), si1, q6_bias(scp, xb));
		}
		_mm256_storeu_ps(y + 16 * g, acc0);
		_mm256_storeu_ps(y + 16 * g + 8, acc1);
	}
}

AVX2_INLINE void q6_group_tokens(const uint8_t *G, const uint8_t *X, size_t xs, float *Y,
				 int64_t ys, int64_t nsb, const int nt)
{
	__m256 acc[2][KT];
	for (int k = 0; k < nt; k++)
		acc[0][k] = acc[1][k] = _mm256_setzero_ps();
	const uint8_t *h = G;
	for (int64_t b = 0; b < nsb; b++, h += KQ_P16_Q6K_BYTES) {
		const size_t xo = (size_t)b * sizeof(block_q8_K);
		for (int hf = 0; hf < 2; hf++) {
			__m256i si[KT];
			for (int k = 0; k < nt; k++)
				si[k] = _mm256_setzero_si256();
			for (int s = 0; s < 16; s++) {
				__m256i w[4];
				q6_sub_weights(h, s, hf, w);
				__m256i sc = q6_scales(h, s, hf);
#pragma GCC unroll 8
				for (int k = 0; k < nt; k++) {
					const uint8_t *xq = X + (size_t)k * xs + xo + 4 + 16 * s;
					si[k] = _mm256_add_epi32(si[k], q6_sub_dot(w, xq, sc));
				}
			}
			__m256i scp[8];
			for (int p = 0; p < 8; p++)
				scp[p] = q6_scale_pair(h, p, hf);
			const __m256 d = f16x8(h + KQ_P16_Q6K_D + 16 * hf);
			for (int k = 0; k < nt; k++) {
				const uint8_t *xb = X + (size_t)k * xs + xo;
				acc[hf][k] = q6_step8(acc[hf][k], ld_f32(xb), d, si[k], q6_bias(scp, xb));
			}
		}
	}
	for (int k = 0; k < nt; k++) {
		_mm256_storeu_ps(Y + k * ys, acc[0][k]);
		_mm256_storeu_ps(Y + k * ys + 8, acc[1][k]);
	}
}

/* The packed gemms (kquants.h KQ_P16_MATMAT_PASSES; fn: the group kernel,
 * gb: a super-block's bytes in a group) */
#define MATMAT_P16(name, fn, gb)                                                       \
	void AVX2 name(const void *P, const void *X_, size_t xs, float *Y, int64_t ys,  \
		       int64_t n, int64_t ng, int64_t ntok) \
	KQ_P16_MATMAT_PASSES(fn, gb, KT)
MATMAT_P16(matmat_p16_q4_K_avx2, Q4K_TOKENS, KQ_P16_Q4K_BYTES)
MATMAT_P16(matmat_p16_q5_K_avx2, Q5K_TOKENS, KQ_P16_Q5K_BYTES)
MATMAT_P16(matmat_p16_q6_K_avx2, q6_group_tokens, KQ_P16_Q6K_BYTES)

#endif
