/* kernels: AVX-512 levels (F, BW, VL, DQ + FMA, F16C; compiled a second time
 * with VNNI as kernels_avx512vnni.c, see avx512_lanes.h); see
 * kernels_impl.h for what is bit-exact. Every function carries its target
 * attribute; the build has no -march flag.
 *
 * Reading order: helpers; the quantized rows (Q8_0, Q4_0: in both copies,
 * vpdpbusd native or emulated); then, in the avx512 copy only, what does
 * not depend on VNNI (conversions, float rows, float matmat, the forward
 * pass's float math) and the avx512 table; in the avx512vnni copy its
 * table, which names those avx512 kernels, and the amx level's, the same
 * but for the quantized gemm (gemm_amx.c).
 *
 * Same structure as kernels_avx2.c: a row-group template runs R = 4 rows
 * (the body of a range) or R = 1 (the rest, and vec_dot) with the same
 * per-row operation sequence.
 *
 * Quantized dot products use vpdpbusd (unsigned x signed bytes, 4-byte groups
 * into int32) with the weights made unsigned and the activations signed:
 *   Q8_0: (w ^ 0x80) = w + 128, so sum w x = sum (w+128) x - 128 sum x;
 *   Q4_0: nibbles n in 0..15, so sum (n-8) x = sum n x - 8 sum x;
 * the correction depends only on the activations, so it is computed once per
 * block and used as the accumulator's start value for every row. The sums
 * are exact, any weight byte (-128 included) is handled, and the float
 * accumulation is the generic's (acc + (float)sumi * (dw * dx), block by
 * block, no FMA), so results equal the generic bit for bit.
 *
 * BF16 weights are widened to f32 (a shift) and multiplied with FMA against
 * f32 activations. vdpbf16ps is not used: it would round the activations to
 * bf16 (a loss of 8 bits on the hot path), and the kernel is limited by
 * memory bandwidth, not by the widening.
 *
 * Quantized matvec reads the packed copy where the model has one
 * (matvec_p16: pack16's layout, kernels.h; what decode runs), else 16 rows
 * at a time where it can (dot_rows_quant16: rows in lanes, the same layout
 * transposed in registers, no horizontal sums; same bits), then the
 * 4-row / 1-row forms below. The packed form is the fastest from memory:
 * one linear stream per group of 16 rows.
 *
 * Why the forms are shaped so: the 16-row form's costs are the 16 row
 * scales per block (built in integer registers, 4 x pack4: a vpgatherdd
 * was slower) and the in-register transpose. The 4-row form is bound by
 * per-block work (building the 4-row scale vectors, the transposed
 * block-sum reduction). Tried and slower: staging a chunk's scales
 * through a stack array (store-forwarding stalls), vpgatherdd for the
 * scales, a 256-bit form without lane inserts. Software prefetch costs in
 * cache and gains from DRAM. Float matmat (prefill) runs 4 rows x 3
 * tokens with the loads held in registers (matmat_float). The measured
 * figures behind each choice, with their commands: doc/measurements.md. */
#include "kernels/kernels_impl.h"

#if defined(__x86_64__)

#include <immintrin.h>
#include <math.h>

#include "base/alloc.h"
#include "kernels/avx512_lanes.h"
#include "kernels/gemm_impl.h"
#include "kernels/kquants.h"
#include "kernels/vexp_x86.h"

/* ---------------------------------------------------------- helpers */

/* Software prefetch, per row of a 4-row group, PF_ROW_DIST bytes ahead of
 * where that row is being read; past a row's end the stream continues at the
 * same offset in the row 4 further on, the one the next group reads in the
 * same lane. So every row starts warm, the next group's and the next
 * chunk's (1 core: the next chunk is this core's; 2 cores: the other core
 * finds the lines in this one's cache) included. Two earlier schemes lost:
 * a fixed distance inside the address stream of each row (the next group's
 * rows 1-3 started cold), and one linear cursor over the chunk's bytes
 * (rows of 8 KiB, F32, are further apart than any useful lead: rows 2-3 were
 * not covered; F32 fell to 0.7x). Prefetches never fault. */
#ifndef PF_ROW_DIST
#define PF_ROW_DIST 2048
#endif

typedef struct pf_rows {
	size_t rb; /* bytes per row */
} pf_rows_t;

/* Prefetches `lines` lines per row at offset off + PF_ROW_DIST. */
AVX512_INLINE void pf_group(const pf_rows_t *pf, const uint8_t *const *w, size_t off,
			    const int lines)
{
	size_t a = off + PF_ROW_DIST;
	size_t jump = a >= pf->rb ? 3 * pf->rb : 0;
	for (int r = 0; r < 4; r++)
		for (int k = 0; k < lines; k++)
			_mm_prefetch((const char *)w[r] + a + jump + 64 * (size_t)k, _MM_HINT_T0);
}

/* Lanes 0..rem-1 (none when rem <= 0: the second half of a pair load
 * past the end). */
AVX512_INLINE __mmask16 tail_mask(int64_t rem)
{
	return rem >= 16 ? (__mmask16)0xFFFF
	       : rem <= 0 ? (__mmask16)0 : (__mmask16)((1u << rem) - 1);
}

/* ---------------------------------------------------- quantized rows */

/* Quants and scale of activation block b (x: Q8_0 blocks as bytes). */
#define XQS(x, b) ((x) + (size_t)(b) * sizeof(block_q8_0) + 2)
#define XD(x, b) ((x) + (size_t)(b) * sizeof(block_q8_0))

AVX512_INLINE size_t qbytes(dtype_t t)
{
	return t == DTYPE_Q8_0 ? sizeof(block_q8_0) : sizeof(block_q4_0);
}

/* Weights of blocks b and b+1 of row w as unsigned bytes, in the 128-bit
 * lane layout of xpair: Q8_0 (w + 128) [b 0-15 | b 16-31 | b+1 0-15 |
 * b+1 16-31]; Q4_0 (nibbles) [b lo | b+1 lo | b hi | b+1 hi], where lo are
 * elements 0-15 (low nibbles) and hi 16-31: one lane insert either way. */
AVX512_INLINE __m512i wpair(dtype_t t, const uint8_t *w, int64_t b)
{
	const uint8_t *p = w + (size_t)b * qbytes(t) + 2;
	if (t == DTYPE_Q8_0) {
		__m512i z = _mm512_inserti64x4(
			_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)p)),
			_mm256_loadu_si256((const __m256i *)(p + sizeof(block_q8_0))), 1);
		return _mm512_xor_si512(z, _mm512_set1_epi8((char)0x80));
	}
	__m256i q = _mm256_inserti128_si256(
		_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)p)),
		_mm_loadu_si128((const __m128i *)(p + sizeof(block_q4_0))), 1);
	__m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
	return _mm512_and_si512(z, _mm512_set1_epi8(0x0F));
}

/* Activation blocks b and b+1 in the lane layout of wpair. */
AVX512_INLINE __m512i xpair(dtype_t t, const uint8_t *x, int64_t b)
{
	if (t == DTYPE_Q8_0)
		return _mm512_inserti64x4(
			_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)XQS(x, b))),
			_mm256_loadu_si256((const __m256i *)XQS(x, b + 1)), 1);
	__m512i z = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)XQS(x, b)));
	z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)XQS(x, b + 1)), 1);
	z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(XQS(x, b) + 16)), 2);
	return _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(XQS(x, b + 1) + 16)), 3);
}

/* Folds the lanes of a pair layout: 128-bit lane 0 of the result holds
 * block b's lanes summed, lane 1 block b+1's (lanes 2, 3: don't care). */
AVX512_INLINE __m512i fold_pair(dtype_t t, __m512i s)
{
	if (t == DTYPE_Q8_0) { /* b = L0 + L1, b+1 = L2 + L3 */
		s = _mm512_add_epi32(s, _mm512_shuffle_i64x2(s, s, _MM_SHUFFLE(2, 3, 0, 1)));
		return _mm512_shuffle_i64x2(s, s, _MM_SHUFFLE(0, 0, 2, 0));
	} /* b = L0 + L2, b+1 = L1 + L3 */
	return _mm512_add_epi32(s, _mm512_shuffle_i64x2(s, s, _MM_SHUFFLE(1, 0, 3, 2)));
}

/* One block b of row w, unsigned bytes as above, 256 bits. */
AVX512_INLINE __m256i wone(dtype_t t, const uint8_t *w, int64_t b)
{
	const uint8_t *p = w + (size_t)b * qbytes(t) + 2;
	if (t == DTYPE_Q8_0)
		return _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)p),
					_mm256_set1_epi8((char)0x80));
	__m128i q = _mm_loadu_si128((const __m128i *)p);
	return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q),
				_mm256_set1_epi8(0x0F));
}

AVX512_INLINE uint16_t wd(dtype_t t, const uint8_t *w, int64_t b)
{
	return ld_u16(w + (size_t)b * qbytes(t));
}


static inline uint64_t pack4(uint16_t a, uint16_t b, uint16_t c, uint16_t d)
{
	return (uint64_t)a | (uint64_t)b << 16 | (uint64_t)c << 32 | (uint64_t)d << 48;
}

/* Start value of the vpdpbusd accumulators: -(128 or 8) * sum x per group
 * of 4 bytes. */
AVX512_INLINE __m512i corr512(dtype_t t, __m512i x)
{
	__m512i c = dpbusd512(_mm512_setzero_si512(),
					_mm512_set1_epi8(t == DTYPE_Q8_0 ? (char)0x80 : 8), x);
	return _mm512_sub_epi32(_mm512_setzero_si512(), c);
}

AVX512_INLINE __m256i corr256(dtype_t t, __m256i x)
{
	__m256i c = dpbusd256(_mm256_setzero_si256(),
					_mm256_set1_epi8(t == DTYPE_Q8_0 ? (char)0x80 : 8), x);
	return _mm256_sub_epi32(_mm256_setzero_si256(), c);
}

/* Blocks two at a time, then one if nb is odd. Per block and row the float
 * step is acc = acc + (float)sumi * (dw * dx), in lane r of acc4 (R = 4) or
 * in the scalar acc1 (R = 1): the generic's sequence. */
AVX512_INLINE void dot_rows_quant(dtype_t t, const uint8_t *const *w, const uint8_t *x,
				  int64_t nb, float *out, const int R, const pf_rows_t *pf)
{
	__m128 acc4 = _mm_setzero_ps();
	float acc1 = 0.0f;
	int64_t b = 0;
	for (; b + 2 <= nb; b += 2) {
		__m512i xq = xpair(t, x, b);
		__m512i c = corr512(t, xq);
		uint16_t hxa = ld_u16(XD(x, b)), hxb = ld_u16(XD(x, b + 1));
		if (R == 4) {
			pf_group(pf, w, (size_t)b * qbytes(t), 1);
			__m512i p0 = dpbusd512(c, wpair(t, w[0], b), xq);
			__m512i p1 = dpbusd512(c, wpair(t, w[1], b), xq);
			__m512i p2 = dpbusd512(c, wpair(t, w[2], b), xq);
			__m512i p3 = dpbusd512(c, wpair(t, w[3], b), xq);
			/* transpose-reduce: each 128-bit lane -> [r0 r1 r2 r3] */
			__m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(p0, p1),
						       _mm512_unpackhi_epi32(p0, p1));
			__m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(p2, p3),
						       _mm512_unpackhi_epi32(p2, p3));
			__m512i s = _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23),
						     _mm512_unpackhi_epi64(s01, s23));
			__m256i sab = _mm512_castsi512_si256(fold_pair(t, s));
			/* the 8 weight scales packed in two integer registers (ALU
			 * ports; vector inserts would compete with the shuffles) */
			uint64_t ha = pack4(wd(t, w[0], b), wd(t, w[1], b), wd(t, w[2], b), wd(t, w[3], b));
			uint64_t hb = pack4(wd(t, w[0], b + 1), wd(t, w[1], b + 1),
					    wd(t, w[2], b + 1), wd(t, w[3], b + 1));
			__m256 dw = _mm256_cvtph_ps(_mm_set_epi64x((long long)hb, (long long)ha));
			__m256 dx = _mm256_cvtph_ps(_mm_set_epi64x(
				(long long)(hxb * 0x0001000100010001ull),
				(long long)(hxa * 0x0001000100010001ull)));
			__m256 p = _mm256_mul_ps(_mm256_cvtepi32_ps(sab), _mm256_mul_ps(dw, dx));
			FP_ROUNDED(p);
			acc4 = _mm_add_ps(acc4, _mm256_castps256_ps128(p));
			acc4 = _mm_add_ps(acc4, _mm256_extractf128_ps(p, 1));
		} else {
			__m256i p = _mm512_castsi512_si256(
				fold_pair(t, dpbusd512(c, wpair(t, w[0], b), xq)));
			int32_t sa = hsum128_epi32(_mm256_castsi256_si128(p));
			int32_t sb = hsum128_epi32(_mm256_extracti128_si256(p, 1));
			float da = fp16_to_f32_inline(wd(t, w[0], b)) * fp16_to_f32_inline(hxa);
			float db = fp16_to_f32_inline(wd(t, w[0], b + 1)) * fp16_to_f32_inline(hxb);
			float pa = (float)sa * da, pb = (float)sb * db;
			FP_ROUNDED(pa);
			FP_ROUNDED(pb);
			acc1 = acc1 + pa;
			acc1 = acc1 + pb;
		}
	}
	if (b < nb) {
		__m256i xq = _mm256_loadu_si256((const __m256i *)XQS(x, b));
		__m256i c = corr256(t, xq);
		float dx = fp16_to_f32_inline(ld_u16(XD(x, b)));
		if (R == 4) {
			__m256i p0 = dpbusd256(c, wone(t, w[0], b), xq);
			__m256i p1 = dpbusd256(c, wone(t, w[1], b), xq);
			__m256i p2 = dpbusd256(c, wone(t, w[2], b), xq);
			__m256i p3 = dpbusd256(c, wone(t, w[3], b), xq);
			__m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
			__m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
			__m128 dw = _mm_cvtph_ps(_mm_setr_epi16((short)wd(t, w[0], b),
				(short)wd(t, w[1], b), (short)wd(t, w[2], b),
				(short)wd(t, w[3], b), 0, 0, 0, 0));
			__m128 d = _mm_mul_ps(dw, _mm_set1_ps(dx));
			__m128 prod = _mm_mul_ps(_mm_cvtepi32_ps(s), d);
			FP_ROUNDED(prod);
			acc4 = _mm_add_ps(acc4, prod);
		} else {
			int32_t s = hsum256_epi32(dpbusd256(c, wone(t, w[0], b), xq));
			float d = fp16_to_f32_inline(wd(t, w[0], b)) * dx;
			float prod = (float)s * d;
			FP_ROUNDED(prod);
			acc1 = acc1 + prod;
		}
	}
	if (R == 4)
		_mm_storeu_ps(out, acc4);
	else
		out[0] = acc1;
}

/* ------------------------------------------- quantized, 16 rows in lanes */

/* Rows r..r+15 of a quantized matrix with lane i of every vector = row i,
 * the layout of the prefill gemm (gemm_avx512.c) built in registers from
 * the rows as stored: per block, the 16 rows' quants are loaded in 128-bit
 * quarters (rows i, 4+i, 8+i, 12+i side by side) and transposed 4x4 in
 * each lane (transpose_lanes4), so vector g holds element group g (4 bytes) of
 * every row; vpdpbusd against the activations' group g broadcast leaves
 * each row's exact block sum in its lane (two chains, low and high half of
 * the block, added as integers), with no horizontal sum. The row scales
 * are read as scalars and packed 4 to an integer register (a vpgatherdd
 * was slower); vcvtph2ps is bit-exact with fp16_to_f32_inline. The
 * float step per lane is the generic's:
 *     acc = acc + (float)sumi * (dw * dx)
 * blocks in ascending order, the product rounded before the add. The
 * activations' per-block start values (-bias * sum x) and scales are
 * computed once per call (x16_prepare). The small loops are unrolled by
 * pragma so the 4 (8) vectors of a block stay in registers (GCC kept them on
 * the stack otherwise, at the cost of the whole gain). */
#define Q16_NBMAX 512 /* blocks per row the stack arrays hold (16384 elements) */

#ifndef PF16_ROW_DIST
/* how far ahead the 16-row form prefetches each row, in bytes (the best
 * of 128..1024 on long q4_0 rows; doc/measurements.md) */
#define PF16_ROW_DIST 256
#endif
/* Rows so short that a group of 16 is at most this many bytes are
 * prefetched a group ahead as one region instead of per row: a 256-byte
 * lead inside a 612-byte row (smollm-135m q8_0, n = 576) is no lead at all.
 * With long rows (tinyllama-1.1b, n = 2048, 34 KiB groups) the group-ahead
 * form was slower: per row there (doc/measurements.md). */
#define PF16_LINEAR_MAX (16u << 10)

/* Activation block b's start value -bias * sum x (bias 128 for Q8_0, 8 for
 * Q4_0: the weights are made unsigned) and scale as a float. */
AVX512_INLINE void x16_prepare(dtype_t t, const uint8_t *x, int64_t nb, int32_t *cx,
			       float *dx)
{
	for (int64_t b = 0; b < nb; b++) {
		__m256i c = corr256(t, _mm256_loadu_si256((const __m256i *)XQS(x, b)));
		cx[b] = hsum256_epi32(c);
		dx[b] = ld_f16_f16c(XD(x, b));
	}
}

/* 16 bytes at offset o of rows i, 4+i, 8+i, 12+i (row k at p + k * rb). */
AVX512_INLINE __m512i quarters(const uint8_t *p, size_t rb, int i, size_t o)
{
	__m512i a = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(p + i * rb + o)));
	a = _mm512_inserti32x4(a, _mm_loadu_si128((const __m128i *)(p + (4 + i) * rb + o)), 1);
	a = _mm512_inserti32x4(a, _mm_loadu_si128((const __m128i *)(p + (8 + i) * rb + o)), 2);
	return _mm512_inserti32x4(a, _mm_loadu_si128((const __m128i *)(p + (12 + i) * rb + o)), 3);
}

/* Rows w .. w + 15 rb -> out[0..15]. Each row has a
 * software prefetch stream PF16_ROW_DIST bytes ahead of where it is read;
 * past the row's end it continues in the row 16 further on (the next
 * group's row in the same lane). */
AVX512_INLINE void dot_rows_quant16(dtype_t t, const uint8_t *w, size_t rb,
				    const uint8_t *x, const int32_t *cx, const float *dx,
				    int64_t nb, float *out)
{
	const size_t qb = qbytes(t);
	const __m512i m0f = _mm512_set1_epi8(0x0F), m80 = _mm512_set1_epi8((char)0x80);
	const uint8_t *q = w + 2;
	__m512 acc = _mm512_setzero_ps();
	const int linear = 16 * rb <= PF16_LINEAR_MAX;
	for (int64_t b = 0; b < nb; b++) {
		const size_t o = (size_t)b * qb;
		if (linear) {
			/* short rows: the next group of 16 rows, read as one
			 * contiguous region, block b prefetching its share
			 * (16 qb bytes) of it */
			const char *pa = (const char *)w + 16 * rb + (size_t)b * 16 * qb;
			for (size_t k = 0; k < 16 * qb; k += 64)
				_mm_prefetch(pa + k, _MM_HINT_T0);
		} else if ((o & 63) < qb) {
			size_t a = o + PF16_ROW_DIST;
			const uint8_t *pa = w + a + (a >= rb ? 15 * rb : 0);
#pragma GCC unroll 16
			for (int i = 0; i < 16; i++)
				_mm_prefetch((const char *)pa + (size_t)i * rb, _MM_HINT_T0);
		}
		const uint8_t *xq = XQS(x, b);
		__m512i sa = _mm512_set1_epi32(cx[b]), sb = _mm512_setzero_si512();
		if (t == DTYPE_Q4_0) {
			__m512i z[4];
#pragma GCC unroll 4
			for (int i = 0; i < 4; i++)
				z[i] = quarters(q, rb, i, o);
			transpose_lanes4(z);
#pragma GCC unroll 4
			for (int g = 0; g < 4; g++) {
				sa = dpbusd512_u7(sa, _mm512_and_si512(z[g], m0f),
					_mm512_set1_epi32((int)ld_u32(xq + 4 * g)));
				sb = dpbusd512_u7(sb, _mm512_and_si512(_mm512_srli_epi16(z[g], 4), m0f),
					_mm512_set1_epi32((int)ld_u32(xq + 16 + 4 * g)));
			}
		} else {
			__m512i lo[4], hi[4];
#pragma GCC unroll 4
			for (int i = 0; i < 4; i++) {
				lo[i] = quarters(q, rb, i, o);
				hi[i] = quarters(q, rb, i, o + 16);
			}
			transpose_lanes4(lo);
			transpose_lanes4(hi);
#pragma GCC unroll 4
			for (int g = 0; g < 4; g++) {
				sa = dpbusd512(sa, _mm512_xor_si512(lo[g], m80),
					_mm512_set1_epi32((int)ld_u32(xq + 4 * g)));
				sb = dpbusd512(sb, _mm512_xor_si512(hi[g], m80),
					_mm512_set1_epi32((int)ld_u32(xq + 16 + 4 * g)));
			}
		}
		/* the 16 row scales, packed in integer registers */
		const uint8_t *pd = w + o;
		__m256i hw = _mm256_set_epi64x(
			(long long)pack4(ld_u16(pd + 12 * rb), ld_u16(pd + 13 * rb),
					 ld_u16(pd + 14 * rb), ld_u16(pd + 15 * rb)),
			(long long)pack4(ld_u16(pd + 8 * rb), ld_u16(pd + 9 * rb),
					 ld_u16(pd + 10 * rb), ld_u16(pd + 11 * rb)),
			(long long)pack4(ld_u16(pd + 4 * rb), ld_u16(pd + 5 * rb),
					 ld_u16(pd + 6 * rb), ld_u16(pd + 7 * rb)),
			(long long)pack4(ld_u16(pd), ld_u16(pd + rb),
					 ld_u16(pd + 2 * rb), ld_u16(pd + 3 * rb)));
		__m512 d = _mm512_mul_ps(_mm512_cvtph_ps(hw), _mm512_set1_ps(dx[b]));
		__m512 p = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(sa, sb)), d);
		VEC_ROUNDED(p);
		acc = _mm512_add_ps(acc, p);
	}
	_mm512_storeu_ps(out, acc);
}

/* Packed groups (pack16, kernels.h): the same lanes and the same float
 * steps as dot_rows_quant16, the bytes already in vector order: one linear
 * stream, left to the hardware prefetcher. A software prefetch stream was
 * measured and dropped: it was no faster in decode and slower from memory
 * (the prefetches compete with the q4_0 kernel's ALU work), at every
 * distance tried (doc/measurements.md). */
AVX512_INLINE void matvec_p16(dtype_t t, const void *P, const void *xa, float *y,
			      int64_t n, int64_t ng)
{
	const uint8_t *x = xa;
	const int64_t nb = n / QK;
	const size_t qv = t == DTYPE_Q8_0 ? 512 : 256;
	const __m512i m0f = _mm512_set1_epi8(0x0F);
	int32_t cx[P16_NBMAX];
	float dx[P16_NBMAX];
	/* The chunk's first 2 KiB at once: the hardware prefetcher needs a
	 * few misses to pick up a new stream, and a chunk starts one whenever
	 * it is not the one after the member's last (a wave's first chunk, a
	 * stolen one). 2 KiB gained most of the sizes tried
	 * (doc/measurements.md). */
	for (size_t k = 0; k < 2048; k += 64)
		_mm_prefetch((const char *)P + k, _MM_HINT_T0);
	x16_prepare(t, x, nb, cx, dx);
	const uint8_t *p = P, *sc = P;
	for (int64_t g = 0; g < ng; g++) {
		__m512 acc = _mm512_setzero_ps();
		for (int64_t b = 0; b < nb; b++) {
			if (!(b & 1)) { /* a pair's scales */
				sc = p;
				p += 64;
			}
			const uint8_t *xq = XQS(x, b);
			__m512i sa = _mm512_set1_epi32(cx[b]), sb = _mm512_setzero_si512();
			if (t == DTYPE_Q4_0) {
#pragma GCC unroll 4
				for (int v = 0; v < 4; v++) {
					__m512i z = _mm512_loadu_si512((const void *)(p + 64 * v));
					sa = dpbusd512_u7(sa, _mm512_and_si512(z, m0f),
						_mm512_set1_epi32((int)ld_u32(xq + 4 * v)));
					sb = dpbusd512_u7(sb, _mm512_and_si512(_mm512_srli_epi16(z, 4), m0f),
						_mm512_set1_epi32((int)ld_u32(xq + 16 + 4 * v)));
				}
			} else {
#pragma GCC unroll 4
				for (int v = 0; v < 4; v++) {
					sa = dpbusd512(sa, _mm512_loadu_si512((const void *)(p + 64 * v)),
						_mm512_set1_epi32((int)ld_u32(xq + 4 * v)));
					sb = dpbusd512(sb, _mm512_loadu_si512((const void *)(p + 256 + 64 * v)),
						_mm512_set1_epi32((int)ld_u32(xq + 16 + 4 * v)));
				}
			}
			p += qv;
			__m512 d = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256(
							 (const __m256i *)(sc + 32 * (b & 1)))),
						 _mm512_set1_ps(dx[b]));
			__m512 pr = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(sa, sb)), d);
			VEC_ROUNDED(pr);
			acc = _mm512_add_ps(acc, pr);
		}
		_mm512_storeu_ps(y + 16 * g, acc);
	}
}

/* Rows r0..r1-1: groups of 16 (when the row and the range allow), then
 * groups of 4, then single rows; every row the generic's bits. */
AVX512_INLINE void matvec_quant(dtype_t t, const void *W, size_t rb, const void *xa,
				float *y, int64_t n, int64_t r0, int64_t r1)
{
	const uint8_t *base = W, *x = xa;
	const int64_t nb = n / QK;
	const pf_rows_t pf = { rb };
	int64_t r = r0;
	if (r1 - r0 >= 16 && nb <= Q16_NBMAX) {
		int32_t cx[Q16_NBMAX];
		float dx[Q16_NBMAX];
		x16_prepare(t, x, nb, cx, dx);
		for (; r + 16 <= r1; r += 16)
			dot_rows_quant16(t, base + (size_t)r * rb, rb, x, cx, dx, nb, y + r);
	}
	for (; r + 4 <= r1; r += 4) {
		const uint8_t *wr[4] = { base + (size_t)r * rb, base + (size_t)(r + 1) * rb,
					 base + (size_t)(r + 2) * rb, base + (size_t)(r + 3) * rb };
		dot_rows_quant(t, wr, x, nb, y + r, 4, &pf);
	}
	for (; r < r1; r++) {
		const uint8_t *wr[1] = { base + (size_t)r * rb };
		dot_rows_quant(t, wr, x, nb, y + r, 1, NULL);
	}
}

/* quantized entry points: matvec_quant (16-row groups first) */
#define QUANT1(T, wr, xa, n, out) \
	dot_rows_quant(T, wr, (const uint8_t *)(xa), (n) / QK, out, 1, NULL)
#define DEFINE_QUANT_KERNELS(tag, T)                                                 \
	AVX512 static float AVX512_SYM(dot_##tag##_avx512)(const void *w, const void *xa, \
							  int64_t n)                  \
	{                                                                             \
		const uint8_t *wr[1] = { w };                                         \
		float out[1];                                                         \
		QUANT1(T, wr, xa, n, out);                                            \
		return out[0];                                                        \
	}                                                                             \
	AVX512 static void AVX512_SYM(matvec_##tag##_avx512)(const void *W, size_t rb,   \
							    const void *xa, float *y,   \
							    int64_t n, int64_t r0,      \
							    int64_t r1)                 \
	{                                                                             \
		matvec_quant(T, W, rb, xa, y, n, r0, r1);                             \
	}                                                                             \
	AVX512 static void AVX512_SYM(matvec_p16_##tag##_avx512)(const void *P,          \
								const void *xa, float *y, \
								int64_t n, int64_t ng)    \
	{                                                                             \
		matvec_p16(T, P, xa, y, n, ng);                                       \
	}
DEFINE_QUANT_KERNELS(q8_0, DTYPE_Q8_0)
DEFINE_QUANT_KERNELS(q4_0, DTYPE_Q4_0)

/* ------------------------------------- Q4_1 / Q5_1 packed, 16 rows in lanes */

/* Packed groups of Q4_1 or Q5_1 (pack16's layout, kernels_impl.h
 * q8_1_form) against Q8_1 activations: per block, the 16 rows' unsigned
 * quants (nibbles, Q5_1's fifth bits or'ed in: qh_group16) against the
 * token's groups broadcast leave each row's exact sum q x in its lane
 * (u <= 31: the emulated vpdpbusd cannot saturate); then per lane
 * dot_legacy's float steps (kquants.c):
 *     acc = acc + (float)sumi * (dw * dx),  summ = summ + m * s_x
 * each product rounded before its add, the row's result acc + summ. So
 * every row has the generic's bits. */
AVX512_INLINE void matvec_p16_min(dtype_t t, const void *P, const void *xa, float *y,
				  int64_t n, int64_t ng)
{
	const uint8_t *x = xa;
	const int64_t nb = n / QK;
	const size_t xb = sizeof(block_q8_1), bv = p16_min_block_bytes(t);
	const __m512i m0f = _mm512_set1_epi8(0x0F);
	float dx[P16_NBMAX], sx[P16_NBMAX];
	for (size_t k = 0; k < 2048; k += 64) /* as matvec_p16 */
		_mm_prefetch((const char *)P + k, _MM_HINT_T0);
	for (int64_t b = 0; b < nb; b++) {
		dx[b] = ld_f16_f16c(x + (size_t)b * xb);
		sx[b] = ld_f16_f16c(x + (size_t)b * xb + 2);
	}
	const uint8_t *p = P;
	for (int64_t g = 0; g < ng; g++) {
		__m512 acc = _mm512_setzero_ps(), summ = _mm512_setzero_ps();
		for (int64_t b = 0; b < nb; b++, p += bv) {
			const uint8_t *xq = x + (size_t)b * xb + 4, *q = p + bv - 256;
			const __m512i h = t == DTYPE_Q5_1 ? _mm512_loadu_si512((const void *)(p + 64))
							  : _mm512_setzero_si512();
			__m512i sa = _mm512_setzero_si512(), sb = _mm512_setzero_si512();
#pragma GCC unroll 4
			for (int v = 0; v < 4; v++) {
				__m512i z = _mm512_loadu_si512((const void *)(q + 64 * v));
				__m512i lo = _mm512_and_si512(z, m0f);
				__m512i hi = _mm512_and_si512(_mm512_srli_epi16(z, 4), m0f);
				if (t == DTYPE_Q5_1) {
					lo = _mm512_or_si512(lo, qh_group16(h, v));
					hi = _mm512_or_si512(hi, qh_group16(h, 4 + v));
				}
				sa = dpbusd512_u7(sa, lo, _mm512_set1_epi32((int)ld_u32(xq + 4 * v)));
				sb = dpbusd512_u7(sb, hi, _mm512_set1_epi32((int)ld_u32(xq + 16 + 4 * v)));
			}
			__m512 d = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)),
						 _mm512_set1_ps(dx[b]));
			__m512 pr = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(sa, sb)), d);
			VEC_ROUNDED(pr);
			acc = _mm512_add_ps(acc, pr);
			__m512 pm = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256(
							  (const __m256i *)(p + 32))),
						  _mm512_set1_ps(sx[b]));
			VEC_ROUNDED(pm);
			summ = _mm512_add_ps(summ, pm);
		}
		_mm512_storeu_ps(y + 16 * g, _mm512_add_ps(acc, summ));
	}
}

AVX512 static void AVX512_SYM(matvec_p16_q4_1_avx512)(const void *P, const void *xa, float *y,
						      int64_t n, int64_t ng)
{
	matvec_p16_min(DTYPE_Q4_1, P, xa, y, n, ng);
}

AVX512 static void AVX512_SYM(matvec_p16_q5_1_avx512)(const void *P, const void *xa, float *y,
						      int64_t n, int64_t ng)
{
	matvec_p16_min(DTYPE_Q5_1, P, xa, y, n, ng);
}

/* The attention kernels per KV type, the same in both AVX-512 tables. */
#define KV_OPS_AVX512 { \
	[KV_F16] = {attention_f16_avx512, attn_rows_f16_avx512, \
		    attn_rows_heads_f16_avx512}, \
	[KV_F32] = {attention_f32_avx512, attn_rows_f32_avx512, \
		    attn_rows_heads_f32_avx512}, \
	[KV_Q8_0] = {attention_q8_0_avx512, attn_rows_q8_0_avx512, \
		     attn_rows_heads_q8_0_avx512}, \
}

/* ====================================================================
 * The kernels that do not depend on VNNI: compiled once, at the avx512
 * level, and named by both avx512 tables. */

#if !EGANG_AVX512_VNNI

/* ------------------------------------------------------ conversions */

AVX512 void fp16_to_f32_row_avx512(const void *xv, float *y, int64_t n)
{
	const uint8_t *x = xv;
	int64_t i = 0;
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x + 2 * i))));
	for (; i < n; i++)
		y[i] = fp16_to_f32_inline(ld_u16(x + 2 * i));
}

AVX512 void f32_to_fp16_row_avx512(const float *x, void *yv, int64_t n)
{
	uint8_t *y = yv;
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) /* imm 0: round to nearest even */
		_mm256_storeu_si256((__m256i *)(y + 2 * i),
				    _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
	for (; i < n; i++)
		st_u16(y + 2 * i, f32_to_fp16_inline(x[i]));
}

/* Q8_0 quantization, bit-exact with the generic (same argument as
 * quantize_q8_0_avx2: NaN never wins the max, v = x * (127 / amax), NaN
 * clamps to -127, round half to even as rintf). */
AVX512 void quantize_q8_0_avx512(const float *x, void *yv, int64_t n)
{
	uint8_t *y = yv;
	const __m512 m127 = _mm512_set1_ps(-127.0f), p127 = _mm512_set1_ps(127.0f);
	for (int64_t b = 0; b < n / QK; b++) {
		const float *xb = x + b * QK;
		__m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
		__m512 m = _mm512_max_ps(_mm512_abs_ps(v0), _mm512_setzero_ps());
		m = _mm512_max_ps(_mm512_abs_ps(v1), m);
		float amax = hmax256_ps(_mm256_max_ps(_mm512_castps512_ps256(m),
			_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(m), 1))));
		float d = amax / 127.0f;
		uint8_t *yb = y + b * sizeof(block_q8_0);
		st_u16(yb, f32_to_fp16_inline(d));
		if (amax == 0.0f) {
			memset(yb + 2, 0, QK);
			continue;
		}
		const __m512 vid = _mm512_set1_ps(127.0f / amax);
		__m512i q[2];
		for (int k = 0; k < 2; k++) {
			__m512 t = _mm512_mul_ps(k ? v1 : v0, vid);
			t = _mm512_min_ps(_mm512_max_ps(t, m127), p127);
			t = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
			q[k] = _mm512_cvttps_epi32(t);
		}
		_mm_storeu_si128((__m128i *)(yb + 2), _mm512_cvtepi32_epi8(q[0]));
		_mm_storeu_si128((__m128i *)(yb + 18), _mm512_cvtepi32_epi8(q[1]));
	}
}

/* ------------------------------------------------ float-weight rows */

/* 16 weights of type t at element i of row w (lanes outside mask: 0). */
AVX512_INLINE __m512 load16(dtype_t t, const uint8_t *w, int64_t i, __mmask16 m)
{
	if (t == DTYPE_F32)
		return _mm512_maskz_loadu_ps(m, (const float *)w + i);
	__m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)w + i);
	if (t == DTYPE_F16)
		return _mm512_cvtph_ps(h);
	return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Per row: two 16-lane FMA accumulators over steps of 32 elements; a ragged
 * tail (< 32) is one more step with masked (zero-filled) loads; then
 * hsum512_ps(acc0 + acc1). The R = 4 and R = 1 forms are written out (not
 * loops over r) so the accumulators stay in registers: the loop form kept
 * them on the stack and ran at half the speed. `pf`, when not NULL, turns
 * on the per-row software prefetch streams (pf_group). Row r's
 * step of elements i .. i + 31 is at w[r] + (i / 32) * stride: stride 32
 * elements for rows as stored, 4 x 32 for packed groups (kernels.h). */
#define FLOAT_STEP(r, xa, xb, m0, m1)                                          \
	do {                                                                  \
		const uint8_t *ws_ = w[r] + (size_t)(i >> 5) * stride;        \
		a##r##0 = _mm512_fmadd_ps(load16(t, ws_, 0, m0), xa, a##r##0); \
		a##r##1 = _mm512_fmadd_ps(load16(t, ws_, 16, m1), xb, a##r##1); \
	} while (0)


/* Bytes of one 32-element step of a float row (F32: 128, F16/BF16: 64). */
AVX512_INLINE size_t fstep_bytes(dtype_t t) { return 32 * (size_t)(t == DTYPE_F32 ? 4 : 2); }

AVX512_INLINE void dot_rows_float4(dtype_t t, const uint8_t *const *w, const float *x,
				   int64_t n, float *out, const pf_rows_t *pf, size_t stride)
{
	__m512 a00 = _mm512_setzero_ps(), a01 = a00, a10 = a00, a11 = a00;
	__m512 a20 = a00, a21 = a00, a30 = a00, a31 = a00;
	const size_t es = t == DTYPE_F32 ? 4 : 2;
	int64_t i = 0;
	for (; i + 32 <= n; i += 32) {
		if (pf)
			pf_group(pf, w, (size_t)i * es, t == DTYPE_F32 ? 2 : 1);
		__m512 x0 = _mm512_loadu_ps(x + i), x1 = _mm512_loadu_ps(x + i + 16);
		FLOAT_STEP(0, x0, x1, 0xFFFF, 0xFFFF);
		FLOAT_STEP(1, x0, x1, 0xFFFF, 0xFFFF);
		FLOAT_STEP(2, x0, x1, 0xFFFF, 0xFFFF);
		FLOAT_STEP(3, x0, x1, 0xFFFF, 0xFFFF);
	}
	if (i < n) {
		int64_t rem = n - i;
		__mmask16 m0 = tail_mask(rem), m1 = tail_mask(rem - 16);
		__m512 x0 = _mm512_maskz_loadu_ps(m0, x + i);
		__m512 x1 = _mm512_maskz_loadu_ps(m1, x + i + 16);
		FLOAT_STEP(0, x0, x1, m0, m1);
		FLOAT_STEP(1, x0, x1, m0, m1);
		FLOAT_STEP(2, x0, x1, m0, m1);
		FLOAT_STEP(3, x0, x1, m0, m1);
	}
	out[0] = hsum512_ps(_mm512_add_ps(a00, a01));
	out[1] = hsum512_ps(_mm512_add_ps(a10, a11));
	out[2] = hsum512_ps(_mm512_add_ps(a20, a21));
	out[3] = hsum512_ps(_mm512_add_ps(a30, a31));
}

AVX512_INLINE void dot_rows_float1(dtype_t t, const uint8_t *const *w, const float *x,
				   int64_t n, float *out)
{
	const size_t stride = fstep_bytes(t);
	__m512 a00 = _mm512_setzero_ps(), a01 = a00;
	int64_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m512 x0 = _mm512_loadu_ps(x + i), x1 = _mm512_loadu_ps(x + i + 16);
		FLOAT_STEP(0, x0, x1, 0xFFFF, 0xFFFF);
	}
	if (i < n) {
		int64_t rem = n - i;
		__mmask16 m0 = tail_mask(rem), m1 = tail_mask(rem - 16);
		__m512 x0 = _mm512_maskz_loadu_ps(m0, x + i);
		__m512 x1 = _mm512_maskz_loadu_ps(m1, x + i + 16);
		FLOAT_STEP(0, x0, x1, m0, m1);
	}
	out[0] = hsum512_ps(_mm512_add_ps(a00, a01));
}

/* float entry points */
#define FLOAT4(T, wr, xa, n, out, pf) \
	dot_rows_float4(T, wr, (const float *)(xa), n, out, pf, fstep_bytes(T))
#define FLOAT1(T, wr, xa, n, out) dot_rows_float1(T, wr, (const float *)(xa), n, out)
#define DEFINE_FLOAT_KERNELS(tag, T)                                                  \
	AVX512 float dot_##tag##_avx512(const void *w, const void *xa, int64_t n)       \
	{                                                                             \
		const uint8_t *wr[1] = { w };                                         \
		float out[1];                                                         \
		FLOAT1(T, wr, xa, n, out);                                            \
		return out[0];                                                        \
	}                                                                             \
	AVX512 void matvec_##tag##_avx512(const void *W, size_t rb, const void *xa,     \
					  float *y, int64_t n, int64_t r0, int64_t r1)  \
	{                                                                             \
		const uint8_t *base = W;                                              \
		const pf_rows_t pf = { rb };                                          \
		int64_t r = r0;                                                       \
		for (; r + 4 <= r1; r += 4) {                                         \
			const uint8_t *wr[4] = {                                      \
				base + (size_t)r * rb, base + (size_t)(r + 1) * rb,   \
				base + (size_t)(r + 2) * rb, base + (size_t)(r + 3) * rb }; \
			FLOAT4(T, wr, xa, n, y + r, &pf);                             \
		}                                                                     \
		for (; r < r1; r++) {                                                 \
			const uint8_t *wr[1] = { base + (size_t)r * rb };             \
			FLOAT1(T, wr, xa, n, y + r);                                  \
		}                                                                     \
	}
DEFINE_FLOAT_KERNELS(f32, DTYPE_F32)
DEFINE_FLOAT_KERNELS(f16, DTYPE_F16)
DEFINE_FLOAT_KERNELS(bf16, DTYPE_BF16)
#undef DEFINE_FLOAT_KERNELS

/* ------------------------------------------- float rows x a token batch */

/* Where the rows of a float matrix are: row r at base + (r / G) * gb +
 * (r % G) * sb and its steps of 32 elements G * sb apart, sb = 32
 * elements. As stored: G = 1, gb = the row's bytes; packed (pack16): G =
 * 4, gb = the group's bytes. */
typedef struct mm_rows {
	const uint8_t *base;
	size_t gb, sb;
	int G;
} mm_rows_t;

/* IN_REGISTER(v), GCC: an empty asm that says it changes v, so the
 * compiler must hold v in a register and cannot fold its load into the
 * FMAs that use it as a memory operand. GCC 12 did fold them (the
 * activations in the 2 x 4 kernel, the f32 weights in a 4 x 3 one), so each
 * vector was loaded once per use and the loop was bound by loads. Clang
 * did not fold them, but with the asm it stored every weight vector to the
 * stack as well, so there it is nothing. MM_UNROLL: clang left the loops
 * of mm_float rolled under `#pragma GCC unroll` (accumulators on the
 * stack) and unrolls them fully with its own pragma (figures:
 * doc/measurements.md). No arithmetic
 * changes either way. */
#if defined(__clang__)
#define IN_REGISTER(v) ((void)0)
#define MM_UNROLL _Pragma("unroll")
#else
#define IN_REGISTER(v) __asm__("" : "+v"(v))
#define MM_UNROLL _Pragma("GCC unroll 4")
#endif

/* R rows (R <= 4) x T tokens (T <= 3) of float weights, each output the
 * same operation sequence as dot_rows_float4 / dot_rows_float1 (two
 * 16-lane FMA accumulators over steps of 32 elements, the masked tail step,
 * hsum512_ps(acc0 + acc1)), so the same bits as this level's matvec. The
 * two accumulators of an output are independent chains, so a step runs one
 * half at a time: R weight vectors (widened once for all T tokens), then
 * per token one activation vector and R FMAs. 4 x 3: 24 accumulators, 4
 * weight and 1 activation registers; per 32 elements 8 weight and 6
 * activation loads for 24 FMAs (2 x 4 with both halves at once: 4 + 8 for
 * 16). Token k's activations at x + k * xs bytes, its outputs at
 * y[k * ys + r]. */
AVX512_INLINE void mm_float(dtype_t t, const uint8_t *const *w, const int R,
			    const uint8_t *x, size_t xs, const int T, int64_t n,
			    float *y, int64_t ys, size_t stride)
{
	__m512 a[4][3][2];
MM_UNROLL
	for (int r = 0; r < R; r++)
MM_UNROLL
		for (int k = 0; k < T; k++)
			a[r][k][0] = a[r][k][1] = _mm512_setzero_ps();
	int64_t i = 0;
	for (; i + 32 <= n; i += 32) {
MM_UNROLL
		for (int h = 0; h < 2; h++) {
			__m512 wv[4];
MM_UNROLL
			for (int r = 0; r < R; r++)
				wv[r] = load16(t, w[r] + (size_t)(i >> 5) * stride, 16 * h, 0xFFFF);
MM_UNROLL
			for (int r = 0; r < R; r++)
				IN_REGISTER(wv[r]);
MM_UNROLL
			for (int k = 0; k < T; k++) {
				__m512 xv = _mm512_loadu_ps((const float *)(x + (size_t)k * xs) + i + 16 * h);
				IN_REGISTER(xv);
MM_UNROLL
				for (int r = 0; r < R; r++)
					a[r][k][h] = _mm512_fmadd_ps(wv[r], xv, a[r][k][h]);
			}
		}
	}
	if (i < n) {
		int64_t rem = n - i;
MM_UNROLL
		for (int h = 0; h < 2; h++) {
			__mmask16 m = tail_mask(rem - 16 * h);
			__m512 wv[4];
MM_UNROLL
			for (int r = 0; r < R; r++)
				wv[r] = load16(t, w[r] + (size_t)(i >> 5) * stride, 16 * h, m);
MM_UNROLL
			for (int k = 0; k < T; k++) {
				__m512 xv = _mm512_maskz_loadu_ps(
					m, (const float *)(x + (size_t)k * xs) + i + 16 * h);
MM_UNROLL
				for (int r = 0; r < R; r++)
					a[r][k][h] = _mm512_fmadd_ps(wv[r], xv, a[r][k][h]);
			}
		}
	}
MM_UNROLL
	for (int r = 0; r < R; r++)
MM_UNROLL
		for (int k = 0; k < T; k++)
			y[k * ys + r] = hsum512_ps(_mm512_add_ps(a[r][k][0], a[r][k][1]));
}

AVX512_INLINE const uint8_t *mm_row(const mm_rows_t *L, int64_t r)
{
	return L->base + (size_t)(r / L->G) * L->gb + (size_t)(r % L->G) * L->sb;
}

/* One tile of T tokens x rows r0..r1-1: groups of R rows, then single
 * rows (a matrix's last rows). */
AVX512_INLINE void mm_tile(dtype_t t, const mm_rows_t *L, const int R,
			   const uint8_t *xk, size_t xs, const int T, int64_t n,
			   float *yk, int64_t ys, int64_t r0, int64_t r1)
{
	const size_t stride = (size_t)L->G * L->sb;
	int64_t r = r0;
	for (; r + R <= r1; r += R) {
		const uint8_t *w[4];
MM_UNROLL
		for (int q = 0; q < R; q++)
			w[q] = mm_row(L, r + q);
		mm_float(t, w, R, xk, xs, T, n, yk + r, ys, stride);
	}
	for (; r < r1; r++) {
		const uint8_t *w[1] = { mm_row(L, r) };
		mm_float(t, w, 1, xk, xs, T, n, yk + r, ys, stride);
	}
}

/* Rows r0..r1-1 x ntok tokens: tiles of 3 tokens (their activations stay
 * in the 48 KiB L1 for n up to ~3000, in L2 above), within a tile the rows 4 at a time (the
 * chunk's rows stay in L2 across tiles). 4 x 3 with the loads held in
 * registers beat 2 x 4 and 3 x 4 at every shape measured
 * (doc/measurements.md). */
AVX512_INLINE void matmat_float(dtype_t t, const mm_rows_t *L, const void *X,
				size_t xs, float *Y, int64_t ys, int64_t n, int64_t r0,
				int64_t r1, int64_t ntok)
{
	for (int64_t k = 0; k < ntok; k += 3) {
		const uint8_t *xk = (const uint8_t *)X + (size_t)k * xs;
		float *yk = Y + k * ys;
		if (ntok - k >= 3)
			mm_tile(t, L, 4, xk, xs, 3, n, yk, ys, r0, r1);
		else if (ntok - k == 2)
			mm_tile(t, L, 4, xk, xs, 2, n, yk, ys, r0, r1);
		else
			mm_tile(t, L, 4, xk, xs, 1, n, yk, ys, r0, r1);
	}
}

#define DEFINE_MATMAT(tag, T)                                                        \
	AVX512 void matmat_##tag##_avx512(const void *W, size_t rb, const void *X,    \
					size_t xs, float *Y, int64_t ys, int64_t n,    \
					int64_t r0, int64_t r1, int64_t ntok)          \
	{                                                                             \
		const mm_rows_t L = { W, rb, fstep_bytes(T), 1 };                     \
		matmat_float(T, &L, X, xs, Y, ys, n, r0, r1, ntok);                   \
	}
DEFINE_MATMAT(f32, DTYPE_F32)
DEFINE_MATMAT(f16, DTYPE_F16)
DEFINE_MATMAT(bf16, DTYPE_BF16)

/* Packed float groups (pack16 of F32 / F16 / BF16, kernels.h: 4 rows, per
 * step of 32 elements the 4 rows' 32 elements one after another). The same
 * kernels as above with the rows' step stride 4 x 32 elements instead of
 * 32, so the same loads, FMAs and sums in the same order (the same bits),
 * from one linear stream the hardware prefetcher follows: no software
 * prefetch. */
AVX512_INLINE void matvec_p4(dtype_t t, const void *P, const void *xa, float *y,
			     int64_t n, int64_t ng)
{
	const size_t sb = fstep_bytes(t), gb = 4 * (size_t)n / 32 * sb;
	for (int64_t g = 0; g < ng; g++) {
		const uint8_t *p = (const uint8_t *)P + (size_t)g * gb;
		const uint8_t *wr[4] = { p, p + sb, p + 2 * sb, p + 3 * sb };
		dot_rows_float4(t, wr, (const float *)xa, n, y + 4 * g, NULL, 4 * sb);
	}
}

AVX512_INLINE void matmat_p4(dtype_t t, const void *P, const void *X, size_t xs,
			     float *Y, int64_t ys, int64_t n, int64_t ng, int64_t ntok)
{
	const size_t sb = fstep_bytes(t);
	const mm_rows_t L = { P, 4 * (size_t)n / 32 * sb, sb, 4 };
	matmat_float(t, &L, X, xs, Y, ys, n, 0, 4 * ng, ntok);
}

#define DEFINE_P4(tag, T)                                                            \
	AVX512 void matvec_p16_##tag##_avx512(const void *P, const void *xa, float *y, \
					    int64_t n, int64_t ng)                     \
	{                                                                             \
		matvec_p4(T, P, xa, y, n, ng);                                        \
	}                                                                             \
	AVX512 void matmat_p16_##tag##_avx512(const void *P, const void *X, size_t xs, \
					    float *Y, int64_t ys, int64_t n,           \
					    int64_t ng, int64_t ntok)                  \
	{                                                                             \
		matmat_p4(T, P, X, xs, Y, ys, n, ng, ntok);                           \
	}
DEFINE_P4(f32, DTYPE_F32)
DEFINE_P4(f16, DTYPE_F16)
DEFINE_P4(bf16, DTYPE_BF16)

/* ------------------------------------------ forward-pass float math */

/* Same bits as the generic twins (kernels.h): only elementwise operations
 * and sums that are independent per lane are vectorized; every product is
 * rounded before its add (FP_ROUNDED, no FMA). */

/* ss from rmsnorm_scale (kernels_impl.h); o = w * (ss * x) 16 lanes at once. */
AVX512 void rmsnorm_avx512(float *o, const float *x, const float *w,
				  int64_t n, float eps)
{
	const float ss = rmsnorm_scale(x, n, eps);
	const __m512 vs = _mm512_set1_ps(ss);
	for (int64_t j = 0; j < n; j += 16) {
		__mmask16 m = tail_mask(n - j);
		__m512 sx = _mm512_mul_ps(vs, _mm512_maskz_loadu_ps(m, x + j));
		FP_ROUNDED(sx);
		_mm512_mask_storeu_ps(o + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, w + j), sx));
	}
}

/* softmax (softmax_generic's bits) of c <= 4 rows of n scores, row h at
 * s + h * ss (decode: the query heads of one KV head; c = 1: softmax).
 * Per row: the max over lanes (the max of numbers does not depend on the
 * order; where it is +0 for the generic's -0 or back, an x - max differs
 * at most in a zero's sign, and expf gives 1 for both; a NaN in any row
 * sends every row to the generic, whose comparisons define the result),
 * expf(x - max) 16 at a time by the vector expf where the probe agreed
 * (vexp_x86.h: expf's bits; else expf itself), the sum sequential in t
 * from +0, then x / sum 16 lanes at once. The c sums are interleaved: c
 * independent add chains instead of one per row in turn, and the vector
 * expf of the next 16 overlaps them. */
AVX512_INLINE void softmax_rows(float *s, int64_t ss, int64_t n, const int c)
{
	if (n <= 0)
		return;
	__m512 mx[4];
	__mmask16 nan = 0;
#pragma GCC unroll 4
	for (int h = 0; h < 4; h++) {
		if (h >= c)
			continue;
		const float *x = s + h * ss;
		mx[h] = _mm512_set1_ps(x[0]);
		for (int64_t i = 0; i < n; i += 16) {
			__mmask16 m = tail_mask(n - i);
			__m512 v = _mm512_mask_loadu_ps(mx[h], m, x + i);
			nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
			mx[h] = _mm512_max_ps(mx[h], v);
		}
		mx[h] = _mm512_set1_ps(_mm512_reduce_max_ps(mx[h]));
	}
	if (nan) {
		for (int h = 0; h < c; h++)
			softmax_generic(s + h * ss, n);
		return;
	}
	const bool vexp = attn_vexp_ok();
	float sum[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
	for (int64_t i = 0; i < n; i += 16) {
		const int nr = n - i < 16 ? (int)(n - i) : 16;
		const __mmask16 m = tail_mask(nr);
		float e[4][16];
#pragma GCC unroll 4
		for (int h = 0; h < 4; h++) {
			if (h >= c)
				continue;
			float *x = s + h * ss + i;
			/* lanes past n: exp(0), never stored nor added */
			_mm512_storeu_ps(e[h], _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x),
								  mx[h]));
			if (vexp)
				vexp_lanes_avx512(e[h]);
			else
				for (int j = 0; j < nr; j++)
					e[h][j] = expf(e[h][j]);
			_mm512_mask_storeu_ps(x, m, _mm512_loadu_ps(e[h]));
		}
		for (int j = 0; j < nr; j++)
#pragma GCC unroll 4
			for (int h = 0; h < 4; h++)
				if (h < c)
					sum[h] += e[h][j];
	}
#pragma GCC unroll 4
	for (int h = 0; h < 4; h++) {
		if (h >= c)
			continue;
		float *x = s + h * ss;
		const __m512 vs = _mm512_set1_ps(sum[h]);
		for (int64_t i = 0; i < n; i += 16) {
			__mmask16 m = tail_mask(n - i);
			_mm512_mask_storeu_ps(x + i, m,
					      _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), vs));
		}
	}
}

/* One row: the level's softmax (the sampler's too; the same bits). */
AVX512 void softmax_avx512(float *x, int64_t n)
{
	softmax_rows(x, 0, n, 1);
}

/* exp_eg (kernels_impl.h) 16 lanes at once, the same operations in the
 * same order: the same bits per lane. */
AVX512_INLINE __m512 exp_eg_avx512(__m512 x)
{
	__m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(EXP_EG_LOG2E)),
					_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 a = _mm512_mul_ps(n, _mm512_set1_ps(EXP_EG_C1));
	VEC_ROUNDED(a);
	__m512 r = _mm512_sub_ps(x, a);
	a = _mm512_mul_ps(n, _mm512_set1_ps(EXP_EG_C2));
	VEC_ROUNDED(a);
	r = _mm512_sub_ps(r, a);
	__m512 z = _mm512_mul_ps(r, r);
	__m512 p = _mm512_set1_ps(exp_eg_poly[0]);
#pragma GCC unroll 5
	for (int i = 1; i < 6; i++) {
		p = _mm512_mul_ps(p, r);
		VEC_ROUNDED(p);
		p = _mm512_add_ps(p, _mm512_set1_ps(exp_eg_poly[i]));
	}
	p = _mm512_mul_ps(p, z);
	VEC_ROUNDED(p);
	p = _mm512_add_ps(_mm512_add_ps(p, r), _mm512_set1_ps(1.0f));
	__m512i k = _mm512_cvtps_epi32(n), h = _mm512_srai_epi32(k, 1);
	const __m512i bias = _mm512_set1_epi32(127);
	p = _mm512_mul_ps(p, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(h, bias), 23)));
	VEC_ROUNDED(p);
	p = _mm512_mul_ps(p, _mm512_castsi512_ps(_mm512_slli_epi32(
				     _mm512_add_epi32(_mm512_sub_epi32(k, h), bias), 23)));
	/* the scalar's early returns, in its order: NaN, low, high */
	p = _mm512_mask_mov_ps(p, _mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP_EG_HI), _CMP_GT_OQ),
			       _mm512_set1_ps(__builtin_inff()));
	p = _mm512_maskz_mov_ps(~_mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP_EG_LO), _CMP_LE_OQ), p);
	return _mm512_mask_mov_ps(p, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

/* swiglu_generic 16 lanes at once (same operations: the same bits). */
AVX512 void swiglu_avx512(float *o, const float *a, const float *b, int64_t n)
{
	const __m512 one = _mm512_set1_ps(1.0f);
	for (int64_t i = 0; i < n; i += 16) {
		__mmask16 m = tail_mask(n - i);
		__m512 v = _mm512_maskz_loadu_ps(m, a + i);
		__m512 e = exp_eg_avx512(_mm512_castsi512_ps(_mm512_xor_si512(
			_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN))));
		VEC_ROUNDED(e);
		__m512 s = _mm512_div_ps(one, _mm512_add_ps(one, e));
		v = _mm512_mul_ps(v, s);
		VEC_ROUNDED(v);
		_mm512_mask_storeu_ps(o + i, m, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, b + i)));
	}
}

/* neox = 0: 8 adjacent pairs per vector; cos and sin duplicated into both
 * lanes of a pair, the pair swapped, then even lanes v0 c - v1 s and odd
 * lanes v1 c + v0 s (an add commutes exactly). neox = 1: halves a and
 * b = a + rot/2 as two vectors, cos and sin de-interleaved. */
AVX512 void rope_apply_avx512(float *x, int n_heads, int head_dim, int rot_dim,
				     const float *cs, int neox)
{
	const __mmask16 even = 0x5555;
	const __m512i ic = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
	const __m512i is = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
	for (int h = 0; h < n_heads; h++) {
		float *v = x + (size_t)h * head_dim;
		if (!neox) {
			for (int i = 0; i < rot_dim; i += 16) {
				__mmask16 m = tail_mask(rot_dim - i);
				__m512 t = _mm512_maskz_loadu_ps(m, cs + i);
				__m512 c = _mm512_moveldup_ps(t), sn = _mm512_movehdup_ps(t);
				__m512 a = _mm512_maskz_loadu_ps(m, v + i);
				__m512 p = _mm512_mul_ps(a, c);
				__m512 q = _mm512_mul_ps(_mm512_permute_ps(a, 0xB1), sn);
				FP_ROUNDED(p);
				FP_ROUNDED(q);
				__m512 r = _mm512_mask_sub_ps(_mm512_add_ps(q, p), even, p, q);
				_mm512_mask_storeu_ps(v + i, m, r);
			}
		} else {
			int half = rot_dim / 2;
			for (int j = 0; j < half; j += 16) {
				__mmask16 m = tail_mask(half - j);
				/* pairs j..j+15: cs[2j .. 2j+31] */
				__m512 lo = _mm512_maskz_loadu_ps(tail_mask(2 * (half - j)), cs + 2 * j);
				__m512 hi = _mm512_maskz_loadu_ps(tail_mask(2 * (half - j) - 16), cs + 2 * j + 16);
				__m512 c = _mm512_permutex2var_ps(lo, ic, hi);
				__m512 sn = _mm512_permutex2var_ps(lo, is, hi);
				__m512 a = _mm512_maskz_loadu_ps(m, v + j);
				__m512 b = _mm512_maskz_loadu_ps(m, v + j + half);
				__m512 ac = _mm512_mul_ps(a, c), bs = _mm512_mul_ps(b, sn);
				__m512 as = _mm512_mul_ps(a, sn), bc = _mm512_mul_ps(b, c);
				FP_ROUNDED(ac);
				FP_ROUNDED(bs);
				FP_ROUNDED(as);
				FP_ROUNDED(bc);
				_mm512_mask_storeu_ps(v + j, m, _mm512_sub_ps(ac, bs));
				_mm512_mask_storeu_ps(v + j + half, m, _mm512_add_ps(as, bc));
			}
		}
	}
}

/* 16x16 transpose: r[i] = row i (16 floats) -> r[j] lane i = row i's
 * element j. In-lane 4x4 transposes of each 4 rows (transpose_lanes4), then
 * a 4x4 transpose of the 128-bit lanes across the four results: 64
 * shuffles for 256 floats. */
AVX512_INLINE void transpose16_ps(__m512 *r)
{
	__m512i z[4][4];
#pragma GCC unroll 4
	for (int k = 0; k < 4; k++) {
#pragma GCC unroll 4
		for (int i = 0; i < 4; i++)
			z[k][i] = _mm512_castps_si512(r[4 * k + i]);
		transpose_lanes4(z[k]);
	}
	/* z[k][g] 128-bit lane L = element 4L + g of rows 4k..4k+3 */
#pragma GCC unroll 4
	for (int g = 0; g < 4; g++) {
		__m512i a = _mm512_shuffle_i32x4(z[0][g], z[1][g], 0x44);
		__m512i b = _mm512_shuffle_i32x4(z[0][g], z[1][g], 0xEE);
		__m512i c = _mm512_shuffle_i32x4(z[2][g], z[3][g], 0x44);
		__m512i d = _mm512_shuffle_i32x4(z[2][g], z[3][g], 0xEE);
		r[g] = _mm512_castsi512_ps(_mm512_shuffle_i32x4(a, c, 0x88));
		r[4 + g] = _mm512_castsi512_ps(_mm512_shuffle_i32x4(a, c, 0xDD));
		r[8 + g] = _mm512_castsi512_ps(_mm512_shuffle_i32x4(b, d, 0x88));
		r[12 + g] = _mm512_castsi512_ps(_mm512_shuffle_i32x4(b, d, 0xDD));
	}
}

/* Elements i0 .. i0 + 15 of a KV row of type kt under mask m as floats
 * (exact; kernels.h kv_type_t): F32 loaded, F16 converted by vcvtph2ps,
 * Q8_0 quants sign-extended and converted, times the block's scale. m is
 * empty (nothing read) or, for Q8_0 (hd a multiple of 32), full. */
AVX512_INLINE __m512 kv_ld16(const int kt, const uint8_t *row, int64_t i0, __mmask16 m)
{
	if (kt == KV_F16)
		return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * i0));
	if (kt == KV_Q8_0) {
		if (!m)
			return _mm512_setzero_ps();
		const uint8_t *b = row + (i0 / QK) * (int64_t)sizeof(block_q8_0);
		__m128i q8 = _mm_loadu_si128((const __m128i *)(const void *)(b + 2 + i0 % QK));
		return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q8)),
				     _mm512_set1_ps(_cvtsh_ss(ld_u16(b))));
	}
	return _mm512_maskz_loadu_ps(m, row + 4 * i0);
}

/* Scores of c <= 4 query heads (q + h * qs) sharing one KV head, 16
 * positions per vector, lane l = position t + l, each summed over i in
 * order from +0 (the generic's dot, per lane): the 16 keys are read as
 * rows, 16 dimensions at a time (converted to floats as they are loaded,
 * kv_ld16), and transposed in registers once for the c heads
 * (transpose16_ps; positions past n_pos and dimensions past hd read as 0
 * and are never added); the division by sqrtf(hd) per lane.
 * Gathering the keys in 16 lanes instead took most of the attention's
 * time; the transposes are shared among a KV head's queries
 * (tinyllama-1.1b: 8 per KV head). Figures: doc/measurements.md. */
AVX512_INLINE void att_scores(const int kt, const float *q, int64_t qs, int c,
			      const uint8_t *k, const uint8_t *v, size_t rb, int n_pos, int hd,
			      float *scores, int64_t ss)
{
	const __m512 scale = _mm512_set1_ps(sqrtf((float)hd));
	const int hb = (int)kv_row_bytes((kv_type_t)kt, hd); /* a head's bytes per row */
	for (int t = 0; t < n_pos; t += 16) {
		const int nr = n_pos - t < 16 ? n_pos - t : 16;
		const uint8_t *kt0 = k + (size_t)t * rb;
		/* the cache was evicted by the weights streamed since the last
		 * token: fetch the next block's keys and this block's values */
		for (int i = 0; i < 16; i++) {
			const char *kn = (const char *)(kt0 + (size_t)(16 + i) * rb);
			const char *vn = (const char *)(v + (size_t)(t + i) * rb);
			for (int b = 0; b < hb; b += 64) {
				if (t + 16 + i < n_pos)
					_mm_prefetch(kn + b, _MM_HINT_T0);
				if (i < nr)
					_mm_prefetch(vn + b, _MM_HINT_T0);
			}
		}
		__m512 a[4] = { _mm512_setzero_ps(), _mm512_setzero_ps(),
				_mm512_setzero_ps(), _mm512_setzero_ps() };
		for (int i0 = 0; i0 < hd; i0 += 16) {
			const int nj = hd - i0 < 16 ? hd - i0 : 16;
			const __mmask16 m = tail_mask(nj);
			__m512 r[16];
#pragma GCC unroll 16
			for (int i = 0; i < 16; i++)
				r[i] = kv_ld16(kt, kt0 + (size_t)i * rb, i0, i < nr ? m : 0);
			transpose16_ps(r);
#pragma GCC unroll 4
			for (int h = 0; h < 4; h++) {
				if (h >= c)
					continue;
				const float *qh = q + (size_t)h * (size_t)qs + i0;
				if (nj == 16) {
#pragma GCC unroll 16
					for (int j = 0; j < 16; j++) {
						__m512 p = _mm512_mul_ps(_mm512_set1_ps(qh[j]), r[j]);
						VEC_ROUNDED(p);
						a[h] = _mm512_add_ps(a[h], p);
					}
				} else { /* r[] indexed by constants only: in registers */
#pragma GCC unroll 16
					for (int j = 0; j < 16; j++) {
						if (j >= nj)
							continue;
						__m512 p = _mm512_mul_ps(_mm512_set1_ps(qh[j]), r[j]);
						VEC_ROUNDED(p);
						a[h] = _mm512_add_ps(a[h], p);
					}
				}
			}
		}
#pragma GCC unroll 4
		for (int h = 0; h < 4; h++)
			if (h < c)
				_mm512_mask_storeu_ps(scores + (size_t)h * (size_t)ss + t,
						      tail_mask(nr), _mm512_div_ps(a[h], scale));
	}
}

/* out + h * os (hd floats) = sum_u s_h[u] v_u for the c <= 4 heads whose
 * weights are s_h = s + h * ss: 64 dimensions a pass over the values, each
 * value row's four vectors loaded and converted once for the c heads
 * (kv_ld16), 4c independent chains, each summed over u in order from +0
 * (the generic's order per head). */
AVX512_INLINE void att_wsum(const int kt, float *out, int64_t os, const float *s, int64_t ss,
			    const uint8_t *v, size_t rb, int n_pos, int hd, const int c)
{
	const size_t hb = kv_row_bytes((kv_type_t)kt, hd); /* a head's bytes per row */
	for (int i = 0; i < hd; i += 64) {
		const __mmask16 m[4] = { tail_mask(hd - i), tail_mask(hd - i - 16),
					 tail_mask(hd - i - 32), tail_mask(hd - i - 48) };
		/* this pass's bytes of a row: [b0, b1) */
		const size_t b0 = kv_row_bytes((kv_type_t)kt, i);
		const size_t b1 = i + 64 < hd ? kv_row_bytes((kv_type_t)kt, i + 64) : hb;
		__m512 o[4][4];
#pragma GCC unroll 4
		for (int h = 0; h < 4; h++)
#pragma GCC unroll 4
			for (int k = 0; k < 4; k++)
				o[h][k] = _mm512_setzero_ps();
		for (int u = 0; u < n_pos; u++) {
			const uint8_t *vu = v + (size_t)u * rb;
			/* the row 8 on: at a long context the values come from
			 * L2 or memory, rb apart */
			for (size_t b = b0; b < b1; b += 64)
				_mm_prefetch((const char *)vu + 8 * rb + b, _MM_HINT_T0);
			__m512 x[4];
#pragma GCC unroll 4
			for (int k = 0; k < 4; k++)
				x[k] = kv_ld16(kt, vu, i + 16 * k, m[k]);
#pragma GCC unroll 4
			for (int h = 0; h < 4; h++) {
				if (h >= c)
					continue;
				const __m512 su = _mm512_set1_ps(s[(size_t)h * (size_t)ss + (size_t)u]);
#pragma GCC unroll 4
				for (int k = 0; k < 4; k++) {
					__m512 p = _mm512_mul_ps(su, x[k]);
					VEC_ROUNDED(p);
					o[h][k] = _mm512_add_ps(o[h][k], p);
				}
			}
		}
#pragma GCC unroll 4
		for (int h = 0; h < 4; h++)
#pragma GCC unroll 4
			for (int k = 0; k < 4; k++)
				if (h < c)
					_mm512_mask_storeu_ps(out + (size_t)h * (size_t)os + i + 16 * k,
							      m[k], o[h][k]);
	}
}

#define ATTD_INLINE AVX512_INLINE
#define ATTD_FN AVX512
#define ATTD_SUFFIX avx512
#include "kernels/attn_decode_x86.h"

/* ------------------------------------------------------------ tables */

const kernel_ops_t kops_avx512 = {
	.name = "avx512",
	.type = {
		[DTYPE_F32] = {
			.vec_dot = dot_f32_avx512, .matvec = matvec_f32_avx512,
			.matmat = matmat_f32_avx512,
			.matvec_p16 = matvec_p16_f32_avx512, .matmat_p16 = matmat_p16_f32_avx512,
		},
		[DTYPE_F16] = {
			.vec_dot = dot_f16_avx512, .matvec = matvec_f16_avx512,
			.matmat = matmat_f16_avx512,
			.matvec_p16 = matvec_p16_f16_avx512, .matmat_p16 = matmat_p16_f16_avx512,
		},
		[DTYPE_BF16] = {
			.vec_dot = dot_bf16_avx512, .matvec = matvec_bf16_avx512,
			.matmat = matmat_bf16_avx512,
			.matvec_p16 = matvec_p16_bf16_avx512, .matmat_p16 = matmat_p16_bf16_avx512,
		},
		[DTYPE_Q8_0] = {
			.vec_dot = dot_q8_0_avx512, .matvec = matvec_q8_0_avx512,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_q8_0_avx512, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q4_0] = {
			.vec_dot = dot_q4_0_avx512, .matvec = matvec_q4_0_avx512,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_q4_0_avx512, .matmat_p16 = matmat_p16_absent,
		},
		/* packed: 16 rows in lanes (matvec_p16_min); prefill: matmat */
		[DTYPE_Q4_1] = {
			.vec_dot = dot_q4_1_avx2, .matvec = matvec_q4_1_avx2,
			.matmat = matmat_q4_1_avx2,
			.matvec_p16 = matvec_p16_q4_1_avx512, .matmat_p16 = matmat_p16_absent,
		},
		/* packed: its Q8_0 form (kernels_impl.h q8_form); its gemm: gemm_quant */
		[DTYPE_Q5_0] = {
			.vec_dot = dot_q5_0_avx2, .matvec = matvec_q5_0_avx2,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_q8_0_avx512, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q5_1] = {
			.vec_dot = dot_q5_1_avx2, .matvec = matvec_q5_1_avx2,
			.matmat = matmat_q5_1_avx2,
			.matvec_p16 = matvec_p16_q5_1_avx512, .matmat_p16 = matmat_p16_absent,
		},
		/* activations only, but a dot product with itself: the generic's */
		[DTYPE_Q8_K] = {
			.vec_dot = dot_q8_K_generic, .matvec = matvec_q8_K_generic,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q2_K] = {
			.vec_dot = dot_q2_K_avx2, .matvec = matvec_q2_K_avx2,
			.matmat = matmat_q2_K_avx2,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q3_K] = {
			.vec_dot = dot_q3_K_avx2, .matvec = matvec_q3_K_avx2,
			.matmat = matmat_q3_K_avx2,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q4_K] = {
			.vec_dot = dot_q4_K_avx512, .matvec = matvec_q4_K_avx512,
			.matmat = matmat_q4_K_avx512,
			.matvec_p16 = matvec_p16_q4_K_avx512, .matmat_p16 = matmat_p16_q4_K_avx512,
		},
		[DTYPE_Q5_K] = {
			.vec_dot = dot_q5_K_avx512, .matvec = matvec_q5_K_avx512,
			.matmat = matmat_q5_K_avx512,
			.matvec_p16 = matvec_p16_q5_K_avx512, .matmat_p16 = matmat_p16_q5_K_avx512,
		},
		[DTYPE_Q6_K] = {
			.vec_dot = dot_q6_K_avx512, .matvec = matvec_q6_K_avx512,
			.matmat = matmat_q6_K_avx512,
			.matvec_p16 = matvec_p16_q6_K_avx512, .matmat_p16 = matmat_p16_q6_K_avx512,
		},
		/* activations only: no weight has this type */
		[DTYPE_Q8_1] = {
			.vec_dot = dot_absent, .matvec = matvec_absent,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_IQ4_NL] = {
			.vec_dot = dot_iq4_nl_avx2, .matvec = matvec_iq4_nl_avx2,
			.matmat = matmat_iq4_nl_avx2,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_IQ4_XS] = {
			.vec_dot = dot_iq4_xs_avx2, .matvec = matvec_iq4_xs_avx2,
			.matmat = matmat_iq4_xs_avx2,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
	},
	.quantize_q8_0 = quantize_q8_0_avx512,
	.quantize_q8_K = quantize_q8_K_avx2,
	.fp16_to_f32_row = fp16_to_f32_row_avx512,
	.f32_to_fp16_row = f32_to_fp16_row_avx512,
	.rmsnorm = rmsnorm_avx512,
	.softmax = softmax_avx512,
	.rope_apply = rope_apply_avx512,
	.swiglu = swiglu_avx512,
	.gemm_quant = gemm_quant_avx2,
	.gemm_aux = gemm_aux_avx2,
	.kv = KV_OPS_AVX512,
};

#else

/* The per-type kernels of both VNNI-based levels (avx512vnni and amx,
 * which differ in the quantized gemms and in BF16's entry): BF16_OPS is
 * BF16's entry, the K-quants' matmat is matmat_<type>_<mm>, their
 * matmat_p16 matmat_p16_<type>_<mp>. */
#define BF16_OPS_AVX512 { \
			.vec_dot = dot_bf16_avx512, .matvec = matvec_bf16_avx512, \
			.matmat = matmat_bf16_avx512, \
			.matvec_p16 = matvec_p16_bf16_avx512, .matmat_p16 = matmat_p16_bf16_avx512, \
		}
/* amx: TDPBF16PS's order at every size (gemm_amx_bf16.c); rows as stored,
 * no packed copy (its 4-row groups are not the tiles' 16) */
#define BF16_OPS_AMX { \
			.vec_dot = dot_bf16_amx, .matvec = matvec_bf16_amx, \
			.matmat = matmat_bf16_amx, \
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent, \
		}
#define TYPE_OPS_AVX512VNNI(BF16_OPS, mm, mp) { \
		[DTYPE_F32] = { \
			.vec_dot = dot_f32_avx512, .matvec = matvec_f32_avx512, \
			.matmat = matmat_f32_avx512, \
			.matvec_p16 = matvec_p16_f32_avx512, .matmat_p16 = matmat_p16_f32_avx512, \
		}, \
		[DTYPE_F16] = { \
			.vec_dot = dot_f16_avx512, .matvec = matvec_f16_avx512, \
			.matmat = matmat_f16_avx512, \
			.matvec_p16 = matvec_p16_f16_avx512, .matmat_p16 = matmat_p16_f16_avx512, \
		}, \
		[DTYPE_BF16] = BF16_OPS, \
		[DTYPE_Q8_0] = { \
			.vec_dot = dot_q8_0_avx512vnni, .matvec = matvec_q8_0_avx512vnni, \
			.matmat = matmat_absent, \
			.matvec_p16 = matvec_p16_q8_0_avx512vnni, .matmat_p16 = matmat_p16_absent, \
		}, \
		[DTYPE_Q4_0] = { \
			.vec_dot = dot_q4_0_avx512vnni, .matvec = matvec_q4_0_avx512vnni, \
			.matmat = matmat_absent, \
			.matvec_p16 = matvec_p16_q4_0_avx512vnni, .matmat_p16 = matmat_p16_absent, \
		}, \
		/* packed: 16 rows in lanes (matvec_p16_min); prefill: gemm_quant \
		 * (gemm.c quant_type; the matmat is gemm_rows' fallback) */ \
		[DTYPE_Q4_1] = { \
			.vec_dot = dot_q4_1_avx2, .matvec = matvec_q4_1_avx2, \
			.matmat = matmat_q4_1_avx2, \
			.matvec_p16 = matvec_p16_q4_1_avx512vnni, .matmat_p16 = matmat_p16_absent, \
		}, \
		/* packed: its Q8_0 form (kernels_impl.h q8_form); its gemm: gemm_quant */ \
		[DTYPE_Q5_0] = { \
			.vec_dot = dot_q5_0_avx2, .matvec = matvec_q5_0_avx2, \
			.matmat = matmat_absent, \
			.matvec_p16 = matvec_p16_q8_0_avx512vnni, .matmat_p16 = matmat_p16_absent, \
		}, \
		[DTYPE_Q5_1] = { \
			.vec_dot = dot_q5_1_avx2, .matvec = matvec_q5_1_avx2, \
			.matmat = matmat_q5_1_avx2, \
			.matvec_p16 = matvec_p16_q5_1_avx512vnni, .matmat_p16 = matmat_p16_absent, \
		}, \
		/* activations only, but a dot product with itself: the generic's */ \
		[DTYPE_Q8_K] = { \
			.vec_dot = dot_q8_K_generic, .matvec = matvec_q8_K_generic, \
			.matmat = matmat_absent, \
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent, \
		}, \
		[DTYPE_Q2_K] = { \
			.vec_dot = dot_q2_K_avx2, .matvec = matvec_q2_K_avx2, \
			.matmat = matmat_q2_K_avx2, \
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent, \
		}, \
		[DTYPE_Q3_K] = { \
			.vec_dot = dot_q3_K_avx2, .matvec = matvec_q3_K_avx2, \
			.matmat = matmat_q3_K_avx2, \
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent, \
		}, \
		[DTYPE_Q4_K] = { \
			.vec_dot = dot_q4_K_avx512, .matvec = matvec_q4_K_avx512, \
			.matmat = matmat_q4_K_##mm, \
			.matvec_p16 = matvec_p16_q4_K_avx512vnni, .matmat_p16 = matmat_p16_q4_K_##mp, \
		}, \
		[DTYPE_Q5_K] = { \
			.vec_dot = dot_q5_K_avx512, .matvec = matvec_q5_K_avx512, \
			.matmat = matmat_q5_K_##mm, \
			.matvec_p16 = matvec_p16_q5_K_avx512vnni, .matmat_p16 = matmat_p16_q5_K_##mp, \
		}, \
		[DTYPE_Q6_K] = { \
			.vec_dot = dot_q6_K_avx512, .matvec = matvec_q6_K_avx512, \
			.matmat = matmat_q6_K_##mm, \
			.matvec_p16 = matvec_p16_q6_K_avx512vnni, .matmat_p16 = matmat_p16_q6_K_##mp, \
		}, \
		/* activations only: no weight has this type */ \
		[DTYPE_Q8_1] = { \
			.vec_dot = dot_absent, .matvec = matvec_absent, \
			.matmat = matmat_absent, \
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent, \
		}, \
		[DTYPE_IQ4_NL] = { \
			.vec_dot = dot_iq4_nl_avx2, .matvec = matvec_iq4_nl_avx2, \
			.matmat = matmat_iq4_nl_avx2, \
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent, \
		}, \
		[DTYPE_IQ4_XS] = { \
			.vec_dot = dot_iq4_xs_avx2, .matvec = matvec_iq4_xs_avx2, \
			.matmat = matmat_iq4_xs_avx2, \
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent, \
		}, \
}

const kernel_ops_t kops_avx512vnni = {
	.name = "avx512vnni",
	.type = TYPE_OPS_AVX512VNNI(BF16_OPS_AVX512, avx512, avx512vnni),
	.quantize_q8_0 = quantize_q8_0_avx512,
	.quantize_q8_K = quantize_q8_K_avx2,
	.fp16_to_f32_row = fp16_to_f32_row_avx512,
	.f32_to_fp16_row = f32_to_fp16_row_avx512,
	.rmsnorm = rmsnorm_avx512,
	.softmax = softmax_avx512,
	.rope_apply = rope_apply_avx512,
	.swiglu = swiglu_avx512,
	.gemm_quant = gemm_quant_avx512vnni,
	.gemm_aux = gemm_aux_avx2,
	.kv = KV_OPS_AVX512,
};


/* avx512vnni with the AMX tiles for the quantized gemm and the K-quant
 * gemms (gemm_amx.c) and BF16 weights (gemm_amx_bf16.c); the table is
 * here because its other kernels are this file's. */
const kernel_ops_t kops_amx = {
	.name = "amx",
	.type = TYPE_OPS_AVX512VNNI(BF16_OPS_AMX, amx, amx),
	.quantize_q8_0 = quantize_q8_0_avx512,
	.quantize_q8_K = quantize_q8_K_avx2,
	.fp16_to_f32_row = fp16_to_f32_row_avx512,
	.f32_to_fp16_row = f32_to_fp16_row_avx512,
	.rmsnorm = rmsnorm_avx512,
	.softmax = softmax_avx512,
	.rope_apply = rope_apply_avx512,
	.swiglu = swiglu_avx512,
	.gemm_quant = gemm_quant_amx,
	.gemm_aux = gemm_aux_avx2,
	.kv = KV_OPS_AVX512,
};

#endif /* EGANG_AVX512_VNNI */

#endif
