/* json_schema: a JSON schema (a jansson json_t) compiled to GBNF text in
 * llama.cpp's grammar syntax (model/grammar.h parses it), so that
 * constrained decoding produces JSON valid under the schema.
 *
 * What is supported, and the choices where the schema leaves room:
 *  - type (object, array, string, number, integer, boolean, null, and
 *    arrays of them), enum, const, anyOf, oneOf (as anyOf: the grammar does
 *    not check exclusivity), allOf of object schemas (merged), $ref to
 *    "#/$defs/..." and "#/definitions/...", nested to any depth the
 *    recursion bound allows (a recursive $ref is a grammar rule cycle).
 *  - object: properties in their declared order; required ones always,
 *    optional ones each optional, in declared order. additionalProperties
 *    absent or false: no other key (the strict reading OpenAI's
 *    json_schema mode uses; llama.cpp's converter admits extra keys when it
 *    is absent); a schema for it, or true: extra keys after the declared
 *    ones, at most JSON_SCHEMA_EXTRA_MAX of them, none of them a declared
 *    name. {"type":"object"} alone is any JSON object. The keys come in
 *    the declared order: a document with the same members in another
 *    order is valid JSON under the schema but not matched.
 *  - array: items, prefixItems, minItems, maxItems.
 *  - string: minLength, maxLength, pattern (an anchored simple regex:
 *    literals, escapes, classes, groups, alternation, * + ? {m,n}), format
 *    date, time, date-time, uuid.
 *  - number/integer: no bounds (minimum/maximum are refused, not ignored).
 *  - enum and const: the values' compact JSON text (json_dumps), so an
 *    object or array in an enum is matched without inner whitespace.
 * Robustness against a model that prefers garbage: the whitespace between
 * tokens is bounded (ws ::= | " " | "\n" [ \t]{0,20}, as llama.cpp's);
 * numbers have at most 16 digits a part (llama.cpp's rule); free-form
 * values and the keys of extra members are bounded by the JSON_SCHEMA_*
 * limits below. What stays unbounded is what the schema leaves so: a
 * string without maxLength (or pattern), an array without maxItems. A
 * schema that bounds those compiles to a grammar whose every match is of
 * bounded length, so a generation always ends within enough max_tokens.
 * Anything else (a keyword it does not know, a pattern it cannot
 * translate) is refused with the keyword and its schema path, never
 * silently ignored. Annotations (title, description, $schema, $id,
 * $comment, examples, default, deprecated, readOnly, writeOnly) change
 * nothing. */
#ifndef EGANG_JSON_SCHEMA_H
#define EGANG_JSON_SCHEMA_H

#include <jansson.h>

#include "model/grammar.h"

/* Extra keys an object with additionalProperties admits at most. */
#define JSON_SCHEMA_EXTRA_MAX 16
/* A free-form value ({"type":"object"}, an array without items, json_object
 * mode): nesting levels, members of an object or items of an array, and
 * characters of a string (keys too) at most. */
#define JSON_SCHEMA_ANY_DEPTH 8
#define JSON_SCHEMA_ANY_ITEMS 16
#define JSON_SCHEMA_ANY_STRING 256

/* The GBNF text (malloc'd, root rule "root") that matches exactly the JSON
 * texts valid under schema; NULL + err_get() "json_schema: at #/path:
 * <what>" for an unsupported keyword or a malformed schema. */
char *json_schema_to_gbnf(const json_t *schema);

/* The GBNF text (malloc'd) that matches any JSON object (OpenAI's
 * response_format json_object); NULL + err_get() on allocation failure. */
char *json_schema_any_object_gbnf(void);

/* The grammar of the JSON schema in the file at path (what `egang
 * generate --json-schema` reads); NULL + err_get() naming the file and
 * the problem: unreadable, not JSON (line and column), or a schema
 * json_schema_to_gbnf refuses (its schema path). */
grammar_t *json_schema_load(const char *path);

#endif
