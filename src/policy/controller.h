/* controller: the processes that write the policy index (`egang control`).
 *
 * Every period a controller reads the control word's telemetry
 * (controller_snap_read) and one of three controllers picks an index
 * (controller_step):
 *
 *  ORACLE  follows a given phase schedule ("0-10s:latency,..." or a file
 *          of "START_S END_S POLICY" lines): at time t the index of the
 *          phase holding t; outside every phase the last index stays.
 *  BANDIT  UCB1 over the library's records (the arms); reward
 *          r = w * r_ttft + (1 - w) * r_tenant in [0, 1]:
 *            r_ttft   = (smallest TTFT p50 seen so far) / (this arm's TTFT
 *                       p50; the leader's window is reset when a record
 *                       takes force, so it is the arm's own);
 *            r_tenant = with units_path (a file holding one number, the
 *                       tenant's cumulative work units, rewritten by the
 *                       tenant): the units/s during the hold over the best
 *                       rate seen so far; otherwise the telemetry's
 *                       tenant_width / n_slots averaged over the samples of
 *                       the hold (controller_sample; the share of the
 *                       gang's cores left to tenants).
 *          A choice is held at least `hold` periods and only scored when
 *          the leader ended a generation since it was written (periods
 *          without one carry no information: skipped). Untried arms come
 *          first, in an order drawn from the seed; then the highest
 *          mean + sqrt(2 ln N / n). Deterministic given the seed.
 *  AGENT   asks a model for one digit: the caller's logits function runs
 *          the prompt (policies and telemetry in words, ending "Answer with
 *          one digit:"); the answer is constrained by a one-rule grammar
 *          (model/grammar.h) whose alternatives are the texts of the tokens
 *          spelling a valid index ("3", " 3"): the logits are masked by it
 *          and the largest token that completes it is the answer, so every
 *          answer is a valid index by construction. The unconstrained
 *          argmax is counted in invalid_raw when it is not a valid index.
 *
 * controller_run is the loop of `egang control`: a period, ten telemetry
 * samples inside it, one decision at its end, a line per period. */
#ifndef EGANG_CONTROLLER_H
#define EGANG_CONTROLLER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "model/grammar.h"
#include "model/tokenizer.h"
#include "policy/control.h"
#include "policy/policy.h"

/* The telemetry a controller reads: relaxed loads, one field at a time. */
typedef struct controller_snap {
	uint64_t generations, ttft_p50_us, ttft_p99_us, decode_mtok_s;
	uint32_t index, fallback, n_policies, n_slots, tenant_width, queue_depth;
} controller_snap_t;

void controller_snap_read(control_word_t *w, controller_snap_t *s);

typedef enum controller_kind {
	CONTROLLER_ORACLE,
	CONTROLLER_BANDIT,
	CONTROLLER_AGENT,
	CONTROLLER_COUNT
} controller_kind_t;

const char *controller_kind_name(controller_kind_t k);

/* One period's outcome. */
typedef struct controller_decision {
	int64_t index;    /* the index to write; -1: write nothing */
	bool decided;     /* a decision was made (counted and timed) */
	bool skipped;     /* bandit: no new generation, the arm is kept */
	bool raw_invalid; /* agent: the unconstrained answer was no index */
	char reason[160]; /* "phase:...", "ucb:...", "agent:raw=..." */
} controller_decision_t;

/* ---- the oracle's schedule ---- */
#define ORACLE_MAX_PHASES 256

typedef struct oracle_phase {
	double start, end; /* seconds since the controller started */
	int index;
} oracle_phase_t;

typedef struct oracle {
	oracle_phase_t ph[ORACLE_MAX_PHASES]; /* in order, not overlapping */
	int n;
} oracle_t;

/* A schedule: a regular file of "START_S END_S POLICY" lines ('#'
 * comments; errors "FILE:LINE: ...") or inline "START-END[s]:POLICY,..."
 * (errors name the character and the phase). POLICY: a name or an index
 * of lib. 0, or -1 + err_get(). */
int oracle_parse(oracle_t *o, const policy_lib_t *lib, const char *arg);

/* ---- the bandit ---- */
typedef struct bandit_config {
	int n_arms;             /* 1..POLICY_LIB_MAX */
	int64_t hold;           /* periods a choice is held, >= 1 */
	double w_ttft;          /* weight of r_ttft, 0..1 */
	uint64_t seed;          /* the order of the first tries */
	const char *units_path; /* the tenant's units file, or NULL */
	uint32_t n_slots;       /* r_tenant's denominator when the telemetry
				   has none */
} bandit_config_t;

typedef struct bandit {
	bandit_config_t cfg;
	uint64_t pulls[POLICY_LIB_MAX];
	double sum[POLICY_LIB_MAX];
	int order[POLICY_LIB_MAX]; /* untried arms are tried in this order */
	int arm;                   /* the arm held, -1 before the first */
	int64_t held;              /* periods it has been held */
	uint64_t gen0;             /* generations when it was written */
	double tw_sum;             /* tenant_width samples during the hold */
	int tw_n;
	double units_at, best_rate, best_ttft;
	uint64_t units_t;          /* time_now_ns of units_at */
} bandit_t;

/* The tenant's cumulative units from a file holding one number; -1 when
 * it is not readable as one non-negative number. */
int controller_read_units(const char *path, double *out);

/* ---- the agent ---- */
typedef struct agent {
	int32_t vocab;
	int8_t *digit_of; /* (vocab) the digit a token spells, -1 if none */
	/* The answer's grammar: one rule whose alternatives are the texts of
	 * the tokens that spell an index < n_valid ("3", " 3"), its matcher
	 * (never advanced: each decision asks from the start) on the
	 * vocabulary's trie, and a copy of the logits it masks. */
	grammar_t *grammar;
	grammar_vocab_t *gvocab;
	grammar_state_t *gstate;
	float *masked;    /* (vocab) */
} agent_t;

/* The digit an answer piece spells: "D", or "D" after a space in one of
 * the vocabularies' spellings (U+2581 llama, U+0120 gpt2); -1 for
 * anything else (letters, two digits, signs, empty). */
int controller_answer_digit(const char *piece);

/* ---- a controller ---- */

/* Runs prompt through the agent's model; the logits (vocab) of its last
 * position, or NULL + err_get(). */
typedef const float *(*controller_logits_fn)(void *user, const char *prompt);

typedef struct controller_config {
	controller_kind_t kind;
	const policy_lib_t *lib; /* frozen; outlives the controller */
	int n_arms;              /* records the leader knows: 1..lib->n */
	const char *schedule;    /* oracle: oracle_parse's argument */
	bandit_config_t bandit;  /* bandit: n_arms is taken from above */
	const tokenizer_t *tok;  /* agent: the model's tokenizer */
	int32_t vocab;           /* agent: its vocabulary size */
	controller_logits_fn logits; /* agent */
	void *user;              /* agent: logits' argument */
} controller_config_t;

typedef struct controller {
	controller_config_t cfg;
	oracle_t oracle;
	bandit_t bandit;
	agent_t agent;
	int64_t last; /* the last index written, -1 before the first */
} controller_t;

/* 0, or -1 + err_get() (a bad schedule, an unreadable units file, a
 * vocabulary without the ten digits, memory). */
int controller_init(controller_t *c, const controller_config_t *cfg);
void controller_free(controller_t *c);

/* One telemetry sample inside a period (the bandit's tenant width). */
void controller_sample(controller_t *c, const controller_snap_t *s);

/* The decision at the end of a period, t seconds after the start (now:
 * time_now_ns()); 0, or -1 + err_get() (the agent's model failed). */
int controller_step(controller_t *c, const controller_snap_t *s, double t,
		    uint64_t now, controller_decision_t *d);

/* The seconds at which the run ends by itself (the oracle's last phase
 * end); INFINITY for the others. */
double controller_end(const controller_t *c);

/* ---- the loop ---- */
typedef struct controller_summary {
	uint64_t decisions, switches, invalid_raw, skipped;
	double decision_ms_p50, decision_ms_p99;
} controller_summary_t;

/* Every period_ms: ten samples spread over the period, then a decision
 * written into cw; a line "control t=... index=N reason=..." to lines
 * (NULL: none). Ends after `seconds` (<= 0: controller_end) or when *stop
 * is set (a signal handler's flag). 0, or -1 + err_get() with *sum filled
 * so far. */
int controller_run(controller_t *c, control_t *cw, int64_t period_ms,
		   double seconds, volatile sig_atomic_t *stop, FILE *lines,
		   controller_summary_t *sum);

#endif
