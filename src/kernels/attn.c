/* attn: causal attention of a batch of query positions of the query heads
 * of one KV head against the KV cache (prefill; the "matrix-matrix" block of kernels.h).
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
 * 2) per pass over the keys they share so that each value vector loaded
 * serves them all and 16 accumulators are in flight; each query's
 * own last keys (the causal tail) continue its sums from where the pass
 * stored them. So every level gives the same bits as the scalar
 * reference, and a batched prefill the same bits as decode, whatever the
 * other queries of the batch.
 *
 * Every KV cache type (kernels.h kv_type_t) runs the same arithmetic on
 * the cache's elements converted to float (exact). A call takes the query
 * heads of one KV head (attn_rows_group_kv; a prompt's attention chunk is
 * up to 4 heads x 16 queries): the keys are converted a block of four
 * rows at a time into a scratch row each and serve every (head, group of
 * queries) block before the next four, and the values a tile of rows at a
 * time (16 KiB of floats) whose weighted sums run for every block before
 * the next tile, each query's sums continuing from the previous tile's
 * (the adds stay sequential in t). So each key and value row is converted
 * once per call, not once per query head and group, and is read from the
 * cache once while it is in L1.
 *
 * attn_rows_heads (the query heads of one KV head at one position: a
 * decode token in a batch) is the decode kernel on x86 (attention_heads_kv
 * of kernels_avx512.c and kernels_avx2.c: positions in the lanes, each key
 * and value row converted once for 4 heads); the NEON level puts the
 * heads in the lanes of this file's kernel instead (the lanes filled by
 * heads rather than one query in sixteen). Each head's arithmetic is the
 * same.
 *
 * One source for the AVX-512, AVX2 and NEON levels (attn_tmpl.h): GCC vector
 * extensions of 16, 8 or 4 floats inside functions with each level's target
 * attribute; the level tables name the instances (attn_rows_avx512 serves
 * both AVX-512 levels, attn_rows_neon both ARM64 levels). */
#include "kernels/gemm_impl.h"

#include <math.h>

#include "base/alloc.h"

/* --------------------------------------------------- expf in vectors */

#if defined(__x86_64__)
#include <pthread.h>

#include "kernels/simd_x86.h"
#include "kernels/vexp_x86.h"

/* glibc's table for vexp_x86.h (the values of its __exp2f_data). */
const uint64_t attn_vexp_tab[32] = {
	0x3ff0000000000000u, 0x3fefd9b0d3158574u, 0x3fefb5586cf9890fu,
	0x3fef9301d0125b51u, 0x3fef72b83c7d517bu, 0x3fef54873168b9aau,
	0x3fef387a6e756238u, 0x3fef1e9df51fdee1u, 0x3fef06fe0a31b715u,
	0x3feef1a7373aa9cbu, 0x3feedea64c123422u, 0x3feece086061892du,
	0x3feebfdad5362a27u, 0x3feeb42b569d4f82u, 0x3feeab07dd485429u,
	0x3feea47eb03a5585u, 0x3feea09e667f3bcdu, 0x3fee9f75e8ec5f74u,
	0x3feea11473eb0187u, 0x3feea589994cce13u, 0x3feeace5422aa0dbu,
	0x3feeb737b0cdc5e5u, 0x3feec49182a3f090u, 0x3feed503b23e255du,
	0x3feee89f995ad3adu, 0x3feeff76f2fb5e47u, 0x3fef199bdd85529cu,
	0x3fef3720dcef9069u, 0x3fef5818dcfba487u, 0x3fef7c97337b9b5fu,
	0x3fefa4afa2a490dau, 0x3fefd0765b6e4540u,
};

/* vexp_lanes_* as calls, for the probe */
static __attribute__((noinline, target(X86_AVX512_FEATURES))) void vexp_call_avx512(float *e)
{
	vexp_lanes_avx512(e);
}
static __attribute__((noinline, target(X86_AVX2_FEATURES))) void vexp_call_avx2(float *e)
{
	vexp_lanes_avx2(e);
}

static pthread_once_t g_vexp_once = PTHREAD_ONCE_INIT;
static bool g_vexp_ok;

/* Whether the vector forms give this process's expf bits on a probe: 2^16
 * floats spread over [-104, 89] with random low bits, on both forms where
 * the CPU runs them. A libm built another way (without FMA, another
 * algorithm) differs on many of them, and then expf itself is used. */
static void vexp_probe(void)
{
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
		return;
	bool has512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
	uint32_t seed = 12345u;
	bool ok = true;
	for (int k = 0; k < 4096 && ok; k++) {
		float x[16], a[16], b[16];
		for (int j = 0; j < 16; j++) {
			seed = seed * 1664525u + 1013904223u;
			float v = -104.0f + 193.0f * (float)(k * 16 + j) / 65536.0f;
			uint32_t u;
			memcpy(&u, &v, 4);
			u ^= seed >> 20; /* random low 12 bits */
			memcpy(&x[j], &u, 4);
			a[j] = b[j] = x[j];
		}
		vexp_call_avx2(a);
		vexp_call_avx2(a + 8);
		if (has512)
			vexp_call_avx512(b);
		for (int j = 0; j < 16; j++) {
			float e = expf(x[j]);
			ok &= memcmp(&e, &a[j], 4) == 0 && (!has512 || memcmp(&e, &b[j], 4) == 0);
		}
	}
	g_vexp_ok = ok;
}

/* Whether vexp_lanes_* may stand for expf in this process (probed once). */
bool attn_vexp_ok(void)
{
	pthread_once(&g_vexp_once, vexp_probe);
	return g_vexp_ok;
}
#endif

/* 16 floats at a time by the vector form of the level in use where it
 * has one and the probe agreed, else by expf. */
int attn_expf_rows(const float *x, float *y, int64_t n)
{
	const char *isa = kernels_isa();
	int w = 0;
#if defined(__x86_64__)
	if (attn_vexp_ok())
		w = strncmp(isa, "avx512", 6) == 0 ? 16 : strcmp(isa, "avx2") == 0 ? 8 : 0;
#else
	(void)isa;
#endif
	int64_t i = 0;
	for (; w && i + w <= n; i += w) {
		memcpy(y + i, x + i, (size_t)w * sizeof *y);
#if defined(__x86_64__)
		if (w == 16)
			vexp_call_avx512(y + i);
		else
			vexp_call_avx2(y + i);
#endif
	}
	for (; i < n; i++)
		y[i] = expf(x[i]);
	return w;
}

/* ---------------------------------------------------------- reference */

/* Key and value rows a tile of the reference converts at once. */
#define ATTN_GENERIC_TILE 64

/* nh heads of nq queries each (attn_tmpl.h attn_core: head h's query j
 * at q + h * qh + j * qs, position pos0 + j * step, output out + h * oh +
 * j * os), per query the decode path's scalar arithmetic: each tile of
 * key rows converted once (kv_elem) for the dots of every query, then
 * each query's softmax, then each tile of value rows converted once for
 * every query's weighted sum, which continues from tile to tile in t
 * order. */
static int attn_core_generic(kv_type_t kt, const float *q, int64_t qs, int64_t qh,
			     const uint8_t *K, const uint8_t *V, size_t rb, float *out, int64_t os,
			     int64_t oh, int64_t hd, int32_t pos0, int32_t nq, int32_t step,
			     int32_t nh)
{
	const int32_t npos = pos0 + (nq - 1) * step + 1; /* the last query's keys */
	const size_t ns = (size_t)nh * (size_t)nq * (size_t)npos;
	/* eg_alloc_fault: the scratch is an allocation point of the
	 * failure hook (base/alloc.h) like any other */
	float *s = eg_alloc_fault()
			   ? NULL
			   : gemm_scratch(0, (ns + (size_t)ATTN_GENERIC_TILE * (size_t)hd) *
						     sizeof(float));
	if (!s)
		return -1;
	float *rows = s + ns; /* the tile's rows as floats */
	const float scale = sqrtf((float)hd);
	for (int32_t t0 = 0; t0 < npos; t0 += ATTN_GENERIC_TILE) {
		int32_t t1 = t0 + ATTN_GENERIC_TILE < npos ? t0 + ATTN_GENERIC_TILE : npos;
		for (int32_t t = t0; t < t1; t++)
			for (int64_t i = 0; i < hd; i++)
				rows[(t - t0) * hd + i] = kv_elem(kt, K + (size_t)t * rb, i);
		for (int32_t h = 0; h < nh; h++)
			for (int32_t j = 0; j < nq; j++) {
				const float *qj = q + h * qh + j * qs;
				float *sj = s + ((size_t)h * (size_t)nq + (size_t)j) * (size_t)npos;
				int32_t pos = pos0 + j * step;
				for (int32_t t = t0; t < t1 && t <= pos; t++) {
					const float *k = rows + (t - t0) * hd;
					float dot = 0.0f;
					for (int64_t i = 0; i < hd; i++)
						dot += qj[i] * k[i];
					sj[t] = dot / scale;
				}
			}
	}
	for (int32_t h = 0; h < nh; h++)
		for (int32_t j = 0; j < nq; j++) {
			softmax(s + ((size_t)h * (size_t)nq + (size_t)j) * (size_t)npos,
				pos0 + j * step + 1);
			memset(out + h * oh + j * os, 0, (size_t)hd * sizeof *out);
		}
	for (int32_t t0 = 0; t0 < npos; t0 += ATTN_GENERIC_TILE) {
		int32_t t1 = t0 + ATTN_GENERIC_TILE < npos ? t0 + ATTN_GENERIC_TILE : npos;
		for (int32_t t = t0; t < t1; t++)
			for (int64_t i = 0; i < hd; i++)
				rows[(t - t0) * hd + i] = kv_elem(kt, V + (size_t)t * rb, i);
		for (int32_t h = 0; h < nh; h++)
			for (int32_t j = 0; j < nq; j++) {
				const float *sj = s + ((size_t)h * (size_t)nq + (size_t)j) * (size_t)npos;
				float *o = out + h * oh + j * os;
				int32_t pos = pos0 + j * step;
				for (int32_t t = t0; t < t1 && t <= pos; t++) {
					const float *v = rows + (t - t0) * hd;
					float a = sj[t];
					for (int64_t i = 0; i < hd; i++)
						o[i] += a * v[i];
				}
			}
	}
	return 0;
}

int attn_rows_group_kv_generic(kv_type_t kt, const float *q, int64_t qs, int64_t qh,
			       const void *K, const void *V, size_t rb, float *out, int64_t os,
			       int64_t oh, int64_t hd, int32_t pos0, int32_t nq, int32_t nh)
{
	if (nq <= 0 || nh <= 0)
		return 0;
	return attn_core_generic(kt, q, qs, qh, K, V, rb, out, os, oh, hd, pos0, nq, 1, nh);
}

int attn_rows_kv_generic(kv_type_t kt, const float *q, int64_t qs, const void *K,
			 const void *V, size_t rb, float *out, int64_t os, int64_t hd,
			 int32_t pos0, int32_t nq)
{
	return attn_rows_group_kv_generic(kt, q, qs, 0, K, V, rb, out, os, 0, hd, pos0, nq, 1);
}

int attn_rows_heads_kv_generic(kv_type_t kt, const float *q, int64_t qs, const void *K,
			       const void *V, size_t rb, float *out, int64_t os, int64_t hd,
			       int32_t pos, int32_t nh)
{
	if (nh <= 0)
		return 0;
	return attn_core_generic(kt, q, qs, 0, K, V, rb, out, os, 0, hd, pos, nh, 0, 1);
}

int attn_rows_generic(const float *q, int64_t qs, const float *K,
		      const float *V, int64_t kvs, float *out, int64_t os,
		      int64_t hd, int32_t pos0, int32_t nq)
{
	return attn_rows_kv_generic(KV_F32, q, qs, K, V, (size_t)kvs * sizeof(float), out, os,
				    hd, pos0, nq);
}

int attn_rows_heads_generic(const float *q, int64_t qs, const float *K,
			    const float *V, int64_t kvs, float *out, int64_t os,
			    int64_t hd, int32_t pos, int32_t nh)
{
	return attn_rows_heads_kv_generic(KV_F32, q, qs, K, V, (size_t)kvs * sizeof(float), out,
					  os, hd, pos, nh);
}

/* The table entries of one KV type: tag f32, f16 or q8_0, level lv
 * (attn_rows: the group form, attn_rows_group_kv; attn_rows_heads where
 * the level's decode kernel does not serve it: on x86 it does,
 * kernels_avx512.c and kernels_avx2.c). */
#define ATTN_ROWS_KERNEL(tag, KT, lv, ATTR)                                               \
	ATTR int attn_rows_##tag##_##lv(const float *q, int64_t qs, int64_t qh, const void *K, \
					const void *V, size_t rb, float *out, int64_t os,    \
					int64_t oh, int64_t hd, int32_t pos0, int32_t nq,    \
					int32_t nh)                                          \
	{                                                                                    \
		return attn_core_##lv(KT, q, qs, qh, K, V, rb, out, os, oh, hd, pos0, nq, 1,  \
				      nh);                                                   \
	}
#define ATTN_HEADS_KERNEL(tag, KT, lv, ATTR)                                              \
	ATTR int attn_rows_heads_##tag##_##lv(const float *q, int64_t qs, const void *K,     \
					      const void *V, size_t rb, float *out,          \
					      int64_t os, int64_t hd, int32_t pos, int32_t nh) \
	{                                                                                    \
		return attn_core_##lv(KT, q, qs, 0, K, V, rb, out, os, 0, hd, pos, nh, 0, 1); \
	}
#define ATTN_ROWS_KERNELS(tag, KT, lv, ATTR) \
	ATTN_ROWS_KERNEL(tag, KT, lv, ATTR)  \
	ATTN_HEADS_KERNEL(tag, KT, lv, ATTR)
#define ATTN_ROWS_LEVEL(lv, ATTR)                   \
	ATTN_ROWS_KERNELS(f32, KV_F32, lv, ATTR)    \
	ATTN_ROWS_KERNELS(f16, KV_F16, lv, ATTR)    \
	ATTN_ROWS_KERNELS(q8_0, KV_Q8_0, lv, ATTR)
#define ATTN_ROWS_LEVEL_X86(lv, ATTR)              \
	ATTN_ROWS_KERNEL(f32, KV_F32, lv, ATTR)    \
	ATTN_ROWS_KERNEL(f16, KV_F16, lv, ATTR)    \
	ATTN_ROWS_KERNEL(q8_0, KV_Q8_0, lv, ATTR)

ATTN_ROWS_LEVEL(generic, )

/* --------------------------------------------------------------- SIMD */

#if defined(__x86_64__)
#include "kernels/simd_x86.h"
/* AVX-512: 16 lanes, any vector register; halves by vcvtph2ps, Q8_0
 * quants sign-extended to int32 and converted */
#define ATTN_W 16
#define ATTN_SUFFIX avx512
#define ATTN_TARGET X86_AVX512_FEATURES
#define ATTN_VEXP(x) vexp16_avx512((__m512)(x))
#define ATTN_ROUNDED(v) __asm__("" : "+v"(v))
#define ATTN_LD_F16(p) ((VT)_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p))))
#define ATTN_LD_Q8(p) \
	((VT)_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p)))))
#include "kernels/attn_tmpl.h"
ATTN_ROWS_LEVEL_X86(avx512, __attribute__((target(X86_AVX512_FEATURES))))
/* AVX2: 8 lanes, 16 vector registers: 2 queries per weighted-sum pass */
#define ATTN_W 8
#define ATTN_QB 2
#define ATTN_SUFFIX avx2
#define ATTN_TARGET X86_AVX2_FEATURES
#define ATTN_VEXP(x) vexp8_avx2((__m256)(x))
#define ATTN_ROUNDED(v) __asm__("" : "+x"(v))
#define ATTN_LD_F16(p) ((VT)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p))))
#define ATTN_LD_Q8(p) \
	((VT)_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(p)))))
#include "kernels/attn_tmpl.h"
ATTN_ROWS_LEVEL_X86(avx2, __attribute__((target(X86_AVX2_FEATURES))))
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
int attn_rows_group_kv(kv_type_t kt, const float *q, int64_t qs, int64_t qh, const void *K,
		       const void *V, size_t rb, float *out, int64_t os, int64_t oh, int64_t hd,
		       int32_t pos0, int32_t nq, int32_t nh)
{
	if (nq <= 0 || nh <= 0)
		return 0;
	return kernels_ops()->kv[kt].attn_rows(q, qs, qh, K, V, rb, out, os, oh, hd, pos0, nq,
					       nh);
}

int attn_rows_kv(kv_type_t kt, const float *q, int64_t qs, const void *K, const void *V,
		 size_t rb, float *out, int64_t os, int64_t hd, int32_t pos0, int32_t nq)
{
	return attn_rows_group_kv(kt, q, qs, 0, K, V, rb, out, os, 0, hd, pos0, nq, 1);
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
