/* bench_pool: a plain fixed thread pool that runs the same wave plans as
 * the gang, the way today's engines do (ggml's threadpool): every thread is
 * always a member, chunks are claimed from an atomic cursor, and waves end
 * at a centralized spinning barrier (count + generation). No latch, no
 * acks, no membership: the baseline for the gang's protocol overhead. */
#ifndef EGANG_BENCH_POOL_H
#define EGANG_BENCH_POOL_H

#include "base/wave.h"

typedef struct bench_pool bench_pool_t;

/* Starts n - 1 spinning workers pinned to cpus[1..n-1]; the caller (pinned
 * to cpus[0]) is the leader. */
bench_pool_t *bench_pool_new(const int *cpus, int n);
void bench_pool_free(bench_pool_t *p);
/* Runs one token's plan on every thread of the pool. */
void bench_pool_run(bench_pool_t *p, const wave_plan_t *plan);

/* A centralized spinning barrier alone (for the protocol benchmark). */
typedef struct spin_barrier {
	_Alignas(64) _Atomic unsigned count;
	_Alignas(64) _Atomic unsigned gen;
	unsigned n;
} spin_barrier_t;

void spin_barrier_init(spin_barrier_t *b, unsigned n);
void spin_barrier_wait(spin_barrier_t *b);
/* The same; the last arriver runs last(arg) before releasing the others. */
void spin_barrier_wait_last(spin_barrier_t *b, void (*last)(void *), void *arg);

#endif
