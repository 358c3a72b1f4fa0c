/* AVX-512 helpers shared by the quantized matvec (kernels_avx512.c), the
 * packed K-quants (kq_pack_avx512.c) and the prefill gemm (gemm_avx512.c),
 * which put 16 weight rows in the 16 dword lanes of a register; x86-64
 * only. */
#ifndef EGANG_AVX512_LANES_H
#define EGANG_AVX512_LANES_H

#include "kernels/simd_x86.h"

/* Two levels share these helpers: avx512 (F, BW, VL, DQ) and avx512vnni
 * (the same + VNNI). kernels_avx512.c is compiled once per level (the
 * avx512vnni copy, kernels_avx512vnni.c, defines EGANG_AVX512_VNNI to 1
 * before including it); gemm_avx512.c only for avx512vnni. Every function
 * carries AVX512_TARGET, exactly the features its level checks for
 * (kernels.c isa_supported). */
#ifndef EGANG_AVX512_VNNI
#define EGANG_AVX512_VNNI 0
#endif
#if EGANG_AVX512_VNNI
#define AVX512_TARGET X86_AVX512VNNI_FEATURES
/* AVX512_SYM(name_avx512): the level's symbol, name_avx512vnni in the
 * avx512vnni copy */
#define AVX512_SYM(name) name##vnni
#else
#define AVX512_TARGET X86_AVX512_FEATURES
#define AVX512_SYM(name) name
#endif
#define AVX512 __attribute__((target(AVX512_TARGET)))
#define AVX512_INLINE static inline __attribute__((always_inline, target(AVX512_TARGET)))

/* vpdpbusd: acc + per dword the sum of 4 products (unsigned byte of u) x
 * (signed byte of s), exact in int32 (wrapping add). Without VNNI the same
 * value from vpmaddubsw, whose int16 pair sums could saturate for u > 127
 * (2 * 255 * 128 > 32767), so u is split as (u & 0x7F) + 128 * (u >> 7):
 * pair sums of <= 2 * 127 * 128 and of <= 2 * 128, widened by vpmaddwd
 * with 1 and with 128; every step is exact, so the result equals
 * vpdpbusd's bit for bit. */
AVX512_INLINE __m512i dpbusd512(__m512i acc, __m512i u, __m512i s)
{
#if EGANG_AVX512_VNNI
	return _mm512_dpbusd_epi32(acc, u, s);
#else
	const __m512i m7f = _mm512_set1_epi8(0x7F), m01 = _mm512_set1_epi8(1);
	__m512i lo = _mm512_and_si512(u, m7f);
	__m512i hi = _mm512_and_si512(_mm512_srli_epi16(u, 7), m01);
	__m512i a = _mm512_madd_epi16(_mm512_maddubs_epi16(lo, s), _mm512_set1_epi16(1));
	__m512i b = _mm512_madd_epi16(_mm512_maddubs_epi16(hi, s), _mm512_set1_epi16(128));
	return _mm512_add_epi32(acc, _mm512_add_epi32(a, b));
#endif
}

/* dpbusd512 for u < 128 (Q4 nibbles): no split needed without VNNI. */
AVX512_INLINE __m512i dpbusd512_u7(__m512i acc, __m512i u, __m512i s)
{
#if EGANG_AVX512_VNNI
	return _mm512_dpbusd_epi32(acc, u, s);
#else
	return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s),
						       _mm512_set1_epi16(1)));
#endif
}

/* dpbusd512 on 256 bits */
AVX512_INLINE __m256i dpbusd256(__m256i acc, __m256i u, __m256i s)
{
#if EGANG_AVX512_VNNI
	return _mm256_dpbusd_epi32(acc, u, s);
#else
	const __m256i m7f = _mm256_set1_epi8(0x7F), m01 = _mm256_set1_epi8(1);
	__m256i lo = _mm256_and_si256(u, m7f);
	__m256i hi = _mm256_and_si256(_mm256_srli_epi16(u, 7), m01);
	__m256i a = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, s), _mm256_set1_epi16(1));
	__m256i b = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, s), _mm256_set1_epi16(128));
	return _mm256_add_epi32(acc, _mm256_add_epi32(a, b));
#endif
}

/* 4x4 transpose of dwords inside each 128-bit lane: z[i] lane L holds
 * dwords 0-3 of row 4L+i; afterwards z[g] lane L holds dword g of rows
 * 4L..4L+3, i.e. z[g] = dword g (a 4-byte group) of rows 0..15 in order. */
AVX512_INLINE void transpose_lanes4(__m512i *z)
{
	__m512i t0 = _mm512_unpacklo_epi32(z[0], z[1]), t1 = _mm512_unpackhi_epi32(z[0], z[1]);
	__m512i t2 = _mm512_unpacklo_epi32(z[2], z[3]), t3 = _mm512_unpackhi_epi32(z[2], z[3]);
	z[0] = _mm512_unpacklo_epi64(t0, t2);
	z[1] = _mm512_unpackhi_epi64(t0, t2);
	z[2] = _mm512_unpacklo_epi64(t1, t3);
	z[3] = _mm512_unpackhi_epi64(t1, t3);
}

/* Q5_1's fifth bits of element group g (elements 4g .. 4g + 3, g < 8) of
 * 16 rows, h lane i = row i's qh word (bit j: element j's fifth bit):
 * lane i byte j = 0x10 where element 4g + j's bit is set. vpermd reads the
 * low 4 bits of each index, here qh >> 4g, from a table of the 16 dwords. */
AVX512_INLINE __m512i qh_group16(__m512i h, int g)
{
	const __m512i tab = _mm512_setr_epi32(
		0x00000000, 0x00000010, 0x00001000, 0x00001010, 0x00100000, 0x00100010,
		0x00101000, 0x00101010, 0x10000000, 0x10000010, 0x10001000, 0x10001010,
		0x10100000, 0x10100010, 0x10101000, 0x10101010);
	return _mm512_permutexvar_epi32(_mm512_srl_epi32(h, _mm_cvtsi32_si128(4 * g)), tab);
}

#endif
