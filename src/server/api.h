/* api: the OpenAI API stage, between the transport (http.c) and the
 * scheduler (sched.h). It routes and authenticates a request, parses and
 * validates a generation request into a job (every 400 is decided here),
 * and formats every response: final JSON bodies, SSE chunk events, usage,
 * error bodies, /v1/models, /tokenize and /detokenize (api_tokens.c),
 * /health and /metrics through the metrics leaf.
 * api_handle is pure with respect to the network: no socket, no model
 * weights (the fuzzer and tests/test_server.c call it through
 * server_handle_json).
 *
 * Every error is {"error":{"message","type","param","code"}}: 400 bad
 * request (code "unsupported_parameter", param the field, for a field
 * egang does not implement: api_fields.c), 401 missing/wrong bearer key, 404 unknown path or model
 * (param "model", code "model_not_found", as OpenAI), 405 wrong method
 * (with an Allow header; OPTIONS on an endpoint is a 204 with its Allow
 * header, without a key), 413 body too large, 429 queue full, 500 a
 * generation that failed (memory, or the model's logits not finite:
 * engine.h), 503 shutting down.
 *
 * Synchronization: no lock of its own; every function may run on any
 * number of threads at once (the id counter is atomic). A job is used by
 * one thread at a time. */
#ifndef EGANG_SERVER_API_H
#define EGANG_SERVER_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/tokenizer.h"
#include "server/metrics.h"

/* Choices per request ("n") at most: each is a sequence of its own, in
 * a slot of its own (past --parallel they wait for each other), so a
 * bound keeps one request from filling the queue. */
#define API_MAX_N 8

typedef struct api api_t;               /* opaque */
typedef struct server_job server_job_t; /* opaque: one generation request */
typedef struct sched sched_t;
typedef struct sched_job sched_job_t;
typedef struct sched_event sched_event_t;
typedef struct sbuf sbuf_t;

typedef struct api_config {
	const tokenizer_t *tok;
	const char *model_id;      /* the id /v1/models lists */
	const char *model_file;    /* the file's base name, also accepted */
	const char *chat_template; /* tokenizer.chat_template or NULL */
	int32_t ctx;               /* context length: prompt + output */
	int32_t kv_positions;      /* one sequence's KV at most (0: no limit) */
	const char *api_key;       /* NULL: no authentication */
	/* /v1/models' "meta", llama.cpp server's facts (0: unknown, left
	 * out): trained context, embedding width, parameters, file bytes */
	int32_t n_ctx_train, n_embd;
	uint64_t n_params, size;
} api_config_t;

typedef struct server_reply {
	int status;
	const char *content_type; /* static string; NULL: none (a 204) */
	const char *allow;        /* Allow header for 405 and for OPTIONS's
				     204 (its CORS Allow-Methods), else NULL */
	char *body;               /* malloc'd, NUL-terminated; NULL with job */
	server_job_t *job;        /* a validated generation request, owned by
				     the caller: enqueue its work
				     (api_job_work), then api_job_free */
	server_endpoint_t endpoint;
} server_reply_t;

/* Copies cfg (its strings and tokenizer must outlive it); /health and
 * /metrics read sched's state and metrics. NULL + err_get() when out of
 * memory. */
api_t *api_new(const api_config_t *cfg, sched_t *sched, metrics_t *metrics);
void api_free(api_t *a);

/* ---- requests (api.c, api_request.c) ---- */

/* The endpoint of a path. */
server_endpoint_t api_route(const char *path);
/* Routes, authenticates and validates one request; fills *out (status 200
 * + job for a generation, otherwise a complete reply). Counts nothing.
 * method, path, auth and body may be NULL (len 0). */
void api_handle(api_t *a, const char *method, const char *path,
		const char *auth, const char *body, size_t len,
		server_reply_t *out);
void api_reply_free(server_reply_t *r);
/* Frees the request and drops its reference to the work. */
void api_job_free(server_job_t *j);
/* The scheduler's job behind it (to enqueue, cancel, pull events): its
 * first choice's. */
sched_job_t *api_job_work(server_job_t *j);
/* The request's choices ("n", 1..API_MAX_N), a scheduler job each, and choice
 * i's (0: api_job_work's). Enqueue them together (sched_enqueue_n). */
int api_job_n_choices(const server_job_t *j);
sched_job_t *api_job_choice(server_job_t *j, int i);
/* True when the client asked for server-sent events. */
bool api_job_stream(const server_job_t *j);

/* The request fields of both generation endpoints, what each does, which
 * are accepted only at their no-op default and which are refused, as
 * `egang serve --help` prints them (api_fields.c). */
void api_fields_help(FILE *out);

/* ---- responses (api_format.c) ---- */

/* {"error":{"message","type","param","code"}}; param/code may be NULL. */
char *api_error_body(int status, const char *param, const char *code,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Appends the SSE bytes of one event of j, of any of its choices (their
 * index is ev->choice): "data: JSON\n\n"; the end of the last choice to
 * end adds the usage (the prompt once, the tokens of every choice) and
 * "data: [DONE]\n\n"; an error is the stream's last event, with no
 * [DONE] after it (the transport sends nothing after it); a completion's
 * start adds nothing. */
void api_format_event(server_job_t *j, const sched_event_t *ev, sbuf_t *out);
/* The reply to a finished non-streaming job (every choice ended): its
 * status and body (malloc'd); the first failed choice's error, if any.
 * Both keep running state in j (completions' logprobs, the ended
 * choices): one thread at a time. */
char *api_format_reply(server_job_t *j, int *status);

#endif
