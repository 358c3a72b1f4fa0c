/* server_impl: what the server's files share, and nobody else includes.
 *
 * The files, in data-flow order:
 *  server.c   the object (server_new/server_free), byte buffers, JSON
 *             replies and errors;
 *  request.c  routing, authentication and validation: a request (JSON) to
 *             a reply or a job (server_handle_json, the 400s); chat
 *             prompts through model/chat.h;
 *  metrics.c  the counters and histograms, /metrics (Prometheus text) and
 *             /health;
 *  queue.c    the bounded FIFO queue and the generation thread (one job at
 *             a time through engine_generate), streamed and final bodies;
 *  http.c     the libmicrohttpd daemon: connections, bodies, server-sent
 *             events, server_start/server_stop.
 *
 * Locks: s->qmu guards the queue (head, tail, depth, running_job, gen_*);
 * s->mmu the metrics; j->mu a job's shared part. No thread holds two of
 * them at once. */
#ifndef EGANG_SERVER_IMPL_H
#define EGANG_SERVER_IMPL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "model/chat.h"
#include "model/sampler.h"
#include "policy/control.h"
#include "server/server.h"

#define MAX_STOP 4          /* stop strings per request (OpenAI's limit) */
#define MAX_STOP_LEN 256    /* bytes per stop string */
#define KEEPALIVE_MS 1000   /* SSE comment while a stream waits */
#define DISCARD_MAX (16u << 20) /* body bytes read past the cap, then close */

/* ---- growable byte buffer (server.c) ---- */

typedef struct sbuf {
	char *p;
	size_t len, cap;
} sbuf_t;

void sbuf_add(sbuf_t *b, const char *s, size_t n); /* aborts on no memory */
void sbuf_str(sbuf_t *b, const char *s);

/* ---- JSON replies (server.c) ---- */

/* json_dumps then json_decref; aborts only on out of memory. */
char *json_take_dump(json_t *j);
/* A JSON string of s[0..n) through the UTF-8 policy (model/utf8.h). */
json_t *json_text(const char *s, size_t n);
/* {"error":{"message","type","param","code"}}; param/code may be NULL. */
char *error_body(int status, const char *param, const char *code,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#define REPLY_ERR(out, st, param, code, ...)                                 \
	do {                                                                 \
		(out)->status = (st);                                        \
		(out)->content_type = "application/json";                    \
		(out)->body = error_body((st), (param), (code), __VA_ARGS__); \
	} while (0)

/* ---- histograms (metrics.c) ---- */

typedef struct hist {
	const double *le; /* upper bounds, ascending; +Inf implied */
	int n;
	uint64_t counts[16]; /* n + 1 */
	double sum;
	uint64_t count;
} hist_t;

void hist_observe(hist_t *h, double v);
/* Sets the bucket bounds of the server's histograms. */
void metrics_init(server_t *s);

/* ---- the job and the server ---- */

struct server_job {
	/* the request, immutable once validated */
	server_endpoint_t ep;
	bool stream;
	int32_t *ids; /* (n_ids) prompt tokens, BOS included */
	int64_t n_ids;
	int32_t max_tokens;
	sampler_params_t sp;
	char *stop[MAX_STOP];
	int n_stop;
	char id[48];
	int64_t created;
	const char *model;
	/* queue link and times (under the queue lock) */
	server_job_t *next;
	uint64_t t_enqueue;
	/* generation side, touched only by the generation thread until done */
	sbuf_t text;     /* the generated text (engine_params_t.on_text) */
	uint64_t t_last; /* time of the last token step (per-token latency) */
	const char *finish;
	/* shared, under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs;
	sbuf_t sse;      /* streamed bytes, sse_off of them already sent */
	size_t sse_off;
	bool done;
	int err_status;  /* nonzero: the job failed after it was accepted */
	char *err_body;
	int64_t n_prompt, n_gen;
	/* set by the HTTP side when the client went away; read by the
	 * generation thread at each token. Relaxed is enough: it only asks
	 * for an earlier stop, and mu orders everything it guards. */
	_Atomic bool cancel;
};

struct server {
	server_config_t cfg;
	chat_template_t *chat;
	int64_t created;
	_Atomic uint64_t next_id; /* relaxed: only ever unique, orders nothing */
	/* metrics, under mmu */
	pthread_mutex_t mmu;
	uint64_t req[EP_COUNT][600];
	uint64_t tok_prompt, tok_gen, cancelled, failed;
	double prefill_tps, decode_tps;
	hist_t ttft, tpot;
	uint32_t gang_width;
	uint64_t latch_changes, joins, departures, gang_tokens;
	/* continuous batching (batch.c): sequences per step, queue wait, KV
	 * bytes in use (live sequences and the prefix cache), prefix hits and
	 * the prompt positions they saved */
	hist_t batch_size, queue_wait;
	size_t kv_used;
	uint64_t prefix_hits, prefix_tokens;
	/* queue, under qmu */
	pthread_mutex_t qmu;
	pthread_cond_t qcv;
	server_job_t *head, *tail;
	int depth;
	bool running_job;
	/* lifecycle */
	_Atomic bool stopping; /* relaxed: polled by on_text; qmu orders the
				  queue hand-over */
	bool gen_started, gen_ready;
	int gen_rc;
	char gen_err[256];
	pthread_t gen;
	struct MHD_Daemon *mhd;
	int port;
	/* the policy runtime: generation thread only (policy/control.h) */
	policy_rt_t rt;
	bool have_rt;
};

/* ---- request.c ---- */

server_endpoint_t server_route(const char *path);
/* Frees a job nobody else holds. */
void job_destroy(server_job_t *j);

/* ---- metrics.c ---- */

/* The /health body; sets *status (200, or 503 while stopping). */
char *health_body(server_t *s, int *status);

/* ---- queue.c ---- */

/* 0 queued; 429 full; 503 stopping or not started. Takes a reference for
 * the queue. */
int job_enqueue(server_t *s, server_job_t *j);
/* Drops one reference; the last frees the job. */
void job_release(server_job_t *j);
/* The complete JSON reply of a finished non-streaming job (malloc'd). */
char *job_final_body(server_job_t *j);
/* The generation thread (pthread start routine; arg is the server). */
void *gen_main(void *arg);

/* What batch.c shares with queue.c's one-job loop. */
typedef struct gen_ctx {
	server_t *s;
	server_job_t *j;
} gen_ctx_t;
typedef struct gang gang_t;
typedef struct forward forward_t;
typedef struct engine_result engine_result_t;
/* Appends an SSE event "data: JSON\n\n" (takes json). */
void sse_event(server_job_t *j, json_t *json);
json_t *chunk_json(server_job_t *j, const char *text, size_t n, const char *finish,
		   bool role);
json_t *usage_json(int64_t np, int64_t ng);
/* Answers j with an error (an SSE error event when it streams). */
void job_fail(server_t *s, server_job_t *j, int status, const char *msg);
/* The engine's text for j: kept, streamed; nonzero once cancelled. */
int gen_on_text(void *user, const char *text, size_t n);
/* The metrics of one finished generation, then the policy guard's check. */
void gen_record(server_t *s, gang_t *g, const server_job_t *j,
		const engine_result_t *r, uint64_t t0, bool cancelled);
/* The end of a job that ran: final SSE event and [DONE], or the body. */
void job_complete(server_t *s, gang_t *g, server_job_t *j, engine_result_t *r,
		  uint64_t t0);

/* ---- batch.c ---- */

/* The generation loop with cfg.parallel > 1 on the thread's forward pass
 * and gang (NULL: serial); returns once stopping and drained. */
void batch_main(server_t *s, forward_t *f, gang_t *g);

#endif
