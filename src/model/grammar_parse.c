/* grammar_parse: GBNF text -> grammar_t (grammar.h has the syntax,
 * grammar_impl.h the form). A recursive-descent parser that follows
 * llama.cpp's (src/llama-grammar.cpp): the same names ([a-zA-Z0-9-]), the
 * same rewriting of groups and repetitions into generated rules, the same
 * places where a newline may or may not end a rule. Where llama.cpp
 * accepts something silently wrong (a rule defined twice, an empty
 * character class, {m,n} with n < m, a rule that no finite text
 * matches) this parser refuses it. Every error names its line and column. */
#include "model/grammar_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/base.h"

/* llama.cpp's bound on a repetition count; above it {m,n} is refused
 * (m) or unbounded (n), as there. */
#define REP_MAX 2000
/* The most elements a grammar may expand to (repetitions copy theirs). */
#define ELEMS_MAX (1u << 22)
/* The most rules (generated ones included). */
#define RULES_MAX (1 << 20)
/* The longest chain of rules each referred to at the start of the one
 * before: the checks below and the matcher's expansion recurse along such
 * chains, so this bounds their stack (a few hundred KiB). */
#define CHAIN_MAX 2048
/* The deepest nesting of parentheses (the parser recurses into each). */
#define NESTING_MAX 256

typedef struct rulebuf {
	gelem_t *e;
	uint32_t n, cap;
} rulebuf_t;

typedef struct rule_info {
	char *name;         /* as written, or "<base>_<id>" for generated ones */
	const char *def_at; /* where it is defined (generated: the group or
			       repetition), NULL until then */
	const char *ref_at; /* its first reference */
	int32_t base;       /* the written rule a generated one belongs to */
	rulebuf_t body;
	bool defined;
} rule_info_t;

typedef struct parser {
	const char *text;
	rule_info_t *rules;
	int32_t n_rules, cap_rules;
	uint64_t n_elems;   /* all bodies together */
	int nesting;        /* parentheses open (the parser recurses) */
	bool failed;        /* an error is recorded (the first one counts) */
} parser_t;

/* ---- errors with a position ---- */

/* Records "grammar: line L, column C: what" for position at (the first
 * error only); returns NULL so callers can `return perr(...)`. */
static const char *perr(parser_t *p, const char *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static const char *perr(parser_t *p, const char *at, const char *fmt, ...)
{
	if (p->failed)
		return NULL;
	p->failed = true;
	int line = 1, col = 1;
	for (const char *c = p->text; at && c < at && *c; c++) {
		if (*c == '\n') {
			line++;
			col = 1;
		} else if (((unsigned char)*c & 0xC0) != 0x80) {
			col++; /* columns count characters, not bytes */
		}
	}
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	err_set("grammar: line %d, column %d: %s", line, col, what);
	return NULL;
}

/* A short quote of the text at pos for messages: the character there, or
 * "the end". */
static void quote_at(const char *pos, char *out, size_t cap)
{
	if (!*pos) {
		snprintf(out, cap, "the end of the grammar");
		return;
	}
	if (*pos == '\n' || *pos == '\r') {
		snprintf(out, cap, "a newline");
		return;
	}
	size_t n = 1;
	while (n < 4 && (((unsigned char)pos[n]) & 0xC0) == 0x80)
		n++;
	snprintf(out, cap, "'%.*s'", (int)n, pos);
}

/* ---- rules and their bodies ---- */

static int rulebuf_push(parser_t *p, rulebuf_t *b, uint32_t type, uint32_t value)
{
	if (p->n_elems >= ELEMS_MAX) {
		perr(p, NULL, "the grammar expands to more than %u elements "
		     "(repetition counts too large)", ELEMS_MAX);
		return -1;
	}
	if (b->n == b->cap) {
		uint32_t cap = b->cap ? b->cap * 2 : 16;
		gelem_t *e = eg_realloc(b->e, cap * sizeof *e);
		if (!e) {
			p->failed = true;
			err_sys("grammar: cannot allocate a rule");
			return -1;
		}
		b->e = e;
		b->cap = cap;
	}
	b->e[b->n++] = (gelem_t){type, value};
	p->n_elems++;
	return 0;
}

/* A new rule named name (len bytes); its id, or -1 (memory, too many). */
static int32_t rule_add(parser_t *p, const char *name, size_t len)
{
	if (p->n_rules >= RULES_MAX) {
		perr(p, NULL, "more than %d rules", RULES_MAX);
		return -1;
	}
	if (p->n_rules == p->cap_rules) {
		int32_t cap = p->cap_rules ? p->cap_rules * 2 : 16;
		rule_info_t *r = eg_realloc(p->rules, (size_t)cap * sizeof *r);
		if (!r) {
			p->failed = true;
			err_sys("grammar: cannot allocate the rules");
			return -1;
		}
		p->rules = r;
		p->cap_rules = cap;
	}
	char *copy = eg_malloc(len + 1);
	if (!copy) {
		p->failed = true;
		err_sys("grammar: cannot allocate a rule name");
		return -1;
	}
	memcpy(copy, name, len);
	copy[len] = 0;
	p->rules[p->n_rules] = (rule_info_t){.name = copy, .base = p->n_rules};
	return p->n_rules++;
}

/* The id of the rule named name (len bytes), made on first sight; -1. */
static int32_t rule_find(parser_t *p, const char *name, size_t len)
{
	for (int32_t i = 0; i < p->n_rules; i++)
		if (strlen(p->rules[i].name) == len &&
		    !memcmp(p->rules[i].name, name, len))
			return i;
	return rule_add(p, name, len);
}

/* A generated rule for base (a group or repetition inside rule base). */
static int32_t rule_generate(parser_t *p, int32_t base, const char *at)
{
	char name[96];
	int n = snprintf(name, sizeof name, "%.60s_%d", p->rules[base].name,
			 p->n_rules);
	int32_t id = rule_add(p, name, (size_t)n);
	if (id >= 0) {
		p->rules[id].def_at = at;
		p->rules[id].ref_at = at;
		p->rules[id].base = p->rules[base].base;
	}
	return id;
}

/* Stores body b as the definition of rule id (b's memory moves). */
static void rule_define(parser_t *p, int32_t id, rulebuf_t *b)
{
	p->rules[id].body = *b;
	p->rules[id].defined = true;
	*b = (rulebuf_t){0};
}

/* ---- lexical pieces ---- */

static bool is_word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
	       (c >= '0' && c <= '9');
}

/* Skips blanks and comments, and newlines when newline_ok. */
static const char *skip_space(const char *pos, bool newline_ok)
{
	while (*pos == ' ' || *pos == '\t' || *pos == '#' ||
	       (newline_ok && (*pos == '\r' || *pos == '\n'))) {
		if (*pos == '#')
			while (*pos && *pos != '\r' && *pos != '\n')
				pos++;
		else
			pos++;
	}
	return pos;
}

/* n hex digits at pos into *v; the position after them, or NULL. */
static const char *parse_hex(parser_t *p, const char *pos, int n, uint32_t *v)
{
	uint32_t x = 0;
	for (int i = 0; i < n; i++) {
		char c = pos[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;
		if (d < 0)
			return perr(p, pos + i, "expecting %d hex digits in the "
				    "escape", n);
		x = x << 4 | (uint32_t)d;
	}
	if (x > 0x10FFFF)
		return perr(p, pos, "code point U+%X is beyond U+10FFFF", x);
	*v = x;
	return pos + n;
}

/* One UTF-8 character of the grammar text at pos into *cp; NULL if the
 * text is not UTF-8 there. */
static const char *parse_utf8(parser_t *p, const char *pos, uint32_t *cp)
{
	const unsigned char *s = (const unsigned char *)pos;
	int n = s[0] < 0x80 ? 1 : s[0] >= 0xC2 && s[0] <= 0xDF ? 2
		: s[0] >= 0xE0 && s[0] <= 0xEF ? 3 : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
	if (!n)
		return perr(p, pos, "invalid UTF-8 in the grammar");
	uint32_t v = n == 1 ? s[0] : s[0] & (0x7Fu >> n);
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return perr(p, pos, "invalid UTF-8 in the grammar");
		v = v << 6 | (s[i] & 0x3Fu);
	}
	static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
	if (v < min[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return perr(p, pos, "invalid UTF-8 in the grammar");
	*cp = v;
	return pos + n;
}

/* One character of a literal or class, escapes decoded; NULL on error. */
static const char *parse_char(parser_t *p, const char *pos, uint32_t *cp)
{
	if (*pos != '\\')
		return parse_utf8(p, pos, cp);
	switch (pos[1]) {
	case 'x': return parse_hex(p, pos + 2, 2, cp);
	case 'u': return parse_hex(p, pos + 2, 4, cp);
	case 'U': return parse_hex(p, pos + 2, 8, cp);
	case 't': *cp = '\t'; return pos + 2;
	case 'r': *cp = '\r'; return pos + 2;
	case 'n': *cp = '\n'; return pos + 2;
	case '\\': case '"': case '[': case ']': case '-':
		*cp = (unsigned char)pos[1];
		return pos + 2;
	case 0:
		return perr(p, pos, "a backslash at the end of the grammar");
	default: {
		int n = 1; /* the escaped character, whole */
		while (n < 4 && (((unsigned char)pos[1 + n]) & 0xC0) == 0x80)
			n++;
		return perr(p, pos, "unknown escape '\\%.*s'", n, pos + 1);
	}
	}
}

/* ---- the grammar ---- */

static const char *parse_alternates(parser_t *p, const char *pos, int32_t rule,
				    int32_t id, bool nested);

/* Rewrites the last item b->e[last..n) as it repeated min..max times
 * (max UINT32_MAX: unbounded), llama.cpp's rewriting:
 *   S{m,n} -> S (m times) S'(n-m)   with S'(x) ::= S S'(x-1) |   S'(1) ::= S |
 *   S{m,}  -> S (m times) S'        with S' ::= S S' |
 * so S* is S{0,}, S+ is S{1,}, S? is S{0,1}. 0 or -1. */
static int repeat_item(parser_t *p, rulebuf_t *b, uint32_t last, uint32_t min,
		       uint32_t max, int32_t rule, const char *at)
{
	bool unbounded = max == UINT32_MAX;
	uint32_t n_item = b->n - last;
	gelem_t *item = eg_malloc((n_item ? n_item : 1) * sizeof *item);
	if (!item) {
		p->failed = true;
		err_sys("grammar: cannot allocate a repetition");
		return -1;
	}
	memcpy(item, b->e + last, n_item * sizeof *item);
	int rc = 0;
	if (min == 0) {
		p->n_elems -= n_item;
		b->n = last;
	}
	for (uint32_t i = 1; i < min && rc == 0; i++)
		for (uint32_t k = 0; k < n_item && rc == 0; k++)
			rc = rulebuf_push(p, b, item[k].type, item[k].value);
	uint32_t n_opt = unbounded ? 1 : max - min;
	int32_t prev = -1;
	for (uint32_t i = 0; i < n_opt && rc == 0; i++) {
		int32_t id = rule_generate(p, rule, at);
		rulebuf_t r = {0};
		rc = id < 0 ? -1 : 0;
		for (uint32_t k = 0; k < n_item && rc == 0; k++)
			rc = rulebuf_push(p, &r, item[k].type, item[k].value);
		if (rc == 0 && (i > 0 || unbounded))
			rc = rulebuf_push(p, &r, GE_REF, (uint32_t)(unbounded ? id : prev));
		if (rc == 0)
			rc = rulebuf_push(p, &r, GE_ALT, 0);
		if (rc == 0)
			rc = rulebuf_push(p, &r, GE_END, 0);
		if (rc == 0)
			rule_define(p, id, &r);
		free(r.e);
		prev = id;
	}
	if (rc == 0 && n_opt > 0)
		rc = rulebuf_push(p, b, GE_REF, (uint32_t)prev);
	free(item);
	return rc;
}

/* A decimal count at pos into *v (at most REP_MAX + 1: larger is capped);
 * NULL when no digit is there. */
static const char *parse_count(parser_t *p, const char *pos, uint32_t *v)
{
	if (*pos < '0' || *pos > '9')
		return perr(p, pos, "expecting a number in the repetition {m,n}");
	uint64_t x = 0;
	while (*pos >= '0' && *pos <= '9') {
		if (x <= REP_MAX)
			x = x * 10 + (uint64_t)(*pos - '0');
		pos++;
	}
	*v = x > REP_MAX ? REP_MAX + 1 : (uint32_t)x;
	return pos;
}

/* {m}, {m,}, {m,n} at pos (after '{') into *min, *max; NULL on error. */
static const char *parse_braces(parser_t *p, const char *open, bool nested,
				uint32_t *min, uint32_t *max)
{
	const char *pos = skip_space(open + 1, nested);
	if (!(pos = parse_count(p, pos, min)))
		return NULL;
	pos = skip_space(pos, nested);
	*max = *min;
	if (*pos == ',') {
		pos = skip_space(pos + 1, nested);
		*max = UINT32_MAX;
		if (*pos >= '0' && *pos <= '9') {
			if (!(pos = parse_count(p, pos, max)))
				return NULL;
			pos = skip_space(pos, nested);
		}
	}
	if (*pos != '}') {
		char q[32];
		quote_at(pos, q, sizeof q);
		return perr(p, pos, "expecting ',' or '}' in the repetition, not %s", q);
	}
	if (*min > REP_MAX)
		return perr(p, open, "repetition count %u is above %d", *min, REP_MAX);
	if (*max != UINT32_MAX && *max > REP_MAX)
		*max = UINT32_MAX; /* llama.cpp reads a huge bound as none */
	if (*max < *min)
		return perr(p, open, "repetition {%u,%u}: the maximum is below the "
			    "minimum", *min, *max);
	return pos + 1;
}

/* A string literal "..." at pos into b; the position after it or NULL. */
static const char *parse_literal(parser_t *p, const char *pos, rulebuf_t *b)
{
	const char *open = pos++;
	while (*pos != '"') {
		if (!*pos || *pos == '\n' || *pos == '\r')
			return perr(p, open, "unterminated string literal");
		uint32_t cp;
		if (!(pos = parse_char(p, pos, &cp)) ||
		    rulebuf_push(p, b, GE_CHAR, cp) < 0)
			return NULL;
	}
	return pos + 1;
}

/* A character class [...] or [^...] at pos into b. */
static const char *parse_class(parser_t *p, const char *pos, rulebuf_t *b)
{
	const char *open = pos++;
	uint32_t first = GE_CHAR, start = b->n;
	if (*pos == '^') {
		first = GE_CHAR_NOT;
		pos++;
	}
	while (*pos != ']') {
		if (!*pos || *pos == '\n' || *pos == '\r')
			return perr(p, open, "unterminated character class");
		uint32_t lo, hi;
		const char *at = pos;
		if (!(pos = parse_char(p, pos, &lo)) ||
		    rulebuf_push(p, b, b->n > start ? GE_CHAR_ALT : first, lo) < 0)
			return NULL;
		if (pos[0] == '-' && pos[1] != ']') {
			if (!pos[1] || pos[1] == '\n')
				return perr(p, open, "unterminated character class");
			if (!(pos = parse_char(p, pos + 1, &hi)))
				return NULL;
			if (hi < lo)
				return perr(p, at, "range U+%04X-U+%04X is empty (the "
					    "end is below the start)", lo, hi);
			if (rulebuf_push(p, b, GE_RNG_UPPER, hi) < 0)
				return NULL;
		}
	}
	if (b->n == start)
		return perr(p, open, "empty character class");
	return pos + 1;
}

/* One sequence of items (up to '|', ')', a newline outside parentheses,
 * or anything else that cannot start an item) into b. */
static const char *parse_sequence(parser_t *p, const char *pos, int32_t rule,
				  rulebuf_t *b, bool nested)
{
	uint32_t last = b->n; /* where the last item starts (last == n: none) */
	while (*pos && !p->failed) {
		const char *at = pos;
		uint32_t min = 0, max = 0;
		if (*pos == '"') {
			last = b->n;
			pos = parse_literal(p, pos, b);
		} else if (*pos == '[') {
			last = b->n;
			pos = parse_class(p, pos, b);
		} else if (*pos == '.') {
			last = b->n;
			pos = rulebuf_push(p, b, GE_ANY, 0) < 0 ? NULL : pos + 1;
		} else if (is_word_char(*pos)) {
			const char *end = pos;
			while (is_word_char(*end))
				end++;
			int32_t id = rule_find(p, pos, (size_t)(end - pos));
			if (id < 0)
				return NULL;
			if (!p->rules[id].ref_at)
				p->rules[id].ref_at = pos;
			last = b->n;
			pos = rulebuf_push(p, b, GE_REF, (uint32_t)id) < 0 ? NULL : end;
		} else if (*pos == '(') {
			if (p->nesting >= NESTING_MAX)
				return perr(p, pos, "parentheses nest deeper than %d",
					    NESTING_MAX);
			int32_t id = rule_generate(p, rule, pos);
			if (id < 0)
				return NULL;
			p->nesting++;
			pos = parse_alternates(p, skip_space(pos + 1, true), rule, id, true);
			p->nesting--;
			if (!pos)
				return NULL;
			if (*pos != ')') {
				char q[32];
				quote_at(pos, q, sizeof q);
				return perr(p, pos, "expecting ')' to close the group opened "
					    "before, not %s", q);
			}
			last = b->n;
			pos = rulebuf_push(p, b, GE_REF, (uint32_t)id) < 0 ? NULL : pos + 1;
		} else if (*pos == '*' || *pos == '+' || *pos == '?' || *pos == '{') {
			if (*pos == '{') {
				pos = parse_braces(p, pos, nested, &min, &max);
			} else {
				min = *pos == '+';
				max = *pos == '?' ? 1 : UINT32_MAX;
				pos++;
			}
			if (!pos)
				return NULL;
			if (last == b->n)
				return perr(p, at, "'%c' follows nothing it could repeat", *at);
			if (repeat_item(p, b, last, min, max, rule, at) < 0)
				return NULL;
			/* last stays: x*? repeats the x* (llama.cpp's) */
		} else if (*pos == '<' || *pos == '!') {
			return perr(p, pos, "token references (<...>, !<...>) are not "
				    "supported");
		} else {
			break;
		}
		if (!pos)
			return NULL;
		pos = skip_space(pos, nested);
	}
	return p->failed ? NULL : pos;
}

/* Alternatives a | b | ... as the body of rule id (inside rule `rule`). */
static const char *parse_alternates(parser_t *p, const char *pos, int32_t rule,
				    int32_t id, bool nested)
{
	rulebuf_t b = {0};
	pos = parse_sequence(p, pos, rule, &b, nested);
	while (pos && *pos == '|') {
		if (rulebuf_push(p, &b, GE_ALT, 0) < 0) {
			pos = NULL;
			break;
		}
		pos = parse_sequence(p, skip_space(pos + 1, true), rule, &b, nested);
	}
	if (pos && rulebuf_push(p, &b, GE_END, 0) < 0)
		pos = NULL;
	if (pos)
		rule_define(p, id, &b);
	free(b.e);
	return pos;
}

/* One rule `name ::= body` and the newline after it. */
static const char *parse_rule(parser_t *p, const char *pos)
{
	char q[32];
	const char *name = pos, *end = pos;
	while (is_word_char(*end))
		end++;
	if (end == name) {
		quote_at(pos, q, sizeof q);
		return perr(p, pos, "expecting a rule name, not %s", q);
	}
	pos = skip_space(end, false);
	if (strncmp(pos, "::=", 3) != 0) {
		quote_at(pos, q, sizeof q);
		return perr(p, pos, "expecting '::=' after the rule name '%.*s', not %s",
			    (int)(end - name), name, q);
	}
	int32_t id = rule_find(p, name, (size_t)(end - name));
	if (id < 0)
		return NULL;
	if (p->rules[id].defined)
		return perr(p, name, "rule '%s' is defined twice", p->rules[id].name);
	p->rules[id].def_at = name;
	pos = parse_alternates(p, skip_space(pos + 3, true), id, id, false);
	if (!pos)
		return NULL;
	if (*pos == '\r')
		pos += pos[1] == '\n' ? 2 : 1;
	else if (*pos == '\n')
		pos++;
	else if (*pos) {
		quote_at(pos, q, sizeof q);
		return perr(p, pos, "unexpected %s in rule '%s'", q, p->rules[id].name);
	}
	return skip_space(pos, true);
}

/* ---- checks on the whole grammar ---- */

static bool elem_is_end(const gelem_t *e)
{
	return e->type == GE_END || e->type == GE_ALT;
}

/* For every rule: nullable (matches the empty text) and productive
 * (matches some finite text), each a least fixpoint over the rules. */
static void rules_props(const parser_t *p, bool *nullable, bool *productive)
{
	for (bool changed = true; changed;) {
		changed = false;
		for (int32_t r = 0; r < p->n_rules; r++) {
			const gelem_t *e = p->rules[r].body.e;
			bool alt_null = true, alt_prod = true;
			for (;; e++) {
				if (elem_is_end(e)) {
					if (alt_null && !nullable[r])
						nullable[r] = changed = true;
					if (alt_prod && !productive[r])
						productive[r] = changed = true;
					if (e->type == GE_END)
						break;
					alt_null = alt_prod = true;
				} else if (e->type == GE_REF) {
					alt_null &= nullable[e->value];
					alt_prod &= productive[e->value];
				} else if (e->type != GE_RNG_UPPER && e->type != GE_CHAR_ALT) {
					alt_null = false;
				}
			}
		}
	}
}

/* The user-visible name of rule r: a generated rule names its base. */
static const char *rule_shown(const parser_t *p, int32_t r)
{
	return p->rules[p->rules[r].base].name;
}

/* Depth-first search for a rule that reaches itself through references
 * at the start of an alternative (after nullable ones only): state 0
 * unseen, 1 on the path, 2 done. Returns the rule found on a cycle, -1
 * none, -2 when the chain is longer than CHAIN_MAX (the error recorded). */
static int32_t left_rec_visit(parser_t *p, const bool *nullable,
			      uint8_t *state, int32_t r, int depth)
{
	if (state[r] == 1)
		return r;
	if (state[r] == 2)
		return -1;
	if (depth > CHAIN_MAX) {
		perr(p, p->rules[r].def_at, "more than %d rules each start the one "
		     "before (at rule '%s')", CHAIN_MAX, rule_shown(p, r));
		return -2;
	}
	state[r] = 1;
	bool at_start = true;
	for (const gelem_t *e = p->rules[r].body.e;; e++) {
		if (elem_is_end(e)) {
			if (e->type == GE_END)
				break;
			at_start = true;
		} else if (at_start && e->type == GE_REF) {
			int32_t hit = left_rec_visit(p, nullable, state, (int32_t)e->value,
						     depth + 1);
			if (hit != -1)
				return hit;
			at_start = nullable[e->value];
		} else {
			at_start = false;
		}
	}
	state[r] = 2;
	return -1;
}

/* Whether rule r reaches rule target through references to rules that
 * are not productive (seen: the rules visited). */
static bool unproductive_reach(const parser_t *p, const bool *productive,
			       uint8_t *seen, int32_t r, int32_t target, int depth)
{
	if (depth > CHAIN_MAX)
		return false; /* the caller blames the first such rule */
	for (const gelem_t *e = p->rules[r].body.e; e->type != GE_END; e++) {
		if (e->type != GE_REF || productive[e->value])
			continue;
		if ((int32_t)e->value == target)
			return true;
		if (!seen[e->value]) {
			seen[e->value] = 1;
			if (unproductive_reach(p, productive, seen, (int32_t)e->value, target,
					       depth + 1))
				return true;
		}
	}
	return false;
}

/* The rule to blame when some rule never ends: one on a cycle of such
 * rules (the others only refer to it), the first in definition order. */
static int32_t unproductive_culprit(const parser_t *p, const bool *productive,
				    uint8_t *seen)
{
	int32_t first = -1;
	for (int32_t r = 0; r < p->n_rules; r++) {
		if (productive[r])
			continue;
		if (first < 0)
			first = r;
		memset(seen, 0, (size_t)p->n_rules);
		if (unproductive_reach(p, productive, seen, r, r, 0))
			return r;
	}
	return first;
}

/* Undefined rules, the root, left recursion, rules that never end. */
static int grammar_check(parser_t *p, int32_t *root)
{
	for (int32_t r = 0; r < p->n_rules; r++)
		if (!p->rules[r].defined)
			return perr(p, p->rules[r].ref_at, "undefined rule '%s'",
				    p->rules[r].name), -1;
	*root = -1;
	for (int32_t r = 0; r < p->n_rules; r++)
		if (!strcmp(p->rules[r].name, "root"))
			*root = r;
	if (*root < 0)
		return perr(p, p->text, "no rule named 'root' (the start rule)"), -1;
	bool *nullable = eg_calloc((size_t)p->n_rules * 2, sizeof(bool));
	uint8_t *state = eg_calloc((size_t)p->n_rules, 1);
	if (!nullable || !state) {
		free(nullable);
		free(state);
		p->failed = true;
		return err_sys("grammar: cannot allocate the checks");
	}
	bool *productive = nullable + p->n_rules;
	rules_props(p, nullable, productive);
	int rc = 0;
	for (int32_t r = 0; r < p->n_rules && rc == 0; r++) {
		int32_t hit = left_rec_visit(p, nullable, state, r, 0);
		if (hit == -2)
			rc = -1;
		else if (hit >= 0) {
			perr(p, p->rules[hit].def_at, "rule '%s' is left-recursive (it "
			     "can reach itself before matching a character; llama.cpp "
			     "refuses this too)", rule_shown(p, hit));
			rc = -1;
		}
	}
	int32_t never = rc == 0 ? unproductive_culprit(p, productive, state) : -1;
	if (never >= 0) {
		perr(p, p->rules[never].def_at, "rule '%s' can never end (no finite "
		     "text matches it)", rule_shown(p, never));
		rc = -1;
	}
	free(nullable);
	free(state);
	return rc;
}

/* The parsed rules as one grammar_t; NULL + err_get(). */
static grammar_t *grammar_build(parser_t *p, int32_t root)
{
	grammar_t *g = eg_calloc(1, sizeof *g);
	if (g) {
		g->el = eg_malloc((size_t)(p->n_elems ? p->n_elems : 1) * sizeof *g->el);
		g->rule_at = eg_malloc((size_t)p->n_rules * sizeof *g->rule_at);
	}
	if (!g || !g->el || !g->rule_at) {
		grammar_free(g);
		err_sys("grammar: cannot allocate the grammar");
		return NULL;
	}
	uint32_t n = 0;
	for (int32_t r = 0; r < p->n_rules; r++) {
		g->rule_at[r] = n;
		memcpy(g->el + n, p->rules[r].body.e, p->rules[r].body.n * sizeof *g->el);
		n += p->rules[r].body.n;
	}
	g->n_el = n;
	g->n_rules = p->n_rules;
	g->root = (uint32_t)root;
	return g;
}

grammar_t *grammar_parse(const char *text)
{
	parser_t p = {.text = text};
	const char *pos = skip_space(text, true);
	if (!*pos)
		perr(&p, pos, "empty grammar (no rules)");
	while (pos && *pos)
		pos = parse_rule(&p, pos);
	int32_t root = -1;
	grammar_t *g = NULL;
	if (!p.failed && grammar_check(&p, &root) == 0)
		g = grammar_build(&p, root);
	for (int32_t r = 0; r < p.n_rules; r++) {
		free(p.rules[r].name);
		free(p.rules[r].body.e);
	}
	free(p.rules);
	return g;
}

grammar_t *grammar_load(const char *path)
{
	size_t n;
	char *text = file_read_as("grammar", path, &n);
	if (!text)
		return NULL;
	grammar_t *g = NULL;
	if (memchr(text, 0, n))
		err_set("grammar %s: the file contains a NUL byte", path);
	else
		g = grammar_parse(text);
	if (!g) { /* "grammar FILE: line L, ..." rather than two prefixes */
		char msg[512];
		const char *m = err_get();
		snprintf(msg, sizeof msg, "%s",
			 strncmp(m, "grammar: ", 9) ? m : m + 9);
		err_set("grammar %s: %s", path, msg);
	}
	free(text);
	return g;
}

void grammar_free(grammar_t *g)
{
	if (!g)
		return;
	free(g->el);
	free(g->rule_at);
	free(g);
}

int32_t grammar_n_rules(const grammar_t *g) { return g->n_rules; }
