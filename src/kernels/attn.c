/* attn: causal attention of a batch of query positions of one head against
 * the KV cache (prefill; the "matrix-matrix" block of kernels.h).
 *
 * Per query the arithmetic is the decode path's (forward.c attn_head):
 *   dot_t = sum_i q[i] * k_t[i]   sequential in i, from 0, product rounded
 *                                 then added (no FMA)
 *   s_t   = dot_t / sqrt(hd);  softmax(s) (kernels.h);
 *   o[i]  = sum_t s_t * v_t[i]    sequential in t, from 0, no FMA.
 * The SIMD form keeps that order lane by lane: the dots run with one query
 * per lane (16 queries of the batch, the keys broadcast, four keys at a
 * time for independent chains), the weighted sum with one element i per
 * lane. So every level gives the same bits as the scalar reference, and a
 * batched prefill the same bits as decode.
 *
 * attn_rows_heads puts the query heads of one KV head at one position in
 * the lanes instead (grouped-query attention in a decode batch: the keys
 * and values read once for the heads, the lanes filled by heads rather
 * than one query in sixteen); each lane's arithmetic is the same.
 *
 * One source for the AVX-512, AVX2 and NEON levels (attn_tmpl.h): GCC vector
 * extensions of 16, 8 or 4 floats inside functions with each level's target
 * attribute; the level tables name the instances (attn_rows_avx512 serves
 * both AVX-512 levels, attn_rows_neon both ARM64 levels). */
#include "kernels/gemm_impl.h"

#include <math.h>

#include "base/alloc.h"

/* ---------------------------------------------------------- reference */

/* Query j at position pos0 + j * step (attn_tmpl.h attn_core). */
static int attn_core_generic(const float *q, int64_t qs, const float *K,
			     const float *V, int64_t kvs, float *out, int64_t os,
			     int64_t hd, int32_t pos0, int32_t nq, int32_t step)
{
	/* eg_alloc_fault: the scratch is an allocation point of the
	 * failure hook (base/alloc.h) like any other */
	float *s = eg_alloc_fault()
			   ? NULL
			   : gemm_scratch(0, (size_t)(pos0 + (nq - 1) * step + 1) * sizeof(float));
	if (!s)
		return -1;
	float scale = sqrtf((float)hd);
	for (int32_t j = 0; j < nq; j++) {
		const float *qj = q + j * qs;
		int32_t pos = pos0 + j * step;
		for (int32_t t = 0; t <= pos; t++) {
			const float *k = K + (size_t)t * kvs;
			float dot = 0.0f;
			for (int64_t i = 0; i < hd; i++)
				dot += qj[i] * k[i];
			s[t] = dot / scale;
		}
		softmax(s, pos + 1);
		float *o = out + j * os;
		memset(o, 0, (size_t)hd * sizeof *o);
		for (int32_t t = 0; t <= pos; t++) {
			const float *v = V + (size_t)t * kvs;
			float a = s[t];
			for (int64_t i = 0; i < hd; i++)
				o[i] += a * v[i];
		}
	}
	return 0;
}

int attn_rows_generic(const float *q, int64_t qs, const float *K,
		      const float *V, int64_t kvs, float *out, int64_t os,
		      int64_t hd, int32_t pos0, int32_t nq)
{
	return attn_core_generic(q, qs, K, V, kvs, out, os, hd, pos0, nq, 1);
}

int attn_rows_heads_generic(const float *q, int64_t qs, const float *K,
			    const float *V, int64_t kvs, float *out, int64_t os,
			    int64_t hd, int32_t pos, int32_t nh)
{
	return attn_core_generic(q, qs, K, V, kvs, out, os, hd, pos, nh, 0);
}

/* --------------------------------------------------------------- SIMD */

#if defined(__x86_64__)
#include "kernels/simd_x86.h"
/* AVX-512: 16 lanes, any vector register */
#define ATTN_W 16
#define ATTN_SUFFIX avx512
#define ATTN_TARGET X86_AVX512_FEATURES
#define ATTN_ROUNDED(v) __asm__("" : "+v"(v))
#include "kernels/attn_tmpl.h"
/* AVX2: 8 lanes */
#define ATTN_W 8
#define ATTN_SUFFIX avx2
#define ATTN_TARGET X86_AVX2_FEATURES
#define ATTN_ROUNDED(v) __asm__("" : "+x"(v))
#include "kernels/attn_tmpl.h"
#endif
#if defined(__aarch64__)
/* NEON (both ARM64 levels): 4 lanes */
#define ATTN_W 4
#define ATTN_SUFFIX neon
#define ATTN_TARGET "+simd"
#define ATTN_ROUNDED(v) __asm__("" : "+w"(v))
#include "kernels/attn_tmpl.h"
#endif

/* The level in use's instance (its table's attn_rows / attn_rows_heads;
 * looked up per call: tests switch levels with kernels_set_isa). */
int attn_rows(const float *q, int64_t qs, const float *K, const float *V,
	      int64_t kvs, float *out, int64_t os, int64_t hd, int32_t pos0,
	      int32_t nq)
{
	if (nq <= 0)
		return 0;
	return kernels_ops()->attn_rows(q, qs, K, V, kvs, out, os, hd, pos0, nq);
}

int attn_rows_heads(const float *q, int64_t qs, const float *K, const float *V,
		    int64_t kvs, float *out, int64_t os, int64_t hd, int32_t pos,
		    int32_t nh)
{
	if (nh <= 0)
		return 0;
	return kernels_ops()->attn_rows_heads(q, qs, K, V, kvs, out, os, hd, pos, nh);
}
