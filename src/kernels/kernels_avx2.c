/* kernels: AVX2 + FMA + F16C level (see kernels_impl.h for what is
 * bit-exact). Every function carries its target attribute; the build has no
 * -march flag.
 *
 * Layout of the matvec kernels: a row-group template (dot_rows_*) takes R
 * row pointers (R = 4 in the body of a range, 1 for the rest and for
 * vec_dot) and runs, for each row, the same sequence of operations whatever
 * R is, so a row's bits never depend on how the rows were chunked. The
 * activations are loaded once per step and shared by the R rows.
 *
 * The level's table, kops_avx2, ends the file: this file's kernels and
 * those of kquants_avx2.c, kq_pack_avx2.c, gemm_avx2.c and attn.c. */
#include "kernels/kernels_impl.h"

#if defined(__x86_64__)

#include "base/alloc.h"
#include "kernels/gemm_impl.h"
#include "kernels/simd_x86.h"
#include "kernels/vexp_x86.h"

/* Software prefetch distance ahead of each row of a 4-row group (see
 * kernels_avx512.c); prefetches never fault past the end. */
#ifndef PF_DIST
#define PF_DIST 1024
#endif

/* ------------------------------------------------------ conversions */

AVX2 static void fp16_to_f32_row_avx2(const void *xv, float *y, int64_t n)
{
	const uint8_t *x = xv;
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + 2 * i))));
	for (; i < n; i++)
		y[i] = fp16_to_f32_inline(ld_u16(x + 2 * i));
}

AVX2 static void f32_to_fp16_row_avx2(const float *x, void *yv, int64_t n)
{
	uint8_t *y = yv;
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) /* imm 0: round to nearest even, not MXCSR */
		_mm_storeu_si128((__m128i *)(y + 2 * i),
				 _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
	for (; i < n; i++)
		st_u16(y + 2 * i, f32_to_fp16_inline(x[i]));
}

/* Q8_0 quantization, bit-exact with quantize_q8_0_generic:
 *  amax: max_ps(a, m) returns m when a is NaN, as "if (a > amax)";
 *  v = x * (127 / amax), clamp with max_ps(v, -127) (NaN -> -127) then
 *  min_ps; round half to even as rintf (_MM_FROUND_TO_NEAREST_INT). */
AVX2 static void quantize_q8_0_avx2(const float *x, void *yv, int64_t n)
{
	uint8_t *y = yv;
	const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
	const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
	for (int64_t b = 0; b < n / QK; b++) {
		const float *xb = x + b * QK;
		__m256 v[4], m = _mm256_setzero_ps();
		for (int k = 0; k < 4; k++) {
			v[k] = _mm256_loadu_ps(xb + 8 * k);
			m = _mm256_max_ps(_mm256_and_ps(v[k], absmask), m);
		}
		float amax = hmax256_ps(m);
		float d = amax / 127.0f;
		uint8_t *yb = y + b * sizeof(block_q8_0);
		st_u16(yb, f32_to_fp16_inline(d));
		if (amax == 0.0f) {
			memset(yb + 2, 0, QK);
			continue;
		}
		const __m256 vid = _mm256_set1_ps(127.0f / amax);
		__m256i q[4];
		for (int k = 0; k < 4; k++) {
			__m256 t = _mm256_mul_ps(v[k], vid);
			t = _mm256_max_ps(t, _mm256_set1_ps(-127.0f));
			t = _mm256_min_ps(t, _mm256_set1_ps(127.0f));
			t = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
			q[k] = _mm256_cvttps_epi32(t);
		}
		__m256i p01 = _mm256_packs_epi32(q[0], q[1]), p23 = _mm256_packs_epi32(q[2], q[3]);
		__m256i p = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p01, p23), perm);
		_mm256_storeu_si256((__m256i *)(yb + 2), p);
	}
}

/* ------------------------------------------------ float-weight rows */

/* 8 weights of type t at element i of row w, as floats. */
AVX2_INLINE __m256 load8(dtype_t t, const uint8_t *w, int64_t i)
{
	if (t == DTYPE_F32)
		return _mm256_loadu_ps((const float *)w + i);
	__m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
	if (t == DTYPE_F16)
		return _mm256_cvtph_ps(h);
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* Per row: two 8-lane FMA accumulators over steps of 16 elements; a ragged
 * tail (< 16) is zero-padded into a buffer and done as one more step; then
 * hsum256_ps(acc0 + acc1). Element i of row r is at w[r] + (i / 32) * st +
 * (i % 32) * es: st = 32 es for rows as stored, 4 * 32 es for a packed
 * group of 4 rows (pack16: per 32 elements, the step of row 0, then of
 * rows 1, 2, 3; n a multiple of 32, w[r] at the group + 32 r es, no
 * software prefetch: one linear stream). Same loads and FMAs either way,
 * so the same bits. */
AVX2_INLINE void dot_rows_float_st(dtype_t t, const uint8_t *const *w, const float *x,
				   int64_t n, float *out, const int R, const size_t st)
{
	const size_t es = t == DTYPE_F32 ? 4 : 2;
	const int packed = st != 32 * es;
	__m256 acc[4][2];
#pragma GCC unroll 4
	for (int r = 0; r < R; r++)
		acc[r][0] = acc[r][1] = _mm256_setzero_ps();
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
		if (!packed && R == 4 && ((size_t)i * es) % 64 < 16 * es) /* one per line */
#pragma GCC unroll 4
			for (int r = 0; r < R; r++)
				_mm_prefetch((const char *)w[r] + (size_t)i * es + PF_DIST, _MM_HINT_T0);
		/* element i of each row, as stored or packed */
		const size_t o = (size_t)(i >> 5) * st + (size_t)(i & 31) * es;
		/* unrolled, so acc[][] stays in registers (the plain loop kept
		 * it on the stack: a store-forwarding chain per FMA) */
#pragma GCC unroll 4
		for (int r = 0; r < R; r++) {
			acc[r][0] = _mm256_fmadd_ps(load8(t, w[r] + o, 0), x0, acc[r][0]);
			acc[r][1] = _mm256_fmadd_ps(load8(t, w[r] + o, 8), x1, acc[r][1]);
		}
	}
	if (i < n) {
		size_t rem = (size_t)(n - i);
		float xt[16] = { 0 };
		uint8_t wt[16 * 4];
		memcpy(xt, x + i, rem * 4);
		__m256 x0 = _mm256_loadu_ps(xt), x1 = _mm256_loadu_ps(xt + 8);
#pragma GCC unroll 4
		for (int r = 0; r < R; r++) {
			memset(wt, 0, sizeof wt);
			memcpy(wt, w[r] + (size_t)i * es, rem * es);
			acc[r][0] = _mm256_fmadd_ps(load8(t, wt, 0), x0, acc[r][0]);
			acc[r][1] = _mm256_fmadd_ps(load8(t, wt, 8), x1, acc[r][1]);
		}
	}
#pragma GCC unroll 4
	for (int r = 0; r < R; r++)
		out[r] = hsum256_ps(_mm256_add_ps(acc[r][0], acc[r][1]));
}

AVX2_INLINE void dot_rows_float(dtype_t t, const uint8_t *const *w, const float *x,
				int64_t n, float *out, const int R)
{
	dot_rows_float_st(t, w, x, n, out, R, 32 * (t == DTYPE_F32 ? 4 : 2));
}

/* Packed groups of 4 float rows (pack16): the level's matvec on them. */
AVX2_INLINE void matvec_p16_float(dtype_t t, const void *P, const void *xa, float *y,
				  int64_t n, int64_t ng)
{
	const size_t es = t == DTYPE_F32 ? 4 : 2;
	const uint8_t *p = P;
	for (int64_t g = 0; g < ng; g++, p += 4 * (size_t)n * es) {
		const uint8_t *wr[4] = { p, p + 32 * es, p + 64 * es, p + 96 * es };
		dot_rows_float_st(t, wr, xa, n, y + 4 * g, 4, 128 * es);
	}
}

/* ---------------------------------------------------- quantized rows */

/* Quants and scale of activation block b (x: Q8_0 blocks as bytes). */
#define XQS(x, b) ((x) + (size_t)(b) * sizeof(block_q8_0) + 2)
#define XD(x, b) ((x) + (size_t)(b) * sizeof(block_q8_0))

/* Exact per-lane int32 partial sums of one Q8_0 block pair (w, x), x in
 * [-127, 127]: |w| (w = -128 gives 128 unsigned) times sign-adjusted x,
 * pairs fit in int16 (<= 2 * 128 * 127). */
AVX2_INLINE __m256i dot32_q8(__m256i w, __m256i x)
{
	__m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
	return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

/* Nibbles of a Q4_0 block in element order (0..15 unsigned). */
AVX2_INLINE __m256i unpack_q4(const uint8_t *qs)
{
	__m128i q = _mm_loadu_si128((const __m128i *)qs);
	__m256i both = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
	return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

/* Block b of row w: exact int32 partial sums (8 lanes). For Q4_0,
 * sum (n - 8) x = sum n x - 8 sum x, with x8 = 8 * the lane sums of x. */
AVX2_INLINE __m256i block_dot(dtype_t t, const uint8_t *w, int64_t b, __m256i xq, __m256i x8)
{
	if (t == DTYPE_Q8_0) {
		const uint8_t *qs = w + (size_t)b * sizeof(block_q8_0) + 2;
		return dot32_q8(_mm256_loadu_si256((const __m256i *)qs), xq);
	}
	const uint8_t *qs = w + (size_t)b * sizeof(block_q4_0) + 2;
	__m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(unpack_q4(qs), xq),
				      _mm256_set1_epi16(1));
	return _mm256_sub_epi32(p, x8);
}

AVX2_INLINE uint16_t block_d(dtype_t t, const uint8_t *w, int64_t b)
{
	return ld_u16(w + (size_t)b * (t == DTYPE_Q8_0 ? sizeof(block_q8_0) : sizeof(block_q4_0)));
}

/* R = 4 rows: the four block sums are reduced together (hadd) and the float
 * step acc += (float)sumi * (dw * dx) runs in four lanes; R = 1: the same
 * float operations on one scalar. Bit-exact with the generic (the integer
 * sums are exact, the float sequence is identical, no FMA). */
AVX2_INLINE void dot_rows_quant(dtype_t t, const uint8_t *const *w, const uint8_t *x,
				int64_t nb, float *out, const int R)
{
	__m128 acc4 = _mm_setzero_ps();
	float acc1 = 0.0f;
	for (int64_t b = 0; b < nb; b++) {
		__m256i xq = _mm256_loadu_si256((const __m256i *)XQS(x, b));
		__m256i x8 = _mm256_setzero_si256();
		if (t == DTYPE_Q4_0)
			x8 = _mm256_slli_epi32(_mm256_madd_epi16(
				_mm256_maddubs_epi16(_mm256_set1_epi8(1), xq),
				_mm256_set1_epi16(1)), 3);
		float dx = fp16_to_f32_inline(ld_u16(XD(x, b)));
		if (R == 4) {
			for (int r = 0; r < 4; r++)
				_mm_prefetch((const char *)w[r] + (size_t)b * (t == DTYPE_Q8_0 ? 34 : 18) + PF_DIST,
					     _MM_HINT_T0);
			__m256i p0 = block_dot(t, w[0], b, xq, x8), p1 = block_dot(t, w[1], b, xq, x8);
			__m256i p2 = block_dot(t, w[2], b, xq, x8), p3 = block_dot(t, w[3], b, xq, x8);
			__m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
			__m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
			__m128 dw = _mm_cvtph_ps(_mm_setr_epi16((short)block_d(t, w[0], b),
				(short)block_d(t, w[1], b), (short)block_d(t, w[2], b),
				(short)block_d(t, w[3], b), 0, 0, 0, 0));
			__m128 d = _mm_mul_ps(dw, _mm_set1_ps(dx));
			__m128 prod = _mm_mul_ps(_mm_cvtepi32_ps(s), d);
			FP_ROUNDED(prod);
			acc4 = _mm_add_ps(acc4, prod);
		} else {
			int32_t s = hsum256_epi32(block_dot(t, w[0], b, xq, x8));
			float d = fp16_to_f32_inline(block_d(t, w[0], b)) * dx;
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

/* ------------------------------------------ packed quantized groups */

/* Packed groups of 16 rows (pack16, kernels.h): each 64-byte vector of the
 * layout is two 256-bit halves, rows 0-7 and rows 8-15, lane i of a half
 * holding 4 bytes of row i (or 8 + i). The activations' 4 bytes of the
 * same element group are broadcast to every lane, so each lane gathers its
 * row's exact block sum with no horizontal sum, and the float step runs
 * for 8 rows per instruction:
 *     acc = acc + (float)sumi * (dw * dx)
 * the generic's, per lane, blocks in ascending order, the product rounded
 * before the add (no FMA): every row keeps the generic's bits.
 *  Q8_0: the layout holds u = q + 128; w = u ^ 0x80 is the quant again and
 *    the sign trick of dot32_q8 gives exact int16 pair sums (|w| <= 128
 *    against sign-adjusted x, |pair| <= 2 * 128 * 127), widened by vpmaddwd.
 *  Q4_0: nibbles n in 0..15 against x: pair sums |.| <= 2 * 15 * 127, so
 *    the 8 vpmaddubsw results of a block add in int16 (<= 8 * 3810 < 2^15)
 *    before one vpmaddwd; the start value -8 * sum x makes it sum (n-8) x. */
AVX2_INLINE void matvec_p16_quant(dtype_t t, const void *P, const void *xa, float *y,
				  int64_t n, int64_t ng)
{
	const uint8_t *x = xa;
	const int64_t nb = n / QK;
	const size_t qv = t == DTYPE_Q8_0 ? 512 : 256;
	const __m256i m0f = _mm256_set1_epi8(0x0F), m80 = _mm256_set1_epi8((char)0x80);
	const __m256i ones = _mm256_set1_epi16(1);
	int32_t cx[P16_NBMAX];
	float dx[P16_NBMAX];
	/* the chunk's first 2 KiB at once (as kernels_avx512.c matvec_p16) */
	for (size_t k = 0; k < 2048; k += 64)
		_mm_prefetch((const char *)P + k, _MM_HINT_T0);
	for (int64_t b = 0; b < nb; b++) {
		cx[b] = 0;
		if (t == DTYPE_Q4_0)
			cx[b] = -8 * hsum256_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(
				_mm256_set1_epi8(1), _mm256_loadu_si256((const __m256i *)XQS(x, b))), ones));
		dx[b] = ld_f16_f16c(XD(x, b));
	}
	const uint8_t *p = P, *sc = P;
	for (int64_t g = 0; g < ng; g++) {
		__m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
		for (int64_t b = 0; b < nb; b++) {
			if (!(b & 1)) { /* a pair's scales */
				sc = p;
				p += 64;
			}
			const uint8_t *xq = XQS(x, b);
			__m256i s0 = _mm256_set1_epi32(cx[b]), s1 = s0;
			if (t == DTYPE_Q4_0) {
				__m256i h0 = _mm256_setzero_si256(), h1 = h0;
#pragma GCC unroll 4
				for (int v = 0; v < 4; v++) {
					__m256i xl = _mm256_set1_epi32((int)ld_u32(xq + 4 * v));
					__m256i xh = _mm256_set1_epi32((int)ld_u32(xq + 16 + 4 * v));
					__m256i z0 = _mm256_loadu_si256((const __m256i *)(p + 64 * v));
					__m256i z1 = _mm256_loadu_si256((const __m256i *)(p + 64 * v + 32));
					h0 = _mm256_add_epi16(h0, _mm256_maddubs_epi16(_mm256_and_si256(z0, m0f), xl));
					h1 = _mm256_add_epi16(h1, _mm256_maddubs_epi16(_mm256_and_si256(z1, m0f), xl));
					KEEP(h0);
					KEEP(h1);
					h0 = _mm256_add_epi16(h0, _mm256_maddubs_epi16(
						_mm256_and_si256(_mm256_srli_epi16(z0, 4), m0f), xh));
					h1 = _mm256_add_epi16(h1, _mm256_maddubs_epi16(
						_mm256_and_si256(_mm256_srli_epi16(z1, 4), m0f), xh));
					KEEP(h0);
					KEEP(h1);
				}
				s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(h0, ones));
				s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(h1, ones));
			} else {
#pragma GCC unroll 8
				for (int v = 0; v < 8; v++) {
					__m256i xv = _mm256_set1_epi32((int)ld_u32(xq + 4 * v));
					__m256i w0 = _mm256_xor_si256(_mm256_loadu_si256(
						(const __m256i *)(p + 64 * v)), m80);
					__m256i w1 = _mm256_xor_si256(_mm256_loadu_si256(
						(const __m256i *)(p + 64 * v + 32)), m80);
					s0 = _mm256_add_epi32(s0, dot32_q8(w0, xv));
					s1 = _mm256_add_epi32(s1, dot32_q8(w1, xv));
					KEEP(s0);
					KEEP(s1);
				}
			}
			p += qv;
			const __m256 vdx = _mm256_set1_ps(dx[b]);
			const uint8_t *sb = sc + 32 * (b & 1);
			__m256 d0 = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)sb)), vdx);
			__m256 d1 = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sb + 16))),
						  vdx);
			__m256 p0 = _mm256_mul_ps(_mm256_cvtepi32_ps(s0), d0);
			__m256 p1 = _mm256_mul_ps(_mm256_cvtepi32_ps(s1), d1);
			FP_ROUNDED(p0);
			FP_ROUNDED(p1);
			acc0 = _mm256_add_ps(acc0, p0);
			acc1 = _mm256_add_ps(acc1, p1);
		}
		_mm256_storeu_ps(y + 16 * g, acc0);
		_mm256_storeu_ps(y + 16 * g + 8, acc1);
	}
}

AVX2 static void matvec_p16_f32_avx2(const void *P, const void *xa, float *y, int64_t n, int64_t ng)
{
	matvec_p16_float(DTYPE_F32, P, xa, y, n, ng);
}

AVX2 static void matvec_p16_f16_avx2(const void *P, const void *xa, float *y, int64_t n, int64_t ng)
{
	matvec_p16_float(DTYPE_F16, P, xa, y, n, ng);
}

AVX2 static void matvec_p16_bf16_avx2(const void *P, const void *xa, float *y, int64_t n, int64_t ng)
{
	matvec_p16_float(DTYPE_BF16, P, xa, y, n, ng);
}

AVX2 static void matvec_p16_q8_0_avx2(const void *P, const void *xa, float *y, int64_t n,
				 int64_t ng)
{
	matvec_p16_quant(DTYPE_Q8_0, P, xa, y, n, ng);
}

AVX2 static void matvec_p16_q4_0_avx2(const void *P, const void *xa, float *y, int64_t n,
				 int64_t ng)
{
	matvec_p16_quant(DTYPE_Q4_0, P, xa, y, n, ng);
}

/* ------------------------------------------ forward-pass float math */

/* Same bits as the generic twins (kernels.h), as kernels_avx512.c: only
 * elementwise operations and sums that are independent per lane are
 * vectorized; every product is rounded before its add (FP_ROUNDED, no
 * FMA). Tails shorter than a vector run the generic's scalar operations. */

/* Lanes 0 .. rem-1 all ones (rem clamped to 0..8), for maskload/maskstore. */
AVX2_INLINE __m256i tail_mask8(int64_t rem)
{
	const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	int32_t r = rem < 0 ? 0 : rem > 8 ? 8 : (int32_t)rem;
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), idx);
}

/* ss as the generic's (rmsnorm_scale: ggml's sum in double); o = w * (ss *
 * x) 8 lanes at once. */
AVX2 static void rmsnorm_avx2(float *o, const float *x, const float *w, int64_t n, float eps)
{
	const float ss = rmsnorm_scale(x, n, eps);
	const __m256 vs = _mm256_set1_ps(ss);
	int64_t j = 0;
	for (; j + 8 <= n; j += 8) {
		__m256 sx = _mm256_mul_ps(vs, _mm256_loadu_ps(x + j));
		VEC_ROUNDED(sx);
		_mm256_storeu_ps(o + j, _mm256_mul_ps(_mm256_loadu_ps(w + j), sx));
	}
	for (; j < n; j++)
		o[j] = w[j] * (ss * x[j]);
}

/* softmax (softmax_generic's bits) of c <= 4 rows of n scores, row h at
 * s + h * ss (decode: the query heads of one KV head; c = 1: softmax),
 * as kernels_avx512.c softmax_rows: per row the max over lanes (a NaN in
 * any row sends every row to the generic), expf(x - max) 8 at a time by
 * the vector expf where the probe agreed (vexp_x86.h: expf's bits; else
 * expf itself), the sum sequential in t from +0, then x / sum 8 lanes at
 * once; the c sums interleaved (c independent add chains). */
AVX2_INLINE void softmax_rows(float *s, int64_t ss, int64_t n, const int c)
{
	if (n <= 0)
		return;
	float mx[4];
	int nan = 0;
#pragma GCC unroll 4
	for (int h = 0; h < 4; h++) {
		if (h >= c)
			continue;
		const float *x = s + h * ss;
		__m256 vm = _mm256_set1_ps(x[0]), un = _mm256_setzero_ps();
		int64_t i = 0;
		for (; i + 8 <= n; i += 8) {
			__m256 v = _mm256_loadu_ps(x + i);
			un = _mm256_or_ps(un, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
			vm = _mm256_max_ps(vm, v);
		}
		float max = hmax256_ps(vm);
		nan |= _mm256_movemask_ps(un) != 0;
		for (; i < n; i++) {
			nan |= x[i] != x[i];
			max = x[i] > max ? x[i] : max;
		}
		mx[h] = max;
	}
	if (nan) {
		for (int h = 0; h < c; h++)
			softmax_generic(s + h * ss, n);
		return;
	}
	const bool vexp = attn_vexp_ok();
	float sum[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
	for (int64_t i = 0; i < n; i += 8) {
		const int nr = n - i < 8 ? (int)(n - i) : 8;
		float e[4][8];
#pragma GCC unroll 4
		for (int h = 0; h < 4; h++) {
			if (h >= c)
				continue;
			float *x = s + h * ss + i;
			if (nr == 8) {
				_mm256_storeu_ps(e[h], _mm256_sub_ps(_mm256_loadu_ps(x),
								     _mm256_set1_ps(mx[h])));
			} else { /* lanes past n: exp(0), never stored nor added */
				for (int j = 0; j < 8; j++)
					e[h][j] = j < nr ? x[j] - mx[h] : 0.0f;
			}
			if (vexp)
				vexp_lanes_avx2(e[h]);
			else
				for (int j = 0; j < nr; j++)
					e[h][j] = expf(e[h][j]);
			memcpy(x, e[h], (size_t)nr * sizeof *x);
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
		const __m256 vs = _mm256_set1_ps(sum[h]);
		int64_t i = 0;
		for (; i + 8 <= n; i += 8)
			_mm256_storeu_ps(x + i, _mm256_div_ps(_mm256_loadu_ps(x + i), vs));
		for (; i < n; i++)
			x[i] /= sum[h];
	}
}

/* One row: the level's softmax (the sampler's too; the same bits). */
AVX2 static void softmax_avx2(float *x, int64_t n)
{
	softmax_rows(x, 0, n, 1);
}

/* exp_eg (kernels_impl.h) 8 lanes at once, the same operations in the
 * same order (vroundps to nearest even as rintf): the same bits per lane. */
AVX2_INLINE __m256 exp_eg_avx2(__m256 x)
{
	__m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(EXP_EG_LOG2E)),
				   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 a = _mm256_mul_ps(n, _mm256_set1_ps(EXP_EG_C1));
	VEC_ROUNDED(a);
	__m256 r = _mm256_sub_ps(x, a);
	a = _mm256_mul_ps(n, _mm256_set1_ps(EXP_EG_C2));
	VEC_ROUNDED(a);
	r = _mm256_sub_ps(r, a);
	__m256 z = _mm256_mul_ps(r, r);
	__m256 p = _mm256_set1_ps(exp_eg_poly[0]);
#pragma GCC unroll 5
	for (int i = 1; i < 6; i++) {
		p = _mm256_mul_ps(p, r);
		VEC_ROUNDED(p);
		p = _mm256_add_ps(p, _mm256_set1_ps(exp_eg_poly[i]));
	}
	p = _mm256_mul_ps(p, z);
	VEC_ROUNDED(p);
	p = _mm256_add_ps(_mm256_add_ps(p, r), _mm256_set1_ps(1.0f));
	__m256i k = _mm256_cvtps_epi32(n), h = _mm256_srai_epi32(k, 1);
	const __m256i bias = _mm256_set1_epi32(127);
	p = _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23)));
	VEC_ROUNDED(p);
	p = _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(
				     _mm256_add_epi32(_mm256_sub_epi32(k, h), bias), 23)));
	/* the scalar's early returns, in its order: NaN, low, high */
	p = _mm256_blendv_ps(p, _mm256_set1_ps(__builtin_inff()),
			     _mm256_cmp_ps(x, _mm256_set1_ps(EXP_EG_HI), _CMP_GT_OQ));
	p = _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(EXP_EG_LO), _CMP_LE_OQ), p);
	return _mm256_blendv_ps(p, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* swiglu_generic 8 lanes at once (same operations: the same bits). */
AVX2 static void swiglu_avx2(float *o, const float *a, const float *b, int64_t n)
{
	const __m256 one = _mm256_set1_ps(1.0f);
	const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN));
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(a + i);
		__m256 e = exp_eg_avx2(_mm256_xor_ps(v, sign));
		VEC_ROUNDED(e);
		__m256 s = _mm256_div_ps(one, _mm256_add_ps(one, e));
		v = _mm256_mul_ps(v, s);
		VEC_ROUNDED(v);
		_mm256_storeu_ps(o + i, _mm256_mul_ps(v, _mm256_loadu_ps(b + i)));
	}
	for (; i < n; i++) {
		float val = a[i];
		val *= (1.0f / (1.0f + exp_eg(-val)));
		val *= b[i];
		o[i] = val;
	}
}

/* One pair's rotation, as rope_apply_generic. */
static inline void rope_pair(float *v, int a, int b, float c, float s)
{
	float v0 = v[a], v1 = v[b];
	v[a] = v0 * c - v1 * s;
	v[b] = v0 * s + v1 * c;
}

/* neox = 0: 4 adjacent pairs per vector, cos and sin duplicated into both
 * lanes of a pair (moveldup / movehdup of the table), the pair swapped;
 * vaddsubps gives even lanes v0 c - v1 s and odd lanes v1 c + v0 s (an add
 * commutes exactly). neox = 1: halves a and b = a + rot/2 as two vectors,
 * cos and sin de-interleaved. */
AVX2 static void rope_apply_avx2(float *x, int n_heads, int head_dim, int rot_dim,
				 const float *cs, int neox)
{
	const __m256i ev = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
	const int half = rot_dim / 2;
	for (int h = 0; h < n_heads; h++) {
		float *v = x + (size_t)h * head_dim;
		int i = 0;
		if (!neox) {
			for (; i + 8 <= rot_dim; i += 8) {
				__m256 t = _mm256_loadu_ps(cs + i);
				__m256 a = _mm256_loadu_ps(v + i);
				__m256 p = _mm256_mul_ps(a, _mm256_moveldup_ps(t));
				__m256 q = _mm256_mul_ps(_mm256_permute_ps(a, 0xB1), _mm256_movehdup_ps(t));
				VEC_ROUNDED(p);
				VEC_ROUNDED(q);
				_mm256_storeu_ps(v + i, _mm256_addsub_ps(p, q));
			}
			for (; i < rot_dim; i += 2)
				rope_pair(v, i, i + 1, cs[i], cs[i + 1]);
			continue;
		}
		int j = 0;
		for (; j + 8 <= half; j += 8) {
			/* pairs j..j+7: cs[2j .. 2j+15] -> cos (low 128) and sin (high 128) */
			__m256 lo = _mm256_permutevar8x32_ps(_mm256_loadu_ps(cs + 2 * j), ev);
			__m256 hi = _mm256_permutevar8x32_ps(_mm256_loadu_ps(cs + 2 * j + 8), ev);
			__m256 c = _mm256_permute2f128_ps(lo, hi, 0x20);
			__m256 sn = _mm256_permute2f128_ps(lo, hi, 0x31);
			__m256 a = _mm256_loadu_ps(v + j), b = _mm256_loadu_ps(v + j + half);
			__m256 ac = _mm256_mul_ps(a, c), bs = _mm256_mul_ps(b, sn);
			__m256 as = _mm256_mul_ps(a, sn), bc = _mm256_mul_ps(b, c);
			VEC_ROUNDED(ac);
			VEC_ROUNDED(bs);
			VEC_ROUNDED(as);
			VEC_ROUNDED(bc);
			_mm256_storeu_ps(v + j, _mm256_sub_ps(ac, bs));
			_mm256_storeu_ps(v + j + half, _mm256_add_ps(as, bc));
		}
		for (; j < half; j++)
			rope_pair(v, j, j + half, cs[2 * j], cs[2 * j + 1]);
	}
}

/* 8x8 transpose: r[i] = row i -> r[j] lane i = row i's element j. */
AVX2_INLINE void transpose8_ps(__m256 *r)
{
	__m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
	__m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
	__m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
	__m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
	__m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
	__m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
	__m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
	__m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
	r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
	r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
	r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
	r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
	r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
	r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
	r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
	r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* Elements i0 .. i0 + min(rem, 8) - 1 of a KV row of type kt as floats,
 * the lanes from rem on 0 and not read (exact; kernels.h kv_type_t): F32
 * loaded, F16 converted by vcvtph2ps, Q8_0 quants sign-extended and
 * converted, times the block's scale (hd a multiple of 32: rem <= 0 or
 * >= 8). */
AVX2_INLINE __m256 kv_ld8(const int kt, const uint8_t *row, int64_t i0, int64_t rem)
{
	if (rem <= 0)
		return _mm256_setzero_ps();
	if (kt == KV_F16) {
		if (rem >= 8)
			return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(row + 2 * i0)));
		uint16_t h[8] = { 0 };
		memcpy(h, row + 2 * i0, (size_t)rem * 2);
		return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)h));
	}
	if (kt == KV_Q8_0) {
		const uint8_t *b = row + (i0 / QK) * (int64_t)sizeof(block_q8_0);
		__m128i q8 = _mm_loadl_epi64((const __m128i *)(const void *)(b + 2 + i0 % QK));
		return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)),
				     _mm256_set1_ps(_cvtsh_ss(ld_u16(b))));
	}
	const float *f = (const float *)(const void *)(row + 4 * i0);
	return rem >= 8 ? _mm256_loadu_ps(f) : _mm256_maskload_ps(f, tail_mask8(rem));
}

/* Scores of c <= 4 query heads (q + h * qs) sharing one KV head, 8
 * positions per vector (lane l = position t + l), each summed over i in
 * order from +0 (the generic's dot, per lane): the 8 keys are read as rows,
 * 8 dimensions at a time (converted as they are loaded, kv_ld8), and
 * transposed in registers once for the c heads (positions past n_pos and
 * dimensions past hd read as 0 and are never added); the division by
 * sqrtf(hd) per lane. v is not read (attn_decode_x86.h's signature). */
AVX2_INLINE void att_scores(const int kt, const float *q, int64_t qs, int c,
			    const uint8_t *k, const uint8_t *v, size_t rb, int n_pos, int hd,
			    float *scores, int64_t ss)
{
	const __m256 scale = _mm256_set1_ps(sqrtf((float)hd));
	for (int t = 0; t < n_pos; t += 8) {
		const int nr = n_pos - t < 8 ? n_pos - t : 8;
		const uint8_t *kt0 = k + (size_t)t * rb;
		__m256 a[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(),
				_mm256_setzero_ps(), _mm256_setzero_ps() };
		for (int i0 = 0; i0 < hd; i0 += 8) {
			const int nj = hd - i0 < 8 ? hd - i0 : 8;
			__m256 r[8];
#pragma GCC unroll 8
			for (int i = 0; i < 8; i++)
				r[i] = kv_ld8(kt, kt0 + (size_t)i * rb, i0, i >= nr ? 0 : nj);
			transpose8_ps(r);
#pragma GCC unroll 4
			for (int h = 0; h < 4; h++) {
				if (h >= c)
					continue;
				const float *qh = q + (size_t)h * (size_t)qs + i0;
#pragma GCC unroll 8
				for (int j = 0; j < 8; j++) {
					if (j >= nj)
						continue;
					__m256 p = _mm256_mul_ps(_mm256_set1_ps(qh[j]), r[j]);
					VEC_ROUNDED(p);
					a[h] = _mm256_add_ps(a[h], p);
				}
			}
		}
#pragma GCC unroll 4
		for (int h = 0; h < 4; h++)
			if (h < c)
				_mm256_maskstore_ps(scores + (size_t)h * (size_t)ss + t, tail_mask8(nr),
						    _mm256_div_ps(a[h], scale));
	}
}

/* out + h * os (hd floats) = sum_u s_h[u] v_u for the c <= 4 heads whose
 * weights are s_h = s + h * ss: 16 dimensions a pass over the values (the
 * 8 accumulators, 2 values and a weight fit the 16 registers), each value
 * row's two vectors loaded and converted once for the c heads (kv_ld8),
 * each sum over u in order from +0 (the generic's order per head). */
AVX2_INLINE void att_wsum(const int kt, float *out, int64_t os, const float *s, int64_t ss,
			  const uint8_t *v, size_t rb, int n_pos, int hd, const int c)
{
	for (int i = 0; i < hd; i += 16) {
		const __m256i m0 = tail_mask8(hd - i), m1 = tail_mask8(hd - i - 8);
		/* the first byte of this pass's dimensions in a row */
		const size_t b0 = kv_row_bytes((kv_type_t)kt, kt == KV_Q8_0 ? i / QK * QK : i);
		__m256 o[4][2];
#pragma GCC unroll 4
		for (int h = 0; h < 4; h++)
			o[h][0] = o[h][1] = _mm256_setzero_ps();
		for (int u = 0; u < n_pos; u++) {
			const uint8_t *vu = v + (size_t)u * rb;
			/* the row 8 on: at a long context the values come from
			 * L2 or memory, rb apart */
			_mm_prefetch((const char *)vu + 8 * rb + b0, _MM_HINT_T0);
			const __m256 x0 = kv_ld8(kt, vu, i, hd - i);
			const __m256 x1 = kv_ld8(kt, vu, i + 8, hd - i - 8);
#pragma GCC unroll 4
			for (int h = 0; h < 4; h++) {
				if (h >= c)
					continue;
				const __m256 su = _mm256_set1_ps(s[(size_t)h * (size_t)ss + (size_t)u]);
				__m256 p0 = _mm256_mul_ps(su, x0), p1 = _mm256_mul_ps(su, x1);
				VEC_ROUNDED(p0);
				VEC_ROUNDED(p1);
				o[h][0] = _mm256_add_ps(o[h][0], p0);
				o[h][1] = _mm256_add_ps(o[h][1], p1);
			}
		}
#pragma GCC unroll 4
		for (int h = 0; h < 4; h++) {
			if (h >= c)
				continue;
			_mm256_maskstore_ps(out + (size_t)h * (size_t)os + i, m0, o[h][0]);
			_mm256_maskstore_ps(out + (size_t)h * (size_t)os + i + 8, m1, o[h][1]);
		}
	}
}

#define ATTD_INLINE AVX2_INLINE
#define ATTD_FN AVX2
#define ATTD_SUFFIX avx2
#include "kernels/attn_decode_x86.h"

/* ------------------------------------------------------ entry points */

#define ROWS_FLOAT(T, wr, xa, n, out, R) dot_rows_float(T, wr, (const float *)(xa), n, out, R)
#define ROWS_QUANT(T, wr, xa, n, out, R) \
	dot_rows_quant(T, wr, (const uint8_t *)(xa), (n) / QK, out, R)

KERNEL_ROWS4(f32_avx2, AVX2 static, DTYPE_F32, ROWS_FLOAT)
KERNEL_ROWS4(f16_avx2, AVX2 static, DTYPE_F16, ROWS_FLOAT)
KERNEL_ROWS4(bf16_avx2, AVX2 static, DTYPE_BF16, ROWS_FLOAT)
KERNEL_ROWS4(q8_0_avx2, AVX2 static, DTYPE_Q8_0, ROWS_QUANT)
KERNEL_ROWS4(q4_0_avx2, AVX2 static, DTYPE_Q4_0, ROWS_QUANT)

/* ------------------------------------------------------------ table */

const kernel_ops_t kops_avx2 = {
	.name = "avx2",
	.type = {
		[DTYPE_F32] = {
			.vec_dot = dot_f32_avx2, .matvec = matvec_f32_avx2,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_f32_avx2, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_F16] = {
			.vec_dot = dot_f16_avx2, .matvec = matvec_f16_avx2,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_f16_avx2, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_BF16] = {
			.vec_dot = dot_bf16_avx2, .matvec = matvec_bf16_avx2,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_bf16_avx2, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q8_0] = {
			.vec_dot = dot_q8_0_avx2, .matvec = matvec_q8_0_avx2,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_q8_0_avx2, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q4_0] = {
			.vec_dot = dot_q4_0_avx2, .matvec = matvec_q4_0_avx2,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_q4_0_avx2, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q4_1] = {
			.vec_dot = dot_q4_1_avx2, .matvec = matvec_q4_1_avx2,
			.matmat = matmat_q4_1_avx2,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
		},
		/* packed: its Q8_0 form (kernels_impl.h q8_form); its gemm: gemm_quant */
		[DTYPE_Q5_0] = {
			.vec_dot = dot_q5_0_avx2, .matvec = matvec_q5_0_avx2,
			.matmat = matmat_absent,
			.matvec_p16 = matvec_p16_q8_0_avx2, .matmat_p16 = matmat_p16_absent,
		},
		[DTYPE_Q5_1] = {
			.vec_dot = dot_q5_1_avx2, .matvec = matvec_q5_1_avx2,
			.matmat = matmat_q5_1_avx2,
			.matvec_p16 = matvec_p16_absent, .matmat_p16 = matmat_p16_absent,
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
			.vec_dot = dot_q4_K_avx2, .matvec = matvec_q4_K_avx2,
			.matmat = matmat_q4_K_avx2,
			.matvec_p16 = matvec_p16_q4_K_avx2, .matmat_p16 = matmat_p16_q4_K_avx2,
		},
		[DTYPE_Q5_K] = {
			.vec_dot = dot_q5_K_avx2, .matvec = matvec_q5_K_avx2,
			.matmat = matmat_q5_K_avx2,
			.matvec_p16 = matvec_p16_q5_K_avx2, .matmat_p16 = matmat_p16_q5_K_avx2,
		},
		[DTYPE_Q6_K] = {
			.vec_dot = dot_q6_K_avx2, .matvec = matvec_q6_K_avx2,
			.matmat = matmat_q6_K_avx2,
			.matvec_p16 = matvec_p16_q6_K_avx2, .matmat_p16 = matmat_p16_q6_K_avx2,
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
	.quantize_q8_0 = quantize_q8_0_avx2,
	.quantize_q8_K = quantize_q8_K_avx2,
	.fp16_to_f32_row = fp16_to_f32_row_avx2,
	.f32_to_fp16_row = f32_to_fp16_row_avx2,
	.rmsnorm = rmsnorm_avx2,
	.softmax = softmax_avx2,
	.rope_apply = rope_apply_avx2,
	.swiglu = swiglu_avx2,
	.gemm_quant = gemm_quant_avx2,
	.gemm_aux = gemm_aux_avx2,
	.kv = {
		[KV_F16] = {attention_f16_avx2, attn_rows_f16_avx2, attn_rows_heads_f16_avx2},
		[KV_F32] = {attention_f32_avx2, attn_rows_f32_avx2, attn_rows_heads_f32_avx2},
		[KV_Q8_0] = {attention_q8_0_avx2, attn_rows_q8_0_avx2, attn_rows_heads_q8_0_avx2},
	},
};

#endif
