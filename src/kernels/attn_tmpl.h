/* attn: one SIMD level of attn_rows, included by attn.c with ATTN_W
 * (lanes), ATTN_SUFFIX, ATTN_TARGET and ATTN_ROUNDED defined; see attn.c for
 * the order every level keeps. */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

typedef float CAT(vf_, ATTN_SUFFIX) __attribute__((vector_size(ATTN_W * 4)));
#define VT CAT(vf_, ATTN_SUFFIX)
#define LD(p) ({ VT v_; memcpy(&v_, (p), sizeof v_); v_; })
#define ST(p, v) do { VT w_ = (v); memcpy((p), &w_, sizeof w_); } while (0)


/* o (hd) = sum_t s[t] * V[t] for t <= pos, sequential in t, lanes over i. */
static inline __attribute__((always_inline, target(ATTN_TARGET))) void
CAT(wsum_, ATTN_SUFFIX)(const float *s, const float *V, int64_t kvs, float *o, int64_t hd, int32_t pos)
{
	int64_t i0 = 0;
	for (; i0 + 4 * ATTN_W <= hd; i0 += 4 * ATTN_W) {
		VT a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
		for (int32_t t = 0; t <= pos; t++) {
			const float *v = V + (size_t)t * kvs + i0;
			float a = s[t];
			VT p0 = LD(v) * a, p1 = LD(v + ATTN_W) * a;
			VT p2 = LD(v + 2 * ATTN_W) * a, p3 = LD(v + 3 * ATTN_W) * a;
			ATTN_ROUNDED(p0);
			ATTN_ROUNDED(p1);
			ATTN_ROUNDED(p2);
			ATTN_ROUNDED(p3);
			a0 = a0 + p0;
			a1 = a1 + p1;
			a2 = a2 + p2;
			a3 = a3 + p3;
		}
		ST(o + i0, a0);
		ST(o + i0 + ATTN_W, a1);
		ST(o + i0 + 2 * ATTN_W, a2);
		ST(o + i0 + 3 * ATTN_W, a3);
	}
	for (; i0 + ATTN_W <= hd; i0 += ATTN_W) {
		VT a0 = {0};
		for (int32_t t = 0; t <= pos; t++) {
			VT p0 = LD(V + (size_t)t * kvs + i0) * s[t];
			ATTN_ROUNDED(p0);
			a0 = a0 + p0;
		}
		ST(o + i0, a0);
	}
	for (int64_t i = i0; i < hd; i++) {
		float a0 = 0.0f;
		for (int32_t t = 0; t <= pos; t++)
			a0 += s[t] * V[(size_t)t * kvs + i];
		o[i] = a0;
	}
}

/* Query j at position pos0 + j * step: step 1, attn_rows (causal
 * positions); step 0, attn_rows_heads (heads at one position). Each lane's
 * arithmetic is its own query's whatever the other lanes hold. */
static inline __attribute__((always_inline, target(ATTN_TARGET))) int
CAT(attn_core_, ATTN_SUFFIX)(const float *q, int64_t qs, const float *K, const float *V,
	  int64_t kvs, float *out, int64_t os, int64_t hd, int32_t pos0,
	  int32_t nq, const int32_t step)
{
	int32_t npos = pos0 + (nq - 1) * step + 1;
	float *buf = eg_alloc_fault()
			     ? NULL
			     : gemm_scratch(0, ((size_t)hd * ATTN_W + (size_t)npos * (ATTN_W + 1)) *
						       sizeof(float) + 64);
	if (!buf) /* out of memory: the reference's scratch is smaller */
		return attn_core_generic(q, qs, K, V, kvs, out, os, hd, pos0, nq, step);
	float *Qt = buf, *St = Qt + hd * ATTN_W, *s = St + (size_t)npos * ATTN_W;
	const float scale = sqrtf((float)hd);
	for (int32_t j0 = 0; j0 < nq; j0 += ATTN_W) {
		int32_t nj = nq - j0 < ATTN_W ? nq - j0 : ATTN_W;
		int32_t keys = pos0 + (j0 + nj - 1) * step + 1; /* keys 0..keys-1 serve the group */
		for (int64_t i = 0; i < hd; i++)
			for (int32_t j = 0; j < ATTN_W; j++)
				Qt[i * ATTN_W + j] = j < nj ? q[(j0 + j) * qs + i] : 0.0f;
		int32_t t = 0;
		for (; t + 4 <= keys; t += 4) {
			const float *k0 = K + (size_t)t * kvs, *k1 = k0 + kvs;
			const float *k2 = k1 + kvs, *k3 = k2 + kvs;
			VT a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
			for (int64_t i = 0; i < hd; i++) {
				VT qv = LD(Qt + i * ATTN_W);
				VT p0 = qv * k0[i], p1 = qv * k1[i];
				VT p2 = qv * k2[i], p3 = qv * k3[i];
				ATTN_ROUNDED(p0);
				ATTN_ROUNDED(p1);
				ATTN_ROUNDED(p2);
				ATTN_ROUNDED(p3);
				a0 = a0 + p0;
				a1 = a1 + p1;
				a2 = a2 + p2;
				a3 = a3 + p3;
			}
			ST(St + (size_t)t * ATTN_W, a0 / scale);
			ST(St + (size_t)(t + 1) * ATTN_W, a1 / scale);
			ST(St + (size_t)(t + 2) * ATTN_W, a2 / scale);
			ST(St + (size_t)(t + 3) * ATTN_W, a3 / scale);
		}
		for (; t < keys; t++) {
			const float *k0 = K + (size_t)t * kvs;
			VT a0 = {0};
			for (int64_t i = 0; i < hd; i++) {
				VT p0 = LD(Qt + i * ATTN_W) * k0[i];
				ATTN_ROUNDED(p0);
				a0 = a0 + p0;
			}
			ST(St + (size_t)t * ATTN_W, a0 / scale);
		}
		for (int32_t j = 0; j < nj; j++) {
			int32_t pos = pos0 + (j0 + j) * step;
			for (int32_t u = 0; u <= pos; u++)
				s[u] = St[(size_t)u * ATTN_W + j];
			softmax(s, pos + 1);
			CAT(wsum_, ATTN_SUFFIX)(s, V, kvs, out + (j0 + j) * os, hd, pos);
		}
	}
	return 0;
}

__attribute__((target(ATTN_TARGET))) int
CAT(attn_rows_, ATTN_SUFFIX)(const float *q, int64_t qs, const float *K, const float *V,
	  int64_t kvs, float *out, int64_t os, int64_t hd, int32_t pos0,
	  int32_t nq)
{
	return CAT(attn_core_, ATTN_SUFFIX)(q, qs, K, V, kvs, out, os, hd, pos0, nq, 1);
}

__attribute__((target(ATTN_TARGET))) int
CAT(attn_rows_heads_, ATTN_SUFFIX)(const float *q, int64_t qs, const float *K,
	  const float *V, int64_t kvs, float *out, int64_t os, int64_t hd, int32_t pos,
	  int32_t nh)
{
	return CAT(attn_core_, ATTN_SUFFIX)(q, qs, K, V, kvs, out, os, hd, pos, nh, 0);
}


#undef VT
#undef LD
#undef ST
#undef ATTN_W
#undef ATTN_SUFFIX
#undef ATTN_TARGET
#undef ATTN_ROUNDED
