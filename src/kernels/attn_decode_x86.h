/* attn_decode_x86.h: the decode attention of an x86 level around its own
 * vectors (kernels_avx2.c: 8 lanes, kernels_avx512.c: 16), included once
 * by each after the level's three steps over c <= 4 query heads of one KV
 * head:
 *   att_scores(kt, q, qs, c, k, v, rb, n_pos, hd, scores, ss)
 *       scores + h * ss = q_h . k_u / sqrtf(hd) (v only to prefetch)
 *   softmax_rows(scores, ss, n_pos, c)
 *   att_wsum(kt, out, os, scores, ss, v, rb, n_pos, hd, c)
 * with ATTD_INLINE (the level's always-inline target attribute), ATTD_FN
 * (its target attribute) and ATTD_SUFFIX (avx2, avx512) defined. It
 * defines the level's attention_<kv>_<suffix> and
 * attn_rows_heads_<kv>_<suffix> (kernels_impl.h) for the three KV types,
 * each head the bits of the generic's attention_heads_kv. */

#define ATTD_CAT_(a, b) a##b
#define ATTD_CAT(a, b) ATTD_CAT_(a, b)

/* c query heads of one KV head at one position (c a constant per instance,
 * so that the accumulators stay in registers), query h at q + h * qs,
 * output at out + h * os: scores, softmax, weighted sum, each key and
 * value row read and converted once for the c heads. */
ATTD_INLINE void att_group(const int kt, float *out, int64_t os, const float *q, int64_t qs,
			   const uint8_t *k, const uint8_t *v, size_t rb, int n_pos, int hd,
			   float *scores, int64_t ss, const int c)
{
	att_scores(kt, q, qs, c, k, v, rb, n_pos, hd, scores, ss);
	softmax_rows(scores, ss, n_pos, c);
	att_wsum(kt, out, os, scores, ss, v, rb, n_pos, hd, c);
}

/* nh heads, 4 at a time (att_group); scores + h * ss (n_pos floats) are
 * head h's, left holding its probabilities. */
ATTD_INLINE void attention_kt(const int kt, float *out, int64_t os, const float *q, int64_t qs,
			      const uint8_t *k, const uint8_t *v, size_t rb, int n_pos, int hd,
			      float *scores, int nh, int64_t ss)
{
	for (int h = 0; h < nh; h += 4) {
		float *oh = out + (size_t)h * (size_t)os, *sh = scores + (size_t)h * (size_t)ss;
		const float *qh = q + (size_t)h * (size_t)qs;
		switch (nh - h) {
		case 1:
			att_group(kt, oh, os, qh, qs, k, v, rb, n_pos, hd, sh, ss, 1);
			break;
		case 2:
			att_group(kt, oh, os, qh, qs, k, v, rb, n_pos, hd, sh, ss, 2);
			break;
		case 3:
			att_group(kt, oh, os, qh, qs, k, v, rb, n_pos, hd, sh, ss, 3);
			break;
		default:
			att_group(kt, oh, os, qh, qs, k, v, rb, n_pos, hd, sh, ss, 4);
			break;
		}
	}
}

/* attn_rows_heads_kv (kernels.h) by the decode kernel: the nh heads at
 * position pos against keys 0..pos, their scores in the thread's scratch;
 * each head the bits of attention_heads_kv, and so of attn_rows. */
ATTD_INLINE int attn_heads_kt(const int kt, const float *q, int64_t qs, const void *K,
			      const void *V, size_t rb, float *out, int64_t os, int64_t hd,
			      int32_t pos, int32_t nh)
{
	const int64_t ss = ((int64_t)pos + 16) & ~(int64_t)15; /* >= pos + 1 */
	/* eg_alloc_fault: the scratch is an allocation point of the failure
	 * hook (base/alloc.h) like any other */
	float *s = eg_alloc_fault() ? NULL : gemm_scratch(0, sizeof(float) * (size_t)(ss * nh));
	if (!s)
		return -1;
	attention_kt(kt, out, os, q, qs, K, V, rb, pos + 1, (int)hd, s, nh, ss);
	return 0;
}

/* The level's decode attention per KV type, and the batch's decode token
 * (attn_rows_heads) by the same kernel. */
#define ATTD_KV(tag, KT)                                                                    \
	ATTD_FN void ATTD_CAT(attention_##tag##_, ATTD_SUFFIX)(                               \
		float *out, const float *q, const void *k, const void *v, size_t rb, int n_pos, \
		int hd, float *scores, int nh, int64_t ss)                                     \
	{                                                                                      \
		attention_kt(KT, out, hd, q, hd, k, v, rb, n_pos, hd, scores, nh, ss);         \
	}                                                                                      \
	ATTD_FN int ATTD_CAT(attn_rows_heads_##tag##_, ATTD_SUFFIX)(                          \
		const float *q, int64_t qs, const void *K, const void *V, size_t rb, float *out, \
		int64_t os, int64_t hd, int32_t pos, int32_t nh)                                 \
	{                                                                                      \
		return attn_heads_kt(KT, q, qs, K, V, rb, out, os, hd, pos, nh);               \
	}
ATTD_KV(f32, KV_F32)
ATTD_KV(f16, KV_F16)
ATTD_KV(q8_0, KV_Q8_0)
#undef ATTD_KV
