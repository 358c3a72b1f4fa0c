/* cli: the egang command. Every subcommand is `int cmd_X(int argc, char
 * **argv)` returning an exit code (base.h: EXIT_OK, EXIT_FAIL, EXIT_INPUT). */
#ifndef EGANG_CLI_H
#define EGANG_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"

int cmd_generate(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_burn(int argc, char **argv);
int cmd_cosched(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_bench_serve(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_bench_switch(int argc, char **argv);
int cmd_bench_switching(int argc, char **argv);
int cmd_bench_membw(int argc, char **argv);
int cmd_bench_matvec(int argc, char **argv);
int cmd_control(int argc, char **argv);
int cmd_scx(int argc, char **argv);

/* Strict number parsing for flags: the whole string must be a number in
 * [min, max]; otherwise a one-line error naming the flag and -1. */
int cli_int(const char *flag, const char *s, int64_t min, int64_t max,
	    int64_t *out);
int cli_float(const char *flag, const char *s, double min, double max,
	      double *out);
/* -1 after a one-line error if argv[optind..] holds an operand the command
 * does not take; 0 otherwise. */
int cli_no_more_args(const char *cmd, int argc, char **argv);

/* One line for getopt's '?' (unknown option or missing argument; opterr
 * is 0 so getopt itself prints nothing); returns EXIT_INPUT. */
int cli_usage_error(const char *cmd, const char *arg);

/* Parses --cores: a CPU list, all of it inside the process's affinity
 * mask; fills cpus in slot order (the list's order, lowest first).
 * NULL list = every allowed CPU, physical cores first. Returns the count,
 * -1 with a message. */
int cli_cores(const char *list, int *cpus, int max);

/* A progress line on stderr when it is a terminal (and not --quiet). */
void cli_progress(void *user, uint64_t done, uint64_t total);

#endif
