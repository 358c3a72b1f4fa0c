/* egang bench knobs: a scalar knob's cost against the index store
 * (bench/knobs.h; AKTS 4.1). One line per knob. */
#include <stdio.h>
#include <stdlib.h>

#include "bench/knobs.h"
#include "cli/cli.h"
#include "cli/cmd_bench.h"

static const char knobs_help[] =
	"usage: egang bench knobs [options]\n"
	"\n"
	"Times, one call at a time, the policy index store (a switch) against\n"
	"scalar scheduler knobs: setpriority and sched_setattr of the calling\n"
	"thread's nice, sched_setattr of its slice (sched_runtime), a sysctl\n"
	"write (/proc/sys/kernel/sched_rr_timeslice_ms) and a debugfs write\n"
	"(/sys/kernel/debug/sched/base_slice_ns) where present and permitted.\n"
	"Each value is restored afterwards. One line per knob: median, p99,\n"
	"min, max in ns, or why it could not run.\n"
	"\n"
	"      --reps N     calls per knob (default 20000)\n"
	"  -h, --help       this text\n";

int cmd_bench_knobs(int argc, char **argv)
{
	int64_t reps = 20000;
	const cli_opt_t opts[] = {
		OPT_INT("reps", 0, &reps, 1, 10000000),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "bench knobs", .help = knobs_help, .opts = opts};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	const char *dir = getenv("TMPDIR");
	knob_result_t r[KNOBS_N];
	if (knobs_run((int)reps, dir && *dir ? dir : "/tmp", r) < 0) {
		log_error("bench knobs: %s", err_get());
		return EXIT_FAIL;
	}
	for (int i = 0; i < KNOBS_N; i++) {
		if (r[i].ok)
			printf("knob %-20s reps=%d median_ns=%llu p99_ns=%llu min_ns=%llu "
			       "max_ns=%llu\n", r[i].name, r[i].reps,
			       (unsigned long long)r[i].p50, (unsigned long long)r[i].p99,
			       (unsigned long long)r[i].min, (unsigned long long)r[i].max);
		else
			printf("knob %-20s unavailable: %s\n", r[i].name, r[i].why);
	}
	return EXIT_OK;
}
