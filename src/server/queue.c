/* queue: the bounded FIFO queue and the single generation thread. That
 * thread creates the gang (gang_init pins its caller as the leader) and the
 * forward_t, and runs one job at a time with engine_generate(), which
 * begins and ends the gang's generation, so cores go back to the OS between
 * requests. The engine hands over text already through the UTF-8 policy
 * and cut at the stop strings (engine.h), the same text `egang generate`
 * prints; this file only frames it as JSON: SSE chunks while it streams,
 * one body at the end otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "gang/gang.h"
#include "model/forward.h"
#include "engine/engine.h"
#include "server/server_impl.h"

/* ---- the queue ---- */

void job_release(server_job_t *j)
{
	pthread_mutex_lock(&j->mu);
	int left = --j->refs;
	pthread_mutex_unlock(&j->mu);
	if (!left)
		job_destroy(j);
}

int job_enqueue(server_t *s, server_job_t *j)
{
	pthread_mutex_lock(&s->qmu);
	int rc = 0;
	if (atomic_load_explicit(&s->stopping, memory_order_relaxed) || !s->gen_ready)
		rc = 503;
	else if (s->depth >= s->cfg.max_queue && (s->running_job || s->depth > 0))
		rc = 429; /* max_queue waiting behind a running one */
	if (!rc) {
		j->refs++; /* no other thread sees j yet */
		j->t_enqueue = time_now_ns();
		j->next = NULL;
		if (s->tail)
			s->tail->next = j;
		else
			s->head = j;
		s->tail = j;
		s->depth++;
		pthread_cond_signal(&s->qcv);
	}
	pthread_mutex_unlock(&s->qmu);
	return rc;
}

/* The next job, NULL once stopping and drained; marks it running. */
static server_job_t *dequeue(server_t *s)
{
	pthread_mutex_lock(&s->qmu);
	while (!s->head && !atomic_load_explicit(&s->stopping, memory_order_relaxed))
		pthread_cond_wait(&s->qcv, &s->qmu);
	server_job_t *j = s->head;
	if (j) {
		s->head = j->next;
		if (!s->head)
			s->tail = NULL;
		s->depth--;
		s->running_job = true;
	}
	pthread_mutex_unlock(&s->qmu);
	return j;
}

/* ---- JSON bodies ---- */

void sse_event(server_job_t *j, json_t *json)
{
	char *s = json_take_dump(json);
	pthread_mutex_lock(&j->mu);
	if (j->sse_off == j->sse.len)
		j->sse_off = j->sse.len = 0; /* all sent: reuse the buffer */
	sbuf_str(&j->sse, "data: ");
	sbuf_str(&j->sse, s);
	sbuf_str(&j->sse, "\n\n");
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	free(s);
}

json_t *chunk_json(server_job_t *j, const char *text, size_t n,
			  const char *finish, bool role)
{
	json_t *choice = json_object();
	json_object_set_new(choice, "index", json_integer(0));
	if (j->ep == EP_CHAT) {
		json_t *delta = json_object();
		if (role)
			json_object_set_new(delta, "role", json_string("assistant"));
		if (text)
			json_object_set_new(delta, "content", json_text(text, n));
		json_object_set_new(choice, "delta", delta);
	} else {
		json_object_set_new(choice, "text", json_text(text ? text : "", n));
	}
	json_object_set_new(choice, "logprobs", json_null());
	json_object_set_new(choice, "finish_reason",
			    finish ? json_string(finish) : json_null());
	json_t *choices = json_array();
	json_array_append_new(choices, choice);
	return json_pack("{s:s, s:s, s:I, s:s, s:o}", "id", j->id, "object",
			 j->ep == EP_CHAT ? "chat.completion.chunk" : "text_completion",
			 "created", (json_int_t)j->created, "model", j->model,
			 "choices", choices);
}

json_t *usage_json(int64_t np, int64_t ng)
{
	return json_pack("{s:I, s:I, s:I}", "prompt_tokens", (json_int_t)np,
			 "completion_tokens", (json_int_t)ng, "total_tokens",
			 (json_int_t)(np + ng));
}

char *job_final_body(server_job_t *j)
{
	json_t *choice = json_object();
	json_object_set_new(choice, "index", json_integer(0));
	json_t *text = json_text(j->text.p ? j->text.p : "", j->text.len);
	if (j->ep == EP_CHAT)
		json_object_set_new(choice, "message",
				    json_pack("{s:s, s:o}", "role", "assistant",
					      "content", text));
	else
		json_object_set_new(choice, "text", text);
	json_object_set_new(choice, "logprobs", json_null());
	json_object_set_new(choice, "finish_reason", json_string(j->finish));
	json_t *choices = json_array();
	json_array_append_new(choices, choice);
	return json_take_dump(json_pack(
		"{s:s, s:s, s:I, s:s, s:o, s:o}", "id", j->id, "object",
		j->ep == EP_CHAT ? "chat.completion" : "text_completion",
		"created", (json_int_t)j->created, "model", j->model, "choices",
		choices, "usage", usage_json(j->n_prompt, j->n_gen)));
}

/* ---- one generation ---- */

static void gen_before_token(void *user, uint64_t pos)
{
	gen_ctx_t *c = user;
	if (c->s->have_rt)
		policy_rt_before_token(&c->s->rt, pos);
	uint64_t now = time_now_ns();
	if (pos >= (uint64_t)c->j->n_ids && c->j->t_last) {
		pthread_mutex_lock(&c->s->mmu);
		hist_observe(&c->s->tpot, (double)(now - c->j->t_last) / 1e9);
		pthread_mutex_unlock(&c->s->mmu);
	}
	c->j->t_last = now;
}

/* Final text from the engine: kept for the reply, streamed at once. */
int gen_on_text(void *user, const char *text, size_t n)
{
	gen_ctx_t *c = user;
	server_job_t *j = c->j;
	if (atomic_load_explicit(&j->cancel, memory_order_relaxed) ||
	    atomic_load_explicit(&c->s->stopping, memory_order_relaxed))
		return 1;
	sbuf_add(&j->text, text, n);
	if (j->stream)
		sse_event(j, chunk_json(j, text, n, NULL, false));
	return 0;
}

void job_fail(server_t *s, server_job_t *j, int status, const char *msg)
{
	char *body = error_body(status, NULL, NULL, "%s", msg);
	if (j->stream) {
		json_t *e = json_loads(body, 0, NULL);
		sse_event(j, e);
		pthread_mutex_lock(&j->mu);
		sbuf_str(&j->sse, "data: [DONE]\n\n");
		pthread_mutex_unlock(&j->mu);
	}
	pthread_mutex_lock(&s->mmu);
	s->failed += status == 500;
	s->cancelled += status == 503;
	pthread_mutex_unlock(&s->mmu);
	pthread_mutex_lock(&j->mu);
	j->err_status = status;
	j->err_body = body;
	j->done = true;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

void gen_record(server_t *s, gang_t *g, const server_job_t *j,
		       const engine_result_t *r, uint64_t t0, bool cancelled)
{
	pthread_mutex_lock(&s->mmu);
	s->tok_prompt += (uint64_t)r->n_prompt;
	s->tok_gen += (uint64_t)r->n_gen;
	s->cancelled += cancelled;
	if (r->prefill_s > 0)
		s->prefill_tps = (double)r->n_prompt / r->prefill_s;
	if (r->decode_s > 0 && r->decode_steps > 0)
		s->decode_tps = (double)r->decode_steps / r->decode_s;
	double ttft_s = r->n_gen > 0 ? (double)(t0 - j->t_enqueue) / 1e9 +
					       r->first_token_s
				     : -1;
	if (r->n_gen > 0)
		hist_observe(&s->ttft, ttft_s);
	if (g) {
		gang_stats_t st;
		gang_stats(g, &st);
		s->gang_width = (uint32_t)__builtin_popcount(st.last_mask);
		s->latch_changes = st.latch_changes;
		s->joins = st.joins;
		s->departures = st.departures;
		s->gang_tokens = st.tokens;
	} else {
		s->gang_tokens += (uint64_t)(r->n_prompt + r->decode_steps);
	}
	double decode_tps = s->decode_tps;
	pthread_mutex_unlock(&s->mmu);
	if (s->have_rt) {
		pthread_mutex_lock(&s->qmu);
		uint32_t depth = (uint32_t)s->depth;
		pthread_mutex_unlock(&s->qmu);
		/* the guard's check: once per generation end */
		policy_rt_generation_end(&s->rt, ttft_s, decode_tps, depth);
	}
}

static void gen_run(server_t *s, forward_t *f, gang_t *g, server_job_t *j)
{
	if (j->stream && j->ep == EP_CHAT)
		sse_event(j, chunk_json(j, "", 0, NULL, true));
	gen_ctx_t c = {s, j};
	engine_params_t ep = {
		.prompt_ids = j->ids,
		.n_prompt_ids = j->n_ids,
		.n_predict = j->max_tokens,
		.sampler = j->sp,
		.before_token = gen_before_token,
		.on_text = gen_on_text,
		.user = &c,
		.stop = (const char *const *)j->stop,
		.n_stop = j->n_stop,
	};
	uint64_t t0 = time_now_ns();
	engine_result_t r;
	if (engine_generate(s->cfg.m, f, g, &ep, &r) < 0) {
		job_fail(s, j, 500, err_get());
		return;
	}
	job_complete(s, g, j, &r, t0);
}

void job_complete(server_t *s, gang_t *g, server_job_t *j, engine_result_t *r,
		  uint64_t t0)
{
	bool cancelled = r->stop == STOP_CANCEL;
	j->finish = r->stop == STOP_EOS || r->stop == STOP_STRING ? "stop" : "length";
	if (j->stream) {
		json_t *last = chunk_json(j, j->ep == EP_CHAT ? NULL : "", 0,
					  j->finish, false);
		json_object_set_new(last, "usage", usage_json(r->n_prompt, r->n_gen));
		sse_event(j, last);
	}
	gen_record(s, g, j, r, t0, cancelled);
	pthread_mutex_lock(&j->mu);
	if (j->stream)
		sbuf_str(&j->sse, "data: [DONE]\n\n");
	j->n_prompt = r->n_prompt;
	j->n_gen = r->n_gen;
	j->done = true;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	engine_result_free(r);
}

/* ---- the generation thread ---- */

/* The forward pass and the gang (NULL: serial) of the generation thread,
 * and its policy runtime; -1 + err_get() on failure. */
static int gen_setup(server_t *s, forward_t **f, gang_t **g)
{
	const server_config_t *cfg = &s->cfg;
	*g = NULL;
	*f = forward_new(cfg->m, cfg->ctx, 0);
	if (!*f)
		return -1;
	if (cfg->n_cpus > 1) {
		gang_config_t gc = {.cpus = cfg->cpus, .n_cpus = cfg->n_cpus, .pin = true};
		if (cfg->policies && cfg->control)
			gc.keep_us = policy_keep_us(cfg->policies,
						    (uint32_t)cfg->policy_index);
		*g = gang_init(&gc); /* pins this thread as the leader */
		if (!*g)
			return -1;
		gang_request(*g, cfg->static_k ? (1u << cfg->static_k) - 1
					       : gang_all(*g));
	}
	if (cfg->policies && cfg->control) {
		policy_rt_init(&s->rt, cfg->policies, cfg->control, *g);
		s->have_rt = true;
	}
	return 0;
}

void *gen_main(void *arg)
{
	server_t *s = arg;
	forward_t *f;
	gang_t *g;
	int rc = gen_setup(s, &f, &g);
	pthread_mutex_lock(&s->qmu);
	s->gen_rc = rc;
	if (rc)
		snprintf(s->gen_err, sizeof s->gen_err, "%s", err_get());
	s->gen_ready = true;
	pthread_cond_broadcast(&s->qcv);
	pthread_mutex_unlock(&s->qmu);
	if (g) {
		pthread_mutex_lock(&s->mmu);
		s->gang_width = (uint32_t)__builtin_popcount(gang_requested(g));
		pthread_mutex_unlock(&s->mmu);
	}
	server_job_t *j;
	if (!rc && s->cfg.parallel > 1 && forward_batch_max(f) > 1)
		batch_main(s, f, g);
	while (!rc && (j = dequeue(s))) {
		if (atomic_load_explicit(&s->stopping, memory_order_relaxed))
			job_fail(s, j, 503, "the server is shutting down");
		else if (atomic_load_explicit(&j->cancel, memory_order_relaxed))
			job_fail(s, j, 503, "the client went away");
		else {
			pthread_mutex_lock(&s->mmu);
			hist_observe(&s->queue_wait,
				     (double)(time_now_ns() - j->t_enqueue) / 1e9);
			pthread_mutex_unlock(&s->mmu);
			gen_run(s, f, g, j);
		}
		pthread_mutex_lock(&s->qmu);
		s->running_job = false;
		pthread_mutex_unlock(&s->qmu);
		job_release(j);
	}
	gang_free(g);
	forward_free(f);
	return NULL;
}
