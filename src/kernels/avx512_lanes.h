/* AVX-512 helpers shared by the quantized matvec (kernels_avx512.c) and the
 * prefill gemm (gemm_avx512.c), which both put 16 weight rows in the 16
 * dword lanes of a register. Include after <immintrin.h>, x86-64 only. */
#ifndef EGANG_AVX512_LANES_H
#define EGANG_AVX512_LANES_H

/* FP_ROUNDED for any vector register (zmm16-31 included): the value is
 * rounded to float here, not fused into a later operation. */
#define VEC_ROUNDED(v) __asm__("" : "+v"(v))

/* 4x4 transpose of dwords inside each 128-bit lane: z[i] lane L holds
 * dwords 0-3 of row 4L+i; afterwards z[g] lane L holds dword g of rows
 * 4L..4L+3, i.e. z[g] = dword g (a 4-byte group) of rows 0..15 in order. */
static inline __attribute__((always_inline, target("avx512f"))) void
transpose_lanes4(__m512i *z)
{
	__m512i t0 = _mm512_unpacklo_epi32(z[0], z[1]), t1 = _mm512_unpackhi_epi32(z[0], z[1]);
	__m512i t2 = _mm512_unpacklo_epi32(z[2], z[3]), t3 = _mm512_unpackhi_epi32(z[2], z[3]);
	z[0] = _mm512_unpacklo_epi64(t0, t2);
	z[1] = _mm512_unpackhi_epi64(t0, t2);
	z[2] = _mm512_unpacklo_epi64(t1, t3);
	z[3] = _mm512_unpackhi_epi64(t1, t3);
}

#endif
