/* api_tokens: POST /tokenize and POST /detokenize in llama.cpp server's
 * shapes, answered at once from the tokenizer (no job, no model):
 *
 *   /tokenize   {"content": STRING, "add_special": false,
 *                "parse_special": true, "with_pieces": false}
 *            -> {"tokens": [ID, ...]}, or with with_pieces
 *               {"tokens": [{"id": ID, "piece": STRING or [BYTE, ...]}]}
 *               (the piece as a string when its bytes are valid UTF-8);
 *               the ids are tokenizer_tokenize's (llama_tokenize's), as
 *               `egang tokenize` prints them;
 *   /detokenize {"tokens": [ID, ...]}
 *            -> {"content": STRING}, each token's text after the one
 *               before it as generation decodes it (control tokens add
 *               nothing; invalid UTF-8 becomes U+FFFD).
 * Any other field is a 400 unsupported_parameter, as on the generation
 * endpoints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/utf8.h"
#include "server/api_impl.h"

#define PIECE_MAX 512 /* bytes of one token's text (tokenizer_decode) */

/* A key of body other than the names (NULL-ended): 400 in out, -1. */
static int keys_check(json_t *body, const char *path, const char *const *names,
		      server_reply_t *out)
{
	const char *key;
	json_t *v;
	json_object_foreach(body, key, v) {
		bool known = false;
		for (const char *const *n = names; *n; n++)
			known |= !strcmp(key, *n);
		if (!known) {
			REPLY_ERR(out, 400, key, "unsupported_parameter",
				  "'%.60s' is not a field of %s", key, path);
			return -1;
		}
	}
	return 0;
}

/* A boolean field, def when absent or null; -1 with the 400 in out. */
static int flag_get(json_t *body, const char *name, bool def, bool *dst,
		    server_reply_t *out)
{
	json_t *v = json_object_get(body, name);
	*dst = def;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v)) {
		REPLY_ERR(out, 400, name, NULL, "'%s' must be a boolean", name);
		return -1;
	}
	*dst = json_is_true(v);
	return 0;
}

/* Whether s[0..n) is well-formed UTF-8 throughout. */
static bool utf8_whole(const char *s, size_t n)
{
	for (size_t i = 0, k; i < n; i += k)
		if (!(k = utf8_seq_len(s + i, n - i)))
			return false;
	return true;
}

/* The text of id for with_pieces: as it reads after nothing, a control
 * token as its own text (<|im_start|>); a string when valid UTF-8, else
 * its bytes. */
static json_t *piece_json(const tokenizer_t *tok, int32_t id)
{
	char buf[PIECE_MAX];
	int n = tokenizer_decode(tok, -1, id, buf, sizeof buf);
	if (n == 0 && tokenizer_piece(tok, id)) {
		n = snprintf(buf, sizeof buf, "%s", tokenizer_piece(tok, id));
		n = n < (int)sizeof buf ? n : (int)sizeof buf - 1;
	}
	if (n < 0)
		n = 0;
	if (utf8_whole(buf, (size_t)n))
		return json_stringn(buf, (size_t)n);
	json_t *bytes = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(bytes, json_integer((unsigned char)buf[i]));
	return bytes;
}

static void tokenize(const api_t *a, json_t *body, server_reply_t *out)
{
	static const char *const names[] = {"content", "add_special", "parse_special",
					    "with_pieces", NULL};
	if (keys_check(body, "/tokenize", names, out) < 0)
		return;
	json_t *c = json_object_get(body, "content");
	bool add_special, parse_special, pieces;
	if (!json_is_string(c)) {
		REPLY_ERR(out, 400, "content", NULL, "'content' must be a string");
		return;
	}
	if (flag_get(body, "add_special", false, &add_special, out) < 0 ||
	    flag_get(body, "parse_special", true, &parse_special, out) < 0 ||
	    flag_get(body, "with_pieces", false, &pieces, out) < 0)
		return;
	const char *text = json_string_value(c);
	size_t len = json_string_length(c);
	int64_t cap = (int64_t)len + 8, n; /* a token per byte at most, + BOS, EOS, space */
	int32_t *ids = malloc((size_t)cap * sizeof *ids);
	if (!ids)
		abort(); /* out of memory */
	n = tokenizer_tokenize(a->cfg.tok, text, len, add_special, parse_special, ids, cap);
	if (n < 0 || n > cap) {
		free(ids);
		REPLY_ERR(out, 400, "content", NULL, "the text cannot be tokenized: %s",
			  n < 0 ? err_get() : "more tokens than bytes");
		return;
	}
	json_t *arr = json_array();
	for (int64_t i = 0; i < n; i++)
		json_array_append_new(arr, pieces ? json_pack("{s:i, s:o}", "id", ids[i],
							      "piece",
							      piece_json(a->cfg.tok, ids[i]))
						  : json_integer(ids[i]));
	free(ids);
	out->status = 200;
	out->body = buf_json_dump(json_pack("{s:o}", "tokens", arr));
}

static void detokenize(const api_t *a, json_t *body, server_reply_t *out)
{
	static const char *const names[] = {"tokens", NULL};
	if (keys_check(body, "/detokenize", names, out) < 0)
		return;
	json_t *t = json_object_get(body, "tokens");
	if (!json_is_array(t)) {
		REPLY_ERR(out, 400, "tokens", NULL, "'tokens' must be an array of token ids");
		return;
	}
	int32_t vocab = tokenizer_n_vocab(a->cfg.tok), prev = -1;
	sbuf_t text = {0};
	for (size_t i = 0; i < json_array_size(t); i++) {
		json_t *v = json_array_get(t, i);
		json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
		if (id < 0 || id >= vocab) {
			sbuf_free(&text);
			REPLY_ERR(out, 400, "tokens", NULL,
				  "tokens[%zu] is not a token id in [0, %d)", i, vocab);
			return;
		}
		char buf[PIECE_MAX];
		int n = tokenizer_decode(a->cfg.tok, prev, (int32_t)id, buf, sizeof buf);
		sbuf_add(&text, buf, n > 0 ? (size_t)n : 0);
		prev = (int32_t)id;
	}
	out->status = 200;
	out->body = buf_json_dump(json_pack("{s:o}", "content",
					    buf_json_text(text.p ? text.p : "", text.len)));
	sbuf_free(&text);
}

void api_handle_tokens(const api_t *a, server_endpoint_t ep, json_t *body,
		       server_reply_t *out)
{
	if (ep == EP_TOKENIZE)
		tokenize(a, body, out);
	else
		detokenize(a, body, out);
}
