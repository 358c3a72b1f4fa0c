/* server: the OpenAI-compatible HTTP server of `egang serve`, a one-way
 * pipeline. This header is its public face (cmd_serve, the fuzzer, the
 * tests); server.c holds its lifecycle, above the stages:
 *
 *   http (transport: libmicrohttpd, bodies, SSE content readers)
 *    -> api (routing, auth, validation into a job; every response body)
 *    -> sched (the queue, the generation thread, slots, batch steps, KV
 *       budget, prefix cache) -> engine (src/engine/engine.h)
 *   metrics and buf: leaves every stage may call.
 *
 * A stage calls only the stages after it: the scheduler appends a job's
 * events raw (text bytes, the end, an error), the transport pulls them
 * and the API formats them. Each stage's header says what it owns and
 * which lock guards what (sched.h: the queue and jobs; metrics.h: the
 * counters); no thread ever holds two of those locks.
 *
 * Endpoints: POST /v1/completions, POST /v1/chat/completions (both with
 * "stream": true; "n" choices each a scheduler job, api.h), POST
 * /tokenize, POST /detokenize, GET /v1/models[/ID], GET /health, GET
 * /metrics (Prometheus text); OPTIONS on each (CORS with --cors: http.h).
 * Errors: api.h.
 *
 * Synchronization: server_handle_json() and server_count() may run on
 * any number of threads at once, also while the server runs.
 * server_start()/server_stop()/server_free() are for one controlling
 * thread. */
#ifndef EGANG_SERVER_H
#define EGANG_SERVER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine_open.h"
#include "model/chat.h" /* chat_kind(), chat_name() for callers */
#include "model/model.h"
#include "model/tokenizer.h"
#include "policy/control.h"
#include "policy/policy.h"
#include "server/api.h" /* server_reply_t, server_job_t, server_endpoint_t */

/* `egang serve`'s exit status when its drain cut running generations */
#define SERVER_EXIT_CUT 3

typedef struct server server_t; /* opaque */

typedef struct server_config {
	/* request validation (all that server_handle_json needs) */
	const tokenizer_t *tok;
	const char *model_id;      /* the id /v1/models lists (m->name) */
	const char *model_file;    /* the file's base name, also accepted */
	const char *chat_template; /* tokenizer.chat_template or NULL */
	int32_t ctx;               /* context length: prompt + output */
	kv_type_t kv_type;         /* the KV caches' elements (server_config_engine) */
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
	/* the time a connection has to send a whole request, from its start
	 * or its previous response (0: none; http.h "Connections") */
	int request_timeout_s;
	int max_conns;   /* concurrent connections, 0: 256 (http.h: eviction) */
	int max_conns_per_ip; /* from one address; 0: no limit */
	/* CORS (http.h): the origins allowed ("*": any), none: off */
	const char *const *cors;
	int n_cors;
	/* continuous batching (sched_batch.c): up to `parallel` sequences
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

/* Copies cfg, not what it points to: its strings, tokenizer, model,
 * policies and control word must outlive the server. NULL + err_get() on
 * a bad configuration. */
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
/* Counts one answered request in egang_requests_total. */
void server_count(server_t *s, server_endpoint_t ep, int status);

/* Starts the generation thread (which creates the gang) and the HTTP
 * daemon; -1 + err_get() on failure (gang, bind). */
int server_start(server_t *s);
/* The port the daemon listens on (after server_start). */
int server_port(const server_t *s);
/* Stops the scheduler first (sched_stop: the running generations are cut
 * at their next token and end with a 503 error, the queued jobs are
 * answered with 503, the generation thread is joined), waits a few
 * seconds for those answers to be sent, then stops the daemon (joins its
 * threads). Returns the generations it cut (0 on a second call). */
int server_stop(server_t *s);
/* The graceful drain before server_stop: new generation requests and the
 * queued ones get 503 at once and /health answers 503 "draining" (the
 * socket stays open, so a balancer gets an answer it may retry
 * elsewhere, not a refused connection), while the running generations go
 * on until every accepted one has been answered, `seconds` have passed,
 * or a signal of `interrupt` (blocked in the caller) arrives; then
 * server_stop cuts what still runs. Returns the generations cut. */
int server_drain(server_t *s, int seconds, const sigset_t *interrupt);

/* ---- configuration for `egang serve` (server_config.c) ---- */

#define SERVER_API_KEY_MAX 4096 /* bytes of an API key */

/* The API key from at most one source: flag (--api-key), the first line
 * of the file `file` (--api-key-file; its newline, and a CR before it,
 * not part of the key) or env (the value of EGANG_API_KEY, NULL when
 * unset). Either flag wins over env; both flags together are refused.
 * The file's mode is not checked (README "The HTTP server"). *key:
 * malloc'd (server_config_api_key_free), NULL when no source gives one.
 * 0, or -1 + err_get() naming the source: both flags, a file that cannot
 * be read or is empty, a key that is empty, over SERVER_API_KEY_MAX bytes
 * or has a control byte. */
int server_config_api_key(const char *flag, const char *file, const char *env,
			  char **key);
/* Zeroes and frees a key from server_config_api_key (NULL: nothing). */
void server_config_api_key_free(char *key);

#define SERVER_MAX_CORS 32 /* --cors origins */

/* --cors's origins (server_config_cors). */
typedef struct server_cors {
	char *origin[SERVER_MAX_CORS]; /* malloc'd */
	int n;
} server_cors_t;

/* The origins of n --cors values into c (which starts zeroed): each
 * value "*" (any origin) or a comma-separated list of origins as a
 * browser sends them, scheme://host[:port] (http or https; a host name,
 * an IPv4 address or a bracketed IPv6 one; no path, no trailing slash).
 * 0, or -1 + err_get() naming the value. */
int server_config_cors(server_cors_t *c, const char *const *vals, int n);
/* Frees c's origins (server_config_cors). */
void server_config_cors_free(server_cors_t *c);
/* `egang serve --help`'s text after its options: error shapes, CORS,
 * then the request fields (api.h api_fields_help). */
void server_help_more(FILE *out);

/* The fields of cfg an open engine (engine_open.h) gives: the model, its
 * tokenizer and id, the file name of model_path, the context, the gang's
 * CPUs, the policy library and the control word. */
void server_config_engine(server_config_t *cfg, const engine_t *e,
			  const char *model_path);
/* The continuous-batching fields of cfg (cfg->ctx set): the KV budget
 * kv_bytes (kv_mb MiB; 0: a quarter of the RAM, at most 4096 MiB), the
 * parallelism (0: as many full contexts as the budget holds, 1..16) and,
 * with parallel > 1, the positions one sequence's KV may hold (f32 K and
 * V of every layer per position). */
void server_config_batch(server_config_t *cfg, const model_t *m, int64_t kv_mb,
			 int64_t parallel);
/* The chat template to serve m with: the markers of the built-in template
 * `name` (chat_kind_from_name), or without a name the file's
 * tokenizer.chat_template (NULL when it has none). malloc'd. */
char *server_chat_template(const model_t *m, const char *name);
/* Blocks SIGINT and SIGTERM in the calling thread, so that every thread
 * it starts afterwards inherits the mask and only its sigwait sees them,
 * and ignores SIGPIPE; *set: the two. */
void server_signals_block(sigset_t *set);
/* The startup line (log_info): model, chat template, address, cores,
 * policy, control word, context, queue, parallelism, KV type and budget. */
void server_config_log(const server_config_t *cfg, int port, const char *control);
/* Waits for a signal of set (blocked by server_signals_block), then
 * drains up to drain_s seconds (server_drain; another signal cuts at
 * once), with a line for each. The exit status: EXIT_OK when every
 * generation finished, SERVER_EXIT_CUT when the drain cut some. */
int server_run_until_signal(server_t *s, const sigset_t *set, int drain_s);
/* True when host is a numeric IPv4 or IPv6 address (--host). */
bool server_host_ok(const char *host);
/* --backend scx: egang's sched_ext scheduler loaded (unless it is) with
 * policy `index` in force, this process its gang and in SCHED_EXT, so every
 * thread server_start makes inherits it (gang.c base_policy). *ours: this
 * call loaded it (the caller unloads it at the end). -1 + err_get(), with
 * nothing left loaded by it. */
int server_scx_attach(const engine_t *e, int index, bool *ours);

#endif
