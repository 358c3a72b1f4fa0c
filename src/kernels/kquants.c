/* kquants: generic dequantize, dot product and quantizer of Q4_1, Q5_0,
 * Q5_1, Q8_K and the K-quants Q2_K .. Q6_K (layouts in kquants.h).
 *
 * Reading order: helpers; per type the unpacking of one block into its
 * integer quants and scales (shared by dequantize and the dot products, so
 * the two cannot disagree on a layout); dequantize; dot products;
 * quantizers; the per-type switch. */
#include "kernels/kernels_impl.h"
#include "kernels/kquants.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>

_Static_assert(sizeof(block_q4_1) == 20, "block_q4_1 must be 20 bytes");
_Static_assert(sizeof(block_q5_0) == 22, "block_q5_0 must be 22 bytes");
_Static_assert(sizeof(block_q5_1) == 24, "block_q5_1 must be 24 bytes");
_Static_assert(sizeof(block_q8_K) == 292, "block_q8_K must be 292 bytes");
_Static_assert(sizeof(block_q2_K) == 84, "block_q2_K must be 84 bytes");
_Static_assert(sizeof(block_q3_K) == 110, "block_q3_K must be 110 bytes");
_Static_assert(sizeof(block_q4_K) == 144, "block_q4_K must be 144 bytes");
_Static_assert(sizeof(block_q5_K) == 176, "block_q5_K must be 176 bytes");
_Static_assert(sizeof(block_q6_K) == 210, "block_q6_K must be 210 bytes");

/* ------------------------------------------------------------- helpers */

/* Round to nearest (ties to even, as llama.cpp's nearest_int) after a clamp
 * to [lo, hi]; a NaN gives lo. */
static inline int qround(float f, int lo, int hi)
{
	f = fminf(fmaxf(f, (float)lo), (float)hi);
	return (int)lrintf(f);
}

/* The f16 a float is stored as, read back. */
static inline float f16_round(float f) { return fp16_to_f32_inline(f32_to_fp16_inline(f)); }

/* ------------------------------------------------------ block unpacking */

/* Legacy blocks: q[32] the quants as the formula multiplies them (Q5_0
 * with its - 16 applied), *d and *m (0 for Q5_0) the scale and offset. */
static void unpack_q4_1(const uint8_t *b, int8_t *q, float *d, float *m)
{
	*d = ld_f16(b);
	*m = ld_f16(b + 2);
	for (int j = 0; j < 16; j++) {
		q[j] = (int8_t)(b[4 + j] & 15);
		q[j + 16] = (int8_t)(b[4 + j] >> 4);
	}
}

static void unpack_q5(const uint8_t *qh, const uint8_t *qs, int8_t *q, int bias)
{
	uint32_t h = ld_u32(qh);
	for (int j = 0; j < 16; j++) {
		q[j] = (int8_t)(((qs[j] & 15) | ((h >> j) & 1) << 4) - bias);
		q[j + 16] = (int8_t)(((qs[j] >> 4) | ((h >> (j + 16)) & 1) << 4) - bias);
	}
}

/* K-quants: q[256] the element quants (Q3_K / Q6_K with their offsets
 * applied: signed), sc[16] the sub-block scales and mn[16] the mins, per
 * 16 elements (Q4_K / Q5_K: each of their 8 sub-blocks' scale twice), and
 * *d / *dmin the super-block's f16 factors. */
static void unpack_q2_K(const uint8_t *b, int8_t *q, int *sc, int *mn, float *d, float *dmin)
{
	const block_q2_K *k = (const void *)b;
	for (int h = 0; h < 2; h++)
		for (int j = 0; j < 4; j++)
			for (int l = 0; l < 32; l++)
				q[128 * h + 32 * j + l] = (int8_t)((k->qs[32 * h + l] >> (2 * j)) & 3);
	for (int s = 0; s < 16; s++) {
		sc[s] = k->scales[s] & 15;
		mn[s] = k->scales[s] >> 4;
	}
	*d = ld_f16(b + 80);
	*dmin = ld_f16(b + 82);
}

static void unpack_q3_K(const uint8_t *b, int8_t *q, int *sc, int *mn, float *d, float *dmin)
{
	const block_q3_K *k = (const void *)b;
	int8_t s8[16];
	for (int h = 0; h < 2; h++)
		for (int j = 0; j < 4; j++)
			for (int l = 0; l < 32; l++) {
				int lo = (k->qs[32 * h + l] >> (2 * j)) & 3;
				int hi = (k->hmask[l] >> (4 * h + j)) & 1;
				q[128 * h + 32 * j + l] = (int8_t)(lo + 4 * hi - 4);
			}
	kq_scales_q3(k->scales, s8);
	for (int s = 0; s < 16; s++) {
		sc[s] = s8[s];
		mn[s] = 0;
	}
	*d = ld_f16(b + 108);
	*dmin = 0.0f;
}

static void unpack_q45_K(const uint8_t *b, int8_t *q, int *sc, int *mn, float *d,
			 float *dmin, int five)
{
	const uint8_t *scales = b + 4, *qh = b + 16, *qs = b + (five ? 48 : 16);
	for (int c = 0; c < 4; c++)
		for (int l = 0; l < 32; l++) {
			int lo = qs[32 * c + l] & 15, hi = qs[32 * c + l] >> 4;
			if (five) {
				lo |= ((qh[l] >> (2 * c)) & 1) << 4;
				hi |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
			}
			q[64 * c + l] = (int8_t)lo;
			q[64 * c + 32 + l] = (int8_t)hi;
		}
	for (int s = 0; s < 8; s++) {
		uint8_t a, m;
		kq_scale_min_k4(scales, s, &a, &m);
		sc[2 * s] = sc[2 * s + 1] = a;
		mn[2 * s] = mn[2 * s + 1] = m;
	}
	*d = ld_f16(b);
	*dmin = ld_f16(b + 2);
}

static void unpack_q6_K(const uint8_t *b, int8_t *q, int *sc, int *mn, float *d, float *dmin)
{
	const block_q6_K *k = (const void *)b;
	for (int h = 0; h < 2; h++) {
		const uint8_t *ql = k->ql + 64 * h, *qh = k->qh + 32 * h;
		for (int kk = 0; kk < 4; kk++)
			for (int l = 0; l < 32; l++) {
				int lo = ql[l + 32 * (kk & 1)];
				lo = kk < 2 ? lo & 15 : lo >> 4;
				int hi = (qh[l] >> (2 * kk)) & 3;
				q[128 * h + 32 * kk + l] = (int8_t)((lo | hi << 4) - 32);
			}
	}
	for (int s = 0; s < 16; s++) {
		sc[s] = k->scales[s];
		mn[s] = 0;
	}
	*d = ld_f16(b + 208);
	*dmin = 0.0f;
}

typedef void (*unpack_k_fn)(const uint8_t *b, int8_t *q, int *sc, int *mn, float *d,
			    float *dmin);

static void unpack_q4_K(const uint8_t *b, int8_t *q, int *sc, int *mn, float *d, float *dmin)
{
	unpack_q45_K(b, q, sc, mn, d, dmin, 0);
}

static void unpack_q5_K(const uint8_t *b, int8_t *q, int *sc, int *mn, float *d, float *dmin)
{
	unpack_q45_K(b, q, sc, mn, d, dmin, 1);
}

static unpack_k_fn unpack_k(int t)
{
	switch (t) {
	case DTYPE_Q2_K: return unpack_q2_K;
	case DTYPE_Q3_K: return unpack_q3_K;
	case DTYPE_Q4_K: return unpack_q4_K;
	case DTYPE_Q5_K: return unpack_q5_K;
	case DTYPE_Q6_K: return unpack_q6_K;
	default: return NULL;
	}
}

/* ---------------------------------------------------------- dequantize */

/* Legacy: x = d q + m (Q4_1, Q5_1), x = d q (Q5_0: no + 0, which would
 * turn ggml's -0 for q = 0 under a negative d into +0). */
static void dequantize_legacy(int t, const void *x, float *y, int64_t n)
{
	const size_t bb = dtype_info[t].block_bytes;
	for (int64_t b = 0; b < n / QK; b++) {
		const uint8_t *xb = (const uint8_t *)x + (size_t)b * bb;
		int8_t q[32];
		float d, m = 0.0f;
		if (t == DTYPE_Q4_1) {
			unpack_q4_1(xb, q, &d, &m);
		} else if (t == DTYPE_Q5_0) {
			d = ld_f16(xb);
			unpack_q5(xb + 2, xb + 6, q, 16);
		} else {
			d = ld_f16(xb);
			m = ld_f16(xb + 2);
			unpack_q5(xb + 4, xb + 8, q, 0);
		}
		if (t == DTYPE_Q5_0) {
			for (int j = 0; j < 32; j++)
				y[b * QK + j] = d * (float)q[j];
		} else {
			for (int j = 0; j < 32; j++)
				y[b * QK + j] = d * (float)q[j] + m;
		}
	}
}

/* K-quants: x = (d sc) q - (dmin mn), per element. */
static void dequantize_k(int t, const void *x, float *y, int64_t n)
{
	const size_t bb = dtype_info[t].block_bytes;
	unpack_k_fn up = unpack_k(t);
	for (int64_t b = 0; b < n / QK_K; b++) {
		const uint8_t *xb = (const uint8_t *)x + (size_t)b * bb;
		int8_t q[QK_K];
		int sc[16], mn[16];
		float d, dmin;
		up(xb, q, sc, mn, &d, &dmin);
		for (int s = 0; s < 16; s++) {
			float a = d * (float)sc[s], m = dmin * (float)mn[s];
			for (int l = 0; l < 16; l++)
				y[b * QK_K + 16 * s + l] = a * (float)q[16 * s + l] - m;
		}
	}
}

static void dequantize_q8_K(const void *x, float *y, int64_t n)
{
	for (int64_t b = 0; b < n / QK_K; b++) {
		const uint8_t *xb = (const uint8_t *)x + (size_t)b * sizeof(block_q8_K);
		float d = ld_f32(xb);
		for (int j = 0; j < QK_K; j++)
			y[b * QK_K + j] = d * (float)(int8_t)xb[4 + j];
	}
}

/* -------------------------------------------------------- dot products */

/* Legacy weights, per block of 32: Q5_0 against Q8_0 activations,
 *   sumi = sum q_w q_x (exact), acc = acc + (float)sumi * (d_w * d_x);
 * Q4_1 / Q5_1 against Q8_1 (as ggml: the min term from the activations'
 * f16 s, summed apart and added at the end),
 *   acc = acc + (float)sumi * (d_w * d_x), summ = summ + m_w * s_x,
 *   result acc + summ;
 * each product rounded, no FMA. */
static float dot_legacy(int t, const void *w, const void *xa, int64_t n)
{
	const size_t bb = dtype_info[t].block_bytes;
	const size_t xb = t == DTYPE_Q5_0 ? sizeof(block_q8_0) : sizeof(block_q8_1);
	const int xq = t == DTYPE_Q5_0 ? 2 : 4; /* the quants' offset */
	float acc = 0.0f, summ = 0.0f;
	for (int64_t b = 0; b < n / QK; b++) {
		const uint8_t *wb = (const uint8_t *)w + (size_t)b * bb;
		const uint8_t *x = (const uint8_t *)xa + (size_t)b * xb;
		int8_t q[32];
		float dw, m = 0.0f;
		if (t == DTYPE_Q4_1) {
			unpack_q4_1(wb, q, &dw, &m);
		} else if (t == DTYPE_Q5_0) {
			dw = ld_f16(wb);
			unpack_q5(wb + 2, wb + 6, q, 16);
		} else {
			dw = ld_f16(wb);
			m = ld_f16(wb + 2);
			unpack_q5(wb + 4, wb + 8, q, 0);
		}
		int32_t sumi = 0;
		for (int j = 0; j < 32; j++)
			sumi += (int32_t)q[j] * (int8_t)x[xq + j];
		float dx = ld_f16(x);
		float dd = dw * dx;
		float p = (float)sumi * dd;
		FP_ROUNDED(p);
		acc = acc + p;
		if (t != DTYPE_Q5_0) {
			float pm = m * ld_f16(x + 2);
			FP_ROUNDED(pm);
			summ = summ + pm;
		}
	}
	return acc + summ;
}

/* K-quant weights against Q8_K activations, per super-block:
 *   sumi = sum over sub-blocks s of sc[s] * (sum q_w q_x over s) (exact),
 *   summ = sum over s of mn[s] * bsums_x[s] (exact; Q2_K / Q4_K / Q5_K),
 *   acc = acc + ((d_x * d_w) * (float)sumi - (d_x * dmin_w) * (float)summ)
 * each product rounded, no FMA (Q3_K / Q6_K: the summ term is absent). */
static float dot_k(int t, const void *w, const void *xa, int64_t n)
{
	const size_t bb = dtype_info[t].block_bytes;
	unpack_k_fn up = unpack_k(t);
	const bool has_min = t == DTYPE_Q2_K || t == DTYPE_Q4_K || t == DTYPE_Q5_K;
	float acc = 0.0f;
	for (int64_t b = 0; b < n / QK_K; b++) {
		const uint8_t *wb = (const uint8_t *)w + (size_t)b * bb;
		const uint8_t *x = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K);
		int8_t q[QK_K];
		int sc[16], mn[16];
		float d, dmin;
		up(wb, q, sc, mn, &d, &dmin);
		int32_t sumi = 0, summ = 0;
		for (int s = 0; s < 16; s++) {
			int32_t si = 0;
			for (int l = 0; l < 16; l++)
				si += (int32_t)q[16 * s + l] * (int8_t)x[4 + 16 * s + l];
			sumi += sc[s] * si;
			summ += mn[s] * (int16_t)ld_u16(x + 4 + QK_K + 2 * s);
		}
		acc = kq_k_step(acc, ld_f32(x), d, dmin, sumi, summ, has_min);
	}
	return acc;
}

/* Q8_K weights (not a file type; for tests): acc += (d_w d_x) sumi. */
static float dot_q8_K(const void *w, const void *xa, int64_t n)
{
	float acc = 0.0f;
	for (int64_t b = 0; b < n / QK_K; b++) {
		const uint8_t *a = (const uint8_t *)w + (size_t)b * sizeof(block_q8_K);
		const uint8_t *x = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K);
		int32_t sumi = 0;
		for (int j = 0; j < QK_K; j++)
			sumi += (int8_t)a[4 + j] * (int8_t)x[4 + j];
		float dd = ld_f32(a) * ld_f32(x);
		float p = (float)sumi * dd;
		FP_ROUNDED(p);
		acc = acc + p;
	}
	return acc;
}

float kq_dot_generic(int t, const void *w, const void *xa, int64_t n)
{
	switch (t) {
	case DTYPE_Q4_1:
	case DTYPE_Q5_0:
	case DTYPE_Q5_1:
		return dot_legacy(t, w, xa, n);
	case DTYPE_Q8_K:
		return dot_q8_K(w, xa, n);
	case DTYPE_IQ4_NL:
	case DTYPE_IQ4_XS:
		return kq_iq4_dot_generic(t, w, xa, n);
	default:
		return dot_k(t, w, xa, n);
	}
}

/* ----------------------------------------------------------- quantizers */

/* Q8_1: quants and d as quantize_q8_0_generic (kernels.c), s as ggml's
 * x86 quantize_row_q8_1: f16 of the float d (before its f16 rounding)
 * times the sum of the quants. */
static void quantize_q8_1(const float *x, void *yv, int64_t n)
{
	uint8_t *y = yv;
	for (int64_t b = 0; b < n / QK; b++) {
		uint8_t *yb = y + b * sizeof(block_q8_1);
		float d = q8_block_generic(x + b * QK, (int8_t *)(yb + 4));
		int32_t sum = 0;
		for (int j = 0; j < QK; j++)
			sum += (int8_t)yb[4 + j];
		float s = d * (float)sum;
		FP_ROUNDED(s);
		st_u16(yb, f32_to_fp16_inline(d));
		st_u16(yb + 2, f32_to_fp16_inline(s));
	}
}

static void dequantize_q8_1(const void *x, float *y, int64_t n)
{
	for (int64_t b = 0; b < n / QK; b++) {
		const uint8_t *xb = (const uint8_t *)x + (size_t)b * sizeof(block_q8_1);
		float d = ld_f16(xb);
		for (int j = 0; j < QK; j++)
			y[b * QK + j] = d * (float)(int8_t)xb[4 + j];
	}
}

/* Q8_K: llama.cpp's reference quantizer (so that activations are the same
 * quants llama.cpp's dot products see). */
static void quantize_q8_K(const float *x, void *yv, int64_t n)
{
	for (int64_t b = 0; b < n / QK_K; b++) {
		const float *xb = x + b * QK_K;
		uint8_t *y = (uint8_t *)yv + (size_t)b * sizeof(block_q8_K);
		float amax = 0.0f, max = 0.0f;
		for (int j = 0; j < QK_K; j++)
			if (fabsf(xb[j]) > amax) { /* a NaN never wins */
				amax = fabsf(xb[j]);
				max = xb[j];
			}
		memset(y, 0, sizeof(block_q8_K));
		if (amax == 0.0f)
			continue;
		float iscale = -127.0f / max;
		for (int j = 0; j < QK_K; j++)
			y[4 + j] = (uint8_t)(int8_t)qround(iscale * xb[j], -128, 127);
		for (int s = 0; s < 16; s++) {
			int sum = 0;
			for (int l = 0; l < 16; l++)
				sum += (int8_t)y[4 + 16 * s + l];
			st_u16(y + 4 + QK_K + 2 * s, (uint16_t)(int16_t)sum);
		}
		float d = 1.0f / iscale;
		memcpy(y, &d, 4);
	}
}

/* Legacy with an offset (Q4_1, Q5_1): d = (max - min) / nmax, m = min,
 * q = round((x - min) / d) in 0..nmax. Symmetric (Q5_0): the element of
 * largest magnitude maps to -16, q = round(x / d) + 16 in 0..31. */
static void quantize_legacy(int t, const float *x, void *yv, int64_t n)
{
	const size_t bb = dtype_info[t].block_bytes;
	const int nmax = t == DTYPE_Q4_1 ? 15 : 31;
	for (int64_t b = 0; b < n / QK; b++) {
		const float *xb = x + b * QK;
		uint8_t *y = (uint8_t *)yv + (size_t)b * bb;
		int q[32];
		float d, id, m = 0.0f;
		if (t == DTYPE_Q5_0) {
			float amax = 0.0f, max = 0.0f;
			for (int j = 0; j < 32; j++)
				if (fabsf(xb[j]) > amax) {
					amax = fabsf(xb[j]);
					max = xb[j];
				}
			d = max / -16.0f;
			id = d != 0.0f ? 1.0f / d : 0.0f;
			for (int j = 0; j < 32; j++)
				q[j] = qround(xb[j] * id + 16.0f, 0, 31);
		} else {
			float mn = xb[0], mx = xb[0];
			for (int j = 1; j < 32; j++) {
				mn = fminf(mn, xb[j]);
				mx = fmaxf(mx, xb[j]);
			}
			d = (mx - mn) / (float)nmax;
			id = d != 0.0f ? 1.0f / d : 0.0f;
			m = mn;
			for (int j = 0; j < 32; j++)
				q[j] = qround((xb[j] - mn) * id, 0, nmax);
		}
		st_u16(y, f32_to_fp16_inline(d));
		uint8_t *qs;
		if (t == DTYPE_Q4_1) {
			st_u16(y + 2, f32_to_fp16_inline(m));
			qs = y + 4;
		} else {
			uint8_t *qh = y + (t == DTYPE_Q5_0 ? 2 : 4);
			if (t == DTYPE_Q5_1)
				st_u16(y + 2, f32_to_fp16_inline(m));
			uint32_t h = 0;
			for (int j = 0; j < 32; j++)
				h |= (uint32_t)((q[j] >> 4) & 1) << j;
			memcpy(qh, &h, 4);
			qs = qh + 4;
		}
		for (int j = 0; j < 16; j++)
			qs[j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
	}
}

/* An offset fit of x (n) to levels 0..nmax: *scale = (max - min') / nmax,
 * *min = -min' where min' = min(min x, 0) (the mins are stored unsigned),
 * then one least-squares step for the scale given the rounded levels. */
static void fit_offset(const float *x, int n, int nmax, float *scale, float *min)
{
	float mn = 0.0f, mx = 0.0f;
	for (int i = 0; i < n; i++) {
		mn = fminf(mn, x[i]);
		mx = fmaxf(mx, x[i]);
	}
	float s = (mx - mn) / (float)nmax;
	*min = -mn;
	if (!(s > 0.0f)) {
		*scale = 0.0f;
		return;
	}
	float sxl = 0.0f, sll = 0.0f;
	for (int i = 0; i < n; i++) {
		int l = qround((x[i] - mn) / s, 0, nmax);
		sxl += (x[i] - mn) * (float)l;
		sll += (float)l * (float)l;
	}
	*scale = sll > 0.0f && sxl > 0.0f ? sxl / sll : s;
}

/* A symmetric fit of x (n) to levels -nlo..nlo-1: the element of largest
 * magnitude maps to -nlo. */
static float fit_sym(const float *x, int n, int nlo)
{
	float amax = 0.0f, max = 0.0f;
	for (int i = 0; i < n; i++)
		if (fabsf(x[i]) > amax) {
			amax = fabsf(x[i]);
			max = x[i];
		}
	return max / -(float)nlo;
}

/* Q2_K / Q4_K / Q5_K: per sub-block an offset fit; the scales and mins as
 * unsigned integers of sbits bits against the super-block's d and dmin;
 * then the quants against the stored (rounded) scale and min. q[256] and
 * the integer scales sc / mn (per sub-block of len) are returned. */
static void quantize_k_offset(const float *x, int len, int nmax, int smax, int *q,
			      int *sc, int *mn, float *d, float *dmin)
{
	const int ns = QK_K / len;
	float s[16], m[16], ms = 0.0f, mm = 0.0f;
	for (int j = 0; j < ns; j++) {
		fit_offset(x + j * len, len, nmax, &s[j], &m[j]);
		ms = fmaxf(ms, s[j]);
		mm = fmaxf(mm, m[j]);
	}
	*d = f16_round(ms / (float)smax);
	*dmin = f16_round(mm / (float)smax);
	for (int j = 0; j < ns; j++) {
		sc[j] = *d > 0.0f ? qround(s[j] / *d, 0, smax) : 0;
		mn[j] = *dmin > 0.0f ? qround(m[j] / *dmin, 0, smax) : 0;
		float a = *d * (float)sc[j], b = *dmin * (float)mn[j];
		for (int i = 0; i < len; i++)
			q[j * len + i] = a > 0.0f ? qround((x[j * len + i] + b) / a, 0, nmax) : 0;
	}
}

/* Q3_K / Q6_K: per sub-block of 16 a symmetric fit to -nlo..nlo-1; the
 * scales as signed integers in -slo..slo-1 against d. */
static void quantize_k_sym(const float *x, int nlo, int slo, int *q, int *sc, float *d)
{
	float s[16], amax = 0.0f, max = 0.0f;
	for (int j = 0; j < 16; j++) {
		s[j] = fit_sym(x + 16 * j, 16, nlo);
		if (fabsf(s[j]) > amax) {
			amax = fabsf(s[j]);
			max = s[j];
		}
	}
	*d = f16_round(max / -(float)slo);
	for (int j = 0; j < 16; j++) {
		sc[j] = *d != 0.0f ? qround(s[j] / *d, -slo, slo - 1) : 0;
		float a = *d * (float)sc[j];
		for (int i = 0; i < 16; i++)
			q[16 * j + i] = a != 0.0f ? qround(x[16 * j + i] / a, -nlo, nlo - 1) : 0;
	}
}

static void pack_q2_K(const int *q, const int *sc, const int *mn, float d, float dmin,
		      uint8_t *y)
{
	block_q2_K k;
	memset(&k, 0, sizeof k);
	for (int s = 0; s < 16; s++)
		k.scales[s] = (uint8_t)(sc[s] | mn[s] << 4);
	for (int h = 0; h < 2; h++)
		for (int j = 0; j < 4; j++)
			for (int l = 0; l < 32; l++)
				k.qs[32 * h + l] |= (uint8_t)(q[128 * h + 32 * j + l] << (2 * j));
	k.d = f32_to_fp16_inline(d);
	k.dmin = f32_to_fp16_inline(dmin);
	memcpy(y, &k, sizeof k);
}

static void pack_q3_K(const int *q, const int *sc, float d, uint8_t *y)
{
	block_q3_K k;
	memset(&k, 0, sizeof k);
	for (int h = 0; h < 2; h++)
		for (int j = 0; j < 4; j++)
			for (int l = 0; l < 32; l++) {
				int v = q[128 * h + 32 * j + l] + 4; /* 0..7 */
				k.qs[32 * h + l] |= (uint8_t)((v & 3) << (2 * j));
				k.hmask[l] |= (uint8_t)((v >> 2) << (4 * h + j));
			}
	for (int i = 0; i < 16; i++) {
		int s = sc[i] + 32; /* 0..63 */
		k.scales[i % 8] |= (uint8_t)((s & 15) << (i < 8 ? 0 : 4));
		k.scales[8 + i % 4] |= (uint8_t)((s >> 4) << (2 * (i / 4)));
	}
	k.d = f32_to_fp16_inline(d);
	memcpy(y, &k, sizeof k);
}

/* Q4_K / Q5_K: sc / mn per sub-block of 32 (8 of each). */
static void pack_q45_K(const int *q, const int *sc, const int *mn, float d, float dmin,
		       uint8_t *y, int five)
{
	uint8_t *scales = y + 4, *qh = y + 16, *qs = y + (five ? 48 : 16);
	memset(y, 0, five ? sizeof(block_q5_K) : sizeof(block_q4_K));
	st_u16(y, f32_to_fp16_inline(d));
	st_u16(y + 2, f32_to_fp16_inline(dmin));
	for (int s = 0; s < 8; s++) {
		if (s < 4) {
			scales[s] |= (uint8_t)sc[s];
			scales[s + 4] |= (uint8_t)mn[s];
		} else {
			scales[s + 4] = (uint8_t)((sc[s] & 15) | (mn[s] & 15) << 4);
			scales[s - 4] |= (uint8_t)((sc[s] >> 4) << 6);
			scales[s] |= (uint8_t)((mn[s] >> 4) << 6);
		}
	}
	for (int c = 0; c < 4; c++)
		for (int l = 0; l < 32; l++) {
			int lo = q[64 * c + l], hi = q[64 * c + 32 + l];
			qs[32 * c + l] = (uint8_t)((lo & 15) | (hi & 15) << 4);
			if (five)
				qh[l] |= (uint8_t)(((lo >> 4) & 1) << (2 * c) |
						   ((hi >> 4) & 1) << (2 * c + 1));
		}
}

static void pack_q6_K(const int *q, const int *sc, float d, uint8_t *y)
{
	block_q6_K k;
	memset(&k, 0, sizeof k);
	for (int h = 0; h < 2; h++) {
		uint8_t *ql = k.ql + 64 * h, *qh = k.qh + 32 * h;
		for (int kk = 0; kk < 4; kk++)
			for (int l = 0; l < 32; l++) {
				int v = q[128 * h + 32 * kk + l] + 32; /* 0..63 */
				ql[l + 32 * (kk & 1)] |= (uint8_t)((v & 15) << (kk < 2 ? 0 : 4));
				qh[l] |= (uint8_t)((v >> 4) << (2 * kk));
			}
	}
	for (int s = 0; s < 16; s++)
		k.scales[s] = (int8_t)sc[s];
	k.d = f32_to_fp16_inline(d);
	memcpy(y, &k, sizeof k);
}

static void quantize_k(int t, const float *x, void *yv, int64_t n)
{
	const size_t bb = dtype_info[t].block_bytes;
	for (int64_t b = 0; b < n / QK_K; b++) {
		const float *xb = x + b * QK_K;
		uint8_t *y = (uint8_t *)yv + (size_t)b * bb;
		int q[QK_K], sc[16], mn[16];
		float d, dmin;
		switch (t) {
		case DTYPE_Q2_K:
			quantize_k_offset(xb, 16, 3, 15, q, sc, mn, &d, &dmin);
			pack_q2_K(q, sc, mn, d, dmin, y);
			break;
		case DTYPE_Q3_K:
			quantize_k_sym(xb, 4, 32, q, sc, &d);
			pack_q3_K(q, sc, d, y);
			break;
		case DTYPE_Q4_K:
		case DTYPE_Q5_K:
			quantize_k_offset(xb, 32, t == DTYPE_Q4_K ? 15 : 31, 63, q, sc, mn, &d,
					  &dmin);
			pack_q45_K(q, sc, mn, d, dmin, y, t == DTYPE_Q5_K);
			break;
		default: /* Q6_K */
			quantize_k_sym(xb, 32, 128, q, sc, &d);
			pack_q6_K(q, sc, d, y);
			break;
		}
	}
}

/* ----------------------------------------------------------- validation */

int64_t kq_bad_block(int t, const void *data, size_t nbytes)
{
	int off[2] = { 0, -1 }; /* where the f16 scale (and min) sit */
	switch (t) {
	case DTYPE_Q4_1: case DTYPE_Q5_1: case DTYPE_Q4_K: case DTYPE_Q5_K:
		off[1] = 2;
		break;
	case DTYPE_Q5_0: case DTYPE_IQ4_NL: case DTYPE_IQ4_XS:
		break;
	case DTYPE_Q2_K:
		off[0] = 80;
		off[1] = 82;
		break;
	case DTYPE_Q3_K:
		off[0] = 108;
		break;
	case DTYPE_Q6_K:
		off[0] = 208;
		break;
	default:
		return -1;
	}
	const size_t bb = dtype_info[t].block_bytes;
	const uint8_t *p = data;
	for (size_t b = 0; b + bb <= nbytes; b += bb)
		for (int k = 0; k < 2 && off[k] >= 0; k++)
			if ((ld_u16(p + b + (size_t)off[k]) & 0x7C00) == 0x7C00)
				return (int64_t)b;
	return -1;
}

/* ------------------------------------------------------------- by type */

void kq_quantize(int t, const float *x, void *y, int64_t n)
{
	switch (t) {
	case DTYPE_Q4_1:
	case DTYPE_Q5_0:
	case DTYPE_Q5_1:
		quantize_legacy(t, x, y, n);
		break;
	case DTYPE_Q8_K:
		quantize_q8_K(x, y, n);
		break;
	case DTYPE_Q8_1:
		quantize_q8_1(x, y, n);
		break;
	case DTYPE_IQ4_NL:
	case DTYPE_IQ4_XS:
		kq_iq4_quantize(t, x, y, n);
		break;
	default:
		assert(unpack_k(t));
		quantize_k(t, x, y, n);
	}
}

void kq_dequantize(int t, const void *x, float *y, int64_t n)
{
	switch (t) {
	case DTYPE_Q4_1:
	case DTYPE_Q5_0:
	case DTYPE_Q5_1:
		dequantize_legacy(t, x, y, n);
		break;
	case DTYPE_Q8_K:
		dequantize_q8_K(x, y, n);
		break;
	case DTYPE_Q8_1:
		dequantize_q8_1(x, y, n);
		break;
	case DTYPE_IQ4_NL:
	case DTYPE_IQ4_XS:
		kq_iq4_dequantize(t, x, y, n);
		break;
	default:
		assert(unpack_k(t));
		dequantize_k(t, x, y, n);
	}
}

/* ------------------------------------------------- packed groups (Q4_K) */

/* pack16 of Q4_K and Q5_K (layout: kquants.h KQ_P16_*): per group of 16
 * rows and per super-block, the 16 rows' d and dmin, their decoded 6-bit
 * scales and mins, then the nibbles regrouped so that one 64-byte vector
 * holds a 4-element group of every row (low nibbles) and the next group
 * (high); Q5_K then the fifth bits, 8 groups to a byte. */
static void pack16_q45_K(const void *W, size_t rb, int64_t rows, int64_t n, void *P, bool five)
{
	const int64_t nsb = n / QK_K;
	const size_t bb = five ? sizeof(block_q5_K) : sizeof(block_q4_K);
	const size_t ob = five ? KQ_P16_Q5K_BYTES : KQ_P16_Q4K_BYTES;
	const size_t qoff = five ? 48 : 16; /* Q5_K: qh[32] before qs */
	uint8_t *o = P;
	for (int64_t g = 0; g < rows / 16; g++) {
		for (int64_t b = 0; b < nsb; b++, o += ob) {
			for (int i = 0; i < 16; i++) {
				const uint8_t *k = (const uint8_t *)W + (size_t)(16 * g + i) * rb +
						   (size_t)b * bb;
				const uint8_t *qs = k + qoff;
				memcpy(o + KQ_P16_D + 2 * i, k, 2);
				memcpy(o + KQ_P16_DMIN + 2 * i, k + 2, 2);
				for (int s = 0; s < 8; s++) {
					uint8_t sc, m;
					kq_scale_min_k4(k + 4, s, &sc, &m);
					o[KQ_P16_SC + 16 * s + i] = sc;
					o[KQ_P16_MN + 32 * (s / 2) + 2 * i + (s & 1)] = m;
				}
				/* element 64 c + l is qs[32 c + l] & 15, 64 c + 32 + l
				 * its high nibble; Q5_K's fifth bit of element 32 s + l
				 * is bit s of qh[l] */
				uint8_t q[QK_K];
				for (int c = 0; c < 4; c++)
					for (int l = 0; l < 32; l++) {
						q[64 * c + l] = qs[32 * c + l] & 15;
						q[64 * c + 32 + l] = qs[32 * c + l] >> 4;
					}
				for (int e = 0; e < QK_K; e += 8)
					for (int j = 0; j < 4; j++)
						o[KQ_P16_QS + 64 * (e / 8) + 4 * i + j] =
							(uint8_t)(q[e + j] | q[e + 4 + j] << 4);
				if (!five)
					continue;
				for (int s = 0; s < 8; s++)
					for (int j = 0; j < 4; j++) {
						unsigned h = 0;
						for (int gq = 0; gq < 8; gq++)
							h |= ((k[16 + 4 * gq + j] >> s) & 1u) << gq;
						o[KQ_P16_Q5K_QH + 64 * s + 4 * i + j] = (uint8_t)h;
					}
			}
		}
	}
}

void kq_pack16_q4_K(const void *W, size_t rb, int64_t rows, int64_t n, void *P)
{
	pack16_q45_K(W, rb, rows, n, P, false);
}

void kq_pack16_q5_K(const void *W, size_t rb, int64_t rows, int64_t n, void *P)
{
	pack16_q45_K(W, rb, rows, n, P, true);
}

/* pack16 of Q6_K (layout: kquants.h KQ_P16_Q6K_*): per group of 16 rows
 * and per super-block, the rows' d and int8 scales, then per sub-block of
 * 16 the low nibbles of two 4-element groups a byte and the high 2 bits of
 * four groups a byte, 16 rows a vector. */
void kq_pack16_q6_K(const void *W, size_t rb, int64_t rows, int64_t n, void *P)
{
	const int64_t nsb = n / QK_K;
	uint8_t *o = P;
	for (int64_t g = 0; g < rows / 16; g++) {
		for (int64_t b = 0; b < nsb; b++, o += KQ_P16_Q6K_BYTES) {
			for (int i = 0; i < 16; i++) {
				const uint8_t *k = (const uint8_t *)W + (size_t)(16 * g + i) * rb +
						   (size_t)b * sizeof(block_q6_K);
				int8_t q[QK_K];
				int sc[16], mn[16];
				float d, dmin;
				unpack_q6_K(k, q, sc, mn, &d, &dmin);
				memcpy(o + KQ_P16_Q6K_D + 2 * i, k + 208, 2);
				for (int s = 0; s < 16; s++) {
					o[KQ_P16_Q6K_SC + 16 * s + i] = (uint8_t)sc[s];
					for (int j = 0; j < 4; j++) {
						int e = 16 * s + j;
						/* the 6-bit quants q + 32 in 0..63 */
						int u0 = q[e] + 32, u1 = q[e + 4] + 32;
						int u2 = q[e + 8] + 32, u3 = q[e + 12] + 32;
						uint8_t *lo = o + KQ_P16_Q6K_QL + 128 * s + 4 * i + j;
						lo[0] = (uint8_t)((u0 & 15) | (u1 & 15) << 4);
						lo[64] = (uint8_t)((u2 & 15) | (u3 & 15) << 4);
						o[KQ_P16_Q6K_QH + 64 * s + 4 * i + j] =
							(uint8_t)(u0 >> 4 | (u1 >> 4) << 2 | (u2 >> 4) << 4 |
								  (u3 >> 4) << 6);
					}
				}
			}
		}
	}
}
