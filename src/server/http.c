/* http: the libmicrohttpd glue (http.h): the daemon, request bodies,
 * plain replies, and the content reader that streams a job's events as
 * server-sent events. The connection table is http_conn.c's. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "base/base.h"
#include "server/api.h"
#include "server/buf.h"
#include "server/http.h"
#include "server/http_impl.h"
#include "server/metrics.h"
#include "server/sched.h"

#define KEEPALIVE_MS 1000       /* SSE comment while a stream waits */
#define DISCARD_MAX (16u << 20) /* body bytes read past the cap, then close */

/* Asks the client to close its connection after r when `close` is set,
 * and while the server drains, so that a balancer's next request opens
 * one elsewhere. */
static void add_close(http_t *h, struct MHD_Response *r, bool close)
{
	if (close || sched_stopping(h->sched))
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
}

/* ---- CORS (http.h) ---- */

#define CORS_MAX_AGE "7200" /* seconds a preflight holds (Chromium's cap) */

/* The request's Origin when cfg.cors allows it, else NULL. */
static const char *cors_origin(const http_t *h, struct MHD_Connection *c)
{
	const char *o = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
	for (int i = 0; o && i < h->cfg.n_cors; i++)
		if (!strcmp(h->cfg.cors[i], "*") || !strcasecmp(h->cfg.cors[i], o))
			return o;
	return NULL;
}

/* The CORS headers of r; preflight: the Allow of an OPTIONS's 204
 * (NULL: not one). */
static void add_cors(const http_t *h, struct MHD_Connection *c,
		     struct MHD_Response *r, const char *preflight)
{
	if (!h->cfg.n_cors)
		return;
	MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Origin");
	const char *o = cors_origin(h, c);
	if (!o)
		return;
	MHD_add_response_header(r, "Access-Control-Allow-Origin", o);
	if (!preflight)
		return;
	MHD_add_response_header(r, "Access-Control-Allow-Methods", preflight);
	MHD_add_response_header(r, "Access-Control-Allow-Headers",
				"Authorization, Content-Type");
	MHD_add_response_header(r, "Access-Control-Max-Age", CORS_MAX_AGE);
}

/* ---- replies ---- */

/* Queues body (takes it) with its status and headers (ctype NULL: no
 * Content-Type; a 204 with allow answers an OPTIONS); `close` ends the
 * connection after it. */
static enum MHD_Result send_reply(http_t *h, struct MHD_Connection *c, int status,
				  const char *ctype, const char *allow, char *body,
				  bool close)
{
	size_t n = strlen(body);
	struct MHD_Response *r =
		MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	if (ctype)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	add_cors(h, c, r, status == 204 ? allow : NULL);
	add_close(h, r, close);
	enum MHD_Result ret = http_queue(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

/* A JSON error; `close` ends the connection after it (an error answered
 * before the request's body was read). */
static enum MHD_Result send_error(http_t *h, struct MHD_Connection *c,
				  server_endpoint_t ep, int status,
				  const char *msg, bool close)
{
	metrics_count(h->metrics, ep, status);
	return send_reply(h, c, status, "application/json", NULL,
			  api_error_body(status, NULL, NULL, "%s", msg), close);
}

/* ---- streaming ---- */

/* One streamed response: the job, and the SSE bytes formatted but not yet
 * handed to libmicrohttpd (out[off..len)). */
typedef struct http_stream {
	server_job_t *job;
	sbuf_t out;
	size_t off;
	sbuf_t text; /* the current event's text */
	bool failed; /* a choice's ERROR event was formatted: the last one */
} http_stream_t;

#define CHOICE_POLL_MS 5 /* n > 1: how long one choice is waited on */

/* Cancels every choice of j (its client went away, or one failed). */
static void job_cancel_all(server_job_t *j)
{
	for (int i = 0; i < api_job_n_choices(j); i++)
		sched_job_cancel(api_job_choice(j, i));
}

/* Formats one event of st's job into st->out; an ERROR event is the
 * stream's last: the other choices are cancelled, nothing follows. */
static void stream_format(http_stream_t *st, const sched_event_t *ev)
{
	api_format_event(st->job, ev, &st->out);
	if (ev->kind == SCHED_EVENT_ERROR) {
		st->failed = true;
		job_cancel_all(st->job);
	}
}

/* Formats the events of the job's choices that are there now into
 * st->out, up to max bytes, each choice's in order. -1 once every choice
 * has ended and every event was taken, or one failed; else 0. */
static int stream_take(http_stream_t *st, size_t max)
{
	server_job_t *j = st->job;
	int n = api_job_n_choices(j), ended = 0;
	for (int i = 0; i < n && !st->failed; i++) {
		sched_event_t ev;
		int rc = 0;
		while (!st->failed && st->out.len < max &&
		       (rc = sched_job_next(api_job_choice(j, i), &ev, &st->text, NULL)) > 0)
			stream_format(st, &ev);
		ended += rc < 0;
	}
	return st->failed || ended == n ? -1 : 0;
}

/* True once the realtime clock has reached *t. */
static bool past(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

/* Waits until *until for the next event of the first choice that has not
 * ended, and formats it. */
static void stream_wait(http_stream_t *st, const struct timespec *until)
{
	server_job_t *j = st->job;
	for (int i = 0; i < api_job_n_choices(j); i++) {
		sched_event_t ev;
		int rc = sched_job_next(api_job_choice(j, i), &ev, &st->text, until);
		if (rc > 0)
			stream_format(st, &ev);
		if (rc >= 0)
			return;
	}
}

/* Formats the job's next events into st->out: waits until *deadline for
 * the first that makes bytes, then adds those already there, up to max
 * bytes. -1 once every choice has ended and every event was taken (or one
 * failed). The wait is on the first choice that has not ended; with
 * n > 1 for CHOICE_POLL_MS at a time, since another choice may have
 * events first (their sequences step together, so it is rarely long). */
static int stream_pull(http_stream_t *st, const struct timespec *deadline,
		       size_t max)
{
	st->off = st->out.len = 0;
	for (;;) {
		int rc = stream_take(st, max);
		if (rc < 0 || st->out.len || past(deadline))
			return rc;
		struct timespec until = *deadline;
		if (api_job_n_choices(st->job) > 1) {
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += CHOICE_POLL_MS * 1000000L;
			until.tv_sec += until.tv_nsec / 1000000000L;
			until.tv_nsec %= 1000000000L;
		}
		stream_wait(st, &until);
		if (st->failed)
			return -1;
	}
}

/* The SSE body: blocks (this connection's own thread) until bytes are
 * ready; a comment line every KEEPALIVE_MS keeps the connection active
 * while the job waits, and lets a closed connection be noticed. */
static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	http_stream_t *st = cls;
	if (st->off == st->out.len) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts); /* the condvar's clock */
		ts.tv_nsec += KEEPALIVE_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		int rc = stream_pull(st, &ts, max);
		if (!st->out.len && rc < 0)
			return MHD_CONTENT_READER_END_OF_STREAM;
	}
	if (st->off < st->out.len) {
		size_t n = st->out.len - st->off;
		if (n > max)
			n = max;
		memcpy(buf, st->out.p + st->off, n);
		st->off += n;
		return (ssize_t)n;
	}
	static const char ka[] = ": keep-alive\n\n";
	size_t n = sizeof ka - 1 < max ? sizeof ka - 1 : max;
	memcpy(buf, ka, n);
	return (ssize_t)n;
}

/* The response is gone (sent, or the client closed): stop generating. */
static void sse_free(void *cls)
{
	http_stream_t *st = cls;
	job_cancel_all(st->job);
	api_job_free(st->job);
	sbuf_free(&st->out);
	sbuf_free(&st->text);
	free(st);
}

/* ---- jobs ---- */

/* True once the client has closed its end of the connection (or it broke). */
static bool peer_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Waits for every choice of a non-streaming job to finish. Its client
 * sees nothing until then, so the only sign that it went away is its
 * socket: checked every 100 ms, a hang-up cancels the job (counted as
 * cancelled), which then ends at its next token. A choice that failed
 * cancels the others: the reply is its error. */
static void wait_for_job(struct MHD_Connection *c, server_job_t *j)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	int fd = ci ? ci->connect_fd : -1;
	for (int i = 0; i < api_job_n_choices(j); i++) {
		sched_job_t *w = api_job_choice(j, i);
		while (!sched_job_wait(w, 100))
			if (fd >= 0 && peer_gone(fd))
				job_cancel_all(j);
		if (sched_job_failed(w))
			job_cancel_all(j);
	}
}

/* Streams a queued job as server-sent events. */
static enum MHD_Result stream_job(http_t *h, struct MHD_Connection *c,
				  server_job_t *j, server_endpoint_t ep)
{
	http_stream_t *st = calloc(1, sizeof *st);
	struct MHD_Response *r = st ? MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, 4096, sse_read, st, sse_free) : NULL;
	if (!r) {
		job_cancel_all(j);
		api_job_free(j);
		free(st);
		return MHD_NO;
	}
	st->job = j;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	add_cors(h, c, r, NULL);
	add_close(h, r, false);
	metrics_count(h->metrics, ep, 200);
	enum MHD_Result ret = http_queue(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* Enqueues a validated job, then streams it or waits for its reply. It
 * is in flight (metrics_in_flight) from before the enqueue until its
 * request completes (http_completed), so that a drain never misses it. */
static enum MHD_Result answer_job(http_t *h, struct MHD_Connection *c,
				  bool *live, server_job_t *j, server_endpoint_t ep)
{
	metrics_in_flight_add(h->metrics, 1);
	*live = true;
	sched_job_t *works[API_MAX_N];
	int n = api_job_n_choices(j);
	for (int i = 0; i < n; i++)
		works[i] = api_job_choice(j, i);
	int q = sched_enqueue_n(h->sched, works, n);
	if (q) {
		metrics_in_flight_add(h->metrics, -1);
		*live = false;
		api_job_free(j);
		return send_error(h, c, ep, q,
				  q == 429 ? "the request queue is full; retry later"
					   : "the server is shutting down", false);
	}
	if (api_job_stream(j))
		return stream_job(h, c, j, ep);
	wait_for_job(c, j);
	int status;
	char *body = api_format_reply(j, &status);
	api_job_free(j);
	/* the wait was not idleness: restart the connection's timeout clock
	 * (setting a timeout after 0 resets it) */
	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
				  (unsigned)h->cfg.timeout_s);
	metrics_count(h->metrics, ep, status);
	return send_reply(h, c, status, "application/json", NULL, body, false);
}

/* ---- connections ---- */

typedef struct conn_state {
	sbuf_t body;
	size_t seen;   /* body bytes received */
	bool too_big;
	bool answered; /* a response was queued early (413, 400, 501) */
	bool live;     /* counted in metrics_in_flight */
} conn_state_t;

/* The 413 reply. */
static enum MHD_Result send_too_big(http_t *h, struct MHD_Connection *c,
				    const char *url)
{
	char msg[96];
	snprintf(msg, sizeof msg, "the request body is over %u bytes",
		 SERVER_MAX_BODY);
	return send_error(h, c, api_route(url), 413, msg, false);
}

/* The Transfer-Encoding header fields of a request, in order, as one
 * list (RFC 9112 section 6.1). */
typedef struct te_list {
	int n;           /* header fields */
	int n_codings;   /* codings in all */
	int n_chunked;   /* of them "chunked" */
	bool last_chunked; /* the last coding is "chunked" */
	bool exact;      /* one field whose value is "chunked" */
} te_list_t;

static enum MHD_Result te_field(void *cls, enum MHD_ValueKind kind,
				const char *key, const char *value)
{
	(void)kind;
	te_list_t *t = cls;
	if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING))
		return MHD_YES;
	t->exact = ++t->n == 1 && !strcasecmp(value, "chunked");
	for (const char *p = value; *p;) {
		p += strspn(p, " \t,");
		size_t n = strcspn(p, " \t,;");
		if (n) {
			bool chunked = n == 7 && !strncasecmp(p, "chunked", 7);
			t->n_codings++;
			t->n_chunked += chunked;
			t->last_chunked = chunked;
		}
		p += n;
		p += strcspn(p, ","); /* a coding's parameters */
	}
	return MHD_YES;
}

/* The status a request's transfer codings get: 0 none, or "chunked"
 * alone (libmicrohttpd decodes it); 400 when chunked is not the last
 * coding or comes twice (RFC 9112 6.3: the body's length cannot be
 * known); 501 for any other coding (RFC 9112 6.1: none is implemented).
 * libmicrohttpd would read such a body until the client closes. */
static int te_status(struct MHD_Connection *c)
{
	te_list_t t = {0};
	MHD_get_connection_values(c, MHD_HEADER_KIND, te_field, &t);
	if (!t.n || t.exact)
		return 0;
	if (!t.last_chunked || t.n_chunked > 1)
		return 400;
	return 501;
}

/* A request's first call: its state; at once a 429 on a connection past
 * the per-address limit, a 400 or 501 for a transfer coding it cannot
 * read, a 413 when its Content-Length is past DISCARD_MAX. */
static enum MHD_Result conn_begin(http_t *h, struct MHD_Connection *c,
				  const char *url, void **con_cls)
{
	http_conn_handled(c);
	conn_state_t *cs = calloc(1, sizeof *cs);
	if (!cs)
		return MHD_NO;
	*con_cls = cs;
	if (http_conn_over_ip(c)) {
		char msg[160];
		snprintf(msg, sizeof msg, "too many connections from this address "
			 "(--max-conns-per-ip %d); retry later", h->cfg.max_conns_per_ip);
		cs->answered = true;
		return send_error(h, c, api_route(url), 429, msg, true);
	}
	int te = te_status(c);
	if (te) { /* answered before the body, which cannot be delimited */
		cs->answered = true;
		return send_error(h, c, api_route(url), te,
				  te == 400 ? "the request's Transfer-Encoding does "
					      "not end with chunked, or repeats it"
					    : "the request's Transfer-Encoding names a "
					      "coding the server does not implement "
					      "(only chunked)", true);
	}
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && strtoull(cl, NULL, 10) > DISCARD_MAX) {
		/* answered before the body is read: the connection closes
		 * after the reply. Smaller bodies over the cap are read and
		 * dropped first, so that a client that sends before it reads
		 * still gets the 413. */
		cs->answered = true;
		return send_too_big(h, c, url);
	}
	return MHD_YES;
}

/* A piece of the body: kept up to SERVER_MAX_BODY, past it counted and
 * dropped; past DISCARD_MAX the connection is closed. */
static enum MHD_Result conn_upload(conn_state_t *cs, const char *upload, size_t n)
{
	cs->seen += n;
	if (cs->answered)
		return cs->seen > DISCARD_MAX ? MHD_NO : MHD_YES;
	if (cs->seen > SERVER_MAX_BODY) {
		cs->too_big = true;
		sbuf_free(&cs->body);
		return cs->seen > DISCARD_MAX ? MHD_NO : MHD_YES;
	}
	sbuf_add(&cs->body, upload, n);
	return MHD_YES;
}

static enum MHD_Result http_handler(void *cls, struct MHD_Connection *c,
				    const char *url, const char *method,
				    const char *version, const char *upload,
				    size_t *upload_size, void **con_cls)
{
	(void)version;
	http_t *h = cls;
	conn_state_t *cs = *con_cls;
	if (!cs)
		return conn_begin(h, c, url, con_cls);
	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		return conn_upload(cs, upload, n);
	}
	if (cs->answered)
		return MHD_YES;
	if (!http_conn_busy(c))
		return MHD_NO; /* cut while its body arrived */
	if (cs->too_big)
		return send_too_big(h, c, url);
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						       MHD_HTTP_HEADER_AUTHORIZATION);
	server_reply_t rep;
	api_handle(h->api, method, url, auth, cs->body.p, cs->body.len, &rep);
	if (!rep.job) {
		metrics_count(h->metrics, rep.endpoint, rep.status);
		return send_reply(h, c, rep.status, rep.content_type, rep.allow,
				  rep.body, false);
	}
	return answer_job(h, c, &cs->live, rep.job, rep.endpoint);
}

/* A request is over (its response sent, or the connection gone): the
 * connection waits for its next one. */
static void http_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			   enum MHD_RequestTerminationCode toe)
{
	(void)toe;
	http_t *h = cls;
	conn_state_t *cs = *con_cls;
	http_conn_waiting(c);
	if (cs) {
		if (cs->live)
			metrics_in_flight_add(h->metrics, -1);
		sbuf_free(&cs->body);
		free(cs);
		*con_cls = NULL;
	}
}

static void http_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	(void)fmt;
	(void)ap; /* MHD's own messages (client errors) are not ours to print */
}

/* ---- the daemon ---- */

bool http_host_ok(const char *host)
{
	unsigned char addr[sizeof(struct in6_addr)];
	return inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
}

http_t *http_new(const http_config_t *cfg, api_t *api, sched_t *sched,
		 metrics_t *metrics)
{
	http_t *h = calloc(1, sizeof *h);
	if (!h)
		return err_sys("calloc"), NULL;
	h->cfg = *cfg;
	if (!h->cfg.host)
		h->cfg.host = "127.0.0.1";
	if (h->cfg.max_conns <= 0)
		h->cfg.max_conns = HTTP_MAX_CONNS;
	h->api = api;
	h->sched = sched;
	h->metrics = metrics;
	http_conn_init(h);
	return h;
}

void http_free(http_t *h)
{
	if (!h)
		return;
	http_stop(h);
	http_conn_destroy(h);
	free(h);
}

int http_addr_parse(http_t *h)
{
	const http_config_t *cfg = &h->cfg;
	memset(&h->addr, 0, sizeof h->addr);
	/* poll(2), not select(2): descriptors past FD_SETSIZE stay usable */
	h->flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
		   MHD_USE_POLL | MHD_USE_ERROR_LOG;
	if (inet_pton(AF_INET, cfg->host, &h->addr.v4.sin_addr) == 1) {
		h->addr.v4.sin_family = AF_INET;
		h->addr.v4.sin_port = htons((uint16_t)cfg->port);
	} else if (inet_pton(AF_INET6, cfg->host, &h->addr.v6.sin6_addr) == 1) {
		h->addr.v6.sin6_family = AF_INET6;
		h->addr.v6.sin6_port = htons((uint16_t)cfg->port);
		h->flags |= MHD_USE_IPv6;
	} else {
		return err_set("--host '%s' is not a numeric IPv4 or IPv6 address",
			       cfg->host);
	}
	return 0;
}

/* libmicrohttpd's own connection limit: max_conns, plus room for the
 * connections the table has cut and the library has not closed yet. */
static unsigned mhd_conn_limit(const http_config_t *cfg)
{
	return (unsigned)cfg->max_conns + (unsigned)cfg->max_conns / 4 + 16;
}

int http_listen(http_t *h)
{
	const http_config_t *cfg = &h->cfg;
	if (http_conn_start(h) < 0)
		return -1;
	h->mhd = MHD_start_daemon(
		h->flags, (uint16_t)cfg->port, NULL, NULL, http_handler, h,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&h->addr,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout_s,
		MHD_OPTION_CONNECTION_LIMIT, mhd_conn_limit(cfg),
		MHD_OPTION_NOTIFY_CONNECTION, http_conn_notify, h,
		MHD_OPTION_NOTIFY_COMPLETED, http_completed, h,
		MHD_OPTION_EXTERNAL_LOGGER, http_log, h, MHD_OPTION_END);
	if (!h->mhd) {
		http_conn_stop(h);
		return err_set("cannot listen on %s port %d (in use, or not "
			       "allowed)", cfg->host, cfg->port);
	}
	const union MHD_DaemonInfo *di =
		MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
	h->port = di ? di->port : cfg->port;
	return 0;
}

int http_port(const http_t *h) { return h->port; }

void http_stop(http_t *h)
{
	http_conn_stop(h);
	if (h->mhd) {
		MHD_stop_daemon(h->mhd);
		h->mhd = NULL;
	}
}
