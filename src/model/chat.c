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
	bool gen_always; /* llama3: the template adds the assistant header
			    whether or not add_generation_prompt */
	char *default_system; /* chatml: the system message the template
				 writes when the first message is not one
				 (SmolLM2, Qwen2.5); NULL if none */
};

static const char *const chat_names[CHAT_COUNT] = {
	"none", "chatml", "llama2", "llama3", "zephyr", "qwen3", "gemma3"};

chat_kind_t chat_kind_from_name(const char *name)
{
	for (int k = 1; k < CHAT_COUNT; k++)
		if (!strcmp(name, chat_names[k]))
			return (chat_kind_t)k;
	return CHAT_NONE;
}

const char *chat_name(chat_kind_t k)
{
	return k < CHAT_COUNT ? chat_names[k] : "?";
}

const char *chat_markers(chat_kind_t k)
{
	static const char *const m[CHAT_COUNT] = {
		[CHAT_NONE] = "",
		[CHAT_CHATML] = "<|im_start|>",
		[CHAT_LLAMA2] = "[INST] add_generation_prompt",
		[CHAT_LLAMA3] = "<|start_header_id|> add_generation_prompt",
		[CHAT_ZEPHYR] = "<|user|> <|assistant|>",
		[CHAT_QWEN3] = "<|im_start|> </think>",
		[CHAT_GEMMA3] = "<start_of_turn>",
	};
	return k < CHAT_COUNT ? m[k] : "";
}

chat_kind_t chat_kind(const char *t, const tokenizer_t *tok)
{
	if (t) {
		if (strstr(t, "<|im_start|>"))
			return strstr(t, "</think>") ? CHAT_QWEN3 : CHAT_CHATML;
		if (strstr(t, "<start_of_turn>"))
			return CHAT_GEMMA3;
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

/* A ChatML template's default system message: the literal text of
 * '<|im_start|>system\n...<|im_end|>' in a template that tests
 * messages[0]['role'] != 'system' (as SmolLM2's and Qwen2.5's do; the
 * newline written as one or as the escape \n). Jinja string escapes \n,
 * \' and \\ are undone; a literal that holds an expression (a quote, a
 * brace) is not a default. NULL when there is none (aborts on out of
 * memory). */
static char *chatml_default_system(const char *text)
{
	if (!text || !strstr(text, "messages[0]['role'] != 'system'"))
		return NULL;
	static const char head[] = "<|im_start|>system";
	const char *p = strstr(text, head);
	if (!p)
		return NULL;
	p += sizeof head - 1;
	if (*p == '\n')
		p++;
	else if (p[0] == '\\' && p[1] == 'n')
		p += 2;
	else
		return NULL;
	const char *end = strstr(p, "<|im_end|>");
	if (!end)
		return NULL;
	char *out = malloc((size_t)(end - p) + 1), *o = out;
	if (!out)
		abort(); /* out of memory */
	for (; p < end; p++) {
		if (*p == '\'' || *p == '"' || *p == '{' || *p == '}') {
			free(out);
			return NULL;
		}
		if (*p == '\\' && p + 1 < end) {
			p++;
			*o++ = *p == 'n' ? '\n' : *p;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	return out;
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
	t->gen_always = t->kind == CHAT_LLAMA3 && text &&
			!strstr(text, "add_generation_prompt");
	if (t->kind == CHAT_CHATML)
		t->default_system = chatml_default_system(text);
	return t;
}

chat_template_t *chat_template_new_kind(chat_kind_t kind,
					const tokenizer_t *tok)
{
	chat_template_t *t = chat_template_new(NULL, tok);
	t->kind = kind;
	return t;
}

void chat_template_free(chat_template_t *t)
{
	if (t)
		free(t->default_system);
	free(t);
}

chat_kind_t chat_template_kind(const chat_template_t *t) { return t->kind; }
const tokenizer_t *chat_template_tokenizer(const chat_template_t *t)
{
	return t->tok;
}

/* ---- rendering ---- */

typedef struct text {
	FILE *f; /* open_memstream */
	char *p;
	size_t len;
} text_t;

static void put(text_t *o, const char *s) { fputs(s, o->f); }

/* The length of the white space (Python's str.isspace, which Jinja's trim
 * and str.strip() use) that starts s[0..n), 0 if none. */
static size_t space_len(const char *s, size_t n)
{
	unsigned char c = (unsigned char)s[0];
	if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f))
		return 1;
	static const char *const ws[] = {
		"\xC2\x85", "\xC2\xA0", "\xE1\x9A\x80", "\xE2\x80\xA8",
		"\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80"};
	for (size_t i = 0; i < EG_ARRAY_LEN(ws); i++) {
		size_t k = strlen(ws[i]);
		if (n >= k && !memcmp(s, ws[i], k))
			return k;
	}
	/* U+2000..U+200A */
	if (n >= 3 && c == 0xE2 && (unsigned char)s[1] == 0x80 &&
	    (unsigned char)s[2] >= 0x80 && (unsigned char)s[2] <= 0x8A)
		return 3;
	return 0;
}

/* Whether the white space of space_len ends at s + n (checked from the
 * end: the last 1..3 bytes). */
static size_t space_len_back(const char *s, size_t n)
{
	for (size_t k = 1; k <= 3 && k <= n; k++)
		if (space_len(s + n - k, k) == k)
			return k;
	return 0;
}

/* Jinja's trim / Python's strip(): m's text without white space at both
 * ends (lead: the start, tail: the end). */
static void put_trimmed(text_t *o, const char *s, size_t n, bool lead,
			bool tail)
{
	size_t k;
	while (lead && n > 0 && (k = space_len(s, n)) > 0) {
		s += k;
		n -= k;
	}
	while (tail && n > 0 && (k = space_len_back(s, n)) > 0)
		n -= k;
	fwrite(s, 1, n, o->f);
}

static void put_msg_trim(text_t *o, const chat_msg_t *m)
{
	put_trimmed(o, m->text, m->len, true, true);
}
static void put_msg(text_t *o, const chat_msg_t *m)
{
	fwrite(m->text, 1, m->len, o->f);
}

/* ChatML; a template with a default system message writes it first when
 * the conversation has messages and the first is not a system one. */
static void render_chatml(const chat_template_t *t, const chat_msg_t *m,
			  int n, bool gen, text_t *o)
{
	if (t->default_system && n > 0 && strcmp(m[0].role, "system"))
		fprintf(o->f, "<|im_start|>system\n%s<|im_end|>\n",
			t->default_system);
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
		put_msg_trim(o, &m[i]);
		put(o, "<|eot_id|>");
	}
	if (gen || t->gen_always)
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
			put_msg_trim(o, &m[i]);
			put(o, " ");
			put(o, t->eos);
			continue;
		}
		if (!first)
			put(o, t->bos);
		first = false;
		put(o, "[INST] ");
		if (sys) { /* content.strip() of the joined text */
			put(o, "<<SYS>>\n");
			put_msg(o, sys);
			put(o, "\n<</SYS>>\n\n");
			sys = NULL;
			put_trimmed(o, m[i].text, m[i].len, false, true);
		} else {
			put_msg_trim(o, &m[i]);
		}
		put(o, " [/INST]");
	}
	if (first) { /* no user turn at all */
		put(o, "[INST] ");
		if (sys)
			put_msg(o, sys);
		put(o, " [/INST]");
	}
}

/* Qwen3's template (tools aside): ChatML, a system message only first;
 * an assistant turn's "<think>...</think>" is cut from its content, and
 * the turns after the last user message carry their reasoning (the last
 * one always, an empty one if none). */
static void render_qwen3(const chat_template_t *t, const chat_msg_t *m,
			 int n, bool gen, text_t *o)
{
	int last_query = n - 1;
	for (int i = n - 1; i >= 0; i--) {
		if (!strcmp(m[i].role, "user") &&
		    !(m[i].len >= 15 && !memcmp(m[i].text, "<tool_response>", 15) &&
		      m[i].len >= 16 &&
		      !memcmp(m[i].text + m[i].len - 16, "</tool_response>", 16))) {
			last_query = i;
			break;
		}
	}
	for (int i = 0; i < n; i++) {
		if (strcmp(m[i].role, "assistant")) {
			fprintf(o->f, "<|im_start|>%s\n", m[i].role);
			put_msg(o, &m[i]);
			put(o, "<|im_end|>\n");
			continue;
		}
		const char *c = m[i].text, *r = "";
		size_t nc = m[i].len, nr = 0;
		const char *end = memmem(c, nc, "</think>", 8);
		if (end) {
			/* content: after the last </think>, '\n's stripped
			 * before it; reasoning: before the first </think>,
			 * after its last <think>, '\n's stripped around */
			const char *last = end, *p;
			while ((p = memmem(last + 8, (size_t)(c + nc - last - 8),
					   "</think>", 8)))
				last = p;
			r = c;
			nr = (size_t)(end - c);
			for (const char *q = r; (q = memmem(q, (size_t)(r + nr - q),
							  "<think>", 7)); q += 7) {
				nr -= (size_t)(q + 7 - r);
				r = q + 7;
				q = r - 7;
			}
			nc = (size_t)(c + nc - (last + 8));
			c = last + 8;
			while (nc && *c == '\n')
				c++, nc--;
			while (nr && *r == '\n')
				r++, nr--;
			while (nr && r[nr - 1] == '\n')
				nr--;
		}
		put(o, "<|im_start|>assistant\n");
		if (i > last_query && (i == n - 1 || nr)) {
			put(o, "<think>\n");
			fwrite(r, 1, nr, o->f);
			put(o, "\n</think>\n\n");
			while (nc && *c == '\n')
				c++, nc--;
		}
		fwrite(c, 1, nc, o->f);
		put(o, "<|im_end|>\n");
	}
	if (gen)
		put(o, "<|im_start|>assistant\n");
}

/* Gemma 3: the system message opens the first user turn; assistant is
 * "model"; contents trimmed; roles must alternate from user (the
 * template raises otherwise: an error here, checked by chat_render). */
static void render_gemma3(const chat_template_t *t, const chat_msg_t *m,
			  int n, bool gen, text_t *o)
{
	const chat_msg_t *sys = n > 0 && !strcmp(m[0].role, "system") ? &m[0]
									: NULL;
	for (int i = sys ? 1 : 0; i < n; i++) {
		bool user = !strcmp(m[i].role, "user");
		fprintf(o->f, "<start_of_turn>%s\n", user ? "user" : "model");
		if (sys && i == 1) {
			put_msg(o, sys);
			put(o, "\n\n");
		}
		put_msg_trim(o, &m[i]);
		put(o, "<end_of_turn>\n");
	}
	if (gen)
		put(o, "<start_of_turn>model\n");
}

/* A conversation the kind's template refuses; -1 + err_get(). */
static int check_roles(const chat_template_t *t, const chat_msg_t *m, int n)
{
	if (t->kind != CHAT_GEMMA3 && t->kind != CHAT_LLAMA2)
		return 0;
	int first = n > 0 && !strcmp(m[0].role, "system") ? 1 : 0;
	for (int i = first; i < n; i++)
		if (!strcmp(m[i].role, "user") != ((i - first) % 2 == 0))
			return err_set("messages[%d]: the %s template needs roles "
				       "alternating user/assistant after an optional "
				       "first system message", i, chat_names[t->kind]);
	return 0;
}

typedef void (*render_fn)(const chat_template_t *, const chat_msg_t *, int,
			  bool, text_t *);

static const render_fn renderers[CHAT_COUNT] = {
	[CHAT_CHATML] = render_chatml,
	[CHAT_LLAMA2] = render_llama2,
	[CHAT_LLAMA3] = render_llama3,
	[CHAT_ZEPHYR] = render_zephyr,
	[CHAT_QWEN3] = render_qwen3,
	[CHAT_GEMMA3] = render_gemma3,
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
	if (check_roles(t, msgs, n) < 0)
		return -1;
	text_t o = {0};
	o.f = open_memstream(&o.p, &o.len);
	if (!o.f)
		abort(); /* out of memory */
	renderers[t->kind](t, msgs, n, add_generation_prompt, &o);
	fclose(o.f);
	*out = o.p;
	return (int64_t)o.len;
}

int64_t chat_render_full(const chat_template_t *t, const chat_msg_t *msgs,
			 int n, bool add_generation_prompt, char **out)
{
	char *body;
	int64_t k = chat_render(t, msgs, n, add_generation_prompt, &body);
	if (k < 0)
		return -1;
	/* the templates that write bos_token themselves (the others leave
	 * BOS to the tokenization, as llama.cpp's server does) */
	bool writes_bos = t->kind == CHAT_LLAMA2 || t->kind == CHAT_LLAMA3 ||
			  t->kind == CHAT_GEMMA3;
	size_t nb = strlen(t->bos);
	bool bos = writes_bos && nb &&
		   !((size_t)k >= nb && !memcmp(body, t->bos, nb));
	if (!bos) {
		*out = body;
		return k;
	}
	*out = malloc(nb + (size_t)k + 1);
	if (!*out)
		abort(); /* out of memory */
	memcpy(*out, t->bos, nb);
	memcpy(*out + nb, body, (size_t)k + 1);
	free(body);
	return (int64_t)nb + k;
}

/* ---- tokenization of rendered text ---- */

int64_t chat_tokenize(const chat_template_t *t, const char *text, size_t len,
		      int32_t *ids, int64_t max)
{
	/* as llama.cpp's server: special-token text becomes those tokens, and
	 * BOS is added unless the text already begins with it */
	size_t nb = strlen(t->bos);
	bool add = !(nb && len >= nb && !memcmp(text, t->bos, nb));
	return tokenizer_tokenize(t->tok, text, len, add, true, ids, max);
}

int64_t chat_user_prompt_ids(const chat_template_t *t, const char *text,
			     int32_t **ids)
{
	chat_msg_t m = {"user", text, strlen(text)};
	char *r;
	*ids = NULL;
	int64_t len = chat_render(t, &m, 1, true, &r);
	if (len < 0)
		return -1;
	int64_t n = chat_tokenize(t, r, (size_t)len, NULL, 0);
	if (n >= 0 && !(*ids = malloc((size_t)(n + 1) * sizeof **ids)))
		n = err_set("out of memory");
	else if (n >= 0)
		chat_tokenize(t, r, (size_t)len, *ids, n); /* the same count */
	free(r);
	return n;
}
