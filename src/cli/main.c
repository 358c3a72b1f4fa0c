/* egang: command-line entry point. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "kernels/kernels.h"
#include "policy/control.h"
#include "scx/scx.h"

typedef struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} command_t;

static const command_t commands[] = {
	{"generate", cmd_generate, "generate text from a prompt"},
	{"info", cmd_info, "describe a model file"},
	{"tokenize", cmd_tokenize, "token ids of each input line (as llama-tokenize)"},
	{"grammar", cmd_grammar, "check a GBNF grammar; compile a JSON schema to GBNF"},
	{"chat", cmd_chat, "talk with a model in the terminal (its chat template)"},
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
	/* with egang's sched_ext scheduler loaded, a control word's index is
	 * the scheduler's page: one store switches both (doc/ARCHITECTURE.md
	 * "The sched_ext backend") */
	if (scx_built())
		control_set_index_provider(scx_index_page);
	for (size_t i = 0; i < EG_ARRAY_LEN(commands); i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		if (kernels_check_env() < 0) { /* EGANG_ISA refused */
			log_error("%s", err_get());
			return EXIT_INPUT;
		}
		return commands[i].run(argc - 1, argv + 1);
	}
	log_error("unknown command '%s' (see `egang --help`)", argv[1]);
	return EXIT_INPUT;
}
