/* chat_convo: a conversation with a model through its chat template
 * (model/chat.h), kept in one forward pass's KV cache from turn to turn.
 * `egang chat` drives it; anything that holds a conversation on a forward
 * pass (a server slot, an agent) can.
 *
 * A turn, in order:
 *  1. chat_convo_add(c, "user", text, len): the new message.
 *  2. chat_convo_prompt(c, &p): the ids to feed and how many of them the
 *     KV holds already (p.n_cached, for engine_params_t.n_cached).
 *  3. engine_generate (or engine_run) on the same forward pass, its
 *     on_text handing the answer's text to chat_convo_answer_text.
 *  4. chat_convo_record(c, &r): the answer joins the conversation and its
 *     ids the KV's; or chat_convo_forget_kv(c) when the generation failed
 *     (the KV's contents are then unknown).
 *
 * KV reuse. A turn's prompt is the previous prompt's ids, the last
 * answer's ids as they were generated, and the ids of what the template
 * renders after the answer (its end-of-turn marker, the new user message,
 * the assistant header), found by rendering the conversation with the
 * answer replaced by a mark. So no earlier position changes and only the
 * new tail is computed. An answer stays in the KV as generated (as
 * llama.cpp's llama-cli keeps it), even where the template would render
 * it otherwise later (Qwen3 drops an earlier answer's <think> block;
 * Llama 3 and Gemma 3 trim white space). Where the template does not
 * render the conversation as such a continuation (the first turn, after a
 * reset or a failed generation, a user message that does not follow an
 * answer), the whole text is tokenized and the ids it shares with the KV
 * are reused.
 *
 * chat_convo_turn does steps 2 to 4 on an engine_t.
 *
 * One conversation per forward pass; not thread-safe. */
#ifndef EGANG_ENGINE_CHAT_CONVO_H
#define EGANG_ENGINE_CHAT_CONVO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "engine/engine.h"
#include "engine/engine_open.h"
#include "model/chat.h"
#include "model/model.h"

typedef struct chat_convo chat_convo_t; /* opaque */

/* The next turn's prompt (chat_convo_prompt). */
typedef struct chat_prompt {
	int32_t *ids;     /* (n) malloc'd; the caller frees */
	int64_t n;        /* >= 1 */
	int64_t n_cached; /* ids[0..n_cached) are in the KV already; < n */
	bool continued;   /* the KV's ids and the template's tail (else the
			     whole text tokenized) */
} chat_prompt_t;

/* The chat template for m: the built-in kind when kind is not CHAT_NONE,
 * else the one the text in the file path names (NULL: the one m's
 * tokenizer.chat_template names). NULL + err_get() when path cannot be
 * read (even with a kind); else its kind is CHAT_NONE when egang knows
 * none. Free it with chat_template_free before m. */
chat_template_t *chat_convo_template(const model_t *m, chat_kind_t kind,
				     const char *path);

/* An empty conversation through ct (which must outlive it), the KV empty;
 * never NULL (aborts on out of memory). */
chat_convo_t *chat_convo_new(const chat_template_t *ct);
/* Frees c; NULL is fine. */
void chat_convo_free(chat_convo_t *c);
/* Forgets every message and starts again with the system message: system
 * (copied; "" for none), or when NULL the last one given (none at first).
 * The KV's ids stay, for the next prompt's shared prefix. */
void chat_convo_reset(chat_convo_t *c, const char *system);
/* Appends a message: role and text[0..len) copied (aborts on out of
 * memory). */
void chat_convo_add(chat_convo_t *c, const char *role, const char *text,
		    size_t len);
/* Appends the messages of a JSON array of OpenAI messages: {"role",
 * "content"}, an assistant's with "tool_calls" (content may be null), a
 * tool result {"role": "tool", "content", "tool_call_id"}; 0, or -1 +
 * err_get() naming the first that lacks a string role or content or has
 * malformed calls (then none is added). */
int chat_convo_add_json(chat_convo_t *c, const json_t *messages);
/* A conversation file's {"messages": [...], "tools": [...]}: its tools
 * (chat_tools.h; absent or null: none) shown in every rendering from now
 * on, then its messages appended as chat_convo_add_json does. 0 or -1 +
 * err_get() (nothing changed). */
int chat_convo_load_json(chat_convo_t *c, const json_t *conversation);
/* Removes the last message (a turn the template refused); none: no-op. */
void chat_convo_drop(chat_convo_t *c);
/* The messages so far and their count. */
const chat_msg_t *chat_convo_msgs(const chat_convo_t *c, int *n);
/* The conversation as the Jinja template renders it (chat_render_full:
 * the BOS piece first where the template writes it), the assistant's
 * header after it when add_generation_prompt. *out: malloc'd. Its length,
 * or -1 + err_get() (the template refuses a role). */
int64_t chat_convo_render(const chat_convo_t *c, bool add_generation_prompt,
			  char **out);
/* The ids whose positions the KV holds (the forward pass computed them
 * in this order from position 0) and their count. */
const int32_t *chat_convo_kv(const chat_convo_t *c, int64_t *n);

/* Renders the conversation with the assistant's header after it and
 * assembles the prompt's ids (see the top: continued, else the whole text
 * tokenized). 0 with *p filled; -1 + err_get() when the template refuses
 * the conversation (an unknown role: nothing changed); ENGINE_FAIL +
 * err_get() when the text gives no ids (a tokenizer error, an empty
 * prompt, memory). */
int chat_convo_prompt(chat_convo_t *c, chat_prompt_t *p);
/* Appends text[0..n) to the answer under way (what on_text receives;
 * aborts on out of memory). */
void chat_convo_answer_text(chat_convo_t *c, const char *text, size_t n);
/* Records the generation of the last prompt: the answer's text so far
 * joins the conversation as the assistant's message, and the KV holds r's
 * ids (all but the last one sampled, or all when an end token, not among
 * them, ended the answer). Takes r->ids (NULL after). */
void chat_convo_record(chat_convo_t *c, engine_result_t *r);
/* The generation of the last prompt failed: its text is dropped, the KV
 * holds nothing to reuse, and the next prompt is tokenized whole. */
void chat_convo_forget_kv(chat_convo_t *c);

/* One turn on e's forward pass: chat_convo_prompt, engine_run with p
 * (its prompt and n_cached set here, the sampler's seed plus the message
 * count so that turns draw differently; p->before_token and p->on_text,
 * either may be NULL, are called as engine_run calls them and receive
 * p->user), then chat_convo_record. 0 with *r (r->ids NULL: the
 * conversation holds them) and *n_cached, the prompt ids the KV held
 * already; -1 or ENGINE_FAIL + err_get() as chat_convo_prompt or
 * engine_run (after a failed generation the KV is forgotten). */
int chat_convo_turn(chat_convo_t *c, engine_t *e, const engine_params_t *p,
		    engine_result_t *r, int64_t *n_cached);

/* The prompt ids of one question: the system message (NULL or "":
 * none) and the user's through m's chat template (kind, or m's own when
 * CHAT_NONE), the assistant's header after them, tokenized as a chat turn
 * is (the BOS as the vocabulary asks). *ids: malloc'd, the caller frees. The count, or
 * -1 + err_get() (no template egang knows, the template refuses, the
 * tokenizer fails). */
int64_t chat_convo_question_ids(const model_t *m, chat_kind_t kind,
				const char *system, const char *user,
				int32_t **ids);

#endif
