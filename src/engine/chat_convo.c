/* chat_convo: the conversation and its KV (chat_convo.h). */
#include "engine/chat_convo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "model/chat_tools.h"
#include "model/gguf.h"

struct chat_convo {
	const chat_template_t *ct;
	chat_msg_t *msg;     /* role, text and calls malloc'd (each call's
				name malloc'd, its arguments a reference) */
	json_t *tools;       /* shown in every rendering; NULL: none */
	int n, cap;
	int32_t *kv;         /* ids whose KV the forward pass holds */
	int64_t n_kv;
	int64_t n_kv_prompt; /* the last prompt: kv[0 .. n_kv_prompt) */
	int64_t n_ans;       /* the last answer: kv[n_kv_prompt .. +n_ans) */
	char *prev;          /* the text the last prompt was rendered as;
				NULL: the next prompt is tokenized whole */
	char *system;        /* the system message of a reset, or NULL */
	char *ans;           /* the answer under way: n_text bytes */
	size_t n_text, cap_text;
};

/* U+E000 (private use) around a word: stands for the last answer. */
#define ANSWER_MARK "\xEE\x80\x80" "egang-answer" "\xEE\x80\x80"

/* ---- the template ---- */

chat_template_t *chat_convo_template(const model_t *m, chat_kind_t kind,
				     const char *path)
{
	char *text = NULL;
	size_t len;
	gguf_str_t ts;
	if (path && !(text = file_read_all(path, &len)))
		return NULL;
	if (!text && m->gguf &&
	    gguf_get_str(m->gguf, "tokenizer.chat_template", &ts) == 0)
		text = strndup(ts.s, (size_t)ts.n);
	chat_template_t *ct = kind != CHAT_NONE ? chat_template_new_kind(kind, m->tok)
						: chat_template_new(text, m->tok);
	free(text);
	return ct;
}

/* ---- the messages ---- */

chat_convo_t *chat_convo_new(const chat_template_t *ct)
{
	chat_convo_t *c = calloc(1, sizeof *c);
	if (!c)
		abort(); /* out of memory */
	c->ct = ct;
	return c;
}

void chat_convo_free(chat_convo_t *c)
{
	if (!c)
		return;
	while (c->n)
		chat_convo_drop(c);
	free(c->prev);
	free(c->system);
	json_decref(c->tools);
	free(c->msg);
	free(c->kv);
	free(c->ans);
	free(c);
}

void chat_convo_reset(chat_convo_t *c, const char *system)
{
	while (c->n)
		chat_convo_drop(c);
	free(c->prev);
	c->prev = NULL;
	c->n_ans = 0;
	if (system) {
		free(c->system);
		c->system = *system ? strdup(system) : NULL;
		if (*system && !c->system)
			abort(); /* out of memory */
	}
	if (c->system)
		chat_convo_add(c, "system", c->system, strlen(c->system));
}

void chat_convo_add(chat_convo_t *c, const char *role, const char *text,
		    size_t len)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 8;
		c->msg = realloc(c->msg, (size_t)c->cap * sizeof *c->msg);
		if (!c->msg)
			abort(); /* out of memory */
	}
	char *r = strdup(role), *t = malloc(len + 1);
	if (!r || !t)
		abort(); /* out of memory */
	memcpy(t, text, len);
	t[len] = '\0';
	c->msg[c->n++] = (chat_msg_t){.role = r, .text = t, .len = len};
}

/* The tool calls of messages[i] (none: *calls NULL, *n 0), names copied
 * so that they outlive the JSON; 0 or -1 + err_get(). */
static int calls_copy(const json_t *m, size_t i, chat_tool_call_t **calls,
		      int *n)
{
	const json_t *tc = json_object_get(m, "tool_calls");
	*calls = NULL;
	*n = 0;
	if (!tc || json_is_null(tc))
		return 0;
	if (chat_calls_from_json(tc, calls, n) < 0) {
		char why[256];
		snprintf(why, sizeof why, "%s", err_get());
		return err_set("messages[%zu].%s", i, why);
	}
	for (int k = 0; k < *n; k++) {
		(*calls)[k].id = NULL;
		if (!((*calls)[k].name = strdup((*calls)[k].name)))
			abort(); /* out of memory */
	}
	return 0;
}

static void calls_free(chat_msg_t *m)
{
	for (int k = 0; k < m->n_calls; k++) {
		free((char *)m->calls[k].name);
		json_decref((json_t *)m->calls[k].args);
	}
	free((chat_tool_call_t *)m->calls);
}

int chat_convo_add_json(chat_convo_t *c, const json_t *messages)
{
	size_t n = json_array_size(messages);
	for (size_t i = 0; i < n; i++) {
		const json_t *m = json_array_get(messages, i);
		const json_t *tc = json_object_get(m, "tool_calls");
		const json_t *text = json_object_get(m, "content");
		if (!json_is_string(json_object_get(m, "role")) ||
		    !(json_is_string(text) ||
		      (json_is_null(text) && tc && !json_is_null(tc))))
			return err_set("messages[%zu] needs string role and "
				       "content", i);
		chat_tool_call_t *calls;
		int k;
		if (calls_copy(m, i, &calls, &k) < 0)
			return -1;
		chat_msg_t cm = {.calls = calls, .n_calls = k};
		calls_free(&cm);
	}
	for (size_t i = 0; i < n; i++) {
		const json_t *m = json_array_get(messages, i);
		const json_t *text = json_object_get(m, "content");
		chat_convo_add(c, json_string_value(json_object_get(m, "role")),
			       json_is_string(text) ? json_string_value(text) : "",
			       json_string_length(text));
		calls_copy(m, i, (chat_tool_call_t **)&c->msg[c->n - 1].calls,
			   &c->msg[c->n - 1].n_calls); /* checked above */
	}
	return 0;
}

int chat_convo_load_json(chat_convo_t *c, const json_t *conversation)
{
	json_t *tools = json_object_get(conversation, "tools");
	if (json_is_null(tools))
		tools = NULL;
	if (tools && chat_tools_check(tools) < 0)
		return -1;
	json_t *messages = json_object_get(conversation, "messages");
	if (!json_is_array(messages))
		return err_set("the conversation needs a \"messages\" array");
	if (chat_convo_add_json(c, messages) < 0)
		return -1;
	json_decref(c->tools);
	c->tools = json_incref(tools);
	return 0;
}

void chat_convo_drop(chat_convo_t *c)
{
	if (!c->n)
		return;
	c->n--;
	calls_free(&c->msg[c->n]);
	free((char *)c->msg[c->n].role);
	free((char *)c->msg[c->n].text);
}

const chat_msg_t *chat_convo_msgs(const chat_convo_t *c, int *n)
{
	*n = c->n;
	return c->msg;
}

int64_t chat_convo_render(const chat_convo_t *c, bool add_generation_prompt,
			  char **out)
{
	return chat_render_full(c->ct, c->msg, c->n, c->tools, add_generation_prompt,
				out);
}

const int32_t *chat_convo_kv(const chat_convo_t *c, int64_t *n)
{
	*n = c->n_kv;
	return c->kv;
}

/* ---- the next prompt ---- */

/* The conversation rendered with the last answer (the message before the
 * new one) replaced by ANSWER_MARK; -1 + err_get(). */
static int64_t render_marked(chat_convo_t *c, char **text)
{
	chat_msg_t saved = c->msg[c->n - 2];
	c->msg[c->n - 2].text = ANSWER_MARK;
	c->msg[c->n - 2].len = strlen(ANSWER_MARK);
	int64_t len = chat_render_tools(c->ct, c->msg, c->n, c->tools, true, text);
	c->msg[c->n - 2] = saved;
	return len;
}

/* The text after the previous prompt, up to the mark, if the rendering
 * continues that prompt: NULL when it does not. Only white space may
 * stand between the prompt and the answer (Llama 2's " "): the answer as
 * generated already stands there. */
static const char *mark_after_prev(const chat_convo_t *c, const char *text)
{
	size_t np = strlen(c->prev);
	const char *mark = strstr(text, ANSWER_MARK);
	if (!mark || (size_t)(mark - text) < np || memcmp(text, c->prev, np))
		return NULL;
	for (const char *g = text + np; g < mark; g++)
		if (*g != ' ' && *g != '\n')
			return NULL;
	return mark;
}

/* The prompt as the cached ids continued: the previous prompt's ids, the
 * answer's ids as generated (so no earlier position changes) and the ids
 * of the text after the mark. NULL when the template does not render the
 * conversation that way (then the caller tokenizes the whole text). */
static int32_t *prompt_continued(chat_convo_t *c, int64_t *n_out)
{
	if (!c->prev || c->n < 2 || strcmp(c->msg[c->n - 2].role, "assistant"))
		return NULL;
	char *text;
	if (render_marked(c, &text) < 0)
		return NULL;
	const char *mark = mark_after_prev(c, text);
	int32_t *ids = NULL;
	if (mark) {
		const char *tail = mark + strlen(ANSWER_MARK);
		size_t nt = strlen(tail);
		const tokenizer_t *tok = chat_template_tokenizer(c->ct);
		int64_t k = tokenizer_tokenize(tok, tail, nt, false, true, NULL, 0);
		int64_t head = c->n_kv_prompt + c->n_ans;
		ids = k >= 0 ? malloc((size_t)(head + k + 1) * sizeof *ids) : NULL;
		if (ids) {
			memcpy(ids, c->kv, (size_t)head * sizeof *ids);
			tokenizer_tokenize(tok, tail, nt, false, true, ids + head, k);
			*n_out = head + k;
		}
	}
	free(text);
	return ids;
}

/* The whole text's ids; NULL + err_get() when it gives none. */
static int32_t *prompt_whole(const chat_convo_t *c, const char *text,
			     size_t len, int64_t *n_out)
{
	int64_t n = chat_tokenize(c->ct, text, len, NULL, 0);
	if (n <= 0)
		return n == 0 ? err_set("empty prompt"), NULL : NULL;
	int32_t *ids = malloc((size_t)n * sizeof *ids);
	if (!ids)
		return err_set("out of memory"), NULL;
	chat_tokenize(c->ct, text, len, ids, n);
	*n_out = n;
	return ids;
}

int chat_convo_prompt(chat_convo_t *c, chat_prompt_t *p)
{
	char *text;
	int64_t len = chat_render_tools(c->ct, c->msg, c->n, c->tools, true, &text);
	if (len < 0)
		return -1;
	memset(p, 0, sizeof *p);
	p->ids = prompt_continued(c, &p->n);
	p->continued = p->ids != NULL;
	if (!p->ids && !(p->ids = prompt_whole(c, text, (size_t)len, &p->n))) {
		free(text);
		return ENGINE_FAIL;
	}
	free(c->prev);
	c->prev = text;
	c->n_text = 0;
	int64_t same = 0;
	while (same < p->n && same < c->n_kv && p->ids[same] == c->kv[same])
		same++;
	p->n_cached = same < p->n ? same : p->n - 1;
	return 0;
}

/* ---- after the generation ---- */

void chat_convo_answer_text(chat_convo_t *c, const char *text, size_t n)
{
	if (c->n_text + n > c->cap_text) {
		c->cap_text = 2 * (c->n_text + n);
		if (!(c->ans = realloc(c->ans, c->cap_text)))
			abort(); /* out of memory */
	}
	memcpy(c->ans + c->n_text, text, n);
	c->n_text += n;
}

void chat_convo_record(chat_convo_t *c, engine_result_t *r)
{
	free(c->kv);
	c->kv = r->ids;
	r->ids = NULL;
	c->n_kv = r->n_prompt + r->n_gen - (r->stop == STOP_EOS ? 0 : 1);
	c->n_kv_prompt = r->n_prompt;
	c->n_ans = r->n_gen;
	chat_convo_add(c, "assistant", c->n_text ? c->ans : "", c->n_text);
	c->n_text = 0;
}

void chat_convo_forget_kv(chat_convo_t *c)
{
	c->n_kv = 0;
	c->n_text = 0;
	free(c->prev);
	c->prev = NULL;
}

/* ---- a whole turn ---- */

/* chat_convo_turn's hooks around the caller's: on_text gives the
 * conversation its copy, then the caller's; each hands the caller's
 * callback the caller's user pointer. */
typedef struct turn_hook {
	chat_convo_t *c;
	const engine_params_t *p;
} turn_hook_t;

static void turn_before_token(void *user, uint64_t index)
{
	turn_hook_t *h = user;
	h->p->before_token(h->p->user, index);
}

static int turn_on_text(void *user, const char *s, size_t n)
{
	turn_hook_t *h = user;
	chat_convo_answer_text(h->c, s, n);
	return h->p->on_text ? h->p->on_text(h->p->user, s, n) : 0;
}

int chat_convo_turn(chat_convo_t *c, engine_t *e, const engine_params_t *p,
		    engine_result_t *r, int64_t *n_cached)
{
	chat_prompt_t pr;
	int rc = chat_convo_prompt(c, &pr);
	if (rc < 0)
		return rc;
	turn_hook_t h = {c, p};
	engine_params_t q = *p;
	q.prompt = NULL;
	q.prompt_ids = pr.ids;
	q.n_prompt_ids = pr.n;
	q.n_cached = pr.n_cached;
	q.sampler.seed += (uint64_t)c->n;
	q.before_token = p->before_token ? turn_before_token : NULL;
	q.on_text = turn_on_text;
	q.user = &h;
	rc = engine_run(e, &q, r);
	free(pr.ids);
	if (rc < 0) {
		chat_convo_forget_kv(c);
		return rc;
	}
	chat_convo_record(c, r);
	*n_cached = pr.n_cached;
	return 0;
}

/* ---- one question ---- */

int64_t chat_convo_question_ids(const model_t *m, chat_kind_t kind,
				const char *system, const char *user,
				int32_t **ids)
{
	*ids = NULL;
	chat_template_t *ct = chat_convo_template(m, kind, NULL);
	if (!ct)
		return -1;
	int64_t n = -1;
	if (chat_template_kind(ct) == CHAT_NONE) {
		err_set("the model has no chat template egang knows (its "
			"tokenizer.chat_template is absent or unrecognised); "
			"choose one with --chat-template");
	} else {
		chat_convo_t *c = chat_convo_new(ct);
		chat_prompt_t p;
		chat_convo_reset(c, system ? system : "");
		chat_convo_add(c, "user", user, strlen(user));
		if (chat_convo_prompt(c, &p) == 0) {
			*ids = p.ids;
			n = p.n;
		}
		chat_convo_free(c);
	}
	chat_template_free(ct);
	return n;
}
