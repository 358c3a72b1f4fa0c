/* The end of a sequence in engine/engine.h's batched path
 * (engine_seq_accept), on hand-made logits and the synthetic GPT-2
 * vocabulary (<|endoftext|> BOS, <|im_start|>, <|im_end|> EOS, all
 * control tokens): end of sequence and BOS always end it, unkept; any
 * other control token ends it only with stop_at_control, as in
 * engine_generate; a normal token is kept. Non-finite logits end it with
 * an error naming the position. */
#include "testutil.h"

#include <math.h>

#include "base/base.h"
#include "engine/engine.h"
#include "model/tokenizer.h"

#define CTX 32

/* Greedy logits whose highest entry is id. */
static void logits_for(float *logits, int32_t n, int32_t id)
{
	for (int32_t i = 0; i < n; i++)
		logits[i] = 0.0f;
	logits[id] = 10.0f;
}

/* What engine_seq_accept does with a sampled id after a one-token prompt:
 * its return, the stop and how many tokens were generated (after
 * engine_seq_finish). */
static int accept_one(const model_t *m, bool stop_at_control, int32_t id,
		      engine_stop_t *stop, int64_t *n_gen)
{
	int32_t prompt = tokenizer_bos(m->tok);
	engine_params_t p = {.prompt_ids = &prompt, .n_prompt_ids = 1,
			     .n_predict = 4, .sampler = {.temp = 0, .top_p = 1},
			     .stop_at_control = stop_at_control};
	int rc = 0;
	engine_seq_t *s = engine_seq_new(m, CTX, &p, &rc);
	assert_non_null(s);
	float *logits = malloc((size_t)m->cfg.vocab_size * sizeof *logits);
	logits_for(logits, m->cfg.vocab_size, id);
	rc = engine_seq_accept(s, logits);
	free(logits);
	engine_result_t r;
	assert_int_equal(engine_seq_finish(s, &r), 0);
	*stop = r.stop;
	*n_gen = r.n_gen;
	engine_result_free(&r);
	engine_seq_free(s);
	return rc;
}

static void test_seq_end(void **state)
{
	(void)state;
	model_t m = {0};
	m.tok = tokenizer_synth(TOKENIZER_GPT2, 512, 1);
	assert_non_null(m.tok);
	m.cfg.vocab_size = tokenizer_n_vocab(m.tok);
	int32_t im_start = tokenizer_find(m.tok, "<|im_start|>");
	assert_true(im_start >= 0);
	assert_int_equal(tokenizer_type(m.tok, im_start), TOKENIZER_TYPE_CONTROL);
	assert_true(im_start != tokenizer_bos(m.tok) && im_start != tokenizer_eos(m.tok));
	int32_t normal = tokenizer_find(m.tok, "a");
	assert_true(normal >= 0);
	static const struct {
		int32_t id;
		bool stop_at_control;
		int rc;
		engine_stop_t stop;
		int64_t n_gen;
	} cases[] = {
		{-1 /* eos */, false, 1, STOP_EOS, 0},
		{-1 /* eos */, true, 1, STOP_EOS, 0},
		{-2 /* bos */, false, 1, STOP_EOS, 0},
		{-3 /* im_start */, false, 0, STOP_LENGTH, 1},
		{-3 /* im_start */, true, 1, STOP_EOS, 0},
		{-4 /* normal */, true, 0, STOP_LENGTH, 1},
	};
	for (size_t i = 0; i < EG_ARRAY_LEN(cases); i++) {
		int32_t id = cases[i].id == -1   ? tokenizer_eos(m.tok)
			     : cases[i].id == -2 ? tokenizer_bos(m.tok)
			     : cases[i].id == -3 ? im_start
						 : normal;
		engine_stop_t stop;
		int64_t n_gen;
		int rc = accept_one(&m, cases[i].stop_at_control, id, &stop, &n_gen);
		if (rc != cases[i].rc || stop != cases[i].stop || n_gen != cases[i].n_gen)
			fail_msg("case %zu (id %d, stop_at_control %d): rc %d stop %s "
				 "n_gen %lld; want rc %d stop %s n_gen %lld", i, id,
				 cases[i].stop_at_control, rc, engine_stop_name(stop),
				 (long long)n_gen, cases[i].rc,
				 engine_stop_name(cases[i].stop), (long long)cases[i].n_gen);
	}
	tokenizer_free(m.tok);
}

/* Logits with a NaN or an infinity anywhere, one sampler after another:
 * engine_seq_accept refuses them (ENGINE_FAIL, the sequence done, nothing
 * generated) with a message that names the position, the kind and the
 * first bad id; finite logits as large as floats go are sampled. */
static void test_seq_nonfinite(void **state)
{
	(void)state;
	model_t m = {0};
	m.tok = tokenizer_synth(TOKENIZER_GPT2, 512, 1);
	assert_non_null(m.tok);
	m.cfg.vocab_size = tokenizer_n_vocab(m.tok);
	int32_t n = m.cfg.vocab_size, prompt[3];
	prompt[0] = tokenizer_bos(m.tok);
	prompt[1] = prompt[2] = tokenizer_find(m.tok, "a");
	float *logits = malloc((size_t)n * sizeof *logits);
	static const struct {
		float v;
		int32_t at;
		float temp;
		sampler_mode_t mode;
		const char *want;
	} cases[] = {
		{NAN, 0, 1.0f, SAMPLER_EGANG, "position 2: the model produced non-finite "
					    "logits (NaN at id 0; 1 of "},
		{NAN, 300, 0.0f, SAMPLER_EGANG, "(NaN at id 300; 1 of "},
		{INFINITY, 77, 0.8f, SAMPLER_LLAMA2C, "(+Inf at id 77; 1 of "},
		{-INFINITY, 511, 0.0f, SAMPLER_LLAMA2C, "(-Inf at id 511; 1 of "},
		{3.4e38f, 5, 1.0f, SAMPLER_EGANG, NULL},
	};
	for (size_t i = 0; i < EG_ARRAY_LEN(cases); i++) {
		engine_params_t p = {.prompt_ids = prompt, .n_prompt_ids = 3, .n_predict = 4,
				     .sampler = {.temp = cases[i].temp, .top_p = 0.9f,
						 .mode = cases[i].mode}};
		int rc = 0;
		engine_seq_t *s = engine_seq_new(&m, CTX, &p, &rc);
		assert_non_null(s);
		logits_for(logits, n, prompt[1]);
		logits[cases[i].at] = cases[i].v;
		rc = engine_seq_accept(s, logits);
		int64_t len;
		engine_seq_ids(s, &len);
		if (cases[i].want) {
			if (rc != ENGINE_FAIL || !engine_seq_done(s) || len != 3 ||
			    !strstr(err_get(), cases[i].want))
				fail_msg("case %zu: rc %d, done %d, %lld ids, '%s'", i, rc,
					 engine_seq_done(s), (long long)len, err_get());
		} else if (rc != 0 || len != 4 || engine_seq_ids(s, &len)[3] != 5) {
			fail_msg("case %zu: rc %d, %lld ids", i, rc, (long long)len);
		}
		engine_seq_free(s);
	}
	free(logits);
	tokenizer_free(m.tok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seq_end),
		cmocka_unit_test(test_seq_nonfinite),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
