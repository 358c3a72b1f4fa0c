/* kq_pack: the packed K-quant groups (kquants.h KQ_P16_*) in the 16 dword
 * lanes of an AVX-512 register, one weight row a lane: the decoding of a
 * group's quants, scales and mins, and kq_k_step's float step lane by
 * lane. Shared by the packed matvec and gemm (kq_pack_avx512.c, both
 * avx512 levels) and the amx level's tile kernel (gemm_amx.c), so that the
 * layouts are read and the float step is done by one piece of code.
 * Include after avx512_lanes.h (AVX512_INLINE: the includer's level) and
 * kquants.h; x86-64 only. */
#ifndef EGANG_KQ_PACK_AVX512_H
#define EGANG_KQ_PACK_AVX512_H

/* An activation super-block's sub-block pair sums as vpmaddwd operands:
 * pair p = (bsum(2p), bsum(2p + 1)) as int16 (|bsum| <= 32 * 128), where
 * bsum(s) = bsums[2s] + bsums[2s + 1] (Q8_K keeps sums per 16). */
AVX512_INLINE void kq16_bsum_pairs(const uint8_t *xb, int32_t *pr)
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
AVX512_INLINE void kq16_sub_weights(const uint8_t *h, int s, __m512i *w, const int five)
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

/* A super-block's per-row values, the same for every token: the mins
 * paired as int16 (m[p]: sub-blocks 2p, 2p + 1), d and dmin as floats */
typedef struct {
	__m512i m[4];
	__m512 d, dmin;
} kq16_rows_t;

/* the per-row values of the super-block at h */
AVX512_INLINE void kq16_rows(const uint8_t *h, kq16_rows_t *r)
{
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++)
		r->m[p] = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(h + KQ_P16_MN + 32 * p)));
	r->d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + KQ_P16_D)));
	r->dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + KQ_P16_DMIN)));
}

/* summ of the 16 rows for one token (xb: its Q8_K super-block) */
AVX512_INLINE __m512i kq16_mins_dot(const kq16_rows_t *r, const uint8_t *xb)
{
	int32_t pr[4];
	kq16_bsum_pairs(xb, pr);
	__m512i sm = _mm512_setzero_si512();
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++)
		sm = _mm512_add_epi32(sm, _mm512_madd_epi16(r->m[p], _mm512_set1_epi32(pr[p])));
	return sm;
}

/* kq_k_step in 16 lanes: acc + ((dx d) sumi - (dx dmin) summ), each
 * product rounded */
AVX512_INLINE __m512 kq16_step(__m512 acc, float dx, const kq16_rows_t *r, __m512i si, __m512i sm)
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

/* sub-block s's 16 scales (6 bits) as int32 lanes */
AVX512_INLINE __m512i kq16_sub_scales(const uint8_t *h, int s)
{
	return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(h + KQ_P16_SC + 16 * s)));
}

/* ---- Q6_K ---- */

/* The 4 weight vectors of sub-block s (groups 0..3 of 4 elements, 16 rows
 * each) as u = q + 32 (0..63): low nibbles from the two QL vectors, the
 * high 2 bits from QH. */
AVX512_INLINE void kq16_q6_sub_weights(const uint8_t *h, int s, __m512i *w)
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

/* sub-block s's 16 scales (int8) as int32 lanes */
AVX512_INLINE __m512i kq16_q6_scales(const uint8_t *h, int s)
{
	return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(h + KQ_P16_Q6K_SC + 16 * s)));
}

/* kq_k_step without the min term in 16 lanes: acc + (dx d) sumi */
AVX512_INLINE __m512 kq16_q6_step(__m512 acc, float dx, const uint8_t *h, __m512i si)
{
	__m512 a = _mm512_mul_ps(_mm512_set1_ps(dx),
				 _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + KQ_P16_Q6K_D))));
	VEC_ROUNDED(a);
	__m512 p = _mm512_mul_ps(a, _mm512_cvtepi32_ps(si));
	VEC_ROUNDED(p);
	return _mm512_add_ps(acc, p);
}

#endif
