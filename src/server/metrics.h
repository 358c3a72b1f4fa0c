/* metrics: the server's counters and histograms, /metrics in the
 * Prometheus text exposition format (version 0.0.4), and the /health
 * body. A leaf: every stage records into it; it calls only buf, and
 * scx_loaded / scx_read_kguard (scx/scx.h) for the sched_ext guard's
 * counter.
 *
 * Lock: one mutex inside metrics_t guards every counter, gauge and
 * histogram. Each function takes it and lets it go before it returns, and
 * calls nothing that takes another lock while it holds it, so no thread
 * ever holds it together with the scheduler's queue lock or a job's lock
 * (sched.h). The values a caller passes in (queue depth, busy) were read
 * under those locks beforehand.
 *
 * Synchronization: every function may run on any thread at any time
 * between metrics_new and metrics_free. */
#ifndef EGANG_SERVER_METRICS_H
#define EGANG_SERVER_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gang/gang.h"
#include "policy/control.h"
#include "policy/policy.h"

/* The endpoint a request is counted under (egang_requests_total). */
typedef enum server_endpoint {
	EP_COMPLETIONS,
	EP_CHAT,
	EP_MODELS,
	EP_HEALTH,
	EP_METRICS,
	EP_TOKENIZE,
	EP_DETOKENIZE,
	EP_OTHER, /* unknown paths */
	EP_COUNT
} server_endpoint_t;

/* The histograms. */
typedef enum metrics_hist {
	METRICS_HIST_TTFT,       /* seconds from enqueue to the first token */
	METRICS_HIST_TPOT,       /* seconds per decode step */
	METRICS_HIST_BATCH_SIZE, /* sequences per token step */
	METRICS_HIST_QUEUE_WAIT, /* seconds from enqueue to the start */
	METRICS_HIST_COUNT
} metrics_hist_t;

typedef struct metrics_config {
	int max_queue;   /* egang_queue_capacity */
	size_t kv_bytes; /* egang_kv_bytes_budget */
	/* the policy telemetry: with both set, read from the control word;
	 * otherwise policy_index is reported as it is */
	const policy_lib_t *policies;
	control_word_t *control;
	int policy_index;
} metrics_config_t;

/* One finished generation (metrics_record_generation). */
typedef struct metrics_generation {
	int64_t n_prompt, n_gen;  /* tokens (BOS included in n_prompt) */
	int64_t decode_steps;
	double prefill_s, decode_s;
	double ttft_s;            /* < 0: no token was generated */
	bool cancelled;
} metrics_generation_t;

typedef struct metrics metrics_t; /* opaque */

/* NULL + err_get() when out of memory. */
metrics_t *metrics_new(const metrics_config_t *cfg);
void metrics_free(metrics_t *m);

/* Counts one answered request (ignores an endpoint or status out of
 * range). */
void metrics_count(metrics_t *m, server_endpoint_t ep, int status);
/* Adds one observation to a histogram. */
void metrics_observe(metrics_t *m, metrics_hist_t h, double v);
/* A job answered with an error after it was accepted: 500 counts as
 * failed, 503 as cancelled, others not at all. */
void metrics_job_failed(metrics_t *m, int status);
/* The counters and gauges of one finished generation and of the gang
 * after it (st: gang_stats of the gang; NULL: serial, whose token count
 * grows by the generation's steps). Returns the decode tokens per second
 * the gauge holds now (the guard's input). */
double metrics_record_generation(metrics_t *m, const metrics_generation_t *g,
				 const gang_stats_t *st);
/* A sequence joined the batch after wait_s in the queue, starting from
 * `saved` cached prompt positions (a prefix-cache hit when hit). */
void metrics_record_admission(metrics_t *m, double wait_s, bool hit,
			      uint64_t saved);
/* A sequence already in the batch took `saved` prompt positions from a
 * cached prefix or from another choice of its request (a prefix-cache
 * hit, sched_batch.c). */
void metrics_record_prefix(metrics_t *m, uint64_t saved);
/* Gauges: the gang's width, the KV bytes held. */
void metrics_set_gang_width(metrics_t *m, uint32_t width);
void metrics_set_kv_used(metrics_t *m, size_t bytes);

/* ---- the drain and the connections (server.h, http.h) ---- */

/* Why the transport closed a connection itself (egang_connections_closed_total). */
typedef enum metrics_close {
	METRICS_CLOSE_EVICTED,         /* a waiting one, past --max-conns */
	METRICS_CLOSE_REQUEST_TIMEOUT, /* no whole request within --request-timeout */
	METRICS_CLOSE_PER_IP,          /* past --max-conns-per-ip, no request sent */
	METRICS_CLOSE_COUNT
} metrics_close_t;

/* Adds delta to the generation requests in flight: accepted by the
 * scheduler and not yet answered in full (a stream until its last byte). */
void metrics_in_flight_add(metrics_t *m, int delta);
/* The generation requests in flight now (egang_requests_in_flight). */
int metrics_in_flight(metrics_t *m);
/* Marks the drain as begun (egang_draining 1). */
void metrics_set_draining(metrics_t *m);
/* Counts n connections the transport closed for `why`. */
void metrics_count_closed(metrics_t *m, metrics_close_t why, int n);

/* The Prometheus text; depth and busy are the queue's gauges. malloc'd. */
char *metrics_text(metrics_t *m, int depth, bool busy);
/* The /health body; sets *status: 200 with "status":"ok" while down is
 * NULL, else 503 with "status": down ("draining", "stopping"). malloc'd. */
char *metrics_health_text(const char *model, const char *down, int depth,
			  bool busy, int *status);

#endif
