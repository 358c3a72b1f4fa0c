/* server: the server object, byte buffers and JSON replies (see
 * server_impl.h for the tour of the server's files). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "model/utf8.h"
#include "server/server_impl.h"

/* ---- growable byte buffer ---- */

void sbuf_add(sbuf_t *b, const char *s, size_t n)
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

void sbuf_str(sbuf_t *b, const char *s) { sbuf_add(b, s, strlen(s)); }

/* ---- replies ---- */

char *json_take_dump(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!s)
		abort(); /* only on out of memory: every string is valid UTF-8 */
	return s;
}

json_t *json_text(const char *s, size_t n)
{
	size_t len;
	char *u = utf8_sanitize(s, n, &len);
	json_t *j = json_stringn_nocheck(u, len);
	free(u);
	return j;
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

char *error_body(int status, const char *param, const char *code,
		 const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_t *e = json_object();
	json_object_set_new(e, "message", json_text(msg, strlen(msg)));
	json_object_set_new(e, "type", json_string(error_type(status)));
	json_object_set_new(e, "param", param ? json_string(param) : json_null());
	json_object_set_new(e, "code", code ? json_string(code) : json_null());
	json_t *root = json_object();
	json_object_set_new(root, "error", e);
	return json_take_dump(root);
}

/* ---- the server object ---- */

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
	s->chat = chat_template_new(cfg->chat_template, cfg->tok);
	s->created = (int64_t)time(NULL);
	metrics_init(s);
	pthread_mutex_init(&s->mmu, NULL);
	pthread_mutex_init(&s->qmu, NULL);
	pthread_cond_init(&s->qcv, NULL);
	return s;
}

void server_free(server_t *s)
{
	if (!s)
		return;
	server_stop(s);
	chat_template_free(s->chat);
	pthread_mutex_destroy(&s->mmu);
	pthread_mutex_destroy(&s->qmu);
	pthread_cond_destroy(&s->qcv);
	free(s);
}
