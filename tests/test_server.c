/* The server's request validation without HTTP and without model weights
 * (server_handle_json on models/tok512.bin, stories260K's tokenizer):
 * malformed and hostile requests each get the status, error type, param
 * and code the API promises (api.h); good ones become jobs whose request
 * holds the fields asked for; the error body's exact bytes; a job's
 * events and final body formatted, byte for byte. */
#include "testutil.h"

#include <jansson.h>
#include <math.h>
#include <time.h>

#include "base/base.h"
#include "model/chat.h"
#include "model/tokenizer.h"
#include "server/api.h"
#include "server/buf.h"
#include "server/sched.h" /* a job's request (api_job_work) */
#include "server/server.h"

#define CTX 128

static tokenizer_t *tok;

static int32_t server_ctx = CTX; /* the next server_for's context */

/* A server for validation only (never started): ChatML chat template
 * unless tmpl says otherwise, an API key when key is set, and a KV budget
 * of kv_positions positions (0: none); a context of server_ctx. */
static server_t *server_for(const char *tmpl, const char *key, int32_t kv_positions)
{
	if (!tok) {
		tok = tokenizer_load_llama2c(test_repo_model_path("tok512.bin"), 512);
		assert_non_null(tok);
	}
	server_config_t cfg = {
		.tok = tok,
		.model_id = "stories260K",
		.model_file = "stories260K.bin",
		.chat_template = tmpl,
		.ctx = server_ctx,
		.max_queue = 4,
		.api_key = key,
		.kv_positions = kv_positions,
	};
	server_t *s = server_new(&cfg);
	assert_non_null(s);
	return s;
}

static const char *chatml(void) { return chat_markers(CHAT_CHATML); }

/* The reply to one request (body NULL: none). */
static void request(server_t *s, const char *method, const char *path,
		    const char *auth, const char *body, server_reply_t *r)
{
	server_handle_json(s, method, path, auth, body, body ? strlen(body) : 0, r);
}

/* Asserts the request is answered with status and the error's type, param
 * and code (param, code NULL: JSON null). Returns the error's message
 * (static copy) for extra checks. */
static const char *expect_error(server_t *s, const char *method, const char *path,
				const char *auth, const char *body, int status,
				const char *type, const char *param, const char *code)
{
	static char msg[512];
	server_reply_t r;
	request(s, method, path, auth, body, &r);
	if (r.status != status)
		fail_msg("%s %s %.80s: status %d, want %d (%s)", method, path,
			 body ? body : "", r.status, status, r.body ? r.body : "");
	assert_null(r.job);
	assert_non_null(r.body);
	assert_string_equal(r.content_type, "application/json");
	json_error_t jerr;
	json_t *root = json_loads(r.body, 0, &jerr);
	assert_non_null(root);
	json_t *e = json_object_get(root, "error");
	assert_true(json_is_object(e));
	assert_true(json_is_string(json_object_get(e, "message")));
	snprintf(msg, sizeof msg, "%s", json_string_value(json_object_get(e, "message")));
	assert_true(strlen(msg) > 0);
	assert_string_equal(json_string_value(json_object_get(e, "type")), type);
	json_t *p = json_object_get(e, "param"), *c = json_object_get(e, "code");
	if (param ? !json_is_string(p) || strcmp(json_string_value(p), param)
		  : !json_is_null(p))
		fail_msg("%.80s: param in %s, want %s", body ? body : "", r.body,
			 param ? param : "null");
	if (code ? !json_is_string(c) || strcmp(json_string_value(c), code)
		 : !json_is_null(c))
		fail_msg("%.80s: code in %s, want %s", body ? body : "", r.body,
			 code ? code : "null");
	json_decref(root);
	server_reply_free(&r);
	return msg;
}

/* A 400 invalid_request_error on /v1/completions. */
#define BAD_COMPLETION(s, body, param, code)                                       \
	expect_error((s), "POST", "/v1/completions", NULL, (body), 400,            \
		     "invalid_request_error", (param), (code))
#define BAD_CHAT(s, body, param, code)                                              \
	expect_error((s), "POST", "/v1/chat/completions", NULL, (body), 400,        \
		     "invalid_request_error", (param), (code))

/* The job a good request becomes; the caller frees the reply. */
static const sched_request_t *expect_job(server_t *s, const char *path,
					 const char *body, server_reply_t *r)
{
	request(s, "POST", path, NULL, body, r);
	if (r->status != 200 || !r->job)
		fail_msg("POST %s %s: status %d (%s)", path, body, r->status,
			 r->body ? r->body : "");
	assert_null(r->body);
	return sched_job_request(api_job_work(r->job));
}

/* ---- the body itself ---- */

static void test_invalid_json(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	const char *m = BAD_COMPLETION(s, "{\"prompt\":", NULL, "invalid_json");
	assert_non_null(strstr(m, "malformed JSON at line 1"));
	BAD_COMPLETION(s, "{\"prompt\":\"a\"} x", NULL, "invalid_json");
	BAD_COMPLETION(s, "{\"prompt\":\"\xff\xfe\"}", NULL, "invalid_json");
	BAD_COMPLETION(s, "{\"prompt\":\"a\\u0000b\"}", NULL, "invalid_json");
	BAD_CHAT(s, "[[[[", NULL, "invalid_json");
	/* numbers jansson cannot hold are malformed, not out of range */
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"max_tokens\":1e400}", NULL, "invalid_json");
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"max_tokens\":99999999999999999999999}",
		       NULL, "invalid_json");
	m = BAD_COMPLETION(s, "", NULL, NULL);
	assert_non_null(strstr(m, "empty"));
	BAD_COMPLETION(s, NULL, NULL, NULL);
	BAD_COMPLETION(s, "[1,2]", NULL, NULL);
	/* a bare string: jansson decodes only an object or an array at the
	 * top (no JSON_DECODE_ANY), so it is malformed */
	BAD_COMPLETION(s, "\"a string\"", NULL, "invalid_json");
	server_free(s);
}

/* ---- fields of the wrong type ---- */

static void test_wrong_types(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	BAD_COMPLETION(s, "{\"prompt\":5}", "prompt", NULL);
	BAD_COMPLETION(s, "{\"prompt\":{\"a\":1}}", "prompt", NULL);
	BAD_COMPLETION(s, "{\"prompt\":[\"a\",\"b\"]}", "prompt", NULL);
	BAD_COMPLETION(s, "{\"prompt\":[5]}", "prompt", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"model\":3}", "model", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"max_tokens\":\"10\"}", "max_tokens", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"max_tokens\":1.5}", "max_tokens", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"max_tokens\":1e1}", "max_tokens", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"temperature\":\"hot\"}", "temperature", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"top_p\":true}", "top_p", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"top_k\":2.5}", "top_k", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"seed\":\"7\"}", "seed", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"stream\":\"yes\"}", "stream", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"stream\":1}", "stream", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"stop\":5}", "stop", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"stop\":[\"x\",2]}", "stop", NULL);
	/* fields taken only at their default: any other value, of any type,
	 * is a field egang does not implement */
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"n\":\"1\"}", "n", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"echo\":\"no\"}", "echo", "unsupported_parameter");
	BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
		    "\"max_completion_tokens\":\"3\"}", "max_completion_tokens", NULL);
	BAD_CHAT(s, "{\"messages\":{\"role\":\"user\"}}", "messages", NULL);
	BAD_CHAT(s, "{\"messages\":[\"hi\"]}", "messages", NULL);
	BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", "messages", NULL);
	BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":null}]}", "messages", NULL);
	BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":"
		    "[{\"type\":\"image_url\"}]}]}", "messages", NULL);
	BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":"
		    "[{\"type\":\"text\",\"text\":7}]}]}", "messages", NULL);
	server_free(s);
}

/* ---- values out of range ---- */

static void test_out_of_range(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	const char *m0;
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"temperature\":-0.1}", "temperature", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"temperature\":2.01}", "temperature", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"top_p\":0}", "top_p", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"top_p\":1.01}", "top_p", NULL);
	/* above 0 as a double, 0 as the float the sampler gets */
	m0 = BAD_COMPLETION(s, "{\"prompt\":\"a\",\"top_p\":1e-46}", "top_p", NULL);
	assert_non_null(strstr(m0, "rounds to 0"));
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"top_p\":7e-46}", "top_p", NULL);
	BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
		    "\"top_p\":1e-300}", "top_p", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"top_p\":1e39}", "top_p", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"temperature\":1e39}", "temperature", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"temperature\":-1e-46}", "temperature", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"top_k\":-1}", "top_k", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"top_k\":513}", "top_k", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"seed\":-3}", "seed", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"max_tokens\":0}", "max_tokens", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"max_tokens\":-5}", "max_tokens", NULL);
	const char *m = BAD_COMPLETION(s, "{\"prompt\":\"a\",\"max_tokens\":129}",
				       "max_tokens", NULL);
	assert_non_null(strstr(m, "[1, 128]"));
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"n\":9}", "n", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"n\":0}", "n", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"n\":1.5}", "n", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"echo\":true}", "echo", "unsupported_parameter");
	BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
		    "\"max_completion_tokens\":0}", "max_completion_tokens", NULL);
	/* the edges themselves are fine */
	server_reply_t r;
	const sched_request_t *q = expect_job(
		s, "/v1/completions",
		"{\"prompt\":\"a\",\"temperature\":2,\"top_p\":1,\"top_k\":512,"
		"\"max_tokens\":128,\"n\":1,\"echo\":false,\"seed\":0}", &r);
	assert_true(q->sp.temp == 2.0f && q->sp.top_p == 1.0f);
	assert_int_equal(q->sp.top_k, 512);
	assert_int_equal(q->max_tokens, CTX);
	server_reply_free(&r);
	/* the smallest float top_p; a temperature below the float range is 0
	 * (greedy), one in the denormals stays (sampler.h: greedy's token) */
	q = expect_job(s, "/v1/completions",
		       "{\"prompt\":\"a\",\"top_p\":1.5e-45,\"temperature\":1e-46}", &r);
	assert_true(q->sp.top_p > 0.0f && q->sp.temp == 0.0f);
	server_reply_free(&r);
	q = expect_job(s, "/v1/completions", "{\"prompt\":\"a\",\"temperature\":1e-40}", &r);
	assert_true(q->sp.temp > 0.0f && q->sp.temp < 1e-39f);
	server_reply_free(&r);
	server_free(s);
}

/* ---- what must be there ---- */

static void test_missing(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	const char *m = BAD_COMPLETION(s, "{\"max_tokens\":3}", "prompt", NULL);
	assert_non_null(strstr(m, "required"));
	BAD_COMPLETION(s, "{\"prompt\":null}", "prompt", NULL);
	BAD_COMPLETION(s, "{}", "prompt", NULL);
	BAD_CHAT(s, "{\"prompt\":\"a\"}", "prompt", "unsupported_parameter");
	BAD_CHAT(s, "{\"max_tokens\":2}", "messages", NULL);
	BAD_CHAT(s, "{\"messages\":null}", "messages", NULL);
	m = BAD_CHAT(s, "{\"messages\":[]}", "messages", NULL);
	assert_non_null(strstr(m, "non-empty"));
	server_free(s);
	/* a model whose template egang cannot apply: chat is refused, by name */
	s = server_for("{{ nothing egang knows }}", NULL, 0);
	BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
		 "messages", "no_chat_template");
	server_free(s);
}

/* ---- chat roles ---- */

static void test_roles(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	const char *m = BAD_CHAT(s, "{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}",
				 "messages", NULL);
	assert_non_null(strstr(m, "messages[0].role 'wizard'"));
	BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},"
		    "{\"role\":\"tool\",\"content\":\"b\"}]}", "messages", NULL);
	BAD_CHAT(s, "{\"messages\":[{\"content\":\"x\"}]}", "messages", NULL);
	BAD_CHAT(s, "{\"messages\":[{\"role\":5,\"content\":\"x\"}]}", "messages", NULL);
	BAD_CHAT(s, "{\"messages\":[{\"role\":\"\",\"content\":\"x\"}]}", "messages", NULL);
	/* developer is system; an assistant's content may be null; text parts */
	server_reply_t r;
	const sched_request_t *q = expect_job(
		s, "/v1/chat/completions",
		"{\"messages\":[{\"role\":\"developer\",\"content\":[{\"type\":\"text\","
		"\"text\":\"Be\"},{\"type\":\"text\",\"text\":\" brief.\"}]},"
		"{\"role\":\"assistant\",\"content\":null},"
		"{\"role\":\"user\",\"content\":\"hi\"}],\"max_completion_tokens\":3}", &r);
	assert_int_equal(q->max_tokens, 3);
	assert_true(q->n_ids > 1);
	server_reply_free(&r);
	server_free(s);
}

/* ---- routes, methods, keys ---- */

static void test_routes(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	const char *m = expect_error(s, "GET", "/v2/everything", NULL, NULL, 404,
				     "invalid_request_error", NULL, "not_found");
	assert_non_null(strstr(m, "/v2/everything"));
	expect_error(s, "GET", "/", NULL, NULL, 404, "invalid_request_error", NULL,
		     "not_found");
	expect_error(s, "POST", "/v1/completion", NULL, "{}", 404,
		     "invalid_request_error", NULL, "not_found");
	expect_error(s, "GET", "/v1/models/nope", NULL, NULL, 404,
		     "invalid_request_error", "model", "model_not_found");
	/* wrong methods: 405 with the Allow header */
	static const struct {
		const char *method, *path, *allow;
	} wrong[] = {
		{"GET", "/v1/completions", "POST, OPTIONS"},
		{"DELETE", "/v1/chat/completions", "POST, OPTIONS"},
		{"HEAD", "/v1/completions", "POST, OPTIONS"},
		{"POST", "/v1/models", "GET, HEAD, OPTIONS"},
		{"PUT", "/health", "GET, HEAD, OPTIONS"},
		{"POST", "/metrics", "GET, HEAD, OPTIONS"},
	};
	for (size_t i = 0; i < EG_ARRAY_LEN(wrong); i++) {
		server_reply_t r;
		request(s, wrong[i].method, wrong[i].path, NULL, "{}", &r);
		assert_int_equal(r.status, 405);
		assert_non_null(r.allow);
		assert_string_equal(r.allow, wrong[i].allow);
		server_reply_free(&r);
		expect_error(s, wrong[i].method, wrong[i].path, NULL, "{}", 405,
			     "invalid_request_error", NULL, "method_not_allowed");
	}
	/* the GET endpoints answer without a model loaded */
	server_reply_t r;
	request(s, "GET", "/v1/models", NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"id\":\"stories260K\""));
	server_reply_free(&r);
	request(s, "HEAD", "/v1/models/stories260K.bin", NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	server_reply_free(&r);
	request(s, "GET", "/health", NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"status\":\"ok\",\"model\":\"stories260K\","
				    "\"queue\":0,\"busy\":false}");
	server_reply_free(&r);
	request(s, "GET", "/metrics", NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.content_type, "text/plain"));
	assert_non_null(strstr(r.body, "egang_queue_capacity 4\n"));
	server_reply_free(&r);
	server_free(s);
}

static void test_auth(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), "sekrit", 0);
	const char *body = "{\"prompt\":\"a\"}";
	static const char *const bad[] = {
		NULL, "", "Bearer", "Bearer ", "Bearer sekri", "Bearer sekrit2",
		"Bearer Sekrit", "bearer sekrit", "Basic sekrit", "sekrit",
	};
	for (size_t i = 0; i < EG_ARRAY_LEN(bad); i++)
		expect_error(s, "POST", "/v1/completions", bad[i], body, 401,
			     "authentication_error", NULL, "invalid_api_key");
	/* before routing and the method: nothing leaks without the key */
	expect_error(s, "GET", "/v2/x", NULL, NULL, 401, "authentication_error",
		     NULL, "invalid_api_key");
	expect_error(s, "GET", "/metrics", "Bearer no", NULL, 401,
		     "authentication_error", NULL, "invalid_api_key");
	expect_error(s, "GET", "/v1/models", NULL, NULL, 401,
		     "authentication_error", NULL, "invalid_api_key");
	server_reply_t r;
	request(s, "GET", "/health", NULL, NULL, &r); /* open */
	assert_int_equal(r.status, 200);
	server_reply_free(&r);
	request(s, "POST", "/v1/completions", "Bearer sekrit", body, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(r.job);
	server_reply_free(&r);
	server_free(s);
}

/* ---- stop strings, context, KV budget ---- */

static void test_stop_lists(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	const char *m = BAD_COMPLETION(
		s, "{\"prompt\":\"a\",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "stop", NULL);
	assert_non_null(strstr(m, "at most 4"));
	char body[1024], big[300];
	memset(big, 'x', 257);
	big[257] = '\0';
	snprintf(body, sizeof body, "{\"prompt\":\"a\",\"stop\":[\"%s\"]}", big);
	BAD_COMPLETION(s, body, "stop", NULL);
	snprintf(body, sizeof body, "{\"prompt\":\"a\",\"stop\":\"%s\"}", big);
	BAD_COMPLETION(s, body, "stop", NULL);
	/* four strings of 256 bytes are fine; an empty one is dropped */
	big[256] = '\0';
	snprintf(body, sizeof body,
		 "{\"prompt\":\"a\",\"stop\":[\"%s\",\"\",\"x\",\"y\"]}", big);
	server_reply_t r;
	const sched_request_t *q = expect_job(s, "/v1/completions", body, &r);
	assert_int_equal(q->n_stop, 3);
	assert_int_equal(strlen(q->stop[0]), 256);
	assert_string_equal(q->stop[2], "y");
	server_reply_free(&r);
	server_free(s);
}

static void test_context(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	char body[4096] = "{\"prompt\":\"";
	for (int i = 0; i < 60; i++)
		strcat(body, "the cat sat ");
	strcat(body, "\"}");
	const char *m = BAD_COMPLETION(s, body, "prompt", "context_length_exceeded");
	assert_non_null(strstr(m, "the context holds 128"));
	char chat[4096];
	snprintf(chat, sizeof chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"%.*s\"}]}",
		 (int)(strlen(body) - 13), body + 11);
	BAD_CHAT(s, chat, "messages", "context_length_exceeded");
	/* a short prompt is fine and keeps its tokens, BOS first */
	server_reply_t r;
	const sched_request_t *q = expect_job(s, "/v1/completions",
					      "{\"prompt\":\"Once upon a time\"}", &r);
	assert_true(q->n_ids > 1 && q->n_ids < CTX);
	assert_int_equal(q->ids[0], tokenizer_bos(tok));
	assert_int_equal(q->max_tokens, 16); /* OpenAI's default */
	server_reply_free(&r);
	server_free(s);
	/* the KV budget holds 8 positions: a longer prompt is refused */
	s = server_for(chatml(), NULL, 8);
	m = BAD_COMPLETION(s, "{\"prompt\":\"the cat sat on the mat and the dog\"}",
			   "prompt", "context_length_exceeded");
	assert_non_null(strstr(m, "KV budget holds 8"));
	server_free(s);
}

/* ---- what a good request becomes ---- */

static void test_fields(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	server_reply_t r;
	const sched_request_t *q = expect_job(
		s, "/v1/completions",
		"{\"model\":\"stories260K.bin\",\"prompt\":[\"a\"],\"max_tokens\":5,"
		"\"temperature\":0,\"top_p\":0.5,\"top_k\":3,\"seed\":42,"
		"\"stream\":true,\"stop\":\"\\n\"}", &r);
	assert_int_equal(r.endpoint, EP_COMPLETIONS);
	assert_int_equal(q->max_tokens, 5);
	assert_true(q->sp.temp == 0.0f && q->sp.top_p == 0.5f);
	assert_int_equal(q->sp.top_k, 3);
	assert_int_equal(q->sp.seed, 42);
	assert_true(q->stream);
	assert_int_equal(q->n_stop, 1);
	assert_string_equal(q->stop[0], "\n");
	assert_string_equal(q->name, "cmpl-0");
	server_reply_free(&r);
	/* chat: max_tokens defaults to the context, ids count on */
	q = expect_job(s, "/v1/chat/completions",
		       "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\","
		       "\"content\":\"hi\"}]}", &r);
	assert_int_equal(r.endpoint, EP_CHAT);
	assert_int_equal(q->max_tokens, CTX);
	assert_false(q->stream);
	assert_string_equal(q->name, "chatcmpl-1");
	server_reply_free(&r);
	/* an unknown model: 404, as OpenAI answers it */
	expect_error(s, "POST", "/v1/completions", NULL,
		     "{\"model\":\"gpt-4\",\"prompt\":\"a\"}", 404,
		     "invalid_request_error", "model", "model_not_found");
	expect_error(s, "POST", "/v1/chat/completions", NULL,
		     "{\"model\":\"gpt-4\",\"messages\":[{\"role\":\"user\","
		     "\"content\":\"hi\"}]}", 404, "invalid_request_error", "model",
		     "model_not_found");
	server_free(s);
}

/* ---- fields egang does not implement: refused, naming them ---- */

/* One OpenAI request field with a value that is not its no-op default,
 * and what egang does with it: implemented (the request is a job) or
 * refused (400 unsupported_parameter naming it). */
typedef struct field_case {
	const char *name, *value;
	bool implemented;
} field_case_t;

/* Every field of OpenAI's chat completions request, besides messages. */
static const field_case_t chat_fields[] = {
	{"audio", "{\"voice\":\"alloy\",\"format\":\"wav\"}", false},
	{"frequency_penalty", "0.5", true},
	{"function_call", "\"auto\"", false},
	{"functions", "[{\"name\":\"f\"}]", false},
	{"logit_bias", "{\"5\":10}", true},
	{"logprobs", "true", true},
	{"max_completion_tokens", "3", true},
	{"max_tokens", "3", true},
	{"metadata", "{\"k\":\"v\"}", false},
	{"modalities", "[\"text\",\"audio\"]", false},
	{"model", "\"stories260K\"", true},
	{"n", "2", true},
	{"parallel_tool_calls", "true", true},
	{"prediction", "{\"type\":\"content\",\"content\":\"x\"}", false},
	{"presence_penalty", "0.5", true},
	{"prompt_cache_key", "\"k\"", false},
	{"reasoning_effort", "\"low\"", false},
	{"response_format", "{\"type\":\"json_object\"}", true},
	{"safety_identifier", "\"u\"", false},
	{"seed", "3", true},
	{"service_tier", "\"auto\"", false},
	{"stop", "\"x\"", true},
	{"store", "true", false},
	{"stream", "true", true},
	{"stream_options", "{\"include_usage\":true}", true},
	{"temperature", "0.5", true},
	{"tool_choice", "\"required\",\"tools\":[{\"type\":\"function\","
	 "\"function\":{\"name\":\"f\"}}]", true},
	{"tools", "[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]", true},
	{"top_logprobs", "2,\"logprobs\":true", true},
	{"top_p", "0.5", true},
	{"user", "\"u\"", true},
	{"verbosity", "\"low\"", false},
	{"web_search_options", "{}", false},
	/* llama.cpp's extensions */
	{"top_k", "5", true},
	{"min_p", "0.1", true},
	{"repetition_penalty", "1.1", true},
	{"repeat_last_n", "32", true},
	{"grammar", "\"root ::= \\\"a\\\"\"", true},
	{"json_schema", "{\"type\":\"object\"}", true},
};

/* Every field of OpenAI's (legacy) completions request, besides prompt. */
static const field_case_t cmpl_fields[] = {
	{"best_of", "2", false},
	{"echo", "true", false},
	{"frequency_penalty", "0.5", true},
	{"logit_bias", "{\"5\":10}", true},
	{"logprobs", "2", true},
	{"max_tokens", "3", true},
	{"model", "\"stories260K\"", true},
	{"n", "2", true},
	{"presence_penalty", "0.5", true},
	{"seed", "3", true},
	{"stop", "[\"x\"]", true},
	{"stream", "true", true},
	{"stream_options", "{\"include_usage\":false}", true},
	{"suffix", "\"end\"", false},
	{"temperature", "0.5", true},
	{"top_p", "0.5", true},
	{"user", "\"u\"", true},
	{"top_k", "5", true},
	{"min_p", "0.1", true},
	{"repetition_penalty", "1.1", true},
	{"repeat_last_n", "32", true},
	{"grammar", "\"root ::= \\\"a\\\"\"", true},
	{"response_format", "{\"type\":\"json_object\"}", true},
	{"tools", "[]", false},
};

/* Each field alone in a request that is otherwise good (base: the body
 * up to where the field goes): a job when egang implements it, else a
 * 400 unsupported_parameter whose param and message name it. */
static void expect_fields(server_t *s, const char *path, const char *base,
			  const field_case_t *fc, size_t n)
{
	char body[512];
	for (size_t i = 0; i < n; i++) {
		snprintf(body, sizeof body, "%s,\"%s\":%s}", base, fc[i].name, fc[i].value);
		server_reply_t r;
		if (fc[i].implemented) {
			expect_job(s, path, body, &r);
			server_reply_free(&r);
			continue;
		}
		const char *m = expect_error(s, "POST", path, NULL, body, 400,
					     "invalid_request_error", fc[i].name,
					     "unsupported_parameter");
		if (!strstr(m, fc[i].name))
			fail_msg("%s: the message '%s' does not name the field", body, m);
	}
}

#define CHAT_BASE "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"

static void test_unsupported_fields(void **state)
{
	(void)state;
	server_ctx = 1024; /* tools make a long prompt */
	server_t *s = server_for(chatml(), NULL, 0);
	server_ctx = CTX;
	expect_fields(s, "/v1/chat/completions", CHAT_BASE, chat_fields,
		      EG_ARRAY_LEN(chat_fields));
	expect_fields(s, "/v1/completions", "{\"prompt\":\"a\"", cmpl_fields,
		      EG_ARRAY_LEN(cmpl_fields));
	/* a field egang does not know at all, whatever its value; one that
	 * belongs to the other endpoint */
	const char *m = BAD_CHAT(s, CHAT_BASE ",\"frobnicate\":1}", "frobnicate",
				 "unsupported_parameter");
	assert_non_null(strstr(m, "'frobnicate'"));
	BAD_CHAT(s, CHAT_BASE ",\"frobnicate\":null}", "frobnicate", "unsupported_parameter");
	BAD_CHAT(s, CHAT_BASE ",\"echo\":false}", "echo", "unsupported_parameter");
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"messages\":[]}", "messages",
		       "unsupported_parameter");
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"max_completion_tokens\":3}",
		       "max_completion_tokens", "unsupported_parameter");
	/* the no-op defaults, and null for any field egang knows, are fine */
	server_reply_t r;
	expect_job(s, "/v1/chat/completions", CHAT_BASE
		   ",\"n\":1,\"logprobs\":false,\"top_logprobs\":0,\"presence_penalty\":0,"
		   "\"frequency_penalty\":0.0,\"logit_bias\":{},\"tool_choice\":\"none\","
		   "\"response_format\":{\"type\":\"text\"},\"modalities\":[\"text\"],"
		   "\"store\":false,\"stream_options\":{}}", &r);
	server_reply_free(&r);
	expect_job(s, "/v1/completions", "{\"prompt\":\"a\",\"n\":1,\"echo\":false,"
		   "\"best_of\":1,\"suffix\":\"\",\"presence_penalty\":0,"
		   "\"frequency_penalty\":0,\"logit_bias\":{},\"logprobs\":null}", &r);
	server_reply_free(&r);
	expect_job(s, "/v1/chat/completions", CHAT_BASE
		   ",\"tools\":null,\"response_format\":null,\"grammar\":null,"
		   "\"audio\":null,\"n\":null,\"user\":null}", &r);
	server_reply_free(&r);
	/* stream_options with anything but include_usage */
	BAD_CHAT(s, CHAT_BASE ",\"stream_options\":{\"include_usage\":1}}",
		 "stream_options", "unsupported_parameter");
	BAD_CHAT(s, CHAT_BASE ",\"stream_options\":{\"x\":true}}",
		 "stream_options", "unsupported_parameter");
	/* a message's fields: role and content, the rest only as null */
	m = BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\","
		     "\"name\":\"bob\"}]}", "messages", "unsupported_parameter");
	assert_non_null(strstr(m, "messages[0].name"));
	BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\","
		 "\"tool_calls\":[]}]}", "messages", "unsupported_parameter");
	BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\","
		 "\"tool_call_id\":\"c\"}]}", "messages", "unsupported_parameter");
	BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\",\"x\":null}]}",
		 "messages", "unsupported_parameter");
	BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
		 "\"text\":\"hi\",\"cache_control\":{}}]}]}", "messages", NULL);
	expect_job(s, "/v1/chat/completions",
		   "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\",\"name\":null},"
		   "{\"role\":\"assistant\",\"content\":\"a\",\"refusal\":null,"
		   "\"tool_calls\":null,\"audio\":null,\"function_call\":null},"
		   "{\"role\":\"user\",\"content\":\"b\"}]}", &r);
	server_reply_free(&r);
	server_free(s);
}

/* ---- the logits processing fields (sampler.h) ---- */

static void test_processing_fields(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	server_reply_t r;
	const sched_request_t *q = expect_job(
		s, "/v1/completions",
		"{\"prompt\":\"a\",\"presence_penalty\":-2,\"frequency_penalty\":1.5,"
		"\"repetition_penalty\":1.3,\"repeat_last_n\":-1,\"min_p\":0.05,"
		"\"logit_bias\":{\"5\":100,\"511\":-100,\"0\":-0.5}}", &r);
	assert_true(q->sp.presence_penalty == -2.0f && q->sp.frequency_penalty == 1.5f);
	assert_true(q->sp.repeat_penalty == 1.3f && q->sp.min_p == 0.05f);
	assert_int_equal(q->sp.repeat_last_n, CTX);
	assert_int_equal(q->sp.n_bias, 3);
	assert_int_equal(q->sp.bias[0].id, 5);
	assert_true(q->sp.bias[0].bias == 100.0f);
	assert_int_equal(q->sp.bias[1].id, 511);
	assert_true(q->sp.bias[2].bias == -0.5f);
	server_reply_free(&r);
	/* repeat_last_n 0 turns the penalty off, as llama.cpp */
	q = expect_job(s, "/v1/chat/completions", CHAT_BASE
		       ",\"repetition_penalty\":1.3,\"repeat_last_n\":0}", &r);
	assert_true(q->sp.repeat_penalty == 0.0f);
	server_reply_free(&r);
	static const struct {
		const char *field, *body;
	} bad[] = {
		{"presence_penalty", "\"presence_penalty\":2.01"},
		{"presence_penalty", "\"presence_penalty\":\"1\""},
		{"frequency_penalty", "\"frequency_penalty\":-3"},
		{"min_p", "\"min_p\":1.5"},
		{"min_p", "\"min_p\":-0.1"},
		{"repetition_penalty", "\"repetition_penalty\":0"},
		{"repetition_penalty", "\"repetition_penalty\":101"},
		{"repeat_last_n", "\"repeat_last_n\":-2"},
		{"repeat_last_n", "\"repeat_last_n\":129"},
		{"repeat_last_n", "\"repeat_last_n\":1.5"},
		{"logit_bias", "\"logit_bias\":[1,2]"},
		{"logit_bias", "\"logit_bias\":{\"x\":1}"},
		{"logit_bias", "\"logit_bias\":{\"\":1}"},
		{"logit_bias", "\"logit_bias\":{\"-1\":1}"},
		{"logit_bias", "\"logit_bias\":{\"512\":1}"},
		{"logit_bias", "\"logit_bias\":{\"5 \":1}"},
		{"logit_bias", "\"logit_bias\":{\"5\":100.5}"},
		{"logit_bias", "\"logit_bias\":{\"5\":\"1\"}"},
		{"logit_bias", "\"logit_bias\":{\"5\":false}"},
	};
	char body[256];
	for (size_t k = 0; k < EG_ARRAY_LEN(bad); k++) {
		snprintf(body, sizeof body, "{\"prompt\":\"a\",%s}", bad[k].body);
		BAD_COMPLETION(s, body, bad[k].field, NULL);
		snprintf(body, sizeof body, CHAT_BASE ",%s}", bad[k].body);
		BAD_CHAT(s, body, bad[k].field, NULL);
	}
	/* a bias that bans the whole vocabulary of 512 */
	sbuf_t all = {0};
	sbuf_str(&all, "{\"prompt\":\"a\",\"logit_bias\":{");
	for (int i = 0; i < 512; i++) {
		snprintf(body, sizeof body, "%s\"%d\":-100", i ? "," : "", i);
		sbuf_str(&all, body);
	}
	sbuf_str(&all, "}}");
	const char *m = BAD_COMPLETION(s, all.p, "logit_bias", NULL);
	assert_non_null(strstr(m, "bans all"));
	sbuf_free(&all);
	server_free(s);
}

/* ---- the error body, byte for byte ---- */

static void test_error_body(void **state)
{
	(void)state;
	char *b = api_error_body(429, NULL, NULL, "full");
	assert_string_equal(b, "{\"error\":{\"message\":\"full\",\"type\":\"rate_limit_error\","
			       "\"param\":null,\"code\":null}}");
	free(b);
	b = api_error_body(400, "stop", "c", "bad %s \xff", "x");
	assert_string_equal(b, "{\"error\":{\"message\":\"bad x \xef\xbf\xbd\",\"type\":"
			       "\"invalid_request_error\",\"param\":\"stop\",\"code\":\"c\"}}");
	free(b);
	b = api_error_body(503, NULL, NULL, "stopping");
	assert_non_null(strstr(b, "\"server_error\""));
	free(b);
}

/* ---- a job's responses, byte for byte ---- */

/* The job of a good request to path, its creation time checked to lie in
 * [before, now]; *created: that time. The caller frees the reply. */
static server_job_t *format_job(server_t *s, const char *path, const char *body,
				server_reply_t *r, long long *created)
{
	long long before = (long long)time(NULL);
	expect_job(s, path, body, r);
	sbuf_t out = {0};
	sched_event_t ev = {.kind = SCHED_EVENT_TEXT, .text = "", .n = 0};
	api_format_event(r->job, &ev, &out);
	const char *c = strstr(out.p, "\"created\":");
	assert_non_null(c);
	*created = strtoll(c + 10, NULL, 10);
	assert_true(*created >= before && *created <= (long long)time(NULL));
	sbuf_free(&out);
	return r->job;
}

/* Asserts that ev formats as want (printf format of the job's creation
 * time; NULL: nothing at all). */
static void expect_event(server_job_t *j, const sched_event_t *ev,
			 const char *want, long long created)
{
	sbuf_t out = {0};
	api_format_event(j, ev, &out);
	if (!want) {
		assert_int_equal(out.len, 0);
		return;
	}
	char w[1024];
	snprintf(w, sizeof w, want, created);
	assert_non_null(out.p);
	assert_string_equal(out.p, w);
	assert_int_equal(out.len, strlen(w));
	sbuf_free(&out);
}

#define CMPL_HEAD "data: {\"id\":\"cmpl-0\",\"object\":\"text_completion\"," \
		  "\"created\":%lld,\"model\":\"stories260K\",\"choices\":"
#define CHAT_HEAD "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\"," \
		  "\"created\":%lld,\"model\":\"stories260K\",\"choices\":"
#define DONE "data: [DONE]\n\n"

/* A completion's stream: nothing at its start, a chunk per text (UTF-8
 * cleaned, escaped), the finish reason and usage after the end, then
 * [DONE]; an error as the error body and no [DONE] (a cut stream never
 * looks complete). */
static void test_format_completion(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	server_reply_t r;
	long long t;
	server_job_t *j = format_job(s, "/v1/completions",
				     "{\"prompt\":\"a\",\"stream\":true}", &r, &t);
	assert_true(api_job_stream(j));
	expect_event(j, &(sched_event_t){.kind = SCHED_EVENT_START}, NULL, t);
	expect_event(j, &(sched_event_t){.kind = SCHED_EVENT_TEXT, .text = "Once \"up\"\n\xff",
					 .n = 11},
		     CMPL_HEAD "[{\"index\":0,\"text\":\"Once \\\"up\\\"\\n\xef\xbf\xbd\","
		     "\"logprobs\":null,\"finish_reason\":null}]}\n\n", t);
	expect_event(j, &(sched_event_t){.kind = SCHED_EVENT_END, .stop = STOP_EOS,
					 .n_prompt = 3, .n_gen = 2},
		     CMPL_HEAD "[{\"index\":0,\"text\":\"\",\"logprobs\":null,"
		     "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,"
		     "\"completion_tokens\":2,\"total_tokens\":5}}\n\n" DONE, t);
	expect_event(j, &(sched_event_t){.kind = SCHED_EVENT_END, .stop = STOP_CONTEXT,
					 .n_prompt = 4, .n_gen = 0},
		     CMPL_HEAD "[{\"index\":0,\"text\":\"\",\"logprobs\":null,"
		     "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":4,"
		     "\"completion_tokens\":0,\"total_tokens\":4}}\n\n" DONE, t);
	expect_event(j, &(sched_event_t){.kind = SCHED_EVENT_ERROR, .status = 503,
					 .msg = "the server is stopping"},
		     "data: {\"error\":{\"message\":\"the server is stopping\","
		     "\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n", t);
	server_reply_free(&r);
	server_free(s);
}

/* A chat's stream: the assistant's role alone at its start, text as
 * content deltas, an empty delta with the finish reason and usage at the
 * end, then [DONE]; an error as the error body, without [DONE]. */
static void test_format_chat(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	server_reply_t r0, r;
	long long t;
	expect_job(s, "/v1/completions", "{\"prompt\":\"a\"}", &r0); /* cmpl-0 */
	server_job_t *j = format_job(
		s, "/v1/chat/completions",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true}",
		&r, &t);
	expect_event(j, &(sched_event_t){.kind = SCHED_EVENT_START},
		     CHAT_HEAD "[{\"index\":0,\"delta\":{\"role\":\"assistant\","
		     "\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n", t);
	expect_event(j, &(sched_event_t){.kind = SCHED_EVENT_TEXT, .text = "Hi!", .n = 3},
		     CHAT_HEAD "[{\"index\":0,\"delta\":{\"content\":\"Hi!\"},"
		     "\"logprobs\":null,\"finish_reason\":null}]}\n\n", t);
	expect_event(j, &(sched_event_t){.kind = SCHED_EVENT_END, .stop = STOP_LENGTH,
					 .n_prompt = 9, .n_gen = 16},
		     CHAT_HEAD "[{\"index\":0,\"delta\":{},\"logprobs\":null,"
		     "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":9,"
		     "\"completion_tokens\":16,\"total_tokens\":25}}\n\n" DONE, t);
	expect_event(j, &(sched_event_t){.kind = SCHED_EVENT_ERROR, .status = 500,
					 .msg = "out of \"memory\""},
		     "data: {\"error\":{\"message\":\"out of \\\"memory\\\"\","
		     "\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n", t);
	server_reply_free(&r);
	server_reply_free(&r0);
	server_free(s);
}

/* The body of a job nobody streams. The public API cannot end a job (the
 * scheduler does), so these are the bodies of jobs that generated nothing
 * yet: status 200, empty text, finish reason "length", zero usage. */
static void test_format_reply(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	server_reply_t r, rc;
	long long t, tc;
	server_job_t *j = format_job(s, "/v1/completions", "{\"prompt\":\"a\"}", &r, &t);
	assert_false(api_job_stream(j));
	server_job_t *jc = format_job(
		s, "/v1/chat/completions",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", &rc, &tc);
	int status = 0;
	char *body = api_format_reply(j, &status);
	assert_int_equal(status, 200);
	char want[1024];
	snprintf(want, sizeof want,
		 "{\"id\":\"cmpl-0\",\"object\":\"text_completion\",\"created\":%lld,"
		 "\"model\":\"stories260K\",\"choices\":[{\"index\":0,\"text\":\"\","
		 "\"logprobs\":null,\"finish_reason\":\"length\"}],\"usage\":"
		 "{\"prompt_tokens\":0,\"completion_tokens\":0,\"total_tokens\":0}}", t);
	assert_string_equal(body, want);
	free(body);
	status = 0;
	body = api_format_reply(jc, &status);
	assert_int_equal(status, 200);
	snprintf(want, sizeof want,
		 "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":%lld,"
		 "\"model\":\"stories260K\",\"choices\":[{\"index\":0,\"message\":"
		 "{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
		 "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":0,"
		 "\"completion_tokens\":0,\"total_tokens\":0}}", tc);
	assert_string_equal(body, want);
	free(body);
	server_reply_free(&rc);
	server_reply_free(&r);
	server_free(s);
}

/* n > 1: a job of n choices, each a scheduler job whose request is the
 * first's with the seed plus its index (and its buffers borrowed); the
 * stream tags each chunk with its choice, and only the last choice to
 * end carries the usage (the prompt once, every choice's tokens) and
 * [DONE]. */
static void test_choices(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	server_reply_t r;
	const sched_request_t *q0 = expect_job(
		s, "/v1/completions", "{\"prompt\":\"a\",\"n\":3,\"seed\":10,"
		"\"stream\":true}", &r);
	server_job_t *j = r.job;
	assert_int_equal(api_job_n_choices(j), 3);
	assert_ptr_equal(api_job_choice(j, 0), api_job_work(j));
	for (int i = 0; i < 3; i++) {
		const sched_request_t *q = sched_job_request(api_job_choice(j, i));
		assert_int_equal(q->choice, i);
		assert_int_equal(q->sp.seed, 10 + i);
		assert_ptr_equal(q->ids, q0->ids);
		assert_int_equal(q->n_ids, q0->n_ids);
		assert_true(q->stream);
		assert_ptr_equal(q->first, i ? api_job_work(j) : NULL);
	}
	assert_string_equal(sched_job_request(api_job_choice(j, 2))->name, "cmpl-0.2");
	long long t = 0;
	{ /* the creation time, from a chunk */
		sbuf_t out = {0};
		api_format_event(j, &(sched_event_t){.kind = SCHED_EVENT_TEXT, .choice = 1,
						     .text = "x", .n = 1}, &out);
		assert_non_null(strstr(out.p, "[{\"index\":1,\"text\":\"x\""));
		t = strtoll(strstr(out.p, "\"created\":") + 10, NULL, 10);
		sbuf_free(&out);
	}
	expect_event(j, &(sched_event_t){.kind = SCHED_EVENT_END, .choice = 2,
					 .stop = STOP_EOS, .n_prompt = 3, .n_gen = 2},
		     CMPL_HEAD "[{\"index\":2,\"text\":\"\",\"logprobs\":null,"
		     "\"finish_reason\":\"stop\"}]}\n\n", t);
	expect_event(j, &(sched_event_t){.kind = SCHED_EVENT_END, .choice = 0,
					 .stop = STOP_LENGTH, .n_prompt = 3, .n_gen = 4},
		     CMPL_HEAD "[{\"index\":0,\"text\":\"\",\"logprobs\":null,"
		     "\"finish_reason\":\"length\"}]}\n\n", t);
	expect_event(j, &(sched_event_t){.kind = SCHED_EVENT_END, .choice = 1,
					 .stop = STOP_LENGTH, .n_prompt = 3, .n_gen = 4},
		     CMPL_HEAD "[{\"index\":1,\"text\":\"\",\"logprobs\":null,"
		     "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3,"
		     "\"completion_tokens\":10,\"total_tokens\":13}}\n\n" DONE, t);
	server_reply_free(&r);
	/* a reply of n choices before any ran: n empty choices, indexed */
	expect_job(s, "/v1/chat/completions", CHAT_BASE ",\"n\":2}", &r);
	int status = 0;
	char *body = api_format_reply(r.job, &status);
	assert_int_equal(status, 200);
	assert_non_null(strstr(body, "{\"index\":1,\"message\""));
	server_reply_free(&r);
	free(body);
	server_free(s);
}

/* ---- log-probabilities: the fields, then their shapes ---- */

static void test_logprobs_fields(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	server_reply_t r;
	const sched_request_t *q = expect_job(
		s, "/v1/chat/completions", CHAT_BASE ",\"logprobs\":true,\"top_logprobs\":20}", &r);
	assert_true(q->sp.logprobs);
	assert_int_equal(q->sp.top_logprobs, 20);
	server_reply_free(&r);
	q = expect_job(s, "/v1/chat/completions", CHAT_BASE ",\"logprobs\":false,"
		       "\"top_logprobs\":0}", &r);
	assert_false(q->sp.logprobs);
	server_reply_free(&r);
	q = expect_job(s, "/v1/completions", "{\"prompt\":\"a\",\"logprobs\":0}", &r);
	assert_true(q->sp.logprobs);
	assert_int_equal(q->sp.top_logprobs, 0);
	server_reply_free(&r);
	q = expect_job(s, "/v1/completions", "{\"prompt\":\"a\",\"logprobs\":5}", &r);
	assert_true(q->sp.logprobs);
	assert_int_equal(q->sp.top_logprobs, 5);
	server_reply_free(&r);
	BAD_CHAT(s, CHAT_BASE ",\"logprobs\":1}", "logprobs", NULL);
	BAD_CHAT(s, CHAT_BASE ",\"logprobs\":true,\"top_logprobs\":21}", "top_logprobs", NULL);
	BAD_CHAT(s, CHAT_BASE ",\"logprobs\":true,\"top_logprobs\":-1}", "top_logprobs", NULL);
	BAD_CHAT(s, CHAT_BASE ",\"logprobs\":true,\"top_logprobs\":\"2\"}", "top_logprobs", NULL);
	const char *m = BAD_CHAT(s, CHAT_BASE ",\"top_logprobs\":2}", "top_logprobs", NULL);
	assert_non_null(strstr(m, "logprobs"));
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"logprobs\":21}", "logprobs", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"logprobs\":true}", "logprobs", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"logprobs\":-1}", "logprobs", NULL);
	server_free(s);
}

/* The logprobs of an event of two tokens (ids 300 and 301 of the stories
 * tokenizer, after BOS) formatted in both shapes: each token's text as
 * it follows the one before, an alternative's as it would in the
 * token's place. */
static void test_format_logprobs(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	server_reply_t rc, rk;
	long long t;
	server_job_t *jc = format_job(s, "/v1/chat/completions", CHAT_BASE
				      ",\"stream\":true,\"logprobs\":true,\"top_logprobs\":2}",
				      &rc, &t);
	server_job_t *jk = format_job(s, "/v1/completions", "{\"prompt\":\"a\","
				      "\"stream\":true,\"logprobs\":2}", &rk, &t);
	engine_token_t tk[2] = {
		{.id = 300, .prev = 1, .lp = {.logprob = -0.25f, .n_top = 2,
					     .top_id = {300, 301},
					     .top_logprob = {-0.25f, -2.0f}}},
		{.id = 301, .prev = 300, .lp = {.logprob = -INFINITY, .n_top = 0}},
	};
	char p0[64], p1[64], alt[64]; /* alt: 301 in 300's place, after BOS */
	int n0 = tokenizer_decode(tok, 1, 300, p0, sizeof p0);
	int n1 = tokenizer_decode(tok, 300, 301, p1, sizeof p1);
	int na = tokenizer_decode(tok, 1, 301, alt, sizeof alt);
	assert_true(n0 > 0 && n1 > 0 && na > 0);
	p0[n0] = p1[n1] = alt[na] = 0;
	sched_event_t ev = {.kind = SCHED_EVENT_TEXT, .text = "x", .n = 1,
			    .tokens = tk, .n_tokens = 2};
	/* chat: content entries with token, logprob, bytes, top_logprobs */
	sbuf_t out = {0};
	api_format_event(jc, &ev, &out);
	json_t *root = json_loads(out.p + 6, 0, NULL); /* after "data: " */
	assert_non_null(root);
	json_t *c = json_object_get(json_object_get(json_array_get(
		json_object_get(root, "choices"), 0), "logprobs"), "content");
	assert_int_equal(json_array_size(c), 2);
	json_t *e0 = json_array_get(c, 0);
	assert_string_equal(json_string_value(json_object_get(e0, "token")), p0);
	assert_true(json_real_value(json_object_get(e0, "logprob")) == -0.25);
	assert_int_equal(json_array_size(json_object_get(e0, "bytes")), n0);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(e0, "bytes"), 0)),
			 (unsigned char)p0[0]);
	json_t *top = json_object_get(e0, "top_logprobs");
	assert_int_equal(json_array_size(top), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(top, 1), "token")), alt);
	assert_true(json_real_value(json_object_get(json_array_get(top, 1), "logprob")) == -2.0);
	/* -inf as OpenAI's floor */
	assert_true(json_real_value(json_object_get(json_array_get(c, 1), "logprob")) == -9999.0);
	json_decref(root);
	sbuf_free(&out);
	/* completions: tokens, token_logprobs, top_logprobs, text_offset that
	 * runs on from one chunk to the next */
	for (int rep = 0; rep < 2; rep++) {
		api_format_event(jk, &ev, &out);
		root = json_loads(out.p + 6, 0, NULL);
		assert_non_null(root);
		json_t *lp = json_object_get(json_array_get(json_object_get(root, "choices"), 0),
					     "logprobs");
		assert_string_equal(json_string_value(json_array_get(json_object_get(lp, "tokens"), 1)), p1);
		assert_true(json_real_value(json_array_get(json_object_get(lp, "token_logprobs"), 0)) == -0.25);
		json_t *t0 = json_array_get(json_object_get(lp, "top_logprobs"), 0);
		assert_true(json_real_value(json_object_get(t0, alt)) == -2.0);
		json_t *off = json_object_get(lp, "text_offset");
		assert_int_equal(json_integer_value(json_array_get(off, 0)), rep * (n0 + n1));
		assert_int_equal(json_integer_value(json_array_get(off, 1)), rep * (n0 + n1) + n0);
		json_decref(root);
		sbuf_free(&out);
	}
	/* the end chunk carries tokens that no text chunk did; without
	 * logprobs asked, null */
	sched_event_t end = {.kind = SCHED_EVENT_END, .stop = STOP_STRING, .tokens = tk,
			     .n_tokens = 1};
	api_format_event(jc, &end, &out);
	assert_non_null(strstr(out.p, "\"content\":[{\"token\""));
	sbuf_free(&out);
	server_reply_free(&rc);
	server_reply_free(&rk);
	server_free(s);
}

/* ---- /tokenize and /detokenize ---- */

/* The 200 body of a POST to path (parsed; the caller decrefs). */
static json_t *post_ok(server_t *s, const char *path, const char *body)
{
	server_reply_t r;
	request(s, "POST", path, NULL, body, &r);
	if (r.status != 200 || r.job)
		fail_msg("POST %s %s: %d %s", path, body, r.status, r.body ? r.body : "");
	json_t *root = json_loads(r.body, 0, NULL);
	assert_non_null(root);
	server_reply_free(&r);
	return root;
}

static void test_tokens(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	int32_t want[16];
	int64_t n = tokenizer_tokenize(tok, "Once upon a time", 16, false, true, want, 16);
	assert_true(n > 1 && n < 16);
	json_t *r = post_ok(s, "/tokenize", "{\"content\":\"Once upon a time\"}");
	json_t *t = json_object_get(r, "tokens");
	assert_int_equal(json_array_size(t), n);
	for (int64_t i = 0; i < n; i++)
		assert_int_equal(json_integer_value(json_array_get(t, (size_t)i)), want[i]);
	json_decref(r);
	/* add_special: BOS first */
	r = post_ok(s, "/tokenize", "{\"content\":\"Once\",\"add_special\":true}");
	assert_int_equal(json_integer_value(json_array_get(json_object_get(r, "tokens"), 0)),
			 tokenizer_bos(tok));
	json_decref(r);
	/* with_pieces: ids and their text, which put together is the text
	 * (the SentencePiece space in front included) */
	r = post_ok(s, "/tokenize", "{\"content\":\"Once upon a time\",\"with_pieces\":true}");
	t = json_object_get(r, "tokens");
	char joined[64] = "";
	for (size_t i = 0; i < json_array_size(t); i++) {
		json_t *e = json_array_get(t, i);
		assert_int_equal(json_integer_value(json_object_get(e, "id")), want[i]);
		strcat(joined, json_string_value(json_object_get(e, "piece")));
	}
	assert_string_equal(joined, " Once upon a time");
	json_decref(r);
	/* detokenize: the text back, BOS adding nothing */
	char body[256];
	int k = snprintf(body, sizeof body, "{\"tokens\":[%d", tokenizer_bos(tok));
	for (int64_t i = 0; i < n; i++)
		k += snprintf(body + k, sizeof body - (size_t)k, ",%d", want[i]);
	snprintf(body + k, sizeof body - (size_t)k, "]}");
	r = post_ok(s, "/detokenize", body);
	assert_string_equal(json_string_value(json_object_get(r, "content")), "Once upon a time");
	json_decref(r);
	r = post_ok(s, "/detokenize", "{\"tokens\":[]}");
	assert_string_equal(json_string_value(json_object_get(r, "content")), "");
	json_decref(r);
	/* bad requests */
	expect_error(s, "POST", "/tokenize", NULL, "{}", 400, "invalid_request_error",
		     "content", NULL);
	expect_error(s, "POST", "/tokenize", NULL, "{\"content\":5}", 400,
		     "invalid_request_error", "content", NULL);
	expect_error(s, "POST", "/tokenize", NULL, "{\"content\":\"a\",\"add_special\":1}",
		     400, "invalid_request_error", "add_special", NULL);
	expect_error(s, "POST", "/tokenize", NULL, "{\"content\":\"a\",\"x\":1}", 400,
		     "invalid_request_error", "x", "unsupported_parameter");
	expect_error(s, "POST", "/detokenize", NULL, "{\"tokens\":[1,512]}", 400,
		     "invalid_request_error", "tokens", NULL);
	expect_error(s, "POST", "/detokenize", NULL, "{\"tokens\":[-1]}", 400,
		     "invalid_request_error", "tokens", NULL);
	expect_error(s, "POST", "/detokenize", NULL, "{\"tokens\":\"1 2\"}", 400,
		     "invalid_request_error", "tokens", NULL);
	expect_error(s, "POST", "/detokenize", NULL, "{\"tokens\":[1],\"content\":\"a\"}",
		     400, "invalid_request_error", "content", "unsupported_parameter");
	expect_error(s, "GET", "/tokenize", NULL, NULL, 405, "invalid_request_error",
		     NULL, "method_not_allowed");
	expect_error(s, "POST", "/detokenize", NULL, "[1]", 400, "invalid_request_error",
		     NULL, NULL);
	server_free(s);
}

static int teardown(void **state)
{
	(void)state;
	tokenizer_free(tok);
	tok = NULL;
	return 0;
}

/* The output constraints: grammar, json_schema, response_format compile to
 * the job's grammar; a bad one is a 400 naming the field and where. */
static void test_grammar_fields(void **state)
{
	(void)state;
	server_t *s = server_for(chatml(), NULL, 0);
	server_reply_t r;
	const sched_request_t *q = expect_job(s, "/v1/completions",
		"{\"prompt\":\"a\",\"grammar\":\"root ::= [0-9]+\"}", &r);
	assert_non_null(q->grammar);
	server_reply_free(&r);
	q = expect_job(s, "/v1/chat/completions", CHAT_BASE ",\"response_format\":{\"type\":"
		       "\"json_schema\",\"json_schema\":{\"name\":\"x\",\"strict\":true,\"schema\":"
		       "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}}}}", &r);
	assert_non_null(q->grammar);
	server_reply_free(&r);
	q = expect_job(s, "/v1/completions", "{\"prompt\":\"a\",\"json_schema\":{\"enum\":[1,2]}}", &r);
	assert_non_null(q->grammar);
	server_reply_free(&r);
	q = expect_job(s, "/v1/chat/completions", CHAT_BASE ",\"response_format\":{\"type\":\"text\"}}", &r);
	assert_null(q->grammar);
	server_reply_free(&r);
	/* a grammar that does not parse: its line and column */
	const char *m = BAD_COMPLETION(s, "{\"prompt\":\"a\",\"grammar\":\"root ::= \\\"a\\\"\\nx ::= (\"}",
				       "grammar", NULL);
	if (!strstr(m, "line 2"))
		fail_msg("'%s' does not name the line", m);
	/* a schema with an unsupported keyword: its path */
	m = BAD_CHAT(s, CHAT_BASE ",\"json_schema\":{\"properties\":{\"a\":{\"minimum\":1}}}}",
		     "json_schema", NULL);
	assert_non_null(strstr(m, "#/properties/a/minimum"));
	m = BAD_CHAT(s, CHAT_BASE ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":"
		     "{\"name\":\"x\",\"schema\":{\"type\":\"string\",\"format\":\"email\"}}}}",
		     "response_format", NULL);
	assert_non_null(strstr(m, "#/format"));
	BAD_CHAT(s, CHAT_BASE ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\"}}}",
		 "response_format", NULL);
	BAD_CHAT(s, CHAT_BASE ",\"response_format\":{\"type\":\"xml\"}}", "response_format", NULL);
	BAD_CHAT(s, CHAT_BASE ",\"response_format\":\"json\"}", "response_format", NULL);
	BAD_CHAT(s, CHAT_BASE ",\"response_format\":{\"type\":\"json_object\",\"schema\":{}}}",
		 "response_format", NULL);
	BAD_CHAT(s, CHAT_BASE ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":"
		 "{\"schema\":{},\"strict\":\"yes\"}}}", "response_format", NULL);
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"grammar\":5}", "grammar", NULL);
	/* two constraints at once */
	m = BAD_CHAT(s, CHAT_BASE ",\"grammar\":\"root ::= \\\"a\\\"\",\"response_format\":"
		     "{\"type\":\"json_object\"}}", "response_format", NULL);
	assert_non_null(strstr(m, "both constrain"));
	BAD_COMPLETION(s, "{\"prompt\":\"a\",\"grammar\":\"root ::= \\\"a\\\"\",\"json_schema\":{}}",
		       "json_schema", NULL);
	/* text is no constraint: with a grammar, fine */
	q = expect_job(s, "/v1/chat/completions", CHAT_BASE ",\"grammar\":\"root ::= \\\"a\\\"\","
		       "\"response_format\":{\"type\":\"text\"}}", &r);
	assert_non_null(q->grammar);
	server_reply_free(&r);
	server_free(s);
}

/* ---- tools ---- */

#define TOOLS "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"," \
	"\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"enum\":" \
	"[\"Paris\",\"Rome\"]}},\"required\":[\"city\"]}}},{\"type\":\"function\"," \
	"\"function\":{\"name\":\"now\"}}]"
#define CALL_MSG "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":" \
	"\"c1\",\"type\":\"function\",\"function\":{\"name\":\"now\",\"arguments\":\"{}\"}}]}"

/* A server whose context holds the tools' long prompts. */
static server_t *server_for_tools(void)
{
	server_ctx = 2048;
	server_t *s = server_for(chatml(), NULL, 0);
	server_ctx = CTX;
	return s;
}

/* tools, tool_choice, parallel_tool_calls and the messages of a tool
 * conversation: a job (with a call's grammar for "required" and a named
 * function), or a 400 naming the field and the place. */
static void test_tools_fields(void **state)
{
	(void)state;
	server_t *s = server_for_tools();
	server_reply_t r;
	const sched_request_t *q = expect_job(s, "/v1/chat/completions",
					      CHAT_BASE "," TOOLS "}", &r);
	assert_null(q->grammar); /* auto: unconstrained */
	int64_t n_auto = q->n_ids;
	server_reply_free(&r);
	q = expect_job(s, "/v1/chat/completions", CHAT_BASE "," TOOLS
		       ",\"tool_choice\":\"none\"}", &r);
	assert_null(q->grammar);
	assert_true(q->n_ids < n_auto); /* none: the tools are not shown */
	server_reply_free(&r);
	q = expect_job(s, "/v1/chat/completions", CHAT_BASE "," TOOLS
		       ",\"tool_choice\":\"required\",\"parallel_tool_calls\":false}", &r);
	assert_non_null(q->grammar);
	server_reply_free(&r);
	q = expect_job(s, "/v1/chat/completions", CHAT_BASE "," TOOLS ",\"tool_choice\":"
		       "{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}}", &r);
	assert_non_null(q->grammar);
	server_reply_free(&r);
	/* a call and its result sent back */
	q = expect_job(s, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\","
		       "\"content\":\"time?\"}," CALL_MSG ",{\"role\":\"tool\",\"tool_call_id\":"
		       "\"c1\",\"content\":\"noon\"}]," TOOLS "}", &r);
	server_reply_free(&r);
	/* tool_choice */
	const char *m = BAD_CHAT(s, CHAT_BASE "," TOOLS ",\"tool_choice\":{\"type\":"
				 "\"function\",\"function\":{\"name\":\"nope\"}}}",
				 "tool_choice", NULL);
	assert_non_null(strstr(m, "'nope'"));
	BAD_CHAT(s, CHAT_BASE ",\"tool_choice\":\"required\"}", "tool_choice", NULL);
	BAD_CHAT(s, CHAT_BASE ",\"tool_choice\":\"sometimes\"," TOOLS "}", "tool_choice", NULL);
	BAD_CHAT(s, CHAT_BASE ",\"tool_choice\":{\"type\":\"function\"}," TOOLS "}",
		 "tool_choice", NULL);
	m = BAD_CHAT(s, CHAT_BASE "," TOOLS ",\"tool_choice\":\"required\","
		     "\"response_format\":{\"type\":\"json_object\"}}", "tool_choice", NULL);
	assert_non_null(strstr(m, "response_format"));
	BAD_CHAT(s, CHAT_BASE "," TOOLS ",\"parallel_tool_calls\":\"yes\"}",
		 "parallel_tool_calls", NULL);
	/* malformed tools: the place named */
	static const char *const bad_tools[][2] = {
		{"{}", "non-empty array"},
		{"[]", "non-empty array"},
		{"[{\"type\":\"code\"}]", "tools[0].type"},
		{"[{\"type\":\"function\",\"function\":{\"name\":\"a b\"}}]", "tools[0].function.name"},
		{"[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":1}}]",
		 "tools[0].function.parameters"},
		{"[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"x\":1}}]", "tools[0].function.x"},
		{"[{\"type\":\"function\",\"function\":{\"name\":\"f\"}},{\"type\":\"function\","
		 "\"function\":{\"name\":\"f\"}}]", "tools[1].function.name 'f'"},
	};
	for (size_t i = 0; i < EG_ARRAY_LEN(bad_tools); i++) {
		char body[512];
		snprintf(body, sizeof body, CHAT_BASE ",\"tools\":%s}", bad_tools[i][0]);
		m = BAD_CHAT(s, body, "tools", NULL);
		if (!strstr(m, bad_tools[i][1]))
			fail_msg("%s: '%s' does not name %s", body, m, bad_tools[i][1]);
	}
	/* a parameters schema the grammar cannot express, when a call is
	 * required */
	m = BAD_CHAT(s, CHAT_BASE ",\"tool_choice\":\"required\",\"tools\":[{\"type\":"
		     "\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":"
		     "\"object\",\"properties\":{\"a\":{\"minimum\":1}}}}}]}", "tools", NULL);
	assert_non_null(strstr(m, "tools[0].function.parameters"));
	assert_non_null(strstr(m, "#/properties/a/minimum"));
	/* the messages of a tool conversation */
	m = BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":"
		     "\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c\",\"type\":"
		     "\"function\",\"function\":{\"name\":\"now\",\"arguments\":\"{oops\"}}]}]}",
		     "messages", NULL);
	assert_non_null(strstr(m, "messages[1].tool_calls[0].function.arguments"));
	m = BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":"
		     "\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c\",\"type\":"
		     "\"function\",\"function\":{\"arguments\":\"{}\"}}]}]}", "messages", NULL);
	assert_non_null(strstr(m, "messages[1].tool_calls[0].function.name"));
	m = BAD_CHAT(s, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":"
		     "\"tool\",\"content\":\"r\"}]}", "messages", NULL);
	assert_non_null(strstr(m, "messages[1].tool_call_id"));
	server_free(s);
}

/* The events of a streamed job as the JSON of each "data: " line
 * (NULL-terminated array; [DONE] as the string "[DONE]"). */
static json_t **sse_events(server_job_t *j, const sched_event_t *ev)
{
	sbuf_t out = {0};
	api_format_event(j, ev, &out);
	json_t **e = calloc(16, sizeof *e);
	int n = 0;
	for (char *p = out.p; p && (p = strstr(p, "data: ")) && n < 15; p += 6)
		e[n++] = !strncmp(p + 6, "[DONE]", 6) ? json_string("[DONE]")
						       : json_loads(p + 6, JSON_DISABLE_EOF_CHECK, NULL);
	sbuf_free(&out);
	return e;
}

static void events_free(json_t **e)
{
	for (int i = 0; e[i]; i++)
		json_decref(e[i]);
	free(e);
}

/* choices[0].delta of event e. */
static json_t *delta_of(json_t *e)
{
	return json_object_get(json_array_get(json_object_get(e, "choices"), 0), "delta");
}

static const char *str_at(json_t *o, const char *path)
{
	json_t *v = o;
	char key[64];
	for (const char *p = path; v && *p;) {
		size_t n = strcspn(p, ".");
		snprintf(key, sizeof key, "%.*s", (int)n, p);
		v = json_is_array(v) ? json_array_get(v, (size_t)atoi(key))
				     : json_object_get(v, key);
		p += n + (p[n] == '.');
	}
	return json_string_value(v);
}

/* A streamed answer with tools: text that may begin a call waits; a call
 * goes out as OpenAI streams one (index, id, type and name first, then
 * the arguments), finish_reason "tool_calls"; text that turns out not to
 * be a call goes out as content. */
static void test_format_tools(void **state)
{
	(void)state;
	server_t *s = server_for_tools();
	server_reply_t r;
	expect_job(s, "/v1/chat/completions", CHAT_BASE "," TOOLS ",\"stream\":true}", &r);
	server_job_t *j = r.job;
	json_t **e = sse_events(j, &(sched_event_t){.kind = SCHED_EVENT_TEXT,
						    .text = "Sure.", .n = 5});
	assert_string_equal(json_string_value(json_object_get(delta_of(e[0]), "content")),
			    "Sure.");
	assert_null(e[1]);
	events_free(e);
	e = sse_events(j, &(sched_event_t){.kind = SCHED_EVENT_TEXT, .text = "\n<tool_", .n = 7});
	assert_null(e[0]); /* may begin a call: held */
	events_free(e);
	static const char call[] = "call>\n{\"name\": \"get_weather\", \"arguments\": "
				   "{\"city\": \"Rome\"}}\n</tool_call>";
	e = sse_events(j, &(sched_event_t){.kind = SCHED_EVENT_TEXT, .text = call,
					   .n = sizeof call - 1});
	assert_null(e[0]);
	events_free(e);
	e = sse_events(j, &(sched_event_t){.kind = SCHED_EVENT_END, .stop = STOP_EOS,
					   .n_prompt = 9, .n_gen = 20});
	json_t *d0 = delta_of(e[0]), *d1 = delta_of(e[1]);
	assert_non_null(d0);
	assert_null(json_object_get(d0, "content"));
	assert_int_equal(json_integer_value(json_object_get(json_array_get(
		json_object_get(d0, "tool_calls"), 0), "index")), 0);
	assert_non_null(str_at(d0, "tool_calls.0.id"));
	assert_true(!strncmp(str_at(d0, "tool_calls.0.id"), "call_", 5));
	assert_string_equal(str_at(d0, "tool_calls.0.type"), "function");
	assert_string_equal(str_at(d0, "tool_calls.0.function.name"), "get_weather");
	assert_string_equal(str_at(d0, "tool_calls.0.function.arguments"), "");
	assert_null(str_at(d1, "tool_calls.0.id"));
	assert_string_equal(str_at(d1, "tool_calls.0.function.arguments"), "{\"city\":\"Rome\"}");
	assert_string_equal(str_at(e[2], "choices.0.finish_reason"), "tool_calls");
	assert_string_equal(json_string_value(e[3]), "[DONE]");
	assert_null(e[4]);
	events_free(e);
	server_reply_free(&r);
	/* text that looked like a call's start, and a call to an unknown
	 * function: content, finish_reason from the stop */
	expect_job(s, "/v1/chat/completions", CHAT_BASE "," TOOLS ",\"stream\":true}", &r);
	j = r.job;
	e = sse_events(j, &(sched_event_t){.kind = SCHED_EVENT_TEXT, .text = "Hi <tool", .n = 8});
	assert_string_equal(json_string_value(json_object_get(delta_of(e[0]), "content")), "Hi");
	events_free(e);
	e = sse_events(j, &(sched_event_t){.kind = SCHED_EVENT_TEXT, .text = "s> ", .n = 3});
	assert_string_equal(json_string_value(json_object_get(delta_of(e[0]), "content")),
			    " <tools>");
	events_free(e);
	static const char bad[] = "<tool_call>\n{\"name\": \"rm\", \"arguments\": {}}\n</tool_call>";
	e = sse_events(j, &(sched_event_t){.kind = SCHED_EVENT_TEXT, .text = bad, .n = sizeof bad - 1});
	assert_null(e[0]);
	events_free(e);
	e = sse_events(j, &(sched_event_t){.kind = SCHED_EVENT_END, .stop = STOP_EOS});
	const char *c0 = json_string_value(json_object_get(delta_of(e[0]), "content"));
	assert_true(c0 && c0[0] == ' ' && !strcmp(c0 + 1, bad)); /* the held space too */
	assert_string_equal(str_at(e[1], "choices.0.finish_reason"), "stop");
	events_free(e);
	server_reply_free(&r);
	/* parallel_tool_calls false: the first call only */
	expect_job(s, "/v1/chat/completions", CHAT_BASE "," TOOLS ",\"stream\":true,"
		   "\"parallel_tool_calls\":false}", &r);
	static const char two[] = "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n"
				  "</tool_call>\n<tool_call>\n{\"name\": \"now\", "
				  "\"arguments\": {}}\n</tool_call>";
	e = sse_events(r.job, &(sched_event_t){.kind = SCHED_EVENT_TEXT, .text = two,
					       .n = sizeof two - 1});
	events_free(e);
	e = sse_events(r.job, &(sched_event_t){.kind = SCHED_EVENT_END, .stop = STOP_EOS});
	assert_string_equal(str_at(e[0], "choices.0.delta.tool_calls.0.function.name"), "now");
	assert_string_equal(str_at(e[1], "choices.0.delta.tool_calls.0.function.arguments"), "{}");
	assert_string_equal(str_at(e[2], "choices.0.finish_reason"), "tool_calls");
	events_free(e);
	server_reply_free(&r);
	server_free(s);
}

int main(void)
{
	log_quiet = true;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalid_json),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_roles),
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_stop_lists),
		cmocka_unit_test(test_context),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_unsupported_fields),
		cmocka_unit_test(test_grammar_fields),
		cmocka_unit_test(test_processing_fields),
		cmocka_unit_test(test_logprobs_fields),
		cmocka_unit_test(test_format_logprobs),
		cmocka_unit_test(test_tokens),
		cmocka_unit_test(test_error_body),
		cmocka_unit_test(test_format_completion),
		cmocka_unit_test(test_format_chat),
		cmocka_unit_test(test_format_reply),
		cmocka_unit_test(test_tools_fields),
		cmocka_unit_test(test_format_tools),
		cmocka_unit_test(test_choices),
	};
	return cmocka_run_group_tests(tests, NULL, teardown);
}
