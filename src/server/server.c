/* server: the OpenAI-compatible HTTP layer (see server.h). In data-flow
 * order: small buffers and UTF-8; errors as JSON; chat templates; request
 * validation (server_handle_json); metrics; the queue and the generation
 * thread; the HTTP daemon. */
#include "server/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/base.h"
#include "gang/gang.h"
#include "model/forward.h"
#include "server/engine.h"

#define MAX_STOP 4          /* stop strings per request (OpenAI's limit) */
#define MAX_STOP_LEN 256    /* bytes per stop string */
#define KEEPALIVE_MS 1000   /* SSE comment while a stream waits */
#define DISCARD_MAX (16u << 20) /* body bytes read past the cap, then close */

/* ---- growable byte buffer ---- */

typedef struct sbuf {
	char *p;
	size_t len, cap;
} sbuf_t;

static void sbuf_add(sbuf_t *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			abort(); /* out of memory: nothing sensible to answer */
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sbuf_str(sbuf_t *b, const char *s) { sbuf_add(b, s, strlen(s)); }

/* ---- UTF-8 ---- */

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if s does
 * not start one (overlong forms, surrogates and > U+10FFFF are invalid). */
static size_t utf8_valid_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
	if (!len || c > 0xf4 || c == 0xc0 || c == 0xc1 || len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (len == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0)))
		return 0;
	if (len == 4 && ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90)))
		return 0;
	return len;
}

/* A JSON string of s[0..n) with every invalid byte replaced by U+FFFD. */
static json_t *json_lossy(const char *s, size_t n)
{
	sbuf_t b = {0};
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		size_t k = utf8_valid_seq(u + i, n - i);
		if (k && !(k == 1 && u[i] == 0)) {
			sbuf_add(&b, s + i, k);
			i += k;
		} else {
			sbuf_add(&b, "\xef\xbf\xbd", 3);
			i++;
		}
	}
	json_t *j = json_stringn_nocheck(b.p ? b.p : "", b.len);
	free(b.p);
	return j;
}

/* The largest end <= to (and >= from) that does not cut a UTF-8 sequence
 * which may still be completed by later bytes. */
static size_t utf8_cut(const char *s, size_t from, size_t to)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t back = 1; back <= 3 && back <= to - from; back++) {
		unsigned char c = u[to - back];
		if ((c & 0xc0) == 0x80)
			continue; /* a continuation byte: look further back */
		size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
		return need > back ? to - back : to;
	}
	return to;
}

/* ---- replies ---- */

static char *json_take_dump(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!s)
		abort(); /* only on out of memory: every string is valid UTF-8 */
	return s;
}

static const char *error_type(int status)
{
	switch (status) {
	case 401: return "authentication_error";
	case 429: return "rate_limit_error";
	case 500:
	case 503: return "server_error";
	default: return "invalid_request_error";
	}
}

/* {"error":{"message","type","param","code"}}; param/code may be NULL. */
static char *error_body(int status, const char *param, const char *code,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static char *error_body(int status, const char *param, const char *code,
			const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_t *e = json_object();
	json_object_set_new(e, "message", json_lossy(msg, strlen(msg)));
	json_object_set_new(e, "type", json_string(error_type(status)));
	json_object_set_new(e, "param", param ? json_string(param) : json_null());
	json_object_set_new(e, "code", code ? json_string(code) : json_null());
	json_t *root = json_object();
	json_object_set_new(root, "error", e);
	return json_take_dump(root);
}

#define REPLY_ERR(out, st, param, code, ...)                                 \
	do {                                                                 \
		(out)->status = (st);                                        \
		(out)->content_type = "application/json";                    \
		(out)->body = error_body((st), (param), (code), __VA_ARGS__); \
	} while (0)

/* ---- the server object ---- */

typedef struct hist {
	const double *le; /* upper bounds, ascending; +Inf implied */
	int n;
	uint64_t counts[16]; /* n + 1 */
	double sum;
	uint64_t count;
} hist_t;

static const double ttft_le[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
				 1, 2.5, 5, 10, 30};
static const double tpot_le[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
				 0.05, 0.1, 0.25, 0.5, 1};

static void hist_observe(hist_t *h, double v)
{
	int i = 0;
	while (i < h->n && v > h->le[i])
		i++;
	h->counts[i]++;
	h->sum += v;
	h->count++;
}

struct server_job {
	/* the request, immutable once validated */
	server_endpoint_t ep;
	bool stream;
	int32_t *ids; /* (n_ids) prompt tokens, BOS included */
	int64_t n_ids;
	int32_t max_tokens;
	sampler_params_t sp;
	char *stop[MAX_STOP];
	int n_stop;
	char id[48];
	int64_t created;
	const char *model;
	/* queue link and times (under the queue lock) */
	server_job_t *next;
	uint64_t t_enqueue;
	/* generation side, touched only by the generation thread */
	sbuf_t text;     /* every generated byte (cut at a stop string) */
	size_t emitted;  /* bytes of text already streamed */
	uint64_t t_last; /* time of the last token step (per-token latency) */
	const char *finish;
	/* shared, under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs;
	sbuf_t sse;      /* streamed bytes, sse_off of them already sent */
	size_t sse_off;
	bool done;
	int err_status;  /* nonzero: the job failed after it was accepted */
	char *err_body;
	int64_t n_prompt, n_gen;
	/* set by the HTTP side when the client went away; read by the
	 * generation thread at each token. Relaxed is enough: it only asks
	 * for an earlier stop, and mu orders everything it guards. */
	_Atomic bool cancel;
};

struct server {
	server_config_t cfg;
	chat_kind_t chat;
	int64_t created;
	_Atomic uint64_t next_id;
	/* metrics, under mmu */
	pthread_mutex_t mmu;
	uint64_t req[EP_COUNT][600];
	uint64_t tok_prompt, tok_gen, cancelled, failed;
	double prefill_tps, decode_tps;
	hist_t ttft, tpot;
	uint32_t gang_width;
	uint64_t latch_changes, joins, departures, gang_tokens;
	/* queue, under qmu */
	pthread_mutex_t qmu;
	pthread_cond_t qcv;
	server_job_t *head, *tail;
	int depth;
	bool running_job;
	/* lifecycle */
	_Atomic bool stopping; /* relaxed: polled by on_text; qmu orders the
				  queue hand-over */
	bool gen_started, gen_ready;
	int gen_rc;
	char gen_err[256];
	pthread_t gen;
	struct MHD_Daemon *mhd;
	int port;
	/* the policy runtime: generation thread only (policy/control.h) */
	policy_rt_t rt;
	bool have_rt;
};

static const char *const ep_names[EP_COUNT] = {
	"completions", "chat_completions", "models", "health", "metrics",
	"other"};

server_t *server_new(const server_config_t *cfg)
{
	if (!cfg->tok || !cfg->model_id)
		return err_set("server: a tokenizer and a model id are required"),
		       NULL;
	if (cfg->ctx < 2)
		return err_set("server: context %d is too small", cfg->ctx), NULL;
	if (cfg->max_queue < 0)
		return err_set("server: --max-queue must be >= 0"), NULL;
	if (cfg->policies && cfg->control &&
	    (cfg->policies->n_slots != (cfg->n_cpus > 1 ? cfg->n_cpus : 1) ||
	     cfg->policy_index < 0 || cfg->policy_index >= cfg->policies->n))
		return err_set("server: the policy library is for %d slots, the "
			       "gang has %d (or policy %d names no record)",
			       cfg->policies->n_slots, cfg->n_cpus, cfg->policy_index),
		       NULL;
	server_t *s = calloc(1, sizeof *s);
	if (!s)
		return err_sys("calloc"), NULL;
	s->cfg = *cfg;
	s->chat = server_chat_kind(cfg->chat_template, cfg->tok);
	s->created = (int64_t)time(NULL);
	s->ttft.le = ttft_le;
	s->ttft.n = (int)EG_ARRAY_LEN(ttft_le);
	s->tpot.le = tpot_le;
	s->tpot.n = (int)EG_ARRAY_LEN(tpot_le);
	s->gang_width = 1;
	pthread_mutex_init(&s->mmu, NULL);
	pthread_mutex_init(&s->qmu, NULL);
	pthread_cond_init(&s->qcv, NULL);
	return s;
}

/* ---- chat templates ---- */

static const char *const chat_names[CHAT_COUNT] = {"none", "chatml", "llama2",
						   "llama3", "zephyr"};

const char *server_chat_name(chat_kind_t k)
{
	return k < CHAT_COUNT ? chat_names[k] : "?";
}

chat_kind_t server_chat_kind(const char *t, const tokenizer_t *tok)
{
	if (t) {
		if (strstr(t, "<|im_start|>"))
			return CHAT_CHATML;
		if (strstr(t, "<|start_header_id|>"))
			return CHAT_LLAMA3;
		if (strstr(t, "[INST]"))
			return CHAT_LLAMA2;
		if (strstr(t, "<|user|>") && strstr(t, "<|assistant|>"))
			return CHAT_ZEPHYR;
	}
	if (tok && tokenizer_find(tok, "<|im_start|>") >= 0)
		return CHAT_CHATML;
	return CHAT_NONE;
}

/* Token ids built from text pieces and special ids; n counts every id even
 * past cap (only cap are stored), so "too long" is still measured. */
typedef struct ids_buf {
	int32_t *ids;
	int64_t n, cap;
	const tokenizer_t *tok;
	sbuf_t pend; /* text not yet encoded */
	bool bos;    /* the next encode adds BOS */
} ids_buf_t;

static int ids_flush(ids_buf_t *b)
{
	if (!b->pend.len && !b->bos)
		return 0;
	int64_t room = b->n < b->cap ? b->cap - b->n : 0;
	int64_t k = tokenizer_encode(b->tok, b->pend.p ? b->pend.p : "",
				     b->pend.len, b->bos, b->ids + (b->n < b->cap ? b->n : b->cap),
				     room);
	b->pend.len = 0;
	b->bos = false;
	if (k < 0)
		return -1;
	b->n += k;
	return 0;
}

static int ids_special(ids_buf_t *b, int32_t id)
{
	if (ids_flush(b) < 0)
		return -1;
	if (id >= 0) {
		if (b->n < b->cap)
			b->ids[b->n] = id;
		b->n++;
	}
	return 0;
}

typedef struct chat_msg {
	const char *role; /* system, user, assistant */
	const char *text;
	size_t len;
} chat_msg_t;

/* Renders the messages with template k, then the assistant's header. */
static int chat_encode(chat_kind_t k, const chat_msg_t *msg, size_t n,
		       ids_buf_t *b)
{
	const tokenizer_t *tok = b->tok;
	int32_t eos = tokenizer_eos(tok), bos = tokenizer_bos(tok);
	sbuf_t *p = &b->pend;
	b->bos = tokenizer_add_bos(tok);
	switch (k) {
	case CHAT_CHATML:
		for (size_t i = 0; i < n; i++) {
			sbuf_str(p, "<|im_start|>");
			sbuf_str(p, msg[i].role);
			sbuf_str(p, "\n");
			sbuf_add(p, msg[i].text, msg[i].len);
			sbuf_str(p, "<|im_end|>\n");
		}
		sbuf_str(p, "<|im_start|>assistant\n");
		break;
	case CHAT_LLAMA3:
		for (size_t i = 0; i < n; i++) {
			sbuf_str(p, "<|start_header_id|>");
			sbuf_str(p, msg[i].role);
			sbuf_str(p, "<|end_header_id|>\n\n");
			sbuf_add(p, msg[i].text, msg[i].len);
			sbuf_str(p, "<|eot_id|>");
		}
		sbuf_str(p, "<|start_header_id|>assistant<|end_header_id|>\n\n");
		break;
	case CHAT_ZEPHYR:
		for (size_t i = 0; i < n; i++) {
			sbuf_str(p, "<|");
			sbuf_str(p, msg[i].role);
			sbuf_str(p, "|>\n");
			sbuf_add(p, msg[i].text, msg[i].len);
			if (ids_special(b, eos) < 0)
				return -1;
			sbuf_str(p, "\n");
		}
		sbuf_str(p, "<|assistant|>\n");
		break;
	case CHAT_LLAMA2: {
		/* <s>[INST] <<SYS>>\nS\n<</SYS>>\n\nU [/INST] A </s><s>[INST] ... */
		const chat_msg_t *sys = NULL;
		bool first = true;
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(msg[i].role, "system")) {
				sys = &msg[i];
				continue;
			}
			if (!strcmp(msg[i].role, "assistant")) {
				sbuf_str(p, " ");
				sbuf_add(p, msg[i].text, msg[i].len);
				sbuf_str(p, " ");
				if (ids_special(b, eos) < 0)
					return -1;
				continue;
			}
			if (!first && ids_special(b, bos) < 0)
				return -1;
			first = false;
			sbuf_str(p, "[INST] ");
			if (sys) {
				sbuf_str(p, "<<SYS>>\n");
				sbuf_add(p, sys->text, sys->len);
				sbuf_str(p, "\n<</SYS>>\n\n");
				sys = NULL;
			}
			sbuf_add(p, msg[i].text, msg[i].len);
			sbuf_str(p, " [/INST]");
		}
		if (first) { /* no user turn at all */
			sbuf_str(p, "[INST] ");
			if (sys)
				sbuf_add(p, sys->text, sys->len);
			sbuf_str(p, " [/INST]");
		}
		break;
	}
	default:
		return err_set("no chat template");
	}
	return ids_flush(b);
}

/* ---- request validation ---- */

static bool model_known(const server_t *s, const char *name)
{
	return !strcmp(name, s->cfg.model_id) ||
	       (s->cfg.model_file && !strcmp(name, s->cfg.model_file));
}

static void job_destroy(server_job_t *j)
{
	free(j->ids);
	for (int i = 0; i < j->n_stop; i++)
		free(j->stop[i]);
	free(j->text.p);
	free(j->sse.p);
	free(j->err_body);
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv);
	free(j);
}

void server_job_free(server_job_t *j)
{
	if (j)
		job_destroy(j);
}

void server_reply_free(server_reply_t *r)
{
	free(r->body);
	r->body = NULL;
	server_job_free(r->job);
	r->job = NULL;
}

/* Fields shared by both generation endpoints; returns 0 or fills out with
 * a 400. */
static int parse_common(server_t *s, json_t *root, server_job_t *j,
			bool chat, server_reply_t *out)
{
	json_t *v;
	if ((v = json_object_get(root, "model")) && !json_is_null(v)) {
		if (!json_is_string(v)) {
			REPLY_ERR(out, 400, "model", NULL, "'model' must be a string");
			return -1;
		}
		if (!model_known(s, json_string_value(v))) {
			REPLY_ERR(out, 400, "model", "model_not_found",
				  "the model '%.100s' does not exist; this server "
				  "has '%.100s'", json_string_value(v), s->cfg.model_id);
			return -1;
		}
	}
	j->max_tokens = chat ? s->cfg.ctx : 16;
	const char *mt_name = "max_tokens";
	v = json_object_get(root, "max_tokens");
	if ((!v || json_is_null(v)) && chat) {
		v = json_object_get(root, "max_completion_tokens");
		mt_name = "max_completion_tokens";
	}
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v)) {
			REPLY_ERR(out, 400, mt_name, NULL, "'%s' must be an integer",
				  mt_name);
			return -1;
		}
		json_int_t n = json_integer_value(v);
		if (n < 1 || n > s->cfg.ctx) {
			REPLY_ERR(out, 400, mt_name, NULL,
				  "'%s' is %lld; it must be in [1, %d] (the context)",
				  mt_name, (long long)n, s->cfg.ctx);
			return -1;
		}
		j->max_tokens = (int32_t)n;
	}
	j->sp.temp = 1.0f;
	j->sp.top_p = 1.0f;
	j->sp.seed = time_now_ns() ^ atomic_load(&s->next_id) * 0x9e3779b97f4a7c15ull;
	j->sp.mode = SAMPLER_EGANG;
	if ((v = json_object_get(root, "temperature")) && !json_is_null(v)) {
		double t = json_is_number(v) ? json_number_value(v) : -1;
		if (!json_is_number(v) || !(t >= 0 && t <= 2)) {
			REPLY_ERR(out, 400, "temperature", NULL,
				  "'temperature' must be a number in [0, 2]");
			return -1;
		}
		j->sp.temp = (float)t;
	}
	if ((v = json_object_get(root, "top_p")) && !json_is_null(v)) {
		double t = json_is_number(v) ? json_number_value(v) : -1;
		if (!json_is_number(v) || !(t > 0 && t <= 1)) {
			REPLY_ERR(out, 400, "top_p", NULL,
				  "'top_p' must be a number in (0, 1]");
			return -1;
		}
		j->sp.top_p = (float)t;
	}
	if ((v = json_object_get(root, "top_k")) && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > tokenizer_n_vocab(s->cfg.tok)) {
			REPLY_ERR(out, 400, "top_k", NULL,
				  "'top_k' must be an integer in [0, %d]",
				  tokenizer_n_vocab(s->cfg.tok));
			return -1;
		}
		j->sp.top_k = (int32_t)json_integer_value(v);
	}
	if ((v = json_object_get(root, "seed")) && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			REPLY_ERR(out, 400, "seed", NULL,
				  "'seed' must be a non-negative integer");
			return -1;
		}
		j->sp.seed = (uint64_t)json_integer_value(v);
	}
	if ((v = json_object_get(root, "stream")) && !json_is_null(v)) {
		if (!json_is_boolean(v)) {
			REPLY_ERR(out, 400, "stream", NULL, "'stream' must be a boolean");
			return -1;
		}
		j->stream = json_is_true(v);
	}
	if ((v = json_object_get(root, "n")) && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) != 1) {
			REPLY_ERR(out, 400, "n", NULL, "only 'n': 1 is supported");
			return -1;
		}
	}
	if ((v = json_object_get(root, "echo")) && !json_is_null(v)) {
		if (!json_is_boolean(v) || json_is_true(v)) {
			REPLY_ERR(out, 400, "echo", NULL, "only 'echo': false is supported");
			return -1;
		}
	}
	if ((v = json_object_get(root, "stop")) && !json_is_null(v)) {
		json_t *one[1] = {v};
		json_t **list = one;
		size_t n = 1;
		if (json_is_array(v)) {
			n = json_array_size(v);
			if (n > MAX_STOP) {
				REPLY_ERR(out, 400, "stop", NULL,
					  "'stop' has %zu strings; at most %d", n, MAX_STOP);
				return -1;
			}
		}
		for (size_t i = 0; i < n; i++) {
			json_t *e = json_is_array(v) ? json_array_get(v, i) : list[0];
			if (!json_is_string(e)) {
				REPLY_ERR(out, 400, "stop", NULL,
					  "'stop' must be a string or an array of strings");
				return -1;
			}
			size_t len = json_string_length(e);
			if (len > MAX_STOP_LEN) {
				REPLY_ERR(out, 400, "stop", NULL,
					  "a stop string has %zu bytes; at most %d",
					  len, MAX_STOP_LEN);
				return -1;
			}
			if (len)
				j->stop[j->n_stop++] = strdup(json_string_value(e));
		}
	}
	return 0;
}

/* Tokenizes b's text into j->ids and checks it against the context. */
static int finish_prompt(server_t *s, server_job_t *j, ids_buf_t *b,
			 server_reply_t *out)
{
	const char *param = j->ep == EP_CHAT ? "messages" : "prompt";
	if (b->n == 0) {
		REPLY_ERR(out, 400, param, NULL,
			  "the prompt is empty and the vocabulary has no BOS token");
		return -1;
	}
	if (b->n >= s->cfg.ctx) {
		REPLY_ERR(out, 400, param, "context_length_exceeded",
			  "the prompt has %lld tokens; the context holds %d (--ctx)",
			  (long long)b->n, s->cfg.ctx);
		return -1;
	}
	j->ids = b->ids;
	j->n_ids = b->n;
	b->ids = NULL;
	return 0;
}

static void parse_completion(server_t *s, json_t *root, server_job_t *j,
			     server_reply_t *out)
{
	json_t *p = json_object_get(root, "prompt");
	if (p && json_is_array(p)) {
		if (json_array_size(p) != 1) {
			REPLY_ERR(out, 400, "prompt", NULL,
				  "'prompt' must be a string (an array of exactly one "
				  "string is accepted; this has %zu elements)",
				  json_array_size(p));
			return;
		}
		p = json_array_get(p, 0);
	}
	if (!p || !json_is_string(p)) {
		REPLY_ERR(out, 400, "prompt", NULL,
			  p ? "'prompt' must be a string" : "'prompt' is required");
		return;
	}
	if (parse_common(s, root, j, false, out) < 0)
		return;
	/* BOS always, exactly as `egang generate` encodes a prompt */
	ids_buf_t b = {.tok = s->cfg.tok, .cap = s->cfg.ctx, .bos = true};
	b.ids = malloc((size_t)b.cap * sizeof *b.ids);
	sbuf_add(&b.pend, json_string_value(p), json_string_length(p));
	if (ids_flush(&b) < 0)
		REPLY_ERR(out, 400, "prompt", NULL, "%s", err_get());
	else
		finish_prompt(s, j, &b, out);
	free(b.ids);
	free(b.pend.p);
}

static void parse_chat(server_t *s, json_t *root, server_job_t *j,
		       server_reply_t *out)
{
	json_t *ms = json_object_get(root, "messages");
	if (!ms || !json_is_array(ms) || !json_array_size(ms)) {
		REPLY_ERR(out, 400, "messages", NULL,
			  "'messages' must be a non-empty array");
		return;
	}
	if (s->chat == CHAT_NONE) {
		REPLY_ERR(out, 400, "messages", "no_chat_template",
			  "model '%s' has no chat template egang can apply (its "
			  "tokenizer.chat_template is absent or not ChatML, Llama 2, "
			  "Llama 3 or Zephyr, and its vocabulary has no <|im_start|>); "
			  "use /v1/completions", s->cfg.model_id);
		return;
	}
	size_t n = json_array_size(ms);
	chat_msg_t *msg = calloc(n, sizeof *msg);
	sbuf_t parts = {0}; /* concatenated content parts */
	size_t *part_off = calloc(n, sizeof *part_off);
	for (size_t i = 0; i < n; i++) {
		json_t *m = json_array_get(ms, i);
		json_t *role = json_object_get(m, "role");
		json_t *content = json_object_get(m, "content");
		if (!json_is_object(m) || !json_is_string(role)) {
			REPLY_ERR(out, 400, "messages", NULL,
				  "messages[%zu] must be an object with a string 'role'", i);
			goto out;
		}
		const char *r = json_string_value(role);
		if (!strcmp(r, "developer"))
			r = "system";
		if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant")) {
			REPLY_ERR(out, 400, "messages", NULL,
				  "messages[%zu].role '%.40s' is not system, user or "
				  "assistant", i, r);
			goto out;
		}
		msg[i].role = r;
		if (json_is_string(content)) {
			msg[i].text = json_string_value(content);
			msg[i].len = json_string_length(content);
		} else if (json_is_null(content) && !strcmp(r, "assistant")) {
			msg[i].text = "";
		} else if (json_is_array(content)) {
			part_off[i] = parts.len + 1; /* +1: 0 means none */
			for (size_t k = 0; k < json_array_size(content); k++) {
				json_t *pt = json_array_get(content, k);
				json_t *type = json_object_get(pt, "type");
				json_t *tx = json_object_get(pt, "text");
				if (!json_is_string(type) ||
				    strcmp(json_string_value(type), "text") ||
				    !json_is_string(tx)) {
					REPLY_ERR(out, 400, "messages", NULL,
						  "messages[%zu].content[%zu] must be "
						  "{\"type\":\"text\",\"text\":STRING}", i, k);
					goto out;
				}
				sbuf_add(&parts, json_string_value(tx),
					 json_string_length(tx));
			}
			msg[i].len = parts.len + 1 - part_off[i];
		} else {
			REPLY_ERR(out, 400, "messages", NULL,
				  "messages[%zu].content must be a string or an array "
				  "of text parts", i);
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++) /* parts may have moved while growing */
		if (part_off[i])
			msg[i].text = parts.p ? parts.p + part_off[i] - 1 : "";
	if (parse_common(s, root, j, true, out) < 0)
		goto out;
	ids_buf_t b = {.tok = s->cfg.tok, .cap = s->cfg.ctx};
	b.ids = malloc((size_t)b.cap * sizeof *b.ids);
	if (chat_encode(s->chat, msg, n, &b) < 0)
		REPLY_ERR(out, 400, "messages", NULL, "%s", err_get());
	else
		finish_prompt(s, j, &b, out);
	free(b.ids);
	free(b.pend.p);
out:
	free(parts.p);
	free(part_off);
	free(msg);
}

static server_endpoint_t route(const char *path)
{
	if (!strcmp(path, "/v1/completions"))
		return EP_COMPLETIONS;
	if (!strcmp(path, "/v1/chat/completions"))
		return EP_CHAT;
	if (!strcmp(path, "/v1/models") || !strncmp(path, "/v1/models/", 11))
		return EP_MODELS;
	if (!strcmp(path, "/health"))
		return EP_HEALTH;
	if (!strcmp(path, "/metrics"))
		return EP_METRICS;
	return EP_OTHER;
}

/* Constant-time comparison of the bearer token with the key. */
static bool auth_ok(const char *key, const char *auth)
{
	if (!key)
		return true;
	if (!auth || strncmp(auth, "Bearer ", 7))
		return false;
	auth += 7;
	size_t la = strlen(auth), lk = strlen(key);
	unsigned diff = (unsigned)(la != lk);
	for (size_t i = 0; i < lk; i++)
		diff |= (unsigned char)key[i] ^ (unsigned char)(i < la ? auth[i] : 0);
	return diff == 0;
}

static json_t *model_object(const server_t *s)
{
	return json_pack("{s:s, s:s, s:I, s:s}", "id", s->cfg.model_id, "object",
			 "model", "created", (json_int_t)s->created, "owned_by",
			 "egang");
}

void server_handle_json(server_t *s, const char *method, const char *path,
			const char *auth, const char *body, size_t len,
			server_reply_t *out)
{
	memset(out, 0, sizeof *out);
	out->content_type = "application/json";
	server_endpoint_t ep = route(path ? path : "");
	out->endpoint = ep;
	method = method ? method : "";
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	bool post = !strcmp(method, "POST");
	if (ep != EP_HEALTH && !auth_ok(s->cfg.api_key, auth)) {
		REPLY_ERR(out, 401, NULL, "invalid_api_key",
			  "missing or wrong API key: send 'Authorization: Bearer KEY'");
		return;
	}
	switch (ep) {
	case EP_OTHER:
		REPLY_ERR(out, 404, NULL, "not_found", "no endpoint %.200s",
			  path ? path : "");
		return;
	case EP_COMPLETIONS:
	case EP_CHAT:
		if (!post) {
			out->allow = "POST";
			REPLY_ERR(out, 405, NULL, "method_not_allowed",
				  "%.200s takes POST, not %.20s", path, method);
			return;
		}
		break;
	default:
		if (!get) {
			out->allow = "GET, HEAD";
			REPLY_ERR(out, 405, NULL, "method_not_allowed",
				  "%.200s takes GET, not %.20s", path, method);
			return;
		}
		break;
	}
	if (ep == EP_HEALTH) {
		bool stopping = atomic_load_explicit(&s->stopping, memory_order_relaxed);
		pthread_mutex_lock(&s->qmu);
		int depth = s->depth;
		bool busy = s->running_job;
		pthread_mutex_unlock(&s->qmu);
		out->status = stopping ? 503 : 200;
		out->body = json_take_dump(json_pack(
			"{s:s, s:s, s:i, s:b}", "status",
			stopping ? "stopping" : "ok", "model", s->cfg.model_id,
			"queue", depth, "busy", busy));
		return;
	}
	if (ep == EP_METRICS) {
		out->status = 200;
		out->content_type = "text/plain; version=0.0.4; charset=utf-8";
		out->body = server_metrics_text(s);
		return;
	}
	if (ep == EP_MODELS) {
		if (path[10] == '/') {
			const char *name = path + 11;
			if (!model_known(s, name)) {
				REPLY_ERR(out, 404, "model", "model_not_found",
					  "the model '%.100s' does not exist", name);
				return;
			}
			out->status = 200;
			out->body = json_take_dump(model_object(s));
			return;
		}
		json_t *data = json_array();
		json_array_append_new(data, model_object(s));
		out->status = 200;
		out->body = json_take_dump(
			json_pack("{s:s, s:o}", "object", "list", "data", data));
		return;
	}
	/* a generation */
	json_error_t jerr;
	json_t *root = body && len ? json_loadb(body, len, 0, &jerr) : NULL;
	if (!root) {
		if (!body || !len)
			REPLY_ERR(out, 400, NULL, NULL, "the request body is empty; "
				  "send a JSON object");
		else
			REPLY_ERR(out, 400, NULL, "invalid_json",
				  "malformed JSON at line %d column %d: %s",
				  jerr.line, jerr.column, jerr.text);
		return;
	}
	if (!json_is_object(root)) {
		REPLY_ERR(out, 400, NULL, NULL, "the body must be a JSON object");
		json_decref(root);
		return;
	}
	server_job_t *j = calloc(1, sizeof *j);
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->ep = ep;
	j->model = s->cfg.model_id;
	j->created = (int64_t)time(NULL);
	j->refs = 1;
	snprintf(j->id, sizeof j->id, "%s-%llu",
		 ep == EP_CHAT ? "chatcmpl" : "cmpl",
		 (unsigned long long)atomic_fetch_add(&s->next_id, 1));
	if (ep == EP_CHAT)
		parse_chat(s, root, j, out);
	else
		parse_completion(s, root, j, out);
	json_decref(root);
	if (out->body) {
		job_destroy(j);
		return;
	}
	out->status = 200;
	out->job = j;
}

/* ---- metrics ---- */

void server_count(server_t *s, server_endpoint_t ep, int status)
{
	if (ep >= EP_COUNT || status < 100 || status > 599)
		return;
	pthread_mutex_lock(&s->mmu);
	s->req[ep][status]++;
	pthread_mutex_unlock(&s->mmu);
}

static long rss_bytes(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return 0;
	char line[256];
	long kb = 0;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "VmRSS:", 6)) {
			kb = strtol(line + 6, NULL, 10);
			break;
		}
	fclose(f);
	return kb * 1024;
}

static void metric_head(FILE *f, const char *name, const char *type,
			const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void hist_print(FILE *f, const char *name, const char *help,
		       const hist_t *h)
{
	metric_head(f, name, "histogram", help);
	uint64_t cum = 0;
	for (int i = 0; i < h->n; i++) {
		cum += h->counts[i];
		fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name, h->le[i],
			(unsigned long long)cum);
	}
	cum += h->counts[h->n];
	fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n%s_count %llu\n",
		name, (unsigned long long)cum, name, h->sum, name,
		(unsigned long long)h->count);
}

char *server_metrics_text(server_t *s)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort();
	pthread_mutex_lock(&s->qmu);
	int depth = s->depth;
	bool busy = s->running_job;
	pthread_mutex_unlock(&s->qmu);
	pthread_mutex_lock(&s->mmu);
	metric_head(f, "egang_requests_total", "counter",
		    "HTTP requests answered, by endpoint and status.");
	for (int e = 0; e < EP_COUNT; e++)
		for (int st = 100; st < 600; st++)
			if (s->req[e][st])
				fprintf(f, "egang_requests_total{endpoint=\"%s\","
					   "status=\"%d\"} %llu\n", ep_names[e], st,
					(unsigned long long)s->req[e][st]);
	metric_head(f, "egang_prompt_tokens_total", "counter",
		    "Prompt tokens processed (BOS included).");
	fprintf(f, "egang_prompt_tokens_total %llu\n", (unsigned long long)s->tok_prompt);
	metric_head(f, "egang_generated_tokens_total", "counter",
		    "Tokens generated.");
	fprintf(f, "egang_generated_tokens_total %llu\n", (unsigned long long)s->tok_gen);
	metric_head(f, "egang_generations_cancelled_total", "counter",
		    "Generations cut short by a client that went away or by shutdown.");
	fprintf(f, "egang_generations_cancelled_total %llu\n",
		(unsigned long long)s->cancelled);
	metric_head(f, "egang_generations_failed_total", "counter",
		    "Generations that failed after they were accepted.");
	fprintf(f, "egang_generations_failed_total %llu\n", (unsigned long long)s->failed);
	metric_head(f, "egang_prefill_tokens_per_second", "gauge",
		    "Prompt tokens per second of the last generation.");
	fprintf(f, "egang_prefill_tokens_per_second %.6g\n", s->prefill_tps);
	metric_head(f, "egang_decode_tokens_per_second", "gauge",
		    "Decode tokens per second of the last generation.");
	fprintf(f, "egang_decode_tokens_per_second %.6g\n", s->decode_tps);
	hist_print(f, "egang_time_to_first_token_seconds",
		   "From a request's enqueue to its first generated token.", &s->ttft);
	hist_print(f, "egang_time_per_output_token_seconds",
		   "Wall time of each decode step.", &s->tpot);
	metric_head(f, "egang_queue_depth", "gauge",
		    "Requests waiting behind the running generation.");
	fprintf(f, "egang_queue_depth %d\n", depth);
	metric_head(f, "egang_queue_capacity", "gauge", "--max-queue.");
	fprintf(f, "egang_queue_capacity %d\n", s->cfg.max_queue);
	metric_head(f, "egang_generation_running", "gauge",
		    "1 while a generation runs on the gang.");
	fprintf(f, "egang_generation_running %d\n", busy ? 1 : 0);
	metric_head(f, "egang_gang_width", "gauge",
		    "Cores in the last token's latch (popcount of its mask).");
	fprintf(f, "egang_gang_width %u\n", s->gang_width);
	metric_head(f, "egang_gang_tokens_total", "counter", "Tokens run on the gang.");
	fprintf(f, "egang_gang_tokens_total %llu\n", (unsigned long long)s->gang_tokens);
	metric_head(f, "egang_gang_latch_changes_total", "counter",
		    "Tokens whose participant mask differed from the previous one.");
	fprintf(f, "egang_gang_latch_changes_total %llu\n",
		(unsigned long long)s->latch_changes);
	metric_head(f, "egang_gang_joins_total", "counter", "Cores that entered the latch.");
	fprintf(f, "egang_gang_joins_total %llu\n", (unsigned long long)s->joins);
	metric_head(f, "egang_gang_departures_total", "counter", "Cores that left the latch.");
	fprintf(f, "egang_gang_departures_total %llu\n", (unsigned long long)s->departures);
	pthread_mutex_unlock(&s->mmu);
	/* the control word's telemetry: relaxed loads, each field on its own
	 * (single writer, the generation thread; policy/control.h) */
	control_word_t *cw = s->cfg.policies ? s->cfg.control : NULL;
#define CW(field) (cw ? (unsigned long long)atomic_load_explicit(&cw->field, \
					memory_order_relaxed) : 0ull)
	metric_head(f, "egang_policy_index", "gauge",
		    "The policy record in force (egang policy list).");
	fprintf(f, "egang_policy_index %llu\n",
		cw ? CW(effective) : (unsigned long long)s->cfg.policy_index);
	metric_head(f, "egang_policy_requested_index", "gauge",
		    "The raw index in the control word (may name no record).");
	fprintf(f, "egang_policy_requested_index %llu\n",
		cw ? CW(index) : (unsigned long long)s->cfg.policy_index);
	metric_head(f, "egang_policy_invalid_index_total", "counter",
		    "Token-boundary reads of an index that names no validated "
		    "record (the default policy ran instead).");
	fprintf(f, "egang_policy_invalid_index_total %llu\n", CW(invalid_reads));
	metric_head(f, "egang_policy_guard_fallbacks_total", "counter",
		    "Times the leader's guard fell back to the default policy.");
	fprintf(f, "egang_policy_guard_fallbacks_total %llu\n", CW(guard_fallbacks));
	metric_head(f, "egang_policy_guard_fallback", "gauge",
		    "1 while the guard's fallback to the default policy holds.");
	fprintf(f, "egang_policy_guard_fallback %llu\n", CW(fallback));
#undef CW
	metric_head(f, "process_resident_memory_bytes", "gauge",
		    "Resident set size (VmRSS).");
	fprintf(f, "process_resident_memory_bytes %ld\n", rss_bytes());
	fclose(f);
	return text;
}

/* ---- the queue and the generation thread ---- */

static void job_release(server_job_t *j)
{
	pthread_mutex_lock(&j->mu);
	int left = --j->refs;
	pthread_mutex_unlock(&j->mu);
	if (!left)
		job_destroy(j);
}

/* 0 queued; 429 full; 503 stopping. Takes a reference for the queue. */
static int enqueue(server_t *s, server_job_t *j)
{
	pthread_mutex_lock(&s->qmu);
	int rc = 0;
	if (atomic_load_explicit(&s->stopping, memory_order_relaxed) || !s->gen_ready)
		rc = 503;
	else if (s->depth >= s->cfg.max_queue && (s->running_job || s->depth > 0))
		rc = 429; /* max_queue waiting behind a running one */
	if (!rc) {
		j->refs++; /* no other thread sees j yet */
		j->t_enqueue = time_now_ns();
		j->next = NULL;
		if (s->tail)
			s->tail->next = j;
		else
			s->head = j;
		s->tail = j;
		s->depth++;
		pthread_cond_signal(&s->qcv);
	}
	pthread_mutex_unlock(&s->qmu);
	return rc;
}

/* Appends an SSE event "data: JSON\n\n" (takes json). */
static void sse_event(server_job_t *j, json_t *json)
{
	char *s = json_take_dump(json);
	pthread_mutex_lock(&j->mu);
	if (j->sse_off == j->sse.len)
		j->sse_off = j->sse.len = 0; /* all sent: reuse the buffer */
	sbuf_str(&j->sse, "data: ");
	sbuf_str(&j->sse, s);
	sbuf_str(&j->sse, "\n\n");
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	free(s);
}

static json_t *chunk_json(server_job_t *j, const char *text, size_t n,
			  const char *finish, bool role)
{
	json_t *choice = json_object();
	json_object_set_new(choice, "index", json_integer(0));
	if (j->ep == EP_CHAT) {
		json_t *delta = json_object();
		if (role)
			json_object_set_new(delta, "role", json_string("assistant"));
		if (text)
			json_object_set_new(delta, "content", json_lossy(text, n));
		json_object_set_new(choice, "delta", delta);
	} else {
		json_object_set_new(choice, "text", json_lossy(text ? text : "", n));
	}
	json_object_set_new(choice, "logprobs", json_null());
	json_object_set_new(choice, "finish_reason",
			    finish ? json_string(finish) : json_null());
	json_t *choices = json_array();
	json_array_append_new(choices, choice);
	return json_pack("{s:s, s:s, s:I, s:s, s:o}", "id", j->id, "object",
			 j->ep == EP_CHAT ? "chat.completion.chunk" : "text_completion",
			 "created", (json_int_t)j->created, "model", j->model,
			 "choices", choices);
}

static json_t *usage_json(int64_t np, int64_t ng)
{
	return json_pack("{s:I, s:I, s:I}", "prompt_tokens", (json_int_t)np,
			 "completion_tokens", (json_int_t)ng, "total_tokens",
			 (json_int_t)(np + ng));
}

/* Streams text[emitted..to) as one chunk. */
static void stream_upto(server_job_t *j, size_t to)
{
	if (to <= j->emitted)
		return;
	if (j->stream)
		sse_event(j, chunk_json(j, j->text.p + j->emitted, to - j->emitted,
					NULL, false));
	j->emitted = to;
}

typedef struct gen_ctx {
	server_t *s;
	server_job_t *j;
} gen_ctx_t;

static void gen_before_token(void *user, uint64_t pos)
{
	gen_ctx_t *c = user;
	if (c->s->have_rt)
		policy_rt_before_token(&c->s->rt, pos);
	uint64_t now = time_now_ns();
	if (pos >= (uint64_t)c->j->n_ids && c->j->t_last) {
		pthread_mutex_lock(&c->s->mmu);
		hist_observe(&c->s->tpot, (double)(now - c->j->t_last) / 1e9);
		pthread_mutex_unlock(&c->s->mmu);
	}
	c->j->t_last = now;
}

/* One generated piece: append, cut at a stop string, stream what can no
 * longer become part of a stop string or of an unfinished UTF-8 sequence. */
static int gen_on_text(void *user, const char *piece, size_t n)
{
	gen_ctx_t *c = user;
	server_job_t *j = c->j;
	if (atomic_load_explicit(&j->cancel, memory_order_relaxed) ||
	    atomic_load_explicit(&c->s->stopping, memory_order_relaxed))
		return 1;
	sbuf_add(&j->text, piece, n);
	size_t len = j->text.len, hold = 0;
	size_t from = j->emitted > MAX_STOP_LEN ? j->emitted - MAX_STOP_LEN : 0;
	const char *best = NULL;
	for (int i = 0; i < j->n_stop; i++) {
		size_t sl = strlen(j->stop[i]);
		const char *p = memmem(j->text.p + from, len - from, j->stop[i], sl);
		if (p && (!best || p < best))
			best = p;
		/* the longest tail of the text that begins this stop string */
		for (size_t k = sl - 1; k > hold; k--)
			if (k <= len && !memcmp(j->text.p + len - k, j->stop[i], k)) {
				hold = k;
				break;
			}
	}
	if (best) {
		j->text.len = (size_t)(best - j->text.p);
		j->text.p[j->text.len] = '\0';
		j->finish = "stop";
		stream_upto(j, utf8_cut(j->text.p, j->emitted, j->text.len));
		return 1;
	}
	stream_upto(j, utf8_cut(j->text.p, j->emitted, len - hold));
	return 0;
}

static void job_fail(server_t *s, server_job_t *j, int status, const char *msg)
{
	char *body = error_body(status, NULL, NULL, "%s", msg);
	if (j->stream) {
		json_t *e = json_loads(body, 0, NULL);
		sse_event(j, e);
		pthread_mutex_lock(&j->mu);
		sbuf_str(&j->sse, "data: [DONE]\n\n");
		pthread_mutex_unlock(&j->mu);
	}
	pthread_mutex_lock(&s->mmu);
	s->failed += status == 500;
	s->cancelled += status == 503;
	pthread_mutex_unlock(&s->mmu);
	pthread_mutex_lock(&j->mu);
	j->err_status = status;
	j->err_body = body;
	j->done = true;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

static void gen_run(server_t *s, forward_t *f, gang_t *g, server_job_t *j)
{
	if (j->stream && j->ep == EP_CHAT)
		sse_event(j, chunk_json(j, "", 0, NULL, true));
	gen_ctx_t c = {s, j};
	engine_params_t ep = {
		.prompt_ids = j->ids,
		.n_prompt_ids = j->n_ids,
		.n_predict = j->max_tokens,
		.sampler = j->sp,
		.before_token = gen_before_token,
		.on_text = gen_on_text,
		.user = &c,
	};
	uint64_t t0 = time_now_ns();
	engine_result_t r;
	if (engine_generate(s->cfg.m, f, g, &ep, &r) < 0) {
		job_fail(s, j, 500, err_get());
		return;
	}
	bool cancelled = r.stop == STOP_CANCEL && !j->finish;
	if (!j->finish)
		j->finish = r.stop == STOP_EOS ? "stop" : "length";
	stream_upto(j, j->text.len); /* the held-back tail, if any */
	if (j->stream) {
		json_t *last = chunk_json(j, j->ep == EP_CHAT ? NULL : "", 0,
					  j->finish, false);
		json_object_set_new(last, "usage", usage_json(r.n_prompt, r.n_gen));
		sse_event(j, last);
	}
	pthread_mutex_lock(&s->mmu);
	s->tok_prompt += (uint64_t)r.n_prompt;
	s->tok_gen += (uint64_t)r.n_gen;
	s->cancelled += cancelled;
	if (r.prefill_s > 0)
		s->prefill_tps = (double)r.n_prompt / r.prefill_s;
	if (r.decode_s > 0 && r.decode_steps > 0)
		s->decode_tps = (double)r.decode_steps / r.decode_s;
	double ttft_s = r.n_gen > 0 ? (double)(t0 - j->t_enqueue) / 1e9 + r.first_token_s
				    : -1;
	if (r.n_gen > 0)
		hist_observe(&s->ttft, ttft_s);
	if (g) {
		gang_stats_t st;
		gang_stats(g, &st);
		s->gang_width = (uint32_t)__builtin_popcount(st.last_mask);
		s->latch_changes = st.latch_changes;
		s->joins = st.joins;
		s->departures = st.departures;
		s->gang_tokens = st.tokens;
	} else {
		s->gang_tokens += (uint64_t)(r.n_prompt + r.decode_steps);
	}
	double decode_tps = s->decode_tps;
	pthread_mutex_unlock(&s->mmu);
	if (s->have_rt) {
		pthread_mutex_lock(&s->qmu);
		uint32_t depth = (uint32_t)s->depth;
		pthread_mutex_unlock(&s->qmu);
		/* the guard's check: once per generation end */
		policy_rt_generation_end(&s->rt, ttft_s, decode_tps, depth);
	}
	pthread_mutex_lock(&j->mu);
	if (j->stream)
		sbuf_str(&j->sse, "data: [DONE]\n\n");
	j->n_prompt = r.n_prompt;
	j->n_gen = r.n_gen;
	j->done = true;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	engine_result_free(&r);
}

static void *gen_main(void *arg)
{
	server_t *s = arg;
	const server_config_t *cfg = &s->cfg;
	forward_t *f = forward_new(cfg->m, cfg->ctx, 0);
	gang_t *g = NULL;
	int rc = f ? 0 : -1;
	if (!rc && cfg->n_cpus > 1) {
		gang_config_t gc = {.cpus = cfg->cpus, .n_cpus = cfg->n_cpus, .pin = true};
		if (cfg->policies && cfg->control)
			gc.keep_us = policy_keep_us(cfg->policies,
						    (uint32_t)cfg->policy_index);
		g = gang_init(&gc); /* pins this thread as the leader */
		if (!g)
			rc = -1;
		else
			gang_request(g, cfg->static_k ? (1u << cfg->static_k) - 1
						       : gang_all(g));
	}
	if (!rc && cfg->policies && cfg->control) {
		policy_rt_init(&s->rt, cfg->policies, cfg->control, g);
		s->have_rt = true;
	}
	pthread_mutex_lock(&s->qmu);
	s->gen_rc = rc;
	if (rc)
		snprintf(s->gen_err, sizeof s->gen_err, "%s", err_get());
	s->gen_ready = true;
	pthread_cond_broadcast(&s->qcv);
	pthread_mutex_unlock(&s->qmu);
	if (g) {
		pthread_mutex_lock(&s->mmu);
		s->gang_width = (uint32_t)__builtin_popcount(gang_requested(g));
		pthread_mutex_unlock(&s->mmu);
	}
	while (!rc) {
		pthread_mutex_lock(&s->qmu);
		while (!s->head && !atomic_load_explicit(&s->stopping, memory_order_relaxed))
			pthread_cond_wait(&s->qcv, &s->qmu);
		server_job_t *j = s->head;
		if (!j) { /* stopping and drained */
			pthread_mutex_unlock(&s->qmu);
			break;
		}
		s->head = j->next;
		if (!s->head)
			s->tail = NULL;
		s->depth--;
		s->running_job = true;
		pthread_mutex_unlock(&s->qmu);
		if (atomic_load_explicit(&s->stopping, memory_order_relaxed))
			job_fail(s, j, 503, "the server is shutting down");
		else if (atomic_load_explicit(&j->cancel, memory_order_relaxed))
			job_fail(s, j, 503, "the client went away");
		else
			gen_run(s, f, g, j);
		pthread_mutex_lock(&s->qmu);
		s->running_job = false;
		pthread_mutex_unlock(&s->qmu);
		job_release(j);
	}
	gang_free(g);
	forward_free(f);
	return NULL;
}

/* ---- HTTP ---- */

typedef struct conn_state {
	sbuf_t body;
	size_t seen;   /* body bytes received */
	bool too_big;
	bool answered; /* a response was queued early (413) */
} conn_state_t;

static enum MHD_Result send_reply(struct MHD_Connection *c, int status,
				  const char *ctype, const char *allow, char *body)
{
	size_t n = strlen(body);
	struct MHD_Response *r =
		MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_error(server_t *s, struct MHD_Connection *c,
				  server_endpoint_t ep, int status,
				  const char *msg)
{
	server_count(s, ep, status);
	return send_reply(c, status, "application/json", NULL,
			  error_body(status, NULL, NULL, "%s", msg));
}

/* The SSE body: blocks (this connection's own thread) until bytes are
 * ready; a comment line every KEEPALIVE_MS keeps the connection active
 * while the job waits, and lets a closed connection be noticed. */
static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	server_job_t *j = cls;
	pthread_mutex_lock(&j->mu);
	if (j->sse_off == j->sse.len && !j->done) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += KEEPALIVE_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		while (j->sse_off == j->sse.len && !j->done)
			if (pthread_cond_timedwait(&j->cv, &j->mu, &ts) == ETIMEDOUT)
				break;
	}
	if (j->sse_off < j->sse.len) {
		size_t n = j->sse.len - j->sse_off;
		if (n > max)
			n = max;
		memcpy(buf, j->sse.p + j->sse_off, n);
		j->sse_off += n;
		pthread_mutex_unlock(&j->mu);
		return (ssize_t)n;
	}
	bool done = j->done;
	pthread_mutex_unlock(&j->mu);
	if (done)
		return MHD_CONTENT_READER_END_OF_STREAM;
	static const char ka[] = ": keep-alive\n\n";
	size_t n = sizeof ka - 1 < max ? sizeof ka - 1 : max;
	memcpy(buf, ka, n);
	return (ssize_t)n;
}

/* The response is gone (sent, or the client closed): stop generating. */
static void sse_free(void *cls)
{
	server_job_t *j = cls;
	atomic_store_explicit(&j->cancel, true, memory_order_relaxed);
	job_release(j);
}

static char *final_body(server_job_t *j)
{
	json_t *choice = json_object();
	json_object_set_new(choice, "index", json_integer(0));
	json_t *text = json_lossy(j->text.p ? j->text.p : "", j->text.len);
	if (j->ep == EP_CHAT)
		json_object_set_new(choice, "message",
				    json_pack("{s:s, s:o}", "role", "assistant",
					      "content", text));
	else
		json_object_set_new(choice, "text", text);
	json_object_set_new(choice, "logprobs", json_null());
	json_object_set_new(choice, "finish_reason", json_string(j->finish));
	json_t *choices = json_array();
	json_array_append_new(choices, choice);
	return json_take_dump(json_pack(
		"{s:s, s:s, s:I, s:s, s:o, s:o}", "id", j->id, "object",
		j->ep == EP_CHAT ? "chat.completion" : "text_completion",
		"created", (json_int_t)j->created, "model", j->model, "choices",
		choices, "usage", usage_json(j->n_prompt, j->n_gen)));
}

/* True once the client has closed its end of the connection (or it broke). */
static bool peer_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Waits for a non-streaming job to finish. Its client sees nothing until
 * then, so the only sign that it went away is its socket: checked every
 * 100 ms, a hang-up cancels the job (counted as cancelled), which then
 * ends at its next token. */
static void wait_for_job(struct MHD_Connection *c, server_job_t *j)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	int fd = ci ? ci->connect_fd : -1;
	pthread_mutex_lock(&j->mu);
	while (!j->done) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts); /* the condvar's clock */
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&j->cv, &j->mu, &ts);
		if (!j->done && fd >= 0 && peer_gone(fd))
			atomic_store_explicit(&j->cancel, true, memory_order_relaxed);
	}
	pthread_mutex_unlock(&j->mu);
}

static enum MHD_Result http_handler(void *cls, struct MHD_Connection *c,
				    const char *url, const char *method,
				    const char *version, const char *upload,
				    size_t *upload_size, void **con_cls)
{
	(void)version;
	server_t *s = cls;
	conn_state_t *cs = *con_cls;
	if (!cs) {
		cs = calloc(1, sizeof *cs);
		if (!cs)
			return MHD_NO;
		*con_cls = cs;
		const char *cl = MHD_lookup_connection_value(
			c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > DISCARD_MAX) {
			/* answered before the body is read: the connection
			 * closes after the reply. Smaller bodies over the cap
			 * are read and dropped first, so that a client that
			 * sends before it reads still gets the 413. */
			cs->answered = true;
			char msg[96];
			snprintf(msg, sizeof msg, "the request body is over %u bytes",
				 SERVER_MAX_BODY);
			return send_error(s, c, route(url), 413, msg);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		cs->seen += n;
		if (cs->answered)
			return cs->seen > DISCARD_MAX ? MHD_NO : MHD_YES;
		if (cs->seen > SERVER_MAX_BODY) {
			cs->too_big = true;
			free(cs->body.p);
			cs->body = (sbuf_t){0};
			return cs->seen > DISCARD_MAX ? MHD_NO : MHD_YES;
		}
		sbuf_add(&cs->body, upload, n);
		return MHD_YES;
	}
	if (cs->answered)
		return MHD_YES;
	if (cs->too_big) {
		char msg[96];
		snprintf(msg, sizeof msg, "the request body is over %u bytes",
			 SERVER_MAX_BODY);
		return send_error(s, c, route(url), 413, msg);
	}
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						       MHD_HTTP_HEADER_AUTHORIZATION);
	server_reply_t rep;
	server_handle_json(s, method, url, auth, cs->body.p, cs->body.len, &rep);
	if (!rep.job) {
		server_count(s, rep.endpoint, rep.status);
		char *body = rep.body;
		rep.body = NULL;
		return send_reply(c, rep.status, rep.content_type, rep.allow, body);
	}
	server_job_t *j = rep.job;
	int q = enqueue(s, j);
	if (q) {
		server_job_free(j);
		return send_error(s, c, rep.endpoint, q,
				  q == 429 ? "the request queue is full; retry later"
					   : "the server is shutting down");
	}
	if (j->stream) {
		struct MHD_Response *r = MHD_create_response_from_callback(
			MHD_SIZE_UNKNOWN, 4096, sse_read, j, sse_free);
		if (!r) {
			atomic_store_explicit(&j->cancel, true, memory_order_relaxed);
			job_release(j);
			return MHD_NO;
		}
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
					"text/event-stream");
		MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
		server_count(s, rep.endpoint, 200);
		enum MHD_Result ret = MHD_queue_response(c, 200, r);
		MHD_destroy_response(r);
		return ret;
	}
	wait_for_job(c, j);
	int status = j->err_status ? j->err_status : 200;
	char *body = j->err_status ? strdup(j->err_body) : final_body(j);
	job_release(j);
	/* the wait was not idleness: restart the connection's timeout clock
	 * (setting a timeout after 0 resets it) */
	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
				  (unsigned)s->cfg.timeout_s);
	server_count(s, rep.endpoint, status);
	return send_reply(c, status, "application/json", NULL, body);
}

static void http_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			   enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)c;
	(void)toe;
	conn_state_t *cs = *con_cls;
	if (cs) {
		free(cs->body.p);
		free(cs);
		*con_cls = NULL;
	}
}

static void http_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	(void)fmt;
	(void)ap; /* MHD's own messages (client errors) are not ours to print */
}

int server_start(server_t *s)
{
	const server_config_t *cfg = &s->cfg;
	if (!cfg->m)
		return err_set("server_start: no model");
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} addr;
	memset(&addr, 0, sizeof addr);
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
	const char *host = cfg->host ? cfg->host : "127.0.0.1";
	if (inet_pton(AF_INET, host, &addr.v4.sin_addr) == 1) {
		addr.v4.sin_family = AF_INET;
		addr.v4.sin_port = htons((uint16_t)cfg->port);
	} else if (inet_pton(AF_INET6, host, &addr.v6.sin6_addr) == 1) {
		addr.v6.sin6_family = AF_INET6;
		addr.v6.sin6_port = htons((uint16_t)cfg->port);
		flags |= MHD_USE_IPv6;
	} else {
		return err_set("--host '%s' is not a numeric IPv4 or IPv6 address",
			       host);
	}
	if (pthread_create(&s->gen, NULL, gen_main, s))
		return err_sys("pthread_create");
	s->gen_started = true;
	pthread_mutex_lock(&s->qmu);
	while (!s->gen_ready)
		pthread_cond_wait(&s->qcv, &s->qmu);
	int rc = s->gen_rc;
	pthread_mutex_unlock(&s->qmu);
	if (rc) {
		pthread_join(s->gen, NULL);
		s->gen_started = false;
		return err_set("%s", s->gen_err);
	}
	s->mhd = MHD_start_daemon(
		flags, (uint16_t)cfg->port, NULL, NULL, http_handler, s,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout_s,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_conns,
		MHD_OPTION_NOTIFY_COMPLETED, http_completed, s,
		MHD_OPTION_EXTERNAL_LOGGER, http_log, s, MHD_OPTION_END);
	if (!s->mhd) {
		server_stop(s);
		return err_set("cannot listen on %s port %d (in use, or not "
			       "allowed)", host, cfg->port);
	}
	const union MHD_DaemonInfo *di =
		MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
	s->port = di ? di->port : cfg->port;
	return 0;
}

int server_port(const server_t *s) { return s->port; }

void server_stop(server_t *s)
{
	pthread_mutex_lock(&s->qmu);
	atomic_store_explicit(&s->stopping, true, memory_order_relaxed);
	pthread_cond_broadcast(&s->qcv);
	pthread_mutex_unlock(&s->qmu);
	if (s->gen_started) { /* cancels the running job, fails the queued */
		pthread_join(s->gen, NULL);
		s->gen_started = false;
	}
	if (s->mhd) { /* every waiting handler has its answer now */
		MHD_stop_daemon(s->mhd);
		s->mhd = NULL;
	}
}

void server_free(server_t *s)
{
	if (!s)
		return;
	server_stop(s);
	pthread_mutex_destroy(&s->mmu);
	pthread_mutex_destroy(&s->qmu);
	pthread_cond_destroy(&s->qcv);
	free(s);
}
