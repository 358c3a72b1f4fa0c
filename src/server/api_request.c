/* api_request: a generation request's JSON into a job: every field
 * checked, every bad one a 400 that names it. Pure: no network, no model
 * weights (only the tokenizer and the chat template). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "server/api_impl.h"

/* ---- jobs ---- */

server_job_t *api_job_new(api_t *a, server_endpoint_t ep)
{
	server_job_t *j = calloc(1, sizeof *j);
	if (!j)
		abort(); /* out of memory */
	j->ep = ep;
	j->model = a->cfg.model_id;
	j->tok = a->cfg.tok;
	j->created = (int64_t)time(NULL);
	/* relaxed: the ids need only be unique */
	snprintf(j->id, sizeof j->id, "%s-%llu",
		 ep == EP_CHAT ? "chatcmpl" : "cmpl",
		 (unsigned long long)atomic_fetch_add_explicit(&a->next_id, 1,
							       memory_order_relaxed));
	j->work = sched_job_new();
	j->n = 1;
	sched_request_t *q = sched_job_request(j->work);
	snprintf(q->name, sizeof q->name, "%s", j->id);
	return j;
}

void api_job_add_choices(server_job_t *j)
{
	for (int i = 1; i < j->n; i++)
		j->more[i - 1] = sched_job_new_choice(j->work, i);
}

void api_job_free(server_job_t *j)
{
	if (!j)
		return;
	for (int i = 1; i < j->n; i++)
		sched_job_release(j->more[i - 1]);
	sched_job_release(j->work);
	json_decref(j->tools);
	for (int i = 0; i < API_MAX_N; i++)
		sbuf_free(&j->answer[i]);
	free(j);
}

sched_job_t *api_job_work(server_job_t *j) { return j->work; }

int api_job_n_choices(const server_job_t *j) { return j->n; }

sched_job_t *api_job_choice(server_job_t *j, int i)
{
	return i == 0 ? j->work : j->more[i - 1];
}

bool api_job_stream(const server_job_t *j)
{
	return sched_job_request(j->work)->stream;
}

void api_reply_free(server_reply_t *r)
{
	free(r->body);
	r->body = NULL;
	api_job_free(r->job);
	r->job = NULL;
}

/* ---- the fields of a generation request ---- */

bool api_model_known(const api_t *a, const char *name)
{
	return !strcmp(name, a->cfg.model_id) ||
	       (a->cfg.model_file && !strcmp(name, a->cfg.model_file));
}

/* "model" and "max_tokens" (or chat's "max_completion_tokens"). */
static int parse_limits(api_t *a, json_t *root, sched_request_t *q, bool chat,
			server_reply_t *out)
{
	json_t *v;
	if ((v = json_object_get(root, "model")) && !json_is_null(v)) {
		if (!json_is_string(v)) {
			REPLY_ERR(out, 400, "model", NULL, "'model' must be a string");
			return -1;
		}
		if (!api_model_known(a, json_string_value(v))) { /* OpenAI: 404 */
			REPLY_ERR(out, 404, "model", "model_not_found",
				  "the model '%.100s' does not exist; this server "
				  "has '%.100s'", json_string_value(v), a->cfg.model_id);
			return -1;
		}
	}
	q->max_tokens = chat ? a->cfg.ctx : 16;
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
		if (n < 1 || n > a->cfg.ctx) {
			REPLY_ERR(out, 400, mt_name, NULL,
				  "'%s' is %lld; it must be in [1, %d] (the context)",
				  mt_name, (long long)n, a->cfg.ctx);
			return -1;
		}
		q->max_tokens = (int32_t)n;
	}
	return 0;
}

/* temperature, top_p, top_k, seed. The two real fields are checked as
 * the JSON number and again as the float the sampler gets (sampler.h):
 * a top_p of 1e-46 is above 0 but rounds to 0. A temperature below the
 * float range rounds to 0, greedy, the limit it tends to anyway; one
 * that rounds to a denormal is sampled as greedy too (sampler.h). JSON
 * has no NaN or infinity, and jansson refuses a number past the double
 * range (1e400) as malformed JSON. */
static int parse_sampling(api_t *a, json_t *root, sched_request_t *q,
			  server_reply_t *out)
{
	json_t *v;
	q->sp.temp = 1.0f;
	q->sp.top_p = 1.0f;
	/* relaxed: a seed ingredient, orders nothing */
	q->sp.seed = time_now_ns() ^ atomic_load_explicit(&a->next_id,
							  memory_order_relaxed) *
					     0x9e3779b97f4a7c15ull;
	q->sp.mode = SAMPLER_EGANG;
	if ((v = json_object_get(root, "temperature")) && !json_is_null(v)) {
		double t = json_is_number(v) ? json_number_value(v) : -1;
		if (!json_is_number(v) || !(t >= 0 && t <= 2)) {
			REPLY_ERR(out, 400, "temperature", NULL,
				  "'temperature' must be a number in [0, 2]");
			return -1;
		}
		q->sp.temp = (float)t;
	}
	if ((v = json_object_get(root, "top_p")) && !json_is_null(v)) {
		double t = json_is_number(v) ? json_number_value(v) : -1;
		float f = (float)t;
		if (!json_is_number(v) || !(t > 0 && t <= 1)) {
			REPLY_ERR(out, 400, "top_p", NULL,
				  "'top_p' must be a number in (0, 1]");
			return -1;
		}
		if (!(f > 0.0f)) {
			REPLY_ERR(out, 400, "top_p", NULL,
				  "'top_p' %g rounds to 0 in single precision; it "
				  "must be at least %g", t, (double)FLT_TRUE_MIN);
			return -1;
		}
		q->sp.top_p = f;
	}
	if ((v = json_object_get(root, "top_k")) && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > tokenizer_n_vocab(a->cfg.tok)) {
			REPLY_ERR(out, 400, "top_k", NULL,
				  "'top_k' must be an integer in [0, %d]",
				  tokenizer_n_vocab(a->cfg.tok));
			return -1;
		}
		q->sp.top_k = (int32_t)json_integer_value(v);
	}
	if ((v = json_object_get(root, "seed")) && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			REPLY_ERR(out, 400, "seed", NULL,
				  "'seed' must be a non-negative integer");
			return -1;
		}
		q->sp.seed = (uint64_t)json_integer_value(v);
	}
	return 0;
}

/* A real field in [lo, hi] into *dst (the float the sampler gets); 0, 1
 * when absent or null, -1 with the 400 in out. */
static int parse_real(json_t *root, const char *name, double lo, double hi,
		      float *dst, server_reply_t *out)
{
	json_t *v = json_object_get(root, name);
	if (!v || json_is_null(v))
		return 1;
	double x = json_is_number(v) ? json_number_value(v) : NAN;
	if (!(x >= lo && x <= hi)) {
		REPLY_ERR(out, 400, name, NULL, "'%s' must be a number in [%g, %g]",
			  name, lo, hi);
		return -1;
	}
	*dst = (float)x;
	return 0;
}

/* "logit_bias": {"TOKEN_ID": BIAS, ...}, ids in the vocabulary, biases in
 * [-100, 100] (sampler.h: +100 forces, -100 bans). The array is the
 * request's (the job frees it). */
static int parse_logit_bias(api_t *a, json_t *v, sched_request_t *q,
			    server_reply_t *out)
{
	if (!json_is_object(v)) {
		REPLY_ERR(out, 400, "logit_bias", NULL,
			  "'logit_bias' must be an object of token ids to biases");
		return -1;
	}
	size_t n = json_object_size(v);
	if (!n)
		return 0;
	sampler_bias_t *b = calloc(n, sizeof *b);
	if (!b)
		abort(); /* out of memory */
	q->sp.bias = b;
	int32_t vocab = tokenizer_n_vocab(a->cfg.tok);
	const char *key;
	json_t *x;
	json_object_foreach(v, key, x) {
		char *end;
		long id = strtol(key, &end, 10);
		if (!*key || *end || key[0] == '-' || key[0] == '+' || key[0] == ' ' ||
		    id < 0 || id >= vocab) {
			REPLY_ERR(out, 400, "logit_bias", NULL,
				  "logit_bias key '%.40s' is not a token id in [0, %d)",
				  key, vocab);
			return -1;
		}
		double bias = json_is_number(x) ? json_number_value(x) : NAN;
		if (!(bias >= -100 && bias <= 100)) {
			REPLY_ERR(out, 400, "logit_bias", NULL,
				  "logit_bias[\"%ld\"] must be a number in [-100, 100]", id);
			return -1;
		}
		b[q->sp.n_bias++] = (sampler_bias_t){(int32_t)id, (float)bias};
	}
	return 0;
}

/* The logits processing of sampler.h: logit_bias, OpenAI's presence and
 * frequency penalties, llama.cpp's repetition_penalty (and repeat_last_n)
 * and min_p. A bias that bans every token is refused here too. */
static int parse_processing(api_t *a, json_t *root, sched_request_t *q,
			    server_reply_t *out)
{
	if (parse_real(root, "presence_penalty", -2, 2, &q->sp.presence_penalty, out) < 0 ||
	    parse_real(root, "frequency_penalty", -2, 2, &q->sp.frequency_penalty, out) < 0 ||
	    parse_real(root, "min_p", 0, 1, &q->sp.min_p, out) < 0)
		return -1;
	int rc = parse_real(root, "repetition_penalty", 0, 100, &q->sp.repeat_penalty, out);
	if (rc < 0)
		return -1;
	if (rc == 0 && !(q->sp.repeat_penalty > 0)) {
		REPLY_ERR(out, 400, "repetition_penalty", NULL,
			  "'repetition_penalty' must be above 0 (1: off)");
		return -1;
	}
	json_t *v = json_object_get(root, "repeat_last_n");
	if (v && !json_is_null(v)) {
		json_int_t n = json_is_integer(v) ? json_integer_value(v) : -2;
		if (n < -1 || n > a->cfg.ctx) {
			REPLY_ERR(out, 400, "repeat_last_n", NULL,
				  "'repeat_last_n' must be an integer in [-1, %d] "
				  "(-1: the context, 0: no repetition penalty)", a->cfg.ctx);
			return -1;
		}
		if (n == 0)
			q->sp.repeat_penalty = 0; /* llama.cpp: 0 turns it off */
		q->sp.repeat_last_n = n < 0 ? a->cfg.ctx : (int32_t)n;
	}
	v = json_object_get(root, "logit_bias");
	if (v && !json_is_null(v) && parse_logit_bias(a, v, q, out) < 0)
		return -1;
	if (q->sp.n_bias) { /* all banned: the sampler's own check, as a 400 */
		sampler_t *t = sampler_new(tokenizer_n_vocab(a->cfg.tok), &q->sp);
		if (!t) {
			REPLY_ERR(out, 400, "logit_bias", NULL, "%s", err_get());
			return -1;
		}
		sampler_free(t);
	}
	return 0;
}

/* Chat's "logprobs" (a boolean) and "top_logprobs" (0..20, only with
 * logprobs true unless 0); completions' "logprobs" (0..20: the
 * alternatives, with the sampled token's log-probability always). */
static int parse_logprobs(json_t *root, sched_request_t *q, bool chat,
			  server_reply_t *out)
{
	json_t *v = json_object_get(root, "logprobs");
	json_t *top = chat ? json_object_get(root, "top_logprobs") : v;
	if (json_is_null(v))
		v = NULL;
	if (json_is_null(top))
		top = NULL;
	if (chat && v && !json_is_boolean(v)) {
		REPLY_ERR(out, 400, "logprobs", NULL, "'logprobs' must be a boolean");
		return -1;
	}
	const char *tname = chat ? "top_logprobs" : "logprobs";
	json_int_t n = top && json_is_integer(top) ? json_integer_value(top) : -1;
	if (top && !(n >= 0 && n <= SAMPLER_MAX_LOGPROBS)) {
		REPLY_ERR(out, 400, tname, NULL, "'%s' must be an integer in [0, %d]",
			  tname, SAMPLER_MAX_LOGPROBS);
		return -1;
	}
	q->sp.logprobs = chat ? v && json_is_true(v) : top != NULL;
	if (chat && n > 0 && !q->sp.logprobs) {
		REPLY_ERR(out, 400, "top_logprobs", NULL,
			  "'top_logprobs' needs 'logprobs': true");
		return -1;
	}
	q->sp.top_logprobs = n > 0 ? (int32_t)n : 0;
	return 0;
}

/* "stop": a string or an array of at most SCHED_MAX_STOP strings. */
static int parse_stop(json_t *v, sched_request_t *q, server_reply_t *out)
{
	size_t n = 1;
	if (json_is_array(v)) {
		n = json_array_size(v);
		if (n > SCHED_MAX_STOP) {
			REPLY_ERR(out, 400, "stop", NULL,
				  "'stop' has %zu strings; at most %d", n, SCHED_MAX_STOP);
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
		if (len > API_MAX_STOP_LEN) {
			REPLY_ERR(out, 400, "stop", NULL,
				  "a stop string has %zu bytes; at most %d", len,
				  API_MAX_STOP_LEN);
			return -1;
		}
		if (len)
			q->stop[q->n_stop++] = strdup(json_string_value(e));
	}
	return 0;
}

/* "n": the choices, 1..API_MAX_N (the works: api_job_add_choices, once
 * the request is complete). */
static int parse_n(json_t *root, server_job_t *j, server_reply_t *out)
{
	json_t *v = json_object_get(root, "n");
	if (!v || json_is_null(v))
		return 0;
	json_int_t n = json_is_integer(v) ? json_integer_value(v) : 0;
	if (n < 1 || n > API_MAX_N) {
		REPLY_ERR(out, 400, "n", NULL, "'n' must be an integer in [1, %d] "
			  "(the choices; each is a sequence of its own)", API_MAX_N);
		return -1;
	}
	j->n = (int)n;
	return 0;
}

/* Fields shared by both generation endpoints; returns 0 or fills out with
 * a 400. */
static int parse_common(api_t *a, json_t *root, server_job_t *j,
			bool chat, server_reply_t *out)
{
	sched_request_t *q = sched_job_request(j->work);
	json_t *v;
	if (parse_limits(a, root, q, chat, out) < 0 ||
	    parse_sampling(a, root, q, out) < 0 ||
	    parse_processing(a, root, q, out) < 0 ||
	    parse_logprobs(root, q, chat, out) < 0 ||
	    api_parse_grammar(root, q, out) < 0 || parse_n(root, j, out) < 0)
		return -1;
	if ((v = json_object_get(root, "stream")) && !json_is_null(v)) {
		if (!json_is_boolean(v)) {
			REPLY_ERR(out, 400, "stream", NULL, "'stream' must be a boolean");
			return -1;
		}
		q->stream = json_is_true(v);
	}
	/* echo and the other fields taken only at their default:
	 * api_fields.c, before this */
	if ((v = json_object_get(root, "stop")) && !json_is_null(v))
		return parse_stop(v, q, out);
	return 0;
}

/* ---- prompts ---- */

/* Stores the prompt's ids (n of them counted, at most ctx stored in ids,
 * which it takes) in j's request after checking them against the context
 * and the KV budget. */
static int finish_prompt(api_t *a, server_job_t *j, int32_t *ids,
			 int64_t n, server_reply_t *out)
{
	sched_request_t *q = sched_job_request(j->work);
	const char *param = j->ep == EP_CHAT ? "messages" : "prompt";
	if (n == 0) {
		free(ids);
		REPLY_ERR(out, 400, param, NULL,
			  "the prompt is empty and the vocabulary has no BOS token");
		return -1;
	}
	if (n >= a->cfg.ctx) {
		free(ids);
		REPLY_ERR(out, 400, param, "context_length_exceeded",
			  "the prompt has %lld tokens; the context holds %d (--ctx)",
			  (long long)n, a->cfg.ctx);
		return -1;
	}
	if (a->cfg.kv_positions && n >= a->cfg.kv_positions) {
		free(ids);
		REPLY_ERR(out, 400, param, "context_length_exceeded",
			  "the prompt has %lld tokens; the KV budget holds %d "
			  "positions (--kv-mb)", (long long)n, a->cfg.kv_positions);
		return -1;
	}
	q->ids = ids;
	q->n_ids = n;
	return 0;
}

static int32_t *ids_alloc(const api_t *a)
{
	int32_t *ids = malloc((size_t)a->cfg.ctx * sizeof *ids);
	if (!ids)
		abort(); /* out of memory */
	return ids;
}

void api_parse_completion(api_t *a, json_t *root, server_job_t *j,
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
	if (parse_common(a, root, j, false, out) < 0)
		return;
	/* BOS always, exactly as `egang generate` encodes a prompt */
	int32_t *ids = ids_alloc(a);
	int64_t n = tokenizer_encode(a->cfg.tok, json_string_value(p),
				     json_string_length(p), true, ids, a->cfg.ctx);
	if (n < 0) {
		free(ids);
		REPLY_ERR(out, 400, "prompt", NULL, "%s", err_get());
		return;
	}
	finish_prompt(a, j, ids, n, out);
}

/* Refuses a key of messages[i] other than role and content (and an
 * assistant's tool_calls, a tool result's tool_call_id), except the
 * OpenAI message fields egang does not render when they are null (a
 * client that sends back the assistant message it was given sends them
 * so). 0 or -1 with the 400 in out. */
static int message_keys_check(json_t *m, size_t i, const char *role,
			      server_reply_t *out)
{
	static const char *const null_ok[] = {"name", "tool_calls", "tool_call_id",
					      "refusal", "audio", "function_call"};
	const char *key;
	json_t *v;
	json_object_foreach(m, key, v) {
		if (!strcmp(key, "role") || !strcmp(key, "content") ||
		    (!strcmp(key, "tool_calls") && !strcmp(role, "assistant")) ||
		    (!strcmp(key, "tool_call_id") && !strcmp(role, "tool")))
			continue;
		bool known = false;
		for (size_t k = 0; k < sizeof null_ok / sizeof null_ok[0]; k++)
			known |= !strcmp(key, null_ok[k]);
		if (known && json_is_null(v))
			continue;
		REPLY_ERR(out, 400, "messages", "unsupported_parameter",
			  "messages[%zu].%.40s %s: egang renders a message's role "
			  "and content (an assistant's tool_calls, a tool's "
			  "tool_call_id) only", i, key,
			  known ? "is not supported" : "is not a message field egang knows");
		return -1;
	}
	return 0;
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
	if (message_keys_check(m, i, r, out) < 0)
		return -1;
	if (!strcmp(r, "developer"))
		r = "system";
	if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant") &&
	    strcmp(r, "tool")) {
		REPLY_ERR(out, 400, "messages", NULL,
			  "messages[%zu].role '%.40s' is not system, developer, "
			  "user, assistant or tool", i, r);
		return -1;
	}
	if (!strcmp(r, "tool") &&
	    !json_is_string(json_object_get(m, "tool_call_id"))) {
		REPLY_ERR(out, 400, "messages", NULL,
			  "messages[%zu].tool_call_id must be a string (the id of "
			  "the call this is the result of)", i);
		return -1;
	}
	msg->role = r;
	if (api_tools_msg_calls(m, i, msg, out) < 0)
		return -1;
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
			    !json_is_string(tx) || json_object_size(pt) != 2) {
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

/* The rendered chat prompt's ids into j (model/chat.h), tools shown
 * (NULL: none). */
static void chat_prompt(api_t *a, server_job_t *j, const chat_msg_t *msg,
			size_t n, const json_t *tools, server_reply_t *out)
{
	char *text;
	int64_t len = chat_render_tools(a->chat, msg, (int)n, tools, true, &text);
	if (len < 0) {
		REPLY_ERR(out, 400, "messages", NULL, "%s", err_get());
		return;
	}
	int32_t *ids = ids_alloc(a);
	int64_t k = chat_tokenize(a->chat, text, (size_t)len, ids, a->cfg.ctx);
	free(text);
	if (k < 0) {
		free(ids);
		REPLY_ERR(out, 400, "messages", NULL, "%s", err_get());
		return;
	}
	finish_prompt(a, j, ids, k, out);
}

void api_parse_chat(api_t *a, json_t *root, server_job_t *j,
		    server_reply_t *out)
{
	json_t *ms = json_object_get(root, "messages");
	if (!ms || !json_is_array(ms) || !json_array_size(ms)) {
		REPLY_ERR(out, 400, "messages", NULL,
			  "'messages' must be a non-empty array");
		return;
	}
	if (chat_template_kind(a->chat) == CHAT_NONE) {
		REPLY_ERR(out, 400, "messages", "no_chat_template",
			  "model '%s' has no chat template egang can apply (its "
			  "tokenizer.chat_template is absent or not ChatML, Qwen3, Llama 2, "
			  "Llama 3, Gemma 3 or Zephyr, and its vocabulary has no <|im_start|>); "
			  "use /v1/completions", a->cfg.model_id);
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
	const json_t *tools;
	if (parse_common(a, root, j, true, out) == 0 &&
	    api_tools_parse(a, root, j, &tools, out) == 0)
		chat_prompt(a, j, msg, n, tools, out);
out:
	for (size_t i = 0; i < n; i++)
		api_tools_free_calls(&msg[i]);
	free(parts.p);
	free(part_off);
	free(msg);
}

