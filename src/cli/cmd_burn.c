/* egang burn: a tenant that does fixed units of work and reports its rate
 * (the work itself: bench/burn.h). */
#include <stdio.h>

#include "bench/burn.h"
#include "cli/cli.h"

static const char burn_help[] =
	"usage: egang burn [--seconds S] [--report-ms MS] [--mode cpu|mem]\n"
	"                  [--threads N] [--cores LIST] [-q]\n"
	"\n"
	"A tenant for experiments: N threads doing fixed units of work (cpu: ~1 us\n"
	"of integer arithmetic; mem: 64 KiB of streaming reads) and reporting the\n"
	"rate every MS ms (to stdout, 'burn t=SECONDS units/s=RATE at_ns=NS', NS\n"
	"the period's end on CLOCK_MONOTONIC) and in total.\n"
	"\n"
	"  --seconds S     run time (default 10; 0 = until killed)\n"
	"  --report-ms MS  report period (default 1000; 0 = only the total)\n"
	"  --mode M        cpu (default) or mem\n"
	"  --threads N     worker threads (default 1)\n"
	"  --cores LIST    pin thread i to the i-th CPU of LIST (round robin)\n"
	"  -q, --quiet     only the total line\n";

static void on_report(void *user, double t_s, double units_s, uint64_t now_ns)
{
	(void)user;
	if (log_quiet)
		return;
	char line[128];
	burn_report_format(line, sizeof line, t_s, units_s, now_ns);
	printf("%s\n", line);
	fflush(stdout);
}

int cmd_burn(int argc, char **argv)
{
	double seconds = 10;
	int64_t report_ms = 1000, threads = 1;
	int mode = BURN_MODE_CPU;
	cli_cpus_t cpus = {0};
	const cli_opt_t opts[] = {
		OPT_FLOAT("seconds", 0, &seconds, 0, 1e7),
		OPT_INT("report-ms", 0, &report_ms, 0, 3600000),
		OPT_CHOICE("mode", 0, &mode, burn_mode_names),
		OPT_INT("threads", 0, &threads, 1, 1024),
		OPT_CPUS("cores", &cpus, CPUMASK_MAX),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "burn", .help = burn_help, .opts = opts};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	burn_config_t c = {
		.mode = (burn_mode_t)mode, .threads = (int)threads,
		.cpus = cpus.list ? cpus.cpu : NULL, .n_cpus = cpus.n,
		.seconds = seconds, .report_ms = report_ms, .report = on_report,
	};
	burn_result_t r;
	if (burn_run(&c, &r) < 0) {
		log_error("%s", err_get());
		return EXIT_FAIL;
	}
	printf("burn total: %llu units in %.3f s = %.0f units/s (%s, %lld thread%s)\n",
	       (unsigned long long)r.units, r.seconds, (double)r.units / r.seconds,
	       burn_mode_names[mode], (long long)threads, threads > 1 ? "s" : "");
	return EXIT_OK;
}
