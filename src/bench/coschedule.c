/* coschedule: the co-scheduling experiment (coschedule.h). */
#include "bench/coschedule.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/stats.h"
#include "bench/pool.h"
#include "gang/gang.h"
#include "model/forward.h"
#include "model/sampler.h"
#include "policy/policy.h"
#include "engine/engine_open.h"

typedef enum arm_kind {
	ARM_STATIC,
	ARM_ELASTIC_POLITE,
	ARM_ELASTIC_PREEMPT,
	ARM_KNEE,
	ARM_FIXED,
	ARM_KIND_COUNT
} arm_kind_t;

typedef struct arm {
	arm_kind_t kind;
	int k; /* static:K */
	char name[32];
} arm_t;

typedef struct tenant_shm {
	struct {
		_Alignas(64) _Atomic uint64_t units;
	} t[COSCHED_MAX_TENANTS];
	_Atomic bool stop;
} tenant_shm_t;

struct cosched {
	engine_t *e;       /* the model and a forward pass; no gang */
	const model_t *m;
	forward_t *f;
	int cpus[GANG_MAX_SLOTS], n;
	int gen_tokens, n_tenants;
	double seconds;
	burn_mode_t mode;
	tenant_shm_t *shm;
	pid_t pids[COSCHED_MAX_TENANTS];
	uint64_t *ref_hash; /* (gen_tokens) logits hashes of the solo run */
	const char *out;
	double knee_tolerance;
	cpu_set_t allowed; /* the process's affinity before any pinning */
	arm_t arms[COSCHED_MAX_ARMS];
	int n_arms;
	double solo_ten, gen_ns;  /* from cosched_solo */
	int duty[COSCHED_MAX_DUTIES], n_duty;
	cosched_result_t (*res)[COSCHED_MAX_ARMS]; /* [duty][arm] */
	uint64_t mismatches;
};

/* ---- tenants: forked processes running burn_loop ---- */

/* The counters are in a shared mapping; the stores before fork() are seen
 * by the child (fork orders them), the child's relaxed counts are read
 * while it runs, and waitpid orders its last ones. */
static void tenants_start(cosched_t *c, const int *cpus, int n_cpus)
{
	atomic_store(&c->shm->stop, false); /* before the forks below */
	for (int i = 0; i < c->n_tenants; i++) {
		atomic_store(&c->shm->t[i].units, 0); /* before the fork below */
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
		u += atomic_load(&c->shm->t[i].units); /* a running count */
	return u;
}

static void tenants_stop(cosched_t *c)
{
	atomic_store(&c->shm->stop, true); /* polled by burn_loop */
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

/* Runs one arm at one duty for c->seconds; period_ns 0 = no inference. */
static cosched_result_t run_arm(cosched_t *c, const arm_t *a, uint64_t period_ns,
				const char *trace_path, bool with_tenants)
{
	cosched_result_t res = {0};
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
			time_sleep_until(now, until);
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
	res.lat_p50_ms = (double)stats_quantile_u64(lat, nl, 0.5) / 1e6;
	res.lat_p99_ms = (double)stats_quantile_u64(lat, nl, 0.99) / 1e6;
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

/* The best static split at duty index d (coschedule.h); -1 if none. */
static int best_static(const cosched_t *cs, const cosched_result_t *r)
{
	double max_tok = 0;
	for (int a = 0; a < cs->n_arms; a++)
		if (cs->arms[a].kind == ARM_STATIC && r[a].tok_s > max_tok)
			max_tok = r[a].tok_s;
	int best = -1;
	for (int a = 0; a < cs->n_arms; a++)
		if (cs->arms[a].kind == ARM_STATIC && r[a].tok_s >= 0.97 * max_tok &&
		    (best < 0 || r[a].tenant_units_s > r[best].tenant_units_s))
			best = a;
	return best;
}

bool cosched_verdict(const cosched_t *cs, int d, int a, char *buf, size_t cap)
{
	const arm_t *arms = cs->arms;
	const cosched_result_t *r = cs->res[d];
	int duty = cs->duty[d], best = best_static(cs, r);
	if (arms[a].kind != ARM_ELASTIC_PREEMPT && arms[a].kind != ARM_KNEE)
		return false;
	double ten = cs->solo_ten > 0 ? r[a].tenant_units_s / cs->solo_ten : 0;
	char vs[256] = "";
	size_t k = 0;
	for (int b = 0; b < cs->n_arms && k < sizeof vs; b++)
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
	snprintf(buf, cap, "bench coschedule duty %3d: %s tenant %.1f%% of solo (%s), "
		 "inference %.2f tok/s vs %.2f; %s: %s", duty, arms[a].name,
		 100 * ten, vs[0] ? vs : "no static split", r[a].tok_s,
		 best >= 0 ? r[best].tok_s : 0, why, verdict);
	return true;
}

/* ---- the experiment ---- */

static void make_arms(cosched_t *cs)
{
	int n = 0;
	for (int k = 1; k < cs->n && n < COSCHED_MAX_ARMS - 4; k++) {
		cs->arms[n] = (arm_t){ARM_STATIC, k, ""};
		snprintf(cs->arms[n].name, sizeof cs->arms[n].name, "static:%d", k);
		n++;
	}
	cs->arms[n++] = (arm_t){ARM_ELASTIC_POLITE, 0, "elastic-polite"};
	cs->arms[n++] = (arm_t){ARM_ELASTIC_PREEMPT, 0, "elastic-preempt"};
	cs->arms[n++] = (arm_t){ARM_KNEE, 0, "knee"};
	cs->arms[n++] = (arm_t){ARM_FIXED, 0, "fixed"};
	cs->n_arms = n;
}

cosched_t *cosched_open(const cosched_config_t *c, int *exit_code)
{
	*exit_code = EXIT_INPUT;
	if (c->n_cpus < 2 || c->n_cpus > GANG_MAX_SLOTS) {
		err_set("bench coschedule: needs at least 2 CPUs (have %d)", c->n_cpus);
		return NULL;
	}
	if (mkdir(c->out, 0755) < 0 && errno != EEXIST) {
		err_set("--out %s: %s", c->out, strerror(errno));
		return NULL;
	}
	cosched_t *cs = calloc(1, sizeof *cs);
	if (!cs) {
		*exit_code = EXIT_FAIL;
		err_sys("calloc");
		return NULL;
	}
	*cs = (cosched_t){.gen_tokens = c->gen_tokens, .seconds = c->seconds,
			  .mode = c->mode, .out = c->out, .n = c->n_cpus,
			  .knee_tolerance = c->knee_tolerance,
			  .n_tenants = c->n_tenants ? c->n_tenants : c->n_cpus,
			  .shm = MAP_FAILED};
	memcpy(cs->cpus, c->cpus, (size_t)c->n_cpus * sizeof *cs->cpus);
	sched_getaffinity(0, sizeof cs->allowed, &cs->allowed);
	engine_config_t ec = {.model_path = c->model, .tok_path = c->tok,
			      .cpus = c->cpus, .n_cpus = c->n_cpus,
			      .ctx = c->gen_tokens + 2, .no_gang = true};
	if (!(cs->e = engine_open(&ec, exit_code))) {
		cosched_close(cs);
		return NULL;
	}
	cs->m = cs->e->m;
	cs->f = cs->e->f;
	cs->shm = mmap(NULL, sizeof *cs->shm, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cs->ref_hash = calloc((size_t)cs->gen_tokens, sizeof *cs->ref_hash);
	if (cs->shm == MAP_FAILED || !cs->ref_hash) {
		err_set("bench coschedule: out of memory");
		*exit_code = EXIT_FAIL;
		cosched_close(cs);
		return NULL;
	}
	make_arms(cs);
	*exit_code = EXIT_OK;
	return cs;
}

void cosched_close(cosched_t *cs)
{
	if (!cs)
		return;
	if (cs->shm != MAP_FAILED)
		munmap(cs->shm, sizeof *cs->shm);
	free(cs->ref_hash);
	free(cs->res);
	engine_close(cs->e);
	free(cs);
}

const char *cosched_model_name(const cosched_t *cs) { return cs->m->name; }
int cosched_n_tenants(const cosched_t *cs) { return cs->n_tenants; }
int cosched_n_arms(const cosched_t *cs) { return cs->n_arms; }
const char *cosched_arm_name(const cosched_t *cs, int arm) { return cs->arms[arm].name; }
uint64_t cosched_mismatches(const cosched_t *cs) { return cs->mismatches; }

void cosched_solo(cosched_t *cs, cosched_solo_t *s)
{
	/* one generation for the reference logits */
	policy_t pol = {.width = WIDTH_ALL};
	gang_config_t gc = {.cpus = cs->cpus, .n_cpus = cs->n, .pin = true};
	runner_t r = {.pol = &pol, .g = gang_init(&gc)};
	knee_init(&r.knee, cs->n);
	generation(cs, &r, cs->ref_hash);
	gang_free(r.g);
	/* inference alone, back to back on all cores */
	arm_t solo_arm = {ARM_ELASTIC_POLITE, 0, "solo"};
	cosched_result_t solo_inf = run_arm(cs, &solo_arm, 1, NULL, false);
	cs->gen_ns = solo_inf.gens ? cs->seconds * 1e9 / (double)solo_inf.gens : 1e9;
	/* tenants alone */
	tenants_start(cs, NULL, 0);
	usleep(100000);
	uint64_t u0 = tenants_units(cs), t0 = time_now_ns();
	usleep((useconds_t)(cs->seconds * 1e6));
	cs->solo_ten = (double)(tenants_units(cs) - u0) /
		       ((double)(time_now_ns() - t0) / 1e9);
	tenants_stop(cs);
	*s = (cosched_solo_t){solo_inf.tok_s, cs->gen_ns / 1e6, cs->solo_ten};
}

/* One run's width trace: OUT/width-ARM-DUTY.csv, ':' spelled '_'. */
static void trace_path(const cosched_t *cs, const arm_t *a, int duty, char *buf,
		       size_t cap)
{
	snprintf(buf, cap, "%s/width-%s-%d.csv", cs->out, a->name, duty);
	for (char *p = buf + strlen(cs->out); *p; p++)
		if (*p == ':')
			*p = '_';
}

int cosched_sweep(cosched_t *cs, const int *duty, int n_duty,
		  void (*row)(void *user, int arm, int duty, const cosched_result_t *r),
		  void *user)
{
	char path[512];
	snprintf(path, sizeof path, "%s/coschedule.csv", cs->out);
	FILE *csv = fopen(path, "w");
	if (!csv)
		return err_set("%s: %s", path, strerror(errno));
	cs->n_duty = n_duty < COSCHED_MAX_DUTIES ? n_duty : COSCHED_MAX_DUTIES;
	memcpy(cs->duty, duty, (size_t)cs->n_duty * sizeof *duty);
	free(cs->res);
	if (!(cs->res = calloc((size_t)cs->n_duty, sizeof *cs->res))) {
		fclose(csv);
		return err_set("out of memory");
	}
	fprintf(csv, "policy,duty,inference_tok_s,lat_p50_ms,lat_p99_ms,tenant_units_s,"
		     "tenant_frac,mean_width,preempted_tokens,generations,logit_mismatches\n");
	for (int d = 0; d < cs->n_duty; d++) {
		uint64_t period = duty[d] ? (uint64_t)(cs->gen_ns * 100.0 / duty[d]) : 0;
		for (int a = 0; a < cs->n_arms; a++) {
			char trace[600];
			trace_path(cs, &cs->arms[a], duty[d], trace, sizeof trace);
			cosched_result_t r = run_arm(cs, &cs->arms[a], period, trace, true);
			r.tenant_frac = cs->solo_ten > 0 ? r.tenant_units_s / cs->solo_ten : 0;
			cs->mismatches += r.mismatches;
			if (row)
				row(user, a, duty[d], &r);
			fprintf(csv, "%s,%d,%.3f,%.3f,%.3f,%.1f,%.4f,%.3f,%llu,%llu,%llu\n",
				cs->arms[a].name, duty[d], r.tok_s, r.lat_p50_ms, r.lat_p99_ms,
				r.tenant_units_s, r.tenant_frac, r.mean_width,
				(unsigned long long)r.preempted_tokens,
				(unsigned long long)r.gens, (unsigned long long)r.mismatches);
			cs->res[d][a] = r;
		}
	}
	fclose(csv);
	return 0;
}
