/* The agent's model and its prompt (agent_model.h). */
#include "engine/agent_model.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "engine/chat_convo.h"
#include "engine/engine.h"

/* The template tmpl (checked: NULL, "none" or a built-in's name) asks for
 * on e's model; NULL for plain text. */
static chat_template_t *pick_template(const engine_t *e, const char *tmpl)
{
	if (tmpl && !strcmp(tmpl, "none"))
		return NULL;
	chat_template_t *ct = chat_convo_template(
		e->m, tmpl ? chat_kind_from_name(tmpl) : CHAT_NONE, NULL);
	if (chat_template_kind(ct) == CHAT_NONE) {
		chat_template_free(ct);
		ct = NULL;
	}
	return ct;
}

int agent_model_open(agent_model_t *a, const char *model, const char *tok,
		     int cpu, const char *tmpl, int *status)
{
	memset(a, 0, sizeof *a);
	if (tmpl && strcmp(tmpl, "none") && chat_kind_from_name(tmpl) == CHAT_NONE) {
		*status = EXIT_INPUT;
		return err_set("--chat-template '%s' is not one of none, chatml, "
			       "llama2, llama3, zephyr, qwen3, gemma3", tmpl);
	}
	engine_config_t ec = {.model_path = model, .tok_path = tok, .cpus = &cpu,
			      .n_cpus = 1, .no_gang = true, .no_forward = true};
	engine_t *e = engine_open(&ec, status);
	if (e) {
		e->ctx = e->ctx < 1024 ? e->ctx : 1024;
		if (!(e->f = forward_new_kv(e->m, e->ctx, e->kv_type, 0)))
			*status = EXIT_FAIL;
	}
	if (!e || !e->f) {
		engine_close(e);
		return -1;
	}
	a->e = e;
	a->ct = pick_template(e, tmpl);
	return 0;
}

void agent_model_close(agent_model_t *a)
{
	chat_template_free(a->ct);
	engine_close(a->e);
	memset(a, 0, sizeof *a);
}

const char *agent_model_template(const agent_model_t *a)
{
	return a->ct ? chat_name(chat_template_kind(a->ct)) : "none";
}

/* Serially; the logits of the prompt's last position stay in the forward
 * pass (no later position runs with n_predict 1). */
const float *agent_model_logits(void *user, const char *prompt)
{
	agent_model_t *a = user;
	engine_t *e = a->e;
	engine_params_t ep = {.prompt = prompt, .n_predict = 1,
			      .sampler = {.temp = 0, .top_p = 1}};
	int32_t *ids = NULL;
	if (a->ct) {
		int64_t n = chat_user_prompt_ids(a->ct, prompt, &ids);
		if (n < 0)
			return NULL;
		ep.prompt_ids = ids;
		ep.n_prompt_ids = n;
	}
	engine_result_t r;
	int rc = engine_generate(e->m, e->f, NULL, &ep, &r);
	free(ids);
	if (rc < 0)
		return NULL;
	bool ran = r.n_gen == 1 || r.stop == STOP_EOS;
	int64_t n = r.n_prompt;
	engine_result_free(&r);
	if (!ran)
		return err_set("the prompt (%lld tokens) leaves no room in the "
			       "context %d", (long long)n, e->ctx), NULL;
	return forward_logits(e->f);
}
