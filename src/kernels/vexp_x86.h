/* vexp_x86: libm's expf in vectors for the x86 levels (attention's
 * softmax: prompt attention in attn_tmpl.h, decode's in kernels_avx512.c and
 * kernels_avx2.c, and the level's softmax). Include after simd_x86.h,
 * x86-64 only; attn.c defines the table and the probe.
 *
 * libm's expf as glibc builds it for x86-64 CPUs with FMA (its __expf_fma,
 * sysdeps/ieee754/flt-32/e_expf.c; the variant every AVX2 and AVX-512 CPU
 * runs), in double lanes with the same operations, fused where it fuses:
 *   kd = fma(InvLn2N, x, SHIFT); ki = bits(kd); kd -= SHIFT;
 *   r = fma(InvLn2N, x, -kd); s = bits(T[ki % 32] + (ki << 47));
 *   y = fma(fma(C0, r, C1), r * r, fma(C2, r, 1)) * s; (float)y
 * for |x| < 88; other lanes (large, infinite, NaN) call expf. The table
 * and constants are glibc's (__exp2f_data: 2^(i/32) less i << 47, 32/ln 2,
 * the polynomial). attn_vexp_ok checks the agreement with the expf this
 * process links before any use. */
#ifndef EGANG_VEXP_X86_H
#define EGANG_VEXP_X86_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* glibc's __exp2f_data table: 2^(i/32) as doubles less i << 47 (attn.c). */
extern const uint64_t attn_vexp_tab[32];
/* Whether vexp_lanes_* give this process's expf bits (a probe of 2^16
 * floats at the first call, thread-safe; attn.c): where not, callers use
 * expf itself. */
bool attn_vexp_ok(void);

#define VEXP_INVLN2N 0x1.71547652b82fep+5
#define VEXP_SHIFT 0x1.8p+52
#define VEXP_C0 0x1.c6af84b912394p-20
#define VEXP_C1 0x1.ebfce50fac4f3p-13
#define VEXP_C2 0x1.62e42ff0c52d6p-6
#define VEXP_TOP 0x42a /* the top 12 bits of 88.0f less the sign */

/* 8 floats, every lane below 88 in magnitude. */
static inline __attribute__((always_inline, target(X86_AVX512_FEATURES))) __m256
vexp8_avx512(__m256 x)
{
	const __m512d inv = _mm512_set1_pd(VEXP_INVLN2N), sh = _mm512_set1_pd(VEXP_SHIFT);
	__m512d xd = _mm512_cvtps_pd(x);
	__m512d kd = _mm512_fmadd_pd(inv, xd, sh);
	__m512i ki = _mm512_castpd_si512(kd);
	kd = _mm512_sub_pd(kd, sh);
	__m512d r = _mm512_fmsub_pd(inv, xd, kd);
	__m512i t = _mm512_i64gather_epi64(_mm512_and_si512(ki, _mm512_set1_epi64(31)),
					   (const void *)attn_vexp_tab, 8);
	t = _mm512_add_epi64(t, _mm512_slli_epi64(ki, 47));
	__m512d z = _mm512_fmadd_pd(_mm512_set1_pd(VEXP_C0), r, _mm512_set1_pd(VEXP_C1));
	__m512d r2 = _mm512_mul_pd(r, r);
	__m512d y = _mm512_fmadd_pd(r, _mm512_set1_pd(VEXP_C2), _mm512_set1_pd(1.0));
	y = _mm512_fmadd_pd(z, r2, y);
	y = _mm512_mul_pd(y, _mm512_castsi512_pd(t));
	return _mm512_cvtpd_ps(y);
}

/* 4 floats, every lane below 88 in magnitude. */
static inline __attribute__((always_inline, target(X86_AVX2_FEATURES))) __m128
vexp4_avx2(__m128 x)
{
	const __m256d inv = _mm256_set1_pd(VEXP_INVLN2N), sh = _mm256_set1_pd(VEXP_SHIFT);
	__m256d xd = _mm256_cvtps_pd(x);
	__m256d kd = _mm256_fmadd_pd(inv, xd, sh);
	__m256i ki = _mm256_castpd_si256(kd);
	kd = _mm256_sub_pd(kd, sh);
	__m256d r = _mm256_fmsub_pd(inv, xd, kd);
	__m256i t = _mm256_i64gather_epi64((const long long *)(const void *)attn_vexp_tab,
					   _mm256_and_si256(ki, _mm256_set1_epi64x(31)), 8);
	t = _mm256_add_epi64(t, _mm256_slli_epi64(ki, 47));
	__m256d z = _mm256_fmadd_pd(_mm256_set1_pd(VEXP_C0), r, _mm256_set1_pd(VEXP_C1));
	__m256d r2 = _mm256_mul_pd(r, r);
	__m256d y = _mm256_fmadd_pd(r, _mm256_set1_pd(VEXP_C2), _mm256_set1_pd(1.0));
	y = _mm256_fmadd_pd(z, r2, y);
	y = _mm256_mul_pd(y, _mm256_castsi256_pd(t));
	return _mm256_cvtpd_ps(y);
}

/* expf of 16 lanes, returned in a register; lanes of 88 or more in
 * magnitude, infinite or NaN by expf itself. The halves are joined in
 * registers: stored as two halves and loaded as one vector, they would
 * stall that load (store forwarding fails from two stores into one load),
 * once per call. */
static inline __attribute__((always_inline, target(X86_AVX512_FEATURES))) __m512
vexp16_avx512(__m512 x)
{
	__m512i top = _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(x), 20),
				       _mm512_set1_epi32(0x7ff));
	__mmask16 big = _mm512_cmpge_epu32_mask(top, _mm512_set1_epi32(VEXP_TOP));
	__m256 lo = vexp8_avx512(_mm512_castps512_ps256(x));
	__m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1));
	hi = vexp8_avx512(hi);
	__m512 y = _mm512_castpd_ps(_mm512_insertf64x4(
		_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
	if (big) {
		float in[16], e[16];
		_mm512_storeu_ps(in, x);
		_mm512_storeu_ps(e, y);
		for (; big; big &= (__mmask16)(big - 1)) {
			int j = __builtin_ctz(big);
			e[j] = expf(in[j]);
		}
		y = _mm512_loadu_ps(e);
	}
	return y;
}

/* The same for 8 lanes. */
static inline __attribute__((always_inline, target(X86_AVX2_FEATURES))) __m256
vexp8_avx2(__m256 x)
{
	__m256i top = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(x), 20),
				       _mm256_set1_epi32(0x7ff));
	int big = _mm256_movemask_ps(_mm256_castsi256_ps(
		_mm256_cmpgt_epi32(top, _mm256_set1_epi32(VEXP_TOP - 1))));
	__m128 lo = vexp4_avx2(_mm256_castps256_ps128(x));
	__m128 hi = vexp4_avx2(_mm256_extractf128_ps(x, 1));
	__m256 y = _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
	if (big) {
		float in[8], e[8];
		_mm256_storeu_ps(in, x);
		_mm256_storeu_ps(e, y);
		for (; big; big &= big - 1) {
			int j = __builtin_ctz((unsigned)big);
			e[j] = expf(in[j]);
		}
		y = _mm256_loadu_ps(e);
	}
	return y;
}

/* e[j] = expf(e[j]) for 16 lanes (vexp16_avx512 in place). */
static inline __attribute__((always_inline, target(X86_AVX512_FEATURES))) void
vexp_lanes_avx512(float *e)
{
	_mm512_storeu_ps(e, vexp16_avx512(_mm512_loadu_ps(e)));
}

/* The same for 8 lanes. */
static inline __attribute__((always_inline, target(X86_AVX2_FEATURES))) void
vexp_lanes_avx2(float *e)
{
	_mm256_storeu_ps(e, vexp8_avx2(_mm256_loadu_ps(e)));
}

#endif
