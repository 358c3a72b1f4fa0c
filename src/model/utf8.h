/* utf8: the one UTF-8 policy for generated text, shared by `egang generate`
 * (stdout) and `egang serve` (plain and streamed replies), so that both
 * print the same bytes for the same tokens.
 *
 * Token pieces are bytes: a piece may end inside a multi-byte character,
 * or hold bytes that are not UTF-8 at all (byte-fallback tokens, byte-level
 * BPE). The policy, applied to the concatenation of the pieces:
 *  1. An incomplete sequence at the end of what has arrived is held back
 *     until a later piece completes it (llama-server does the same).
 *  2. Invalid bytes become U+FFFD, one per maximal subpart of an
 *     ill-formed sequence: the practice the Unicode Standard recommends
 *     (chapter 3, "U+FFFD Substitution of Maximal Subparts"; WHATWG's
 *     decoder does the same). A maximal subpart is the longest prefix of a
 *     well-formed sequence, or else one byte: "\xF0\x9F\x98" then "A" gives
 *     one U+FFFD and "A"; "\xC0\xAF" (overlong) and "\xED\xA0\x80" (a
 *     surrogate) give one U+FFFD per byte.
 *  3. A sequence still incomplete when the text ends becomes one U+FFFD.
 * The output is well-formed UTF-8 (U+0000 included: it is valid). Stop
 * strings are matched on this output, never on the raw bytes. */
#ifndef EGANG_UTF8_H
#define EGANG_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The streaming decoder: the bytes of the sequence in progress. Embeddable;
 * zero-initialise ({0}) to start. */
typedef struct utf8_stream {
	unsigned char pend[4]; /* the incomplete sequence held back */
	uint8_t n;             /* bytes in pend */
	uint8_t need;          /* its total length (0: none in progress) */
	unsigned char lo, hi;  /* the range the next byte must be in */
} utf8_stream_t;

/* Output bytes utf8_stream_feed may write for n input bytes: three per
 * byte (U+FFFD) for the input and the held-back sequence. */
#define UTF8_STREAM_OUT_MAX(n) (3 * ((size_t)(n) + 4))

/* Decodes in[0..n) after what st holds; writes the well-formed part to out
 * (room for UTF8_STREAM_OUT_MAX(n) bytes) and returns its length; holds
 * back an incomplete sequence at the end. */
size_t utf8_stream_feed(utf8_stream_t *st, const char *in, size_t n,
			char *out);
/* Ends the text: a held-back incomplete sequence becomes U+FFFD in out
 * (room for 3 bytes). Returns the bytes written (0 or 3); st is reset. */
size_t utf8_stream_flush(utf8_stream_t *st, char *out);

/* The whole of s[0..n) through a fresh decoder, flushed: malloc'd,
 * NUL-terminated, its length in *len. */
char *utf8_sanitize(const char *s, size_t n, size_t *len);

/* The length of the well-formed sequence at s[0..n), 0 if s does not begin
 * one (or n is 0). */
size_t utf8_seq_len(const char *s, size_t n);

#endif
