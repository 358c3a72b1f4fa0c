/* egang generate's parts shared by its two files: the options
 * (cmd_generate.c parses them) and the run (cmd_generate_run.c). */
#ifndef EGANG_CLI_CMD_GENERATE_H
#define EGANG_CLI_CMD_GENERATE_H

#include <stdio.h>

#include "cli/cli.h"
#include "engine/engine_open.h"
#include "gang/membership.h"
#include "model/grammar.h"

/* What one generation writes to besides stdout (--trace), and its engine. */
typedef struct run_ctx {
	engine_t *e;
	membership_t ms;
	FILE *trace;
	uint64_t last_ns;
} run_ctx_t;

typedef struct gen_opts {
	const char *model, *tok, *prompt, *prompt_ids, *hash, *dump, *membership, *trace, *ids,
		*control, *policies, *system;
	int64_t n_predict, top_k, seed, ctx;
	double temp, top_p;
	int sampler, kv, tmpl; /* tmpl: in chat_names, -1 none */
	bool no_echo, chat;
	const char *stops[8];
	int n_stop;
	cli_cpus_t cpus;
	int32_t *id_list; int n_ids; /* --prompt-ids, parsed */
	int32_t *chat_ids; int64_t n_chat_ids; /* --chat: the templated prompt */
	const char *grammar_path;   /* --grammar */
	const char *schema_path;    /* --json-schema */
	grammar_t *grammar;         /* its parsed grammar, or NULL */
} gen_opts_t;

/* Runs the generation on rc->e (open) with o's options, the text to stdout,
 * the speed to stderr; an exit code. */
int generate_run(const gen_opts_t *o, run_ctx_t *rc, FILE *hash, FILE *dump);

#endif
