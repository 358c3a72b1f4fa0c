/* bench knobs: what a scalar scheduler knob costs against the policy
 * index store (AKTS section 4.1's baselines, on the host).
 *
 * Each knob is set reps times, alternating between two values so that
 * every call changes something, and timed one call at a time
 * (time_now_ns() around it); the value in force before is restored:
 *   index store     one release store into a control word's index (the
 *                   switch, control_write_index) on a private file
 *   setpriority     the nice of the calling thread, 0 <-> 1
 *   sched_setattr   nice          the same through sched_setattr(2)
 *   sched_setattr   slice         SCHED_OTHER sched_runtime (EEVDF's
 *                                 custom slice, Linux 6.6+) 3 <-> 4 ms
 *   sysctl write    /proc/sys/kernel/sched_rr_timeslice_ms, open + write
 *                   + close (root only); the value read first, then it and
 *                   value + 1 alternately
 *   debugfs write   /sys/kernel/debug/sched/base_slice_ns, likewise
 * A knob the kernel or the permissions refuse is reported as such
 * (`ok` false, `why` set), never faked. */
#ifndef EGANG_BENCH_KNOBS_H
#define EGANG_BENCH_KNOBS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct knob_result {
	const char *name;
	bool ok;
	char why[96];
	int reps;
	uint64_t p50, p99, min, max; /* ns per call */
} knob_result_t;

#define KNOBS_N 6

/* Runs every knob (reps calls each) with the control file at dir/...;
 * 0, or -1 + err_get() when nothing could run. */
int knobs_run(int reps, const char *dir, knob_result_t out[KNOBS_N]);

#endif
