/* json_schema: JSON schema to GBNF (json_schema.h has the contract).
 *
 * The converter walks the schema once. Each schema node becomes one GBNF
 * rule whose name starts with "root" (or "ref-" for a $ref target), so it
 * never collides with the shared rules (ws, string, number, value-N...),
 * which are added once when first needed. Every rule is written so that at
 * each byte at most one alternative can continue (keys are literals, the
 * optional whitespace precedes a fixed byte): the matcher's stacks stay
 * few. The text prints "root" first, then the rules in creation order. */
#include "model/json_schema.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "model/grammar.h"
#include "model/json_regex.h"

/* Schema nesting the converter follows (a recursive $ref is a rule cycle,
 * not nesting); deeper is refused. */
#define JS_DEPTH_MAX 64
/* The largest count a repetition may name (maxItems, maxLength, {m,n}). */
#define JS_REPEAT_MAX 4096

/* ---- the shared rules ---- */

typedef struct js_builtin {
	const char *name;
	const char *body;
	const char *deps[3];
} js_builtin_t;

/* Whitespace as llama.cpp bounds it: nothing, one space, or one newline and
 * at most 20 spaces or tabs of indentation. Numbers as llama.cpp's: at
 * most 16 digits a part, so a number always ends. */
static const js_builtin_t js_builtins[] = {
	{"ws", "| \" \" | \"\\n\" [ \\t]{0,20}", {0}},
	{"char", "[^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})", {0}},
	{"string", "\"\\\"\" char* \"\\\"\"", {"char"}},
	{"integral-part", "[0] | [1-9] [0-9]{0,15}", {0}},
	{"decimal-part", "[0-9]{1,16}", {0}},
	{"integer", "\"-\"? integral-part", {"integral-part"}},
	{"number", "\"-\"? integral-part (\".\" decimal-part)? ([eE] [-+]? integral-part)?",
	 {"integral-part", "decimal-part"}},
	{"boolean", "\"true\" | \"false\"", {0}},
	{"null", "\"null\"", {0}},
	{"date", "[0-9]{4} \"-\" (\"0\" [1-9] | \"1\" [0-2]) \"-\" (\"0\" [1-9] | [1-2] [0-9] | \"3\" [0-1])", {0}},
	{"time", "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{3})? "
		 "(\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])", {0}},
	{"date-time", "date \"T\" time", {"date", "time"}},
	{"date-string", "\"\\\"\" date \"\\\"\"", {"date"}},
	{"time-string", "\"\\\"\" time \"\\\"\"", {"time"}},
	{"date-time-string", "\"\\\"\" date-time \"\\\"\"", {"date-time"}},
	{"uuid-string", "\"\\\"\" [0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
			"[0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{12} \"\\\"\"", {0}},
};

/* ---- the converter's state ---- */

typedef struct js_rule {
	char *name;
	char *body; /* NULL while reserved (a $ref being converted) */
} js_rule_t;

typedef struct js_ref {
	char *ref;
	const char *name; /* the rule's name, owned by the rule table */
} js_ref_t;

typedef struct js_conv {
	const json_t *top;  /* the whole schema, for $ref */
	js_rule_t *rules;
	size_t n_rules, cap_rules;
	js_ref_t *refs;
	size_t n_refs, cap_refs;
	char path[1024];    /* "#/properties/x/items": where the walk is */
	size_t path_len;
	int depth;
	bool any_done;      /* the free-form value rules are in */
} js_conv_t;

/* malloc'd printf; NULL + err_set on allocation failure. */
static char *js_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *js_fmt(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		err_set("json_schema: out of memory");
		return NULL;
	}
	return s;
}

/* Records "json_schema: at <path>[/seg]: <what>"; returns NULL. */
static void *js_fail(const js_conv_t *c, const char *seg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void *js_fail(const js_conv_t *c, const char *seg, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	err_set("json_schema: at %s%s%s: %s", c->path, seg ? "/" : "", seg ? seg : "", what);
	return NULL;
}

/* Appends "/seg" (JSON pointer escaped) to the path; returns the old length
 * for js_path_pop. A path too long is cut (messages only). */
static size_t js_path_push(js_conv_t *c, const char *seg)
{
	size_t old = c->path_len;
	size_t n = c->path_len;
	if (n + 1 < sizeof c->path)
		c->path[n++] = '/';
	for (const char *p = seg; *p && n + 2 < sizeof c->path; p++) {
		if (*p == '~' || *p == '/') {
			c->path[n++] = '~';
			c->path[n++] = *p == '~' ? '0' : '1';
		} else {
			c->path[n++] = *p;
		}
	}
	c->path[n] = '\0';
	c->path_len = n;
	return old;
}

static void js_path_push_index(js_conv_t *c, const char *seg, size_t i, size_t *old)
{
	char b[64];
	snprintf(b, sizeof b, "%zu", i);
	*old = js_path_push(c, seg);
	js_path_push(c, b);
}

static void js_path_pop(js_conv_t *c, size_t old)
{
	c->path_len = old;
	c->path[old] = '\0';
}

static const js_rule_t *js_rule_find(const js_conv_t *c, const char *name)
{
	for (size_t i = 0; i < c->n_rules; i++)
		if (strcmp(c->rules[i].name, name) == 0)
			return &c->rules[i];
	return NULL;
}

/* Adds rule name ::= body under exactly that name (a shared rule); takes
 * body. Returns the name or NULL. */
static const char *js_rule_put(js_conv_t *c, char *name, char *body)
{
	if (!name) {
		free(body);
		return NULL;
	}
	if (c->n_rules == c->cap_rules) {
		size_t cap = c->cap_rules ? 2 * c->cap_rules : 32;
		js_rule_t *r = realloc(c->rules, cap * sizeof *r);
		if (!r) {
			free(name);
			free(body);
			err_set("json_schema: out of memory");
			return NULL;
		}
		c->rules = r;
		c->cap_rules = cap;
	}
	c->rules[c->n_rules].name = name;
	c->rules[c->n_rules].body = body;
	return c->rules[c->n_rules++].name;
}

/* A fresh rule name from hint: [a-zA-Z0-9-] kept, anything else '-', a
 * number appended where the name is taken. malloc'd or NULL. */
static char *js_rule_name(const js_conv_t *c, const char *hint)
{
	size_t n = strlen(hint);
	char *base = malloc(n + 1);
	if (!base) {
		err_set("json_schema: out of memory");
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		char ch = hint[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			  (ch >= '0' && ch <= '9') || ch == '-';
		base[i] = ok ? ch : '-';
	}
	base[n] = '\0';
	if (!js_rule_find(c, base))
		return base;
	for (unsigned k = 1;; k++) {
		char *name = js_fmt("%s-%u", base, k);
		if (!name || !js_rule_find(c, name)) {
			free(base);
			return name;
		}
		free(name);
	}
}

/* Adds a rule named after hint; takes body (NULL: fails). */
static const char *js_rule_add(js_conv_t *c, const char *hint, char *body)
{
	if (!body)
		return NULL;
	return js_rule_put(c, js_rule_name(c, hint), body);
}

/* Makes sure the shared rule name (and what it uses) is in. */
static bool js_need(js_conv_t *c, const char *name)
{
	if (js_rule_find(c, name))
		return true;
	for (size_t i = 0; i < sizeof js_builtins / sizeof js_builtins[0]; i++) {
		const js_builtin_t *b = &js_builtins[i];
		if (strcmp(b->name, name) != 0)
			continue;
		for (size_t d = 0; d < 3 && b->deps[d]; d++)
			if (!js_need(c, b->deps[d]))
				return false;
		char *n = strdup(name), *body = strdup(b->body);
		if (!n || !body) {
			free(n);
			free(body);
			err_set("json_schema: out of memory");
			return false;
		}
		return js_rule_put(c, n, body) != NULL;
	}
	err_set("json_schema: internal: no shared rule %s", name);
	return false;
}

/* The free-form JSON value rules value-0 .. value-D: value-K's objects and
 * arrays hold value-(K+1); value-D is a scalar, so any value nests at most
 * JSON_SCHEMA_ANY_DEPTH levels. Their strings (keys too) hold at most
 * JSON_SCHEMA_ANY_STRING characters and their objects and arrays at most
 * JSON_SCHEMA_ANY_ITEMS members: a free-form value always ends. */
static bool js_need_any(js_conv_t *c)
{
	if (c->any_done)
		return true;
	if (!js_need(c, "ws") || !js_need(c, "char") || !js_need(c, "number") ||
	    !js_need(c, "boolean") || !js_need(c, "null"))
		return false;
	if (!js_rule_put(c, js_fmt("any-string"), js_fmt("\"\\\"\" char{0,%d} \"\\\"\"", JSON_SCHEMA_ANY_STRING)))
		return false;
	for (int k = 0; k <= JSON_SCHEMA_ANY_DEPTH; k++) {
		char *body;
		if (k == JSON_SCHEMA_ANY_DEPTH)
			body = js_fmt("any-string | number | boolean | null");
		else
			body = js_fmt("object-%d | array-%d | any-string | number | boolean | null", k, k);
		if (!js_rule_put(c, js_fmt("value-%d", k), body))
			return false;
		if (k == JSON_SCHEMA_ANY_DEPTH)
			break;
		body = js_fmt("\"{\" ws (any-string ws \":\" ws value-%d ws (\",\" ws any-string ws \":\" ws value-%d ws){0,%d})? \"}\"",
			      k + 1, k + 1, JSON_SCHEMA_ANY_ITEMS - 1);
		if (!js_rule_put(c, js_fmt("object-%d", k), body))
			return false;
		body = js_fmt("\"[\" ws (value-%d ws (\",\" ws value-%d ws){0,%d})? \"]\"", k + 1, k + 1,
			      JSON_SCHEMA_ANY_ITEMS - 1);
		if (!js_rule_put(c, js_fmt("array-%d", k), body))
			return false;
	}
	c->any_done = true;
	return true;
}

/* ---- literals ---- */

/* Appends s[0..n) as the inside of a GBNF string literal. */
static void js_lit_bytes(char *out, size_t *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\') {
			out[(*o)++] = '\\';
			out[(*o)++] = (char)ch;
		} else if (ch < 0x20 || ch == 0x7F) {
			*o += (size_t)sprintf(out + *o, "\\x%02X", ch);
		} else {
			out[(*o)++] = (char)ch;
		}
	}
	out[*o] = '\0';
}

/* The GBNF literal "..." matching exactly bytes s[0..n). malloc'd or NULL. */
static char *js_literal(const char *s, size_t n)
{
	char *out = malloc(4 * n + 3);
	if (!out) {
		err_set("json_schema: out of memory");
		return NULL;
	}
	size_t o = 0;
	out[o++] = '"';
	js_lit_bytes(out, &o, s, n);
	out[o++] = '"';
	out[o] = '\0';
	return out;
}

/* The GBNF literal of a JSON value's compact text (enum, const). */
static char *js_value_literal(const json_t *v)
{
	char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!text) {
		err_set("json_schema: cannot write a value");
		return NULL;
	}
	char *lit = js_literal(text, strlen(text));
	free(text);
	return lit;
}

/* ---- the keywords ---- */

static const char *js_visit(js_conv_t *c, const json_t *schema, const char *hint);

/* Keywords that change nothing in what is generated. */
static const char *const js_annotations[] = {
	"title", "description", "$schema", "$id", "$comment", "examples", "default",
	"deprecated", "readOnly", "writeOnly", "$defs", "definitions", NULL,
};

/* Keywords the converter implements. */
static const char *const js_keywords[] = {
	"type", "properties", "required", "additionalProperties", "items", "prefixItems",
	"minItems", "maxItems", "minLength", "maxLength", "pattern", "format", "enum",
	"const", "anyOf", "oneOf", "allOf", "$ref", NULL,
};

static bool js_in(const char *const *list, const char *k)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(list[i], k) == 0)
			return true;
	return false;
}

/* Refuses a keyword the converter does not know; NULL = all known. */
static bool js_check_keywords(js_conv_t *c, const json_t *schema)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)schema, k, v) {
		if (!js_in(js_keywords, k) && !js_in(js_annotations, k)) {
			size_t old = js_path_push(c, k);
			js_fail(c, NULL, "unsupported keyword \"%s\"", k);
			js_path_pop(c, old);
			return false;
		}
	}
	return true;
}

/* A non-negative integer keyword: its value in *out (def when absent);
 * false (err set) when it is not one or is past JS_REPEAT_MAX. */
static bool js_count(js_conv_t *c, const json_t *schema, const char *key, long def, long *out)
{
	const json_t *v = json_object_get(schema, key);
	*out = def;
	if (!v)
		return true;
	double d = json_is_integer(v) ? (double)json_integer_value(v) : json_is_real(v) ? json_real_value(v) : -1;
	if (d < 0 || d != (double)(long)d) {
		js_fail(c, key, "\"%s\" must be a non-negative integer", key);
		return false;
	}
	if (d > JS_REPEAT_MAX) {
		js_fail(c, key, "\"%s\" %.0f is past the converter's limit %d", key, d, JS_REPEAT_MAX);
		return false;
	}
	*out = (long)d;
	return true;
}

/* "{m,n}" / "{m,}" / "*" / "?" ... for item repeated min..max times (max
 * < 0: no bound) as a GBNF suffix; malloc'd. */
static char *js_repeat(long min, long max)
{
	if (max < 0)
		return min == 0 ? js_fmt("*") : min == 1 ? js_fmt("+") : js_fmt("{%ld,}", min);
	if (min == 0 && max == 1)
		return js_fmt("?");
	if (min == max)
		return js_fmt("{%ld}", min);
	return js_fmt("{%ld,%ld}", min, max);
}

static const char *js_visit_enum(js_conv_t *c, const json_t *vals, const char *hint)
{
	if (!json_is_array(vals) || json_array_size(vals) == 0)
		return js_fail(c, "enum", "\"enum\" must be a non-empty array");
	size_t cap = 64, n = 0;
	char *body = malloc(cap);
	if (!body)
		return NULL;
	body[0] = '\0';
	size_t i;
	json_t *v;
	json_array_foreach(vals, i, v) {
		char *lit = js_value_literal(v);
		if (!lit) {
			free(body);
			return NULL;
		}
		size_t need = n + strlen(lit) + 4;
		if (need > cap) {
			cap = 2 * need;
			char *b = realloc(body, cap);
			if (!b) {
				free(lit);
				free(body);
				err_set("json_schema: out of memory");
				return NULL;
			}
			body = b;
		}
		n += (size_t)sprintf(body + n, "%s%s", i ? " | " : "", lit);
		free(lit);
	}
	return js_rule_add(c, hint, body);
}

/* Joins the rule names of the schemas in arr (anyOf, oneOf) as one
 * alternation rule. */
static const char *js_visit_union(js_conv_t *c, const json_t *arr, const char *key, const char *hint)
{
	if (!json_is_array(arr) || json_array_size(arr) == 0)
		return js_fail(c, key, "\"%s\" must be a non-empty array", key);
	char *body = strdup("");
	size_t i;
	json_t *sub;
	json_array_foreach(arr, i, sub) {
		size_t old;
		js_path_push_index(c, key, i, &old);
		char *h = js_fmt("%s-%zu", hint, i);
		const char *name = h ? js_visit(c, sub, h) : NULL;
		free(h);
		js_path_pop(c, old);
		char *nb = name && body ? js_fmt("%s%s%s", body, i ? " | " : "", name) : NULL;
		free(body);
		body = nb;
		if (!body)
			return NULL;
	}
	return js_rule_add(c, hint, body);
}

/* Resolves a local JSON pointer "#/a/b" against the whole schema. */
static const json_t *js_pointer(const js_conv_t *c, const char *ref)
{
	if (ref[0] != '#')
		return NULL;
	const json_t *at = c->top;
	const char *p = ref + 1;
	while (*p == '/') {
		p++;
		char seg[256];
		size_t n = 0;
		for (; *p && *p != '/'; p++) {
			char ch = *p;
			if (ch == '~' && (p[1] == '0' || p[1] == '1')) {
				ch = p[1] == '0' ? '~' : '/';
				p++;
			}
			if (n + 1 >= sizeof seg)
				return NULL;
			seg[n++] = ch;
		}
		seg[n] = '\0';
		if (json_is_object(at)) {
			at = json_object_get(at, seg);
		} else if (json_is_array(at)) {
			char *end;
			unsigned long idx = strtoul(seg, &end, 10);
			at = *seg && !*end ? json_array_get(at, idx) : NULL;
		} else {
			at = NULL;
		}
		if (!at)
			return NULL;
	}
	return *p ? NULL : at;
}

/* A $ref: one rule per target, reserved before its schema is converted so
 * that a recursive reference names it. */
static const char *js_visit_ref(js_conv_t *c, const json_t *ref)
{
	if (!json_is_string(ref))
		return js_fail(c, "$ref", "\"$ref\" must be a string");
	const char *r = json_string_value(ref);
	for (size_t i = 0; i < c->n_refs; i++)
		if (strcmp(c->refs[i].ref, r) == 0)
			return c->refs[i].name;
	const json_t *target = js_pointer(c, r);
	if (!target)
		return js_fail(c, "$ref", "\"$ref\" \"%s\" does not name a schema in this document (only \"#/...\" pointers)", r);
	if (c->n_refs == c->cap_refs) {
		size_t cap = c->cap_refs ? 2 * c->cap_refs : 8;
		js_ref_t *nr = realloc(c->refs, cap * sizeof *nr);
		if (!nr) {
			err_set("json_schema: out of memory");
			return NULL;
		}
		c->refs = nr;
		c->cap_refs = cap;
	}
	const char *tail = strrchr(r, '/');
	char *hint = js_fmt("ref-%s", tail ? tail + 1 : "root");
	const char *name = hint ? js_rule_put(c, js_rule_name(c, hint), NULL) : NULL;
	free(hint);
	if (!name)
		return NULL;
	char *rcopy = strdup(r);
	if (!rcopy)
		return NULL;
	c->refs[c->n_refs].ref = rcopy;
	c->refs[c->n_refs].name = name;
	c->n_refs++;
	/* the target's errors name its own path */
	char saved[sizeof c->path];
	size_t saved_len = c->path_len;
	memcpy(saved, c->path, sizeof saved);
	snprintf(c->path, sizeof c->path, "%s", r);
	c->path_len = strlen(c->path);
	char *inner_hint = js_fmt("%s-def", name);
	const char *inner = inner_hint ? js_visit(c, target, inner_hint) : NULL;
	free(inner_hint);
	memcpy(c->path, saved, sizeof saved);
	c->path_len = saved_len;
	if (!inner)
		return NULL;
	js_rule_t *rule = (js_rule_t *)js_rule_find(c, name);
	rule->body = strdup(inner);
	return rule->body ? name : NULL;
}

/* A string: minLength/maxLength, pattern or format. */
static const char *js_visit_string(js_conv_t *c, const json_t *schema, const char *hint)
{
	const json_t *pattern = json_object_get(schema, "pattern");
	const json_t *format = json_object_get(schema, "format");
	bool has_len = json_object_get(schema, "minLength") || json_object_get(schema, "maxLength");
	if ((pattern != NULL) + (format != NULL) + has_len > 1)
		return js_fail(c, NULL, "combining pattern, format and minLength/maxLength is not supported");
	if (pattern) {
		if (!json_is_string(pattern))
			return js_fail(c, "pattern", "\"pattern\" must be a string");
		char why[256];
		char *re = json_regex_to_gbnf(json_string_value(pattern), JS_REPEAT_MAX, why, sizeof why);
		if (!re)
			return js_fail(c, "pattern", "%s", why);
		char *body = js_fmt("\"\\\"\" %s \"\\\"\"", re);
		free(re);
		return js_rule_add(c, hint, body);
	}
	if (format) {
		const char *f = json_is_string(format) ? json_string_value(format) : "";
		static const char *const formats[] = {"date", "time", "date-time", "uuid", NULL};
		if (!js_in(formats, f))
			return js_fail(c, "format", "unsupported format \"%s\" (date, time, date-time, uuid)", f);
		char name[32];
		snprintf(name, sizeof name, "%s-string", f);
		return js_need(c, name) ? js_rule_find(c, name)->name : NULL;
	}
	if (!js_need(c, "string"))
		return NULL;
	long min, max;
	if (!js_count(c, schema, "minLength", 0, &min) || !js_count(c, schema, "maxLength", -1, &max))
		return NULL;
	if (max >= 0 && min > max)
		return js_fail(c, "minLength", "\"minLength\" %ld is above \"maxLength\" %ld", min, max);
	if (min == 0 && max < 0)
		return "string";
	char *rep = js_repeat(min, max);
	char *body = rep ? js_fmt("\"\\\"\" char%s \"\\\"\"", rep) : NULL;
	free(rep);
	return js_rule_add(c, hint, body);
}

/* The rule of a subschema at key (items, additionalProperties): "any
 * value" when it is absent or true, else its own rule named HINT-SUFFIX,
 * visited with key on the error path. NULL on failure. */
static const char *js_visit_sub(js_conv_t *c, const json_t *sub, const char *key,
				const char *hint, const char *suffix)
{
	if (!sub || json_is_true(sub))
		return js_need_any(c) ? "value-0" : NULL;
	size_t old = js_path_push(c, key);
	char *h = js_fmt("%s-%s", hint, suffix);
	const char *rule = h ? js_visit(c, sub, h) : NULL;
	free(h);
	js_path_pop(c, old);
	return rule;
}

/* An array: items (one schema for all), or prefixItems (a fixed tuple);
 * minItems, maxItems. */
static const char *js_visit_array(js_conv_t *c, const json_t *schema, const char *hint)
{
	if (!js_need(c, "ws"))
		return NULL;
	const json_t *prefix = json_object_get(schema, "prefixItems");
	const json_t *items = json_object_get(schema, "items");
	long min, max;
	if (!js_count(c, schema, "minItems", 0, &min) || !js_count(c, schema, "maxItems", -1, &max))
		return NULL;
	if (max >= 0 && min > max)
		return js_fail(c, "minItems", "\"minItems\" %ld is above \"maxItems\" %ld", min, max);
	if (prefix) {
		if (!json_is_array(prefix) || json_array_size(prefix) == 0)
			return js_fail(c, "prefixItems", "\"prefixItems\" must be a non-empty array");
		if ((items && !json_is_false(items)) || json_object_get(schema, "minItems") ||
		    json_object_get(schema, "maxItems"))
			return js_fail(c, "prefixItems", "\"prefixItems\" with items, minItems or maxItems is not supported (a fixed tuple only)");
		char *body = strdup("\"[\" ws");
		size_t i;
		json_t *sub;
		json_array_foreach(prefix, i, sub) {
			size_t old;
			js_path_push_index(c, "prefixItems", i, &old);
			char *h = js_fmt("%s-%zu", hint, i);
			const char *name = h ? js_visit(c, sub, h) : NULL;
			free(h);
			js_path_pop(c, old);
			char *nb = name && body ? js_fmt("%s %s%s ws", body, i ? "\",\" ws " : "", name) : NULL;
			free(body);
			if (!(body = nb))
				return NULL;
		}
		char *nb = js_fmt("%s \"]\"", body);
		free(body);
		return js_rule_add(c, hint, nb);
	}
	const char *item = js_visit_sub(c, items, "items", hint, "item");
	if (!item)
		return NULL;
	if (max == 0)
		return js_rule_add(c, hint, strdup("\"[\" ws \"]\""));
	char *rep = js_repeat(min > 0 ? min - 1 : 0, max < 0 ? -1 : max - 1);
	char *body = rep ? js_fmt("\"[\" ws (%s ws (\",\" ws %s ws)%s)%s \"]\"", item, item, rep,
				  min == 0 ? "?" : "") : NULL;
	free(rep);
	return js_rule_add(c, hint, body);
}

/* The properties of an object, gathered from one schema or several
 * (allOf). */
typedef struct js_props {
	const char *names[256];
	const json_t *schemas[256];
	bool required[256];
	size_t n;
} js_props_t;

static bool js_props_add(js_conv_t *c, js_props_t *p, const json_t *schema)
{
	const json_t *props = json_object_get(schema, "properties");
	const json_t *req = json_object_get(schema, "required");
	if (props && !json_is_object(props)) {
		js_fail(c, "properties", "\"properties\" must be an object");
		return false;
	}
	if (req && !json_is_array(req)) {
		js_fail(c, "required", "\"required\" must be an array of names");
		return false;
	}
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)props, k, v) {
		size_t i = 0;
		while (i < p->n && strcmp(p->names[i], k) != 0)
			i++;
		if (i < p->n) {
			js_fail(c, "properties", "property \"%s\" is declared twice", k);
			return false;
		}
		if (p->n == sizeof p->names / sizeof p->names[0]) {
			js_fail(c, "properties", "more than %zu properties", p->n);
			return false;
		}
		p->names[p->n] = k;
		p->schemas[p->n] = v;
		p->required[p->n] = false;
		p->n++;
	}
	size_t j;
	json_array_foreach(req, j, v) {
		const char *name = json_string_value(v);
		size_t i = 0;
		while (name && i < p->n && strcmp(p->names[i], name) != 0)
			i++;
		if (!name || i == p->n) {
			size_t old;
			js_path_push_index(c, "required", j, &old);
			js_fail(c, NULL, "\"required\" names %s%s%s, which is not in \"properties\"",
				name ? "\"" : "", name ? name : "a non-string", name ? "\"" : "");
			js_path_pop(c, old);
			return false;
		}
		p->required[i] = true;
	}
	return true;
}

/* A code point inside a GBNF character class. */
static void js_class_cp(char *out, size_t *o, uint32_t cp)
{
	if (cp > 0x20 && cp < 0x7F && !strchr("]\\-^\"[", (int)cp))
		out[(*o)++] = (char)cp;
	else if (cp < 0x100)
		*o += (size_t)sprintf(out + *o, "\\x%02X", cp);
	else if (cp < 0x10000)
		*o += (size_t)sprintf(out + *o, "\\u%04X", cp);
	else
		*o += (size_t)sprintf(out + *o, "\\U%08X", cp);
	out[*o] = '\0';
}

/* The code point at s (UTF-8, valid: jansson's strings are) and its
 * length. */
static uint32_t js_cp(const char *s, int *len)
{
	const unsigned char *u = (const unsigned char *)s;
	*len = u[0] < 0x80 ? 1 : u[0] < 0xE0 ? 2 : u[0] < 0xF0 ? 3 : 4;
	uint32_t v = *len == 1 ? u[0] : *len == 2 ? u[0] & 0x1Fu : *len == 3 ? u[0] & 0x0Fu : u[0] & 0x07u;
	for (int i = 1; i < *len; i++)
		v = (v << 6) | (u[i] & 0x3Fu);
	return v;
}

/* The rest of a key (after its opening quote and the bytes at depth d of
 * the names in sel) that is none of those names: a trie of the names,
 * where each branch may end with '"' unless a name ends there, may go on
 * with the name's next character, or leave the names with any other
 * character (then any string, at most JSON_SCHEMA_ANY_STRING characters
 * more). malloc'd. */
static char *js_key_trie(const js_props_t *p, const bool *sel, size_t d)
{
	char *out = strdup("");
	bool ends = false;
	uint32_t seen[256];
	size_t n_seen = 0;
	for (size_t i = 0; i < p->n && out; i++) {
		if (!sel[i])
			continue;
		if (strlen(p->names[i]) == d) {
			ends = true;
			continue;
		}
		int len;
		uint32_t cp = js_cp(p->names[i] + d, &len);
		size_t k = 0;
		while (k < n_seen && seen[k] != cp)
			k++;
		if (k < n_seen)
			continue;
		seen[n_seen++] = cp;
		bool sub[256];
		for (size_t j = 0; j < p->n; j++)
			sub[j] = sel[j] && strlen(p->names[j]) > d && strncmp(p->names[j] + d, p->names[i] + d, (size_t)len) == 0;
		char *lit = js_literal(p->names[i] + d, (size_t)len);
		char *rest = lit ? js_key_trie(p, sub, d + (size_t)len) : NULL;
		char *no = rest ? js_fmt("%s%s%s (%s)", out, *out ? " | " : "", lit, rest) : NULL;
		free(lit);
		free(rest);
		free(out);
		out = no;
	}
	if (!out)
		return NULL;
	char cls[256 * 12 + 32];
	size_t o = (size_t)sprintf(cls, "[^\"\\\\\\x7F\\x00-\\x1F");
	for (size_t k = 0; k < n_seen; k++)
		js_class_cp(cls, &o, seen[k]);
	char *no = js_fmt("%s%s%s] key-rest | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) key-rest%s",
			  out, *out ? " | " : "", cls, ends ? "" : " | \"\\\"\"");
	free(out);
	return no;
}

/* The key of an extra member: a JSON string that is not a declared
 * property's name (so no key appears twice). Names that a JSON encoder
 * would escape fall back to any string. malloc'd. */
static char *js_other_key(js_conv_t *c, const js_props_t *p)
{
	if (!js_need(c, "char"))
		return NULL;
	bool sel[256];
	bool plain = true;
	for (size_t i = 0; i < p->n; i++) {
		sel[i] = true;
		for (const char *q = p->names[i]; *q; q++)
			plain &= *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20 && *q != 0x7F;
	}
	if (!plain)
		return js_fmt("\"\\\"\" char{0,%d} \"\\\"\"", JSON_SCHEMA_ANY_STRING);
	if (!js_rule_find(c, "key-rest") &&
	    !js_rule_put(c, js_fmt("key-rest"), js_fmt("char{0,%d} \"\\\"\"", JSON_SCHEMA_ANY_STRING - 1)))
		return NULL;
	char *trie = js_key_trie(p, sel, 0);
	char *r = trie ? js_fmt("\"\\\"\" (%s)", trie) : NULL;
	free(trie);
	return r;
}

/* The object rule: "{" then the properties in declared order (required
 * ones always, optional ones each skippable), then at most
 * JSON_SCHEMA_EXTRA_MAX other keys when additionalProperties allows them.
 * tail[i] is the rest after property i-1 once something was written (each
 * item then starts with ","); the head is the first item written. */
static const char *js_object_rule(js_conv_t *c, const js_props_t *p, const json_t *addl, const char *hint)
{
	const char *kv[257];
	if (!js_need(c, "ws"))
		return NULL;
	for (size_t i = 0; i < p->n; i++) {
		size_t old = js_path_push(c, "properties");
		js_path_push(c, p->names[i]);
		char *h = js_fmt("%s-%s", hint, p->names[i]);
		const char *val = h ? js_visit(c, p->schemas[i], h) : NULL;
		js_path_pop(c, old);
		json_t *kj = json_string(p->names[i]);
		char *key = kj ? json_dumps(kj, JSON_ENCODE_ANY) : NULL;
		json_decref(kj);
		char *klit = key ? js_literal(key, strlen(key)) : NULL;
		free(key);
		char *kvh = h ? js_fmt("%s-kv", h) : NULL;
		kv[i] = val && klit && kvh ? js_rule_add(c, kvh, js_fmt("%s ws \":\" ws %s ws", klit, val)) : NULL;
		free(h);
		free(klit);
		free(kvh);
		if (!kv[i])
			return NULL;
	}
	/* extra keys: any string key, the value additionalProperties says */
	const char *xkv = NULL;
	if (addl && !json_is_false(addl)) {
		const char *val = js_visit_sub(c, addl, "additionalProperties", hint, "additional");
		char *kh = js_fmt("%s-additional-k", hint);
		const char *key = val && kh ? js_rule_add(c, kh, js_other_key(c, p)) : NULL;
		free(kh);
		char *h = js_fmt("%s-additional-kv", hint);
		xkv = key && h ? js_rule_add(c, h, js_fmt("%s ws \":\" ws %s ws", key, val)) : NULL;
		free(h);
		if (!xkv)
			return NULL;
	}
	if (p->n == 0 && !xkv)
		return js_rule_add(c, hint, strdup("\"{\" ws \"}\""));
	/* the tails, last first; tail 0 would follow nothing and is never made */
	char *tail_expr[257] = {0};
	tail_expr[p->n] = xkv ? js_fmt("(\",\" ws %s){0,%d}", xkv, JSON_SCHEMA_EXTRA_MAX) : strdup("");
	if (!tail_expr[p->n])
		return NULL;
	for (size_t i = p->n; i-- > 1;) {
		char *body = p->required[i] ? js_fmt("\",\" ws %s %s", kv[i], tail_expr[i + 1])
					    : js_fmt("(\",\" ws %s)? %s", kv[i], tail_expr[i + 1]);
		char *h = js_fmt("%s-tail-%zu", hint, i);
		const char *t = h ? js_rule_add(c, h, body) : NULL;
		free(h);
		tail_expr[i] = t ? strdup(t) : NULL;
		if (!tail_expr[i]) {
			for (size_t j = i + 1; j <= p->n; j++)
				free(tail_expr[j]);
			return NULL;
		}
	}
	/* the head: the first property written, up to the first required */
	char *head = strdup("");
	bool all_optional = true;
	for (size_t i = 0; i < p->n && head; i++) {
		char *nh = js_fmt("%s%s%s %s", head, *head ? " | " : "", kv[i], tail_expr[i + 1]);
		free(head);
		head = nh;
		if (p->required[i]) {
			all_optional = false;
			break;
		}
	}
	if (head && all_optional && xkv) {
		char *nh = js_fmt("%s%s%s (\",\" ws %s){0,%d}", head, *head ? " | " : "", xkv, xkv,
				  JSON_SCHEMA_EXTRA_MAX - 1);
		free(head);
		head = nh;
	}
	for (size_t j = 0; j <= p->n; j++)
		free(tail_expr[j]);
	char *body = head ? js_fmt("\"{\" ws (%s)%s \"}\"", head, all_optional ? "?" : "") : NULL;
	free(head);
	return js_rule_add(c, hint, body);
}

static const char *js_visit_object(js_conv_t *c, const json_t *schema, const char *hint)
{
	const json_t *addl = json_object_get(schema, "additionalProperties");
	if (addl && !json_is_boolean(addl) && !json_is_object(addl))
		return js_fail(c, "additionalProperties", "\"additionalProperties\" must be a boolean or a schema");
	if (!json_object_get(schema, "properties") && !addl) {
		if (json_object_get(schema, "required"))
			return js_fail(c, "required", "\"required\" without \"properties\" is not supported");
		if (!js_need_any(c))
			return NULL;
		return "object-0";
	}
	js_props_t *p = calloc(1, sizeof *p);
	if (!p) {
		err_set("json_schema: out of memory");
		return NULL;
	}
	const char *r = js_props_add(c, p, schema) ? js_object_rule(c, p, addl, hint) : NULL;
	free(p);
	return r;
}

/* allOf: every part an object schema (or a $ref to one); their properties
 * and required lists merged into one object. */
static const char *js_visit_allof(js_conv_t *c, const json_t *schema, const char *hint)
{
	const json_t *all = json_object_get(schema, "allOf");
	if (!json_is_array(all) || json_array_size(all) == 0)
		return js_fail(c, "allOf", "\"allOf\" must be a non-empty array");
	js_props_t *p = calloc(1, sizeof *p);
	if (!p) {
		err_set("json_schema: out of memory");
		return NULL;
	}
	bool ok = js_props_add(c, p, schema);
	const json_t *addl = json_object_get(schema, "additionalProperties");
	size_t i;
	json_t *part;
	json_array_foreach(all, i, part) {
		if (!ok)
			break;
		size_t old;
		js_path_push_index(c, "allOf", i, &old);
		const json_t *ref = json_object_get(part, "$ref");
		if (ref && json_is_string(ref) && json_object_size(part) == 1)
			part = (json_t *)js_pointer(c, json_string_value(ref));
		const json_t *t = part ? json_object_get(part, "type") : NULL;
		if (!json_is_object(part) || (t && !(json_is_string(t) && strcmp(json_string_value(t), "object") == 0))) {
			js_fail(c, NULL, "\"allOf\" is supported for object schemas only");
			ok = false;
		} else {
			const char *k;
			json_t *v;
			json_object_foreach(part, k, v) {
				if (strcmp(k, "type") && strcmp(k, "properties") && strcmp(k, "required") &&
				    strcmp(k, "additionalProperties") && !js_in(js_annotations, k)) {
					js_fail(c, k, "\"allOf\" parts may have type, properties, required and additionalProperties only");
					ok = false;
					break;
				}
			}
			ok = ok && js_props_add(c, p, part);
			const json_t *a = json_object_get(part, "additionalProperties");
			if (ok && a)
				addl = a;
		}
		js_path_pop(c, old);
	}
	const char *r = ok ? js_object_rule(c, p, addl, hint) : NULL;
	free(p);
	return r;
}

/* One type of a schema ("type": "string" or one of a type array). */
static const char *js_visit_type(js_conv_t *c, const json_t *schema, const char *type, const char *hint)
{
	if (strcmp(type, "string") == 0)
		return js_visit_string(c, schema, hint);
	if (strcmp(type, "object") == 0)
		return js_visit_object(c, schema, hint);
	if (strcmp(type, "array") == 0)
		return js_visit_array(c, schema, hint);
	static const char *const scalars[] = {"number", "integer", "boolean", "null", NULL};
	if (!js_in(scalars, type))
		return js_fail(c, "type", "unknown type \"%s\"", type);
	return js_need(c, type) ? type : NULL;
}

/* The type a schema without "type" has, from its keywords; NULL: any. */
static const char *js_infer_type(const json_t *schema)
{
	static const char *const obj[] = {"properties", "additionalProperties", "required", NULL};
	static const char *const arr[] = {"items", "prefixItems", "minItems", "maxItems", NULL};
	static const char *const str[] = {"pattern", "format", "minLength", "maxLength", NULL};
	for (size_t i = 0; obj[i]; i++)
		if (json_object_get(schema, obj[i]))
			return "object";
	for (size_t i = 0; arr[i]; i++)
		if (json_object_get(schema, arr[i]))
			return "array";
	for (size_t i = 0; str[i]; i++)
		if (json_object_get(schema, str[i]))
			return "string";
	return NULL;
}

static const char *js_visit_typed(js_conv_t *c, const json_t *schema, const char *hint)
{
	const json_t *type = json_object_get(schema, "type");
	if (!type) {
		const char *t = js_infer_type(schema);
		if (t)
			return js_visit_type(c, schema, t, hint);
		if (!js_need_any(c))
			return NULL;
		return "value-0";
	}
	if (json_is_string(type))
		return js_visit_type(c, schema, json_string_value(type), hint);
	if (!json_is_array(type) || json_array_size(type) == 0)
		return js_fail(c, "type", "\"type\" must be a string or a non-empty array of strings");
	char *body = strdup("");
	size_t i;
	json_t *t;
	json_array_foreach(type, i, t) {
		if (!json_is_string(t)) {
			free(body);
			return js_fail(c, "type", "\"type\" must be a string or a non-empty array of strings");
		}
		char *h = js_fmt("%s-%s", hint, json_string_value(t));
		const char *name = h ? js_visit_type(c, schema, json_string_value(t), h) : NULL;
		free(h);
		char *nb = name && body ? js_fmt("%s%s%s", body, i ? " | " : "", name) : NULL;
		free(body);
		if (!(body = nb))
			return NULL;
	}
	return js_rule_add(c, hint, body);
}

/* One schema -> the name of the rule that matches its JSON texts. */
static const char *js_visit(js_conv_t *c, const json_t *schema, const char *hint)
{
	if (json_is_true(schema))
		return js_need_any(c) ? "value-0" : NULL;
	if (json_is_false(schema))
		return js_fail(c, NULL, "the schema false admits no value");
	if (!json_is_object(schema))
		return js_fail(c, NULL, "a schema must be an object or a boolean");
	if (c->depth >= JS_DEPTH_MAX)
		return js_fail(c, NULL, "schema nested deeper than %d levels", JS_DEPTH_MAX);
	if (!js_check_keywords(c, schema))
		return NULL;
	c->depth++;
	const char *r;
	const json_t *v;
	size_t checks = 0;
	static const char *const alone[] = {"$ref", "const", "enum", "anyOf", "oneOf", "allOf", NULL};
	for (size_t i = 0; alone[i]; i++)
		checks += json_object_get(schema, alone[i]) != NULL;
	if (checks > 1) {
		r = js_fail(c, NULL, "combining $ref, const, enum, anyOf, oneOf and allOf in one schema is not supported");
	} else if ((v = json_object_get(schema, "$ref"))) {
		const char *k;
		json_t *x;
		r = NULL;
		json_object_foreach((json_t *)schema, k, x) {
			if (strcmp(k, "$ref") && !js_in(js_annotations, k)) {
				js_fail(c, k, "keywords beside \"$ref\" are not supported");
				goto out;
			}
		}
		r = js_visit_ref(c, v);
	} else if ((v = json_object_get(schema, "const"))) {
		r = js_rule_add(c, hint, js_value_literal(v));
	} else if ((v = json_object_get(schema, "enum"))) {
		r = js_visit_enum(c, v, hint);
	} else if ((v = json_object_get(schema, "anyOf"))) {
		r = js_visit_union(c, v, "anyOf", hint);
	} else if ((v = json_object_get(schema, "oneOf"))) {
		r = js_visit_union(c, v, "oneOf", hint);
	} else if (json_object_get(schema, "allOf")) {
		r = js_visit_allof(c, schema, hint);
	} else {
		r = js_visit_typed(c, schema, hint);
	}
out:
	c->depth--;
	return r;
}

/* ---- output ---- */

static void js_conv_free(js_conv_t *c)
{
	for (size_t i = 0; i < c->n_rules; i++) {
		free(c->rules[i].name);
		free(c->rules[i].body);
	}
	for (size_t i = 0; i < c->n_refs; i++)
		free(c->refs[i].ref);
	free(c->rules);
	free(c->refs);
}

/* "root ::= <root>\n" then every rule, one a line. */
static char *js_conv_text(const js_conv_t *c, const char *root)
{
	size_t n = strlen(root) + 16;
	for (size_t i = 0; i < c->n_rules; i++)
		n += strlen(c->rules[i].name) + strlen(c->rules[i].body ? c->rules[i].body : "") + 8;
	char *out = malloc(n);
	if (!out) {
		err_set("json_schema: out of memory");
		return NULL;
	}
	size_t o = (size_t)sprintf(out, "root ::= %s\n", root);
	for (size_t i = 0; i < c->n_rules; i++)
		o += (size_t)sprintf(out + o, "%s ::= %s\n", c->rules[i].name,
				     c->rules[i].body ? c->rules[i].body : "");
	return out;
}

char *json_schema_to_gbnf(const json_t *schema)
{
	if (!schema) {
		err_set("json_schema: at #: no schema");
		return NULL;
	}
	js_conv_t c = {.top = schema, .path = "#", .path_len = 1};
	const char *root = js_visit(&c, schema, "root-value");
	char *text = root ? js_conv_text(&c, root) : NULL;
	js_conv_free(&c);
	return text;
}

char *json_schema_any_object_gbnf(void)
{
	js_conv_t c = {.path = "#", .path_len = 1};
	char *text = js_need_any(&c) ? js_conv_text(&c, "object-0") : NULL;
	js_conv_free(&c);
	return text;
}

grammar_t *json_schema_load(const char *path)
{
	size_t n;
	char *text = file_read_as("json schema", path, &n);
	if (!text)
		return NULL;
	json_error_t je;
	json_t *schema = json_loadb(text, n, JSON_DECODE_ANY, &je);
	free(text);
	if (!schema) {
		err_set("json schema %s: line %d, column %d: %s", path, je.line,
			je.column, je.text);
		return NULL;
	}
	char *gbnf = json_schema_to_gbnf(schema);
	json_decref(schema);
	grammar_t *g = gbnf ? grammar_parse(gbnf) : NULL;
	free(gbnf);
	if (!g)
		err_wrap("json schema %s", path);
	return g;
}
