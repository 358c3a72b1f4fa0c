/* The agent's model, shared by `egang control --agent` and `egang bench
 * agent`: a serial engine (no gang) with a KV cache of at most 1024
 * positions (the prompt is a few hundred tokens), and the chat template
 * the controller's prompt goes through as one user message, the
 * assistant's header after it, so a chat model answers in its own format.
 * Without a template the prompt is the plain text. */
#ifndef EGANG_ENGINE_AGENT_MODEL_H
#define EGANG_ENGINE_AGENT_MODEL_H

#include "model/chat.h"
#include "engine/engine_open.h"

typedef struct agent_model {
	engine_t *e;
	chat_template_t *ct; /* NULL: the prompt as plain text */
} agent_model_t;

/* Opens model (tok: a llama2.c tokenizer.bin, or NULL) on cpu. tmpl: NULL
 * for the model's own tokenizer.chat_template when egang knows its kind
 * (else plain text), "none" for plain text, or a built-in's name (chatml,
 * llama2, llama3, zephyr, qwen3, gemma3). 0, or -1 + err_get() with
 * *status the exit code (EXIT_INPUT, EXIT_FAIL). */
int agent_model_open(agent_model_t *a, const char *model, const char *tok,
		     int cpu, const char *tmpl, int *status);
void agent_model_close(agent_model_t *a);
/* "chatml", ..., or "none": the template the prompts go through. */
const char *agent_model_template(const agent_model_t *a);
/* A controller_logits_fn (user: the agent_model_t): one greedy token
 * after the prompt; the logits of its last position. */
const float *agent_model_logits(void *user, const char *prompt);

#endif
