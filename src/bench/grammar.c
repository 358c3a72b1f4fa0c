/* grammar: the cost of constrained decoding (grammar.h has the method). */
#include "bench/grammar.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "engine/engine.h"

const char bench_grammar_json[] =
	"# any JSON object, whitespace bounded\n"
	"root   ::= object\n"
	"value  ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
	"object ::= \"{\" ws ( string \":\" ws value (\",\" ws string \":\" ws value)* )? \"}\" ws\n"
	"array  ::= \"[\" ws ( value (\",\" ws value)* )? \"]\" ws\n"
	"string ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) )* \"\\\"\" ws\n"
	"number ::= \"-\"? (\"0\" | [1-9] [0-9]{0,15}) (\".\" [0-9]+)? ([eE] [-+]? [0-9]{1,3})? ws\n"
	"ws     ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

/* One generation of at most `tokens` tokens; its decode tok/s, or -1. With
 * keep, the generated ids (malloc'd) into *ids, *n. */
static double run_once(engine_t *e, const grammar_t *g, const char *prompt,
		       int tokens, bool sampled, double *gen, int32_t **ids, int64_t *n)
{
	engine_params_t p = {.prompt = prompt, .n_predict = tokens, .grammar = g,
			     .sampler = {.temp = sampled ? 0.8f : 0.0f,
					 .top_p = sampled ? 0.95f : 1.0f, .seed = 7}};
	engine_result_t r;
	if (engine_run(e, &p, &r) < 0)
		return -1;
	double tps = engine_result_decode_tps(&r);
	if (gen)
		*gen = (double)r.n_gen;
	if (ids) {
		free(*ids);
		*ids = malloc((size_t)(r.n_gen ? r.n_gen : 1) * sizeof **ids);
		if (*ids)
			memcpy(*ids, r.ids + r.n_prompt, (size_t)r.n_gen * sizeof **ids);
		*n = *ids ? r.n_gen : 0;
	}
	engine_result_free(&r);
	return tps;
}

/* The mask and the one-token check at every position of ids[0..n), on a
 * fresh matcher, in microseconds; 0 or -1. */
static int replay(const model_t *m, const grammar_t *g, const int32_t *ids, int64_t n,
		  bench_grammar_result_t *r)
{
	const grammar_vocab_t *v = model_grammar_vocab(m);
	grammar_state_t *s = v ? grammar_state_new(g, v) : NULL;
	float *logits = calloc((size_t)m->cfg.vocab_size, sizeof *logits);
	double *mask = malloc((size_t)(n ? n : 1) * sizeof *mask);
	double *check = malloc((size_t)(n ? n : 1) * sizeof *check);
	int rc = s && logits && mask && check ? 0 : err_set("bench grammar: out of memory");
	for (int64_t i = 0; i < n && rc == 0; i++) {
		uint64_t t0 = time_now_ns();
		int32_t allowed = grammar_mask(s, logits);
		uint64_t t1 = time_now_ns();
		bool ok = grammar_allows(s, ids[i]);
		uint64_t t2 = time_now_ns();
		mask[i] = (double)(t1 - t0) / 1e3;
		check[i] = (double)(t2 - t1) / 1e3;
		if (allowed <= 0 || !ok || grammar_accept(s, ids[i]) < 0)
			rc = err_set("bench grammar: the replay refused token %d at %lld",
				     ids[i], (long long)i);
	}
	if (rc == 0 && n > 0) {
		r->mask_us = stats_summarize(mask, (size_t)n);
		r->check_us = stats_summarize(check, (size_t)n);
	}
	grammar_state_free(s);
	free(logits);
	free(mask);
	free(check);
	return rc;
}

int bench_grammar_run(engine_t *e, const grammar_t *g, const char *prompt,
		      int tokens, int reps, bool progress, bench_grammar_result_t *r)
{
	memset(r, 0, sizeof *r);
	r->vocab = e->m->cfg.vocab_size;
	uint64_t t0 = time_now_ns();
	grammar_vocab_t *v = grammar_vocab_new(e->m->tok, e->m->cfg.vocab_size);
	r->vocab_ms = (double)(time_now_ns() - t0) / 1e6;
	if (!v)
		return -1;
	r->trie_nodes = grammar_vocab_n_nodes(v);
	grammar_vocab_free(v);
	double *tps = calloc((size_t)reps * 6, sizeof *tps);
	int32_t *ids = NULL;
	int64_t n_ids = 0;
	if (!tps)
		return err_set("bench grammar: out of memory");
	if (e->g)
		gang_request(e->g, gang_all(e->g));
	int rc = 0;
	for (int i = -1; i < reps && rc == 0; i++) { /* rep -1: warm-up */
		double x[6];
		for (int k = 0; k < 4 && rc == 0; k++) {
			bool sampled = k >= 2, constrained = k & 1;
			x[k] = run_once(e, constrained ? g : NULL, prompt, tokens, sampled,
					constrained ? &x[4 + sampled] : NULL,
					constrained && sampled ? &ids : NULL, &n_ids);
			if (x[k] < 0)
				rc = err_wrap("bench grammar");
		}
		if (rc == 0 && i >= 0) {
			for (int k = 0; k < 6; k++)
				tps[k * reps + i] = x[k];
			if (progress)
				log_info("rep %d: greedy %.1f / %.1f, sampled %.1f / %.1f tok/s "
					 "(free / grammar)", i + 1, x[0], x[1], x[2], x[3]);
		}
	}
	if (rc == 0) {
		double *med[6] = {&r->greedy[0], &r->greedy[1], &r->sampled[0],
				  &r->sampled[1], &r->gen_tokens[0], &r->gen_tokens[1]};
		for (int k = 0; k < 6; k++)
			*med[k] = stats_summarize(tps + k * reps, (size_t)reps).p50;
		rc = replay(e->m, g, ids, n_ids, r);
	}
	free(tps);
	free(ids);
	return rc;
}
