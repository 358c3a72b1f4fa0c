/* egang grammar: check a GBNF grammar, or compile a JSON schema to one
 * (model/grammar.h, model/json_schema.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/grammar.h"
#include "model/json_schema.h"

static const char grammar_help[] =
	"usage: egang grammar check FILE.gbnf\n"
	"       egang grammar from-schema FILE.json\n"
	"\n"
	"  check        parses a GBNF grammar (llama.cpp's syntax, start rule\n"
	"               \"root\"); prints \"ok: N rules\" or one line naming the\n"
	"               line and column of the first error (exit 2)\n"
	"  from-schema  prints the GBNF that a JSON schema compiles to (what\n"
	"               `generate --json-schema` and the server's json_schema and\n"
	"               response_format use); an unsupported keyword is one line\n"
	"               naming it and its schema path (exit 2)\n"
	"\n"
	"A FILE of '-' is stdin.\n"
	"  -h, --help   this text\n";

/* The whole file (or stdin for "-"), NUL-terminated; NULL after a message. */
static char *grammar_read(const char *path)
{
	size_t len;
	char *text = NULL;
	if (strcmp(path, "-") == 0) {
		size_t cap = 0;
		len = 0;
		for (;;) {
			if (len + 4096 + 1 > cap) {
				cap = 2 * cap + 8192;
				char *t = realloc(text, cap);
				if (!t) {
					free(text);
					fprintf(stderr, "egang grammar: out of memory\n");
					return NULL;
				}
				text = t;
			}
			size_t n = fread(text + len, 1, 4096, stdin);
			len += n;
			if (n == 0)
				break;
		}
		text[len] = '\0';
		return text;
	}
	text = file_read_all(path, &len);
	if (!text)
		fprintf(stderr, "egang grammar: %s\n", err_get());
	return text;
}

static int grammar_from_schema(const char *path)
{
	char *text = grammar_read(path);
	if (!text)
		return EXIT_INPUT;
	json_error_t je;
	json_t *schema = json_loads(text, JSON_DECODE_ANY, &je);
	free(text);
	if (!schema) {
		fprintf(stderr, "egang grammar: %s: line %d, column %d: %s\n", path, je.line, je.column, je.text);
		return EXIT_INPUT;
	}
	char *gbnf = json_schema_to_gbnf(schema);
	json_decref(schema);
	if (!gbnf) {
		fprintf(stderr, "egang grammar: %s: %s\n", path, err_get());
		return EXIT_INPUT;
	}
	fputs(gbnf, stdout);
	free(gbnf);
	return EXIT_OK;
}

static int grammar_check(const char *path)
{
	char *text = grammar_read(path);
	if (!text)
		return EXIT_INPUT;
	grammar_t *g = grammar_parse(text);
	free(text);
	if (!g) {
		fprintf(stderr, "egang grammar: %s: %s\n", path, err_get());
		return EXIT_INPUT;
	}
	printf("ok: %d rules\n", (int)grammar_n_rules(g));
	grammar_free(g);
	return EXIT_OK;
}

int cmd_grammar(int argc, char **argv)
{
	const char *ops[2] = {0};
	cli_opt_t opts[] = {CLI_END};
	cli_cmd_t cmd = {.name = "grammar", .help = grammar_help, .opts = opts, .operands = ops,
			 .min_operands = 2, .max_operands = 2, .operands_name = "ACTION FILE"};
	int rc;
	if (!cli_parse(&cmd, argc, argv, &rc))
		return rc;
	if (strcmp(ops[0], "check") == 0)
		return grammar_check(ops[1]);
	if (strcmp(ops[0], "from-schema") == 0)
		return grammar_from_schema(ops[1]);
	fprintf(stderr, "egang grammar: unknown action '%s' (check, from-schema)\n", ops[0]);
	return EXIT_INPUT;
}
