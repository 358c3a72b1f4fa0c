/* egang generate: one prompt, streamed text, optional gang membership
 * experiments and traces. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cmd_generate.h"
#include "engine/chat_convo.h"
#include "engine/engine.h"
#include "model/json_schema.h"

static const char generate_help[] =
	"usage: egang generate -m MODEL [options]\n"
	"\n"
	"Generates text and streams it to stdout; speed goes to stderr.\n"
	"\n"
	"  -m, --model FILE        GGUF file or llama2.c checkpoint (required)\n"
	"  -z, --tokenizer FILE    llama2.c tokenizer.bin (required for .bin models)\n"
	"  -p, --prompt TEXT       prompt (default: empty, BOS only)\n"
	"      --prompt-ids LIST   the prompt as token ids, comma-separated, used as\n"
	"                          given (no BOS added); instead of -p\n"
	"      --chat              -p as a user message in the model's chat template; the\n"
	"                          answer ends at an end-of-turn token\n"
	"      --chat-template NAME  --chat, template chatml|llama2|llama3|\n"
	"                          llama31|zephyr|qwen3|gemma3\n"
	"      --system TEXT       --chat with this system message first\n"
	"  -n, --n-predict N       tokens to generate after the prompt (default 256;\n"
	"                          llama2.c's -n S, which counts the prompt, is S+1-prompt)\n"
	"  -t, --temp T            temperature, 0 = greedy (default 0.8)\n"
	"      --top-k K           keep the K most likely tokens (default 0 = off)\n"
	"      --top-p P           nucleus sampling threshold (default 0.9; 1 = off)\n"
	"  -s, --seed S            sampler seed (default 42)\n"
	"      --sampler MODE      egang (default) or llama2c (run.c's exact sampler)\n"
	"      --ctx N             context length (default: the model's, at most 4096)\n"
	CLI_KV_TYPE_HELP
	"      --logits-hash FILE  write 'position token hash' per generated token\n"
	"      --logits-dump FILE  write each generated token's logits as raw\n"
	"                          float32, vocab values per token (comparisons)\n"
	"      --cores LIST        gang CPUs, e.g. 0-1 or 0,2 (default: all allowed;\n"
	"                          1 CPU = run serially on this thread)\n"
	"      --membership SPEC   random:SEED  a random requested mask before each token\n"
	"                          file:PATH    one mask per token (hex or decimal),\n"
	"                                       the last repeated\n"
	"                          flip:MS      another thread toggles random slots every\n"
	"                                       MS milliseconds\n"
	"      --control PATH      read the policy index from this control word before\n"
	"                          every token (`egang policy set` writes it; created\n"
	"                          0600 if absent); not with --membership\n"
	"      --policies FILE     a user policy library after the built-ins (with\n"
	"                          --control; see `egang policy --help`)\n"
	"      --trace FILE        one line per token: tag, participant mask, time (us)\n"
	"      --ids FILE          write 'prompt_ids: ...' and 'sequence_ids: ...' lines\n"
	"                          (the format of ../shared/models/expected/*.ids)\n"
	"      --no-echo           do not print the prompt's text\n"
	"      --stop STR          stop before STR is generated (repeatable, up to 8)\n"
	"      --grammar FILE      the text must match this GBNF grammar (llama.cpp's\n"
	"                          syntax, start rule root); ends at EOS only where the\n"
	"                          grammar is complete; an error if it gets stuck\n"
	"      --json-schema FILE  the text must be JSON valid under this schema\n"
	"                          (`egang grammar from-schema` shows its grammar)\n"
	"  -q, --quiet             no speed report\n"
	"  -h, --help              this text\n";

static const char *const sampler_names[] = {"egang", "llama2c", NULL};
static const char *const chat_names[] = {"chatml", "llama2", "llama3", "llama31", "zephyr",
					 "qwen3", "gemma3", NULL};

int cmd_generate(int argc, char **argv)
{
	gen_opts_t o = {.prompt = "", .n_predict = 256, .seed = 42, .temp = 0.8,
			.top_p = 0.9, .tmpl = -1};
	const cli_opt_t opts[] = {
		OPT_STR("model", 'm', &o.model, .required = true),
		OPT_STR("tokenizer", 'z', &o.tok),
		OPT_STR("prompt", 'p', &o.prompt, .empty_ok = true),
		OPT_STR("prompt-ids", 0, &o.prompt_ids),
		OPT_INT("n-predict", 'n', &o.n_predict, 0, 1 << 24),
		OPT_FLOAT("temp", 't', &o.temp, 0, 100),
		OPT_INT("top-k", 0, &o.top_k, 0, 1 << 24),
		OPT_FLOAT("top-p", 0, &o.top_p, 1e-6, 1),
		OPT_INT("seed", 's', &o.seed, 0, INT64_MAX),
		OPT_CHOICE("sampler", 0, &o.sampler, sampler_names),
		OPT_INT("ctx", 0, &o.ctx, 2, 1 << 22),
		OPT_KV_TYPE(&o.kv),
		OPT_STR("logits-hash", 0, &o.hash),
		OPT_STR("logits-dump", 0, &o.dump),
		OPT_CPUS("cores", &o.cpus, GANG_MAX_SLOTS),
		OPT_STR("membership", 0, &o.membership),
		OPT_STR("trace", 0, &o.trace),
		OPT_STR("control", 0, &o.control),
		OPT_STR("policies", 0, &o.policies),
		OPT_STR("ids", 0, &o.ids),
		OPT_FLAG("no-echo", 0, &o.no_echo),
		OPT_FLAG("chat", 0, &o.chat),
		OPT_CHOICE("chat-template", 0, &o.tmpl, chat_names),
		OPT_STR("system", 0, &o.system, .empty_ok = true),
		OPT_LIST("stop", 0, o.stops, &o.n_stop),
		OPT_STR("grammar", 0, &o.grammar_path),
		OPT_STR("json-schema", 0, &o.schema_path),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "generate", .help = generate_help, .opts = opts};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	chat_kind_t kind = o.tmpl >= 0 ? chat_kind_from_name(chat_names[o.tmpl]) : CHAT_NONE;
	o.chat = o.chat || o.tmpl >= 0 || o.system;
	if (o.chat && o.prompt_ids) {
		log_error("generate: --prompt-ids is the whole prompt; not with --chat");
		return EXIT_INPUT;
	}
	if (o.control && o.membership) {
		log_error("generate: --control and --membership both set the "
			  "gang's membership; use one");
		return EXIT_INPUT;
	}
	if (o.grammar_path && o.schema_path) {
		log_error("generate: --grammar and --json-schema both constrain the text; use one");
		return EXIT_INPUT;
	}
	if ((o.grammar_path && !(o.grammar = grammar_load(o.grammar_path))) ||
	    (o.schema_path && !(o.grammar = json_schema_load(o.schema_path)))) {
		log_error("generate: %s: %s", o.grammar_path ? "--grammar" : "--json-schema",
			  err_get());
		return EXIT_INPUT;
	}
	if (o.prompt_ids && !(o.id_list = cli_int_list("--prompt-ids", o.prompt_ids, INT32_MAX,
						       &o.n_ids))) {
		grammar_free(o.grammar);
		return EXIT_INPUT;
	}
	run_ctx_t rc = {0};
	if (membership_parse(&rc.ms, o.membership) < 0) {
		free(o.id_list);
		grammar_free(o.grammar);
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	engine_config_t ec = {
		.model_path = o.model, .tok_path = o.tok,
		.cpus = o.cpus.cpu, .n_cpus = o.cpus.n, .ctx = (int32_t)o.ctx,
		.kv_type = (kv_type_t)o.kv, .gang = o.membership || o.trace,
		.control = o.control, .policies = o.policies,
	};
	FILE *hash = NULL, *dump = NULL;
	rc.e = engine_open(&ec, &status);
	if (!rc.e)
		log_error("%s", err_get());
	else if (o.chat && (o.n_chat_ids = chat_convo_question_ids(rc.e->m, kind,
			o.system, o.prompt, &o.chat_ids)) < 0) {
		log_error("generate: --chat: %s", err_get());
		status = EXIT_INPUT;
	} else if (o.hash && !(hash = fopen(o.hash, "w"))) {
		log_error("--logits-hash %s: %s", o.hash, strerror(errno));
		status = EXIT_INPUT;
	} else if (o.dump && !(dump = fopen(o.dump, "wb"))) {
		log_error("--logits-dump %s: %s", o.dump, strerror(errno));
		status = EXIT_INPUT;
	} else if (o.trace && !(rc.trace = fopen(o.trace, "w"))) {
		log_error("--trace %s: %s", o.trace, strerror(errno));
		status = EXIT_INPUT;
	} else {
		status = generate_run(&o, &rc, hash, dump);
	}
	if (hash && fclose(hash) != 0 && status == EXIT_OK) {
		log_error("--logits-hash: write failed");
		status = EXIT_FAIL;
	}
	if (dump && fclose(dump) != 0 && status == EXIT_OK) {
		log_error("--logits-dump: write failed");
		status = EXIT_FAIL;
	}
	if (rc.trace)
		fclose(rc.trace);
	engine_close(rc.e);
	membership_free(&rc.ms);
	free(o.chat_ids);
	free(o.id_list);
	grammar_free(o.grammar);
	return status;
}
