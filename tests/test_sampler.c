/* The sampler (model/sampler.h) on logits no model should produce: every
 * input gives a token inside the vocabulary, read from inside the
 * sampler's arrays (the ASan build of this test catches a read outside
 * them). NaN logits, a one-token vocabulary (top-p's cutoff would divide
 * by zero), infinities, and a temperature so small that the scaled logits
 * overflow (greedy, the limit, is what comes out), in both modes, with
 * top-k and top-p; then sampler_find_nonfinite against a plain loop. */
#include "testutil.h"

#include <float.h>
#include <math.h>

#include "base/base.h"
#include "model/sampler.h"

/* One sample of logits x (n,) (copied: the sampler may change them). */
static int32_t sample_once(const float *x, int32_t n, float temp, float top_p,
			   int32_t top_k, sampler_mode_t mode)
{
	sampler_params_t p = {.temp = temp, .top_p = top_p, .top_k = top_k,
			      .seed = 7, .mode = mode};
	sampler_t *s = sampler_new(n, &p);
	assert_non_null(s);
	float *copy = malloc((size_t)n * sizeof *copy);
	memcpy(copy, x, (size_t)n * sizeof *copy);
	int32_t id = sampler_sample(s, copy);
	free(copy);
	sampler_free(s);
	return id;
}

/* The parameter sets every case runs with: each mode, greedy, top-p below
 * 1 (the cutoff path), top-k alone, top-k with top-p, and neither. */
static const struct {
	float temp, top_p;
	int32_t top_k;
	sampler_mode_t mode;
} params[] = {
	{1.0f, 0.9f, 0, SAMPLER_EGANG},   {1.0f, 0.9f, 0, SAMPLER_LLAMA2C},
	{0.0f, 1.0f, 0, SAMPLER_EGANG},   {1.0f, 1.0f, 3, SAMPLER_EGANG},
	{0.7f, 0.5f, 2, SAMPLER_EGANG},   {1.0f, 1.0f, 0, SAMPLER_EGANG},
	{1.0f, 1.0f, 0, SAMPLER_LLAMA2C}, {1.0f, 1e-30f, 0, SAMPLER_EGANG},
	{1.0f, 1e-30f, 0, SAMPLER_LLAMA2C},
};

/* Every parameter set on x (n,): the token is inside the vocabulary, and
 * equal to want when want >= 0. */
static void expect_all(const char *what, const float *x, int32_t n, int32_t want)
{
	for (size_t k = 0; k < EG_ARRAY_LEN(params); k++) {
		int32_t id = sample_once(x, n, params[k].temp, params[k].top_p,
					 params[k].top_k, params[k].mode);
		if (id < 0 || id >= n || (want >= 0 && id != want))
			fail_msg("%s, params %zu: token %d (vocab %d, want %d)", what,
				 k, id, n, want);
	}
}

/* No candidate passes top-p's cutoff when every probability is NaN. */
static void test_all_nan(void **state)
{
	(void)state;
	static const int32_t ns[] = {1, 2, 3, 8, 17, 512};
	float x[512];
	for (size_t k = 0; k < EG_ARRAY_LEN(ns); k++) {
		for (int32_t i = 0; i < ns[k]; i++)
			x[i] = NAN;
		expect_all("all NaN", x, ns[k], -1);
		x[ns[k] - 1] = 1.0f; /* NaN first, one number after */
		expect_all("NaN then a number", x, ns[k], -1);
	}
}

/* A one-token vocabulary: (1 - p) / (n - 1) is infinite; the token is 0. */
static void test_one_token(void **state)
{
	(void)state;
	const float vals[] = {0.0f, -3.0f, 12.5f, -INFINITY, INFINITY, NAN, FLT_MAX};
	for (size_t k = 0; k < EG_ARRAY_LEN(vals); k++)
		expect_all("one token", &vals[k], 1, 0);
}

/* An infinite logit is the token; all -inf gives the first; NaN anywhere
 * still gives a token inside the vocabulary. */
static void test_infinities(void **state)
{
	(void)state;
	float x[64];
	for (int32_t i = 0; i < 64; i++)
		x[i] = (float)(i % 7) - 3.0f;
	x[41] = INFINITY;
	expect_all("one +inf", x, 64, 41);
	x[9] = INFINITY;
	expect_all("two +inf", x, 64, 9);
	for (int32_t i = 0; i < 64; i++)
		x[i] = -INFINITY;
	expect_all("all -inf", x, 64, 0);
	x[30] = 2.0f;
	expect_all("-inf but one", x, 64, 30);
	x[5] = NAN;
	expect_all("NaN and -inf", x, 64, -1);
}

/* Temperatures that scale finite logits past the float range (positive
 * logits to +inf, negative ones to -inf, all of them when every logit is
 * negative): greedy's token. A temperature that overflows nothing samples
 * as before (the one big logit takes all the probability). */
static void test_tiny_temperature(void **state)
{
	(void)state;
	float x[100];
	for (int32_t i = 0; i < 100; i++)
		x[i] = (float)((i * 37) % 100) / 10.0f - 5.0f;
	int32_t best = sampler_argmax(x, 100);
	const float temps[] = {1e-40f, 1e-44f, 1e-38f, 1e-30f};
	for (size_t t = 0; t < EG_ARRAY_LEN(temps); t++)
		for (int mode = 0; mode < SAMPLER_COUNT; mode++)
			for (int k = 0; k < 3; k++) {
				float top_p = k == 1 ? 0.9f : 1.0f;
				int32_t id = sample_once(x, 100, temps[t], top_p,
							 k == 2 ? 5 : 0, (sampler_mode_t)mode);
				if (id != best)
					fail_msg("temp %g mode %d case %d: token %d, greedy %d",
						 (double)temps[t], mode, k, id, best);
			}
	for (int32_t i = 0; i < 100; i++)
		x[i] = -1.0f - (float)i; /* all negative: all -inf when scaled */
	assert_int_equal(sample_once(x, 100, 1e-40f, 0.9f, 0, SAMPLER_EGANG), 0);
	assert_int_equal(sample_once(x, 100, 1e-40f, 0.9f, 0, SAMPLER_LLAMA2C), 0);
}

/* Random logits with NaNs, infinities, huge and tiny values, random
 * vocabularies, temperatures and cutoffs: always a token inside. */
static void test_random_garbage(void **state)
{
	(void)state;
	rng_t r;
	rng_seed(&r, 33);
	float x[300];
	for (int it = 0; it < 3000; it++) {
		int32_t n = 1 + (int32_t)(rng_next(&r) % 300);
		for (int32_t i = 0; i < n; i++) {
			uint64_t u = rng_next(&r) % 16;
			x[i] = u == 0   ? NAN
			       : u == 1 ? INFINITY
			       : u == 2 ? -INFINITY
			       : u == 3 ? FLT_MAX
			       : u == 4 ? -FLT_MAX
			       : u == 5 ? 1e-45f
					: rng_normal(&r) * 10.0f;
		}
		float temp = (rng_next(&r) & 1) ? rng_float(&r) * 2.0f : 1e-40f;
		float top_p = (rng_next(&r) & 1) ? 1.0f : rng_float(&r) + 1e-6f;
		if (top_p > 1.0f)
			top_p = 1.0f;
		int32_t top_k = (int32_t)(rng_next(&r) % 4);
		sampler_mode_t mode = (sampler_mode_t)(rng_next(&r) % SAMPLER_COUNT);
		int32_t id = sample_once(x, n, temp, top_p, top_k, mode);
		if (id < 0 || id >= n)
			fail_msg("iteration %d: token %d of vocab %d", it, id, n);
	}
}

/* Parameters the sampler refuses, and a vocabulary with no token. */
static void test_refused(void **state)
{
	(void)state;
	sampler_params_t ok = {.temp = 1.0f, .top_p = 0.9f};
	assert_null(sampler_new(0, &ok));
	assert_non_null(strstr(err_get(), "0 tokens"));
	assert_null(sampler_new(-1, &ok));
	sampler_params_t bad = ok;
	bad.top_p = 0.0f;
	assert_null(sampler_new(8, &bad));
	bad = ok;
	bad.temp = NAN;
	assert_null(sampler_new(8, &bad));
	bad = ok;
	bad.top_p = NAN;
	assert_null(sampler_new(8, &bad));
	bad = ok;
	bad.top_k = -1;
	assert_null(sampler_new(8, &bad));
}

/* ---- logit bias, penalties, min-p ---- */

#define NV 8

/* Logits 2.0, 1.9, then 0, -1, ... -5: token 0 by a hair over token 1. */
static void close_logits(float *x)
{
	x[0] = 2.0f;
	x[1] = 1.9f;
	for (int i = 2; i < NV; i++)
		x[i] = (float)(2 - i);
}

/* The token p samples from close_logits after the tokens in acc (n of
 * them; the first n_prompt as the prompt's, the rest as generated). */
static int32_t next_after(const sampler_params_t *p, const int32_t *acc,
			  int n, int n_prompt)
{
	sampler_t *s = sampler_new(NV, p);
	assert_non_null(s);
	for (int i = 0; i < n; i++)
		sampler_accept(s, acc[i], i >= n_prompt);
	float x[NV];
	close_logits(x);
	int32_t id = sampler_sample(s, x);
	sampler_free(s);
	return id;
}

/* Counts of each token over 2000 draws of p on close_logits. */
static void draw_counts(const sampler_params_t *p, int *count)
{
	sampler_t *s = sampler_new(NV, p);
	assert_non_null(s);
	memset(count, 0, NV * sizeof *count);
	for (int k = 0; k < 2000; k++) {
		float x[NV];
		close_logits(x);
		count[sampler_sample(s, x)]++;
	}
	sampler_free(s);
}

/* +100 forces (the least likely token, greedy or drawn), -100 bans
 * (greedy takes the runner-up; a draw never takes it), a bias in between
 * is added; two forced tokens share the draws. */
static void test_logit_bias(void **state)
{
	(void)state;
	sampler_bias_t force7 = {7, 100.0f}, ban0 = {0, -100.0f}, plus = {2, 1.95f};
	sampler_params_t p = {.top_p = 1.0f, .bias = &force7, .n_bias = 1};
	assert_int_equal(next_after(&p, NULL, 0, 0), 7);
	p.temp = 1.0f;
	int c[NV];
	draw_counts(&p, c);
	assert_int_equal(c[7], 2000);
	p = (sampler_params_t){.top_p = 1.0f, .bias = &ban0, .n_bias = 1};
	assert_int_equal(next_after(&p, NULL, 0, 0), 1);
	p.temp = 1.0f;
	draw_counts(&p, c);
	assert_int_equal(c[0], 0);
	assert_true(c[1] > 0 && c[2] > 0);
	/* 0 + 1.95 = 1.95 passes 1.9, not 2.0 */
	p = (sampler_params_t){.top_p = 1.0f, .bias = &plus, .n_bias = 1};
	assert_int_equal(next_after(&p, NULL, 0, 0), 0);
	plus.bias = 2.05f;
	assert_int_equal(next_after(&p, NULL, 0, 0), 2);
	sampler_bias_t two[] = {{5, 100.0f}, {6, 100.0f}, {1, -100.0f}};
	p = (sampler_params_t){.temp = 1.0f, .top_p = 1.0f, .bias = two, .n_bias = 3};
	draw_counts(&p, c);
	assert_int_equal(c[5] + c[6], 2000);
	assert_true(c[5] > 0 && c[6] > 0);
	/* an id given twice: the last bias counts */
	sampler_bias_t twice[] = {{7, 100.0f}, {7, 0.0f}};
	p = (sampler_params_t){.top_p = 1.0f, .bias = twice, .n_bias = 2};
	assert_int_equal(next_after(&p, NULL, 0, 0), 0);
}

/* OpenAI's presence and frequency penalties count generated tokens only:
 * token 0 (2.0) loses to token 1 (1.9) once penalised past 0.1. */
static void test_presence_frequency(void **state)
{
	(void)state;
	const int32_t zeros[] = {0, 0, 0};
	sampler_params_t p = {.top_p = 1.0f, .presence_penalty = 0.2f};
	assert_int_equal(next_after(&p, zeros, 1, 0), 1); /* generated once */
	assert_int_equal(next_after(&p, zeros, 1, 1), 0); /* in the prompt */
	assert_int_equal(next_after(&p, zeros, 0, 0), 0);
	p = (sampler_params_t){.top_p = 1.0f, .frequency_penalty = 0.04f};
	assert_int_equal(next_after(&p, zeros, 2, 0), 0); /* 2.0 - 0.08 */
	assert_int_equal(next_after(&p, zeros, 3, 0), 1); /* 2.0 - 0.12 */
	/* a negative penalty favours what was said: token 1 over token 0 */
	const int32_t ones[] = {1};
	p = (sampler_params_t){.top_p = 1.0f, .presence_penalty = -0.2f};
	assert_int_equal(next_after(&p, ones, 1, 0), 1);
}

/* llama.cpp's repetition penalty over the last repeat_last_n tokens,
 * prompt included: 2.0 / 1.1 < 1.9; a token out of the window is not
 * penalised; a negative logit is multiplied (more negative). */
static void test_repetition(void **state)
{
	(void)state;
	const int32_t hist[] = {0, 5, 6};
	sampler_params_t p = {.top_p = 1.0f, .repeat_penalty = 1.1f};
	assert_int_equal(next_after(&p, hist, 1, 1), 1); /* prompt counts */
	assert_int_equal(next_after(&p, hist, 3, 3), 1); /* 64 by default */
	p.repeat_last_n = 2;
	assert_int_equal(next_after(&p, hist, 3, 3), 0); /* 0 left the window */
	assert_int_equal(next_after(&p, hist, 2, 1), 1);
	/* a penalty below 1 favours repeats: token 1 * 1/0.9 > 2.0 */
	const int32_t ones[] = {1};
	p = (sampler_params_t){.top_p = 1.0f, .repeat_penalty = 0.9f};
	assert_int_equal(next_after(&p, ones, 1, 1), 1);
	/* negative logits: all tokens but 7 penalised; -5 * 1.5 = -7.5 < -5.2 */
	sampler_t *s = sampler_new(NV, &(sampler_params_t){.top_p = 1.0f,
							      .repeat_penalty = 1.5f});
	assert_non_null(s);
	for (int32_t i = 0; i < NV - 1; i++)
		sampler_accept(s, i, false);
	float x[NV] = {-5, -6, -7, -8, -9, -10, -11, -5.2f};
	assert_int_equal(sampler_sample(s, x), 7);
	sampler_free(s);
}

/* min-p keeps the tokens within min_p of the likeliest at temperature 1,
 * whatever the temperature: logits 2.0, 1.9, 0, ... with min_p 0.3 keep
 * tokens 0 and 1 (e^-0.1) and drop token 2 (e^-2), also at temperature 2
 * where token 2's tempered ratio is e^-1 = 0.37. */
static void test_min_p(void **state)
{
	(void)state;
	int c[NV];
	const float temps[] = {0.5f, 1.0f, 2.0f};
	for (size_t k = 0; k < EG_ARRAY_LEN(temps); k++) {
		sampler_params_t p = {.temp = temps[k], .top_p = 1.0f, .min_p = 0.3f,
				      .seed = 3};
		draw_counts(&p, c);
		if (c[0] + c[1] != 2000 || !c[0] || !c[1])
			fail_msg("temp %g: %d %d of 2000", temps[k], c[0], c[1]);
		p.top_k = 5; /* with top-k and top-p in front of it too */
		p.top_p = 0.99f;
		draw_counts(&p, c);
		assert_int_equal(c[0] + c[1], 2000);
		p.min_p = 0;
		draw_counts(&p, c);
		assert_true(c[0] + c[1] < 2000);
	}
	/* min_p 1: the likeliest only */
	sampler_params_t p = {.temp = 1.0f, .top_p = 1.0f, .min_p = 1.0f};
	draw_counts(&p, c);
	assert_int_equal(c[0], 2000);
}

/* Out-of-range processing parameters and a bias that bans everything. */
static void test_refused_more(void **state)
{
	(void)state;
	sampler_bias_t b = {8, 1.0f};
	const sampler_params_t ok = {.temp = 1.0f, .top_p = 1.0f};
	sampler_params_t bad[] = {ok, ok, ok, ok, ok, ok, ok, ok};
	bad[0].min_p = 1.5f;
	bad[1].min_p = NAN;
	bad[2].repeat_penalty = -1.0f;
	bad[3].presence_penalty = 2.5f;
	bad[4].frequency_penalty = NAN;
	bad[5].bias = &b; /* id 8 of a vocabulary of 8 */
	bad[5].n_bias = 1;
	bad[6].repeat_last_n = -1;
	bad[7].n_bias = 1; /* without an array */
	for (size_t k = 0; k < EG_ARRAY_LEN(bad); k++)
		if (sampler_new(NV, &bad[k]))
			fail_msg("case %zu accepted", k);
	b = (sampler_bias_t){0, 100.5f};
	sampler_params_t p = ok;
	p.bias = &b;
	p.n_bias = 1;
	assert_null(sampler_new(NV, &p));
	sampler_bias_t all[NV];
	for (int i = 0; i < NV; i++)
		all[i] = (sampler_bias_t){i, -100.0f};
	p.bias = all;
	p.n_bias = NV;
	assert_null(sampler_new(NV, &p));
	assert_non_null(strstr(err_get(), "bans all"));
	all[3].bias = 0.0f; /* one left: fine, and it is the token */
	sampler_t *s = sampler_new(NV, &p);
	assert_non_null(s);
	float x[NV];
	close_logits(x);
	assert_int_equal(sampler_sample(s, x), 3);
	sampler_free(s);
}

/* log-softmax of x (NV,) in double, the reference. */
static void log_softmax_ref(const float *x, double *out)
{
	double m = -INFINITY, sum = 0;
	for (int i = 0; i < NV; i++)
		m = x[i] > m ? x[i] : m;
	for (int i = 0; i < NV; i++)
		sum += exp((double)x[i] - m);
	for (int i = 0; i < NV; i++)
		out[i] = (double)x[i] - m - log(sum);
}

/* The log-probabilities reported with a sample: greedy's token has the
 * largest, the top list is sorted and sums to at most 1 (to 1 over the
 * whole vocabulary), every value is the log-softmax at temperature 1
 * whatever the temperature; after the bias: a banned token is not
 * listed, a forced one alone has log-probability 0. */
static void test_logprobs(void **state)
{
	(void)state;
	float x[NV];
	double ref[NV];
	close_logits(x);
	log_softmax_ref(x, ref);
	const float temps[] = {0.0f, 0.7f, 2.0f};
	for (size_t k = 0; k < EG_ARRAY_LEN(temps); k++) {
		sampler_params_t p = {.temp = temps[k], .top_p = 1.0f, .seed = 9,
				      .logprobs = true, .top_logprobs = 20};
		sampler_t *s = sampler_new(NV, &p);
		assert_non_null(s);
		sampler_logprobs_t lp;
		assert_int_equal(sampler_logprobs(s, 0, &lp), -1); /* nothing yet */
		for (int it = 0; it < 50; it++) {
			float y[NV];
			close_logits(y);
			int32_t id = sampler_sample(s, y);
			assert_int_equal(sampler_logprobs(s, id, &lp), 0);
			assert_int_equal(lp.n_top, NV); /* fewer tokens than asked */
			double sum = 0;
			for (int32_t i = 0; i < lp.n_top; i++) {
				sum += exp(lp.top_logprob[i]);
				assert_true(fabs(lp.top_logprob[i] - ref[lp.top_id[i]]) < 1e-6);
				if (i)
					assert_true(lp.top_logprob[i] <= lp.top_logprob[i - 1]);
			}
			assert_true(sum <= 1 + 1e-6 && sum > 1 - 1e-5);
			assert_true(fabs(lp.logprob - ref[id]) < 1e-6);
			if (temps[k] == 0.0f) {
				assert_int_equal(id, lp.top_id[0]);
				assert_true(lp.logprob == lp.top_logprob[0]);
			}
		}
		sampler_free(s);
	}
	/* 3 alternatives: the likeliest three, summing under 1 */
	sampler_params_t p = {.top_p = 1.0f, .logprobs = true, .top_logprobs = 3};
	sampler_t *s = sampler_new(NV, &p);
	close_logits(x);
	int32_t id = sampler_sample(s, x);
	sampler_logprobs_t lp;
	assert_int_equal(sampler_logprobs(s, id, &lp), 0);
	assert_int_equal(lp.n_top, 3);
	assert_int_equal(lp.top_id[0], 0);
	assert_int_equal(lp.top_id[1], 1);
	assert_int_equal(lp.top_id[2], 2);
	assert_true(exp(lp.top_logprob[0]) + exp(lp.top_logprob[1]) +
		    exp(lp.top_logprob[2]) < 1);
	sampler_free(s);
	/* after the bias */
	sampler_bias_t ban[] = {{0, -100.0f}, {5, -100.0f}};
	p = (sampler_params_t){.top_p = 1.0f, .logprobs = true, .top_logprobs = 20,
			       .bias = ban, .n_bias = 2};
	s = sampler_new(NV, &p);
	close_logits(x);
	id = sampler_sample(s, x);
	assert_int_equal(sampler_logprobs(s, id, &lp), 0);
	assert_int_equal(id, 1);
	assert_int_equal(lp.n_top, NV - 2);
	assert_int_equal(lp.top_id[0], 1);
	assert_true(lp.logprob == lp.top_logprob[0]);
	sampler_free(s);
	sampler_bias_t force = {6, 100.0f};
	p.bias = &force;
	p.n_bias = 1;
	s = sampler_new(NV, &p);
	close_logits(x);
	id = sampler_sample(s, x);
	assert_int_equal(sampler_logprobs(s, id, &lp), 0);
	assert_int_equal(id, 6);
	assert_int_equal(lp.n_top, 1);
	assert_true(lp.logprob == 0.0f);
	sampler_free(s);
	/* off: nothing */
	s = sampler_new(NV, &(sampler_params_t){.top_p = 1.0f});
	close_logits(x);
	id = sampler_sample(s, x);
	assert_int_equal(sampler_logprobs(s, id, &lp), -1);
	sampler_free(s);
	p = (sampler_params_t){.top_p = 1.0f, .logprobs = true, .top_logprobs = 21};
	assert_null(sampler_new(NV, &p));
}

/* The loop that defines sampler_find_nonfinite. */
static int32_t nonfinite_ref(const float *x, int32_t n)
{
	for (int32_t i = 0; i < n; i++)
		if (isnan(x[i]) || isinf(x[i]))
			return i;
	return -1;
}

/* Every length up to 200 and 49152, the bad value at every offset of a
 * 64-block and its tail, each kind of non-finite; the largest finite
 * values, denormals and signed zeros are finite. */
static void test_find_nonfinite(void **state)
{
	(void)state;
	enum { N = 49152 };
	float *x = malloc(N * sizeof *x);
	rng_t r;
	rng_seed(&r, 5);
	const float finite[] = {FLT_MAX, -FLT_MAX, FLT_MIN, 1e-45f, -0.0f, 0.0f, 1.0f};
	for (int32_t i = 0; i < N; i++)
		x[i] = finite[rng_next(&r) % EG_ARRAY_LEN(finite)];
	const float bad[] = {NAN, -NAN, INFINITY, -INFINITY};
	assert_int_equal(sampler_find_nonfinite(x, N), -1);
	assert_int_equal(sampler_find_nonfinite(x, 0), -1);
	for (int32_t n = 1; n <= 200; n++)
		for (int32_t at = 0; at < n; at++) {
			float keep = x[at];
			x[at] = bad[(size_t)(n + at) % EG_ARRAY_LEN(bad)];
			int32_t got = sampler_find_nonfinite(x, n);
			x[at] = keep;
			if (got != at)
				fail_msg("n %d, bad at %d: found %d", n, at, got);
			assert_int_equal(sampler_find_nonfinite(x, n), -1);
		}
	for (int it = 0; it < 200; it++) { /* several, anywhere in a big one */
		int32_t k = 1 + (int32_t)(rng_next(&r) % 3), at[3];
		for (int j = 0; j < k; j++) {
			at[j] = (int32_t)(rng_next(&r) % N);
			x[at[j]] = bad[rng_next(&r) % EG_ARRAY_LEN(bad)];
		}
		int32_t want = nonfinite_ref(x, N), got = sampler_find_nonfinite(x, N);
		if (got != want)
			fail_msg("iteration %d: found %d, the loop says %d", it, got, want);
		for (int j = 0; j < k; j++)
			x[at[j]] = 1.0f;
	}
	free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_nan),
		cmocka_unit_test(test_one_token),
		cmocka_unit_test(test_infinities),
		cmocka_unit_test(test_tiny_temperature),
		cmocka_unit_test(test_random_garbage),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_find_nonfinite),
		cmocka_unit_test(test_logit_bias),
		cmocka_unit_test(test_presence_frequency),
		cmocka_unit_test(test_repetition),
		cmocka_unit_test(test_min_p),
		cmocka_unit_test(test_refused_more),
		cmocka_unit_test(test_logprobs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
