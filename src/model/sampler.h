/* sampler: the next token from a step's logits.
 *
 * Two modes:
 *  - SAMPLER_EGANG (default): temperature, then top-k, then top-p (nucleus),
 *    then a draw from xoshiro256** seeded by `seed`; temp 0 is greedy.
 *  - SAMPLER_LLAMA2C: llama2.c run.c's sampler exactly (xorshift64* RNG,
 *    softmax, top-p with its cutoff (1 - p) / (n - 1), multinomial
 *    otherwise), so `-s SEED` reproduces run.c's seeded samples.
 * Greedy (temp 0) takes the highest logit, the lowest id on ties.
 *
 * Before either mode (and before greedy), the logits go through the
 * processing llama.cpp's sampler chain puts first, in its order:
 *  1. logit bias: a token's bias is added to its logit; +100
 *     (SAMPLER_BIAS_FORCE) makes the tokens that have it the only
 *     candidates, -100 (SAMPLER_BIAS_BAN) removes the token (-inf);
 *  2. repetition penalty (llama.cpp's penalty_repeat): each distinct token
 *     among the last repeat_last_n tokens (prompt included: the engine
 *     accepts the prompt's tokens first) has its logit divided by the
 *     penalty when positive, multiplied by it when not;
 *  3. frequency and presence penalties (OpenAI's): each token generated so
 *     far c times loses c * frequency + (c > 0) * presence (over the
 *     generated tokens only, as OpenAI counts them).
 * Then, in SAMPLER_EGANG mode, min-p (llama.cpp's): after top-k and top-p,
 * the tokens whose probability at temperature 1 is below min_p times the
 * likeliest one's are dropped (p_i < p_max * min_p^(1/temp) on the
 * tempered distribution). The processing depends only on the logits and
 * the tokens accepted, so a sequence samples the same tokens alone or in
 * a batch.
 *
 * Any logits give a token in [0, vocab), never a read outside them: when
 * the largest logit divided by the temperature is not finite (an infinite
 * logit, or a temperature so small that the quotient overflows) the token
 * is greedy's, the limit of the distribution; when NaN logits leave no
 * candidate it is the argmax of what softmax left. Such logits are
 * garbage all the same: the engine refuses them before they get here
 * (sampler_find_nonfinite). */
#ifndef EGANG_SAMPLER_H
#define EGANG_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

typedef enum sampler_mode {
	SAMPLER_EGANG,
	SAMPLER_LLAMA2C,
	SAMPLER_COUNT
} sampler_mode_t;

#define SAMPLER_BIAS_FORCE 100.0f  /* a bias this high: only such tokens */
#define SAMPLER_BIAS_BAN (-100.0f) /* a bias this low: never this token */

typedef struct sampler_bias {
	int32_t id;   /* [0, vocab) */
	float bias;   /* [-100, 100] */
} sampler_bias_t;

/* Every field but top_p is off at zero (designated initializers leave the
 * rest off). */
typedef struct sampler_params {
	float temp;   /* 0 = greedy; >= 0 */
	float top_p;  /* (0, 1]; 1 = off */
	int32_t top_k; /* 0 = off */
	float min_p;  /* [0, 1]; 0 = off (SAMPLER_EGANG only) */
	float repeat_penalty;   /* (0, 100]; 0 and 1 = off */
	int32_t repeat_last_n;  /* >= 0 tokens it looks back over; 0: 64,
				   llama.cpp's default */
	float presence_penalty;  /* [-2, 2]; 0 = off */
	float frequency_penalty; /* [-2, 2]; 0 = off */
	const sampler_bias_t *bias; /* (n_bias) copied by sampler_new; an id
				       given twice: the last bias counts */
	int32_t n_bias;
	bool logprobs;          /* keep what sampler_logprobs reports */
	int32_t top_logprobs;   /* [0, SAMPLER_MAX_LOGPROBS] alternatives */
	uint64_t seed;
	sampler_mode_t mode;
} sampler_params_t;

#define SAMPLER_MAX_LOGPROBS 20

/* The log-probabilities of a sampled position: of the distribution the
 * model's logits give after the logit bias and the penalties, at
 * temperature 1, before temperature, top-k, top-p and min-p (so greedy's
 * token has the largest, and a banned token is -inf). */
typedef struct sampler_logprobs {
	float logprob;   /* of the sampled token */
	int32_t n_top;   /* top_logprobs, fewer when fewer tokens are possible */
	int32_t top_id[SAMPLER_MAX_LOGPROBS];  /* likeliest first, ties by id */
	float top_logprob[SAMPLER_MAX_LOGPROBS];
} sampler_logprobs_t;

typedef struct sampler sampler_t; /* opaque */

/* NULL + err_get() if a parameter is out of range (vocab < 1 too) or
 * memory ran out. */
sampler_t *sampler_new(int32_t vocab, const sampler_params_t *p);
void sampler_free(sampler_t *s);
/* Samples from logits (vocab,), which it may modify. */
int32_t sampler_sample(sampler_t *s, float *logits);
/* Tells the sampler the sequence's next token: the prompt's, in order,
 * (generated false) before the first sample, then each sampled one
 * (generated true). The penalties count these; without penalties it
 * does nothing. */
void sampler_accept(sampler_t *s, int32_t id, bool generated);
/* The log-probabilities of the last sampler_sample's token (id) into out,
 * with p.logprobs; 0, or -1 when p.logprobs was off or nothing was
 * sampled yet. One pass over the vocabulary, more with alternatives. */
int sampler_logprobs(const sampler_t *s, int32_t id, sampler_logprobs_t *out);
/* True when the next sampler_sample is exactly sampler_argmax of the
 * logits it gets: greedy, no logit bias, no penalty, no logprobs kept.
 * Then a caller may take the argmax itself (engine.c checks a grammar
 * against it before computing a whole mask). */
bool sampler_is_argmax(const sampler_t *s);
/* Index of the largest value (lowest index on ties); 0 when n <= 1. */
int32_t sampler_argmax(const float *x, int32_t n);
/* Index of the first NaN or infinity in x (n,), or -1 when all are
 * finite. One pass; the engine runs it on every sampled position. */
int32_t sampler_find_nonfinite(const float *x, int32_t n);

#endif
