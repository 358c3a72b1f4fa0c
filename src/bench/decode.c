/* decode: the model's speed drivers (decode.h). */
#include "bench/decode.h"

#include <stdlib.h>
#include <time.h>

#include "base/base.h"
#include "bench/pool.h"
#include "model/sampler.h"
#include "policy/policy.h"
#include "engine/engine.h"

/* ---- the decode loop shared by every driver ---- */

typedef enum runner_kind { RUN_GANG, RUN_POOL } runner_kind_t;

typedef struct runner {
	runner_kind_t kind;
	gang_t *g;
	bench_pool_t *pool;
} runner_t;

/* Decodes `tokens` greedy positions from BOS; returns tok/s. */
static double decode_rate(const model_t *m, forward_t *f, runner_t *r, int tokens)
{
	int32_t tok = tokenizer_bos(m->tok) >= 0 ? tokenizer_bos(m->tok) : 0;
	if (r->g)
		gang_begin(r->g);
	uint64_t t0 = 0;
	for (int pos = 0; pos < tokens + 2; pos++) {
		if (pos == 2)
			t0 = time_now_ns(); /* skip warm-up */
		forward_set_input(f, tok, pos);
		const wave_plan_t *p = forward_plan(f);
		if (r->kind == RUN_GANG && r->g)
			gang_run_token(r->g, p);
		else if (r->kind == RUN_POOL)
			bench_pool_run(r->pool, p);
		else
			wave_plan_run_serial(p);
		tok = sampler_argmax(forward_logits(f), m->cfg.vocab_size);
	}
	uint64_t t1 = time_now_ns();
	if (r->g)
		gang_end(r->g);
	return (double)tokens / ((double)(t1 - t0) / 1e9);
}

engine_t *bench_model_open(const bench_model_config_t *c, int *exit_code)
{
	engine_config_t ec = {.model_path = c->model, .tok_path = c->tok,
			      .cpus = c->cpus, .n_cpus = c->n_cpus,
			      .kv_type = c->kv_type, .gang = !c->no_gang,
			      .no_gang = c->no_gang, .no_forward = true};
	engine_t *e = engine_open(&ec, exit_code);
	if (!e)
		return NULL;
	/* decode_rate runs tokens + 2 positions, the warm-ups up to 10 */
	int64_t need = c->tokens + 10;
	if (need > e->m->cfg.ctx) {
		err_set("%s: --tokens %lld does not fit the model's context of %d",
			c->name, (long long)c->tokens, e->m->cfg.ctx);
		*exit_code = EXIT_INPUT;
	} else if (!(e->f = forward_new_kv(e->m, (int32_t)need, c->kv_type, 0))) {
		*exit_code = EXIT_FAIL;
	} else {
		e->ctx = (int32_t)need;
		return e;
	}
	engine_close(e);
	return NULL;
}

const char *bench_model_type(const model_t *m)
{
	return dtype_info[m->layers[0].w_gate.type].name;
}

void bench_decode_run(engine_t *e, int tokens, int reps, bool progress, double *v)
{
	runner_t r = {RUN_GANG, e->g, NULL};
	if (e->g)
		gang_request(e->g, gang_all(e->g));
	decode_rate(e->m, e->f, &r, 8); /* warm-up: the workers join, caches fill */
	for (int i = 0; i < reps; i++) {
		v[i] = decode_rate(e->m, e->f, &r, tokens);
		if (progress)
			log_info("rep %d: %.2f tok/s", i + 1, v[i]);
	}
}

int bench_prefill_run(engine_t *e, int tokens, int reps, bool progress, double *v)
{
	int32_t *ids = malloc((size_t)tokens * sizeof *ids);
	if (!ids)
		return err_set("bench prefill: out of memory");
	rng_t rng;
	rng_seed(&rng, 1);
	for (int i = 0; i < tokens; i++)
		ids[i] = (int32_t)(rng_next(&rng) % (uint64_t)e->m->cfg.vocab_size);
	int32_t bos = tokenizer_bos(e->m->tok);
	if (bos >= 0)
		ids[0] = bos;
	if (e->g)
		gang_request(e->g, gang_all(e->g));
	engine_params_t p = {.prompt_ids = ids, .n_prompt_ids = tokens,
			     .n_predict = 1, .sampler = {.top_p = 1.0f}};
	int rc = 0;
	for (int i = -1; i < reps && rc == 0; i++) { /* rep -1: warm-up */
		engine_result_t res = {0};
		if (engine_generate(e->m, e->f, e->g, &p, &res) < 0) {
			rc = err_wrap("bench prefill");
			break;
		}
		if (i >= 0) {
			v[i] = (double)res.n_prompt / res.prefill_s;
			if (progress)
				log_info("rep %d: %.2f tok/s", i + 1, v[i]);
		}
		engine_result_free(&res);
	}
	free(ids);
	return rc;
}

int bench_width_run(engine_t *e, int tokens, int reps, bench_width_result_t *r)
{
	int n = e->n_cpus;
	runner_t run = {RUN_GANG, e->g, NULL};
	double *v = malloc((size_t)reps * sizeof *v);
	if (!v)
		return err_set("bench width: out of memory");
	double rate[GANG_MAX_SLOTS + 1] = {0};
	r->best = 0;
	for (int w = 1; w <= n; w++) {
		gang_request(e->g, w == 32 ? 0xffffffffu : (1u << w) - 1);
		decode_rate(e->m, e->f, &run, 4); /* let the workers join */
		for (int i = 0; i < reps; i++)
			v[i] = decode_rate(e->m, e->f, &run, tokens);
		r->s[w - 1] = stats_summarize(v, (size_t)reps);
		rate[w] = r->s[w - 1].p50;
		if (rate[w] > r->best)
			r->best = rate[w];
	}
	r->knee = knee_of_rates(rate, n, 0.95);
	free(v);
	return 0;
}

/* B sequences side by side, each on its own KV cache: one step is one
 * decode token of each (the server's batch step, forward_set_segs; B = 1
 * the decode plan); tokens + 2 steps, the first two a warm-up. Returns
 * aggregate tok/s (B x steps/s), or -1 + err_get(). */
static double batch_rate(engine_t *e, forward_kv_t *kv, forward_seg_t *segs,
			 int32_t *tok, int B, int tokens)
{
	if (B == 1) {
		runner_t run = {RUN_GANG, e->g, NULL};
		return decode_rate(e->m, e->f, &run, tokens);
	}
	/* B > 1 below: every step through the batch plan */
	int32_t bos = tokenizer_bos(e->m->tok) >= 0 ? tokenizer_bos(e->m->tok) : 0;
	for (int i = 0; i < B; i++)
		tok[i] = (bos + i) % e->m->cfg.vocab_size; /* distinct sequences */
	gang_begin(e->g);
	uint64_t t0 = 0;
	int rc = 0;
	for (int pos = 0; pos < tokens + 2 && rc == 0; pos++) {
		if (pos == 2)
			t0 = time_now_ns();
		for (int i = 0; i < B; i++)
			segs[i] = (forward_seg_t){&kv[i], &tok[i], 1, pos, true};
		if ((rc = forward_set_segs(e->f, segs, B)) < 0)
			break;
		gang_run_token(e->g, forward_batch_plan(e->f));
		if ((rc = forward_batch_status(e->f)) < 0)
			break;
		for (int i = 0; i < B; i++)
			tok[i] = sampler_argmax(forward_seg_logits(e->f, i), e->m->cfg.vocab_size);
	}
	uint64_t t1 = time_now_ns();
	gang_end(e->g);
	return rc < 0 ? -1 : (double)B * tokens / ((double)(t1 - t0) / 1e9);
}

/* The process's CPU time (all threads), seconds. */
static double process_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One batch size at every width into r (v: 2 reps doubles of scratch). */
static int width_of_batch(engine_t *e, forward_kv_t *kv, forward_seg_t *segs,
			  int32_t *tok, int B, int tokens, int reps, double *v,
			  bench_width_result_t *r)
{
	double rate[GANG_MAX_SLOTS + 1] = {0};
	r->best = 0;
	r->batch = B;
	double *cpu = v + reps;
	for (int w = 1; w <= e->n_cpus; w++) {
		gang_request(e->g, w == 32 ? 0xffffffffu : (1u << w) - 1);
		if (batch_rate(e, kv, segs, tok, B, 4) < 0) /* let the workers join */
			return -1;
		for (int i = 0; i < reps; i++) {
			double c0 = process_cpu_s();
			if ((v[i] = batch_rate(e, kv, segs, tok, B, tokens)) < 0)
				return -1;
			/* CPU time of the whole run (warm-up steps included) */
			cpu[i] = (double)B * (tokens + 2) / (process_cpu_s() - c0);
		}
		r->s[w - 1] = stats_summarize(v, (size_t)reps);
		r->cpu[w - 1] = stats_summarize(cpu, (size_t)reps);
		rate[w] = r->s[w - 1].p50;
		if (rate[w] > r->best)
			r->best = rate[w];
	}
	r->knee = knee_of_rates(rate, e->n_cpus, 0.95);
	return 0;
}

int bench_width_batch_run(engine_t *e, int tokens, int reps, const int *batch,
			  int n_batch, bench_width_result_t *r)
{
	int bmax = 1;
	for (int i = 0; i < n_batch; i++) {
		if (batch[i] < 1 || batch[i] > forward_batch_max(e->f))
			return err_set("bench width: --batch %d is out of range [1, %d]",
				       batch[i], forward_batch_max(e->f));
		bmax = batch[i] > bmax ? batch[i] : bmax;
	}
	forward_kv_t *kv = calloc((size_t)bmax, sizeof *kv);
	forward_seg_t *segs = calloc((size_t)bmax, sizeof *segs);
	int32_t *tok = calloc((size_t)bmax, sizeof *tok);
	double *v = malloc(2 * (size_t)reps * sizeof *v);
	int rc = kv && segs && tok && v ? 0 : err_set("bench width: out of memory");
	int n_kv = 0;
	for (; rc == 0 && n_kv < bmax; n_kv++)
		if (forward_kv_alloc(e->f, &kv[n_kv], e->ctx) < 0)
			rc = err_wrap("bench width: KV cache of sequence %d", n_kv + 1);
	for (int i = 0; i < n_batch && rc == 0; i++)
		if (width_of_batch(e, kv, segs, tok, batch[i], tokens, reps, v, &r[i]) < 0)
			rc = err_wrap("bench width: batch %d", batch[i]);
	for (int i = 0; i < n_kv && kv; i++)
		forward_kv_free(&kv[i]);
	free(kv);
	free(segs);
	free(tok);
	free(v);
	return rc;
}

int bench_overhead_run(engine_t *e, int tokens, int reps, stats_summary_t *gang,
		       stats_summary_t *pool)
{
	double *vg = malloc((size_t)reps * sizeof *vg);
	double *vp = malloc((size_t)reps * sizeof *vp);
	int rc = vg && vp ? 0 : err_set("bench overhead: out of memory");
	for (int i = 0; i < reps && rc == 0; i++) {
		gang_config_t gc = {.cpus = e->cpus, .n_cpus = e->n_cpus, .pin = true};
		gang_t *g = gang_init(&gc);
		if (!g) {
			rc = -1;
			break;
		}
		gang_request(g, gang_all(g));
		runner_t rg = {RUN_GANG, g, NULL};
		decode_rate(e->m, e->f, &rg, 4);
		vg[i] = decode_rate(e->m, e->f, &rg, tokens);
		gang_free(g); /* before the pool spins on the same cores */
		bench_pool_t *p = bench_pool_new(e->cpus, e->n_cpus);
		runner_t rp = {RUN_POOL, NULL, p};
		decode_rate(e->m, e->f, &rp, 4);
		vp[i] = decode_rate(e->m, e->f, &rp, tokens);
		bench_pool_free(p);
	}
	if (rc == 0) {
		*gang = stats_summarize(vg, (size_t)reps);
		*pool = stats_summarize(vp, (size_t)reps);
	}
	free(vg);
	free(vp);
	return rc;
}
