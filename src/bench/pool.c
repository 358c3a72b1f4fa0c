/* bench_pool: the fixed-pool baseline (see bench_pool.h). */
#include "bench/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/base.h"

void spin_barrier_init(spin_barrier_t *b, unsigned n)
{
	/* before any thread uses the barrier (thread creation orders them) */
	atomic_store(&b->count, 0);
	atomic_store(&b->gen, 0);
	b->n = n;
}

void spin_barrier_wait(spin_barrier_t *b)
{
	spin_barrier_wait_last(b, NULL, NULL);
}

void spin_barrier_wait_last(spin_barrier_t *b, void (*last)(void *), void *arg)
{
	/* relaxed: gen cannot move before we arrive (the last arriver is at
	 * least us); the acq_rel RMW below orders it */
	unsigned gen = atomic_load_explicit(&b->gen, memory_order_relaxed);
	/* acq_rel: publishes our work to the last arriver and takes theirs */
	if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) + 1 == b->n) {
		if (last)
			last(arg);
		/* relaxed: published by the release of gen below */
		atomic_store_explicit(&b->count, 0, memory_order_relaxed);
		/* release: pairs with the waiters' acquire below */
		atomic_store_explicit(&b->gen, gen + 1, memory_order_release);
		return;
	}
	while (atomic_load_explicit(&b->gen, memory_order_acquire) == gen)
		cpu_relax();
}

struct bench_pool {
	_Alignas(64) _Atomic uint32_t go;  /* token counter: bumped per token */
	_Atomic uint32_t sleepers;
	_Alignas(64) _Atomic uint32_t cursor;
	_Alignas(64) _Atomic bool stop;
	spin_barrier_t bar;
	const wave_plan_t *plan; /* published by the release on go */
	int n;
	const int *cpus;
	pthread_t threads[64];
};

typedef struct finish_arg {
	bench_pool_t *p;
	const wave_plan_t *plan;
	uint32_t w;
} finish_arg_t;

/* Run by the last arriver, like the gang's barrier: finish, reset. */
static void pool_finish(void *arg)
{
	finish_arg_t *a = arg;
	const wave_t *wv = &a->plan->waves[a->w];
	if (wv->finish)
		wv->finish(a->plan->ctx, a->w);
	/* relaxed: published by the barrier's release of gen */
	atomic_store_explicit(&a->p->cursor, 0, memory_order_relaxed);
}

static void pool_waves(bench_pool_t *p, const wave_plan_t *plan)
{
	for (uint32_t w = 0; w < plan->n_waves; w++) {
		const wave_t *wv = &plan->waves[w];
		uint32_t i;
		/* relaxed: a claim counter; chunks publish through the barrier */
		while ((i = atomic_fetch_add_explicit(&p->cursor, 1,
						      memory_order_relaxed)) < wv->n_chunks)
			wv->chunk(plan->ctx, w, i);
		finish_arg_t a = {p, plan, w};
		spin_barrier_wait_last(&p->bar, pool_finish, &a);
	}
}

typedef struct pool_arg {
	bench_pool_t *p;
	int index;
} pool_arg_t;

static void *pool_main(void *arg)
{
	pool_arg_t *a = arg;
	bench_pool_t *p = a->p;
	affinity_pin_self(p->cpus[a->index]);
	free(a);
	uint32_t seen = 0;
	for (;;) {
		/* spin for a new token (as ggml's pool polls), sleep after 1 ms
		 * so an idle engine does not hold the cores between requests */
		uint32_t g;
		uint64_t t0 = time_now_ns();
		/* acquire: pairs with bench_pool_run's seq_cst bump of go (plan,
		 * cursor); stop is relaxed, bench_pool_free's join orders it */
		while ((g = atomic_load_explicit(&p->go, memory_order_acquire)) == seen &&
		       !atomic_load_explicit(&p->stop, memory_order_relaxed)) {
			cpu_relax();
			if (time_now_ns() - t0 > 1000000) {
				atomic_fetch_add(&p->sleepers, 1);
				/* seq_cst RMW above orders the re-check below with
				 * bench_pool_run's bump + sleepers read */
				uint32_t v = atomic_fetch_add(&p->go, 0);
				if (v == seen && !atomic_load(&p->stop))
					futex_wait((uint32_t *)&p->go, v);
				atomic_fetch_sub(&p->sleepers, 1);
				t0 = time_now_ns();
			}
		}
		if (atomic_load_explicit(&p->stop, memory_order_relaxed)) /* as above */
			return NULL;
		seen = g;
		pool_waves(p, p->plan);
	}
}

bench_pool_t *bench_pool_new(const int *cpus, int n)
{
	bench_pool_t *p = aligned_alloc(64, (sizeof *p + 63) / 64 * 64);
	*p = (bench_pool_t){0};
	p->n = n;
	p->cpus = cpus;
	spin_barrier_init(&p->bar, (unsigned)n);
	affinity_pin_self(cpus[0]);
	p->threads[0] = pthread_self();
	for (int i = 1; i < n; i++) {
		pool_arg_t *a = malloc(sizeof *a);
		*a = (pool_arg_t){p, i};
		pthread_create(&p->threads[i], NULL, pool_main, a);
	}
	return p;
}

void bench_pool_free(bench_pool_t *p)
{
	/* seq_cst: stop before the bump that wakes the workers (they reread
	 * stop after go moves) */
	atomic_store(&p->stop, true);
	atomic_fetch_add(&p->go, 1);
	futex_wake((uint32_t *)&p->go, INT32_MAX);
	for (int i = 1; i < p->n; i++)
		pthread_join(p->threads[i], NULL);
	free(p);
}

void bench_pool_run(bench_pool_t *p, const wave_plan_t *plan)
{
	p->plan = plan;
	/* relaxed: published by the seq_cst bump of go below */
	atomic_store_explicit(&p->cursor, 0, memory_order_relaxed);
	/* seq_cst: plan and cursor before the workers start, and ordered
	 * with the sleepers read (pairs with pool_main's sleep path) */
	atomic_fetch_add(&p->go, 1);
	if (atomic_load(&p->sleepers))
		futex_wake((uint32_t *)&p->go, INT32_MAX);
	pool_waves(p, plan);
}
