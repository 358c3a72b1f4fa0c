/* sched: the scheduler object and its generation thread. The thread
 * creates the forward pass and the gang (gang_init pins it as the leader),
 * then runs the continuous-batching loop (sched_batch.c) or, with
 * parallel 1, one job at a time through engine_generate(), which begins
 * and ends the gang's generation, so cores go back to the OS between
 * requests. The engine hands over text already through the UTF-8 policy
 * and cut at the stop strings (engine.h), the same text `egang generate`
 * prints; the job keeps it as raw events (sched_job.c). */
#include <stdio.h>
#include <stdlib.h>

#include "base/base.h"
#include "gang/gang.h"
#include "model/forward.h"
#include "server/sched_impl.h"

/* ---- the object ---- */

sched_t *sched_new(const sched_config_t *cfg, metrics_t *metrics)
{
	sched_t *s = calloc(1, sizeof *s);
	if (!s)
		return err_sys("calloc"), NULL;
	s->cfg = *cfg;
	s->metrics = metrics;
	pthread_mutex_init(&s->qmu, NULL);
	pthread_cond_init(&s->qcv, NULL);
	return s;
}

void sched_free(sched_t *s)
{
	if (!s)
		return;
	sched_stop(s);
	pthread_mutex_destroy(&s->qmu);
	pthread_cond_destroy(&s->qcv);
	free(s);
}

/* ---- one job at a time (parallel 1) ---- */

/* Once the drain has begun: answers every queued job with 503 (the
 * generation thread's side of sched_drain; the batch loop refuses them
 * in its admission instead). */
static void gen_flush_queue(sched_t *s)
{
	if (s->flushed || !atomic_load_explicit(&s->draining, memory_order_relaxed))
		return;
	s->flushed = true; /* no job is queued after draining is set */
	sched_job_t *j = sched_queue_take_all(s);
	while (j) {
		sched_job_t *next = j->next;
		sched_job_fail(s, j, 503, "the server is shutting down");
		sched_job_release(j);
		j = next;
	}
}

/* Before every token: the drain's refusals, the policy runtime, and the
 * per-token latency. */
static void gen_before_token(void *user, uint64_t pos)
{
	sched_gen_ctx_t *c = user;
	gen_flush_queue(c->s);
	if (c->s->have_rt)
		policy_rt_before_token(&c->s->rt, pos);
	uint64_t now = time_now_ns();
	if (pos >= (uint64_t)c->j->req.n_ids && c->j->t_last)
		metrics_observe(c->s->metrics, METRICS_HIST_TPOT,
				(double)(now - c->j->t_last) / 1e9);
	c->j->t_last = now;
}

static void gen_run(sched_t *s, forward_t *f, gang_t *g, sched_job_t *j)
{
	const sched_request_t *q = &j->req;
	sched_job_start(j);
	sched_gen_ctx_t c = {s, j};
	engine_params_t ep = {
		.prompt_ids = q->ids,
		.n_prompt_ids = q->n_ids,
		.n_predict = q->max_tokens,
		.sampler = q->sp,
		.before_token = gen_before_token,
		.on_text = sched_job_on_text,
		.on_token = sched_job_on_token,
		.user = &c,
		.stop = (const char *const *)q->stop,
		.n_stop = q->n_stop,
		.grammar = q->grammar,
	};
	uint64_t t0 = time_now_ns();
	engine_result_t r;
	if (engine_generate(s->cfg.m, f, g, &ep, &r) < 0) {
		sched_job_fail(s, j, 500, err_get());
		return;
	}
	sched_job_complete(s, g, j, &r, t0);
}

/* Takes jobs one by one until stopping and drained. */
static void gen_loop(sched_t *s, forward_t *f, gang_t *g)
{
	sched_job_t *j;
	while ((j = sched_queue_pop_wait(s))) {
		if (atomic_load_explicit(&s->draining, memory_order_relaxed))
			sched_job_fail(s, j, 503, "the server is shutting down");
		else if (atomic_load_explicit(&j->cancel, memory_order_relaxed))
			sched_job_fail(s, j, 503, "the client went away");
		else {
			metrics_observe(s->metrics, METRICS_HIST_QUEUE_WAIT,
					(double)(time_now_ns() - j->t_enqueue) / 1e9);
			gen_run(s, f, g, j);
		}
		sched_queue_set_idle(s);
		sched_job_release(j);
	}
}

/* ---- the generation thread ---- */

/* The forward pass and the gang (NULL: serial) of the generation thread,
 * and its policy runtime; -1 + err_get() on failure. */
static int gen_setup(sched_t *s, forward_t **f, gang_t **g)
{
	const sched_config_t *cfg = &s->cfg;
	*g = NULL;
	*f = forward_new_kv(cfg->m, cfg->ctx, cfg->kv_type, 0);
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

static void *gen_main(void *arg)
{
	sched_t *s = arg;
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
	if (g)
		metrics_set_gang_width(s->metrics,
				       (uint32_t)__builtin_popcount(gang_requested(g)));
	if (!rc && s->cfg.parallel > 1 && forward_batch_max(f) > 1)
		sched_batch_run(s, f, g);
	if (!rc)
		gen_loop(s, f, g);
	gang_free(g);
	forward_free(f);
	return NULL;
}

int sched_start(sched_t *s)
{
	if (pthread_create(&s->gen, NULL, gen_main, s))
		return err_sys("pthread_create");
	s->gen_started = true;
	pthread_mutex_lock(&s->qmu);
	while (!s->gen_ready)
		pthread_cond_wait(&s->qcv, &s->qmu);
	int rc = s->gen_rc;
	pthread_mutex_unlock(&s->qmu);
	if (rc) {
		pthread_join(s->gen, NULL);
		s->gen_started = false;
		return err_set("%s", s->gen_err);
	}
	return 0;
}

void sched_drain(sched_t *s)
{
	pthread_mutex_lock(&s->qmu);
	atomic_store_explicit(&s->draining, true, memory_order_relaxed);
	pthread_cond_broadcast(&s->qcv);
	pthread_mutex_unlock(&s->qmu);
}

int sched_stop(sched_t *s)
{
	pthread_mutex_lock(&s->qmu);
	atomic_store_explicit(&s->draining, true, memory_order_relaxed);
	atomic_store_explicit(&s->stopping, true, memory_order_relaxed);
	pthread_cond_broadcast(&s->qcv);
	pthread_mutex_unlock(&s->qmu);
	int cut = 0;
	if (s->gen_started) { /* cuts the running jobs, fails the queued */
		pthread_join(s->gen, NULL);
		s->gen_started = false;
		cut = s->n_cut;
	}
	return cut;
}
