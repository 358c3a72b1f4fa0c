/* http_error: libmicrohttpd's own error replies in the API's JSON error
 * shape.
 *
 * libmicrohttpd answers what it rejects before the handler sees a request
 * (a malformed request line, header field or chunk: 400; a Content-Length
 * or chunk size past 64 bits: 413; a request line or header block past
 * its memory pool: 414, 431; an HTTP version it does not speak: 505) with
 * HTML pages of its own, and 0.9.75 (Debian 12) has no option to replace
 * them. It queues every one of them through MHD_queue_response, called
 * through its PLT, and a symbol the executable defines comes first in the
 * dynamic linker's lookup. So this file defines MHD_queue_response: the
 * library's error pages land here and are swapped for the JSON error of
 * their status before being queued with the library's own function, which
 * http_queue (every reply of the transport) calls directly. If a later
 * libmicrohttpd binds its calls inside itself, its pages come back as
 * HTML and the raw-socket cases of tests/cli_serve_limits.sh fail.
 *
 * One rejection has no reply to replace: a request line without a space
 * (no request target, as in "GARBAGE" or a bare "GET") makes 0.9.75 close
 * the connection without writing anything.
 *
 * One path needs more: an error found once the header block is complete
 * but before the handler's first call (a malformed or 64-bit-overflowing
 * Content-Length) makes 0.9.75 write the response header twice, the
 * second copy landing in the body. There the JSON reply is written to
 * the socket here, whole, and the library is told the queueing failed,
 * so that it closes the connection without writing anything. */
#include <dlfcn.h> /* RTLD_NEXT: _GNU_SOURCE, from the Makefile */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/base.h"
#include "server/api.h"
#include "server/http_impl.h"

typedef enum MHD_Result (*queue_fn_t)(struct MHD_Connection *, unsigned int,
				      struct MHD_Response *);

static queue_fn_t real_queue;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

/* The library's MHD_queue_response: the next definition after ours. */
static void real_find(void)
{
	real_queue = (queue_fn_t)dlsym(RTLD_NEXT, "MHD_queue_response");
	if (!real_queue) {
		log_error("serve: libmicrohttpd's MHD_queue_response not found (%s)",
			  dlerror());
		abort(); /* nothing could ever be answered */
	}
}

enum MHD_Result http_queue(struct MHD_Connection *c, unsigned status,
			   struct MHD_Response *r)
{
	pthread_once(&real_once, real_find);
	return real_queue(c, status, r);
}

/* What the library rejected, for each status it sends. */
static const char *error_message(unsigned status)
{
	switch (status) {
	case 400: return "the request is malformed (its request line, a header "
			 "field or the chunked encoding of its body)";
	case 413: return "the request's Content-Length or a chunk size is too large";
	case 414: return "the request target is longer than the server accepts";
	case 431: return "the request's header fields are larger than the server "
			 "accepts";
	case 505: return "the HTTP version is not supported; send HTTP/1.1 or "
			 "HTTP/1.0";
	default: return "the server could not take the request";
	}
}

/* True when c's header block is complete and the handler has not yet
 * seen its request (the path where 0.9.75 doubles the header). */
static bool before_handler(struct MHD_Connection *c, const http_conn_t *k)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
	return k && !k->handled && ci && ci->header_size > 0;
}

/* Writes the whole reply to k's socket; MHD_NO, so that the library
 * closes the connection without a reply of its own. */
static enum MHD_Result send_raw(const http_conn_t *k, unsigned status, char *body)
{
	char head[256];
	int n = snprintf(head, sizeof head,
			 "HTTP/1.1 %u %s\r\nConnection: close\r\n"
			 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
			 status, MHD_get_reason_phrase_for(status), strlen(body));
	if (n > 0 && (size_t)n < sizeof head &&
	    send(k->fd, head, (size_t)n, MSG_NOSIGNAL | MSG_MORE) == n)
		send(k->fd, body, strlen(body), MSG_NOSIGNAL);
	free(body);
	return MHD_NO;
}

/* libmicrohttpd's own replies (see the top): an error becomes the JSON
 * error of its status, counted under the "other" endpoint. */
enum MHD_Result MHD_queue_response(struct MHD_Connection *c, unsigned int status,
				   struct MHD_Response *r)
{
	if (status < 400)
		return http_queue(c, status, r);
	char *body = api_error_body((int)status, NULL, NULL, "%s", error_message(status));
	http_conn_t *k = http_conn_of(c);
	if (k)
		metrics_count(k->h->metrics, EP_OTHER, (int)status);
	if (before_handler(c, k))
		return send_raw(k, status, body);
	struct MHD_Response *j = MHD_create_response_from_buffer(
		strlen(body), body, MHD_RESPMEM_MUST_FREE);
	if (!j) {
		free(body);
		return http_queue(c, status, r);
	}
	MHD_add_response_header(j, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	enum MHD_Result ret = http_queue(c, status, j);
	MHD_destroy_response(j);
	return ret;
}
