/* bench agent: the agent controller evaluated as AKTS section 4.2 does:
 * fixed telemetry regimes, each with a known best record, replayed to the
 * agent (controller.h, CONTROLLER_AGENT) for a fixed number of decisions.
 *
 * Regimes (the snapshot the agent reads; numbers jittered +-20% per
 * decision from a seeded generator so prompts differ) and the best record
 * of the built-in library, by the library's own "Good:" lines (policy.h):
 *   idle         no queue, TTFT low, no tenant          -> 0 elastic
 *   steady       a few requests queued, TTFT moderate  -> 1 knee
 *   burst        a deep queue, TTFT p99 high            -> 2 latency
 *   saturation   a very deep queue, TTFT p99 seconds    -> 2 latency
 *   antagonist   tenants on most cores, few requests    -> 3 throughput
 * The two-choice variant offers only {0 latency, 1 throughput}: burst and
 * saturation -> latency, the other three -> throughput (nothing waits, so
 * cores kept for tenants cost nothing).
 *
 * What it measures is how the answers relate to the regimes: valid raw
 * answers (the unconstrained argmax is a valid index), valid answers (the
 * grammar-constrained ones: all, by construction), correct constrained
 * answers against chance (1 / choices) and against the best constant
 * answer, the distribution of answers (a constant answer is flagged), and
 * the decision latency. With a model that was never trained for this it
 * measures the plumbing, not judgement. */
#ifndef EGANG_BENCH_AGENT_EVAL_H
#define EGANG_BENCH_AGENT_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/controller.h"

typedef enum agent_regime {
	REGIME_IDLE,
	REGIME_STEADY,
	REGIME_BURST,
	REGIME_SATURATION,
	REGIME_ANTAGONIST,
	REGIME_COUNT
} agent_regime_t;

extern const char *const agent_regime_names[REGIME_COUNT];

/* Decision i's regime (round robin), its snapshot on a gang of n_slots and
 * the best index (two_choice: of the two-record library). */
agent_regime_t agent_regime_of(int i);
void agent_regime_snap(agent_regime_t r, uint64_t *rng, uint32_t n_slots,
		       controller_snap_t *s);
int agent_regime_best(agent_regime_t r, bool two_choice);

/* The library the agent chooses from: the built-ins of n_slots, or
 * {latency, throughput} (two_choice). */
void agent_eval_lib(policy_lib_t *lib, int n_slots, bool two_choice);

typedef struct agent_eval {
	int decisions, choices, valid, correct;
	int answers_valid; /* constrained answers that are an index < choices */
	double chance;   /* 1 / choices */
	double majority; /* the best constant answer's share correct */
	int answers[10];
	bool constant;   /* every answer the same */
	int per_correct[REGIME_COUNT], per_n[REGIME_COUNT];
	double p50_ms, p99_ms;
} agent_eval_t;

/* decisions calls of controller_step on c (an agent over
 * agent_eval_lib's library); 0, or -1 + err_get(). */
int agent_eval_run(controller_t *c, int decisions, bool two_choice,
		   uint64_t seed, agent_eval_t *out);

#endif
