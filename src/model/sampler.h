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
 * Any logits give a token in [0, vocab), never a read outside them: when
 * the largest logit divided by the temperature is not finite (an infinite
 * logit, or a temperature so small that the quotient overflows) the token
 * is greedy's, the limit of the distribution; when NaN logits leave no
 * candidate it is the argmax of what softmax left. Such logits are
 * garbage all the same: the engine refuses them before they get here
 * (sampler_find_nonfinite). */
#ifndef EGANG_SAMPLER_H
#define EGANG_SAMPLER_H

#include <stdint.h>

typedef enum sampler_mode {
	SAMPLER_EGANG,
	SAMPLER_LLAMA2C,
	SAMPLER_COUNT
} sampler_mode_t;

typedef struct sampler_params {
	float temp;   /* 0 = greedy; >= 0 */
	float top_p;  /* (0, 1]; 1 = off */
	int32_t top_k; /* 0 = off */
	uint64_t seed;
	sampler_mode_t mode;
} sampler_params_t;

typedef struct sampler sampler_t; /* opaque */

/* NULL + err_get() if a parameter is out of range (vocab < 1 too) or
 * memory ran out. */
sampler_t *sampler_new(int32_t vocab, const sampler_params_t *p);
void sampler_free(sampler_t *s);
/* Samples from logits (vocab,), which it may modify. */
int32_t sampler_sample(sampler_t *s, float *logits);
/* Index of the largest value (lowest index on ties); 0 when n <= 1. */
int32_t sampler_argmax(const float *x, int32_t n);
/* Index of the first NaN or infinity in x (n,), or -1 when all are
 * finite. One pass; the engine runs it on every sampled position. */
int32_t sampler_find_nonfinite(const float *x, int32_t n);

#endif
