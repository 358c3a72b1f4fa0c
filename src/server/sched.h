/* sched: the scheduler, the server's stage next to the engine. It keeps
 * the bounded FIFO queue of jobs and runs the one generation thread, which
 * creates the gang (gang_init pins its caller as the leader) and the
 * forward pass, then either runs one job at a time through
 * engine_generate (parallel 1) or batches up to `parallel` sequences per
 * token step (continuous batching, sched_batch.c). The gang's generation
 * ends whenever nothing runs, so the cores go back to the OS between
 * requests.
 *
 * What the stage above gets back is raw: a job's events (the start of its
 * generation, text bytes as the engine makes them final, its end with the
 * engine's stop reason and token counts, or an error status and message),
 * and for a job nobody streams, only its final result. It never formats
 * JSON or SSE: the API stage does (api.h), the transport pulls the events
 * (http.c).
 *
 * Locks (no thread ever holds two of them, nor calls out while holding
 * one):
 *  - the queue lock, inside sched_t: the queue (head, tail, depth), the
 *    running flag, and the thread's start-up handshake;
 *  - each job's lock: its refcount, its text, its events and its end (done,
 *    result, error);
 *  - the metrics' own lock (metrics.h).
 * The generation thread alone touches the slots, the prefix cache, the
 * policy runtime and a running job's timing fields.
 *
 * Shutdown has two phases. The drain (sched_drain) refuses new jobs with
 * 503, answers the queued ones with 503 at once (the generation thread
 * takes them off the queue at its next token step) and lets the running
 * generations finish. The stop (sched_stop) cuts what still runs: a cut
 * generation ends with a 503 ERROR event, never an END, so that no client
 * takes a cut text for a complete one.
 *
 * Synchronization: sched_enqueue, sched_drain, sched_phase, sched_stopping,
 * sched_queue_state and the sched_job_* functions may run on any thread at
 * any time between sched_new and sched_free; sched_start/sched_stop/
 * sched_free are for one controlling thread. */
#ifndef EGANG_SERVER_SCHED_H
#define EGANG_SERVER_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "engine/engine.h"
#include "model/model.h"
#include "model/sampler.h"
#include "policy/control.h"
#include "policy/policy.h"
#include "server/buf.h"
#include "server/metrics.h"

#define SCHED_MAX_STOP 4 /* stop strings per job */

typedef struct sched_config {
	const model_t *m;
	int32_t ctx;      /* context length: prompt + output */
	kv_type_t kv_type; /* the KV caches' elements */
	int max_queue;    /* jobs waiting behind the running ones */
	const int *cpus;  /* gang CPUs, cpus[0] the leader; 1 CPU = serial */
	int n_cpus;
	int static_k;     /* without policies: 0 elastic, K the first K slots */
	/* With both set, the generation thread runs a policy runtime on them
	 * (policy/control.h), starting from policy_index. */
	const policy_lib_t *policies;
	control_word_t *control;
	int policy_index;
	/* continuous batching: up to `parallel` sequences per token step
	 * (1: one job at a time), prompts prefilled prefill_chunk tokens per
	 * step, the sequences' KV and the prefix cache within kv_bytes;
	 * kv_positions: what one sequence's KV may hold (0: no limit) */
	int parallel;
	int prefill_chunk;
	size_t kv_bytes;
	int32_t kv_positions;
	/* tests: with parallel > 1, each job writes "pos id hash" per sampled
	 * position to DIR/<its name>.hash; NULL: none */
	const char *logits_dir;
} sched_config_t;

/* What a job asks for: filled in by its creator before sched_enqueue,
 * immutable afterwards. The job owns ids, stop[] and sp.bias, except a
 * later choice's (sched_job_new_choice), which borrows its first
 * choice's. */
typedef struct sched_request {
	int32_t *ids;      /* (n_ids) prompt tokens, BOS included; malloc'd */
	int64_t n_ids;
	int32_t max_tokens;
	sampler_params_t sp;
	char *stop[SCHED_MAX_STOP]; /* malloc'd */
	int n_stop;
	bool stream;       /* keep events for sched_job_next (else only the
			      final result) */
	struct grammar *grammar; /* the output's grammar (model/grammar.h:
				    grammar, json_schema, response_format),
				    or NULL; the job owns it */
	char name[48];     /* unique; names the job's logits file */
	/* n > 1 (several choices of one request, each its own job): this
	 * job's index among them, reported in its events */
	int choice;
	/* the request's first choice, whose buffers this one borrows and
	 * whose prompt KV it copies rather than computes (sched_batch.c);
	 * a reference; NULL for a first choice */
	struct sched_job *first;
} sched_request_t;

typedef enum sched_event_kind {
	SCHED_EVENT_START, /* the generation began */
	SCHED_EVENT_TEXT,  /* text bytes, final (engine.h on_text) */
	SCHED_EVENT_END,   /* the generation ended; the last event */
	SCHED_EVENT_ERROR, /* the job failed; the last event */
	SCHED_EVENT_COUNT
} sched_event_kind_t;

typedef struct sched_event {
	sched_event_kind_t kind;
	int choice;           /* the job's sched_request_t.choice */
	const char *text;     /* TEXT: n bytes (in the caller's buffer) */
	size_t n;
	/* TEXT, END, with the request's sp.logprobs: the tokens reported
	 * since the previous event (those whose text this one holds, or
	 * held back and later cut), in the caller's buffer after the text */
	const engine_token_t *tokens;
	size_t n_tokens;
	engine_stop_t stop;   /* END: why it ended */
	int64_t n_prompt, n_gen; /* END: tokens */
	int status;           /* ERROR: 500 failed, 503 cancelled or shutting
				 down, 400 a request the engine refused */
	const char *msg;      /* ERROR: why (valid while the job lives) */
} sched_event_t;

/* A finished job, all at once (sched_job_result). */
typedef struct sched_result {
	int status;           /* 0: generated; else as sched_event_t */
	const char *msg;      /* the error's message */
	const char *text;     /* every generated byte (n of them) */
	size_t n;
	const engine_token_t *tokens; /* with sp.logprobs: every kept token */
	size_t n_tokens;
	engine_stop_t stop;
	int64_t n_prompt, n_gen;
} sched_result_t;

/* Where the scheduler is in its life (sched_phase). */
typedef enum sched_phase {
	SCHED_PHASE_RUN,   /* takes jobs */
	SCHED_PHASE_DRAIN, /* refuses new jobs, lets running ones finish */
	SCHED_PHASE_STOP,  /* cuts the running ones; the thread ends */
	SCHED_PHASE_COUNT
} sched_phase_t;

typedef struct sched sched_t;         /* opaque */
typedef struct sched_job sched_job_t; /* opaque, refcounted */

/* ---- the scheduler (sched.c) ---- */

/* Copies cfg (its pointers must outlive the scheduler); NULL + err_get()
 * when out of memory. Records into metrics. */
sched_t *sched_new(const sched_config_t *cfg, metrics_t *metrics);
/* Stops it if it runs, then frees it. */
void sched_free(sched_t *s);
/* Starts the generation thread and waits until it has its forward pass
 * and gang; -1 + err_get() when it could not. */
int sched_start(sched_t *s);
/* Begins the drain: from now on sched_enqueue answers 503, and the queued
 * jobs end with a 503 error at the generation thread's next token step
 * (or at once when it is idle); the running generations go on. Idempotent. */
void sched_drain(sched_t *s);
/* Drains (if not yet), then cuts the running generations at their next
 * token (each ends with a 503 ERROR event), answers the queued jobs with
 * 503 and joins the generation thread. Returns how many running
 * generations it cut (0 on a second call). */
int sched_stop(sched_t *s);

/* ---- the queue (sched_queue.c) ---- */

/* 0 queued (the queue takes a reference); 429 full; 503 stopping or not
 * started. */
int sched_enqueue(sched_t *s, sched_job_t *j);
/* The n jobs of one request (its choices, first choice first), all or
 * none: 0 queued one after the other, or 429 when the n do not fit in the
 * queue's free places (unless the queue is empty and nothing runs, as for
 * one job), 503 as sched_enqueue. */
int sched_enqueue_n(sched_t *s, sched_job_t *const *jobs, int n);
/* True once sched_drain or sched_stop has begun (no new jobs). */
bool sched_stopping(const sched_t *s);
/* The phase: RUN, DRAIN after sched_drain, STOP after sched_stop. */
sched_phase_t sched_phase(const sched_t *s);
/* The jobs waiting, and whether a generation runs. */
void sched_queue_state(sched_t *s, int *depth, bool *busy);

/* ---- jobs (sched_job.c) ---- */

/* An empty job with one reference; its request is filled through
 * sched_job_request. Aborts on out of memory. */
sched_job_t *sched_job_new(void);
/* The job's request, to fill in before sched_enqueue. */
sched_request_t *sched_job_request(sched_job_t *j);
/* Choice number `choice` (>= 1) of first's request (filled in, not yet
 * queued): the same request, its buffers borrowed (it holds a reference
 * to first), the seed plus choice (a request with a seed gets the same n
 * choices every time), named first's name + "." + choice. With parallel
 * > 1 it copies first's prompt KV once first has computed it, instead of
 * computing it again. Aborts on out of memory. */
sched_job_t *sched_job_new_choice(sched_job_t *first, int choice);
/* Drops one reference; the last frees the job. */
void sched_job_release(sched_job_t *j);
/* Asks the scheduler to end the job at its next token (the client went
 * away). A job still queued stays queued, and counts toward max_queue
 * (sched_enqueue's 429), until the generation thread reaches it at the
 * queue's head and answers it with a 503 error without running it: after
 * the running job (parallel 1), or at the next admission (batching),
 * where a cancelled job behind a head that waits for a free slot or KV
 * room waits too. */
void sched_job_cancel(sched_job_t *j);
/* The next event of a streamed job, waiting until *deadline
 * (CLOCK_REALTIME; NULL: no wait). 1: *ev filled, its text and tokens
 * copied into *text (which it replaces); 0: nothing yet; -1: the job has ended and
 * every event was taken. */
int sched_job_next(sched_job_t *j, sched_event_t *ev, sbuf_t *text,
		   const struct timespec *deadline);
/* Waits up to ms milliseconds for the job to end; true once it has. */
bool sched_job_wait(sched_job_t *j, int ms);
/* True when the job has ended with an error (sched_job_result's status). */
bool sched_job_failed(sched_job_t *j);
/* A finished job's result (after sched_job_wait returned true); valid
 * while the caller holds its reference. */
void sched_job_result(sched_job_t *j, sched_result_t *r);

#endif
