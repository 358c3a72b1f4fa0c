/* attn: one SIMD level of attn_rows_group_kv (and so of attn_rows_kv, and
 * on NEON of attn_rows_heads_kv), included by attn.c with ATTN_W
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

/* Row `row` (hd elements of type kt) as floats: the row itself for F32,
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

/* Value rows a tile of the weighted sum holds: ATTN_VTILE_BYTES of
 * floats (L1), at least 4 rows. */
#ifndef ATTN_VTILE_BYTES
#define ATTN_VTILE_BYTES 16384
#endif
static inline int32_t CAT(vtile_rows_, ATTN_SUFFIX)(int64_t hd)
{
	int64_t r = ATTN_VTILE_BYTES / (hd * (int64_t)sizeof(float));
	return r < 4 ? 4 : (int32_t)r;
}

/* For the nb queries j < nb (nb = 1 or ATTN_QB, a constant at each call)
 * whose weights are the lanes S[t * ATTN_W + j]: o[j][i] = sum over t in
 * t0..t1 of S[t * ATTN_W + j] * v_t[i] (v_t: hd floats at V + t * rb),
 * sequential in t, each product rounded then added; the sum starts at
 * o[j][i] when cont, else at 0. So a query's sum over 0..pos split at
 * any t is the same bits as in one go, and the value vectors loaded once
 * serve every query of the pass. far: the rows are the cache's own (the
 * one 4 on is prefetched), not a converted tile in L1. */
static inline __attribute__((always_inline, target(ATTN_TARGET))) void
CAT(wsumq_, ATTN_SUFFIX)(const float *S, const int nb, const uint8_t *V, size_t rb,
			 const bool far, float *const *o, int64_t hd, int32_t t0, int32_t t1,
			 bool cont)
{
	int64_t i0 = 0;
	for (; i0 + 4 * ATTN_W <= hd; i0 += 4 * ATTN_W) {
		VT a[ATTN_QB][4];
#pragma GCC unroll 4
		for (int j = 0; j < nb; j++)
#pragma GCC unroll 4
			for (int u = 0; u < 4; u++)
				a[j][u] = cont ? LD(o[j] + i0 + u * ATTN_W) : (VT){0};
		for (int32_t t = t0; t <= t1; t++) {
			const float *v = (const float *)(const void *)(V + (size_t)t * rb) + i0;
			/* the value row 4 on (L2 at a long context) */
			if (far)
				__builtin_prefetch(v + 4 * rb / sizeof(float));
			VT x[4];
#pragma GCC unroll 4
			for (int u = 0; u < 4; u++)
				x[u] = LD(v + u * ATTN_W);
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
			VT x = LD((const float *)(const void *)(V + (size_t)t * rb) + i0);
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
					  kv_elem(KV_F32, V + (size_t)t * rb, i);
				ATTN_ROUNDED(p);
				a += p;
			}
			o[j][i] = a;
		}
}

/* wsumq's instances, each a function of its own so that its 16
 * accumulators and 4 value vectors get the registers (inlined into the
 * whole kernel, accumulators went to the stack): the pass of ATTN_QB
 * queries and the one query, over the cache's rows (far) or a tile. */
#define ATTN_WSUMQ_INSTANCE(name, NB, FAR)                                                  \
	static __attribute__((noinline, target(ATTN_TARGET))) void CAT(name, ATTN_SUFFIX)(    \
		const float *S, const uint8_t *V, size_t rb, float *const *o, int64_t hd,     \
		int32_t t0, int32_t t1, bool cont)                                            \
	{                                                                                     \
		CAT(wsumq_, ATTN_SUFFIX)(S, NB, V, rb, FAR, o, hd, t0, t1, cont);             \
	}
ATTN_WSUMQ_INSTANCE(wsum_pass_far_, ATTN_QB, true)
ATTN_WSUMQ_INSTANCE(wsum_pass_near_, ATTN_QB, false)
ATTN_WSUMQ_INSTANCE(wsum_one_far_, 1, true)
ATTN_WSUMQ_INSTANCE(wsum_one_near_, 1, false)
#undef ATTN_WSUMQ_INSTANCE

/* softmax (kernels.h; the generic's arithmetic, so the same bits) of each
 * lane j < nj of the scores S[t * ATTN_W + j] over t <= pos[j], in place,
 * the queries in the lanes (pos ascending, pos[0] >= 0). Per lane the
 * generic's steps in its order: max from t = 0 by `x > max`, expf(x -
 * max) (ATTN_VEXP where the level has it: expf's bits a vector at a
 * time, the lanes past a query's keys then +0, as expf's path sets them)
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
#ifdef ATTN_VEXP
		if (vexp) { /* expf's bits, ATTN_W lanes at once, in registers */
			VT e = (VT)ATTN_VEXP(LD(r) - mx);
			if (t > pos[0]) /* +0 in the lanes past their keys */
				e = (VT)((VI)e & (vpos >= (VI){0} + t));
			ST(r, e);
			sum = sum + e;
			continue;
		}
#endif
		ST(ex, LD(r) - mx);
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
 * softmax weights in the lanes of S, out + j * os) over the value rows
 * t0..t1 of a tile (row t at V + (t - t0) * rb): ATTN_QB queries at a
 * time over the keys they share, then each one's own last keys. Each
 * query's sum starts at its t = 0 and otherwise continues from its stored
 * one, so tiles run in t order give every sum sequential in t. */
static inline __attribute__((always_inline, target(ATTN_TARGET))) void
CAT(wsum_cols_, ATTN_SUFFIX)(const float *S, const uint8_t *V, size_t rb, const bool far,
			     float *out, int64_t os, int64_t hd, const int32_t *pos, int32_t nj,
			     int32_t t0, int32_t t1)
{
	const float *St = S + (size_t)t0 * ATTN_W; /* the tile's first key */
	int32_t j = 0;
	for (; j + ATTN_QB <= nj; j += ATTN_QB) {
		float *o[ATTN_QB];
		for (int u = 0; u < ATTN_QB; u++)
			o[u] = out + (j + u) * os;
		int32_t e = pos[j] < t1 ? pos[j] : t1; /* the keys the pass shares */
		if (t0 <= e) {
			if (far)
				CAT(wsum_pass_far_, ATTN_SUFFIX)(St + j, V, rb, o, hd, 0, e - t0,
								 t0 > 0);
			else
				CAT(wsum_pass_near_, ATTN_SUFFIX)(St + j, V, rb, o, hd, 0, e - t0,
								  t0 > 0);
		}
		int32_t b = pos[j] + 1 > t0 ? pos[j] + 1 : t0; /* the queries' own keys */
		for (int u = 1; u < ATTN_QB; u++) {
			int32_t eu = pos[j + u] < t1 ? pos[j + u] : t1;
			if (b > eu)
				continue;
			if (far)
				CAT(wsum_one_far_, ATTN_SUFFIX)(St + j + u, V, rb, o + u, hd, b - t0,
								eu - t0, true);
			else
				CAT(wsum_one_near_, ATTN_SUFFIX)(St + j + u, V, rb, o + u, hd,
								 b - t0, eu - t0, true);
		}
	}
	for (; j < nj; j++) {
		float *o = out + j * os;
		int32_t e = pos[j] < t1 ? pos[j] : t1;
		if (t0 > e)
			continue;
		if (far)
			CAT(wsum_one_far_, ATTN_SUFFIX)(St + j, V, rb, &o, hd, 0, e - t0, t0 > 0);
		else
			CAT(wsum_one_near_, ATTN_SUFFIX)(St + j, V, rb, &o, hd, 0, e - t0, t0 > 0);
	}
}

/* Scores of the nk = 1 or 4 (a constant at each call) converted key rows
 * k0..k3 (the first nk) for the ATTN_W queries of Qt (hd x ATTN_W, a
 * query a lane) into St rows 0..nk-1: per lane sum_i q[i] * k[i] in i
 * order from 0, each product rounded then added, then / scale, which is
 * * inv where inv is nonzero (scale a power of two: inv = 1 / scale
 * exactly, and x * inv the same correctly rounded real as x / scale, for
 * a tenth of a divide's cost). The keys are independent chains, so a
 * key's score is the same bits in a block of 4 or alone. */
static inline __attribute__((always_inline, target(ATTN_TARGET))) void
CAT(dots_, ATTN_SUFFIX)(const float *Qt, const float *k0, const float *k1, const float *k2,
			const float *k3, const int nk, int64_t hd, float scale, float inv,
			float *St)
{
	VT a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
	for (int64_t i = 0; i < hd; i++) {
		VT qv = LD(Qt + i * ATTN_W);
		VT p0 = qv * k0[i];
		ATTN_ROUNDED(p0);
		a0 = a0 + p0;
		if (nk == 4) {
			VT p1 = qv * k1[i], p2 = qv * k2[i], p3 = qv * k3[i];
			ATTN_ROUNDED(p1);
			ATTN_ROUNDED(p2);
			ATTN_ROUNDED(p3);
			a1 = a1 + p1;
			a2 = a2 + p2;
			a3 = a3 + p3;
		}
	}
	if (inv != 0.0f) {
		ST(St, a0 * inv);
		if (nk == 4) {
			ST(St + ATTN_W, a1 * inv);
			ST(St + 2 * ATTN_W, a2 * inv);
			ST(St + 3 * ATTN_W, a3 * inv);
		}
		return;
	}
	ST(St, a0 / scale);
	if (nk == 4) {
		ST(St + ATTN_W, a1 / scale);
		ST(St + 2 * ATTN_W, a2 / scale);
		ST(St + 3 * ATTN_W, a3 / scale);
	}
}

/* dots' instances, functions of their own so that the key rows'
 * addresses stay in general registers (inlined, they were moved from
 * vector registers at every element). */
static __attribute__((noinline, target(ATTN_TARGET))) void
CAT(dots4_, ATTN_SUFFIX)(const float *Qt, const float *k0, const float *k1, const float *k2,
			 const float *k3, int64_t hd, float scale, float inv, float *St)
{
	CAT(dots_, ATTN_SUFFIX)(Qt, k0, k1, k2, k3, 4, hd, scale, inv, St);
}
static __attribute__((noinline, target(ATTN_TARGET))) void
CAT(dots1_, ATTN_SUFFIX)(const float *Qt, const float *k0, int64_t hd, float scale, float inv,
			 float *St)
{
	CAT(dots_, ATTN_SUFFIX)(Qt, k0, k0, k0, k0, 1, hd, scale, inv, St);
}

/* The scores of every block b = h * ng + g (head h's query group g: its
 * queries transposed at Qt + b hd ATTN_W, its scores at St + b npos
 * ATTN_W) against the keys its group reaches (keys[g]), 4 key rows at a
 * time, each converted once (kb: 4 rows of hd floats) for all blocks. */
static inline __attribute__((always_inline, target(ATTN_TARGET))) void
CAT(scores_, ATTN_SUFFIX)(const int kt, const float *Qt, float *St, int32_t nh, int32_t ng,
			  const int32_t *keys, const uint8_t *K, size_t rb, int64_t hd,
			  int32_t npos, float *kb)
{
	const float scale = sqrtf((float)hd);
	int e2;
	const float inv = frexpf(scale, &e2) == 0.5f ? 1.0f / scale : 0.0f;
	const size_t hb = kv_row_bytes((kv_type_t)kt, hd); /* one head's bytes of a row */
	for (int32_t t = 0; t < npos; t += 4) {
		const int32_t nk = npos - t < 4 ? npos - t : 4;
		const uint8_t *kr = K + (size_t)t * rb;
		/* the key rows 8 on: rows rb apart come from L2 at a long
		 * context, and the row's conversion waited on them */
		for (int u = 8; u < 12; u++)
			for (size_t b = 0; b < hb; b += 64)
				__builtin_prefetch(kr + (size_t)u * rb + b);
		const float *k[4];
		for (int u = 0; u < nk; u++)
			k[u] = CAT(kvrow_, ATTN_SUFFIX)(kt, kr + (size_t)u * rb, hd, kb + u * hd);
		for (int32_t g = 0; g < ng; g++) {
			int32_t n = keys[g] - t; /* of these keys, the group's */
			if (n <= 0)
				continue;
			for (int32_t h = 0; h < nh; h++) {
				size_t b = (size_t)h * (size_t)ng + (size_t)g;
				const float *qb = Qt + b * (size_t)hd * ATTN_W;
				float *sb = St + (b * (size_t)npos + (size_t)t) * ATTN_W;
				if (n >= 4)
					CAT(dots4_, ATTN_SUFFIX)(qb, k[0], k[1], k[2], k[3], hd, scale,
								 inv, sb);
				else
					for (int32_t u = 0; u < n; u++)
						CAT(dots1_, ATTN_SUFFIX)(qb, k[u], hd, scale, inv,
									 sb + (size_t)u * ATTN_W);
			}
		}
	}
}

/* The weighted sums of every block over the value rows, a tile of rows
 * at a time converted once (vb) for all blocks (F32: the cache's rows
 * read in place); pos: the ATTN_W positions of each group, nj its
 * queries. */
static inline __attribute__((always_inline, target(ATTN_TARGET))) void
CAT(wsums_, ATTN_SUFFIX)(const int kt, const float *St, int32_t nh, int32_t ng,
			 const int32_t *pos, const int32_t *nj, const uint8_t *V, size_t rb,
			 float *out, int64_t os, int64_t oh, int64_t hd, int32_t npos, float *vb)
{
	const int32_t vt = CAT(vtile_rows_, ATTN_SUFFIX)(hd);
	const size_t hb = kv_row_bytes((kv_type_t)kt, hd);
	for (int32_t t0 = 0; t0 < npos; t0 += vt) {
		const int32_t t1 = (t0 + vt < npos ? t0 + vt : npos) - 1;
		const uint8_t *vr = V + (size_t)t0 * rb;
		size_t vrb = rb;
		if (kt != KV_F32) {
			for (int32_t t = t0; t <= t1; t++) {
				const uint8_t *row = V + (size_t)t * rb;
				/* the value row 8 on (L2 at a long context) */
				for (size_t b = 0; b < hb; b += 64)
					__builtin_prefetch(row + 8 * rb + b);
				CAT(kvrow_, ATTN_SUFFIX)(kt, row, hd, vb + (size_t)(t - t0) * hd);
			}
			vr = (const uint8_t *)vb;
			vrb = (size_t)hd * sizeof(float);
		}
		for (int32_t h = 0; h < nh; h++)
			for (int32_t g = 0; g < ng; g++) {
				const float *S = St + ((size_t)h * (size_t)ng + (size_t)g) *
							      (size_t)npos * ATTN_W;
				float *o = out + h * oh + (int64_t)g * ATTN_W * os;
				if (kt == KV_F32)
					CAT(wsum_cols_, ATTN_SUFFIX)(S, vr, vrb, true, o, os, hd,
								     pos + g * ATTN_W, nj[g], t0, t1);
				else
					CAT(wsum_cols_, ATTN_SUFFIX)(S, vr, vrb, false, o, os, hd,
								     pos + g * ATTN_W, nj[g], t0, t1);
			}
	}
}

/* nh heads of nq queries each: head h's query j at q + h * qh + j * qs,
 * at position pos0 + j * step (step 1: attn_rows, causal positions;
 * step 0: attn_rows_heads, queries at one position), its output at out +
 * h * oh + j * os. The queries go ATTN_W to a group (a lane each), and
 * each key row and each tile of value rows is converted once for every
 * (head, group) block. Each lane's arithmetic is its own query's whatever
 * the other lanes and blocks hold. */
static inline __attribute__((always_inline, target(ATTN_TARGET))) int
CAT(attn_core_, ATTN_SUFFIX)(const int kt, const float *q, int64_t qs, int64_t qh,
			     const uint8_t *K, const uint8_t *V, size_t rb, float *out, int64_t os,
			     int64_t oh, int64_t hd, int32_t pos0, int32_t nq, const int32_t step,
			     int32_t nh)
{
	const int32_t ng = (nq + ATTN_W - 1) / ATTN_W; /* query groups a head */
	const size_t nb = (size_t)nh * (size_t)ng;      /* (head, group) blocks */
	const int32_t npos = pos0 + (nq - 1) * step + 1; /* the last query's keys */
	/* Qt and St per block, four converted key rows, a value tile, and
	 * each group's positions, query count and keys */
	const size_t fl = nb * (size_t)hd * ATTN_W + nb * (size_t)npos * ATTN_W +
			  (size_t)(4 + CAT(vtile_rows_, ATTN_SUFFIX)(hd)) * (size_t)hd;
	const size_t il = (size_t)ng * (ATTN_W + 2);
	float *buf = eg_alloc_fault()
			     ? NULL
			     : gemm_scratch(0, fl * sizeof(float) + il * sizeof(int32_t) + 64);
	if (!buf) /* out of memory: the reference's scratch is smaller */
		return attn_core_generic((kv_type_t)kt, q, qs, qh, K, V, rb, out, os, oh, hd, pos0,
					 nq, step, nh);
	float *Qt = buf, *St = Qt + nb * (size_t)hd * ATTN_W;
	float *kb = St + nb * (size_t)npos * ATTN_W;
	float *vb = kb + 4 * hd;
	int32_t *pos = (int32_t *)(void *)(buf + fl);
	int32_t *nj = pos + (size_t)ng * ATTN_W, *keys = nj + ng;
	for (int32_t g = 0; g < ng; g++) {
		int32_t j0 = g * ATTN_W;
		nj[g] = nq - j0 < ATTN_W ? nq - j0 : ATTN_W;
		for (int32_t j = 0; j < ATTN_W; j++)
			pos[j0 + j] = pos0 + (j0 + (j < nj[g] ? j : nj[g] - 1)) * step;
		keys[g] = pos[j0 + nj[g] - 1] + 1; /* keys 0..keys-1 serve the group */
		for (int32_t h = 0; h < nh; h++) {
			float *qt = Qt + ((size_t)h * (size_t)ng + (size_t)g) * (size_t)hd * ATTN_W;
			const float *qg = q + h * qh + (int64_t)j0 * qs;
			for (int64_t i = 0; i < hd; i++)
				for (int32_t j = 0; j < ATTN_W; j++)
					qt[i * ATTN_W + j] = j < nj[g] ? qg[j * qs + i] : 0.0f;
		}
	}
	CAT(scores_, ATTN_SUFFIX)(kt, Qt, St, nh, ng, keys, K, rb, hd, npos, kb);
	for (int32_t h = 0; h < nh; h++)
		for (int32_t g = 0; g < ng; g++)
			CAT(softmax_cols_, ATTN_SUFFIX)(St + ((size_t)h * (size_t)ng + (size_t)g) *
								     (size_t)npos * ATTN_W,
							pos + g * ATTN_W, nj[g]);
	CAT(wsums_, ATTN_SUFFIX)(kt, St, nh, ng, pos, nj, V, rb, out, os, oh, hd, npos, vb);
	return 0;
}

#undef VT
#undef VI
#undef ATTN_QB
#undef ATTN_VTILE_BYTES
#undef ATTN_VEXP
#undef LD
#undef ST
#undef ATTN_W
#undef ATTN_SUFFIX
#undef ATTN_TARGET
#undef ATTN_ROUNDED
#undef ATTN_LD_F16
#undef ATTN_LD_Q8
