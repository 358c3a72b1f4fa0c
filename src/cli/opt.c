/* cli option parsing: one table per command instead of a getopt loop each.
 *
 * cli_parse builds getopt_long's tables from the command's cli_opt_t array,
 * converts and range-checks every value into its destination, and answers
 * --help, --quiet, unknown options, missing values, missing required
 * options and surplus operands with one line each; the values themselves
 * go through the strict parsers of opt_value.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "engine/engine_open.h"

enum { OPT_MAX = 64, LONG_BASE = 256 };

/* The flag for messages: "--name", else "-x". */
static void flag_name(const cli_opt_t *o, char *buf, size_t cap)
{
	if (o->name)
		snprintf(buf, cap, "--%s", o->name);
	else
		snprintf(buf, cap, "-%c", o->short_name);
}

/* Stores one value; -1 after a one-line message naming the flag as
 * spelled (`spelled`: the argv word it came from). */
static int store(const cli_opt_t *o, const char *spelled, const char *val)
{
	char flag[64];
	if (spelled[0] == '-' && spelled[1] && spelled[1] != '-' && o->short_name)
		snprintf(flag, sizeof flag, "-%c", o->short_name);
	else
		flag_name(o, flag, sizeof flag);
	switch (o->arg) {
	case CLI_FLAG:
		*(bool *)o->dst = !o->off;
		return 0;
	case CLI_STR:
		if (!o->empty_ok && !*val) {
			log_error("%s: the value is empty", flag);
			return -1;
		}
		*(const char **)o->dst = val;
		return 0;
	case CLI_INT: {
		/* the bounds are doubles in the table: saturate, since
		 * (int64_t)(double)INT64_MAX would overflow */
		int64_t lo = o->min <= (double)INT64_MIN ? INT64_MIN : (int64_t)o->min;
		int64_t hi = o->max >= (double)INT64_MAX ? INT64_MAX : (int64_t)o->max;
		return cli_int(flag, val, lo, hi, (int64_t *)o->dst);
	}
	case CLI_FLOAT:
		return cli_float(flag, val, o->min, o->max, (double *)o->dst);
	case CLI_CHOICE:
		for (int i = 0; o->choices[i]; i++)
			if (!strcmp(val, o->choices[i])) {
				*(int *)o->dst = i;
				return 0;
			}
		{
			char list[256] = "";
			for (int i = 0; o->choices[i]; i++)
				snprintf(list + strlen(list), sizeof list - strlen(list),
					 "%s%s", i ? ", " : "", o->choices[i]);
			log_error("%s: '%s' is not one of %s", flag, val, list);
		}
		return -1;
	case CLI_LIST: {
		int *n = o->count;
		if (*n >= (int)o->max || !*val) {
			log_error("%s: at most %d non-empty values", flag, (int)o->max);
			return -1;
		}
		((const char **)o->dst)[(*n)++] = val;
		return 0;
	}
	case CLI_CPUS:
		((cli_cpus_t *)o->dst)->list = val;
		return 0;
	case CLI_ARG_COUNT:
		break;
	}
	return -1;
}

/* After the options: required ones given, CPU lists resolved. */
static int finish(const cli_cmd_t *c, const bool *seen)
{
	for (int i = 0; c->opts[i].arg != CLI_ARG_COUNT; i++) {
		const cli_opt_t *o = &c->opts[i];
		if (o->required && !seen[i]) {
			char flag[80];
			if (o->name && o->short_name)
				snprintf(flag, sizeof flag, "-%c/--%s", o->short_name,
					 o->name);
			else
				flag_name(o, flag, sizeof flag);
			log_error("%s: %s is required (see `egang %s --help`)",
				  c->name, flag, c->name);
			return -1;
		}
		if (o->arg == CLI_CPUS) {
			cli_cpus_t *cc = o->dst;
			int max = o->max > 0 && o->max < CPUMASK_MAX ? (int)o->max
								     : CPUMASK_MAX;
			cc->n = engine_cpus_parse(cc->list, cc->cpu, max, !o->no_notice);
			if (cc->n < 0) {
				log_error("%s", err_get());
				return -1;
			}
		}
	}
	return 0;
}

bool cli_parse(const cli_cmd_t *c, int argc, char **argv, int *exit_code)
{
	struct option lo[OPT_MAX + 3];
	char shorts[3 * OPT_MAX + 8] = "+hq"; /* '+': stop at the first operand */
	bool seen[OPT_MAX] = {0};
	int n = 0, nl = 0;
	*exit_code = EXIT_INPUT;
	for (; c->opts[n].arg != CLI_ARG_COUNT; n++) {
		const cli_opt_t *o = &c->opts[n];
		/* a table bug, not user input */
		if (n == OPT_MAX || o->short_name == 'h' || o->short_name == 'q' ||
		    (!o->name && !o->short_name)) {
			log_error("%s: bad option table (entry %d)", c->name, n);
			*exit_code = EXIT_FAIL;
			return false;
		}
		bool has_arg = o->arg != CLI_FLAG;
		if (o->name)
			lo[nl++] = (struct option){o->name,
				has_arg ? required_argument : no_argument, 0,
				o->short_name ? o->short_name : LONG_BASE + n};
		if (o->short_name) {
			size_t k = strlen(shorts);
			shorts[k++] = o->short_name;
			if (has_arg)
				shorts[k++] = ':';
			shorts[k] = 0;
		}
	}
	lo[nl++] = (struct option){"help", no_argument, 0, 'h'};
	lo[nl++] = (struct option){"quiet", no_argument, 0, 'q'};
	lo[nl] = (struct option){0, 0, 0, 0};
	if (!c->stop_at_operand) /* GNU order: options and operands mixed */
		memmove(shorts, shorts + 1, strlen(shorts));
	optind = 1;
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		if (ch == 'h') {
			fputs(c->help, stdout);
			if (c->help_more)
				c->help_more(stdout);
			*exit_code = EXIT_OK;
			return false;
		}
		if (ch == 'q') {
			log_quiet = true;
			continue;
		}
		int i = -1;
		if (ch >= LONG_BASE && ch < LONG_BASE + n)
			i = ch - LONG_BASE;
		else
			for (int k = 0; k < n && i < 0; k++)
				if (c->opts[k].short_name && c->opts[k].short_name == ch)
					i = k;
		if (i < 0) {
			log_error("%s: unknown option or missing value in '%s' "
				  "(see `egang %s --help`)", c->name,
				  argv[optind - 1], c->name);
			return false;
		}
		/* the word the option was spelled in, for messages: a value
		 * given as the next word is argv[optind - 1] itself */
		int word = optind - (optarg && optarg == argv[optind - 1] ? 2 : 1);
		if (store(&c->opts[i], word >= 1 ? argv[word] : "", optarg) < 0)
			return false;
		seen[i] = true;
	}
	int n_ops = argc - optind;
	if (n_ops > c->max_operands) {
		log_error("%s: unexpected argument '%s'", c->name,
			  argv[optind + c->max_operands]);
		return false;
	}
	if (n_ops < c->min_operands) {
		log_error("%s: missing %s (see `egang %s --help`)", c->name,
			  c->operands_name ? c->operands_name : "operand", c->name);
		return false;
	}
	for (int i = 0; i < n_ops; i++)
		c->operands[i] = argv[optind + i];
	if (finish(c, seen) < 0)
		return false;
	*exit_code = EXIT_OK;
	return true;
}
