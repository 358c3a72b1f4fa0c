/* egang bench grammar: the cost of constrained decoding (the method:
 * bench/grammar.h). One summary line:
 *   bench grammar: MODEL vocab=V trie_nodes=N cores=LIST tokens=T reps=R
 *   greedy tok/s free/grammar A/B (-x%) sampled tok/s free/grammar C/D
 *   (-y%) mask_us p50/p99/max ... check_us p50 ... vocab_ms ... */
#include <stdio.h>

#include "bench/decode.h"
#include "bench/grammar.h"
#include "cli/cli.h"
#include "cli/cmd_bench.h"

static const char grammar_help[] =
	"usage: egang bench grammar -m MODEL [options]\n"
	"\n"
	"The cost of a grammar on decode speed, single stream: the prompt decoded\n"
	"greedy and sampled (temperature 0.8, top-p 0.95), each without and with\n"
	"the grammar, alternating, R reps after a warm-up; median decode tok/s of\n"
	"each and the grammar's cost in percent. Greedy checks the argmax against\n"
	"the grammar first (a whole mask only when it is refused); sampling masks\n"
	"every token. Then the last sampled run's tokens replayed through a fresh\n"
	"matcher: the whole mask's time per token (p50/p99/max, microseconds), one\n"
	"token's check, and the vocabulary trie's build time (once per model).\n"
	"\n"
	"  -m, --model FILE     GGUF or llama2.c checkpoint (required)\n"
	"  -z, --tokenizer FILE tokenizer.bin for a llama2.c checkpoint\n"
	"      --grammar FILE   a GBNF grammar (default: any JSON object)\n"
	"  -p, --prompt TEXT    the prompt, at most 128 tokens (default: asks for a\n"
	"                       JSON object)\n"
	"  -n, --tokens N       tokens per run at most (default 128; a run ends\n"
	"                       earlier where the grammar is complete and EOS comes)\n"
	"  -r, --reps R         repetitions (default 5)\n"
	"      --cores LIST     gang CPUs (default: all allowed)\n"
	"  -q, --quiet          no progress lines\n"
	"  -h, --help           this text\n";

static double cost(const double *v) { return v[0] > 0 ? 100.0 * (1 - v[1] / v[0]) : 0; }

int cmd_bench_grammar(int argc, char **argv)
{
	const char *model = NULL, *tok = NULL, *gpath = NULL;
	const char *prompt = "Describe a cat as a JSON object with its name, age, "
			     "colour and favourite foods.\nJSON: ";
	int64_t tokens = 128, reps = 5;
	cli_cpus_t cpus = {0};
	const cli_opt_t opts[] = {
		OPT_STR("model", 'm', &model, .required = true),
		OPT_STR("tokenizer", 'z', &tok),
		OPT_STR("grammar", 0, &gpath),
		OPT_STR("prompt", 'p', &prompt),
		OPT_INT("tokens", 'n', &tokens, 1, 1 << 16),
		OPT_INT("reps", 'r', &reps, 1, 1000),
		OPT_CPUS("cores", &cpus, GANG_MAX_SLOTS),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "bench grammar", .help = grammar_help, .opts = opts};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	grammar_t *g = gpath ? grammar_load(gpath) : grammar_parse(bench_grammar_json);
	if (!g) {
		log_error("bench grammar: --grammar: %s", err_get());
		return EXIT_INPUT;
	}
	bench_model_config_t c = {.name = "bench grammar", .model = model, .tok = tok,
				  .cpus = cpus.cpu, .n_cpus = cpus.n,
				  .tokens = tokens + 128 /* room for the prompt */};
	engine_t *e = bench_model_open(&c, &status);
	bench_grammar_result_t r;
	if (!e) {
		log_error("%s", err_get());
	} else if (bench_grammar_run(e, g, prompt, (int)tokens, (int)reps, !log_quiet,
				     &r) < 0) {
		log_error("%s", err_get());
		status = EXIT_FAIL;
	} else {
		cpumask_t mask = engine_cpumask(e);
		char list[CPUMASK_LIST_CAP];
		cpumask_format(&mask, list, sizeof list);
		printf("bench grammar: %s vocab=%d trie_nodes=%lld cores=%s tokens=%lld "
		       "reps=%lld grammar=%s greedy tok/s free/grammar %.2f/%.2f (cost "
		       "%.1f%%, %.0f tokens) sampled tok/s free/grammar %.2f/%.2f (cost "
		       "%.1f%%, %.0f tokens) mask_us p50/p99/max %.1f/%.1f/%.1f mean %.1f "
		       "check_us p50 %.2f vocab_ms %.1f\n",
		       e->m->name, r.vocab, (long long)r.trie_nodes, list,
		       (long long)tokens, (long long)reps, gpath ? gpath : "json",
		       r.greedy[0], r.greedy[1], cost(r.greedy), r.gen_tokens[0],
		       r.sampled[0], r.sampled[1], cost(r.sampled), r.gen_tokens[1],
		       r.mask_us.p50, r.mask_us.p99, r.mask_us.max, r.mask_us.mean,
		       r.check_us.p50, r.vocab_ms);
		status = EXIT_OK;
	}
	engine_close(e);
	grammar_free(g);
	return status;
}
