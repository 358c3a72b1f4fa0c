/* json_regex: a simple regex to GBNF (json_regex.h has the contract).
 *
 * A recursive-descent parser (alternation, sequence, quantified atom) that
 * writes GBNF as it goes. A character class is kept as a set of code point
 * ranges so that negation and the JSON escaping can be computed: the raw
 * part of the set becomes one GBNF class, and the characters a JSON
 * encoder escapes ('"', '\', controls) become literal alternatives. */
#include "model/json_regex.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RX_RANGES 256    /* ranges in one class after negation */
#define RX_DEPTH_MAX 32  /* nested groups */
#define RX_CP_MAX 0x10FFFFu

typedef struct rx_range {
	uint32_t lo, hi;
} rx_range_t;

typedef struct rx_set {
	rx_range_t r[RX_RANGES];
	int n;
} rx_set_t;

/* A growable string; failed when an allocation failed. */
typedef struct rx_buf {
	char *s;
	size_t n, cap;
	bool failed;
} rx_buf_t;

typedef struct rx {
	const char *p, *end; /* the pattern between ^ and $ */
	const char *start;   /* for positions in messages */
	long max_repeat;
	char *why;
	size_t why_len;
	bool failed;
	int depth;
} rx_t;

static void rx_fail(rx_t *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rx_fail(rx_t *x, const char *fmt, ...)
{
	if (x->failed)
		return;
	char what[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	snprintf(x->why, x->why_len, "pattern at offset %td: %s", x->p - x->start, what);
	x->failed = true;
}

static void rx_put(rx_buf_t *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = 2 * (b->n + n + 1) + 32;
		char *ns = realloc(b->s, cap);
		if (!ns) {
			b->failed = true;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = '\0';
}

static void rx_puts(rx_buf_t *b, const char *s)
{
	rx_put(b, s, strlen(s));
}

static void rx_printf(rx_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rx_printf(rx_buf_t *b, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	rx_puts(b, tmp);
}

/* ---- code points ---- */

/* Decodes one UTF-8 code point at *p (advancing); invalid bytes fail. */
static bool rx_utf8(rx_t *x, uint32_t *cp)
{
	const unsigned char *s = (const unsigned char *)x->p;
	size_t left = (size_t)(x->end - x->p);
	int len = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
	if (len == 0 || (size_t)len > left) {
		rx_fail(x, "invalid UTF-8");
		return false;
	}
	uint32_t v = len == 1 ? s[0] : len == 2 ? s[0] & 0x1Fu : len == 3 ? s[0] & 0x0Fu : s[0] & 0x07u;
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80) {
			rx_fail(x, "invalid UTF-8");
			return false;
		}
		v = (v << 6) | (s[i] & 0x3Fu);
	}
	x->p += len;
	*cp = v;
	return true;
}

static int rx_encode_utf8(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* Appends the GBNF-literal-escaped bytes of code point cp as a JSON
 * encoder writes it inside a string (no quotes). */
static void rx_put_json_cp(rx_buf_t *b, uint32_t cp)
{
	static const char short_esc[] = {['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'};
	if (cp == '"') {
		rx_puts(b, "\\\\\\\"");          /* JSON \"  -> GBNF \\\" */
	} else if (cp == '\\') {
		rx_puts(b, "\\\\\\\\");          /* JSON \\  -> GBNF \\\\ */
	} else if (cp < 0x20) {
		if (cp < sizeof short_esc && short_esc[cp])
			rx_printf(b, "\\\\%c", short_esc[cp]);
		else
			rx_printf(b, "\\\\u%04x", cp);
	} else if (cp == 0x7F) {
		rx_puts(b, "\\x7F");
	} else {
		char u[4];
		rx_put(b, u, (size_t)rx_encode_utf8(cp, u));
	}
}

/* ---- sets ---- */

static void rx_set_add(rx_t *x, rx_set_t *s, uint32_t lo, uint32_t hi)
{
	if (s->n == RX_RANGES) {
		rx_fail(x, "character class too large");
		return;
	}
	s->r[s->n].lo = lo;
	s->r[s->n].hi = hi;
	s->n++;
}

static int rx_range_cmp(const void *a, const void *b)
{
	const rx_range_t *ra = a, *rb = b;
	return ra->lo < rb->lo ? -1 : ra->lo > rb->lo;
}

/* Sorts and merges overlapping or adjacent ranges. */
static void rx_set_norm(rx_set_t *s)
{
	if (s->n == 0)
		return;
	qsort(s->r, (size_t)s->n, sizeof s->r[0], rx_range_cmp);
	int o = 0;
	for (int i = 1; i < s->n; i++) {
		if (s->r[i].lo <= s->r[o].hi + 1) {
			if (s->r[i].hi > s->r[o].hi)
				s->r[o].hi = s->r[i].hi;
		} else {
			s->r[++o] = s->r[i];
		}
	}
	s->n = o + 1;
}

/* s = (all code points) minus s; surrogates never included. */
static void rx_set_negate(rx_t *x, rx_set_t *s)
{
	rx_set_norm(s);
	rx_set_t out = {.n = 0};
	uint32_t next = 0;
	for (int i = 0; i < s->n; i++) {
		if (s->r[i].lo > next)
			rx_set_add(x, &out, next, s->r[i].lo - 1);
		next = s->r[i].hi + 1;
	}
	if (next <= RX_CP_MAX)
		rx_set_add(x, &out, next, RX_CP_MAX);
	*s = out;
}

static bool rx_set_has(const rx_set_t *s, uint32_t cp)
{
	for (int i = 0; i < s->n; i++)
		if (cp >= s->r[i].lo && cp <= s->r[i].hi)
			return true;
	return false;
}

/* \d \w \s (lower) or their complements (upper) added to s. */
static void rx_set_class_escape(rx_t *x, rx_set_t *s, char e)
{
	rx_set_t t = {.n = 0};
	switch (e | 0x20) {
	case 'd':
		rx_set_add(x, &t, '0', '9');
		break;
	case 'w':
		rx_set_add(x, &t, '0', '9');
		rx_set_add(x, &t, 'A', 'Z');
		rx_set_add(x, &t, '_', '_');
		rx_set_add(x, &t, 'a', 'z');
		break;
	default: /* s: ECMA-262 whitespace, the ASCII and common Unicode ones */
		rx_set_add(x, &t, '\t', '\r');
		rx_set_add(x, &t, ' ', ' ');
		rx_set_add(x, &t, 0xA0, 0xA0);
		rx_set_add(x, &t, 0x2028, 0x2029);
		rx_set_add(x, &t, 0xFEFF, 0xFEFF);
		break;
	}
	if (e >= 'A' && e <= 'Z')
		rx_set_negate(x, &t);
	for (int i = 0; i < t.n; i++)
		rx_set_add(x, s, t.r[i].lo, t.r[i].hi);
}

static void rx_put_class_cp(rx_buf_t *b, uint32_t cp)
{
	if (cp > 0x20 && cp < 0x7F && !strchr("]\\-^\"[", (int)cp))
		rx_printf(b, "%c", (char)cp);
	else if (cp < 0x100)
		rx_printf(b, "\\x%02X", cp);
	else if (cp < 0x10000)
		rx_printf(b, "\\u%04X", cp);
	else
		rx_printf(b, "\\U%08X", cp);
}

/* The set as a GBNF expression: one class for what JSON writes raw, and
 * alternatives for what it escapes. */
static void rx_put_set(rx_t *x, rx_buf_t *b, rx_set_t *s)
{
	rx_set_norm(s);
	rx_set_t raw = *s;
	rx_set_t cut = {.n = 0};
	rx_set_add(x, &cut, 0x00, 0x1F);
	rx_set_add(x, &cut, '"', '"');
	rx_set_add(x, &cut, '\\', '\\');
	rx_set_add(x, &cut, 0xD800, 0xDFFF);
	/* raw = s minus cut: s intersected with the complement of cut */
	rx_set_negate(x, &cut);
	rx_set_t inter = {.n = 0};
	for (int i = 0; i < raw.n; i++)
		for (int j = 0; j < cut.n; j++) {
			uint32_t lo = raw.r[i].lo > cut.r[j].lo ? raw.r[i].lo : cut.r[j].lo;
			uint32_t hi = raw.r[i].hi < cut.r[j].hi ? raw.r[i].hi : cut.r[j].hi;
			if (lo <= hi)
				rx_set_add(x, &inter, lo, hi);
		}
	rx_buf_t alts = {0};
	int n_alts = 0;
	if (inter.n) {
		rx_puts(&alts, "[");
		for (int i = 0; i < inter.n; i++) {
			rx_put_class_cp(&alts, inter.r[i].lo);
			if (inter.r[i].hi != inter.r[i].lo) {
				rx_puts(&alts, "-");
				rx_put_class_cp(&alts, inter.r[i].hi);
			}
		}
		rx_puts(&alts, "]");
		n_alts++;
	}
	for (uint32_t cp = 0; cp < 0x60; cp++) {
		if (!(cp < 0x20 || cp == '"' || cp == '\\') || !rx_set_has(s, cp))
			continue;
		rx_puts(&alts, n_alts ? " | \"" : "\"");
		rx_put_json_cp(&alts, cp);
		rx_puts(&alts, "\"");
		n_alts++;
	}
	if (n_alts == 0)
		rx_fail(x, "a character class that matches no character");
	else if (n_alts == 1)
		rx_puts(b, alts.s);
	else
		rx_puts(b, "("), rx_puts(b, alts.s), rx_puts(b, ")");
	b->failed |= alts.failed;
	free(alts.s);
}

/* ---- the parser ---- */

static void rx_alt(rx_t *x, rx_buf_t *b);

static int rx_hex(rx_t *x, int digits, uint32_t *cp)
{
	uint32_t v = 0;
	for (int i = 0; i < digits; i++) {
		char ch = x->p < x->end ? *x->p : '\0';
		int d = ch >= '0' && ch <= '9' ? ch - '0' : (ch | 0x20) >= 'a' && (ch | 0x20) <= 'f' ? (ch | 0x20) - 'a' + 10 : -1;
		if (d < 0) {
			rx_fail(x, "a hex escape needs %d hex digits", digits);
			return -1;
		}
		v = v * 16 + (uint32_t)d;
		x->p++;
	}
	*cp = v;
	return 0;
}

/* An escape after '\' (x->p at the letter): a code point in *cp (return
 * 1), or a class added to set (return 2); 0 on refusal. */
static int rx_escape(rx_t *x, rx_set_t *set, uint32_t *cp)
{
	if (x->p >= x->end) {
		rx_fail(x, "a trailing backslash");
		return 0;
	}
	char e = *x->p++;
	switch (e) {
	case 'd': case 'D': case 'w': case 'W': case 's': case 'S':
		rx_set_class_escape(x, set, e);
		return 2;
	case 'n': *cp = '\n'; return 1;
	case 't': *cp = '\t'; return 1;
	case 'r': *cp = '\r'; return 1;
	case 'f': *cp = '\f'; return 1;
	case 'v': *cp = '\v'; return 1;
	case 'x': return rx_hex(x, 2, cp) == 0;
	case 'u': return rx_hex(x, 4, cp) == 0;
	default:
		break;
	}
	if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
		x->p--;
		rx_fail(x, "unsupported escape \\%c", e);
		return 0;
	}
	*cp = (unsigned char)e;
	if ((unsigned char)e >= 0x80) {
		x->p--;
		return rx_utf8(x, cp) ? 1 : 0;
	}
	return 1;
}

/* A class "[...]" (x->p after '['). */
static void rx_class(rx_t *x, rx_buf_t *b)
{
	rx_set_t s = {.n = 0};
	bool neg = x->p < x->end && *x->p == '^';
	if (neg)
		x->p++;
	if (x->p < x->end && *x->p == ']') {
		rx_fail(x, "an empty character class");
		return;
	}
	while (!x->failed) {
		if (x->p >= x->end) {
			rx_fail(x, "an unterminated character class");
			return;
		}
		if (*x->p == ']') {
			x->p++;
			break;
		}
		uint32_t lo;
		int kind = 1;
		if (*x->p == '\\') {
			x->p++;
			if (x->p < x->end && *x->p == 'b') { /* backspace inside a class */
				x->p++;
				lo = '\b';
			} else if (!(kind = rx_escape(x, &s, &lo))) {
				return;
			}
		} else if (!rx_utf8(x, &lo)) {
			return;
		}
		if (kind == 2)
			continue;
		uint32_t hi = lo;
		if (x->p + 1 < x->end && *x->p == '-' && x->p[1] != ']') {
			x->p++;
			if (*x->p == '\\') {
				x->p++;
				if (rx_escape(x, &s, &hi) != 1) {
					rx_fail(x, "a class escape cannot end a range");
					return;
				}
			} else if (!rx_utf8(x, &hi)) {
				return;
			}
			if (hi < lo) {
				rx_fail(x, "a range out of order");
				return;
			}
		}
		rx_set_add(x, &s, lo, hi);
	}
	if (neg)
		rx_set_negate(x, &s);
	if (!x->failed)
		rx_put_set(x, b, &s);
}

/* A quantifier after an atom; *min, *max (-1: none); false when none is
 * there. */
static bool rx_quant(rx_t *x, long *min, long *max)
{
	if (x->p >= x->end)
		return false;
	char q = *x->p;
	if (q == '*' || q == '+' || q == '?') {
		x->p++;
		*min = q == '+';
		*max = q == '?' ? 1 : -1;
	} else if (q == '{') {
		const char *save = x->p;
		x->p++;
		char *endp;
		long m = strtol(x->p, &endp, 10);
		if (endp == x->p || m < 0) {
			x->p = save;
			rx_fail(x, "a malformed {m,n}");
			return false;
		}
		x->p = endp;
		long n = m;
		if (x->p < x->end && *x->p == ',') {
			x->p++;
			n = -1;
			if (x->p < x->end && *x->p != '}') {
				n = strtol(x->p, &endp, 10);
				if (endp == x->p || n < m) {
					rx_fail(x, "a malformed {m,n}");
					return false;
				}
				x->p = endp;
			}
		}
		if (x->p >= x->end || *x->p != '}') {
			rx_fail(x, "a malformed {m,n}");
			return false;
		}
		x->p++;
		if (m > x->max_repeat || n > x->max_repeat) {
			rx_fail(x, "a repetition count past %ld", x->max_repeat);
			return false;
		}
		*min = m;
		*max = n;
	} else {
		return false;
	}
	if (x->p < x->end && *x->p == '?') /* lazy: the same strings */
		x->p++;
	else if (x->p < x->end && *x->p == '+')
		rx_fail(x, "possessive quantifiers are not supported");
	return true;
}

static void rx_put_repeat(rx_buf_t *b, long min, long max)
{
	if (max < 0)
		rx_printf(b, min == 0 ? "*" : min == 1 ? "+" : "{%ld,}", min);
	else if (min == 0 && max == 1)
		rx_puts(b, "?");
	else if (min == max)
		rx_printf(b, "{%ld}", min);
	else
		rx_printf(b, "{%ld,%ld}", min, max);
}

/* One atom into a (its own GBNF token); a literal code point sets *lit. */
static void rx_atom(rx_t *x, rx_buf_t *a, bool *lit, uint32_t *cp)
{
	*lit = false;
	char ch = *x->p;
	if (ch == '(') {
		x->p++;
		if (x->p < x->end && *x->p == '?') {
			if (x->p + 1 < x->end && x->p[1] == ':') {
				x->p += 2;
			} else {
				rx_fail(x, "lookaround, named groups and flags are not supported");
				return;
			}
		}
		if (++x->depth > RX_DEPTH_MAX) {
			rx_fail(x, "groups nested deeper than %d", RX_DEPTH_MAX);
			return;
		}
		rx_puts(a, "(");
		rx_alt(x, a);
		rx_puts(a, ")");
		x->depth--;
		if (x->failed)
			return;
		if (x->p >= x->end || *x->p != ')') {
			rx_fail(x, "an unclosed group");
			return;
		}
		x->p++;
	} else if (ch == '[') {
		x->p++;
		rx_class(x, a);
	} else if (ch == '.') {
		x->p++;
		rx_set_t s = {.n = 0};
		rx_set_add(x, &s, '\n', '\n');
		rx_set_add(x, &s, '\r', '\r');
		rx_set_add(x, &s, 0x2028, 0x2029);
		rx_set_negate(x, &s);
		rx_put_set(x, a, &s);
	} else if (ch == '\\') {
		x->p++;
		rx_set_t s = {.n = 0};
		int kind = rx_escape(x, &s, cp);
		if (kind == 2)
			rx_put_set(x, a, &s);
		*lit = kind == 1;
	} else if (ch == '^' || ch == '$') {
		rx_fail(x, "an anchor inside the pattern");
	} else if (ch == '*' || ch == '+' || ch == '?' || ch == '{') {
		rx_fail(x, "a quantifier with nothing to repeat");
	} else if (ch == ')') {
		rx_fail(x, "an unmatched ')'");
	} else {
		*lit = rx_utf8(x, cp);
	}
}

/* A sequence up to '|' or ')' or the end; consecutive unquantified
 * literals merge into one GBNF string. */
static void rx_seq(rx_t *x, rx_buf_t *b)
{
	rx_buf_t pend = {0}; /* the literal being merged, escaped */
	bool first = true;
	while (!x->failed && x->p < x->end && *x->p != '|' && *x->p != ')') {
		rx_buf_t a = {0};
		bool lit;
		uint32_t cp = 0;
		rx_atom(x, &a, &lit, &cp);
		long min, max;
		bool quant = !x->failed && rx_quant(x, &min, &max);
		if (lit && !quant) {
			rx_put_json_cp(&pend, cp);
		} else {
			if (pend.n) {
				rx_printf(b, "%s\"", first ? "" : " ");
				rx_puts(b, pend.s);
				rx_puts(b, "\"");
				pend.n = 0;
				first = false;
			}
			if (lit) {
				rx_puts(&a, "\"");
				rx_put_json_cp(&a, cp);
				rx_puts(&a, "\"");
			}
			rx_puts(b, first ? "" : " ");
			if (a.s)
				rx_puts(b, a.s);
			if (quant)
				rx_put_repeat(b, min, max);
			first = false;
		}
		b->failed |= a.failed;
		free(a.s);
	}
	if (pend.n) {
		rx_printf(b, "%s\"", first ? "" : " ");
		rx_puts(b, pend.s);
		rx_puts(b, "\"");
	}
	b->failed |= pend.failed;
	free(pend.s);
}

/* Alternatives separated by '|', up to ')' or the end. */
static void rx_alt(rx_t *x, rx_buf_t *b)
{
	rx_seq(x, b);
	while (!x->failed && x->p < x->end && *x->p == '|') {
		x->p++;
		rx_puts(b, " | ");
		rx_seq(x, b);
	}
}

char *json_regex_to_gbnf(const char *re, long max_repeat, char *why, size_t why_len)
{
	size_t n = strlen(re);
	size_t bs = 0; /* backslashes before the final '$' */
	while (n >= 2 && bs + 2 <= n && re[n - 2 - bs] == '\\')
		bs++;
	if (n < 2 || re[0] != '^' || re[n - 1] != '$' || bs % 2) {
		snprintf(why, why_len, "pattern \"%s\": only patterns anchored as ^...$ are supported", re);
		return NULL;
	}
	rx_t x = {.p = re + 1, .end = re + n - 1, .start = re, .max_repeat = max_repeat,
		  .why = why, .why_len = why_len};
	rx_buf_t b = {0};
	rx_puts(&b, "(");
	rx_alt(&x, &b);
	rx_puts(&b, ")");
	if (!x.failed && x.p < x.end)
		rx_fail(&x, "an unmatched ')'");
	if (!x.failed && b.failed)
		snprintf(why, why_len, "out of memory");
	if (x.failed || b.failed) {
		free(b.s);
		return NULL;
	}
	return b.s;
}
