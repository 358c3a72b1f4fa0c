/* switching: the policy-switching experiment (`egang bench switching`;
 * issue 6, the AKTS paper's "switching beats any fixed policy"). Its
 * children are started and stopped by bench/child.h, the antagonists and
 * their monitor are bench/burners.h, the open-loop arrivals are driven by
 * bench/loadgen.h; the figure is tools/plot/switching.gp (bench/plot.h),
 * which the command draws from the CSV files.
 *
 * One run = one arm x one repetition, each from scratch:
 *  1. antagonists: BURNS x n `egang burn` processes (n = the gang's cores),
 *     each pinned to one core, two per core by default. Pinned so that every
 *     arm faces the same contention on every core (the CFS balancer does not
 *     get to move them differently from run to run) and so that the
 *     `throughput` record's reserved core really holds tenants. Each reports
 *     its rate every 50 ms on a pipe; a monitor thread integrates the reports
 *     into 50 ms buckets (the work done, on the bench's clock) and rewrites a
 *     units file the bandit reads (--tenant-units).
 *  2. `egang serve` on all the gang's cores, a private control word
 *     (/dev/shm/egang-switching-PID-RUN, 0600), an unbounded queue (so no
 *     429 hides a burst), its port picked by the kernel (--port 0, read from
 *     its startup line). Its initial policy is the arm's first: the gang's
 *     keep spin is fixed when the gang starts (control.h), so the fixed
 *     `latency` arm keeps its 50 ms spin and the switching arms, which start
 *     in `throughput`, have none.
 *  3. three warm-up requests (not counted), then the arm's controller:
 *     `egang policy set` (fixed arms), `egang control --oracle` with the
 *     phase schedule (throughput, latency for the burst, throughput),
 *     `egang control --bandit --tenant-units`, `egang control --agent`.
 *  4. open-loop arrivals: a Poisson process per phase at its rate, from a
 *     seed that depends on the repetition only (every arm of a repetition
 *     sees the same arrival times). One thread drives every request on a
 *     curl multi handle; TTFT counts from the *scheduled* arrival, so a
 *     slow client cannot hide queueing (no coordinated omission). After the
 *     last arrival the run waits for the backlog (at most --drain-seconds).
 *  5. antagonist work is the burners' units inside [t0, t0 + phases]: the
 *     same window in every arm (rates are chosen so that the throughput
 *     arm's backlog drains inside the last phase; the drain time is
 *     reported). Guard fallbacks are read from the control word.
 * Arms are interleaved inside each repetition (latency, throughput, oracle,
 * bandit, agent, then again) so that drift of the shared machine spreads
 * over all of them. TTFT percentiles are nearest rank (base/stats.h).
 *
 * The goal (the paper's result), reported per switching arm: burst TTFT p99
 * no worse than the latency arm's by more than one standard deviation (the
 * larger of the two arms' over repetitions) and antagonist work at least
 * 97% of the throughput arm's.
 *
 * Writes OUT/switching.csv (one row per arm, repetition and phase),
 * OUT/requests.csv, OUT/timeline.csv (TTFT and antagonist work over time)
 * and OUT/logs/ (the children's output). */
#ifndef EGANG_BENCH_SWITCHING_H
#define EGANG_BENCH_SWITCHING_H

#include <stdbool.h>
#include <stdint.h>

#include "bench/burners.h"
#include "gang/gang.h"

typedef enum switching_arm {
	SWITCHING_ARM_LATENCY,
	SWITCHING_ARM_THROUGHPUT,
	SWITCHING_ARM_ORACLE,
	SWITCHING_ARM_BANDIT,
	SWITCHING_ARM_AGENT,
	SWITCHING_ARM_COUNT
} switching_arm_t;

/* "latency", "throughput", "oracle", "bandit", "agent", NULL */
extern const char *const switching_arm_names[SWITCHING_ARM_COUNT + 1];

#define SWITCHING_PHASES 3 /* steady1, burst, steady2 */
#define SWITCHING_MAX_BURNERS BURNERS_MAX
#define SWITCHING_MAX_REPS 1000

typedef struct switching_config {
	const char *model, *tok, *out;
	int reps;                       /* 1..SWITCHING_MAX_REPS */
	bool arm_on[SWITCHING_ARM_COUNT];
	double phase_s[SWITCHING_PHASES], rate[SWITCHING_PHASES];
	int max_tokens, burns, period_ms;
	double drain_s;
	int64_t seed;
	int cpus[GANG_MAX_SLOTS];
	int n_cpus;
	/* the sched_ext backend: `serve --backend scx` (it loads egang's
	 * scheduler, whose index is the control word's: the controllers
	 * switch kernel policies with the same store) and the antagonists in
	 * SCHED_EXT (`scx exec`) */
	bool scx;
} switching_config_t;

/* The defaults of every field but model, tok and the CPUs. */
void switching_defaults(switching_config_t *c);

typedef struct switching_arm_summary {
	double p50[SWITCHING_PHASES], p50_sd[SWITCHING_PHASES]; /* TTFT ms, mean, sd */
	double p99[SWITCHING_PHASES], p99_sd[SWITCHING_PHASES];
	int sent, served;
	double units, units_sd;   /* antagonist units in the phases */
	double work, work_sd;     /* antagonist share of its work alone */
	double left, left_sd;     /* CPU left to the antagonists (fraction) */
	uint64_t fallbacks;
	double drain_max_s;
	char ctl[256];            /* the last controller summary, "" if none */
	int decisions;            /* bandit, agent: periods that wrote an index,
				     over the reps */
	int oracle_agree;         /* of them, the oracle's record for the phase */
} switching_arm_summary_t;

typedef struct switching_summary {
	switching_arm_summary_t arm[SWITCHING_ARM_COUNT];
	int runs;
	double seconds;
} switching_summary_t;

/* Every run and the CSV files; -1 + err_get() with *exit_code
 * (EXIT_INPUT: unreadable model, too many antagonists, an unwritable out
 * folder; EXIT_FAIL: a run failed). Progress on stderr unless log_quiet. */
int switching_run(const switching_config_t *c, switching_summary_t *s,
		  int *exit_code);

typedef struct switching_goal {
	double sd;        /* the larger burst p99 sd: this arm's or latency's */
	bool latency_ok;  /* burst p99 <= latency's + sd */
	double share;     /* antagonist work / throughput's */
	double cpu;       /* CPU left / throughput's */
	bool work_ok;     /* share >= 0.97 */
} switching_goal_t;

/* The goal for a switching arm; false unless it, latency and throughput
 * all ran. */
bool switching_goal(const switching_config_t *c, const switching_summary_t *s,
		    switching_arm_t arm, switching_goal_t *g);

#endif
