/* switch_cost: what a policy switch costs (`egang bench switch-cost`;
 * doc/ARCHITECTURE.md "Policies, the control word and the guard").
 *
 * A controller thread writes a new valid index into the control word every
 * 1-3 ms while the leader decodes (a synthetic stories260k-shaped model by
 * default); for each write it measures the store itself (ns, between two
 * clock reads) and write-to-in-force: from just before the store to the
 * leader's applying it at a token boundary (applied_ns in the telemetry),
 * in microseconds and in token boundaries. (AKTS reports 920 ns p50 for a
 * BPF map update through a system call; here the write is a plain store
 * into a shared page.) Percentiles are nearest rank (base/stats.h). */
#ifndef EGANG_BENCH_SWITCH_COST_H
#define EGANG_BENCH_SWITCH_COST_H

#include <stdint.h>

typedef struct switch_cost_config {
	const char *model;   /* NULL: a synthetic stories260k shape, 2 layers,
				written to a temporary folder */
	const char *control; /* NULL: a temporary control word */
	const int *cpus;
	int n_cpus;
	int switches;        /* index writes */
} switch_cost_config_t;

typedef struct switch_cost_q {
	uint64_t p50, p99, max;
} switch_cost_q_t;

typedef struct switch_cost_result {
	int n;                /* writes that took force */
	int n_policies;
	double tok_s;         /* decode while switching */
	double store_ns;      /* the plain store, amortized over a tight loop */
	uint64_t clock_ns;    /* one clock read (in every write_ns sample) */
	switch_cost_q_t write_ns, in_force_tokens, in_force_ns;
} switch_cost_result_t;

/* Runs the experiment; -1 + err_get() with *exit_code (EXIT_INPUT: a bad
 * model or control word, a library of one record; EXIT_FAIL: no switch
 * took force, memory, threads). */
int switch_cost_run(const switch_cost_config_t *c, switch_cost_result_t *r,
		    int *exit_code);

#endif
