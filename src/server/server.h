/* server: the OpenAI-compatible HTTP layer of `egang serve`.
 *
 * Three parts (server_impl.h lists the files):
 *  1. server_handle_json(): a pure function from (method, path,
 *     Authorization header, body) to a status and a JSON reply, or to a
 *     validated generation job. No network, no model weights: the fuzzer
 *     calls it directly (fuzz/fuzz_server.c). Chat prompts are rendered by
 *     the model layer's templates (model/chat.h).
 *  2. The bounded FIFO queue and the single generation thread. That thread
 *     creates the gang (gang_init pins its caller as the leader) and the
 *     forward_t, and runs one job at a time with engine_generate(), which
 *     begins and ends the gang's generation, so cores go back to the OS
 *     between requests. Its text follows the UTF-8 policy of model/utf8.h,
 *     byte for byte what `egang generate` prints.
 *  3. The libmicrohttpd daemon (internal polling thread, one thread per
 *     connection): handler threads parse, enqueue, then wait (plain replies)
 *     or stream server-sent events from a content-reader callback.
 *
 * Endpoints: POST /v1/completions, POST /v1/chat/completions (both with
 * "stream": true), GET /v1/models, GET /health, GET /metrics (Prometheus
 * text). Every error is {"error":{"message","type","param","code"}}:
 * 400 bad request, 401 missing/wrong bearer key, 404 unknown path, 405 wrong
 * method, 413 body over SERVER_MAX_BODY, 429 queue full, 503 shutting down.
 *
 * Synchronization: server_handle_json() and server_metrics_text() may run
 * on any number of threads at once, also while the server runs.
 * server_start()/server_stop()/server_free() are for one controlling thread. */
#ifndef EGANG_SERVER_H
#define EGANG_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/chat.h" /* chat_kind(), chat_name() for callers */
#include "model/model.h"
#include "model/tokenizer.h"
#include "policy/control.h"
#include "policy/policy.h"

#define SERVER_MAX_BODY (1u << 20) /* request bodies larger get 413 */

typedef struct server server_t;         /* opaque */
typedef struct server_job server_job_t; /* opaque: one generation request */

typedef enum server_endpoint {
	EP_COMPLETIONS,
	EP_CHAT,
	EP_MODELS,
	EP_HEALTH,
	EP_METRICS,
	EP_OTHER, /* unknown paths */
	EP_COUNT
} server_endpoint_t;

typedef struct server_config {
	/* request validation (all that server_handle_json needs) */
	const tokenizer_t *tok;
	const char *model_id;      /* the id /v1/models lists (m->name) */
	const char *model_file;    /* the file's base name, also accepted */
	const char *chat_template; /* tokenizer.chat_template or NULL */
	int32_t ctx;               /* context length: prompt + output */
	int max_queue;             /* jobs waiting behind the running one */
	const char *api_key;       /* NULL: no authentication */
	int policy_index;          /* the initial policy (index into policies) */
	/* running (server_start only) */
	const model_t *m;
	const int *cpus; /* gang CPUs, cpus[0] the leader; 1 CPU = serial */
	int n_cpus;
	int static_k;    /* without policies: 0 elastic, K the first K slots */
	/* With both set, the generation thread runs a policy runtime
	 * (policy/control.h) on them: the index in control picks the record
	 * before every token; /metrics reports its telemetry. Both must
	 * outlive the server; policies->n_slots == n_cpus. */
	const policy_lib_t *policies;
	control_word_t *control;
	const char *host; /* numeric IPv4 or IPv6 address */
	int port;
	int timeout_s;   /* idle connection timeout (slow clients) */
	int max_conns;   /* concurrent connections */
	/* continuous batching (server/batch.c): up to `parallel` sequences
	 * per token step (1: one job at a time, engine_generate), prompts
	 * prefilled prefill_chunk tokens per step, the sequences' KV caches
	 * and the prefix cache within kv_bytes; kv_positions: the positions
	 * one sequence's KV can hold in that budget (0: no check), a longer
	 * prompt gets 400 */
	int parallel;
	int prefill_chunk;
	size_t kv_bytes;
	int32_t kv_positions;
	/* tests (EGANG_SERVE_LOGITS_DIR): with parallel > 1, each job writes
	 * "pos id hash" per sampled position (engine.h logits_hash) to
	 * DIR/<its response id>.hash; NULL: none */
	const char *logits_dir;
} server_config_t;

typedef struct server_reply {
	int status;
	const char *content_type; /* static string */
	const char *allow;        /* Allow header for 405, else NULL */
	char *body;               /* malloc'd, NUL-terminated; NULL with job */
	server_job_t *job;        /* a validated generation request, owned by
				     the caller: server_enqueue() or
				     server_job_free() */
	server_endpoint_t endpoint;
} server_reply_t;

/* Copies nothing: cfg's strings and tokenizer must outlive the server.
 * NULL + err_get() on a bad configuration. */
server_t *server_new(const server_config_t *cfg);
/* Stops the server if it runs, then frees it. */
void server_free(server_t *s);

/* Routes and validates one request; fills *out (status 200 + job for a
 * generation, otherwise a complete reply). Records nothing in the metrics:
 * call server_count() with the final status. body may be NULL (len 0). */
void server_handle_json(server_t *s, const char *method, const char *path,
			const char *auth, const char *body, size_t len,
			server_reply_t *out);
void server_reply_free(server_reply_t *r);
void server_job_free(server_job_t *j);
/* Counts one answered request in egang_requests_total. */
void server_count(server_t *s, server_endpoint_t ep, int status);
/* The Prometheus text exposition; malloc'd. */
char *server_metrics_text(server_t *s);

/* Starts the generation thread (which creates the gang) and the HTTP
 * daemon; -1 + err_get() on failure (gang, bind). */
int server_start(server_t *s);
/* The port the daemon listens on (after server_start). */
int server_port(const server_t *s);
/* Cancels the running generation at its next token, answers queued jobs
 * with 503, stops the daemon (joins its threads) and the generation
 * thread. Idempotent. */
void server_stop(server_t *s);

#endif
