/* gemm: the amx level's quantized matrix-matrix kernels: Q8_0 / Q4_0 /
 * Q5_0 weights against Q8_0 activations (first), and Q4_K / Q5_K / Q6_K
 * against Q8_K (the K-quants section below); see gemm.c for the design
 * and what is bit-exact, doc/amx/README.md for what is tested where.
 *
 * One source, compiled twice: here with the AMX tile instructions
 * (gemm_quant_amx and matmat[_p16]_<K-quant>_amx, the amx level's entries,
 * and the tile kernels gemm_tiles_amx, gemm_tiles_kq_amx), and as
 * gemm_amx_emu.c with those instructions emulated in C (amx_tile.h;
 * gemm_tiles_amx_emu, gemm_tiles_kq_amx_emu, for tests only, in no
 * level's table). Only the tile operations differ, so on a host without
 * AMX the emulated copy tests the layouts, tile shapes, tails and float
 * steps of the real one.
 *
 * Q8_0 / Q4_0 / Q5_0: per group of 16 weight rows, per tile of 16
 * tokens, block by block:
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

#include <assert.h>
#include <stdbool.h>

/* the amx level's other kernels are avx512vnni's: the packed K-quant
 * helpers at that level */
#define EGANG_AVX512_VNNI 1
#include "kernels/avx512_lanes.h"
#include "kernels/kquants.h"
#include "kernels/kq_pack_avx512.h"
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

/* The last T < 16 activation rows (at X, xs bytes apart, xr bytes each)
 * as the 16 rows of a full A tile's source: rows of xr bytes at xp, the
 * 16 - T missing ones zero (their outputs are not stored). */
static void amx_pad_rows(const uint8_t *X, size_t xs, int64_t T, size_t xr, uint8_t *xp)
{
	memset(xp, 0, AMX_TT * xr);
	for (int64_t k = 0; k < T; k++)
		memcpy(xp + (size_t)k * xr, X + (size_t)k * xs, xr);
}

/* The last T < 16 Q8_0 tokens (rows at X, xs bytes apart, nb blocks;
 * their scales and quant sums at dx, sx, nb a token) as a full tile:
 * amx_pad_rows of the rows (xr = nb * 34 bytes), scales and sums at dxp,
 * sxp, the 16 - T missing tokens' zero. */
static void amx_pad_tokens(const uint8_t *X, size_t xs, const float *dx, const int32_t *sx,
			   int64_t T, int64_t nb, uint8_t *xp, float *dxp, int32_t *sxp)
{
	amx_pad_rows(X, xs, T, (size_t)nb * sizeof(block_q8_0), xp);
	memset(dxp, 0, sizeof(float) * (size_t)(AMX_TT * nb));
	memset(sxp, 0, sizeof(int32_t) * (size_t)(AMX_TT * nb));
	for (int64_t k = 0; k < T; k++) {
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

/* ======================================== the K-quants: Q4_K, Q5_K, Q6_K
 *
 * What the generic twin computes (kquants.c dot_k, kquants.h kq_k_step),
 * per weight row and token, super-block by super-block in ascending order:
 *   sumi = sum over the 16 sub-blocks of 16 of sc[s] * (sum q_w q_x)
 *   summ = sum over them of mn[s] * bsums_x[s]   (Q4_K, Q5_K; Q6_K: none)
 *     (Q4_K / Q5_K: sub-block s of 32 is sub-blocks 2s, 2s + 1 of 16 with
 *     the same scale and min; q_w their unsigned 4- or 5-bit quants;
 *     Q6_K: q_w = u - 32 signed, sc its int8 scales; bsums_x the Q8_K
 *     block's stored sums per 16)
 *   a = dx * d; p = a * (float)sumi;          each product rounded
 *   am = dx * dmin; pm = am * (float)summ; p = p - pm      (Q6_K: not)
 *   acc = acc + p
 * sumi and summ are exact int32 (|sumi| <= 256 * 32 * 128 * 128), so any
 * grouping of their integer terms gives them; the float steps are then
 * done in exactly that order (kq_pack_avx512.h kq16_step, kq16_q6_step:
 * 16 rows in the lanes, each lane the scalar step), so every output is the
 * generic's bits.
 *
 * Per group of 16 weight rows, per tile of 16 tokens, per super-block:
 *   for each sub-block s (S = 32 elements, Q4_K / Q5_K; S = 16, Q6_K):
 *     C = 0; A = the 16 tokens' S quants of s (signed bytes, the Q8_K
 *     rows as they are, xs apart); B = sub-block s of the 16 rows, S / 4
 *     rows of 64 bytes (row k = elements 4k .. 4k + 3 of every weight
 *     row, row i at 4i)
 *     TDPBSUD C, A, B (Q4_K, Q5_K: quants 0..31, unsigned) or
 *     TDPBSSD C, A, B (Q6_K: u - 32, signed): C[k][i] = the exact
 *     sub-block sum of token k and row i
 *     then per token k: si_k = si_k + C[k] * sc[s] (vpmulld, 16 rows in
 *     the lanes; exact)
 *   per token: summ from the mins and the stored bsums (kq16_mins_dot),
 *   and the float step.
 * Two sub-blocks are in flight (tiles 0, 2, 4 and 1, 3, 5): one pair's
 * products run while the previous pair's sums are scaled. The sub-block
 * scale cannot go into the tiles (q sc needs up to 12 bits), so the int32
 * scale products are vector work: about 3 instructions per token and
 * sub-block, against the avx512vnni kernel's 8 vpdpbusd and 8 broadcasts.
 *
 * B comes from the group's bytes U: the nsb super-blocks' quants as
 * bytes, AMX_KQ_SB (4096) a super-block, element e of row i at
 * 64 (e / 4) + 4 i + e % 4, so sub-block s's B starts at 16 S s. A whole
 * group of the packed copy (kquants.h KQ_P16_*) is unpacked into U once
 * (kq16_sub_weights, kq16_q6_sub_weights: the decoding of the avx512vnni
 * packed kernels) and read by every token tile; its scales, mins and d
 * are read in place. Any other rows (no packed copy, a range that starts
 * inside a group, the last rows % 16) are first packed into scratch by
 * the reference packer (kq_pack16_*), rows past r1 repeating row r1 - 1.
 * The last tile of fewer than 16 tokens reads a zero-padded copy of their
 * rows. */

/* Q6_K's tiles: C0, C1 (0, 1) 16 tokens x 16 int32 sums; A0, A1 (2, 3)
 * 16 tokens x one sub-block's 16 quants; B0, B1 (4, 5) 4 rows of 64
 * bytes. (Q4_K and Q5_K, sub-blocks of 32, use amx_cfg as it is.) */
static const amx_tilecfg_t amx_cfg_kq16 = {
	.palette = 1,
	.colsb = { 64, 64, 16, 16, 64, 64 },
	.rows = { AMX_TT, AMX_TT, AMX_TT, AMX_TT, 4, 4 },
};

#define AMX_KQ_SB (AMX_RG * QK_K) /* bytes of U a super-block */

/* Bytes of one super-block of a packed group of type t. */
static inline size_t amx_kq_hsb(dtype_t t) { return pack16_group_bytes(t, QK_K); }

/* The nsb super-blocks of the packed group H (type t) into U as bytes:
 * Q4_K, Q5_K the quants (0..31), Q6_K u - 32 (-32..31). */
AMX_INLINE void amx_kq_unpack(dtype_t t, const uint8_t *H, int64_t nsb, uint8_t *U)
{
	const size_t hsb = amx_kq_hsb(t);
	const __m512i m32 = _mm512_set1_epi8(32);
	for (int64_t b = 0; b < nsb; b++) {
		const uint8_t *h = H + (size_t)b * hsb;
		uint8_t *u = U + (size_t)b * AMX_KQ_SB;
		if (t == DTYPE_Q6_K) {
			for (int s = 0; s < 16; s++) {
				__m512i w[4];
				kq16_q6_sub_weights(h, s, w);
#pragma GCC unroll 4
				for (int g = 0; g < 4; g++)
					_mm512_storeu_si512((void *)(u + 256 * s + 64 * g),
							    _mm512_sub_epi8(w[g], m32));
			}
		} else {
			for (int s = 0; s < 8; s++) {
				__m512i w[8];
				kq16_sub_weights(h, s, w, t == DTYPE_Q5_K);
#pragma GCC unroll 8
				for (int g = 0; g < 8; g++)
					_mm512_storeu_si512((void *)(u + 512 * s + 64 * g), w[g]);
			}
		}
	}
}

/* Rows r .. r + 15 of W (rb bytes apart, n elements; rows past r1 - 1
 * repeat it, through a copy of the 16 rows at R) as one packed group at H
 * (kq_pack16_*, the reference packer). */
static void amx_kq_group_rows(dtype_t t, const uint8_t *W, size_t rb, int64_t r, int64_t r1,
			      int64_t n, uint8_t *R, uint8_t *H)
{
	const uint8_t *src = W + (size_t)r * rb;
	if (r + AMX_RG > r1) {
		for (int64_t i = 0; i < AMX_RG; i++)
			memcpy(R + (size_t)i * rb, W + (size_t)(r + i < r1 ? r + i : r1 - 1) * rb, rb);
		src = R;
	}
	if (t == DTYPE_Q4_K)
		kq_pack16_q4_K(src, rb, AMX_RG, n, H);
	else if (t == DTYPE_Q5_K)
		kq_pack16_q5_K(src, rb, AMX_RG, n, H);
	else
		kq_pack16_q6_K(src, rb, AMX_RG, n, H);
}

/* si[k] += C[k] * sc lane by lane for the 16 tokens of a stored C (token
 * k's 16 row sums at c + 16 k). */
AMX_INLINE void amx_kq_scale_add(__m512i *si, const int32_t *c, __m512i sc)
{
#pragma GCC unroll 16
	for (int k = 0; k < AMX_TT; k++)
		si[k] = _mm512_add_epi32(si[k], _mm512_mullo_epi32(
			_mm512_load_si512((const void *)(c + 16 * k)), sc));
}

/* One super-block of 16 tokens x the 16 rows: si[k] = token k's sumi of
 * the 16 rows (xq: token 0's quants of the super-block, xst apart; u: its
 * bytes in U; h: its packed super-block, for the scales); six: Q6_K. */
AMX_INLINE void amx_kq_sums(__m512i *si, const uint8_t *xq, size_t xst, const uint8_t *u,
			    const uint8_t *h, const int six)
{
	int32_t c0[AMX_TT * 16] __attribute__((aligned(64)));
	int32_t c1[AMX_TT * 16] __attribute__((aligned(64)));
	const int ns = six ? 16 : 8, S = QK_K / ns;
#pragma GCC unroll 16
	for (int k = 0; k < AMX_TT; k++)
		si[k] = _mm512_setzero_si512();
	for (int s = 0; s < ns; s += 2) {
		AMX_ZERO(0);
		AMX_ZERO(1);
		AMX_LOAD(2, xq + S * s, xst);
		AMX_LOAD(4, u + 16 * S * s, 64);
		if (six)
			AMX_DPBSSD(0, 2, 4);
		else
			AMX_DPBSUD(0, 2, 4);
		AMX_LOAD(3, xq + S * (s + 1), xst);
		AMX_LOAD(5, u + 16 * S * (s + 1), 64);
		if (six)
			AMX_DPBSSD(1, 3, 5);
		else
			AMX_DPBSUD(1, 3, 5);
		AMX_STORE(0, c0, 64);
		amx_kq_scale_add(si, c0, six ? kq16_q6_scales(h, s) : kq16_sub_scales(h, s));
		AMX_STORE(1, c1, 64);
		amx_kq_scale_add(si, c1, six ? kq16_q6_scales(h, s + 1) : kq16_sub_scales(h, s + 1));
	}
}

/* 16 tokens (rows of Q8_K super-blocks at X, xst bytes apart) x the 16
 * rows of a group (packed super-blocks at H, their bytes at U) over nsb
 * super-blocks: Y[k ys + i] for tokens k < T and the rows i in m. */
AMX_INLINE void amx_kq_tile16(dtype_t t, const uint8_t *H, const uint8_t *U, const uint8_t *X,
			      size_t xst, int64_t nsb, float *Y, int64_t ys, __mmask16 m,
			      int64_t T)
{
	const int six = t == DTYPE_Q6_K;
	const size_t hsb = amx_kq_hsb(t);
	__m512 acc[AMX_TT];
#pragma GCC unroll 16
	for (int k = 0; k < AMX_TT; k++)
		acc[k] = _mm512_setzero_ps();
	for (int64_t b = 0; b < nsb; b++) {
		const uint8_t *h = H + (size_t)b * hsb, *xb = X + (size_t)b * sizeof(block_q8_K);
		__m512i si[AMX_TT];
		amx_kq_sums(si, xb + 4, xst, U + (size_t)b * AMX_KQ_SB, h, six);
		if (six) {
#pragma GCC unroll 16
			for (int k = 0; k < AMX_TT; k++)
				acc[k] = kq16_q6_step(acc[k], ld_f32(xb + (size_t)k * xst), h, si[k]);
		} else {
			kq16_rows_t kr;
			kq16_rows(h, &kr);
#pragma GCC unroll 16
			for (int k = 0; k < AMX_TT; k++) {
				const uint8_t *xk = xb + (size_t)k * xst;
				acc[k] = kq16_step(acc[k], ld_f32(xk), &kr, si[k], kq16_mins_dot(&kr, xk));
			}
		}
	}
#pragma GCC unroll 16
	for (int k = 0; k < AMX_TT; k++)
		if (k < T)
			_mm512_mask_storeu_ps(Y + k * ys, m, acc[k]);
}

/* Where the tile kernel has no scratch: the avx512vnni level's kernels
 * (the same bits), the packed one over whole groups when there are no
 * rows to read. */
static void amx_kq_fallback(GEMM_KQ_ARGS)
{
	if (!W) {
		matmat_p16_fn mp = t == DTYPE_Q4_K ? matmat_p16_q4_K_avx512vnni :
				   t == DTYPE_Q5_K ? matmat_p16_q5_K_avx512vnni :
						     matmat_p16_q6_K_avx512vnni;
		mp(P + (size_t)(r0 / AMX_RG) * pack16_group_bytes(t, n), X, xs, Y + r0, ys, n,
		   (r1 - r0) / AMX_RG, ntok);
		return;
	}
	matmat_fn mm = t == DTYPE_Q4_K ? matmat_q4_K_avx512 :
		       t == DTYPE_Q5_K ? matmat_q5_K_avx512 : matmat_q6_K_avx512;
	mm(W, rb, X, xs, Y, ys, n, r0, r1, ntok);
}

AMX_FN void AMX_SYM(gemm_tiles_kq_amx)(GEMM_KQ_ARGS)
{
	assert(t == DTYPE_Q4_K || t == DTYPE_Q5_K || t == DTYPE_Q6_K);
	/* without rows, the range is whole groups of the packed copy */
	assert(W || (r0 % AMX_RG == 0 && r1 % AMX_RG == 0 && r1 <= np));
	if (r1 <= r0 || ntok <= 0)
		return;
	const int64_t nsb = n / QK_K;
	const size_t xr = (size_t)nsb * sizeof(block_q8_K), hb = pack16_group_bytes(t, n);
	const int64_t tail = ntok % AMX_TT, full = ntok - tail;
	/* scratch: U, then one packed group, 16 rows, the padded tokens */
	const size_t ub = (size_t)nsb * AMX_KQ_SB, hbr = (hb + 63) & ~(size_t)63;
	const size_t rows = W ? (AMX_RG * rb + 63) & ~(size_t)63 : 0;
	uint8_t *U = gemm_scratch(1, ub + hbr + rows + (tail ? AMX_TT * xr : 0));
	if (!U) {
		amx_kq_fallback(t, W, rb, P, np, X, xs, Y, ys, n, r0, r1, ntok);
		return;
	}
	uint8_t *hbuf = U + ub, *R = hbuf + hbr, *xp = R + rows;
	if (tail)
		amx_pad_rows(X + (size_t)full * xs, xs, tail, xr, xp);
	AMX_LOADCONFIG(t == DTYPE_Q6_K ? &amx_cfg_kq16 : &amx_cfg);
	for (int64_t r = r0; r < r1; r += AMX_RG) {
		bool whole = P && r % AMX_RG == 0 && r + AMX_RG <= np && r + AMX_RG <= r1;
		const uint8_t *H = hbuf;
		if (whole)
			H = P + (size_t)(r / AMX_RG) * hb;
		else
			amx_kq_group_rows(t, W, rb, r, r1, n, R, hbuf);
		amx_kq_unpack(t, H, nsb, U);
		__mmask16 m = r1 - r >= AMX_RG ? (__mmask16)0xFFFF
					       : (__mmask16)((1u << (r1 - r)) - 1);
		for (int64_t k = 0; k < full; k += AMX_TT)
			amx_kq_tile16(t, H, U, X + (size_t)k * xs, xs, nsb, Y + k * ys + r, ys, m,
				      AMX_TT);
		if (tail)
			amx_kq_tile16(t, H, U, xp, xr, nsb, Y + full * ys + r, ys, m, tail);
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

/* The amx level's K-quant gemms, matmat_<type>_amx (rows as stored) and
 * matmat_p16_<type>_amx (whole packed groups): below GEMM_AMX_MIN_TOKENS
 * the avx512vnni level's kernels (the same bits), from there the tiles. */
#define AMX_KQ_ENTRIES(type, dt)                                                             \
	AMX_FN void matmat_##type##_amx(const void *W, size_t rb, const void *X, size_t xs,     \
					float *Y, int64_t ys, int64_t n, int64_t r0, int64_t r1,  \
					int64_t ntok)                                             \
	{                                                                                    \
		if (ntok < GEMM_AMX_MIN_TOKENS)                                              \
			matmat_##type##_avx512(W, rb, X, xs, Y, ys, n, r0, r1, ntok);         \
		else                                                                         \
			gemm_tiles_kq_amx(dt, W, rb, NULL, 0, X, xs, Y, ys, n, r0, r1, ntok); \
	}                                                                                    \
	AMX_FN void matmat_p16_##type##_amx(const void *P, const void *X, size_t xs, float *Y,  \
					    int64_t ys, int64_t n, int64_t ng, int64_t ntok)      \
	{                                                                                    \
		if (ntok < GEMM_AMX_MIN_TOKENS)                                              \
			matmat_p16_##type##_avx512vnni(P, X, xs, Y, ys, n, ng, ntok);         \
		else                                                                         \
			gemm_tiles_kq_amx(dt, NULL, 0, P, AMX_RG * ng, X, xs, Y, ys, n, 0,    \
					  AMX_RG * ng, ntok);                                 \
	}
AMX_KQ_ENTRIES(q4_K, DTYPE_Q4_K)
AMX_KQ_ENTRIES(q5_K, DTYPE_Q5_K)
AMX_KQ_ENTRIES(q6_K, DTYPE_Q6_K)
#endif

#endif /* __x86_64__ */
