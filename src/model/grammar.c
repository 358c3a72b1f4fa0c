/* grammar: the matcher and the token mask (grammar.h; the parser is
 * grammar_parse.c, the element form grammar_impl.h).
 *
 * A matcher state (mstate_t) is a set of stacks plus a pending partial
 * UTF-8 character. A stack is a list of grammar positions, its top the
 * next character set to match, as llama.cpp's; here each stack is an
 * interned persistent list (node = (top position, rest)), node 0 the
 * empty stack (the text is complete), so pushing and popping are
 * look-ups and two stacks are equal when their ids are. Sets of stacks
 * are interned too (a sorted id list), and a set's transition on a code
 * point is remembered (ASCII in a per-set table, the rest in a hash
 * table), so a state seen before advances by one look-up per character.
 * The interned tables grow with the distinct stacks a sequence meets and
 * belong to its grammar_state_t.
 *
 * The mask: the vocabulary is a trie in preorder (each node its byte, its
 * depth, the index after its subtree, the tokens ending there); one walk
 * advances the state byte by byte, skipping a subtree where the state
 * dies, and marks the tokens of every node reached alive. The resulting
 * bit set is cached per state, so a state that recurs (inside a JSON
 * string, between digits) costs one pass over the bits. */
#include "model/grammar_impl.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/base.h"

#define NONE UINT32_MAX /* an interning that ran out of memory */

/* ---- the vocabulary ---- */

enum {
	VT_NEVER,   /* never allowed (empty, unused, a dropped control byte,
		       outside the tokenizer) */
	VT_TEXT,    /* its bytes are in the trie */
	VT_EOS,     /* the end-of-sequence token */
	VT_CONTROL, /* a control token: an end token with control_ends */
};

struct grammar_vocab {
	int32_t n_logits;
	uint8_t *kind;       /* (n_logits) VT_* */
	uint32_t *tok_off;   /* (n_logits + 1) each token's bytes in bytes */
	char *bytes;
	/* the trie in preorder; node 0 is the root (the empty prefix) */
	uint32_t n_nodes;
	uint8_t *nbyte;      /* (n_nodes) the byte that leads to the node */
	uint16_t *ndepth;    /* (n_nodes) its depth (root 0) */
	uint32_t *nskip;     /* (n_nodes) the node after its subtree */
	uint32_t *ntok;      /* (n_nodes + 1) its tokens: tids[ntok[i]..ntok[i+1]) */
	int32_t *tids;
	uint32_t max_depth;
};

/* The longest token text the trie takes; longer ones are never allowed. */
#define TOKEN_BYTES_MAX 1024

typedef struct tok_ref {
	const char *s;
	uint32_t n;
	int32_t id;
} tok_ref_t;

static int tok_ref_cmp(const void *a, const void *b)
{
	const tok_ref_t *x = a, *y = b;
	uint32_t n = x->n < y->n ? x->n : y->n;
	int c = memcmp(x->s, y->s, n);
	if (c)
		return c;
	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Whether the engine drops the text of a token that is this one byte
 * (engine.c text_clean: a control byte that is not whitespace). */
static bool byte_dropped(const char *s, uint32_t n)
{
	if (n != 1)
		return false;
	unsigned char c = (unsigned char)s[0];
	return (c < 0x20 && c != '\n' && c != '\t' && c != '\r' && c != '\v' &&
		c != '\f') || c == 0x7f;
}

/* Each token's kind and bytes into v (kind, tok_off, bytes); 0 or -1. */
static int vocab_read(grammar_vocab_t *v, const tokenizer_t *tok)
{
	int32_t n_tok = tokenizer_n_vocab(tok), eos = tokenizer_eos(tok);
	size_t cap = 1 << 16, len = 0;
	v->bytes = eg_malloc(cap);
	if (!v->bytes)
		return -1;
	char piece[TOKEN_BYTES_MAX + 1];
	for (int32_t id = 0; id < v->n_logits; id++) {
		v->tok_off[id] = (uint32_t)len;
		int32_t type = id < n_tok ? tokenizer_type(tok, id) : -1;
		int k = id < n_tok && id != eos && type != TOKENIZER_TYPE_CONTROL &&
				type != TOKENIZER_TYPE_UNUSED
			    ? tokenizer_decode(tok, -1, id, piece, sizeof piece)
			    : 0;
		v->kind[id] = id == eos		      ? VT_EOS
			      : type == TOKENIZER_TYPE_CONTROL ? VT_CONTROL
			      : k > 0 && k <= TOKEN_BYTES_MAX &&
					!byte_dropped(piece, (uint32_t)k)
				  ? VT_TEXT
				  : VT_NEVER;
		if (v->kind[id] != VT_TEXT)
			continue;
		if (len + (size_t)k > cap) {
			cap = (len + (size_t)k) * 2;
			char *b = eg_realloc(v->bytes, cap);
			if (!b)
				return -1;
			v->bytes = b;
		}
		memcpy(v->bytes + len, piece, (size_t)k);
		len += (size_t)k;
		if (len > UINT32_MAX / 2)
			return -1;
	}
	v->tok_off[v->n_logits] = (uint32_t)len;
	return 0;
}

/* The trie of the VT_TEXT tokens' bytes, in preorder, from the tokens
 * sorted by their bytes (a node's tokens come before its subtree's). */
static int vocab_trie(grammar_vocab_t *v)
{
	int32_t n = 0;
	for (int32_t id = 0; id < v->n_logits; id++)
		n += v->kind[id] == VT_TEXT;
	tok_ref_t *t = eg_malloc(((size_t)n + 1) * sizeof *t);
	size_t total = v->tok_off[v->n_logits];
	size_t cap_nodes = total + 1; /* at most one node per byte */
	v->nbyte = eg_malloc(cap_nodes);
	v->ndepth = eg_malloc(cap_nodes * sizeof *v->ndepth);
	v->nskip = eg_malloc(cap_nodes * sizeof *v->nskip);
	v->ntok = eg_malloc((cap_nodes + 1) * sizeof *v->ntok);
	v->tids = eg_malloc(((size_t)n + 1) * sizeof *v->tids);
	uint32_t path[TOKEN_BYTES_MAX + 1];
	if (!t || !v->nbyte || !v->ndepth || !v->nskip || !v->ntok || !v->tids) {
		free(t);
		return -1;
	}
	n = 0;
	for (int32_t id = 0; id < v->n_logits; id++)
		if (v->kind[id] == VT_TEXT)
			t[n++] = (tok_ref_t){v->bytes + v->tok_off[id],
					     v->tok_off[id + 1] - v->tok_off[id], id};
	qsort(t, (size_t)n, sizeof *t, tok_ref_cmp);
	uint32_t nn = 1, depth = 0, nt = 0;
	v->nbyte[0] = 0;
	v->ndepth[0] = 0;
	v->ntok[0] = 0;
	path[0] = 0;
	for (int32_t i = 0; i < n; i++) {
		uint32_t common = 0;
		if (i > 0) {
			uint32_t m = t[i].n < t[i - 1].n ? t[i].n : t[i - 1].n;
			while (common < m && t[i].s[common] == t[i - 1].s[common])
				common++;
		}
		while (depth > common) /* close the nodes below the common prefix */
			v->nskip[path[depth--]] = nn;
		for (; depth < t[i].n; depth++) {
			v->nbyte[nn] = (uint8_t)t[i].s[depth];
			v->ndepth[nn] = (uint16_t)(depth + 1);
			v->ntok[nn] = nt;
			path[depth + 1] = nn++;
		}
		v->tids[nt++] = t[i].id;
		if (depth > v->max_depth)
			v->max_depth = depth;
	}
	while (depth > 0)
		v->nskip[path[depth--]] = nn;
	v->nskip[0] = nn;
	/* ntok[i] was set when node i was made; a node's tokens end where the
	 * next node's begin */
	v->ntok[nn] = nt;
	v->n_nodes = nn;
	free(t);
	return 0;
}

grammar_vocab_t *grammar_vocab_new(const tokenizer_t *tok, int32_t n_logits)
{
	if (n_logits < 1) {
		err_set("grammar: a vocabulary of %d logits", n_logits);
		return NULL;
	}
	grammar_vocab_t *v = eg_calloc(1, sizeof *v);
	if (v) {
		v->n_logits = n_logits;
		v->kind = eg_calloc((size_t)n_logits, 1);
		v->tok_off = eg_malloc(((size_t)n_logits + 1) * sizeof *v->tok_off);
	}
	if (!v || !v->kind || !v->tok_off || vocab_read(v, tok) < 0 ||
	    vocab_trie(v) < 0) {
		grammar_vocab_free(v);
		err_sys("grammar: cannot allocate the vocabulary's trie");
		return NULL;
	}
	return v;
}

void grammar_vocab_free(grammar_vocab_t *v)
{
	if (!v)
		return;
	free(v->kind);
	free(v->tok_off);
	free(v->bytes);
	free(v->nbyte);
	free(v->ndepth);
	free(v->nskip);
	free(v->ntok);
	free(v->tids);
	free(v);
}

int64_t grammar_vocab_n_nodes(const grammar_vocab_t *v) { return v->n_nodes; }

/* ---- the matcher's tables ---- */

/* A matcher state: set 0 is the dead state (no stack survives). */
typedef struct mstate {
	uint32_t set;
	uint32_t v;     /* the partial character's bits so far */
	uint8_t nrem;   /* continuation bytes it still needs (0: none) */
	uint8_t len;    /* its length in bytes */
} mstate_t;

/* A cached mask: the allowed tokens of one state. */
typedef struct mask_entry {
	mstate_t key;
	int32_t count;
	uint64_t *bits; /* (words) */
} mask_entry_t;

/* The most masks a state keeps (then the cache starts over). */
#define MASKS_MAX 128

struct grammar_state {
	const grammar_t *g;
	const grammar_vocab_t *v;
	bool control_ends;
	bool oom;          /* an interning failed: the state is unusable */
	mstate_t cur;
	/* stacks: node i = (npos[i] on top of npar[i]); node 0 empty */
	uint32_t *npos, *npar, n_nodes, cap_nodes;
	uint32_t *nhash, nhash_cap;   /* node ids, 0 = free slot */
	/* sets of stacks: set i = pool[soff[i] .. soff[i] + slen[i]), sorted */
	uint32_t *soff, *slen, n_sets, cap_sets;
	uint32_t **sascii;            /* (n_sets) per set: ASCII transitions
					 + 1 (0 unknown), or NULL */
	uint32_t *pool;
	size_t n_pool, cap_pool;
	uint32_t *shash, shash_cap;   /* set ids, 0 = free slot */
	/* transitions on code points >= 0x80: key set << 21 | cp */
	uint64_t *tkey;
	uint32_t *tval, t_n, t_cap;
	/* scratch: the stacks a step expands to */
	uint32_t *exp;
	size_t n_exp, cap_exp;
	/* masks */
	mstate_t *walk;               /* (max_depth + 1) the trie walk's states */
	mask_entry_t masks[MASKS_MAX];
	int n_masks;
	uint32_t words;               /* 64-bit words of a mask */
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* Grows array *p of elem-sized items to hold at least need; 0 or -1. */
static int grow(void *p, size_t elem, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	void *q = eg_realloc(*(void **)p, c * elem);
	if (!q)
		return -1;
	*(void **)p = q;
	*cap = c;
	return 0;
}

static uint32_t node_hash(uint32_t pos, uint32_t parent)
{
	return (uint32_t)mix64((uint64_t)pos << 32 | parent);
}

/* Rehashes the node table at twice its size; 0 or -1. */
static int node_rehash(grammar_state_t *s)
{
	uint32_t cap = s->nhash_cap ? s->nhash_cap * 2 : 1024;
	uint32_t *h = eg_calloc(cap, sizeof *h);
	if (!h)
		return -1;
	for (uint32_t id = 1; id < s->n_nodes; id++) {
		uint32_t k = node_hash(s->npos[id], s->npar[id]) & (cap - 1);
		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = id;
	}
	free(s->nhash);
	s->nhash = h;
	s->nhash_cap = cap;
	return 0;
}

/* The stack `pos` on top of stack parent; NONE (s->oom) out of memory. */
static uint32_t node_get(grammar_state_t *s, uint32_t pos, uint32_t parent)
{
	if (parent == NONE)
		return NONE;
	if ((uint64_t)s->n_nodes * 2 >= s->nhash_cap && node_rehash(s) < 0)
		goto oom;
	uint32_t mask = s->nhash_cap - 1, k = node_hash(pos, parent) & mask, id;
	while ((id = s->nhash[k])) {
		if (s->npos[id] == pos && s->npar[id] == parent)
			return id;
		k = (k + 1) & mask;
	}
	size_t cap = s->cap_nodes;
	if (s->n_nodes >= NONE - 1 ||
	    grow(&s->npos, sizeof *s->npos, &cap, s->n_nodes + 1) < 0)
		goto oom;
	cap = s->cap_nodes;
	if (grow(&s->npar, sizeof *s->npar, &cap, s->n_nodes + 1) < 0)
		goto oom;
	s->cap_nodes = (uint32_t)cap;
	id = s->n_nodes++;
	s->npos[id] = pos;
	s->npar[id] = parent;
	s->nhash[k] = id;
	return id;
oom:
	s->oom = true;
	return NONE;
}

static uint32_t set_hash(const uint32_t *x, size_t n)
{
	uint64_t h = n;
	for (size_t i = 0; i < n; i++)
		h = mix64(h ^ x[i]);
	return (uint32_t)h;
}

static int set_rehash(grammar_state_t *s)
{
	uint32_t cap = s->shash_cap ? s->shash_cap * 2 : 256;
	uint32_t *h = eg_calloc(cap, sizeof *h);
	if (!h)
		return -1;
	for (uint32_t id = 1; id < s->n_sets; id++) {
		uint32_t k = set_hash(s->pool + s->soff[id], s->slen[id]) & (cap - 1);
		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = id;
	}
	free(s->shash);
	s->shash = h;
	s->shash_cap = cap;
	return 0;
}

/* The id of the set x[0..n) (sorted, distinct); 0 for the empty set, NONE
 * out of memory. */
static uint32_t set_get(grammar_state_t *s, const uint32_t *x, size_t n)
{
	if (n == 0)
		return 0;
	if ((uint64_t)s->n_sets * 2 >= s->shash_cap && set_rehash(s) < 0)
		goto oom;
	uint32_t mask = s->shash_cap - 1, k = set_hash(x, n) & mask, id;
	while ((id = s->shash[k])) {
		if (s->slen[id] == n && !memcmp(s->pool + s->soff[id], x, n * sizeof *x))
			return id;
		k = (k + 1) & mask;
	}
	size_t cap = s->cap_sets, c2 = s->cap_sets, c3 = s->cap_sets;
	if (s->n_sets >= NONE / 2 ||
	    grow(&s->soff, sizeof *s->soff, &cap, s->n_sets + 1) < 0 ||
	    grow(&s->slen, sizeof *s->slen, &c2, s->n_sets + 1) < 0 ||
	    grow(&s->sascii, sizeof *s->sascii, &c3, s->n_sets + 1) < 0 ||
	    grow(&s->pool, sizeof *s->pool, &s->cap_pool, s->n_pool + n) < 0)
		goto oom;
	s->cap_sets = (uint32_t)cap;
	id = s->n_sets++;
	s->soff[id] = (uint32_t)s->n_pool;
	s->slen[id] = (uint32_t)n;
	s->sascii[id] = NULL;
	memcpy(s->pool + s->n_pool, x, n * sizeof *x);
	s->n_pool += n;
	s->shash[k] = id;
	return id;
oom:
	s->oom = true;
	return NONE;
}

/* ---- stacks: expansion and matching ---- */

static bool elem_is_end(const gelem_t *e)
{
	return e->type == GE_END || e->type == GE_ALT;
}

static void exp_push(grammar_state_t *s, uint32_t node)
{
	if (grow(&s->exp, sizeof *s->exp, &s->cap_exp, s->n_exp + 1) < 0) {
		s->oom = true;
		return;
	}
	s->exp[s->n_exp++] = node;
}

/* Adds to s->exp the stacks that `node` stands for with every reference
 * on top replaced by the alternatives of its rule, until each top is a
 * character set or the stack is empty (llama.cpp's advance_stack). Ends,
 * because the parser refused left recursion. */
static void stack_expand(grammar_state_t *s, uint32_t node)
{
	const grammar_t *g = s->g;
	if (node == NONE)
		return;
	if (node == 0 || g->el[s->npos[node]].type != GE_REF) {
		exp_push(s, node);
		return;
	}
	uint32_t pos = s->npos[node], rest = s->npar[node];
	uint32_t base = elem_is_end(&g->el[pos + 1]) ? rest : node_get(s, pos + 1, rest);
	for (uint32_t a = g->rule_at[g->el[pos].value];; a++) {
		stack_expand(s, elem_is_end(&g->el[a]) ? base : node_get(s, a, base));
		while (!elem_is_end(&g->el[a]))
			a++;
		if (g->el[a].type == GE_END)
			break;
	}
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* s->exp as an interned set (sorted, duplicates dropped). */
static uint32_t exp_intern(grammar_state_t *s)
{
	if (s->oom)
		return NONE;
	qsort(s->exp, s->n_exp, sizeof *s->exp, u32_cmp);
	size_t n = 0;
	for (size_t i = 0; i < s->n_exp; i++)
		if (n == 0 || s->exp[n - 1] != s->exp[i])
			s->exp[n++] = s->exp[i];
	return set_get(s, s->exp, n);
}

/* Whether code point cp is in the character set at el[pos]; *after: the
 * position after the set. */
static bool set_match(const gelem_t *el, uint32_t pos, uint32_t cp, uint32_t *after)
{
	const gelem_t *e = el + pos;
	bool positive = e->type != GE_CHAR_NOT, found = false;
	do {
		if (e[1].type == GE_RNG_UPPER) {
			found |= e->value <= cp && cp <= e[1].value;
			e += 2;
		} else {
			found |= e->type == GE_ANY || e->value == cp;
			e++;
		}
	} while (e->type == GE_CHAR_ALT);
	*after = (uint32_t)(e - el);
	return found == positive;
}

/* Whether some code point in [lo, hi] is in the character set at el[pos]
 * (a partial character's possible completions). Exact for negated sets:
 * the excluded ranges must cover the whole span to refuse it. */
static bool set_may_match(const gelem_t *el, uint32_t pos, uint32_t lo, uint32_t hi)
{
	const gelem_t *first = el + pos;
	if (first->type != GE_CHAR_NOT) {
		const gelem_t *e = first;
		do {
			uint32_t a = e->value, b = e[1].type == GE_RNG_UPPER ? e[1].value : a;
			if (e->type == GE_ANY || (a <= hi && lo <= b))
				return true;
			e += e[1].type == GE_RNG_UPPER ? 2 : 1;
		} while (e->type == GE_CHAR_ALT);
		return false;
	}
	for (uint32_t cur = lo;;) { /* walk cur up through the excluded ranges */
		bool moved = false;
		const gelem_t *e = first;
		do {
			uint32_t a = e->value, b = e[1].type == GE_RNG_UPPER ? e[1].value : a;
			if (a <= cur && cur <= b) {
				if (b >= hi)
					return false;
				cur = b + 1;
				moved = true;
			}
			e += e[1].type == GE_RNG_UPPER ? 2 : 1;
		} while (e->type == GE_CHAR_ALT);
		if (!moved)
			return true;
	}
}

/* The set that set `set` becomes after code point cp (0: dead), llama.cpp's
 * accept: every stack whose top matches cp moves past it, then expands. */
static uint32_t set_step_uncached(grammar_state_t *s, uint32_t set, uint32_t cp)
{
	s->n_exp = 0;
	for (uint32_t i = 0; i < s->slen[set]; i++) {
		uint32_t node = s->pool[s->soff[set] + i], after;
		if (node == 0 || !set_match(s->g->el, s->npos[node], cp, &after))
			continue;
		uint32_t rest = s->npar[node];
		stack_expand(s, elem_is_end(&s->g->el[after]) ? rest
							       : node_get(s, after, rest));
	}
	return exp_intern(s);
}

static uint64_t trans_key(uint32_t set, uint32_t cp)
{
	return (uint64_t)set << 21 | cp;
}

static int trans_rehash(grammar_state_t *s)
{
	uint32_t cap = s->t_cap ? s->t_cap * 2 : 1024;
	uint64_t *k = eg_malloc(cap * sizeof *k);
	uint32_t *v = eg_malloc(cap * sizeof *v);
	if (!k || !v) {
		free(k);
		free(v);
		return -1;
	}
	memset(k, 0xFF, cap * sizeof *k);
	for (uint32_t i = 0; i < s->t_cap; i++) {
		if (s->tkey[i] == UINT64_MAX)
			continue;
		uint32_t j = (uint32_t)mix64(s->tkey[i]) & (cap - 1);
		while (k[j] != UINT64_MAX)
			j = (j + 1) & (cap - 1);
		k[j] = s->tkey[i];
		v[j] = s->tval[i];
	}
	free(s->tkey);
	free(s->tval);
	s->tkey = k;
	s->tval = v;
	s->t_cap = cap;
	return 0;
}

/* set_step_uncached, remembered: an ASCII code point in the set's table,
 * others in the hash table. NONE out of memory. */
static uint32_t set_step(grammar_state_t *s, uint32_t set, uint32_t cp)
{
	if (set == 0 || set == NONE)
		return set;
	if (cp < 128) {
		uint32_t *t = s->sascii[set];
		if (!t) {
			t = s->sascii[set] = eg_calloc(128, sizeof *t);
			if (!t) {
				s->oom = true;
				return NONE;
			}
		}
		if (!t[cp]) {
			uint32_t to = set_step_uncached(s, set, cp);
			if (to == NONE)
				return NONE;
			s->sascii[set][cp] = to + 1; /* sascii may have moved: reread */
		}
		return s->sascii[set][cp] - 1;
	}
	if ((uint64_t)s->t_n * 2 >= s->t_cap && trans_rehash(s) < 0) {
		s->oom = true;
		return NONE;
	}
	uint64_t key = trans_key(set, cp);
	uint32_t mask = s->t_cap - 1, j = (uint32_t)mix64(key) & mask;
	while (s->tkey[j] != UINT64_MAX) {
		if (s->tkey[j] == key)
			return s->tval[j];
		j = (j + 1) & mask;
	}
	uint32_t to = set_step_uncached(s, set, cp);
	if (to == NONE)
		return NONE;
	j = (uint32_t)mix64(key) & mask; /* the table did not move: find the slot */
	while (s->tkey[j] != UINT64_MAX)
		j = (j + 1) & mask;
	s->tkey[j] = key;
	s->tval[j] = to;
	s->t_n++;
	return to;
}

/* ---- bytes: UTF-8 decoding across tokens ---- */

static const uint32_t cp_min[5] = {0, 0, 0x80, 0x800, 0x10000};

/* Whether the partial character of st may still complete to a code point
 * that some stack of its set accepts (llama.cpp's match_partial_char). */
static bool partial_ok(const grammar_state_t *s, mstate_t st)
{
	uint32_t shift = 6u * st.nrem;
	uint32_t lo = st.v << shift, hi = lo | ((1u << shift) - 1);
	if (lo < cp_min[st.len])
		lo = cp_min[st.len];
	if (hi > 0x10FFFF)
		hi = 0x10FFFF;
	if (lo > hi || (lo >= 0xD800 && hi <= 0xDFFF))
		return false; /* overlong, beyond Unicode, or a surrogate */
	for (uint32_t i = 0; i < s->slen[st.set]; i++) {
		uint32_t node = s->pool[s->soff[st.set] + i];
		if (node && set_may_match(s->g->el, s->npos[node], lo, hi))
			return true;
	}
	return false;
}

/* The state after byte b (set 0: dead; set NONE: out of memory). */
static mstate_t state_byte(grammar_state_t *s, mstate_t st, uint8_t b)
{
	mstate_t dead = {0};
	if (st.nrem) {
		if ((b & 0xC0) != 0x80)
			return dead;
		uint32_t v = st.v << 6 | (b & 0x3Fu);
		if (st.nrem == 1) {
			if (v < cp_min[st.len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
				return dead;
			return (mstate_t){.set = set_step(s, st.set, v)};
		}
		mstate_t n = {st.set, v, (uint8_t)(st.nrem - 1), st.len};
		return partial_ok(s, n) ? n : dead;
	}
	if (b < 0x80)
		return (mstate_t){.set = set_step(s, st.set, b)};
	uint8_t len = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3
		      : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
	if (!len)
		return dead;
	mstate_t n = {st.set, b & (0x7Fu >> len), (uint8_t)(len - 1), len};
	return partial_ok(s, n) ? n : dead;
}

/* The state after bytes b[0..n) from st. */
static mstate_t state_bytes(grammar_state_t *s, mstate_t st, const char *b, size_t n)
{
	for (size_t i = 0; i < n && st.set && st.set != NONE; i++)
		st = state_byte(s, st, (uint8_t)b[i]);
	return st;
}

static bool state_done(const grammar_state_t *s, mstate_t st)
{
	return st.set && st.set != NONE && !st.nrem && s->pool[s->soff[st.set]] == 0;
}

/* ---- the public matcher ---- */

grammar_state_t *grammar_state_new(const grammar_t *g, const grammar_vocab_t *v)
{
	grammar_state_t *s = eg_calloc(1, sizeof *s);
	if (!s) {
		err_sys("grammar: cannot allocate a matcher");
		return NULL;
	}
	s->g = g;
	s->v = v;
	s->n_nodes = 1; /* node 0: the empty stack */
	s->n_sets = 1;  /* set 0: no stack (dead) */
	size_t cap = 0;
	if (grow(&s->npos, sizeof *s->npos, &cap, 1) == 0) {
		s->cap_nodes = (uint32_t)cap;
		s->npar = eg_malloc(cap * sizeof *s->npar);
	}
	cap = 0;
	if (grow(&s->soff, sizeof *s->soff, &cap, 1) == 0) {
		s->cap_sets = (uint32_t)cap;
		s->slen = eg_calloc(cap, sizeof *s->slen);
		s->sascii = eg_calloc(cap, sizeof *s->sascii);
	}
	if (v) {
		s->words = (uint32_t)((v->n_logits + 63) / 64);
		s->walk = eg_malloc((v->max_depth + 1) * sizeof *s->walk);
	}
	if (!s->npar || !s->slen || !s->sascii || (v && !s->walk)) {
		grammar_state_free(s);
		err_sys("grammar: cannot allocate a matcher");
		return NULL;
	}
	s->soff[0] = 0;
	/* the start: the root rule's alternatives, expanded */
	for (uint32_t a = g->rule_at[g->root];; a++) {
		stack_expand(s, elem_is_end(&g->el[a]) ? 0 : node_get(s, a, 0));
		while (!elem_is_end(&g->el[a]))
			a++;
		if (g->el[a].type == GE_END)
			break;
	}
	s->cur.set = exp_intern(s);
	if (s->oom) {
		grammar_state_free(s);
		err_sys("grammar: cannot allocate a matcher");
		return NULL;
	}
	return s;
}

static void masks_clear(grammar_state_t *s)
{
	for (int i = 0; i < s->n_masks; i++)
		free(s->masks[i].bits);
	s->n_masks = 0;
}

void grammar_state_free(grammar_state_t *s)
{
	if (!s)
		return;
	masks_clear(s);
	for (uint32_t i = 0; s->sascii && i < s->n_sets; i++)
		free(s->sascii[i]);
	free(s->sascii);
	free(s->npos);
	free(s->npar);
	free(s->nhash);
	free(s->soff);
	free(s->slen);
	free(s->pool);
	free(s->shash);
	free(s->tkey);
	free(s->tval);
	free(s->exp);
	free(s->walk);
	free(s);
}

void grammar_state_set_control_ends(grammar_state_t *s, bool on)
{
	if (s->control_ends != on)
		masks_clear(s); /* the cached masks counted the end tokens */
	s->control_ends = on;
}

bool grammar_is_end(const grammar_state_t *s, int32_t id)
{
	if (!s->v || id < 0 || id >= s->v->n_logits)
		return false;
	uint8_t k = s->v->kind[id];
	return k == VT_EOS || (k == VT_CONTROL && s->control_ends);
}

bool grammar_done(const grammar_state_t *s) { return state_done(s, s->cur); }

bool grammar_allows_bytes(grammar_state_t *s, const char *b, size_t n)
{
	mstate_t st = state_bytes(s, s->cur, b, n);
	return st.set && st.set != NONE;
}

int grammar_accept_bytes(grammar_state_t *s, const char *b, size_t n)
{
	mstate_t st = state_bytes(s, s->cur, b, n);
	if (st.set == NONE)
		return err_sys("grammar: cannot allocate the matcher's tables");
	if (!st.set)
		return err_set("grammar: the text \"%.*s\" does not continue what the "
			       "grammar allows", (int)(n > 40 ? 40 : n), b);
	s->cur = st;
	return 0;
}

bool grammar_allows(grammar_state_t *s, int32_t id)
{
	const grammar_vocab_t *v = s->v;
	if (!v || id < 0 || id >= v->n_logits)
		return false;
	if (grammar_is_end(s, id))
		return state_done(s, s->cur);
	if (v->kind[id] != VT_TEXT)
		return false;
	return grammar_allows_bytes(s, v->bytes + v->tok_off[id],
				    v->tok_off[id + 1] - v->tok_off[id]);
}

bool grammar_completes(grammar_state_t *s, int32_t id)
{
	const grammar_vocab_t *v = s->v;
	if (!v || id < 0 || id >= v->n_logits || v->kind[id] != VT_TEXT)
		return false;
	mstate_t st = state_bytes(s, s->cur, v->bytes + v->tok_off[id],
				  v->tok_off[id + 1] - v->tok_off[id]);
	return state_done(s, st);
}

int grammar_accept(grammar_state_t *s, int32_t id)
{
	const grammar_vocab_t *v = s->v;
	if (!v || id < 0 || id >= v->n_logits)
		return err_set("grammar: token %d is outside the vocabulary", id);
	if (grammar_is_end(s, id)) {
		if (state_done(s, s->cur))
			return 0;
		return err_set("grammar: the end token %d came before the grammar "
			       "was complete", id);
	}
	if (v->kind[id] != VT_TEXT)
		return err_set("grammar: token %d has no text the grammar could "
			       "match", id);
	return grammar_accept_bytes(s, v->bytes + v->tok_off[id],
				    v->tok_off[id + 1] - v->tok_off[id]);
}

/* ---- the mask ---- */

static bool mstate_eq(mstate_t a, mstate_t b)
{
	return a.set == b.set && a.v == b.v && a.nrem == b.nrem && a.len == b.len;
}

/* The allowed tokens of state st into bits: one preorder walk of the trie,
 * a subtree skipped where the state dies; then the end tokens where st
 * is complete. Returns the count, -1 out of memory. */
static int32_t mask_compute(grammar_state_t *s, mstate_t st, uint64_t *bits)
{
	const grammar_vocab_t *v = s->v;
	memset(bits, 0, s->words * sizeof *bits);
	mstate_t *walk = s->walk;
	walk[0] = st;
	for (uint32_t i = 1; i < v->n_nodes;) {
		mstate_t ns = state_byte(s, walk[v->ndepth[i] - 1], v->nbyte[i]);
		if (ns.set == NONE)
			return -1;
		if (!ns.set) {
			i = v->nskip[i];
			continue;
		}
		walk[v->ndepth[i]] = ns;
		for (uint32_t t = v->ntok[i]; t < v->ntok[i + 1]; t++)
			bits[v->tids[t] >> 6] |= 1ull << (v->tids[t] & 63);
		i++;
	}
	if (state_done(s, st))
		for (int32_t id = 0; id < v->n_logits; id++)
			if (grammar_is_end(s, id))
				bits[id >> 6] |= 1ull << (id & 63);
	int32_t count = 0;
	for (uint32_t w = 0; w < s->words; w++)
		count += __builtin_popcountll(bits[w]);
	return count;
}

/* The cached mask of the current state, computed on a miss; NULL out of
 * memory. */
static const mask_entry_t *mask_get(grammar_state_t *s)
{
	for (int i = 0; i < s->n_masks; i++)
		if (mstate_eq(s->masks[i].key, s->cur))
			return &s->masks[i];
	if (s->n_masks == MASKS_MAX)
		masks_clear(s);
	mask_entry_t *e = &s->masks[s->n_masks];
	e->bits = eg_malloc(s->words * sizeof *e->bits);
	if (!e->bits)
		return NULL;
	e->key = s->cur;
	e->count = mask_compute(s, s->cur, e->bits);
	if (e->count < 0) {
		free(e->bits);
		return NULL;
	}
	s->n_masks++;
	return e;
}

int32_t grammar_mask(grammar_state_t *s, float *logits)
{
	if (!s->v)
		return err_set("grammar: a matcher without a vocabulary has no mask");
	if (s->oom)
		return err_sys("grammar: cannot allocate the matcher's tables");
	const mask_entry_t *e = mask_get(s);
	if (!e)
		return err_sys("grammar: cannot allocate the matcher's tables");
	int32_t n = s->v->n_logits;
	for (uint32_t w = 0; w < s->words; w++) {
		uint64_t m = e->bits[w];
		int32_t base = (int32_t)w * 64;
		if (m == ~0ull)
			continue;
		int32_t lim = n - base < 64 ? n - base : 64;
		for (int32_t k = 0; k < lim; k++)
			if (!(m >> k & 1))
				logits[base + k] = -INFINITY;
	}
	return e->count;
}
