/* http: the libmicrohttpd daemon (internal polling thread, one thread per
 * connection). A handler thread reads the body (413 past SERVER_MAX_BODY),
 * asks server_handle_json() for a reply or a job, enqueues the job, then
 * waits for it (plain replies) or streams its server-sent events from a
 * content-reader callback. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/base.h"
#include "server/server_impl.h"

typedef struct conn_state {
	sbuf_t body;
	size_t seen;   /* body bytes received */
	bool too_big;
	bool answered; /* a response was queued early (413) */
} conn_state_t;

static enum MHD_Result send_reply(struct MHD_Connection *c, int status,
				  const char *ctype, const char *allow, char *body)
{
	size_t n = strlen(body);
	struct MHD_Response *r =
		MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_error(server_t *s, struct MHD_Connection *c,
				  server_endpoint_t ep, int status,
				  const char *msg)
{
	server_count(s, ep, status);
	return send_reply(c, status, "application/json", NULL,
			  error_body(status, NULL, NULL, "%s", msg));
}

/* The SSE body: blocks (this connection's own thread) until bytes are
 * ready; a comment line every KEEPALIVE_MS keeps the connection active
 * while the job waits, and lets a closed connection be noticed. */
static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	server_job_t *j = cls;
	pthread_mutex_lock(&j->mu);
	if (j->sse_off == j->sse.len && !j->done) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += KEEPALIVE_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		while (j->sse_off == j->sse.len && !j->done)
			if (pthread_cond_timedwait(&j->cv, &j->mu, &ts) == ETIMEDOUT)
				break;
	}
	if (j->sse_off < j->sse.len) {
		size_t n = j->sse.len - j->sse_off;
		if (n > max)
			n = max;
		memcpy(buf, j->sse.p + j->sse_off, n);
		j->sse_off += n;
		pthread_mutex_unlock(&j->mu);
		return (ssize_t)n;
	}
	bool done = j->done;
	pthread_mutex_unlock(&j->mu);
	if (done)
		return MHD_CONTENT_READER_END_OF_STREAM;
	static const char ka[] = ": keep-alive\n\n";
	size_t n = sizeof ka - 1 < max ? sizeof ka - 1 : max;
	memcpy(buf, ka, n);
	return (ssize_t)n;
}

/* The response is gone (sent, or the client closed): stop generating. */
static void sse_free(void *cls)
{
	server_job_t *j = cls;
	atomic_store_explicit(&j->cancel, true, memory_order_relaxed);
	job_release(j);
}

/* True once the client has closed its end of the connection (or it broke). */
static bool peer_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Waits for a non-streaming job to finish. Its client sees nothing until
 * then, so the only sign that it went away is its socket: checked every
 * 100 ms, a hang-up cancels the job (counted as cancelled), which then
 * ends at its next token. */
static void wait_for_job(struct MHD_Connection *c, server_job_t *j)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	int fd = ci ? ci->connect_fd : -1;
	pthread_mutex_lock(&j->mu);
	while (!j->done) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts); /* the condvar's clock */
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&j->cv, &j->mu, &ts);
		if (!j->done && fd >= 0 && peer_gone(fd))
			atomic_store_explicit(&j->cancel, true, memory_order_relaxed);
	}
	pthread_mutex_unlock(&j->mu);
}

/* Enqueues a validated job, then streams it or waits for its reply. */
static enum MHD_Result answer_job(server_t *s, struct MHD_Connection *c,
				  server_job_t *j, server_endpoint_t ep)
{
	int q = job_enqueue(s, j);
	if (q) {
		server_job_free(j);
		return send_error(s, c, ep, q,
				  q == 429 ? "the request queue is full; retry later"
					   : "the server is shutting down");
	}
	if (j->stream) {
		struct MHD_Response *r = MHD_create_response_from_callback(
			MHD_SIZE_UNKNOWN, 4096, sse_read, j, sse_free);
		if (!r) {
			atomic_store_explicit(&j->cancel, true, memory_order_relaxed);
			job_release(j);
			return MHD_NO;
		}
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
					"text/event-stream");
		MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
		server_count(s, ep, 200);
		enum MHD_Result ret = MHD_queue_response(c, 200, r);
		MHD_destroy_response(r);
		return ret;
	}
	wait_for_job(c, j);
	int status = j->err_status ? j->err_status : 200;
	char *body = j->err_status ? strdup(j->err_body) : job_final_body(j);
	job_release(j);
	/* the wait was not idleness: restart the connection's timeout clock
	 * (setting a timeout after 0 resets it) */
	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
				  (unsigned)s->cfg.timeout_s);
	server_count(s, ep, status);
	return send_reply(c, status, "application/json", NULL, body);
}

static enum MHD_Result http_handler(void *cls, struct MHD_Connection *c,
				    const char *url, const char *method,
				    const char *version, const char *upload,
				    size_t *upload_size, void **con_cls)
{
	(void)version;
	server_t *s = cls;
	conn_state_t *cs = *con_cls;
	if (!cs) {
		cs = calloc(1, sizeof *cs);
		if (!cs)
			return MHD_NO;
		*con_cls = cs;
		const char *cl = MHD_lookup_connection_value(
			c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > DISCARD_MAX) {
			/* answered before the body is read: the connection
			 * closes after the reply. Smaller bodies over the cap
			 * are read and dropped first, so that a client that
			 * sends before it reads still gets the 413. */
			cs->answered = true;
			char msg[96];
			snprintf(msg, sizeof msg, "the request body is over %u bytes",
				 SERVER_MAX_BODY);
			return send_error(s, c, server_route(url), 413, msg);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		cs->seen += n;
		if (cs->answered)
			return cs->seen > DISCARD_MAX ? MHD_NO : MHD_YES;
		if (cs->seen > SERVER_MAX_BODY) {
			cs->too_big = true;
			free(cs->body.p);
			cs->body = (sbuf_t){0};
			return cs->seen > DISCARD_MAX ? MHD_NO : MHD_YES;
		}
		sbuf_add(&cs->body, upload, n);
		return MHD_YES;
	}
	if (cs->answered)
		return MHD_YES;
	if (cs->too_big) {
		char msg[96];
		snprintf(msg, sizeof msg, "the request body is over %u bytes",
			 SERVER_MAX_BODY);
		return send_error(s, c, server_route(url), 413, msg);
	}
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						       MHD_HTTP_HEADER_AUTHORIZATION);
	server_reply_t rep;
	server_handle_json(s, method, url, auth, cs->body.p, cs->body.len, &rep);
	if (!rep.job) {
		server_count(s, rep.endpoint, rep.status);
		char *body = rep.body;
		rep.body = NULL;
		return send_reply(c, rep.status, rep.content_type, rep.allow, body);
	}
	return answer_job(s, c, rep.job, rep.endpoint);
}

static void http_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			   enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)c;
	(void)toe;
	conn_state_t *cs = *con_cls;
	if (cs) {
		free(cs->body.p);
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

int server_start(server_t *s)
{
	const server_config_t *cfg = &s->cfg;
	if (!cfg->m)
		return err_set("server_start: no model");
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} addr;
	memset(&addr, 0, sizeof addr);
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
	const char *host = cfg->host ? cfg->host : "127.0.0.1";
	if (inet_pton(AF_INET, host, &addr.v4.sin_addr) == 1) {
		addr.v4.sin_family = AF_INET;
		addr.v4.sin_port = htons((uint16_t)cfg->port);
	} else if (inet_pton(AF_INET6, host, &addr.v6.sin6_addr) == 1) {
		addr.v6.sin6_family = AF_INET6;
		addr.v6.sin6_port = htons((uint16_t)cfg->port);
		flags |= MHD_USE_IPv6;
	} else {
		return err_set("--host '%s' is not a numeric IPv4 or IPv6 address",
			       host);
	}
	if (pthread_create(&s->gen, NULL, gen_main, s))
		return err_sys("pthread_create");
	s->gen_started = true;
	pthread_mutex_lock(&s->qmu);
	while (!s->gen_ready)
		pthread_cond_wait(&s->qcv, &s->qmu);
	int rc = s->gen_rc;
	pthread_mutex_unlock(&s->qmu);
	if (rc) {
		pthread_join(s->gen, NULL);
		s->gen_started = false;
		return err_set("%s", s->gen_err);
	}
	s->mhd = MHD_start_daemon(
		flags, (uint16_t)cfg->port, NULL, NULL, http_handler, s,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout_s,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_conns,
		MHD_OPTION_NOTIFY_COMPLETED, http_completed, s,
		MHD_OPTION_EXTERNAL_LOGGER, http_log, s, MHD_OPTION_END);
	if (!s->mhd) {
		server_stop(s);
		return err_set("cannot listen on %s port %d (in use, or not "
			       "allowed)", host, cfg->port);
	}
	const union MHD_DaemonInfo *di =
		MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
	s->port = di ? di->port : cfg->port;
	return 0;
}

int server_port(const server_t *s) { return s->port; }

void server_stop(server_t *s)
{
	pthread_mutex_lock(&s->qmu);
	atomic_store_explicit(&s->stopping, true, memory_order_relaxed);
	pthread_cond_broadcast(&s->qcv);
	pthread_mutex_unlock(&s->qmu);
	if (s->gen_started) { /* cancels the running job, fails the queued */
		pthread_join(s->gen, NULL);
		s->gen_started = false;
	}
	if (s->mhd) { /* every waiting handler has its answer now */
		MHD_stop_daemon(s->mhd);
		s->mhd = NULL;
	}
}
