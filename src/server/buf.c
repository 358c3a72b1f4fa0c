/* buf: a growable byte buffer and the JSON helpers of every reply. */
#include <stdlib.h>
#include <string.h>

#include "model/utf8.h"
#include "server/buf.h"

/* ---- growable byte buffer ---- */

void sbuf_add(sbuf_t *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			abort(); /* out of memory: nothing sensible to answer */
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void sbuf_str(sbuf_t *b, const char *s) { sbuf_add(b, s, strlen(s)); }

void sbuf_free(sbuf_t *b)
{
	free(b->p);
	*b = (sbuf_t){0};
}

/* ---- JSON ---- */

char *buf_json_dump(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!s)
		abort(); /* only on out of memory: every string is valid UTF-8 */
	return s;
}

json_t *buf_json_text(const char *s, size_t n)
{
	size_t len;
	char *u = utf8_sanitize(s, n, &len);
	json_t *j = json_stringn_nocheck(u, len);
	free(u);
	return j;
}
