/* kquants: the GGUF block types beyond Q8_0 / Q4_0 (the "legacy" Q4_1,
 * Q5_0, Q5_1 and the K-quants), their generic dequantize, dot product and
 * quantizer. Layouts are ggml's (little endian, packed, no padding).
 *
 * Legacy blocks of 32 elements (j < 16; a dot product takes Q8_0
 * activations, kernels.h):
 *  Q4_1  { f16 d; f16 m; u8 qs[16] } = 20 bytes:
 *        x[j] = d (qs[j] & 15) + m,  x[j+16] = d (qs[j] >> 4) + m.
 *  Q5_0  { f16 d; u8 qh[4]; u8 qs[16] } = 22 bytes, h = qh as uint32 LE:
 *        x[j] = d (((qs[j] & 15) | ((h >> j) & 1) << 4) - 16),
 *        x[j+16] = d (((qs[j] >> 4) | ((h >> (j + 16)) & 1) << 4) - 16).
 *  Q5_1  { f16 d; f16 m; u8 qh[4]; u8 qs[16] } = 24 bytes: as Q5_0 without
 *        the - 16, plus m.
 *
 * K-quants: super-blocks of 256 elements (QK_K); a dot product takes Q8_K
 * activations:
 *  Q8_K  { f32 d; i8 qs[256]; i16 bsums[16] } = 292 bytes: x[i] = d qs[i];
 *        bsums[k] = sum of qs[16k .. 16k + 15].
 *  Q2_K  { u8 scales[16]; u8 qs[64]; f16 d; f16 dmin } = 84 bytes: 16
 *        sub-blocks of 16; sub-block s has scale d (scales[s] & 15) and min
 *        dmin (scales[s] >> 4); element e = 128 h + 32 j + l (h < 2, j < 4,
 *        l < 32) is q = (qs[32 h + l] >> 2 j) & 3, x = scale q - min.
 *  Q3_K  { u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d } = 110 bytes:
 *        16 sub-blocks of 16 with 6-bit scales s (stored + 32): low nibble
 *        of s[i] in byte i % 8 (low half for i < 8, high for i >= 8), its
 *        top 2 bits in byte 8 + i % 4 at bit 2 (i / 4); element e as in
 *        Q2_K has low bits (qs[32 h + l] >> 2 j) & 3 and high bit
 *        (hmask[l] >> (4 h + j)) & 1: x = d (s - 32) (low + 4 high - 4).
 *  Q4_K  { f16 d; f16 dmin; u8 scales[12]; u8 qs[128] } = 144 bytes: 8
 *        sub-blocks of 32 with 6-bit scale sc and min m: for s < 4,
 *        sc = scales[s] & 63, m = scales[s + 4] & 63; for s >= 4,
 *        sc = (scales[s + 4] & 15) | (scales[s - 4] >> 6) << 4,
 *        m = (scales[s + 4] >> 4) | (scales[s] >> 6) << 4. Element
 *        64 c + l (c < 4, l < 32) is qs[32 c + l] & 15 (sub-block 2c),
 *        64 c + 32 + l is qs[32 c + l] >> 4 (sub-block 2c+1);
 *        x = d sc q - dmin m.
 *  Q5_K  { f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128] } = 176
 *        bytes: Q4_K plus a fifth bit, (qh[l] >> s) & 1 for element l of
 *        sub-block s (q + 16).
 *  Q6_K  { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d } = 210 bytes: 16
 *        sub-blocks of 16 with int8 scales; in half h (128 elements, ql +
 *        64 h, qh + 32 h), element 32 k + l (k < 4, l < 32) has low nibble
 *        ql[l + 32 (k & 1)] (k < 2: low half, else high half) and high bits
 *        (qh[l] >> 2 k) & 3: x = d scales[e / 16] (q - 32).
 *
 * The non-linear 4-bit types (iq4.c), g = kq_iq4_grid (ggml's
 * kvalues_iq4nl: -127 .. 113):
 *  IQ4_NL { f16 d; u8 qs[16] } = 18 bytes, blocks of 32 (Q8_0
 *        activations): x[j] = d g[qs[j] & 15], x[j+16] = d g[qs[j] >> 4].
 *  IQ4_XS { f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128] } = 136 bytes,
 *        super-blocks of 256 (Q8_K activations): 8 sub-blocks of 32 as
 *        IQ4_NL (indices qs + 16 ib) with the scale d (ls - 32), ls the
 *        6 bits (scales_l[ib / 2] >> 4 (ib % 2)) & 15 | ((scales_h >> 2 ib)
 *        & 3) << 4.
 *
 * Dot products (kernels_impl.h has the contract every level keeps): per
 * block or super-block exact integer sums, then a fixed float step per
 * block, in ascending block order, each product rounded (no FMA). */
#ifndef EGANG_KQUANTS_H
#define EGANG_KQUANTS_H

#include <stdint.h>

#include "kernels/kernels_impl.h"

typedef struct { uint16_t d, m; uint8_t qs[16]; } block_q4_1;            /* 20 */
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; } block_q5_0; /* 22 */
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; } block_q5_1; /* 24 */
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } block_q8_K; /* 292 */
/* Q8_1 (activations of Q4_1 / Q5_1, ggml's vec_dot_type for them): the
 * Q8_0 quants of the block, d = f16(amax / 127) and s = f16((amax / 127) *
 * sum qs) (the unrounded d times the quants' sum, then rounded to f16) */
typedef struct { uint16_t d, s; int8_t qs[QK]; } block_q8_1;              /* 36 */
/* packed (alignment 1) where the kernels read a block through a struct
 * pointer: a block inside a row may sit at any byte offset (a test's
 * misaligned rows; UBSan counts a member access there as undefined) */
typedef struct { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; }
	__attribute__((packed)) block_q2_K;                                /* 84 */
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; }
	__attribute__((packed)) block_q3_K;                                /* 110 */
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; } block_q4_K; /* 144 */
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; }
	block_q5_K;                                                        /* 176 */
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; }
	__attribute__((packed)) block_q6_K;                                /* 210 */
typedef struct { uint16_t d; uint8_t qs[16]; } __attribute__((packed)) block_iq4_nl; /* 18 */
typedef struct { uint16_t d; uint16_t scales_h; uint8_t scales_l[4]; uint8_t qs[128]; }
	__attribute__((packed)) block_iq4_xs;                              /* 136 */

/* IQ4_NL / IQ4_XS (iq4.c): ggml's 16-value grid kvalues_iq4nl, and the
 * generic dequantize, dot product (IQ4_NL against Q8_0, IQ4_XS against
 * Q8_K) and quantizer. */
extern const int8_t kq_iq4_grid[16];
void kq_iq4_dequantize(int t, const void *x, float *y, int64_t n);
float kq_iq4_dot_generic(int t, const void *w, const void *xa, int64_t n);
void kq_iq4_quantize(int t, const float *x, void *y, int64_t n);

/* Per type t in { Q4_1, Q5_0, Q5_1, Q8_K, Q2_K .. Q6_K }: x (n,) float ->
 * y (n,) of type t (n a multiple of the block), and back. Q8_K is the
 * activation quantizer (llama.cpp's reference: the element of largest
 * magnitude maps to -127, q = nearest(x * -127 / max), d = max / -127). */
void kq_quantize(int t, const float *x, void *y, int64_t n);
void kq_dequantize(int t, const void *x, float *y, int64_t n);
/* The generic dot product of a weight row w (n,) of type t with prepared
 * activations (Q8_0 for the legacy types, Q8_K for the K-quants). */
float kq_dot_generic(int t, const void *w, const void *xa, int64_t n);

/* The float step of a K-quant super-block (kernels_impl.h's contract),
 * shared by the generic dot product and the SIMD ones so they cannot
 * differ: acc + ((dx d) sumi - (dx dmin) summ), each product rounded. */
static inline float kq_k_step(float acc, float dx, float d, float dmin, int32_t sumi,
			      int32_t summ, int has_min)
{
	float a = dx * d;
	FP_ROUNDED(a);
	float p = a * (float)sumi;
	FP_ROUNDED(p);
	if (has_min) {
		float am = dx * dmin;
		FP_ROUNDED(am);
		float pm = am * (float)summ;
		FP_ROUNDED(pm);
		p = p - pm;
	}
	return acc + p;
}

#if defined(__x86_64__)
/* The K-quants one row x a run of tokens, the shape the x86 levels share
 * (kquants_avx2.c, kquants_avx512.c; macros over simd_x86.h's helpers).
 * Per super-block of a row the weight side is decoded once (WEIGHTS into a
 * W_T) and used for every token of the run (TOKEN: one token's exact sums
 * sumi, summ as int32 lanes): the prefill gemm (a row against up to
 * KQ_TOK tokens) and the decode dot product (one token) run the same
 * code, so a gemm output is the bits of the matvec (and of the generic:
 * the sums are exact, the float step is kq_k_step, super-blocks in
 * ascending order). */
#define KQ_TOK 64 /* tokens per run: their float accumulators on the stack */

/* name: row w (nb super-blocks of bb bytes) against tokens X + k xs,
 * k < nt (<= KQ_TOK): out[k * os] = the dot product. Tokens 4 at a time
 * share one transposed reduction of their sums. INLINE: the level's
 * always-inline attribute. */
#define KQ_ROW_TOKENS(name, INLINE, W_T, WEIGHTS, TOKEN, bb, has_min)                  \
	INLINE void name(const uint8_t *w, const uint8_t *X, size_t xs, int64_t nb,     \
			 int nt, float *out, int64_t os)                                \
	{                                                                             \
		float acc[KQ_TOK];                                                    \
		for (int k = 0; k < nt; k++)                                          \
			acc[k] = 0.0f;                                                \
		for (int64_t b = 0; b < nb; b++) {                                    \
			W_T wt;                                                       \
			WEIGHTS(w + (size_t)b * (bb), &wt);                           \
			const uint8_t *xb = X + (size_t)b * sizeof(block_q8_K);       \
			int k = 0;                                                    \
			for (; k + 4 <= nt; k += 4) {                                 \
				__m256i si[4], sm[4];                                 \
				_Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)   \
					TOKEN(&wt, xb + (size_t)(k + j) * xs, &si[j], &sm[j]); \
				int32_t vi[4], vm[4];                                 \
				_mm_storeu_si128((__m128i *)vi, hsum4x256_epi32(si[0], si[1], si[2], si[3])); \
				_mm_storeu_si128((__m128i *)vm, hsum4x256_epi32(sm[0], sm[1], sm[2], sm[3])); \
				_Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)   \
					acc[k + j] = kq_k_step(acc[k + j], ld_f32(xb + (size_t)(k + j) * xs), \
							       wt.d, wt.dmin, vi[j], vm[j], has_min); \
			}                                                             \
			for (; k < nt; k++) {                                         \
				__m256i si, sm;                                       \
				TOKEN(&wt, xb + (size_t)k * xs, &si, &sm);            \
				acc[k] = kq_k_step(acc[k], ld_f32(xb + (size_t)k * xs), wt.d, \
						   wt.dmin, hsum256_epi32(si),        \
						   has_min ? hsum256_epi32(sm) : 0, has_min); \
			}                                                             \
		}                                                                     \
		for (int k = 0; k < nt; k++)                                          \
			out[k * os] = acc[k];                                         \
	}

/* dot_<type>_<isa> and matvec_<type>_<isa> over rowfn, a KQ_ROW_TOKENS
 * function of blocks of blk elements, taking one token. ATTR: the level's
 * target attribute. */
#define KQ_ENTRY_DOT(type, isa, ATTR, rowfn, blk)                                         \
	float ATTR dot_##type##_##isa(const void *w, const void *xa, int64_t n)            \
	{                                                                                 \
		float out;                                                                \
		rowfn(w, xa, 0, n / (blk), 1, &out, 1);                                   \
		return out;                                                               \
	}                                                                                 \
	void ATTR matvec_##type##_##isa(const void *W, size_t rb, const void *xa, float *y, \
					int64_t n, int64_t r0, int64_t r1)                \
	{                                                                                 \
		for (int64_t r = r0; r < r1; r++)                                         \
			rowfn((const uint8_t *)W + (size_t)r * rb, xa, 0, n / (blk), 1, y + r, 1); \
	}
/* KQ_ENTRY_DOT and matmat_<type>_<isa>: rows r0..r1-1 x ntok tokens, runs
 * of KQ_TOK tokens per row. */
#define KQ_ENTRY(type, isa, ATTR, rowfn, blk)                                             \
	KQ_ENTRY_DOT(type, isa, ATTR, rowfn, blk)                                         \
	void ATTR matmat_##type##_##isa(const void *W, size_t rb, const void *X, size_t xs, \
					float *Y, int64_t ys, int64_t n, int64_t r0,      \
					int64_t r1, int64_t ntok)                         \
	{                                                                                 \
		for (int64_t k0 = 0; k0 < ntok; k0 += KQ_TOK) {                           \
			int nt = ntok - k0 < KQ_TOK ? (int)(ntok - k0) : KQ_TOK;          \
			for (int64_t r = r0; r < r1; r++)                                 \
				rowfn((const uint8_t *)W + (size_t)r * rb,                \
				      (const uint8_t *)X + (size_t)k0 * xs, xs, n / (blk), nt, \
				      Y + k0 * ys + r, ys);                               \
		}                                                                         \
	}
#endif

/* Q4_K packed in groups of 16 rows (pack16, kernels.h): for decode and
 * prefill the 16 rows of a group sit in the 16 dword lanes of a register,
 * so the float step of kq_k_step runs once per super-block for 16 rows
 * (each lane the scalar step's bits) instead of once per row after a
 * horizontal sum, and a 4-element group of the activations is one
 * broadcast against 16 rows (vpdpbusd). Per group and super-block b, in
 * ascending b, KQ_P16_Q4K_BYTES (2368 = 16 x 148 against 16 x 144 as
 * stored) at offsets:
 *   KQ_P16_D     the 16 rows' f16 d;
 *   KQ_P16_DMIN  their f16 dmin;
 *   KQ_P16_SC    sc[s][i]: sub-block s's 6-bit scale of row i (u8);
 *   KQ_P16_MN    mn[s / 2][i][s % 2]: the mins, row i's pair of sub-blocks
 *                2p, 2p + 1 adjacent (one vpmaddwd against the
 *                activations' paired sub-block sums);
 *   KQ_P16_QS    32 vectors of 64 bytes: vector v = 4 s + u (sub-block s,
 *                u < 4), byte 4 i + j = q(i, 32 s + 8 u + j) |
 *                q(i, 32 s + 8 u + 4 + j) << 4 (the low nibbles: group 2u
 *                of the sub-block, the high: group 2u + 1). */
#define KQ_P16_D 0
#define KQ_P16_DMIN 32
#define KQ_P16_SC 64
#define KQ_P16_MN 192
#define KQ_P16_QS 320
#define KQ_P16_Q4K_BYTES (KQ_P16_QS + 16 * QK_K / 2)
/* Q5_K: the Q4_K layout (its low 4 bits) followed by KQ_P16_Q5K_QH, per
 * sub-block s one vector: byte 4 i + j holds at bit g the fifth bit of
 * element 32 s + 4 g + j of row i (2880 = 16 x 180 bytes a super-block). */
#define KQ_P16_Q5K_QH KQ_P16_Q4K_BYTES
#define KQ_P16_Q5K_BYTES (KQ_P16_Q5K_QH + 8 * 64)
/* Q6_K packed in groups of 16 rows, the same idea: per group and
 * super-block KQ_P16_Q6K_BYTES (3360 = 16 x 210, as stored) at offsets:
 *   KQ_P16_Q6K_D   the 16 rows' f16 d;
 *   KQ_P16_Q6K_SC  sc[s][i]: sub-block s's int8 scale of row i;
 *   KQ_P16_Q6K_QL  per sub-block s (16 elements: groups of 4, g < 4) two
 *                  vectors of 64 bytes: vector 2 s + u, byte 4 i + j =
 *                  the low nibbles of u(i, 16 s + 8 u + j) |
 *                  u(i, 16 s + 8 u + 4 + j) << 4, u = q + 32 in 0..63;
 *   KQ_P16_Q6K_QH  per sub-block s one vector: byte 4 i + j holds the high
 *                  2 bits of u(i, 16 s + 4 g + j) at bit 2 g. */
#define KQ_P16_Q6K_D 0
#define KQ_P16_Q6K_SC 32
#define KQ_P16_Q6K_QL 288
#define KQ_P16_Q6K_QH (KQ_P16_Q6K_QL + 16 * 128)
#define KQ_P16_Q6K_BYTES (KQ_P16_Q6K_QH + 16 * 64)
/* Packs the whole groups of 16 of W (rows rb bytes apart, n elements). */
void kq_pack16_q4_K(const void *W, size_t rb, int64_t rows, int64_t n, void *P);
void kq_pack16_q5_K(const void *W, size_t rb, int64_t rows, int64_t n, void *P);
void kq_pack16_q6_K(const void *W, size_t rb, int64_t rows, int64_t n, void *P);

#if defined(__x86_64__)
/* The packed gemm's passes, shared by the x86 levels: the body of a
 * matmat_p16_fn (parameters P, X_, xs, Y, ys, n, ng, ntok) that runs
 * groups x tokens in passes of kt, 4, then 1 token(s) through fn, the
 * level's always-inline group kernel (gb: a super-block's bytes in a
 * group). The function carries the level's target attribute, so fn
 * inlines into it. */
#define KQ_P16_MATMAT_PASSES(fn, gb, kt)                                               \
	{                                                                              \
		const int64_t nsb = n / QK_K;                                          \
		const uint8_t *X = X_;                                                 \
		for (int64_t g = 0; g < ng; g++) {                                     \
			const uint8_t *G = (const uint8_t *)P + (size_t)(g * nsb) * (gb); \
			int64_t k0 = 0;                                                \
			for (; k0 + (kt) <= ntok; k0 += (kt))                          \
				fn(G, X + (size_t)k0 * xs, xs, Y + k0 * ys + 16 * g, ys, nsb, kt); \
			for (; k0 + 4 <= ntok; k0 += 4)                                \
				fn(G, X + (size_t)k0 * xs, xs, Y + k0 * ys + 16 * g, ys, nsb, 4); \
			for (; k0 < ntok; k0++)                                        \
				fn(G, X + (size_t)k0 * xs, xs, Y + k0 * ys + 16 * g, ys, nsb, 1); \
		}                                                                      \
	}

#endif

/* Decoded 6-bit scales: Q4_K / Q5_K sub-block s's scale and min. */
static inline void kq_scale_min_k4(const uint8_t *q, int s, uint8_t *sc, uint8_t *m)
{
	if (s < 4) {
		*sc = q[s] & 63;
		*m = q[s + 4] & 63;
	} else {
		*sc = (uint8_t)((q[s + 4] & 15) | ((q[s - 4] >> 6) << 4));
		*m = (uint8_t)((q[s + 4] >> 4) | ((q[s] >> 6) << 4));
	}
}

/* Q3_K's 16 scales (s - 32, in -32 .. 31) from its 12 packed bytes. */
static inline void kq_scales_q3(const uint8_t *p, int8_t *sc)
{
	for (int i = 0; i < 16; i++) {
		int lo = i < 8 ? p[i] & 15 : p[i - 8] >> 4;
		int hi = (p[8 + i % 4] >> (2 * (i / 4))) & 3;
		sc[i] = (int8_t)((lo | hi << 4) - 32);
	}
}

#endif
