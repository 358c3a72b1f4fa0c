/* tokenizer_hf: a Hugging Face tokenizer.json (+ tokenizer_config.json)
 * read as llama.cpp's convert_hf_to_gguf.py reads it, into a tokenizer_t
 * (tokenizer_build) that tokenizer_write_gguf writes as the converter does.
 *
 *  - BPE with byte_fallback (a SentencePiece model converted to BPE, as
 *    Gemma's): the "llama" kind. The converter reads the SentencePiece
 *    model's scores; tokenizer.json has only merges, so a merged piece
 *    scores -(rank of the first merge producing it) and any other piece
 *    -(merges + id): SentencePiece's best-score-first merging then follows
 *    the merge order. add_space_prefix is false unless the normalizer
 *    prepends U+2581.
 *  - byte-level BPE: the "gpt2" kind with its merges. tokenizer.ggml.pre
 *    is named from the Split regex of the pre-tokenizer (the converter
 *    hashes a tokenization instead): \p{N}{1,3} -> llama-bpe, \p{N} ->
 *    qwen2; another regex is refused.
 *  - token types as the converter's: an added token that is special or
 *    looks special (<|...|>, <unused...>) is control, another added token
 *    user-defined (U+2581 spelled as a space in a llama vocabulary), <0xNN>
 *    byte, the unk token unknown, ids without a piece [PADn] unused.
 *  - bos/eos/unk/pad from tokenizer_config.json's *_token, add_bos_token
 *    and add_eos_token when it has them (else llama.cpp's defaults). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/base.h"
#include "model/tokenizer.h"

static const char *const SP = "\xE2\x96\x81"; /* U+2581 */

/* The text of a config's "bos_token" etc.: a string or {"content": ...}. */
static const char *cfg_token(json_t *cfg, const char *key)
{
	json_t *v = cfg ? json_object_get(cfg, key) : NULL;
	if (json_is_object(v))
		v = json_object_get(v, "content");
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool looks_special(const char *s)
{
	size_t n = strlen(s);
	return !strcmp(s, "<pad>") || !strcmp(s, "<mask>") ||
	       (n >= 4 && !strncmp(s, "<|", 2) && !strcmp(s + n - 2, "|>")) ||
	       (n >= 8 && !strncmp(s, "<unused", 7) && s[n - 1] == '>');
}

static bool is_byte_piece(const char *s)
{
	return strlen(s) == 6 && !strncmp(s, "<0x", 3) && s[5] == '>';
}

/* s with every U+2581 spelled as ' ' (malloc'd). */
static char *spaces_from_sp(const char *s)
{
	char *o = strdup(s);
	if (!o)
		abort(); /* out of memory */
	size_t k = 0;
	for (size_t i = 0; s[i];) {
		if (!strncmp(s + i, SP, 3)) {
			o[k++] = ' ';
			i += 3;
		} else {
			o[k++] = s[i++];
		}
	}
	o[k] = '\0';
	return o;
}

/* "left right" of merge entry v (a string or a [left, right] pair),
 * malloc'd; NULL if malformed. */
static char *merge_text(json_t *v)
{
	if (json_is_string(v))
		return strdup(json_string_value(v));
	if (!json_is_array(v) || json_array_size(v) != 2 ||
	    !json_is_string(json_array_get(v, 0)) ||
	    !json_is_string(json_array_get(v, 1)))
		return NULL;
	const char *l = json_string_value(json_array_get(v, 0));
	const char *r = json_string_value(json_array_get(v, 1));
	size_t nl = strlen(l), nr = strlen(r);
	char *o = malloc(nl + nr + 2);
	if (!o)
		abort(); /* out of memory */
	memcpy(o, l, nl);
	o[nl] = ' ';
	memcpy(o + nl + 1, r, nr + 1);
	return o;
}

/* The pre-tokenizer name from the Split regex in pre_tokenizer. */
static const char *pre_name(json_t *pre)
{
	const char *dump = NULL;
	char *d = pre ? json_dumps(pre, JSON_COMPACT) : NULL;
	if (d) {
		if (strstr(d, "\\\\p{N}{1,3}"))
			dump = "llama-bpe";
		else if (strstr(d, "\\\\p{N}|"))
			dump = "qwen2";
	}
	free(d);
	return dump;
}

typedef struct hf {
	json_t *root, *cfg, *model, *added;
	int32_t n;
	char **piece;
	float *score;
	int32_t *type;
	char **merge;
	int32_t n_merges;
} hf_t;

static void hf_free(hf_t *h)
{
	for (int32_t i = 0; i < h->n; i++)
		free(h->piece[i]);
	for (int32_t i = 0; i < h->n_merges; i++)
		free(h->merge[i]);
	free(h->piece);
	free(h->score);
	free(h->type);
	free(h->merge);
	json_decref(h->root);
	json_decref(h->cfg);
}

static int set_piece(hf_t *h, int64_t id, const char *s, const char *src)
{
	if (id < 0 || id >= h->n)
		return err_set("%s: id %lld of '%.40s' out of range", src,
			       (long long)id, s);
	free(h->piece[id]);
	h->piece[id] = strdup(s);
	if (!h->piece[id])
		abort(); /* out of memory */
	return 0;
}

/* Sizes the vocabulary: the largest id of model.vocab and added_tokens,
 * at least min_vocab. */
static int hf_size(hf_t *h, const char *path, int32_t min_vocab)
{
	json_t *vocab = json_object_get(h->model, "vocab");
	if (!json_is_object(vocab) || json_object_size(vocab) == 0)
		return err_set("%s: model.vocab missing or empty", path);
	int64_t max = -1;
	const char *k;
	json_t *v;
	json_object_foreach(vocab, k, v) {
		if (!json_is_integer(v))
			return err_set("%s: model.vocab['%.40s'] is not an id", path, k);
		if (json_integer_value(v) > max)
			max = json_integer_value(v);
	}
	size_t i;
	json_array_foreach(h->added, i, v) {
		json_t *id = json_object_get(v, "id");
		if (!json_is_integer(id) ||
		    !json_is_string(json_object_get(v, "content")))
			return err_set("%s: added_tokens[%zu] lacks id or content",
				       path, i);
		if (json_integer_value(id) > max)
			max = json_integer_value(id);
	}
	if (max >= (1 << 26))
		return err_set("%s: token id %lld too large", path, (long long)max);
	h->n = (int32_t)max + 1 > min_vocab ? (int32_t)max + 1 : min_vocab;
	h->piece = calloc((size_t)h->n, sizeof *h->piece);
	h->score = calloc((size_t)h->n, sizeof *h->score);
	h->type = calloc((size_t)h->n, sizeof *h->type);
	if (!h->piece || !h->score || !h->type)
		abort(); /* out of memory */
	json_object_foreach(vocab, k, v)
		if (set_piece(h, json_integer_value(v), k, path) < 0)
			return -1;
	return 0;
}

/* Merges into h->merge (gpt2) or scores of the merged pieces (llama). */
static int hf_merges(hf_t *h, const char *path, bool spm, tokenizer_t *lookup)
{
	json_t *ms = json_object_get(h->model, "merges");
	if (!json_is_array(ms))
		return err_set("%s: model.merges missing", path);
	size_t nm = json_array_size(ms);
	if (!spm) {
		h->merge = calloc(nm + 1, sizeof *h->merge);
		if (!h->merge)
			abort(); /* out of memory */
	}
	size_t i;
	json_t *v;
	json_array_foreach(ms, i, v) {
		char *m = merge_text(v);
		if (!m)
			return err_set("%s: model.merges[%zu] is not a pair", path, i);
		if (!spm) {
			h->merge[h->n_merges++] = m;
			continue;
		}
		/* llama: the piece the merge makes scores by its rank */
		char *sp = strchr(m + 1, ' ');
		if (sp) {
			memmove(sp, sp + 1, strlen(sp));
			int32_t id = tokenizer_find(lookup, m);
			if (id >= 0 && h->score[id] < -(float)nm - 0.5f)
				h->score[id] = -(float)i;
		}
		free(m);
	}
	return 0;
}

static json_t *load_json(const char *path, size_t flags)
{
	json_error_t e;
	json_t *j = json_load_file(path, flags, &e);
	if (!j)
		err_set("%s:%d: %s", path, e.line, e.text);
	return j;
}

/* Token types, added tokens and special ids; fills spec. */
static int hf_types(hf_t *h, bool spm, tokenizer_spec_t *spec)
{
	for (int32_t i = 0; i < h->n; i++) {
		if (!h->piece[i]) {
			char b[32];
			snprintf(b, sizeof b, "[PAD%d]", i);
			h->piece[i] = strdup(b);
			h->type[i] = TOKENIZER_TYPE_UNUSED;
		} else {
			h->type[i] = spm && is_byte_piece(h->piece[i])
				? TOKENIZER_TYPE_BYTE : TOKENIZER_TYPE_NORMAL;
		}
	}
	size_t i;
	json_t *v;
	json_array_foreach(h->added, i, v) {
		int32_t id = (int32_t)json_integer_value(json_object_get(v, "id"));
		const char *c = json_string_value(json_object_get(v, "content"));
		if (spm && is_byte_piece(c))
			continue;
		if (json_is_true(json_object_get(v, "special")) || looks_special(c)) {
			set_piece(h, id, c, "added_tokens");
			h->type[id] = TOKENIZER_TYPE_CONTROL;
		} else {
			char *s = spm ? spaces_from_sp(c) : strdup(c);
			free(h->piece[id]);
			h->piece[id] = s;
			h->type[id] = TOKENIZER_TYPE_USER_DEFINED;
		}
	}
	spec->bos = spec->eos = spec->unk = spec->pad = -1;
	const char *keys[4] = {"bos_token", "eos_token", "unk_token", "pad_token"};
	int32_t *dst[4] = {&spec->bos, &spec->eos, &spec->unk, &spec->pad};
	for (int k = 0; k < 4; k++) {
		const char *s = cfg_token(h->cfg, keys[k]);
		if (!s && k == 2)
			s = json_string_value(json_object_get(h->model, "unk_token"));
		for (int32_t id = 0; s && id < h->n; id++)
			if (!strcmp(h->piece[id], s)) {
				*dst[k] = id;
				break;
			}
	}
	if (spec->unk >= 0)
		h->type[spec->unk] = TOKENIZER_TYPE_UNKNOWN;
	json_t *ab = h->cfg ? json_object_get(h->cfg, "add_bos_token") : NULL;
	json_t *ae = h->cfg ? json_object_get(h->cfg, "add_eos_token") : NULL;
	spec->add_bos = json_is_boolean(ab) ? json_is_true(ab) : -1;
	spec->add_eos = json_is_boolean(ae) ? json_is_true(ae) : -1;
	return 0;
}

tokenizer_t *tokenizer_load_hf(const char *json_path, const char *config_path,
			       int32_t min_vocab, char **chat_template)
{
	hf_t h = {0};
	tokenizer_t *t = NULL;
	if (chat_template)
		*chat_template = NULL;
	/* a config's model_max_length may be 1e30 written as an integer */
	if (!(h.root = load_json(json_path, 0)) ||
	    (config_path &&
	     !(h.cfg = load_json(config_path, JSON_DECODE_INT_AS_REAL))))
		goto out;
	h.model = json_object_get(h.root, "model");
	h.added = json_object_get(h.root, "added_tokens");
	const char *mt = json_string_value(json_object_get(h.model, "type"));
	if (!mt || strcmp(mt, "BPE")) {
		err_set("%s: model.type '%s' is not BPE (the only kind egang reads)",
			json_path, mt ? mt : "(none)");
		goto out;
	}
	if (!json_is_array(h.added))
		h.added = NULL;
	bool spm = json_is_true(json_object_get(h.model, "byte_fallback"));
	tokenizer_spec_t spec = {.kind = spm ? TOKENIZER_LLAMA : TOKENIZER_GPT2};
	if (hf_size(&h, json_path, min_vocab) < 0 || hf_types(&h, spm, &spec) < 0)
		goto out;
	spec.n = h.n;
	spec.pieces = (const char *const *)h.piece;
	spec.types = h.type;
	if (spm) {
		/* a first build to look merged pieces up */
		tokenizer_spec_t plain = spec;
		tokenizer_t *lookup = tokenizer_build(&plain);
		if (!lookup)
			goto out;
		json_t *ms = json_object_get(h.model, "merges");
		float floor = -(float)json_array_size(ms);
		for (int32_t i = 0; i < h.n; i++)
			h.score[i] = h.type[i] == TOKENIZER_TYPE_NORMAL
				? floor - 1.0f - (float)i : 0.0f;
		int rc = hf_merges(&h, json_path, true, lookup);
		tokenizer_free(lookup);
		if (rc < 0)
			goto out;
		spec.scores = h.score;
		char *nd = json_dumps(json_object_get(h.root, "normalizer"), 0);
		spec.no_space_prefix = !(nd && strstr(nd, "Prepend"));
		free(nd);
	} else {
		if (hf_merges(&h, json_path, false, NULL) < 0)
			goto out;
		spec.merges = (const char *const *)h.merge;
		spec.n_merges = h.n_merges;
		spec.pre = pre_name(json_object_get(h.root, "pre_tokenizer"));
		if (!spec.pre) {
			err_set("%s: pre_tokenizer matches none egang names "
				"(llama-bpe, qwen2)", json_path);
			goto out;
		}
	}
	t = tokenizer_build(&spec);
	if (t && chat_template && h.cfg) {
		json_t *ct = json_object_get(h.cfg, "chat_template");
		if (json_is_string(ct) && !(*chat_template =
					    strdup(json_string_value(ct))))
			abort(); /* out of memory */
	}
out:
	hf_free(&h);
	return t;
}
