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
	"none", "chatml", "llama2", "llama3", "zephyr", "qwen3", "gemma3",
	"llama31"};

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
		[CHAT_LLAMA31] = "<|start_header_id|> ipython add_generation_prompt",
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
			return strstr(t, "ipython") ? CHAT_LLAMA31 : CHAT_LLAMA3;
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

/* The default system message whose literal starts at p (just after
 * "<|im_start|>system"), NULL if the literal is not plain text. */
static char *chatml_default_system_at(const char *p)
{
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

/* A ChatML template's default system message: the literal text of
 * '<|im_start|>system\n...<|im_end|>' in a template that tests
 * messages[0]['role'] != 'system' (SmolLM2's) or == 'system' with the
 * default in its else branch (Qwen2.5's; the newline written as one or as
 * the escape \n). Jinja string escapes \n,
 * \' and \\ are undone; a literal that holds an expression (a quote, a
 * brace) is not a default. NULL when there is none (aborts on out of
 * memory). */
static char *chatml_default_system(const char *text)
{
	if (!text || (!strstr(text, "messages[0]['role'] != 'system'") &&
		      !strstr(text, "messages[0]['role'] == 'system'")))
		return NULL;
	/* the first literal that is plain text (Qwen2.5 writes the header
	 * alone in its tools branch, before the default) */
	static const char head[] = "<|im_start|>system";
	char *d = NULL;
	for (const char *p = strstr(text, head); p && !d; p = strstr(p + 1, head))
		d = chatml_default_system_at(p + sizeof head - 1);
	return d;
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

/* ---- tools (chat_tools.h: the syntax each kind uses) ---- */

/* Jinja's tojson as transformers defines it, json.dumps(v,
 * ensure_ascii=False, indent=indent): ", " and ": " between items without
 * indent, "," and ": " with it, keys in their order, UTF-8 as it is.
 * (Reals are written with 17 significant digits where Python writes the
 * shortest text that reads back the same.) */
static void put_json(text_t *o, const json_t *v, int indent)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | (indent ? JSON_INDENT(indent) : 0));
	if (!s)
		abort(); /* out of memory */
	put(o, s);
	free(s);
}

/* The Hermes/Qwen tools block of a system message: the functions of
 * tools, one JSON object a line between <tools> tags, and how to call
 * one (Qwen2.5's and Qwen3's text). */
static void put_tools_hermes(text_t *o, const json_t *tools)
{
	put(o, "# Tools\n\nYou may call one or more functions to assist with the "
	       "user query.\n\nYou are provided with function signatures within "
	       "<tools></tools> XML tags:\n<tools>");
	for (size_t i = 0; i < json_array_size(tools); i++) {
		put(o, "\n");
		put_json(o, json_array_get(tools, i), 0);
	}
	put(o, "\n</tools>\n\nFor each function call, return a json object with "
	       "function name and arguments within <tool_call></tool_call> XML "
	       "tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
	       "<args-json-object>}\n</tool_call>");
}

/* One call in the Hermes syntax: <tool_call>\n{"name": "N", "arguments":
 * ARGS}\n</tool_call>. */
static void put_call_hermes(text_t *o, const chat_tool_call_t *c)
{
	fprintf(o->f, "<tool_call>\n{\"name\": \"%s\", \"arguments\": ", c->name);
	put_json(o, c->args, 0);
	put(o, "}\n</tool_call>");
}

static bool is_role(const chat_msg_t *m, const char *role)
{
	return !strcmp(m->role, role);
}

/* A tool message in the Hermes syntax: a run of them is one user turn,
 * each result between <tool_response> tags (Qwen2.5's and Qwen3's). */
static void put_tool_msg_hermes(const chat_msg_t *m, int n, int i, text_t *o)
{
	if (i == 0 || !is_role(&m[i - 1], "tool"))
		put(o, "<|im_start|>user");
	put(o, "\n<tool_response>\n");
	put_msg(o, &m[i]);
	put(o, "\n</tool_response>");
	if (i == n - 1 || !is_role(&m[i + 1], "tool"))
		put(o, "<|im_end|>\n");
}

/* The system turn of a ChatML conversation with tools: the first
 * message's text when it is a system message, else the template's
 * default (Qwen2.5), then the tools block. Returns how many messages it
 * took (1: the system message). */
static int put_system_tools_chatml(const char *dflt, const chat_msg_t *m,
				   int n, const json_t *tools, text_t *o)
{
	int took = n > 0 && is_role(&m[0], "system");
	put(o, "<|im_start|>system\n");
	if (took) {
		put_msg(o, &m[0]);
		put(o, "\n\n");
	} else if (dflt) {
		put(o, dflt);
		put(o, "\n\n");
	}
	put_tools_hermes(o, tools);
	put(o, "<|im_end|>\n");
	return took;
}

/* ChatML with Qwen2.5's tool syntax (Hermes): a template with a default
 * system message writes it first when the conversation has messages and
 * the first is not a system one; with tools, the system turn holds them;
 * an assistant turn with calls writes its text (if any) and each call on
 * lines of its own; tool results are user turns. */
static void render_chatml(const chat_template_t *t, const chat_msg_t *m,
			  int n, const json_t *tools, bool gen, text_t *o)
{
	int i = 0;
	if (tools)
		i = put_system_tools_chatml(t->default_system, m, n, tools, o);
	else if (t->default_system && n > 0 && strcmp(m[0].role, "system"))
		fprintf(o->f, "<|im_start|>system\n%s<|im_end|>\n",
			t->default_system);
	for (; i < n; i++) {
		if (is_role(&m[i], "tool")) {
			put_tool_msg_hermes(m, n, i, o);
			continue;
		}
		if (!m[i].n_calls) {
			fprintf(o->f, "<|im_start|>%s\n", m[i].role);
			put_msg(o, &m[i]);
			put(o, "<|im_end|>\n");
			continue;
		}
		put(o, "<|im_start|>assistant");
		if (m[i].len) {
			put(o, "\n");
			put_msg(o, &m[i]);
		}
		for (int k = 0; k < m[i].n_calls; k++) {
			put(o, "\n");
			put_call_hermes(o, &m[i].calls[k]);
		}
		put(o, "<|im_end|>\n");
	}
	if (gen)
		put(o, "<|im_start|>assistant\n");
}

static void render_llama3(const chat_template_t *t, const chat_msg_t *m,
			  int n, const json_t *tools, bool gen, text_t *o)
{
	for (int i = 0; i < n; i++) {
		fprintf(o->f, "<|start_header_id|>%s<|end_header_id|>\n\n", m[i].role);
		put_msg_trim(o, &m[i]);
		put(o, "<|eot_id|>");
	}
	if (gen || t->gen_always)
		put(o, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

static void put_header_llama3(text_t *o, const char *role)
{
	fprintf(o->f, "<|start_header_id|>%s<|end_header_id|>\n\n", role);
}

/* Llama 3.1's template (3.2 and 3.3 render the same without built-in
 * tools; 3.2's strftime_now is taken as undefined, as the reference
 * renderer has it): a system turn with the knowledge and today's dates
 * (its fixed "26 Jul 2024"); with tools, "Environment: ipython" and the
 * functions as JSON (indent 4) in the first message after the system
 * one, whatever its role; a call is the assistant's JSON {"name",
 * "parameters"} alone (its text dropped), one per message; a tool result
 * is an ipython turn holding the result's text as a JSON string (the
 * template's tojson of a string). */
static void render_llama31(const chat_template_t *t, const chat_msg_t *m,
			   int n, const json_t *tools, bool gen, text_t *o)
{
	int i = 0;
	put_header_llama3(o, "system");
	if (tools)
		put(o, "Environment: ipython\n");
	put(o, "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n");
	if (n > 0 && is_role(&m[0], "system"))
		put_msg_trim(o, &m[i++]);
	put(o, "<|eot_id|>");
	if (tools && i < n) { /* check_llama31: there is such a message */
		put_header_llama3(o, "user");
		put(o, "Given the following functions, please respond with a JSON "
		       "for a function call with its proper arguments that best "
		       "answers the given prompt.\n\nRespond in the format "
		       "{\"name\": function name, \"parameters\": dictionary of "
		       "argument name and its value}.Do not use variables.\n\n");
		for (size_t k = 0; k < json_array_size(tools); k++) {
			put_json(o, json_array_get(tools, k), 4);
			put(o, "\n\n");
		}
		put_msg_trim(o, &m[i++]);
		put(o, "<|eot_id|>");
	}
	for (; i < n; i++) {
		if (is_role(&m[i], "tool")) {
			/* the text is valid UTF-8 (jansson's, or checked by
			 * the caller); if not, it goes as it is */
			json_t *s = json_stringn(m[i].text, m[i].len);
			put_header_llama3(o, "ipython");
			if (s)
				put_json(o, s, 0);
			else
				put_msg(o, &m[i]);
			json_decref(s);
		} else if (m[i].n_calls) {
			put_header_llama3(o, "assistant");
			fprintf(o->f, "{\"name\": \"%s\", \"parameters\": ",
				m[i].calls[0].name);
			put_json(o, m[i].calls[0].args, 0);
			put(o, "}");
		} else {
			put_header_llama3(o, m[i].role);
			put_msg_trim(o, &m[i]);
		}
		put(o, "<|eot_id|>");
	}
	if (gen)
		put_header_llama3(o, "assistant");
}

static void render_zephyr(const chat_template_t *t, const chat_msg_t *m,
			  int n, const json_t *tools, bool gen, text_t *o)
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
			  int n, const json_t *tools, bool gen, text_t *o)
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

/* Qwen3's template: ChatML, a system message only first (with tools,
 * the system turn holds them, as ChatML's); an assistant turn's
 * "<think>...</think>" is cut from its content, and the turns after the
 * last user message carry their reasoning (the last one always, an empty
 * one if none); calls follow the text, each on a line of its own after
 * the first; tool results as ChatML's. */
static void render_qwen3(const chat_template_t *t, const chat_msg_t *m,
			 int n, const json_t *tools, bool gen, text_t *o)
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
	int i = tools ? put_system_tools_chatml(NULL, m, n, tools, o) : 0;
	for (; i < n; i++) {
		if (is_role(&m[i], "tool")) {
			put_tool_msg_hermes(m, n, i, o);
			continue;
		}
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
		bool text = nc > 0; /* the template's `content`, before the
				       lstrip of the reasoning branch */
		if (i > last_query && (i == n - 1 || nr)) {
			put(o, "<think>\n");
			fwrite(r, 1, nr, o->f);
			put(o, "\n</think>\n\n");
			while (nc && *c == '\n')
				c++, nc--;
		}
		fwrite(c, 1, nc, o->f);
		for (int k = 0; k < m[i].n_calls; k++) {
			if (k > 0 || text)
				put(o, "\n");
			put_call_hermes(o, &m[i].calls[k]);
		}
		put(o, "<|im_end|>\n");
	}
	if (gen)
		put(o, "<|im_start|>assistant\n");
}

/* Gemma 3: the system message opens the first user turn; assistant is
 * "model"; contents trimmed; roles must alternate from user (the
 * template raises otherwise: an error here, checked by chat_render). */
static void render_gemma3(const chat_template_t *t, const chat_msg_t *m,
			  int n, const json_t *tools, bool gen, text_t *o)
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

/* ---- a kind without a tool syntax: the generic fallback ---- */

/* Whether the kind's template has a syntax of its own for tools, calls
 * and results (chat_tools.h). */
static bool kind_has_tools(chat_kind_t k)
{
	return k == CHAT_CHATML || k == CHAT_QWEN3 || k == CHAT_LLAMA31;
}

static void text_begin(text_t *o)
{
	memset(o, 0, sizeof *o);
	o->f = open_memstream(&o->p, &o->len);
	if (!o->f)
		abort(); /* out of memory */
}

/* Closes o; its text (malloc'd) and length. */
static char *text_end(text_t *o, size_t *len)
{
	fclose(o->f);
	*len = o->len;
	return o->p;
}

/* m[0..n) as plain system, user and assistant messages in the Hermes
 * syntax, for a kind without a tool syntax: the tools block ends the
 * system message (one is made when the first message is not one), an
 * assistant's calls follow its text as <tool_call> blocks, a run of tool
 * results is one user message of <tool_response> blocks. out: room for
 * n + 1 messages; texts: room for n + 1 strings made (the caller frees
 * them). Returns the count of out. */
static int lower_tools(const chat_msg_t *m, int n, const json_t *tools,
		       chat_msg_t *out, char **texts, int *n_texts)
{
	int k = 0, i = 0;
	text_t o;
	size_t len;
	if (tools) {
		text_begin(&o);
		if (n > 0 && is_role(&m[0], "system")) {
			put_msg(&o, &m[i++]);
			put(&o, "\n\n");
		}
		put_tools_hermes(&o, tools);
		texts[(*n_texts)++] = text_end(&o, &len);
		out[k++] = (chat_msg_t){"system", texts[*n_texts - 1], len, NULL, 0};
	}
	for (; i < n; i++) {
		if (!is_role(&m[i], "tool") && !m[i].n_calls) {
			out[k++] = m[i];
			continue;
		}
		text_begin(&o);
		const char *role = is_role(&m[i], "tool") ? "user" : "assistant";
		if (*role == 'u') {
			for (int first = i; i < n && is_role(&m[i], "tool"); i++) {
				put(&o, i > first ? "\n<tool_response>\n" : "<tool_response>\n");
				put_msg(&o, &m[i]);
				put(&o, "\n</tool_response>");
			}
			i--; /* the last of the run */
		} else {
			put_msg(&o, &m[i]);
			for (int c = 0; c < m[i].n_calls; c++) {
				if (c > 0 || m[i].len)
					put(&o, "\n");
				put_call_hermes(&o, &m[i].calls[c]);
			}
		}
		texts[(*n_texts)++] = text_end(&o, &len);
		out[k++] = (chat_msg_t){role, texts[*n_texts - 1], len, NULL, 0};
	}
	return k;
}

/* ---- rendering a conversation ---- */

/* A conversation the kind's template refuses; -1 + err_get(). */
static int check_roles(const chat_template_t *t, const chat_msg_t *m, int n,
		       const json_t *tools)
{
	if (t->kind == CHAT_LLAMA31) {
		int first = n > 0 && is_role(&m[0], "system") ? 1 : 0;
		if (tools && first >= n)
			return err_set("the llama31 template puts the tools in the "
				       "first message after the system one; there is none");
		for (int i = 0; i < n; i++)
			if (m[i].n_calls > 1)
				return err_set("messages[%d]: the llama31 template takes "
					       "one tool call per assistant message "
					       "(this one has %d)", i, m[i].n_calls);
		return 0;
	}
	if (t->kind != CHAT_GEMMA3 && t->kind != CHAT_LLAMA2)
		return 0;
	int first = n > 0 && !strcmp(m[0].role, "system") ? 1 : 0;
	for (int i = first; i < n; i++)
		if (!strcmp(m[i].role, "user") != ((i - first) % 2 == 0))
			return err_set("messages[%d]: the %s template needs roles "
				       "alternating user/assistant after an optional "
				       "first system message%s", i, chat_names[t->kind],
				       tools || m[i].n_calls ? " (tool results count as "
				       "user messages, a run of them as one)" : "");
	return 0;
}

typedef void (*render_fn)(const chat_template_t *, const chat_msg_t *, int,
			  const json_t *, bool, text_t *);

static const render_fn renderers[CHAT_COUNT] = {
	[CHAT_CHATML] = render_chatml,
	[CHAT_LLAMA2] = render_llama2,
	[CHAT_LLAMA3] = render_llama3,
	[CHAT_ZEPHYR] = render_zephyr,
	[CHAT_QWEN3] = render_qwen3,
	[CHAT_GEMMA3] = render_gemma3,
	[CHAT_LLAMA31] = render_llama31,
};

/* Roles the renderers know, and calls only on assistant messages. */
static int check_msgs(const chat_msg_t *m, int n)
{
	for (int i = 0; i < n; i++) {
		if (!m[i].role || (strcmp(m[i].role, "system") &&
				   strcmp(m[i].role, "user") &&
				   strcmp(m[i].role, "assistant") &&
				   strcmp(m[i].role, "tool")))
			return err_set("messages[%d]: role '%.40s' is not system, "
				       "user, assistant or tool", i,
				       m[i].role ? m[i].role : "(null)");
		if (m[i].n_calls && strcmp(m[i].role, "assistant"))
			return err_set("messages[%d]: only an assistant message "
				       "has tool calls", i);
	}
	return 0;
}

int64_t chat_render_tools(const chat_template_t *t, const chat_msg_t *msgs,
			  int n, const json_t *tools, bool add_generation_prompt,
			  char **out)
{
	*out = NULL;
	if (t->kind <= CHAT_NONE || t->kind >= CHAT_COUNT)
		return err_set("no chat template");
	if (check_msgs(msgs, n) < 0)
		return -1;
	chat_msg_t *low = NULL;
	char **texts = NULL;
	int n_texts = 0;
	if (!kind_has_tools(t->kind)) {
		low = calloc((size_t)n + 1, sizeof *low);
		texts = calloc((size_t)n + 1, sizeof *texts);
		if (!low || !texts)
			abort(); /* out of memory */
		n = lower_tools(msgs, n, tools, low, texts, &n_texts);
		msgs = low;
		tools = NULL;
	}
	int64_t len = -1;
	if (check_roles(t, msgs, n, tools) == 0) {
		text_t o;
		text_begin(&o);
		renderers[t->kind](t, msgs, n, tools, add_generation_prompt, &o);
		size_t k;
		*out = text_end(&o, &k);
		len = (int64_t)k;
	}
	for (int i = 0; i < n_texts; i++)
		free(texts[i]);
	free(texts);
	free(low);
	return len;
}

int64_t chat_render(const chat_template_t *t, const chat_msg_t *msgs, int n,
		    bool add_generation_prompt, char **out)
{
	return chat_render_tools(t, msgs, n, NULL, add_generation_prompt, out);
}

int64_t chat_render_full(const chat_template_t *t, const chat_msg_t *msgs,
			 int n, const json_t *tools, bool add_generation_prompt,
			 char **out)
{
	char *body;
	int64_t k = chat_render_tools(t, msgs, n, tools, add_generation_prompt,
				      &body);
	if (k < 0)
		return -1;
	/* the templates that write bos_token themselves (the others leave
	 * BOS to the tokenization, as llama.cpp's server does) */
	bool writes_bos = t->kind == CHAT_LLAMA2 || t->kind == CHAT_LLAMA3 ||
			  t->kind == CHAT_LLAMA31 || t->kind == CHAT_GEMMA3;
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
	chat_msg_t m = {.role = "user", .text = text, .len = strlen(text)};
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
