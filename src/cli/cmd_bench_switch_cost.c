/* egang bench switch-cost (alias: switch): what a policy switch costs
 * (the experiment: bench/switch_cost.h). One summary line "bench switch:
 * ...". */
#include <stdio.h>

#include "bench/switch_cost.h"
#include "cli/cli.h"
#include "cli/cmd_bench.h"
#include "gang/gang.h"

static const char switch_help[] =
	"usage: egang bench switch-cost [options]   (or: egang bench switch)\n"
	"\n"
	"Switches the policy index N times during decoding; reports the index\n"
	"write (ns) and write-to-in-force (tokens, us): median, p99, max.\n"
	"\n"
	"  -m, --model FILE      model (default: a synthetic stories260k shape,\n"
	"                        2 layers, written to a temporary folder)\n"
	"      --cores LIST      gang CPUs (default: all allowed)\n"
	"      --switches N      index writes (default 200)\n"
	"      --control PATH    control word (default: a temporary file, so a\n"
	"                        running server is not disturbed)\n"
	"  -q, --quiet           only the summary line\n"
	"  -h, --help            this text\n";

int cmd_bench_switch_cost(int argc, char **argv)
{
	const char *model = NULL, *control = NULL;
	int64_t switches = 200;
	cli_cpus_t cpus = {0};
	const cli_opt_t opts[] = {
		OPT_STR("model", 'm', &model),
		OPT_CPUS("cores", &cpus, GANG_MAX_SLOTS),
		OPT_INT("switches", 0, &switches, 1, 1000000),
		OPT_STR("control", 0, &control),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "bench switch-cost", .help = switch_help,
			       .opts = opts};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	switch_cost_config_t c = {.model = model, .control = control, .cpus = cpus.cpu,
				  .n_cpus = cpus.n, .switches = (int)switches};
	switch_cost_result_t r;
	if (switch_cost_run(&c, &r, &status) < 0) {
		log_error("%s", err_get());
		return status;
	}
	printf("bench switch: switches %d cores %d policies %d tok_s %.0f "
	       "store_ns_amortized %.1f clock_ns %llu write_ns p50 %llu p99 %llu max %llu "
	       "in_force_tokens p50 %llu p99 %llu max %llu in_force_us p50 "
	       "%.1f p99 %.1f max %.1f\n",
	       r.n, cpus.n, r.n_policies, r.tok_s, r.store_ns,
	       (unsigned long long)r.clock_ns, (unsigned long long)r.write_ns.p50,
	       (unsigned long long)r.write_ns.p99, (unsigned long long)r.write_ns.max,
	       (unsigned long long)r.in_force_tokens.p50,
	       (unsigned long long)r.in_force_tokens.p99,
	       (unsigned long long)r.in_force_tokens.max,
	       (double)r.in_force_ns.p50 / 1e3, (double)r.in_force_ns.p99 / 1e3,
	       (double)r.in_force_ns.max / 1e3);
	fflush(stdout);
	if (!log_quiet)
		fprintf(stderr, "(write_ns includes one clock read, clock_ns; "
				"in force = applied at a token boundary by the "
				"leader, tokens = boundaries from the write)\n");
	return EXIT_OK;
}
