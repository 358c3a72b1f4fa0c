/* loadgen: one streaming completion request against `egang serve`, shared
 * by the load generators (`bench serve`: closed-loop clients, `bench
 * switching`: open-loop arrivals on a curl multi handle). The request is an
 * easy handle set up by loadgen_setup(); its body callback parses the
 * server-sent events as they arrive, so the time of the first token and the
 * usage's completion_tokens are known when the transfer ends. */
#ifndef EGANG_LOADGEN_H
#define EGANG_LOADGEN_H

#include <stdbool.h>
#include <stdint.h>

#include <curl/curl.h>

typedef struct loadgen_stream {
	char line[8192];
	size_t len;
	uint64_t t0;      /* set by the caller: when the request counts from */
	uint64_t t_first; /* time_now_ns() of the first data event, 0 if none */
	bool done_seen;   /* "data: [DONE]" arrived */
	int64_t completion_tokens; /* from the last usage object, -1 if none */
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

#endif
