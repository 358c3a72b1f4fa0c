/* api_grammar: a request's output constraint into a grammar: OpenAI's
 * response_format (text, json_object, json_schema) and llama.cpp's
 * extension fields grammar (GBNF text) and json_schema (a schema object).
 * At most one of them constrains a request. Each is compiled per request
 * (model/json_schema.h, model/grammar.h); a schema or grammar that does
 * not compile is a 400 naming the field and, from the compiler, the
 * schema path or the grammar's line and column. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "model/grammar.h"
#include "model/json_schema.h"
#include "server/api_impl.h"

/* The GBNF of response_format v (NULL: none, "text"), or -1 with the 400
 * in out. */
static int format_gbnf(json_t *v, char **gbnf, server_reply_t *out)
{
	*gbnf = NULL;
	json_t *type = json_object_get(v, "type");
	if (!json_is_object(v) || !json_is_string(type)) {
		REPLY_ERR(out, 400, "response_format", NULL,
			  "'response_format' must be an object with a string 'type' "
			  "(text, json_object or json_schema)");
		return -1;
	}
	const char *t = json_string_value(type);
	const char *key;
	json_t *x;
	json_object_foreach(v, key, x) {
		if (strcmp(key, "type") && (strcmp(t, "json_schema") || strcmp(key, "json_schema"))) {
			REPLY_ERR(out, 400, "response_format", NULL,
				  "response_format.%.40s is not a field of a '%.20s' "
				  "response_format", key, t);
			return -1;
		}
	}
	if (!strcmp(t, "text"))
		return 0;
	if (!strcmp(t, "json_object")) {
		*gbnf = json_schema_any_object_gbnf();
		if (!*gbnf)
			abort(); /* out of memory */
		return 0;
	}
	if (strcmp(t, "json_schema")) {
		REPLY_ERR(out, 400, "response_format", NULL,
			  "response_format.type '%.40s' is not text, json_object or "
			  "json_schema", t);
		return -1;
	}
	json_t *js = json_object_get(v, "json_schema");
	if (!json_is_object(js)) {
		REPLY_ERR(out, 400, "response_format", NULL,
			  "response_format.json_schema must be an object "
			  "{\"name\", \"schema\", \"strict\", \"description\"}");
		return -1;
	}
	json_object_foreach(js, key, x) {
		bool ok = (!strcmp(key, "name") && json_is_string(x)) ||
			  (!strcmp(key, "description") && json_is_string(x)) ||
			  (!strcmp(key, "strict") && (json_is_boolean(x) || json_is_null(x))) ||
			  !strcmp(key, "schema");
		if (!ok) {
			REPLY_ERR(out, 400, "response_format", NULL,
				  "response_format.json_schema.%.40s is %s", key,
				  strcmp(key, "name") && strcmp(key, "description") && strcmp(key, "strict") ?
				  "not a field egang knows (name, description, schema, strict)" :
				  "of the wrong type (name and description: strings, strict: a boolean)");
			return -1;
		}
	}
	json_t *schema = json_object_get(js, "schema");
	if (!schema) {
		REPLY_ERR(out, 400, "response_format", NULL,
			  "response_format.json_schema.schema is required");
		return -1;
	}
	*gbnf = json_schema_to_gbnf(schema);
	if (!*gbnf) {
		REPLY_ERR(out, 400, "response_format", NULL,
			  "response_format.json_schema.schema: %s", err_get());
		return -1;
	}
	return 0;
}

int api_parse_grammar(json_t *root, sched_request_t *q, server_reply_t *out)
{
	static const char *const names[] = {"grammar", "json_schema", "response_format"};
	const char *field = NULL; /* the one constraint given */
	char *gbnf = NULL;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		json_t *v = json_object_get(root, names[i]);
		if (!v || json_is_null(v))
			continue;
		char *text = NULL;
		if (i == 0) {
			if (!json_is_string(v)) {
				REPLY_ERR(out, 400, "grammar", NULL,
					  "'grammar' must be a string of GBNF (llama.cpp's syntax)");
				free(gbnf);
				return -1;
			}
			text = strdup(json_string_value(v));
			if (!text)
				abort(); /* out of memory */
		} else if (i == 1) {
			text = json_schema_to_gbnf(v);
			if (!text) {
				REPLY_ERR(out, 400, "json_schema", NULL, "%s", err_get());
				free(gbnf);
				return -1;
			}
		} else if (format_gbnf(v, &text, out) < 0) {
			free(gbnf);
			return -1;
		}
		if (!text)
			continue; /* response_format text */
		if (field) {
			REPLY_ERR(out, 400, names[i], NULL,
				  "'%s' and '%s' both constrain the output; give one",
				  field, names[i]);
			free(text);
			free(gbnf);
			return -1;
		}
		field = names[i];
		gbnf = text;
	}
	if (!gbnf)
		return 0;
	q->grammar = grammar_parse(gbnf);
	free(gbnf);
	if (!q->grammar) {
		REPLY_ERR(out, 400, field, NULL, "%s", err_get());
		return -1;
	}
	return 0;
}
