/* attn: one SIMD level of attn_rows, included by attn.c with ATTN_W
 * (lanes), ATTN_SUFFIX, ATTN_TARGET, ATTN_ROUNDED, and ATTN_LD_F16 /
 * ATTN_LD_Q8 (ATTN_W halves, resp. int8 quants, at p as a vector of
 * floats) defined; see attn.c for the order every level keeps. The KV type
 * kt is a constant in every instance (always_inline). */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

typedef float CAT(vf_, ATTN_SUFFIX) __attribute__((vector_size(ATTN_W * 4)));
#define VT CAT(vf_, ATTN_SUFFIX)
#define LD(p) ({ VT v_; memcpy(&v_, (p), sizeof v_); v_; })
#define ST(p, v) do { VT w_ = (v); memcpy((p), &w_, sizeof w_); } while (0)

/* Elements i .. i + ATTN_W - 1 of a KV row of type kt as floats (exact);
 * i a multiple of ATTN_W, so a Q8_0 load stays in one block. */
static inline __attribute__((always_inline, target(ATTN_TARGET))) VT
CAT(kvld_, ATTN_SUFFIX)(const int kt, const uint8_t *row, int64_t i)
{
	if (kt == KV_F16)
		return ATTN_LD_F16(row + 2 * i);
	if (kt == KV_Q8_0) {
		const uint8_t *b = row + (i / QK) * (int64_t)sizeof(block_q8_0);
		return ATTN_LD_Q8(b + 2 + i % QK) * ld_f16(b);
	}
	return LD(row + 4 * i);
}

/* Key row t (hd elements of type kt) as floats: the row itself for F32,
 * else converted into buf. */
static inline __attribute__((always_inline, target(ATTN_TARGET))) const float *
CAT(kvrow_, ATTN_SUFFIX)(const int kt, const uint8_t *row, int64_t hd, float *buf)
{
	if (kt == KV_F32)
		return (const float *)(const void *)row;
	int64_t i = 0;
	for (; i + ATTN_W <= hd; i += ATTN_W)
		ST(buf + i, CAT(kvld_, ATTN_SUFFIX)(kt, row, i));
	for (; i < hd; i++)
		buf[i] = kv_elem((kv_type_t)kt, row, i);
	return buf;
}

/* o (hd) = sum_t s[t] * V[t] for t <= pos, sequential in t, lanes over i. */
static inline __attribute__((always_inline, target(ATTN_TARGET))) void
CAT(wsum_, ATTN_SUFFIX)(const int kt, const float *s, const uint8_t *V, size_t rb, float *o,
			int64_t hd, int32_t pos)
{
	int64_t i0 = 0;
	for (; i0 + 4 * ATTN_W <= hd; i0 += 4 * ATTN_W) {
		VT a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
		for (int32_t t = 0; t <= pos; t++) {
			const uint8_t *v = V + (size_t)t * rb;
			float a = s[t];
			VT p0 = CAT(kvld_, ATTN_SUFFIX)(kt, v, i0) * a;
			VT p1 = CAT(kvld_, ATTN_SUFFIX)(kt, v, i0 + ATTN_W) * a;
			VT p2 = CAT(kvld_, ATTN_SUFFIX)(kt, v, i0 + 2 * ATTN_W) * a;
			VT p3 = CAT(kvld_, ATTN_SUFFIX)(kt, v, i0 + 3 * ATTN_W) * a;
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
			VT p0 = CAT(kvld_, ATTN_SUFFIX)(kt, V + (size_t)t * rb, i0) * s[t];
			ATTN_ROUNDED(p0);
			a0 = a0 + p0;
		}
		ST(o + i0, a0);
	}
	for (int64_t i = i0; i < hd; i++) {
		float a0 = 0.0f;
		for (int32_t t = 0; t <= pos; t++)
			a0 += s[t] * kv_elem((kv_type_t)kt, V + (size_t)t * rb, i);
		o[i] = a0;
	}
}

/* Query j at position pos0 + j * step: step 1, attn_rows (causal
 * positions); step 0, attn_rows_heads (heads at one position). Each lane's
 * arithmetic is its own query's whatever the other lanes hold. */
static inline __attribute__((always_inline, target(ATTN_TARGET))) int
CAT(attn_core_, ATTN_SUFFIX)(const int kt, const float *q, int64_t qs, const uint8_t *K,
	  const uint8_t *V, size_t rb, float *out, int64_t os, int64_t hd, int32_t pos0,
	  int32_t nq, const int32_t step)
{
	int32_t npos = pos0 + (nq - 1) * step + 1;
	/* Qt, St, s, and four converted key rows */
	float *buf = eg_alloc_fault()
			     ? NULL
			     : gemm_scratch(0, ((size_t)hd * (ATTN_W + 4) +
						(size_t)npos * (ATTN_W + 1)) * sizeof(float) + 64);
	if (!buf) /* out of memory: the reference's scratch is smaller */
		return attn_core_generic((kv_type_t)kt, q, qs, K, V, rb, out, os, hd, pos0, nq,
					 step);
	float *Qt = buf, *St = Qt + hd * ATTN_W, *s = St + (size_t)npos * ATTN_W;
	float *kb = s + npos;
	const float scale = sqrtf((float)hd);
	for (int32_t j0 = 0; j0 < nq; j0 += ATTN_W) {
		int32_t nj = nq - j0 < ATTN_W ? nq - j0 : ATTN_W;
		int32_t keys = pos0 + (j0 + nj - 1) * step + 1; /* keys 0..keys-1 serve the group */
		for (int64_t i = 0; i < hd; i++)
			for (int32_t j = 0; j < ATTN_W; j++)
				Qt[i * ATTN_W + j] = j < nj ? q[(j0 + j) * qs + i] : 0.0f;
		int32_t t = 0;
		for (; t + 4 <= keys; t += 4) {
			const uint8_t *kr = K + (size_t)t * rb;
			const float *k0 = CAT(kvrow_, ATTN_SUFFIX)(kt, kr, hd, kb);
			const float *k1 = CAT(kvrow_, ATTN_SUFFIX)(kt, kr + rb, hd, kb + hd);
			const float *k2 = CAT(kvrow_, ATTN_SUFFIX)(kt, kr + 2 * rb, hd, kb + 2 * hd);
			const float *k3 = CAT(kvrow_, ATTN_SUFFIX)(kt, kr + 3 * rb, hd, kb + 3 * hd);
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
			const float *k0 = CAT(kvrow_, ATTN_SUFFIX)(kt, K + (size_t)t * rb, hd, kb);
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
			CAT(wsum_, ATTN_SUFFIX)(kt, s, V, rb, out + (j0 + j) * os, hd, pos);
		}
	}
	return 0;
}

#undef VT
#undef LD
#undef ST
#undef ATTN_W
#undef ATTN_SUFFIX
#undef ATTN_TARGET
#undef ATTN_ROUNDED
#undef ATTN_LD_F16
#undef ATTN_LD_Q8
