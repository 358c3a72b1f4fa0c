/* burn: the tenant of the experiments. Fixed units of work (cpu: ~1 us of
 * dependent integer arithmetic in registers; mem: 64 KiB of streaming reads
 * over a buffer larger than the caches), counted so a rate can be read.
 * `egang burn` runs burn_run; the co-scheduling experiment runs burn_loop in
 * forked processes; the switching experiment runs `egang burn` itself. */
#ifndef EGANG_BENCH_BURN_H
#define EGANG_BENCH_BURN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum burn_mode {
	BURN_MODE_CPU,
	BURN_MODE_MEM,
	BURN_MODE_COUNT
} burn_mode_t;

/* "cpu", "mem", NULL: the modes by name, in burn_mode_t order. */
extern const char *const burn_mode_names[BURN_MODE_COUNT + 1];

/* Works until *stop, adding completed units to *units. */
void burn_loop(burn_mode_t mode, _Atomic uint64_t *units, _Atomic bool *stop);
/* One unit of CPU work from x; returns the next x. */
uint64_t burn_cpu_unit(uint64_t x);
/* One unit of memory work: 64 KiB of reads from buf (len bytes, a multiple
 * of 64 KiB) from *pos, which advances. */
uint64_t burn_mem_unit(const uint64_t *buf, size_t len, size_t *pos);

typedef struct burn_config {
	burn_mode_t mode;
	int threads;       /* >= 1 */
	const int *cpus;   /* thread i pinned to cpus[i % n_cpus]; NULL: unpinned */
	int n_cpus;
	double seconds;    /* 0: until the process is killed */
	int64_t report_ms; /* 0: no periodic reports */
	/* called every report_ms with the seconds since the start, the rate
	 * over the period since the last report (units/s) and the time it
	 * ends (time_now_ns, CLOCK_MONOTONIC: the same clock in every process,
	 * so a reader places the units by it, not by when the line arrives);
	 * may be NULL. A late report (the reporter descheduled past its
	 * period) covers the longer period; the next one is due a period
	 * after it. */
	void (*report)(void *user, double t_s, double units_s, uint64_t now_ns);
	void *user;
} burn_config_t;

typedef struct burn_result {
	uint64_t units;
	double seconds;
} burn_result_t;

/* The report line of `egang burn` ("burn t=T units/s=R at_ns=NS") and its
 * parser: 0 and the fields, -1 when line is not one (at_ns 0 when a line
 * lacks it). */
int burn_report_format(char *buf, size_t n, double t_s, double units_s,
		       uint64_t now_ns);
int burn_report_parse(const char *line, double *t_s, double *units_s,
		      uint64_t *now_ns);

/* Runs the threads for c->seconds; -1 + err_get() when a thread cannot
 * start (the ones started are stopped). */
int burn_run(const burn_config_t *c, burn_result_t *r);

#endif
