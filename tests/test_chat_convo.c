/* The conversation of engine/chat_convo.h, turn by turn: the prompt ids it
 * assembles from the KV's ids and the template's tail, how many of them
 * it says the KV holds, the fallback that tokenizes the whole text, and
 * turns generated on a model whose answers match a run without reuse. */
#include "testutil.h"

#include "base/base.h"
#include "engine/chat_convo.h"
#include "engine/engine_open.h"
#include "model/chat.h"
#include "model/tokenizer.h"

/* The conversation's text (assistant header after it) tokenized whole;
 * *ids malloc'd, the count. */
static int64_t full_ids(const chat_template_t *ct, const chat_convo_t *c,
			int32_t **ids)
{
	int n;
	const chat_msg_t *m = chat_convo_msgs(c, &n);
	char *text;
	int64_t len = chat_render(ct, m, n, true, &text);
	assert_true(len > 0);
	int64_t k = chat_tokenize(ct, text, (size_t)len, NULL, 0);
	assert_true(k > 0);
	*ids = malloc((size_t)k * sizeof **ids);
	assert_int_equal(chat_tokenize(ct, text, (size_t)len, *ids, k), k);
	free(text);
	return k;
}

/* How many leading ids a and b share. */
static int64_t common(const int32_t *a, int64_t na, const int32_t *b, int64_t nb)
{
	int64_t k = 0;
	while (k < na && k < nb && a[k] == b[k])
		k++;
	return k;
}

/* A generation that answered p with text, its ids the text's own (as a
 * model that writes the text token by token would), ended by an end
 * token (STOP_EOS) or by the length (its last id then never fed). */
static void answer(chat_convo_t *c, const tokenizer_t *tok,
		   const chat_prompt_t *p, const char *text, engine_stop_t stop)
{
	int64_t k = tokenizer_tokenize(tok, text, strlen(text), false, false, NULL, 0);
	assert_true(k > 0);
	engine_result_t r = {.n_prompt = p->n, .n_gen = k, .stop = stop};
	r.ids = malloc((size_t)(p->n + k) * sizeof *r.ids);
	memcpy(r.ids, p->ids, (size_t)p->n * sizeof *r.ids);
	tokenizer_tokenize(tok, text, strlen(text), false, false, r.ids + p->n, k);
	chat_convo_answer_text(c, text, strlen(text));
	chat_convo_record(c, &r);
	assert_null(r.ids);
	int64_t n_kv;
	chat_convo_kv(c, &n_kv);
	assert_int_equal(n_kv, p->n + k - (stop == STOP_EOS ? 0 : 1));
}

/* The next turn's prompt: continued as expected, equal to the whole text
 * tokenized, n_cached the KV's count. */
static void check_continued(chat_convo_t *c, const chat_template_t *ct,
			    chat_prompt_t *p)
{
	int64_t n_kv;
	chat_convo_kv(c, &n_kv);
	assert_int_equal(chat_convo_prompt(c, p), 0);
	assert_true(p->continued);
	assert_int_equal(p->n_cached, n_kv);
	int32_t *want;
	int64_t nw = full_ids(ct, c, &want);
	assert_int_equal(p->n, nw);
	assert_memory_equal(p->ids, want, (size_t)nw * sizeof *want);
	free(want);
}

/* ChatML on a gpt2 vocabulary: the template renders each later turn as
 * the last prompt, the answer, then a tail, so the assembled ids are the
 * whole text's; every position of the KV is reused. */
static void test_turns_continue(void **state)
{
	(void)state;
	tokenizer_t *tok = tokenizer_synth(TOKENIZER_GPT2, 600, 1);
	chat_template_t *ct = chat_template_new(NULL, tok);
	assert_int_equal(chat_template_kind(ct), CHAT_CHATML);
	chat_convo_t *c = chat_convo_new(ct);
	chat_convo_reset(c, "Be brief.");
	chat_convo_add(c, "user", "Hi", 2);
	chat_prompt_t p;
	assert_int_equal(chat_convo_prompt(c, &p), 0);
	assert_false(p.continued); /* the first turn */
	assert_int_equal(p.n_cached, 0);
	answer(c, tok, &p, "Hello there", STOP_EOS);
	free(p.ids);

	chat_convo_add(c, "user", "Tell me more", 12);
	check_continued(c, ct, &p);
	answer(c, tok, &p, "More and more words", STOP_LENGTH);
	free(p.ids);

	/* an unknown role: refused, nothing changed; dropped, the turn goes on */
	chat_convo_add(c, "wizard", "x", 1);
	assert_int_equal(chat_convo_prompt(c, &p), -1);
	assert_non_null(strstr(err_get(), "wizard"));
	chat_convo_drop(c);
	chat_convo_add(c, "user", "Bye", 3);
	check_continued(c, ct, &p);
	int n;
	chat_convo_msgs(c, &n);
	assert_int_equal(n, 6); /* system, then user/assistant twice, user */
	free(p.ids);
	chat_convo_free(c);
	chat_template_free(ct);
	tokenizer_free(tok);
}

/* Where the prompt does not continue the KV's ids (a reset, a user
 * message after a user message, a failed generation), the whole text is
 * tokenized and the ids it shares with the KV are reused. */
static void test_turns_fallback(void **state)
{
	(void)state;
	tokenizer_t *tok = tokenizer_synth(TOKENIZER_GPT2, 600, 1);
	chat_template_t *ct = chat_template_new(NULL, tok);
	chat_convo_t *c = chat_convo_new(ct);
	chat_convo_reset(c, "Be brief.");
	chat_convo_add(c, "user", "Hi", 2);
	chat_prompt_t p;
	assert_int_equal(chat_convo_prompt(c, &p), 0);
	answer(c, tok, &p, "Hello there", STOP_EOS);
	int64_t first = p.n;
	free(p.ids);

	/* two user messages in a row */
	chat_convo_add(c, "user", "One", 3);
	chat_convo_add(c, "user", "Two", 3);
	int64_t n_kv;
	const int32_t *kv = chat_convo_kv(c, &n_kv);
	int32_t *want;
	int64_t nw = full_ids(ct, c, &want);
	int64_t shared = common(want, nw, kv, n_kv);
	assert_int_equal(chat_convo_prompt(c, &p), 0);
	assert_false(p.continued);
	assert_int_equal(p.n, nw);
	assert_memory_equal(p.ids, want, (size_t)nw * sizeof *want);
	assert_int_equal(p.n_cached, shared);
	assert_true(shared > first); /* the first turn and its answer */
	free(want);
	answer(c, tok, &p, "Fine", STOP_EOS);
	free(p.ids);

	/* a reset keeps the system message and the KV: the shared prefix is
	 * the system message's and the first user message's */
	chat_convo_reset(c, NULL);
	chat_convo_add(c, "user", "Hi", 2);
	kv = chat_convo_kv(c, &n_kv);
	nw = full_ids(ct, c, &want);
	assert_int_equal(chat_convo_prompt(c, &p), 0);
	assert_false(p.continued);
	assert_int_equal(p.n_cached, nw - 1); /* the same text as the first
						 prompt: all but its last id */
	assert_int_equal(nw, first);
	assert_int_equal(common(want, nw, kv, n_kv), nw);
	free(want);
	free(p.ids);

	/* a failed generation: nothing is reused */
	chat_convo_forget_kv(c);
	assert_int_equal(chat_convo_prompt(c, &p), 0);
	assert_false(p.continued);
	assert_int_equal(p.n_cached, 0);
	free(p.ids);
	chat_convo_free(c);
	chat_template_free(ct);
	tokenizer_free(tok);
}

/* A JSON conversation: every message or none. */
static void test_add_json(void **state)
{
	(void)state;
	tokenizer_t *tok = tokenizer_synth(TOKENIZER_GPT2, 600, 1);
	chat_template_t *ct = chat_template_new(NULL, tok);
	chat_convo_t *c = chat_convo_new(ct);
	json_t *ok = json_pack("[{s:s, s:s}, {s:s, s:s}]", "role", "system",
			       "content", "S", "role", "user", "content", "U");
	json_t *bad = json_pack("[{s:s, s:s}, {s:s}]", "role", "user", "content",
				"A", "role", "user");
	int n;
	assert_int_equal(chat_convo_add_json(c, bad), -1);
	assert_string_equal(err_get(), "messages[1] needs string role and content");
	chat_convo_msgs(c, &n);
	assert_int_equal(n, 0);
	assert_int_equal(chat_convo_add_json(c, ok), 0);
	const chat_msg_t *m = chat_convo_msgs(c, &n);
	assert_int_equal(n, 2);
	assert_string_equal(m[1].role, "user");
	assert_string_equal(m[1].text, "U");
	char *text;
	int64_t len = chat_convo_render(c, true, &text);
	assert_true(len > 0);
	assert_non_null(strstr(text, "<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"));
	free(text);
	json_decref(ok);
	json_decref(bad);
	chat_convo_free(c);
	chat_template_free(ct);
	tokenizer_free(tok);
}

/* The contents of f, rewound and emptied after; malloc'd. */
static char *take(FILE *f)
{
	long n = ftell(f);
	assert_true(n > 0);
	char *s = calloc(1, (size_t)n + 1);
	rewind(f);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	assert_int_equal(ftruncate(fileno(f), 0), 0);
	rewind(f);
	return s;
}

/* The positions a before_token hook was called at, through its own user
 * pointer; calls with another pointer are only counted. */
typedef struct token_tally {
	int64_t pos[512];
	int n;
} token_tally_t;

static token_tally_t *tally_want; /* the user pointer the hook must get */
static int tally_wrong;           /* calls with any other */

static void tally_before_token(void *user, uint64_t index)
{
	if (user != tally_want) {
		tally_wrong++;
		return;
	}
	token_tally_t *t = user;
	assert_true(t->n < 512);
	t->pos[t->n++] = (int64_t)index;
}

/* The hook of one turn got its own pointer, once per prefill batch from
 * the first position the KV lacked, then once per decoded position. */
static void check_tally(const token_tally_t *t, const engine_result_t *r,
			int64_t n_cached)
{
	assert_int_equal(tally_wrong, 0);
	assert_true(t->n >= 1 + r->decode_steps);
	assert_int_equal(t->pos[0], n_cached);
	for (int i = 1; i < t->n; i++)
		assert_true(t->pos[i] > t->pos[i - 1]);
	for (int64_t i = 0; i < r->decode_steps; i++)
		assert_int_equal(t->pos[t->n - r->decode_steps + i], r->n_prompt + i);
}

/* Three greedy turns on a synthetic model through chat_convo_turn: each
 * later turn reuses every position of the KV, and its answer and every
 * sampled position's logits (hashed) are those of a run of the same
 * prompt from position 0; a before_token hook gets its own user pointer
 * and is called per token. */
static void test_turns_generate(void **state)
{
	(void)state;
	char path[256];
	snprintf(path, sizeof path, "%s/convo.gguf", test_tmpdir());
	synth_shape_t shape = *synth_find("stories260k");
	shape.flat_logits = true; /* answers that depend on the context */
	assert_int_equal(synth_write(&shape, DTYPE_F32, 3, 2, path, NULL, NULL), 0);
	int cpu = 0;
	engine_config_t ec = {.model_path = path, .cpus = &cpu, .n_cpus = 1,
			      .ctx = 512};
	int status;
	engine_t *e = engine_open(&ec, &status);
	assert_non_null(e);
	chat_template_t *ct = chat_convo_template(e->m, CHAT_LLAMA2, NULL);
	chat_convo_t *c = chat_convo_new(ct);
	chat_convo_reset(c, "Sys");
	FILE *hash = tmpfile();
	const char *say[] = {"Once upon a time", "Tell me more", "The end"};
	for (int t = 0; t < 3; t++) {
		int64_t n_kv;
		chat_convo_kv(c, &n_kv);
		chat_convo_add(c, "user", say[t], strlen(say[t]));
		token_tally_t tally = {.n = 0};
		tally_want = &tally;
		tally_wrong = 0;
		engine_params_t p = {.n_predict = 12, .sampler = {.temp = 0, .top_p = 1},
				     .stop_at_control = true, .logits_hash = hash,
				     .before_token = tally_before_token, .user = &tally};
		engine_result_t r;
		int64_t reused = -1;
		assert_int_equal(chat_convo_turn(c, e, &p, &r, &reused), 0);
		assert_null(r.ids);
		assert_int_equal(reused, n_kv);
		assert_true(t == 0 || reused > 0);
		assert_true(r.decode_steps > 0);
		check_tally(&tally, &r, reused);
		char *got = take(hash);
		/* the same prompt from position 0 */
		const int32_t *kv = chat_convo_kv(c, &n_kv);
		int64_t n_all = r.n_prompt + r.n_gen;
		int32_t *all = malloc((size_t)n_all * sizeof *all);
		memcpy(all, kv, (size_t)n_all * sizeof *all);
		engine_params_t q = p;
		q.before_token = NULL;
		q.user = NULL;
		q.prompt_ids = all;
		q.n_prompt_ids = r.n_prompt;
		engine_result_t r2;
		assert_int_equal(engine_run(e, &q, &r2), 0);
		assert_int_equal(r2.n_gen, r.n_gen);
		assert_memory_equal(r2.ids, all, (size_t)n_all * sizeof *all);
		char *want = take(hash);
		assert_string_equal(got, want);
		free(got);
		free(want);
		engine_result_free(&r2);
		free(all);
	}
	int n;
	const chat_msg_t *m = chat_convo_msgs(c, &n);
	assert_int_equal(n, 7);
	assert_string_equal(m[6].role, "assistant");
	fclose(hash);
	chat_convo_free(c);
	chat_template_free(ct);
	engine_close(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_turns_continue),
		cmocka_unit_test(test_turns_fallback),
		cmocka_unit_test(test_add_json),
		cmocka_unit_test(test_turns_generate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
