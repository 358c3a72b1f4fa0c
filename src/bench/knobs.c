/* bench knobs (knobs.h). */
#include "bench/knobs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base.h"
#include "base/stats.h"
#include "policy/control.h"

/* sched_setattr(2)'s argument, first version (no glibc wrapper) */
struct knob_attr {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
};

typedef int (*knob_fn)(void *ctx, int i);

/* One knob: reps timed calls of fn(ctx, i); its percentiles into r. */
static void time_knob(knob_result_t *r, int reps, knob_fn fn, void *ctx)
{
	uint64_t *ns = calloc((size_t)reps, sizeof *ns);
	if (!ns) {
		snprintf(r->why, sizeof r->why, "calloc failed");
		return;
	}
	for (int i = 0; i < reps; i++) {
		uint64_t t0 = time_now_ns();
		int rc = fn(ctx, i);
		uint64_t t1 = time_now_ns();
		if (rc < 0) {
			snprintf(r->why, sizeof r->why, "%s", strerror(errno));
			free(ns);
			return;
		}
		ns[i] = t1 - t0;
	}
	r->ok = true;
	r->reps = reps;
	r->p50 = stats_quantile_u64(ns, (size_t)reps, 0.5); /* sorts ns */
	r->p99 = stats_quantile_u64(ns, (size_t)reps, 0.99);
	r->min = ns[0];
	r->max = ns[reps - 1];
	free(ns);
}

static int do_store(void *ctx, int i)
{
	control_write_index(ctx, (uint32_t)(i & 1));
	return 0;
}

static int do_setpriority(void *ctx, int i)
{
	(void)ctx;
	return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), i & 1);
}

static int do_attr_nice(void *ctx, int i)
{
	(void)ctx;
	struct knob_attr a = {.size = sizeof a, .sched_nice = i & 1};
	return (int)syscall(SYS_sched_setattr, 0, &a, 0);
}

static int do_attr_slice(void *ctx, int i)
{
	(void)ctx;
	struct knob_attr a = {.size = sizeof a,
			      .sched_runtime = (i & 1 ? 4 : 3) * 1000000ull};
	return (int)syscall(SYS_sched_setattr, 0, &a, 0);
}

typedef struct file_knob {
	const char *path;
	long v0;
} file_knob_t;

/* open + write + close, as a tool setting a knob does */
static int do_file(void *ctx, int i)
{
	file_knob_t *k = ctx;
	char buf[32];
	int n = snprintf(buf, sizeof buf, "%ld\n", k->v0 + (i & 1));
	int fd = open(k->path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, buf, (size_t)n);
	int e = errno;
	close(fd);
	errno = e;
	return w == n ? 0 : -1;
}

static void file_knob(knob_result_t *r, int reps, const char *path)
{
	FILE *f = fopen(path, "r");
	file_knob_t k = {.path = path};
	if (!f || fscanf(f, "%ld", &k.v0) != 1) {
		snprintf(r->why, sizeof r->why, "%s: %s", path,
			 f ? "unreadable" : strerror(errno));
		if (f)
			fclose(f);
		return;
	}
	fclose(f);
	time_knob(r, reps, do_file, &k);
	do_file(&k, 0); /* restore: the value read */
}

int knobs_run(int reps, const char *dir, knob_result_t out[KNOBS_N])
{
	static const char *const names[KNOBS_N] = {
		"index store", "setpriority nice", "sched_setattr nice",
		"sched_setattr slice", "sysctl write", "debugfs write"};
	memset(out, 0, sizeof(knob_result_t) * KNOBS_N);
	for (int i = 0; i < KNOBS_N; i++)
		out[i].name = names[i];
	if (reps < 1)
		return err_set("bench knobs: %d reps", reps);
	char path[512];
	snprintf(path, sizeof path, "%s/egang-knobs-%d", dir, (int)getpid());
	control_t *c = control_open(path, true);
	if (!c)
		return -1;
	/* the bench's own control file: never the scheduler's page */
	c->index = &c->w->index;
	time_knob(&out[0], reps, do_store, c);
	control_close(c);
	unlink(path);
	int nice0 = getpriority(PRIO_PROCESS, 0);
	time_knob(&out[1], reps, do_setpriority, NULL);
	time_knob(&out[2], reps, do_attr_nice, NULL);
	time_knob(&out[3], reps, do_attr_slice, NULL);
	struct knob_attr a = {.size = sizeof a, .sched_nice = nice0};
	syscall(SYS_sched_setattr, 0, &a, 0); /* nice and the default slice */
	file_knob(&out[4], reps, "/proc/sys/kernel/sched_rr_timeslice_ms");
	file_knob(&out[5], reps, "/sys/kernel/debug/sched/base_slice_ns");
	return 0;
}
