/* gemm: AVX-512 VNNI level of the quantized matrix-matrix kernel (see
 * gemm.c for the design and what is bit-exact).
 *
 * Q5_0 runs as the Q8_0 blocks it equals (kernels_impl.h q8_form): its
 * packed copy is Q8_0's layout, its rows as stored are unpacked to Q8_0's
 * quants (load_q8s). Q4_1 and Q5_1 (against Q8_1 activations) run the
 * same tile with their min term (gemm_min, after the Q8_0 kernels).
 *
 * Per row group of 16 weight rows, the rows are repacked into thread
 * scratch so that one 512-bit register holds element group g (4 bytes) of
 * block b for all 16 rows, as unsigned bytes u = w + bias (gemm_impl.h),
 * with the 16 row scales as floats. Per tile of 8 tokens and block b, each
 * token's 4 activation bytes of group g are broadcast (an embedded
 * broadcast of vpdpbusd) and
 *     s_k = vpdpbusd(s_k, u_g, x_k,g)      g = 0..7
 * leaves lane i = sum u x over the block for row i; s_k starts at
 * -bias * sum x (the sum from the batch's aux, gemm_aux_prepare), so
 * s_k = sum w x exactly. The float step is the generic's per lane:
 *     acc_k = acc_k + (float)s_k * (dw * dx_k)
 * with the product rounded before the add (no FMA). Eight independent
 * accumulator chains keep vpdpbusd's latency hidden.
 *
 * The loops over tokens and groups are unrolled by pragma: without it GCC
 * kept s[] and acc[] on the stack (a store and a reload around every
 * vpdpbusd) and the kernel ran at a third of the speed (`test_gemm --bench
 * 1536 576 128`, q4_0: 88 -> 283 GMAC/s on one Zen 5 core; the AVX2 level
 * 42 -> 69 with the same change). */
/* Compiled for the avx512vnni level only: without VNNI the AVX2 kernel
 * (pmaddubsw with the sign trick, gemm_avx2.c) was faster than this one
 * with vpdpbusd emulated (avx512_lanes.h), and serves the avx512 level. */
#define EGANG_AVX512_VNNI 1
#include "kernels/gemm_impl.h"

#if defined(__x86_64__)

#include <immintrin.h>
#include <stdbool.h>

#include "kernels/avx512_lanes.h"
#include "kernels/kquants.h"


#define RG 16 /* weight rows per register */
#define TG 8  /* tokens per tile */
/* Batches of at most this many tokens read whole packed groups in place
 * (tile_p16); larger ones repack each group once into scratch and run
 * their tiles from it (pack_rows_p16), which was the faster from 32 tokens
 * on (`test_gemm --bench 2048 2048 NTOK`, q8_0, thread CPU time: in place
 * 221 against 213 GMAC/s at 16 tokens, 220 against 230 at 32, 212 against
 * 265 at 128). */
#ifndef GEMM_INPLACE_TOKENS
#define GEMM_INPLACE_TOKENS 16
#endif


/* The 32 quants of a Q8_0 or Q5_0 block as Q8_0's signed bytes, from p =
 * the block + 2 (Q8_0: qs; Q5_0: qh then qs, kernels_impl.h q8_group_u):
 * the nibbles minus 16, plus 16 where qh has the element's bit (a byte
 * mask). */
AVX512_INLINE __m256i load_q8s(dtype_t t, const uint8_t *p)
{
	if (t == DTYPE_Q8_0)
		return _mm256_loadu_si256((const __m256i *)p);
	uint32_t qh;
	memcpy(&qh, p, 4);
	__m128i qs = _mm_loadu_si128((const __m128i *)(p + 4));
	const __m128i m0f = _mm_set1_epi8(0x0F);
	__m256i nib = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(qs, m0f)),
					      _mm_and_si128(_mm_srli_epi16(qs, 4), m0f), 1);
	const __m256i m16 = _mm256_set1_epi8(16);
	__m256i w = _mm256_sub_epi8(nib, m16);
	return _mm256_mask_add_epi8(w, (__mmask32)qh, w, m16);
}

/* 16 bytes at offset o of each of the 16 rows, as 4 vectors: the
 * quarters of rows i, 4+i, 8+i, 12+i side by side, then transpose_lanes4
 * (the nibble layout of a Q4_0 / Q4_1 / Q5_1 block's quants). */
AVX512_INLINE void load_rows16x16(const uint8_t *const *row, size_t o, __m512i z[4])
{
#pragma GCC unroll 4
	for (int i = 0; i < 4; i++) {
		__m512i a = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(row[i] + o)));
		a = _mm512_inserti32x4(a, _mm_loadu_si128((const __m128i *)(row[4 + i] + o)), 1);
		a = _mm512_inserti32x4(a, _mm_loadu_si128((const __m128i *)(row[8 + i] + o)), 2);
		z[i] = _mm512_inserti32x4(a, _mm_loadu_si128((const __m128i *)(row[12 + i] + o)), 3);
	}
	transpose_lanes4(z);
}

/* Rows r..r+15 (rows at or past r1 repeat row r1-1; their outputs are not
 * stored) -> pk[b][g][row] (unsigned groups, gemm_wgroup_u) and dw[b][row].
 * The 16 x 8 group matrix of a block is transposed in registers: 128-bit
 * quarters of rows i, 4+i, 8+i, 12+i side by side, then transpose_lanes4. The
 * scales come by one gather (reads stay inside each block); vcvtph2ps is
 * bit-exact with fp16_to_f32_inline. */
AVX512_INLINE void pack_rows(dtype_t t, const uint8_t *W, size_t rb, int64_t r,
			     int64_t r1, int64_t nb, uint32_t *pk, float *dw)
{
	const size_t qb = gemm_qbytes(t);
	const uint8_t *row[RG];
	int32_t off[RG];
	for (int i = 0; i < RG; i++) { /* rb * 16 fits: rows are < 64 KiB */
		int64_t ri = r + i < r1 ? r + i : r1 - 1;
		row[i] = W + (size_t)ri * rb + 2;
		off[i] = (int32_t)((size_t)(ri - r) * rb);
	}
	const uint8_t *base = W + (size_t)r * rb;
	const __m512i idx = _mm512_loadu_si512(off);
	const __m512i m80 = _mm512_set1_epi8((char)0x80), m0f = _mm512_set1_epi8(0x0F);
	for (int64_t b = 0; b < nb; b++) {
		const size_t o = (size_t)b * qb;
		__m512i *p = (__m512i *)(pk + (size_t)b * 8 * RG);
		/* the next row group's same bytes, packed after this group's
		 * tiles: weights come from memory once per batch, and 16
		 * row streams are more than the hardware prefetchers follow
		 * (a prefetch past the matrix never faults) */
#ifndef GEMM_NO_PREFETCH /* for A/B measurements */
		if ((o & 63) < qb)
#pragma GCC unroll 16
			for (int i = 0; i < RG; i++)
				_mm_prefetch((const char *)row[i] + (size_t)RG * rb + o,
					     _MM_HINT_T0);
#endif
		if (q8_form(t)) {
			__m512i lo[4], hi[4];
#pragma GCC unroll 4
			for (int i = 0; i < 4; i++) {
				__m512i a = _mm512_inserti64x4(_mm512_castsi256_si512(
					load_q8s(t, row[i] + o)), load_q8s(t, row[4 + i] + o), 1);
				__m512i c = _mm512_inserti64x4(_mm512_castsi256_si512(
					load_q8s(t, row[8 + i] + o)), load_q8s(t, row[12 + i] + o), 1);
				lo[i] = _mm512_shuffle_i32x4(a, c, _MM_SHUFFLE(2, 0, 2, 0));
				hi[i] = _mm512_shuffle_i32x4(a, c, _MM_SHUFFLE(3, 1, 3, 1));
			}
			transpose_lanes4(lo);
			transpose_lanes4(hi);
#pragma GCC unroll 4
			for (int g = 0; g < 4; g++) {
				_mm512_store_si512(p + g, _mm512_xor_si512(lo[g], m80));
				_mm512_store_si512(p + 4 + g, _mm512_xor_si512(hi[g], m80));
			}
		} else {
			__m512i z[4];
			load_rows16x16(row, o, z);
#pragma GCC unroll 4
			for (int g = 0; g < 4; g++) {
				_mm512_store_si512(p + g, _mm512_and_si512(z[g], m0f));
				_mm512_store_si512(p + 4 + g,
						   _mm512_and_si512(_mm512_srli_epi16(z[g], 4), m0f));
			}
		}
		__m512i h = _mm512_i32gather_epi32(idx, base + o, 1); /* d in the low half */
		_mm512_store_ps(dw + b * RG, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h)));
	}
}

/* The same pk and dw from a packed group (pack16): its vectors are
 * already the groups of 4 bytes, rows in lanes; Q8_0 already unsigned,
 * Q4_0 nibbles split here. The next group (gb bytes on) is prefetched
 * as one linear stream. */
AVX512_INLINE void pack_rows_p16(dtype_t t, const uint8_t *G, size_t gb, int64_t nb,
				 uint32_t *pk, float *dw)
{
	const __m512i m0f = _mm512_set1_epi8(0x0F);
	const size_t qv = q8_form(t) ? 512 : 256;
	const uint8_t *q = G, *sc = G;
	for (int64_t b = 0; b < nb; b++) {
		if (!(b & 1)) {
			sc = q;
			q += 64;
		}
		__m512i *p = (__m512i *)(pk + (size_t)b * 8 * RG);
#ifndef GEMM_NO_PREFETCH
		for (size_t k = 0; k < qv; k += 64)
			_mm_prefetch((const char *)q + gb + k, _MM_HINT_T0);
#endif
		if (q8_form(t)) {
#pragma GCC unroll 8
			for (int g = 0; g < 8; g++)
				_mm512_store_si512(p + g, _mm512_loadu_si512((const void *)(q + 64 * g)));
		} else {
#pragma GCC unroll 4
			for (int g = 0; g < 4; g++) {
				__m512i z = _mm512_loadu_si512((const void *)(q + 64 * g));
				_mm512_store_si512(p + g, _mm512_and_si512(z, m0f));
				_mm512_store_si512(p + 4 + g, _mm512_and_si512(_mm512_srli_epi16(z, 4), m0f));
			}
		}
		q += qv;
		_mm512_store_ps(dw + b * RG, _mm512_cvtph_ps(_mm256_loadu_si256(
						     (const __m256i *)(sc + 32 * (b & 1)))));
	}
}

/* Block b's float step for T tokens, the matvec's: acc[k] += (float)s[k]
 * * (d * dx[k nb]), each product rounded before the add (dx: the tokens'
 * scales of block b, nb apart). */
AVX512_INLINE void float_step512(__m512 *acc, const __m512i *s, __m512 d, const float *dx,
				 int64_t nb, const int T)
{
#pragma GCC unroll 8
	for (int k = 0; k < T; k++) {
		__m512 dk = _mm512_mul_ps(d, _mm512_set1_ps(dx[k * nb]));
		__m512 p = _mm512_mul_ps(_mm512_cvtepi32_ps(s[k]), dk);
		VEC_ROUNDED(p);
		acc[k] = _mm512_add_ps(acc[k], p);
	}
}

/* T tokens (T <= TG) x 16 rows over all blocks; token k's activations at
 * X + k * xs, its scales and quant sums at dx + k * nb, sx + k * nb; outputs Y[k * ys + i] for the lanes i in m. */
AVX512_INLINE void tile(const uint32_t *pk, const float *dw, const uint8_t *X,
			size_t xs, const float *dx, const int32_t *sx, int32_t bias,
			int64_t nb, float *Y, int64_t ys, __mmask16 m, const int T)
{
	__m512 acc[TG];
#pragma GCC unroll 8
	for (int k = 0; k < T; k++)
		acc[k] = _mm512_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		const __m512i *wb = (const __m512i *)(pk + (size_t)b * 8 * RG);
		const uint8_t *xq = X + (size_t)b * sizeof(block_q8_0) + 2;
		__m512i s[TG];
#pragma GCC unroll 8
		for (int k = 0; k < T; k++)
			s[k] = _mm512_set1_epi32(-bias * sx[k * nb + b]);
#pragma GCC unroll 8
		for (int g = 0; g < 8; g++) {
			__m512i w = _mm512_load_si512(wb + g);
#pragma GCC unroll 8
			for (int k = 0; k < T; k++)
				s[k] = dpbusd512(s[k], w,
					_mm512_set1_epi32(ld_i32(xq + (size_t)k * xs + 4 * g)));
		}
		__m512 d = _mm512_load_ps(dw + b * RG);
		float_step512(acc, s, d, dx + b, nb, T);
	}
#pragma GCC unroll 8
	for (int k = 0; k < T; k++)
		_mm512_mask_storeu_ps(Y + k * ys, m, acc[k]);
}

/* The share of a group's prefetch of the next one that each block of
 * each pass issues: pass h of npass, block b, the next group's lines that
 * start below (h nb + b + 1) gb / (npass nb) bytes (in 1/65536 bytes, so no
 * division per block), each line once. */
typedef struct pf_share {
	uint64_t end, step; /* the current share's end, its length; 16-bit fraction */
	size_t next;        /* the next line's offset in the next group */
} pf_share_t;

/* The shares of pass h of npass over a group of gb bytes, nb blocks. */
static inline pf_share_t pf_share_start(size_t gb, int64_t nb, int h, int npass)
{
	pf_share_t p;
	p.step = ((uint64_t)gb << 16) / ((uint64_t)npass * (uint64_t)nb);
	p.end = (uint64_t)h * (uint64_t)nb * p.step;
	p.next = (size_t)(p.end >> 16) & ~(size_t)63;
	if (p.next < (size_t)(p.end >> 16)) /* the previous pass took that line */
		p.next += 64;
	return p;
}

/* Prefetches the next block's share of the group at N into L2. */
AVX512_INLINE void pf_share_next(pf_share_t *p, const uint8_t *N)
{
	p->end += p->step;
	for (size_t e = (size_t)(p->end >> 16); p->next < e; p->next += 64)
		_mm_prefetch((const char *)N + p->next, _MM_HINT_T1);
}

/* tile() reading a packed group (pack16) in place instead of a repacked
 * copy: the same vectors (Q8_0 unsigned as stored, Q4_0 nibbles split
 * here), the same integer sums per lane and the same float steps, so the
 * same bits. No copy of the group into scratch: for a few decode tokens
 * that copy costs about as much as the dot products.
 *
 * Pass h of the group's npass passes (tiles of 8 tokens) prefetches its share
 * of the next group (gb bytes on) into L2 (prefetcht1), spread evenly over
 * the passes' blocks (pf_share): the next group streams from memory at
 * one steady rate under the arithmetic of every pass. A first pass that
 * prefetched the whole next group left memory idle during the second
 * pass, which reads the group again from cache, and its prefetches
 * queued behind each other in the first; spread, a 16-token step of
 * tinyllama-1.1b q8_0 on one core went from 101 to 118 tok/s per CPU
 * second (medians of 3 rounds alternated, doc/serve-batch/overlap-1206). Into L1 (prefetcht0) the next
 * group evicted this group's lines, which a second pass reads again, and
 * a whole group (34 KiB at n = 2048, 96 KiB at 5632) does not fit beside
 * it in a 48 KiB L1 anyway (doc/serve-batch/batch-1206.md). */
AVX512_INLINE void tile_p16(dtype_t t, const uint8_t *G, size_t gb, int h, int npass,
			    const uint8_t *X, size_t xs, const float *dx,
			    const int32_t *sx, int32_t bias, int64_t nb, float *Y,
			    int64_t ys, const int T)
{
	const size_t qv = q8_form(t) ? 512 : 256;
	const __m512i m0f = _mm512_set1_epi8(0x0F);
	__m512 acc[TG];
#pragma GCC unroll 8
	for (int k = 0; k < T; k++)
		acc[k] = _mm512_setzero_ps();
	const uint8_t *q = G, *sc = G;
#ifndef GEMM_NO_PREFETCH
	pf_share_t pf = pf_share_start(gb, nb, h, npass);
#endif
	for (int64_t b = 0; b < nb; b++) {
		if (!(b & 1)) { /* a pair's scales */
			sc = q;
			q += 64;
		}
#ifndef GEMM_NO_PREFETCH
		pf_share_next(&pf, G + gb);
#endif
		const uint8_t *xq = X + (size_t)b * sizeof(block_q8_0) + 2;
		__m512i s[TG];
#pragma GCC unroll 8
		for (int k = 0; k < T; k++)
			s[k] = _mm512_set1_epi32(-bias * sx[k * nb + b]);
		if (q8_form(t)) {
#pragma GCC unroll 8
			for (int g = 0; g < 8; g++) {
				__m512i w = _mm512_loadu_si512((const void *)(q + 64 * g));
#pragma GCC unroll 8
				for (int k = 0; k < T; k++)
					s[k] = dpbusd512(s[k], w,
						_mm512_set1_epi32(ld_i32(xq + (size_t)k * xs + 4 * g)));
			}
		} else {
#pragma GCC unroll 4
			for (int g = 0; g < 4; g++) {
				__m512i z = _mm512_loadu_si512((const void *)(q + 64 * g));
				__m512i lo = _mm512_and_si512(z, m0f);
				__m512i hi = _mm512_and_si512(_mm512_srli_epi16(z, 4), m0f);
#pragma GCC unroll 8
				for (int k = 0; k < T; k++) {
					const uint8_t *xk = xq + (size_t)k * xs;
					s[k] = dpbusd512(s[k], lo, _mm512_set1_epi32(ld_i32(xk + 4 * g)));
					s[k] = dpbusd512(s[k], hi,
						_mm512_set1_epi32(ld_i32(xk + 16 + 4 * g)));
				}
			}
		}
		__m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(sc + 32 * (b & 1))));
		q += qv;
		float_step512(acc, s, d, dx + b, nb, T);
	}
#pragma GCC unroll 8
	for (int k = 0; k < T; k++)
		_mm512_storeu_ps(Y + k * ys, acc[k]);
}

/* A whole packed group times all tokens, tiles of TG read in place. */
AVX512_INLINE void group_p16(dtype_t t, const uint8_t *G, size_t gb, const uint8_t *X,
			     size_t xs, const float *dx, const int32_t *sx, int32_t bias,
			     int64_t nb, float *Y, int64_t ys, int64_t ntok)
{
	const int npass = (int)((ntok + TG - 1) / TG);
	for (int64_t k = 0; k < ntok; k += TG) {
		const uint8_t *xk = X + (size_t)k * xs;
		float *yk = Y + k * ys;
		const float *dk = dx + k * nb;
		const int32_t *ck = sx + k * nb;
		const int h = (int)(k / TG);
		switch (ntok - k >= TG ? TG : (int)(ntok - k)) {
		case 8: tile_p16(t, G, gb, h, npass, xk, xs, dk, ck, bias, nb, yk, ys, 8); break;
		case 7: tile_p16(t, G, gb, h, npass, xk, xs, dk, ck, bias, nb, yk, ys, 7); break;
		case 6: tile_p16(t, G, gb, h, npass, xk, xs, dk, ck, bias, nb, yk, ys, 6); break;
		case 5: tile_p16(t, G, gb, h, npass, xk, xs, dk, ck, bias, nb, yk, ys, 5); break;
		case 4: tile_p16(t, G, gb, h, npass, xk, xs, dk, ck, bias, nb, yk, ys, 4); break;
		case 3: tile_p16(t, G, gb, h, npass, xk, xs, dk, ck, bias, nb, yk, ys, 3); break;
		case 2: tile_p16(t, G, gb, h, npass, xk, xs, dk, ck, bias, nb, yk, ys, 2); break;
		default: tile_p16(t, G, gb, h, npass, xk, xs, dk, ck, bias, nb, yk, ys, 1); break;
		}
	}
}

/* ---- Q4_1 and Q5_1 against Q8_1 (kernels_impl.h q8_1_form) ----
 * The same register tile, with the weights' quants unsigned as they are
 * (Q4_1 the nibble, Q5_1 the nibble | the fifth bit << 4), so the sums
 * start at 0 and s_k = sum q x exactly. The float step per lane is
 * dot_legacy's (kquants.c), the min term in its own accumulator:
 *     acc_k = acc_k + (float)s_k * (dw * dx_k),  sm_k = sm_k + m * sx_k
 * each product rounded before its add, the output acc_k + sm_k; dx and sx
 * (the Q8_1 blocks' d and s as floats) from the batch's aux. */

/* Runs CALL(T) with T = min(left, TG) as a constant (the tile's tokens). */
#define TG_SWITCH(left, CALL)                                   \
	switch ((left) >= TG ? TG : (int)(left)) {              \
	case 8: CALL(8); break;                                 \
	case 7: CALL(7); break;                                 \
	case 6: CALL(6); break;                                 \
	case 5: CALL(5); break;                                 \
	case 4: CALL(4); break;                                 \
	case 3: CALL(3); break;                                 \
	case 2: CALL(2); break;                                 \
	default: CALL(1); break;                                \
	}

/* pk's 8 groups of one block from the 4 nibble vectors z (vector v: bytes
 * 4v .. 4v + 3 of each row's qs, rows in lanes) and, for Q5_1, the rows'
 * qh words h: group g < 4 the low nibbles of z[g], group 4 + g the high
 * ones, each with its fifth bits. */
AVX512_INLINE void min_groups(dtype_t t, __m512i *p, const __m512i *z, __m512i h)
{
	const __m512i m0f = _mm512_set1_epi8(0x0F);
#pragma GCC unroll 4
	for (int g = 0; g < 4; g++) {
		__m512i lo = _mm512_and_si512(z[g], m0f);
		__m512i hi = _mm512_and_si512(_mm512_srli_epi16(z[g], 4), m0f);
		if (t == DTYPE_Q5_1) {
			lo = _mm512_or_si512(lo, qh_group16(h, g));
			hi = _mm512_or_si512(hi, qh_group16(h, 4 + g));
		}
		_mm512_store_si512(p + g, lo);
		_mm512_store_si512(p + 4 + g, hi);
	}
}

/* pack_rows for Q4_1 / Q5_1: rows r..r+15 as stored (rows at or past r1
 * repeat row r1-1) -> pk[b][g][row], dw[b][row] and dm[b][row]. A block
 * starts with d then m: one gather of 4 bytes gives both. */
AVX512_INLINE void pack_rows_min(dtype_t t, const uint8_t *W, size_t rb, int64_t r,
				 int64_t r1, int64_t nb, uint32_t *pk, float *dw, float *dm)
{
	const size_t qb = gemm_qbytes(t), qo = t == DTYPE_Q5_1 ? 8 : 4;
	const uint8_t *row[RG];
	int32_t off[RG];
	for (int i = 0; i < RG; i++) {
		int64_t ri = r + i < r1 ? r + i : r1 - 1;
		row[i] = W + (size_t)ri * rb + qo;
		off[i] = (int32_t)((size_t)(ri - r) * rb);
	}
	const uint8_t *base = W + (size_t)r * rb;
	const __m512i idx = _mm512_loadu_si512(off);
	for (int64_t b = 0; b < nb; b++) {
		const size_t o = (size_t)b * qb;
#ifndef GEMM_NO_PREFETCH /* as pack_rows */
		if ((o & 63) < qb)
#pragma GCC unroll 16
			for (int i = 0; i < RG; i++)
				_mm_prefetch((const char *)row[i] + (size_t)RG * rb + o,
					     _MM_HINT_T0);
#endif
		__m512i z[4];
		load_rows16x16(row, o, z);
		__m512i h = t == DTYPE_Q5_1 ? _mm512_i32gather_epi32(idx, base + o + 4, 1)
					    : _mm512_setzero_si512();
		min_groups(t, (__m512i *)(pk + (size_t)b * 8 * RG), z, h);
		__m512i dmv = _mm512_i32gather_epi32(idx, base + o, 1); /* d | m << 16 */
		_mm512_store_ps(dw + b * RG, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dmv)));
		_mm512_store_ps(dm + b * RG,
				_mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dmv, 16))));
	}
}

/* The same pk, dw and dm from a packed group (pack16; the next group, gb
 * bytes on, prefetched as one stream). */
AVX512_INLINE void pack_rows_p16_min(dtype_t t, const uint8_t *G, size_t gb, int64_t nb,
				     uint32_t *pk, float *dw, float *dm)
{
	const size_t bv = p16_min_block_bytes(t);
	const uint8_t *q = G;
	for (int64_t b = 0; b < nb; b++, q += bv) {
#ifndef GEMM_NO_PREFETCH
		for (size_t k = 0; k < bv; k += 64)
			_mm_prefetch((const char *)q + gb + k, _MM_HINT_T0);
#endif
		__m512i z[4];
#pragma GCC unroll 4
		for (int v = 0; v < 4; v++)
			z[v] = _mm512_loadu_si512((const void *)(q + bv - 256 + 64 * v));
		__m512i h = t == DTYPE_Q5_1 ? _mm512_loadu_si512((const void *)(q + 64))
					    : _mm512_setzero_si512();
		min_groups(t, (__m512i *)(pk + (size_t)b * 8 * RG), z, h);
		_mm512_store_ps(dw + b * RG, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)q)));
		_mm512_store_ps(dm + b * RG,
				_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(q + 32))));
	}
}

/* Block b's float steps for T tokens: acc[k] += (float)s[k] * (d * dx[k
 * nb]) and sm[k] += m * sx[k nb], each product rounded before the add. */
AVX512_INLINE void float_step_min(__m512 *acc, __m512 *sm, const __m512i *s, __m512 d,
				  __m512 m, const float *dx, const float *sx, int64_t nb,
				  const int T)
{
#pragma GCC unroll 8
	for (int k = 0; k < T; k++) {
		__m512 dk = _mm512_mul_ps(d, _mm512_set1_ps(dx[k * nb]));
		__m512 p = _mm512_mul_ps(_mm512_cvtepi32_ps(s[k]), dk);
		VEC_ROUNDED(p);
		acc[k] = _mm512_add_ps(acc[k], p);
		__m512 pm = _mm512_mul_ps(m, _mm512_set1_ps(sx[k * nb]));
		VEC_ROUNDED(pm);
		sm[k] = _mm512_add_ps(sm[k], pm);
	}
}

/* tile() for Q4_1 / Q5_1: T tokens of Q8_1 rows x 16 rows from pk, dw,
 * dm; outputs Y[k * ys + i] for the lanes i in msk. */
AVX512_INLINE void tile_min(const uint32_t *pk, const float *dw, const float *dm,
			    const uint8_t *X, size_t xs, const float *dx, const float *sx,
			    int64_t nb, float *Y, int64_t ys, __mmask16 msk, const int T)
{
	__m512 acc[TG], sm[TG];
#pragma GCC unroll 8
	for (int k = 0; k < T; k++)
		acc[k] = sm[k] = _mm512_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		const __m512i *wb = (const __m512i *)(pk + (size_t)b * 8 * RG);
		const uint8_t *xq = X + (size_t)b * sizeof(block_q8_1) + 4;
		__m512i s[TG];
#pragma GCC unroll 8
		for (int k = 0; k < T; k++)
			s[k] = _mm512_setzero_si512();
#pragma GCC unroll 8
		for (int g = 0; g < 8; g++) {
			__m512i w = _mm512_load_si512(wb + g);
#pragma GCC unroll 8
			for (int k = 0; k < T; k++)
				s[k] = dpbusd512(s[k], w,
					_mm512_set1_epi32(ld_i32(xq + (size_t)k * xs + 4 * g)));
		}
		float_step_min(acc, sm, s, _mm512_load_ps(dw + b * RG), _mm512_load_ps(dm + b * RG),
			       dx + b, sx + b, nb, T);
	}
#pragma GCC unroll 8
	for (int k = 0; k < T; k++)
		_mm512_mask_storeu_ps(Y + k * ys, msk, _mm512_add_ps(acc[k], sm[k]));
}

/* tile_min reading a packed group in place (as tile_p16): the same
 * vectors, sums and float steps, so the same bits. */
AVX512_INLINE void tile_p16_min(dtype_t t, const uint8_t *G, size_t gb, bool first,
				const uint8_t *X, size_t xs, const float *dx, const float *sx,
				int64_t nb, float *Y, int64_t ys, const int T)
{
	const size_t bv = p16_min_block_bytes(t);
	const __m512i m0f = _mm512_set1_epi8(0x0F);
	__m512 acc[TG], sm[TG];
#pragma GCC unroll 8
	for (int k = 0; k < T; k++)
		acc[k] = sm[k] = _mm512_setzero_ps();
	const uint8_t *q = G;
	for (int64_t b = 0; b < nb; b++, q += bv) {
#ifndef GEMM_NO_PREFETCH
		if (first)
			for (size_t k = 0; k < bv; k += 64)
				_mm_prefetch((const char *)q + gb + k, _MM_HINT_T0);
#endif
		const uint8_t *xq = X + (size_t)b * sizeof(block_q8_1) + 4;
		const __m512i h = t == DTYPE_Q5_1 ? _mm512_loadu_si512((const void *)(q + 64))
						  : _mm512_setzero_si512();
		__m512i s[TG];
#pragma GCC unroll 8
		for (int k = 0; k < T; k++)
			s[k] = _mm512_setzero_si512();
#pragma GCC unroll 4
		for (int v = 0; v < 4; v++) {
			__m512i z = _mm512_loadu_si512((const void *)(q + bv - 256 + 64 * v));
			__m512i lo = _mm512_and_si512(z, m0f);
			__m512i hi = _mm512_and_si512(_mm512_srli_epi16(z, 4), m0f);
			if (t == DTYPE_Q5_1) {
				lo = _mm512_or_si512(lo, qh_group16(h, v));
				hi = _mm512_or_si512(hi, qh_group16(h, 4 + v));
			}
#pragma GCC unroll 8
			for (int k = 0; k < T; k++) {
				const uint8_t *xk = xq + (size_t)k * xs;
				s[k] = dpbusd512(s[k], lo, _mm512_set1_epi32(ld_i32(xk + 4 * v)));
				s[k] = dpbusd512(s[k], hi, _mm512_set1_epi32(ld_i32(xk + 16 + 4 * v)));
			}
		}
		__m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)q));
		__m512 m = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(q + 32)));
		float_step_min(acc, sm, s, d, m, dx + b, sx + b, nb, T);
	}
#pragma GCC unroll 8
	for (int k = 0; k < T; k++)
		_mm512_storeu_ps(Y + k * ys, _mm512_add_ps(acc[k], sm[k]));
}

/* gemm_quant for Q4_1 / Q5_1 (sxf: the aux's s as floats): the structure
 * of gemm_quant_avx512vnni below. */
AVX512_INLINE void gemm_min(dtype_t t, const uint8_t *W, size_t rb, const uint8_t *P,
			    int64_t np, const uint8_t *X, size_t xs, const float *dx,
			    const float *sxf, float *Y, int64_t ys, int64_t nb, int64_t r0,
			    int64_t r1, int64_t ntok)
{
	size_t pk_bytes = (size_t)nb * 8 * RG * 4;
	uint8_t *s1 = gemm_scratch(1, pk_bytes + 2 * (size_t)nb * RG * sizeof(float));
	if (!s1) { /* out of memory: the generic twin needs none */
		gemm_rows_generic(t, W, X, xs, Y, ys, nb * QK, r0, r1, ntok);
		return;
	}
	uint32_t *pk = (uint32_t *)s1;
	float *dw = (float *)(s1 + pk_bytes), *dm = dw + nb * RG;
	const size_t gb = P ? pack16_group_bytes(t, nb * QK) : 0;
	for (int64_t r = r0; r < r1; r += RG) {
		bool whole = P && r % RG == 0 && r + RG <= np && r + RG <= r1;
		if (whole && ntok <= GEMM_INPLACE_TOKENS) {
			const uint8_t *G = P + (size_t)(r / RG) * gb;
			for (int64_t k = 0; k < ntok; k += TG) {
#define CALL_P16(T) tile_p16_min(t, G, gb, k == 0, X + (size_t)k * xs, xs, dx + k * nb, \
				 sxf + k * nb, nb, Y + k * ys + r, ys, T)
				TG_SWITCH(ntok - k, CALL_P16)
#undef CALL_P16
			}
			continue;
		}
		if (whole)
			pack_rows_p16_min(t, P + (size_t)(r / RG) * gb, gb, nb, pk, dw, dm);
		else
			pack_rows_min(t, W, rb, r, r1, nb, pk, dw, dm);
		__mmask16 m = r1 - r >= RG ? (__mmask16)0xFFFF
					   : (__mmask16)((1u << (r1 - r)) - 1);
		for (int64_t k = 0; k < ntok; k += TG) {
#define CALL_TILE(T) tile_min(pk, dw, dm, X + (size_t)k * xs, xs, dx + k * nb, sxf + k * nb, \
			      nb, Y + k * ys + r, ys, m, T)
			TG_SWITCH(ntok - k, CALL_TILE)
#undef CALL_TILE
		}
	}
}

AVX512 void AVX512_SYM(gemm_quant_avx512)(GEMM_QUANT_ARGS)
{
	if (q8_1_form(t)) {
		/* Q8_1 activations: sx holds floats (gemm.c aux_region); one
		 * copy of the kernel per type, t a constant in each */
		const float *sxf = (const float *)(const void *)sx;
		if (t == DTYPE_Q4_1)
			gemm_min(DTYPE_Q4_1, W, rb, P, np, X, xs, dx, sxf, Y, ys, nb, r0, r1, ntok);
		else
			gemm_min(DTYPE_Q5_1, W, rb, P, np, X, xs, dx, sxf, Y, ys, nb, r0, r1, ntok);
		return;
	}
	size_t pk_bytes = (size_t)nb * 8 * RG * 4;
	uint8_t *s1 = gemm_scratch(1, pk_bytes + (size_t)nb * RG * sizeof(float));
	if (!s1) { /* out of memory: the generic twin needs none */
		gemm_rows_generic(t, W, X, xs, Y, ys, nb * QK, r0, r1, ntok);
		return;
	}
	uint32_t *pk = (uint32_t *)s1;
	float *dw = (float *)(s1 + pk_bytes);
	const int32_t bias = gemm_wbias(t);
	const size_t gb = P ? pack16_group_bytes(t, nb * QK) : 0;
	for (int64_t r = r0; r < r1; r += RG) {
		bool whole = P && r % RG == 0 && r + RG <= np && r + RG <= r1;
		if (whole && ntok <= GEMM_INPLACE_TOKENS) {
			group_p16(t, P + (size_t)(r / RG) * gb, gb, X, xs, dx, sx, bias, nb,
				  Y + r, ys, ntok);
			continue;
		}
		if (whole)
			pack_rows_p16(t, P + (size_t)(r / RG) * gb, gb, nb, pk, dw);
		else
			pack_rows(t, W, rb, r, r1, nb, pk, dw);
		__mmask16 m = r1 - r >= RG ? (__mmask16)0xFFFF
					   : (__mmask16)((1u << (r1 - r)) - 1);
		for (int64_t k = 0; k < ntok; k += TG) {
			const uint8_t *xk = X + (size_t)k * xs;
			float *yk = Y + k * ys + r;
			const float *dk = dx + k * nb;
			const int32_t *ck = sx + k * nb;
			switch (ntok - k >= TG ? TG : (int)(ntok - k)) {
			case 8: tile(pk, dw, xk, xs, dk, ck, bias, nb, yk, ys, m, 8); break;
			case 7: tile(pk, dw, xk, xs, dk, ck, bias, nb, yk, ys, m, 7); break;
			case 6: tile(pk, dw, xk, xs, dk, ck, bias, nb, yk, ys, m, 6); break;
			case 5: tile(pk, dw, xk, xs, dk, ck, bias, nb, yk, ys, m, 5); break;
			case 4: tile(pk, dw, xk, xs, dk, ck, bias, nb, yk, ys, m, 4); break;
			case 3: tile(pk, dw, xk, xs, dk, ck, bias, nb, yk, ys, m, 3); break;
			case 2: tile(pk, dw, xk, xs, dk, ck, bias, nb, yk, ys, m, 2); break;
			default: tile(pk, dw, xk, xs, dk, ck, bias, nb, yk, ys, m, 1); break;
			}
		}
	}
}

#endif
