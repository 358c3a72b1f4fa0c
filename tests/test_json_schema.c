/* JSON schema to GBNF (model/json_schema.h): the text produced, the
 * refusals (keyword and schema path named), and, through the GBNF matcher
 * (model/grammar.h), that each produced grammar parses and accepts the
 * documents valid under its schema and rejects the others. */
#include "testutil.h"

#include <jansson.h>

#include "base/base.h"
#include "model/grammar.h"
#include "model/json_regex.h"
#include "model/json_schema.h"

/* The GBNF of a schema given as JSON text; fails the test on refusal. */
static char *gbnf_of(const char *schema_text)
{
	json_error_t je;
	json_t *s = json_loads(schema_text, JSON_DECODE_ANY, &je);
	if (!s)
		fail_msg("bad test schema: %s", je.text);
	char *g = json_schema_to_gbnf(s);
	json_decref(s);
	if (!g)
		fail_msg("refused: %s", err_get());
	return g;
}

/* The refusal message of a schema (fails the test when it converts). */
static void expect_refusal(const char *schema_text, const char *want)
{
	json_t *s = json_loads(schema_text, JSON_DECODE_ANY, NULL);
	assert_non_null(s);
	char *g = json_schema_to_gbnf(s);
	json_decref(s);
	if (g) {
		print_message("converted, want refusal \"%s\":\n%s", want, g);
		free(g);
		fail();
	}
	if (!strstr(err_get(), want))
		fail_msg("message \"%s\" lacks \"%s\"", err_get(), want);
}

/* Whether grammar g matches doc completely. */
static bool matches(const grammar_t *g, const char *doc)
{
	grammar_state_t *st = grammar_state_new(g, NULL);
	assert_non_null(st);
	bool ok = grammar_accept_bytes(st, doc, strlen(doc)) == 0 && grammar_done(st);
	grammar_state_free(st);
	return ok;
}

/* Converts schema, parses the GBNF, and checks that every doc of good
 * (NULL-ended) matches and no doc of bad does. */
static void check_docs(const char *schema, const char *const *good, const char *const *bad)
{
	char *text = gbnf_of(schema);
	grammar_t *g = grammar_parse(text);
	if (!g)
		fail_msg("the GBNF does not parse: %s\n%s", err_get(), text);
	for (size_t i = 0; good && good[i]; i++)
		if (!matches(g, good[i]))
			fail_msg("schema %s\nrejects %s\nGBNF:\n%s", schema, good[i], text);
	for (size_t i = 0; bad && bad[i]; i++)
		if (matches(g, bad[i]))
			fail_msg("schema %s\naccepts %s\nGBNF:\n%s", schema, bad[i], text);
	grammar_free(g);
	free(text);
}

/* ---- the text ---- */

static void test_text_object(void **state)
{
	(void)state;
	char *g = gbnf_of("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
			  "\"age\":{\"type\":\"integer\"}},\"required\":[\"name\"]}");
	assert_non_null(strstr(g, "root ::= "));
	assert_non_null(strstr(g, "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n"));
	assert_non_null(strstr(g, "\"\\\"name\\\"\" ws \":\" ws string ws"));
	assert_non_null(strstr(g, "(\",\" ws root-value-age-kv)?"));
	/* the free-form rules are not there when nothing needs them */
	assert_null(strstr(g, "value-0"));
	free(g);
}

static void test_text_bounds(void **state)
{
	(void)state;
	char *g = gbnf_of("{\"type\":\"array\",\"items\":{\"type\":\"string\",\"minLength\":2,\"maxLength\":5},"
			  "\"minItems\":1,\"maxItems\":3}");
	assert_non_null(strstr(g, "char{2,5}"));
	assert_non_null(strstr(g, "){0,2})"));
	free(g);
	g = gbnf_of("{\"type\":\"object\"}");
	assert_non_null(strstr(g, "object-0"));
	assert_non_null(strstr(g, "value-8 ::= any-string | number | boolean | null"));
	assert_non_null(strstr(g, "any-string ::= \"\\\"\" char{0,256} \"\\\"\""));
	assert_non_null(strstr(g, "){0,15})? \"}\""));
	free(g);
	g = json_schema_any_object_gbnf();
	assert_non_null(g);
	assert_non_null(strstr(g, "root ::= object-0\n"));
	free(g);
}

static void test_regex_text(void **state)
{
	(void)state;
	char why[256];
	char *r = json_regex_to_gbnf("^\\d{4}-\\d{2}$", 4096, why, sizeof why);
	assert_non_null(r);
	assert_string_equal(r, "([0-9]{4} \"-\" [0-9]{2})");
	free(r);
	r = json_regex_to_gbnf("^a\"b\\\\c$", 4096, why, sizeof why);
	assert_non_null(r);
	/* '"' and '\' as a JSON encoder writes them */
	assert_string_equal(r, "(\"a\\\\\\\"b\\\\\\\\c\")");
	free(r);
	r = json_regex_to_gbnf("^[^a]$", 4096, why, sizeof why);
	assert_non_null(r);
	assert_non_null(strstr(r, "\"\\\\\\\"\"")); /* the negation holds an escaped quote */
	free(r);
	static const char *const refused[][2] = {
		{"abc", "anchored"},
		{"^abc", "anchored"},
		{"^a(?=b)$", "lookaround"},
		{"^a\\bc$", "unsupported escape \\b"},
		{"^(a)\\1$", "unsupported escape \\1"},
		{"^a{2,1}$", "malformed"},
		{"^a{9999}$", "past"},
		{"^[b-a]$", "out of order"},
		{"^(ab$", "unclosed"},
		{"^ab)$", "unmatched"},
		{"^*a$", "nothing to repeat"},
		{"^a^b$", "anchor inside"},
		{"^[]$", "empty character class"},
	};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		r = json_regex_to_gbnf(refused[i][0], 4096, why, sizeof why);
		if (r)
			fail_msg("pattern %s converted to %s", refused[i][0], r);
		if (!strstr(why, refused[i][1]))
			fail_msg("pattern %s: \"%s\" lacks \"%s\"", refused[i][0], why, refused[i][1]);
	}
}

/* ---- refusals ---- */

static void test_refusals(void **state)
{
	(void)state;
	expect_refusal("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":1}}}}",
		       "json_schema: at #/properties/a/items/minimum: unsupported keyword \"minimum\"");
	expect_refusal("{\"type\":\"string\",\"format\":\"email\"}", "at #/format: unsupported format \"email\"");
	expect_refusal("{\"properties\":{\"p\":{\"type\":\"string\",\"pattern\":\"abc\"}}}",
		       "at #/properties/p/pattern: pattern \"abc\": only patterns anchored");
	expect_refusal("{\"type\":\"string\",\"pattern\":\"^(?!x)$\"}", "at #/pattern: pattern at offset");
	expect_refusal("{\"$ref\":\"#/$defs/missing\"}", "at #/$ref: \"$ref\" \"#/$defs/missing\" does not name");
	expect_refusal("{\"$ref\":\"http://example.com/s.json\"}", "does not name a schema in this document");
	expect_refusal("{\"type\":\"array\",\"minItems\":3,\"maxItems\":2}", "\"minItems\" 3 is above \"maxItems\" 2");
	expect_refusal("{\"type\":\"array\",\"maxItems\":-1}", "at #/maxItems: \"maxItems\" must be a non-negative integer");
	expect_refusal("{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"b\"]}",
		       "at #/required/0: \"required\" names \"b\", which is not in \"properties\"");
	expect_refusal("{\"type\":\"frobnicate\"}", "at #/type: unknown type \"frobnicate\"");
	expect_refusal("false", "the schema false admits no value");
	expect_refusal("[1]", "a schema must be an object or a boolean");
	expect_refusal("{\"enum\":[]}", "\"enum\" must be a non-empty array");
	expect_refusal("{\"anyOf\":[{\"type\":\"string\"},{\"not\":{}}]}", "at #/anyOf/1/not: unsupported keyword \"not\"");
	expect_refusal("{\"allOf\":[{\"type\":\"string\"}]}", "\"allOf\" is supported for object schemas only");
	expect_refusal("{\"$defs\":{\"x\":{\"type\":\"integer\",\"maximum\":3}},\"$ref\":\"#/$defs/x\"}",
		       "at #/$defs/x/maximum: unsupported keyword");
	expect_refusal("{\"type\":\"string\",\"pattern\":\"^a$\",\"maxLength\":3}", "combining pattern");
	/* deep nesting is refused, not a stack overflow */
	char deep[64 * 12 + 16] = "";
	for (int i = 0; i < 64; i++)
		strcat(deep, "{\"items\":");
	strcat(deep, "{}");
	for (int i = 0; i < 64; i++)
		strcat(deep, "}");
	expect_refusal(deep, "nested deeper than 64");
}

/* ---- matching (through the GBNF matcher) ---- */

static void test_match_object(void **state)
{
	(void)state;
	static const char schema[] =
		"{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
		"\"age\":{\"type\":\"integer\"},\"ok\":{\"type\":\"boolean\"},"
		"\"score\":{\"type\":\"number\"}},\"required\":[\"age\"]}";
	static const char *const good[] = {
		"{\"age\":3}",
		"{\"name\":\"Al\\\"\\u00e9\",\"age\":-12}",
		"{\"age\":0,\"ok\":true,\"score\":1.5e+3}",
		"{ \"age\" : 3 ,\n  \"ok\": false}",
		"{\"age\":3,\"score\":-0.25}",
		NULL,
	};
	static const char *const bad[] = {
		"{}",                                 /* age is required */
		"{\"name\":\"x\"}",
		"{\"age\":3,\"extra\":1}",            /* additionalProperties absent: none */
		"{\"ok\":true,\"age\":3}",            /* the declared order */
		"{\"age\":03}",
		"{\"age\":3.5}",
		"{\"age\":3,}",
		"{\"age\":3} ",                       /* nothing after the value */
		"{\n\n\"age\":3}",                    /* one newline a gap */
		"{\n                     \"age\":3}", /* at most 20 spaces after it */
		"{\"age\":1234567890123456789}",      /* 16 digits at most */
		NULL,
	};
	check_docs(schema, good, bad);
}

static void test_match_optional_all(void **state)
{
	(void)state;
	static const char *const good[] = {"{}", "{\"b\":1}", "{\"a\":1,\"c\":2}", "{\"c\":2}",
					   "{\"a\":1,\"b\":2,\"c\":3}", NULL};
	static const char *const bad[] = {"{,\"b\":1}", "{\"b\":1,}", "{\"a\":1 \"b\":2}", NULL};
	check_docs("{\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"},"
		   "\"c\":{\"type\":\"integer\"}}}", good, bad);
}

static void test_match_additional(void **state)
{
	(void)state;
	static const char *const good[] = {"{\"a\":1}", "{\"a\":1,\"x\":\"s\",\"y\":\"t\"}", "{\"x\":\"s\"}", "{}",
					   "{\"aa\":\"s\"}", "{\"\":\"s\"}", "{\"\\u0041\":\"s\"}", "{\"b\":\"s\"}", NULL};
	static const char *const bad[] = {"{\"a\":1,\"x\":2}", "{\"x\":\"s\",\"a\":1}",
					  "{\"a\":1,\"a\":\"s\"}", "{\"ab\":2,\"ab\":\"s\"}", NULL};
	check_docs("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"ab\":{\"type\":\"integer\"}},"
		   "\"additionalProperties\":{\"type\":\"string\"}}", good, bad);
	static const char *const good2[] = {"{}", NULL};
	static const char *const bad2[] = {"{\"a\":1}", NULL};
	check_docs("{\"type\":\"object\",\"additionalProperties\":false}", good2, bad2);
}

static void test_match_enum_const(void **state)
{
	(void)state;
	static const char *const good[] = {"\"red\"", "3", "null", "{\"k\":[1,2]}", NULL};
	static const char *const bad[] = {"\"blue\"", "\"Red\"", "4", "{\"k\": [1,2]}", NULL};
	check_docs("{\"enum\":[\"red\",3,null,{\"k\":[1,2]}]}", good, bad);
	static const char *const good2[] = {"\"x\\ny\"", NULL};
	static const char *const bad2[] = {"\"x\"", NULL};
	check_docs("{\"const\":\"x\\ny\"}", good2, bad2);
}

static void test_match_arrays(void **state)
{
	(void)state;
	static const char *const good[] = {"[1]", "[1, 2,3]", "[\n 1,\n 2\n]", NULL};
	static const char *const bad[] = {"[]", "[1,2,3,4]", "[1,]", "[\"a\"]", NULL};
	check_docs("{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":3}", good, bad);
	static const char *const good2[] = {"[\"a\",1,true]", NULL};
	static const char *const bad2[] = {"[\"a\",1]", "[\"a\",1,true,2]", "[1,1,true]", NULL};
	check_docs("{\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"integer\"},{\"type\":\"boolean\"}]}", good2, bad2);
	static const char *const good3[] = {"[]", "[[]]", "[{\"a\":[1,\"x\",null]}]", NULL};
	static const char *const bad3[] = {"[", "[1 2]", NULL};
	check_docs("{\"type\":\"array\"}", good3, bad3);
}

static void test_match_strings(void **state)
{
	(void)state;
	static const char *const good[] = {"\"ab\"", "\"abcd\"", "\"\\\"\\\\\"", "\"\\u0041b\"", NULL};
	static const char *const bad[] = {"\"a\"", "\"abcde\"", "\"a\nb\"", NULL};
	check_docs("{\"type\":\"string\",\"minLength\":2,\"maxLength\":4}", good, bad);
	static const char *const good2[] = {"\"2024-02-29\"", NULL};
	static const char *const bad2[] = {"\"2024-13-01\"", "\"2024-2-1\"", NULL};
	check_docs("{\"type\":\"string\",\"format\":\"date\"}", good2, bad2);
	static const char *const good3[] = {"\"2024-02-29T12:30:00Z\"", "\"2024-02-29T23:59:59.123+01:00\"", NULL};
	static const char *const bad3[] = {"\"2024-02-29 12:30:00Z\"", NULL};
	check_docs("{\"type\":\"string\",\"format\":\"date-time\"}", good3, bad3);
	static const char *const good4[] = {"\"123e4567-e89b-12d3-a456-426614174000\"", NULL};
	static const char *const bad4[] = {"\"123e4567e89b12d3a456426614174000\"", NULL};
	check_docs("{\"type\":\"string\",\"format\":\"uuid\"}", good4, bad4);
}

static void test_match_patterns(void **state)
{
	(void)state;
	static const char *const good[] = {"\"2024-01-31\"", NULL};
	static const char *const bad[] = {"\"2024-1-31\"", "\"x2024-01-31\"", NULL};
	check_docs("{\"type\":\"string\",\"pattern\":\"^\\\\d{4}-\\\\d{2}-\\\\d{2}$\"}", good, bad);
	static const char *const good2[] = {"\"ab.c@x.com\"", "\"a@b.org\"", NULL};
	static const char *const bad2[] = {"\"@x.com\"", "\"a@b.net\"", "\"A@b.org\"", NULL};
	check_docs("{\"type\":\"string\",\"pattern\":\"^[a-z.]+@[a-z]+\\\\.(com|org)$\"}", good2, bad2);
	/* a negated class and '.': JSON escapes for '"', '\' and controls */
	static const char *const good3[] = {"\"x\\\"\"", "\"x\\\\\"", "\"x\\t\"", "\"xé\"", NULL};
	static const char *const bad3[] = {"\"xa\"", "\"x\"\"", "\"x\\n\"", NULL};
	check_docs("{\"type\":\"string\",\"pattern\":\"^x[^a\\\\n]$\"}", good3, bad3);
	static const char *const good4[] = {"\"ab\"", "\"\"", "\"abab\"", NULL};
	static const char *const bad4[] = {"\"aba\"", NULL};
	check_docs("{\"type\":\"string\",\"pattern\":\"^(?:ab)*?$\"}", good4, bad4);
	static const char *const good5[] = {"\"a\\\"b\"", NULL};
	static const char *const bad5[] = {"\"a\\nb\"", NULL};
	check_docs("{\"type\":\"string\",\"pattern\":\"^a.b$\"}", good5, bad5);
}

static void test_match_unions_refs(void **state)
{
	(void)state;
	static const char *const good[] = {"\"x\"", "1", "null", NULL};
	static const char *const bad[] = {"true", "[]", NULL};
	check_docs("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"},{\"type\":\"null\"}]}", good, bad);
	check_docs("{\"type\":[\"string\",\"integer\",\"null\"]}", good, bad);
	check_docs("{\"oneOf\":[{\"type\":\"string\"},{\"type\":[\"integer\",\"null\"]}]}", good, bad);
	/* recursive $ref: a tree */
	static const char *const good2[] = {"{\"v\":1}", "{\"v\":1,\"kids\":[{\"v\":2},{\"v\":3,\"kids\":[]}]}", NULL};
	static const char *const bad2[] = {"{\"v\":1,\"kids\":[{}]}", NULL};
	check_docs("{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},"
		   "\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},\"required\":[\"v\"]}},"
		   "\"$ref\":\"#/$defs/node\"}", good2, bad2);
	static const char *const good3[] = {"{\"a\":1,\"b\":\"x\"}", "{\"a\":1}", NULL};
	static const char *const bad3[] = {"{\"b\":\"x\"}", "{\"a\":1,\"c\":2}", NULL};
	check_docs("{\"definitions\":{\"A\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},"
		   "\"required\":[\"a\"]}},\"allOf\":[{\"$ref\":\"#/definitions/A\"},"
		   "{\"properties\":{\"b\":{\"type\":\"string\"}}}]}", good3, bad3);
}

static void test_match_nested_free(void **state)
{
	(void)state;
	static const char *const good[] = {
		"{\"user\":{\"name\":\"a\",\"address\":{\"city\":\"b\",\"zip\":\"12345\"}},\"meta\":{\"k\":[1,{\"x\":null}]}}",
		NULL,
	};
	static const char *const bad[] = {
		"{\"user\":{\"name\":\"a\",\"address\":{\"city\":\"b\",\"zip\":\"1234\"}},\"meta\":{}}",
		"{\"user\":{\"name\":\"a\",\"address\":{\"city\":\"b\",\"zip\":\"12345\"}},\"meta\":[]}",
		NULL,
	};
	check_docs("{\"type\":\"object\",\"properties\":{\"user\":{\"type\":\"object\",\"properties\":{"
		   "\"name\":{\"type\":\"string\"},\"address\":{\"type\":\"object\",\"properties\":{"
		   "\"city\":{\"type\":\"string\"},\"zip\":{\"type\":\"string\",\"pattern\":\"^[0-9]{5}$\"}},"
		   "\"required\":[\"city\",\"zip\"]}},\"required\":[\"name\",\"address\"]},"
		   "\"meta\":{\"type\":\"object\"}},\"required\":[\"user\",\"meta\"]}", good, bad);
	/* json_object: any object, nesting bounded */
	char *text = json_schema_any_object_gbnf();
	grammar_t *g = grammar_parse(text);
	if (!g)
		fail_msg("%s", err_get());
	assert_true(matches(g, "{}"));
	assert_true(matches(g, "{\"a\": [1, 2.5, \"x\", {\"b\": null}], \"c\": true}"));
	assert_false(matches(g, "[]"));
	assert_false(matches(g, "\"x\""));
	char big[2048] = "{";
	for (int i = 0; i < 16; i++)
		snprintf(big + strlen(big), sizeof big - strlen(big), "%s\"k%d\":%d", i ? "," : "", i, i);
	strcat(big, "}");
	assert_true(matches(g, big)); /* JSON_SCHEMA_ANY_ITEMS members */
	big[strlen(big) - 1] = '\0';
	strcat(big, ",\"k16\":16}");
	assert_false(matches(g, big));
	char str[300] = "{\"s\":\"";
	memset(str + strlen(str), 'x', 256);
	strcat(str, "\"}");
	assert_true(matches(g, str)); /* JSON_SCHEMA_ANY_STRING characters */
	str[strlen(str) - 2] = '\0';
	strcat(str, "x\"}");
	assert_false(matches(g, str));
	char deep[64] = "";
	for (int i = 0; i < 9; i++)
		strcat(deep, "[");
	strcat(deep, "1");
	for (int i = 0; i < 9; i++)
		strcat(deep, "]");
	char doc[128];
	snprintf(doc, sizeof doc, "{\"a\":%s}", deep);
	assert_false(matches(g, doc)); /* past JSON_SCHEMA_ANY_DEPTH */
	snprintf(doc, sizeof doc, "{\"a\":%s}", deep + 2);
	deep[0] = '\0';
	for (int i = 0; i < 7; i++)
		strcat(deep, "[");
	strcat(deep, "1");
	for (int i = 0; i < 7; i++)
		strcat(deep, "]");
	snprintf(doc, sizeof doc, "{\"a\":%s}", deep);
	assert_true(matches(g, doc));
	grammar_free(g);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_object),
		cmocka_unit_test(test_text_bounds),
		cmocka_unit_test(test_regex_text),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_match_object),
		cmocka_unit_test(test_match_optional_all),
		cmocka_unit_test(test_match_additional),
		cmocka_unit_test(test_match_enum_const),
		cmocka_unit_test(test_match_arrays),
		cmocka_unit_test(test_match_strings),
		cmocka_unit_test(test_match_patterns),
		cmocka_unit_test(test_match_unions_refs),
		cmocka_unit_test(test_match_nested_free),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
