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

/* The tokens the penalties count (sampler_accept). */
typedef struct sampler_history {
	int32_t *ring;      /* (n_ring) the last tokens, prompt included */
	int32_t n_ring, ring_len, ring_next;
	uint32_t *seen;     /* (vocab) the step a token was last penalised in */
	uint32_t step;
	uint32_t *count;    /* (vocab) times each token was generated */
	int32_t *distinct;  /* (n_distinct) the ids with count > 0 */
	int32_t n_distinct, cap_distinct;
} sampler_history_t;

struct sampler {
	int32_t vocab;
	sampler_params_t p;
	sampler_bias_t *bias; /* (p.n_bias) the caller's, copied */
	bool force;           /* some bias is SAMPLER_BIAS_FORCE */
	sampler_history_t h;
	float *kept;       /* (vocab) with p.logprobs: the processed logits of
			      the last sample, before temperature */
	bool have_kept;
	uint64_t xorshift; /* llama2c mode */
	rng_t rng;         /* egang mode */
	prob_index_t *cand; /* (vocab) */
};

/* The ranges of the fields after top-k (sampler.h); 0 or -1 + err_set. */
static int params_check_more(int32_t vocab, const sampler_params_t *p)
{
	if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
		return err_set("min-p %g is out of range [0, 1]", p->min_p);
	if (!(p->repeat_penalty >= 0.0f && p->repeat_penalty <= 100.0f))
		return err_set("repetition penalty %g is out of range (0, 100]",
			       p->repeat_penalty);
	if (p->repeat_last_n < 0)
		return err_set("repeat-last-n %d is negative", p->repeat_last_n);
	if (!(fabsf(p->presence_penalty) <= 2.0f) ||
	    !(fabsf(p->frequency_penalty) <= 2.0f))
		return err_set("presence penalty %g or frequency penalty %g is out of "
			       "range [-2, 2]", p->presence_penalty,
			       p->frequency_penalty);
	if (p->top_logprobs < 0 || p->top_logprobs > SAMPLER_MAX_LOGPROBS)
		return err_set("top logprobs %d is out of range [0, %d]",
			       p->top_logprobs, SAMPLER_MAX_LOGPROBS);
	if (p->n_bias < 0 || (p->n_bias && !p->bias))
		return err_set("%d logit biases without an array", p->n_bias);
	int32_t banned = 0;
	bool forced = false;
	for (int32_t k = 0; k < p->n_bias; k++) {
		if (p->bias[k].id < 0 || p->bias[k].id >= vocab)
			return err_set("logit bias for token %d, outside the vocabulary "
				       "of %d", p->bias[k].id, vocab);
		if (!(fabsf(p->bias[k].bias) <= 100.0f))
			return err_set("logit bias %g for token %d is out of range "
				       "[-100, 100]", p->bias[k].bias, p->bias[k].id);
		banned += p->bias[k].bias <= SAMPLER_BIAS_BAN;
		forced |= p->bias[k].bias >= SAMPLER_BIAS_FORCE;
	}
	if (!forced && banned >= vocab) { /* an id twice counts twice: a bound */
		bool *ban = calloc((size_t)vocab, 1);
		if (!ban)
			return err_sys("cannot allocate the sampler");
		int32_t distinct = 0;
		for (int32_t k = 0; k < p->n_bias; k++) /* the last bias counts */
			ban[p->bias[k].id] = p->bias[k].bias <= SAMPLER_BIAS_BAN;
		for (int32_t i = 0; i < vocab; i++)
			distinct += ban[i];
		free(ban);
		if (distinct == vocab)
			return err_set("the logit bias bans all %d tokens", vocab);
	}
	return 0;
}

/* s->bias: the caller's biases, an id given twice reduced to its last
 * bias (so that forcing reads one value per id); s->force. 0 or -1. */
static int sampler_bias_copy(sampler_t *s, const sampler_params_t *p)
{
	if (!p->n_bias)
		return 0;
	s->bias = malloc((size_t)p->n_bias * sizeof *s->bias);
	if (!s->bias)
		return -1;
	int32_t n = 0;
	for (int32_t k = 0; k < p->n_bias; k++) {
		bool later = false; /* quadratic, in the few biases a request has */
		for (int32_t j = k + 1; j < p->n_bias && !later; j++)
			later = p->bias[j].id == p->bias[k].id;
		if (!later)
			s->bias[n++] = p->bias[k];
		s->force |= p->bias[k].bias >= SAMPLER_BIAS_FORCE && !later;
	}
	s->p.bias = s->bias;
	s->p.n_bias = n;
	return 0;
}

/* The penalties' memory, only when one is on. 0 or -1. */
static int history_alloc(sampler_history_t *h, int32_t vocab,
			 const sampler_params_t *p)
{
	if (p->repeat_penalty != 0.0f && p->repeat_penalty != 1.0f) {
		h->n_ring = p->repeat_last_n ? p->repeat_last_n : 64;
		h->ring = malloc((size_t)h->n_ring * sizeof *h->ring);
		h->seen = calloc((size_t)vocab, sizeof *h->seen);
		if (!h->ring || !h->seen)
			return -1;
	}
	if (p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f) {
		h->count = calloc((size_t)vocab, sizeof *h->count);
		if (!h->count)
			return -1;
	}
	return 0;
}

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
	if (params_check_more(vocab, p) < 0)
		return NULL;
	sampler_t *s = calloc(1, sizeof *s);
	if (s)
		s->cand = malloc((size_t)vocab * sizeof *s->cand);
	if (s) {
		s->vocab = vocab;
		s->p = *p;
	}
	if (s && p->logprobs)
		s->kept = malloc((size_t)vocab * sizeof *s->kept);
	if (!s || !s->cand || sampler_bias_copy(s, p) < 0 ||
	    history_alloc(&s->h, vocab, p) < 0 || (p->logprobs && !s->kept)) {
		sampler_free(s);
		err_sys("cannot allocate the sampler");
		return NULL;
	}
	s->xorshift = p->seed;
	rng_seed(&s->rng, p->seed);
	return s;
}

void sampler_free(sampler_t *s)
{
	if (!s)
		return;
	free(s->h.ring);
	free(s->h.seen);
	free(s->h.count);
	free(s->h.distinct);
	free(s->bias);
	free(s->kept);
	free(s->cand);
	free(s);
}

void sampler_accept(sampler_t *s, int32_t id, bool generated)
{
	sampler_history_t *h = &s->h;
	if (id < 0 || id >= s->vocab)
		return;
	if (h->ring) {
		h->ring[h->ring_next] = id;
		h->ring_next = (h->ring_next + 1) % h->n_ring;
		h->ring_len += h->ring_len < h->n_ring;
	}
	if (!generated || !h->count)
		return;
	if (h->count[id]++ == 0) {
		if (h->n_distinct == h->cap_distinct) {
			int32_t cap = h->cap_distinct ? 2 * h->cap_distinct : 64;
			int32_t *d = realloc(h->distinct, (size_t)cap * sizeof *d);
			if (!d)
				abort(); /* out of memory: at most vocab ids */
			h->distinct = d;
			h->cap_distinct = cap;
		}
		h->distinct[h->n_distinct++] = id;
	}
}

/* ---- logit processing: bias, then penalties (sampler.h) ---- */

/* 1. The logit bias: added; SAMPLER_BIAS_BAN is -inf; with any
 * SAMPLER_BIAS_FORCE, every token without it is -inf. */
static void logits_bias(const sampler_t *s, float *logits)
{
	const sampler_bias_t *b = s->bias;
	int32_t n = s->p.n_bias;
	if (s->force) {
		for (int32_t k = 0; k < n; k++) /* keep the forced logits */
			if (b[k].bias >= SAMPLER_BIAS_FORCE)
				s->cand[k].p = logits[b[k].id];
		for (int32_t i = 0; i < s->vocab; i++)
			logits[i] = -INFINITY;
		for (int32_t k = 0; k < n; k++)
			if (b[k].bias >= SAMPLER_BIAS_FORCE)
				logits[b[k].id] = s->cand[k].p + b[k].bias;
		return;
	}
	for (int32_t k = 0; k < n; k++)
		logits[b[k].id] = b[k].bias <= SAMPLER_BIAS_BAN ? -INFINITY
							 : logits[b[k].id] + b[k].bias;
}

/* 2. llama.cpp's repetition penalty, once per distinct token of the
 * window; 3. OpenAI's frequency and presence penalties. */
static void logits_penalise(sampler_t *s, float *logits)
{
	sampler_history_t *h = &s->h;
	if (h->ring) {
		float r = s->p.repeat_penalty;
		h->step++;
		for (int32_t k = 0; k < h->ring_len; k++) {
			int32_t id = h->ring[k];
			if (h->seen[id] == h->step)
				continue;
			h->seen[id] = h->step;
			logits[id] = logits[id] <= 0 ? logits[id] * r : logits[id] / r;
		}
	}
	for (int32_t k = 0; k < h->n_distinct; k++) {
		int32_t id = h->distinct[k];
		logits[id] -= (float)h->count[id] * s->p.frequency_penalty +
			      s->p.presence_penalty;
	}
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
	if (!top_k && s->p.top_p >= 1.0f && s->p.min_p <= 0.0f)
		return sample_mult(logits, n, rng_float(&s->rng));
	/* Only tokens that can be in the nucleus are sorted: a token below
	 * (1 - p) / (n - 1) cannot be (the rest would sum past p). */
	float cutoff = s->p.top_p < 1.0f && n > 1
			       ? (1.0f - s->p.top_p) / (float)(n - 1)
			       : 0.0f;
	/* min-p after top-k and top-p (llama.cpp's order) is a cut of the
	 * sorted candidates at a probability, so it is one more cutoff: at
	 * temperature 1 a token needs p >= min_p * p_max; here, tempered,
	 * p >= p_max * min_p^(1/temp). The likeliest token always passes. */
	if (s->p.min_p > 0.0f) {
		float m = logits_max(logits, n) * powf(s->p.min_p, 1.0f / s->p.temp);
		cutoff = m > cutoff ? m : cutoff;
	}
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

/* ---- log-probabilities (sampler_logprobs_t) ---- */

/* log(sum(exp(x))) over x (n,), in double: the sum runs from the largest
 * term's exponent, so it cannot overflow. -inf when every x is -inf. */
static double logsumexp(const float *x, int32_t n)
{
	float m = logits_max(x, n);
	if (!isfinite(m))
		return m;
	double sum = 0;
	for (int32_t i = 0; i < n; i++)
		sum += exp((double)x[i] - m);
	return m + log(sum);
}

/* Whether (la, a) ranks before (lb, b): larger logit, then lower id. */
static bool ranks_before(float la, int32_t a, float lb, int32_t b)
{
	return la > lb || (la == lb && a < b);
}

int sampler_logprobs(const sampler_t *s, int32_t id, sampler_logprobs_t *out)
{
	if (!s->kept || !s->have_kept || id < 0 || id >= s->vocab)
		return -1;
	const float *x = s->kept;
	double lse = logsumexp(x, s->vocab);
	out->logprob = (float)(x[id] - lse);
	/* the k likeliest finite logits by insertion: a logit below the
	 * k-th so far costs one comparison */
	int32_t k = s->p.top_logprobs, n = 0;
	for (int32_t i = 0; i < s->vocab && k > 0; i++) {
		if (!isfinite(x[i]) ||
		    (n == k && !ranks_before(x[i], i, x[out->top_id[n - 1]],
					     out->top_id[n - 1])))
			continue;
		int32_t at = n < k ? n++ : k - 1;
		while (at > 0 && ranks_before(x[i], i, x[out->top_id[at - 1]],
					      out->top_id[at - 1])) {
			out->top_id[at] = out->top_id[at - 1];
			at--;
		}
		out->top_id[at] = i;
	}
	out->n_top = n;
	for (int32_t j = 0; j < n; j++)
		out->top_logprob[j] = (float)(x[out->top_id[j]] - lse);
	return 0;
}

bool sampler_is_argmax(const sampler_t *s)
{
	/* the conditions under which sampler_sample below goes straight to
	 * sampler_argmax without changing a logit */
	return s->p.temp == 0.0f && !s->p.n_bias && !(s->h.ring || s->h.n_distinct) &&
	       !s->kept;
}

int32_t sampler_sample(sampler_t *s, float *logits)
{
	if (s->p.n_bias)
		logits_bias(s, logits);
	if (s->h.ring || s->h.n_distinct)
		logits_penalise(s, logits);
	if (s->kept) { /* what sampler_logprobs reports */
		memcpy(s->kept, logits, (size_t)s->vocab * sizeof *logits);
		s->have_kept = true;
	}
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
