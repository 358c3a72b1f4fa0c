/* engine_open: model + forward + gang + policy for a command, and one
 * generation on them (engine_open.h). */
#include "engine/engine_open.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "kernels/kernels.h"

/* ---- the CPUs ---- */

int engine_cpus_parse(const char *list, int *cpus, int max, bool notice)
{
	char lim[64], note[2 * CPUMASK_LIST_CAP + 256];
	snprintf(lim, sizeof lim, max == GANG_MAX_SLOTS ? "the gang has %d slots "
		 "(GANG_MAX_SLOTS)" : "this command takes at most %d", max);
	topo_t t;
	cpumask_t want;
	if (list && cpumask_parse(list, &want) < 0)
		return err_wrap("--cores");
	if (list && cpumask_count(&want) > max)
		return err_set("--cores %s: %d CPUs, but %s", list,
			       cpumask_count(&want), lim);
	if (topo_load(&t) < 0)
		return -1;
	int n = topo_choose(&t, list ? &want : NULL, max, cpus);
	if (n < 0)
		return err_wrap("--cores %s", list);
	if (notice && *topo_notice(&t, list != NULL, cpus, n, lim, note, sizeof note))
		log_info("%s", note); /* once: a command has one --cores */
	return n;
}

cpumask_t engine_cpumask(const engine_t *e)
{
	return cpumask_of_cpus(e->cpus, e->n_cpus);
}

/* ---- opening ---- */

int engine_policies(policy_lib_t *lib, int n_slots, const char *policies)
{
	policy_lib_builtin(lib, n_slots);
	if (policies && policy_lib_load(lib, policies) < 0)
		return err_wrap("--policies");
	return 0;
}

/* The control word and the library; EXIT_OK or an exit code. */
static int open_policy(engine_t *e, const engine_config_t *c)
{
	if (engine_policies(&e->lib, c->n_cpus, c->policies) < 0)
		return EXIT_INPUT;
	if (c->control && !(e->cw = control_open(c->control, true)))
		return EXIT_INPUT;
	return EXIT_OK;
}

/* The forward pass for ctx positions; EXIT_OK or an exit code. */
static int open_forward(engine_t *e, const engine_config_t *c)
{
	int32_t model_ctx = e->m->cfg.ctx;
	e->ctx = c->ctx ? c->ctx : model_ctx < 4096 ? model_ctx : 4096;
	if (e->ctx > model_ctx) {
		err_set("--ctx %d is larger than the model's context %d", e->ctx,
			model_ctx);
		return EXIT_INPUT;
	}
	e->kv_type = c->kv_type;
	const char *unfit = forward_kv_unfit(e->m, c->kv_type);
	if ((unsigned)c->kv_type >= KV_TYPE_COUNT) {
		err_set("KV cache type %d is not one of f16, f32, q8_0", (int)c->kv_type);
		return EXIT_INPUT;
	}
	if (unfit) {
		err_set("--kv-type %s: %s (this model's is %d); use f16 or f32",
			kv_type_names[c->kv_type], unfit, e->m->cfg.head_dim);
		return EXIT_INPUT;
	}
	if (c->no_forward)
		return EXIT_OK;
	e->f = forward_new_kv(e->m, e->ctx, c->kv_type, 0);
	return e->f ? EXIT_OK : EXIT_FAIL;
}

/* The gang over the CPUs, bound to the policy runtime; EXIT_OK or code. */
static int open_gang(engine_t *e, const engine_config_t *c)
{
	if (!c->no_gang && (c->n_cpus > 1 || c->gang)) {
		gang_config_t gc = {.cpus = e->cpus, .n_cpus = e->n_cpus, .pin = true};
		/* the keep spin of the record named at start; relaxed: the
		 * index is one word and the runtime rereads it every token */
		if (e->cw)
			gc.keep_us = policy_keep_us(&e->lib, atomic_load_explicit(
				e->cw->index, memory_order_relaxed));
		if (!(e->g = gang_init(&gc)))
			return EXIT_FAIL;
		if (!e->cw)
			gang_request(e->g, gang_all(e->g));
	}
	if (e->cw)
		policy_rt_init(&e->rt, &e->lib, e->cw->w, e->g);
	return EXIT_OK;
}

engine_t *engine_open(const engine_config_t *c, int *exit_code)
{
	*exit_code = EXIT_INPUT;
	if (c->n_cpus < 1 || c->n_cpus > GANG_MAX_SLOTS) {
		err_set("%d CPUs: the gang takes 1 to %d", c->n_cpus, GANG_MAX_SLOTS);
		return NULL;
	}
	if (c->policies && !c->control) {
		err_set("--policies needs --control");
		return NULL;
	}
	engine_t *e = calloc(1, sizeof *e);
	if (!e) {
		err_sys("engine_open: calloc");
		*exit_code = EXIT_FAIL;
		return NULL;
	}
	memcpy(e->cpus, c->cpus, (size_t)c->n_cpus * sizeof *e->cpus);
	e->n_cpus = c->n_cpus;
	int rc = open_policy(e, c);
	if (rc == EXIT_OK && !(e->m = model_load(c->model_path, c->tok_path)))
		rc = EXIT_INPUT;
	if (rc == EXIT_OK)
		rc = open_forward(e, c);
	if (rc == EXIT_OK)
		rc = open_gang(e, c);
	if (rc != EXIT_OK) {
		*exit_code = rc;
		engine_close(e);
		return NULL;
	}
	*exit_code = EXIT_OK;
	return e;
}

void engine_close(engine_t *e)
{
	if (!e)
		return;
	gang_free(e->g);
	forward_free(e->f);
	model_free(e->m);
	control_close(e->cw);
	free(e);
}

/* ---- one generation ---- */

/* engine_run's hooks around the caller's: p's user, then the policy. */
typedef struct run_hooks {
	engine_t *e;
	const engine_params_t *p;
} run_hooks_t;

static void run_before_token(void *user, uint64_t index)
{
	run_hooks_t *h = user;
	if (h->p->before_token)
		h->p->before_token(h->p->user, index);
	policy_rt_before_token(&h->e->rt, index);
}

static int run_on_text(void *user, const char *s, size_t n)
{
	run_hooks_t *h = user;
	return h->p->on_text(h->p->user, s, n);
}

int engine_run(engine_t *e, const engine_params_t *p, engine_result_t *r)
{
	if (!e->cw)
		return engine_generate(e->m, e->f, e->g, p, r);
	run_hooks_t h = {e, p};
	engine_params_t q = *p;
	q.user = &h;
	q.before_token = run_before_token;
	q.on_text = p->on_text ? run_on_text : NULL;
	int rc = engine_generate(e->m, e->f, e->g, &q, r);
	if (rc == 0)
		policy_rt_generation_end(&e->rt, r->n_gen > 0 ? r->first_token_s : -1,
					 engine_result_decode_tps(r), 0);
	return rc;
}

void engine_print_result(const engine_t *e, const engine_result_t *r, FILE *f)
{
	fprintf(f, "prompt: %lld tokens, %.1f tok/s; decode: %lld tokens, "
		   "%.2f tok/s (%s, %d core%s, %s, kv %s); stop: %s\n",
		(long long)r->n_prompt,
		r->prefill_s > 0 ? (double)r->n_prompt / r->prefill_s : 0.0,
		(long long)r->n_gen, engine_result_decode_tps(r), kernels_isa(),
		e->n_cpus, e->n_cpus > 1 ? "s" : "", e->g ? "gang" : "serial",
		kv_type_names[e->kv_type], engine_stop_name(r->stop));
	if (e->g)
		gang_stats_print(e->g, f);
}
