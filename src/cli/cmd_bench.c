/* egang bench: protocol latencies, decode and prefill speed, gang width
 * scaling, protocol overhead. Every benchmark prints one greppable summary
 * line starting "bench ", skips warm-up, and reports min / median / p99 /
 * max over repetitions (or min / median / max where reps are few). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/bench_pool.h"
#include "cli/cli.h"
#include "gang/gang.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/sampler.h"
#include "policy/policy.h"
#include "server/engine.h"

/* ---- statistics ---- */

typedef struct stats {
	double min, p50, p99, max, mean;
	size_t n;
} stats_t;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static stats_t stats_of(double *v, size_t n)
{
	stats_t s = {0};
	if (!n)
		return s;
	qsort(v, n, sizeof *v, cmp_double);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	size_t i99 = (size_t)ceil(0.99 * (double)n) - 1;
	s = (stats_t){v[0], v[n / 2], v[i99 < n ? i99 : n - 1], v[n - 1],
		      sum / (double)n, n};
	return s;
}

static void stats_print(const char *what, const char *unit, stats_t s)
{
	printf("bench protocol %-30s p50=%.0f%s p99=%.0f%s min=%.0f max=%.0f n=%zu\n",
	       what, s.p50, unit, s.p99, unit, s.min, s.max, s.n);
}

/* ---- protocol: a plan whose chunks do nothing or spin briefly ---- */

typedef struct probe {
	_Atomic uint64_t observe_ns; /* first chunk run by a worker */
	uint32_t spin_ns;            /* work per chunk */
} probe_t;

static _Thread_local bool is_leader;

static void probe_chunk(void *ctx, uint32_t w, uint32_t i)
{
	probe_t *p = ctx;
	uint64_t t = time_now_ns();
	if (!is_leader) {
		uint64_t z = 0;
		atomic_compare_exchange_strong(&p->observe_ns, &z, t);
	}
	while (p->spin_ns && time_now_ns() - t < p->spin_ns)
		cpu_relax();
}

/* A CPU-bound tenant pinned to cpu: stores the time continuously, so the
 * moment it runs again is visible to the leader. */
typedef struct tenant {
	int cpu;
	int policy;              /* SCHED_IDLE or SCHED_OTHER */
	_Atomic uint64_t now_ns;
	_Atomic bool stop;
	pthread_t thread;
} tenant_t;

static void *tenant_main(void *arg)
{
	tenant_t *t = arg;
	affinity_pin_self(t->cpu);
	struct sched_param sp = {0};
	pthread_setschedparam(pthread_self(), t->policy, &sp);
	while (!atomic_load_explicit(&t->stop, memory_order_relaxed))
		atomic_store_explicit(&t->now_ns, time_now_ns(), memory_order_relaxed);
	return NULL;
}

static void tenant_start(tenant_t *t, int cpu, int policy)
{
	*t = (tenant_t){.cpu = cpu, .policy = policy};
	pthread_create(&t->thread, NULL, tenant_main, t);
}

static void tenant_stop(tenant_t *t)
{
	atomic_store(&t->stop, true);
	pthread_join(t->thread, NULL);
}

/* A CPU-bound tenant in its own process (its own scheduling entity, as an
 * ordinary program would be). */
static pid_t burner_start(int cpu)
{
	pid_t pid = fork();
	if (pid == 0) {
		affinity_pin_self(cpu);
		volatile uint64_t x = 0;
		for (;;)
			x++;
	}
	return pid;
}

static void burner_stop(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

static void *barrier_thread(void *arg);

typedef struct barrier_arg {
	int cpu, reps;
	pthread_barrier_t *pb;
	spin_barrier_t *sb;
} barrier_arg_t;

static void *barrier_thread(void *arg)
{
	barrier_arg_t *a = arg;
	affinity_pin_self(a->cpu);
	for (int i = 0; i < a->reps; i++) {
		if (a->pb)
			pthread_barrier_wait(a->pb);
		else
			spin_barrier_wait(a->sb);
	}
	return NULL;
}

/* Per-episode cost of a pthread barrier or a spinning barrier on cpus. */
static double baseline_barrier_ns(const int *cpus, int n, bool spin, int reps)
{
	pthread_barrier_t pb;
	spin_barrier_t sb;
	pthread_barrier_init(&pb, NULL, (unsigned)n);
	spin_barrier_init(&sb, (unsigned)n);
	pthread_t th[GANG_MAX_SLOTS];
	barrier_arg_t args[GANG_MAX_SLOTS];
	for (int i = 1; i < n; i++) {
		args[i] = (barrier_arg_t){cpus[i], reps, spin ? NULL : &pb,
					  spin ? &sb : NULL};
		pthread_create(&th[i], NULL, barrier_thread, &args[i]);
	}
	affinity_pin_self(cpus[0]);
	uint64_t t0 = 0;
	for (int i = 0; i < reps; i++) {
		if (i == reps / 10)
			t0 = time_now_ns(); /* skip warm-up */
		if (spin)
			spin_barrier_wait(&sb);
		else
			pthread_barrier_wait(&pb);
	}
	uint64_t t1 = time_now_ns();
	for (int i = 1; i < n; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&pb);
	return (double)(t1 - t0) / (double)(reps - reps / 10);
}

static const char protocol_help[] =
	"usage: egang bench protocol [--cores LIST] [--reps N]\n"
	"\n"
	"Measures the gang protocol's latencies (median and p99 over N reps):\n"
	"  latch publish-to-observe   leader publishes a token, a worker starts it\n"
	"  wave barrier               one wave barrier on all cores (and, measured\n"
	"                             in the same run, pthread_barrier and a\n"
	"                             centralized spinning barrier as ggml uses)\n"
	"  return                     a core leaves at a token boundary -> a tenant\n"
	"                             pinned to it runs again (tenant timestamps)\n"
	"  acquire idle / busy        request -> the worker's ack, on an idle core\n"
	"                             and on a core busy with a CPU-bound process\n"
	"Needs at least 2 CPUs.\n";

static int bench_protocol(int argc, char **argv)
{
	static const struct option opts[] = {
		{"cores", required_argument, 0, 'C'},
		{"reps", required_argument, 0, 'r'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	const char *cores = NULL;
	int64_t reps = 2000;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'C': cores = optarg; break;
		case 'r':
			if (cli_int("--reps", optarg, 20, 10000000, &reps) < 0)
				return EXIT_INPUT;
			break;
		case 'h': fputs(protocol_help, stdout); return EXIT_OK;
		default: return cli_usage_error("bench protocol", argv[optind - 1]);
		}
	}
	int cpus[GANG_MAX_SLOTS];
	int n = cli_cores(cores, cpus, GANG_MAX_SLOTS);
	if (n < 0) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	if (n < 2) {
		log_error("bench protocol: needs at least 2 CPUs (have %d)", n);
		return EXIT_INPUT;
	}
	is_leader = true;
	size_t R = (size_t)reps;
	double *v = malloc(R * sizeof *v);
	probe_t probe = {0};
	wave_t waves[100];
	for (int i = 0; i < 100; i++)
		waves[i] = (wave_t){(uint32_t)n, probe_chunk, NULL};
	gang_config_t gc = {.cpus = cpus, .n_cpus = n, .pin = true, .spin_us = 2000};
	gang_t *g = gang_init(&gc);
	if (!g) {
		log_error("%s", err_get());
		return EXIT_FAIL;
	}
	int last = n - 1; /* the slot we move in and out */
	uint32_t all = gang_all(g), without = all & ~(1u << last);

	/* 1. latch publish-to-observe: one wave of spinning chunks */
	wave_plan_t p1 = {&probe, 1, waves};
	probe.spin_ns = 3000;
	gang_request(g, all);
	gang_begin(g);
	size_t k = 0;
	for (size_t i = 0; i < R + R / 10 && k < R; i++) {
		atomic_store(&probe.observe_ns, 0);
		uint64_t t0 = time_now_ns();
		uint32_t mask = gang_run_token(g, &p1);
		uint64_t t1 = atomic_load(&probe.observe_ns);
		if (i >= R / 10 && mask == all && t1)
			v[k++] = (double)(t1 - t0);
		for (uint64_t s = time_now_ns(); time_now_ns() - s < 5000;)
			cpu_relax(); /* the leader's sampling time between tokens */
	}
	stats_t s_latch = stats_of(v, k);
	stats_print("latch_publish_to_observe", "ns", s_latch);

	/* 2. one wave barrier on all cores: tokens of 100 empty waves */
	probe.spin_ns = 0;
	wave_plan_t p2 = {&probe, 100, waves};
	k = 0;
	for (size_t i = 0; i < R / 10 + R / 5; i++) {
		uint64_t t0 = time_now_ns();
		uint32_t mask = gang_run_token(g, &p2);
		uint64_t t1 = time_now_ns();
		if (i >= R / 10 && mask == all)
			v[k++] = (double)(t1 - t0) / 100.0;
	}
	stats_t s_bar = stats_of(v, k);
	stats_print("wave_barrier_all_cores", "ns", s_bar);
	gang_end(g);
	double pthread_ns = baseline_barrier_ns(cpus, n, false, (int)R * 10);
	double spin_ns = baseline_barrier_ns(cpus, n, true, (int)R * 10);
	printf("bench protocol %-30s mean=%.0fns\n", "pthread_barrier", pthread_ns);
	printf("bench protocol %-30s mean=%.0fns\n", "spin_barrier_ggml_style", spin_ns);

	/* 3. return: the last core leaves; a SCHED_IDLE tenant pinned there
	 * runs again. 4. acquire of that core back (the tenant is SCHED_IDLE:
	 * the waking worker preempts it). */
	tenant_t ten;
	tenant_start(&ten, cpus[last], SCHED_IDLE);
	double *va = malloc(R * sizeof *va);
	size_t ka = 0;
	k = 0;
	gang_begin(g);
	p1.n_waves = 1;
	probe.spin_ns = 2000;
	size_t reps_ret = R / 4 < 200 ? R : R / 4;
	for (size_t i = 0; i < reps_ret; i++) {
		gang_request(g, all);
		uint64_t t0 = time_now_ns();
		for (int tries = 0; tries < 100000; tries++) {
			if (gang_run_token(g, &p1) == all)
				break;
		}
		gang_stats_t st;
		gang_stats(g, &st);
		if (st.ack_ns[last] > t0)
			va[ka++] = (double)(st.ack_ns[last] - t0);
		/* the token boundary where `last` leaves */
		gang_request(g, without);
		uint64_t tb = time_now_ns();
		uint64_t seen;
		while ((seen = atomic_load(&ten.now_ns)) <= tb &&
		       time_now_ns() - tb < 100000000ull)
			cpu_relax();
		if (seen > tb)
			v[k++] = (double)(seen - tb);
		usleep(200);
	}
	gang_end(g);
	tenant_stop(&ten);
	stats_t s_ret = stats_of(v, k);
	stats_print("return_to_tenant", "ns", s_ret);
	stats_t s_acq_idle_tenant = stats_of(va, ka);
	stats_print("acquire_from_sched_idle_tenant", "ns", s_acq_idle_tenant);

	/* 5. acquire an idle core (worker asleep > 1 ms), 6. a core busy with
	 * a CPU-bound process (polite: whatever the scheduler does). */
	stats_t s_acq[2];
	for (int busy = 0; busy < 2; busy++) {
		pid_t burner = busy ? burner_start(cpus[last]) : 0;
		usleep(20000);
		ka = 0;
		size_t reps_acq = R / 10 < 50 ? 50 : R / 10;
		for (size_t i = 0; i < reps_acq; i++) {
			gang_request(g, without);
			gang_begin(g);
			gang_run_token(g, &p1);
			gang_end(g);
			usleep(2000); /* the worker is asleep now */
			uint64_t t0 = time_now_ns();
			gang_request(g, all);
			gang_begin(g);
			gang_stats_t st;
			do {
				gang_stats(g, &st);
			} while (st.ack_ns[last] <= t0 && time_now_ns() - t0 < 1000000000ull);
			if (st.ack_ns[last] > t0)
				va[ka++] = (double)(st.ack_ns[last] - t0);
			gang_run_token(g, &p1);
			gang_end(g);
		}
		burner_stop(burner);
		s_acq[busy] = stats_of(va, ka);
		stats_print(busy ? "acquire_busy_core_polite" : "acquire_idle_core", "ns",
			    s_acq[busy]);
	}
	printf("bench protocol summary: latch %.0f ns, barrier %.0f ns (pthread %.0f, "
	       "spin %.0f), return %.1f us, acquire idle %.1f us, busy %.1f us "
	       "(p50; %d cores)\n",
	       s_latch.p50, s_bar.p50, pthread_ns, spin_ns, s_ret.p50 / 1e3,
	       s_acq[0].p50 / 1e3, s_acq[1].p50 / 1e3, n);
	gang_free(g);
	free(v);
	free(va);
	return EXIT_OK;
}

/* ---- decode loops shared by width and overhead ---- */

typedef enum runner_kind { RUN_SERIAL, RUN_GANG, RUN_POOL } runner_kind_t;

typedef struct runner {
	runner_kind_t kind;
	gang_t *g;
	bench_pool_t *pool;
} runner_t;

/* Decodes `tokens` greedy positions from BOS; returns tok/s. */
static double decode_rate(const model_t *m, forward_t *f, runner_t *r, int tokens)
{
	int32_t tok = tokenizer_bos(m->tok) >= 0 ? tokenizer_bos(m->tok) : 0;
	if (r->g)
		gang_begin(r->g);
	uint64_t t0 = 0;
	for (int pos = 0; pos < tokens + 2; pos++) {
		if (pos == 2)
			t0 = time_now_ns(); /* skip warm-up */
		forward_set_input(f, tok, pos);
		const wave_plan_t *p = forward_plan(f);
		if (r->kind == RUN_GANG)
			gang_run_token(r->g, p);
		else if (r->kind == RUN_POOL)
			bench_pool_run(r->pool, p);
		else
			wave_plan_run_serial(p);
		tok = sampler_argmax(forward_logits(f), m->cfg.vocab_size);
	}
	uint64_t t1 = time_now_ns();
	if (r->g)
		gang_end(r->g);
	return (double)tokens / ((double)(t1 - t0) / 1e9);
}

typedef struct model_bench_opts {
	const char *model, *tok, *cores;
	int64_t tokens, reps;
	bool json_ok; /* the benchmark takes --json */
	bool json;
} model_bench_opts_t;

static int parse_model_bench(int argc, char **argv, const char *name,
			     const char *help, model_bench_opts_t *o)
{
	static const struct option opts[] = {
		{"model", required_argument, 0, 'm'},
		{"tokenizer", required_argument, 0, 'z'},
		{"cores", required_argument, 0, 'C'},
		{"tokens", required_argument, 0, 'n'},
		{"reps", required_argument, 0, 'r'},
		{"json", no_argument, 0, 'j'},
		{"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "m:z:n:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'm': o->model = optarg; break;
		case 'z': o->tok = optarg; break;
		case 'C': o->cores = optarg; break;
		case 'n':
			if (cli_int("--tokens", optarg, 1, 1 << 20, &o->tokens) < 0)
				return EXIT_INPUT;
			break;
		case 'r':
			if (cli_int("--reps", optarg, 1, 1000, &o->reps) < 0)
				return EXIT_INPUT;
			break;
		case 'j':
			if (!o->json_ok)
				return cli_usage_error(name, argv[optind - 1]);
			o->json = true;
			break;
		case 'q': log_quiet = true; break;
		case 'h': fputs(help, stdout); return EXIT_OK;
		default: return cli_usage_error(name, argv[optind - 1]);
		}
	}
	if (cli_no_more_args(name, argc, argv) < 0)
		return EXIT_INPUT;
	if (!o->model) {
		log_error("%s: -m MODEL is required", name);
		return EXIT_INPUT;
	}
	return -1;
}

/* Parses the options and --cores, loads the model and makes its run
 * state; an exit code (--help, or a one-line error), or -1 when all is
 * ready. */
static int model_bench_begin(int argc, char **argv, const char *name,
			     const char *help, model_bench_opts_t *o, int *cpus,
			     int *n, model_t **m, forward_t **f)
{
	int rc = parse_model_bench(argc, argv, name, help, o);
	if (rc >= 0)
		return rc;
	*n = cli_cores(o->cores, cpus, GANG_MAX_SLOTS);
	if (*n < 0) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	*m = model_load(o->model, o->tok);
	if (!*m) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	/* decode_rate runs tokens + 2 positions, the warm-ups up to 10 */
	int64_t need = o->tokens + 10;
	if (need > (*m)->cfg.ctx) {
		log_error("%s: --tokens %lld does not fit the model's context of %d",
			  name, (long long)o->tokens, (*m)->cfg.ctx);
		model_free(*m);
		return EXIT_INPUT;
	}
	*f = forward_new(*m, (int32_t)need, 0);
	if (!*f) {
		log_error("%s", err_get());
		model_free(*m);
		return EXIT_FAIL;
	}
	return -1;
}

static const char width_help[] =
	"usage: egang bench width -m MODEL [-z TOK] [--cores LIST] [--tokens N] [--reps R]\n"
	"\n"
	"Decode tok/s of the gang at widths 1..n (the first w slots requested),\n"
	"min/median/max over R reps of N tokens, and the knee the `knee` policy\n"
	"would pick: the widest width whose core time per token (width / tok/s)\n"
	"is within 5% of the cheapest width's.\n";

static int bench_width(int argc, char **argv)
{
	model_bench_opts_t o = {.tokens = 64, .reps = 3};
	int cpus[GANG_MAX_SLOTS], n, rc;
	model_t *m;
	forward_t *f;
	if ((rc = model_bench_begin(argc, argv, "bench width", width_help, &o, cpus, &n,
				    &m, &f)) >= 0)
		return rc;
	gang_config_t gc = {.cpus = cpus, .n_cpus = n, .pin = true};
	gang_t *g = gang_init(&gc);
	runner_t r = {RUN_GANG, g, NULL};
	double best = 0, med[GANG_MAX_SLOTS];
	double *v = malloc((size_t)o.reps * sizeof *v);
	for (int w = 1; w <= n; w++) {
		gang_request(g, (w == 32 ? 0xffffffffu : (1u << w) - 1));
		decode_rate(m, f, &r, 4); /* let the workers join */
		for (int64_t i = 0; i < o.reps; i++)
			v[i] = decode_rate(m, f, &r, (int)o.tokens);
		stats_t s = stats_of(v, (size_t)o.reps);
		med[w - 1] = s.p50;
		if (s.p50 > best)
			best = s.p50;
		printf("width %2d: %8.2f tok/s median (min %.2f, max %.2f), %.2f GB/s\n", w,
		       s.p50, s.min, s.max,
		       s.p50 * (double)model_bytes_per_token(m) / 1e9);
	}
	double rate[GANG_MAX_SLOTS + 1] = {0};
	for (int w = 1; w <= n; w++)
		rate[w] = med[w - 1];
	int knee = knee_of_rates(rate, n, 0.95);
	printf("bench width %s: knee=%d best=%.2f tok/s at widths 1..%d:", m->name, knee,
	       best, n);
	for (int w = 1; w <= n; w++)
		printf(" %.2f", med[w - 1]);
	printf("\n");
	free(v);
	gang_free(g);
	forward_free(f);
	model_free(m);
	return EXIT_OK;
}

static const char overhead_help[] =
	"usage: egang bench overhead -m MODEL [-z TOK] [--cores LIST] [--tokens N] [--reps R]\n"
	"\n"
	"Decode tok/s of the same wave plan on the elastic gang (membership fixed at\n"
	"all cores) and on a plain fixed thread pool (spinning barrier, no latch),\n"
	"alternating R times; prints the gang/pool ratio of the medians.\n";

static int bench_overhead(int argc, char **argv)
{
	model_bench_opts_t o = {.tokens = 64, .reps = 5};
	int cpus[GANG_MAX_SLOTS], n, rc;
	model_t *m;
	forward_t *f;
	if ((rc = model_bench_begin(argc, argv, "bench overhead", overhead_help, &o, cpus, &n,
				    &m, &f)) >= 0)
		return rc;
	double *vg = malloc((size_t)o.reps * sizeof *vg);
	double *vp = malloc((size_t)o.reps * sizeof *vp);
	for (int64_t i = 0; i < o.reps; i++) {
		gang_config_t gc = {.cpus = cpus, .n_cpus = n, .pin = true};
		gang_t *g = gang_init(&gc);
		gang_request(g, gang_all(g));
		runner_t rg = {RUN_GANG, g, NULL};
		decode_rate(m, f, &rg, 4);
		vg[i] = decode_rate(m, f, &rg, (int)o.tokens);
		gang_free(g);
		bench_pool_t *p = bench_pool_new(cpus, n);
		runner_t rp = {RUN_POOL, NULL, p};
		decode_rate(m, f, &rp, 4);
		vp[i] = decode_rate(m, f, &rp, (int)o.tokens);
		bench_pool_free(p);
	}
	stats_t sg = stats_of(vg, (size_t)o.reps), sp = stats_of(vp, (size_t)o.reps);
	printf("gang: %.2f tok/s median (min %.2f, max %.2f)\n", sg.p50, sg.min, sg.max);
	printf("pool: %.2f tok/s median (min %.2f, max %.2f)\n", sp.p50, sp.min, sp.max);
	printf("bench overhead %s: gang/pool=%.4f (%.2f%% protocol cost) on %d cores, "
	       "%lld tokens x %lld reps\n", m->name, sg.p50 / sp.p50,
	       100.0 * (1.0 - sg.p50 / sp.p50), n, (long long)o.tokens,
	       (long long)o.reps);
	free(vg);
	free(vp);
	forward_free(f);
	model_free(m);
	return EXIT_OK;
}

/* ---- decode and prefill: the model's speed at a thread count ---- */

/* The type of most of the model's weights (the first layer's FFN). */
static const char *model_type_name(const model_t *m)
{
	return dtype_info[m->layers[0].w_gate.type].name;
}

/* One summary line (or a JSON object) for tok/s samples v (sorted here). */
static void model_bench_report(const char *what, const model_t *m,
			       const model_bench_opts_t *o, const int *cpus, int n,
			       double *v)
{
	stats_t s = stats_of(v, (size_t)o->reps);
	cpumask_t mask = 0;
	for (int i = 0; i < n; i++)
		mask |= (cpumask_t)1 << cpus[i];
	char list[128];
	cpumask_format(mask, list, sizeof list);
	double bpt = (double)model_bytes_per_token(m);
	double gbs = s.p50 * bpt / 1e9;
	if (o->json) {
		json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:I, "
				      "s:{s:f, s:f, s:f}, s:f, s:f}",
				      "bench", what, "model", o->model, "type",
				      model_type_name(m), "cores", list, "threads", n,
				      "tokens", (json_int_t)o->tokens, "reps",
				      (json_int_t)o->reps, "tok_s", "min", s.min,
				      "median", s.p50, "max", s.max, "bytes_per_token",
				      bpt, "gb_s", gbs);
		char *t = json_dumps(j, JSON_COMPACT);
		puts(t);
		free(t);
		json_decref(j);
		return;
	}
	printf("bench %s: %s %s cores=%s tokens=%lld reps=%lld tok/s min/median/max "
	       "%.2f/%.2f/%.2f  GB/s %.2f (bytes/token %.0f)\n",
	       what, m->name, model_type_name(m), list, (long long)o->tokens,
	       (long long)o->reps, s.min, s.p50, s.max, gbs, bpt);
}

static const char decode_help[] =
	"usage: egang bench decode -m MODEL [-z TOK] [--cores LIST] [--tokens N]\n"
	"                          [--reps R] [--json] [--quiet]\n"
	"\n"
	"Decode speed: N greedy tokens (default 128) after a BOS on the elastic\n"
	"gang with every core of --cores a member (1 core: the leader alone),\n"
	"R reps (default 5) after a warm-up; prints min/median/max tok/s and the\n"
	"effective bandwidth, median tok/s x weight bytes read per token. The\n"
	"end-of-text token does not stop the run. --json: one JSON object.\n";

static int bench_decode(int argc, char **argv)
{
	model_bench_opts_t o = {.tokens = 128, .reps = 5, .json_ok = true};
	int cpus[GANG_MAX_SLOTS], n, rc;
	model_t *m;
	forward_t *f;
	if ((rc = model_bench_begin(argc, argv, "bench decode", decode_help, &o, cpus,
				    &n, &m, &f)) >= 0)
		return rc;
	gang_config_t gc = {.cpus = cpus, .n_cpus = n, .pin = true};
	gang_t *g = gang_init(&gc);
	gang_request(g, gang_all(g));
	runner_t r = {RUN_GANG, g, NULL};
	double *v = malloc((size_t)o.reps * sizeof *v);
	decode_rate(m, f, &r, 8); /* warm-up: the workers join, caches fill */
	for (int64_t i = 0; i < o.reps; i++) {
		v[i] = decode_rate(m, f, &r, (int)o.tokens);
		if (!o.json)
			log_info("rep %lld: %.2f tok/s", (long long)i + 1, v[i]);
	}
	model_bench_report("decode", m, &o, cpus, n, v);
	free(v);
	gang_free(g);
	forward_free(f);
	model_free(m);
	return EXIT_OK;
}

static const char prefill_help[] =
	"usage: egang bench prefill -m MODEL [-z TOK] [--cores LIST] [--tokens N]\n"
	"                           [--reps R] [--json] [--quiet]\n"
	"\n"
	"Prompt processing speed: a prompt of N token ids (default 256: BOS, then\n"
	"ids drawn from the vocabulary with a fixed seed) run through the engine's\n"
	"prompt path on the elastic gang, R reps (default 5) after a warm-up;\n"
	"prints min/median/max prompt tok/s (prompt tokens / time to the logits of\n"
	"the last prompt position). --json: one JSON object.\n";

static int bench_prefill(int argc, char **argv)
{
	model_bench_opts_t o = {.tokens = 256, .reps = 5, .json_ok = true};
	int cpus[GANG_MAX_SLOTS], n, rc;
	model_t *m;
	forward_t *f;
	if ((rc = model_bench_begin(argc, argv, "bench prefill", prefill_help, &o, cpus,
				    &n, &m, &f)) >= 0)
		return rc;
	int32_t vocab = m->cfg.vocab_size;
	int32_t *ids = malloc((size_t)o.tokens * sizeof *ids);
	rng_t rng;
	rng_seed(&rng, 1);
	int32_t bos = tokenizer_bos(m->tok);
	for (int64_t i = 0; i < o.tokens; i++)
		ids[i] = (int32_t)(rng_next(&rng) % (uint64_t)vocab);
	if (bos >= 0)
		ids[0] = bos;
	gang_config_t gc = {.cpus = cpus, .n_cpus = n, .pin = true};
	gang_t *g = gang_init(&gc);
	gang_request(g, gang_all(g));
	engine_params_t p = {.prompt_ids = ids, .n_prompt_ids = o.tokens,
			     .n_predict = 1, .sampler = {.top_p = 1.0f}};
	double *v = malloc((size_t)o.reps * sizeof *v);
	rc = EXIT_OK;
	for (int64_t i = -1; i < o.reps; i++) { /* rep -1: warm-up */
		engine_result_t res = {0};
		if (engine_generate(m, f, g, &p, &res) < 0) {
			log_error("bench prefill: %s", err_get());
			rc = EXIT_FAIL;
			break;
		}
		if (i >= 0) {
			v[i] = (double)res.n_prompt / res.prefill_s;
			if (!o.json)
				log_info("rep %lld: %.2f tok/s", (long long)i + 1, v[i]);
		}
		engine_result_free(&res);
	}
	if (rc == EXIT_OK)
		model_bench_report("prefill", m, &o, cpus, n, v);
	free(v);
	free(ids);
	gang_free(g);
	forward_free(f);
	model_free(m);
	return rc;
}

static const char bench_help[] =
	"usage: egang bench WHAT [options]\n"
	"\n"
	"  protocol   latch, barrier, return and acquire latencies\n"
	"  decode     decode tok/s and effective bandwidth at a core count\n"
	"  prefill    prompt processing tok/s at a core count\n"
	"  width      decode tok/s at gang widths 1..n and the knee\n"
	"  overhead   the gang against a plain fixed thread pool, same chunks\n"
	"  coschedule inference and CPU-bound tenants: static splits, elastic,\n"
	"             knee and a fixed pool across duty cycles (CSV + PNG)\n"
	"  serve      load generator for `egang serve` (streaming clients)\n"
	"  switch     policy index write and write-to-in-force latency\n"
	"  switching  the policy-switching experiment: serve + antagonists,\n"
	"             steady/burst/steady load, fixed vs switched policies\n"
	"  membw      read bandwidth with 1..n cores (the limit for decode)\n"
	"  matvec     GB/s of the matvec kernels per type, in L2 and from memory\n"
	"\n`egang bench WHAT --help` lists its options.\n";

int cmd_bench(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(bench_help, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_INPUT : EXIT_OK;
	}
	if (!strcmp(argv[1], "protocol"))
		return bench_protocol(argc - 1, argv + 1);
	if (!strcmp(argv[1], "decode"))
		return bench_decode(argc - 1, argv + 1);
	if (!strcmp(argv[1], "prefill"))
		return bench_prefill(argc - 1, argv + 1);
	if (!strcmp(argv[1], "width"))
		return bench_width(argc - 1, argv + 1);
	if (!strcmp(argv[1], "overhead"))
		return bench_overhead(argc - 1, argv + 1);
	if (!strcmp(argv[1], "coschedule"))
		return cmd_cosched(argc - 1, argv + 1);
	if (!strcmp(argv[1], "serve"))
		return cmd_bench_serve(argc - 1, argv + 1);
	if (!strcmp(argv[1], "switch"))
		return cmd_bench_switch(argc - 1, argv + 1);
	if (!strcmp(argv[1], "switching"))
		return cmd_bench_switching(argc - 1, argv + 1);
	if (!strcmp(argv[1], "membw"))
		return cmd_bench_membw(argc - 1, argv + 1);
	if (!strcmp(argv[1], "matvec"))
		return cmd_bench_matvec(argc - 1, argv + 1);
	log_error("bench: unknown benchmark '%s' (see `egang bench --help`)", argv[1]);
	return EXIT_INPUT;
}
