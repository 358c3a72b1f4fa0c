/* egang: command-line entry point. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

typedef struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} command_t;

static const command_t commands[] = {
	{"generate", cmd_generate, "generate text from a prompt"},
	{"info", cmd_info, "describe a model file"},
	{"synth", cmd_synth, "write a random-weight GGUF of a real model shape"},
	{"quantize", cmd_quantize, "quantize a GGUF (a type or a llama-quantize preset)"},
	{"convert", cmd_convert, "convert a llama2.c checkpoint to GGUF"},
	{"bench", cmd_bench, "benchmarks: protocol, width, overhead"},
	{"serve", cmd_serve, "OpenAI-compatible HTTP server on the elastic gang"},
	{"burn", cmd_burn, "a CPU- or memory-bound tenant that reports its rate"},
	{"policy", cmd_policy, "policy library: list, show, set the index in force"},
	{"control", cmd_control, "a controller: oracle, bandit or agent writes the index"},
	{"scx", cmd_scx, "sched_ext backend: load, status, set N, unload the BPF policies"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: egang COMMAND [OPTIONS]\n\n"
		   "egang runs LLM decoding on the CPU as an elastic gang of "
		   "worker threads\nthat lends cores to other processes "
		   "between tokens.\n\ncommands:\n");
	for (size_t i = 0; i < EG_ARRAY_LEN(commands); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n`egang COMMAND --help` lists a command's options.\n"
		   "exit codes: 0 success, 1 runtime failure, 2 bad input "
		   "(flag, file, request).\n");
}

int cli_int(const char *flag, const char *s, int64_t min, int64_t max,
	    int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (!*s || *end || errno) {
		log_error("%s: '%s' is not an integer", flag, s);
		return -1;
	}
	if (v < min || v > max) {
		log_error("%s: %lld is out of range [%lld, %lld]", flag, v,
			  (long long)min, (long long)max);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_float(const char *flag, const char *s, double min, double max,
	      double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v)) {
		log_error("%s: '%s' is not a number", flag, s);
		return -1;
	}
	if (v < min || v > max) {
		log_error("%s: %g is out of range [%g, %g]", flag, v, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_no_more_args(const char *cmd, int argc, char **argv)
{
	if (optind < argc) {
		log_error("%s: unexpected argument '%s'", cmd, argv[optind]);
		return -1;
	}
	return 0;
}

int cli_usage_error(const char *cmd, const char *arg)
{
	log_error("%s: unknown option or missing value in '%s' (see `egang "
		  "%s --help`)", cmd, arg, cmd);
	return EXIT_INPUT;
}

int cli_cores(const char *list, int *cpus, int max)
{
	int all[CPUMASK_MAX];
	int n_all = topo_cores(all, CPUMASK_MAX);
	if (n_all < 0)
		return -1;
	if (!list) {
		int n = n_all < max ? n_all : max;
		memcpy(cpus, all, (size_t)n * sizeof *cpus);
		return n;
	}
	cpumask_t want, allowed = 0;
	if (cpumask_parse(list, &want) < 0)
		return err_wrap("--cores");
	for (int i = 0; i < n_all; i++)
		allowed |= 1ull << all[i];
	if (want & ~allowed) {
		char a[128], b[128];
		return err_set("--cores %s: CPUs %s are not in this process's "
			       "affinity mask (%s)", list,
			       cpumask_format(want & ~allowed, a, sizeof a),
			       cpumask_format(allowed, b, sizeof b));
	}
	int n = 0;
	for (int c = 0; c < CPUMASK_MAX; c++)
		if (want >> c & 1) {
			if (n == max)
				return err_set("--cores %s: at most %d CPUs", list, max);
			cpus[n++] = c;
		}
	return n;
}

void cli_progress(void *user, uint64_t done, uint64_t total)
{
	(void)user;
	static uint64_t last;
	if (log_quiet || !isatty(2))
		return;
	uint64_t now = time_now_ns();
	if (done < total && now - last < 100000000ull)
		return;
	last = now;
	fprintf(stderr, "\r%6.1f%%  %.2f / %.2f GB", total ? 100.0 * (double)done / (double)total : 100.0,
		(double)done / 1e9, (double)total / 1e9);
	if (done >= total)
		fputc('\n', stderr);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		log_error("missing COMMAND (see `egang --help`)");
		return EXIT_INPUT;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return EXIT_OK;
	}
	for (size_t i = 0; i < EG_ARRAY_LEN(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	log_error("unknown command '%s' (see `egang --help`)", argv[1]);
	return EXIT_INPUT;
}
