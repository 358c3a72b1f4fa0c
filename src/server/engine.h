/* engine: one generation (prompt -> tokens -> text) on a model, run either
 * serially or on the elastic gang. Used by `egang generate` and the server.
 *
 * Positions: the prompt (BOS first) fills positions 0..n_prompt-1 in
 * prefill batches (forward.h; one gang token and one before_token call per
 * batch, token by token when batching is off); every later position samples
 * a token. The logits of position
 * p are a pure function of the tokens 0..p, whatever the gang's
 * membership. */
#ifndef EGANG_ENGINE_H
#define EGANG_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gang/gang.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/sampler.h"

typedef enum engine_stop {
	STOP_LENGTH,  /* n_predict tokens generated */
	STOP_EOS,     /* end of sequence (or BOS, as llama2.c stops) */
	STOP_CONTEXT, /* the context is full */
	STOP_CANCEL,  /* the on_text callback asked to stop */
	STOP_STRING,  /* a stop string was generated */
	STOP_COUNT
} engine_stop_t;

typedef struct engine_params {
	const char *prompt;       /* UTF-8 */
	const int32_t *prompt_ids; /* instead of prompt when non-NULL */
	int64_t n_prompt_ids;
	int32_t n_predict;        /* tokens to generate (after the prompt) */
	sampler_params_t sampler;
	bool echo_prompt;         /* emit the prompt's text too (run.c does) */
	FILE *logits_hash;        /* "pos id hash" per generated token */
	/* Called before every token (membership experiments); may be NULL. */
	void (*before_token)(void *user, uint64_t index);
	/* Receives the text, as it becomes final, in chunks of whole UTF-8
	 * characters (model/utf8.h: invalid bytes are U+FFFD, a split
	 * character waits for its end) with stop strings already cut; a
	 * nonzero return cancels. */
	int (*on_text)(void *user, const char *text, size_t n);
	void *user;
	/* Stop strings, matched on that text (may be NULL): the text ends
	 * before the first one, which is not emitted (STOP_STRING). */
	const char *const *stop;
	int n_stop;
	/* Positions 0..n_cached-1 of the prompt ids are already in f's KV
	 * cache (an earlier generation on the same f fed those very ids):
	 * the prompt is computed from n_cached on (less than n_prompt). */
	int64_t n_cached;
	bool stop_at_control; /* any control token ends the generation (the
				 end-of-turn tokens of chat templates) */
} engine_params_t;

typedef struct engine_result {
	int64_t n_prompt;    /* prompt tokens, BOS included */
	int64_t n_gen;       /* generated tokens */
	double prefill_s;    /* wall time of the prompt positions */
	double decode_s;     /* wall time of the generated positions */
	int64_t decode_steps; /* forward passes after the prompt */
	double first_token_s; /* from start to the first generated token */
	engine_stop_t stop;
	int32_t *ids;        /* (n_prompt + n_gen) all tokens, malloc'd */
} engine_result_t;

/* engine_generate's return when a resource failed (memory), as opposed to
 * -1 for a bad prompt or bad parameters. */
#define ENGINE_FAIL (-2)

/* Runs one generation on f (its KV cache is overwritten from position 0);
 * g may be NULL (serial). 0; -1 + err_get() on a bad prompt or parameters;
 * ENGINE_FAIL + err_get() when memory runs out. After either failure r holds
 * nothing to free. */
int engine_generate(const model_t *m, forward_t *f, gang_t *g,
		    const engine_params_t *p, engine_result_t *r);
void engine_result_free(engine_result_t *r);

const char *engine_stop_name(engine_stop_t s);

/* Writes "prompt_ids: ..." and "sequence_ids: ..." lines (the format of the
 * reference files ../shared/models/expected/NAME.ids); -1 + err_get() naming the file. */
int engine_write_ids(const char *path, const engine_result_t *r);

#endif
