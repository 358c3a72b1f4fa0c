/* coschedule: the gang shares the machine with CPU-bound tenants
 * (`egang bench coschedule`; the Elastic Gang paper's central experiment,
 * doc/ARCHITECTURE.md "The problem the design answers"). Generations of G tokens arrive periodically so that
 * inference is busy a duty fraction d of the time (calibrated solo);
 * tenants (forked processes running burn_loop) run throughout. Arms, all
 * the same binary and the same chunks:
 *   static:K         gang on K cores, tenants pinned to the other n-K
 *   elastic-polite   gang on all cores between generations' tokens,
 *                    SCHED_OTHER workers; tenants anywhere
 *   elastic-preempt  the same with SCHED_FIFO workers (acquire preempt)
 *   knee             elastic-preempt capped at the online knee
 *   fixed            all n threads always members, spinning barrier, no
 *                    membership (a fixed pool, as engines run today)
 * For every (arm, duty) it records inference tok/s, generation latency
 * p50/p99 (nearest rank, from arrival), tenant work rate, mean gang width,
 * in-token preemptions and whether every token's logits equal the solo
 * run's; writes OUT/coschedule.csv and a width trace per run
 * (OUT/width-ARM-DUTY.csv). The figure is tools/plot/coschedule.gp
 * (bench/plot.h), which the command draws from the CSV. */
#ifndef EGANG_BENCH_COSCHEDULE_H
#define EGANG_BENCH_COSCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "bench/burn.h"

#define COSCHED_MAX_TENANTS 64
#define COSCHED_MAX_ARMS 40
#define COSCHED_MAX_DUTIES 16

typedef struct cosched_config {
	const char *model, *tok;
	const int *cpus;
	int n_cpus;          /* >= 2 */
	int gen_tokens;      /* tokens per generation */
	int n_tenants;       /* 0: one per core */
	double seconds;      /* per run */
	burn_mode_t mode;    /* the tenants' work */
	const char *out;     /* folder, created if absent */
	double knee_tolerance;
} cosched_config_t;

typedef struct cosched_result {
	double tok_s, lat_p50_ms, lat_p99_ms, tenant_units_s, tenant_frac,
		mean_width;
	uint64_t gens, tokens, preempted_tokens, mismatches;
} cosched_result_t;

typedef struct cosched_solo {
	double tok_s;        /* inference alone, back to back, all cores */
	double gen_ms;       /* one generation alone */
	double tenant_units_s; /* the tenants alone */
} cosched_solo_t;

typedef struct cosched cosched_t;

/* Loads the model, makes the tenants' shared counters and the out folder.
 * NULL + err_get() and *exit_code. */
cosched_t *cosched_open(const cosched_config_t *c, int *exit_code);
void cosched_close(cosched_t *cs);

const char *cosched_model_name(const cosched_t *cs);
int cosched_n_tenants(const cosched_t *cs);
int cosched_n_arms(const cosched_t *cs);
const char *cosched_arm_name(const cosched_t *cs, int arm);

/* The references: one generation's logits, inference alone, tenants
 * alone. */
void cosched_solo(cosched_t *cs, cosched_solo_t *s);

/* Every arm at every duty (in percent); row(user, arm, duty, result) after
 * each run. Writes the CSV and the width traces. -1 + err_get() when the
 * CSV cannot be written. */
int cosched_sweep(cosched_t *cs, const int *duty, int n_duty,
		  void (*row)(void *user, int arm, int duty, const cosched_result_t *r),
		  void *user);

/* The verdict line of duty index d for an elastic arm (preempt or knee),
 * into buf; false for the other arms. The best static split is the one
 * that leaves tenants the most work among those within 3% of the best
 * static inference rate. The bounds: at duty 0 tenants keep >= 97% of
 * their solo work; in between, elastic is on or above the static frontier
 * (tenant work and inference both >= 97% of the best split's); at duty 100
 * it is within 5% of the best split on both. */
bool cosched_verdict(const cosched_t *cs, int d, int arm, char *buf, size_t cap);

/* Logits that differed from the solo run's over the whole sweep. */
uint64_t cosched_mismatches(const cosched_t *cs);

#endif
