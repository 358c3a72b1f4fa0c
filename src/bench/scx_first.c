/* scx_first: the cost of a policy switch on the sched_ext backend
 * (scx_first.h). */
#include "bench/scx_first.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "base/stats.h"
#include "scx/scx.h"

/* Two populated slots of c into a, b; with one only, b = a; -1 if none. */
static int populated_slots(const scx_counts_t *c, int *a, int *b)
{
	*a = *b = -1;
	for (int s = 0; s < EGANG_SLOTS && *b < 0; s++)
		if (c->krec[s].kind != EGANG_KIND_NONE) {
			if (*a < 0)
				*a = s;
			else
				*b = s;
		}
	if (*a < 0)
		return err_set("scx bench: no slot has a kernel form");
	if (*b < 0)
		*b = *a;
	return 0;
}

/* ---- the index write ---- */

int scx_first_write_cost(int reps, scx_first_write_t *w)
{
	static scx_counts_t c;
	if (reps < 1)
		return err_set("scx bench: %d writes", reps);
	if (scx_read(&c) < 0 || populated_slots(&c, &w->a, &w->b) < 0)
		return -1;
	uint64_t *ns = calloc((size_t)reps, sizeof *ns);
	if (!ns)
		return err_sys("scx bench: calloc");
	int rc = 0;
	for (int i = 0; i < reps && !rc; i++)
		rc = scx_set_index((uint32_t)(i & 1 ? w->b : w->a), &ns[i]);
	/* the index in force before, back on every exit; a failed write's
	 * message kept */
	char why[512] = "";
	if (rc < 0)
		snprintf(why, sizeof why, "%s", err_get());
	scx_set_index(c.index, NULL);
	if (rc < 0) {
		free(ns);
		return err_set("%s", why);
	}
	w->p50 = stats_quantile_u64(ns, (size_t)reps, 0.5); /* sorts ns */
	w->p99 = stats_quantile_u64(ns, (size_t)reps, 0.99);
	w->min = ns[0];
	w->max = ns[reps - 1];
	w->reps = reps;
	free(ns);
	return 0;
}

void scx_first_print_write(const scx_first_write_t *w, FILE *out)
{
	fprintf(out, "scx switch: %d index writes (map update, slots %d<->%d, open "
		"excluded): min %llu ns, median %llu ns, p99 %llu ns, max %llu ns\n",
		w->reps, w->a, w->b, (unsigned long long)w->min,
		(unsigned long long)w->p50, (unsigned long long)w->p99,
		(unsigned long long)w->max);
}

/* ---- store to first transfer ---- */

static _Atomic bool yield_stop;

/* A thread in SCHED_EXT that yields in a loop: every yield is a callback
 * (the task goes back through ops.enqueue). */
static void *yielder(void *arg)
{
	(void)arg;
	if (scx_enter(0) < 0)
		return NULL;
	/* relaxed: a stop flag, nothing travels with it */
	while (!atomic_load_explicit(&yield_stop, memory_order_relaxed))
		sched_yield();
	return NULL;
}

/* The percentiles of n samples (sorts lat and wr). */
static void first_stats(scx_first_t *o, uint64_t *lat, uint64_t *wr, int n)
{
	o->reps = n;
	if (!n)
		return;
	o->write_p50 = stats_quantile_u64(wr, (size_t)n, 0.5);
	o->p50 = stats_quantile_u64(lat, (size_t)n, 0.5); /* sorts lat */
	o->p90 = stats_quantile_u64(lat, (size_t)n, 0.9);
	o->p99 = stats_quantile_u64(lat, (size_t)n, 0.99);
	o->min = lat[0];
	o->max = lat[n - 1];
}

/* What the switches share: the index page, the first-transfer stamps, a
 * kept descriptor of the index map, the samples. */
typedef struct first_run {
	_Atomic uint32_t *idx;
	_Atomic uint64_t *first;
	int fd;
	uint64_t *lat[2], *wr[2];
	int n[2];
	scx_first_t *out;
} first_run_t;

/* Switch i (path (i >> 1) & 1, to slot `to`) and its first transfer;
 * 0, or -1 + err_get() when the map update fails. */
static int first_switch(first_run_t *r, int i, uint32_t to)
{
	int path = (i >> 1) & 1;
	/* relaxed: ordered before the index write by that write's release
	 * (store path) or by the system call (update path), so no callback
	 * that reads the new index sees the old stamp */
	atomic_store_explicit(&r->first[to], 0, memory_order_relaxed);
	uint64_t t0 = time_now_ns();
	if (path) {
		if (scx_index_update(r->fd, to) < 0)
			return -1;
	} else {
		/* THE store (control_write_index's, release): the callbacks
		 * read it with a plain load; only the value travels, the
		 * release orders first[to] = 0 before it */
		atomic_store_explicit(r->idx, to, memory_order_release);
	}
	uint64_t t1 = time_now_ns(), f;
	/* relaxed: polling a word the BPF side writes once */
	while (!(f = atomic_load_explicit(&r->first[to], memory_order_relaxed)) &&
	       time_now_ns() - t0 < 200000000ull)
		;
	if (!f) {
		r->out[path].misses++;
		return 0;
	}
	r->wr[path][r->n[path]] = t1 - t0;
	r->lat[path][r->n[path]++] = f > t0 ? f - t0 : 0;
	return 0;
}

/* The switches, the paths interleaved in pairs (store, store, update,
 * update, ...) so that both see the same load, the target alternating
 * every switch; 0 or -1 + err_get(). */
static int first_switches(first_run_t *r, int reps, int sa, int sb, int yielders)
{
	pthread_t th[64];
	int nth = 0, rc = 0;
	/* seq_cst, stronger than needed: a flag the yielders poll relaxed;
	 * pthread_create orders it before they start */
	atomic_store(&yield_stop, false);
	for (; nth < yielders; nth++)
		if (pthread_create(&th[nth], NULL, yielder, NULL)) {
			rc = err_set("scx bench: pthread_create failed");
			break;
		}
	if (!rc)
		usleep(20000); /* the yielders are in SCHED_EXT and running */
	for (int i = 0; i < 2 * reps && !rc; i++)
		rc = first_switch(r, i, (uint32_t)(i & 1 ? sa : sb));
	/* seq_cst, stronger than needed: the yielders stop at their next
	 * relaxed poll; pthread_join waits for them */
	atomic_store(&yield_stop, true);
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	return rc;
}

int scx_first_run(int reps, int yielders, scx_first_t out[2])
{
	static scx_counts_t c;
	if (reps < 1 || yielders < 0 || yielders > 64)
		return err_set("scx bench: %d writes, %d yielders", reps, yielders);
	if (scx_read(&c) < 0)
		return -1;
	memset(out, 0, 2 * sizeof *out);
	int sa, sb;
	if (populated_slots(&c, &sa, &sb) < 0)
		return -1;
	if (sa == sb)
		return err_set("scx bench: two slots with a kernel form are needed");
	out[0].a = out[1].a = sa;
	out[0].b = out[1].b = sb;
	first_run_t r = {.idx = scx_index_page(), .first = scx_first_ns_map(),
			 .fd = scx_index_open(), .out = out};
	uint64_t *buf = calloc((size_t)reps * 4, sizeof *buf);
	int rc = -1;
	if (!buf)
		err_sys("scx bench: calloc");
	if (r.idx && r.first && r.fd >= 0 && buf) {
		for (int p = 0; p < 2; p++) {
			r.lat[p] = buf + (size_t)p * (size_t)reps;
			r.wr[p] = buf + (size_t)(2 + p) * (size_t)reps;
		}
		rc = first_switches(&r, reps, sa, sb, yielders);
		if (!rc && (!r.n[0] || !r.n[1]))
			rc = err_set("scx bench: no transfer followed the writes of "
				     "a path (is anything running in SCHED_EXT?)");
		for (int p = 0; p < 2 && !rc; p++)
			first_stats(&out[p], r.lat[p], r.wr[p], r.n[p]);
	}
	/* the index in force before; release as control_write_index's */
	if (r.idx)
		atomic_store_explicit(r.idx, c.index, memory_order_release);
	scx_first_ns_unmap(r.first);
	if (r.fd >= 0)
		close(r.fd);
	free(buf);
	return rc;
}

void scx_first_print(const scx_first_t f[2], int yielders, FILE *out)
{
	for (int by_update = 0; by_update < 2; by_update++) {
		const scx_first_t *x = &f[by_update];
		fprintf(out, "scx store-to-first-transfer (%s, slots %d<->%d, %d "
			"yielders): %d switches, %d misses; write median %llu ns; "
			"to first transfer min %llu ns, median %llu ns, p90 %llu ns, "
			"p99 %llu ns, max %llu ns\n",
			by_update ? "map update" : "store into the mmapped index",
			x->a, x->b, yielders, x->reps, x->misses,
			(unsigned long long)x->write_p50, (unsigned long long)x->min,
			(unsigned long long)x->p50, (unsigned long long)x->p90,
			(unsigned long long)x->p99, (unsigned long long)x->max);
	}
}
