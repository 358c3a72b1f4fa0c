/* egang chat: a conversation with a model in the terminal, through the
 * model's chat template (model/chat.h), with streamed answers.
 *
 * The KV cache keeps the conversation: a turn's prompt is the previous
 * prompt's ids, the last answer's ids as they were generated, and the ids
 * of what the template renders after the answer (its end-of-turn marker,
 * the new user message, the assistant header), found by rendering the
 * conversation with the answer replaced by a mark (prompt_continued). So
 * no earlier position changes and only the new tail is computed; the line
 * after each answer says how many prompt ids were reused. An answer stays
 * in the KV as generated (as llama.cpp's llama-cli keeps it), even where
 * the template would render it otherwise later (Qwen3 drops an earlier
 * answer's <think> block; Llama 3 and Gemma 3 trim white space). When the
 * template does not render the conversation as such a continuation, the
 * whole text is tokenized and the ids it shares with the cache are reused.
 * SIGINT while answering stops the answer (the conversation goes on with
 * the text so far); at the prompt it only clears the line. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "model/chat.h"
#include "engine/engine.h"
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
	"                            chatml, llama2, llama3, zephyr, qwen3, gemma3\n"
	"      --chat-template-file FILE  the template text to recognise instead\n"
	"                            of the model's tokenizer.chat_template\n"
	"      --system TEXT         the first system message\n"
	"  -n, --n-predict N         at most N tokens per answer (default 512)\n"
	"  -t, --temp T              temperature, 0 = greedy (default 0.7)\n"
	"      --top-p P             (default 0.9)\n"
	"  -s, --seed S              sampler seed (default 42)\n"
	"      --ctx N               context length (default: the model's, at\n"
	"                            most 4096)\n"
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

static int on_text(void *user, const char *s, size_t n)
{
	char **acc = user; /* the answer so far, for the conversation */
	fwrite(s, 1, n, stdout);
	fflush(stdout);
	size_t have = *acc ? strlen(*acc) : 0;
	char *p = realloc(*acc, have + n + 1);
	if (!p)
		abort(); /* out of memory */
	memcpy(p + have, s, n);
	p[have + n] = '\0';
	*acc = p;
	return interrupted ? 1 : 0;
}

typedef struct convo {
	chat_msg_t *msg; /* text malloc'd, role static */
	int n, cap;
	int32_t *kv;     /* ids whose KV the forward pass holds */
	int64_t n_kv;
	int64_t n_ans;   /* the last answer: kv[n_kv_prompt .. +n_ans) */
	int64_t n_kv_prompt;
	char *prev;      /* the text the last prompt was rendered as */
} convo_t;

static void convo_add(convo_t *c, const char *role, const char *text)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 8;
		c->msg = realloc(c->msg, (size_t)c->cap * sizeof *c->msg);
		if (!c->msg)
			abort(); /* out of memory */
	}
	char *t = strdup(text);
	if (!t)
		abort(); /* out of memory */
	c->msg[c->n++] = (chat_msg_t){role, t, strlen(t)};
}

static void convo_reset(convo_t *c, const char *system)
{
	for (int i = 0; i < c->n; i++)
		free((char *)c->msg[i].text);
	c->n = 0;
	free(c->prev);
	c->prev = NULL;
	c->n_ans = 0;
	if (system && *system)
		convo_add(c, "system", system);
}

typedef struct chat_opts {
	const char *model, *tmpl, *tmpl_file, *system, *render;
	int64_t n_predict, seed, ctx;
	double temp, top_p;
	cli_cpus_t cpus;
} chat_opts_t;

/* U+E000 (private use) around a word: stands for the last answer. */
#define ANSWER_MARK "\xEE\x80\x80" "egang-answer" "\xEE\x80\x80"

/* The prompt as the cached ids continued: when the conversation (the
 * last answer replaced by ANSWER_MARK) renders as the previous prompt's
 * text, the mark, then a tail, the prompt is the previous prompt's ids,
 * the answer's ids as generated (so no earlier position changes) and the
 * tail's. NULL when the template does not render that way (then the
 * caller tokenizes the whole text). */
static int32_t *prompt_continued(const chat_template_t *ct, convo_t *c,
				 int64_t *n_out)
{
	if (!c->prev || c->n < 2 || strcmp(c->msg[c->n - 2].role, "assistant"))
		return NULL;
	chat_msg_t saved = c->msg[c->n - 2];
	c->msg[c->n - 2].text = ANSWER_MARK;
	c->msg[c->n - 2].len = strlen(ANSWER_MARK);
	char *text;
	int64_t len = chat_render(ct, c->msg, c->n, true, &text);
	c->msg[c->n - 2] = saved;
	if (len < 0)
		return NULL;
	size_t np = strlen(c->prev);
	char *mark = strstr(text, ANSWER_MARK);
	int32_t *ids = NULL;
	/* white space between the prompt and the answer (Llama 2's " "):
	 * the answer as generated already stands there */
	bool glue = mark && (size_t)(mark - text) >= np;
	for (const char *g = text + np; glue && g < mark; g++)
		glue = *g == ' ' || *g == '\n';
	if (glue && !memcmp(text, c->prev, np)) {
		const char *tail = mark + strlen(ANSWER_MARK);
		size_t nt = strlen(tail);
		const tokenizer_t *tok = chat_template_tokenizer(ct);
		int64_t k = tokenizer_tokenize(tok, tail, nt, false, true, NULL, 0);
		int64_t head = c->n_kv_prompt + c->n_ans;
		ids = k >= 0 ? malloc((size_t)(head + k + 1) * sizeof *ids) : NULL;
		if (ids) {
			memcpy(ids, c->kv, (size_t)head * sizeof *ids);
			tokenizer_tokenize(tok, tail, nt, false, true, ids + head, k);
			*n_out = head + k;
		}
	}
	free(text);
	return ids;
}

/* One answer to the conversation so far; 0, or an exit code. */
static int answer(engine_t *e, const chat_template_t *ct, const chat_opts_t *o,
		  convo_t *c)
{
	char *text;
	int64_t len = chat_render(ct, c->msg, c->n, true, &text);
	if (len < 0) {
		log_error("chat: %s", err_get());
		return EXIT_INPUT;
	}
	int64_t n = 0;
	int32_t *ids = prompt_continued(ct, c, &n);
	if (!ids) {
		n = chat_tokenize(ct, text, (size_t)len, NULL, 0);
		ids = n > 0 ? malloc((size_t)n * sizeof *ids) : NULL;
		if (n <= 0 || !ids ||
		    chat_tokenize(ct, text, (size_t)len, ids, n) != n) {
			free(text);
			free(ids);
			log_error("chat: %s", n < 0 ? err_get() : "empty prompt");
			return EXIT_FAIL;
		}
	}
	free(c->prev);
	c->prev = text;
	int64_t same = 0;
	while (same < n && same < c->n_kv && ids[same] == c->kv[same])
		same++;
	char *acc = NULL;
	engine_params_t ep = {
		.prompt_ids = ids, .n_prompt_ids = n,
		.n_predict = (int32_t)o->n_predict,
		.sampler = {.temp = (float)o->temp, .top_p = (float)o->top_p,
			    .seed = (uint64_t)o->seed + (uint64_t)c->n},
		.on_text = on_text, .user = &acc,
		.n_cached = same < n ? same : n - 1,
		.stop_at_control = true,
	};
	interrupted = 0;
	engine_result_t r;
	int grc = engine_generate(e->m, e->f, e->g, &ep, &r);
	free(ids);
	if (grc < 0) {
		free(acc);
		log_error("chat: %s", err_get());
		c->n_kv = 0;
		free(c->prev);
		c->prev = NULL;
		return grc == ENGINE_FAIL ? EXIT_FAIL : EXIT_INPUT;
	}
	/* the KV now holds every id fed: all but the last one sampled, or
	 * all of them when an end token (not among them) ended the answer */
	free(c->kv);
	c->kv = r.ids;
	c->n_kv = r.n_prompt + r.n_gen - (r.stop == STOP_EOS ? 0 : 1);
	c->n_kv_prompt = r.n_prompt;
	c->n_ans = r.n_gen;
	convo_add(c, "assistant", acc ? acc : "");
	free(acc);
	printf("\n");
	fprintf(stderr, "[%lld tokens, %.2f tok/s; prompt %lld tokens, %lld reused "
			"from the KV cache%s]\n",
		(long long)r.n_gen,
		r.decode_s > 0 ? (double)r.decode_steps / r.decode_s : 0.0,
		(long long)r.n_prompt, (long long)ep.n_cached,
		r.stop == STOP_CANCEL ? "; stopped" : "");
	fflush(stderr);
	return 0;
}

/* Reads lines until /exit or end of input. */
static int chat_loop(engine_t *e, const chat_template_t *ct,
		     const chat_opts_t *o)
{
	convo_t c = {0};
	const char *system = o->system;
	char *sys_buf = NULL, *line = NULL;
	size_t cap = 0;
	int status = EXIT_OK;
	convo_reset(&c, system);
	for (;;) {
		fputs("> ", stdout);
		fflush(stdout);
		interrupted = 0;
		errno = 0;
		ssize_t k = getline(&line, &cap, stdin);
		if (k < 0) {
			if (errno == EINTR) { /* Ctrl-C at the prompt */
				clearerr(stdin);
				fputc('\n', stdout);
				continue;
			}
			fputc('\n', stdout);
			break;
		}
		if (k > 0 && line[k - 1] == '\n')
			line[--k] = '\0';
		if (!strcmp(line, "/exit"))
			break;
		if (!strcmp(line, "/reset")) {
			convo_reset(&c, system);
			puts("(conversation reset)");
			continue;
		}
		if (!strncmp(line, "/system", 7) && (!line[7] || line[7] == ' ')) {
			free(sys_buf);
			sys_buf = strdup(line[7] ? line + 8 : "");
			system = sys_buf;
			convo_reset(&c, system);
			puts("(system message set; conversation reset)");
			continue;
		}
		if (line[0] == '/') {
			printf("(unknown command %s: /reset, /system TEXT, /exit)\n", line);
			continue;
		}
		convo_add(&c, "user", line);
		status = answer(e, ct, o, &c);
		if (status == EXIT_INPUT) { /* the template refused: drop the turn */
			free((char *)c.msg[--c.n].text);
			status = EXIT_OK;
		} else if (status != EXIT_OK) {
			break;
		}
	}
	convo_reset(&c, NULL);
	free(c.msg);
	free(c.kv);
	free(line);
	free(sys_buf);
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
	json_t *ms = json_object_get(root, "messages");
	size_t n = json_array_size(ms);
	chat_msg_t *m = calloc(n ? n : 1, sizeof *m);
	if (!m)
		abort(); /* out of memory */
	int status = EXIT_OK;
	for (size_t i = 0; i < n && status == EXIT_OK; i++) {
		json_t *role = json_object_get(json_array_get(ms, i), "role");
		json_t *text = json_object_get(json_array_get(ms, i), "content");
		if (!json_is_string(role) || !json_is_string(text)) {
			log_error("chat: --render: messages[%zu] needs string role and "
				  "content", i);
			status = EXIT_INPUT;
			break;
		}
		m[i] = (chat_msg_t){json_string_value(role), json_string_value(text),
				    json_string_length(text)};
	}
	char *out = NULL;
	int64_t k = status ? -1 : chat_render_full(ct, m, (int)n,
			json_is_true(json_object_get(root, "add_generation_prompt")),
			&out);
	if (status == EXIT_OK && k < 0) {
		log_error("chat: %s", err_get());
		status = EXIT_INPUT;
	} else if (k >= 0) {
		fwrite(out, 1, (size_t)k, stdout);
	}
	free(out);
	free(m);
	json_decref(root);
	return status;
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
			  "llama3, zephyr, qwen3, gemma3", o.tmpl);
		return EXIT_INPUT;
	}
	engine_config_t ec = {.model_path = o.model, .cpus = o.cpus.cpu,
			      .n_cpus = o.cpus.n, .ctx = (int32_t)o.ctx,
			      .no_forward = o.render != NULL};
	engine_t *e = engine_open(&ec, &status);
	if (!e) {
		log_error("%s", err_get());
		return status;
	}
	char *tmpl = NULL;
	gguf_str_t ts;
	size_t tn;
	if (o.tmpl_file && !(tmpl = file_read_all(o.tmpl_file, &tn))) {
		log_error("chat: --chat-template-file: %s", err_get());
		engine_close(e);
		return EXIT_INPUT;
	} else if (!tmpl && e->m->gguf &&
	    gguf_get_str(e->m->gguf, "tokenizer.chat_template", &ts) == 0)
		tmpl = strndup(ts.s, (size_t)ts.n);
	chat_template_t *ct = kind != CHAT_NONE
				      ? chat_template_new_kind(kind, e->m->tok)
				      : chat_template_new(tmpl, e->m->tok);
	if (chat_template_kind(ct) == CHAT_NONE) {
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
		log_info("chat: %s, template %s; /reset, /system TEXT, /exit",
			 e->m->name, chat_name(chat_template_kind(ct)));
		status = chat_loop(e, ct, &o);
	}
	chat_template_free(ct);
	free(tmpl);
	engine_close(e);
	return status;
}
