/* engine: one generation (prompt -> tokens -> text) on a model, run either
 * serially or on the elastic gang. Used by `egang generate` and `egang
 * chat` (engine_run, engine_open.h), the server's scheduler (also
 * engine_seq_* for continuous batching), the agent model and the decode
 * and switch-cost benches.
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

/* One sampled token as on_token gets it. */
typedef struct engine_token {
	int32_t id;
	int32_t prev;          /* the token before it: its text depends on it
				  (tokenizer_decode) */
	sampler_logprobs_t lp; /* with sampler.logprobs (sampler.h); else 0 */
} engine_token_t;

typedef struct engine_params {
	const char *prompt;       /* UTF-8 */
	const int32_t *prompt_ids; /* instead of prompt when non-NULL */
	int64_t n_prompt_ids;
	int32_t n_predict;        /* tokens to generate (after the prompt) */
	sampler_params_t sampler;
	bool echo_prompt;         /* emit the prompt's text too (run.c does) */
	FILE *logits_hash;        /* "pos id hash" per generated token */
	FILE *logits_dump;        /* the raw float logits per generated token */
	/* Called before every token (membership experiments); may be NULL. */
	void (*before_token)(void *user, uint64_t index);
	/* Receives the text, as it becomes final, in chunks of whole UTF-8
	 * characters (model/utf8.h: invalid bytes are U+FFFD, a split
	 * character waits for its end) with stop strings already cut; a
	 * nonzero return cancels. */
	int (*on_text)(void *user, const char *text, size_t n);
	/* Receives each generated token that is kept (not the end marker),
	 * before its text goes to on_text (held-back text may follow later,
	 * and a stop string may cut it); may be NULL. */
	void (*on_token)(void *user, const engine_token_t *t);
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
	/* The generated text must match this grammar (model/grammar.h), or
	 * NULL. The caller owns it. Each sampled position's logits are
	 * masked after the forward pass (and after logits_hash/logits_dump,
	 * which see them unmasked) and before the sampler's chain; the end
	 * tokens are allowed only where the grammar can end. A position where
	 * no token is allowed ends the generation with ENGINE_FAIL and an
	 * error naming it. */
	const struct grammar *grammar;
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

/* engine_generate's return when the generation failed on the way, not for
 * anything in the request: memory ran out, or the model produced a NaN or
 * an infinity among a sampled position's logits (checked at every sampled
 * position, before the sampler; err_get() names the position). As opposed
 * to -1 for a bad prompt or bad parameters. */
#define ENGINE_FAIL (-2)

/* Runs one generation on f (its KV cache is overwritten from position 0);
 * g may be NULL (serial). 0; -1 + err_get() on a bad prompt or parameters;
 * ENGINE_FAIL + err_get() when memory runs out or the logits are not
 * finite (the text before that position was handed out). After either
 * failure r holds nothing to free. */
int engine_generate(const model_t *m, forward_t *f, gang_t *g,
		    const engine_params_t *p, engine_result_t *r);
void engine_result_free(engine_result_t *r);
/* The decode speed in tokens per second (forward passes after the prompt
 * over their wall time); 0 when no position was decoded. */
double engine_result_decode_tps(const engine_result_t *r);

const char *engine_stop_name(engine_stop_t s);

/* ---- one sequence of a batch (the server's continuous batching) ----
 * The token loop of engine_generate cut at its token boundary: the caller
 * runs the positions (forward_set_segs or forward_set_input_kv, any batch)
 * and hands each sampled position's logits to engine_seq_accept, which
 * samples, stops and hands out the text exactly as engine_generate does
 * (no prompt echo, no before_token). Same tokens and text for the same
 * logits. */
typedef struct engine_seq engine_seq_t;

/* A sequence for p's prompt (prompt_ids or prompt) in a context of ctx;
 * NULL with *rc = -1 (bad prompt or parameters) or ENGINE_FAIL, err_get(). */
engine_seq_t *engine_seq_new(const model_t *m, int32_t ctx, const engine_params_t *p,
			     int *rc);
/* The tokens so far (the prompt, then the sampled ones) and their count;
 * the prompt's count. */
const int32_t *engine_seq_ids(const engine_seq_t *s, int64_t *n);
int64_t engine_seq_n_prompt(const engine_seq_t *s);
/* Logits of the sequence's last token: samples the next one. 0 go on
 * (its token is the last of engine_seq_ids and needs running), 1 done,
 * ENGINE_FAIL + err_get() (memory, or logits that are not finite: the
 * sequence is then done, nothing sampled). The sampler may change
 * logits. */
int engine_seq_accept(engine_seq_t *s, float *logits);
/* Whether the sequence needs no more positions. */
bool engine_seq_done(const engine_seq_t *s);
/* Ends the sequence early (the client went away). */
void engine_seq_cancel(engine_seq_t *s);
/* Flushes the held-back text and fills r (r->ids malloc'd, times unset);
 * 0 or ENGINE_FAIL. Then engine_seq_free. */
int engine_seq_finish(engine_seq_t *s, engine_result_t *r);
void engine_seq_free(engine_seq_t *s);

/* Writes "prompt_ids: ..." and "sequence_ids: ..." lines (the format of the
 * reference files ../shared/models/expected/NAME.ids); -1 + err_get() naming the file. */
int engine_write_ids(const char *path, const engine_result_t *r);

#endif
