/* chat: template recognition, rendering to text, and the tokenization of
 * rendered text (see chat.h). */
#include "model/chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

struct chat_template {
	chat_kind_t kind;
	const tokenizer_t *tok;
	const char *bos, *eos; /* the pieces that spell them, "" if none */
};

static const char *const chat_names[CHAT_COUNT] = {"none", "chatml", "llama2",
						   "llama3", "zephyr"};

const char *chat_name(chat_kind_t k)
{
	return k < CHAT_COUNT ? chat_names[k] : "?";
}

chat_kind_t chat_kind(const char *t, const tokenizer_t *tok)
{
	if (t) {
		if (strstr(t, "<|im_start|>"))
			return CHAT_CHATML;
		if (strstr(t, "<|start_header_id|>"))
			return CHAT_LLAMA3;
		if (strstr(t, "[INST]"))
			return CHAT_LLAMA2;
		if (strstr(t, "<|user|>") && strstr(t, "<|assistant|>"))
			return CHAT_ZEPHYR;
	}
	if (tok && tokenizer_find(tok, "<|im_start|>") >= 0)
		return CHAT_CHATML;
	return CHAT_NONE;
}

static const char *piece_or_empty(const tokenizer_t *tok, int32_t id)
{
	const char *p = id >= 0 ? tokenizer_piece(tok, id) : NULL;
	return p ? p : "";
}

chat_template_t *chat_template_new(const char *text, const tokenizer_t *tok)
{
	chat_template_t *t = calloc(1, sizeof *t);
	if (!t)
		abort(); /* out of memory */
	t->kind = chat_kind(text, tok);
	t->tok = tok;
	t->bos = piece_or_empty(tok, tokenizer_bos(tok));
	t->eos = piece_or_empty(tok, tokenizer_eos(tok));
	return t;
}

void chat_template_free(chat_template_t *t) { free(t); }

chat_kind_t chat_template_kind(const chat_template_t *t) { return t->kind; }

/* ---- rendering ---- */

typedef struct text {
	FILE *f; /* open_memstream */
	char *p;
	size_t len;
} text_t;

static void put(text_t *o, const char *s) { fputs(s, o->f); }
static void put_msg(text_t *o, const chat_msg_t *m)
{
	fwrite(m->text, 1, m->len, o->f);
}

static void render_chatml(const chat_template_t *t, const chat_msg_t *m,
			  int n, bool gen, text_t *o)
{
	for (int i = 0; i < n; i++) {
		fprintf(o->f, "<|im_start|>%s\n", m[i].role);
		put_msg(o, &m[i]);
		put(o, "<|im_end|>\n");
	}
	if (gen)
		put(o, "<|im_start|>assistant\n");
}

static void render_llama3(const chat_template_t *t, const chat_msg_t *m,
			  int n, bool gen, text_t *o)
{
	for (int i = 0; i < n; i++) {
		fprintf(o->f, "<|start_header_id|>%s<|end_header_id|>\n\n", m[i].role);
		put_msg(o, &m[i]);
		put(o, "<|eot_id|>");
	}
	if (gen)
		put(o, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

static void render_zephyr(const chat_template_t *t, const chat_msg_t *m,
			  int n, bool gen, text_t *o)
{
	for (int i = 0; i < n; i++) {
		fprintf(o->f, "<|%s|>\n", m[i].role);
		put_msg(o, &m[i]);
		put(o, t->eos);
		put(o, "\n");
	}
	if (gen)
		put(o, "<|assistant|>\n");
}

/* <s>[INST] <<SYS>>\nS\n<</SYS>>\n\nU [/INST] A </s><s>[INST] U2 [/INST]:
 * the system message goes into the next user turn; the generation prompt
 * is the end of the last [/INST] itself. */
static void render_llama2(const chat_template_t *t, const chat_msg_t *m,
			  int n, bool gen, text_t *o)
{
	const chat_msg_t *sys = NULL;
	bool first = true;
	for (int i = 0; i < n; i++) {
		if (!strcmp(m[i].role, "system")) {
			sys = &m[i];
			continue;
		}
		if (!strcmp(m[i].role, "assistant")) {
			put(o, " ");
			put_msg(o, &m[i]);
			put(o, " ");
			put(o, t->eos);
			continue;
		}
		if (!first)
			put(o, t->bos);
		first = false;
		put(o, "[INST] ");
		if (sys) {
			put(o, "<<SYS>>\n");
			put_msg(o, sys);
			put(o, "\n<</SYS>>\n\n");
			sys = NULL;
		}
		put_msg(o, &m[i]);
		put(o, " [/INST]");
	}
	if (first) { /* no user turn at all */
		put(o, "[INST] ");
		if (sys)
			put_msg(o, sys);
		put(o, " [/INST]");
	}
}

typedef void (*render_fn)(const chat_template_t *, const chat_msg_t *, int,
			  bool, text_t *);

static const render_fn renderers[CHAT_COUNT] = {
	[CHAT_CHATML] = render_chatml,
	[CHAT_LLAMA2] = render_llama2,
	[CHAT_LLAMA3] = render_llama3,
	[CHAT_ZEPHYR] = render_zephyr,
};

int64_t chat_render(const chat_template_t *t, const chat_msg_t *msgs, int n,
		    bool add_generation_prompt, char **out)
{
	*out = NULL;
	if (t->kind <= CHAT_NONE || t->kind >= CHAT_COUNT)
		return err_set("no chat template");
	for (int i = 0; i < n; i++)
		if (!msgs[i].role || (strcmp(msgs[i].role, "system") &&
				      strcmp(msgs[i].role, "user") &&
				      strcmp(msgs[i].role, "assistant")))
			return err_set("messages[%d]: role '%.40s' is not system, "
				       "user or assistant", i,
				       msgs[i].role ? msgs[i].role : "(null)");
	text_t o = {0};
	o.f = open_memstream(&o.p, &o.len);
	if (!o.f)
		abort(); /* out of memory */
	renderers[t->kind](t, msgs, n, add_generation_prompt, &o);
	fclose(o.f);
	*out = o.p;
	return (int64_t)o.len;
}

/* ---- tokenization of rendered text ---- */

/* The earliest BOS or EOS spelling in s[0..n): its offset (n if none),
 * its id in *id and its length in *len. */
static size_t find_special(const chat_template_t *t, const char *s, size_t n,
			   int32_t *id, size_t *len)
{
	size_t best = n;
	const char *sp[2] = {t->bos, t->eos};
	int32_t ids[2] = {tokenizer_bos(t->tok), tokenizer_eos(t->tok)};
	for (int k = 0; k < 2; k++) {
		size_t l = strlen(sp[k]);
		const char *p = l ? memmem(s, n, sp[k], l) : NULL;
		if (p && (size_t)(p - s) < best) {
			best = (size_t)(p - s);
			*id = ids[k];
			*len = l;
		}
	}
	return best;
}

int64_t chat_tokenize(const chat_template_t *t, const char *text, size_t len,
		      int32_t *ids, int64_t max)
{
	size_t nb = strlen(t->bos);
	bool bos = tokenizer_add_bos(t->tok) &&
		   !(nb && len >= nb && !memcmp(text, t->bos, nb));
	int64_t n = 0;
	size_t i = 0;
	for (;;) {
		int32_t id = -1;
		size_t sl = 0;
		size_t at = i + find_special(t, text + i, len - i, &id, &sl);
		if (at > i || bos) { /* the text before it (BOS first, once) */
			int64_t room = n < max ? max - n : 0;
			int64_t k = tokenizer_encode(t->tok, text + i, at - i, bos,
						     room ? ids + n : NULL, room);
			if (k < 0)
				return -1;
			n += k;
			bos = false;
		}
		if (at == len)
			return n;
		if (n < max)
			ids[n] = id;
		n++;
		i = at + sl;
	}
}
