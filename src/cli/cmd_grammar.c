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
	"       egang grammar match FILE.gbnf TEXT-FILE\n"
	"\n"
	"  check        parses a GBNF grammar (llama.cpp's syntax, start rule\n"
	"               \"root\"); prints \"ok: N rules\" or one line naming the\n"
	"               line and column of the first error (exit 2)\n"
	"  from-schema  prints the GBNF that a JSON schema compiles to (what\n"
	"               `generate --json-schema` and the server's json_schema and\n"
	"               response_format use); an unsupported keyword is one line\n"
	"               naming it and its schema path (exit 2)\n"
	"  match        whether a text (the whole file, bytes as they are) is a\n"
	"               complete match of the grammar: prints \"complete\" (exit 0),\n"
	"               \"prefix: N bytes\" when all of it matches but the grammar\n"
	"               wants more, or \"no: at byte N\" (exit 1 for either)\n"
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

/* Feeds the text byte by byte: complete, a prefix, or where it fails. */
static int grammar_match(const char *gpath, const char *tpath)
{
	char *gtext = grammar_read(gpath);
	if (!gtext)
		return EXIT_INPUT;
	grammar_t *g = grammar_parse(gtext);
	free(gtext);
	if (!g) {
		fprintf(stderr, "egang grammar: %s: %s\n", gpath, err_get());
		return EXIT_INPUT;
	}
	size_t n = 0;
	char *text = NULL;
	if (strcmp(tpath, "-") == 0)
		text = grammar_read("-");
	else if (!(text = file_read_all(tpath, &n)))
		fprintf(stderr, "egang grammar: %s\n", err_get());
	grammar_state_t *st = text ? grammar_state_new(g, NULL) : NULL;
	if (text && !st)
		fprintf(stderr, "egang grammar: %s\n", err_get());
	int rc = EXIT_INPUT;
	if (st) {
		if (strcmp(tpath, "-") == 0)
			n = strlen(text);
		size_t i = 0;
		while (i < n && grammar_accept_bytes(st, text + i, 1) == 0)
			i++;
		if (i < n)
			printf("no: at byte %zu\n", i);
		else if (grammar_done(st))
			printf("complete\n");
		else
			printf("prefix: %zu bytes\n", n);
		rc = i == n && grammar_done(st) ? EXIT_OK : EXIT_FAIL;
	}
	grammar_state_free(st);
	free(text);
	grammar_free(g);
	return rc;
}

int cmd_grammar(int argc, char **argv)
{
	const char *ops[3] = {0};
	cli_opt_t opts[] = {CLI_END};
	cli_cmd_t cmd = {.name = "grammar", .help = grammar_help, .opts = opts, .operands = ops,
			 .min_operands = 2, .max_operands = 3, .operands_name = "ACTION FILE"};
	int rc;
	if (!cli_parse(&cmd, argc, argv, &rc))
		return rc;
	if (strcmp(ops[0], "match") == 0) {
		if (!ops[2]) {
			fprintf(stderr, "egang grammar: match needs FILE.gbnf and TEXT-FILE\n");
			return EXIT_INPUT;
		}
		return grammar_match(ops[1], ops[2]);
	}
	if (ops[2]) {
		fprintf(stderr, "egang grammar: %s takes one FILE\n", ops[0]);
		return EXIT_INPUT;
	}
	if (strcmp(ops[0], "check") == 0)
		return grammar_check(ops[1]);
	if (strcmp(ops[0], "from-schema") == 0)
		return grammar_from_schema(ops[1]);
	fprintf(stderr, "egang grammar: unknown action '%s' (check, from-schema, match)\n", ops[0]);
	return EXIT_INPUT;
}
