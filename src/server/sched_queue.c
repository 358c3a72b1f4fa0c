/* sched_queue: the bounded FIFO queue between the transport's threads,
 * which add jobs, and the generation thread, the only one that takes
 * them. Everything here is under the queue lock (sched.h). */
#include "base/base.h"
#include "server/sched_impl.h"

int sched_enqueue_n(sched_t *s, sched_job_t *const *jobs, int n)
{
	pthread_mutex_lock(&s->qmu);
	int rc = 0;
	if (atomic_load_explicit(&s->draining, memory_order_relaxed) || !s->gen_ready)
		rc = 503;
	else if (s->depth + n > s->cfg.max_queue && (s->running_job || s->depth > 0))
		rc = 429; /* max_queue waiting behind a running one */
	for (int i = 0; !rc && i < n; i++) {
		sched_job_t *j = jobs[i];
		j->refs++; /* no other thread sees j yet */
		j->t_enqueue = time_now_ns();
		j->next = NULL;
		if (s->tail)
			s->tail->next = j;
		else
			s->head = j;
		s->tail = j;
		s->depth++;
	}
	if (!rc)
		pthread_cond_signal(&s->qcv);
	pthread_mutex_unlock(&s->qmu);
	return rc;
}

int sched_enqueue(sched_t *s, sched_job_t *j) { return sched_enqueue_n(s, &j, 1); }

bool sched_stopping(const sched_t *s)
{
	return atomic_load_explicit(&s->draining, memory_order_relaxed);
}

sched_phase_t sched_phase(const sched_t *s)
{
	if (atomic_load_explicit(&s->stopping, memory_order_relaxed))
		return SCHED_PHASE_STOP;
	return atomic_load_explicit(&s->draining, memory_order_relaxed)
		       ? SCHED_PHASE_DRAIN
		       : SCHED_PHASE_RUN;
}

void sched_queue_state(sched_t *s, int *depth, bool *busy)
{
	pthread_mutex_lock(&s->qmu);
	*depth = s->depth;
	*busy = s->running_job;
	pthread_mutex_unlock(&s->qmu);
}

int sched_queue_depth(sched_t *s)
{
	pthread_mutex_lock(&s->qmu);
	int depth = s->depth;
	pthread_mutex_unlock(&s->qmu);
	return depth;
}

/* Unlinks the head (under qmu) and marks a generation running. */
static sched_job_t *queue_unlink(sched_t *s)
{
	sched_job_t *j = s->head;
	if (j) {
		s->head = j->next;
		if (!s->head)
			s->tail = NULL;
		s->depth--;
		s->running_job = true;
	}
	return j;
}

sched_job_t *sched_queue_pop_wait(sched_t *s)
{
	pthread_mutex_lock(&s->qmu);
	while (!s->head && !atomic_load_explicit(&s->stopping, memory_order_relaxed))
		pthread_cond_wait(&s->qcv, &s->qmu);
	sched_job_t *j = queue_unlink(s);
	pthread_mutex_unlock(&s->qmu);
	return j;
}

sched_job_t *sched_queue_peek(sched_t *s)
{
	pthread_mutex_lock(&s->qmu);
	sched_job_t *j = s->head;
	pthread_mutex_unlock(&s->qmu);
	return j;
}

void sched_queue_pop(sched_t *s)
{
	pthread_mutex_lock(&s->qmu);
	queue_unlink(s);
	pthread_mutex_unlock(&s->qmu);
}

bool sched_queue_try_park(sched_t *s)
{
	pthread_mutex_lock(&s->qmu);
	bool idle = !s->head && !atomic_load_explicit(&s->stopping, memory_order_relaxed);
	if (idle)
		s->running_job = false;
	pthread_mutex_unlock(&s->qmu);
	return idle;
}

sched_job_t *sched_queue_take_all(sched_t *s)
{
	pthread_mutex_lock(&s->qmu);
	sched_job_t *j = s->head;
	s->head = s->tail = NULL;
	s->depth = 0;
	pthread_mutex_unlock(&s->qmu);
	return j;
}

void sched_queue_wait(sched_t *s)
{
	pthread_mutex_lock(&s->qmu);
	while (!s->head && !atomic_load_explicit(&s->stopping, memory_order_relaxed))
		pthread_cond_wait(&s->qcv, &s->qmu);
	pthread_mutex_unlock(&s->qmu);
}

void sched_queue_set_idle(sched_t *s)
{
	pthread_mutex_lock(&s->qmu);
	s->running_job = false;
	pthread_mutex_unlock(&s->qmu);
}
