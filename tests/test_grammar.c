/* The GBNF grammar library (model/grammar.h): parse errors with their line
 * and column; each syntax feature by the texts it accepts and refuses;
 * UTF-8 characters split across tokens; the trie mask against a
 * brute-force check of every token on its own, along random walks of
 * several grammars over a small vocabulary; the end token only where the
 * grammar is complete; a stuck state. */
#include "testutil.h"

#include <math.h>

#include "base/base.h"
#include "model/grammar.h"
#include "model/tokenizer.h"

/* ---- parse errors ---- */

static void expect_error(const char *text, const char *want)
{
	grammar_t *g = grammar_parse(text);
	if (g)
		fail_msg("grammar %s: parsed, want the error \"%s\"", text, want);
	if (!strstr(err_get(), want))
		fail_msg("grammar %s: error \"%s\", want \"%s\"", text, err_get(), want);
	if (strchr(err_get(), '\n'))
		fail_msg("grammar %s: the error has more than one line", text);
}

static void test_parse_errors(void **state)
{
	(void)state;
	expect_error("", "line 1, column 1: empty grammar");
	expect_error("  # only a comment\n\n", "line 3, column 1: empty grammar");
	expect_error("root ::= foo\n", "line 1, column 10: undefined rule 'foo'");
	expect_error("item ::= \"a\"\n", "line 1, column 1: no rule named 'root'");
	expect_error("root ::= \"abc\n", "line 1, column 10: unterminated string literal");
	expect_error("root ::= [a-z\n", "line 1, column 10: unterminated character class");
	expect_error("root ::= \"a\"\nx ::= \"\\q\"\n", "line 2, column 8: unknown escape '\\q'");
	expect_error("root ::= \"\\x4\"\n", "line 1, column 14: expecting 2 hex digits");
	expect_error("root ::= \"\\U00110000\"\n", "beyond U+10FFFF");
	expect_error("root = \"a\"\n", "line 1, column 6: expecting '::='");
	expect_error("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"\n",
		     "line 2, column 1: rule 'expr' is left-recursive");
	expect_error("root ::= a\na ::= b? a \"x\" | \"y\"\nb ::= \"z\"\n",
		     "rule 'a' is left-recursive");
	expect_error("root ::= \"a\" root\n", "rule 'root' can never end");
	expect_error("root ::= (\"a\" \"b\"\n", "expecting ')'");
	expect_error("root ::= * \"a\"\n", "line 1, column 10: '*' follows nothing");
	expect_error("root ::= \"a\"{3,2}\n", "line 1, column 13: repetition {3,2}");
	expect_error("root ::= \"a\"{,2}\n", "expecting a number");
	expect_error("root ::= \"a\"\nroot ::= \"b\"\n", "line 2, column 1: rule 'root' is defined twice");
	expect_error("root ::= []\n", "empty character class");
	expect_error("root ::= [z-a]\n", "is empty");
	expect_error("root ::= \"a\" @\n", "line 1, column 14: unexpected '@'");
	expect_error("root ::= \"a\"\n  \"b\"\n", "line 2, column 3: expecting a rule name");
	expect_error("root ::= <[12]>\n", "token references");
	expect_error("ro_ot ::= \"a\"\n", "line 1, column 3: expecting '::='");
	/* columns count characters: é is one */
	expect_error("root ::= \"é\" ?? x\n", "line 1, column 17: undefined rule 'x'");
}

/* ---- accepted and refused texts, without a vocabulary ---- */

/* Whether text (split at '|' into pieces fed one after another) is a
 * complete match of grammar g. */
static bool matches(const grammar_t *g, const char *text, bool *prefix)
{
	grammar_state_t *s = grammar_state_new(g, NULL);
	assert_non_null(s);
	bool ok = true;
	for (const char *p = text; ok;) {
		const char *bar = strchr(p, '|');
		size_t n = bar ? (size_t)(bar - p) : strlen(p);
		ok = grammar_accept_bytes(s, p, n) == 0;
		if (!bar)
			break;
		p = bar + 1;
	}
	*prefix = ok;
	bool done = ok && grammar_done(s);
	grammar_state_free(s);
	return done;
}

typedef struct case_ {
	const char *grammar;
	const char *yes[6]; /* complete matches */
	const char *no[6];  /* not even a prefix of one */
	const char *part[3]; /* a prefix, not complete */
} case_t;

static const case_t cases[] = {
	{"root ::= \"ab\" | \"c\"", {"ab", "c"}, {"abc", "b", "cc"}, {"a", ""}},
	{"# comment\nroot ::= x # trailing\nx ::= \"a\"  # x", {"a"}, {"b"}, {""}},
	{"root ::= \"a\"*", {"", "a", "aaaa"}, {"b", "ab"}, {NULL}},
	{"root ::= \"ab\"+", {"ab", "abab"}, {"b", "aba|c"}, {"", "aba"}},
	{"root ::= \"a\"? \"b\"", {"b", "ab"}, {"aab", "bb"}, {"a"}},
	{"root ::= \"a\"{3}", {"aaa"}, {"aaaa"}, {"aa"}},
	{"root ::= \"a\"{2,}", {"aa", "aaaaaaa"}, {"b"}, {"a"}},
	{"root ::= \"a\"{1,3} \"b\"", {"ab", "aaab"}, {"aaaab", "b"}, {"aaa"}},
	{"root ::= \"a\"{0,2}", {"", "a", "aa"}, {"aaa"}, {NULL}},
	{"root ::= [a-c0-9_]+", {"a", "c9_", "000"}, {"d", "-", "A"}, {""}},
	{"root ::= [^a-c\"]", {"d", "z", "é", "\n"}, {"a", "b", "\""}, {""}},
	{"root ::= .", {"a", "é", "\xF0\x9F\x98\x80"}, {"ab", "\xFF", "\x80"}, {""}},
	{"root ::= \"\\n\\t\\r\\\\\\\"\\x41\\u00e9\\U0001F600\"",
	 {"\n\t\r\\\"A\xC3\xA9\xF0\x9F\x98\x80"}, {"\\n"}, {"\n\t"}},
	{"root ::= [\\[\\]\\-]", {"[", "]", "-"}, {"\\"}, {""}},
	{"root ::= [a-]", {"a", "-"}, {"b"}, {""}},
	{"root ::= (\n  \"a\" |\n  \"b\"\n) \"c\"", {"ac", "bc"}, {"c", "abc"}, {"a"}},
	{"root ::= (\"a\" \"b\")* \"c\"", {"c", "abc", "ababc"}, {"aac", "b"}, {"ab"}},
	{"root ::= x \"-\" x\nx ::= [0-9]{1,2}", {"1-2", "12-34"}, {"123", "-1"}, {"1-", "12"}},
	{"root ::= \"a\" |\n \"b\"", {"a", "b"}, {"c"}, {""}},
	{"root ::= \"é\" \"x\"", {"\xC3|\xA9x", "é|x"}, {"\xC3|A", "\xC3\xA8"}, {"\xC3", "é"}},
	{"root ::= [^a]", {"\xE2|\x82|\xAC", "\xE2\x82|\xAC"}, {"\xE2|A", "\xED\xA0\x80"}, {"\xE2"}},
	{"root ::= [\\u0100-\\u0101]", {"\xC4\x80", "\xC4\x81"}, {"\xC4\x82", "\xC3"}, {"\xC4"}},
	{"root ::= \"\"", {""}, {"a"}, {NULL}},
	{"root ::= x*\nx ::= \"a\" | \"bb\"", {"", "abba", "bb"}, {"ba", "c"}, {"b", "ab"}},
};

static void test_syntax(void **state)
{
	(void)state;
	for (size_t c = 0; c < EG_ARRAY_LEN(cases); c++) {
		grammar_t *g = grammar_parse(cases[c].grammar);
		if (!g)
			fail_msg("case %zu: %s", c, err_get());
		bool prefix;
		for (int i = 0; i < 6 && cases[c].yes[i]; i++)
			if (!matches(g, cases[c].yes[i], &prefix))
				fail_msg("case %zu (%s): \"%s\" should match", c,
					 cases[c].grammar, cases[c].yes[i]);
		for (int i = 0; i < 6 && cases[c].no[i]; i++)
			if (matches(g, cases[c].no[i], &prefix) || prefix)
				fail_msg("case %zu (%s): \"%s\" should be refused", c,
					 cases[c].grammar, cases[c].no[i]);
		for (int i = 0; i < 3 && cases[c].part[i]; i++)
			if (matches(g, cases[c].part[i], &prefix) || !prefix)
				fail_msg("case %zu (%s): \"%s\" should be a prefix only", c,
					 cases[c].grammar, cases[c].part[i]);
		grammar_free(g);
	}
}

/* A refused piece leaves the state as it was. */
static void test_refused_keeps_state(void **state)
{
	(void)state;
	grammar_t *g = grammar_parse("root ::= \"ab\"");
	grammar_state_t *s = grammar_state_new(g, NULL);
	assert_int_equal(grammar_accept_bytes(s, "a", 1), 0);
	assert_int_equal(grammar_accept_bytes(s, "x", 1), -1);
	assert_true(strstr(err_get(), "does not continue") != NULL);
	assert_false(grammar_done(s));
	assert_int_equal(grammar_accept_bytes(s, "b", 1), 0);
	assert_true(grammar_done(s));
	grammar_state_free(s);
	grammar_free(g);
}

/* ---- a small vocabulary ---- */

/* Pieces of a llama-kind vocabulary: specials, every byte, then pieces
 * that cross character and rule boundaries. */
static const char *const extra[] = {
	"a", "b", "ab", "ba", "abc", "{", "}", "{\"", "\"", "\":", "\",", ",",
	":", "1", "12", "123", "0", "-", ".", "e", "true", "false", "null",
	"\xE2\x96\x81", "\xE2\x96\x81\"", "\n", "\n\n", "\\", "\\\"", "\\u",
	"\xC3\xA9", "x\xC3", "\xA9y", "\xC3\xA9\xC3", "[", "]", "[1", "],",
	"\xF0\x9F\x98\x80", "\xF0\x9F", "\x98\x80", "hello", "\xE2\x96\x81world",
	"<|im_end|>",
};

static tokenizer_t *small_vocab(int32_t *n_out, int32_t *im_end)
{
	static const char *pieces[3 + 256 + EG_ARRAY_LEN(extra)];
	static char bytes[256][8];
	static int32_t types[EG_ARRAY_LEN(pieces)];
	int32_t n = 0;
	pieces[n] = "<unk>";
	types[n++] = TOKENIZER_TYPE_UNKNOWN;
	pieces[n] = "<s>";
	types[n++] = TOKENIZER_TYPE_CONTROL;
	pieces[n] = "</s>";
	types[n++] = TOKENIZER_TYPE_CONTROL;
	for (int b = 0; b < 256; b++) {
		snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
		pieces[n] = bytes[b];
		types[n++] = TOKENIZER_TYPE_BYTE;
	}
	for (size_t i = 0; i < EG_ARRAY_LEN(extra); i++) {
		pieces[n] = extra[i];
		types[n++] = strcmp(extra[i], "<|im_end|>") ? TOKENIZER_TYPE_NORMAL
							    : TOKENIZER_TYPE_CONTROL;
	}
	*im_end = n - 1;
	tokenizer_spec_t sp = {.kind = TOKENIZER_LLAMA, .n = n, .pieces = pieces,
			       .types = types, .bos = 1, .eos = 2, .unk = 0,
			       .pad = -1, .add_bos = 1, .add_eos = 0};
	tokenizer_t *t = tokenizer_build(&sp);
	if (!t)
		fail_msg("tokenizer_build: %s", err_get());
	*n_out = n;
	return t;
}

/* The reference: token id's bytes checked on their own from state s. */
static bool brute_allows(const tokenizer_t *t, grammar_state_t *s, int32_t id,
			 int32_t n_tok)
{
	if (id >= n_tok)
		return false; /* padding logits */
	if (grammar_is_end(s, id))
		return grammar_done(s);
	int32_t type = tokenizer_type(t, id);
	if (type == TOKENIZER_TYPE_CONTROL)
		return false;
	char piece[1100];
	int k = tokenizer_decode(t, -1, id, piece, sizeof piece);
	if (k <= 0)
		return false;
	unsigned char c = (unsigned char)piece[0];
	if (k == 1 && ((c < 0x20 && !memchr("\n\t\r\v\f", c, 5)) || c == 0x7f))
		return false; /* the engine drops it */
	return grammar_allows_bytes(s, piece, (size_t)k);
}

static const char *const walk_grammars[] = {
	"root ::= \"{\" ws \"\\\"\" [a-z]+ \"\\\"\" ws \":\" ws num ws \"}\"\n"
	"num ::= \"-\"? [0-9]+ (\".\" [0-9]+)?\nws ::= [ \\n]{0,2}",
	"root ::= (\"a\" | \"b\")* \"c\"?",
	"root ::= [^\"\\\\]* \"\\\"\"",
	"root ::= \"é\"+ | \"😀\" [xy]",
	"root ::= \"[\" (num (\",\" num)*)? \"]\"\nnum ::= [0-9]{1,3}",
	"root ::= .{0,6}",
	"root ::= (\"true\" | \"false\" | \"null\") \" \"? \"hello\"?",
};

/* Along random walks (each step a random allowed token), the mask equals
 * the per-token check for every id, the count is right, and the end
 * token is allowed exactly where the grammar is complete. */
static void test_mask_brute_force(void **state)
{
	(void)state;
	int32_t n_tok, im_end;
	tokenizer_t *t = small_vocab(&n_tok, &im_end);
	int32_t n_logits = n_tok + 5; /* ids past the tokenizer: padding */
	grammar_vocab_t *v = grammar_vocab_new(t, n_logits);
	assert_non_null(v);
	float *logits = malloc((size_t)n_logits * sizeof *logits);
	rng_t r;
	rng_seed(&r, 11);
	int64_t accepted = 0; /* the walks went somewhere */
	for (size_t gi = 0; gi < EG_ARRAY_LEN(walk_grammars); gi++) {
		grammar_t *g = grammar_parse(walk_grammars[gi]);
		if (!g)
			fail_msg("grammar %zu: %s", gi, err_get());
		for (int walk = 0; walk < 12; walk++) {
			grammar_state_t *s = grammar_state_new(g, v);
			grammar_state_set_control_ends(s, walk & 1);
			for (int step = 0; step < 24; step++) {
				for (int32_t i = 0; i < n_logits; i++)
					logits[i] = (float)i;
				int32_t count = grammar_mask(s, logits), want = 0;
				int32_t pick[4096], n_pick = 0;
				for (int32_t i = 0; i < n_logits; i++) {
					bool ref = brute_allows(t, s, i, n_tok);
					bool got = logits[i] == (float)i;
					if (!got && !isinf(logits[i]))
						fail_msg("logit %d changed to %g", i, logits[i]);
					if (ref != got)
						fail_msg("grammar %zu walk %d step %d: token %d "
							 "masked %s, per-token check says %s", gi,
							 walk, step, i, got ? "allowed" : "refused",
							 ref ? "allowed" : "refused");
					if (ref != grammar_allows(s, i))
						fail_msg("grammar_allows(%d) disagrees", i);
					want += ref;
					if (ref && !grammar_is_end(s, i))
						pick[n_pick++] = i;
				}
				assert_int_equal(count, want);
				bool end_ok = grammar_allows(s, 2);
				assert_true(end_ok == grammar_done(s));
				assert_true(grammar_allows(s, im_end) ==
					    ((walk & 1) && grammar_done(s)));
				/* BOS is a control token: an end token only with
				 * control_ends (the engine ends on it too) */
				assert_true(grammar_allows(s, 1) ==
					    ((walk & 1) && grammar_done(s)));
				if (n_pick == 0)
					break;
				int32_t id = pick[rng_next(&r) % (uint64_t)n_pick];
				assert_int_equal(grammar_accept(s, id), 0);
				accepted++;
			}
			grammar_state_free(s);
		}
		grammar_free(g);
	}
	assert_true(accepted > 500);
	free(logits);
	grammar_vocab_free(v);
	tokenizer_free(t);
}

/* A character split over tokens: the lead byte alone is allowed only
 * where some completion is; the next token must complete it. */
static void test_utf8_across_tokens(void **state)
{
	(void)state;
	int32_t n_tok, im_end;
	tokenizer_t *t = small_vocab(&n_tok, &im_end);
	grammar_vocab_t *v = grammar_vocab_new(t, n_tok);
	grammar_t *g = grammar_parse("root ::= \"x\" \"é\" \"y\"");
	grammar_state_t *s = grammar_state_new(g, v);
	int32_t x_c3 = tokenizer_find(t, "x\xC3"), a9_y = tokenizer_find(t, "\xA9y");
	int32_t c3 = tokenizer_find(t, "<0xC3>"), a8 = tokenizer_find(t, "<0xA8>");
	assert_true(x_c3 > 0 && a9_y > 0 && c3 > 0 && a8 > 0);
	assert_true(grammar_allows(s, x_c3));
	assert_int_equal(grammar_accept(s, x_c3), 0);
	assert_false(grammar_done(s));
	assert_false(grammar_allows(s, a8)); /* è, not é */
	assert_true(grammar_allows(s, a9_y));
	assert_int_equal(grammar_accept(s, a9_y), 0);
	assert_true(grammar_done(s));
	assert_int_equal(grammar_accept(s, 2), 0); /* EOS once complete */
	grammar_state_free(s);
	/* a lead byte whose completions the grammar cannot take */
	grammar_t *g2 = grammar_parse("root ::= [a-z\\u0100-\\u017F]");
	s = grammar_state_new(g2, v);
	assert_false(grammar_allows(s, c3)); /* C3 xx is U+00C0..U+00FF */
	assert_true(grammar_allows(s, tokenizer_find(t, "<0xC4>")));
	assert_int_equal(grammar_accept(s, 2), -1); /* EOS too early */
	assert_true(strstr(err_get(), "before the grammar was complete") != NULL);
	grammar_state_free(s);
	grammar_free(g2);
	grammar_free(g);
	grammar_vocab_free(v);
	tokenizer_free(t);
}

/* A state no token can continue: the mask leaves nothing (the engine
 * then ends with an error). The vocabulary lacks the byte 0x01 (the
 * engine drops that byte token's text). */
static void test_stuck(void **state)
{
	(void)state;
	int32_t n_tok, im_end;
	tokenizer_t *t = small_vocab(&n_tok, &im_end);
	grammar_vocab_t *v = grammar_vocab_new(t, n_tok);
	grammar_t *g = grammar_parse("root ::= \"a\" \"\\x01\"");
	grammar_state_t *s = grammar_state_new(g, v);
	float *logits = calloc((size_t)n_tok, sizeof *logits);
	assert_true(grammar_mask(s, logits) > 0);
	assert_int_equal(grammar_accept(s, tokenizer_find(t, "a")), 0);
	for (int32_t i = 0; i < n_tok; i++)
		logits[i] = 0;
	assert_int_equal(grammar_mask(s, logits), 0);
	for (int32_t i = 0; i < n_tok; i++)
		assert_true(isinf(logits[i]) && logits[i] < 0);
	free(logits);
	grammar_state_free(s);
	grammar_free(g);
	grammar_vocab_free(v);
	tokenizer_free(t);
}

/* A deep repetition and a long text: the tables grow, the answers stay. */
static void test_long_text(void **state)
{
	(void)state;
	grammar_t *g = grammar_parse(
		"root ::= value\nvalue ::= \"[\" (value (\",\" value)*)? \"]\" | [0-9]+");
	assert_non_null(g);
	grammar_state_t *s = grammar_state_new(g, NULL);
	char text[4096];
	size_t n = 0;
	for (int d = 0; d < 300; d++)
		text[n++] = '[';
	for (int i = 0; i < 600; i++)
		text[n++] = i % 2 ? ',' : (char)('0' + i % 10);
	text[n - 1] = '7';
	for (int d = 0; d < 300; d++)
		text[n++] = ']';
	for (size_t i = 0; i < n; i++)
		if (grammar_accept_bytes(s, text + i, 1) < 0)
			fail_msg("byte %zu: %s", i, err_get());
	assert_true(grammar_done(s));
	grammar_state_free(s);
	grammar_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_syntax),
		cmocka_unit_test(test_refused_keeps_state),
		cmocka_unit_test(test_mask_brute_force),
		cmocka_unit_test(test_utf8_across_tokens),
		cmocka_unit_test(test_stuck),
		cmocka_unit_test(test_long_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
