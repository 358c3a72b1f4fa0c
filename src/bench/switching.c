/* switching: the policy-switching experiment (switching.h). */
#include "bench/switching.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/base.h"
#include "base/stats.h"
#include "bench/burners.h"
#include "bench/child.h"
#include "bench/loadgen.h"
#include "policy/control.h"
#include "policy/policy.h"

const char *const switching_arm_names[SWITCHING_ARM_COUNT + 1] = {
	"latency", "throughput", "oracle", "bandit", "agent", NULL};
#define N_PHASES SWITCHING_PHASES
static const char *const phase_names[N_PHASES] = {"steady1", "burst", "steady2"};

#define BUCKET_NS BURNERS_BUCKET_NS
typedef switching_config_t cfg_t;
typedef loadgen_arrival_t req_t;

/* ---- one run ---- */

typedef struct result {
	double p50[N_PHASES], p99[N_PHASES];
	int sent[N_PHASES], served[N_PHASES];
	double units, units_phase[N_PHASES];
	double base_rate;  /* antagonist units/s with the server idle, before
			      and after the load (mean of the two) */
	double share;      /* units / (base_rate x the phases' seconds) */
	double cpu_s;      /* CPU seconds of the server and the controller from
			      t0 until the last request ended: what serving
			      the load took from the tenants */
	uint64_t fallbacks, invalid_reads;
	double drain_s;
	char ctl[256]; /* the controller's summary, if any */
	/* bandit and agent: the periods that wrote an index (a decision or a
	 * hold), and those whose index was the oracle's record for the phase
	 * (throughput, latency in the burst) */
	int decisions, oracle_agree;
} result_t;

/* The q-quantile of v[0..n) (sorted here); NaN for no sample (the CSV's
 * "nan": a phase where nothing was served). */
static double quantile(double *v, int n, double q)
{
	return n > 0 ? stats_quantile(v, (size_t)n, q) : NAN;
}

/* The arrival times of a repetition: Poisson per phase. */
static req_t *arrivals(const cfg_t *c, int rep, int *n_out)
{
	rng_t rng;
	rng_seed(&rng, (uint64_t)c->seed + (uint64_t)rep);
	size_t cap = 64, n = 0;
	req_t *r = malloc(cap * sizeof *r);
	double start = 0;
	for (int p = 0; p < N_PHASES && r; p++) {
		double t = start, end = start + c->phase_s[p];
		for (;;) {
			double u = ((double)(rng_next(&rng) >> 11) + 0.5) / 9007199254740992.0;
			t += -log(u) / c->rate[p];
			if (t >= end)
				break;
			if (n == cap) {
				req_t *nr = realloc(r, 2 * cap * sizeof *r);
				if (!nr) {
					free(r);
					return NULL;
				}
				r = nr;
				cap *= 2;
			}
			memset(&r[n], 0, sizeof r[n]);
			r[n].t_arr = (uint64_t)(t * 1e9);
			r[n].tag = p;
			n++;
		}
		start = end;
	}
	*n_out = (int)n;
	return r;
}

static double total_phase_s(const cfg_t *c)
{
	return c->phase_s[0] + c->phase_s[1] + c->phase_s[2];
}

/* One run's state: its paths, children, control word and requests. */
typedef struct run {
	const cfg_t *c;
	int arm, rep;
	char ctl_path[256], log_path[4200], units_path[4200], ctl_log[4200];
	char cores[256], url[128];
	pid_t srv, ctl;
	control_t *cw;
	struct curl_slist *hdr;
	char *body;
	uint64_t t0, pre0, pre1, post0, post1;
	burners_t *b;
	req_t *r;
	int n;
} run_t;

/* `egang serve` with the arm's first policy, its port from its log, three
 * warm-up requests; 0 or -1 + err_get(). */
static int server_start(run_t *u)
{
	const cfg_t *c = u->c;
	const char *init = u->arm == SWITCHING_ARM_LATENCY ? "latency" : "throughput";
	int lfd = child_log_open(u->log_path);
	char *sargs[] = {"egang", "serve", "-m", (char *)c->model, "--port", "0",
			 "--control", u->ctl_path, "--policy", (char *)init,
			 "--max-queue", "100000", "--max-conns", "10000",
			 "--timeout", "600", "--cores", u->cores,
			 "--backend", c->scx ? "scx" : "user",
			 c->tok ? "-z" : NULL, (char *)c->tok, NULL};
	u->srv = child_spawn(sargs, lfd, lfd);
	if (lfd >= 0)
		close(lfd);
	int port = 0; /* up to 30 s: an emulated guest loads slowly */
	for (int i = 0; i < 3000 && !port; i++) {
		if (!child_running(u->srv)) {
			u->srv = -1;
			break;
		}
		usleep(10000);
		port = child_serve_port(u->log_path);
	}
	if (!port)
		return err_set("egang serve did not start (see %s)", u->log_path);
	char health[160];
	snprintf(u->url, sizeof u->url, "http://127.0.0.1:%d/v1/completions", port);
	snprintf(health, sizeof health, "http://127.0.0.1:%d/health", port);
	for (int i = 0; i < 500 && !loadgen_get_ok(health); i++)
		usleep(10000);
	u->hdr = loadgen_headers(NULL);
	/* temperature 0: every request generates the same tokens (the same
	 * work in every arm) */
	u->body = loadgen_body("Once upon a time", c->max_tokens, false, 0);
	for (int i = 0; i < 3; i++)
		if (!loadgen_request_ok(u->url, u->hdr, u->body, 30))
			return err_set("the warm-up request failed (see %s)", u->log_path);
	return 0;
}

/* The arm's controller: `egang policy set` run to its end (fixed arms) or
 * `egang control` left running (u->ctl); 0 or -1 + err_get(). */
static int controller_spawn(run_t *u)
{
	const cfg_t *c = u->c;
	double T = total_phase_s(c);
	char period[16], secs[32], sched[256];
	snprintf(period, sizeof period, "%d", c->period_ms);
	snprintf(secs, sizeof secs, "%g", T);
	snprintf(sched, sizeof sched, "0-%gs:throughput,%g-%gs:latency,%g-%gs:throughput",
		 c->phase_s[0], c->phase_s[0], c->phase_s[0] + c->phase_s[1],
		 c->phase_s[0] + c->phase_s[1], T);
	int cfd = child_log_open(u->ctl_log), rc = 0;
	if (u->arm == SWITCHING_ARM_LATENCY || u->arm == SWITCHING_ARM_THROUGHPUT) {
		char *a[] = {"egang", "policy", "set", (char *)switching_arm_names[u->arm],
			     "--control", u->ctl_path, "--cores", u->cores, NULL};
		if (!child_wait_ok(child_spawn(a, cfd, cfd)))
			rc = err_set("egang policy set %s failed (see %s)",
				     switching_arm_names[u->arm], u->ctl_log);
	} else {
		/* the bandit's and the agent's per-period lines stay in the log:
		 * oracle_agreement reads them */
		char *a[32] = {"egang", "control", "--control", u->ctl_path,
			       "--period-ms", period, "--seconds", secs,
			       "--cores", u->cores};
		int na = 10;
		if (u->arm == SWITCHING_ARM_ORACLE) {
			a[na++] = "-q";
			a[na++] = "--oracle";
			a[na++] = sched;
		} else if (u->arm == SWITCHING_ARM_BANDIT) {
			a[na++] = "--bandit";
			a[na++] = "--tenant-units";
			a[na++] = u->units_path;
		} else {
			a[na++] = "--agent";
			a[na++] = "-m";
			a[na++] = (char *)c->model;
			if (c->tok) {
				a[na++] = "-z";
				a[na++] = (char *)c->tok;
			}
		}
		a[na] = NULL;
		u->ctl = child_spawn(a, cfd, cfd);
	}
	close(cfd);
	return rc;
}

/* Opens the control word, starts the controller and sets u->t0, the load's
 * start; 0 or -1 + err_get(). */
static int controller_start(run_t *u)
{
	bool fixed = u->arm == SWITCHING_ARM_LATENCY || u->arm == SWITCHING_ARM_THROUGHPUT;
	if (!(u->cw = control_open(u->ctl_path, false)))
		return -1;
	/* an index no record has, so the controller's first write shows (the
	 * server is idle: no token reads it) */
	if (!fixed)
		control_write_index(u->cw, UINT32_MAX);
	int rc = controller_spawn(u);
	u->t0 = time_now_ns();
	if (rc < 0 || u->ctl <= 0)
		return rc;
	/* the oracle's phases count from its own start: its first write comes
	 * one period after it, so the load starts at that write minus a
	 * period; the bandit and the agent start the load at their first
	 * write. seq_cst loads, stronger than needed: a value test only. */
	uint64_t give_up = u->t0 + 60000000000ull;
	bool alive = true;
	while (atomic_load(u->cw->index) == UINT32_MAX &&
	       time_now_ns() < give_up && (alive = child_running(u->ctl)))
		usleep(500);
	if (!alive)
		u->ctl = -1; /* reaped: its pid is spent */
	if (atomic_load(u->cw->index) == UINT32_MAX)
		return err_set("the controller wrote no index (see %s)", u->ctl_log);
	u->t0 = time_now_ns();
	if (u->arm == SWITCHING_ARM_ORACLE)
		u->t0 -= (uint64_t)u->c->period_ms * 1000000ull;
	return 0;
}

/* Counts, in a controller's log (text), the periods that wrote an index
 * ("control t=T index=I ..." lines with I >= 0) and those whose index was
 * the oracle's record for the phase their time falls in: throughput in
 * the steady phases, latency in the burst. The load starts at the first
 * write, so phases count from its t. */
static void oracle_agreement(const cfg_t *c, const char *text, result_t *res)
{
	policy_lib_t lib;
	policy_lib_builtin(&lib, c->n_cpus);
	int want[N_PHASES] = {policy_lib_find(&lib, "throughput"),
			      policy_lib_find(&lib, "latency"),
			      policy_lib_find(&lib, "throughput")};
	double t0 = -1;
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		double t;
		long long idx;
		if (sscanf(l, "control t=%lf index=%lld", &t, &idx) != 2 || idx < 0)
			continue;
		if (t0 < 0)
			t0 = t;
		double x = t - t0;
		int p = x < c->phase_s[0] ? 0 : x < c->phase_s[0] + c->phase_s[1] ? 1 : 2;
		res->decisions++;
		res->oracle_agree += idx == want[p];
	}
}

/* Drives the load; the server's and the controller's CPU time, the
 * controller's summary line and the guard's counters into res. */
static void load(run_t *u, result_t *res)
{
	double cpu0 = child_cpu_s(u->srv) + child_cpu_s(u->ctl);
	const cfg_t *c = u->c;
	uint64_t t_end = u->t0 + (uint64_t)(total_phase_s(c) * 1e9);
	res->drain_s = loadgen_open_loop(u->r, u->n, u->t0, t_end,
					 t_end + (uint64_t)(c->drain_s * 1e9), u->url,
					 u->hdr, u->body,
					 (long)(total_phase_s(c) + c->drain_s + 5));
	/* the controller has ended by now or ends at once (--seconds) */
	if (u->ctl > 0)
		usleep(200000);
	res->cpu_s = child_cpu_s(u->srv) + child_cpu_s(u->ctl) - cpu0;
	if (u->ctl > 0) {
		/* every controller ends at --seconds (the phases' end); SIGTERM
		 * ends one still running with its summary */
		child_stop(u->ctl, SIGTERM, 5);
		u->ctl = -1;
		size_t len;
		char *t = file_read_all(u->ctl_log, &len);
		if (t && (u->arm == SWITCHING_ARM_BANDIT || u->arm == SWITCHING_ARM_AGENT))
			oracle_agreement(c, t, res);
		char *s = t ? strstr(t, "control summary: ") : NULL;
		if (s) {
			char *nl = strchr(s, '\n');
			if (nl)
				*nl = 0;
			snprintf(res->ctl, sizeof res->ctl, "%s", s + 17);
		}
		free(t);
	}
	/* seq_cst loads, stronger than needed: counters read once */
	res->fallbacks = atomic_load(&u->cw->w->guard_fallbacks);
	res->invalid_reads = atomic_load(&u->cw->w->invalid_reads);
}

/* TTFT percentiles per phase and requests.csv's rows. */
static void record_requests(const run_t *u, result_t *res, FILE *req_csv)
{
	double *v[N_PHASES];
	int nv[N_PHASES] = {0};
	for (int p = 0; p < N_PHASES; p++)
		v[p] = malloc((size_t)(u->n + 1) * sizeof *v[p]);
	for (int i = 0; i < u->n; i++) {
		const req_t *q = &u->r[i];
		int p = q->tag;
		res->sent[p]++;
		if (q->ok) {
			res->served[p]++;
			if (v[p])
				v[p][nv[p]++] = q->ttft_ms;
		}
		char tt[32];
		snprintf(tt, sizeof tt, q->ok ? "%.3f" : "nan", q->ttft_ms);
		fprintf(req_csv, "%s,%d,%s,%.4f,%s,%ld,%lld\n", switching_arm_names[u->arm],
			u->rep + 1, phase_names[p], (double)q->t_arr / 1e9, tt, q->code,
			(long long)q->st.completion_tokens);
	}
	for (int p = 0; p < N_PHASES; p++) {
		res->p50[p] = quantile(v[p], nv[p], 0.5);
		res->p99[p] = quantile(v[p], nv[p], 0.99);
		free(v[p]);
	}
}

/* The antagonists' work: per phase, the baselines, the share; and the
 * timeline's rows. */
static void record_work(const run_t *u, result_t *res, FILE *tl_csv)
{
	const cfg_t *c = u->c;
	const burners_t *b = u->b;
	double T = total_phase_s(c), start = 0;
	uint64_t t0 = u->t0;
	for (int p = 0; p < N_PHASES; p++) {
		uint64_t a = t0 + (uint64_t)(start * 1e9);
		start += c->phase_s[p];
		res->units_phase[p] = burners_window(b, a, t0 + (uint64_t)(start * 1e9));
		res->units += res->units_phase[p];
	}
	/* whole buckets inside each baseline window */
	uint64_t q0 = u->pre0 + BUCKET_NS, q1 = u->pre1 - BUCKET_NS;
	uint64_t s0 = u->post0 + BUCKET_NS, s1 = u->post1 - BUCKET_NS;
	double pre = burners_window(b, q0, q1) / ((double)(q1 - q0) / 1e9);
	double post = burners_window(b, s0, s1) / ((double)(s1 - s0) / 1e9);
	res->base_rate = (pre + post) / 2;
	/* the work lost to serving this load: the whole load, the backlog's
	 * drain included (an arm that pushes work past the phases' end still
	 * pays for it), against the baseline rate; share = the fraction of the
	 * phases' antagonist capacity left */
	uint64_t w1 = t0 + (uint64_t)((T + res->drain_s) * 1e9);
	double all = burners_window(b, t0, w1);
	double lost = res->base_rate * (T + res->drain_s) - all;
	res->share = res->base_rate > 0 ? 1 - lost / (res->base_rate * T) : NAN;
	const char *arm = switching_arm_names[u->arm];
	for (int i = 0; i < u->n; i++)
		if (u->r[i].ok)
			fprintf(tl_csv, "%s,%d,ttft,%.4f,%.3f\n", arm, u->rep + 1,
				(double)u->r[i].t_arr / 1e9, u->r[i].ttft_ms);
	/* antagonist work per 250 ms (5 buckets) */
	for (size_t i = 0; i + 5 <= b->n_bucket; i += 5) {
		uint64_t a = b->t_start + (uint64_t)i * BUCKET_NS;
		if (a < t0 || a + 5 * BUCKET_NS > t0 + (uint64_t)(T * 1e9) + BUCKET_NS)
			continue;
		double s = 0;
		for (int j = 0; j < 5; j++)
			s += b->bucket[i + (size_t)j];
		fprintf(tl_csv, "%s,%d,tenant,%.4f,%.0f\n", arm, u->rep + 1,
			(double)(a - t0) / 1e9 + 0.125, s / (5 * BUCKET_NS / 1e9));
	}
	fflush(tl_csv);
}

/* The run's paths and its --cores list. */
static void run_paths(run_t *u, int run_id)
{
	const cfg_t *c = u->c;
	const char *arm = switching_arm_names[u->arm];
	snprintf(u->ctl_path, sizeof u->ctl_path, "/dev/shm/egang-switching-%d-%d",
		 (int)getpid(), run_id);
	snprintf(u->log_path, sizeof u->log_path, "%s/logs/serve-%s-%d.log", c->out,
		 arm, u->rep + 1);
	snprintf(u->units_path, sizeof u->units_path, "%s/logs/units-%s-%d", c->out,
		 arm, u->rep + 1);
	snprintf(u->ctl_log, sizeof u->ctl_log, "%s/logs/control-%s-%d.log", c->out,
		 arm, u->rep + 1);
	int k = 0;
	u->cores[0] = 0;
	for (int i = 0; i < c->n_cpus; i++)
		k += snprintf(u->cores + k, sizeof u->cores - (size_t)k, "%s%d",
			      i ? "," : "", c->cpus[i]);
}

/* 1 s of antagonists beside an idle server: a baseline window. */
static void baseline(bool wait, uint64_t *t0, uint64_t *t1)
{
	*t0 = time_now_ns();
	if (wait)
		usleep(1000000);
	*t1 = time_now_ns();
}

static int run_one(const cfg_t *c, int arm, int rep, int run_id,
		   result_t *res, FILE *req_csv, FILE *tl_csv)
{
	static burners_t b;
	memset(&b, 0, sizeof b);
	memset(res, 0, sizeof *res);
	run_t u = {.c = c, .arm = arm, .rep = rep, .srv = -1, .ctl = -1, .b = &b};
	run_paths(&u, run_id);
	b.units_path = arm == SWITCHING_ARM_BANDIT ? u.units_path : NULL;
	if (b.units_path)
		burners_write_units(&b);
	if (!(u.r = arrivals(c, rep, &u.n)))
		return err_set("out of memory");
	if (burners_start(&b, c->cpus, c->n_cpus, c->burns, c->scx,
			  total_phase_s(c) + c->drain_s + 60) < 0) {
		burners_stop(&b); /* the ones started */
		burners_free(&b);
		free(u.r);
		return -1;
	}
	int rc = server_start(&u);
	if (u.hdr) {
		baseline(!rc, &u.pre0, &u.pre1);
		if (!rc)
			rc = controller_start(&u);
		if (!rc)
			load(&u, res);
		control_close(u.cw);
		/* the baseline after (the controllers have ended) */
		baseline(!rc, &u.post0, &u.post1);
	}
	curl_slist_free_all(u.hdr);
	free(u.body);
	if (u.ctl > 0)
		child_stop(u.ctl, SIGTERM, 5);
	if (u.srv > 0)
		child_stop(u.srv, SIGTERM, 10);
	burners_stop(&b);
	unlink(u.ctl_path);
	if (!rc) {
		record_requests(&u, res, req_csv);
		record_work(&u, res, tl_csv);
	}
	burners_free(&b);
	free(u.r);
	return rc;
}

static void mean_sd(const double *v, int n, double *mean, double *sd)
{
	double s = 0, q = 0;
	int k = 0;
	for (int i = 0; i < n; i++)
		if (isfinite(v[i])) {
			s += v[i];
			k++;
		}
	*mean = k ? s / k : NAN;
	for (int i = 0; i < n; i++)
		if (isfinite(v[i]))
			q += (v[i] - *mean) * (v[i] - *mean);
	*sd = k > 1 ? sqrt(q / (k - 1)) : 0;
}


/* ---- the experiment ---- */

void switching_defaults(switching_config_t *c)
{
	/* defaults chosen by measurement on a quiet machine (doc/measurements.md "Policy
	 * switching"): on 2 cores with two tenants per core, throughput serves
	 * ~95 requests/s of 48 tokens of stories260K (one polite core shared
	 * with two tenants), latency more than the burst; a 150/s burst
	 * queues ~110 requests under throughput for 2 s (TTFT p99 ~1.2 s),
	 * which drain in the second steady phase; 15 runs take about 4
	 * minutes. (Under foreign load, 60/s already queued: the rates are a
	 * property of the machine, hence the flag.) */
	c->reps = 3;
	c->out = "switching-out";
	c->phase_s[0] = 6, c->phase_s[1] = 2, c->phase_s[2] = 6;
	c->rate[0] = 8, c->rate[1] = 150, c->rate[2] = 8;
	c->max_tokens = 48;
	c->burns = 2;
	c->period_ms = 100;
	c->drain_s = 10;
	c->seed = 1;
	for (int a = 0; a < SWITCHING_ARM_COUNT; a++)
		c->arm_on[a] = true;
}

/* The three CSV files with their headers; EXIT_OK or EXIT_INPUT. */
static int open_csvs(const cfg_t *c, FILE **freq, FILE **ftl, FILE **fcsv)
{
	char logs[4200], p_req[4200], p_tl[4200], p_csv[4200];
	snprintf(logs, sizeof logs, "%s/logs", c->out);
	if ((mkdir(c->out, 0755) < 0 && errno != EEXIST) ||
	    (mkdir(logs, 0755) < 0 && errno != EEXIST))
		return err_set("--out %s: %s", c->out, strerror(errno));
	snprintf(p_req, sizeof p_req, "%s/requests.csv", c->out);
	snprintf(p_tl, sizeof p_tl, "%s/timeline.csv", c->out);
	snprintf(p_csv, sizeof p_csv, "%s/switching.csv", c->out);
	*freq = fopen(p_req, "w");
	*ftl = fopen(p_tl, "w");
	*fcsv = fopen(p_csv, "w");
	if (!*freq || !*ftl || !*fcsv)
		return err_set("--out %s: cannot write the CSV files: %s", c->out,
			       strerror(errno));
	fprintf(*freq, "arm,rep,phase,arrival_s,ttft_ms,http_status,completion_tokens\n");
	fprintf(*ftl, "arm,rep,kind,t_s,value\n");
	fprintf(*fcsv, "arm,rep,phase,rate_per_s,seconds,sent,served,ttft_p50_ms,"
		"ttft_p99_ms,antagonist_units,antagonist_base_units_per_s,"
		"antagonist_share_run,inference_cpu_s_run,guard_fallbacks,drain_s\n");
	return 0;
}

/* Checks that need no child: the files, the antagonist count, this
 * executable's path. */
static int check(const cfg_t *c)
{
	if (access(c->model, R_OK) < 0)
		return err_set("bench switching: -m %s: %s", c->model, strerror(errno));
	if (c->tok && access(c->tok, R_OK) < 0)
		return err_set("bench switching: -z %s: %s", c->tok, strerror(errno));
	if (c->burns * c->n_cpus > SWITCHING_MAX_BURNERS)
		return err_set("--burns-per-core: %d x %d cores is more than %d antagonists",
			       c->burns, c->n_cpus, SWITCHING_MAX_BURNERS);
	if (c->reps < 1 || c->reps > SWITCHING_MAX_REPS)
		return err_set("--reps: %d is out of range [1, %d]", c->reps,
			       SWITCHING_MAX_REPS);
	return 0;
}

/* Mean and sd over repetitions of one arm's results. */
static void summarize(const cfg_t *c, const result_t *res, switching_arm_summary_t *s)
{
	const double machine_s = c->n_cpus * total_phase_s(c);
	double u[SWITCHING_MAX_REPS], l[SWITCHING_MAX_REPS], raw[SWITCHING_MAX_REPS];
	double p50[SWITCHING_MAX_REPS], p99[SWITCHING_MAX_REPS];
	for (int r = 0; r < c->reps; r++) {
		u[r] = res[r].share;
		l[r] = 1 - res[r].cpu_s / machine_s;
		raw[r] = res[r].units;
		for (int p = 0; p < N_PHASES; p++) {
			s->sent += res[r].sent[p];
			s->served += res[r].served[p];
		}
		s->fallbacks += res[r].fallbacks;
		if (res[r].drain_s > s->drain_max_s)
			s->drain_max_s = res[r].drain_s;
	}
	mean_sd(u, c->reps, &s->work, &s->work_sd);
	mean_sd(l, c->reps, &s->left, &s->left_sd);
	mean_sd(raw, c->reps, &s->units, &s->units_sd);
	for (int p = 0; p < N_PHASES; p++) {
		for (int r = 0; r < c->reps; r++) {
			p50[r] = res[r].p50[p];
			p99[r] = res[r].p99[p];
		}
		mean_sd(p50, c->reps, &s->p50[p], &s->p50_sd[p]);
		mean_sd(p99, c->reps, &s->p99[p], &s->p99_sd[p]);
	}
	snprintf(s->ctl, sizeof s->ctl, "%s", res[c->reps - 1].ctl);
	for (int r = 0; r < c->reps; r++) {
		s->decisions += res[r].decisions;
		s->oracle_agree += res[r].oracle_agree;
	}
}

static void csv_rows(FILE *f, const cfg_t *c, int a, int rep, const result_t *x)
{
	for (int p = 0; p < N_PHASES; p++)
		fprintf(f, "%s,%d,%s,%g,%g,%d,%d,%.3f,%.3f,%.0f,%.0f,%.4f,%.3f,%llu,%.3f\n",
			switching_arm_names[a], rep + 1, phase_names[p], c->rate[p],
			c->phase_s[p], x->sent[p], x->served[p], x->p50[p], x->p99[p],
			x->units_phase[p], x->base_rate, x->share, x->cpu_s,
			(unsigned long long)x->fallbacks, x->drain_s);
	fflush(f);
}

/* Every run, interleaved by repetition; 0 or -1 + err_get(). */
static int runs(const cfg_t *c, result_t (*res)[SWITCHING_MAX_REPS], FILE *freq,
		FILE *ftl, FILE *fcsv, switching_summary_t *s)
{
	int total_runs = 0;
	for (int a = 0; a < SWITCHING_ARM_COUNT; a++)
		total_runs += c->arm_on[a] * c->reps;
	uint64_t t_bench = time_now_ns();
	for (int rep = 0; rep < c->reps; rep++)
		for (int a = 0; a < SWITCHING_ARM_COUNT; a++) {
			if (!c->arm_on[a])
				continue;
			log_info("bench switching: run %d/%d: %s, repetition %d "
				 "(%.0f s elapsed)", s->runs + 1, total_runs,
				 switching_arm_names[a], rep + 1,
				 (double)(time_now_ns() - t_bench) / 1e9);
			if (run_one(c, a, rep, s->runs, &res[a][rep], freq, ftl) < 0)
				return err_wrap("bench switching: %s, repetition %d",
						switching_arm_names[a], rep + 1);
			s->runs++;
			csv_rows(fcsv, c, a, rep, &res[a][rep]);
		}
	s->seconds = (double)(time_now_ns() - t_bench) / 1e9;
	return 0;
}

int switching_run(const switching_config_t *c, switching_summary_t *s,
		  int *exit_code)
{
	memset(s, 0, sizeof *s);
	*exit_code = EXIT_INPUT;
	if (check(c) < 0)
		return -1;
	*exit_code = EXIT_FAIL;
	if (child_find_exe() < 0)
		return err_wrap("bench switching");
	FILE *freq = NULL, *ftl = NULL, *fcsv = NULL;
	static result_t res[SWITCHING_ARM_COUNT][SWITCHING_MAX_REPS];
	int rc = open_csvs(c, &freq, &ftl, &fcsv);
	if (rc < 0)
		*exit_code = EXIT_INPUT;
	else if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		rc = err_set("bench switching: curl_global_init failed");
	else {
		signal(SIGPIPE, SIG_IGN);
		rc = runs(c, res, freq, ftl, fcsv, s);
		curl_global_cleanup();
	}
	if (freq)
		fclose(freq);
	if (ftl)
		fclose(ftl);
	if (fcsv)
		fclose(fcsv);
	if (rc < 0)
		return -1;
	for (int a = 0; a < SWITCHING_ARM_COUNT; a++)
		if (c->arm_on[a])
			summarize(c, res[a], &s->arm[a]);
	*exit_code = EXIT_OK;
	return 0;
}

bool switching_goal(const switching_config_t *c, const switching_summary_t *s,
		    switching_arm_t arm, switching_goal_t *g)
{
	if (arm < SWITCHING_ARM_ORACLE || !c->arm_on[arm] ||
	    !c->arm_on[SWITCHING_ARM_LATENCY] || !c->arm_on[SWITCHING_ARM_THROUGHPUT])
		return false;
	const switching_arm_summary_t *a = &s->arm[arm],
		*lat = &s->arm[SWITCHING_ARM_LATENCY],
		*thr = &s->arm[SWITCHING_ARM_THROUGHPUT];
	g->sd = a->p99_sd[1] > lat->p99_sd[1] ? a->p99_sd[1] : lat->p99_sd[1];
	g->latency_ok = a->p99[1] <= lat->p99[1] + g->sd;
	g->share = a->work / thr->work;
	g->cpu = a->left / thr->left;
	g->work_ok = g->share >= 0.97;
	return true;
}
