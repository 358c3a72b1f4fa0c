/* chat_tools: tools checked, calls read and found (chat_tools.h). */
#include "model/chat_tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "model/json_schema.h"

#define CALL_OPEN "<tool_call>"
#define CALL_CLOSE "</tool_call>"

chat_tool_syntax_t chat_tool_syntax(chat_kind_t kind)
{
	return kind == CHAT_LLAMA31 ? CHAT_TOOLS_LLAMA31 : CHAT_TOOLS_HERMES;
}

/* ---- the request's tools ---- */

/* OpenAI's rule for a function name: 1-64 of [a-zA-Z0-9_-]. */
static bool name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* Keys of obj other than those in keys (NULL-terminated): the first, or
 * NULL. */
static const char *key_unknown(const json_t *obj, const char *const *keys)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)obj, k, v) {
		bool known = false;
		for (int i = 0; keys[i]; i++)
			known |= !strcmp(k, keys[i]);
		if (!known)
			return k;
	}
	return NULL;
}

/* tools[i]: 0 or -1 + err_get(). */
static int tool_check(const json_t *t, size_t i)
{
	static const char *const tool_keys[] = {"type", "function", NULL};
	static const char *const fn_keys[] = {"name", "description", "parameters",
					      "strict", NULL};
	json_t *type = json_object_get(t, "type");
	json_t *fn = json_object_get(t, "function");
	const char *k;
	if (!json_is_object(t))
		return err_set("tools[%zu] must be an object", i);
	if (!json_is_string(type) || strcmp(json_string_value(type), "function"))
		return err_set("tools[%zu].type must be \"function\"", i);
	if ((k = key_unknown(t, tool_keys)))
		return err_set("tools[%zu].%.40s is not a field of a tool", i, k);
	if (!json_is_object(fn))
		return err_set("tools[%zu].function must be an object", i);
	if ((k = key_unknown(fn, fn_keys)))
		return err_set("tools[%zu].function.%.40s is not a field of a "
			       "function", i, k);
	json_t *name = json_object_get(fn, "name");
	if (!json_is_string(name) || !name_ok(json_string_value(name)))
		return err_set("tools[%zu].function.name must be 1-64 characters "
			       "of a-z, A-Z, 0-9, _ and -", i);
	json_t *d = json_object_get(fn, "description");
	if (d && !json_is_string(d) && !json_is_null(d))
		return err_set("tools[%zu].function.description must be a string", i);
	json_t *p = json_object_get(fn, "parameters");
	if (p && !json_is_object(p) && !json_is_null(p))
		return err_set("tools[%zu].function.parameters must be a JSON "
			       "schema object", i);
	json_t *s = json_object_get(fn, "strict");
	if (s && !json_is_boolean(s) && !json_is_null(s))
		return err_set("tools[%zu].function.strict must be a boolean", i);
	return 0;
}

/* The name of tools[i] (checked). */
static const char *tool_name(const json_t *tools, size_t i)
{
	json_t *fn = json_object_get(json_array_get(tools, i), "function");
	return json_string_value(json_object_get(fn, "name"));
}

int chat_tools_check(const json_t *tools)
{
	if (!json_is_array(tools) || !json_array_size(tools))
		return err_set("tools must be a non-empty array of tools");
	for (size_t i = 0; i < json_array_size(tools); i++) {
		if (tool_check(json_array_get(tools, i), i) < 0)
			return -1;
		for (size_t k = 0; k < i; k++)
			if (!strcmp(tool_name(tools, k), tool_name(tools, i)))
				return err_set("tools[%zu].function.name '%s' is "
					       "also tools[%zu]'s", i,
					       tool_name(tools, i), k);
	}
	return 0;
}

int chat_tools_find(const json_t *tools, const char *name)
{
	for (size_t i = 0; i < json_array_size(tools); i++)
		if (!strcmp(tool_name(tools, i), name))
			return (int)i;
	return -1;
}

/* ---- an assistant message's tool_calls ---- */

/* tool_calls[k] into *c; 0 or -1 + err_get(). */
static int call_from_json(const json_t *tc, size_t k, chat_tool_call_t *c)
{
	json_t *id = json_object_get(tc, "id");
	json_t *type = json_object_get(tc, "type");
	json_t *fn = json_object_get(tc, "function");
	json_t *name = json_object_get(fn, "name");
	json_t *args = json_object_get(fn, "arguments");
	if (!json_is_object(tc) || !json_is_object(fn))
		return err_set("tool_calls[%zu] must be {\"id\", \"type\": "
			       "\"function\", \"function\": {\"name\", "
			       "\"arguments\"}}", k);
	if (id && !json_is_string(id) && !json_is_null(id))
		return err_set("tool_calls[%zu].id must be a string", k);
	if (type && (!json_is_string(type) ||
		     strcmp(json_string_value(type), "function")))
		return err_set("tool_calls[%zu].type must be \"function\"", k);
	if (!json_is_string(name) || !json_string_length(name))
		return err_set("tool_calls[%zu].function.name must be a "
			       "non-empty string", k);
	if (!json_is_string(args))
		return err_set("tool_calls[%zu].function.arguments must be a "
			       "string of JSON", k);
	json_error_t je;
	json_t *a = json_loadb(json_string_value(args), json_string_length(args),
			       JSON_DECODE_ANY, &je);
	if (!a)
		return err_set("tool_calls[%zu].function.arguments is not JSON: "
			       "%s at column %d", k, je.text, je.column);
	c->id = json_is_string(id) ? json_string_value(id) : NULL;
	c->name = json_string_value(name);
	c->args = a;
	return 0;
}

int chat_calls_from_json(const json_t *tool_calls, chat_tool_call_t **calls,
			 int *n)
{
	*calls = NULL;
	*n = 0;
	if (!json_is_array(tool_calls))
		return err_set("tool_calls must be an array");
	size_t m = json_array_size(tool_calls);
	if (!m)
		return 0;
	chat_tool_call_t *c = calloc(m, sizeof *c);
	if (!c)
		abort(); /* out of memory */
	for (size_t k = 0; k < m; k++) {
		if (call_from_json(json_array_get(tool_calls, k), k, &c[k]) < 0) {
			chat_calls_free(c, (int)k);
			return -1;
		}
	}
	*calls = c;
	*n = (int)m;
	return 0;
}

void chat_calls_free(chat_tool_call_t *calls, int n)
{
	for (int k = 0; k < n; k++)
		json_decref((json_t *)calls[k].args);
	free(calls);
}

/* ---- calls in a model's text ---- */

static bool is_space(char c)
{
	return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* The call object {"name": N, key: ARGS} in text[0..n) (white space
 * around allowed), N a function of tools, ARGS an object (or a string
 * holding one) under "arguments" or, where alt is set, under alt too:
 * true with *out filled. */
static bool call_read(const char *text, size_t n, const char *alt,
		      const json_t *tools, chat_call_out_t *out)
{
	json_t *o = json_loadb(text, n, 0, NULL);
	json_t *name = json_object_get(o, "name");
	json_t *args = json_object_get(o, "arguments");
	if (!args && alt)
		args = json_object_get(o, alt);
	json_t *parsed = NULL;
	if (json_is_string(args))
		args = parsed = json_loads(json_string_value(args), 0, NULL);
	bool ok = json_is_object(o) && json_object_size(o) == 2 &&
		  json_is_string(name) && json_is_object(args) &&
		  chat_tools_find(tools, json_string_value(name)) >= 0;
	if (ok) {
		out->name = strdup(json_string_value(name));
		out->args = json_dumps(args, JSON_COMPACT);
		if (!out->name || !out->args)
			abort(); /* out of memory */
	}
	json_decref(parsed);
	json_decref(o);
	return ok;
}

/* Appends a call to p (grown one at a time: a handful of calls). */
static chat_call_out_t *parsed_add(chat_parsed_t *p)
{
	p->calls = realloc(p->calls, (size_t)(p->n_calls + 1) * sizeof *p->calls);
	if (!p->calls)
		abort(); /* out of memory */
	return memset(&p->calls[p->n_calls++], 0, sizeof *p->calls);
}

/* The length of text[0..n) without a tail that begins the closing tag
 * (a generation cut by its token limit inside it). */
static size_t cut_partial_close(const char *text, size_t n)
{
	const size_t nc = strlen(CALL_CLOSE);
	for (size_t k = nc - 1; k > 0; k--)
		if (k <= n && !memcmp(text + n - k, CALL_CLOSE, k))
			return n - k;
	return n;
}

/* Hermes: text, then <tool_call> blocks separated by white space only;
 * the last block's closing tag may be missing or cut (the generation
 * ended on the end-of-turn token right after the object, or on its token
 * limit inside the tag). */
static bool parse_hermes(const char *text, size_t n, const json_t *tools,
			 chat_parsed_t *out)
{
	const size_t no = strlen(CALL_OPEN), nc = strlen(CALL_CLOSE);
	const char *p = memmem(text, n, CALL_OPEN, no), *end = text + n;
	if (!p)
		return false;
	out->n_content = (size_t)(p - text);
	while (out->n_content && is_space(text[out->n_content - 1]))
		out->n_content--;
	while (p < end) {
		if ((size_t)(end - p) < no || memcmp(p, CALL_OPEN, no))
			return false;
		p += no;
		const char *q = memmem(p, (size_t)(end - p), CALL_CLOSE, nc);
		const char *body_end = q ? q : p + cut_partial_close(p, (size_t)(end - p));
		if (!call_read(p, (size_t)(body_end - p), NULL, tools, parsed_add(out)))
			return false;
		p = q ? q + nc : end;
		while (p < end && is_space(*p))
			p++;
	}
	return true;
}

/* Llama 3.1: the whole answer is one {"name", "parameters"} object
 * (after white space and the <|python_tag|> some answers begin with). */
static bool parse_llama31(const char *text, size_t n, const json_t *tools,
			  chat_parsed_t *out)
{
	static const char tag[] = "<|python_tag|>";
	size_t i = 0;
	while (i < n && is_space(text[i]))
		i++;
	if (n - i >= sizeof tag - 1 && !memcmp(text + i, tag, sizeof tag - 1))
		i += sizeof tag - 1;
	if (i >= n || text[i] != '{')
		return false;
	out->n_content = 0;
	return call_read(text + i, n - i, "parameters", tools, parsed_add(out));
}

void chat_tools_parse(chat_tool_syntax_t s, const char *text, size_t n,
		      const json_t *tools, chat_parsed_t *out)
{
	memset(out, 0, sizeof *out);
	bool ok = s == CHAT_TOOLS_LLAMA31 ? parse_llama31(text, n, tools, out)
					  : parse_hermes(text, n, tools, out);
	if (!ok) {
		chat_parsed_free(out);
		out->n_content = n;
	}
}

void chat_parsed_free(chat_parsed_t *p)
{
	for (int k = 0; k < p->n_calls; k++) {
		free(p->calls[k].name);
		free(p->calls[k].args);
	}
	free(p->calls);
	p->calls = NULL;
	p->n_calls = 0;
}

size_t chat_tools_stream_safe(chat_tool_syntax_t s, const char *text,
			      size_t n, size_t from, bool *call)
{
	*call = false;
	if (s == CHAT_TOOLS_LLAMA31) { /* a call is the whole answer */
		size_t i = 0;
		while (i < n && is_space(text[i]))
			i++;
		if (i == n)
			return 0; /* only white space so far */
		static const char tag[] = "<|python_tag|>";
		size_t m = n - i < sizeof tag - 1 ? n - i : sizeof tag - 1;
		*call = text[i] == '{' || !memcmp(text + i, tag, m);
		return *call ? 0 : n;
	}
	const size_t no = strlen(CALL_OPEN);
	const char *p = memmem(text + from, n - from, CALL_OPEN, no);
	size_t safe = p ? (size_t)(p - text) : n;
	*call = p != NULL;
	if (!p) /* a tail that may grow into <tool_call> waits */
		for (size_t k = no - 1; k > 0; k--)
			if (k <= n - from && !memcmp(text + n - k, CALL_OPEN, k)) {
				safe = n - k;
				break;
			}
	while (safe > from && is_space(text[safe - 1]))
		safe--; /* white space before a call is not the text's */
	return safe;
}

/* ---- the grammar of a call ---- */

static bool gbnf_word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Skips a quoted literal or a character class of GBNF text starting at
 * p (its opening " or [) up to its closing one, escapes included; the
 * byte after it. */
static const char *gbnf_skip_quoted(const char *p, char close)
{
	for (p++; *p && *p != close; p++)
		if (*p == '\\' && p[1])
			p++;
	return *p ? p + 1 : p;
}

/* Writes GBNF text g to f with every rule name prefixed by pre: names are
 * runs of word characters outside literals, classes, repetition counts
 * {m,n} and comments. */
static void gbnf_put_prefixed(FILE *f, const char *g, const char *pre)
{
	const char *p = g;
	while (*p) {
		const char *q = p;
		if (*p == '"' || *p == '[') {
			q = gbnf_skip_quoted(p, *p == '"' ? '"' : ']');
		} else if (*p == '{') {
			q = strchr(p, '}');
			q = q ? q + 1 : p + strlen(p);
		} else if (*p == '#') {
			q = strchr(p, '\n');
			q = q ? q : p + strlen(p);
		} else if (gbnf_word_char(*p)) {
			fputs(pre, f);
			while (gbnf_word_char(*q))
				q++;
		} else {
			q = p + 1;
		}
		fwrite(p, 1, (size_t)(q - p), f);
		p = q;
	}
	fputc('\n', f);
}

/* tools[i]'s arguments as GBNF rules "t<i>-..." whose start is
 * t<i>-root: its parameters schema compiled (json_schema.h), "{}" when
 * it has none. 0 or -1 + err_get() naming the tool. */
static int tool_args_gbnf(FILE *f, const json_t *tools, size_t i)
{
	json_t *fn = json_object_get(json_array_get(tools, i), "function");
	json_t *params = json_object_get(fn, "parameters");
	char pre[32];
	snprintf(pre, sizeof pre, "t%zu-", i);
	if (!params || json_is_null(params)) {
		fprintf(f, "%sroot ::= \"{}\"\n", pre);
		return 0;
	}
	char *g = json_schema_to_gbnf(params);
	if (!g)
		return err_wrap("tools[%zu].function.parameters", i);
	gbnf_put_prefixed(f, g, pre);
	free(g);
	return 0;
}

char *chat_tools_grammar(chat_tool_syntax_t s, const json_t *tools,
			 const char *name)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort(); /* out of memory */
	bool llama = s == CHAT_TOOLS_LLAMA31;
	fprintf(f, "root ::= \"%s{\\\"name\\\": \\\"\" call \"}%s\"\ncall ::= ",
		llama ? "" : "<tool_call>\\n", llama ? "" : "\\n</tool_call>");
	int rc = 0, alt = 0;
	for (size_t i = 0; i < json_array_size(tools); i++)
		if (!name || !strcmp(tool_name(tools, i), name))
			fprintf(f, "%s\"%s\\\", \\\"%s\\\": \" t%zu-root", alt++ ? " | " : "",
				tool_name(tools, i), llama ? "parameters" : "arguments", i);
	fputc('\n', f);
	for (size_t i = 0; i < json_array_size(tools) && rc == 0; i++)
		if (!name || !strcmp(tool_name(tools, i), name))
			rc = tool_args_gbnf(f, tools, i);
	fclose(f);
	if (rc < 0 || !alt) {
		free(text);
		if (!alt)
			err_set("tool_choice names '%.64s', which is not in tools", name);
		return NULL;
	}
	return text;
}
