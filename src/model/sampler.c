/* sampler: greedy, temperature, top-k, top-p (see sampler.h). */
#include "model/sampler.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "kernels/kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

typedef struct prob_index {
	float p;
	int32_t i;
} prob_index_t;

struct sampler {
	int32_t vocab;
	sampler_params_t p;
	uint64_t xorshift; /* llama2c mode */
	rng_t rng;         /* egang mode */
	prob_index_t *cand; /* (vocab) */
};

sampler_t *sampler_new(int32_t vocab, const sampler_params_t *p)
{
	if (vocab < 1) {
		err_set("a vocabulary of %d tokens has nothing to sample", vocab);
		return NULL;
	}
	if (!(p->temp >= 0.0f && p->temp <= 100.0f)) {
		err_set("temperature %g is out of range [0, 100]", p->temp);
		return NULL;
	}
	if (!(p->top_p > 0.0f && p->top_p <= 1.0f)) {
		err_set("top-p %g is out of range (0, 1]", p->top_p);
		return NULL;
	}
	if (p->top_k < 0) {
		err_set("top-k %d is negative", p->top_k);
		return NULL;
	}
	sampler_t *s = calloc(1, sizeof *s);
	if (s)
		s->cand = malloc((size_t)vocab * sizeof *s->cand);
	if (!s || !s->cand) {
		free(s);
		err_sys("cannot allocate the sampler");
		return NULL;
	}
	s->vocab = vocab;
	s->p = *p;
	s->xorshift = p->seed;
	rng_seed(&s->rng, p->seed);
	return s;
}

void sampler_free(sampler_t *s)
{
	if (!s)
		return;
	free(s->cand);
	free(s);
}

/* The largest of x[0..n) as the loop
 *     m = x[0]; for i: if (x[i] > m) m = x[i];
 * defines it: NaN is never taken, except x[0], which then stays; with
 * n = 0, -inf. Over 4 lanes on x86-64 (maxps keeps its second operand when
 * the first is NaN: the loop's comparison); the maximum of numbers does
 * not depend on the order. */
static float logits_max(const float *x, int32_t n)
{
	if (n < 1)
		return -INFINITY;
	float m = x[0];
	int32_t i = 1;
	if (isnan(m))
		return m;
#if defined(__x86_64__)
	__m128 v0 = _mm_set1_ps(m), v1 = v0;
	for (; i + 8 <= n; i += 8) {
		v0 = _mm_max_ps(_mm_loadu_ps(x + i), v0);
		v1 = _mm_max_ps(_mm_loadu_ps(x + i + 4), v1);
	}
	float lanes[8];
	_mm_storeu_ps(lanes, v0);
	_mm_storeu_ps(lanes + 4, v1);
	for (int k = 0; k < 8; k++)
		m = lanes[k] > m ? lanes[k] : m;
#endif
	for (; i < n; i++)
		m = x[i] > m ? x[i] : m;
	return m;
}

/* The first index of the largest value, as the loop
 *     best = 0; for i: if (x[i] > x[best]) best = i;
 * defines it (NaN is never chosen, except at index 0, which then stays;
 * -0 and +0 are equal, so the first of them wins). Two passes: the maximum
 * (logits_max), then the first index equal to it. The one-pass loop took
 * ~3% of a smollm-135m token (vocab 49152: a compare chain through
 * memory); this is 3-4x faster. */
int32_t sampler_argmax(const float *x, int32_t n)
{
	if (n <= 1 || isnan(x[0]))
		return 0;
	float m = logits_max(x, n);
	int32_t i;
	for (i = 0; i < n; i++)
		if (x[i] == m)
			break;
	return i;
}

/* Branch-free blocks of 64 (an OR of exponent tests the compiler
 * vectorizes: the block's trip count is fixed), then the first culprit
 * one by one from the block that has one. */
int32_t sampler_find_nonfinite(const float *x, int32_t n)
{
	int32_t i = 0;
	for (; i + 64 <= n; i += 64) {
		uint32_t bad = 0;
		for (int k = 0; k < 64; k++) {
			uint32_t u;
			memcpy(&u, x + i + k, sizeof u);
			bad |= (u & 0x7f800000u) == 0x7f800000u; /* exponent all ones */
		}
		if (bad)
			break;
	}
	for (; i < n; i++)
		if (!isfinite(x[i]))
			return i;
	return -1;
}

/* ---- llama2.c run.c semantics ---- */

static uint32_t xorshift_u32(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return (uint32_t)((*state * 0x2545F4914F6CDD1Dull) >> 32);
}

static float xorshift_f32(uint64_t *state)
{
	return (float)(xorshift_u32(state) >> 8) / 16777216.0f;
}

static int prob_desc(const void *a, const void *b)
{
	const prob_index_t *x = a, *y = b;
	if (x->p > y->p)
		return -1;
	if (x->p < y->p)
		return 1;
	return 0;
}

static int32_t sample_mult(const float *p, int32_t n, float coin)
{
	float cdf = 0.0f;
	for (int32_t i = 0; i < n; i++) {
		cdf += p[i];
		if (coin < cdf)
			return i;
	}
	return n - 1;
}

static int32_t sample_topp_llama2c(sampler_t *s, const float *p, float coin)
{
	int32_t n = s->vocab, n0 = 0;
	const float cutoff = n > 1 ? (1.0f - s->p.top_p) / (float)(n - 1) : 0.0f;
	for (int32_t i = 0; i < n; i++)
		if (p[i] >= cutoff)
			s->cand[n0++] = (prob_index_t){p[i], i};
	if (n0 == 0) /* only NaN probabilities (sampler.h) */
		return sampler_argmax(p, n);
	qsort(s->cand, (size_t)n0, sizeof *s->cand, prob_desc);
	float cum = 0.0f;
	int32_t last = n0 - 1;
	for (int32_t i = 0; i < n0; i++) {
		cum += s->cand[i].p;
		if (cum > s->p.top_p) {
			last = i;
			break;
		}
	}
	float r = coin * cum, cdf = 0.0f;
	for (int32_t i = 0; i <= last; i++) {
		cdf += s->cand[i].p;
		if (r < cdf)
			return s->cand[i].i;
	}
	return s->cand[last].i;
}

static int32_t sample_llama2c(sampler_t *s, float *logits)
{
	for (int32_t q = 0; q < s->vocab; q++)
		logits[q] /= s->p.temp;
	softmax(logits, s->vocab);
	float coin = xorshift_f32(&s->xorshift);
	if (s->p.top_p <= 0 || s->p.top_p >= 1)
		return sample_mult(logits, s->vocab, coin);
	return sample_topp_llama2c(s, logits, coin);
}

/* ---- egang: temperature -> top-k -> top-p -> draw ---- */

/* Descending probability, then ascending id: a total order, so the draw
 * does not depend on the sort algorithm. */
static int prob_desc_total(const void *a, const void *b)
{
	const prob_index_t *x = a, *y = b;
	if (x->p != y->p)
		return x->p > y->p ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

static int32_t sample_egang(sampler_t *s, float *logits)
{
	int32_t n = s->vocab;
	for (int32_t i = 0; i < n; i++)
		logits[i] /= s->p.temp;
	softmax(logits, n);
	bool top_k = s->p.top_k > 0 && s->p.top_k < n;
	if (!top_k && s->p.top_p >= 1.0f)
		return sample_mult(logits, n, rng_float(&s->rng));
	/* Only tokens that can be in the nucleus are sorted: a token below
	 * (1 - p) / (n - 1) cannot be (the rest would sum past p). */
	float cutoff = s->p.top_p < 1.0f && n > 1
			       ? (1.0f - s->p.top_p) / (float)(n - 1)
			       : 0.0f;
	int32_t m = 0;
	for (int32_t i = 0; i < n; i++)
		if (logits[i] >= cutoff)
			s->cand[m++] = (prob_index_t){logits[i], i};
	if (m == 0) /* only NaN probabilities (sampler.h) */
		return sampler_argmax(logits, n);
	qsort(s->cand, (size_t)m, sizeof *s->cand, prob_desc_total);
	if (top_k && m > s->p.top_k)
		m = s->p.top_k;
	float cum = 0.0f;
	int32_t last = m - 1;
	for (int32_t i = 0; i < m; i++) {
		cum += s->cand[i].p;
		if (cum >= s->p.top_p) {
			last = i;
			cum = 0.0f;
			for (int32_t j = 0; j <= last; j++)
				cum += s->cand[j].p;
			break;
		}
	}
	float r = rng_float(&s->rng) * cum, cdf = 0.0f;
	for (int32_t i = 0; i <= last; i++) {
		cdf += s->cand[i].p;
		if (r < cdf)
			return s->cand[i].i;
	}
	return s->cand[last].i;
}

int32_t sampler_sample(sampler_t *s, float *logits)
{
	if (s->p.temp == 0.0f)
		return sampler_argmax(logits, s->vocab);
	/* A largest logit that is infinite, or that the temperature scales
	 * past the float range (a temperature of 1e-40), leaves softmax
	 * nothing but inf - inf: greedy is the limit of the distribution as
	 * the scaled gaps grow, so take it. One pass over the logits. */
	if (!isfinite(logits_max(logits, s->vocab) / s->p.temp))
		return sampler_argmax(logits, s->vocab);
	if (s->p.mode == SAMPLER_LLAMA2C)
		return sample_llama2c(s, logits);
	return sample_egang(s, logits);
}
