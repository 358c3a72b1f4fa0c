/* loadgen: a streaming completion request (loadgen.h). */
#include "bench/loadgen.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

/* An event's first choice: its text (a completion's "text", a chat
 * delta's "content") into st->text with keep_text, its finish_reason. */
static void stream_choice(loadgen_stream_t *st, json_t *choice)
{
	json_t *text = json_object_get(choice, "text");
	if (!text)
		text = json_object_get(json_object_get(choice, "delta"), "content");
	if (st->keep_text && json_is_string(text))
		sbuf_add(&st->text, json_string_value(text), json_string_length(text));
	json_t *fr = json_object_get(choice, "finish_reason");
	if (json_is_string(fr))
		snprintf(st->finish, sizeof st->finish, "%s", json_string_value(fr));
}

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
	if (json_object_get(j, "error"))
		st->error_seen = true;
	stream_choice(st, json_array_get(json_object_get(j, "choices"), 0));
	json_t *u = j ? json_object_get(j, "usage") : NULL;
	json_t *ct = u ? json_object_get(u, "completion_tokens") : NULL;
	json_t *pt = u ? json_object_get(u, "prompt_tokens") : NULL;
	if (json_is_integer(ct))
		st->completion_tokens = json_integer_value(ct);
	if (json_is_integer(pt))
		st->prompt_tokens = json_integer_value(pt);
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

/* A response header line: want_header's value into header_value. */
static size_t on_header(char *p, size_t size, size_t n, void *user)
{
	loadgen_stream_t *st = user;
	size_t total = size * n, k = st->want_header ? strlen(st->want_header) : 0;
	if (k && total > k && p[k] == ':' && !strncasecmp(p, st->want_header, k)) {
		size_t a = k + 1, b = total;
		while (a < b && (p[a] == ' ' || p[a] == '\t'))
			a++;
		while (b > a && (p[b - 1] == '\r' || p[b - 1] == '\n' || p[b - 1] == ' '))
			b--;
		size_t len = b - a < sizeof st->header_value - 1 ? b - a
								 : sizeof st->header_value - 1;
		memcpy(st->header_value, p + a, len);
		st->header_value[len] = '\0';
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
	memset(st, 0, offsetof(loadgen_stream_t, want_header));
	st->completion_tokens = st->prompt_tokens = -1;
	st->text.len = 0;
	if (st->text.p)
		st->text.p[0] = '\0';
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, st);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, st);
	curl_easy_setopt(h, CURLOPT_PRIVATE, st);
}

bool loadgen_get_ok(const char *url)
{
	CURL *h = curl_easy_init();
	if (!h)
		return false;
	FILE *devnull = fopen("/dev/null", "w");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 5L);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, devnull);
	CURLcode rc = curl_easy_perform(h);
	long code = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	if (devnull)
		fclose(devnull);
	return rc == CURLE_OK && code == 200;
}

bool loadgen_request_ok(const char *url, struct curl_slist *hdr,
			const char *body, long timeout_s)
{
	CURL *h = curl_easy_init();
	loadgen_stream_t *st = calloc(1, sizeof *st);
	bool ok = false;
	if (h && st) {
		loadgen_setup(h, url, hdr, body, timeout_s, st);
		long code = 0;
		ok = curl_easy_perform(h) == CURLE_OK &&
		     curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK &&
		     code == 200 && st->done_seen;
	}
	free(st);
	if (h)
		curl_easy_cleanup(h);
	return ok;
}

/* ---- open-loop arrivals ---- */

/* The transfers that ended: their results into their arrivals; the
 * latest completion time into *last_done. Returns how many ended. */
static int open_loop_reap(CURLM *m, uint64_t *last_done)
{
	int ended = 0, left;
	CURLMsg *msg;
	while ((msg = curl_multi_info_read(m, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		loadgen_arrival_t *q = NULL;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&q);
		curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &q->code);
		q->done = true;
		q->ok = msg->data.result == CURLE_OK && q->code == 200 &&
			q->st.done_seen && q->st.t_first;
		if (q->ok)
			q->ttft_ms = (double)(q->st.t_first - q->st.t0) / 1e6;
		curl_multi_remove_handle(m, q->h);
		curl_easy_cleanup(q->h);
		q->h = NULL;
		ended++;
		uint64_t t = time_now_ns();
		if (t > *last_done)
			*last_done = t;
	}
	return ended;
}

double loadgen_open_loop(loadgen_arrival_t *r, int n, uint64_t t0, uint64_t t_end,
			 uint64_t deadline, const char *url, struct curl_slist *hdr,
			 const char *body, long timeout_s)
{
	CURLM *m = curl_multi_init();
	int next = 0, running = 0;
	uint64_t last_done = t_end;
	while (m && (next < n || running > 0)) {
		uint64_t now = time_now_ns();
		while (next < n && t0 + r[next].t_arr <= now) {
			loadgen_arrival_t *q = &r[next++];
			if (!(q->h = curl_easy_init()))
				continue;
			loadgen_setup(q->h, url, hdr, body, timeout_s, &q->st);
			q->st.t0 = t0 + q->t_arr;
			/* after loadgen_setup, which points PRIVATE at the stream */
			curl_easy_setopt(q->h, CURLOPT_PRIVATE, q);
			curl_multi_add_handle(m, q->h);
			running++;
		}
		int still = 0;
		curl_multi_perform(m, &still);
		running -= open_loop_reap(m, &last_done);
		now = time_now_ns();
		if (next >= n && now > deadline)
			break;
		long wait_ms = 50;
		if (next < n) {
			uint64_t at = t0 + r[next].t_arr;
			wait_ms = at > now ? (long)((at - now) / 1000000ull) : 0;
			if (wait_ms > 50)
				wait_ms = 50;
		}
		if (wait_ms > 0)
			curl_multi_poll(m, NULL, 0, (int)wait_ms, NULL);
	}
	uint64_t now = time_now_ns();
	if (t_end > now) /* every request was done before t_end */
		usleep((useconds_t)((t_end - now) / 1000));
	for (int i = 0; i < n; i++)
		if (r[i].h) { /* not done by the deadline: not served */
			curl_multi_remove_handle(m, r[i].h);
			curl_easy_cleanup(r[i].h);
			r[i].h = NULL;
		}
	if (m)
		curl_multi_cleanup(m);
	return (double)(last_done - t_end) / 1e9;
}
