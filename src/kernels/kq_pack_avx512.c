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
 * saturation). The decoding of a group and the float steps are
 * kq_pack_avx512.h's, which the amx level's tile kernel shares. */
#include "kernels/kernels_impl.h"
#include "kernels/kquants.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include "kernels/avx512_lanes.h"
#include "kernels/kq_pack_avx512.h"

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

/* sub-block s of one token: the 16 rows' exact sums, times their scales */
AVX512_INLINE __m512i sub_dot(const __m512i *w, const uint8_t *xq, __m512i sc)
{
	__m512i acc = _mm512_setzero_si512();
#pragma GCC unroll 8
	for (int g = 0; g < 8; g++)
		acc = dpbusd512_u7(acc, w[g], _mm512_set1_epi32((int)ld_u32(xq + 4 * g)));
	return _mm512_mullo_epi32(acc, sc);
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
				kq16_sub_weights(h, s, w, five);
				si = _mm512_add_epi32(si, sub_dot(w, xb + 4 + 32 * s, kq16_sub_scales(h, s)));
			}
			kq16_rows_t kr;
			kq16_rows(h, &kr);
			acc = kq16_step(acc, ld_f32(xb), &kr, si, kq16_mins_dot(&kr, xb));
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
			kq16_sub_weights(h, s, w, five);
			__m512i sc = kq16_sub_scales(h, s);
#pragma GCC unroll 8
			for (int k = 0; k < nt; k++)
				si[k] = _mm512_add_epi32(si[k], sub_dot(w, X + (size_t)k * xs + xo + 4 + 32 * s, sc));
		}
		kq16_rows_t kr;
		kq16_rows(h, &kr);
		for (int k = 0; k < nt; k++) {
			const uint8_t *xb = X + (size_t)k * xs + xo;
			acc[k] = kq16_step(acc[k], ld_f32(xb), &kr, si[k], kq16_mins_dot(&kr, xb));
		}
	}
	for (int k = 0; k < nt; k++)
		_mm512_storeu_ps(Y + k * ys, acc[k]);
}

#define Q4K_TOKENS(G, X, xs, Y, ys, nsb, nt) group_tokens(G, X, xs, Y, ys, nsb, nt, 0)
#define Q5K_TOKENS(G, X, xs, Y, ys, nsb, nt) group_tokens(G, X, xs, Y, ys, nsb, nt, 1)

/* ---- Q6_K ---- */

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
				kq16_q6_sub_weights(h, s, w);
				si = _mm512_add_epi32(si, q6_sub_dot(w, xb, s, kq16_q6_scales(h, s)));
			}
			acc = kq16_q6_step(acc, ld_f32(xb), h, si);
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
			kq16_q6_sub_weights(h, s, w);
			__m512i sc = kq16_q6_scales(h, s);
#pragma GCC unroll 8
			for (int k = 0; k < nt; k++)
				si[k] = _mm512_add_epi32(si[k], q6_sub_dot(w, X + (size_t)k * xs + xo, s, sc));
		}
		for (int k = 0; k < nt; k++)
			acc[k] = kq16_q6_step(acc[k], ld_f32(X + (size_t)k * xs + xo), h, si[k]);
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
