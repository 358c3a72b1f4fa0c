/* egang chat: a conversation with a model in the terminal, through the
 * model's chat template, with streamed answers. The conversation and its
 * KV cache reuse are the engine's (engine/chat_convo.h); the line after
 * each answer says how many prompt ids were reused. SIGINT while
 * answering stops the answer (the conversation goes on with the text so
 * far); at the prompt it only clears the line. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "engine/chat_convo.h"
#include "engine/engine_open.h"

static const char chat_help[] =
	"usage: egang chat -m MODEL [options]\n"
	"\n"
	"Talks with a model in the terminal through its chat template\n"
	"(tokenizer.chat_template), streaming each answer. Commands at the\n"
	"prompt: /reset (forget the conversation), /system TEXT (set the system\n"
	"message; the conversation restarts), /exit (or end of input).\n"
	"Ctrl-C stops the current answer, not the program. After each answer:\n"
	"its tokens, tokens/s, and how many prompt tokens the KV cache reused.\n"
	"\n"
	"  -m, --model FILE          GGUF (required)\n"
	"      --chat-template NAME  a built-in template instead of the model's:\n"
	"                            chatml, llama2, llama3, llama31, zephyr, qwen3,\n"
	"                            gemma3\n"
	"      --chat-template-file FILE  the template text to recognise instead\n"
	"                            of the model's tokenizer.chat_template\n"
	"      --system TEXT         the first system message\n"
	"  -n, --n-predict N         at most N tokens per answer (default 512)\n"
	"  -t, --temp T              temperature, 0 = greedy (default 0.7)\n"
	"      --top-p P             (default 0.9)\n"
	"  -s, --seed S              sampler seed (default 42)\n"
	"      --ctx N               context length (default: the model's, at\n"
	"                            most 4096)\n"
	CLI_KV_TYPE_HELP
	"      --cores LIST          gang CPUs (default: all allowed)\n"
	"      --render FILE         print the prompt the template renders for\n"
	"                            the JSON {\"messages\": [{\"role\", \"content\"}],\n"
	"                            \"add_generation_prompt\": bool} in FILE ('-':\n"
	"                            stdin), BOS text first when BOS is added, and\n"
	"                            exit (for checks against the Jinja source)\n"
	"  -h, --help                this text\n";

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* Prints the answer as it comes; a nonzero return stops it. */
static int on_text(void *user, const char *s, size_t n)
{
	(void)user;
	fwrite(s, 1, n, stdout);
	fflush(stdout);
	return interrupted ? 1 : 0;
}

typedef struct chat_opts {
	const char *model, *tmpl, *tmpl_file, *system, *render;
	int64_t n_predict, seed, ctx;
	double temp, top_p;
	int kv;
	cli_cpus_t cpus;
} chat_opts_t;

/* One answer to the conversation so far; 0, or an exit code. */
static int answer(engine_t *e, const chat_opts_t *o, chat_convo_t *c)
{
	engine_params_t ep = {
		.n_predict = (int32_t)o->n_predict,
		.sampler = {.temp = (float)o->temp, .top_p = (float)o->top_p,
			    .seed = (uint64_t)o->seed},
		.on_text = on_text, .stop_at_control = true,
	};
	interrupted = 0;
	engine_result_t r;
	int64_t reused;
	int rc = chat_convo_turn(c, e, &ep, &r, &reused);
	if (rc < 0) {
		log_error("chat: %s", err_get());
		return rc == ENGINE_FAIL ? EXIT_FAIL : EXIT_INPUT;
	}
	printf("\n");
	fprintf(stderr, "[%lld tokens, %.2f tok/s; prompt %lld tokens, %lld reused "
			"from the KV cache%s]\n",
		(long long)r.n_gen, engine_result_decode_tps(&r),
		(long long)r.n_prompt, (long long)reused,
		r.stop == STOP_CANCEL ? "; stopped" : "");
	fflush(stderr);
	return 0;
}

/* A line that starts with '/': 1 handled, 0 /exit. */
static int command(chat_convo_t *c, const char *line)
{
	if (!strcmp(line, "/exit"))
		return 0;
	if (!strcmp(line, "/reset")) {
		chat_convo_reset(c, NULL);
		puts("(conversation reset)");
	} else if (!strncmp(line, "/system", 7) && (!line[7] || line[7] == ' ')) {
		chat_convo_reset(c, line[7] ? line + 8 : "");
		puts("(system message set; conversation reset)");
	} else {
		printf("(unknown command %s: /reset, /system TEXT, /exit)\n", line);
	}
	return 1;
}

/* Reads lines until /exit or end of input. */
static int chat_loop(engine_t *e, const chat_template_t *ct,
		     const chat_opts_t *o)
{
	chat_convo_t *c = chat_convo_new(ct);
	char *line = NULL;
	size_t cap = 0;
	int status = EXIT_OK;
	chat_convo_reset(c, o->system);
	for (;;) {
		fputs("> ", stdout);
		fflush(stdout);
		interrupted = 0;
		errno = 0;
		ssize_t k = getline(&line, &cap, stdin);
		if (k < 0 && errno == EINTR) { /* Ctrl-C at the prompt */
			clearerr(stdin);
			fputc('\n', stdout);
			continue;
		} else if (k < 0) {
			fputc('\n', stdout);
			break;
		}
		if (k > 0 && line[k - 1] == '\n')
			line[--k] = '\0';
		if (line[0] == '/') {
			if (!command(c, line))
				break;
			continue;
		}
		chat_convo_add(c, "user", line, strlen(line));
		status = answer(e, o, c);
		if (status == EXIT_INPUT) { /* the template refused: drop the turn */
			chat_convo_drop(c);
			status = EXIT_OK;
		} else if (status != EXIT_OK) {
			break;
		}
	}
	chat_convo_free(c);
	free(line);
	return status;
}

/* --render: the conversation in a JSON file -> the prompt text. */
static int render_file(const chat_template_t *ct, const char *path)
{
	json_error_t je;
	json_t *root = !strcmp(path, "-") ? json_loadf(stdin, 0, &je)
					  : json_load_file(path, 0, &je);
	if (!root) {
		log_error("chat: --render %s:%d: %s", path, je.line, je.text);
		return EXIT_INPUT;
	}
	chat_convo_t *c = chat_convo_new(ct);
	char *out = NULL;
	int64_t k = -1;
	if (chat_convo_load_json(c, root) < 0)
		log_error("chat: --render: %s", err_get());
	else if ((k = chat_convo_render(c, json_is_true(json_object_get(root,
			"add_generation_prompt")), &out)) < 0)
		log_error("chat: %s", err_get());
	else
		fwrite(out, 1, (size_t)k, stdout);
	free(out);
	chat_convo_free(c);
	json_decref(root);
	return k < 0 ? EXIT_INPUT : EXIT_OK;
}

int cmd_chat(int argc, char **argv)
{
	chat_opts_t o = {.n_predict = 512, .seed = 42, .temp = 0.7, .top_p = 0.9};
	const cli_opt_t opts[] = {
		OPT_STR("model", 'm', &o.model, .required = true),
		OPT_STR("chat-template", 0, &o.tmpl),
		OPT_STR("chat-template-file", 0, &o.tmpl_file),
		OPT_STR("system", 0, &o.system, .empty_ok = true),
		OPT_INT("n-predict", 'n', &o.n_predict, 1, 1 << 24),
		OPT_FLOAT("temp", 't', &o.temp, 0, 100),
		OPT_FLOAT("top-p", 0, &o.top_p, 1e-6, 1),
		OPT_INT("seed", 's', &o.seed, 0, INT64_MAX),
		OPT_INT("ctx", 0, &o.ctx, 2, 1 << 22),
		OPT_KV_TYPE(&o.kv),
		OPT_CPUS("cores", &o.cpus, GANG_MAX_SLOTS),
		OPT_STR("render", 0, &o.render),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "chat", .help = chat_help, .opts = opts};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	chat_kind_t kind = CHAT_NONE;
	if (o.tmpl && (kind = chat_kind_from_name(o.tmpl)) == CHAT_NONE) {
		log_error("chat: --chat-template '%s' is not one of chatml, llama2, "
			  "llama3, llama31, zephyr, qwen3, gemma3", o.tmpl);
		return EXIT_INPUT;
	}
	engine_config_t ec = {.model_path = o.model, .cpus = o.cpus.cpu,
			      .n_cpus = o.cpus.n, .ctx = (int32_t)o.ctx,
			      .kv_type = (kv_type_t)o.kv, .no_forward = o.render != NULL};
	engine_t *e = engine_open(&ec, &status);
	if (!e) {
		log_error("%s", err_get());
		return status;
	}
	chat_template_t *ct = chat_convo_template(e->m, kind, o.tmpl_file);
	if (!ct) {
		log_error("chat: --chat-template-file: %s", err_get());
		status = EXIT_INPUT;
	} else if (chat_template_kind(ct) == CHAT_NONE) {
		log_error("chat: %s has no chat template egang knows (its "
			  "tokenizer.chat_template is absent or unrecognised); choose "
			  "one with --chat-template", o.model);
		status = EXIT_INPUT;
	} else if (o.render) {
		status = render_file(ct, o.render);
	} else {
		struct sigaction sa = {.sa_handler = on_sigint}; /* no SA_RESTART:
			getline at the prompt returns EINTR */
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		log_info("chat: %s, template %s, kv %s; /reset, /system TEXT, /exit", e->m->name,
			 chat_name(chat_template_kind(ct)), kv_type_names[e->kv_type]);
		status = chat_loop(e, ct, &o);
	}
	chat_template_free(ct);
	engine_close(e);
	return status;
}
