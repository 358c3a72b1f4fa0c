/* decode: the model's speed (`egang bench decode | prefill | width |
 * overhead`). Every driver decodes greedy from BOS (the end-of-text token
 * does not stop it), skips a warm-up and returns tok/s samples or their
 * nearest-rank summary (base/stats.h). */
#ifndef EGANG_BENCH_DECODE_H
#define EGANG_BENCH_DECODE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/stats.h"
#include "gang/gang.h"
#include "engine/engine_open.h"

typedef struct bench_model_config {
	const char *name;       /* the command, for messages: "bench decode" */
	const char *model, *tok;
	const int *cpus;
	int n_cpus;
	int64_t tokens;         /* the longest run: sizes the KV cache */
	kv_type_t kv_type;      /* its elements (0: f16) */
	bool no_gang;           /* the driver makes its own gangs */
} bench_model_config_t;

/* engine_open with a gang on every CPU (even one) unless no_gang, and a
 * forward pass sized for `tokens` positions plus warm-ups. NULL + err_get()
 * and *exit_code (EXIT_INPUT: a bad file, tokens past the model's context;
 * EXIT_FAIL: memory, threads). Close with engine_close. */
engine_t *bench_model_open(const bench_model_config_t *c, int *exit_code);

/* The type of most of the model's weights (the first layer's FFN). */
const char *bench_model_type(const model_t *m);

/* Decode: a warm-up, then reps runs of `tokens` tokens on the engine's gang
 * with every member requested; v[0..reps) tok/s. progress: one log line per
 * repetition. */
void bench_decode_run(engine_t *e, int tokens, int reps, bool progress, double *v);

/* Prefill: a prompt of `tokens` ids (BOS, then ids drawn with a fixed seed)
 * through the engine's prompt path, a warm-up, then reps runs; v[0..reps)
 * prompt tok/s. -1 + err_get() if a generation fails. */
int bench_prefill_run(engine_t *e, int tokens, int reps, bool progress, double *v);

typedef struct bench_width_result {
	stats_summary_t s[GANG_MAX_SLOTS]; /* tok/s at width w + 1 */
	int knee;  /* the `knee` policy's pick (knee_of_rates, tolerance 0.95) */
	double best; /* the best median tok/s */
	int batch;   /* bench_width_batch_run: the batch size */
	/* bench_width_batch_run: tok/s per second of process CPU time (all
	 * threads, the spinning of idle members included) at width w + 1: on
	 * a shared machine, the work rather than the wait */
	stats_summary_t cpu[GANG_MAX_SLOTS];
} bench_width_result_t;

/* Width: the first w slots requested, w = 1..n, reps runs each. -1 +
 * err_get() on memory. */
int bench_width_run(engine_t *e, int tokens, int reps, bench_width_result_t *r);

/* Width per batch size: for each batch[i], that many sequences decoding
 * side by side (one token of each per step, the server's batch step) at
 * widths 1..n; r[i] gets aggregate tok/s and the knee of batch[i]. -1 +
 * err_get() on a batch outside 1..forward_batch_max or on memory. */
int bench_width_batch_run(engine_t *e, int tokens, int reps, const int *batch,
			  int n_batch, bench_width_result_t *r);

/* Overhead: the same plan on a fresh gang (all members) and on a fixed
 * pool (bench/pool.h), alternating reps times (e opened with no_gang). -1
 * + err_get() on memory or threads. */
int bench_overhead_run(engine_t *e, int tokens, int reps, stats_summary_t *gang,
		       stats_summary_t *pool);

#endif
