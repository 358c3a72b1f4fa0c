/* egang bench switching: the policy-switching experiment (the method:
 * bench/switching.h). One summary line per arm and one goal line per
 * switching arm. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/plot.h"
#include "bench/switching.h"
#include "cli/cli.h"
#include "scx/scx.h"
#include "cli/cmd_bench.h"

static const char switching_help[] =
	"usage: egang bench switching -m MODEL [options]\n"
	"\n"
	"The policy-switching experiment: `egang serve` on all cores with CPU-bound\n"
	"antagonists (`egang burn`, pinned, BURNS per core) running throughout,\n"
	"and open-loop Poisson arrivals in three phases (steady, burst, steady).\n"
	"Per arm and repetition a fresh server and fresh antagonists. Arms:\n"
	"  latency     the `latency` record, fixed (`egang policy set`)\n"
	"  throughput  the `throughput` record, fixed\n"
	"  oracle      `egang control --oracle`: throughput, latency in the\n"
	"              burst, throughput (knows the phases: the upper bound)\n"
	"  bandit      `egang control --bandit` (UCB1, reward from TTFT and the\n"
	"              antagonists' measured work)\n"
	"  agent       `egang control --agent -m MODEL` (the same model)\n"
	"Prints one summary line per arm (TTFT p50/p99 per phase as mean +- sd\n"
	"over repetitions, requests served, antagonist work, guard fallbacks;\n"
	"bandit and agent: the periods whose index was the oracle's for the phase)\n"
	"and one goal line per switching arm; writes DIR/switching.csv (one row\n"
	"per arm, repetition and phase), DIR/requests.csv, DIR/timeline.csv and\n"
	"DIR/switching.png (TTFT and antagonist work over time, oracle arm):\n"
	"without gnuplot the run exits 1 after writing the CSV (see --no-plot).\n"
	"\n"
	"  -m, --model FILE        the served model (required; GGUF or llama2.c)\n"
	"  -z, --tokenizer FILE    tokenizer.bin for a llama2.c checkpoint\n"
	"      --reps N            repetitions of every arm (default 3)\n"
	"      --arms LIST         comma-separated arms (default all five)\n"
	"      --phase-seconds A,B,C  steady, burst, steady durations (default 6,2,6)\n"
	"      --rates A,B,C       arrivals per second in each phase (default 8,150,8)\n"
	"      --max-tokens N      tokens generated per request (default 48)\n"
	"      --burns-per-core N  antagonist processes per core (default 2)\n"
	"      --cores LIST        the server's CPUs (default: all allowed)\n"
	"      --period-ms N       controllers' period (default 100)\n"
	"      --drain-seconds S   wait at most S for the backlog (default 10)\n"
	"      --seed N            arrivals (default 1; repetition r uses N + r)\n"
	"      --out DIR           output folder (default switching-out)\n"
	"      --backend B         user (default), or scx: `serve --backend scx`\n"
	"                          and the antagonists in SCHED_EXT, so the\n"
	"                          controllers switch kernel policies through the\n"
	"                          one index (needs egang's scheduler: root, a\n"
	"                          sched_ext kernel, make SCX=1)\n"
	"      --no-plot           write switching.gp (tools/plot/switching.gp),\n"
	"                          do not run gnuplot: draw it later with\n"
	"                          gnuplot -c DIR/switching.gp DIR\n"
	"  -q, --quiet             no progress lines (summary lines stay)\n"
	"  -h, --help              this text\n";

/* "A,B,C" of three numbers in [lo, hi]. */
static int three(const char *flag, const char *s, double lo, double hi, double out[3])
{
	const char *p = s;
	for (int i = 0; i < 3; i++) {
		char *end;
		errno = 0;
		double v = strtod(p, &end);
		if (end == p || errno || !isfinite(v) || v < lo || v > hi ||
		    (i < 2 && *end != ',') || (i == 2 && *end)) {
			log_error("%s: '%s' is not three numbers A,B,C in [%g, %g]",
				  flag, s, lo, hi);
			return -1;
		}
		out[i] = v;
		p = end + 1;
	}
	return 0;
}

static int parse_arms(const char *s, bool on[SWITCHING_ARM_COUNT])
{
	memset(on, 0, SWITCHING_ARM_COUNT * sizeof *on);
	char buf[256];
	snprintf(buf, sizeof buf, "%s", s);
	char *save = NULL;
	int n = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int a = 0;
		while (a < SWITCHING_ARM_COUNT && strcmp(t, switching_arm_names[a]))
			a++;
		if (a == SWITCHING_ARM_COUNT) {
			log_error("--arms: '%s' is not latency, throughput, oracle, "
				  "bandit or agent", t);
			return -1;
		}
		on[a] = true;
		n++;
	}
	if (!n) {
		log_error("--arms: the list is empty");
		return -1;
	}
	return 0;
}

static const char *const phase_names[SWITCHING_PHASES] = {"steady1", "burst",
								 "steady2"};

static void print_arm(const switching_config_t *c, const switching_summary_t *s, int a)
{
	const switching_arm_summary_t *x = &s->arm[a],
		*thr = &s->arm[SWITCHING_ARM_THROUGHPUT];
	char line[2048];
	int k = snprintf(line, sizeof line, "bench switching: arm %s reps %d",
			 switching_arm_names[a], c->reps);
	for (int p = 0; p < SWITCHING_PHASES; p++)
		k += snprintf(line + k, sizeof line - (size_t)k,
			      " %s ttft_p50 %.1f+-%.1f ms p99 %.1f+-%.1f ms",
			      phase_names[p], x->p50[p], x->p50_sd[p], x->p99[p], x->p99_sd[p]);
	k += snprintf(line + k, sizeof line - (size_t)k,
		      " served %d/%d antagonist %.3g+-%.2g units = %.1f+-%.1f%% "
		      "of alone", x->served, x->sent, x->units, x->units_sd,
		      100 * x->work, 100 * x->work_sd);
	if (c->arm_on[SWITCHING_ARM_THROUGHPUT])
		k += snprintf(line + k, sizeof line - (size_t)k, " (%.1f%% of throughput's)",
			      100 * x->work / (thr->work > 0 ? thr->work : NAN));
	k += snprintf(line + k, sizeof line - (size_t)k, " cpu_left %.1f+-%.1f%%",
		      100 * x->left, 100 * x->left_sd);
	if (c->arm_on[SWITCHING_ARM_THROUGHPUT])
		k += snprintf(line + k, sizeof line - (size_t)k, " (%.1f%% of throughput's)",
			      100 * x->left / thr->left);
	k += snprintf(line + k, sizeof line - (size_t)k,
		      " guard_fallbacks %llu drain_max %.2f s",
		      (unsigned long long)x->fallbacks, x->drain_max_s);
	if (x->decisions)
		k += snprintf(line + k, sizeof line - (size_t)k,
			      " oracle_agree %d/%d periods (%.1f%%)", x->oracle_agree, x->decisions,
			      100.0 * x->oracle_agree / x->decisions);
	if (x->ctl[0])
		snprintf(line + k, sizeof line - (size_t)k, " [last control: %s]", x->ctl);
	printf("%s%s\n", line, c->scx ? " backend=scx" : "");
}

static void print_summary(const switching_config_t *c, const switching_summary_t *s)
{
	for (int a = 0; a < SWITCHING_ARM_COUNT; a++)
		if (c->arm_on[a])
			print_arm(c, s, a);
	const switching_arm_summary_t *lat = &s->arm[SWITCHING_ARM_LATENCY];
	for (int a = SWITCHING_ARM_ORACLE; a < SWITCHING_ARM_COUNT; a++) {
		switching_goal_t g;
		if (!switching_goal(c, s, (switching_arm_t)a, &g))
			continue;
		printf("bench switching goal: arm %s burst ttft_p99 %.1f ms vs "
		       "latency %.1f ms (sd %.1f): %s; antagonist work %.1f%% of "
		       "throughput's: %s (cpu_left: %.1f%%); goal %s\n",
		       switching_arm_names[a], s->arm[a].p99[1], lat->p99[1], g.sd,
		       g.latency_ok ? "within one sd" : "NOT within one sd",
		       100 * g.share, g.work_ok ? ">= 97%" : "BELOW 97%", 100 * g.cpu,
		       g.latency_ok && g.work_ok ? "met" : "not met");
	}
}

int cmd_bench_switching(int argc, char **argv)
{
	static switching_config_t c;
	switching_defaults(&c);
	const char *arms = NULL, *phases = NULL, *rates = NULL, *out = c.out;
	int64_t reps = c.reps, max_tokens = c.max_tokens, burns = c.burns,
		period_ms = c.period_ms;
	cli_cpus_t cpus = {0};
	static const char *const backends[] = {"user", "scx", NULL};
	int backend = 0;
	bool no_plot = false;
	const cli_opt_t opts[] = {
		OPT_STR("model", 'm', &c.model, .required = true),
		OPT_STR("tokenizer", 'z', &c.tok),
		OPT_INT("reps", 0, &reps, 1, SWITCHING_MAX_REPS),
		OPT_STR("arms", 0, &arms),
		OPT_STR("phase-seconds", 0, &phases),
		OPT_STR("rates", 0, &rates),
		OPT_INT("max-tokens", 0, &max_tokens, 1, 4096),
		OPT_INT("burns-per-core", 0, &burns, 0, 16),
		OPT_CPUS("cores", &cpus, GANG_MAX_SLOTS),
		OPT_INT("period-ms", 0, &period_ms, 1, 60000),
		OPT_FLOAT("drain-seconds", 0, &c.drain_s, 0, 3600),
		OPT_INT("seed", 0, &c.seed, 0, INT64_MAX / 2),
		OPT_STR("out", 0, &out),
		OPT_CHOICE("backend", 0, &backend, backends),
		OPT_FLAG("no-plot", 0, &no_plot),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "bench switching", .help = switching_help,
			       .opts = opts};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	if ((arms && parse_arms(arms, c.arm_on) < 0) ||
	    (phases && three("--phase-seconds", phases, 0.1, 3600, c.phase_s) < 0) ||
	    (rates && three("--rates", rates, 0.01, 10000, c.rate) < 0))
		return EXIT_INPUT;
	c.out = out;
	c.scx = backend == 1;
	if (c.scx && !scx_built()) {
		log_error("bench switching: --backend scx: this build has no "
			  "sched_ext support (rebuild with `make SCX=1`)");
		return EXIT_FAIL;
	}
	c.reps = (int)reps;
	c.max_tokens = (int)max_tokens;
	c.burns = (int)burns;
	c.period_ms = (int)period_ms;
	c.n_cpus = cpus.n;
	memcpy(c.cpus, cpus.cpu, (size_t)cpus.n * sizeof *c.cpus);
	static switching_summary_t s;
	if (switching_run(&c, &s, &status) < 0) {
		log_error("%s", err_get());
		return status;
	}
	print_summary(&c, &s);
	/* the figure shows the oracle arm */
	bool oracle = c.arm_on[SWITCHING_ARM_ORACLE];
	if (oracle && bench_plot_draw(BENCH_PLOT_SWITCHING, c.out,
				      c.scx ? "sched_ext backend" : NULL, !no_plot) < 0) {
		log_error("bench switching: %s", err_get());
		return EXIT_FAIL;
	}
	log_info("bench switching: %d runs in %.0f s; %s/switching.csv%s", s.runs,
		 s.seconds, c.out, !oracle ? "" : no_plot ? ", switching.gp"
						   : ", switching.png");
	return EXIT_OK;
}
