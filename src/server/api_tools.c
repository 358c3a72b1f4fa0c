/* api_tools: a chat request's tools, tool_choice and parallel_tool_calls,
 * and an assistant message's tool_calls, checked into the job (every bad
 * one a 400 naming it). What a tool_choice does:
 *  - "none": the tools are not shown to the model and its answer is text;
 *  - "auto" (the default with tools): the tools are shown and the answer
 *    is generated unconstrained: text, or calls found in it afterwards;
 *  - "required" or {"type": "function", "function": {"name": N}}: the
 *    generation is constrained by a grammar to one call (to any of the
 *    tools, or to N) in the template's syntax, its arguments valid under
 *    the function's parameters schema (chat_tools_grammar). */
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "model/grammar.h"
#include "server/api_impl.h"

typedef enum tool_choice {
	TOOL_CHOICE_NONE,
	TOOL_CHOICE_AUTO,
	TOOL_CHOICE_REQUIRED, /* any function, or the named one */
	TOOL_CHOICE_COUNT
} tool_choice_t;

/* "tool_choice" into *tc and *name (NULL: any function); 0, or -1 with
 * the 400 in out. */
static int choice_parse(json_t *v, const json_t *tools, tool_choice_t *tc,
			const char **name, server_reply_t *out)
{
	*tc = tools ? TOOL_CHOICE_AUTO : TOOL_CHOICE_NONE;
	*name = NULL;
	if (!v || json_is_null(v))
		return 0;
	const char *s = json_string_value(v);
	if (s && !strcmp(s, "none")) {
		*tc = TOOL_CHOICE_NONE;
		return 0;
	}
	if (s && (!strcmp(s, "auto") || !strcmp(s, "required"))) {
		*tc = *s == 'a' ? TOOL_CHOICE_AUTO : TOOL_CHOICE_REQUIRED;
	} else {
		json_t *type = json_object_get(v, "type");
		json_t *fn = json_object_get(v, "function");
		json_t *n = json_object_get(fn, "name");
		if (!json_is_object(v) || json_object_size(v) != 2 ||
		    !json_is_string(type) || strcmp(json_string_value(type), "function") ||
		    !json_is_object(fn) || json_object_size(fn) != 1 || !json_is_string(n)) {
			REPLY_ERR(out, 400, "tool_choice", NULL,
				  "'tool_choice' must be \"none\", \"auto\", \"required\" "
				  "or {\"type\": \"function\", \"function\": {\"name\": NAME}}");
			return -1;
		}
		*tc = TOOL_CHOICE_REQUIRED;
		*name = json_string_value(n);
	}
	if (!tools) {
		REPLY_ERR(out, 400, "tool_choice", NULL,
			  "'tool_choice' %s needs 'tools'", *name ? "naming a function" : s);
		return -1;
	}
	if (*name && chat_tools_find(tools, *name) < 0) {
		REPLY_ERR(out, 400, "tool_choice", NULL,
			  "'tool_choice' names the function '%.64s', which is not "
			  "in 'tools'", *name);
		return -1;
	}
	return 0;
}

/* The grammar of one call (to name, or to any tool) into j's request;
 * 0, or -1 with the 400 in out (a parameters schema that json_schema
 * refuses). */
static int call_grammar(api_t *a, server_job_t *j, const char *name,
			server_reply_t *out)
{
	sched_request_t *q = sched_job_request(j->work);
	if (q->grammar) {
		REPLY_ERR(out, 400, "tool_choice", NULL,
			  "'tool_choice' %s constrains the answer to a call; it cannot "
			  "go with grammar, json_schema or a JSON response_format",
			  name ? "naming a function" : "\"required\"");
		return -1;
	}
	char *text = chat_tools_grammar(j->syntax, j->tools, name);
	grammar_t *g = text ? grammar_parse(text) : NULL;
	free(text);
	if (!g) {
		REPLY_ERR(out, 400, "tools", NULL, "%s", err_get());
		return -1;
	}
	q->grammar = g;
	return 0;
}

int api_tools_parse(api_t *a, json_t *root, server_job_t *j,
		    const json_t **shown, server_reply_t *out)
{
	*shown = NULL;
	json_t *tools = json_object_get(root, "tools");
	if (json_is_null(tools))
		tools = NULL;
	if (tools && chat_tools_check(tools) < 0) {
		REPLY_ERR(out, 400, "tools", NULL, "%s", err_get());
		return -1;
	}
	json_t *p = json_object_get(root, "parallel_tool_calls");
	if (p && !json_is_null(p) && !json_is_boolean(p)) {
		REPLY_ERR(out, 400, "parallel_tool_calls", NULL,
			  "'parallel_tool_calls' must be a boolean");
		return -1;
	}
	tool_choice_t tc;
	const char *name;
	if (choice_parse(json_object_get(root, "tool_choice"), tools, &tc, &name,
			 out) < 0)
		return -1;
	if (tc == TOOL_CHOICE_NONE)
		return 0;
	j->tools = json_incref(tools);
	j->syntax = chat_tool_syntax(chat_template_kind(a->chat));
	j->one_call = json_is_false(p);
	*shown = tools;
	return tc == TOOL_CHOICE_REQUIRED ? call_grammar(a, j, name, out) : 0;
}

int api_tools_msg_calls(json_t *m, size_t i, chat_msg_t *msg,
			server_reply_t *out)
{
	json_t *tc = json_object_get(m, "tool_calls");
	chat_tool_call_t *calls;
	if (!tc || json_is_null(tc))
		return 0;
	if (strcmp(msg->role, "assistant")) {
		REPLY_ERR(out, 400, "messages", NULL,
			  "messages[%zu].tool_calls: only an assistant message has "
			  "tool calls", i);
		return -1;
	}
	if (chat_calls_from_json(tc, &calls, &msg->n_calls) < 0) {
		REPLY_ERR(out, 400, "messages", NULL, "messages[%zu].%s", i, err_get());
		return -1;
	}
	msg->calls = calls;
	return 0;
}

void api_tools_free_calls(chat_msg_t *msg)
{
	chat_calls_free((chat_tool_call_t *)msg->calls, msg->n_calls);
	msg->calls = NULL;
	msg->n_calls = 0;
}
