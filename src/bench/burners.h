/* burners: the switching experiment's antagonists and their monitor.
 *
 * burners_start runs per_core `egang burn` processes on each of the CPUs
 * given (one CPU each, `--cores C`; in SCHED_EXT through `egang scx exec`
 * with scx), each reporting its rate every 50 ms on a pipe (bench/burn.h's
 * report line, stamped with the monotonic clock). A monitor thread reads
 * the pipes and spreads each report's units over 50 ms buckets on the
 * bench's clock (burners_add), so that burners_window can say how much
 * work the antagonists did in any interval; with units_path set it also
 * rewrites that file with the running total every 20 ms (what `egang
 * control --bandit --tenant-units` reads).
 *
 * Synchronization: between burners_start and burners_stop only the
 * monitor touches the buckets and the total; the caller reads them after
 * burners_stop (the join orders them). */
#ifndef EGANG_BENCH_BURNERS_H
#define EGANG_BENCH_BURNERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BURNERS_MAX 256
#define BURNERS_BUCKET_NS 50000000ull /* 50 ms */

typedef struct burners {
	int n;
	pid_t pid[BURNERS_MAX];
	int fd[BURNERS_MAX];        /* read end of each stdout pipe, -1 once closed */
	char buf[BURNERS_MAX][256]; /* a partial line */
	size_t len[BURNERS_MAX];
	double last_t[BURNERS_MAX]; /* the burner's own clock at its last report */
	uint64_t t_start;           /* bucket 0 starts here */
	double *bucket;             /* (n_bucket) units per bucket */
	size_t n_bucket;
	double total;               /* every unit reported */
	const char *units_path;     /* rewritten with the total, or NULL */
	_Atomic bool stop;
	bool monitor;               /* the monitor thread runs */
	pthread_t thread;
} burners_t;

/* Starts per_core burners on each of cpus[0..n_cpus) (BURNERS_MAX at most)
 * and the monitor, with buckets for max_s seconds from now; b->units_path
 * is kept. 0, or -1 + err_get() with the burners already started still
 * running: burners_stop and burners_free end them either way. */
int burners_start(burners_t *b, const int *cpus, int n_cpus, int per_core,
		  bool scx, double max_s);

/* Ends the burners, then the monitor once it has read every report they
 * wrote (the last ones cover the baseline after the load). */
void burners_stop(burners_t *b);

/* Frees the buckets (after burners_stop). */
void burners_free(burners_t *b);

/* Adds units done over [a, e) (ns, bench clock) to the total and spreads
 * them evenly over the buckets of [max(a, t_start), e); the share that
 * falls past the last bucket is in the total only. */
void burners_add(burners_t *b, uint64_t a, uint64_t e, double units);

/* Units in [t0, t1) (ns, bench clock); a bucket cut by an edge counts by
 * the fraction inside. */
double burners_window(const burners_t *b, uint64_t t0, uint64_t t1);

/* Writes the total to units_path (through a temporary file and a rename,
 * so a reader never sees half a number). */
void burners_write_units(const burners_t *b);

#endif
