/* request: routing, authentication and validation (server_handle_json):
 * a request to a complete reply, or to a validated job for the queue.
 * Pure: no network, no model weights (fuzz/fuzz_server.c calls it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "server/server_impl.h"

/* ---- jobs ---- */

void job_destroy(server_job_t *j)
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

static server_job_t *job_new(server_t *s, server_endpoint_t ep)
{
	server_job_t *j = calloc(1, sizeof *j);
	if (!j)
		abort(); /* out of memory */
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->ep = ep;
	j->model = s->cfg.model_id;
	j->created = (int64_t)time(NULL);
	j->refs = 1;
	/* relaxed: the ids need only be unique */
	snprintf(j->id, sizeof j->id, "%s-%llu",
		 ep == EP_CHAT ? "chatcmpl" : "cmpl",
		 (unsigned long long)atomic_fetch_add_explicit(&s->next_id, 1,
							       memory_order_relaxed));
	return j;
}

/* ---- the fields of a generation request ---- */

static bool model_known(const server_t *s, const char *name)
{
	return !strcmp(name, s->cfg.model_id) ||
	       (s->cfg.model_file && !strcmp(name, s->cfg.model_file));
}

/* "model" and "max_tokens" (or chat's "max_completion_tokens"). */
static int parse_limits(server_t *s, json_t *root, server_job_t *j, bool chat,
			server_reply_t *out)
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
	return 0;
}

/* temperature, top_p, top_k, seed. */
static int parse_sampling(server_t *s, json_t *root, server_job_t *j,
			  server_reply_t *out)
{
	json_t *v;
	j->sp.temp = 1.0f;
	j->sp.top_p = 1.0f;
	/* relaxed: a seed ingredient, orders nothing */
	j->sp.seed = time_now_ns() ^ atomic_load_explicit(&s->next_id,
							  memory_order_relaxed) *
					     0x9e3779b97f4a7c15ull;
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
	return 0;
}

/* "stop": a string or an array of at most MAX_STOP strings. */
static int parse_stop(json_t *v, server_job_t *j, server_reply_t *out)
{
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
		json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
		if (!json_is_string(e)) {
			REPLY_ERR(out, 400, "stop", NULL,
				  "'stop' must be a string or an array of strings");
			return -1;
		}
		size_t len = json_string_length(e);
		if (len > MAX_STOP_LEN) {
			REPLY_ERR(out, 400, "stop", NULL,
				  "a stop string has %zu bytes; at most %d", len,
				  MAX_STOP_LEN);
			return -1;
		}
		if (len)
			j->stop[j->n_stop++] = strdup(json_string_value(e));
	}
	return 0;
}

/* Fields shared by both generation endpoints; returns 0 or fills out with
 * a 400. */
static int parse_common(server_t *s, json_t *root, server_job_t *j,
			bool chat, server_reply_t *out)
{
	json_t *v;
	if (parse_limits(s, root, j, chat, out) < 0 ||
	    parse_sampling(s, root, j, out) < 0)
		return -1;
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
	if ((v = json_object_get(root, "stop")) && !json_is_null(v))
		return parse_stop(v, j, out);
	return 0;
}

/* ---- prompts ---- */

/* Stores the prompt's ids (n of them counted, at most ctx stored in ids,
 * which it takes) in j after checking them against the context. */
static int finish_prompt(server_t *s, server_job_t *j, int32_t *ids,
			 int64_t n, server_reply_t *out)
{
	const char *param = j->ep == EP_CHAT ? "messages" : "prompt";
	if (n == 0) {
		free(ids);
		REPLY_ERR(out, 400, param, NULL,
			  "the prompt is empty and the vocabulary has no BOS token");
		return -1;
	}
	if (n >= s->cfg.ctx) {
		free(ids);
		REPLY_ERR(out, 400, param, "context_length_exceeded",
			  "the prompt has %lld tokens; the context holds %d (--ctx)",
			  (long long)n, s->cfg.ctx);
		return -1;
	}
	if (s->cfg.kv_positions && n >= s->cfg.kv_positions) {
		free(ids);
		REPLY_ERR(out, 400, param, "context_length_exceeded",
			  "the prompt has %lld tokens; the KV budget holds %d "
			  "positions (--kv-mb)", (long long)n, s->cfg.kv_positions);
		return -1;
	}
	j->ids = ids;
	j->n_ids = n;
	return 0;
}

static int32_t *ids_alloc(const server_t *s)
{
	int32_t *ids = malloc((size_t)s->cfg.ctx * sizeof *ids);
	if (!ids)
		abort(); /* out of memory */
	return ids;
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
	int32_t *ids = ids_alloc(s);
	int64_t n = tokenizer_encode(s->cfg.tok, json_string_value(p),
				     json_string_length(p), true, ids, s->cfg.ctx);
	if (n < 0) {
		free(ids);
		REPLY_ERR(out, 400, "prompt", NULL, "%s", err_get());
		return;
	}
	finish_prompt(s, j, ids, n, out);
}

/* messages[i] into msg[i]; array contents are concatenated into parts
 * (their offsets + 1 in part_off, fixed up by the caller). */
static int parse_message(json_t *m, size_t i, chat_msg_t *msg, sbuf_t *parts,
			 size_t *part_off, server_reply_t *out)
{
	json_t *role = json_object_get(m, "role");
	json_t *content = json_object_get(m, "content");
	if (!json_is_object(m) || !json_is_string(role)) {
		REPLY_ERR(out, 400, "messages", NULL,
			  "messages[%zu] must be an object with a string 'role'", i);
		return -1;
	}
	const char *r = json_string_value(role);
	if (!strcmp(r, "developer"))
		r = "system";
	if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant")) {
		REPLY_ERR(out, 400, "messages", NULL,
			  "messages[%zu].role '%.40s' is not system, user or "
			  "assistant", i, r);
		return -1;
	}
	msg->role = r;
	if (json_is_string(content)) {
		msg->text = json_string_value(content);
		msg->len = json_string_length(content);
	} else if (json_is_null(content) && !strcmp(r, "assistant")) {
		msg->text = "";
	} else if (json_is_array(content)) {
		*part_off = parts->len + 1; /* +1: 0 means none */
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
				return -1;
			}
			sbuf_add(parts, json_string_value(tx), json_string_length(tx));
		}
		msg->len = parts->len + 1 - *part_off;
	} else {
		REPLY_ERR(out, 400, "messages", NULL,
			  "messages[%zu].content must be a string or an array "
			  "of text parts", i);
		return -1;
	}
	return 0;
}

/* The rendered chat prompt's ids into j (model/chat.h). */
static void chat_prompt(server_t *s, server_job_t *j, const chat_msg_t *msg,
			size_t n, server_reply_t *out)
{
	char *text;
	int64_t len = chat_render(s->chat, msg, (int)n, true, &text);
	if (len < 0) {
		REPLY_ERR(out, 400, "messages", NULL, "%s", err_get());
		return;
	}
	int32_t *ids = ids_alloc(s);
	int64_t k = chat_tokenize(s->chat, text, (size_t)len, ids, s->cfg.ctx);
	free(text);
	if (k < 0) {
		free(ids);
		REPLY_ERR(out, 400, "messages", NULL, "%s", err_get());
		return;
	}
	finish_prompt(s, j, ids, k, out);
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
	if (chat_template_kind(s->chat) == CHAT_NONE) {
		REPLY_ERR(out, 400, "messages", "no_chat_template",
			  "model '%s' has no chat template egang can apply (its "
			  "tokenizer.chat_template is absent or not ChatML, Qwen3, Llama 2, "
			  "Llama 3, Gemma 3 or Zephyr, and its vocabulary has no <|im_start|>); "
			  "use /v1/completions", s->cfg.model_id);
		return;
	}
	size_t n = json_array_size(ms);
	chat_msg_t *msg = calloc(n, sizeof *msg);
	size_t *part_off = calloc(n, sizeof *part_off);
	if (!msg || !part_off)
		abort(); /* out of memory */
	sbuf_t parts = {0}; /* concatenated content parts */
	for (size_t i = 0; i < n; i++)
		if (parse_message(json_array_get(ms, i), i, &msg[i], &parts,
				  &part_off[i], out) < 0)
			goto out;
	for (size_t i = 0; i < n; i++) /* parts may have moved while growing */
		if (part_off[i])
			msg[i].text = parts.p ? parts.p + part_off[i] - 1 : "";
	if (parse_common(s, root, j, true, out) == 0)
		chat_prompt(s, j, msg, n, out);
out:
	free(parts.p);
	free(part_off);
	free(msg);
}

/* ---- routing ---- */

server_endpoint_t server_route(const char *path)
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

/* 401, 404 and 405; false when one was filled in. */
static bool admit(server_t *s, server_endpoint_t ep, const char *method,
		  const char *path, const char *auth, server_reply_t *out)
{
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	bool post = !strcmp(method, "POST");
	if (ep != EP_HEALTH && !auth_ok(s->cfg.api_key, auth)) {
		REPLY_ERR(out, 401, NULL, "invalid_api_key",
			  "missing or wrong API key: send 'Authorization: Bearer KEY'");
		return false;
	}
	if (ep == EP_OTHER) {
		REPLY_ERR(out, 404, NULL, "not_found", "no endpoint %.200s", path);
		return false;
	}
	bool gen = ep == EP_COMPLETIONS || ep == EP_CHAT;
	if (gen ? !post : !get) {
		out->allow = gen ? "POST" : "GET, HEAD";
		REPLY_ERR(out, 405, NULL, "method_not_allowed",
			  "%.200s takes %s, not %.20s", path, gen ? "POST" : "GET",
			  method);
		return false;
	}
	return true;
}

static json_t *model_object(const server_t *s)
{
	return json_pack("{s:s, s:s, s:I, s:s}", "id", s->cfg.model_id, "object",
			 "model", "created", (json_int_t)s->created, "owned_by",
			 "egang");
}

/* GET /health, /metrics, /v1/models[/NAME]. */
static void handle_get(server_t *s, server_endpoint_t ep, const char *path,
		       server_reply_t *out)
{
	if (ep == EP_HEALTH) {
		out->body = health_body(s, &out->status);
		return;
	}
	if (ep == EP_METRICS) {
		out->status = 200;
		out->content_type = "text/plain; version=0.0.4; charset=utf-8";
		out->body = server_metrics_text(s);
		return;
	}
	if (path[10] == '/') { /* /v1/models/NAME */
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
}

void server_handle_json(server_t *s, const char *method, const char *path,
			const char *auth, const char *body, size_t len,
			server_reply_t *out)
{
	memset(out, 0, sizeof *out);
	out->content_type = "application/json";
	path = path ? path : "";
	server_endpoint_t ep = server_route(path);
	out->endpoint = ep;
	if (!admit(s, ep, method ? method : "", path, auth, out))
		return;
	if (ep != EP_COMPLETIONS && ep != EP_CHAT) {
		handle_get(s, ep, path, out);
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
	server_job_t *j = job_new(s, ep);
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
