/* tokenizer: SentencePiece BPE ("llama") and byte-level BPE ("gpt2").
 *
 * The file reads in data-flow order:
 *  1. hash tables: piece -> id, (left id, right id) -> merge rank
 *  2. the tokenizer object and its builder
 *  3. UTF-8 and the GPT-2 byte <-> unicode map
 *  4. pre-tokenizers: PCRE2 regexes per tokenizer.ggml.pre
 *  5. loaders: llama2.c tokenizer.bin, GGUF, the synthetic vocabulary
 *  6. the GGUF writer and accessors
 *  7. encode: one heap-driven merge loop serves both kinds
 *  8. decode
 *
 * Behaviour choices (where the references disagree or leave a gap):
 *  - "llama": a code point with no piece falls back to its bytes <0xNN>;
 *    when the vocabulary lacks a byte piece (tok105.bin has none) the whole
 *    code point becomes one <unk> (SentencePiece without byte_fallback).
 *    llama2.c run.c would emit id 3+byte there, which is a different token
 *    in such a vocabulary. A merge never produces a control token (so "<s>"
 *    typed in text stays text). Special tokens are not matched in text.
 *    UTF-8 is grouped by its lead byte (identical to run.c on valid UTF-8).
 *  - "gpt2": control (3) and user-defined (4) tokens are matched in the text
 *    as whole tokens first, longest first. Text that PCRE2 cannot match
 *    (invalid UTF-8 with PCRE2_MATCH_INVALID_UTF) lands in the gap chunks,
 *    so every byte is kept (llama.cpp turns it into U+FFFD). An unknown
 *    tokenizer.ggml.pre is refused, as llama.cpp does.
 *  - Duplicate pieces: the first id wins in lookups. Out of memory aborts. */
#include "model/tokenizer.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/base.h"

enum {
	TOKEN_TYPE_UNDEFINED = 0,
	TOKEN_TYPE_NORMAL = 1,
	TOKEN_TYPE_UNKNOWN = 2,
	TOKEN_TYPE_CONTROL = 3,
	TOKEN_TYPE_USER_DEFINED = 4,
	TOKEN_TYPE_UNUSED = 5,
	TOKEN_TYPE_BYTE = 6,
};

#define ID_NONE_U32 0xFFFFFFFFu /* GGUF spelling of "no such token" */
#define MAX_PIECE (1u << 20)    /* longest piece accepted from a file */
#define MAX_REGEX 4

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "egang: tokenizer: out of memory (%zu bytes)\n", n);
		abort();
	}
	return p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p) {
		fprintf(stderr, "egang: tokenizer: out of memory\n");
		abort();
	}
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fprintf(stderr, "egang: tokenizer: out of memory (%zu bytes)\n", n);
		abort();
	}
	return p;
}

/* ---- 1. hash tables ---- */

/* FNV-1a over two byte ranges (a piece or the concatenation of two). */
static uint64_t hash_bytes2(const char *a, size_t na, const char *b, size_t nb)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < na; i++)
		h = (h ^ (unsigned char)a[i]) * 0x100000001b3ull;
	for (size_t i = 0; i < nb; i++)
		h = (h ^ (unsigned char)b[i]) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static size_t pow2_at_least(size_t n)
{
	size_t c = 16;
	while (c < n)
		c <<= 1;
	return c;
}

/* ---- 2. the tokenizer object ---- */

typedef enum tok_pre {
	TOK_PRE_DEFAULT,
	TOK_PRE_GPT2,
	TOK_PRE_LLAMA3,
	TOK_PRE_QWEN2,
	TOK_PRE_SMOLLM,
	TOK_PRE_FALCON,
	TOK_PRE_COUNT
} tok_pre_t;

struct tokenizer {
	tokenizer_kind_t kind;
	int32_t n_vocab;
	int32_t cap;      /* allocated entries of off/len/score/type */
	char *pool;       /* every piece, NUL-terminated, GGUF spelling */
	size_t pool_len, pool_cap;
	size_t *off;      /* (n_vocab) offset of piece id in pool */
	uint32_t *len;    /* (n_vocab) byte length of piece id */
	float *score;     /* (n_vocab) SentencePiece score (0 for gpt2) */
	int32_t *type;    /* (n_vocab) GGUF token_type */
	bool has_scores;  /* scores came from the source (written back) */
	int32_t bos, eos, unk, pad; /* -1 if none */
	bool add_bos, add_eos;
	bool no_space_prefix; /* llama: tokenizer.ggml.add_space_prefix false */

	int32_t *slot;    /* (mask + 1) open addressing piece -> id, -1 empty */
	size_t mask;

	/* llama: id of the piece "<0xNN>"; gpt2: id of byte b's unicode char.
	 * -1 where absent. */
	int32_t byte_tok[256];
	int16_t *byte_of; /* llama (n_vocab): byte of a <0xNN> piece, else -1 */

	/* gpt2 */
	int32_t n_merges;
	int32_t *merge;   /* (n_merges, 3): left id, right id, result id */
	uint64_t *mkey;   /* (mmask + 1) (left << 32 | right), UINT64_MAX empty */
	int32_t *mrank;   /* (mmask + 1) rank of the pair in mkey */
	size_t mmask;
	tok_pre_t pre;
	char *pre_name;   /* as read ("" when the key was absent) */
	pcre2_code *re[MAX_REGEX];
	int n_re;
	bool ignore_merges; /* a whole chunk that is a piece is kept (llama3) */
	int32_t *special; /* (n_special) control/user-defined ids, grouped by
			     first byte, longest first within a group */
	int32_t n_special;
	int32_t special_start[257]; /* group of first byte b: [start[b], start[b+1]) */
	int32_t *lc_special; /* (n_lc_special) control, user-defined and unknown
				ids, longest first (llama.cpp's partition order) */
	int32_t n_lc_special;
};

static const char *tok_str(const tokenizer_t *t, int32_t id)
{
	return t->pool + t->off[id];
}

static tokenizer_t *tok_new(tokenizer_kind_t kind, int32_t cap)
{
	tokenizer_t *t = xcalloc(1, sizeof *t);
	t->kind = kind;
	t->cap = cap > 0 ? cap : 16;
	t->off = xmalloc((size_t)t->cap * sizeof *t->off);
	t->len = xmalloc((size_t)t->cap * sizeof *t->len);
	t->score = xcalloc((size_t)t->cap, sizeof *t->score);
	t->type = xmalloc((size_t)t->cap * sizeof *t->type);
	t->pool_cap = 4096;
	t->pool = xmalloc(t->pool_cap);
	t->bos = t->eos = t->unk = t->pad = -1;
	t->pre_name = xcalloc(1, 1);
	for (int b = 0; b < 256; b++)
		t->byte_tok[b] = -1;
	return t;
}

/* Appends a piece; returns its id. */
static int32_t tok_add(tokenizer_t *t, const char *s, size_t n, float score,
		       int32_t type)
{
	if (t->n_vocab == t->cap) {
		t->cap *= 2;
		t->off = xrealloc(t->off, (size_t)t->cap * sizeof *t->off);
		t->len = xrealloc(t->len, (size_t)t->cap * sizeof *t->len);
		t->score = xrealloc(t->score, (size_t)t->cap * sizeof *t->score);
		t->type = xrealloc(t->type, (size_t)t->cap * sizeof *t->type);
	}
	while (t->pool_len + n + 1 > t->pool_cap) {
		t->pool_cap *= 2;
		t->pool = xrealloc(t->pool, t->pool_cap);
	}
	int32_t id = t->n_vocab++;
	t->off[id] = t->pool_len;
	t->len[id] = (uint32_t)n;
	memcpy(t->pool + t->pool_len, s, n);
	t->pool[t->pool_len + n] = '\0';
	t->pool_len += n + 1;
	t->score[id] = score;
	t->type[id] = type;
	return id;
}

/* Id of the piece a ++ b, -1 if absent. */
static int32_t tok_find2(const tokenizer_t *t, const char *a, size_t na,
			 const char *b, size_t nb)
{
	size_t i = hash_bytes2(a, na, b, nb) & t->mask;
	for (;; i = (i + 1) & t->mask) {
		int32_t id = t->slot[i];
		if (id < 0)
			return -1;
		if (t->len[id] == na + nb) {
			const char *p = tok_str(t, id);
			if (memcmp(p, a, na) == 0 &&
			    (nb == 0 || memcmp(p + na, b, nb) == 0))
				return id;
		}
	}
}

/* Inserts id unless an equal piece is already there (the first id wins). */
static void tok_index(tokenizer_t *t, int32_t id)
{
	const char *s = tok_str(t, id);
	size_t n = t->len[id];
	size_t i = hash_bytes2(s, n, NULL, 0) & t->mask;
	for (;; i = (i + 1) & t->mask) {
		int32_t o = t->slot[i];
		if (o < 0) {
			t->slot[i] = id;
			return;
		}
		if (t->len[o] == n && memcmp(tok_str(t, o), s, n) == 0)
			return;
	}
}

/* Rebuilds the piece table after a batch of tok_add (synth grows it). */
static void tok_reindex(tokenizer_t *t)
{
	free(t->slot);
	size_t cap = pow2_at_least((size_t)t->n_vocab * 2 + 2);
	t->slot = xmalloc(cap * sizeof *t->slot);
	memset(t->slot, 0xff, cap * sizeof *t->slot);
	t->mask = cap - 1;
	for (int32_t id = 0; id < t->n_vocab; id++)
		if (t->len[id] > 0)
			tok_index(t, id);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The byte a "<0xNN>" piece stands for, -1 if the piece is not one. */
static int piece_byte(const char *s, size_t n)
{
	if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
		return -1;
	int hi = hexval(s[3]), lo = hexval(s[4]);
	return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/* llama: which pieces are <0xNN>, and the piece of each byte (again after
 * the vocabulary grows). */
static void tok_llama_bytes(tokenizer_t *t)
{
	free(t->byte_of);
	t->byte_of = xmalloc((size_t)t->n_vocab * sizeof *t->byte_of);
	for (int b = 0; b < 256; b++)
		t->byte_tok[b] = -1;
	for (int32_t id = 0; id < t->n_vocab; id++) {
		int b = piece_byte(tok_str(t, id), t->len[id]);
		t->byte_of[id] = (int16_t)b;
		if (b >= 0 && t->byte_tok[b] < 0)
			t->byte_tok[b] = id;
	}
}

static int special_cmp_len(const void *a, const void *b, void *t_)
{
	const tokenizer_t *t = t_;
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	unsigned char fx = (unsigned char)tok_str(t, x)[0];
	unsigned char fy = (unsigned char)tok_str(t, y)[0];
	if (fx != fy)
		return fx < fy ? -1 : 1;
	if (t->len[x] != t->len[y])
		return t->len[x] > t->len[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int lc_special_cmp(const void *a, const void *b, void *t_)
{
	const tokenizer_t *t = t_;
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	if (t->len[x] != t->len[y])
		return t->len[x] > t->len[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* The tokens llama.cpp's tokenizer_st_partition looks for in text. */
static void tok_lc_special(tokenizer_t *t)
{
	free(t->lc_special);
	t->lc_special = xmalloc((size_t)t->n_vocab * sizeof *t->lc_special);
	t->n_lc_special = 0;
	for (int32_t id = 0; id < t->n_vocab; id++)
		if ((t->type[id] == TOKEN_TYPE_CONTROL ||
		     t->type[id] == TOKEN_TYPE_USER_DEFINED ||
		     t->type[id] == TOKEN_TYPE_UNKNOWN) && t->len[id] > 0)
			t->lc_special[t->n_lc_special++] = id;
	qsort_r(t->lc_special, (size_t)t->n_lc_special, sizeof *t->lc_special,
		lc_special_cmp, t);
}

/* Pieces llama.cpp's vocabulary loader (llama-vocab.cpp, its "auto-detect
 * special tokens by text" and end-of-generation lists) makes control
 * tokens whatever their GGUF type, so they are matched as special tokens
 * in text and decode to nothing. */
static const char *const lc_forced_control[] = {
	"</s>", "<EOT>", "<MID>", "<PAD>", "<PRE>", "<REPO>", "<SUF>",
	"<end_of_turn>", "<end_of_utterance>", "<eos>", "<fim-middle>",
	"<fim-pad>", "<fim-prefix>", "<fim-repo>", "<fim-suffix>", "<fim_middle>",
	"<fim_pad>", "<fim_prefix>", "<fim_suffix>", "<reponame>", "<turn|>",
	"<|calls|>", "<|call|>", "<|code_middle|>", "<|code_prefix|>",
	"<|code_suffix|>", "<|end_of_text|>", "<|endoftext|>", "<|end|>",
	"<|eom_id|>", "<|eot_id|>", "<|file_sep|>", "<|fim_middle|>",
	"<|fim_pad|>", "<|fim_prefix|>", "<|fim_repo|>", "<|fim_suffix|>",
	"<|flush|>", "<|im_end|>", "<|middle|>", "<|prefix|>", "<|repo_name|>",
	"<|return|>", "<|suffix|>", "<|tool_response>",
	"<\xEF\xBD\x9C" "end\xE2\x96\x81" "of\xE2\x96\x81" "sentence\xEF\xBD\x9C" ">",
	"<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C" ">",
	"<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C" ">",
	"<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C" ">",
	"[EOS]", "[EOT]", "[PAD]", "[e~[", "_<EOT>",
	"\xE2\x96\x81" "<MID>", "\xE2\x96\x81" "<PRE>", "\xE2\x96\x81" "<SUF>",
};

static void tok_lc_overrides(tokenizer_t *t)
{
	for (size_t i = 0; i < EG_ARRAY_LEN(lc_forced_control); i++) {
		int32_t id = tok_find2(t, lc_forced_control[i],
				       strlen(lc_forced_control[i]), NULL, 0);
		if (id >= 0)
			t->type[id] = TOKEN_TYPE_CONTROL;
	}
}

/* Builds lookup structures once the pieces are in. -1 + message on bad
 * special ids. */
static int tok_finish(tokenizer_t *t, const char *src)
{
	if (t->n_vocab <= 0)
		return err_set("%s: empty vocabulary", src);
	const struct { const char *name; int32_t id; } ids[] = {
		{ "bos", t->bos }, { "eos", t->eos }, { "unk", t->unk },
		{ "padding", t->pad } };
	for (size_t i = 0; i < EG_ARRAY_LEN(ids); i++)
		if (ids[i].id < -1 || ids[i].id >= t->n_vocab)
			return err_set("%s: %s token id %d out of range (vocabulary %d)",
				       src, ids[i].name, ids[i].id, t->n_vocab);
	tok_reindex(t);
	tok_lc_overrides(t);
	tok_lc_special(t);
	if (t->kind == TOKENIZER_LLAMA) {
		tok_llama_bytes(t);
		return 0;
	}
	/* gpt2: the byte-level char of each byte, and the special tokens */
	int32_t n = 0;
	for (int32_t id = 0; id < t->n_vocab; id++)
		if ((t->type[id] == TOKEN_TYPE_CONTROL ||
		     t->type[id] == TOKEN_TYPE_USER_DEFINED) && t->len[id] > 0)
			n++;
	t->special = xmalloc((size_t)n * sizeof *t->special);
	t->n_special = 0;
	for (int32_t id = 0; id < t->n_vocab; id++)
		if ((t->type[id] == TOKEN_TYPE_CONTROL ||
		     t->type[id] == TOKEN_TYPE_USER_DEFINED) && t->len[id] > 0)
			t->special[t->n_special++] = id;
	qsort_r(t->special, (size_t)n, sizeof *t->special, special_cmp_len, t);
	int32_t k = 0;
	for (int b = 0; b <= 256; b++) {
		t->special_start[b] = k;
		while (b < 256 && k < n &&
		       (unsigned char)tok_str(t, t->special[k])[0] == b)
			k++;
	}
	return 0;
}

void tokenizer_free(tokenizer_t *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n_re; i++)
		pcre2_code_free(t->re[i]);
	free(t->pool);
	free(t->off);
	free(t->len);
	free(t->score);
	free(t->type);
	free(t->slot);
	free(t->byte_of);
	free(t->merge);
	free(t->mkey);
	free(t->mrank);
	free(t->pre_name);
	free(t->special);
	free(t->lc_special);
	free(t);
}

/* ---- 3. UTF-8 and the GPT-2 byte map ---- */

/* Bytes of the code point that starts at s: the count its lead byte
 * announces, cut short at the first byte that is not a continuation (so
 * invalid input yields short groups, never a read past n). */
static size_t utf8_group(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t want = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 :
		      (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
	size_t k = 1;
	while (k < want && k < n && (s[k] & 0xC0) == 0x80)
		k++;
	return k;
}

/* Decodes one code point; returns its length, or 0 if s is not valid
 * UTF-8 there (then *cp is the first byte). */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	*cp = s[0];
	if (s[0] < 0x80)
		return 1;
	size_t k = utf8_group(s, n);
	if (k < 2)
		return 0;
	uint32_t c;
	uint32_t min;
	if (k == 2 && (s[0] & 0xE0) == 0xC0) {
		c = s[0] & 0x1Fu;
		min = 0x80;
	} else if (k == 3 && (s[0] & 0xF0) == 0xE0) {
		c = s[0] & 0x0Fu;
		min = 0x800;
	} else if (k == 4 && (s[0] & 0xF8) == 0xF0) {
		c = s[0] & 0x07u;
		min = 0x10000;
	} else {
		return 0;
	}
	for (size_t i = 1; i < k; i++)
		c = c << 6 | (s[i] & 0x3Fu);
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return k;
}

static size_t utf8_encode(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* GPT-2's byte -> code point map: printable Latin-1 bytes stand for
 * themselves, the other 68 take 256, 257, ... in byte order. */
#define GPT2_CP_MAX 324
static uint32_t gpt2_byte_cp(int b)
{
	if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)
		return (uint32_t)b;
	int n = 0;
	for (int x = 0; x < b; x++)
		if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174))
			n++;
	return 256u + (uint32_t)n;
}

typedef struct gpt2_map {
	char utf8[256][2];   /* the char of byte b, always 1 or 2 bytes */
	uint8_t nutf8[256];
	int16_t byte[GPT2_CP_MAX]; /* inverse, -1 where no byte maps */
} gpt2_map_t;

static gpt2_map_t gpt2_map;

static void gpt2_map_init_once(void)
{
	for (int i = 0; i < GPT2_CP_MAX; i++)
		gpt2_map.byte[i] = -1;
	for (int b = 0; b < 256; b++) {
		uint32_t cp = gpt2_byte_cp(b);
		gpt2_map.nutf8[b] = (uint8_t)utf8_encode(cp, gpt2_map.utf8[b]);
		gpt2_map.byte[cp] = (int16_t)b;
	}
}

static const gpt2_map_t *gpt2_map_get(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, gpt2_map_init_once);
	return &gpt2_map;
}

/* ---- 4. pre-tokenizers ----
 * The regexes are those llama.cpp's llama-vocab.cpp (llm_tokenizer_bpe)
 * lists per pre-tokenizer type; each regex of a list splits every chunk the
 * previous one produced, and unmatched gaps stay chunks of their own. */

#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RE_LLAMA3_HEAD "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
#define RE_LLAMA3_TAIL "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

typedef struct pre_def {
	const char *names[8]; /* tokenizer.ggml.pre values, NULL-terminated */
	const char *re[MAX_REGEX];
	bool ignore_merges;
} pre_def_t;

static const pre_def_t pre_defs[TOK_PRE_COUNT] = {
	[TOK_PRE_DEFAULT] = {
		{ "default", NULL },
		{ "[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+",
		  "[0-9][0-9][0-9]" }, false },
	[TOK_PRE_GPT2] = {
		{ "gpt2", "gpt-2", "phi-2", "mpt", "olmo", "jais", "roberta-bpe",
		  NULL },
		{ RE_GPT2 }, false },
	[TOK_PRE_LLAMA3] = {
		{ "llama-bpe", "llama3", "llama-v3", "falcon3", NULL },
		{ RE_LLAMA3_HEAD "\\p{N}{1,3}" RE_LLAMA3_TAIL }, true },
	[TOK_PRE_QWEN2] = {
		{ "qwen2", "deepseek-r1-qwen", "stablelm2", "megrez", NULL },
		{ RE_LLAMA3_HEAD "\\p{N}" RE_LLAMA3_TAIL }, false },
	[TOK_PRE_SMOLLM] = {
		{ "smollm", "starcoder", "refact", "command-r", "codeshell",
		  "exaone", NULL },
		{ "\\p{N}", RE_GPT2 }, false },
	[TOK_PRE_FALCON] = {
		{ "falcon", NULL },
		{ "[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]" },
		false },
};

/* Chooses the pre-tokenizer of name (NULL or "" -> "default") and compiles
 * its regexes. -1 + message on an unknown name. */
static int tok_set_pre(tokenizer_t *t, const char *name, size_t n)
{
	if (!name)
		n = 0;
	int found = n == 0 ? TOK_PRE_DEFAULT : -1;
	for (int p = 0; found < 0 && p < TOK_PRE_COUNT; p++)
		for (int k = 0; pre_defs[p].names[k]; k++)
			if (strlen(pre_defs[p].names[k]) == n &&
			    memcmp(pre_defs[p].names[k], name, n) == 0)
				found = p;
	if (found < 0)
		return err_set("tokenizer.ggml.pre: unknown pre-tokenizer '%.*s'",
			       (int)(n > 64 ? 64 : n), name);
	free(t->pre_name);
	t->pre_name = xmalloc(n + 1);
	if (n)
		memcpy(t->pre_name, name, n);
	t->pre_name[n] = '\0';
	t->pre = (tok_pre_t)found;
	t->ignore_merges = pre_defs[found].ignore_merges;
	for (int i = 0; i < MAX_REGEX && pre_defs[found].re[i]; i++) {
		int code;
		PCRE2_SIZE at;
		pcre2_code *re = pcre2_compile(
			(PCRE2_SPTR)pre_defs[found].re[i], PCRE2_ZERO_TERMINATED,
			PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &at,
			NULL);
		if (!re) {
			PCRE2_UCHAR msg[256];
			pcre2_get_error_message(code, msg, sizeof msg);
			return err_set("pre-tokenizer %s: regex %d at %zu: %s",
				       t->pre_name, i, (size_t)at, (char *)msg);
		}
		/* JIT is an optimisation: the interpreter runs without it */
		(void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
		t->re[t->n_re++] = re;
	}
	return 0;
}

/* A list of chunks (offset, length) into one text segment. */
typedef struct chunks {
	size_t *v; /* (n, 2) */
	size_t n, cap;
} chunks_t;

static void chunks_push(chunks_t *c, size_t off, size_t len)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		c->v = xrealloc(c->v, c->cap * 2 * sizeof *c->v);
	}
	c->v[2 * c->n] = off;
	c->v[2 * c->n + 1] = len;
	c->n++;
}

/* Splits s[0..n) by the pre-tokenizer's regexes into *out (tmp is
 * scratch). -1 + message if PCRE2 fails (a resource limit). */
static int pre_split(const tokenizer_t *t, const char *s, size_t n,
		     pcre2_match_data *md, chunks_t *out, chunks_t *tmp)
{
	out->n = 0;
	chunks_push(out, 0, n);
	for (int r = 0; r < t->n_re; r++) {
		tmp->n = 0;
		for (size_t c = 0; c < out->n; c++) {
			size_t base = out->v[2 * c], len = out->v[2 * c + 1];
			size_t pos = 0;
			while (pos < len) {
				int rc = pcre2_match(t->re[r], (PCRE2_SPTR)(s + base),
						     len, pos, 0, md, NULL);
				if (rc == PCRE2_ERROR_NOMATCH)
					break;
				if (rc < 0) {
					PCRE2_UCHAR msg[256];
					pcre2_get_error_message(rc, msg, sizeof msg);
					return err_set("pre-tokenizer %s: match at byte %zu: %s",
						       t->pre_name, base + pos,
						       (char *)msg);
				}
				PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
				size_t ms = ov[0], me = ov[1];
				if (me <= ms)
					break; /* no list here matches empty */
				if (ms > pos)
					chunks_push(tmp, base + pos, ms - pos);
				chunks_push(tmp, base + ms, me - ms);
				pos = me;
			}
			if (pos < len)
				chunks_push(tmp, base + pos, len - pos);
		}
		chunks_t sw = *out;
		*out = *tmp;
		*tmp = sw;
	}
	return 0;
}

/* ---- 5. loaders ---- */

/* Reads a little-endian 32-bit word (the files are little endian). */
static uint32_t rd_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static float u32_to_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* Appends the GGUF spelling of a llama2.c piece: ' ' -> U+2581. */
static void spell_spaces(const char *s, size_t n, char **buf, size_t *cap,
			 size_t *out_n)
{
	if (*cap < 3 * n + 1) {
		*cap = 3 * n + 1;
		*buf = xrealloc(*buf, *cap);
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ') {
			memcpy(*buf + k, "\xE2\x96\x81", 3);
			k += 3;
		} else {
			(*buf)[k++] = s[i];
		}
	}
	*out_n = k;
}

tokenizer_t *tokenizer_load_llama2c(const char *path, int32_t vocab_size)
{
	if (vocab_size <= 0) {
		err_set("%s: vocab_size %d must be positive", path, vocab_size);
		return NULL;
	}
	size_t size;
	char *data = file_read_all(path, &size);
	if (!data)
		return NULL;
	const unsigned char *p = (const unsigned char *)data;
	tokenizer_t *t = NULL;
	char *buf = NULL;
	size_t bufcap = 0;
	if (size < 4) {
		err_set("%s: short file (%zu bytes): no max_token_length", path,
			size);
		goto fail;
	}
	uint32_t max_len = rd_u32(p);
	if (max_len == 0 || max_len > MAX_PIECE) {
		err_set("%s: max_token_length %u at offset 0 out of range", path,
			max_len);
		goto fail;
	}
	t = tok_new(TOKENIZER_LLAMA, vocab_size);
	size_t o = 4;
	for (int32_t i = 0; i < vocab_size; i++) {
		if (size - o < 8) {
			err_set("%s: record %d at offset %zu: file ends (%zu bytes) "
				"before its header", path, i, o, size);
			goto fail;
		}
		float score = u32_to_f32(rd_u32(p + o));
		int32_t len = (int32_t)rd_u32(p + o + 4);
		if (isnan(score)) {
			err_set("%s: record %d at offset %zu: score is NaN", path, i,
				o);
			goto fail;
		}
		if (len < 0 || (uint32_t)len > max_len) {
			err_set("%s: record %d at offset %zu: length %d at offset "
				"%zu outside 0..max_token_length %u", path, i, o,
				len, o + 4, max_len);
			goto fail;
		}
		if (size - o - 8 < (size_t)len) {
			err_set("%s: record %d at offset %zu: %d bytes of text run "
				"past the end of the file (%zu bytes)", path, i, o,
				len, size);
			goto fail;
		}
		const char *s = data + o + 8;
		if (memchr(s, '\0', (size_t)len)) {
			err_set("%s: record %d at offset %zu: piece holds a NUL byte",
				path, i, o);
			goto fail;
		}
		o += 8 + (size_t)len;
		int32_t type = TOKEN_TYPE_NORMAL;
		if (len == 5 && memcmp(s, "\n<s>\n", 5) == 0) {
			s = "<s>";
			len = 3;
			type = TOKEN_TYPE_CONTROL;
		} else if (len == 6 && memcmp(s, "\n</s>\n", 6) == 0) {
			s = "</s>";
			len = 4;
			type = TOKEN_TYPE_CONTROL;
		} else if (i == 0 && len == 5 && memcmp(s, "<unk>", 5) == 0) {
			type = TOKEN_TYPE_UNKNOWN;
		} else if (piece_byte(s, (size_t)len) >= 0) {
			type = TOKEN_TYPE_BYTE;
		}
		size_t n;
		spell_spaces(s, (size_t)len, &buf, &bufcap, &n);
		tok_add(t, buf, n, score, type);
	}
	/* llama2.c's fixed ids: 0 <unk>, 1 BOS, 2 EOS */
	t->unk = t->type[0] == TOKEN_TYPE_UNKNOWN ? 0 : -1;
	t->bos = vocab_size > 1 && t->type[1] == TOKEN_TYPE_CONTROL ? 1 : -1;
	t->eos = vocab_size > 2 && t->type[2] == TOKEN_TYPE_CONTROL ? 2 : -1;
	t->has_scores = true;
	t->add_bos = true;
	if (tok_finish(t, path) < 0)
		goto fail;
	free(buf);
	free(data);
	return t;
fail:
	free(buf);
	free(data);
	tokenizer_free(t);
	return NULL;
}

/* Reads an optional token id key: -1 when absent or 0xFFFFFFFF. */
static int gguf_token_id(const gguf_t *g, const char *key, int32_t n_vocab,
			 int32_t *out)
{
	int64_t v;
	*out = -1;
	if (gguf_find_key(g, key) < 0)
		return 0;
	if (gguf_get_int(g, key, &v) < 0)
		return err_set("%s: not an integer", key);
	if (v == -1 || v == (int64_t)ID_NONE_U32)
		return 0;
	if (v < 0 || v >= n_vocab)
		return err_set("%s: token id %lld out of range (vocabulary %d)",
			       key, (long long)v, n_vocab);
	*out = (int32_t)v;
	return 0;
}

/* Element i of a numeric array as int64 (token_type may be any int). */
static int64_t arr_int(const void *data, gguf_type_t elem, uint64_t i)
{
	const unsigned char *p = data;
	switch (elem) {
	case GGUF_TYPE_INT8: return (int8_t)p[i];
	case GGUF_TYPE_UINT8: return p[i];
	case GGUF_TYPE_INT16: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
	case GGUF_TYPE_UINT16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return v; }
	case GGUF_TYPE_INT32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
	case GGUF_TYPE_UINT32: { uint32_t v; memcpy(&v, p + 4 * i, 4); return v; }
	case GGUF_TYPE_INT64: { int64_t v; memcpy(&v, p + 8 * i, 8); return v; }
	case GGUF_TYPE_UINT64: { uint64_t v; memcpy(&v, p + 8 * i, 8); return (int64_t)v; }
	default: return 0;
	}
}

static bool gguf_type_is_int(gguf_type_t e)
{
	return e == GGUF_TYPE_INT8 || e == GGUF_TYPE_UINT8 ||
	       e == GGUF_TYPE_INT16 || e == GGUF_TYPE_UINT16 ||
	       e == GGUF_TYPE_INT32 || e == GGUF_TYPE_UINT32 ||
	       e == GGUF_TYPE_INT64 || e == GGUF_TYPE_UINT64;
}

/* Builds the merge table from (left, right) pairs already in t->merge. */
static void tok_index_merges(tokenizer_t *t)
{
	size_t cap = pow2_at_least((size_t)t->n_merges * 2 + 2);
	free(t->mkey);
	free(t->mrank);
	t->mkey = xmalloc(cap * sizeof *t->mkey);
	t->mrank = xmalloc(cap * sizeof *t->mrank);
	memset(t->mkey, 0xff, cap * sizeof *t->mkey);
	t->mmask = cap - 1;
	for (int32_t r = 0; r < t->n_merges; r++) {
		uint64_t key = (uint64_t)(uint32_t)t->merge[3 * r] << 32 |
			       (uint32_t)t->merge[3 * r + 1];
		size_t i = hash_u64(key) & t->mmask;
		while (t->mkey[i] != UINT64_MAX && t->mkey[i] != key)
			i = (i + 1) & t->mmask;
		if (t->mkey[i] == UINT64_MAX) { /* a repeated pair keeps rank 1st */
			t->mkey[i] = key;
			t->mrank[i] = r;
		}
	}
}

/* Rank of the merge (l, r), -1 if none. */
static int32_t tok_merge_rank(const tokenizer_t *t, int32_t l, int32_t r)
{
	uint64_t key = (uint64_t)(uint32_t)l << 32 | (uint32_t)r;
	for (size_t i = hash_u64(key) & t->mmask;; i = (i + 1) & t->mmask) {
		if (t->mkey[i] == key)
			return t->mrank[i];
		if (t->mkey[i] == UINT64_MAX)
			return -1;
	}
}

static void gpt2_byte_tokens(tokenizer_t *t)
{
	const gpt2_map_t *m = gpt2_map_get();
	for (int b = 0; b < 256; b++)
		t->byte_tok[b] = tok_find2(t, m->utf8[b], m->nutf8[b], NULL, 0);
}

/* tokenizer.ggml.model as a kind; -1 + err_get(). */
static int gguf_tok_kind(const gguf_t *g, tokenizer_kind_t *kind)
{
	gguf_str_t model;
	if (gguf_get_str(g, "tokenizer.ggml.model", &model) < 0)
		return err_set("tokenizer.ggml.model: missing or not a string");
	if (model.n == 5 && memcmp(model.s, "llama", 5) == 0)
		*kind = TOKENIZER_LLAMA;
	else if (model.n == 4 && memcmp(model.s, "gpt2", 4) == 0)
		*kind = TOKENIZER_GPT2;
	else
		return err_set("tokenizer.ggml.model: unsupported tokenizer '%.*s' "
			       "(llama and gpt2 are supported)",
			       (int)(model.n > 64 ? 64 : model.n), model.s);
	return 0;
}

/* The per-token arrays of the vocabulary, each checked against the token
 * count: tokens (required), scores and token types (optional). */
typedef struct gguf_vocab {
	int32_t n;
	const void *scores;     /* float32[n] or NULL */
	const void *types;      /* integers[n] or NULL */
	gguf_type_t types_elem;
} gguf_vocab_t;

static int gguf_vocab_arrays(const gguf_t *g, gguf_vocab_t *v)
{
	gguf_type_t elem;
	uint64_t n;
	if (gguf_get_arr(g, "tokenizer.ggml.tokens", &elem, &n) < 0 ||
	    elem != GGUF_TYPE_STRING)
		return err_set("tokenizer.ggml.tokens: missing or not a string array");
	if (n == 0 || n > INT32_MAX / 2)
		return err_set("tokenizer.ggml.tokens: vocabulary size %llu out of "
			       "range", (unsigned long long)n);
	v->n = (int32_t)n;
	v->types_elem = GGUF_TYPE_INT32;
	if (gguf_find_key(g, "tokenizer.ggml.scores") >= 0) {
		uint64_t ns;
		if (gguf_get_arr(g, "tokenizer.ggml.scores", &elem, &ns) < 0 ||
		    elem != GGUF_TYPE_FLOAT32 || ns != n ||
		    !(v->scores = gguf_arr_data(g, "tokenizer.ggml.scores")))
			return err_set("tokenizer.ggml.scores: not a float32 array "
				       "of %d", v->n);
	}
	if (gguf_find_key(g, "tokenizer.ggml.token_type") >= 0) {
		uint64_t nt;
		if (gguf_get_arr(g, "tokenizer.ggml.token_type", &v->types_elem,
				 &nt) < 0 || !gguf_type_is_int(v->types_elem) ||
		    nt != n ||
		    !(v->types = gguf_arr_data(g, "tokenizer.ggml.token_type")))
			return err_set("tokenizer.ggml.token_type: not an integer "
				       "array of %d", v->n);
	}
	return 0;
}

/* Adds every token with its score and type; -1 + err_get(). */
static int gguf_vocab_add(tokenizer_t *t, const gguf_t *g, const gguf_vocab_t *v)
{
	for (int32_t i = 0; i < v->n; i++) {
		gguf_str_t s;
		if (gguf_arr_str(g, "tokenizer.ggml.tokens", (uint64_t)i, &s) < 0)
			return err_wrap("tokenizer.ggml.tokens[%d]", i);
		if (s.n > MAX_PIECE || memchr(s.s, '\0', s.n))
			return err_set("tokenizer.ggml.tokens[%d]: piece too long or "
				       "holds a NUL byte", i);
		float sc = 0;
		if (v->scores) {
			uint32_t u;
			memcpy(&u, (const char *)v->scores + 4 * (size_t)i, 4);
			sc = u32_to_f32(u);
			if (isnan(sc))
				return err_set("tokenizer.ggml.scores[%d]: NaN", i);
		}
		int64_t ty = v->types ? arr_int(v->types, v->types_elem, (uint64_t)i)
				      : TOKEN_TYPE_NORMAL;
		if (ty < 0 || ty > TOKEN_TYPE_BYTE)
			return err_set("tokenizer.ggml.token_type[%d]: %lld is not a "
				       "token type (0..6)", i, (long long)ty);
		tok_add(t, s.s, s.n, sc, (int32_t)ty);
	}
	t->has_scores = v->scores != NULL;
	return 0;
}

/* Merge r from its "left right" spelling (each side and their
 * concatenation in the vocabulary); -1 + err_get() naming src. */
static int tok_set_merge(tokenizer_t *t, const char *s, size_t n, uint64_t r,
			 const char *src)
{
	const char *sp = n > 1 ? memchr(s + 1, ' ', n - 1) : NULL;
	int w = (int)(n > 64 ? 64 : n);
	if (!sp)
		return err_set("%s[%llu]: '%.*s' is not \"left right\"", src,
			       (unsigned long long)r, w, s);
	size_t nl = (size_t)(sp - s), nr = n - nl - 1;
	int32_t l = tok_find2(t, s, nl, NULL, 0);
	int32_t rt = tok_find2(t, sp + 1, nr, NULL, 0);
	int32_t res = tok_find2(t, s, nl, sp + 1, nr);
	if (l < 0 || rt < 0 || res < 0)
		return err_set("%s[%llu]: '%.*s' names a %s not in the vocabulary",
			       src, (unsigned long long)r, w, s,
			       l < 0 ? "left piece" : rt < 0 ? "right piece"
							     : "merged piece");
	t->merge[3 * r] = l;
	t->merge[3 * r + 1] = rt;
	t->merge[3 * r + 2] = res;
	return 0;
}

/* A byte-level BPE's pre-tokenizer and merges ("left right", each side and
 * their concatenation in the vocabulary); -1 + err_get(). */
static int gguf_bpe_merges(tokenizer_t *t, const gguf_t *g)
{
	gguf_str_t pre = { NULL, 0 };
	if (gguf_find_key(g, "tokenizer.ggml.pre") >= 0 &&
	    gguf_get_str(g, "tokenizer.ggml.pre", &pre) < 0)
		return err_set("tokenizer.ggml.pre: not a string");
	if (tok_set_pre(t, pre.s, pre.n) < 0)
		return -1;
	gguf_type_t elem;
	uint64_t nm;
	if (gguf_get_arr(g, "tokenizer.ggml.merges", &elem, &nm) < 0 ||
	    elem != GGUF_TYPE_STRING)
		return err_set("tokenizer.ggml.merges: missing or not a string array");
	if (nm > INT32_MAX / 4)
		return err_set("tokenizer.ggml.merges: %llu merges is too many",
			       (unsigned long long)nm);
	t->merge = xmalloc((size_t)nm * 3 * sizeof *t->merge);
	for (uint64_t r = 0; r < nm; r++) {
		gguf_str_t s;
		if (gguf_arr_str(g, "tokenizer.ggml.merges", r, &s) < 0)
			return err_wrap("tokenizer.ggml.merges[%llu]",
					(unsigned long long)r);
		if (tok_set_merge(t, s.s, s.n, r, "tokenizer.ggml.merges") < 0)
			return -1;
	}
	t->n_merges = (int32_t)nm;
	tok_index_merges(t);
	gpt2_byte_tokens(t);
	return 0;
}

tokenizer_t *tokenizer_load_gguf(const gguf_t *g)
{
	tokenizer_kind_t kind = TOKENIZER_LLAMA;
	gguf_vocab_t v = {0};
	if (gguf_tok_kind(g, &kind) < 0 || gguf_vocab_arrays(g, &v) < 0)
		return NULL;
	tokenizer_t *t = tok_new(kind, v.n);
	if (gguf_vocab_add(t, g, &v) < 0 ||
	    gguf_token_id(g, "tokenizer.ggml.bos_token_id", v.n, &t->bos) < 0 ||
	    gguf_token_id(g, "tokenizer.ggml.eos_token_id", v.n, &t->eos) < 0 ||
	    gguf_token_id(g, "tokenizer.ggml.unknown_token_id", v.n, &t->unk) < 0 ||
	    gguf_token_id(g, "tokenizer.ggml.padding_token_id", v.n, &t->pad) < 0 ||
	    tok_finish(t, "tokenizer.ggml.tokens") < 0 ||
	    (kind == TOKENIZER_GPT2 && gguf_bpe_merges(t, g) < 0)) {
		tokenizer_free(t);
		return NULL;
	}
	bool ab;
	if (kind == TOKENIZER_LLAMA &&
	    gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &ab) == 0)
		t->no_space_prefix = !ab;
	if (gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &ab) == 0)
		t->add_bos = ab;
	else
		t->add_bos = kind == TOKENIZER_LLAMA || t->pre == TOK_PRE_LLAMA3;
	if (gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &ab) == 0)
		t->add_eos = ab;
	return t;
}

tokenizer_t *tokenizer_build(const tokenizer_spec_t *sp)
{
	if (sp->kind != TOKENIZER_LLAMA && sp->kind != TOKENIZER_GPT2) {
		err_set("tokenizer_build: unknown kind %d", (int)sp->kind);
		return NULL;
	}
	if (sp->n <= 0 || sp->n > INT32_MAX / 2) {
		err_set("tokenizer_build: vocabulary size %d out of range", sp->n);
		return NULL;
	}
	tokenizer_t *t = tok_new(sp->kind, sp->n);
	for (int32_t i = 0; i < sp->n; i++) {
		const char *p = sp->pieces[i] ? sp->pieces[i] : "";
		int32_t ty = sp->types ? sp->types[i] : TOKEN_TYPE_NORMAL;
		if (ty < 0 || ty > TOKEN_TYPE_BYTE) {
			err_set("tokenizer_build: token %d: type %d is not 0..6", i, ty);
			goto fail;
		}
		tok_add(t, p, strlen(p), sp->scores ? sp->scores[i] : 0, ty);
	}
	t->has_scores = sp->scores != NULL;
	t->bos = sp->bos;
	t->eos = sp->eos;
	t->unk = sp->unk;
	t->pad = sp->pad;
	t->no_space_prefix = sp->no_space_prefix;
	if (tok_finish(t, "tokenizer_build") < 0)
		goto fail;
	if (sp->kind == TOKENIZER_GPT2) {
		const char *pre = sp->pre ? sp->pre : "";
		if (tok_set_pre(t, pre, strlen(pre)) < 0)
			goto fail;
		t->merge = xmalloc(((size_t)sp->n_merges + 1) * 3 * sizeof *t->merge);
		for (int32_t r = 0; r < sp->n_merges; r++)
			if (tok_set_merge(t, sp->merges[r], strlen(sp->merges[r]),
					  (uint64_t)r, "merges") < 0)
				goto fail;
		t->n_merges = sp->n_merges;
		tok_index_merges(t);
		gpt2_byte_tokens(t);
	}
	t->add_bos = sp->add_bos >= 0 ? sp->add_bos != 0
		     : sp->kind == TOKENIZER_LLAMA || t->pre == TOK_PRE_LLAMA3;
	t->add_eos = sp->add_eos > 0;
	return t;
fail:
	tokenizer_free(t);
	return NULL;
}

/* -- the synthetic vocabulary -- */

/* Letters weighted by English frequency, for plausible merges. */
static const char synth_letters[] =
	"eeeeeeeeeeeetttttttttaaaaaaaaooooooooiiiiiiinnnnnnnssssss"
	"hhhhhhrrrrrrddddlllllcccuuummmwwffggyyppbbvkjxqzTSAIM.,";

/* Picks an index in [0, n) biased towards small ones (common pieces). */
static int32_t synth_pick(rng_t *r, int32_t n)
{
	float u = rng_float(r);
	int32_t i = (int32_t)(u * u * (float)n);
	return i < n ? i : n - 1;
}

/* Adds merged pieces until n_vocab: left is a word start (space marker),
 * a letter or an earlier merge; right is a letter or an earlier merge that
 * does not start a word, so the marker only ever leads a piece.
 * For gpt2 each addition also records its merge. */
static void synth_merges(tokenizer_t *t, int32_t n_vocab, rng_t *rng,
			 const int32_t *letter, int32_t space, int32_t first)
{
	const size_t max_len = 16;
	size_t mcap = 0;
	uint64_t tries = 0;
	int32_t n_letters = (int32_t)strlen(synth_letters);
	while (t->n_vocab < n_vocab) {
		int32_t merged = t->n_vocab - first; /* merges so far */
		float u = rng_float(rng);
		int32_t l, r;
		if (u < 0.3f || merged == 0)
			l = u < 0.15f || merged == 0 ? space
			    : letter[rng_next(rng) % (uint64_t)n_letters];
		else
			l = first + synth_pick(rng, merged);
		if (rng_float(rng) < 0.7f || merged == 0)
			r = letter[rng_next(rng) % (uint64_t)n_letters];
		else
			r = first + synth_pick(rng, merged);
		/* after many misses widen to any pair (still deterministic) */
		if (++tries > 64ull * (uint64_t)n_vocab && merged > 0) {
			l = first + (int32_t)(rng_next(rng) % (uint64_t)merged);
			r = first + (int32_t)(rng_next(rng) % (uint64_t)merged);
		}
		const char *ls = tok_str(t, l), *rs = tok_str(t, r);
		size_t nl = t->len[l], nr = t->len[r];
		size_t ns = t->len[space];
		if (nl + nr > max_len ||
		    (nr >= ns && memcmp(rs, tok_str(t, space), ns) == 0))
			continue;
		if (tok_find2(t, ls, nl, rs, nr) >= 0)
			continue;
		/* copy first: tok_add may move the pool */
		char buf[64];
		memcpy(buf, ls, nl);
		memcpy(buf + nl, rs, nr);
		int32_t id = tok_add(t, buf, nl + nr, -(float)merged,
				     TOKEN_TYPE_NORMAL);
		if ((size_t)(t->n_vocab * 2 + 2) > t->mask + 1)
			tok_reindex(t);
		else
			tok_index(t, id);
		if (t->kind == TOKENIZER_GPT2) {
			if ((size_t)t->n_merges == mcap) {
				mcap = mcap ? mcap * 2 : 1024;
				t->merge = xrealloc(t->merge,
						    mcap * 3 * sizeof *t->merge);
			}
			t->merge[3 * t->n_merges] = l;
			t->merge[3 * t->n_merges + 1] = r;
			t->merge[3 * t->n_merges + 2] = id;
			t->n_merges++;
		}
	}
}

/* The pre-tokenizer a synthetic gpt2 vocabulary of size n imitates. */
static const char *synth_pre_name(int32_t n)
{
	switch (n) {
	case 49152: return "smollm";
	case 151936: return "qwen2";
	case 128256: return "llama-bpe";
	default: return "gpt2";
	}
}

tokenizer_t *tokenizer_synth(tokenizer_kind_t kind, int32_t n_vocab,
			     uint64_t seed)
{
	if (kind != TOKENIZER_LLAMA && kind != TOKENIZER_GPT2) {
		err_set("tokenizer_synth: unknown kind %d", (int)kind);
		return NULL;
	}
	if (n_vocab < 259 || n_vocab > (1 << 26)) {
		err_set("tokenizer_synth: n_vocab %d outside 259..%d", n_vocab,
			1 << 26);
		return NULL;
	}
	rng_t rng;
	rng_seed(&rng, seed);
	tokenizer_t *t = tok_new(kind, n_vocab);
	int32_t letter[sizeof synth_letters];
	int32_t space;
	if (kind == TOKENIZER_LLAMA) {
		t->unk = tok_add(t, "<unk>", 5, 0, TOKEN_TYPE_UNKNOWN);
		t->bos = tok_add(t, "<s>", 3, 0, TOKEN_TYPE_CONTROL);
		t->eos = tok_add(t, "</s>", 4, 0, TOKEN_TYPE_CONTROL);
		for (int b = 0; b < 256; b++) {
			char s[8];
			snprintf(s, sizeof s, "<0x%02X>", b);
			tok_add(t, s, 6, 0, TOKEN_TYPE_BYTE);
		}
		/* single characters: U+2581, then printable ASCII; scores
		 * below every merge, as SentencePiece lists them */
		space = t->n_vocab < n_vocab
			? tok_add(t, "\xE2\x96\x81", 3, -1e6f, TOKEN_TYPE_NORMAL)
			: -1;
		for (int c = 0x21; c <= 0x7E && t->n_vocab < n_vocab; c++) {
			char s = (char)c;
			tok_add(t, &s, 1, -1e6f - (float)c, TOKEN_TYPE_NORMAL);
		}
		t->has_scores = true;
		t->add_bos = true;
	} else {
		const gpt2_map_t *m = gpt2_map_get();
		/* the 256 byte-level chars in code point order (GPT-2's) */
		for (uint32_t cp = 0; cp < GPT2_CP_MAX; cp++)
			if (m->byte[cp] >= 0) {
				int b = m->byte[cp];
				tok_add(t, m->utf8[b], m->nutf8[b], 0,
					TOKEN_TYPE_NORMAL);
			}
		t->bos = tok_add(t, "<|endoftext|>", 13, 0, TOKEN_TYPE_CONTROL);
		tok_add(t, "<|im_start|>", 12, 0, TOKEN_TYPE_CONTROL);
		t->eos = tok_add(t, "<|im_end|>", 10, 0, TOKEN_TYPE_CONTROL);
		space = -1;
		t->add_bos = false;
	}
	if (tok_finish(t, "tokenizer_synth") < 0)
		goto fail;
	if (kind == TOKENIZER_GPT2) {
		if (tok_set_pre(t, synth_pre_name(n_vocab),
				strlen(synth_pre_name(n_vocab))) < 0)
			goto fail;
		gpt2_byte_tokens(t);
		space = t->byte_tok[' '];
	}
	for (size_t i = 0; i < sizeof synth_letters - 1; i++) {
		char c = synth_letters[i];
		letter[i] = kind == TOKENIZER_LLAMA ? tok_find2(t, &c, 1, NULL, 0)
						    : t->byte_tok[(unsigned char)c];
	}
	if (t->n_vocab < n_vocab) {
		for (size_t i = 0; i < sizeof synth_letters - 1; i++)
			assert(letter[i] >= 0 && space >= 0);
		synth_merges(t, n_vocab, &rng, letter, space, t->n_vocab);
	}
	if (kind == TOKENIZER_GPT2)
		tok_index_merges(t);
	else
		tok_llama_bytes(t);
	return t;
fail:
	tokenizer_free(t);
	return NULL;
}

/* ---- 6. the GGUF writer and accessors ---- */

void tokenizer_write_gguf(const tokenizer_t *t, gguf_writer_t *w)
{
	const char **v = xmalloc((size_t)t->n_vocab * sizeof *v);
	for (int32_t i = 0; i < t->n_vocab; i++)
		v[i] = tok_str(t, i);
	gguf_writer_set_str(w, "tokenizer.ggml.model",
			    t->kind == TOKENIZER_LLAMA ? "llama" : "gpt2");
	gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", v,
				(uint64_t)t->n_vocab);
	free(v);
	if (t->has_scores)
		gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32,
				    t->score, (uint64_t)t->n_vocab);
	gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32,
			    t->type, (uint64_t)t->n_vocab);
	if (t->kind == TOKENIZER_GPT2) {
		gguf_writer_set_str(w, "tokenizer.ggml.pre", t->pre_name);
		char **m = xmalloc((size_t)t->n_merges * sizeof *m + 1);
		for (int32_t r = 0; r < t->n_merges; r++) {
			int32_t l = t->merge[3 * r], rt = t->merge[3 * r + 1];
			m[r] = xmalloc(t->len[l] + t->len[rt] + 2);
			memcpy(m[r], tok_str(t, l), t->len[l]);
			m[r][t->len[l]] = ' ';
			memcpy(m[r] + t->len[l] + 1, tok_str(t, rt),
			       t->len[rt] + 1);
		}
		gguf_writer_set_arr_str(w, "tokenizer.ggml.merges",
					(const char *const *)m,
					(uint64_t)t->n_merges);
		for (int32_t r = 0; r < t->n_merges; r++)
			free(m[r]);
		free(m);
	}
	if (t->bos >= 0)
		gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id",
				    (uint32_t)t->bos);
	if (t->eos >= 0)
		gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id",
				    (uint32_t)t->eos);
	if (t->unk >= 0)
		gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id",
				    (uint32_t)t->unk);
	if (t->pad >= 0)
		gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id",
				    (uint32_t)t->pad);
	gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", t->add_bos);
	if (t->add_eos)
		gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", true);
	if (t->no_space_prefix)
		gguf_writer_set_bool(w, "tokenizer.ggml.add_space_prefix", false);
}

tokenizer_kind_t tokenizer_kind(const tokenizer_t *t) { return t->kind; }
int32_t tokenizer_n_vocab(const tokenizer_t *t) { return t->n_vocab; }
int32_t tokenizer_bos(const tokenizer_t *t) { return t->bos; }
int32_t tokenizer_eos(const tokenizer_t *t) { return t->eos; }
int32_t tokenizer_unk(const tokenizer_t *t) { return t->unk; }
int32_t tokenizer_type(const tokenizer_t *t, int32_t id)
{
	return id >= 0 && id < t->n_vocab ? t->type[id] : -1;
}
bool tokenizer_add_bos(const tokenizer_t *t) { return t->add_bos; }
const char *tokenizer_pre(const tokenizer_t *t)
{
	return t->kind == TOKENIZER_GPT2 ? t->pre_name : NULL;
}

int32_t tokenizer_find(const tokenizer_t *t, const char *piece)
{
	return tok_find2(t, piece, strlen(piece), NULL, 0);
}

const char *tokenizer_piece(const tokenizer_t *t, int32_t id)
{
	return id >= 0 && id < t->n_vocab ? tok_str(t, id) : NULL;
}

/* ---- 7. encode ----
 * Both kinds merge adjacent symbols through one loop: symbols form a
 * linked list, candidate pairs sit in a binary heap keyed by (priority,
 * position of the left symbol), and a popped pair is used only if both
 * symbols still hold the ids it was built from and are still adjacent
 * (stale entries are skipped, never removed). Priority is the merge rank
 * (gpt2) or the negated score of the merged piece (llama), so the pair
 * chosen is the one run.c's rescan would choose: best first, leftmost on
 * ties. Each merge adds at most two entries: O(n log n). */

typedef struct heap_ent {
	uint32_t key;   /* lower merges first */
	int32_t left, right;
	int32_t idl, idr, merged;
} heap_ent_t;

typedef struct work {
	int32_t *id, *prev, *next; /* (n) symbols; id -2 once merged away */
	int32_t *sl;               /* (n) symbol lengths (encode_spm_lc) */
	heap_ent_t *heap;          /* (3 n) */
	size_t heap_n;
	int64_t n_out, max;
	int32_t *out;
	char *buf;                 /* scratch text */
} work_t;

static bool heap_less(const heap_ent_t *a, const heap_ent_t *b)
{
	return a->key != b->key ? a->key < b->key : a->left < b->left;
}

static void heap_push(work_t *w, heap_ent_t e)
{
	size_t i = w->heap_n++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!heap_less(&e, &w->heap[p]))
			break;
		w->heap[i] = w->heap[p];
		i = p;
	}
	w->heap[i] = e;
}

static heap_ent_t heap_pop(work_t *w)
{
	heap_ent_t top = w->heap[0], last = w->heap[--w->heap_n];
	size_t i = 0, n = w->heap_n;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && heap_less(&w->heap[c + 1], &w->heap[c]))
			c++;
		if (!heap_less(&w->heap[c], &last))
			break;
		w->heap[i] = w->heap[c];
		i = c;
	}
	if (n > 0)
		w->heap[i] = last;
	return top;
}

/* Maps a float to a key whose unsigned order is the float order. */
static uint32_t float_order(float f)
{
	uint32_t u;
	f += 0.0f; /* -0.0 -> +0.0: run.c compares them equal */
	memcpy(&u, &f, sizeof u);
	return u & 0x80000000u ? ~u : u | 0x80000000u;
}

/* Queues the pair (l, r) if it merges. */
static void pair_try(const tokenizer_t *t, work_t *w, int32_t l, int32_t r)
{
	int32_t a = w->id[l], b = w->id[r];
	if (a < 0 || b < 0)
		return;
	heap_ent_t e = { 0, l, r, a, b, -1 };
	if (t->kind == TOKENIZER_LLAMA) {
		int32_t m = tok_find2(t, tok_str(t, a), t->len[a], tok_str(t, b),
				      t->len[b]);
		if (m < 0 || t->type[m] == TOKEN_TYPE_CONTROL)
			return;
		e.key = ~float_order(t->score[m]);
		e.merged = m;
	} else {
		int32_t rank = tok_merge_rank(t, a, b);
		if (rank < 0)
			return;
		e.key = (uint32_t)rank;
		e.merged = t->merge[3 * rank + 2];
	}
	heap_push(w, e);
}

static void emit(work_t *w, int32_t id)
{
	if (w->n_out < w->max)
		w->out[w->n_out] = id;
	w->n_out++;
}

/* Merges symbols 0..n-1 (already linked) and emits the result. */
static void merge_run(const tokenizer_t *t, work_t *w, int32_t n)
{
	w->heap_n = 0;
	for (int32_t i = 0; i + 1 < n; i++)
		pair_try(t, w, i, i + 1);
	while (w->heap_n > 0) {
		heap_ent_t e = heap_pop(w);
		int32_t l = e.left, r = e.right;
		if (w->id[l] != e.idl || w->id[r] != e.idr || w->next[l] != r)
			continue;
		w->id[l] = e.merged;
		int32_t nx = w->next[r];
		w->next[l] = nx;
		if (nx >= 0)
			w->prev[nx] = l;
		w->id[r] = -2;
		w->next[r] = -1;
		if (w->prev[l] >= 0)
			pair_try(t, w, w->prev[l], l);
		if (nx >= 0)
			pair_try(t, w, l, nx);
	}
	for (int32_t i = n > 0 ? 0 : -1; i >= 0; i = w->next[i]) {
		if (w->id[i] >= 0)
			emit(w, w->id[i]);
		else if (t->unk >= 0)
			emit(w, t->unk); /* a byte the vocabulary cannot spell */
	}
}

static void link_symbols(work_t *w, int32_t n)
{
	for (int32_t i = 0; i < n; i++) {
		w->prev[i] = i - 1;
		w->next[i] = i + 1 < n ? i + 1 : -1;
	}
}

/* SentencePiece's escaping of text into dst: each space becomes U+2581
 * (3 bytes), with one more in front when prefix; dst holds 3 * len + 3
 * bytes. Returns the bytes written. */
static size_t spm_escape(char *dst, const char *text, size_t len, bool prefix)
{
	static const char sp[] = "\xE2\x96\x81"; /* U+2581 */
	size_t n = 0;
	if (prefix) {
		memcpy(dst, sp, 3);
		n = 3;
	}
	for (size_t i = 0; i < len; i++) {
		if (text[i] == ' ') {
			memcpy(dst + n, sp, 3);
			n += 3;
		} else {
			dst[n++] = text[i];
		}
	}
	return n;
}

/* SentencePiece: dummy prefix, ' ' -> U+2581, code points or their bytes,
 * then merges by score. */
static int encode_llama(const tokenizer_t *t, const char *text, size_t len,
			work_t *w)
{
	if (len == 0)
		return 0;
	char *s = w->buf;
	size_t n = spm_escape(s, text, len, !t->no_space_prefix);
	int32_t ns = 0;
	for (size_t i = 0; i < n;) {
		size_t k = utf8_group((const unsigned char *)s + i, n - i);
		int32_t id = tok_find2(t, s + i, k, NULL, 0);
		if (id >= 0 && t->type[id] != TOKEN_TYPE_CONTROL) {
			w->id[ns++] = id;
		} else {
			bool bytes = true;
			for (size_t j = 0; j < k; j++)
				bytes &= t->byte_tok[(unsigned char)s[i + j]] >= 0;
			if (bytes) {
				for (size_t j = 0; j < k; j++)
					w->id[ns++] = t->byte_tok[(unsigned char)s[i + j]];
			} else if (t->unk >= 0) {
				w->id[ns++] = t->unk;
			} else {
				return err_set("tokenizer: byte %zu of the text has no "
					       "piece, byte piece or <unk>",
					       i >= 3 ? i - 3 : 0);
			}
		}
		i += k;
	}
	link_symbols(w, ns);
	merge_run(t, w, ns);
	return 0;
}

/* Byte-level BPE of one pre-tokenized chunk. */
static void encode_chunk(const tokenizer_t *t, const char *s, size_t n,
			 work_t *w)
{
	if (t->ignore_merges) {
		const gpt2_map_t *m = gpt2_map_get();
		size_t k = 0;
		for (size_t i = 0; i < n; i++) {
			memcpy(w->buf + k, m->utf8[(unsigned char)s[i]],
			       m->nutf8[(unsigned char)s[i]]);
			k += m->nutf8[(unsigned char)s[i]];
		}
		int32_t id = tok_find2(t, w->buf, k, NULL, 0);
		if (id >= 0) {
			emit(w, id);
			return;
		}
	}
	for (size_t i = 0; i < n; i++)
		w->id[i] = t->byte_tok[(unsigned char)s[i]];
	link_symbols(w, (int32_t)n);
	merge_run(t, w, (int32_t)n);
}

/* Byte-level BPE of a text segment with no special tokens in it. */
static int encode_segment(const tokenizer_t *t, const char *s, size_t n,
			  work_t *w, pcre2_match_data *md, chunks_t *c,
			  chunks_t *tmp)
{
	if (pre_split(t, s, n, md, c, tmp) < 0)
		return -1;
	for (size_t i = 0; i < c->n; i++)
		encode_chunk(t, s + c->v[2 * i], c->v[2 * i + 1], w);
	return 0;
}

/* The special token that starts at s (longest first), -1 if none. */
static int32_t special_at(const tokenizer_t *t, const char *s, size_t n)
{
	unsigned char b = (unsigned char)s[0];
	for (int32_t k = t->special_start[b]; k < t->special_start[b + 1]; k++) {
		int32_t id = t->special[k];
		if (t->len[id] <= n && memcmp(tok_str(t, id), s, t->len[id]) == 0)
			return id;
	}
	return -1;
}

static int encode_gpt2(const tokenizer_t *t, const char *text, size_t len,
		       work_t *w)
{
	pcre2_match_data *md = pcre2_match_data_create(4, NULL);
	if (!md)
		return err_set("tokenizer: pcre2_match_data_create failed");
	chunks_t c = { 0 }, tmp = { 0 };
	int rc = 0;
	size_t seg = 0;
	for (size_t i = 0; i <= len && rc == 0;) {
		int32_t sp = i < len ? special_at(t, text + i, len - i) : -1;
		if (i < len && sp < 0) {
			i++;
			continue;
		}
		if (i > seg)
			rc = encode_segment(t, text + seg, i - seg, w, md, &c, &tmp);
		if (sp < 0)
			break;
		emit(w, sp);
		i += t->len[sp];
		seg = i;
	}
	free(c.v);
	free(tmp.v);
	pcre2_match_data_free(md);
	return rc;
}

int64_t tokenizer_pre_split(const tokenizer_t *t, const char *text,
			    size_t len, size_t *ends, int64_t max)
{
	if (t->kind != TOKENIZER_GPT2)
		return err_set("tokenizer_pre_split: not a gpt2 tokenizer");
	pcre2_match_data *md = pcre2_match_data_create(4, NULL);
	if (!md)
		return err_set("tokenizer: pcre2_match_data_create failed");
	chunks_t c = { 0 }, tmp = { 0 };
	int64_t n = -1;
	if (pre_split(t, text, len, md, &c, &tmp) == 0) {
		for (size_t i = 0; i < c.n; i++)
			if ((int64_t)i < max)
				ends[i] = c.v[2 * i] + c.v[2 * i + 1];
		n = (int64_t)c.n;
	}
	free(c.v);
	free(tmp.v);
	pcre2_match_data_free(md);
	return n;
}

int64_t tokenizer_encode(const tokenizer_t *t, const char *text, size_t len,
			 bool add_bos, int32_t *ids, int64_t max)
{
	if (!text && len > 0)
		return err_set("tokenizer_encode: NULL text");
	if (max < 0 || (max > 0 && !ids))
		return err_set("tokenizer_encode: bad output buffer");
	if (len > (size_t)INT32_MAX / 4)
		return err_set("tokenizer_encode: text of %zu bytes is too long",
			       len);
	work_t w = { 0 };
	/* symbols: one per byte at most, and for llama a space may become
	 * the 3 bytes of U+2581, plus the dummy prefix */
	size_t nsym = t->kind == TOKENIZER_LLAMA ? 3 * len + 3 : len + 1;
	w.id = xmalloc(nsym * sizeof *w.id);
	w.prev = xmalloc(nsym * sizeof *w.prev);
	w.next = xmalloc(nsym * sizeof *w.next);
	w.heap = xmalloc(3 * nsym * sizeof *w.heap);
	w.buf = xmalloc(3 * len + 8);
	w.out = ids;
	w.max = max;
	if (add_bos && t->bos >= 0)
		emit(&w, t->bos);
	int rc = t->kind == TOKENIZER_LLAMA ? encode_llama(t, text, len, &w)
					    : encode_gpt2(t, text, len, &w);
	free(w.id);
	free(w.prev);
	free(w.next);
	free(w.heap);
	free(w.buf);
	return rc < 0 ? -1 : w.n_out;
}

/* -- llama_tokenize()'s semantics (tokenizer_tokenize) -- */

typedef struct frag {
	size_t off, len; /* raw text when id < 0 */
	int32_t id;
} frag_t;

typedef struct frags {
	frag_t *v;
	size_t n, cap;
} frags_t;

static void frags_push(frags_t *f, size_t off, size_t len, int32_t id)
{
	if (f->n == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 16;
		f->v = xrealloc(f->v, f->cap * sizeof *f->v);
	}
	f->v[f->n++] = (frag_t){off, len, id};
}

/* tokenizer_st_partition: each special token in turn (longest first)
 * splits every raw fragment at each of its occurrences, left to right. */
static void lc_partition(const tokenizer_t *t, const char *text, size_t len,
			 bool parse_special, frags_t *out)
{
	frags_t tmp = {0};
	out->n = 0;
	frags_push(out, 0, len, -1);
	for (int32_t k = 0; k < t->n_lc_special; k++) {
		int32_t id = t->lc_special[k];
		if (!parse_special && t->type[id] != TOKEN_TYPE_USER_DEFINED)
			continue;
		const char *p = tok_str(t, id);
		size_t n = t->len[id];
		if (n > len || !memmem(text, len, p, n))
			continue;
		tmp.n = 0;
		for (size_t i = 0; i < out->n; i++) {
			frag_t f = out->v[i];
			if (f.id >= 0) {
				frags_push(&tmp, f.off, f.len, f.id);
				continue;
			}
			size_t pos = f.off, end = f.off + f.len;
			const char *hit;
			while (pos < end &&
			       (hit = memmem(text + pos, end - pos, p, n))) {
				size_t at = (size_t)(hit - text);
				if (at > pos)
					frags_push(&tmp, pos, at - pos, -1);
				frags_push(&tmp, at, n, id);
				pos = at + n;
			}
			if (pos < end)
				frags_push(&tmp, pos, end - pos, -1);
		}
		frags_t sw = *out;
		*out = tmp;
		tmp = sw;
	}
	free(tmp.v);
}

/* llama.cpp's SentencePiece session: symbols are UTF-8 groups by lead byte
 * alone (unicode_len_utf8), merged while the concatenation of two
 * neighbours is a piece (best score, leftmost first), whether or not each
 * is itself a piece; a final symbol that is no piece becomes its bytes. */
static int encode_spm_lc(const tokenizer_t *t, const char *text, size_t len,
			 bool prefix, work_t *w)
{
	char *s = w->buf;
	size_t n = spm_escape(s, text, len, prefix);
	/* symbol i: offset w->prev2[i]... kept in id (offset) and out arrays */
	int32_t *off = w->id, *sl = w->sl;
	int32_t ns = 0;
	for (size_t i = 0; i < n;) {
		static const uint8_t lead_len[16] = {1, 1, 1, 1, 1, 1, 1, 1,
						     1, 1, 1, 1, 2, 2, 3, 4};
		size_t k = lead_len[(unsigned char)s[i] >> 4];
		if (k > n - i)
			k = n - i;
		off[ns] = (int32_t)i;
		sl[ns++] = (int32_t)k;
		i += k;
	}
	link_symbols(w, ns);
	w->heap_n = 0;
#define SPM_TRY(l_, r_)                                                        \
	do {                                                                   \
		int32_t m_ = tok_find2(t, s + off[l_], (size_t)(sl[l_] + sl[r_]), \
				       NULL, 0);                               \
		if (m_ >= 0)                                                   \
			heap_push(w, (heap_ent_t){~float_order(t->score[m_]),  \
				  (l_), (r_), sl[l_], sl[r_], m_});             \
	} while (0)
	for (int32_t i = 0; i + 1 < ns; i++)
		SPM_TRY(i, i + 1);
	while (w->heap_n > 0) {
		heap_ent_t e = heap_pop(w);
		int32_t l = e.left, r = e.right;
		if (sl[l] != e.idl || sl[r] != e.idr || w->next[l] != r)
			continue;
		sl[l] += sl[r];
		sl[r] = 0;
		int32_t nx = w->next[r];
		w->next[l] = nx;
		if (nx >= 0)
			w->prev[nx] = l;
		w->next[r] = -1;
		if (w->prev[l] >= 0)
			SPM_TRY(w->prev[l], l);
		if (nx >= 0)
			SPM_TRY(l, nx);
	}
#undef SPM_TRY
	for (int32_t i = ns > 0 ? 0 : -1; i >= 0; i = w->next[i]) {
		int32_t id = tok_find2(t, s + off[i], (size_t)sl[i], NULL, 0);
		if (id >= 0) {
			emit(w, id);
			continue;
		}
		for (int32_t j = 0; j < sl[i]; j++) {
			int32_t b = t->byte_tok[(unsigned char)s[off[i] + j]];
			if (b < 0 && t->unk < 0)
				return err_set("tokenizer: byte %d of the text has no "
					       "piece, byte piece or <unk>",
					       off[i] + j);
			emit(w, b >= 0 ? b : t->unk);
		}
	}
	return 0;
}

/* The text as llama.cpp's unicode_cpts_from_utf8 + unicode_cpt_to_utf8
 * give it back: a lead byte whose continuation bytes are missing, a stray
 * continuation byte or F8..FF becomes U+FFFD (EF BF BD) and decoding goes
 * on at the next byte; overlong forms come back in their shortest form; a
 * 4-byte form above U+10FFFF (on which llama.cpp throws) becomes U+FFFD.
 * Writes at most 3 len bytes to out; returns the length. */
static size_t lc_utf8_clean(const char *text, size_t len, char *out)
{
	const unsigned char *u = (const unsigned char *)text;
	size_t k = 0;
	for (size_t i = 0; i < len;) {
		unsigned c = u[i];
		size_t need = !(c & 0x80) ? 1 : !(c & 0x40) ? 0 : !(c & 0x20) ? 2
			      : !(c & 0x10) ? 3 : !(c & 0x08) ? 4 : 0;
		bool ok = need > 0 && i + need <= len;
		for (size_t j = 1; ok && j < need; j++)
			ok = (u[i + j] & 0xC0) == 0x80;
		uint32_t cp = 0xFFFD;
		if (ok) {
			cp = need == 1 ? c : c & (0x7Fu >> need);
			for (size_t j = 1; j < need; j++)
				cp = cp << 6 | (u[i + j] & 0x3Fu);
			if (cp > 0x10FFFF)
				cp = 0xFFFD;
			i += need;
		} else {
			i++;
		}
		k += utf8_encode(cp, out + k);
	}
	return k;
}

int64_t tokenizer_tokenize(const tokenizer_t *t, const char *text, size_t len,
			   bool add_special, bool parse_special, int32_t *ids,
			   int64_t max)
{
	if (!text && len > 0)
		return err_set("tokenizer_tokenize: NULL text");
	if (max < 0 || (max > 0 && !ids))
		return err_set("tokenizer_tokenize: bad output buffer");
	if (len > (size_t)INT32_MAX / 8)
		return err_set("tokenizer_tokenize: text of %zu bytes is too long",
			       len);
	work_t w = {0};
	/* gpt2: the cleaned text is at most 3 bytes per input byte */
	size_t nsym = 3 * len + 3;
	w.id = xmalloc(nsym * sizeof *w.id);
	w.sl = xmalloc(nsym * sizeof *w.sl);
	w.prev = xmalloc(nsym * sizeof *w.prev);
	w.next = xmalloc(nsym * sizeof *w.next);
	w.heap = xmalloc(3 * nsym * sizeof *w.heap);
	w.buf = xmalloc(9 * len + 8);
	char *clean = xmalloc(3 * len + 1);
	w.out = ids;
	w.max = max;
	frags_t f = {0};
	int rc = 0;
	if (len > 0)
		lc_partition(t, text, len, parse_special, &f);
	if (add_special && t->add_bos && t->bos >= 0)
		emit(&w, t->bos);
	pcre2_match_data *md = pcre2_match_data_create(4, NULL);
	chunks_t c = {0}, tmp = {0};
	bool prev_special = true;
	for (size_t i = 0; i < f.n && rc == 0; i++) {
		if (f.v[i].id >= 0) {
			emit(&w, f.v[i].id);
			prev_special = true;
			continue;
		}
		if (t->kind == TOKENIZER_LLAMA) {
			rc = encode_spm_lc(t, text + f.v[i].off, f.v[i].len,
					   prev_special && !t->no_space_prefix, &w);
		} else if (!md) {
			rc = err_set("tokenizer: pcre2_match_data_create failed");
		} else {
			size_t k = lc_utf8_clean(text + f.v[i].off, f.v[i].len,
						 clean);
			rc = encode_segment(t, clean, k, &w, md, &c, &tmp);
		}
		prev_special = false;
	}
	if (rc == 0 && add_special && t->add_eos && t->eos >= 0)
		emit(&w, t->eos);
	free(c.v);
	free(tmp.v);
	pcre2_match_data_free(md);
	free(f.v);
	free(clean);
	free(w.id);
	free(w.sl);
	free(w.prev);
	free(w.next);
	free(w.heap);
	free(w.buf);
	return rc < 0 ? -1 : w.n_out;
}

/* ---- 8. decode ---- */

static int put(char *out, size_t cap, size_t *k, const char *s, size_t n)
{
	size_t room = cap > *k ? cap - *k : 0;
	size_t m = n < room ? n : room;
	if (m > 0)
		memcpy(out + *k, s, m);
	*k += m;
	return (int)*k;
}

int tokenizer_decode(const tokenizer_t *t, int32_t prev, int32_t id,
		     char *out, size_t cap)
{
	if (id < 0 || id >= t->n_vocab)
		return -1;
	if (t->type[id] == TOKEN_TYPE_CONTROL || id == t->bos || id == t->eos)
		return 0;
	const char *s = tok_str(t, id);
	size_t n = t->len[id], k = 0;
	if (t->kind == TOKENIZER_LLAMA) {
		if (t->byte_of[id] >= 0) {
			char b = (char)t->byte_of[id];
			return put(out, cap, &k, &b, 1);
		}
		bool strip = prev >= 0 && prev == t->bos && !t->no_space_prefix;
		for (size_t i = 0; i < n;) {
			if (n - i >= 3 && memcmp(s + i, "\xE2\x96\x81", 3) == 0) {
				if (!(strip && i == 0))
					put(out, cap, &k, " ", 1);
				i += 3;
			} else {
				put(out, cap, &k, s + i, 1);
				i++;
			}
		}
		return (int)k;
	}
	if (t->type[id] == TOKEN_TYPE_USER_DEFINED)
		return put(out, cap, &k, s, n);
	const gpt2_map_t *m = gpt2_map_get();
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t cl = utf8_decode((const unsigned char *)s + i, n - i, &cp);
		if (cl > 0 && cp < GPT2_CP_MAX && m->byte[cp] >= 0) {
			char b = (char)m->byte[cp];
			put(out, cap, &k, &b, 1);
		} else {
			/* not a byte-level char: the text as stored */
			if (cl == 0)
				cl = 1;
			put(out, cap, &k, s + i, cl);
		}
		i += cl;
	}
	return (int)k;
}
