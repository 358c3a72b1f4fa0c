/* egang generate: the run of one generation (cmd_generate.c parses the
 * options). */
#include <stdio.h>

#include "cli/cmd_generate.h"
#include "engine/engine.h"

static int on_text(void *user, const char *s, size_t n)
{
	(void)user;
	fwrite(s, 1, n, stdout);
	fflush(stdout);
	return 0;
}

/* --trace: the token that just ended: tag, participant mask, microseconds */
static void trace_token(run_ctx_t *rc)
{
	gang_stats_t st;
	uint64_t now = time_now_ns();
	gang_stats(rc->e->g, &st);
	fprintf(rc->trace, "%llu %#x %.1f\n", (unsigned long long)st.tokens,
		st.last_mask, (double)(now - rc->last_ns) / 1e3);
}

static void before_token(void *user, uint64_t index)
{
	run_ctx_t *rc = user;
	if (rc->trace && rc->e->g && index > 0)
		trace_token(rc);
	rc->last_ns = time_now_ns();
	membership_before_token(&rc->ms, index);
}


int generate_run(const gen_opts_t *o, run_ctx_t *rc, FILE *hash, FILE *dump)
{
	engine_t *e = rc->e;
	engine_params_t ep = {
		.prompt = o->prompt,
		.prompt_ids = o->chat_ids ? o->chat_ids : o->id_list,
		.n_prompt_ids = o->chat_ids ? o->n_chat_ids : o->n_ids,
		.n_predict = (int32_t)o->n_predict,
		.sampler = {.temp = (float)o->temp, .top_p = (float)o->top_p,
			    .top_k = (int32_t)o->top_k, .seed = (uint64_t)o->seed,
			    .mode = o->sampler == 1 ? SAMPLER_LLAMA2C : SAMPLER_EGANG},
		.echo_prompt = !o->no_echo, .stop_at_control = o->chat,
		.logits_hash = hash, .logits_dump = dump,
		.before_token = before_token, .on_text = on_text, .user = rc,
		.stop = o->stops, .n_stop = o->n_stop, .grammar = o->grammar,
	};
	if (membership_start(&rc->ms, e->g) < 0) {
		log_error("%s", err_get());
		return EXIT_FAIL;
	}
	engine_result_t r;
	int grc = engine_run(e, &ep, &r);
	membership_stop(&rc->ms);
	if (grc < 0) {
		log_error("%s", err_get());
		return grc == ENGINE_FAIL ? EXIT_FAIL : EXIT_INPUT;
	}
	int status = EXIT_OK;
	if (rc->trace && e->g)
		trace_token(rc); /* the last token */
	if (o->ids && engine_write_ids(o->ids, &r) < 0) {
		log_error("%s", err_get());
		status = EXIT_FAIL;
	}
	fputc('\n', stdout);
	fflush(stdout);
	if (!log_quiet)
		engine_print_result(e, &r, stderr);
	engine_result_free(&r);
	return status;
}
