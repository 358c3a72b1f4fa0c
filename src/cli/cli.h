/* cli: the egang command. Every subcommand is `int cmd_X(int argc, char
 * **argv)` returning an exit code (base.h: EXIT_OK, EXIT_FAIL, EXIT_INPUT). */
#ifndef EGANG_CLI_H
#define EGANG_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/base.h"
#include "kernels/kernels.h"

int cmd_generate(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_burn(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_control(int argc, char **argv);
int cmd_scx(int argc, char **argv);
int cmd_grammar(int argc, char **argv);

/* ---- Option parsing (opt.c) ----------------------------------------------
 * A command describes its options in a table ending with CLI_END and calls
 *
 *	int rc;
 *	if (!cli_parse(&cmd, argc, argv, &rc))
 *		return rc;
 *
 * argv[0] is the command's name. -h/--help (prints cmd.help, rc 0) and
 * -q/--quiet (sets log_quiet) are always there. Every error is one line on
 * stderr and rc EXIT_INPUT: an unknown option, a missing or malformed value,
 * a number out of [min, max], a value not among the choices, a missing
 * required option, too few or too many operands. */
typedef enum cli_arg {
	CLI_FLAG,   /* bool *dst: true (false with .off) */
	CLI_STR,    /* const char **dst; empty refused unless .empty_ok */
	CLI_INT,    /* int64_t *dst in [min, max] (strtoll base 0) */
	CLI_FLOAT,  /* double *dst, finite, in [min, max] */
	CLI_CHOICE, /* int *dst: index of the value in .choices (NULL-ended) */
	CLI_LIST,   /* const char *dst[max], repeatable; *count values */
	CLI_CPUS,   /* cli_cpus_t *dst: resolved even when the flag is absent */
	CLI_ARG_COUNT
} cli_arg_t;

typedef struct cli_opt {
	const char *name;  /* long name without "--", or NULL */
	char short_name;   /* 0: long only; never 'h' or 'q' */
	cli_arg_t arg;
	void *dst;
	double min, max;   /* CLI_INT, CLI_FLOAT; CLI_LIST, CLI_CPUS: capacity */
	const char *const *choices; /* CLI_CHOICE */
	int *count;        /* CLI_LIST */
	bool required;
	bool off;          /* CLI_FLAG: store false (a --no-X flag) */
	bool empty_ok;     /* CLI_STR: accept "" */
	bool no_notice;    /* CLI_CPUS: the command runs no gang on the CPUs
			      (they size its library): no notice of those
			      left out or of NUMA (engine_cpus_parse) */
} cli_opt_t;
#define CLI_END {.arg = CLI_ARG_COUNT}
/* Table entries; extra designated fields may follow (.required = true). */
#define OPT_FLAG(l, s, d, ...) {.name = l, .short_name = s, .arg = CLI_FLAG, .dst = d, __VA_ARGS__}
#define OPT_STR(l, s, d, ...) {.name = l, .short_name = s, .arg = CLI_STR, .dst = d, __VA_ARGS__}
#define OPT_INT(l, s, d, lo, hi, ...) {.name = l, .short_name = s, .arg = CLI_INT, \
	.dst = d, .min = (double)(lo), .max = (double)(hi), __VA_ARGS__}
#define OPT_FLOAT(l, s, d, lo, hi, ...) {.name = l, .short_name = s, .arg = CLI_FLOAT, \
	.dst = d, .min = (lo), .max = (hi), __VA_ARGS__}
#define OPT_CHOICE(l, s, d, ch, ...) {.name = l, .short_name = s, .arg = CLI_CHOICE, \
	.dst = d, .choices = ch, __VA_ARGS__}
#define OPT_LIST(l, s, arr, cnt, ...) {.name = l, .short_name = s, .arg = CLI_LIST, \
	.dst = arr, .max = (double)EG_ARRAY_LEN(arr), .count = cnt, __VA_ARGS__}
#define OPT_CPUS(l, d, cap, ...) {.name = l, .arg = CLI_CPUS, .dst = d, \
	.max = (double)(cap), __VA_ARGS__}

/* --kv-type (generate, chat, serve, the benches that open a model): the
 * KV cache's elements (kernels.h kv_type_t; an int dst, 0 = f16). */
#define OPT_KV_TYPE(d) OPT_CHOICE("kv-type", 0, d, kv_type_names)
#define CLI_KV_TYPE_HELP                                                            \
	"      --kv-type T         KV cache elements: f16 (default), f32 or q8_0\n"   \
	"                          (llama.cpp's --cache-type-k/-v; q8_0 needs a\n"    \
	"                          head_dim that is a multiple of 32)\n"

/* --cores: the CPUs in slot order (engine_cpus_parse: the list's CPUs,
 * lowest first; with no list every allowed CPU, physical cores first). */
typedef struct cli_cpus {
	const char *list; /* as given, NULL when absent */
	int cpu[CPUMASK_MAX];
	int n;
} cli_cpus_t;

typedef struct cli_cmd {
	const char *name;  /* for messages: "generate", "bench decode" */
	const char *help;  /* the --help text */
	void (*help_more)(FILE *out); /* prints more of it after help, or NULL
					 (text a lower layer owns) */
	const cli_opt_t *opts;
	const char **operands; /* receives argv's operands, max_operands of them */
	int min_operands, max_operands;
	const char *operands_name; /* for "missing MODEL" */
	bool stop_at_operand;      /* options end at the first operand */
} cli_cmd_t;

/* false when the command must return *exit_code now (see above). */
bool cli_parse(const cli_cmd_t *cmd, int argc, char **argv, int *exit_code);

/* ---- Values (opt_value.c) ----
 * Strict number parsing for flags outside cli_parse: the whole string must
 * be a number in [min, max]; otherwise a one-line error naming the flag and
 * -1. */
int cli_int(const char *flag, const char *s, int64_t min, int64_t max,
	    int64_t *out);
int cli_float(const char *flag, const char *s, double min, double max,
	      double *out);

/* "1,2,3" as a new array of *count integers (the caller frees it), or
 * NULL after a one-line error naming the flag and the bad item (empty,
 * not a number, outside [0, max]). */
int32_t *cli_int_list(const char *flag, const char *s, int32_t max, int *count);
/* "1,2,4": at most cap strictly increasing integers in [min, max] into
 * out; the count, or -1 after a one-line error naming the flag (a value
 * out of range, too many, or not a list of increasing `what`). */
int cli_int_rising(const char *flag, const char *s, int64_t min, int64_t max,
		   int *out, int cap, const char *what);

/* A progress line on stderr when it is a terminal (and not --quiet). */
void cli_progress(void *user, uint64_t done, uint64_t total);

#endif
