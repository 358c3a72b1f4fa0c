/* http_conn: the connection table (http.h "Connections"). libmicrohttpd
 * counts connections and times out idle ones, but a client that trickles
 * a byte now and then is never idle, and a full table refuses everyone
 * new. The table adds what it lacks: every connection with its phase, its
 * client's address and the time it began waiting for its request; a
 * reaper thread that shuts down a waiting connection past
 * request_timeout_s; the per-address limit (a connection past
 * max_conns_per_ip from its address gets a 429 for its request, or is
 * closed after OVER_IP_GRACE_MS without one); and, when a new connection
 * would make more than max_conns, the eviction of a waiting one: one
 * over its address's limit first, else the one waiting longest.
 *
 * Cutting a connection is shutdown(2) on its socket: its thread in
 * libmicrohttpd sees the end of the stream and closes it as if the client
 * had. The socket stays open until libmicrohttpd's CLOSED notification
 * (http_conn_notify) has taken the entry out of the table under cmu, so a
 * cut under cmu never reaches a descriptor reused by another connection.
 *
 * The table runs under cmu and calls nothing that takes another lock
 * while it holds it; the closes are counted in the metrics after cmu is
 * let go. */
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "base/base.h"
#include "server/http_impl.h"
#include "server/metrics.h"

#define REAP_MS 200          /* the reaper's period */
#define OVER_IP_GRACE_MS 1000 /* for a connection over its address's limit
				 to send the request its 429 answers */

/* ---- the table (under cmu) ---- */

/* Shuts k's socket down; libmicrohttpd closes it. */
static void conn_cut(http_t *h, http_conn_t *k)
{
	if (k->cut)
		return;
	k->cut = true;
	h->n_conns--;
	shutdown(k->fd, SHUT_RDWR);
}

/* The waiting connection to evict (NULL: none): the oldest over its
 * address's limit, else the one that has waited longest. */
static http_conn_t *conn_victim(http_t *h)
{
	http_conn_t *old = NULL;
	for (http_conn_t *k = h->conns; k; k = k->next) {
		if (k->cut || k->phase != HTTP_CONN_WAITING)
			continue;
		if (!old || (k->over_ip && !old->over_ip) ||
		    (k->over_ip == old->over_ip && k->since <= old->since))
			old = k;
	}
	return old;
}

/* True when a and b come from the same address. */
static bool conn_same_ip(const http_conn_t *a, const http_conn_t *b)
{
	return a->family == b->family &&
	       !memcmp(a->addr, b->addr, a->family == AF_INET6 ? 16 : 4);
}

/* The connections from k's address within its limit (not cut, not over). */
static int conn_count_ip(const http_t *h, const http_conn_t *k)
{
	int n = 0;
	for (const http_conn_t *o = h->conns; o; o = o->next)
		n += o != k && !o->cut && !o->over_ip && conn_same_ip(o, k);
	return n;
}

/* Adds k, marked over_ip past max_conns_per_ip from its address; past
 * max_conns, cuts a waiting connection (conn_victim; k itself when every
 * other one is busy). True when it cut one. */
static bool conn_add(http_t *h, http_conn_t *k)
{
	int per_ip = h->cfg.max_conns_per_ip;
	k->over_ip = per_ip > 0 && k->family && conn_count_ip(h, k) >= per_ip;
	k->next = h->conns;
	if (h->conns)
		h->conns->prev = k;
	h->conns = k;
	h->n_conns++;
	if (h->n_conns <= h->cfg.max_conns)
		return false;
	http_conn_t *old = conn_victim(h);
	conn_cut(h, old ? old : k);
	return true;
}

/* k's client address from libmicrohttpd (family 0 when unknown: no
 * per-address limit). */
static void conn_set_addr(http_conn_t *k, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;
	if (sa && sa->sa_family == AF_INET) {
		k->family = AF_INET;
		memcpy(k->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6) {
		k->family = AF_INET6;
		memcpy(k->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

static void conn_remove(http_t *h, http_conn_t *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		h->conns = k->next;
	if (k->next)
		k->next->prev = k->prev;
	if (!k->cut)
		h->n_conns--;
}

void http_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
		      enum MHD_ConnectionNotificationCode toe)
{
	http_t *h = cls;
	http_conn_t *k = *socket_context;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		k = calloc(1, sizeof *k);
		if (!k || !ci) { /* untracked: no deadline, no eviction */
			free(k);
			return;
		}
		*k = (http_conn_t){.h = h, .fd = ci->connect_fd,
				   .phase = HTTP_CONN_WAITING, .since = time_now_ns()};
		conn_set_addr(k, c);
		*socket_context = k;
		pthread_mutex_lock(&h->cmu);
		bool evicted = conn_add(h, k);
		pthread_mutex_unlock(&h->cmu);
		if (evicted) /* counted outside cmu: one lock at a time */
			metrics_count_closed(h->metrics, METRICS_CLOSE_EVICTED, 1);
	} else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && k) {
		pthread_mutex_lock(&h->cmu);
		conn_remove(h, k);
		pthread_mutex_unlock(&h->cmu);
		free(k);
		*socket_context = NULL;
	}
}

http_conn_t *http_conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

bool http_conn_over_ip(struct MHD_Connection *c)
{
	http_conn_t *k = http_conn_of(c);
	if (!k)
		return false;
	pthread_mutex_lock(&k->h->cmu);
	bool over = k->over_ip;
	pthread_mutex_unlock(&k->h->cmu);
	return over;
}

bool http_conn_busy(struct MHD_Connection *c)
{
	http_conn_t *k = http_conn_of(c);
	if (!k)
		return true;
	pthread_mutex_lock(&k->h->cmu);
	bool ok = !k->cut;
	k->phase = HTTP_CONN_BUSY;
	pthread_mutex_unlock(&k->h->cmu);
	return ok;
}

void http_conn_handled(struct MHD_Connection *c)
{
	http_conn_t *k = http_conn_of(c);
	if (k)
		k->handled = true;
}

void http_conn_waiting(struct MHD_Connection *c)
{
	http_conn_t *k = http_conn_of(c);
	if (!k)
		return;
	k->handled = false;
	pthread_mutex_lock(&k->h->cmu);
	k->phase = HTTP_CONN_WAITING;
	k->since = time_now_ns();
	pthread_mutex_unlock(&k->h->cmu);
}

/* ---- the reaper ---- */

/* Cuts the waiting connections past the request deadline, and those over
 * their address's limit past OVER_IP_GRACE_MS; counts each in n[why]. */
static void conn_reap(http_t *h, int n[METRICS_CLOSE_COUNT])
{
	uint64_t now = time_now_ns();
	uint64_t limit = (uint64_t)h->cfg.request_timeout_s * 1000000000u;
	uint64_t grace = (uint64_t)OVER_IP_GRACE_MS * 1000000u;
	for (http_conn_t *k = h->conns; k; k = k->next) {
		if (k->cut || k->phase != HTTP_CONN_WAITING)
			continue;
		if (k->over_ip && now - k->since > grace) {
			conn_cut(h, k);
			n[METRICS_CLOSE_PER_IP]++;
		} else if (limit && now - k->since > limit) {
			conn_cut(h, k);
			n[METRICS_CLOSE_REQUEST_TIMEOUT]++;
		}
	}
}

static void *reaper_main(void *arg)
{
	http_t *h = arg;
	pthread_mutex_lock(&h->cmu);
	while (!h->reaper_stop) {
		int n[METRICS_CLOSE_COUNT] = {0};
		conn_reap(h, n);
		/* counted outside cmu: one lock at a time */
		pthread_mutex_unlock(&h->cmu);
		for (int i = 0; i < METRICS_CLOSE_COUNT; i++)
			metrics_count_closed(h->metrics, (metrics_close_t)i, n[i]);
		pthread_mutex_lock(&h->cmu);
		if (h->reaper_stop)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts); /* ccv's clock */
		ts.tv_nsec += REAP_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&h->ccv, &h->cmu, &ts);
	}
	pthread_mutex_unlock(&h->cmu);
	return NULL;
}

void http_conn_init(http_t *h)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&h->cmu, NULL);
	pthread_cond_init(&h->ccv, &ca);
	pthread_condattr_destroy(&ca);
}

void http_conn_destroy(http_t *h)
{
	pthread_mutex_destroy(&h->cmu);
	pthread_cond_destroy(&h->ccv);
}

int http_conn_start(http_t *h)
{
	if (h->cfg.request_timeout_s <= 0 && h->cfg.max_conns_per_ip <= 0)
		return 0; /* nothing to reap */
	h->reaper_stop = false;
	int rc = pthread_create(&h->reaper, NULL, reaper_main, h);
	if (rc) {
		errno = rc;
		return err_sys("pthread_create");
	}
	h->reaper_started = true;
	return 0;
}

void http_conn_stop(http_t *h)
{
	if (!h->reaper_started)
		return;
	pthread_mutex_lock(&h->cmu);
	h->reaper_stop = true;
	pthread_cond_broadcast(&h->ccv);
	pthread_mutex_unlock(&h->cmu);
	pthread_join(h->reaper, NULL);
	h->reaper_started = false;
}
