/* http: the transport, the libmicrohttpd glue (an internal polling thread,
 * one thread per connection). A handler thread reads the body (413 past
 * SERVER_MAX_BODY), asks the API for a reply or a job (api.h), enqueues
 * the job (sched.h), then either waits for its end and asks the API for
 * the reply, or streams it: a content reader pulls the job's events from
 * the scheduler and has the API format each one as server-sent events. A
 * client that goes away cancels its job.
 *
 * Synchronization: http_addr_parse, http_listen, http_stop and http_free
 * are for one controlling thread; the daemon's threads run between
 * http_listen and http_stop. No lock of its own. */
#ifndef EGANG_SERVER_HTTP_H
#define EGANG_SERVER_HTTP_H

#include <stddef.h>

#include "server/api.h"
#include "server/metrics.h"
#include "server/sched.h"

#define SERVER_MAX_BODY (1u << 20) /* request bodies larger get 413 */

typedef struct http_config {
	const char *host; /* numeric IPv4 or IPv6 address; NULL: 127.0.0.1 */
	int port;         /* 0: any free port */
	int timeout_s;    /* idle connection timeout (slow clients) */
	int max_conns;    /* concurrent connections */
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
