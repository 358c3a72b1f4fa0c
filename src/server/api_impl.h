/* api_impl: what the API stage's files share, and nobody else includes.
 *
 * The files, each calling only the ones after it (and the stages below):
 *  api.c          the object, routing, authentication, the GET endpoints,
 *                 api_handle;
 *  api_request.c  a generation request's fields into a job (the 400s);
 *  api_tools.c    its tools, tool_choice and parallel_tool_calls, and a
 *                 message's tool_calls;
 *  api_grammar.c  its output constraint (grammar, json_schema,
 *                 response_format) compiled to a grammar;
 *  api_tokens.c   /tokenize and /detokenize;
 *  api_fields.c   the table of request fields: which are implemented,
 *                 accepted at their default only, or refused;
 *  api_format.c   every response body: errors, final bodies, SSE events. */
#ifndef EGANG_SERVER_API_IMPL_H
#define EGANG_SERVER_API_IMPL_H

#include <jansson.h>
#include <stdatomic.h>

#include "model/chat.h"
#include "model/chat_tools.h"
#include "server/api.h"
#include "server/buf.h"
#include "server/sched.h"

#define API_MAX_STOP_LEN 256 /* bytes per stop string */

struct api {
	api_config_t cfg;
	chat_template_t *chat;
	int64_t created;
	_Atomic uint64_t next_id; /* relaxed: only ever unique, orders nothing */
	sched_t *sched;
	metrics_t *metrics;
};

/* One generation request: what its responses are formatted from, and the
 * scheduler's job that does the work. */
struct server_job {
	server_endpoint_t ep; /* EP_COMPLETIONS or EP_CHAT */
	char id[48];          /* the response id, also the work's name */
	int64_t created;
	const char *model;
	const tokenizer_t *tok; /* the tokens' text (logprobs) */
	/* tools offered (tool_choice not "none"): the answer's calls are
	 * looked for in the template's syntax (chat_tools.h) */
	json_t *tools;        /* the request's tools, a reference; NULL: none */
	chat_tool_syntax_t syntax;
	bool one_call;        /* parallel_tool_calls false: the first call only */
	sbuf_t answer[API_MAX_N]; /* streamed with tools: each choice's text
				     so far */
	size_t sent[API_MAX_N];   /* its first bytes, sent as content */
	/* completions' logprobs: bytes of each choice's tokens formatted so
	 * far (api_format_event) */
	size_t text_offset[API_MAX_N];
	sched_job_t *work;    /* one reference: the first choice's work */
	int n;                /* choices: work, then more[0..n-1) */
	sched_job_t *more[API_MAX_N - 1]; /* one reference each */
	/* a stream of n > 1 choices: the END events formatted so far and
	 * their generated tokens (usage and [DONE] come after the last) */
	int n_ended;
	int64_t n_gen_ended;
};

/* Fills out with a JSON error (api_error_body's arguments). */
#define REPLY_ERR(out, st, param, code, ...)                                  \
	do {                                                                  \
		(out)->status = (st);                                         \
		(out)->content_type = "application/json";                     \
		(out)->body = api_error_body((st), (param), (code), __VA_ARGS__); \
	} while (0)

/* ---- api_tokens.c ---- */

/* The reply to a POST /tokenize or /detokenize (ep) with JSON object
 * body: 200 or a 400 naming the field. */
void api_handle_tokens(const api_t *a, server_endpoint_t ep, json_t *body,
		       server_reply_t *out);

/* ---- api_tools.c ---- */

/* The request's tools, tool_choice and parallel_tool_calls into j (its
 * tools, syntax, one_call) and, for "required" or a named function, the
 * grammar of a call into j's request; *shown: the tools to render (NULL:
 * none, with tool_choice "none"). 0, or -1 with the 400 in out. */
int api_tools_parse(api_t *a, json_t *root, server_job_t *j,
		    const json_t **shown, server_reply_t *out);
/* messages[i]'s tool_calls (an assistant's) into msg (calls malloc'd:
 * api_tools_free_calls); 0, or -1 with the 400 in out. */
int api_tools_msg_calls(json_t *m, size_t i, chat_msg_t *msg,
			server_reply_t *out);
void api_tools_free_calls(chat_msg_t *msg);
/* ---- api_grammar.c ---- */

/* The request's grammar, json_schema or response_format (at most one
 * that constrains) compiled into q->grammar (left NULL when none); 0, or
 * -1 with out filled with the 400 naming the field and what is wrong. */
int api_parse_grammar(json_t *root, sched_request_t *q, server_reply_t *out);

/* ---- api_fields.c ---- */

/* Every top-level field of a generation request to ep against the table:
 * 0, or -1 with out filled with the 400 unsupported_parameter naming the
 * first field that egang does not implement (unknown, refused, or not at
 * the only value it accepts). */
int api_fields_check(server_endpoint_t ep, json_t *root, server_reply_t *out);

/* ---- api_request.c ---- */

/* A new job for endpoint ep with a fresh id. */
server_job_t *api_job_new(api_t *a, server_endpoint_t ep);
/* The works of choices 1..n-1 of a job whose request is complete
 * (sched_job_new_choice). */
void api_job_add_choices(server_job_t *j);
/* True when name is the model's id or its file's name. */
bool api_model_known(const api_t *a, const char *name);
/* The fields of a /v1/completions or /v1/chat/completions body into j;
 * on a bad request, fills out with the 400 instead. */
void api_parse_completion(api_t *a, json_t *root, server_job_t *j,
			  server_reply_t *out);
void api_parse_chat(api_t *a, json_t *root, server_job_t *j,
		    server_reply_t *out);

#endif
