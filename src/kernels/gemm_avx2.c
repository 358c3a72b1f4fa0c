/* gemm: AVX2 level of the quantized matrix-matrix kernel (see gemm.c for
 * the design and what is bit-exact).
 *
 * As gemm_avx512.c with 8 weight rows per 256-bit register: per 8 rows the
 * weights are repacked into thread scratch so that one register holds
 * element group g (4 bytes) of block b for the 8 rows, and tiles of tokens
 * broadcast each token's 4 activation bytes of the group. AVX2 has no
 * vpdpbusd; pmaddubsw multiplies unsigned by signed bytes into saturating
 * int16 pair sums:
 *  - Q8_0 (and Q5_0, as the Q8_0 blocks it equals: kernels_impl.h
 *    q8_form): the scratch holds |w| (unsigned, <= 128) and w (for the sign);
 *    the broadcast activations get w's sign (psignb: 0 where w = 0), and
 *        pmaddubsw(|w|, sign(x, w)) = w x per byte, |pair sum| <= 2*128*127
 *    never saturates; pmaddwd by 1 widens to int32 per group.
 *  - Q4_0: the scratch holds the nibbles n = w + 8 (0..15) as bytes; pair
 *    sums |n x| <= 2*15*128, so the 8 groups of a block add in int16
 *    (<= 8 * 3840 < 2^15) before one pmaddwd, and the int32 sum starts at
 *    -8 * sum x (the batch's aux), giving sum w x.
 * Both block sums are exact, and the float step is the generic's per lane,
 * with no FMA.
 *
 * Rows inside whole packed groups (pack16, kernels.h; 16 rows, rows 0-7 in
 * the first 32 bytes of each 64-byte vector, rows 8-15 in the second) are
 * repacked from that copy, both halves in one linear pass: vector loads and
 * a few lane operations a block. Other rows are gathered from the rows as
 * stored, 4 bytes at a time. */
#include "kernels/gemm_impl.h"

#if defined(__x86_64__)

#include "kernels/simd_x86.h"

#define RG 8 /* weight rows per register */
#define TG 6 /* tokens per tile */

/* Loops over the tokens of a tile and the groups of a block, unrolled
 * whole so that s[], h[] and acc[] live in registers (clang does not take
 * GCC's count as "whole"). */
#if defined(__clang__)
#define UNROLL _Pragma("clang loop unroll(full)")
#else
#define UNROLL _Pragma("GCC unroll 8")
#endif

/* Scratch bytes of one block of 8 rows: Q8_0 8 groups x { |w|, w }, Q4_0
 * 8 groups of nibbles. */
static inline size_t blk_bytes(dtype_t t) { return q8_form(t) ? 512 : 256; }

/* Rows r..r+7 (rows at or past r1 repeat row r1-1, not stored) ->
 * pk[b] (blk_bytes) and dw[b][row]. */
AVX2_INLINE void pack_rows(dtype_t t, const uint8_t *W, size_t rb, int64_t r,
			   int64_t r1, int64_t nb, uint8_t *pk, float *dw)
{
	const uint8_t *row[RG];
	const size_t qb = gemm_qbytes(t);
	for (int i = 0; i < RG; i++)
		row[i] = W + (size_t)(r + i < r1 ? r + i : r1 - 1) * rb;
	for (int64_t b = 0; b < nb; b++) {
		uint32_t *p = (uint32_t *)(pk + (size_t)b * blk_bytes(t));
		for (int i = 0; i < RG; i++) {
			const uint8_t *blk = row[i] + (size_t)b * qb;
			if (q8_form(t)) {
UNROLL
				for (int g = 0; g < 8; g++)
					p[g * 2 * RG + RG + i] = gemm_wgroup_s(t, blk, g);
			} else {
UNROLL
				for (int g = 0; g < 8; g++)
					p[g * RG + i] = gemm_wgroup_u(t, blk, g);
			}
			dw[b * RG + i] = fp16_to_f32_inline(ld_u16(blk));
		}
		if (q8_form(t))
UNROLL
			for (int g = 0; g < 8; g++) {
				__m256i w = _mm256_load_si256((const __m256i *)(p + g * 2 * RG + RG));
				_mm256_store_si256((__m256i *)(p + g * 2 * RG), _mm256_abs_epi8(w));
			}
	}
}

/* The same pk and dw for both halves of a packed group G (pk0/dw0: rows
 * 0-7, pk1/dw1: rows 8-15): Q8_0 quants are stored as q + 128, Q4_0 as the
 * nibble bytes (low: group v, high: group v + 4). The next group (gb bytes
 * on) is prefetched as one linear stream. */
AVX2_INLINE void pack_p16(dtype_t t, const uint8_t *G, size_t gb, int64_t nb,
			  uint8_t *pk0, float *dw0, uint8_t *pk1, float *dw1)
{
	const __m256i m0f = _mm256_set1_epi8(0x0F), m80 = _mm256_set1_epi8((char)0x80);
	const size_t qv = q8_form(t) ? 512 : 256;
	const uint8_t *q = G, *sc = G;
	for (int64_t b = 0; b < nb; b++) {
		if (!(b & 1)) {
			sc = q;
			q += 64;
		}
		__m256i *p[2] = { (__m256i *)(pk0 + (size_t)b * blk_bytes(t)),
				  (__m256i *)(pk1 + (size_t)b * blk_bytes(t)) };
		for (size_t k = 0; k < qv; k += 64)
			_mm_prefetch((const char *)q + gb + k, _MM_HINT_T0);
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			if (q8_form(t)) {
UNROLL
				for (int g = 0; g < 8; g++) {
					__m256i w = _mm256_xor_si256(_mm256_loadu_si256(
						(const __m256i *)(q + 64 * g + 32 * h)), m80);
					_mm256_store_si256(p[h] + 2 * g, _mm256_abs_epi8(w));
					_mm256_store_si256(p[h] + 2 * g + 1, w);
				}
			} else {
#pragma GCC unroll 4
				for (int v = 0; v < 4; v++) {
					__m256i z = _mm256_loadu_si256((const __m256i *)(q + 64 * v + 32 * h));
					_mm256_store_si256(p[h] + v, _mm256_and_si256(z, m0f));
					_mm256_store_si256(p[h] + 4 + v,
							   _mm256_and_si256(_mm256_srli_epi16(z, 4), m0f));
				}
			}
		}
		q += qv;
		const uint8_t *s = sc + 32 * (b & 1);
		_mm256_store_ps(dw0 + b * RG, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)s)));
		_mm256_store_ps(dw1 + b * RG,
				_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + 16))));
	}
}

/* Lanes 0 .. nrows-1 of acc[k] to Y + k * ys. */
AVX2_INLINE void store_rows(const __m256 *acc, float *Y, int64_t ys, int nrows, const int T)
{
UNROLL
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

/* acc[k] = acc[k] + (float)s[k] * (dw * dx_k), lane by lane, the product
 * rounded first. */
AVX2_INLINE void float_step(__m256 *acc, const __m256i *s, const float *dw,
			    const float *dx, int64_t nb, const int T)
{
	__m256 d = _mm256_load_ps(dw);
UNROLL
	for (int k = 0; k < T; k++) {
		__m256 dk = _mm256_mul_ps(d, _mm256_set1_ps(dx[k * nb]));
		__m256 p = _mm256_mul_ps(_mm256_cvtepi32_ps(s[k]), dk);
		VEC_ROUNDED(p);
		acc[k] = _mm256_add_ps(acc[k], p);
	}
}

/* T tokens (T <= TG) x 8 rows over all blocks of a Q8_0 scratch. */
AVX2_INLINE void tile_q8(const uint8_t *pk, const float *dw, const uint8_t *X,
			 size_t xs, const float *dx, const int32_t *sx, int64_t nb,
			 float *Y, int64_t ys, int nrows, const int T)
{
	const __m256i ones = _mm256_set1_epi16(1);
	__m256 acc[TG];
UNROLL
	for (int k = 0; k < T; k++)
		acc[k] = _mm256_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		const __m256i *wb = (const __m256i *)(pk + (size_t)b * 512);
		const uint8_t *xq = X + (size_t)b * sizeof(block_q8_0) + 2;
		__m256i s[TG];
UNROLL
		for (int k = 0; k < T; k++)
			s[k] = _mm256_setzero_si256();
UNROLL
		for (int g = 0; g < 8; g++) {
			__m256i wa = _mm256_load_si256(wb + 2 * g);
			__m256i ws = _mm256_load_si256(wb + 2 * g + 1);
UNROLL
			for (int k = 0; k < T; k++) {
				__m256i x = _mm256_set1_epi32(ld_i32(xq + (size_t)k * xs + 4 * g));
				__m256i p = _mm256_maddubs_epi16(wa, _mm256_sign_epi8(x, ws));
				s[k] = _mm256_add_epi32(s[k], _mm256_madd_epi16(p, ones));
				KEEP(s[k]);
			}
		}
		float_step(acc, s, dw + b * RG, dx + b, nb, T);
	}
	store_rows(acc, Y, ys, nrows, T);
}

/* The same for a Q4_0 scratch (nibbles, int16 block sums). */
AVX2_INLINE void tile_q4(const uint8_t *pk, const float *dw, const uint8_t *X,
			 size_t xs, const float *dx, const int32_t *sx, int64_t nb,
			 float *Y, int64_t ys, int nrows, const int T)
{
	const __m256i ones = _mm256_set1_epi16(1);
	__m256 acc[TG];
UNROLL
	for (int k = 0; k < T; k++)
		acc[k] = _mm256_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		const __m256i *wb = (const __m256i *)(pk + (size_t)b * 256);
		const uint8_t *xq = X + (size_t)b * sizeof(block_q8_0) + 2;
		__m256i h[TG];
UNROLL
		for (int k = 0; k < T; k++)
			h[k] = _mm256_setzero_si256();
UNROLL
		for (int g = 0; g < 8; g++) {
			__m256i w = _mm256_load_si256(wb + g);
UNROLL
			for (int k = 0; k < T; k++) {
				__m256i x = _mm256_set1_epi32(ld_i32(xq + (size_t)k * xs + 4 * g));
				h[k] = _mm256_add_epi16(h[k], _mm256_maddubs_epi16(w, x));
				KEEP(h[k]);
			}
		}
UNROLL
		for (int k = 0; k < T; k++)
			h[k] = _mm256_add_epi32(_mm256_madd_epi16(h[k], ones),
						_mm256_set1_epi32(-8 * sx[k * nb + b]));
		float_step(acc, h, dw + b * RG, dx + b, nb, T);
	}
	store_rows(acc, Y, ys, nrows, T);
}

/* One 8-row scratch against every token, in tiles of TG. */
AVX2_INLINE void tiles(dtype_t t, const uint8_t *pk, const float *dw, const uint8_t *X,
		       size_t xs, const float *dx, const int32_t *sx, int64_t nb,
		       float *Y, int64_t ys, int nrows, int64_t ntok)
{
	for (int64_t k = 0; k < ntok; k += TG) {
		const uint8_t *xk = X + (size_t)k * xs;
		float *yk = Y + k * ys;
		const float *dk = dx + k * nb;
		const int32_t *ck = sx + k * nb;
		const int T = ntok - k >= TG ? TG : (int)(ntok - k);
#define TILE_CASE(n)                                                                  \
	case n:                                                                       \
		if (q8_form(t))                                                       \
			tile_q8(pk, dw, xk, xs, dk, ck, nb, yk, ys, nrows, n);        \
		else                                                                  \
			tile_q4(pk, dw, xk, xs, dk, ck, nb, yk, ys, nrows, n);        \
		break;
		switch (T) {
		TILE_CASE(6)
		TILE_CASE(5)
		TILE_CASE(4)
		TILE_CASE(3)
		TILE_CASE(2)
		default: TILE_CASE(1)
		}
#undef TILE_CASE
	}
}

AVX2 void gemm_quant_avx2(GEMM_QUANT_ARGS)
{
	const size_t pk_bytes = (size_t)nb * blk_bytes(t), dw_bytes = (size_t)nb * RG * 4;
	uint8_t *s1 = gemm_scratch(1, 2 * (pk_bytes + dw_bytes));
	if (!s1) { /* out of memory: the generic twin needs none */
		gemm_rows_generic(t, W, X, xs, Y, ys, nb * QK, r0, r1, ntok);
		return;
	}
	uint8_t *pk0 = s1, *pk1 = s1 + pk_bytes;
	float *dw0 = (float *)(s1 + 2 * pk_bytes), *dw1 = dw0 + nb * RG;
	const size_t gb = P ? pack16_group_bytes(t, nb * QK) : 0;
	int64_t r = r0;
	while (r < r1) {
		if (P && r % 16 == 0 && r + 16 <= np) { /* a whole packed group */
			pack_p16(t, P + (size_t)(r / 16) * gb, gb, nb, pk0, dw0, pk1, dw1);
			int n0 = r1 - r >= RG ? RG : (int)(r1 - r);
			tiles(t, pk0, dw0, X, xs, dx, sx, nb, Y + r, ys, n0, ntok);
			if (r1 - r > RG)
				tiles(t, pk1, dw1, X, xs, dx, sx, nb, Y + r + RG, ys,
				      r1 - r >= 2 * RG ? RG : (int)(r1 - r - RG), ntok);
			r += 16;
			continue;
		}
		/* up to 8 rows as stored, stopping at the next packed group */
		int64_t e = r + RG < r1 ? r + RG : r1, nx = (r | 15) + 1;
		if (P && nx < e && nx + 16 <= np)
			e = nx;
		pack_rows(t, W, rb, r, e, nb, pk0, dw0);
		tiles(t, pk0, dw0, X, xs, dx, sx, nb, Y + r, ys, (int)(e - r), ntok);
		r = e;
	}
}

/* gemm_aux_generic's values: a block's quant sum by psadbw on q + 128,
 * minus 32 * 128; its scale by vcvtph2ps. */
AVX2 void gemm_aux_avx2(const uint8_t *X, size_t xs, int64_t nb, int64_t ntok, float *dx,
			int32_t *sx)
{
	const __m256i m80 = _mm256_set1_epi8((char)0x80);
	for (int64_t k = 0; k < ntok; k++)
		for (int64_t b = 0; b < nb; b++) {
			const uint8_t *blk = X + (size_t)k * xs + (size_t)b * sizeof(block_q8_0);
			__m256i q = _mm256_xor_si256(ld256(blk + 2), m80);
			__m256i sad = _mm256_sad_epu8(q, _mm256_setzero_si256());
			__m128i s = _mm_add_epi64(_mm256_castsi256_si128(sad),
						  _mm256_extracti128_si256(sad, 1));
			s = _mm_add_epi64(s, _mm_unpackhi_epi64(s, s));
			dx[k * nb + b] = ld_f16_f16c(blk);
			sx[k * nb + b] = _mm_cvtsi128_si32(s) - 32 * 128;
		}
}

#endif
