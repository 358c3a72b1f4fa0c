/* egang bench coschedule: the gang shares the machine with CPU-bound
 * tenants (DESIGN.md section 1; the Elastic Gang paper's central
 * experiment). Generations of G tokens arrive periodically so that
 * inference is busy a duty fraction d of the time (calibrated solo);
 * tenants run throughout. Arms, all the same binary and the same chunks:
 *   static:K         gang on K cores, tenants pinned to the other n-K
 *   elastic-polite   gang on all cores between generations' tokens,
 *                    SCHED_OTHER workers; tenants anywhere
 *   elastic-preempt  the same with SCHED_FIFO workers (acquire preempt)
 *   knee             elastic-preempt capped at the online knee
 *   fixed            all n threads always members, spinning barrier, no
 *                    membership (a fixed pool, as engines run today)
 * For every (arm, duty) it records inference tok/s, generation latency
 * p50/p99, tenant work rate, mean gang width, in-token preemptions and
 * whether every token's logits equal the solo run's; writes a CSV, a width
 * trace per run and a PNG of the frontier (gnuplot). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/bench_pool.h"
#include "cli/burn.h"
#include "cli/cli.h"
#include "gang/gang.h"
#include "model/forward.h"
#include "model/sampler.h"
#include "policy/policy.h"

#define MAX_TENANTS 64
#define MAX_ARMS 40

typedef enum arm_kind {
	ARM_STATIC,
	ARM_ELASTIC_POLITE,
	ARM_ELASTIC_PREEMPT,
	ARM_KNEE,
	ARM_FIXED,
	ARM_COUNT
} arm_kind_t;

typedef struct arm {
	arm_kind_t kind;
	int k; /* static:K */
	char name[32];
} arm_t;

typedef struct tenant_shm {
	struct {
		_Alignas(64) _Atomic uint64_t units;
	} t[MAX_TENANTS];
	_Atomic bool stop;
} tenant_shm_t;

typedef struct cosched {
	const model_t *m;
	forward_t *f;
	int cpus[GANG_MAX_SLOTS], n;
	int gen_tokens, n_tenants;
	double seconds;
	burn_mode_t mode;
	tenant_shm_t *shm;
	pid_t pids[MAX_TENANTS];
	uint64_t *ref_hash; /* (gen_tokens) logits hashes of the solo run */
	const char *out;
	double knee_tolerance;
	cpu_set_t allowed; /* the process's affinity before any pinning */
} cosched_t;

typedef struct result {
	double tok_s, lat_p50_ms, lat_p99_ms, tenant_units_s, mean_width;
	uint64_t gens, tokens, preempted_tokens, mismatches;
} result_t;

/* ---- tenants: forked processes running burn_loop ---- */

static void tenants_start(cosched_t *c, const int *cpus, int n_cpus)
{
	atomic_store(&c->shm->stop, false);
	for (int i = 0; i < c->n_tenants; i++) {
		atomic_store(&c->shm->t[i].units, 0);
		pid_t pid = fork();
		if (pid == 0) {
			/* a fork inherits the calling thread's affinity, and the
			 * leader is pinned: unpinned tenants get the process's
			 * original mask back */
			cpu_set_t set = c->allowed;
			if (n_cpus > 0) {
				CPU_ZERO(&set);
				CPU_SET(cpus[i % n_cpus], &set);
			}
			sched_setaffinity(0, sizeof set, &set);
			burn_loop(c->mode, &c->shm->t[i].units, &c->shm->stop);
			_exit(0);
		}
		c->pids[i] = pid;
	}
}

static uint64_t tenants_units(const cosched_t *c)
{
	uint64_t u = 0;
	for (int i = 0; i < c->n_tenants; i++)
		u += atomic_load(&c->shm->t[i].units);
	return u;
}

static void tenants_stop(cosched_t *c)
{
	atomic_store(&c->shm->stop, true);
	for (int i = 0; i < c->n_tenants; i++)
		if (c->pids[i] > 0) {
			waitpid(c->pids[i], NULL, 0);
			c->pids[i] = 0;
		}
}

/* ---- one generation ---- */

typedef struct runner {
	gang_t *g;
	bench_pool_t *pool;
	const policy_t *pol;
	knee_state_t knee;
	uint64_t width_sum;
	FILE *trace;
	uint64_t t0;
} runner_t;

/* G greedy tokens from BOS; returns the number of logits that differ from
 * the reference (bit for bit). */
static uint64_t generation(cosched_t *c, runner_t *r, uint64_t *hashes)
{
	int32_t tok = tokenizer_bos(c->m->tok) >= 0 ? tokenizer_bos(c->m->tok) : 0;
	uint64_t bad = 0;
	if (r->g) {
		gang_request(r->g, policy_next_mask(r->pol, &r->knee, c->n));
		gang_begin(r->g);
	}
	for (int pos = 0; pos < c->gen_tokens; pos++) {
		forward_set_input(c->f, tok, pos);
		const wave_plan_t *p = forward_plan(c->f);
		uint64_t t0 = time_now_ns();
		uint32_t mask;
		if (r->g) {
			gang_request(r->g, policy_next_mask(r->pol, &r->knee, c->n));
			mask = gang_run_token(r->g, p);
			policy_observe(r->pol, &r->knee, mask, time_now_ns() - t0);
		} else {
			bench_pool_run(r->pool, p);
			mask = (uint32_t)((1ull << c->n) - 1);
		}
		int w = __builtin_popcount(mask);
		r->width_sum += (uint64_t)w;
		if (r->trace)
			fprintf(r->trace, "%.6f,%d\n", (double)(t0 - r->t0) / 1e9, w);
		float *logits = forward_logits(c->f);
		uint64_t h = hash64(logits, (size_t)c->m->cfg.vocab_size * sizeof(float),
				    HASH64_INIT);
		if (hashes)
			hashes[pos] = h;
		else if (h != c->ref_hash[pos])
			bad++;
		tok = sampler_argmax(logits, c->m->cfg.vocab_size);
	}
	if (r->g)
		gang_end(r->g);
	return bad;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Runs one arm at one duty for c->seconds; period_ns 0 = no inference. */
static result_t run_arm(cosched_t *c, const arm_t *a, uint64_t period_ns,
			const char *trace_path, bool with_tenants)
{
	result_t res = {0};
	policy_t pol = {.width = WIDTH_ALL, .acquire = GANG_ACQUIRE_POLITE};
	runner_t r = {.pol = &pol};
	int gang_n = c->n;
	if (a->kind == ARM_STATIC)
		gang_n = a->k;
	if (a->kind == ARM_ELASTIC_PREEMPT || a->kind == ARM_KNEE)
		pol.acquire = GANG_ACQUIRE_PREEMPT;
	if (a->kind == ARM_KNEE)
		pol.width = WIDTH_KNEE;
	if (a->kind == ARM_FIXED) {
		r.pool = bench_pool_new(c->cpus, c->n);
	} else {
		gang_config_t gc = {.cpus = c->cpus, .n_cpus = gang_n, .pin = true,
				    .acquire = pol.acquire, .count_preempt = true};
		r.g = gang_init(&gc);
	}
	knee_init(&r.knee, gang_n);
	r.knee.tolerance = c->knee_tolerance;
	if (with_tenants) {
		if (a->kind == ARM_STATIC)
			tenants_start(c, c->cpus + a->k, c->n - a->k);
		else
			tenants_start(c, NULL, 0);
	}
	r.trace = trace_path ? fopen(trace_path, "w") : NULL;
	if (r.trace)
		fprintf(r.trace, "seconds,width\n");
	usleep(100000); /* tenants running */
	uint64_t lat_cap = 1 << 16, *lat = malloc(lat_cap * sizeof *lat);
	uint64_t u0 = tenants_units(c), t0 = time_now_ns();
	uint64_t end = t0 + (uint64_t)(c->seconds * 1e9), next = t0;
	r.t0 = t0;
	for (;;) {
		uint64_t now = time_now_ns();
		if (now >= end)
			break;
		if (!period_ns || now < next) {
			uint64_t until = period_ns && next < end ? next : end;
			struct timespec ts = {(time_t)((until - now) / 1000000000ull),
					      (long)((until - now) % 1000000000ull)};
			nanosleep(&ts, NULL);
			continue;
		}
		res.mismatches += generation(c, &r, NULL);
		uint64_t done = time_now_ns();
		if (res.gens < lat_cap)
			lat[res.gens] = done - next; /* from arrival, queueing included */
		res.gens++;
		res.tokens += (uint64_t)c->gen_tokens;
		next += period_ns;
	}
	uint64_t t1 = time_now_ns(), u1 = tenants_units(c);
	if (with_tenants)
		tenants_stop(c);
	double secs = (double)(t1 - t0) / 1e9;
	res.tok_s = (double)res.tokens / secs;
	res.tenant_units_s = (double)(u1 - u0) / secs;
	res.mean_width = res.tokens ? (double)r.width_sum / (double)res.tokens : 0;
	size_t nl = res.gens < lat_cap ? res.gens : lat_cap;
	if (nl) {
		qsort(lat, nl, sizeof *lat, cmp_u64);
		res.lat_p50_ms = (double)lat[nl / 2] / 1e6;
		size_t i99 = (size_t)ceil(0.99 * (double)nl) - 1;
		res.lat_p99_ms = (double)lat[i99 < nl ? i99 : nl - 1] / 1e6;
	}
	if (r.g) {
		gang_stats_t st;
		gang_stats(r.g, &st);
		res.preempted_tokens = st.preempted_tokens;
		if (st.raise_denied)
			log_info("note: SCHED_FIFO / nice -20 refused for %s (no "
				 "CAP_SYS_NICE): the gang stayed SCHED_OTHER", a->name);
		gang_free(r.g);
	}
	if (r.pool)
		bench_pool_free(r.pool);
	if (r.trace)
		fclose(r.trace);
	free(lat);
	return res;
}

/* The summary lines of one duty, for the elastic arms (preempt and knee).
 * The best static split is the one that leaves tenants the most work among
 * those within 3% of the best static inference rate (the cheapest split
 * that serves the load). The bounds: at duty 0 tenants keep >= 97%
 * of their solo work; in between, elastic is on or above the static
 * frontier (tenant work and inference both >= 97% of the best split's); at
 * duty 100 it is within 5% of the best split on both. */
static void summarize(int duty, const arm_t *arms, int n_arms, const result_t *r,
		      double solo_ten)
{
	double max_tok = 0;
	for (int a = 0; a < n_arms; a++)
		if (arms[a].kind == ARM_STATIC && r[a].tok_s > max_tok)
			max_tok = r[a].tok_s;
	int best = -1;
	for (int a = 0; a < n_arms; a++)
		if (arms[a].kind == ARM_STATIC && r[a].tok_s >= 0.97 * max_tok &&
		    (best < 0 || r[a].tenant_units_s > r[best].tenant_units_s))
			best = a;
	for (int a = 0; a < n_arms; a++) {
		if (arms[a].kind != ARM_ELASTIC_PREEMPT && arms[a].kind != ARM_KNEE)
			continue;
		double ten = solo_ten > 0 ? r[a].tenant_units_s / solo_ten : 0;
		char vs[256] = "";
		size_t k = 0;
		for (int b = 0; b < n_arms && k < sizeof vs; b++)
			if (arms[b].kind == ARM_STATIC)
				k += (size_t)snprintf(vs + k, sizeof vs - k, "%s%s %.2fx",
						      k ? ", " : "", arms[b].name,
						      r[b].tenant_units_s > 0
							      ? r[a].tenant_units_s / r[b].tenant_units_s
							      : 0);
		const char *verdict;
		char why[160];
		if (duty == 0) {
			verdict = ten >= 0.97 ? "met" : "NOT met";
			snprintf(why, sizeof why, "tenants keep >= 97%% of solo");
		} else if (best < 0) {
			verdict = "no static split to compare";
			why[0] = 0;
		} else {
			double tol = duty == 100 ? 0.05 : 0.03;
			double rt = r[best].tenant_units_s > 0
					    ? r[a].tenant_units_s / r[best].tenant_units_s : 0;
			double ri = r[best].tok_s > 0 ? r[a].tok_s / r[best].tok_s : 0;
			verdict = rt >= 1 - tol && ri >= 1 - tol ? "met" : "NOT met";
			snprintf(why, sizeof why, "tenant %.3fx and inference %.3fx %s (>= %.2f)",
				 rt, ri, arms[best].name, 1 - tol);
		}
		printf("bench coschedule duty %3d: %s tenant %.1f%% of solo (%s), "
		       "inference %.2f tok/s vs %.2f; %s: %s\n", duty, arms[a].name,
		       100 * ten, vs[0] ? vs : "no static split", r[a].tok_s,
		       best >= 0 ? r[best].tok_s : 0, why, verdict);
	}
}

static int parse_duties(const char *s, int *duty, int max)
{
	int n = 0;
	char *copy = strdup(s), *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int64_t v;
		if (n == max || cli_int("--duty", t, 0, 100, &v) < 0) {
			free(copy);
			return -1;
		}
		duty[n++] = (int)v;
	}
	free(copy);
	return n;
}

static const char cosched_help[] =
	"usage: egang bench coschedule -m MODEL [-z TOK] [--tenants N]\n"
	"         [--duty 0,25,50,75,100] [--gen-tokens 32] [--seconds S]\n"
	"         [--mode cpu|mem] [--cores LIST] [--out DIR] [--knee-tolerance T]\n"
	"\n"
	"Inference shares the machine with N CPU-bound tenants (default: one per\n"
	"core). Every static split K = 1..n-1, elastic (polite and preempt), the\n"
	"knee-capped elastic gang and a fixed pool run at each duty; writes\n"
	"DIR/coschedule.csv, DIR/width-ARM-DUTY.csv and DIR/coschedule.png\n"
	"(default DIR: build/coschedule). Takes about (n + 3) x duties x S seconds.\n"
	"The knee arm caps the gang at the widest width whose core time per token\n"
	"(width / tok/s, measured online) is within 1/T of the cheapest width's\n"
	"(default T 0.95).\n";

static void write_plot(const char *dir, const int *duty, int n_duty)
{
	char script[8192];
	int k = snprintf(script, sizeof script,
		"set terminal pngcairo size 900,600 noenhanced\n"
		"set output '%s/coschedule.png'\n"
		"set datafile separator ','\n"
		"set title 'egang co-scheduling frontier: tenant work vs inference'\n"
		"set xlabel 'inference tok/s'\n"
		"set ylabel 'tenant work (fraction of tenants alone)'\n"
		"set key outside right\nset grid\n"
		"plot ", dir);
	/* one colour per duty: the static splits as a line, elastic (preempt)
	 * as a triangle, the knee-capped gang as a square */
	for (int i = 0; i < n_duty && k < (int)sizeof script - 900; i++)
		k += snprintf(script + k, sizeof script - (size_t)k,
			"%s'%s/coschedule.csv' using ($2==%d && strstrt(strcol(1),'static')==1 ? $3 : 1/0):7 "
			"with linespoints lc %d pt 7 title 'static, duty %d%%', "
			"'%s/coschedule.csv' using ($2==%d && strcol(1) eq 'elastic-preempt' ? $3 : 1/0):7 "
			"with points lc %d pt 9 ps 2 title 'elastic, duty %d%%', "
			"'%s/coschedule.csv' using ($2==%d && strcol(1) eq 'knee' ? $3 : 1/0):7 "
			"with points lc %d pt 5 ps 1.5 title 'knee, duty %d%%'",
			i ? ", " : "", dir, duty[i], i + 1, duty[i], dir, duty[i], i + 1,
			duty[i], dir, duty[i], i + 1, duty[i]);
	char path[512];
	snprintf(path, sizeof path, "%s/coschedule.gp", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	fputs(script, f);
	fputc('\n', f);
	fclose(f);
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>&1", path);
	if (system(cmd) != 0)
		log_info("note: gnuplot failed; the CSV is complete");
}

int cmd_cosched(int argc, char **argv)
{
	static const struct option opts[] = {
		{"model", required_argument, 0, 'm'},
		{"tokenizer", required_argument, 0, 'z'},
		{"tenants", required_argument, 0, 'T'},
		{"duty", required_argument, 0, 'd'},
		{"gen-tokens", required_argument, 0, 'g'},
		{"seconds", required_argument, 0, 's'},
		{"mode", required_argument, 0, 'M'},
		{"cores", required_argument, 0, 'C'},
		{"out", required_argument, 0, 'o'},
		{"knee-tolerance", required_argument, 0, 'K'},
		{"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	const char *model = NULL, *tok = NULL, *cores = NULL, *duty_s = "0,25,50,75,100";
	const char *out = "build/coschedule";
	int64_t tenants = 0, gen_tokens = 32;
	double seconds = 4, knee_tol = 0.95;
	burn_mode_t mode = BURN_CPU;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "m:z:o:qh", opts, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case 'm': model = optarg; break;
		case 'z': tok = optarg; break;
		case 'T': bad = cli_int("--tenants", optarg, 0, MAX_TENANTS, &tenants); break;
		case 'd': duty_s = optarg; break;
		case 'g': bad = cli_int("--gen-tokens", optarg, 1, 4096, &gen_tokens); break;
		case 's': bad = cli_float("--seconds", optarg, 0.2, 3600, &seconds); break;
		case 'C': cores = optarg; break;
		case 'o': out = optarg; break;
		case 'K': bad = cli_float("--knee-tolerance", optarg, 0.1, 1, &knee_tol); break;
		case 'M': bad = burn_mode_parse("--mode", optarg, &mode); break;
		case 'q': log_quiet = true; break;
		case 'h': fputs(cosched_help, stdout); return EXIT_OK;
		default: return cli_usage_error("bench coschedule", argv[optind - 1]);
		}
		if (bad)
			return EXIT_INPUT;
	}
	int duty[16];
	int n_duty = parse_duties(duty_s, duty, 16);
	if (n_duty <= 0) {
		if (n_duty == 0)
			log_error("--duty: empty list");
		return EXIT_INPUT;
	}
	if (!model) {
		log_error("bench coschedule: -m MODEL is required");
		return EXIT_INPUT;
	}
	cosched_t cs = {.gen_tokens = (int)gen_tokens, .seconds = seconds,
			.mode = mode, .out = out, .knee_tolerance = knee_tol};
	sched_getaffinity(0, sizeof cs.allowed, &cs.allowed);
	cs.n = cli_cores(cores, cs.cpus, GANG_MAX_SLOTS);
	if (cs.n < 0) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	if (cs.n < 2) {
		log_error("bench coschedule: needs at least 2 CPUs (have %d)", cs.n);
		return EXIT_INPUT;
	}
	cs.n_tenants = tenants ? (int)tenants : cs.n;
	if (mkdir(out, 0755) < 0 && errno != EEXIST) {
		log_error("--out %s: %s", out, strerror(errno));
		return EXIT_INPUT;
	}
	model_t *m = model_load(model, tok);
	if (!m) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	cs.m = m;
	cs.f = forward_new(m, (int32_t)gen_tokens + 2, 0);
	cs.shm = mmap(NULL, sizeof *cs.shm, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cs.ref_hash = calloc((size_t)gen_tokens, sizeof *cs.ref_hash);

	arm_t arms[MAX_ARMS];
	int n_arms = 0;
	for (int k = 1; k < cs.n && n_arms < MAX_ARMS - 4; k++) {
		arms[n_arms] = (arm_t){ARM_STATIC, k, ""};
		snprintf(arms[n_arms].name, sizeof arms[n_arms].name, "static:%d", k);
		n_arms++;
	}
	arms[n_arms++] = (arm_t){ARM_ELASTIC_POLITE, 0, "elastic-polite"};
	arms[n_arms++] = (arm_t){ARM_ELASTIC_PREEMPT, 0, "elastic-preempt"};
	arms[n_arms++] = (arm_t){ARM_KNEE, 0, "knee"};
	arms[n_arms++] = (arm_t){ARM_FIXED, 0, "fixed"};

	/* Solo references: one generation for the reference logits, inference
	 * alone back to back on all cores, tenants alone. */
	{
		policy_t pol = {.width = WIDTH_ALL};
		gang_config_t gc = {.cpus = cs.cpus, .n_cpus = cs.n, .pin = true};
		runner_t r = {.pol = &pol, .g = gang_init(&gc)};
		knee_init(&r.knee, cs.n);
		generation(&cs, &r, cs.ref_hash);
		gang_free(r.g);
	}
	arm_t solo_arm = {ARM_ELASTIC_POLITE, 0, "solo"};
	result_t solo_inf = run_arm(&cs, &solo_arm, 1, NULL, false);
	double gen_ns = solo_inf.gens ? cs.seconds * 1e9 / (double)solo_inf.gens : 1e9;
	tenants_start(&cs, NULL, 0);
	usleep(100000);
	uint64_t u0 = tenants_units(&cs), t0 = time_now_ns();
	usleep((useconds_t)(seconds * 1e6));
	double solo_ten = (double)(tenants_units(&cs) - u0) /
			  ((double)(time_now_ns() - t0) / 1e9);
	tenants_stop(&cs);
	printf("solo: inference %.2f tok/s on %d cores (a %d-token generation takes "
	       "%.1f ms); %d tenants alone %.0f units/s\n", solo_inf.tok_s, cs.n,
	       cs.gen_tokens, gen_ns / 1e6, cs.n_tenants, solo_ten);

	char path[512];
	snprintf(path, sizeof path, "%s/coschedule.csv", out);
	FILE *csv = fopen(path, "w");
	if (!csv) {
		log_error("%s: %s", path, strerror(errno));
		return EXIT_FAIL;
	}
	fprintf(csv, "policy,duty,inference_tok_s,lat_p50_ms,lat_p99_ms,tenant_units_s,"
		     "tenant_frac,mean_width,preempted_tokens,generations,logit_mismatches\n");
	printf("%-16s %4s %10s %10s %10s %12s %7s %6s %9s %8s\n", "policy", "duty",
	       "tok/s", "p50 ms", "p99 ms", "tenant u/s", "tenant%", "width",
	       "preempted", "mismatch");
	/* every arm's result, for the summary: res[duty][arm] */
	result_t(*res)[MAX_ARMS] = calloc((size_t)n_duty, sizeof *res);
	if (!res) {
		fclose(csv);
		log_error("out of memory");
		return EXIT_FAIL;
	}
	uint64_t mismatches = 0;
	for (int d = 0; d < n_duty; d++) {
		uint64_t period = duty[d] ? (uint64_t)(gen_ns * 100.0 / duty[d]) : 0;
		for (int a = 0; a < n_arms; a++) {
			char trace[600];
			snprintf(trace, sizeof trace, "%s/width-%s-%d.csv", out,
				 arms[a].name, duty[d]);
			for (char *p = trace + strlen(out); *p; p++)
				if (*p == ':')
					*p = '_';
			result_t r = run_arm(&cs, &arms[a], period, trace, true);
			double frac = solo_ten > 0 ? r.tenant_units_s / solo_ten : 0;
			mismatches += r.mismatches;
			printf("%-16s %4d %10.2f %10.1f %10.1f %12.0f %6.1f%% %6.2f %9llu %8llu\n",
			       arms[a].name, duty[d], r.tok_s, r.lat_p50_ms, r.lat_p99_ms,
			       r.tenant_units_s, 100 * frac, r.mean_width,
			       (unsigned long long)r.preempted_tokens,
			       (unsigned long long)r.mismatches);
			fflush(stdout);
			fprintf(csv, "%s,%d,%.3f,%.3f,%.3f,%.1f,%.4f,%.3f,%llu,%llu,%llu\n",
				arms[a].name, duty[d], r.tok_s, r.lat_p50_ms, r.lat_p99_ms,
				r.tenant_units_s, frac, r.mean_width,
				(unsigned long long)r.preempted_tokens,
				(unsigned long long)r.gens,
				(unsigned long long)r.mismatches);
			res[d][a] = r;
		}
	}
	fclose(csv);
	write_plot(out, duty, n_duty);
	for (int d = 0; d < n_duty; d++)
		summarize(duty[d], arms, n_arms, res[d], solo_ten);
	free(res);
	printf("bench coschedule: %s, %d cores, %d tenants, logits mismatches %llu; "
	       "wrote %s/coschedule.csv and %s/coschedule.png\n", m->name, cs.n,
	       cs.n_tenants, (unsigned long long)mismatches, out, out);
	munmap(cs.shm, sizeof *cs.shm);
	free(cs.ref_hash);
	forward_free(cs.f);
	model_free(m);
	return mismatches ? EXIT_FAIL : EXIT_OK;
}
