/* egang generate: one prompt, streamed text, optional gang membership
 * experiments and traces. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "gang/membership.h"
#include "engine/chat_convo.h"
#include "engine/engine.h"
#include "engine/engine_open.h"

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
	"      --chat-template NAME  --chat, template chatml|llama2|llama3|zephyr|qwen3|gemma3\n"
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
	"  -q, --quiet             no speed report\n"
	"  -h, --help              this text\n";

typedef struct run_ctx {
	engine_t *e;
	membership_t ms;
	FILE *trace;
	uint64_t last_ns;
} run_ctx_t;

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

typedef struct gen_opts {
	const char *model, *tok, *prompt, *prompt_ids, *hash, *dump, *membership, *trace, *ids,
		*control, *policies, *system;
	int64_t n_predict, top_k, seed, ctx;
	double temp, top_p;
	int sampler, kv, tmpl; /* tmpl: in chat_names, -1 none */
	bool no_echo, chat;
	const char *stops[8];
	int n_stop;
	cli_cpus_t cpus;
	int32_t ids_buf[4096]; int n_ids; /* --prompt-ids */
	int32_t *chat_ids; int64_t n_chat_ids; /* --chat: the templated prompt */
} gen_opts_t;

/* Runs the generation on an open engine; an exit code. */
static int generate(const gen_opts_t *o, run_ctx_t *rc, FILE *hash,
		    FILE *dump)
{
	engine_t *e = rc->e;
	engine_params_t ep = {
		.prompt = o->prompt,
		.prompt_ids = o->chat_ids ? o->chat_ids : o->n_ids ? o->ids_buf : NULL,
		.n_prompt_ids = o->chat_ids ? o->n_chat_ids : o->n_ids,
		.n_predict = (int32_t)o->n_predict,
		.sampler = {.temp = (float)o->temp, .top_p = (float)o->top_p,
			    .top_k = (int32_t)o->top_k, .seed = (uint64_t)o->seed,
			    .mode = o->sampler == 1 ? SAMPLER_LLAMA2C : SAMPLER_EGANG},
		.echo_prompt = !o->no_echo, .stop_at_control = o->chat,
		.logits_hash = hash, .logits_dump = dump,
		.before_token = before_token, .on_text = on_text, .user = rc,
		.stop = o->stops, .n_stop = o->n_stop,
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

static const char *const sampler_names[] = {"egang", "llama2c", NULL};
static const char *const chat_names[] = {"chatml", "llama2", "llama3", "zephyr",
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
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "generate", .help = generate_help, .opts = opts};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	if (o.prompt_ids && (o.n_ids = cli_int_list("--prompt-ids", o.prompt_ids,
			o.ids_buf, (int)EG_ARRAY_LEN(o.ids_buf), INT32_MAX)) < 0)
		return EXIT_INPUT;
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
	run_ctx_t rc = {0};
	if (membership_parse(&rc.ms, o.membership) < 0) {
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
		status = generate(&o, &rc, hash, dump);
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
	return status;
}
