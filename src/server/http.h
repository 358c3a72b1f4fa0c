/* http: the transport, the libmicrohttpd glue (an internal polling thread,
 * one thread per connection). A handler thread reads the body (413 past
 * SERVER_MAX_BODY), asks the API for a reply or a job (api.h), enqueues
 * the job (sched.h; a request of n choices is n jobs, queued together),
 * then either waits for their end and asks the API for the reply, or
 * streams it: a content reader pulls the events of every choice from the
 * scheduler and has the API format each one as server-sent events (a
 * choice's error is the stream's last event, and cancels the others). A
 * client that goes away cancels its jobs.
 *
 * Connections (http_conn.c): a connection that has not yet sent a whole
 * request (headers and body) is *waiting*; one whose request the handler
 * has is *busy* until its response is sent. A waiting connection is
 * closed once request_timeout_s has passed since it connected or since
 * its previous response, however many bytes it trickles; and when a new
 * connection would make more than max_conns, a waiting one is closed to
 * make room (one over its address's limit first, else the one waiting
 * longest; with none waiting, the new one), so idle and slow clients
 * cannot hold every connection while others wait. A connection past
 * max_conns_per_ip from its address gets a 429 JSON error for its request
 * and is closed, or is closed after a second without one.
 *
 * CORS (off without origins): a request whose Origin header is one of
 * cfg.cors (compared without regard to case; "*" matches any) gets
 * Access-Control-Allow-Origin with that origin, and an OPTIONS (a
 * preflight) also Allow-Methods (the endpoint's), Allow-Headers
 * (Authorization, Content-Type) and Max-Age; with CORS on, every reply
 * says Vary: Origin (a cache must not serve one origin's answer to
 * another). Other origins get no Access-Control-* header, so a browser
 * refuses the page the answer.
 *
 * Errors that libmicrohttpd answers itself (a malformed request line,
 * header or chunk, 413, 414, 431, 505) come back in the API's JSON error
 * shape (http_error.c), as do unsupported transfer codings (400, 501).
 *
 * Synchronization: http_addr_parse, http_listen, http_stop and http_free
 * are for one controlling thread; the daemon's threads run between
 * http_listen and http_stop. The connection table has its own lock
 * (http_impl.h), never held together with another. */
#ifndef EGANG_SERVER_HTTP_H
#define EGANG_SERVER_HTTP_H

#include <stddef.h>

#include "server/api.h"
#include "server/metrics.h"
#include "server/sched.h"

#define SERVER_MAX_BODY (1u << 20) /* request bodies larger get 413 */

/* The connections a daemon serves at once when its config says 0. */
#define HTTP_MAX_CONNS 256

typedef struct http_config {
	const char *host; /* numeric IPv4 or IPv6 address; NULL: 127.0.0.1 */
	int port;         /* 0: any free port */
	int timeout_s;    /* idle connection timeout (slow clients) */
	int request_timeout_s; /* a waiting connection's deadline; 0: none */
	int max_conns;    /* concurrent connections; 0: HTTP_MAX_CONNS */
	int max_conns_per_ip; /* from one address; 0: no limit */
	/* CORS: the origins ("scheme://host[:port]", or "*": any) whose
	 * requests get Access-Control-* headers; none: CORS off */
	const char *const *cors;
	int n_cors;
} http_config_t;

typedef struct http http_t; /* opaque */

/* Copies cfg (its host must outlive it); NULL + err_get() when out of
 * memory. */
http_t *http_new(const http_config_t *cfg, api_t *api, sched_t *sched,
		 metrics_t *metrics);
/* Stops the daemon if it runs, then frees it. */
void http_free(http_t *h);
/* True when host is a numeric IPv4 or IPv6 address. */
bool http_host_ok(const char *host);
/* Parses the address to listen on (cfg's host and port; binds nothing);
 * -1 + err_get() when it is not one. */
int http_addr_parse(http_t *h);
/* Starts the daemon on the address http_addr_parse parsed; -1 +
 * err_get() when it cannot listen. */
int http_listen(http_t *h);
/* The port the daemon listens on (after http_listen). */
int http_port(const http_t *h);
/* Stops the daemon and joins its threads (every waiting handler must
 * have its answer: stop the scheduler first). Idempotent. */
void http_stop(http_t *h);

#endif
