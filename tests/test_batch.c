/* Batch invariance (doc/ARCHITECTURE.md "Bit-exactness and batch
 * invariance", forward.h forward_set_segs): a sequence's logits are the
 * same bits whatever else runs in its batch. Each sequence is first run
 * alone, token by token through the decode plan on its own KV
 * cache (the reference: one logits hash per position from its last prompt
 * token on). Then all of them run through random schedules of batched
 * steps: sequences join at random steps, their prompts go in chunks of
 * random size next to the other sequences' decode tokens, and each leaves
 * when its tokens are done; every logits row is hashed and compared with
 * the reference. Schedules run serially and on a gang whose membership
 * changes at random between steps. Models: synthetic f32, q8_0, q4_0,
 * q4_1, q5_1 and q4_k_m (2 layers), with KV caches of each type (f32, f16, q8_0). The
 * count of compared logits rows is printed. Then the same through the
 * engine's sequences (engine_seq_*, the server's path) with a grammar on
 * some of them: constrained and unconstrained sequences in one batch give
 * the logits (before the mask) and tokens each gives alone. */
#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "engine/engine.h"
#include "gang/gang.h"
#include "kernels/kernels.h"
#include "model/forward.h"
#include "model/grammar.h"
#include "model/model.h"

#include "testutil.h"

#define NSEQ 7
#define GEN 12
#define CTX 96

typedef struct seq {
	int32_t ids[CTX];
	int32_t n_prompt, n;   /* prompt tokens; tokens known so far */
	uint64_t ref[CTX];     /* reference hash of position p's logits */
	forward_kv_t kv;
	int32_t done;          /* positions run in the batched schedule */
	bool live, finished;
} seq_t;

static uint64_t compared;

static int32_t argmax(const float *x, int32_t n)
{
	int32_t b = 0;
	for (int32_t i = 1; i < n; i++)
		if (x[i] > x[b])
			b = i;
	return b;
}

static uint64_t hash_row(const float *l, int32_t vocab)
{
	return hash64(l, (size_t)vocab * sizeof(float), HASH64_INIT);
}

/* The reference: seq alone, token by token (greedy), on the decode plan. */
static void run_alone(forward_t *f, seq_t *s, int32_t vocab)
{
	assert_int_equal(forward_kv_alloc(f, &s->kv, CTX), 0);
	s->n = s->n_prompt;
	for (int32_t p = 0; p < s->n_prompt + GEN - 1; p++) {
		assert_int_equal(forward_set_input_kv(f, s->ids[p], p, &s->kv), 0);
		wave_plan_run_serial(forward_plan(f));
		if (p + 1 < s->n_prompt)
			continue;
		const float *l = forward_logits(f);
		s->ref[p] = hash_row(l, vocab);
		s->ids[s->n++] = argmax(l, vocab);
	}
}

/* One random schedule over all sequences; g NULL: serial. */
static void run_batched(forward_t *f, gang_t *g, seq_t *seqs, int32_t vocab, rng_t *r)
{
	int32_t bmax = forward_batch_max(f);
	for (int i = 0; i < NSEQ; i++) {
		seqs[i].done = 0;
		seqs[i].live = seqs[i].finished = false;
		memset(seqs[i].kv.k, 0xff, 16); /* stale bits must not matter */
	}
	int left = NSEQ;
	if (g)
		gang_begin(g);
	while (left) {
		for (int i = 0; i < NSEQ; i++) /* random joins */
			if (!seqs[i].live && !seqs[i].finished && rng_next(r) % 3 == 0)
				seqs[i].live = true;
		forward_seg_t segs[NSEQ];
		int who[NSEQ], ns = 0;
		int32_t total = 0;
		for (int i = 0; i < NSEQ; i++) {
			seq_t *s = &seqs[i];
			if (!s->live)
				continue;
			int32_t end = s->n_prompt + GEN - 1, n = 1;
			if (s->done < s->n_prompt - 1) /* a prefill chunk */
				n = 1 + (int32_t)(rng_next(r) % 16);
			if (s->done + n > end)
				n = end - s->done;
			if (total + n > bmax)
				continue; /* waits for the next step */
			segs[ns] = (forward_seg_t){&s->kv, s->ids + s->done, n, s->done,
						   s->done + n >= s->n_prompt};
			who[ns++] = i;
			total += n;
		}
		if (!ns)
			continue;
		if (g && rng_next(r) % 2)
			gang_request(g, 1u | ((uint32_t)rng_next(r) & gang_all(g)));
		assert_int_equal(forward_set_segs(f, segs, ns), 0);
		if (g)
			gang_run_token(g, forward_batch_plan(f));
		else
			wave_plan_run_serial(forward_batch_plan(f));
		assert_int_equal(forward_batch_status(f), 0);
		for (int k = 0; k < ns; k++) {
			seq_t *s = &seqs[who[k]];
			s->done += segs[k].n;
			const float *l = forward_seg_logits(f, k);
			if (segs[k].logits) {
				assert_non_null(l);
				int32_t p = s->done - 1;
				if (hash_row(l, vocab) != s->ref[p])
					fail_msg("sequence %d position %d: logits differ in a batch "
						 "of %d sequences, %d tokens", who[k], p, ns, total);
				compared++;
			} else {
				assert_null(l);
			}
			if (s->done == s->n_prompt + GEN - 1) {
				s->live = false;
				s->finished = true;
				left--;
			}
		}
	}
	if (g)
		gang_end(g);
}

static void check_model(const char *type, kv_type_t kvt)
{
	char path[256];
	snprintf(path, sizeof path, "%s/batch-%s.gguf", test_tmpdir(), type);
	quant_mix_t mix;
	assert_int_equal(quant_mix_from_name(type, &mix), 0);
	assert_int_equal(synth_write_mix(synth_find("smollm-135m"), &mix, 5, 2, path, NULL,
					 NULL),
			 0);
	model_t *m = model_load(path, NULL);
	assert_non_null(m);
	forward_t *f = forward_new_kv(m, CTX, kvt, 0);
	assert_non_null(f);
	assert_int_equal(forward_kv_type(f), kvt);
	int32_t vocab = m->cfg.vocab_size;
	rng_t r;
	rng_seed(&r, 42);
	seq_t *seqs = calloc(NSEQ, sizeof *seqs);
	for (int i = 0; i < NSEQ; i++) {
		seqs[i].n_prompt = 2 + (int32_t)(rng_next(&r) % 40);
		for (int32_t p = 0; p < seqs[i].n_prompt; p++)
			seqs[i].ids[p] = (int32_t)(rng_next(&r) % (uint64_t)vocab);
		run_alone(f, &seqs[i], vocab);
	}
	for (int round = 0; round < 3; round++)
		run_batched(f, NULL, seqs, vocab, &r);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu > 1) {
		int cpus[2] = {0, 1};
		gang_config_t gc = {.cpus = cpus, .n_cpus = 2, .pin = false};
		gang_t *g = gang_init(&gc);
		assert_non_null(g);
		for (int round = 0; round < 3; round++)
			run_batched(f, g, seqs, vocab, &r);
		gang_free(g);
	}
	for (int i = 0; i < NSEQ; i++)
		forward_kv_free(&seqs[i].kv);
	free(seqs);
	forward_free(f);
	model_free(m);
	unlink(path);
}

static void test_batch_f32(void **state) { (void)state; check_model("f32", KV_F32); }
static void test_batch_f32_kv_f16(void **state) { (void)state; check_model("f32", KV_F16); }
static void test_batch_f32_kv_q8_0(void **state) { (void)state; check_model("f32", KV_Q8_0); }
static void test_batch_q8_0(void **state) { (void)state; check_model("q8_0", KV_F16); }
static void test_batch_q4_0(void **state) { (void)state; check_model("q4_0", KV_Q8_0); }
static void test_batch_q4_k_m(void **state) { (void)state; check_model("q4_k_m", KV_F16); }
/* Q8_1 activations: the gemm's second aux region (gemm_aux_prepare) */
static void test_batch_q4_1(void **state) { (void)state; check_model("q4_1", KV_F16); }
static void test_batch_q5_1(void **state) { (void)state; check_model("q5_1", KV_F16); }

/* ---- grammars in a batch (engine_seq_*) ---- */

#define GSEQ 3

typedef struct gseq_out {
	char *hash;   /* the logits_hash lines: "pos id hash", before the mask */
	size_t hash_len;
	char text[4096];
	size_t text_len;
	int64_t n;
	int32_t ids[CTX];
	engine_stop_t stop;
} gseq_out_t;

static int gseq_text(void *user, const char *s, size_t n)
{
	gseq_out_t *o = user;
	if (o->text_len + n < sizeof o->text) {
		memcpy(o->text + o->text_len, s, n);
		o->text_len += n;
	}
	return 0;
}

/* Runs the sequences in mask `which` (bit i: params[i]) together in batch
 * steps, each step every live sequence's prompt (first) or last token;
 * one at a time when which has one bit. Results into out[i]. */
static void gseq_run(const model_t *m, forward_t *f, const engine_params_t *params,
		     unsigned which, gseq_out_t *out)
{
	engine_seq_t *seq[GSEQ] = {0};
	forward_kv_t kv[GSEQ] = {0};
	FILE *hf[GSEQ] = {0};
	for (int i = 0; i < GSEQ; i++) {
		if (!(which >> i & 1))
			continue;
		memset(&out[i], 0, sizeof out[i]);
		engine_params_t p = params[i];
		hf[i] = open_memstream(&out[i].hash, &out[i].hash_len);
		p.logits_hash = hf[i];
		p.on_text = gseq_text;
		p.user = &out[i];
		int rc = 0;
		seq[i] = engine_seq_new(m, CTX, &p, &rc);
		if (!seq[i])
			fail_msg("engine_seq_new: %s", err_get());
		assert_int_equal(forward_kv_alloc(f, &kv[i], CTX), 0);
	}
	for (;;) {
		forward_seg_t segs[GSEQ];
		int who[GSEQ], ns = 0;
		for (int i = 0; i < GSEQ; i++) {
			if (!seq[i] || engine_seq_done(seq[i]))
				continue;
			int64_t n, np = engine_seq_n_prompt(seq[i]);
			const int32_t *ids = engine_seq_ids(seq[i], &n);
			segs[ns] = n == np ? (forward_seg_t){&kv[i], ids, (int32_t)n, 0, true}
					   : (forward_seg_t){&kv[i], ids + n - 1, 1,
							     (int32_t)n - 1, true};
			who[ns++] = i;
		}
		if (!ns)
			break;
		assert_int_equal(forward_set_segs(f, segs, ns), 0);
		wave_plan_run_serial(forward_batch_plan(f));
		assert_int_equal(forward_batch_status(f), 0);
		for (int k = 0; k < ns; k++) {
			int rc = engine_seq_accept(seq[who[k]], forward_seg_logits(f, k));
			if (rc < 0)
				fail_msg("sequence %d: %s", who[k], err_get());
			compared++;
		}
	}
	for (int i = 0; i < GSEQ; i++) {
		if (!seq[i])
			continue;
		engine_result_t r;
		assert_int_equal(engine_seq_finish(seq[i], &r), 0);
		out[i].stop = r.stop;
		out[i].n = r.n_prompt + r.n_gen;
		memcpy(out[i].ids, r.ids, (size_t)out[i].n * sizeof *r.ids);
		engine_result_free(&r);
		engine_seq_free(seq[i]);
		fclose(hf[i]);
		forward_kv_free(&kv[i]);
	}
}

static void gseq_out_free(gseq_out_t *o)
{
	for (int i = 0; i < GSEQ; i++)
		free(o[i].hash);
}

static void test_batch_grammar(void **state)
{
	(void)state;
	char path[256];
	snprintf(path, sizeof path, "%s/batch-grammar.gguf", test_tmpdir());
	quant_mix_t mix;
	assert_int_equal(quant_mix_from_name("q8_0", &mix), 0);
	assert_int_equal(synth_write_mix(synth_find("smollm-135m"), &mix, 5, 2, path,
					 NULL, NULL), 0);
	model_t *m = model_load(path, NULL);
	assert_non_null(m);
	forward_t *f = forward_new_kv(m, CTX, KV_F16, 0);
	assert_non_null(f);
	const char *text = "root ::= \"{\\\"k\\\": \" [0-9]{1,4} (\", \" [a-z]+)* \"}\"";
	grammar_t *g = grammar_parse(text);
	if (!g)
		fail_msg("%s", err_get());
	static const int32_t prompts[GSEQ][5] = {{1, 400, 500, 600, 700},
						 {1, 401, 501, 601, 701},
						 {1, 402, 502, 602, 702}};
	engine_params_t params[GSEQ];
	for (int i = 0; i < GSEQ; i++)
		params[i] = (engine_params_t){.prompt_ids = prompts[i], .n_prompt_ids = 5,
					      .n_predict = 24,
					      .sampler = {.top_p = 1.0f, .seed = 9}};
	params[0].grammar = g;          /* constrained, sampled (the full mask) */
	params[0].sampler.temp = 0.9f;
	params[1].sampler.temp = 0.0f;  /* unconstrained, greedy */
	params[2].grammar = g;          /* constrained, greedy (argmax checked first) */
	params[2].sampler.temp = 0.0f;
	gseq_out_t alone[GSEQ], together[GSEQ];
	for (int i = 0; i < GSEQ; i++)
		gseq_run(m, f, params, 1u << i, alone);
	gseq_run(m, f, params, 7, together);
	for (int i = 0; i < GSEQ; i++) {
		if (alone[i].hash_len != together[i].hash_len ||
		    memcmp(alone[i].hash, together[i].hash, alone[i].hash_len))
			fail_msg("sequence %d: logits or tokens differ in the batch:\n%s\n"
				 "alone:\n%s", i, together[i].hash, alone[i].hash);
		assert_int_equal(alone[i].n, together[i].n);
		assert_memory_equal(alone[i].ids, together[i].ids,
				    (size_t)alone[i].n * sizeof(int32_t));
		assert_int_equal(alone[i].text_len, together[i].text_len);
		print_message("sequence %d (%s): %s, \"%.*s\"\n", i,
			      params[i].grammar ? "grammar" : "free",
			      engine_stop_name(alone[i].stop), (int)alone[i].text_len,
			      alone[i].text);
	}
	for (int i = 0; i < GSEQ; i += 2) { /* the constrained ones' text */
		grammar_state_t *s = grammar_state_new(g, NULL);
		if (grammar_accept_bytes(s, alone[i].text, alone[i].text_len) < 0)
			fail_msg("sequence %d: text \"%.*s\" is outside the grammar", i,
				 (int)alone[i].text_len, alone[i].text);
		if (alone[i].stop == STOP_EOS)
			assert_true(grammar_done(s));
		assert_true(alone[i].text_len > 3);
		grammar_state_free(s);
	}
	/* the unconstrained greedy sequence does not follow the grammar by
	 * itself (a random model), so the mask did work above */
	grammar_state_t *s = grammar_state_new(g, NULL);
	assert_int_equal(grammar_accept_bytes(s, alone[1].text, alone[1].text_len), -1);
	grammar_state_free(s);
	gseq_out_free(alone);
	gseq_out_free(together);
	grammar_free(g);
	forward_free(f);
	model_free(m);
	unlink(path);
}

/* Bad segments are refused before anything runs. */
static void test_batch_bad(void **state)
{
	(void)state;
	char path[256];
	snprintf(path, sizeof path, "%s/batch-bad.gguf", test_tmpdir());
	assert_int_equal(synth_write(synth_find("stories260k"), DTYPE_F32, 1, 1, path, NULL,
				     NULL),
			 0);
	model_t *m = model_load(path, NULL);
	assert_non_null(m);
	forward_t *f = forward_new(m, 64, 0);
	assert_non_null(f);
	forward_kv_t kv;
	assert_int_equal(forward_kv_alloc(f, &kv, 8), 0);
	int32_t toks[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	forward_seg_t s = {&kv, toks, 9, 0, true}; /* past the cache */
	assert_int_equal(forward_set_segs(f, &s, 1), -1);
	s.n = 2;
	s.pos = -1;
	assert_int_equal(forward_set_segs(f, &s, 1), -1);
	s.pos = 0;
	toks[1] = 1 << 20; /* outside the vocabulary */
	assert_int_equal(forward_set_segs(f, &s, 1), -1);
	assert_int_equal(forward_set_input_kv(f, 1, 8, &kv), -1);
	/* a cache of another KV type than the forward pass's */
	toks[1] = 2;
	kv.type = KV_F32;
	assert_int_equal(forward_set_segs(f, &s, 1), -1);
	assert_int_equal(forward_set_input_kv(f, 1, 0, &kv), -1);
	kv.type = forward_kv_type(f);
	assert_int_equal(forward_set_segs(f, &s, 1), 0);
	forward_kv_free(&kv);
	forward_free(f);
	/* q8_0 needs whole blocks per head: stories260k's head_dim is 8 */
	assert_null(forward_new_kv(m, 64, KV_Q8_0, 0));
	assert_non_null(strstr(err_get(), "multiple of 32"));
	model_free(m);
	unlink(path);
}

static int report(void **state)
{
	(void)state;
	print_message("batch invariance: %llu logits rows compared\n",
		      (unsigned long long)compared);
	return 0;
}

int main(void)
{
	kernels_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_f32),
		cmocka_unit_test(test_batch_f32_kv_f16),
		cmocka_unit_test(test_batch_f32_kv_q8_0),
		cmocka_unit_test(test_batch_q8_0),
		cmocka_unit_test(test_batch_q4_0),
		cmocka_unit_test(test_batch_q4_1),
		cmocka_unit_test(test_batch_q5_1),
		cmocka_unit_test(test_batch_q4_k_m),
		cmocka_unit_test(test_batch_bad),
		cmocka_unit_test(test_batch_grammar),
	};
	return cmocka_run_group_tests(tests, NULL, report);
}
