/* protocol: the gang protocol's latencies (protocol.h). */
#include "bench/protocol.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "bench/pool.h"
#include "gang/gang.h"

const char *const protocol_names[PROTOCOL_COUNT] = {
	[PROTOCOL_LATCH] = "latch_publish_to_observe",
	[PROTOCOL_BARRIER] = "wave_barrier_all_cores",
	[PROTOCOL_RETURN] = "return_to_tenant",
	[PROTOCOL_ACQUIRE_TENANT] = "acquire_from_sched_idle_tenant",
	[PROTOCOL_ACQUIRE_IDLE] = "acquire_idle_core",
	[PROTOCOL_ACQUIRE_BUSY] = "acquire_busy_core_polite",
};

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
		/* seq_cst, stronger than needed: the first worker's time wins;
		 * the leader reads it after gang_run_token's barrier */
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
	/* relaxed: a clock published continuously, a stop flag polled */
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
	atomic_store(&t->stop, true); /* the join orders the rest */
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


/* 1. latch publish-to-observe: tokens of one wave of spinning chunks */
static stats_summary_t probe_latch(gang_t *g, probe_t *probe, wave_plan_t *p1,
				   double *v, size_t R)
{
	uint32_t all = gang_all(g);
	probe->spin_ns = 3000;
	size_t k = 0;
	for (size_t i = 0; i < R + R / 10 && k < R; i++) {
		atomic_store(&probe->observe_ns, 0); /* before the token's publish */
		uint64_t t0 = time_now_ns();
		uint32_t mask = gang_run_token(g, p1);
		uint64_t t1 = atomic_load(&probe->observe_ns); /* after its barrier */
		if (i >= R / 10 && mask == all && t1)
			v[k++] = (double)(t1 - t0);
		for (uint64_t s = time_now_ns(); time_now_ns() - s < 5000;)
			cpu_relax(); /* the leader's sampling time between tokens */
	}
	return stats_summarize(v, k);
}

/* 2. one wave barrier on all cores: tokens of 100 empty waves */
static stats_summary_t probe_barrier(gang_t *g, probe_t *probe, wave_plan_t *p2,
				     double *v, size_t R)
{
	uint32_t all = gang_all(g);
	probe->spin_ns = 0;
	size_t k = 0;
	for (size_t i = 0; i < R / 10 + R / 5; i++) {
		uint64_t t0 = time_now_ns();
		uint32_t mask = gang_run_token(g, p2);
		uint64_t t1 = time_now_ns();
		if (i >= R / 10 && mask == all)
			v[k++] = (double)(t1 - t0) / p2->n_waves;
	}
	return stats_summarize(v, k);
}

/* 3. return: the last core leaves; a SCHED_IDLE tenant pinned there runs
 * again. 4. acquire of that core back (the tenant is SCHED_IDLE: the waking
 * worker preempts it). */
static void probe_return(gang_t *g, int cpu, wave_plan_t *p1, double *v, double *va,
			 size_t R, protocol_result_t *r)
{
	int last = gang_n_slots(g) - 1;
	uint32_t all = gang_all(g), without = all & ~(1u << last);
	tenant_t ten;
	tenant_start(&ten, cpu, SCHED_IDLE);
	size_t k = 0, ka = 0;
	gang_begin(g);
	size_t reps_ret = R / 4 < 200 ? R : R / 4;
	for (size_t i = 0; i < reps_ret; i++) {
		gang_request(g, all);
		uint64_t t0 = time_now_ns();
		for (int tries = 0; tries < 100000; tries++)
			if (gang_run_token(g, p1) == all)
				break;
		gang_stats_t st;
		gang_stats(g, &st);
		if (st.ack_ns[last] > t0)
			va[ka++] = (double)(st.ack_ns[last] - t0);
		/* the token boundary where `last` leaves */
		gang_request(g, without);
		uint64_t tb = time_now_ns(), seen;
		/* relaxed: the tenant's clock; a later value is all we need */
		while ((seen = atomic_load_explicit(&ten.now_ns, memory_order_relaxed)) <= tb &&
		       time_now_ns() - tb < 100000000ull)
			cpu_relax();
		if (seen > tb)
			v[k++] = (double)(seen - tb);
		usleep(200);
	}
	gang_end(g);
	tenant_stop(&ten);
	r->s[PROTOCOL_RETURN] = stats_summarize(v, k);
	r->s[PROTOCOL_ACQUIRE_TENANT] = stats_summarize(va, ka);
}

/* 5. acquire an idle core (worker asleep > 1 ms), 6. a core busy with a
 * CPU-bound process (polite: whatever the scheduler does). */
static stats_summary_t probe_acquire(gang_t *g, int cpu, bool busy, wave_plan_t *p1,
				     double *va, size_t R)
{
	int last = gang_n_slots(g) - 1;
	uint32_t all = gang_all(g), without = all & ~(1u << last);
	pid_t burner = busy ? burner_start(cpu) : 0;
	usleep(20000);
	size_t ka = 0, reps_acq = R / 10 < 50 ? 50 : R / 10;
	for (size_t i = 0; i < reps_acq; i++) {
		gang_request(g, without);
		gang_begin(g);
		gang_run_token(g, p1);
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
		gang_run_token(g, p1);
		gang_end(g);
	}
	burner_stop(burner);
	return stats_summarize(va, ka);
}

int protocol_run(const int *cpus, int n, int reps, protocol_result_t *r)
{
	is_leader = true;
	size_t R = (size_t)reps;
	double *v = malloc(R * sizeof *v), *va = malloc(R * sizeof *va);
	probe_t probe = {0};
	wave_t waves[100];
	for (int i = 0; i < 100; i++)
		waves[i] = (wave_t){(uint32_t)n, probe_chunk, NULL};
	gang_config_t gc = {.cpus = cpus, .n_cpus = n, .pin = true, .spin_us = 2000};
	gang_t *g = v && va ? gang_init(&gc) : NULL;
	if (!g) {
		free(v);
		free(va);
		return v && va ? -1 : err_set("bench protocol: out of memory");
	}
	wave_plan_t p1 = {&probe, 1, waves}, p2 = {&probe, 100, waves};
	gang_request(g, gang_all(g));
	gang_begin(g);
	r->s[PROTOCOL_LATCH] = probe_latch(g, &probe, &p1, v, R);
	r->s[PROTOCOL_BARRIER] = probe_barrier(g, &probe, &p2, v, R);
	gang_end(g);
	r->pthread_barrier_ns = baseline_barrier_ns(cpus, n, false, (int)R * 10);
	r->spin_barrier_ns = baseline_barrier_ns(cpus, n, true, (int)R * 10);
	probe.spin_ns = 2000;
	probe_return(g, cpus[n - 1], &p1, v, va, R, r);
	r->s[PROTOCOL_ACQUIRE_IDLE] = probe_acquire(g, cpus[n - 1], false, &p1, va, R);
	r->s[PROTOCOL_ACQUIRE_BUSY] = probe_acquire(g, cpus[n - 1], true, &p1, va, R);
	gang_free(g);
	free(v);
	free(va);
	return 0;
}
