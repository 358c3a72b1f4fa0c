/* egang bench coschedule: inference and CPU-bound tenants share the
 * machine (the experiment: bench/coschedule.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/coschedule.h"
#include "bench/plot.h"
#include "cli/cli.h"
#include "cli/cmd_bench.h"
#include "gang/gang.h"

static const char cosched_help[] =
	"usage: egang bench coschedule -m MODEL [-z TOK] [--tenants N]\n"
	"         [--duty 0,25,50,75,100] [--gen-tokens 32] [--seconds S]\n"
	"         [--mode cpu|mem] [--cores LIST] [--out DIR] [--knee-tolerance T]\n"
	"         [--no-plot]\n"
	"\n"
	"Inference shares the machine with N CPU-bound tenants (default: one per\n"
	"core). Every static split K = 1..n-1, elastic (polite and preempt), the\n"
	"knee-capped elastic gang and a fixed pool run at each duty; writes\n"
	"DIR/coschedule.csv, DIR/width-ARM-DUTY.csv and DIR/coschedule.png\n"
	"(default DIR: build/coschedule). Takes about (n + 3) x duties x S seconds.\n"
	"The knee arm caps the gang at the widest width whose core time per token\n"
	"(width / tok/s, measured online) is within 1/T of the cheapest width's\n"
	"(default T 0.95). The figure is drawn by gnuplot from the CSV\n"
	"(tools/plot/coschedule.gp, copied to DIR/coschedule.gp); without gnuplot\n"
	"the run exits 1 after writing the CSV. --no-plot writes the script only\n"
	"(draw later: gnuplot -c DIR/coschedule.gp DIR).\n";

/* "0,25,100": percentages; the count, or -1 after a one-line error. */
static int parse_duties(const char *s, int *duty, int max)
{
	int n = 0;
	char *copy = strdup(s), *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int64_t v;
		if (n == max || cli_int("--duty", t, 0, 100, &v) < 0) {
			if (n == max)
				log_error("--duty: at most %d values", max);
			free(copy);
			return -1;
		}
		duty[n++] = (int)v;
	}
	free(copy);
	if (!n)
		log_error("--duty: empty list");
	return n ? n : -1;
}

static void print_row(void *user, int arm, int duty, const cosched_result_t *r)
{
	const cosched_t *cs = user;
	printf("%-16s %4d %10.2f %10.1f %10.1f %12.0f %6.1f%% %6.2f %9llu %8llu\n",
	       cosched_arm_name(cs, arm), duty, r->tok_s, r->lat_p50_ms, r->lat_p99_ms,
	       r->tenant_units_s, 100 * r->tenant_frac, r->mean_width,
	       (unsigned long long)r->preempted_tokens, (unsigned long long)r->mismatches);
	fflush(stdout);
}

/* The sweep on an open experiment, its report and its figure; an exit
 * code. */
static int sweep(cosched_t *cs, const cosched_config_t *c, const int *duty,
		 int n_duty, bool no_plot)
{
	cosched_solo_t solo;
	cosched_solo(cs, &solo);
	printf("solo: inference %.2f tok/s on %d cores (a %d-token generation takes "
	       "%.1f ms); %d tenants alone %.0f units/s\n", solo.tok_s, c->n_cpus,
	       c->gen_tokens, solo.gen_ms, cosched_n_tenants(cs), solo.tenant_units_s);
	printf("%-16s %4s %10s %10s %10s %12s %7s %6s %9s %8s\n", "policy", "duty",
	       "tok/s", "p50 ms", "p99 ms", "tenant u/s", "tenant%", "width",
	       "preempted", "mismatch");
	if (cosched_sweep(cs, duty, n_duty, print_row, cs) < 0) {
		log_error("%s", err_get());
		return EXIT_FAIL;
	}
	char line[1024];
	for (int d = 0; d < n_duty; d++)
		for (int a = 0; a < cosched_n_arms(cs); a++)
			if (cosched_verdict(cs, d, a, line, sizeof line))
				printf("%s\n", line);
	int drawn = bench_plot_draw(BENCH_PLOT_COSCHEDULE, c->out, NULL, !no_plot);
	if (drawn < 0)
		log_error("bench coschedule: %s", err_get());
	uint64_t mismatches = cosched_mismatches(cs);
	printf("bench coschedule: %s, %d cores, %d tenants, logits mismatches %llu; "
	       "wrote %s/coschedule.csv", cosched_model_name(cs), c->n_cpus,
	       cosched_n_tenants(cs), (unsigned long long)mismatches, c->out);
	if (drawn == 0)
		printf(" and %s/coschedule.%s", c->out, no_plot ? "gp" : "png");
	printf("\n");
	return mismatches || drawn < 0 ? EXIT_FAIL : EXIT_OK;
}

int cmd_bench_coschedule(int argc, char **argv)
{
	const char *model = NULL, *tok = NULL, *duty_s = "0,25,50,75,100";
	const char *out = "build/coschedule";
	int64_t tenants = 0, gen_tokens = 32;
	double seconds = 4, knee_tol = 0.95;
	int mode = BURN_MODE_CPU;
	bool no_plot = false;
	cli_cpus_t cpus = {0};
	const cli_opt_t opts[] = {
		OPT_STR("model", 'm', &model, .required = true),
		OPT_STR("tokenizer", 'z', &tok),
		OPT_INT("tenants", 0, &tenants, 0, COSCHED_MAX_TENANTS),
		OPT_STR("duty", 0, &duty_s),
		OPT_INT("gen-tokens", 0, &gen_tokens, 1, 4096),
		OPT_FLOAT("seconds", 0, &seconds, 0.2, 3600),
		OPT_CHOICE("mode", 0, &mode, burn_mode_names),
		OPT_CPUS("cores", &cpus, GANG_MAX_SLOTS),
		OPT_STR("out", 'o', &out),
		OPT_FLOAT("knee-tolerance", 0, &knee_tol, 0.1, 1),
		OPT_FLAG("no-plot", 0, &no_plot),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "bench coschedule", .help = cosched_help,
			       .opts = opts};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	int duty[COSCHED_MAX_DUTIES];
	int n_duty = parse_duties(duty_s, duty, COSCHED_MAX_DUTIES);
	if (n_duty < 0)
		return EXIT_INPUT;
	cosched_config_t c = {.model = model, .tok = tok, .cpus = cpus.cpu,
			      .n_cpus = cpus.n, .gen_tokens = (int)gen_tokens,
			      .n_tenants = (int)tenants, .seconds = seconds,
			      .mode = (burn_mode_t)mode, .out = out,
			      .knee_tolerance = knee_tol};
	cosched_t *cs = cosched_open(&c, &status);
	if (!cs) {
		log_error("%s", err_get());
		return status;
	}
	status = sweep(cs, &c, duty, n_duty, no_plot);
	cosched_close(cs);
	return status;
}
