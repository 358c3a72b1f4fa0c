/* buf: the server's bottom leaf, which every stage may call: a growable
 * byte buffer and the two JSON helpers every reply goes through.
 *
 * Synchronization: none of its own. An sbuf_t belongs to whoever holds the
 * lock of the object it sits in (a job's text: the job's lock, sched.h). */
#ifndef EGANG_SERVER_BUF_H
#define EGANG_SERVER_BUF_H

#include <jansson.h>
#include <stddef.h>

typedef struct sbuf {
	char *p;       /* NUL-terminated once anything was added; NULL before */
	size_t len, cap;
} sbuf_t;

/* Appends s[0..n); aborts on out of memory. */
void sbuf_add(sbuf_t *b, const char *s, size_t n);
/* Appends the NUL-terminated s. */
void sbuf_str(sbuf_t *b, const char *s);
/* Frees the bytes; b is empty afterwards. */
void sbuf_free(sbuf_t *b);

/* json_dumps(JSON_COMPACT) then json_decref; aborts only on out of
 * memory (every string in a reply is valid UTF-8). */
char *buf_json_dump(json_t *j);
/* A JSON string of s[0..n) through the UTF-8 policy of model/utf8.h:
 * the same text `egang generate` prints. */
json_t *buf_json_text(const char *s, size_t n);

#endif
