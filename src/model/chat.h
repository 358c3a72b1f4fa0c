/* chat: chat templates, from a list of messages to a prompt.
 *
 * Two steps, as llama.cpp's server does them:
 *  1. chat_render(): messages -> prompt text. Special tokens the template
 *     places (BOS between Llama 2 turns, EOS after a Zephyr turn) are
 *     spelled in the text by their pieces ("</s>", "<|im_end|>"). A leading
 *     BOS is not part of the text: step 2 adds it when the vocabulary asks.
 *  2. chat_tokenize(): prompt text -> token ids. The spellings of BOS and
 *     EOS become those ids; the text between them is encoded as a prompt is
 *     (tokenizer_encode, which also matches a gpt2 vocabulary's control
 *     tokens such as <|im_start|>).
 * The template kind is recognised from markers in tokenizer.chat_template
 * (chat_kind); each kind renders as its reference template does for
 * system, user and assistant messages, and for tools, an assistant's tool
 * calls and tool results in the kind's tool syntax (chat_tools.h: ChatML
 * and Qwen3 as Qwen2.5/Qwen3, Llama 3.1 as its template, the other kinds
 * through a documented generic fallback). A Jinja interpreter would
 * replace the kinds behind the same two calls. */
#ifndef EGANG_CHAT_H
#define EGANG_CHAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "model/tokenizer.h"

/* The chat template kinds recognised in tokenizer.chat_template. */
typedef enum chat_kind {
	CHAT_NONE,
	CHAT_CHATML,
	CHAT_LLAMA2,
	CHAT_LLAMA3,
	CHAT_ZEPHYR,
	CHAT_QWEN3,  /* ChatML with <think> handling of assistant turns */
	CHAT_GEMMA3, /* <start_of_turn>user / model */
	CHAT_LLAMA31, /* Llama 3.1-3.3: a system header with dates, ipython */
	CHAT_COUNT
} chat_kind_t;

/* One call of an assistant message (OpenAI's tool_calls[k]). */
typedef struct chat_tool_call {
	const char *id;     /* the call's id, NULL if none (not rendered by
			       any family) */
	const char *name;   /* the function's name */
	const json_t *args; /* its arguments (function.arguments parsed) */
} chat_tool_call_t;

typedef struct chat_msg {
	const char *role; /* "system", "user", "assistant" or "tool" */
	const char *text; /* UTF-8, len bytes (need not be NUL-terminated) */
	size_t len;
	const chat_tool_call_t *calls; /* assistant: its tool calls */
	int n_calls;
} chat_msg_t;

typedef struct chat_template chat_template_t; /* opaque */

/* The kind in use: from markers in the template text (may be NULL), else
 * ChatML when the vocabulary (may be NULL) has <|im_start|>, else
 * CHAT_NONE. */
chat_kind_t chat_kind(const char *template_text, const tokenizer_t *tok);
/* "none", "chatml", "llama2", "llama3", "zephyr", "qwen3", "gemma3",
 * "llama31"; "?" out of range. */
const char *chat_name(chat_kind_t k);
/* The kind of a name chat_name gives, CHAT_NONE if unknown. */
chat_kind_t chat_kind_from_name(const char *name);
/* A text that chat_kind() recognises as kind k (its markers), "" for
 * CHAT_NONE: how a built-in is chosen where a template text is expected. */
const char *chat_markers(chat_kind_t k);
/* A template of a chosen kind (--chat-template NAME), whatever the
 * model's template text says. */
chat_template_t *chat_template_new_kind(chat_kind_t kind,
					const tokenizer_t *tok);

/* A template for tok (which must outlive it), of kind chat_kind(text, tok);
 * never NULL (aborts on out of memory). CHAT_NONE renders nothing. */
chat_template_t *chat_template_new(const char *template_text,
				   const tokenizer_t *tok);
void chat_template_free(chat_template_t *t);
chat_kind_t chat_template_kind(const chat_template_t *t);
const tokenizer_t *chat_template_tokenizer(const chat_template_t *t);

/* Renders msgs[0..n) (roles as chat_msg_t says) to the prompt text, then
 * the assistant's header when add_generation_prompt. *out: malloc'd,
 * NUL-terminated. Returns its length, or -1 + err_get() (no template, an
 * unknown role, a conversation the template refuses). */
int64_t chat_render(const chat_template_t *t, const chat_msg_t *msgs, int n,
		    bool add_generation_prompt, char **out);
/* chat_render with the functions of tools (OpenAI's `tools` array,
 * checked by chat_tools_check; NULL: none) shown to the model, in the
 * kind's tool syntax (chat_tools.h says which). */
int64_t chat_render_tools(const chat_template_t *t, const chat_msg_t *msgs,
			  int n, const json_t *tools,
			  bool add_generation_prompt, char **out);
/* The prompt as the Jinja template renders it: the BOS piece first for
 * the templates that write bos_token (Llama 2, Llama 3, Llama 3.1,
 * Gemma 3), then chat_render_tools's text. For tests against a reference
 * renderer. -1 + err_get(). */
int64_t chat_render_full(const chat_template_t *t, const chat_msg_t *msgs,
			 int n, const json_t *tools,
			 bool add_generation_prompt, char **out);
/* Encodes rendered text (step 2 above) into ids, BOS first when the
 * vocabulary asks for it and the text does not begin with it. Returns the
 * count (may exceed max: then only max were written), -1 + err_get(). */
int64_t chat_tokenize(const chat_template_t *t, const char *text, size_t len,
		      int32_t *ids, int64_t max);

/* One user message, text, rendered with the assistant's header after it
 * and tokenized (chat_render + chat_tokenize): the prompt a chat model
 * answers a single question from. *ids: malloc'd. Returns the count, or
 * -1 + err_get(). */
int64_t chat_user_prompt_ids(const chat_template_t *t, const char *text,
			     int32_t **ids);

#endif
