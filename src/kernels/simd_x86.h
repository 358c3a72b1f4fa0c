/* simd_x86: the x86 helpers that the SIMD files of this layer share (the
 * kernels_*, kquants_*, kq_pack_* and gemm_* files of the avx2 and avx512
 * levels, gemm.c): the target attributes of each level, horizontal sums and
 * maxima in one fixed order, and half-precision loads by F16C. The ARM64
 * levels keep theirs in kernels_neon.c. Include after kernels_impl.h,
 * x86-64 only.
 *
 * Every helper carries the avx2 level's target (AVX2, FMA, F16C) unless
 * its name says 512; a function of an AVX-512 level inlines it, its
 * features being a superset. The horizontal float sums fix an order of
 * adds, so a kernel that calls them gives the same bits wherever it runs
 * (kernels_impl.h: within a level a row's bits never depend on grouping). */
#ifndef EGANG_SIMD_X86_H
#define EGANG_SIMD_X86_H

#include <immintrin.h>

/* The features each x86 level checks for (kernels.c isa_supported); every
 * SIMD function carries exactly its level's list. */
#define X86_AVX2_FEATURES "avx2,fma,f16c"
#define X86_AVX512_FEATURES "avx512f,avx512bw,avx512vl,avx512dq," X86_AVX2_FEATURES
#define X86_AVX512VNNI_FEATURES X86_AVX512_FEATURES ",avx512vnni"
/* the amx level: avx512vnni + the tiles and their int8 and bf16 products
 * (the kernel must also grant the tile state, kernels.c amx_granted) */
#define X86_AMX_FEATURES X86_AVX512VNNI_FEATURES ",amx-tile,amx-int8,amx-bf16"

#define AVX2 __attribute__((target(X86_AVX2_FEATURES)))
#define AVX2_INLINE static inline __attribute__((always_inline, target(X86_AVX2_FEATURES)))
/* the avx512 level's features, for code that both avx512 levels run
 * (avx512_lanes.h has the per-level AVX512 and AVX512_INLINE) */
#define AVX512_BASE __attribute__((target(X86_AVX512_FEATURES)))
#define AVX512_BASE_INLINE                                                     \
	static inline __attribute__((always_inline, target(X86_AVX512_FEATURES)))

/* VEC_ROUNDED(v): FP_ROUNDED (kernels_impl.h) for any vector register,
 * zmm16-31 included: the value is rounded to float here, not fused into a
 * later operation. Emits no instruction. */
#define VEC_ROUNDED(v) __asm__("" : "+v"(v))
/* KEEP(v): pins an integer accumulator's add chain in program order:
 * without it GCC reassociated the 8 or 16 adds of a block into a tree
 * whose partial sums went through the stack. Emits no instruction. */
#define KEEP(v) __asm__("" : "+x"(v))

/* ---------------------------------------------------------- loads */

AVX2_INLINE __m256i ld256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* The half at p as a float by vcvtph2ps: the bits of ld_f16
 * (kernels_impl.h), without its branches. */
AVX2_INLINE float ld_f16_f16c(const uint8_t *p)
{
	return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(ld_u16(p))));
}

/* The two adjacent halves at p as floats (a block's d and dmin). */
AVX2_INLINE void ld_f16x2_f16c(const uint8_t *p, float *a, float *b)
{
	__m128 v = _mm_cvtph_ps(_mm_cvtsi32_si128((int)ld_u32(p)));
	*a = _mm_cvtss_f32(v);
	*b = _mm_cvtss_f32(_mm_shuffle_ps(v, v, 1));
}

/* ------------------------------------------------ horizontal sums */

/* Fixed-order horizontal float sum: (lo128 + hi128), then (0+2, 1+3),
 * then 0+1. */
AVX2_INLINE float hsum256_ps(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
	return _mm_cvtss_f32(s);
}

/* hsum256_ps after lo256 + hi256. */
AVX512_BASE_INLINE float hsum512_ps(__m512 v)
{
	return hsum256_ps(_mm256_add_ps(_mm512_castps512_ps256(v),
					_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}

/* The maximum of the 8 lanes, folded as hsum256_ps adds; v holds no NaN
 * (maxps would pass one on from its second operand): every caller builds
 * v with maxps(x, v), which drops a NaN x, or checks for NaNs first. */
AVX2_INLINE float hmax256_ps(__m256 v)
{
	__m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	m = _mm_max_ps(m, _mm_movehl_ps(m, m));
	m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
	return _mm_cvtss_f32(m);
}

/* Integer sums are exact (wrapping), so their order is free. */
AVX2_INLINE int32_t hsum128_epi32(__m128i s)
{
	s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
	return _mm_cvtsi128_si32(s);
}

AVX2_INLINE int32_t hsum256_epi32(__m256i v)
{
	return hsum128_epi32(_mm_add_epi32(_mm256_castsi256_si128(v),
					   _mm256_extracti128_si256(v, 1)));
}

/* The sums of 4 vectors' int32 lanes, in one vector: lane j = the sum of
 * vector j's lanes. */
AVX2_INLINE __m128i hsum4x256_epi32(__m256i a, __m256i b, __m256i c, __m256i d)
{
	__m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
	return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/* ------------------------------------------------ K-quant scales */

/* A Q4_K / Q5_K super-block's 12 scale bytes (at wb + 4) as its 8 scales
 * (*sc: int16 lanes 0..7) and 8 mins, each twice (*mdup: m0 m0 m1 m1 ..
 * m7 m7 as int16, against the activations' bsums), kq_scale_min_k4's
 * values four at a time in 32-bit words: for s < 4 the low 6 bits of
 * bytes s and s + 4; for s >= 4 the nibbles of byte s + 4 with the top 2
 * bits of bytes s - 4 and s as bits 4-5. */
AVX2_INLINE void kq_scales_mins_q4K(const uint8_t *wb, __m128i *sc, __m256i *mdup)
{
	uint32_t a = ld_u32(wb + 4), b = ld_u32(wb + 8), c = ld_u32(wb + 12);
	uint32_t sc_lo = a & 0x3F3F3F3Fu, m_lo = b & 0x3F3F3F3Fu;
	uint32_t sc_hi = (c & 0x0F0F0F0Fu) | ((a >> 2) & 0x30303030u);
	uint32_t m_hi = ((c >> 4) & 0x0F0F0F0Fu) | ((b >> 2) & 0x30303030u);
	*sc = _mm_cvtepu8_epi16(_mm_setr_epi32((int)sc_lo, (int)sc_hi, 0, 0));
	__m128i mn = _mm_cvtepu8_epi16(_mm_setr_epi32((int)m_lo, (int)m_hi, 0, 0));
	*mdup = _mm256_set_m128i(_mm_unpackhi_epi16(mn, mn), _mm_unpacklo_epi16(mn, mn));
}

#endif
