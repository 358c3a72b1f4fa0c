/* utf8: the streaming decoder of the project's UTF-8 policy (see utf8.h).
 * It follows the byte ranges of the Unicode Standard's table 3-7
 * (well-formed UTF-8 byte sequences): a lead byte fixes the length and the
 * range of the second byte (E0: A0..BF, ED: 80..9F, F0: 90..BF,
 * F4: 80..8F), later bytes are 80..BF. A byte outside the expected range
 * ends the maximal subpart: U+FFFD for it, then the byte starts afresh. */
#include "model/utf8.h"

#include <stdlib.h>
#include <string.h>

#define REPL "\xEF\xBF\xBD" /* U+FFFD */

/* Starts a sequence at lead byte c: its length (1 for ASCII), 0 if c can
 * never begin one; sets the range of the second byte. */
static int lead(utf8_stream_t *st, unsigned char c)
{
	st->lo = 0x80;
	st->hi = 0xBF;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		return 2;
	if (c >= 0xE0 && c <= 0xEF) {
		if (c == 0xE0)
			st->lo = 0xA0; /* overlong below U+0800 */
		if (c == 0xED)
			st->hi = 0x9F; /* surrogates U+D800..U+DFFF */
		return 3;
	}
	if (c >= 0xF0 && c <= 0xF4) {
		if (c == 0xF0)
			st->lo = 0x90; /* overlong below U+10000 */
		if (c == 0xF4)
			st->hi = 0x8F; /* past U+10FFFF */
		return 4;
	}
	return 0; /* 80..C1 (continuation, overlong C0 C1), F5..FF */
}

size_t utf8_stream_feed(utf8_stream_t *st, const char *in, size_t n,
			char *out)
{
	const unsigned char *u = (const unsigned char *)in;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = u[i];
		if (st->need) {
			if (c >= st->lo && c <= st->hi) {
				st->pend[st->n++] = c;
				st->lo = 0x80;
				st->hi = 0xBF;
				if (st->n == st->need) {
					memcpy(out + o, st->pend, st->n);
					o += st->n;
					st->n = st->need = 0;
				}
				continue;
			}
			/* the maximal subpart ends before c: one U+FFFD, then
			 * c starts afresh below */
			memcpy(out + o, REPL, 3);
			o += 3;
			st->n = st->need = 0;
		}
		int len = lead(st, c);
		if (len == 1) {
			out[o++] = (char)c;
		} else if (len == 0) {
			memcpy(out + o, REPL, 3);
			o += 3;
		} else {
			st->pend[0] = c;
			st->n = 1;
			st->need = (uint8_t)len;
		}
	}
	return o;
}

size_t utf8_stream_flush(utf8_stream_t *st, char *out)
{
	size_t o = 0;
	if (st->need) {
		memcpy(out, REPL, 3);
		o = 3;
	}
	memset(st, 0, sizeof *st);
	return o;
}

char *utf8_sanitize(const char *s, size_t n, size_t *len)
{
	char *out = malloc(UTF8_STREAM_OUT_MAX(n) + 1);
	if (!out)
		abort(); /* out of memory: as the server's buffers do */
	utf8_stream_t st = {0};
	size_t o = utf8_stream_feed(&st, s, n, out);
	o += utf8_stream_flush(&st, out + o);
	out[o] = '\0';
	if (len)
		*len = o;
	return out;
}

size_t utf8_seq_len(const char *s, size_t n)
{
	if (!n)
		return 0;
	utf8_stream_t st = {0};
	const unsigned char *u = (const unsigned char *)s;
	int len = lead(&st, u[0]);
	if (len == 0 || (size_t)len > n)
		return 0;
	for (int i = 1; i < len; i++) {
		if (u[i] < st.lo || u[i] > st.hi)
			return 0;
		st.lo = 0x80;
		st.hi = 0xBF;
	}
	return (size_t)len;
}
