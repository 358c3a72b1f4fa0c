/* api_format: every response body of the API. A job's events arrive raw
 * from the scheduler (sched.h); here they become OpenAI's JSON: one
 * chunk per text event while it streams, one body at the end otherwise. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api_impl.h"

/* ---- errors ---- */

static const char *error_type(int status)
{
	switch (status) {
	case 401: return "authentication_error";
	case 429: return "rate_limit_error";
	case 500:
	case 503: return "server_error";
	default: return "invalid_request_error";
	}
}

char *api_error_body(int status, const char *param, const char *code,
		     const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_t *e = json_object();
	json_object_set_new(e, "message", buf_json_text(msg, strlen(msg)));
	json_object_set_new(e, "type", json_string(error_type(status)));
	json_object_set_new(e, "param", param ? json_string(param) : json_null());
	json_object_set_new(e, "code", code ? json_string(code) : json_null());
	json_t *root = json_object();
	json_object_set_new(root, "error", e);
	return buf_json_dump(root);
}

/* ---- pieces ---- */

/* OpenAI's finish_reason for the engine's stop. */
static const char *finish_reason(engine_stop_t stop)
{
	return stop == STOP_EOS || stop == STOP_STRING ? "stop" : "length";
}

static json_t *usage_json(int64_t np, int64_t ng)
{
	return json_pack("{s:I, s:I, s:I}", "prompt_tokens", (json_int_t)np,
			 "completion_tokens", (json_int_t)ng, "total_tokens",
			 (json_int_t)(np + ng));
}

/* ---- log-probabilities (sampler.h: which distribution) ---- */

/* A log-probability as JSON: -9999 (OpenAI's floor) for -inf, which
 * jansson cannot write. */
static json_t *logprob_json(float lp)
{
	return json_real(isfinite(lp) ? (double)lp : -9999.0);
}

/* The text token id adds after prev (n bytes into buf, cap 512). */
static size_t token_bytes(const server_job_t *j, int32_t prev, int32_t id,
			  char *buf)
{
	int n = tokenizer_decode(j->tok, prev, id, buf, 512);
	return n > 0 ? (size_t)n : 0;
}

/* {"token", "logprob", "bytes"} of chat's entries. */
static json_t *chat_entry_json(const server_job_t *j, int32_t prev, int32_t id,
			       float lp)
{
	char buf[512];
	size_t n = token_bytes(j, prev, id, buf);
	json_t *bytes = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(bytes, json_integer((unsigned char)buf[i]));
	return json_pack("{s:o, s:o, s:o}", "token", buf_json_text(buf, n),
			 "logprob", logprob_json(lp), "bytes", bytes);
}

/* Chat's choices[].logprobs: {"content": [...], "refusal": null}. */
static json_t *chat_logprobs_json(const server_job_t *j,
				  const engine_token_t *t, size_t n)
{
	json_t *content = json_array();
	for (size_t k = 0; k < n; k++) {
		json_t *e = chat_entry_json(j, t[k].prev, t[k].id, t[k].lp.logprob);
		json_t *top = json_array();
		for (int32_t i = 0; i < t[k].lp.n_top; i++)
			json_array_append_new(top, chat_entry_json(j, t[k].prev,
								   t[k].lp.top_id[i],
								   t[k].lp.top_logprob[i]));
		json_object_set_new(e, "top_logprobs", top);
		json_array_append_new(content, e);
	}
	return json_pack("{s:o, s:n}", "content", content, "refusal");
}

/* Completions' choices[].logprobs: tokens, token_logprobs, top_logprobs
 * (an object per token: text -> log-probability) and text_offset, the
 * byte offset of each token in choice ci's completion (j->text_offset
 * carries it from chunk to chunk). */
static json_t *cmpl_logprobs_json(server_job_t *j, int ci, const engine_token_t *t,
				  size_t n)
{
	json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(),
	       *offs = json_array();
	char buf[512];
	for (size_t k = 0; k < n; k++) {
		size_t len = token_bytes(j, t[k].prev, t[k].id, buf);
		json_array_append_new(tokens, buf_json_text(buf, len));
		json_array_append_new(lps, logprob_json(t[k].lp.logprob));
		json_array_append_new(offs, json_integer((json_int_t)j->text_offset[ci]));
		j->text_offset[ci] += len;
		json_t *top = json_object();
		for (int32_t i = 0; i < t[k].lp.n_top; i++) {
			size_t m = token_bytes(j, t[k].prev, t[k].lp.top_id[i], buf);
			json_t *key = buf_json_text(buf, m);
			json_object_set_new(top, json_string_value(key),
					    logprob_json(t[k].lp.top_logprob[i]));
			json_decref(key);
		}
		json_array_append_new(tops, top);
	}
	return json_pack("{s:o, s:o, s:o, s:o}", "tokens", tokens, "token_logprobs",
			 lps, "top_logprobs", tops, "text_offset", offs);
}

/* The logprobs of choice ci's tokens t (n) in j's shape, or JSON null
 * when j's request did not ask for them. */
static json_t *logprobs_json(server_job_t *j, int ci, const engine_token_t *t,
			     size_t n)
{
	if (!sched_job_request(j->work)->sp.logprobs)
		return json_null();
	return j->ep == EP_CHAT ? chat_logprobs_json(j, t, n)
				: cmpl_logprobs_json(j, ci, t, n);
}

/* One streamed chunk of choice ci: its delta (taken; NULL: text, role
 * below), or text (NULL: none), the finish reason (NULL: none yet), the
 * assistant role (a chat's first chunk), its logprobs (taken; NULL:
 * null). */
static json_t *chunk_delta_json(const server_job_t *j, int ci, json_t *delta,
				const char *text, size_t n, const char *finish,
				bool role, json_t *lp)
{
	json_t *choice = json_object();
	json_object_set_new(choice, "index", json_integer(ci));
	if (j->ep == EP_CHAT) {
		if (!delta)
			delta = json_object();
		if (role)
			json_object_set_new(delta, "role", json_string("assistant"));
		if (text)
			json_object_set_new(delta, "content", buf_json_text(text, n));
		json_object_set_new(choice, "delta", delta);
	} else {
		json_object_set_new(choice, "text", buf_json_text(text ? text : "", n));
	}
	json_object_set_new(choice, "logprobs", lp ? lp : json_null());
	json_object_set_new(choice, "finish_reason",
			    finish ? json_string(finish) : json_null());
	json_t *choices = json_array();
	json_array_append_new(choices, choice);
	return json_pack("{s:s, s:s, s:I, s:s, s:o}", "id", j->id, "object",
			 j->ep == EP_CHAT ? "chat.completion.chunk" : "text_completion",
			 "created", (json_int_t)j->created, "model", j->model,
			 "choices", choices);
}

/* chunk_delta_json with the delta made from text and role. */
static json_t *chunk_json(const server_job_t *j, int ci, const char *text,
			  size_t n, const char *finish, bool role, json_t *lp)
{
	return chunk_delta_json(j, ci, NULL, text, n, finish, role, lp);
}

/* Appends "data: JSON\n\n" (takes json). */
static void sse_event(sbuf_t *out, json_t *json)
{
	char *s = buf_json_dump(json);
	sbuf_str(out, "data: ");
	sbuf_str(out, s);
	sbuf_str(out, "\n\n");
	free(s);
}

/* ---- tool calls (chat_tools.h) ---- */

/* The id of choice ci's call k: "call_", the server's start-up time,
 * j's number, ci and k: unique for the server's life and across its
 * restarts. */
static void call_id(const server_job_t *j, int ci, int k, char *buf, size_t n)
{
	const char *num = strrchr(j->id, '-');
	snprintf(buf, n, "call_%llx%s-%d-%d", (unsigned long long)j->created,
		 num ? num : "-", ci, k);
}

/* How many of p's calls j answers with (parallel_tool_calls). */
static int calls_kept(const server_job_t *j, const chat_parsed_t *p)
{
	return j->one_call && p->n_calls > 1 ? 1 : p->n_calls;
}

/* message.tool_calls of choice ci: [{"id", "type": "function",
 * "function": {"name", "arguments"}}]. */
static json_t *tool_calls_json(const server_job_t *j, int ci,
			       const chat_parsed_t *p)
{
	json_t *a = json_array();
	for (int k = 0; k < calls_kept(j, p); k++) {
		char id[64];
		call_id(j, ci, k, id, sizeof id);
		json_array_append_new(a, json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", id,
						   "type", "function", "function", "name",
						   p->calls[k].name, "arguments",
						   p->calls[k].args));
	}
	return a;
}

/* The text of choice ci's streamed answer so far ("" before any). */
static const char *answer_text(const server_job_t *j, int ci)
{
	return j->answer[ci].p ? j->answer[ci].p : "";
}

/* A streamed text event of a job with tools: the text of its choice that
 * cannot be the start of a call goes out as content; the rest waits for
 * the end (api_format_event). The tokens' logprobs go out with the event
 * whatever. */
static void tools_stream_text(server_job_t *j, const sched_event_t *ev,
			      sbuf_t *out)
{
	int ci = ev->choice;
	sbuf_add(&j->answer[ci], ev->text, ev->n);
	bool call;
	size_t safe = chat_tools_stream_safe(j->syntax, answer_text(j, ci),
					     j->answer[ci].len, j->sent[ci], &call);
	json_t *lp = logprobs_json(j, ci, ev->tokens, ev->n_tokens);
	if (safe > j->sent[ci]) {
		sse_event(out, chunk_json(j, ci, answer_text(j, ci) + j->sent[ci],
					  safe - j->sent[ci], NULL, false, lp));
		j->sent[ci] = safe;
	} else if (!json_is_null(lp)) {
		sse_event(out, chunk_json(j, ci, NULL, 0, NULL, false, lp));
	} else {
		json_decref(lp);
	}
}

/* The end of a streamed choice with tools: the held text as content, or
 * each call as OpenAI streams one (a chunk with its index, id, type,
 * name and empty arguments, then a chunk with the arguments); the
 * finish reason, "tool_calls" when there were calls. */
static const char *tools_stream_end(server_job_t *j, const sched_event_t *ev,
				    sbuf_t *out)
{
	int ci = ev->choice;
	const char *text = answer_text(j, ci);
	chat_parsed_t p;
	chat_tools_parse(j->syntax, text, j->answer[ci].len, j->tools, &p);
	size_t end = p.n_calls ? p.n_content : j->answer[ci].len;
	if (end > j->sent[ci])
		sse_event(out, chunk_json(j, ci, text + j->sent[ci], end - j->sent[ci],
					  NULL, false, NULL));
	j->sent[ci] = j->answer[ci].len;
	for (int k = 0; k < calls_kept(j, &p); k++) {
		char id[64];
		call_id(j, ci, k, id, sizeof id);
		json_t *head = json_pack("{s:[{s:i, s:s, s:s, s:{s:s, s:s}}]}",
					 "tool_calls", "index", k, "id", id, "type",
					 "function", "function", "name", p.calls[k].name,
					 "arguments", "");
		json_t *args = json_pack("{s:[{s:i, s:{s:s}}]}", "tool_calls", "index",
					 k, "function", "arguments", p.calls[k].args);
		sse_event(out, chunk_delta_json(j, ci, head, NULL, 0, NULL, false, NULL));
		sse_event(out, chunk_delta_json(j, ci, args, NULL, 0, NULL, false, NULL));
	}
	const char *finish = p.n_calls ? "tool_calls" : finish_reason(ev->stop);
	chat_parsed_free(&p);
	return finish;
}

/* ---- a job's responses ---- */

/* The last chunk of a choice's stream (its finish reason, and the
 * tokens whose text was held back, then cut by a stop string), with the
 * usage and [DONE] after the request's last choice to end. */
static void format_end(server_job_t *j, const sched_event_t *ev, sbuf_t *out)
{
	const char *finish = j->tools ? tools_stream_end(j, ev, out)
				      : finish_reason(ev->stop);
	json_t *lp = ev->n_tokens ? logprobs_json(j, ev->choice, ev->tokens,
						  ev->n_tokens)
				  : NULL;
	json_t *last = chunk_json(j, ev->choice, j->ep == EP_CHAT ? NULL : "", 0,
				  finish, false, lp);
	int64_t n_gen = ev->n_gen;
	if (j->n > 1) { /* every choice's tokens, in the last one's chunk */
		j->n_gen_ended += ev->n_gen;
		n_gen = j->n_gen_ended;
		if (++j->n_ended < j->n) {
			sse_event(out, last);
			return;
		}
	}
	json_object_set_new(last, "usage", usage_json(ev->n_prompt, n_gen));
	sse_event(out, last);
	sbuf_str(out, "data: [DONE]\n\n");
}

void api_format_event(server_job_t *j, const sched_event_t *ev, sbuf_t *out)
{
	switch (ev->kind) {
	case SCHED_EVENT_START:
		if (j->ep == EP_CHAT) /* the role comes first, alone */
			sse_event(out, chunk_json(j, ev->choice, "", 0, NULL, true, NULL));
		break;
	case SCHED_EVENT_TEXT:
		if (j->tools) {
			tools_stream_text(j, ev, out);
			break;
		}
		sse_event(out, chunk_json(j, ev->choice, ev->text, ev->n, NULL, false,
					  logprobs_json(j, ev->choice, ev->tokens,
							ev->n_tokens)));
		break;
	case SCHED_EVENT_END:
		format_end(j, ev, out);
		break;
	case SCHED_EVENT_ERROR: {
		/* the stream's last event: no [DONE] after it, so that a client
		 * that waits for [DONE] never takes a cut text for a whole one */
		char *body = api_error_body(ev->status, NULL, NULL, "%s", ev->msg);
		sse_event(out, json_loads(body, 0, NULL));
		free(body);
		break;
	}
	case SCHED_EVENT_COUNT: /* not an event; named for -Wswitch */
		break;
	}
}

/* choices[ci] of a finished reply (r: its work's result). */
static json_t *reply_choice(server_job_t *j, int ci, const sched_result_t *r)
{
	json_t *choice = json_object();
	json_object_set_new(choice, "index", json_integer(ci));
	chat_parsed_t p = {0};
	if (j->tools)
		chat_tools_parse(j->syntax, r->text ? r->text : "", r->n, j->tools, &p);
	const char *finish = p.n_calls ? "tool_calls" : finish_reason(r->stop);
	if (p.n_calls) /* the text before the calls, null if none */
		json_object_set_new(choice, "message",
				    json_pack("{s:s, s:o, s:o}", "role", "assistant",
					      "content", p.n_content ?
					      buf_json_text(r->text, p.n_content) : json_null(),
					      "tool_calls", tool_calls_json(j, ci, &p)));
	else if (j->ep == EP_CHAT)
		json_object_set_new(choice, "message",
				    json_pack("{s:s, s:o}", "role", "assistant",
					      "content", buf_json_text(r->text, r->n)));
	else
		json_object_set_new(choice, "text", buf_json_text(r->text, r->n));
	chat_parsed_free(&p);
	json_object_set_new(choice, "logprobs",
			    logprobs_json(j, ci, r->tokens, r->n_tokens));
	json_object_set_new(choice, "finish_reason", json_string(finish));
	return choice;
}

char *api_format_reply(server_job_t *j, int *status)
{
	sched_result_t r[API_MAX_N];
	for (int i = 0; i < j->n; i++) {
		sched_job_result(i ? j->more[i - 1] : j->work, &r[i]);
		if (r[i].status) {
			*status = r[i].status;
			return api_error_body(r[i].status, NULL, NULL, "%s", r[i].msg);
		}
	}
	*status = 200;
	json_t *choices = json_array();
	int64_t n_gen = 0;
	for (int i = 0; i < j->n; i++) {
		json_array_append_new(choices, reply_choice(j, i, &r[i]));
		n_gen += r[i].n_gen;
	}
	/* the prompt once: the choices share it */
	return buf_json_dump(json_pack(
		"{s:s, s:s, s:I, s:s, s:o, s:o}", "id", j->id, "object",
		j->ep == EP_CHAT ? "chat.completion" : "text_completion",
		"created", (json_int_t)j->created, "model", j->model, "choices",
		choices, "usage", usage_json(r[0].n_prompt, n_gen)));
}
