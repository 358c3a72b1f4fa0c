/* loadgen: a streaming completion request (loadgen.h). */
#include "bench/loadgen.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

static void stream_line(loadgen_stream_t *st)
{
	st->line[st->len] = '\0';
	if (strncmp(st->line, "data: ", 6))
		return;
	const char *d = st->line + 6;
	if (!strcmp(d, "[DONE]")) {
		st->done_seen = true;
		return;
	}
	if (!st->t_first)
		st->t_first = time_now_ns();
	json_t *j = json_loads(d, 0, NULL);
	json_t *u = j ? json_object_get(j, "usage") : NULL;
	json_t *ct = u ? json_object_get(u, "completion_tokens") : NULL;
	if (json_is_integer(ct))
		st->completion_tokens = json_integer_value(ct);
	json_decref(j);
}

static size_t on_body(char *p, size_t size, size_t n, void *user)
{
	loadgen_stream_t *st = user;
	size_t total = size * n;
	for (size_t i = 0; i < total; i++) {
		if (p[i] == '\n') {
			stream_line(st);
			st->len = 0;
		} else if (st->len + 1 < sizeof st->line) {
			st->line[st->len++] = p[i];
		}
	}
	return total;
}

struct curl_slist *loadgen_headers(const char *api_key)
{
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	if (api_key) {
		char auth[512];
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", api_key);
		hdr = curl_slist_append(hdr, auth);
	}
	return hdr;
}

char *loadgen_body(const char *prompt, int max_tokens, bool chat,
		   double temperature)
{
	json_t *req = chat
		? json_pack("{s:[{s:s,s:s}], s:i, s:b, s:f}", "messages", "role",
			    "user", "content", prompt, "max_tokens", max_tokens,
			    "stream", 1, "temperature", temperature)
		: json_pack("{s:s, s:i, s:b, s:f}", "prompt", prompt,
			    "max_tokens", max_tokens, "stream", 1,
			    "temperature", temperature);
	if (!req)
		return NULL;
	char *body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	return body;
}

void loadgen_setup(CURL *h, const char *url, struct curl_slist *hdr,
		   const char *body, long timeout_s, loadgen_stream_t *st)
{
	memset(st, 0, sizeof *st);
	st->completion_tokens = -1;
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, st);
	curl_easy_setopt(h, CURLOPT_PRIVATE, st);
}
