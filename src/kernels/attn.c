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
 * time for independent chains), the softmax too (each lane's max, expf
 * and sequential sum are its query's, and the 16 sums are independent
 * chains), the weighted sum with one element i per lane, 4 queries (AVX2:
 * 2) per pass over the keys they share so that each value row is
 * converted once for them and 16 accumulators are in flight; each query's
 * own last keys (the causal tail) continue its sums from where the pass
 * stored them. So every level gives the same bits as the scalar
 * reference, and a batched prefill the same bits as decode, whatever the
 * other queries of the batch.
 *
 * Every KV cache type (kernels.h kv_type_t) runs the same arithmetic on
 * the cache's elements converted to float (exact): the keys of a block of
 * four positions converted once into a scratch row per block, the values
 * converted in the vector loads of the weighted sum.
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
static int attn_core_generic(kv_type_t kt, const float *q, int64_t qs, const uint8_t *K,
			     const uint8_t *V, size_t rb, float *out, int64_t os,
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
			const uint8_t *k = K + (size_t)t * rb;
			float dot = 0.0f;
			for (int64_t i = 0; i < hd; i++)
				dot += qj[i] * kv_elem(kt, k, i);
			s[t] = dot / scale;
		}
		softmax(s, pos + 1);
		float *o = out + j * os;
		memset(o, 0, (size_t)hd * sizeof *o);
		for (int32_t t = 0; t <= pos; t++) {
			const uint8_t *v = V + (size_t)t * rb;
			float a = s[t];
			for (int64_t i = 0; i < hd; i++)
				o[i] += a * kv_elem(kt, v, i);
		}
	}
	return 0;
}

int attn_rows_kv_generic(kv_type_t kt, const float *q, int64_t qs, const void *K,
			 const void *V, size_t rb, float *out, int64_t os, int64_t hd,
			 int32_t pos0, int32_t nq)
{
	return attn_core_generic(kt, q, qs, K, V, rb, out, os, hd, pos0, nq, 1);
}

int attn_rows_heads_kv_generic(kv_type_t kt, const float *q, int64_t qs, const void *K,
			       const void *V, size_t rb, float *out, int64_t os, int64_t hd,
			       int32_t pos, int32_t nh)
{
	return attn_core_generic(kt, q, qs, K, V, rb, out, os, hd, pos, nh, 0);
}

int attn_rows_generic(const float *q, int64_t qs, const float *K,
		      const float *V, int64_t kvs, float *out, int64_t os,
		      int64_t hd, int32_t pos0, int32_t nq)
{
	return attn_core_generic(KV_F32, q, qs, (const uint8_t *)K, (const uint8_t *)V,
				 (size_t)kvs * sizeof(float), out, os, hd, pos0, nq, 1);
}

int attn_rows_heads_generic(const float *q, int64_t qs, const float *K,
			    const float *V, int64_t kvs, float *out, int64_t os,
			    int64_t hd, int32_t pos, int32_t nh)
{
	return attn_core_generic(KV_F32, q, qs, (const uint8_t *)K, (const uint8_t *)V,
				 (size_t)kvs * sizeof(float), out, os, hd, pos, nh, 0);
}

/* The table entries of one KV type: tag f32, f16 or q8_0, level lv. */
#define ATTN_ROWS_KERNELS(tag, KT, lv, ATTR)                                              \
	ATTR int attn_rows_##tag##_##lv(const float *q, int64_t qs, const void *K,           \
					const void *V, size_t rb, float *out, int64_t os,    \
					int64_t hd, int32_t pos0, int32_t nq)                \
	{                                                                                    \
		return attn_core_##lv(KT, q, qs, K, V, rb, out, os, hd, pos0, nq, 1);        \
	}                                                                                    \
	ATTR int attn_rows_heads_##tag##_##lv(const float *q, int64_t qs, const void *K,     \
					      const void *V, size_t rb, float *out,          \
					      int64_t os, int64_t hd, int32_t pos, int32_t nh) \
	{                                                                                    \
		return attn_core_##lv(KT, q, qs, K, V, rb, out, os, hd, pos, nh, 0);         \
	}
#define ATTN_ROWS_LEVEL(lv, ATTR)                   \
	ATTN_ROWS_KERNELS(f32, KV_F32, lv, ATTR)    \
	ATTN_ROWS_KERNELS(f16, KV_F16, lv, ATTR)    \
	ATTN_ROWS_KERNELS(q8_0, KV_Q8_0, lv, ATTR)

ATTN_ROWS_LEVEL(generic, )

/* --------------------------------------------------------------- SIMD */

#if defined(__x86_64__)
#include "kernels/simd_x86.h"
/* AVX-512: 16 lanes, any vector register; halves by vcvtph2ps, Q8_0
 * quants sign-extended to int32 and converted */
#define ATTN_W 16
#define ATTN_SUFFIX avx512
#define ATTN_TARGET X86_AVX512_FEATURES
#define ATTN_ROUNDED(v) __asm__("" : "+v"(v))
#define ATTN_LD_F16(p) ((VT)_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p))))
#define ATTN_LD_Q8(p) \
	((VT)_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p)))))
#include "kernels/attn_tmpl.h"
ATTN_ROWS_LEVEL(avx512, __attribute__((target(X86_AVX512_FEATURES))))
/* AVX2: 8 lanes, 16 vector registers: 2 queries per weighted-sum pass */
#define ATTN_W 8
#define ATTN_QB 2
#define ATTN_SUFFIX avx2
#define ATTN_TARGET X86_AVX2_FEATURES
#define ATTN_ROUNDED(v) __asm__("" : "+x"(v))
#define ATTN_LD_F16(p) ((VT)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p))))
#define ATTN_LD_Q8(p) \
	((VT)_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(p)))))
#include "kernels/attn_tmpl.h"
ATTN_ROWS_LEVEL(avx2, __attribute__((target(X86_AVX2_FEATURES))))
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
/* NEON (both ARM64 levels): 4 lanes; halves by fcvtl, Q8_0 quants
 * widened twice and converted (4 bytes read: a row may end there) */
#define ATTN_W 4
#define ATTN_SUFFIX neon
#define ATTN_TARGET "+simd"
#define ATTN_ROUNDED(v) __asm__("" : "+w"(v))
#define ATTN_LD_F16(p) ((VT)vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)(p)))))
#define ATTN_LD_Q8(p)                                                                       \
	((VT)vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(vreinterpret_s8_u32(vdup_n_u32(  \
		ld_u32(p))))))))
#include "kernels/attn_tmpl.h"
ATTN_ROWS_LEVEL(neon, __attribute__((target("+simd"))))
#endif

/* The level in use's instance (its table's kv[kt] entries; looked up per
 * call: tests switch levels with kernels_set_isa). */
int attn_rows_kv(kv_type_t kt, const float *q, int64_t qs, const void *K, const void *V,
		 size_t rb, float *out, int64_t os, int64_t hd, int32_t pos0, int32_t nq)
{
	if (nq <= 0)
		return 0;
	return kernels_ops()->kv[kt].attn_rows(q, qs, K, V, rb, out, os, hd, pos0, nq);
}

int attn_rows_heads_kv(kv_type_t kt, const float *q, int64_t qs, const void *K,
		       const void *V, size_t rb, float *out, int64_t os, int64_t hd,
		       int32_t pos, int32_t nh)
{
	if (nh <= 0)
		return 0;
	return kernels_ops()->kv[kt].attn_rows_heads(q, qs, K, V, rb, out, os, hd, pos, nh);
}

int attn_rows(const float *q, int64_t qs, const float *K, const float *V,
	      int64_t kvs, float *out, int64_t os, int64_t hd, int32_t pos0,
	      int32_t nq)
{
	return attn_rows_kv(KV_F32, q, qs, K, V, (size_t)kvs * sizeof(float), out, os, hd, pos0,
			    nq);
}

int attn_rows_heads(const float *q, int64_t qs, const float *K, const float *V,
		    int64_t kvs, float *out, int64_t os, int64_t hd, int32_t pos,
		    int32_t nh)
{
	return attn_rows_heads_kv(KV_F32, q, qs, K, V, (size_t)kvs * sizeof(float), out, os, hd,
				  pos, nh);
}
