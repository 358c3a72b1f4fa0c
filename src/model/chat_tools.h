/* chat_tools: OpenAI's tools (function calling) in the chat templates'
 * tool syntaxes: the `tools` array checked, an assistant message's
 * `tool_calls` read, the calls a model wrote found in its text, and the
 * grammar of a valid call.
 *
 * Each template kind (chat.h) renders tools in one of two syntaxes:
 *  - Hermes (CHAT_TOOLS_HERMES), the ChatML kinds' (Qwen2.5, Qwen3,
 *    SmolLM2, any <|im_start|> template): the functions as JSON objects,
 *    one a line between <tools></tools> in the system turn; a call is
 *      <tool_call>\n{"name": "NAME", "arguments": {...}}\n</tool_call>
 *    after the assistant's text (several calls: one block each, on lines
 *    of their own); tool results are a user turn of
 *    <tool_response>\nRESULT\n</tool_response> blocks.
 *  - Llama 3.1 (CHAT_TOOLS_LLAMA31; 3.2 and 3.3 render the same):
 *    "Environment: ipython" in the system turn, the functions (JSON,
 *    indent 4) in the first user turn; a call is the assistant's whole
 *    answer {"name": "NAME", "parameters": {...}}, one per message; a
 *    result is an ipython turn.
 * The kinds whose templates have no tool syntax (Llama 2, Llama 3.0,
 * Zephyr, Gemma 3) use the generic fallback: the Hermes syntax written
 * into their plain turns (the tools block ends the system message, calls
 * follow the assistant's text, a run of results is one user message),
 * so they parse and constrain as Hermes. */
#ifndef EGANG_CHAT_TOOLS_H
#define EGANG_CHAT_TOOLS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "model/chat.h"

typedef enum chat_tool_syntax {
	CHAT_TOOLS_HERMES,
	CHAT_TOOLS_LLAMA31,
	CHAT_TOOLS_COUNT
} chat_tool_syntax_t;

/* The syntax a template kind writes and reads calls in. */
chat_tool_syntax_t chat_tool_syntax(chat_kind_t kind);

/* OpenAI's `tools`: a non-empty array of {"type": "function", "function":
 * {"name", "description"?, "parameters"?, "strict"?}}, names of 1-64
 * characters [a-zA-Z0-9_-], each once; parameters a JSON schema object.
 * 0, or -1 + err_get() naming the place ("tools[2].function.name: ..."). */
int chat_tools_check(const json_t *tools);
/* The index in tools of the function named name, -1 if none. */
int chat_tools_find(const json_t *tools, const char *name);

/* An assistant message's OpenAI `tool_calls` ([{"id", "type":
 * "function", "function": {"name", "arguments": JSON TEXT}}]) into
 * *calls (malloc'd, *n of them; names borrowed from tool_calls, arguments
 * parsed: free with chat_calls_free). -1 + err_get() naming the place
 * ("tool_calls[0].function.arguments: ..."). */
int chat_calls_from_json(const json_t *tool_calls, chat_tool_call_t **calls,
			 int *n);
void chat_calls_free(chat_tool_call_t *calls, int n);

/* A call found in a model's text. */
typedef struct chat_call_out {
	char *name; /* malloc'd */
	char *args; /* the arguments object as compact JSON text, malloc'd */
} chat_call_out_t;

/* A model's answer split into its text and its calls. */
typedef struct chat_parsed {
	size_t n_content;       /* the answer's first n_content bytes are its
				   text (white space before a call left out) */
	chat_call_out_t *calls; /* n_calls of them, malloc'd */
	int n_calls;
} chat_parsed_t;

/* Finds the calls in text[0..n) written in syntax s. Only well-formed
 * calls of functions in tools count, and only when the text after the
 * first call holds nothing but calls; otherwise the whole text is the
 * answer's text (n_calls 0). Never fails. */
void chat_tools_parse(chat_tool_syntax_t s, const char *text, size_t n,
		      const json_t *tools, chat_parsed_t *out);
void chat_parsed_free(chat_parsed_t *p);

/* While text[0..n) streams in: how many of its bytes are the answer's
 * text whatever comes next (a call may begin after them), looking for a
 * call from byte from on (the bytes before it were returned as safe
 * before). *call: a call has begun at the returned offset. */
size_t chat_tools_stream_safe(chat_tool_syntax_t s, const char *text,
			      size_t n, size_t from, bool *call);

/* The GBNF text (malloc'd, start rule "root") of exactly one call in
 * syntax s, written as chat_tools_parse reads it, to the function named
 * name (NULL: any function of tools), its arguments valid under the
 * function's parameters schema (json_schema.h; none: "{}"). NULL +
 * err_get() naming the tool whose schema json_schema_to_gbnf refuses, or
 * a name not in tools. */
char *chat_tools_grammar(chat_tool_syntax_t s, const json_t *tools,
			 const char *name);

#endif
