/* gemm: private interface between gemm.c (entry point, generic twin,
 * dispatch, scratch) and the per-ISA matrix-matrix kernels (gemm_avx2.c,
 * gemm_avx512.c). See the "matrix-matrix" block of kernels.h for the
 * contract and gemm.c for the design. */
#ifndef EGANG_GEMM_IMPL_H
#define EGANG_GEMM_IMPL_H

#include "kernels/kernels_impl.h"

/* The quantized gemm kernels (gemm_quant_kernel_t, GEMM_QUANT_ARGS) and
 * their aux are entries of the level tables (kernels_impl.h). */

/* The calling thread's scratch buffer number k (0: aux and attention, 1:
 * repacked weights) of at least bytes,
 * 64-byte aligned; kept for the thread's life and freed at its exit. NULL
 * if memory is exhausted. */
void *gemm_scratch(int k, size_t bytes);

/* Weight bytes of one Q8_0 / Q4_0 / Q5_0 block. */
static inline size_t gemm_qbytes(dtype_t t)
{
	return dtype_info[t].block_bytes;
}

/* The 4 weights of group g (elements 4g..4g+3, g < 8) of block blk as
 * unsigned bytes u = w + bias packed in a little-endian word: Q8_0 and
 * Q5_0 (the Q8_0 block it equals, kernels_impl.h q8_form) w + 128; Q4_0
 * the nibble n = w + 8 (elements 0-15 are the low nibbles of qs[0..15],
 * 16-31 the high ones). */
static inline uint32_t gemm_wgroup_u(dtype_t t, const uint8_t *blk, int g)
{
	if (q8_form(t))
		return q8_group_u(t, blk, g);
	uint32_t v;
	memcpy(&v, blk + 2 + 4 * (g & 3), 4);
	return g < 4 ? v & 0x0F0F0F0Fu : (v >> 4) & 0x0F0F0F0Fu;
}

/* The same weights as signed bytes w: u with its bias removed per byte
 * (Q8_0 / Q5_0: u ^ 0x80; Q4_0: n in 0..15, (n + 0x78) ^ 0x80 = n - 8). */
static inline uint32_t gemm_wgroup_s(dtype_t t, const uint8_t *blk, int g)
{
	uint32_t u = gemm_wgroup_u(t, blk, g);
	return q8_form(t) ? u ^ 0x80808080u : (u + 0x78787878u) ^ 0x80808080u;
}

/* The bias of gemm_wgroup_u: 128 for Q8_0 / Q5_0, 8 for Q4_0. */
static inline int32_t gemm_wbias(dtype_t t) { return q8_form(t) ? 128 : 8; }

#endif
