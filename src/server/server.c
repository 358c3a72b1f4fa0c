/* server: the lifecycle above the pipeline (server.h): builds the stages
 * bottom up (metrics, scheduler, API, transport), starts and stops them in
 * order, and passes the public calls down to the stage that owns them. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/base.h"
#include "server/api.h"
#include "server/http.h"
#include "server/metrics.h"
#include "server/sched.h"
#include "server/server.h"

#define SERVER_CUT_GRACE_MS 5000 /* for the answers of cut generations */

struct server {
	server_config_t cfg;
	metrics_t *metrics;
	sched_t *sched;
	api_t *api;
	http_t *http;
};

/* ---- the object ---- */

/* 0 when cfg is usable; -1 + err_get() saying what is wrong. */
static int config_check(const server_config_t *cfg)
{
	if (!cfg->tok || !cfg->model_id)
		return err_set("server: a tokenizer and a model id are required");
	if (cfg->ctx < 2)
		return err_set("server: context %d is too small", cfg->ctx);
	if (cfg->max_queue < 0)
		return err_set("server: --max-queue must be >= 0");
	if (cfg->max_conns < 0 || cfg->max_conns_per_ip < 0 ||
	    cfg->request_timeout_s < 0)
		return err_set("server: --max-conns, --max-conns-per-ip and "
			       "--request-timeout must be >= 0");
	if (cfg->policies && cfg->control &&
	    (cfg->policies->n_slots != (cfg->n_cpus > 1 ? cfg->n_cpus : 1) ||
	     cfg->policy_index < 0 || cfg->policy_index >= cfg->policies->n))
		return err_set("server: the policy library is for %d slots, the "
			       "gang has %d (or policy %d names no record)",
			       cfg->policies->n_slots, cfg->n_cpus, cfg->policy_index);
	return 0;
}

/* The stages, bottom up; -1 + err_get() when out of memory. */
static int server_build(server_t *s)
{
	const server_config_t *c = &s->cfg;
	metrics_config_t mc = {
		.max_queue = c->max_queue, .kv_bytes = c->kv_bytes,
		.policies = c->policies, .control = c->control,
		.policy_index = c->policy_index,
	};
	sched_config_t sc = {
		.m = c->m, .ctx = c->ctx, .kv_type = c->kv_type, .max_queue = c->max_queue,
		.cpus = c->cpus, .n_cpus = c->n_cpus, .static_k = c->static_k,
		.policies = c->policies, .control = c->control,
		.policy_index = c->policy_index, .parallel = c->parallel,
		.prefill_chunk = c->prefill_chunk, .kv_bytes = c->kv_bytes,
		.kv_positions = c->kv_positions, .logits_dir = c->logits_dir,
	};
	api_config_t ac = {
		.tok = c->tok, .model_id = c->model_id, .model_file = c->model_file,
		.chat_template = c->chat_template, .ctx = c->ctx,
		.kv_positions = c->kv_positions, .api_key = c->api_key,
	};
	if (c->m) { /* /v1/models' meta */
		ac.n_ctx_train = c->m->cfg.ctx;
		ac.n_embd = c->m->cfg.dim;
		ac.n_params = model_n_params(c->m);
		ac.size = c->m->file_size;
	}
	http_config_t hc = {
		.host = c->host, .port = c->port, .timeout_s = c->timeout_s,
		.request_timeout_s = c->request_timeout_s,
		.max_conns = c->max_conns, .max_conns_per_ip = c->max_conns_per_ip,
		.cors = c->cors, .n_cors = c->n_cors,
	};
	if (!(s->metrics = metrics_new(&mc)) || !(s->sched = sched_new(&sc, s->metrics)) ||
	    !(s->api = api_new(&ac, s->sched, s->metrics)) ||
	    !(s->http = http_new(&hc, s->api, s->sched, s->metrics)))
		return -1;
	return 0;
}

server_t *server_new(const server_config_t *cfg)
{
	if (config_check(cfg) < 0)
		return NULL;
	server_t *s = calloc(1, sizeof *s);
	if (!s)
		return err_sys("calloc"), NULL;
	s->cfg = *cfg;
	if (server_build(s) < 0) {
		server_free(s);
		return NULL;
	}
	return s;
}

void server_free(server_t *s)
{
	if (!s)
		return;
	server_stop(s);
	http_free(s->http);
	api_free(s->api);
	sched_free(s->sched);
	metrics_free(s->metrics);
	free(s);
}

/* ---- running ---- */

int server_start(server_t *s)
{
	if (!s->cfg.m)
		return err_set("server_start: no model");
	if (http_addr_parse(s->http) < 0 || sched_start(s->sched) < 0)
		return -1;
	if (http_listen(s->http) < 0) {
		char msg[256];
		snprintf(msg, sizeof msg, "%s", err_get());
		server_stop(s);
		return err_set("%s", msg);
	}
	return 0;
}

int server_port(const server_t *s) { return http_port(s->http); }

/* Waits until every accepted generation has been answered (true), a
 * signal of `interrupt` arrives or ms pass (false). */
static bool wait_answered(server_t *s, int64_t ms, const sigset_t *interrupt)
{
	uint64_t end = time_now_ns() + (uint64_t)ms * 1000000u;
	while (metrics_in_flight(s->metrics) > 0) {
		uint64_t now = time_now_ns();
		if (now >= end)
			return false;
		uint64_t left = end - now < 50000000u ? end - now : 50000000u;
		struct timespec ts = {0, (long)left};
		if (interrupt) {
			if (sigtimedwait(interrupt, NULL, &ts) > 0)
				return false;
		} else {
			nanosleep(&ts, NULL);
		}
	}
	return true;
}

int server_stop(server_t *s)
{
	/* the scheduler first: it answers every job a handler waits for */
	int cut = s->sched ? sched_stop(s->sched) : 0;
	if (s->http) {
		/* the cut generations' error events and replies go out before
		 * the daemon closes their connections; a client that does not
		 * read gets SERVER_CUT_GRACE_MS */
		wait_answered(s, SERVER_CUT_GRACE_MS, NULL);
		http_stop(s->http);
	}
	return cut;
}

int server_drain(server_t *s, int seconds, const sigset_t *interrupt)
{
	sched_drain(s->sched);
	metrics_set_draining(s->metrics);
	wait_answered(s, (int64_t)seconds * 1000, interrupt);
	return server_stop(s);
}

/* ---- requests ---- */

void server_handle_json(server_t *s, const char *method, const char *path,
			const char *auth, const char *body, size_t len,
			server_reply_t *out)
{
	api_handle(s->api, method, path, auth, body, len, out);
}

void server_reply_free(server_reply_t *r) { api_reply_free(r); }

void server_count(server_t *s, server_endpoint_t ep, int status)
{
	metrics_count(s->metrics, ep, status);
}
