/* protocol: the gang protocol's latencies on a plan whose chunks do nothing
 * or spin briefly (`egang bench protocol`).
 *
 *   latch publish-to-observe  the leader publishes a token, a worker starts it
 *   wave barrier              one wave barrier on all cores, beside a
 *                             pthread_barrier and a centralized spinning
 *                             barrier (ggml's) on the same cores
 *   return                    a core leaves at a token boundary -> a tenant
 *                             pinned to it runs again (tenant timestamps)
 *   acquire                   request -> the worker's ack, from a SCHED_IDLE
 *                             tenant, on an idle core, on a core busy with a
 *                             CPU-bound process
 * Every figure skips a warm-up; samples are in nanoseconds. */
#ifndef EGANG_BENCH_PROTOCOL_H
#define EGANG_BENCH_PROTOCOL_H

#include "base/stats.h"

typedef enum protocol_probe {
	PROTOCOL_LATCH,          /* latch_publish_to_observe */
	PROTOCOL_BARRIER,        /* wave_barrier_all_cores */
	PROTOCOL_RETURN,         /* return_to_tenant */
	PROTOCOL_ACQUIRE_TENANT, /* acquire_from_sched_idle_tenant */
	PROTOCOL_ACQUIRE_IDLE,   /* acquire_idle_core */
	PROTOCOL_ACQUIRE_BUSY,   /* acquire_busy_core_polite */
	PROTOCOL_COUNT
} protocol_probe_t;

/* The probes' names as the summary lines print them. */
extern const char *const protocol_names[PROTOCOL_COUNT];

typedef struct protocol_result {
	stats_summary_t s[PROTOCOL_COUNT]; /* ns */
	double pthread_barrier_ns, spin_barrier_ns; /* mean per episode */
} protocol_result_t;

/* Runs every probe with reps samples (>= 20) on cpus[0..n) (n >= 2; the
 * last one moves in and out). -1 + err_get() if the gang cannot start. */
int protocol_run(const int *cpus, int n, int reps, protocol_result_t *r);

#endif
