/* grammar: the cost of constrained decoding (`egang bench grammar`).
 *
 * Method: the same prompt decoded four ways, alternating, reps times each:
 * greedy and sampled (temperature 0.8, top-p 0.95), each without and with
 * the grammar (by default a JSON grammar, bench_grammar_json); the median
 * decode tok/s of each (forward passes after the prompt over their wall
 * time, the engine's own figure). Greedy under a grammar checks the argmax
 * first and masks only when the grammar refuses it; sampling masks every
 * token (the worst case). Then the mask itself: the tokens of the last
 * sampled constrained run replayed through a fresh matcher, timing
 * grammar_mask (the whole mask, its per-state cache as in the run) and
 * grammar_allows (one token's check) at every position; and the time to
 * build the vocabulary's trie (once per model). */
#ifndef EGANG_BENCH_GRAMMAR_H
#define EGANG_BENCH_GRAMMAR_H

#include <stdint.h>

#include "base/stats.h"
#include "engine/engine_open.h"
#include "model/grammar.h"

/* A JSON grammar (any JSON value at the top, strings with escapes,
 * numbers, nesting; whitespace bounded as llama.cpp's json.gbnf bounds
 * it). */
extern const char bench_grammar_json[];

typedef struct bench_grammar_result {
	/* median decode tok/s: [0] free, [1] grammar; greedy and sampled */
	double greedy[2], sampled[2];
	double gen_tokens[2];   /* median tokens generated under the grammar:
				   greedy, sampled */
	stats_summary_t mask_us;  /* grammar_mask per position, microseconds */
	stats_summary_t check_us; /* grammar_allows per position */
	double vocab_ms;          /* grammar_vocab_new on the model's tokenizer */
	int64_t trie_nodes;
	int32_t vocab;
} bench_grammar_result_t;

/* Runs the method above on e (its gang with every member requested) with
 * grammar g and prompt, at most `tokens` tokens a run; progress: a log
 * line per repetition. 0, or -1 + err_get(). */
int bench_grammar_run(engine_t *e, const grammar_t *g, const char *prompt,
		      int tokens, int reps, bool progress, bench_grammar_result_t *r);

#endif
