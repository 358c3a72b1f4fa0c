/* api: the API stage's object, routing, authentication, the GET
 * endpoints (/v1/models, /health, /metrics) and api_handle, which turns
 * one request into a reply (the tokenizer's endpoints: api_tokens.c) or
 * a validated job (api_request.c). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "server/api_impl.h"

/* ---- the object ---- */

api_t *api_new(const api_config_t *cfg, sched_t *sched, metrics_t *metrics)
{
	api_t *a = calloc(1, sizeof *a);
	if (!a)
		return err_sys("calloc"), NULL;
	a->cfg = *cfg;
	a->chat = chat_template_new(cfg->chat_template, cfg->tok);
	a->created = (int64_t)time(NULL);
	a->sched = sched;
	a->metrics = metrics;
	return a;
}

void api_free(api_t *a)
{
	if (!a)
		return;
	chat_template_free(a->chat);
	free(a);
}

/* The /metrics text with the queue's state now (malloc'd). */
static char *api_metrics_text(api_t *a)
{
	int depth;
	bool busy;
	sched_queue_state(a->sched, &depth, &busy);
	return metrics_text(a->metrics, depth, busy);
}

/* ---- routing ---- */

server_endpoint_t api_route(const char *path)
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
	if (!strcmp(path, "/tokenize"))
		return EP_TOKENIZE;
	if (!strcmp(path, "/detokenize"))
		return EP_DETOKENIZE;
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

/* 204 for OPTIONS, 401, 404 and 405; false when one was filled in.
 * OPTIONS on an endpoint needs no key: a browser's CORS preflight sends
 * none (the transport adds the CORS headers, http.c). */
static bool access_ok(api_t *a, server_endpoint_t ep, const char *method,
		  const char *path, const char *auth, server_reply_t *out)
{
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	bool post = !strcmp(method, "POST");
	bool gen = ep == EP_COMPLETIONS || ep == EP_CHAT || ep == EP_TOKENIZE ||
		   ep == EP_DETOKENIZE; /* the POST endpoints */
	if (!strcmp(method, "OPTIONS") && ep != EP_OTHER) {
		out->status = 204;
		out->content_type = NULL;
		out->allow = gen ? "POST, OPTIONS" : "GET, HEAD, OPTIONS";
		out->body = strdup("");
		if (!out->body)
			abort(); /* out of memory */
		return false;
	}
	if (ep != EP_HEALTH && !auth_ok(a->cfg.api_key, auth)) {
		REPLY_ERR(out, 401, NULL, "invalid_api_key",
			  "missing or wrong API key: send 'Authorization: Bearer KEY'");
		return false;
	}
	if (ep == EP_OTHER) {
		REPLY_ERR(out, 404, NULL, "not_found", "no endpoint %.200s", path);
		return false;
	}
	if (gen ? !post : !get) {
		out->allow = gen ? "POST, OPTIONS" : "GET, HEAD, OPTIONS";
		REPLY_ERR(out, 405, NULL, "method_not_allowed",
			  "%.200s takes %s, not %.20s", path, gen ? "POST" : "GET",
			  method);
		return false;
	}
	return true;
}

/* The model as /v1/models lists it and /v1/models/ID details it:
 * OpenAI's id, object, created and owned_by, and llama.cpp server's
 * "meta" with the context this server gives a request (n_ctx) and the
 * model's facts that are known. */
static json_t *model_object(const api_t *a)
{
	const api_config_t *c = &a->cfg;
	json_t *meta = json_pack("{s:i, s:i}", "n_ctx", (int)c->ctx, "n_vocab",
				 (int)tokenizer_n_vocab(c->tok));
	if (c->n_ctx_train > 0)
		json_object_set_new(meta, "n_ctx_train", json_integer(c->n_ctx_train));
	if (c->n_embd > 0)
		json_object_set_new(meta, "n_embd", json_integer(c->n_embd));
	if (c->n_params)
		json_object_set_new(meta, "n_params", json_integer((json_int_t)c->n_params));
	if (c->size)
		json_object_set_new(meta, "size", json_integer((json_int_t)c->size));
	return json_pack("{s:s, s:s, s:I, s:s, s:o}", "id", c->model_id, "object",
			 "model", "created", (json_int_t)a->created, "owned_by",
			 "egang", "meta", meta);
}

/* GET /health, /metrics, /v1/models[/NAME]. */
static void handle_get(api_t *a, server_endpoint_t ep, const char *path,
		       server_reply_t *out)
{
	if (ep == EP_HEALTH) {
		static const char *const down[SCHED_PHASE_COUNT] = {
			[SCHED_PHASE_RUN] = NULL, [SCHED_PHASE_DRAIN] = "draining",
			[SCHED_PHASE_STOP] = "stopping"};
		int depth;
		bool busy;
		sched_queue_state(a->sched, &depth, &busy);
		out->body = metrics_health_text(a->cfg.model_id,
						down[sched_phase(a->sched)], depth,
						busy, &out->status);
		return;
	}
	if (ep == EP_METRICS) {
		out->status = 200;
		out->content_type = "text/plain; version=0.0.4; charset=utf-8";
		out->body = api_metrics_text(a);
		return;
	}
	if (path[10] == '/') { /* /v1/models/NAME */
		const char *name = path + 11;
		if (!api_model_known(a, name)) {
			REPLY_ERR(out, 404, "model", "model_not_found",
				  "the model '%.100s' does not exist", name);
			return;
		}
		out->status = 200;
		out->body = buf_json_dump(model_object(a));
		return;
	}
	json_t *data = json_array();
	json_array_append_new(data, model_object(a));
	out->status = 200;
	out->body = buf_json_dump(
		json_pack("{s:s, s:o}", "object", "list", "data", data));
}

void api_handle(api_t *a, const char *method, const char *path,
		const char *auth, const char *body, size_t len,
		server_reply_t *out)
{
	memset(out, 0, sizeof *out);
	out->content_type = "application/json";
	path = path ? path : "";
	server_endpoint_t ep = api_route(path);
	out->endpoint = ep;
	if (!access_ok(a, ep, method ? method : "", path, auth, out))
		return;
	if (ep != EP_COMPLETIONS && ep != EP_CHAT && ep != EP_TOKENIZE &&
	    ep != EP_DETOKENIZE) {
		handle_get(a, ep, path, out);
		return;
	}
	/* a generation, or the tokenizer */
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
	if (ep == EP_TOKENIZE || ep == EP_DETOKENIZE) {
		api_handle_tokens(a, ep, root, out);
		json_decref(root);
		return;
	}
	if (api_fields_check(ep, root, out) < 0) {
		json_decref(root);
		return;
	}
	server_job_t *j = api_job_new(a, ep);
	if (ep == EP_CHAT)
		api_parse_chat(a, root, j, out);
	else
		api_parse_completion(a, root, j, out);
	json_decref(root);
	if (out->body) {
		api_job_free(j);
		return;
	}
	api_job_add_choices(j);
	out->status = 200;
	out->job = j;
}
