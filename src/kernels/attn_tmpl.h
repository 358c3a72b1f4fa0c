/* attn: one SIMD level of attn_rows, included by attn.c with ATTN_W
 * (lanes), ATTN_SUFFIX, ATTN_TARGET, ATTN_ROUNDED, and ATTN_LD_F16 /
 * ATTN_LD_Q8 (ATTN_W halves, resp. int8 quants, at p as a vector of
 * floats) defined; see attn.c for the order every level keeps. The KV type
 * kt is a constant in every instance (always_inline). */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

typedef float CAT(vf_, ATTN_SUFFIX) __attribute__((vector_size(ATTN_W * 4)));
#define VT CAT(vf_, ATTN_SUFFIX)
typedef int32_t CAT(vi_, ATTN_SUFFIX) __attribute__((vector_size(ATTN_W * 4)));
#define VI CAT(vi_, ATTN_SUFFIX)
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

/* Queries per pass of the weighted sum: their accumulators, 4 vectors
 * each, and the 4 value vectors they share fit the level's registers. */
#ifndef ATTN_QB
#define ATTN_QB 4
#endif

/* For the nb queries j < nb (nb = 1 or ATTN_QB, a constant at each call)
 * whose weights are the lanes S[t * ATTN_W + j]: o[j][i] = sum over t in
 * t0..t1 of S[t * ATTN_W + j] * v_t[i], sequential in t, each product
 * rounded then added; the sum starts at o[j][i] when cont, else at 0. So a
 * query's sum over 0..pos split at any t is the same bits as in one go, and
 * the value vectors converted once serve every query of the pass. */
static inline __attribute__((always_inline, target(ATTN_TARGET))) void
CAT(wsumq_, ATTN_SUFFIX)(const int kt, const float *S, const int nb, const uint8_t *V,
			 size_t rb, float *const *o, int64_t hd, int32_t t0, int32_t t1,
			 bool cont)
{
	int64_t i0 = 0;
	for (; i0 + 4 * ATTN_W <= hd; i0 += 4 * ATTN_W) {
		/* element i0's byte in a row (Q8_0: its block's) */
		const size_t vo = kt == KV_F16 ? (size_t)i0 * 2
				  : kt == KV_F32 ? (size_t)i0 * 4
						 : (size_t)(i0 / QK) * sizeof(block_q8_0);
		VT a[ATTN_QB][4];
#pragma GCC unroll 4
		for (int j = 0; j < nb; j++)
#pragma GCC unroll 4
			for (int u = 0; u < 4; u++)
				a[j][u] = cont ? LD(o[j] + i0 + u * ATTN_W) : (VT){0};
		for (int32_t t = t0; t <= t1; t++) {
			const uint8_t *v = V + (size_t)t * rb;
			/* the value row 4 on (L2 at a long context) */
			__builtin_prefetch(v + 4 * rb + vo);
			VT x[4];
#pragma GCC unroll 4
			for (int u = 0; u < 4; u++)
				x[u] = CAT(kvld_, ATTN_SUFFIX)(kt, v, i0 + u * ATTN_W);
#pragma GCC unroll 4
			for (int j = 0; j < nb; j++) {
				float w = S[(size_t)t * ATTN_W + j];
#pragma GCC unroll 4
				for (int u = 0; u < 4; u++) {
					VT p = x[u] * w;
					ATTN_ROUNDED(p);
					a[j][u] = a[j][u] + p;
				}
			}
		}
#pragma GCC unroll 4
		for (int j = 0; j < nb; j++)
#pragma GCC unroll 4
			for (int u = 0; u < 4; u++)
				ST(o[j] + i0 + u * ATTN_W, a[j][u]);
	}
	for (; i0 + ATTN_W <= hd; i0 += ATTN_W) {
		VT a[ATTN_QB];
#pragma GCC unroll 4
		for (int j = 0; j < nb; j++)
			a[j] = cont ? LD(o[j] + i0) : (VT){0};
		for (int32_t t = t0; t <= t1; t++) {
			VT x = CAT(kvld_, ATTN_SUFFIX)(kt, V + (size_t)t * rb, i0);
#pragma GCC unroll 4
			for (int j = 0; j < nb; j++) {
				VT p = x * S[(size_t)t * ATTN_W + j];
				ATTN_ROUNDED(p);
				a[j] = a[j] + p;
			}
		}
#pragma GCC unroll 4
		for (int j = 0; j < nb; j++)
			ST(o[j] + i0, a[j]);
	}
	for (int64_t i = i0; i < hd; i++)
#pragma GCC unroll 4
		for (int j = 0; j < nb; j++) {
			float a = cont ? o[j][i] : 0.0f;
			for (int32_t t = t0; t <= t1; t++) {
				float p = S[(size_t)t * ATTN_W + j] *
					  kv_elem((kv_type_t)kt, V + (size_t)t * rb, i);
				ATTN_ROUNDED(p);
				a += p;
			}
			o[j][i] = a;
		}
}

/* softmax (kernels.h; the generic's arithmetic, so the same bits) of each
 * lane j < nj of the scores S[t * ATTN_W + j] over t <= pos[j], in place,
 * the queries in the lanes (pos ascending, pos[0] >= 0). Per lane the
 * generic's steps in its order: max from t = 0 by `x > max`, expf(x -
 * max) (ATTN_VEXP where the level has it: expf's bits a vector at a time)
 * with the sum sequential in t from +0, then x / sum. The lanes' sums
 * are independent chains (no add waits for the previous key's), and no
 * column is copied out. */
static inline __attribute__((always_inline, target(ATTN_TARGET))) void
CAT(softmax_cols_, ATTN_SUFFIX)(float *S, const int32_t *pos, int32_t nj)
{
#ifdef ATTN_VEXP
	const bool vexp = attn_vexp_ok();
#endif
	int32_t pl[ATTN_W];
	for (int32_t j = 0; j < ATTN_W; j++)
		pl[j] = j < nj ? pos[j] : -1;
	VI vpos;
	memcpy(&vpos, pl, sizeof vpos);
	const int32_t last = pos[nj - 1];
	VT mx = LD(S), sum = {0};
	for (int32_t t = 1; t <= last; t++) {
		VT r = LD(S + (size_t)t * ATTN_W);
		VI m = (VI)(r > mx) & (vpos >= (VI){0} + t);
		mx = (VT)(((VI)r & m) | ((VI)mx & ~m));
	}
	float ex[ATTN_W];
	for (int32_t t = 0; t <= last; t++) {
		float *r = S + (size_t)t * ATTN_W;
		ST(ex, LD(r) - mx);
#ifdef ATTN_VEXP
		if (vexp) { /* expf's bits, ATTN_W lanes at once */
			ATTN_VEXP(ex);
			for (int32_t j = 0; t > pos[0] && j < nj; j++)
				if (t > pos[j])
					ex[j] = 0.0f;
		} else
#endif
		if (t <= pos[0]) { /* a key of every query */
			for (int32_t j = 0; j < nj; j++)
				ex[j] = expf(ex[j]);
		} else {
			/* past a query's own keys +0 is added: sum + 0 = sum,
			 * the sum of exponentials from +0 being never -0 */
			for (int32_t j = 0; j < nj; j++)
				ex[j] = t <= pos[j] ? expf(ex[j]) : 0.0f;
		}
		VT e = LD(ex);
		ST(r, e);
		sum = sum + e;
	}
	for (int32_t t = 0; t <= last; t++) {
		float *r = S + (size_t)t * ATTN_W;
		ST(r, LD(r) / sum);
	}
}

/* The weighted sums of queries j < nj (positions pos[j], ascending; their
 * softmax weights in the lanes of S, out + j * os): ATTN_QB queries at a
 * time over the keys they share, then each one's own last keys. */
static inline __attribute__((always_inline, target(ATTN_TARGET))) void
CAT(wsum_cols_, ATTN_SUFFIX)(const int kt, const float *S, const uint8_t *V, size_t rb,
			     float *out, int64_t os, int64_t hd, const int32_t *pos, int32_t nj)
{
	int32_t j = 0;
	for (; j + ATTN_QB <= nj; j += ATTN_QB) {
		float *o[ATTN_QB];
		for (int u = 0; u < ATTN_QB; u++)
			o[u] = out + (j + u) * os;
		CAT(wsumq_, ATTN_SUFFIX)(kt, S + j, ATTN_QB, V, rb, o, hd, 0, pos[j], false);
		for (int u = 1; u < ATTN_QB; u++)
			if (pos[j + u] > pos[j])
				CAT(wsumq_, ATTN_SUFFIX)(kt, S + j + u, 1, V, rb, o + u, hd,
							 pos[j] + 1, pos[j + u], true);
	}
	for (; j < nj; j++) {
		float *o = out + j * os;
		CAT(wsumq_, ATTN_SUFFIX)(kt, S + j, 1, V, rb, &o, hd, 0, pos[j], false);
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
	/* Qt, St and four converted key rows */
	float *buf = eg_alloc_fault()
			     ? NULL
			     : gemm_scratch(0, ((size_t)hd * (ATTN_W + 4) +
						(size_t)npos * ATTN_W) * sizeof(float) + 64);
	if (!buf) /* out of memory: the reference's scratch is smaller */
		return attn_core_generic((kv_type_t)kt, q, qs, K, V, rb, out, os, hd, pos0, nq,
					 step);
	float *Qt = buf, *St = Qt + hd * ATTN_W;
	float *kb = St + (size_t)npos * ATTN_W;
	const float scale = sqrtf((float)hd);
	const size_t hb = kv_row_bytes((kv_type_t)kt, hd); /* one head's bytes of a row */
	for (int32_t j0 = 0; j0 < nq; j0 += ATTN_W) {
		int32_t nj = nq - j0 < ATTN_W ? nq - j0 : ATTN_W;
		int32_t keys = pos0 + (j0 + nj - 1) * step + 1; /* keys 0..keys-1 serve the group */
		for (int64_t i = 0; i < hd; i++)
			for (int32_t j = 0; j < ATTN_W; j++)
				Qt[i * ATTN_W + j] = j < nj ? q[(j0 + j) * qs + i] : 0.0f;
		int32_t t = 0;
		for (; t + 4 <= keys; t += 4) {
			const uint8_t *kr = K + (size_t)t * rb;
			/* the key rows 8 on: rows rb apart come from L2 at a
			 * long context, and the row's conversion waited on them */
			for (int u = 8; u < 12; u++)
				for (size_t b = 0; b < hb; b += 64)
					__builtin_prefetch(kr + (size_t)u * rb + b);
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
		int32_t pos[ATTN_W];
		for (int32_t j = 0; j < nj; j++)
			pos[j] = pos0 + (j0 + j) * step;
		CAT(softmax_cols_, ATTN_SUFFIX)(St, pos, nj);
		CAT(wsum_cols_, ATTN_SUFFIX)(kt, St, V, rb, out + j0 * os, os, hd, pos, nj);
	}
	return 0;
}

#undef VT
#undef VI
#undef ATTN_QB
#undef ATTN_VEXP
#undef LD
#undef ST
#undef ATTN_W
#undef ATTN_SUFFIX
#undef ATTN_TARGET
#undef ATTN_ROUNDED
#undef ATTN_LD_F16
#undef ATTN_LD_Q8
