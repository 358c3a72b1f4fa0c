/* egang tokenize: the token ids of each input line, as llama.cpp's
 * llama-tokenize gives them (tokenizer_tokenize). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/gguf.h"
#include "model/tokenizer.h"
#include "model/utf8.h"

static const char tokenize_help[] =
	"usage: egang tokenize -m MODEL [options] [TEXT | -]\n"
	"\n"
	"Prints the token ids of each input line, one output line per input line:\n"
	"the lines of TEXT, or of stdin with '-' (the default). The text is\n"
	"tokenized as llama.cpp's llama_tokenize does it: BOS first when the\n"
	"vocabulary asks for it, special-token text (<|im_start|>, <s>) read as\n"
	"those tokens.\n"
	"\n"
	"  -m, --model FILE      a GGUF with a tokenizer (required)\n"
	"      --pieces          print each id with its text: id 'text'\n"
	"      --no-bos          no BOS/EOS added (llama.cpp's add_special false)\n"
	"      --no-parse-special  special-token text stays text (user-defined\n"
	"                        tokens are still matched, as in llama.cpp)\n"
	"      --escapes         input lines use C escapes: \\n \\t \\r \\\\ \\xNN\n"
	"                        (so one line can hold newlines and any bytes)\n"
	"      --decode          print the text the ids decode to (with BOS\n"
	"                        and the escapes of --escapes) instead of the ids\n"
	"  -h, --help            this text\n";

/* Undoes --escapes in place; returns the new length. */
static size_t unescape(char *s, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\' || i + 1 >= n) {
			s[k++] = s[i];
			continue;
		}
		char c = s[++i];
		if (c == 'n')
			s[k++] = '\n';
		else if (c == 't')
			s[k++] = '\t';
		else if (c == 'r')
			s[k++] = '\r';
		else if (c == 'x' && i + 2 < n) {
			char hex[3] = {s[i + 1], s[i + 2], 0};
			s[k++] = (char)strtoul(hex, NULL, 16);
			i += 2;
		} else
			s[k++] = c;
	}
	return k;
}

/* Text with \n \t \r \\ (\' when quoted) and \xNN for other control
 * bytes and, unquoted (--decode), for bytes of invalid UTF-8. */
static void print_escaped(const char *s, int n, bool quoted)
{
	for (int i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		size_t k = c >= 0x80 ? utf8_seq_len(s + i, (size_t)(n - i)) : 1;
		if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\t')
			fputs("\\t", stdout);
		else if (c == '\r')
			fputs("\\r", stdout);
		else if (c == '\\' || (quoted && c == '\''))
			printf("\\%c", c);
		else if (c < 0x20 || c == 0x7f || (!quoted && k == 0))
			printf("\\x%02x", c);
		else {
			fwrite(s + i, 1, k ? k : 1, stdout);
			i += k ? (int)k - 1 : 0;
		}
	}
}

/* A piece's text for --pieces, quoted. */
static void print_piece(const char *s, int n)
{
	putchar('\'');
	print_escaped(s, n, true);
	putchar('\'');
}

typedef struct tok_opts {
	bool pieces, no_bos, no_special, escapes, decode;
} tok_opts_t;

/* One input line -> one output line; -1 on a tokenizer error. */
static int tokenize_line(const tokenizer_t *t, const tok_opts_t *o, char *s,
			 size_t n)
{
	if (o->escapes)
		n = unescape(s, n);
	int64_t c = tokenizer_tokenize(t, s, n, !o->no_bos, !o->no_special, NULL, 0);
	if (c < 0)
		return -1;
	int32_t *ids = malloc((size_t)(c ? c : 1) * sizeof *ids);
	if (!ids)
		abort(); /* out of memory */
	tokenizer_tokenize(t, s, n, !o->no_bos, !o->no_special, ids, c);
	if (o->decode) {
		for (int64_t i = 0; i < c; i++) {
			char buf[1024];
			int k = tokenizer_decode(t, i ? ids[i - 1] : -1, ids[i], buf,
						 sizeof buf);
			print_escaped(buf, k < 0 ? 0 : k > (int)sizeof buf
					   ? (int)sizeof buf : k, false);
		}
		putchar('\n');
		free(ids);
		return 0;
	}
	for (int64_t i = 0; i < c; i++) {
		printf(i ? " %d" : "%d", ids[i]);
		if (o->pieces) {
			char buf[1024];
			const char *p = tokenizer_piece(t, ids[i]);
			int k = tokenizer_decode(t, i ? ids[i - 1] : -1, ids[i], buf,
						 sizeof buf);
			/* control tokens decode to nothing: show their piece */
			if (k == 0 && tokenizer_type(t, ids[i]) == TOKENIZER_TYPE_CONTROL)
				k = snprintf(buf, sizeof buf, "%s", p);
			putchar(' ');
			print_piece(buf, k < 0 ? 0 : k > (int)sizeof buf ? (int)sizeof buf : k);
		}
	}
	putchar('\n');
	free(ids);
	return 0;
}

static int tokenize_stream(const tokenizer_t *t, const tok_opts_t *o, FILE *f)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;
	while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
		if (n > 0 && line[n - 1] == '\n')
			n--;
		rc = tokenize_line(t, o, line, (size_t)n);
	}
	free(line);
	return rc;
}

int cmd_tokenize(int argc, char **argv)
{
	const char *model = NULL, *text = NULL;
	tok_opts_t o = {0};
	const cli_opt_t opts[] = {
		OPT_STR("model", 'm', &model, .required = true),
		OPT_FLAG("pieces", 0, &o.pieces),
		OPT_FLAG("no-bos", 0, &o.no_bos),
		OPT_FLAG("no-parse-special", 0, &o.no_special),
		OPT_FLAG("escapes", 0, &o.escapes),
		OPT_FLAG("decode", 0, &o.decode),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "tokenize", .help = tokenize_help,
			       .opts = opts, .operands = &text, .min_operands = 0,
			       .max_operands = 1, .operands_name = "TEXT"};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	gguf_t *g = gguf_open(model);
	if (!g) {
		log_error("tokenize: %s", err_get());
		return EXIT_INPUT;
	}
	tokenizer_t *t = tokenizer_load_gguf(g);
	if (!t) {
		log_error("tokenize: %s: %s", model, err_get());
		gguf_close(g);
		return EXIT_INPUT;
	}
	int rc;
	if (!text || !strcmp(text, "-")) {
		rc = tokenize_stream(t, &o, stdin);
	} else {
		FILE *f = fmemopen((void *)text, strlen(text), "r");
		if (!f)
			abort(); /* out of memory */
		rc = tokenize_stream(t, &o, f);
		fclose(f);
	}
	if (rc < 0)
		log_error("tokenize: %s", err_get());
	status = rc < 0 ? EXIT_FAIL : fflush(stdout) ? EXIT_FAIL : EXIT_OK;
	tokenizer_free(t);
	gguf_close(g);
	return status;
}
