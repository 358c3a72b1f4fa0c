/* egang bench agent: the agent controller over fixed telemetry regimes
 * (bench/agent_eval.h; AKTS 4.2). One summary line, one line per regime,
 * one line of answer counts. */
#include <stdio.h>
#include <string.h>

#include "bench/agent_eval.h"
#include "engine/agent_model.h"
#include "cli/cli.h"
#include "cli/cmd_bench.h"

static const char agent_help[] =
	"usage: egang bench agent -m MODEL [options]\n"
	"\n"
	"Replays five fixed telemetry regimes (idle, steady, burst, saturation,\n"
	"antagonist), each with a known best record, to the agent controller\n"
	"(`egang control --agent`: the model answers one digit) for N decisions,\n"
	"round robin. Reports valid raw answers (the unconstrained argmax),\n"
	"valid answers (through the answer grammar: all, by construction),\n"
	"correct answers against chance\n"
	"and against the best constant answer, the answers' distribution (a\n"
	"constant answer is flagged), decision latency p50/p99. A model never\n"
	"trained for this measures the plumbing, not judgement.\n"
	"\n"
	"  -m, --model FILE     the agent's model (GGUF or llama2.c; required)\n"
	"  -z, --tokenizer FILE tokenizer.bin for a llama2.c checkpoint\n"
	"      --chat-template NAME  the prompt goes through this template as a\n"
	"                       user message (chatml, llama2, llama3, llama31,\n"
	"                       zephyr, qwen3, gemma3), or none: plain text (the\n"
	"                       model's tokenizer.chat_template when known)\n"
	"      --decisions N    decisions (default 48)\n"
	"      --two-choice     offer only {0 latency, 1 throughput}\n"
	"      --slots N        the gang the library is built for (default 4)\n"
	"      --seed N         the telemetry jitter (default 1)\n"
	"  -h, --help           this text\n";

static void print_eval(const char *model, const char *tmpl, bool two,
		       const agent_eval_t *v)
{
	printf("bench agent: model %s template %s variant %s decisions %d valid %d (%.1f%%) "
	       "answers_valid %d (%.1f%%) "
	       "correct %d (%.1f%%) chance %.1f%% best_constant %.1f%% "
	       "decision_ms p50 %.3f p99 %.3f%s\n", model, tmpl,
	       two ? "two-choice" : "full", v->decisions, v->valid,
	       100.0 * v->valid / v->decisions, v->answers_valid,
	       100.0 * v->answers_valid / v->decisions, v->correct,
	       100.0 * v->correct / v->decisions, 100 * v->chance,
	       100 * v->majority, v->p50_ms, v->p99_ms,
	       v->constant ? " CONSTANT-ANSWER" : "");
	for (int r = 0; r < REGIME_COUNT; r++)
		printf("bench agent: regime %-10s best %d correct %d/%d\n",
		       agent_regime_names[r], agent_regime_best((agent_regime_t)r, two),
		       v->per_correct[r], v->per_n[r]);
	printf("bench agent: answers");
	for (int k = 0; k < v->choices; k++)
		printf(" %d=%d", k, v->answers[k]);
	printf("\n");
}

int cmd_bench_agent(int argc, char **argv)
{
	const char *model = NULL, *tok = NULL, *tmpl = NULL;
	int64_t decisions = 48, slots = 4, seed = 1;
	bool two = false;
	const cli_opt_t opts[] = {
		OPT_STR("model", 'm', &model, .required = true),
		OPT_STR("tokenizer", 'z', &tok),
		OPT_STR("chat-template", 0, &tmpl),
		OPT_INT("decisions", 0, &decisions, 1, 100000),
		OPT_FLAG("two-choice", 0, &two),
		OPT_INT("slots", 0, &slots, 2, GANG_MAX_SLOTS),
		OPT_INT("seed", 0, &seed, 0, INT64_MAX / 4),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "bench agent", .help = agent_help, .opts = opts};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	static agent_model_t am;
	if (agent_model_open(&am, model, tok, 0, tmpl, &status) < 0) {
		log_error("bench agent: %s", err_get());
		return status;
	}
	static policy_lib_t lib;
	agent_eval_lib(&lib, (int)slots, two);
	controller_config_t cc = {.kind = CONTROLLER_AGENT, .lib = &lib,
				  .n_arms = lib.n, .tok = am.e->m->tok,
				  .vocab = am.e->m->cfg.vocab_size,
				  .logits = agent_model_logits, .user = &am};
	static controller_t ctl;
	agent_eval_t v;
	status = EXIT_OK;
	if (controller_init(&ctl, &cc) < 0) {
		log_error("bench agent: %s", err_get());
		status = EXIT_INPUT;
	} else {
		if (agent_eval_run(&ctl, (int)decisions, two, (uint64_t)seed, &v) < 0) {
			log_error("bench agent: %s", err_get());
			status = EXIT_FAIL;
		} else {
			print_eval(model, agent_model_template(&am), two, &v);
		}
		controller_free(&ctl);
	}
	agent_model_close(&am);
	return status;
}
