/* scx_first: what a policy switch costs on the sched_ext backend (`egang
 * scx bench`), measured through the loader's exports (scx/scx.h) against
 * the scheduler that `egang scx load` pinned:
 *  - the index write: a map update of the pinned policy_index, alone;
 *  - store to first transfer: from just before the write to the first
 *    callback that transfers a task into the new slot (the scheduler
 *    stamps it with bpf_ktime into first_ns[slot]), by two paths
 *    interleaved in pairs: a store into the mmapped index page and a map
 *    update through a kept descriptor.
 * Both alternate between two populated slots and restore the index in
 * force before. Percentiles are nearest rank (base/stats.h). */
#ifndef EGANG_BENCH_SCX_FIRST_H
#define EGANG_BENCH_SCX_FIRST_H

#include <stdint.h>
#include <stdio.h>

/* The index write alone. */
typedef struct scx_first_write {
	int reps, a, b;                /* writes; the two slots (a == b when
					  only one is populated) */
	uint64_t min, p50, p99, max;   /* ns, the open excluded */
} scx_first_write_t;

/* reps map updates alternating between the first two populated slots;
 * 0, or -1 + err_get() (no scheduler loaded, a build without SCX=1). */
int scx_first_write_cost(int reps, scx_first_write_t *w);
/* Its summary line: "scx switch: N index writes (...): min .. ns, median
 * .. ns, p99 .. ns, max .. ns". */
void scx_first_print_write(const scx_first_write_t *w, FILE *out);

/* Store to first transfer by one path. */
typedef struct scx_first {
	int reps, a, b, misses;              /* misses: no transfer in 200 ms */
	uint64_t write_p50;                  /* the write alone */
	uint64_t min, p50, p90, p99, max;    /* store to first transfer, ns */
} scx_first_t;

/* 2 * reps switches (reps per path) between two populated slots, with
 * `yielders` threads (0..64) in SCHED_EXT calling sched_yield in a loop so
 * that callbacks keep coming (0: rely on the load already there); out[0]
 * the store into the index page, out[1] the map update. 0, or -1 +
 * err_get() (also when a path saw no transfer at all). */
int scx_first_run(int reps, int yielders, scx_first_t out[2]);
/* Their summary lines, one per path: "scx store-to-first-transfer (PATH,
 * slots A<->B, Y yielders): N switches, M misses; write median .. ns; to
 * first transfer min .. ns, median, p90, p99, max". */
void scx_first_print(const scx_first_t f[2], int yielders, FILE *out);

#endif
