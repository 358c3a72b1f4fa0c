/* switch_cost: the cost of a policy switch (switch_cost.h). */
#include "bench/switch_cost.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "base/stats.h"
#include "model/model.h"
#include "engine/engine.h"
#include "engine/engine_open.h"

typedef struct sw_ctx {
	control_t *cw;
	uint32_t n_policies;
	int n_switches;
	_Atomic bool done;  /* relaxed: stops the leader's loop; join orders */
	uint64_t *write_ns, *force_ns, *force_tok;
	int n_done;
	policy_rt_t *rt;
} sw_ctx_t;

static void sw_before_token(void *user, uint64_t pos)
{
	sw_ctx_t *c = user;
	policy_rt_before_token(c->rt, pos);
}

static int sw_on_text(void *user, const char *s, size_t n)
{
	(void)s;
	(void)n;
	sw_ctx_t *c = user;
	/* relaxed: a stop flag; pthread_join orders the controller's data */
	return atomic_load_explicit(&c->done, memory_order_relaxed);
}

static void sleep_us(uint64_t us)
{
	struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
	nanosleep(&ts, NULL);
}

static void *controller_main(void *arg)
{
	sw_ctx_t *c = arg;
	control_word_t *w = c->cw->w;
	rng_t r;
	rng_seed(&r, 7);
	/* relaxed: a progress hint only */
	while (atomic_load_explicit(&w->tokens, memory_order_relaxed) < 16)
		sleep_us(200);
	/* relaxed: this thread is the only writer of index */
	uint32_t cur = atomic_load_explicit(c->cw->index, memory_order_relaxed);
	for (int i = 0; i < c->n_switches; i++) {
		sleep_us(1000 + rng_next(&r) % 2000);
		uint32_t v = (cur + 1 + (uint32_t)(rng_next(&r) % (c->n_policies - 1))) %
			     c->n_policies;
		/* acquire: pairs with the leader's release store of
		 * applied_seq; we wait for it to move past this value */
		uint64_t seq = atomic_load_explicit(&w->applied_seq, memory_order_acquire);
		/* relaxed: a count of boundaries, read for a difference */
		uint64_t tok = atomic_load_explicit(&w->tokens, memory_order_relaxed);
		uint64_t t0 = time_now_ns();
		control_write_index(c->cw, v);
		uint64_t t1 = time_now_ns();
		uint64_t deadline = t1 + 2000000000ull;
		uint64_t s2;
		while ((s2 = atomic_load_explicit(&w->applied_seq, memory_order_acquire)) == seq &&
		       time_now_ns() < deadline)
			sleep_us(20);
		if (s2 == seq)
			break; /* the leader stopped */
		/* applied_* are those of seq s2 (acquire above); a single
		 * writer, so s2 == seq + 1 and applied_raw == v */
		if (atomic_load_explicit(&w->applied_raw, memory_order_relaxed) != v)
			break;
		c->write_ns[c->n_done] = t1 - t0;
		c->force_ns[c->n_done] =
			atomic_load_explicit(&w->applied_ns, memory_order_relaxed) - t0;
		c->force_tok[c->n_done] =
			atomic_load_explicit(&w->applied_token, memory_order_relaxed) - tok;
		c->n_done++;
		cur = v;
	}
	/* relaxed: a stop flag; the join orders write_ns and the rest */
	atomic_store_explicit(&c->done, true, memory_order_relaxed);
	return NULL;
}

static switch_cost_q_t quantiles(uint64_t *v, int n)
{
	return (switch_cost_q_t){stats_quantile_u64(v, (size_t)n, 0.5),
				 stats_quantile_u64(v, (size_t)n, 0.99),
				 stats_quantile_u64(v, (size_t)n, 1)};
}

/* The store alone, amortized, and one clock read (its median). */
static void store_and_clock(control_t *cw, switch_cost_result_t *r)
{
	uint64_t t0 = time_now_ns();
	for (int i = 0; i < 100000; i++)
		control_write_index(cw, (uint32_t)i & 1);
	r->store_ns = (double)(time_now_ns() - t0) / 100000;
	uint64_t clk[1001];
	for (int i = 0; i < 1001; i++)
		clk[i] = time_now_ns();
	for (int i = 0; i < 1000; i++)
		clk[i] = clk[i + 1] - clk[i];
	r->clock_ns = stats_quantile_u64(clk, 1000, 0.5);
	control_write_index(cw, 0);
}

/* Decodes generations until the controller is done; tokens decoded, or -1
 * + err_get(). */
static int64_t decode_while_switching(engine_t *e, sw_ctx_t *sc)
{
	int64_t tokens = 0;
	/* relaxed: the controller's stop flag; pthread_join orders its data */
	for (uint64_t seed = 1; !atomic_load_explicit(&sc->done, memory_order_relaxed); seed++) {
		engine_params_t ep = {
			.prompt = "Once upon a time",
			.n_predict = 400,
			.sampler = {.temp = 0.8f, .top_p = 0.9f, .seed = seed},
			.before_token = sw_before_token,
			.on_text = sw_on_text,
			.user = sc,
		};
		engine_result_t r;
		if (engine_generate(e->m, e->f, e->g, &ep, &r) < 0) {
			/* relaxed: the stop flag the controller polls */
			atomic_store_explicit(&sc->done, true, memory_order_relaxed);
			return -1;
		}
		tokens += r.n_prompt + r.decode_steps;
		policy_rt_generation_end(&e->rt, r.first_token_s, 0, 0);
		engine_result_free(&r);
	}
	return tokens;
}

/* The experiment on an open engine; 0 or -1 with *exit_code. */
static int measure(engine_t *e, int switches, switch_cost_result_t *r, int *exit_code)
{
	static sw_ctx_t sc;
	memset(&sc, 0, sizeof sc);
	sc.cw = e->cw;
	sc.rt = &e->rt;
	sc.n_policies = (uint32_t)e->lib.n;
	sc.n_switches = switches;
	sc.write_ns = calloc((size_t)switches, sizeof(uint64_t));
	sc.force_ns = calloc((size_t)switches, sizeof(uint64_t));
	sc.force_tok = calloc((size_t)switches, sizeof(uint64_t));
	int rc = 0;
	pthread_t th;
	*exit_code = EXIT_FAIL;
	if (sc.write_ns && sc.force_ns && sc.force_tok)
		store_and_clock(sc.cw, r);
	if (!sc.write_ns || !sc.force_ns || !sc.force_tok) {
		rc = err_set("bench switch-cost: out of memory");
	} else if (pthread_create(&th, NULL, controller_main, &sc)) {
		rc = err_set("bench switch-cost: cannot start the controller");
	} else {
		uint64_t t_dec = time_now_ns();
		int64_t tokens = decode_while_switching(e, &sc);
		double dec_s = (double)(time_now_ns() - t_dec) / 1e9;
		pthread_join(th, NULL);
		r->n = sc.n_done;
		r->n_policies = e->lib.n;
		r->tok_s = (double)tokens / dec_s;
		if (tokens < 0)
			rc = -1;
		else if (r->n < 1)
			rc = err_set("bench switch-cost: no switch took force");
	}
	if (rc == 0) {
		r->write_ns = quantiles(sc.write_ns, r->n);
		r->in_force_tokens = quantiles(sc.force_tok, r->n);
		r->in_force_ns = quantiles(sc.force_ns, r->n);
		*exit_code = EXIT_OK;
	}
	free(sc.write_ns);
	free(sc.force_ns);
	free(sc.force_tok);
	return rc;
}

/* Opens the model, a forward pass of at most 512 positions, the gang and
 * the control word; the index starts at 0. */
static engine_t *open_engine(const switch_cost_config_t *c, const char *model,
			     const char *control, int *exit_code)
{
	engine_config_t ec = {.model_path = model, .cpus = c->cpus, .n_cpus = c->n_cpus,
			      .no_forward = true, .control = control};
	engine_t *e = engine_open(&ec, exit_code);
	if (!e)
		return NULL;
	if (e->lib.n < 2) {
		err_set("bench switch-cost: the library has one record; nothing to "
			"switch to");
		*exit_code = EXIT_INPUT;
	} else if (!(e->f = forward_new(e->m, e->m->cfg.ctx < 512 ? e->m->cfg.ctx : 512, 0))) {
		*exit_code = EXIT_FAIL;
	} else {
		control_write_index(e->cw, 0);
		return e;
	}
	engine_close(e);
	return NULL;
}

int switch_cost_run(const switch_cost_config_t *c, switch_cost_result_t *r,
		    int *exit_code)
{
	char dir[64] = "", synth_path[128] = "", cw_path[128] = "";
	const char *model = c->model, *control = c->control;
	*exit_code = EXIT_FAIL;
	if (!model || !control) {
		snprintf(dir, sizeof dir, "/tmp/egang-switch-XXXXXX");
		if (!mkdtemp(dir))
			return err_sys("mkdtemp");
	}
	int rc = 0;
	if (!model) {
		snprintf(synth_path, sizeof synth_path, "%s/s260k.gguf", dir);
		rc = synth_write(synth_find("stories260k"), DTYPE_F32, 1, 2, synth_path,
				 NULL, NULL);
		model = synth_path;
	}
	if (!control) {
		snprintf(cw_path, sizeof cw_path, "%s/control", dir);
		control = cw_path;
	}
	engine_t *e = rc < 0 ? NULL : open_engine(c, model, control, exit_code);
	rc = e ? measure(e, c->switches, r, exit_code) : -1;
	engine_close(e);
	if (dir[0]) {
		if (synth_path[0])
			unlink(synth_path);
		if (cw_path[0])
			unlink(cw_path);
		rmdir(dir);
	}
	return rc;
}
