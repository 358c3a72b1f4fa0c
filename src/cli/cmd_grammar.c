/* egang grammar: check a GBNF grammar, or compile a JSON schema to one
 * (model/grammar.h, model/json_schema.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/gguf.h"
#include "model/tokenizer.h"
#include "model/grammar.h"
#include "model/json_schema.h"

static const char grammar_help[] =
	"usage: egang grammar check FILE.gbnf\n"
	"       egang grammar from-schema FILE.json\n"
	"       egang grammar match FILE.gbnf TEXT-FILE\n"
	"       egang grammar allowed -m MODEL FILE.gbnf IDS\n"
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
	"  allowed      the tokens of MODEL's vocabulary the grammar allows at each\n"
	"               step of the generated ids IDS (comma-separated, the prompt\n"
	"               left out), accepting each in turn: one line per step,\n"
	"               \"STEP COUNT HASH\" (HASH: FNV-1a of the allowed ids in\n"
	"               increasing order), then the mask after the last id; for\n"
	"               comparing masks with llama.cpp's (tools/llamacpp/\n"
	"               grammar-agreement)\n"
	"  -m, --model FILE  the GGUF whose tokenizer `allowed` uses\n"
	"      --list   `allowed` also lists the allowed ids on each line\n"
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

/* One line per step: how many tokens the mask leaves, and their hash. */
static int grammar_print_masks(grammar_state_t *st, int32_t n_vocab, const int32_t *ids, int n, bool list)
{
	float *logits = malloc((size_t)n_vocab * sizeof *logits);
	if (!logits)
		return EXIT_FAIL;
	int rc = EXIT_OK;
	for (int i = 0; i <= n && rc == EXIT_OK; i++) {
		for (int32_t t = 0; t < n_vocab; t++)
			logits[t] = 0.0f;
		int32_t k = grammar_mask(st, logits);
		uint64_t h = HASH64_INIT;
		for (int32_t t = 0; t < n_vocab; t++)
			if (logits[t] == 0.0f)
				h = hash64(&t, sizeof t, h);
		printf("%d %d %016llx", i, (int)k, (unsigned long long)h);
		for (int32_t t = 0; list && t < n_vocab; t++)
			if (logits[t] == 0.0f)
				printf(" %d", (int)t);
		putchar('\n');
		if (i < n && !grammar_is_end(st, ids[i]) && grammar_accept(st, ids[i]) < 0) {
			fprintf(stderr, "egang grammar: step %d: %s\n", i, err_get());
			rc = EXIT_INPUT;
		}
	}
	free(logits);
	return rc;
}

/* `allowed`: the model's tokenizer, the grammar, then the masks. */
static int grammar_allowed(const char *model, const char *gpath, const char *list, bool print)
{
	int n;
	int32_t *ids = cli_int_list("IDS", list, INT32_MAX, &n);
	if (!ids)
		return EXIT_INPUT;
	grammar_t *g = grammar_load(gpath);
	gguf_t *f = g ? gguf_open(model) : NULL;
	tokenizer_t *tok = f ? tokenizer_load_gguf(f) : NULL;
	grammar_vocab_t *v = tok ? grammar_vocab_new(tok, tokenizer_n_vocab(tok)) : NULL;
	grammar_state_t *st = v ? grammar_state_new(g, v) : NULL;
	int rc = EXIT_INPUT;
	if (!st)
		fprintf(stderr, "egang grammar: %s\n", err_get());
	else
		rc = grammar_print_masks(st, tokenizer_n_vocab(tok), ids, n, print);
	grammar_state_free(st);
	grammar_vocab_free(v);
	tokenizer_free(tok);
	if (f)
		gguf_close(f);
	grammar_free(g);
	free(ids);
	return rc;
}

int cmd_grammar(int argc, char **argv)
{
	const char *ops[3] = {0};
	const char *model = NULL;
	bool list = false;
	cli_opt_t opts[] = {OPT_STR("model", 'm', &model), OPT_FLAG("list", 0, &list), CLI_END};
	cli_cmd_t cmd = {.name = "grammar", .help = grammar_help, .opts = opts, .operands = ops,
			 .min_operands = 2, .max_operands = 3, .operands_name = "ACTION FILE"};
	int rc;
	if (!cli_parse(&cmd, argc, argv, &rc))
		return rc;
	if (strcmp(ops[0], "allowed") == 0) {
		if (!ops[2] || !model) {
			fprintf(stderr, "egang grammar: allowed needs -m MODEL, FILE.gbnf and IDS\n");
			return EXIT_INPUT;
		}
		return grammar_allowed(model, ops[1], ops[2], list);
	}
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
	fprintf(stderr, "egang grammar: unknown action '%s' (check, from-schema, match, allowed)\n", ops[0]);
	return EXIT_INPUT;
}
