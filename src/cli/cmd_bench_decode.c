/* egang bench decode | prefill | width | overhead: the model's speed
 * (the drivers: bench/decode.h). One greppable summary line each. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/decode.h"
#include "cli/cli.h"
#include "policy/policy.h"

/* --kv-type, every model bench */
#define BENCH_KV_HELP "--kv-type T: the KV cache's elements, f16 (default), f32 or q8_0.\n"

static const char decode_help[] =
	"usage: egang bench decode -m MODEL [-z TOK] [--cores LIST] [--tokens N]\n"
	"                          [--reps R] [--json] [--quiet]\n"
	"\n"
	"Decode speed: N greedy tokens (default 128) after a BOS on the elastic\n"
	"gang with every core of --cores a member (1 core: the leader alone),\n"
	"R reps (default 5) after a warm-up; prints min/median/max tok/s and the\n"
	"effective bandwidth, median tok/s x weight bytes read per token. The\n"
	"end-of-text token does not stop the run. --json: one JSON object.\n" BENCH_KV_HELP;

static const char prefill_help[] =
	"usage: egang bench prefill -m MODEL [-z TOK] [--cores LIST] [--tokens N]\n"
	"                           [--reps R] [--json] [--quiet]\n"
	"\n"
	"Prompt processing speed: a prompt of N token ids (default 256: BOS, then\n"
	"ids drawn from the vocabulary with a fixed seed) run through the engine's\n"
	"prompt path on the elastic gang, R reps (default 5) after a warm-up;\n"
	"prints min/median/max prompt tok/s (prompt tokens / time to the logits of\n"
	"the last prompt position). --json: one JSON object.\n" BENCH_KV_HELP;

static const char width_help[] =
	"usage: egang bench width -m MODEL [-z TOK] [--cores LIST] [--tokens N] [--reps R]\n"
	"                         [--batch B[,B...]]\n"
	"\n"
	"Decode tok/s of the gang at widths 1..n (the first w slots requested),\n"
	"min/median/max over R reps of N tokens, and the knee the `knee` policy\n"
	"would pick: the widest width whose core time per token (width / tok/s)\n"
	"is within 5% of the cheapest width's.\n"
	"--batch: the same for each batch size B (1..128): B sequences decoding\n"
	"side by side, one token of each per step (the server's batch step);\n"
	"aggregate tok/s, step time, tok/s per second of process CPU time (the\n"
	"work on a shared machine) and the knee per batch size, then a line\n"
	"`knees = B:K,...` for a knee record of a policy library (--policies).\n"
	BENCH_KV_HELP;

static const char overhead_help[] =
	"usage: egang bench overhead -m MODEL [-z TOK] [--cores LIST] [--tokens N] [--reps R]\n"
	"\n"
	"Decode tok/s of the same wave plan on the elastic gang (membership fixed at\n"
	"all cores) and on a plain fixed thread pool (spinning barrier, no latch),\n"
	"alternating R times; prints the gang/pool ratio of the medians.\n" BENCH_KV_HELP;

typedef enum which { DECODE, PREFILL, WIDTH, OVERHEAD } which_t;

typedef struct model_opts {
	const char *model, *tok;
	int64_t tokens, reps;
	int kv;
	bool json;
	cli_cpus_t cpus;
	const char *batch; /* bench width --batch */
} model_opts_t;

/* One summary line (or a JSON object) for tok/s samples v (sorted here). */
static void report(const char *what, const engine_t *e, const model_opts_t *o,
		   double *v)
{
	stats_summary_t s = stats_summarize(v, (size_t)o->reps);
	cpumask_t mask = engine_cpumask(e);
	char list[CPUMASK_LIST_CAP];
	cpumask_format(&mask, list, sizeof list);
	const model_t *m = e->m;
	double bpt = (double)model_bytes_per_token(m), gbs = s.p50 * bpt / 1e9;
	if (!o->json) {
		printf("bench %s: %s %s cores=%s tokens=%lld reps=%lld kv=%s tok/s "
		       "min/median/max %.2f/%.2f/%.2f  GB/s %.2f (bytes/token %.0f)\n",
		       what, m->name, bench_model_type(m), list, (long long)o->tokens,
		       (long long)o->reps, kv_type_names[o->kv], s.min, s.p50, s.max, gbs, bpt);
		return;
	}
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:I, "
			      "s:{s:f, s:f, s:f}, s:f, s:f}",
			      "bench", what, "model", o->model, "type",
			      bench_model_type(m), "kv", kv_type_names[o->kv], "cores", list,
			      "threads", e->n_cpus,
			      "tokens", (json_int_t)o->tokens, "reps",
			      (json_int_t)o->reps, "tok_s", "min", s.min,
			      "median", s.p50, "max", s.max, "bytes_per_token",
			      bpt, "gb_s", gbs);
	char *t = json_dumps(j, JSON_COMPACT);
	puts(t);
	free(t);
	json_decref(j);
}

static void print_width(const engine_t *e, const bench_width_result_t *r)
{
	double bpt = (double)model_bytes_per_token(e->m);
	for (int w = 1; w <= e->n_cpus; w++) {
		const stats_summary_t *s = &r->s[w - 1];
		printf("width %2d: %8.2f tok/s median (min %.2f, max %.2f), %.2f GB/s\n",
		       w, s->p50, s->min, s->max, s->p50 * bpt / 1e9);
	}
	printf("bench width %s: knee=%d best=%.2f tok/s at widths 1..%d:", e->m->name,
	       r->knee, r->best, e->n_cpus);
	for (int w = 1; w <= e->n_cpus; w++)
		printf(" %.2f", r->s[w - 1].p50);
	printf("\n");
}

static void print_overhead(const engine_t *e, const model_opts_t *o,
			   const stats_summary_t *sg, const stats_summary_t *sp)
{
	printf("gang: %.2f tok/s median (min %.2f, max %.2f)\n", sg->p50, sg->min, sg->max);
	printf("pool: %.2f tok/s median (min %.2f, max %.2f)\n", sp->p50, sp->min, sp->max);
	printf("bench overhead %s: gang/pool=%.4f (%.2f%% protocol cost) on %d cores, "
	       "%lld tokens x %lld reps\n", e->m->name, sg->p50 / sp->p50,
	       100.0 * (1.0 - sg->p50 / sp->p50), e->n_cpus, (long long)o->tokens,
	       (long long)o->reps);
}

#define BATCH_MAX 16

static int width_batches(engine_t *e, const model_opts_t *o)
{
	int batch[BATCH_MAX];
	int nb = cli_int_rising("--batch", o->batch, 1, 128, batch, BATCH_MAX,
				"batch sizes");
	if (nb < 0)
		return EXIT_INPUT;
	bench_width_result_t r[BATCH_MAX];
	if (bench_width_batch_run(e, (int)o->tokens, (int)o->reps, batch, nb, r) < 0) {
		log_error("%s", err_get());
		return EXIT_FAIL;
	}
	knee_table_t t = {0};
	for (int i = 0; i < nb; i++) {
		for (int w = 1; w <= e->n_cpus; w++) {
			const stats_summary_t *s = &r[i].s[w - 1];
			printf("batch %3d width %2d: %8.2f tok/s median (min %.2f, max %.2f), "
			       "step %.2f ms; per CPU second %.2f tok/s (max %.2f)\n",
			       r[i].batch, w, s->p50, s->min, s->max, 1e3 * r[i].batch / s->p50,
			       r[i].cpu[w - 1].p50, r[i].cpu[w - 1].max);
		}
		printf("bench width %s: batch=%d knee=%d best=%.2f tok/s at widths 1..%d:",
		       e->m->name, r[i].batch, r[i].knee, r[i].best, e->n_cpus);
		for (int w = 1; w <= e->n_cpus; w++)
			printf(" %.2f", r[i].s[w - 1].p50);
		printf(" (%.2fx batch 1's tok/s at the best width)\n",
		       r[0].batch == 1 ? r[i].best / r[0].best : 0.0);
		knee_table_set(&t, r[i].batch, r[i].knee, e->n_cpus);
	}
	char buf[256];
	printf("knees = %s\n", knee_table_format(&t, buf, sizeof buf));
	return EXIT_OK;
}

/* The most reps a run takes (--reps). */
#define REPS_MAX 1000

/* Runs the driver on the open engine; an exit code. */
static int run(which_t w, engine_t *e, const model_opts_t *o)
{
	int tokens = (int)o->tokens, reps = (int)o->reps, rc = 0;
	double v[REPS_MAX];
	stats_summary_t sg, sp;
	bench_width_result_t wr;
	if (w == WIDTH && o->batch)
		return width_batches(e, o);
	if (w == DECODE) {
		bench_decode_run(e, tokens, reps, !o->json, v);
		report("decode", e, o, v);
	} else if (w == PREFILL) {
		if ((rc = bench_prefill_run(e, tokens, reps, !o->json, v)) == 0)
			report("prefill", e, o, v);
	} else if (w == WIDTH) {
		if ((rc = bench_width_run(e, tokens, reps, &wr)) == 0)
			print_width(e, &wr);
	} else if ((rc = bench_overhead_run(e, tokens, reps, &sg, &sp)) == 0) {
		print_overhead(e, o, &sg, &sp);
	}
	if (rc < 0)
		log_error("%s", err_get());
	return rc < 0 ? EXIT_FAIL : EXIT_OK;
}

static int model_bench(which_t w, int argc, char **argv)
{
	static const char *const names[] = {"bench decode", "bench prefill",
					    "bench width", "bench overhead"};
	static const char *const helps[] = {decode_help, prefill_help, width_help,
					    overhead_help};
	static const int64_t tokens[] = {128, 256, 64, 64}, reps[] = {5, 5, 3, 5};
	model_opts_t o = {.tokens = tokens[w], .reps = reps[w]};
	const cli_opt_t opts[] = {
		OPT_STR("model", 'm', &o.model, .required = true),
		OPT_STR("tokenizer", 'z', &o.tok),
		OPT_CPUS("cores", &o.cpus, GANG_MAX_SLOTS),
		OPT_INT("tokens", 'n', &o.tokens, 1, 1 << 20),
		OPT_INT("reps", 'r', &o.reps, 1, REPS_MAX),
		OPT_KV_TYPE(&o.kv),
		/* --json only where the benchmark has a JSON form */
		w <= PREFILL ? (cli_opt_t)OPT_FLAG("json", 0, &o.json)
			     : w == WIDTH ? (cli_opt_t)OPT_STR("batch", 0, &o.batch)
					  : (cli_opt_t)CLI_END,
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = names[w], .help = helps[w], .opts = opts};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	bench_model_config_t c = {.name = names[w], .model = o.model, .tok = o.tok,
				  .cpus = o.cpus.cpu, .n_cpus = o.cpus.n,
				  .tokens = o.tokens, .kv_type = (kv_type_t)o.kv,
				  .no_gang = w == OVERHEAD};
	engine_t *e = bench_model_open(&c, &status);
	if (!e) {
		log_error("%s", err_get());
		return status;
	}
	status = run(w, e, &o);
	engine_close(e);
	return status;
}

int cmd_bench_decode(int argc, char **argv) { return model_bench(DECODE, argc, argv); }
int cmd_bench_prefill(int argc, char **argv) { return model_bench(PREFILL, argc, argv); }
int cmd_bench_width(int argc, char **argv) { return model_bench(WIDTH, argc, argv); }
int cmd_bench_overhead(int argc, char **argv) { return model_bench(OVERHEAD, argc, argv); }
