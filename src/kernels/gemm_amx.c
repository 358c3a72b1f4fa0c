/* gemm: the amx level's quantized matrix-matrix kernel, Q8_0 / Q4_0 / Q5_0
 * weights against Q8_0 activations (see gemm.c for the design and what is
 * bit-exact, doc/amx/README.md for what is tested where).
 *
 * One source, compiled twice: here with the AMX tile instructions
 * (gemm_quant_amx, the amx level's entry, and gemm_tiles_amx), and as
 * gemm_amx_emu.c with those instructions emulated in C (amx_tile.h;
 * gemm_tiles_amx_emu, for tests only, in no level's table). Only the tile
 * operations differ, so on a host without AMX the emulated copy tests the
 * layouts, tile shapes, tails and float step of the real one.
 *
 * Per group of 16 weight rows, per tile of 16 tokens, block by block:
 *   C (16 tokens x 16 rows of int32) = 0
 *   A = the 16 tokens' 32 quants of block b (signed bytes: 16 rows of 32
 *       bytes, read from the activation rows as they are, xs apart; a
 *       last tile of fewer than 16 tokens from a copy padded with zeros)
 *   B = block b of the 16 weight rows in pack16's Q8_0 layout (kernels.h):
 *       8 rows of 64 bytes, row k = bytes 4k .. 4k + 3 of every weight
 *       row, weight row i at 4i, as unsigned bytes u = w + bias
 *       (gemm_impl.h: Q8_0 and Q5_0 w + 128, Q4_0 the nibble w + 8)
 *   TDPBSUD C, A, B   C[m][i] = sum over j < 32 of x_m,j u_i,j, exact
 *                     (|C| <= 32 * 128 * 255)
 * then for each token m, the 16 rows in the lanes of a vector, the float
 * step of the VNNI kernel (gemm_avx512.c float_step512) and so of the
 * generic (kernels_impl.h):
 *   s = C[m] - bias * sum_j x_m,j        the block's exact integer sum
 *   acc_m = acc_m + (float)s * (dw * dx_m)  the product rounded, no FMA
 * blocks in ascending order; two blocks in flight (tiles 0, 2, 4 and 1,
 * 3, 5) so that one product runs while the other's float step does.
 *
 * Where B comes from: a whole group of a Q8_0 or Q5_0 matrix's packed
 * copy in place (its layout is B's); a whole Q4_0 group unpacked once per
 * group into thread scratch (nibbles to bytes: 16 x nb x 32 bytes, in L2
 * for rows up to ~8k elements), then read by every token tile; any other
 * rows (no packed copy, a range that starts inside a group, the last rows
 * % 16) repacked into the same scratch from the rows as stored. Rows past
 * r1 repeat row r1 - 1 and are not stored.
 *
 * The tile configuration is loaded at every call and released at its
 * end: the call owns the tile state, no other code of a thread can leave
 * it in a shape the kernel does not expect, and a released state is not
 * saved at context switches (8 KiB a thread). */
#include "kernels/gemm_impl.h"

#if defined(__x86_64__)

#include <stdbool.h>

#include "kernels/simd_x86.h"
#include "kernels/amx_tile.h"

#if EGANG_AMX_EMU
/* the float step and the repacking need AVX-512; the tiles are C */
#define AMX_TARGET X86_AVX512VNNI_FEATURES
#define AMX_SYM(name) name##_emu
#else
#define AMX_TARGET X86_AMX_FEATURES
#define AMX_SYM(name) name
#endif
#define AMX_FN __attribute__((target(AMX_TARGET)))
#define AMX_INLINE static inline __attribute__((always_inline, target(AMX_TARGET)))

#define AMX_RG 16 /* weight rows a group: B's 16 dword columns */
#define AMX_TT 16 /* tokens a tile: A's and C's rows */

/* The tiles: C0, C1 (0, 1) 16 tokens x 16 int32 sums; A0, A1 (2, 3) 16
 * tokens x one block's 32 quants; B0, B1 (4, 5) one block of 16 weight
 * rows, 8 rows of 64 bytes. Set s (0 or 1) computes C_s = A_s B_s. */
static const amx_tilecfg_t amx_cfg = {
	.palette = 1,
	.colsb = { 64, 64, 32, 32, 64, 64 },
	.rows = { AMX_TT, AMX_TT, AMX_TT, AMX_TT, 8, 8 },
};

/* pack16's Q8_0 group layout (kernels.h): blocks in pairs, 64 bytes of
 * the pair's fp16 scales then 512 bytes of quants a block. Q4_0's
 * packed pairs: 64 bytes of scales, 256 of nibbles a block. */
#define AMX_PAIR_Q8 (64 + 2 * 512)
#define AMX_PAIR_Q4 (64 + 2 * 256)

/* Block b's B operand (8 rows of 64 bytes) in a Q8_0-layout group. */
static inline const uint8_t *amx_blk_q(const uint8_t *G, int64_t b)
{
	return G + (size_t)(b >> 1) * AMX_PAIR_Q8 + 64 + (size_t)(b & 1) * 512;
}

/* Block b's 16 row scales (fp16) in a Q8_0-layout group. */
static inline const uint8_t *amx_blk_d(const uint8_t *G, int64_t b)
{
	return G + (size_t)(b >> 1) * AMX_PAIR_Q8 + 32 * (size_t)(b & 1);
}

/* Rows r .. r + 15 of W (rows past r1 - 1 repeat it; rb bytes apart),
 * nb blocks of type t, into a Q8_0-layout group at G, as unsigned bytes
 * u = w + bias (gemm_wgroup_u) with their scales. */
static void amx_group_rows(dtype_t t, const uint8_t *W, size_t rb, int64_t r, int64_t r1,
			   int64_t nb, uint8_t *G)
{
	const size_t bb = gemm_qbytes(t);
	for (int64_t b = 0; b < nb; b++) {
		uint8_t *q = (uint8_t *)amx_blk_q(G, b), *d = (uint8_t *)amx_blk_d(G, b);
		for (int i = 0; i < AMX_RG; i++) {
			int64_t ri = r + i < r1 ? r + i : r1 - 1;
			const uint8_t *blk = W + (size_t)ri * rb + (size_t)b * bb;
			memcpy(d + 2 * i, blk, 2);
			for (int g = 0; g < 8; g++) {
				uint32_t u = gemm_wgroup_u(t, blk, g);
				memcpy(q + 64 * g + 4 * i, &u, 4);
			}
		}
	}
}

/* A whole packed Q4_0 group (pack16: per block 4 vectors of the 16 rows'
 * nibble bytes, vector v = bytes 4v .. 4v + 3 of qs, whose low nibbles
 * are elements 4v .. 4v + 3 and high nibbles 16 + 4v ..) into a
 * Q8_0-layout group at G: B row v the low nibbles, row 4 + v the high. */
AMX_INLINE void amx_group_q4(const uint8_t *P4, int64_t nb, uint8_t *G)
{
	const __m512i m0f = _mm512_set1_epi8(0x0F);
	for (int64_t b = 0; b < nb; b++) {
		const uint8_t *pair = P4 + (size_t)(b >> 1) * AMX_PAIR_Q4;
		const uint8_t *q4 = pair + 64 + (size_t)(b & 1) * 256;
		uint8_t *q = (uint8_t *)amx_blk_q(G, b);
		memcpy((uint8_t *)amx_blk_d(G, b), pair + 32 * (b & 1), 32);
#pragma GCC unroll 4
		for (int v = 0; v < 4; v++) {
			__m512i z = _mm512_loadu_si512((const void *)(q4 + 64 * v));
			_mm512_storeu_si512((void *)(q + 64 * v), _mm512_and_si512(z, m0f));
			_mm512_storeu_si512((void *)(q + 64 * (4 + v)),
					    _mm512_and_si512(_mm512_srli_epi16(z, 4), m0f));
		}
	}
}

/* The last T < 16 tokens (rows at X, xs bytes apart, nb blocks; their
 * scales and quant sums at dx, sx, nb a token) as a full tile: rows of
 * xr = nb * 34 bytes at xp, scales and sums at dxp, sxp, the 16 - T
 * missing tokens zero (their outputs are not stored). */
static void amx_pad_tokens(const uint8_t *X, size_t xs, const float *dx, const int32_t *sx,
			   int64_t T, int64_t nb, uint8_t *xp, float *dxp, int32_t *sxp)
{
	const size_t xr = (size_t)nb * sizeof(block_q8_0);
	memset(xp, 0, AMX_TT * xr);
	memset(dxp, 0, sizeof(float) * (size_t)(AMX_TT * nb));
	memset(sxp, 0, sizeof(int32_t) * (size_t)(AMX_TT * nb));
	for (int64_t k = 0; k < T; k++) {
		memcpy(xp + (size_t)k * xr, X + (size_t)k * xs, xr);
		memcpy(dxp + k * nb, dx + k * nb, sizeof(float) * (size_t)nb);
		memcpy(sxp + k * nb, sx + k * nb, sizeof(int32_t) * (size_t)nb);
	}
}

/* One block's float step for the 16 tokens of a tile: c, the stored C
 * (token k's 16 row sums at c + 16 k); dh, the 16 row scales (fp16;
 * vcvtph2ps is bit-exact with fp16_to_f32_inline); dx, sx: the tokens'
 * scales and quant sums of this block, nb apart. */
AMX_INLINE void amx_float_step(__m512 *acc, const int32_t *c, const uint8_t *dh,
			       const float *dx, const int32_t *sx, int32_t bias, int64_t nb)
{
	const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)dh));
#pragma GCC unroll 16
	for (int k = 0; k < AMX_TT; k++) {
		__m512i s = _mm512_sub_epi32(_mm512_load_si512((const void *)(c + 16 * k)),
					     _mm512_set1_epi32(bias * sx[k * nb]));
		__m512 dk = _mm512_mul_ps(d, _mm512_set1_ps(dx[k * nb]));
		__m512 p = _mm512_mul_ps(_mm512_cvtepi32_ps(s), dk);
		VEC_ROUNDED(p);
		acc[k] = _mm512_add_ps(acc[k], p);
	}
}

/* 16 tokens x the 16 rows of group G (Q8_0 layout, u = w + bias) over
 * all nb blocks: token k's block b quants at xq + k xst + 34 b, its scales
 * and sums at dx[k nb + b], sx[k nb + b]; outputs Y[k ys + i] for tokens
 * k < T and the rows i in m. */
AMX_INLINE void amx_tile16(const uint8_t *G, const uint8_t *xq, size_t xst, const float *dx,
			   const int32_t *sx, int32_t bias, int64_t nb, float *Y, int64_t ys,
			   __mmask16 m, int64_t T)
{
	int32_t c0[AMX_TT * 16] __attribute__((aligned(64)));
	int32_t c1[AMX_TT * 16] __attribute__((aligned(64)));
	__m512 acc[AMX_TT];
#pragma GCC unroll 16
	for (int k = 0; k < AMX_TT; k++)
		acc[k] = _mm512_setzero_ps();
	const size_t qb = sizeof(block_q8_0);
	int64_t b = 0;
	for (; b + 2 <= nb; b += 2) {
		AMX_ZERO(0);
		AMX_ZERO(1);
		AMX_LOAD(2, xq + (size_t)b * qb, xst);
		AMX_LOAD(4, amx_blk_q(G, b), 64);
		AMX_DPBSUD(0, 2, 4);
		AMX_LOAD(3, xq + (size_t)(b + 1) * qb, xst);
		AMX_LOAD(5, amx_blk_q(G, b + 1), 64);
		AMX_DPBSUD(1, 3, 5);
		AMX_STORE(0, c0, 64);
		amx_float_step(acc, c0, amx_blk_d(G, b), dx + b, sx + b, bias, nb);
		AMX_STORE(1, c1, 64);
		amx_float_step(acc, c1, amx_blk_d(G, b + 1), dx + b + 1, sx + b + 1, bias, nb);
	}
	if (b < nb) {
		AMX_ZERO(0);
		AMX_LOAD(2, xq + (size_t)b * qb, xst);
		AMX_LOAD(4, amx_blk_q(G, b), 64);
		AMX_DPBSUD(0, 2, 4);
		AMX_STORE(0, c0, 64);
		amx_float_step(acc, c0, amx_blk_d(G, b), dx + b, sx + b, bias, nb);
	}
#pragma GCC unroll 16
	for (int k = 0; k < AMX_TT; k++)
		if (k < T)
			_mm512_mask_storeu_ps(Y + k * ys, m, acc[k]);
}

AMX_FN void AMX_SYM(gemm_tiles_amx)(GEMM_QUANT_ARGS)
{
	const size_t gsz = pack16_group_bytes(DTYPE_Q8_0, nb * QK);
	const size_t xr = (size_t)nb * sizeof(block_q8_0);
	const int64_t tail = ntok % AMX_TT, full = ntok - tail;
	const size_t padx = tail ? (AMX_TT * xr + 63) & ~(size_t)63 : 0;
	const size_t pads = tail ? sizeof(float) * (size_t)(AMX_TT * nb) : 0;
	uint8_t *s1 = gemm_scratch(1, gsz + padx + 2 * pads);
	if (!s1) { /* out of memory: the generic twin needs none */
		gemm_rows_generic(t, W, X, xs, Y, ys, nb * QK, r0, r1, ntok);
		return;
	}
	uint8_t *gbuf = s1, *xp = s1 + gsz;
	float *dxp = (float *)(xp + padx);
	int32_t *sxp = (int32_t *)(dxp + AMX_TT * nb);
	if (tail)
		amx_pad_tokens(X + (size_t)full * xs, xs, dx + full * nb, sx + full * nb, tail, nb,
			       xp, dxp, sxp);
	const int32_t bias = gemm_wbias(t);
	const size_t gb = P ? pack16_group_bytes(t, nb * QK) : 0;
	AMX_LOADCONFIG(&amx_cfg);
	for (int64_t r = r0; r < r1; r += AMX_RG) {
		bool whole = P && r % AMX_RG == 0 && r + AMX_RG <= np && r + AMX_RG <= r1;
		const uint8_t *G = gbuf;
		if (whole && q8_form(t))
			G = P + (size_t)(r / AMX_RG) * gb;
		else if (whole)
			amx_group_q4(P + (size_t)(r / AMX_RG) * gb, nb, gbuf);
		else
			amx_group_rows(t, W, rb, r, r1, nb, gbuf);
		__mmask16 m = r1 - r >= AMX_RG ? (__mmask16)0xFFFF
					       : (__mmask16)((1u << (r1 - r)) - 1);
		for (int64_t k = 0; k < full; k += AMX_TT)
			amx_tile16(G, X + (size_t)k * xs + 2, xs, dx + k * nb, sx + k * nb, bias, nb,
				   Y + k * ys + r, ys, m, AMX_TT);
		if (tail)
			amx_tile16(G, xp + 2, xr, dxp, sxp, bias, nb, Y + full * ys + r, ys, m, tail);
	}
	AMX_RELEASE();
}

#if !EGANG_AMX_EMU
/* Batches below this many tokens run the avx512vnni kernel (the same
 * bits), which reads packed groups in place for up to 16 tokens with no
 * copy; from here on the tiles. Q4_1 and Q5_1 (against Q8_1) always run
 * the avx512vnni kernel: no tile kernel reads them. Not yet measured on an AMX host
 * (doc/amx/README.md says how): a full A tile is the guess. */
#ifndef GEMM_AMX_MIN_TOKENS
#define GEMM_AMX_MIN_TOKENS AMX_TT
#endif

AMX_FN void gemm_quant_amx(GEMM_QUANT_ARGS)
{
	if (ntok < GEMM_AMX_MIN_TOKENS || q8_1_form(t))
		gemm_quant_avx512vnni(t, W, rb, P, np, X, xs, dx, sx, Y, ys, nb, r0, r1, ntok);
	else
		gemm_tiles_amx(t, W, rb, P, np, X, xs, dx, sx, Y, ys, nb, r0, r1, ntok);
}
#endif

#endif /* __x86_64__ */
