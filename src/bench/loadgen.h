/* loadgen: one streaming completion request against `egang serve`, shared
 * by the load generators (`bench serve`: closed-loop clients, `bench
 * switching`: open-loop arrivals on a curl multi handle, loadgen_open_loop).
 * The request is an easy handle set up by loadgen_setup(); its body
 * callback parses the server-sent events as they arrive, so the time of the
 * first token and the usage's completion_tokens are known when the
 * transfer ends. */
#ifndef EGANG_LOADGEN_H
#define EGANG_LOADGEN_H

#include <stdbool.h>
#include <stdint.h>

#include <curl/curl.h>

#include "server/buf.h"

/* One request's stream. The fields up to keep_text are cleared by
 * loadgen_setup; the caller's settings after it are kept (they hold for
 * every request on the stream). */
typedef struct loadgen_stream {
	char line[8192];
	size_t len;
	uint64_t t0;      /* set by the caller: when the request counts from */
	uint64_t t_first; /* time_now_ns() of the first data event, 0 if none */
	bool done_seen;   /* "data: [DONE]" arrived */
	bool error_seen;  /* an event carried an "error" object (the server
			     ended the stream with an error) */
	int64_t completion_tokens; /* from the last usage object, -1 if none */
	int64_t prompt_tokens;     /* from the last usage object, -1 if none */
	char finish[16];  /* the last non-null finish_reason, "" if none */
	char header_value[128]; /* want_header's value, "" if absent */
	/* kept by loadgen_setup: */
	const char *want_header; /* a response header to keep (NULL: none) */
	bool keep_text;   /* append the generated text to text */
	sbuf_t text;      /* the generated text (keep_text); emptied by
			     loadgen_setup, freed by the caller (sbuf_free) */
} loadgen_stream_t;

/* Headers for every request: JSON content type and, with key, the bearer
 * token. Free with curl_slist_free_all. */
struct curl_slist *loadgen_headers(const char *api_key);
/* A streaming request body (completions, or chat with chat = true), with
 * temperature; NULL when prompt is not valid UTF-8. Free with free(). */
char *loadgen_body(const char *prompt, int max_tokens, bool chat,
		   double temperature);
/* Resets h and sets it up to POST body to url with hdr, parsing the event
 * stream into st (cleared here); timeout_s bounds the whole transfer. */
void loadgen_setup(CURL *h, const char *url, struct curl_slist *hdr,
		   const char *body, long timeout_s, loadgen_stream_t *st);

/* GET url; true on a 200 within 5 s (the body is dropped). */
bool loadgen_get_ok(const char *url);

/* One blocking streaming request (a warm-up); true on a complete 200
 * stream ("data: [DONE]" seen) within timeout_s. */
bool loadgen_request_ok(const char *url, struct curl_slist *hdr,
			const char *body, long timeout_s);

/* ---- open-loop arrivals ----
 * Every request is sent at its scheduled time whatever the ones before it
 * are doing, all on one curl multi handle driven by one thread, and its
 * TTFT counts from the scheduled arrival: a slow client cannot hide
 * queueing (no coordinated omission). */
typedef struct loadgen_arrival {
	uint64_t t_arr;   /* scheduled arrival, ns after the run's t0 */
	int tag;          /* the caller's (bench switching: the phase) */
	CURL *h;          /* the transfer while in flight, else NULL */
	loadgen_stream_t st;
	long code;        /* HTTP status, 0 if none came */
	bool ok;          /* a 200 stream with a first token and [DONE] */
	bool done;        /* the transfer ended (ok or not) */
	double ttft_ms;   /* first token - scheduled arrival, when ok */
} loadgen_arrival_t;

/* Sends r[0..n) (sorted by t_arr, the rest zeroed) at t0 + t_arr to url,
 * each transfer bounded by timeout_s, until every one has ended or the
 * deadline (monotonic ns) has passed; those still in flight then are
 * dropped (done and ok stay false). Returns no earlier than t_end, with
 * the drain: seconds from t_end to the last completion (0 when everything
 * ended before t_end). */
double loadgen_open_loop(loadgen_arrival_t *r, int n, uint64_t t0, uint64_t t_end,
			 uint64_t deadline, const char *url, struct curl_slist *hdr,
			 const char *body, long timeout_s);

#endif
