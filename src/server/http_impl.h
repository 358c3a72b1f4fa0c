/* http_impl: what the transport's files share, and nobody else includes.
 *
 * The files, each calling only the ones after it:
 *  http.c        the daemon, the handler, plain replies and SSE streams;
 *  http_error.c  libmicrohttpd's own error replies as JSON, and
 *                http_queue, through which every reply of ours goes;
 *  http_conn.c   the connection table: phases, the request deadline,
 *                the per-address limit, eviction past max_conns.
 *
 * Locks: cmu guards the connection table (every http_conn_t's fields
 * and the list); no other lock is taken while it is held, and nothing it
 * guards is read without it. */
#ifndef EGANG_SERVER_HTTP_IMPL_H
#define EGANG_SERVER_HTTP_IMPL_H

#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>

#include "server/http.h"

/* A connection's phase (http.h "Connections"). */
typedef enum http_conn_phase {
	HTTP_CONN_WAITING, /* its request has not fully arrived */
	HTTP_CONN_BUSY,    /* the handler has its request */
	HTTP_CONN_PHASE_COUNT
} http_conn_phase_t;

/* One TCP connection of the daemon: from libmicrohttpd's STARTED
 * notification to its CLOSED one (which comes before it closes the
 * socket, so fd names this connection while it is in the table). */
typedef struct http_conn {
	struct http_conn *prev, *next; /* the table, under cmu */
	http_t *h;
	int fd;
	/* the client's address (IPv4 or IPv6): family and its bytes */
	int family;
	unsigned char addr[16];
	http_conn_phase_t phase; /* under cmu */
	uint64_t since;          /* under cmu: when it began waiting (ns) */
	bool cut;                /* under cmu: shut down by the table */
	/* under cmu: past max_conns_per_ip from its address when it came;
	 * its request gets a 429, and it is closed first */
	bool over_ip;
	/* the connection's own thread alone: the handler has seen its
	 * current request (http_error.c) */
	bool handled;
} http_conn_t;

struct http {
	http_config_t cfg;
	api_t *api;
	sched_t *sched;
	metrics_t *metrics;
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} addr;
	unsigned flags; /* MHD_USE_* */
	struct MHD_Daemon *mhd;
	int port;
	/* the connection table (http_conn.c), under cmu */
	pthread_mutex_t cmu;
	pthread_cond_t ccv;  /* wakes the reaper to stop */
	http_conn_t *conns;  /* newest first */
	int n_conns;         /* in the table and not cut */
	bool reaper_stop;
	bool reaper_started; /* controlling thread only */
	pthread_t reaper;
};

/* ---- http_error.c ---- */

/* libmicrohttpd's MHD_queue_response, called directly: every reply the
 * transport makes goes through here, so that http_error.c's own
 * MHD_queue_response sees only the library's error pages. */
enum MHD_Result http_queue(struct MHD_Connection *c, unsigned status,
			   struct MHD_Response *r);

/* ---- http_conn.c ---- */

/* Initializes the table's lock and condition (http_new). */
void http_conn_init(http_t *h);
/* Destroys them (http_free, after http_conn_stop). */
void http_conn_destroy(http_t *h);
/* libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION callback (cls: the
 * http_t): adds a connection to the table, evicting past max_conns, and
 * removes it. */
void http_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
		      enum MHD_ConnectionNotificationCode toe);
/* The table's entry of c (NULL if it has none). */
http_conn_t *http_conn_of(struct MHD_Connection *c);
/* True when c came past max_conns_per_ip from its address. */
bool http_conn_over_ip(struct MHD_Connection *c);
/* c's request has fully arrived: no deadline, no eviction until its
 * response is sent. false when the table has cut it already (answer
 * nothing). */
bool http_conn_busy(struct MHD_Connection *c);
/* The handler's first call for c's current request (sets handled). */
void http_conn_handled(struct MHD_Connection *c);
/* c's response was sent: it waits for its next request from now. */
void http_conn_waiting(struct MHD_Connection *c);
/* Starts the reaper thread that enforces the request deadline and
 * closes the connections over the per-address limit; -1 + err_get()
 * when it cannot. */
int http_conn_start(http_t *h);
/* Stops and joins the reaper. Idempotent. */
void http_conn_stop(http_t *h);

#endif
