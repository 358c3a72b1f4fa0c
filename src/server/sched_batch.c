/* sched_batch: the generation thread with --parallel N > 1, continuous
 * batching (doc/ARCHITECTURE.md "The server").
 *
 * Each token step is one run of the forward pass's batch plan over the
 * live sequences (forward_set_segs): every sequence that is generating
 * adds its last token, and the oldest sequences still reading their prompt
 * add up to prefill_chunk prompt tokens between them, so live streams keep
 * getting a token per step while a long prompt is read. A request joins at
 * any step boundary when a slot is free and its KV fits the budget, and a
 * finished or cancelled one leaves at the end of its step. A step with a
 * single decode token runs the decode plan instead (the same bits,
 * forward.h; it streams the weights in larger chunks). The gang's
 * generation begins when the first sequence joins and ends when none is
 * live, so the cores go back to the OS between bursts.
 *
 * KV: each sequence gets its own cache (forward_kv_t) sized for its prompt
 * plus max_tokens (whole blocks of KV_BLOCK positions, at most the
 * context), allocated when it joins; the sum over live sequences and the
 * prefix cache stays within cfg.kv_bytes. A request whose KV does not fit
 * waits in the queue (its place kept: FIFO) until sequences leave.
 *
 * Prefix cache: a sequence that leaves hands its KV (and its tokens) to an
 * LRU cache instead of freeing it. A new prompt whose first tokens are a
 * cached sequence's copies those positions' KV and prefills from there:
 * position p's KV is a pure function of tokens 0..p (batch invariance), so
 * the reused entries are the bits it would have computed. Entries are
 * evicted oldest first when a new sequence needs the room.
 *
 * Choices (a request with n > 1: n jobs queued together, sched.h
 * sched_job_new_choice): a later choice admitted while its first choice
 * is live waits, without prefilling, until the first has computed its
 * prompt, then copies that KV (the same bits, as a cached prefix's) and
 * goes on from its last prompt token; so n choices compute their prompt
 * once. A first choice that has left already gave its KV to the prefix
 * cache, which serves the later ones instead.
 *
 * Only this thread touches the slots and the cache; it takes the queue
 * lock (through sched_queue.c), a job's lock (sched_job.c) and the
 * metrics' lock one at a time (sched.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/base.h"
#include "engine/engine.h"
#include "gang/gang.h"
#include "model/forward.h"
#include "server/sched_impl.h"

#define KV_BLOCK 16     /* positions per block of a sequence's KV */
#define PREFIX_MAX 64   /* prefix-cache entries at most */

typedef struct slot {
	sched_job_t *j;    /* NULL: free */
	engine_seq_t *seq;
	sched_gen_ctx_t c; /* on_text's context */
	forward_kv_t kv;
	size_t kv_bytes;
	int32_t done;      /* positions in kv */
	uint64_t t0, t_first_logits, t_first;
	uint64_t order;    /* admission order: prefill goes oldest first */
	sched_job_t *share; /* its request's first choice, whose prompt KV it
			       waits for (NULL: none; share_prompts) */
	FILE *hash;        /* cfg.logits_dir: the job's logits hashes */
} slot_t;

typedef struct pentry {
	int32_t *ids;
	int32_t n;         /* positions with KV */
	forward_kv_t kv;
	size_t kv_bytes;
	uint64_t used;     /* LRU clock */
} pentry_t;

typedef struct batch {
	sched_t *s;
	forward_t *f;
	gang_t *g;
	slot_t *slots;
	int n_slots, live;
	pentry_t cache[PREFIX_MAX];
	int n_cache;
	size_t kv_used;
	uint64_t clock, steps;
	bool begun;        /* the gang's generation is on */
	forward_seg_t *segs;
	int *seg_slot;
} batch_t;

static void publish_kv(batch_t *b)
{
	metrics_set_kv_used(b->s->metrics, b->kv_used);
}

static void cache_drop(batch_t *b, int i)
{
	pentry_t *e = &b->cache[i];
	free(e->ids);
	forward_kv_free(&e->kv);
	b->kv_used -= e->kv_bytes;
	b->cache[i] = b->cache[--b->n_cache];
}

/* Evicts the least recently used entry; false when the cache is empty. */
static bool cache_evict(batch_t *b)
{
	if (!b->n_cache)
		return false;
	int lru = 0;
	for (int i = 1; i < b->n_cache; i++)
		if (b->cache[i].used < b->cache[lru].used)
			lru = i;
	cache_drop(b, lru);
	return true;
}

static int32_t common_prefix(const int32_t *a, int32_t na, const int32_t *c, int32_t nc)
{
	int32_t n = na < nc ? na : nc, k = 0;
	while (k < n && a[k] == c[k])
		k++;
	return k;
}

/* The cache entry sharing the longest prefix with ids[0..n) (-1: none),
 * and that length. */
static int cache_find(const batch_t *b, const int32_t *ids, int32_t n, int32_t *len)
{
	int best = -1;
	*len = 0;
	for (int i = 0; i < b->n_cache; i++) {
		int32_t k = common_prefix(ids, n, b->cache[i].ids, b->cache[i].n);
		if (k > *len) {
			*len = k;
			best = i;
		}
	}
	return best;
}

/* Keeps a leaving sequence's KV (positions 0..n-1 of ids) in the cache,
 * or frees it. Entries whose tokens it covers are dropped (it serves every
 * prompt they would). */
static void cache_put(batch_t *b, const int32_t *ids, int32_t n, forward_kv_t *kv,
		      size_t bytes)
{
	int32_t *copy = n > 0 ? eg_malloc((size_t)n * sizeof *copy) : NULL;
	if (!copy) {
		forward_kv_free(kv);
		b->kv_used -= bytes;
		return;
	}
	memcpy(copy, ids, (size_t)n * sizeof *copy);
	for (int i = b->n_cache - 1; i >= 0; i--)
		if (b->cache[i].n <= n &&
		    common_prefix(ids, n, b->cache[i].ids, b->cache[i].n) == b->cache[i].n)
			cache_drop(b, i);
	if (b->n_cache == PREFIX_MAX)
		cache_evict(b);
	b->cache[b->n_cache++] = (pentry_t){copy, n, *kv, bytes, ++b->clock};
	memset(kv, 0, sizeof *kv);
}

/* The job's KV positions: prompt + max_tokens in whole blocks, within the
 * context and what the budget holds. */
static int32_t kv_cap_of(const batch_t *b, const sched_job_t *j)
{
	const sched_config_t *cfg = &b->s->cfg;
	int64_t cap = j->req.n_ids + (int64_t)j->req.max_tokens;
	cap = (cap + KV_BLOCK - 1) / KV_BLOCK * KV_BLOCK;
	if (cap > cfg->ctx)
		cap = cfg->ctx;
	if (cfg->kv_positions && cap > cfg->kv_positions)
		cap = cfg->kv_positions;
	return (int32_t)cap;
}

/* Makes room for `need` bytes by evicting cached prefixes; false when the
 * live sequences alone leave too little. */
static bool kv_room(batch_t *b, size_t need)
{
	while (b->kv_used + need > b->s->cfg.kv_bytes)
		if (!cache_evict(b))
			return false;
	return true;
}

/* The live slot running job j, NULL when none does. */
static slot_t *slot_of(batch_t *b, const sched_job_t *j)
{
	for (int i = 0; i < b->n_slots; i++)
		if (b->slots[i].j == j)
			return &b->slots[i];
	return NULL;
}

/* Starts job j in slot sl (the job's reference moves to the slot); false
 * after answering it with an error. */
static bool slot_start(batch_t *b, slot_t *sl, sched_job_t *j, int32_t cap, size_t need)
{
	sched_t *s = b->s;
	const sched_request_t *q = &j->req;
	*sl = (slot_t){.j = j, .c = {s, j}, .kv_bytes = need, .t0 = time_now_ns()};
	engine_params_t ep = {
		.prompt_ids = q->ids,
		.n_prompt_ids = q->n_ids,
		.n_predict = q->max_tokens,
		.sampler = q->sp,
		.on_text = sched_job_on_text,
		.on_token = sched_job_on_token,
		.user = &sl->c,
		.stop = (const char *const *)q->stop,
		.n_stop = q->n_stop,
		.grammar = q->grammar,
	};
	if (s->cfg.logits_dir) { /* tests: "pos id hash" per sampled position */
		char path[4096];
		snprintf(path, sizeof path, "%s/%s.hash", s->cfg.logits_dir, q->name);
		sl->hash = ep.logits_hash = fopen(path, "w");
	}
	int rc = 0;
	sl->seq = engine_seq_new(s->cfg.m, cap < s->cfg.ctx ? cap + 1 : s->cfg.ctx, &ep, &rc);
	if (!sl->seq || forward_kv_alloc(b->f, &sl->kv, cap) < 0) {
		sched_job_fail(s, j, sl->seq || rc == ENGINE_FAIL ? 500 : 400, err_get());
		engine_seq_free(sl->seq);
		if (sl->hash)
			fclose(sl->hash);
		sched_job_release(j);
		sl->j = NULL;
		return false;
	}
	b->kv_used += need;
	sl->order = ++b->clock;
	int32_t saved = 0;
	int e = cache_find(b, q->ids, (int32_t)q->n_ids - 1, &saved);
	if (e >= 0) { /* the prefix's KV, never the last prompt position */
		if (saved > cap)
			saved = cap;
		forward_kv_copy(b->f, &sl->kv, &b->cache[e].kv, saved);
		b->cache[e].used = ++b->clock;
		sl->done = saved;
	}
	if (q->first && saved < (int32_t)q->n_ids - 1 && slot_of(b, q->first))
		sl->share = q->first; /* share_prompts */
	sched_job_start(j);
	metrics_record_admission(s->metrics, (double)(sl->t0 - j->t_enqueue) / 1e9,
				 e >= 0, (uint64_t)saved);
	return true;
}

/* Puts job j (just taken from the queue) into a free slot; the gang's
 * generation begins with the first live sequence. */
static void admit_job(batch_t *b, sched_job_t *j, int32_t cap, size_t need)
{
	slot_t *sl = NULL;
	for (int i = 0; i < b->n_slots && !sl; i++)
		if (!b->slots[i].j)
			sl = &b->slots[i];
	if (slot_start(b, sl, j, cap, need)) {
		b->live++;
		if (b->g && !b->begun) {
			gang_begin(b->g);
			b->steps = 0; /* the knee measures no step across the idle gap */
		}
		b->begun = true;
	}
	publish_kv(b);
}

/* Takes queued jobs into free slots while their KV fits. Blocks (with the
 * gang's generation ended) while nothing is live and the queue is empty.
 * false once stopping with nothing live or queued. */
static bool admit(batch_t *b)
{
	sched_t *s = b->s;
	for (;;) {
		if (!b->live && sched_queue_try_park(s)) {
			if (b->begun && b->g) /* nothing live: the cores go back */
				gang_end(b->g);
			b->begun = false;
			sched_queue_wait(s);
			continue;
		}
		bool stopping = atomic_load_explicit(&s->stopping, memory_order_relaxed);
		sched_job_t *j = sched_queue_peek(s);
		if (!j)
			return b->live > 0 || !stopping;
		bool draining = atomic_load_explicit(&s->draining, memory_order_relaxed);
		bool refuse = draining || atomic_load_explicit(&j->cancel, memory_order_relaxed);
		int32_t cap = kv_cap_of(b, j);
		size_t need = forward_kv_bytes(b->f, cap);
		if (!refuse && (b->live == b->n_slots || !kv_room(b, need)))
			return true; /* waits for a sequence to leave */
		sched_queue_pop(s);
		if (refuse) {
			sched_job_fail(s, j, 503, draining ? "the server is shutting down"
							   : "the client went away");
			sched_job_release(j);
			continue;
		}
		admit_job(b, j, cap, need);
	}
}

/* The end of slot sl's sequence: the reply, the metrics, its KV to the
 * prefix cache. */
static void slot_finish(batch_t *b, slot_t *sl)
{
	sched_t *s = b->s;
	engine_result_t r;
	uint64_t t1 = time_now_ns();
	int rc = engine_seq_finish(sl->seq, &r);
	if (rc < 0) {
		sched_job_fail(s, sl->j, 500, err_get());
	} else {
		uint64_t tf = sl->t_first ? sl->t_first : t1;
		uint64_t tl = sl->t_first_logits ? sl->t_first_logits : t1;
		r.first_token_s = (double)(tf - sl->t0) / 1e9;
		r.prefill_s = (double)(tl - sl->t0) / 1e9;
		r.decode_s = (double)(t1 - tl) / 1e9;
		r.decode_steps = r.n_gen > 1 ? r.n_gen - 1 : 0;
		int32_t n = sl->done;
		if (r.ids && n > 0)
			cache_put(b, r.ids, n, &sl->kv, sl->kv_bytes);
		sched_job_complete(s, b->g, sl->j, &r, sl->t0);
	}
	if (sl->kv.k) { /* not cached */
		forward_kv_free(&sl->kv);
		b->kv_used -= sl->kv_bytes;
	}
	engine_result_free(&r);
	engine_seq_free(sl->seq);
	if (sl->hash)
		fclose(sl->hash);
	sched_job_release(sl->j);
	*sl = (slot_t){0};
	b->live--;
	publish_kv(b);
}

/* The later choices waiting for their first choice's prompt KV: each
 * copies it once the first has computed it (its positions below the
 * last prompt token; the last runs in the choice's own step, which
 * samples its first token), or, once the first has left, takes what the
 * prefix cache has and prefills the rest itself. */
static void share_prompts(batch_t *b)
{
	for (int i = 0; i < b->n_slots; i++) {
		slot_t *sl = &b->slots[i];
		if (!sl->j || !sl->share)
			continue;
		int64_t n, nf;
		const int32_t *ids = engine_seq_ids(sl->seq, &n);
		int32_t want = (int32_t)engine_seq_n_prompt(sl->seq) - 1;
		slot_t *from = slot_of(b, sl->share);
		int32_t k = 0;
		if (from && from->done < want)
			continue; /* the first is still reading the prompt */
		if (from) {
			const int32_t *fids = engine_seq_ids(from->seq, &nf);
			k = common_prefix(ids, want, fids, from->done);
			forward_kv_copy(b->f, &sl->kv, &from->kv, k);
		} else {
			int e = cache_find(b, ids, want, &k);
			if (e >= 0 && k > sl->done) {
				forward_kv_copy(b->f, &sl->kv, &b->cache[e].kv, k);
				b->cache[e].used = ++b->clock;
			} else {
				k = 0;
			}
		}
		if (k > sl->done) {
			metrics_record_prefix(b->s->metrics, (uint64_t)(k - sl->done));
			sl->done = k;
		}
		sl->share = NULL;
	}
}

/* The step's segments: one decode token per generating sequence, then
 * prompt chunks of the oldest prefilling ones (prefill_chunk tokens in
 * all, within the batch maximum). Returns the segment count. */
static int plan_step(batch_t *b, int32_t *tokens)
{
	int32_t bmax = forward_batch_max(b->f), total = 0;
	int ns = 0;
	for (int i = 0; i < b->n_slots; i++) {
		slot_t *sl = &b->slots[i];
		int64_t n;
		const int32_t *ids = sl->j ? engine_seq_ids(sl->seq, &n) : NULL;
		if (!ids || sl->done < engine_seq_n_prompt(sl->seq) - 1 || total >= bmax)
			continue;
		b->segs[ns] = (forward_seg_t){&sl->kv, ids + sl->done, 1, sl->done, true};
		b->seg_slot[ns++] = i;
		total++;
	}
	int32_t budget = b->s->cfg.prefill_chunk > 0 ? b->s->cfg.prefill_chunk : 64;
	for (;;) { /* oldest prefilling sequence first */
		slot_t *old = NULL;
		int oi = -1;
		for (int i = 0; i < b->n_slots; i++) {
			slot_t *sl = &b->slots[i];
			bool queued = false;
			for (int k = 0; k < ns; k++)
				queued |= b->seg_slot[k] == i;
			if (sl->j && !queued && !sl->share &&
			    sl->done < engine_seq_n_prompt(sl->seq) - 1 &&
			    (!old || sl->order < old->order)) {
				old = sl;
				oi = i;
			}
		}
		int32_t room = bmax - total < budget ? bmax - total : budget;
		if (!old || room <= 0)
			break;
		int64_t n;
		const int32_t *ids = engine_seq_ids(old->seq, &n);
		int32_t np = (int32_t)engine_seq_n_prompt(old->seq);
		int32_t k = np - old->done < room ? np - old->done : room;
		b->segs[ns] = (forward_seg_t){&old->kv, ids + old->done, k, old->done,
					      old->done + k == np};
		b->seg_slot[ns++] = oi;
		total += k;
		budget -= k;
	}
	*tokens = total;
	return ns;
}

/* Runs one step; false when the forward pass failed (memory). */
static bool run_step(batch_t *b, int ns, int32_t tokens)
{
	sched_t *s = b->s;
	if (s->have_rt) {
		policy_rt_set_batch(&s->rt, tokens);
		policy_rt_before_token(&s->rt, b->steps);
	}
	b->steps++;
	const wave_plan_t *plan;
	bool one = ns == 1 && tokens == 1;
	if (one) { /* the decode plan: the same bits */
		const forward_seg_t *g = &b->segs[0];
		if (forward_set_input_kv(b->f, g->tokens[0], g->pos, g->kv) < 0)
			return false;
		plan = forward_plan(b->f);
	} else {
		if (forward_set_segs(b->f, b->segs, ns) < 0)
			return false;
		plan = forward_batch_plan(b->f);
	}
	if (b->g)
		gang_run_token(b->g, plan);
	else
		wave_plan_run_serial(plan);
	return one || forward_batch_status(b->f) == 0;
}

/* After a step: each sequence's positions, and the sampled tokens of
 * those that got logits. */
static void take_step(batch_t *b, int ns)
{
	sched_t *s = b->s;
	uint64_t now = time_now_ns();
	bool one = ns == 1 && b->segs[0].n == 1;
	for (int k = 0; k < ns; k++) {
		slot_t *sl = &b->slots[b->seg_slot[k]];
		sl->done += b->segs[k].n;
		if (!b->segs[k].logits)
			continue;
		float *logits = one ? forward_logits(b->f) : forward_seg_logits(b->f, k);
		if (!sl->t_first_logits)
			sl->t_first_logits = now;
		int rc = engine_seq_accept(sl->seq, logits);
		int64_t n;
		engine_seq_ids(sl->seq, &n);
		if (n > engine_seq_n_prompt(sl->seq)) { /* a token was generated */
			if (!sl->t_first) {
				sl->t_first = now; /* the TTFT: slot_finish, then job_record */
			} else if (sl->j->t_last) {
				metrics_observe(s->metrics, METRICS_HIST_TPOT,
						(double)(now - sl->j->t_last) / 1e9);
			}
			sl->j->t_last = now;
		}
		if (rc == ENGINE_FAIL)
			sched_job_fail(s, sl->j, 500, err_get()); /* finished below */
		if (rc != 0)
			engine_seq_cancel(sl->seq);
	}
}

/* Ends the sequences that are done, cancelled or asked to stop. */
static void reap(batch_t *b)
{
	sched_t *s = b->s;
	bool stopping = atomic_load_explicit(&s->stopping, memory_order_relaxed);
	for (int i = 0; i < b->n_slots; i++) {
		slot_t *sl = &b->slots[i];
		if (!sl->j)
			continue;
		bool gone = stopping || atomic_load_explicit(&sl->j->cancel, memory_order_relaxed);
		if (gone)
			engine_seq_cancel(sl->seq);
		if (engine_seq_done(sl->seq) || gone) {
			if (sched_job_done(sl->j)) { /* sched_job_fail answered it */
				forward_kv_free(&sl->kv);
				b->kv_used -= sl->kv_bytes;
				engine_seq_free(sl->seq);
				if (sl->hash)
					fclose(sl->hash);
				sched_job_release(sl->j);
				*sl = (slot_t){0};
				b->live--;
				publish_kv(b);
			} else {
				slot_finish(b, sl);
			}
		}
	}
}

void sched_batch_run(sched_t *s, forward_t *f, gang_t *g)
{
	batch_t b = {.s = s, .f = f, .g = g, .n_slots = s->cfg.parallel};
	int32_t bmax = forward_batch_max(f);
	b.slots = eg_calloc((size_t)b.n_slots, sizeof *b.slots);
	b.segs = eg_calloc((size_t)bmax, sizeof *b.segs);
	b.seg_slot = eg_calloc((size_t)bmax, sizeof *b.seg_slot);
	if (!b.slots || !b.segs || !b.seg_slot) {
		log_error("serve: cannot allocate the batch state; one job at a time");
		goto out;
	}
	while (admit(&b)) {
		reap(&b); /* cancelled before their first step */
		if (!b.live)
			continue;
		share_prompts(&b);
		int32_t tokens;
		int ns = plan_step(&b, &tokens);
		if (!ns)
			continue;
		metrics_observe(s->metrics, METRICS_HIST_BATCH_SIZE, ns);
		if (!run_step(&b, ns, tokens)) {
			for (int k = 0; k < ns; k++) {
				slot_t *sl = &b.slots[b.seg_slot[k]];
				sched_job_fail(s, sl->j, 500, err_get());
				engine_seq_cancel(sl->seq);
			}
		} else {
			take_step(&b, ns);
		}
		reap(&b);
	}
	if (b.begun && g)
		gang_end(g);
out:
	while (b.n_cache)
		cache_drop(&b, 0);
	free(b.slots);
	free(b.segs);
	free(b.seg_slot);
}
