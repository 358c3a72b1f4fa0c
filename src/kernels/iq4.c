/* iq4: the generic dequantize, dot product and quantizer of IQ4_NL and
 * IQ4_XS (layouts in kquants.h): 4-bit indices into ggml's fixed
 * non-linear grid kvalues_iq4nl, a scale per 32 elements.
 *
 * Dot products (the contract of kernels_impl.h: exact integer sums, then a
 * fixed float step in ascending block order, each product rounded):
 *  IQ4_NL against Q8_0, per block of 32:
 *     sumi = sum grid[q] x (exact), acc = acc + (float)sumi * (d_w * d_x);
 *  IQ4_XS against Q8_K, per super-block of 256:
 *     sumi = sum over sub-blocks of (ls - 32) * (sum grid[q] x) (exact),
 *     then kq_k_step (no min).
 * ggml sums IQ4_XS per sub-block in float; the two differ in the last
 * bits only (bench/compare-llamacpp --check measures what that does to
 * greedy decoding). */
#include "kernels/kernels_impl.h"
#include "kernels/kquants.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

_Static_assert(sizeof(block_iq4_nl) == 18, "block_iq4_nl must be 18 bytes");
_Static_assert(sizeof(block_iq4_xs) == 136, "block_iq4_xs must be 136 bytes");

const int8_t kq_iq4_grid[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
				 1,    13,   25,  38,  53,  69,  89,  113 };

/* The 32 grid values of a 16-byte index run (element j: low nibble of
 * qs[j], element j + 16: its high nibble). */
static void iq4_unpack(const uint8_t *qs, int8_t *v)
{
	for (int j = 0; j < 16; j++) {
		v[j] = kq_iq4_grid[qs[j] & 15];
		v[j + 16] = kq_iq4_grid[qs[j] >> 4];
	}
}

/* IQ4_XS sub-block ib's 6-bit scale, minus 32. */
static inline int iq4xs_scale(const block_iq4_xs *b, int ib)
{
	int lo = (b->scales_l[ib / 2] >> (4 * (ib % 2))) & 15;
	int hi = (ld_u16(&b->scales_h) >> (2 * ib)) & 3;
	return (lo | hi << 4) - 32;
}

void kq_iq4_dequantize(int t, const void *x, float *y, int64_t n)
{
	int8_t v[32];
	if (t == DTYPE_IQ4_NL) {
		for (int64_t b = 0; b < n / QK; b++) {
			const uint8_t *xb = (const uint8_t *)x + (size_t)b * sizeof(block_iq4_nl);
			float d = ld_f16(xb);
			iq4_unpack(xb + 2, v);
			for (int j = 0; j < 32; j++)
				y[b * QK + j] = d * (float)v[j];
		}
		return;
	}
	for (int64_t b = 0; b < n / QK_K; b++) {
		const block_iq4_xs *k = (const void *)((const uint8_t *)x +
						       (size_t)b * sizeof(block_iq4_xs));
		float d = ld_f16((const uint8_t *)&k->d);
		for (int ib = 0; ib < 8; ib++) {
			float dl = d * (float)iq4xs_scale(k, ib);
			iq4_unpack(k->qs + 16 * ib, v);
			for (int j = 0; j < 32; j++)
				y[b * QK_K + 32 * ib + j] = dl * (float)v[j];
		}
	}
}

float kq_iq4_dot_generic(int t, const void *w, const void *xa, int64_t n)
{
	int8_t v[32];
	float acc = 0.0f;
	if (t == DTYPE_IQ4_NL) {
		for (int64_t b = 0; b < n / QK; b++) {
			const uint8_t *wb = (const uint8_t *)w + (size_t)b * sizeof(block_iq4_nl);
			const uint8_t *x = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_0);
			iq4_unpack(wb + 2, v);
			int32_t sumi = 0;
			for (int j = 0; j < 32; j++)
				sumi += (int32_t)v[j] * (int8_t)x[2 + j];
			float dd = ld_f16(wb) * ld_f16(x);
			float p = (float)sumi * dd;
			FP_ROUNDED(p);
			acc = acc + p;
		}
		return acc;
	}
	for (int64_t b = 0; b < n / QK_K; b++) {
		const block_iq4_xs *k = (const void *)((const uint8_t *)w +
						       (size_t)b * sizeof(block_iq4_xs));
		const uint8_t *x = (const uint8_t *)xa + (size_t)b * sizeof(block_q8_K);
		int32_t sumi = 0;
		for (int ib = 0; ib < 8; ib++) {
			iq4_unpack(k->qs + 16 * ib, v);
			int32_t s = 0;
			for (int j = 0; j < 32; j++)
				s += (int32_t)v[j] * (int8_t)x[4 + 32 * ib + j];
			sumi += iq4xs_scale(k, ib) * s;
		}
		acc = kq_k_step(acc, ld_f32(x), ld_f16((const uint8_t *)&k->d), 0.0f, sumi, 0, 0);
	}
	return acc;
}

/* ---- quantizer ----
 *
 * Per group of 32 values: the grid index nearest to x / d for a trial
 * scale d, then the least-squares scale for those indices (weights x^2,
 * so large values count most), keeping the best of 15 trial scales around
 * max / grid[0] (max: the value of largest magnitude, sign kept, so the
 * grid's longer negative end takes it). The method is ggml's
 * (quantize_row_iq4_nl_impl without an importance matrix); the code is
 * this project's. */

/* The grid index nearest to v, ties to the larger (a NaN: 15), by
 * comparing distances. Slow (branchy); it fills the table below. */
static int iq4_nearest_ref(float v)
{
	if (v <= kq_iq4_grid[0])
		return 0;
	if (v >= kq_iq4_grid[15])
		return 15;
	int lo = 0, hi = 15; /* grid[lo] <= v < grid[hi] */
	while (hi - lo > 1) {
		int mid = (lo + hi) / 2;
		if (v < kq_iq4_grid[mid])
			hi = mid;
		else
			lo = mid;
	}
	return v - kq_iq4_grid[lo] < kq_iq4_grid[hi] - v ? lo : hi;
}

/* The grid's points are integers, so the midpoints where the nearest
 * index changes are multiples of 1/2: no half-open cell [c/2, c/2 + 1/2)
 * holds one inside, and every v in a cell has the nearest index of its
 * start (a tie at the start goes to the larger index, as in the reference;
 * the distances there are exact in float). One lookup per value instead
 * of a search: the quantizer asks 15 times per weight. */
static uint8_t iq4_cell[512]; /* cell c: v in [(c - 256) / 2, (c - 255) / 2) */
static pthread_once_t iq4_cell_once = PTHREAD_ONCE_INIT;

static void iq4_cell_fill(void)
{
	for (int c = 0; c < 512; c++)
		iq4_cell[c] = (uint8_t)iq4_nearest_ref((float)(c - 256) * 0.5f);
}

static inline int iq4_nearest(float v)
{
	if (!(v >= -128.0f)) /* below the grid, or a NaN */
		return v != v ? 15 : 0;
	if (v >= 127.5f)
		return 15;
	return iq4_cell[(int)floorf(2.0f * v) + 256];
}

/* Indices of x[0..31] for scale d (0: all zero), and the scale. */
static float iq4_group(const float *x, uint8_t *idx)
{
	float amax = 0.0f, max = 0.0f;
	for (int j = 0; j < 32; j++)
		if (fabsf(x[j]) > amax) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	if (amax < 1e-30f) {
		memset(idx, iq4_nearest(0.0f), 32);
		return 0.0f;
	}
	float best_d = max / kq_iq4_grid[0], best = -1.0f;
	uint8_t trial[32];
	for (int itry = -7; itry <= 7; itry++) {
		float id = ((float)itry + kq_iq4_grid[0]) / max;
		float sxv = 0.0f, svv = 0.0f;
		for (int j = 0; j < 32; j++) {
			trial[j] = (uint8_t)iq4_nearest(id * x[j]);
			float w = x[j] * x[j], v = kq_iq4_grid[trial[j]];
			sxv += w * x[j] * v;
			svv += w * v * v;
		}
		if (svv > 0.0f && sxv * sxv > best * svv) {
			best = sxv * sxv / svv;
			best_d = sxv / svv;
			memcpy(idx, trial, 32);
		}
	}
	if (best < 0.0f) /* no trial fitted: the plain scale */
		for (int j = 0; j < 32; j++)
			idx[j] = (uint8_t)iq4_nearest(x[j] / best_d);
	return best_d;
}

static void iq4_pack(const uint8_t *idx, uint8_t *qs)
{
	for (int j = 0; j < 16; j++)
		qs[j] = (uint8_t)(idx[j] | idx[j + 16] << 4);
}

/* Indices of x[0..31] for a fixed scale d. */
static void iq4_index(const float *x, float d, uint8_t *idx)
{
	float id = d != 0.0f ? 1.0f / d : 0.0f;
	for (int j = 0; j < 32; j++)
		idx[j] = (uint8_t)iq4_nearest(id * x[j]);
}

void kq_iq4_quantize(int t, const float *x, void *yv, int64_t n)
{
	uint8_t idx[32];
	pthread_once(&iq4_cell_once, iq4_cell_fill);
	if (t == DTYPE_IQ4_NL) {
		for (int64_t b = 0; b < n / QK; b++) {
			uint8_t *y = (uint8_t *)yv + (size_t)b * sizeof(block_iq4_nl);
			float d = iq4_group(x + b * QK, idx);
			/* the indices again for the scale as stored */
			uint16_t dh = f32_to_fp16_inline(d);
			iq4_index(x + b * QK, fp16_to_f32_inline(dh), idx);
			st_u16(y, dh);
			iq4_pack(idx, y + 2);
		}
		return;
	}
	for (int64_t b = 0; b < n / QK_K; b++) {
		const float *xb = x + b * QK_K;
		block_iq4_xs k;
		memset(&k, 0, sizeof k);
		float sc[8], max_sc = 0.0f;
		for (int ib = 0; ib < 8; ib++) {
			sc[ib] = iq4_group(xb + 32 * ib, idx);
			if (fabsf(sc[ib]) > fabsf(max_sc))
				max_sc = sc[ib];
		}
		/* 6-bit scales l in -32 .. 31: d = -max / 32 maps the largest
		 * to -32 (the longer end) */
		uint16_t dh = f32_to_fp16_inline(-max_sc / 32.0f);
		float d = fp16_to_f32_inline(dh), id = d != 0.0f ? 1.0f / d : 0.0f;
		uint16_t sh = 0;
		for (int ib = 0; ib < 8; ib++) {
			int l = (int)lrintf(fminf(fmaxf(id * sc[ib], -32.0f), 31.0f));
			iq4_index(xb + 32 * ib, d * (float)l, idx);
			iq4_pack(idx, k.qs + 16 * ib);
			k.scales_l[ib / 2] |= (uint8_t)(((l + 32) & 15) << (4 * (ib % 2)));
			sh |= (uint16_t)(((l + 32) >> 4) << (2 * ib));
		}
		st_u16(&k.d, dh);
		st_u16(&k.scales_h, sh);
		memcpy((uint8_t *)yv + (size_t)b * sizeof k, &k, sizeof k);
	}
}
