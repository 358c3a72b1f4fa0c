/* kernels: AVX2 + FMA + F16C level (see kernels_impl.h for what is
 * bit-exact). Every function carries its target attribute; the build has no
 * -march flag.
 *
 * Layout of the matvec kernels: a row-group template (dot_rows_*) takes R
 * row pointers (R = 4 in the body of a range, 1 for the rest and for
 * vec_dot) and runs, for each row, the same sequence of operations whatever
 * R is, so a row's bits never depend on how the rows were chunked. The
 * activations are loaded once per step and shared by the R rows. */
#include "kernels/kernels_impl.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX2_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c")))

/* ---------------------------------------------------------- helpers */

/* Software prefetch distance ahead of each row of a 4-row group (see
 * kernels_avx512.c); prefetches never fault past the end. */
#ifndef PF_DIST
#define PF_DIST 1024
#endif

/* Fixed-order horizontal sum: (lo128 + hi128), then (0+2, 1+3), then 0+1. */
AVX2_INLINE float hsum_ps(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
	return _mm_cvtss_f32(s);
}

AVX2_INLINE int32_t hsum_epi32(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
	s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
	return _mm_cvtsi128_si32(s);
}

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
		__m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
		m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
		m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
		float amax = _mm_cvtss_f32(m4);
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
 * hsum_ps(acc0 + acc1). Element i of row r is at w[r] + (i / 32) * st +
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
		out[r] = hsum_ps(_mm256_add_ps(acc[r][0], acc[r][1]));
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
			int32_t s = hsum_epi32(block_dot(t, w[0], b, xq, x8));
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
			cx[b] = -8 * hsum_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(
				_mm256_set1_epi8(1), _mm256_loadu_si256((const __m256i *)XQS(x, b))), ones));
		dx[b] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(ld_u16(XD(x, b)))));
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
					h0 = _mm256_add_epi16(h0, _mm256_maddubs_epi16(
						_mm256_and_si256(_mm256_srli_epi16(z0, 4), m0f), xh));
					h1 = _mm256_add_epi16(h1, _mm256_maddubs_epi16(
						_mm256_and_si256(_mm256_srli_epi16(z1, 4), m0f), xh));
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

AVX2 static void matvec_p16_f32(const void *P, const void *xa, float *y, int64_t n, int64_t ng)
{
	matvec_p16_float(DTYPE_F32, P, xa, y, n, ng);
}

AVX2 static void matvec_p16_f16(const void *P, const void *xa, float *y, int64_t n, int64_t ng)
{
	matvec_p16_float(DTYPE_F16, P, xa, y, n, ng);
}

AVX2 static void matvec_p16_bf16(const void *P, const void *xa, float *y, int64_t n, int64_t ng)
{
	matvec_p16_float(DTYPE_BF16, P, xa, y, n, ng);
}

AVX2 static void matvec_p16_q8_0(const void *P, const void *xa, float *y, int64_t n,
				 int64_t ng)
{
	matvec_p16_quant(DTYPE_Q8_0, P, xa, y, n, ng);
}

AVX2 static void matvec_p16_q4_0(const void *P, const void *xa, float *y, int64_t n,
				 int64_t ng)
{
	matvec_p16_quant(DTYPE_Q4_0, P, xa, y, n, ng);
}

/* ------------------------------------------------------ entry points */

#define DEFINE_KERNELS(tag, T, ROWS)                                            \
	AVX2 static float dot_##tag(const void *w, const void *xa, int64_t n)    \
	{                                                                        \
		const uint8_t *wr[1] = { w };                                    \
		float out[1];                                                    \
		ROWS(T, wr, xa, n, out, 1);                                      \
		return out[0];                                                   \
	}                                                                        \
	AVX2 static void matvec_##tag(const void *W, size_t rb, const void *xa,  \
				      float *y, int64_t n, int64_t r0, int64_t r1) \
	{                                                                        \
		const uint8_t *base = W;                                         \
		int64_t r = r0;                                                  \
		for (; r + 4 <= r1; r += 4) {                                    \
			const uint8_t *wr[4] = {                                 \
				base + (size_t)r * rb, base + (size_t)(r + 1) * rb, \
				base + (size_t)(r + 2) * rb, base + (size_t)(r + 3) * rb }; \
			ROWS(T, wr, xa, n, y + r, 4);                            \
		}                                                                \
		for (; r < r1; r++) {                                            \
			const uint8_t *wr[1] = { base + (size_t)r * rb };        \
			ROWS(T, wr, xa, n, y + r, 1);                            \
		}                                                                \
	}

#define ROWS_FLOAT(T, wr, xa, n, out, R) dot_rows_float(T, wr, (const float *)(xa), n, out, R)
#define ROWS_QUANT(T, wr, xa, n, out, R) \
	dot_rows_quant(T, wr, (const uint8_t *)(xa), (n) / QK, out, R)

DEFINE_KERNELS(f32, DTYPE_F32, ROWS_FLOAT)
DEFINE_KERNELS(f16, DTYPE_F16, ROWS_FLOAT)
DEFINE_KERNELS(bf16, DTYPE_BF16, ROWS_FLOAT)
DEFINE_KERNELS(q8_0, DTYPE_Q8_0, ROWS_QUANT)
DEFINE_KERNELS(q4_0, DTYPE_Q4_0, ROWS_QUANT)

const kernel_ops_t kops_avx2 = {
	.name = "avx2",
	.vec_dot = {
		[DTYPE_F32] = dot_f32,
		[DTYPE_F16] = dot_f16,
		[DTYPE_BF16] = dot_bf16,
		[DTYPE_Q8_0] = dot_q8_0,
		[DTYPE_Q4_0] = dot_q4_0,
	},
	.matvec = {
		[DTYPE_F32] = matvec_f32,
		[DTYPE_F16] = matvec_f16,
		[DTYPE_BF16] = matvec_bf16,
		[DTYPE_Q8_0] = matvec_q8_0,
		[DTYPE_Q4_0] = matvec_q4_0,
	},
	.matvec_p16 = {
		[DTYPE_F32] = matvec_p16_f32,
		[DTYPE_F16] = matvec_p16_f16,
		[DTYPE_BF16] = matvec_p16_bf16,
		[DTYPE_Q8_0] = matvec_p16_q8_0,
		[DTYPE_Q4_0] = matvec_p16_q4_0,
	},
	.quantize_q8_0 = quantize_q8_0_avx2,
	.fp16_to_f32_row = fp16_to_f32_row_avx2,
	.f32_to_fp16_row = f32_to_fp16_row_avx2,
};

#endif
