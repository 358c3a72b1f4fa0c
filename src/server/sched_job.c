/* sched_job: a job's life in the scheduler. The generation thread appends
 * its events (start, text, end or error) under the job's lock and wakes
 * whoever waits on it; the transport's threads take them one by one
 * (sched_job_next) or wait for the end and read the result. The end of a
 * generation also lands here: its metrics and the policy guard's check. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "model/grammar.h"
#include "server/sched_impl.h"

/* ---- references ---- */

sched_job_t *sched_job_new(void)
{
	sched_job_t *j = calloc(1, sizeof *j);
	if (!j)
		abort(); /* out of memory */
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->refs = 1;
	return j;
}

sched_request_t *sched_job_request(sched_job_t *j) { return &j->req; }

/* Frees what a first choice's request owns (sched.h sched_request_t). */
static void request_free(sched_request_t *q)
{
	free(q->ids);
	free((void *)q->sp.bias); /* the request's own (api_request.c) */
	grammar_free(q->grammar);
	for (int i = 0; i < q->n_stop; i++)
		free(q->stop[i]);
}

static void job_destroy(sched_job_t *j)
{
	if (j->req.first) /* a later choice: its buffers are the first's */
		sched_job_release(j->req.first);
	else
		request_free(&j->req);
	sbuf_free(&j->text);
	free(j->ev);
	free(j->tok);
	free(j->err_msg);
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv);
	free(j);
}

sched_job_t *sched_job_new_choice(sched_job_t *first, int choice)
{
	sched_job_t *j = sched_job_new();
	pthread_mutex_lock(&first->mu);
	first->refs++;
	pthread_mutex_unlock(&first->mu);
	j->req = first->req; /* every pointer borrowed: request_free skips them */
	j->req.first = first;
	j->req.choice = choice;
	j->req.sp.seed = first->req.sp.seed + (uint64_t)choice;
	snprintf(j->req.name, sizeof j->req.name, "%.40s.%d", first->req.name, choice);
	return j;
}

void sched_job_release(sched_job_t *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&j->mu);
	int left = --j->refs;
	pthread_mutex_unlock(&j->mu);
	if (!left)
		job_destroy(j);
}

void sched_job_cancel(sched_job_t *j)
{
	atomic_store_explicit(&j->cancel, true, memory_order_relaxed);
}

/* ---- events: the generation thread's side ---- */

/* Keeps an event for sched_job_next (under j->mu; streamed jobs only). */
static void job_push(sched_job_t *j, sched_event_kind_t kind, size_t off, size_t n)
{
	if (!j->req.stream)
		return;
	if (j->ev_next == j->n_ev)
		j->ev_next = j->n_ev = 0; /* all taken: reuse the array */
	if (j->n_ev == j->cap_ev) {
		size_t cap = j->cap_ev ? 2 * j->cap_ev : 16;
		sched_event_rec_t *ev = realloc(j->ev, cap * sizeof *ev);
		if (!ev)
			abort(); /* out of memory */
		j->ev = ev;
		j->cap_ev = cap;
	}
	j->ev[j->n_ev++] = (sched_event_rec_t){kind, off, n, j->tok_evented,
					       j->n_tok - j->tok_evented};
	j->tok_evented = j->n_tok;
	pthread_cond_broadcast(&j->cv);
}

void sched_job_start(sched_job_t *j)
{
	pthread_mutex_lock(&j->mu);
	job_push(j, SCHED_EVENT_START, 0, 0);
	pthread_mutex_unlock(&j->mu);
}

int sched_job_on_text(void *user, const char *text, size_t n)
{
	sched_gen_ctx_t *c = user;
	sched_job_t *j = c->j;
	if (atomic_load_explicit(&j->cancel, memory_order_relaxed) ||
	    atomic_load_explicit(&c->s->stopping, memory_order_relaxed))
		return 1;
	pthread_mutex_lock(&j->mu);
	size_t off = j->text.len;
	sbuf_add(&j->text, text, n);
	job_push(j, SCHED_EVENT_TEXT, off, n);
	pthread_mutex_unlock(&j->mu);
	return 0;
}

void sched_job_on_token(void *user, const engine_token_t *t)
{
	sched_job_t *j = ((sched_gen_ctx_t *)user)->j;
	if (!j->req.sp.logprobs)
		return;
	pthread_mutex_lock(&j->mu);
	if (j->n_tok == j->cap_tok) {
		size_t cap = j->cap_tok ? 2 * j->cap_tok : 64;
		engine_token_t *tok = realloc(j->tok, cap * sizeof *tok);
		if (!tok)
			abort(); /* out of memory */
		j->tok = tok;
		j->cap_tok = cap;
	}
	j->tok[j->n_tok++] = *t;
	pthread_mutex_unlock(&j->mu);
}

/* The job's error (under j->mu): status, a copy of msg, the ERROR event. */
static void job_set_error(sched_job_t *j, int status, char *copy)
{
	j->err_status = status;
	j->err_msg = copy;
	job_push(j, SCHED_EVENT_ERROR, 0, 0);
}

/* A copy of msg; aborts when out of memory. */
static char *job_msg(const char *msg)
{
	char *copy = strdup(msg ? msg : "");
	if (!copy)
		abort(); /* out of memory */
	return copy;
}

void sched_job_fail(sched_t *s, sched_job_t *j, int status, const char *msg)
{
	metrics_job_failed(s->metrics, status);
	char *copy = job_msg(msg);
	pthread_mutex_lock(&j->mu);
	job_set_error(j, status, copy);
	j->done = true;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

/* The metrics of one finished generation, then the policy guard's check. */
static void job_record(sched_t *s, gang_t *g, const sched_job_t *j,
		       const engine_result_t *r, uint64_t t0)
{
	metrics_generation_t mg = {
		.n_prompt = r->n_prompt,
		.n_gen = r->n_gen,
		.decode_steps = r->decode_steps,
		.prefill_s = r->prefill_s,
		.decode_s = r->decode_s,
		.ttft_s = r->n_gen > 0 ? (double)(t0 - j->t_enqueue) / 1e9 +
						 r->first_token_s
				       : -1,
		.cancelled = r->stop == STOP_CANCEL,
	};
	gang_stats_t st;
	if (g)
		gang_stats(g, &st);
	double decode_tps = metrics_record_generation(s->metrics, &mg, g ? &st : NULL);
	if (s->have_rt) /* the guard's check: once per generation end */
		policy_rt_generation_end(&s->rt, mg.ttft_s, decode_tps,
					 (uint32_t)sched_queue_depth(s));
}

void sched_job_complete(sched_t *s, gang_t *g, sched_job_t *j,
			engine_result_t *r, uint64_t t0)
{
	job_record(s, g, j, r, t0);
	/* cut by sched_stop, not stopped by its client or its limits: an
	 * error, so that nobody takes the text for a complete one */
	bool cut = r->stop == STOP_CANCEL &&
		   atomic_load_explicit(&s->stopping, memory_order_relaxed) &&
		   !atomic_load_explicit(&j->cancel, memory_order_relaxed);
	char *copy = cut ? job_msg("the server shut down before the generation "
				   "finished") : NULL;
	s->n_cut += cut;
	pthread_mutex_lock(&j->mu);
	j->stop = r->stop;
	j->n_prompt = r->n_prompt;
	j->n_gen = r->n_gen;
	if (cut)
		job_set_error(j, 503, copy);
	else
		job_push(j, SCHED_EVENT_END, 0, 0);
	j->done = true;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	engine_result_free(r);
}

bool sched_job_done(sched_job_t *j)
{
	pthread_mutex_lock(&j->mu);
	bool done = j->done;
	pthread_mutex_unlock(&j->mu);
	return done;
}

/* ---- events: the transport's side ---- */

int sched_job_next(sched_job_t *j, sched_event_t *ev, sbuf_t *text,
		   const struct timespec *deadline)
{
	pthread_mutex_lock(&j->mu);
	while (deadline && j->ev_next == j->n_ev && !j->done)
		if (pthread_cond_timedwait(&j->cv, &j->mu, deadline) == ETIMEDOUT)
			break;
	int rc = j->done ? -1 : 0;
	if (j->ev_next < j->n_ev) {
		const sched_event_rec_t *e = &j->ev[j->ev_next++];
		*ev = (sched_event_t){.kind = e->kind, .choice = j->req.choice,
				      .stop = j->stop,
				      .n_prompt = j->n_prompt, .n_gen = j->n_gen,
				      .status = j->err_status, .msg = j->err_msg};
		text->len = 0;
		if (e->kind == SCHED_EVENT_TEXT)
			sbuf_add(text, e->n ? j->text.p + e->off : "", e->n);
		/* the tokens after the text, at an offset aligned for them */
		size_t at = (e->n + 1 + 7) & ~(size_t)7;
		if (e->n_tok) {
			sbuf_add(text, "\0\0\0\0\0\0\0\0", at - text->len);
			sbuf_add(text, (const char *)(j->tok + e->tok_off),
				 e->n_tok * sizeof *j->tok);
		}
		ev->text = text->p;
		ev->n = e->n;
		ev->tokens = e->n_tok ? (const engine_token_t *)(text->p + at) : NULL;
		ev->n_tokens = e->n_tok;
		rc = 1;
	}
	pthread_mutex_unlock(&j->mu);
	return rc;
}

bool sched_job_wait(sched_job_t *j, int ms)
{
	pthread_mutex_lock(&j->mu);
	if (!j->done) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts); /* the condvar's clock */
		ts.tv_nsec += ms % 1000 * 1000000L;
		ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&j->cv, &j->mu, &ts);
	}
	bool done = j->done;
	pthread_mutex_unlock(&j->mu);
	return done;
}

bool sched_job_failed(sched_job_t *j)
{
	pthread_mutex_lock(&j->mu);
	bool failed = j->done && j->err_status;
	pthread_mutex_unlock(&j->mu);
	return failed;
}

void sched_job_result(sched_job_t *j, sched_result_t *r)
{
	pthread_mutex_lock(&j->mu);
	*r = (sched_result_t){.status = j->err_status, .msg = j->err_msg,
			      .text = j->text.p ? j->text.p : "", .n = j->text.len,
			      .tokens = j->tok, .n_tokens = j->n_tok,
			      .stop = j->stop, .n_prompt = j->n_prompt,
			      .n_gen = j->n_gen};
	pthread_mutex_unlock(&j->mu);
}
