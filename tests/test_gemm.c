/* Tests of the matrix-matrix kernels (gemm.c): at every ISA level this CPU
 * runs, and for every weight type, each output of gemm_rows is the same bits
 * as the decode path's vec_dot at that level (so a batched prefill equals
 * token-by-token decoding), quantized types are the same bits at every
 * level, float types agree with the generic twin within the float-dot
 * tolerance of test_kernels, and the outputs do not depend on how rows and
 * tokens are split into calls. Ragged sizes: 105 rows (vocab 105), dims 172
 * and 180 for float weights (quantized rows are whole blocks: 160 and 576),
 * batches of 1, 3, 17 and 64 tokens; weights at odd addresses.
 *
 * `test_gemm --bench [rows n ntok reps]` times gemm_rows (in 32 KiB row
 * chunks, as the prefill waves), the same from the packed copy where the
 * level reads one ("packed", as forward.c calls it), and the matvec once
 * per token over each chunk's rows (the small decode batches' form,
 * forward.c b_mm), for q8_0, q4_0, q5_0, q4_1, q5_1, q4_k, q5_k, q6_k, f16,
 * f32 and bf16 (one summary line each).
 *
 * `test_gemm --bench-attn [npos layers kv_heads group hd reps]` times one
 * decode token's attention over a whole model's KV cache at depth npos
 * (default llama3.2-1b: 16 layers, 8 KV heads of 64, 4 query heads each;
 * npos 4096) for each KV cache type: the decode kernel (attention_heads_kv)
 * and the batched decode token's (attn_rows_heads_kv), thread CPU time of
 * the best of reps, with the cache's bytes read per token. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "base/base.h"
#include "kernels/kernels.h"

#include "testutil.h" /* after kernels.h: ISA levels, DOT_TOL */

/* A test matrix and batch: W (rows, n) of type wt at an odd address, the
 * float twin of each token, and the prepared activations X (ntok rows). */
typedef struct fixture {
	dtype_t wt;
	int64_t rows, n, ntok;
	uint8_t *wbuf, *W;
	size_t rb, xs;
	uint8_t *X;
	float *xf; /* (ntok, n) */
} fixture_t;

static void fixture_make(fixture_t *f, dtype_t wt, int64_t rows, int64_t n,
			 int64_t ntok, uint64_t seed)
{
	rng_t r;
	rng_seed(&r, seed);
	f->wt = wt;
	f->rows = rows;
	f->n = n;
	f->ntok = ntok;
	f->rb = dtype_row_bytes(wt, n);
	f->wbuf = malloc(f->rb * (size_t)rows + 1);
	f->W = f->wbuf + 1;
	float *row = malloc((size_t)n * sizeof(float));
	for (int64_t i = 0; i < rows; i++) {
		uint8_t *w = f->W + (size_t)i * f->rb;
		if (wt == DTYPE_Q8_0 || wt == DTYPE_Q4_0 || wt == DTYPE_Q5_0 ||
		    wt == DTYPE_Q4_1 || wt == DTYPE_Q5_1) {
			/* raw random bytes: every quant (-128 included), scales
			 * (and Q4_1's / Q5_1's mins) random positive and
			 * negative halves of moderate size */
			for (size_t j = 0; j < f->rb; j++)
				w[j] = (uint8_t)rng_next(&r);
			size_t bb = dtype_info[wt].block_bytes;
			int nh = wt == DTYPE_Q4_1 || wt == DTYPE_Q5_1 ? 2 : 1;
			for (size_t b = 0; b < f->rb / bb; b++)
				for (int h2 = 0; h2 < nh; h2++) {
					float d = (rng_float(&r) - 0.5f) * 0.02f;
					uint16_t h = f32_to_fp16(d);
					memcpy(w + b * bb + 2 * (size_t)h2, &h, 2);
				}
		} else {
			for (int64_t j = 0; j < n; j++)
				row[j] = rng_normal(&r) * 0.05f;
			quantize_row(wt, row, w, n);
		}
	}
	free(row);
	dtype_t at = dtype_info[wt].act;
	f->xs = at == DTYPE_F32 ? (size_t)n * 4 : dtype_row_bytes(at, n);
	f->X = malloc(f->xs * (size_t)ntok);
	f->xf = malloc((size_t)(n * ntok) * sizeof(float));
	for (int64_t t = 0; t < ntok; t++) {
		float *x = f->xf + t * n;
		for (int64_t j = 0; j < n; j++)
			x[j] = rng_normal(&r);
		if (t == 1) /* extremes: quants of +-127 throughout */
			for (int64_t j = 0; j < n; j++)
				x[j] = j % 3 ? 4.0f : -4.0f;
		act_prepare(wt, x, f->X + (size_t)t * f->xs, n);
	}
}

static void fixture_free(fixture_t *f)
{
	free(f->wbuf);
	free(f->X);
	free(f->xf);
}

/* gemm_rows over the whole fixture at the current level, into Y (ntok,
 * rows + 3), the padding checked to stay untouched. */
static float *gemm_all(const fixture_t *f)
{
	int64_t ys = f->rows + 3;
	float *Y = malloc((size_t)(ys * f->ntok) * sizeof(float));
	for (int64_t i = 0; i < ys * f->ntok; i++)
		Y[i] = -7.0f;
	/* with the batch's aux for quantized weights (the split test below
	 * runs without, so both paths are checked) */
	void *aux = NULL;
	if (dtype_info[f->wt].act == DTYPE_Q8_0 || dtype_info[f->wt].act == DTYPE_Q8_1) {
		aux = malloc(gemm_aux_bytes(f->n, f->ntok));
		gemm_aux_prepare(f->wt, f->X, f->xs, f->n, f->ntok, aux);
	}
	gemm_rows(f->wt, f->W, f->X, f->xs, aux, Y, ys, f->n, 0, f->rows, f->ntok);
	free(aux);
	for (int64_t t = 0; t < f->ntok; t++)
		for (int64_t i = f->rows; i < ys; i++)
			assert_true(Y[t * ys + i] == -7.0f);
	return Y;
}

static void check_type(dtype_t wt, int64_t n)
{
	const char *lv[TEST_N_ISA_LEVELS];
	int nl = test_levels_available(lv);
	const char *keep = kernels_isa();
	/* 70: past a K-quant run of 64 tokens (kquants_avx2.c KQ_TOK) */
	static const int64_t batches[] = { 1, 3, 17, 64, 70 };
	for (size_t bi = 0; bi < EG_ARRAY_LEN(batches); bi++) {
		fixture_t f;
		fixture_make(&f, wt, 105, n, batches[bi], 1000 + bi * 7 + (uint64_t)wt);
		int64_t ys = f.rows + 3;
		float *ref = NULL; /* generic level */
		for (int l = 0; l < nl; l++) {
			assert_int_equal(kernels_set_isa(lv[l]), 0);
			float *Y = gemm_all(&f);
			/* every output = decode's vec_dot at this level, bit for bit */
			for (int64_t t = 0; t < f.ntok; t++)
				for (int64_t r = 0; r < f.rows; r++) {
					float d = vec_dot(wt, f.W + (size_t)r * f.rb,
							  f.X + (size_t)t * f.xs, n);
					if (f2u(Y[t * ys + r]) != f2u(d))
						fail_msg("%s %s n=%lld ntok=%lld: Y[%lld][%lld] = %a, "
							 "vec_dot %a", lv[l], dtype_info[wt].name,
							 (long long)n, (long long)f.ntok,
							 (long long)t, (long long)r,
							 (double)Y[t * ys + r], (double)d);
				}
			/* the generic twin */
			float *G = malloc((size_t)(ys * f.ntok) * sizeof(float));
			gemm_rows_generic(wt, f.W, f.X, f.xs, G, ys, n, 0, f.rows, f.ntok);
			if (!ref) {
				ref = G;
			} else {
				for (int64_t t = 0; t < f.ntok; t++)
					for (int64_t r = 0; r < f.rows; r++) {
						float a = Y[t * ys + r], g = ref[t * ys + r];
						if (dtype_info[wt].act != DTYPE_F32) { /* quantized: exact */
							assert_int_equal(f2u(a), f2u(g));
							continue;
						}
						/* float types: within the float-dot bound */
						double sabs = 0;
						float *w = malloc((size_t)n * sizeof(float));
						dequantize_row(wt, f.W + (size_t)r * f.rb, w, n);
						for (int64_t j = 0; j < n; j++)
							sabs += fabs((double)w[j] * f.xf[t * n + j]);
						free(w);
						assert_true(fabs((double)a - g) <= DOT_TOL(n, sabs));
					}
				free(G);
			}
			/* split invariance: rows and tokens in uneven pieces; where
			 * the type and n have a packed layout, also from the packed
			 * copy (pack16: 96 of the 105 quantized rows, 104 float
			 * ones), the same bits */
			uint8_t *P = NULL;
			if (pack16_bytes(wt, f.rows, n)) {
				P = malloc(pack16_bytes(wt, f.rows, n));
				pack16(wt, f.W, f.rows, n, P);
			}
			for (int packed = 0; packed < (P ? 2 : 1); packed++) {
				float *S = malloc((size_t)(ys * f.ntok) * sizeof(float));
				static const int64_t rcut[] = { 0, 1, 16, 19, 64, 104, 105 };
				int64_t t0 = 0;
				while (t0 < f.ntok) {
					/* uneven pieces of 1..9 tokens; packed, also 12 and
					 * 16 (the in-place tiles of 8 + 4 and 8 + 8) */
					int64_t t1 = t0 + 1 + (t0 * 5) % 9;
					if (packed && t0 % 3 == 1)
						t1 = t0 + (t0 % 2 ? 12 : 16);
					if (t1 > f.ntok)
						t1 = f.ntok;
					for (size_t c = 0; c + 1 < EG_ARRAY_LEN(rcut); c++)
						gemm_rows_packed(wt, f.W, packed ? P : NULL, f.rows,
								 f.X + (size_t)t0 * f.xs, f.xs, NULL,
								 S + t0 * ys, ys, n, rcut[c],
								 rcut[c + 1], t1 - t0);
					t0 = t1;
				}
				for (int64_t t = 0; t < f.ntok; t++)
					for (int64_t r = 0; r < f.rows; r++)
						if (f2u(S[t * ys + r]) != f2u(Y[t * ys + r]))
							fail_msg("%s %s n=%lld%s: split Y[%lld][%lld] differs",
								 lv[l], dtype_info[wt].name, (long long)n,
								 packed ? " packed" : "", (long long)t,
								 (long long)r);
				/* every batch of 9..16 tokens (the in-place pass of 8 +
				 * 1..8 tokens), from token nt - 9 on */
				for (int64_t nt = 9; nt <= 16 && nt - 9 + nt <= f.ntok; nt++) {
					int64_t t0s = nt - 9;
					for (int64_t i = t0s * ys; i < (t0s + nt) * ys; i++)
						S[i] = -7.0f;
					gemm_rows_packed(wt, f.W, packed ? P : NULL, f.rows,
							 f.X + (size_t)t0s * f.xs, f.xs, NULL,
							 S + t0s * ys, ys, n, 0, f.rows, nt);
					for (int64_t t = t0s; t < t0s + nt; t++)
						for (int64_t r = 0; r < f.rows; r++)
							if (f2u(S[t * ys + r]) != f2u(Y[t * ys + r]))
								fail_msg("%s %s n=%lld%s: %lld tokens: "
									 "Y[%lld][%lld] differs",
									 lv[l], dtype_info[wt].name,
									 (long long)n,
									 packed ? " packed" : "",
									 (long long)nt, (long long)t,
									 (long long)r);
				}
				free(S);
			}
			free(P);
			free(Y);
		}
		free(ref);
		fixture_free(&f);
	}
	assert_int_equal(kernels_set_isa(keep), 0);
}

/* Float rows: a tail of 12 elements (the second half of the last step
 * empty) and of 20 (both halves partly masked); 96 and 576 whole steps,
 * which the packed layout takes. */
static void check_float(dtype_t wt)
{
	check_type(wt, 172);
	check_type(wt, 180);
	check_type(wt, 96);
	check_type(wt, 576);
}

static void test_gemm_f32(void **state) { (void)state; check_float(DTYPE_F32); }
static void test_gemm_f16(void **state) { (void)state; check_float(DTYPE_F16); }
static void test_gemm_bf16(void **state) { (void)state; check_float(DTYPE_BF16); }
static void test_gemm_q8_0(void **state)
{
	(void)state;
	check_type(DTYPE_Q8_0, 160);
	check_type(DTYPE_Q8_0, 576);
}
static void test_gemm_q4_0(void **state)
{
	(void)state;
	check_type(DTYPE_Q4_0, 160);
	check_type(DTYPE_Q4_0, 576);
}

/* Q5_0 runs the Q8_0 kernels (its packed copy in Q8_0's layout, its rows
 * as stored unpacked to Q8_0 quants) on x86: raw random blocks, so every
 * quant and high bit, against its own dot product at every level. */
static void test_gemm_q5_0(void **state)
{
	(void)state;
	check_type(DTYPE_Q5_0, 160);
	check_type(DTYPE_Q5_0, 576);
}

/* Q4_1 and Q5_1 (against Q8_1) run the VNNI gemm with their min term at
 * the avx512vnni level, their matmat below it: raw random blocks (every
 * nibble and fifth bit, scales and mins of both signs), odd block counts,
 * against their own dot product at every level. */
static void test_gemm_q4_1(void **state)
{
	(void)state;
	check_type(DTYPE_Q4_1, 160);
	check_type(DTYPE_Q4_1, 576);
}

static void test_gemm_q5_1(void **state)
{
	(void)state;
	check_type(DTYPE_Q5_1, 160);
	check_type(DTYPE_Q5_1, 576);
}

/* The kquants.h types (Q8_K activations for the K-quants, Q8_0 or Q8_1
 * for the others): every gemm output is the matvec's bits at every level,
 * and the generic's; on x86 each runs its row-x-tokens kernel
 * (kquants_avx2.c, kquants_avx512.c) but Q5_0, which runs the Q8_0 gemm
 * (test_gemm_q5_0), and Q4_1 / Q5_1 at the avx512vnni level (their gemm);
 * on ARM64 the matvec per token. */
static void test_gemm_kquant_types(void **state)
{
	(void)state;
	static const dtype_t ts[] = { DTYPE_Q4_K, DTYPE_Q6_K, DTYPE_Q5_K, DTYPE_Q3_K,
				      DTYPE_Q2_K, DTYPE_Q4_1, DTYPE_Q5_0, DTYPE_Q5_1,
				      DTYPE_IQ4_NL, DTYPE_IQ4_XS };
	for (size_t i = 0; i < EG_ARRAY_LEN(ts); i++) {
		check_type(ts[i], 256);
		check_type(ts[i], 768);
	}
}

/* The aux side data: the same bytes at every level, and the plain
 * definition: Q8_0 rows (the first region) the scale as a float and the
 * sum of the quants; Q8_1 rows (the second region, Q4_1's activations)
 * the scale and the block's s as floats. */
static void test_gemm_aux(void **state)
{
	(void)state;
	const char *lv[TEST_N_ISA_LEVELS];
	int nl = test_levels_available(lv);
	const char *keep = kernels_isa();
	fixture_t f, f1;
	fixture_make(&f, DTYPE_Q8_0, 4, 576, 17, 11);
	fixture_make(&f1, DTYPE_Q4_1, 4, 576, 17, 12);
	size_t nb = 576 / QK, bytes = gemm_aux_bytes(576, 17), half = nb * 17 * 8;
	assert_int_equal(bytes, 2 * half);
	uint8_t *ref = malloc(bytes), *a = malloc(bytes);
	memset(ref, 0, bytes);
	for (int l = 0; l < nl; l++) {
		assert_int_equal(kernels_set_isa(lv[l]), 0);
		memset(a, 0, bytes);
		gemm_aux_prepare(DTYPE_Q8_0, f.X, f.xs, 576, 17, l ? a : ref);
		gemm_aux_prepare(DTYPE_Q4_1, f1.X, f1.xs, 576, 17, l ? a : ref);
		if (l)
			assert_memory_equal(a, ref, bytes);
	}
	const float *dx = (const float *)ref;
	const int32_t *sx = (const int32_t *)(dx + nb * 17);
	const float *dx1 = (const float *)(ref + half), *sf = dx1 + nb * 17;
	for (size_t k = 0; k < 17; k++)
		for (size_t b = 0; b < nb; b++) {
			const uint8_t *blk = f.X + k * f.xs + b * 34;
			uint16_t h;
			memcpy(&h, blk, 2);
			int32_t sum = 0;
			for (int j = 0; j < 32; j++)
				sum += (int8_t)blk[2 + j];
			assert_true(dx[k * nb + b] == fp16_to_f32(h));
			assert_int_equal(sx[k * nb + b], sum);
			const uint8_t *b1 = f1.X + k * f1.xs + b * 36; /* block_q8_1 */
			uint16_t h1, s1;
			memcpy(&h1, b1, 2);
			memcpy(&s1, b1 + 2, 2);
			assert_true(dx1[k * nb + b] == fp16_to_f32(h1));
			assert_true(sf[k * nb + b] == fp16_to_f32(s1));
		}
	free(ref);
	free(a);
	fixture_free(&f);
	fixture_free(&f1);
	assert_int_equal(kernels_set_isa(keep), 0);
}

/* Empty ranges write nothing. */
/* attn_rows_heads: the query heads of one KV head at one position, each
 * the same bits as attn_rows of that query alone and as the decode path's
 * attention_heads, at every level; 1..20 heads (past one group of lanes),
 * head sizes 64 and 40 (a tail), windows of 1 and 37 positions. */
static void test_attn_heads(void **state)
{
	(void)state;
	const char *lv[TEST_N_ISA_LEVELS];
	int nl = test_levels_available(lv);
	const char *keep = kernels_isa();
	rng_t r;
	rng_seed(&r, 11);
	static const int64_t hds[] = {64, 40};
	static const int32_t poss[] = {0, 36};
	static const int32_t nhs[] = {1, 3, 8, 17, 20};
	const int64_t kvs = 3 * 64 + 8, npos = 37, nhmax = 20;
	float *K = malloc((size_t)(npos * kvs) * sizeof(float));
	float *V = malloc((size_t)(npos * kvs) * sizeof(float));
	float *q = malloc((size_t)(nhmax * 64) * sizeof(float));
	float *out = malloc((size_t)(nhmax * 64) * sizeof(float));
	float *one = malloc(64 * sizeof(float));
	float *dec = malloc((size_t)(nhmax * 64) * sizeof(float));
	float *sc = malloc((size_t)(nhmax * npos) * sizeof(float));
	for (int64_t i = 0; i < npos * kvs; i++) {
		K[i] = (rng_float(&r) * 2 - 1);
		V[i] = (rng_float(&r) * 2 - 1);
	}
	for (int64_t i = 0; i < nhmax * 64; i++)
		q[i] = (rng_float(&r) * 2 - 1);
	for (int l = 0; l < nl; l++) {
		assert_int_equal(kernels_set_isa(lv[l]), 0);
		for (size_t a = 0; a < EG_ARRAY_LEN(hds); a++)
			for (size_t b = 0; b < EG_ARRAY_LEN(poss); b++)
				for (size_t c = 0; c < EG_ARRAY_LEN(nhs); c++) {
					int64_t hd = hds[a];
					int32_t pos = poss[b], nh = nhs[c];
					assert_int_equal(attn_rows_heads(q, hd, K, V, kvs, out, hd, hd,
									 pos, nh), 0);
					attention_heads(dec, q, K, V, kvs, pos + 1, (int)hd, sc, nh,
							npos);
					for (int32_t h = 0; h < nh; h++) {
						assert_int_equal(attn_rows(q + h * hd, hd, K, V, kvs, one,
									   hd, hd, pos, 1), 0);
						for (int64_t i = 0; i < hd; i++)
							if (f2u(out[h * hd + i]) != f2u(one[i]) ||
							    f2u(out[h * hd + i]) != f2u(dec[h * hd + i]))
								fail_msg("%s hd %lld pos %d heads %d: head %d "
									 "element %lld differs", lv[l],
									 (long long)hd, pos, nh, h,
									 (long long)i);
					}
				}
	}
	assert_int_equal(kernels_set_isa(keep), 0);
	assert_int_equal(attn_rows_heads(q, 64, K, V, kvs, out, 64, 64, 3, 0), 0);
	free(K);
	free(V);
	free(q);
	free(out);
	free(one);
	free(dec);
	free(sc);
}

/* attn_rows over a long causal batch: 37 queries at positions 30..66 (two
 * groups of lanes and a part one; passes of several queries with their
 * own last keys), each the same bits as the generic twin on that query
 * alone, at every level and KV type, head sizes 64 and 40 (a tail).
 * Query 3 holds an infinity (its scores inf and NaN: the softmax's
 * comparisons in the generic's order decide them) and query 20 large
 * values (exponentials that underflow to 0). */
static void test_attn_rows_batch(void **state)
{
	(void)state;
	const char *lv[TEST_N_ISA_LEVELS];
	int nl = test_levels_available(lv);
	const char *keep = kernels_isa();
	rng_t r;
	rng_seed(&r, 12);
	enum { NPOS = 67, NQ = 37, KVD = 3 * 64 };
	const int32_t pos0 = NPOS - NQ;
	static const int64_t hds[] = {64, 40};
	float *x = malloc(KVD * sizeof(float));
	float *q = malloc((size_t)NQ * 64 * sizeof(float));
	float *out = malloc((size_t)NQ * 64 * sizeof(float));
	float *one = malloc(64 * sizeof(float));
	for (int kt = 0; kt < KV_TYPE_COUNT; kt++) {
		size_t rb = kv_row_bytes((kv_type_t)kt, KVD);
		uint8_t *K = malloc(rb * NPOS), *V = malloc(rb * NPOS);
		for (int t = 0; t < NPOS; t++) {
			for (int i = 0; i < KVD; i++)
				x[i] = rng_float(&r) * 2 - 1;
			kv_store_row((kv_type_t)kt, x, K + (size_t)t * rb, KVD);
			for (int i = 0; i < KVD; i++)
				x[i] = rng_float(&r) * 2 - 1;
			kv_store_row((kv_type_t)kt, x, V + (size_t)t * rb, KVD);
		}
		for (int i = 0; i < NQ * 64; i++)
			q[i] = rng_float(&r) * 2 - 1;
		for (int l = 0; l < nl; l++) {
			assert_int_equal(kernels_set_isa(lv[l]), 0);
			for (size_t a = 0; a < EG_ARRAY_LEN(hds); a++) {
				int64_t hd = hds[a];
				q[3 * hd + 1] = INFINITY;
				for (int64_t i = 0; i < hd; i++)
					q[20 * hd + i] *= 300.0f;
				assert_int_equal(attn_rows_kv((kv_type_t)kt, q, hd, K, V, rb, out, hd,
							      hd, pos0, NQ), 0);
				for (int32_t j = 0; j < NQ; j++) {
					assert_int_equal(attn_rows_kv_generic((kv_type_t)kt, q + j * hd, hd,
									      K, V, rb, one, hd, hd,
									      pos0 + j, 1), 0);
					for (int64_t i = 0; i < hd; i++)
						if (f2u(out[j * hd + i]) != f2u(one[i]))
							fail_msg("%s kv %s hd %lld: query %d element "
								 "%lld differs", lv[l],
								 kv_type_names[kt], (long long)hd, j,
								 (long long)i);
				}
				for (int64_t i = 0; i < hd; i++)
					q[20 * hd + i] /= 300.0f;
				q[3 * hd + 1] = 0.5f;
			}
		}
		free(K);
		free(V);
	}
	assert_int_equal(kernels_set_isa(keep), 0);
	free(x);
	free(q);
	free(out);
	free(one);
}

/* attn_rows_group_kv: the query heads of one KV head together, at GQA
 * ratios 1, 2, 4 and 8, every level and KV type, head sizes 64 and 40 (a
 * tail), a causal batch of 37 queries at positions 150..186 (three groups
 * of lanes, several value tiles, passes with their own last keys) and of
 * 5 at 0..4; queries and outputs at token strides other than the heads'
 * (and apart from each other). Every head's query is the bits of the
 * decode path's generic twin (attention_heads_kv_generic over its
 * position's keys), at the level and by the group form's generic twin.
 * One head's query 20 is scaled up (exponentials that underflow to 0). */
static void test_attn_rows_group(void **state)
{
	(void)state;
	const char *lv[TEST_N_ISA_LEVELS];
	int nl = test_levels_available(lv);
	const char *keep = kernels_isa();
	rng_t r;
	rng_seed(&r, 13);
	enum { NPOS = 187, KVD = 3 * 64, NHMAX = 8, HDMAX = 64 };
	static const int64_t hds[] = {64, 40};
	static const int32_t ratios[] = {1, 2, 4, 8};
	static const int32_t nqs[] = {37, 5}, pos0s[] = {NPOS - 37, 0};
	const int64_t Q = NHMAX * HDMAX + 3, O = NHMAX * HDMAX + 5; /* token strides */
	float *x = malloc(KVD * sizeof(float));
	float *q = malloc((size_t)(37 * Q) * sizeof(float));
	float *out = malloc((size_t)(37 * O) * sizeof(float));
	float *ref = malloc((size_t)(NHMAX * HDMAX) * sizeof(float));
	float *sc = malloc((size_t)(NHMAX * NPOS) * sizeof(float));
	for (int64_t i = 0; i < 37 * Q; i++)
		q[i] = rng_float(&r) * 2 - 1;
	int checked = 0;
	for (int kt = 0; kt < KV_TYPE_COUNT; kt++) {
		size_t rb = kv_row_bytes((kv_type_t)kt, KVD);
		uint8_t *K = malloc(rb * NPOS), *V = malloc(rb * NPOS);
		for (int t = 0; t < NPOS; t++) {
			for (int i = 0; i < KVD; i++)
				x[i] = rng_float(&r) * 2 - 1;
			kv_store_row((kv_type_t)kt, x, K + (size_t)t * rb, KVD);
			for (int i = 0; i < KVD; i++)
				x[i] = rng_float(&r) * 2 - 1;
			kv_store_row((kv_type_t)kt, x, V + (size_t)t * rb, KVD);
		}
		/* the KV head at element 64 of a row (a whole Q8_0 block in) */
		const size_t ho = kv_row_bytes((kv_type_t)kt, 64);
		for (int l = 0; l <= nl; l++) {
			if (l < nl)
				assert_int_equal(kernels_set_isa(lv[l]), 0);
			const char *name = l < nl ? lv[l] : "generic twin";
			for (size_t a = 0; a < EG_ARRAY_LEN(hds); a++)
				for (size_t c = 0; c < EG_ARRAY_LEN(ratios); c++)
					for (size_t n = 0; n < EG_ARRAY_LEN(nqs); n++) {
						int64_t hd = hds[a];
						int32_t nh = ratios[c], nq = nqs[n], pos0 = pos0s[n];
						for (int64_t i = 0; i < hd; i++)
							q[20 * Q + i] *= 300.0f;
						memset(out, 0xff, (size_t)(37 * O) * sizeof(float));
						int rc = l < nl ? attn_rows_group_kv((kv_type_t)kt, q, Q, hd,
										    K + ho, V + ho, rb, out,
										    O, hd, hd, pos0, nq, nh)
								: attn_rows_group_kv_generic(
									  (kv_type_t)kt, q, Q, hd, K + ho,
									  V + ho, rb, out, O, hd, hd, pos0,
									  nq, nh);
						assert_int_equal(rc, 0);
						for (int32_t j = 0; j < nq; j++) {
							attention_heads_kv_generic((kv_type_t)kt, ref, q + j * Q,
										   K + ho, V + ho, rb,
										   pos0 + j + 1, (int)hd, sc,
										   nh, NPOS);
							for (int32_t h = 0; h < nh; h++)
								if (memcmp(out + j * O + h * hd, ref + h * hd,
									   (size_t)hd * sizeof(float)))
									fail_msg("%s kv %s hd %lld ratio %d: "
										 "head %d query %d at %d "
										 "differs", name,
										 kv_type_names[kt],
										 (long long)hd, nh, h, j,
										 pos0 + j);
						}
						for (int64_t i = 0; i < hd; i++)
							q[20 * Q + i] /= 300.0f;
						checked++;
					}
		}
		free(K);
		free(V);
	}
	assert_int_equal(kernels_set_isa(keep), 0);
	/* no heads or no queries: nothing written, 0 */
	memset(out, 0, sizeof(float));
	assert_int_equal(attn_rows_group_kv(KV_F32, q, Q, 64, x, x, 64, out, O, 64, 64, 0, 3, 0),
			 0);
	assert_int_equal(attn_rows_group_kv(KV_F32, q, Q, 64, x, x, 64, out, O, 64, 64, 0, 0, 2),
			 0);
	assert_int_equal(f2u(out[0]), 0);
	print_message("attn_rows_group: %d cases bit-equal to the decode twin\n", checked);
	free(x);
	free(q);
	free(out);
	free(ref);
	free(sc);
}

/* attn_expf_rows at every level: expf's bits on every 2039th float (all
 * signs, exponents and NaN payloads), on every 101st float of [-1, -0]
 * (softmax's x - max), and on the edges of the vector form's range; with
 * glibc on x86-64 the vector form must be the one in use (its probe
 * agreed). */
static void test_attn_expf(void **state)
{
	(void)state;
	const char *lv[TEST_N_ISA_LEVELS];
	int nl = test_levels_available(lv);
	const char *keep = kernels_isa();
	enum { N = 1 << 16 };
	float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
	static const float edge[] = { 88.0f, -88.0f, 87.99999f, -87.99999f, 88.72283f,
				      -103.27893f, -103.97208f, -104.0f, 0.0f, -0.0f,
				      1e-30f, -1e-30f, INFINITY, -INFINITY, NAN };
	for (int l = 0; l < nl; l++) {
		assert_int_equal(kernels_set_isa(lv[l]), 0);
		uint64_t bad = 0, done = 0;
		for (int pass = 0; pass < 2; pass++) {
			uint64_t step = pass ? 101 : 2039, lo = pass ? 0x80000000u : 0;
			uint64_t hi = pass ? 0xbf800001u : 0x100000000u;
			for (uint64_t u = lo; u < hi;) {
				int n = 0;
				for (; n < N && u < hi; n++, u += step) {
					uint32_t b = (uint32_t)u;
					memcpy(&x[n], &b, 4);
				}
				if (!done)
					memcpy(x, edge, sizeof edge);
				int w = attn_expf_rows(x, y, n);
#if defined(__x86_64__) && defined(__GLIBC__)
				/* glibc's expf is the one the vector form
				 * follows: in use at both x86 SIMD levels */
				if (w == 0 && strncmp(lv[l], "avx", 3) == 0)
					fail_msg("%s: the vector expf is not in use", lv[l]);
#else
				(void)w;
#endif
				for (int i = 0; i < n; i++) {
					float e = expf(x[i]);
					bad += f2u(e) != f2u(y[i]);
				}
				done += (uint64_t)n;
			}
		}
		if (bad)
			fail_msg("%s: attn_expf_rows differs from expf on %llu of %llu floats", lv[l],
				 (unsigned long long)bad, (unsigned long long)done);
	}
	assert_int_equal(kernels_set_isa(keep), 0);
	free(x);
	free(y);
}

static void test_gemm_empty(void **state)
{
	(void)state;
	fixture_t f;
	fixture_make(&f, DTYPE_Q8_0, 8, 64, 2, 5);
	float y[16];
	for (int i = 0; i < 16; i++)
		y[i] = 3.0f;
	gemm_rows(DTYPE_Q8_0, f.W, f.X, f.xs, NULL, y, 8, 64, 4, 4, 2);
	gemm_rows(DTYPE_Q8_0, f.W, f.X, f.xs, NULL, y, 8, 64, 0, 8, 0);
	for (int i = 0; i < 16; i++)
		assert_true(y[i] == 3.0f);
	fixture_free(&f);
}

/* ---------------------------------------------------------- benchmark */

/* The calling thread's CPU time in ns: on a machine shared with other
 * work, the time the kernel ran rather than the time it waited. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int bench(int argc, char **argv)
{
	int64_t rows = argc > 2 ? atoll(argv[2]) : 1536;
	int64_t n = argc > 3 ? atoll(argv[3]) : 576;
	int64_t ntok = argc > 4 ? atoll(argv[4]) : 64;
	int reps = argc > 5 ? atoi(argv[5]) : 20;
	static const dtype_t types[] = { DTYPE_Q8_0, DTYPE_Q4_0, DTYPE_Q5_0, DTYPE_Q4_1,
					 DTYPE_Q5_1, DTYPE_Q4_K, DTYPE_Q5_K, DTYPE_Q6_K,
					 DTYPE_F16, DTYPE_F32, DTYPE_BF16 };
	for (size_t ti = 0; ti < EG_ARRAY_LEN(types); ti++) {
		if (n % dtype_info[types[ti]].block) { /* K-quants: n of whole super-blocks */
			printf("bench gemm: %s skipped: n=%lld is not a multiple of its block (%lld)\n",
			       dtype_info[types[ti]].name, (long long)n,
			       (long long)dtype_info[types[ti]].block);
			continue;
		}
		fixture_t f;
		fixture_make(&f, types[ti], rows, n, ntok, 9);
		float *Y = malloc((size_t)(rows * ntok) * sizeof(float));
		void *aux = NULL;
		if (dtype_info[f.wt].act == DTYPE_Q8_0 || dtype_info[f.wt].act == DTYPE_Q8_1) {
			aux = malloc(gemm_aux_bytes(n, ntok));
			gemm_aux_prepare(f.wt, f.X, f.xs, n, ntok, aux);
		}
		/* chunks of about 32 KiB of weights, 16 rows at least, as
		 * forward.c's batch waves */
		int64_t chunk = (int64_t)((32u << 10) / f.rb);
		chunk = chunk < 16 ? 16 : (chunk + 15) & ~(int64_t)15;
		/* the packed copy forward.c passes where the level reads one */
		uint8_t *P = NULL;
		if (pack16_used(f.wt, n) && pack16_bytes(f.wt, rows, n)) {
			P = malloc(pack16_bytes(f.wt, rows, n));
			pack16(f.wt, f.W, rows, n, P);
		}
		double best_g = 1e30, best_p = 1e30, best_m = 1e30;
		for (int k = 0; k < reps; k++) {
			uint64_t a = cpu_ns();
			for (int64_t r0 = 0; r0 < rows; r0 += chunk)
				gemm_rows(f.wt, f.W, f.X, f.xs, aux, Y, rows, n, r0,
					  r0 + chunk < rows ? r0 + chunk : rows, ntok);
			uint64_t b = cpu_ns();
			/* forward.c's small-batch form: per chunk, the matvec
			 * once per token over the chunk's rows */
			for (int64_t r0 = 0; r0 < rows; r0 += chunk)
				for (int64_t t = 0; t < ntok; t++)
					matvec_range(f.wt, f.W, P, rows, f.X + (size_t)t * f.xs,
						     Y + t * rows + r0, n, r0,
						     r0 + chunk < rows ? r0 + chunk : rows);
			uint64_t c = cpu_ns();
			for (int64_t r0 = 0; P && r0 < rows; r0 += chunk)
				gemm_rows_packed(f.wt, f.W, P, rows, f.X, f.xs, aux, Y, rows, n,
						 r0, r0 + chunk < rows ? r0 + chunk : rows, ntok);
			uint64_t d = cpu_ns();
			if ((double)(b - a) < best_g)
				best_g = (double)(b - a);
			if ((double)(c - b) < best_m)
				best_m = (double)(c - b);
			if ((double)(d - c) < best_p)
				best_p = (double)(d - c);
		}
		double macs = (double)rows * (double)n * (double)ntok;
		printf("bench gemm: %s %s rows=%lld n=%lld ntok=%lld gemm %.1f GMAC/s ",
		       kernels_isa(), dtype_info[f.wt].name, (long long)rows,
		       (long long)n, (long long)ntok, macs / best_g);
		if (P)
			printf("packed %.1f GMAC/s ", macs / best_p);
		printf("matvec-per-token %.1f GMAC/s ratio %.2f (min of %d, thread CPU time)\n",
		       macs / best_m, best_m / best_g, reps);
		free(P);
		free(aux);
		free(Y);
		fixture_free(&f);
	}
	return 0;
}

/* One token's attention over every layer and KV head of a cache of type
 * kt, positions 0..npos-1, by the decode kernel (heads) or the batch's
 * decode-token kernel; the thread CPU ns. *hash: the outputs' FNV-1a, so
 * that builds and kernels can be seen to give the same bits. */
static uint64_t attn_token(kv_type_t kt, const uint8_t *K, const uint8_t *V, size_t rb,
			   int layers, int kvh, int g, int hd, int npos, const float *q,
			   float *out, float *sc, bool batch, uint64_t *hash)
{
	uint64_t ns = 0, h64 = 1469598103934665603u;
	for (int l = 0; l < layers; l++)
		for (int h = 0; h < kvh; h++) {
			size_t off = (size_t)l * (size_t)npos * rb + kv_row_bytes(kt, (int64_t)h * hd);
			uint64_t a = cpu_ns();
			if (batch)
				attn_rows_heads_kv(kt, q, hd, K + off, V + off, rb, out, hd, hd,
						   npos - 1, g);
			else
				attention_heads_kv(kt, out, q, K + off, V + off, rb, npos, hd, sc, g,
						   npos);
			ns += cpu_ns() - a;
			h64 = hash64(out, sizeof(float) * (size_t)(g * hd), h64);
		}
	*hash = h64;
	return ns;
}

static int bench_attn(int argc, char **argv)
{
	int npos = argc > 2 ? atoi(argv[2]) : 4096, layers = argc > 3 ? atoi(argv[3]) : 16;
	int kvh = argc > 4 ? atoi(argv[4]) : 8, g = argc > 5 ? atoi(argv[5]) : 4;
	int hd = argc > 6 ? atoi(argv[6]) : 64, reps = argc > 7 ? atoi(argv[7]) : 5;
	rng_t r;
	rng_seed(&r, 3);
	float *row = malloc(sizeof(float) * (size_t)(kvh * hd));
	float *q = malloc(sizeof(float) * (size_t)(g * hd)), *out = malloc(sizeof(float) * (size_t)(g * hd));
	float *sc = malloc(sizeof(float) * (size_t)g * (size_t)npos);
	for (int i = 0; i < g * hd; i++)
		q[i] = rng_float(&r) * 2 - 1;
	static const kv_type_t types[] = { KV_F32, KV_F16, KV_Q8_0 };
	for (size_t ti = 0; ti < EG_ARRAY_LEN(types); ti++) {
		kv_type_t kt = types[ti];
		size_t rb = kv_row_bytes(kt, (int64_t)kvh * hd), bytes = rb * (size_t)npos * (size_t)layers;
		uint8_t *K = malloc(bytes), *V = malloc(bytes);
		for (size_t t = 0; t < (size_t)npos * (size_t)layers; t++) {
			for (int i = 0; i < kvh * hd; i++)
				row[i] = rng_float(&r) * 2 - 1;
			kv_store_row(kt, row, K + t * rb, (int64_t)kvh * hd);
			kv_store_row(kt, row, V + t * rb, (int64_t)kvh * hd);
		}
		double best[2] = { 1e30, 1e30 };
		uint64_t hash[2];
		for (int k = 0; k < reps; k++)
			for (int b = 0; b < 2; b++) {
				double ns = (double)attn_token(kt, K, V, rb, layers, kvh, g, hd, npos, q,
							       out, sc, b, &hash[b]);
				best[b] = ns < best[b] ? ns : best[b];
			}
		printf("bench attn: %s kv %-4s npos=%d layers=%d kv_heads=%d group=%d hd=%d "
		       "cache %.1f MiB/token decode %.3f ms (%.1f GB/s) batch-token %.3f ms "
		       "(best of %d, thread CPU time) hash %016llx %016llx\n",
		       kernels_isa(), kv_type_names[kt], npos, layers, kvh, g, hd,
		       2.0 * (double)bytes / 1048576.0, best[0] / 1e6, 2.0 * (double)bytes / best[0],
		       best[1] / 1e6, reps, (unsigned long long)hash[0],
		       (unsigned long long)hash[1]);
		free(K);
		free(V);
	}
	free(row);
	free(q);
	free(out);
	free(sc);
	return 0;
}

/* One KV head's attention over a whole prompt of npos tokens, as the
 * prefill waves run it (forward.c b_attn_chunk): chunks of 16 queries at
 * positions 0, 16, ..., the g query heads of the KV head in each chunk,
 * either together (attn_rows_group_kv) or one call per head
 * (attn_rows_kv); the thread CPU ns, and the outputs' FNV-1a in *hash. */
static uint64_t prompt_attn(kv_type_t kt, const uint8_t *K, const uint8_t *V, size_t rb,
			    int g, int hd, int npos, const float *q, float *out, bool group,
			    uint64_t *hash)
{
	uint64_t ns = 0, h64 = 1469598103934665603u;
	const int64_t Q = (int64_t)g * hd;
	for (int p0 = 0; p0 < npos; p0 += 16) {
		int nq = npos - p0 < 16 ? npos - p0 : 16;
		uint64_t a = cpu_ns();
		if (group)
			attn_rows_group_kv(kt, q, Q, hd, K, V, rb, out, Q, hd, hd, p0, nq, g);
		else
			for (int h = 0; h < g; h++)
				attn_rows_kv(kt, q + h * hd, Q, K, V, rb, out + h * hd, Q, hd, p0,
					     nq);
		ns += cpu_ns() - a;
		h64 = hash64(out, sizeof(float) * (size_t)(nq * Q), h64);
	}
	*hash = h64;
	return ns;
}

/* test_gemm --bench-prompt-attn [npos kv_heads group hd reps]: one KV
 * head of a cache of kv_heads heads (a row holds them all, as forward.c's
 * cache), its g query heads over an npos-token prompt, each KV type;
 * one call per head against the heads together, best of reps. */
static int bench_prompt_attn(int argc, char **argv)
{
	int npos = argc > 2 ? atoi(argv[2]) : 4096, kvh = argc > 3 ? atoi(argv[3]) : 8;
	int g = argc > 4 ? atoi(argv[4]) : 4, hd = argc > 5 ? atoi(argv[5]) : 64;
	int reps = argc > 6 ? atoi(argv[6]) : 3;
	if (npos < 1 || kvh < 1 || g < 1 || hd < 32 || hd % 32 || reps < 1) {
		fprintf(stderr, "test_gemm --bench-prompt-attn: npos, kv_heads, group and reps "
				"must be positive, hd a multiple of 32\n");
		return 2;
	}
	rng_t r;
	rng_seed(&r, 4);
	float *row = malloc(sizeof(float) * (size_t)(kvh * hd));
	float *q = malloc(sizeof(float) * (size_t)(16 * g * hd));
	float *out = malloc(sizeof(float) * (size_t)(16 * g * hd));
	for (int i = 0; i < 16 * g * hd; i++)
		q[i] = rng_float(&r) * 2 - 1;
	static const kv_type_t types[] = {KV_F32, KV_F16, KV_Q8_0};
	for (size_t ti = 0; ti < EG_ARRAY_LEN(types); ti++) {
		kv_type_t kt = types[ti];
		size_t rb = kv_row_bytes(kt, (int64_t)kvh * hd);
		uint8_t *K = malloc(rb * (size_t)npos), *V = malloc(rb * (size_t)npos);
		for (int t = 0; t < npos; t++) {
			for (int i = 0; i < kvh * hd; i++)
				row[i] = rng_float(&r) * 2 - 1;
			kv_store_row(kt, row, K + (size_t)t * rb, (int64_t)kvh * hd);
			for (int i = 0; i < kvh * hd; i++)
				row[i] = rng_float(&r) * 2 - 1;
			kv_store_row(kt, row, V + (size_t)t * rb, (int64_t)kvh * hd);
		}
		double best[2] = {1e30, 1e30};
		uint64_t hash[2];
		for (int k = 0; k < reps; k++)
			for (int b = 0; b < 2; b++) {
				double ns = (double)prompt_attn(kt, K, V, rb, g, hd, npos, q, out, b,
								&hash[b]);
				best[b] = ns < best[b] ? ns : best[b];
			}
		printf("bench prompt-attn: %s kv %-4s npos=%d kv_heads=%d group=%d hd=%d "
		       "per-head %.1f ms heads-together %.1f ms ratio %.2f (best of %d, thread "
		       "CPU time) hash %016llx %016llx\n",
		       kernels_isa(), kv_type_names[kt], npos, kvh, g, hd, best[0] / 1e6,
		       best[1] / 1e6, best[0] / best[1], reps, (unsigned long long)hash[0],
		       (unsigned long long)hash[1]);
		free(K);
		free(V);
	}
	free(row);
	free(q);
	free(out);
	return 0;
}

int main(int argc, char **argv)
{
	kernels_init();
	if (argc > 1 && strcmp(argv[1], "--bench") == 0)
		return bench(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--bench-attn") == 0)
		return bench_attn(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--bench-prompt-attn") == 0)
		return bench_prompt_attn(argc, argv);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gemm_f32),
		cmocka_unit_test(test_gemm_f16),
		cmocka_unit_test(test_gemm_bf16),
		cmocka_unit_test(test_gemm_q8_0),
		cmocka_unit_test(test_gemm_q4_0),
		cmocka_unit_test(test_gemm_q5_0),
		cmocka_unit_test(test_gemm_q4_1),
		cmocka_unit_test(test_gemm_q5_1),
		cmocka_unit_test(test_gemm_kquant_types),
		cmocka_unit_test(test_gemm_aux),
		cmocka_unit_test(test_gemm_empty),
		cmocka_unit_test(test_attn_heads),
		cmocka_unit_test(test_attn_rows_batch),
		cmocka_unit_test(test_attn_rows_group),
		cmocka_unit_test(test_attn_expf),
	};
	return test_run_group_levels(tests);
}
