/* gemm: the amx level's BF16 kernels (issue 34): BF16 weights against
 * bf16 activations on AMX-BF16 tiles (TDPBF16PS) for a batch, and the same
 * arithmetic with 16 rows in AVX-512 lanes for one token (decode's matvec
 * and vec_dot) and small batches, so that a token's output is the same
 * bits whatever the batch (ARCHITECTURE.md, "Bit-exactness and batch
 * invariance"; doc/amx/README.md, "BF16 weights").
 *
 * One source, compiled twice, as gemm_amx.c: here with the tile
 * instructions (gemm_tiles_bf16_amx, and the amx level's entries
 * dot_bf16_amx, matvec_bf16_amx and matmat_bf16_amx), and as
 * gemm_amx_bf16_emu.c with the tile instructions emulated in C (amx_tile.h;
 * the same functions named *_emu, for tests only, in no table). Only the
 * tile operations differ; the lanes need no AMX and run on any host with
 * the avx512vnni level.
 *
 * The arithmetic ("the tile order"). A weight row is read as its bf16
 * values, a token's activations as the high half of each float (a bf16:
 * exact for act_prepare's output, which rounds them to bf16 as ggml's
 * vec_dot_type of BF16 does), both zero-padded to a multiple of 32
 * elements. Per output, with fma the fp32 fused multiply-add and + the
 * fp32 add, all rounded to nearest even with DAZ and FTZ (amx_tile.h):
 *     acc = +0
 *     for each block of 32 elements, in ascending order:
 *         e = +0; o = +0
 *         for k = 0 .. 15:  e = fma(x[2k], w[2k], e)
 *                           o = fma(x[2k + 1], w[2k + 1], o)
 *         acc = acc + (e + o)
 * which is one TDPBF16PS per block of 32 with C accumulating over the
 * blocks. The lanes run it with MXCSR.DAZ and FTZ set for the call (and
 * restored), the tiles by definition.
 *
 * The contract (tests/test_gemm_amx_bf16.c checks each):
 *  (a) batch invariance: every output has the same bits from the tiles and
 *      from the lanes, so vec_dot, matvec and matmat agree for any number
 *      of tokens and any row range;
 *  (b) against the generic (vec_dot_generic, on the same bf16 operands: one
 *      sequential fp32 sum of w x): the products are exact in fp32 (8 x 8
 *      significant bits) unless they underflow, so for inputs without
 *      denormals only the order of the adds differs, and
 *          |y - y_generic| <= (g(n) + g(nb + 17)) S + (n + 2 nb) 2^-126,
 *      S = sum |w x|, nb = the blocks, g(k) = k u / (1 - k u), u = 2^-24
 *      (a sequential sum of k terms errs by at most g(k - 1) S; here each
 *      product passes at most 16 + 1 + nb adds). Against the float
 *      activations before act_prepare rounded them add 2^-8 S (bf16
 *      rounding to nearest, 8 significant bits: a relative error of at
 *      most 2^-8);
 *  (c) the same bits as a plain-C reference of the sequence above.
 * It is not the other levels' order (their float kernels have one each,
 * kernels_impl.h), so across levels BF16 outputs agree within (b).
 *
 * Tiles: C0..C3 (0-3) 16 tokens x 16 rows of fp32; A0, A1 (4, 5) 16 tokens
 * x one block (32 bf16, read from a bf16 copy of the batch's activations,
 * tokens padded to 16 with zero rows); B (6) one block of a group of 16
 * weight rows as TDPBF16PS reads it, 16 rows of 64 bytes, row k = the
 * pairs (w[2k], w[2k + 1]) of the 16 weight rows, weight row i at 4 i (a
 * 16 x 16 dword transpose of the rows as stored, once per group into
 * thread scratch, then read by every token tile). Per group, up to 4
 * token tiles a pass: 4 independent C chains per B load. Rows past r1
 * repeat row r1 - 1 and are not stored. The configuration is loaded at
 * every call and released at its end (gemm_amx.c says why). */
#include "kernels/gemm_impl.h"

#if defined(__x86_64__)

#include "kernels/simd_x86.h"
#include "kernels/amx_tile.h"

#if EGANG_AMX_EMU
#define BF_TILE_TARGET X86_AVX512VNNI_FEATURES
#define BF_SYM(name) name##_emu
#else
#define BF_TILE_TARGET X86_AMX_FEATURES
#define BF_SYM(name) name
#endif
/* the lanes: AVX-512 and FMA, no tile instruction */
#define BF_LANE_TARGET X86_AVX512VNNI_FEATURES
#define BF_LANE_FN __attribute__((target(BF_LANE_TARGET)))
#define BF_LANE_INLINE static inline __attribute__((always_inline, target(BF_LANE_TARGET)))
#define BF_TILE_FN __attribute__((target(BF_TILE_TARGET)))
#define BF_TILE_INLINE static inline __attribute__((always_inline, target(BF_TILE_TARGET)))

#define BF_RG 16  /* weight rows a group: the lanes, B's 16 dword columns */
#define BF_TT 16  /* tokens a tile: A's and C's rows */
#define BF_BLK 32 /* elements a block: one TDPBF16PS (16 pairs) */
#define BF_PASS 4 /* token tiles a pass: C0..C3 */

/* MXCSR bits: DAZ (6), FTZ (15), the rounding control (13-14; 0: nearest
 * even). */
#define BF_MXCSR_DAZ 0x0040u
#define BF_MXCSR_FTZ 0x8000u
#define BF_MXCSR_RC 0x6000u

/* Batches of at least this many tokens run on the tiles, smaller ones in
 * the lanes (the same bits). Not yet measured on an AMX host
 * (doc/amx/README.md): a full A tile is the guess. */
#ifndef GEMM_AMX_BF16_MIN_TOKENS
#define GEMM_AMX_BF16_MIN_TOKENS BF_TT
#endif

/* Blocks of 32 in a row of n elements, the last zero-padded. */
static inline int64_t bf16_blocks(int64_t n) { return (n + BF_BLK - 1) / BF_BLK; }

/* Row pointers of the group at r (rows past r1 - 1 repeat it). */
static inline void bf16_group_rows(const uint8_t *W, size_t rb, int64_t r, int64_t r1,
				   const uint8_t *rows[BF_RG])
{
	for (int i = 0; i < BF_RG; i++)
		rows[i] = W + (size_t)(r + i < r1 ? r + i : r1 - 1) * rb;
}

/* The lanes of the group at r that hold rows before r1. */
static inline __mmask16 bf16_row_mask(int64_t r, int64_t r1)
{
	return r1 - r >= BF_RG ? (__mmask16)0xFFFF : (__mmask16)((1u << (r1 - r)) - 1);
}

/* Block e0 (elements e0 .. e0 + 31, those at or past n read as 0) of the
 * 16 rows as TDPBF16PS's B reads it: p[k] lane i = row i's pair (e0 + 2k,
 * e0 + 2k + 1), low element in the low half. A 16 x 16 dword transpose. */
BF_LANE_INLINE void bf16_pairs16(const uint8_t *const rows[BF_RG], int64_t e0, int64_t n,
				 __m512i p[16])
{
	const __mmask32 m = n - e0 >= BF_BLK ? (__mmask32)0xFFFFFFFFu
					     : (__mmask32)((1u << (n - e0)) - 1);
	__m512i r[16], t[16];
#pragma GCC unroll 16
	for (int i = 0; i < 16; i++)
		r[i] = _mm512_maskz_loadu_epi16(m, rows[i] + 2 * e0);
	/* t[2i], t[2i + 1]: rows 2i and 2i + 1 interleaved by dwords */
#pragma GCC unroll 8
	for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
	}
	/* r[4q + j], 128-bit lane L: dword 4L + j of rows 4q .. 4q + 3 */
#pragma GCC unroll 4
	for (int i = 0; i < 16; i += 4) {
		r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
		r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
		r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
		r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
	}
	/* p[4L + j]: lane L of r[j], r[4 + j], r[8 + j], r[12 + j] */
#pragma GCC unroll 4
	for (int j = 0; j < 4; j++) {
		__m512i a0 = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x44);
		__m512i a1 = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xEE);
		__m512i b0 = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x44);
		__m512i b1 = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xEE);
		p[j] = _mm512_shuffle_i32x4(a0, b0, 0x88);
		p[4 + j] = _mm512_shuffle_i32x4(a0, b0, 0xDD);
		p[8 + j] = _mm512_shuffle_i32x4(a1, b1, 0x88);
		p[12 + j] = _mm512_shuffle_i32x4(a1, b1, 0xDD);
	}
}

/* Block e0 of a token's activations x (n floats) as the bf16 values the
 * tile reads, kept as floats (the high halves; 0 at or past n) -> xb. */
BF_LANE_INLINE void bf16_act_block(const float *x, int64_t e0, int64_t n, float *xb)
{
	const int64_t left = n - e0;
	const __mmask16 m0 = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
	const __mmask16 m1 = left >= 32 ? (__mmask16)0xFFFF
			     : left <= 16 ? (__mmask16)0
					  : (__mmask16)((1u << (left - 16)) - 1);
	const __m512i hi = _mm512_set1_epi32((int)0xFFFF0000u);
	__m512i v0 = _mm512_castps_si512(_mm512_maskz_loadu_ps(m0, x + e0));
	__m512i v1 = _mm512_castps_si512(_mm512_maskz_loadu_ps(m1, x + e0 + 16));
	_mm512_store_si512((void *)xb, _mm512_and_si512(v0, hi));
	_mm512_store_si512((void *)(xb + 16), _mm512_and_si512(v1, hi));
}

/* The lanes: rows r0 .. r1 - 1 of W (rb bytes apart) x ntok activation rows
 * (floats, xs bytes apart) -> Y[t ys + r], in the tile order; MXCSR must
 * hold DAZ and FTZ (bf16_lanes sets it around this call, which it must not
 * be inlined into: the compiler could move arithmetic across the MXCSR
 * writes). */
static __attribute__((noinline, target(BF_LANE_TARGET))) void
BF_SYM(bf16_lanes_body)(const uint8_t *W, size_t rb, const uint8_t *X, size_t xs, float *Y,
			int64_t ys, int64_t n, int64_t r0, int64_t r1, int64_t ntok)
{
	const int64_t nb = bf16_blocks(n);
	const __m512i hi = _mm512_set1_epi32((int)0xFFFF0000u);
	float xb[BF_BLK] __attribute__((aligned(64)));
	for (int64_t r = r0; r < r1; r += BF_RG) {
		const uint8_t *rows[BF_RG];
		bf16_group_rows(W, rb, r, r1, rows);
		const __mmask16 m = bf16_row_mask(r, r1);
		for (int64_t t0 = 0; t0 < ntok; t0 += BF_TT) {
			const int64_t T = ntok - t0 < BF_TT ? ntok - t0 : BF_TT;
			__m512 acc[BF_TT];
			for (int64_t t = 0; t < T; t++)
				acc[t] = _mm512_setzero_ps();
			for (int64_t b = 0; b < nb; b++) {
				__m512i p[16];
				bf16_pairs16(rows, b * BF_BLK, n, p);
				for (int64_t t = 0; t < T; t++) {
					const float *x = (const float *)(const void *)(X + (size_t)(t0 + t) * xs);
					bf16_act_block(x, b * BF_BLK, n, xb);
					__m512 e = _mm512_setzero_ps(), o = _mm512_setzero_ps();
#pragma GCC unroll 16
					for (int k = 0; k < 16; k++) {
						__m512 we = _mm512_castsi512_ps(_mm512_slli_epi32(p[k], 16));
						__m512 wo = _mm512_castsi512_ps(_mm512_and_si512(p[k], hi));
						e = _mm512_fmadd_ps(_mm512_set1_ps(xb[2 * k]), we, e);
						o = _mm512_fmadd_ps(_mm512_set1_ps(xb[2 * k + 1]), wo, o);
					}
					acc[t] = _mm512_add_ps(acc[t], _mm512_add_ps(e, o));
				}
			}
			for (int64_t t = 0; t < T; t++)
				_mm512_mask_storeu_ps(Y + (t0 + t) * ys + r, m, acc[t]);
		}
	}
}

/* bf16_lanes_body with MXCSR.DAZ, FTZ and rounding to nearest even for the
 * call; the caller's MXCSR is restored. */
static void BF_SYM(bf16_lanes)(const uint8_t *W, size_t rb, const uint8_t *X, size_t xs,
			       float *Y, int64_t ys, int64_t n, int64_t r0, int64_t r1,
			       int64_t ntok)
{
	const unsigned csr = _mm_getcsr();
	_mm_setcsr((csr & ~BF_MXCSR_RC) | BF_MXCSR_DAZ | BF_MXCSR_FTZ);
	BF_SYM(bf16_lanes_body)(W, rb, X, xs, Y, ys, n, r0, r1, ntok);
	_mm_setcsr(csr);
}

BF_LANE_FN float BF_SYM(dot_bf16_amx)(const void *w, const void *xa, int64_t n)
{
	float y;
	BF_SYM(bf16_lanes)(w, 0, xa, 0, &y, 0, n, 0, 1, 1);
	return y;
}

BF_LANE_FN void BF_SYM(matvec_bf16_amx)(const void *W, size_t rb, const void *xa, float *y,
					int64_t n, int64_t r0, int64_t r1)
{
	if (r1 > r0)
		BF_SYM(bf16_lanes)(W, rb, xa, 0, y, 0, n, r0, r1, 1);
}

/* ---------------------------------------------------------------- tiles */

static const amx_tilecfg_t bf16_cfg = {
	.palette = 1,
	.colsb = { 64, 64, 64, 64, 64, 64, 64 },
	.rows = { BF_TT, BF_TT, BF_TT, BF_TT, BF_TT, BF_TT, 16 },
};

/* vpermt2w's indices that take the high halves of 32 floats lo:hi: word i
 * of the result is word 2i + 1 of lo:hi, float i's bf16 (truncated). */
static const uint16_t bf16_hi_idx[32] __attribute__((aligned(64))) = {
	1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
	33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63,
};

/* The batch's activations as A reads them: token t's block b (32 bf16, the
 * floats' high halves, 0 at or past n) at A + t as + 64 b; tokens ntok ..
 * ntp - 1 all zero. */
BF_LANE_INLINE void bf16_acts(const uint8_t *X, size_t xs, int64_t n, int64_t ntok,
			      int64_t ntp, uint8_t *A, size_t as)
{
	const __m512i idx = _mm512_load_si512((const void *)bf16_hi_idx);
	const int64_t nb = bf16_blocks(n);
	for (int64_t t = 0; t < ntok; t++) {
		const float *x = (const float *)(const void *)(X + (size_t)t * xs);
		for (int64_t b = 0; b < nb; b++) {
			const int64_t left = n - b * BF_BLK;
			const __mmask16 m0 = left >= 16 ? (__mmask16)0xFFFF
							: (__mmask16)((1u << left) - 1);
			const __mmask16 m1 = left >= 32 ? (__mmask16)0xFFFF
					     : left <= 16 ? (__mmask16)0
							  : (__mmask16)((1u << (left - 16)) - 1);
			__m512i lo = _mm512_castps_si512(_mm512_maskz_loadu_ps(m0, x + b * BF_BLK));
			__m512i hi = _mm512_castps_si512(
				_mm512_maskz_loadu_ps(m1, x + b * BF_BLK + 16));
			_mm512_store_si512((void *)(A + (size_t)t * as + 64 * (size_t)b),
					   _mm512_permutex2var_epi16(lo, idx, hi));
		}
	}
	if (ntp > ntok)
		memset(A + (size_t)ntok * as, 0, (size_t)(ntp - ntok) * as);
}

/* The group at rows[] as B tiles: block b at G + 1024 b, row k = p[k]. */
BF_LANE_INLINE void bf16_group_b(const uint8_t *const rows[BF_RG], int64_t n, uint8_t *G)
{
	const int64_t nb = bf16_blocks(n);
	for (int64_t b = 0; b < nb; b++) {
		__m512i p[16];
		bf16_pairs16(rows, b * BF_BLK, n, p);
#pragma GCC unroll 16
		for (int k = 0; k < 16; k++)
			_mm512_store_si512((void *)(G + 1024 * (size_t)b + 64 * (size_t)k), p[k]);
	}
}

/* nt (1..4) token tiles (A: token k of tile j at A + (16 j + k) as) x the
 * group's B tiles at G over nb blocks -> c + 256 j: token k's 16 row sums
 * at c + 256 j + 16 k. */
BF_TILE_INLINE void bf16_tile_pass(const uint8_t *A, size_t as, const uint8_t *G, int64_t nb,
				   int nt, float *c)
{
	const size_t a16 = BF_TT * as;
	AMX_ZERO(0);
	if (nt > 1)
		AMX_ZERO(1);
	if (nt > 2)
		AMX_ZERO(2);
	if (nt > 3)
		AMX_ZERO(3);
	for (int64_t b = 0; b < nb; b++) {
		const uint8_t *a = A + 64 * (size_t)b;
		AMX_LOAD(6, G + 1024 * (size_t)b, 64);
		AMX_LOAD(4, a, as);
		AMX_DPBF16PS(0, 4, 6);
		if (nt > 1) {
			AMX_LOAD(5, a + a16, as);
			AMX_DPBF16PS(1, 5, 6);
		}
		if (nt > 2) {
			AMX_LOAD(4, a + 2 * a16, as);
			AMX_DPBF16PS(2, 4, 6);
		}
		if (nt > 3) {
			AMX_LOAD(5, a + 3 * a16, as);
			AMX_DPBF16PS(3, 5, 6);
		}
	}
	AMX_STORE(0, c, 64);
	if (nt > 1)
		AMX_STORE(1, c + 256, 64);
	if (nt > 2)
		AMX_STORE(2, c + 512, 64);
	if (nt > 3)
		AMX_STORE(3, c + 768, 64);
}

/* The tile kernel for any number of tokens: W rows r0 .. r1 - 1 x ntok
 * activation rows -> Y[t ys + r], the lanes' bits (matmat_kernel_t). */
BF_TILE_FN void BF_SYM(gemm_tiles_bf16_amx)(const void *W, size_t rb, const void *X, size_t xs,
					    float *Y, int64_t ys, int64_t n, int64_t r0,
					    int64_t r1, int64_t ntok)
{
	if (r1 <= r0 || ntok <= 0)
		return;
	const int64_t nb = bf16_blocks(n), ntp = (ntok + BF_TT - 1) / BF_TT * BF_TT;
	const size_t as = 64 * (size_t)nb;
	uint8_t *G = gemm_scratch(1, 1024 * (size_t)nb);
	uint8_t *A = G ? gemm_scratch(0, (size_t)ntp * as) : NULL;
	if (!A) { /* out of memory: the lanes need no scratch, same bits */
		BF_SYM(bf16_lanes)(W, rb, X, xs, Y, ys, n, r0, r1, ntok);
		return;
	}
	bf16_acts(X, xs, n, ntok, ntp, A, as);
	float c[BF_PASS * 256] __attribute__((aligned(64)));
	AMX_LOADCONFIG(&bf16_cfg);
	for (int64_t r = r0; r < r1; r += BF_RG) {
		const uint8_t *rows[BF_RG];
		bf16_group_rows(W, rb, r, r1, rows);
		bf16_group_b(rows, n, G);
		const __mmask16 m = bf16_row_mask(r, r1);
		for (int64_t t0 = 0; t0 < ntp; t0 += BF_PASS * BF_TT) {
			int nt = (int)((ntp - t0) / BF_TT);
			nt = nt < BF_PASS ? nt : BF_PASS;
			bf16_tile_pass(A + (size_t)t0 * as, as, G, nb, nt, c);
			for (int64_t k = 0; k < nt * BF_TT && t0 + k < ntok; k++)
				_mm512_mask_storeu_ps(Y + (t0 + k) * ys + r, m,
						      _mm512_load_ps(c + 16 * k));
		}
	}
	AMX_RELEASE();
}

/* The amx level's matmat: the tiles from GEMM_AMX_BF16_MIN_TOKENS tokens,
 * the lanes below. */
BF_TILE_FN void BF_SYM(matmat_bf16_amx)(const void *W, size_t rb, const void *X, size_t xs,
					float *Y, int64_t ys, int64_t n, int64_t r0, int64_t r1,
					int64_t ntok)
{
	if (ntok >= GEMM_AMX_BF16_MIN_TOKENS)
		BF_SYM(gemm_tiles_bf16_amx)(W, rb, X, xs, Y, ys, n, r0, r1, ntok);
	else if (r1 > r0 && ntok > 0)
		BF_SYM(bf16_lanes)(W, rb, X, xs, Y, ys, n, r0, r1, ntok);
}

#endif /* __x86_64__ */
