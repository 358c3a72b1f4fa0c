/* serve_load: a closed-loop load generator for `egang serve` (`egang bench
 * serve`). One thread per client, each sending streaming completions back
 * to back with libcurl (bench/loadgen.h) until the time is up; every
 * request must end in a 200 with a complete stream ("data: [DONE]", no
 * error event, not cut short: finish_reason "length" before max_tokens)
 * or in a 429. A failure is one of three kinds: no response at all (a
 * transport error before a status line), a status other than 200/429
 * (nothing streamed), or a 200 whose stream then broke (a request that had
 * started streaming). With turns, each client holds conversations: every
 * turn's prompt is the previous turn's prompt, its generated text and the
 * prompt again, so a server's prefix cache can serve the earlier turns;
 * a session header names the conversation (a balancer's affinity key).
 * With a ramp the clients start one after another, so that their
 * requests do not arrive as one burst (a burst of N prompts makes the
 * last one wait for all N prefills, whatever the scheduler). Time to
 * first token is from the request's start; percentiles are
 * nearest rank (base/stats.h). The server's RSS is read after the first
 * 100 requests and at the end, from /metrics'
 * process_resident_memory_bytes, or /proc/PID/status with pid; its CPU
 * time over the run from /metrics' process_cpu_seconds_total. */
#ifndef EGANG_BENCH_SERVE_LOAD_H
#define EGANG_BENCH_SERVE_LOAD_H

#include <stdbool.h>
#include <stdint.h>

typedef struct serve_load_config {
	const char *url;     /* the server, e.g. http://127.0.0.1:8080 */
	const char *prompt, *api_key; /* api_key: NULL for none */
	int clients;
	double seconds;
	int max_tokens;
	bool chat;           /* /v1/chat/completions instead */
	long pid;            /* 0: RSS from /metrics */
	long req_timeout;    /* seconds, one request */
	long requests;       /* stop after this many requests (0: the time) */
	bool vary;           /* each request's prompt starts with its own
				"RUN.CLIENT.N " (no prefix-cache hits, also
				across runs against one server) */
	double ramp;         /* seconds: client i sends its first request at
				i * ramp / clients (0: all at once) */
	int turns;           /* > 0: conversations of this many turns */
	const char *session_header; /* with turns: "NAME: conversation id" on
				       each request (NULL: none) */
	const char *log_path;   /* one CSV line per request (NULL: none) */
	const char *log_header; /* a response header logged with each request
				   (e.g. a balancer's replica name; NULL: none) */
} serve_load_config_t;

typedef struct serve_load_result {
	int started;         /* client threads that ran */
	double wall_s;
	uint64_t total, ok, busy, failed, tokens;
	/* failed = failed_connect + failed_status + failed_stream */
	uint64_t failed_connect, failed_status, failed_stream;
	double ttft_p50_s, ttft_p99_s;
	long rss_100, rss_end; /* bytes; 0 if not read */
	double queue_wait_s;   /* the server's mean queue wait (its /metrics,
				  over its lifetime); -1 if not reported */
	double server_cpu_s;   /* the server's CPU seconds during the run (its
				  /metrics process_cpu_seconds_total, read
				  before and after); -1 if not reported */
	char why[200];       /* the first failure, "" if none */
} serve_load_result_t;

/* Runs the load; -1 + err_get() with *exit_code (EXIT_INPUT: the prompt is
 * not valid UTF-8, the log cannot be written; EXIT_FAIL: libcurl or
 * memory). Failed requests are in the result, not an error. The log's
 * columns: client, request (the client's, from 0), session (the
 * conversation's id, "" without turns), turn (1.., 0 without turns),
 * start_s and end_s (Unix time), status (0: none came), outcome (ok, busy,
 * failed_connect, failed_status, failed_stream), ttft_s (-1: no token),
 * prompt_tokens and completion_tokens (-1: no usage), header (log_header's
 * value, "" if absent). */
int serve_load_run(const serve_load_config_t *c, serve_load_result_t *r,
		   int *exit_code);

#endif
