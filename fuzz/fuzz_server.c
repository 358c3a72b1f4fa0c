/* libFuzzer harness: server_handle_json (request to reply, no network).
 *
 * Input: byte 0 chooses the request line and the server: bits 0-2 the
 * (method, path) pair, bit 3 whether an Authorization header is sent,
 * bits 4-5 the chat template (ChatML from the vocabulary, Llama 2, Llama 3,
 * Zephyr), bit 6 an API key on the server; the rest is the body. Every
 * reply must be a status with a JSON body (or a job), and nothing leaks. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "model/tokenizer.h"
#include "server/server.h"

static const char *const templates[4] = {
	NULL, "{% for m in messages %}[INST] {{ m.content }} [/INST]{% endfor %}",
	"<|start_header_id|>{{ role }}<|end_header_id|>",
	"<|user|>\n{{ content }}</s>\n<|assistant|>"};

static const struct {
	const char *method, *path;
} routes[8] = {
	{"POST", "/v1/completions"}, {"POST", "/v1/chat/completions"},
	{"GET", "/v1/models"},       {"GET", "/health"},
	{"GET", "/metrics"},         {"GET", "/v1/completions"},
	{"POST", "/v1/models/fuzz"}, {"PUT", "/elsewhere"},
};

static server_t *servers[8];
static tokenizer_t *tok;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!tok) {
		log_quiet = true;
		tok = tokenizer_synth(TOKENIZER_GPT2, 600, 1);
		if (!tok)
			abort();
	}
	if (size < 1)
		return 0;
	uint8_t sel = data[0];
	int si = (sel >> 4) & 7;
	if (!servers[si]) {
		server_config_t cfg = {
			.tok = tok,
			.model_id = "fuzz",
			.model_file = "fuzz.gguf",
			.chat_template = templates[si & 3],
			.ctx = 64,
			.max_queue = 4,
			.api_key = si & 4 ? "sekrit" : NULL,
		};
		servers[si] = server_new(&cfg);
		if (!servers[si])
			abort();
	}
	server_t *s = servers[si];
	const char *auth = sel & 8 ? "Bearer sekrit" : NULL;
	server_reply_t r;
	server_handle_json(s, routes[sel & 7].method, routes[sel & 7].path, auth,
			   (const char *)data + 1, size - 1, &r);
	if (r.status < 200 || r.status > 599)
		abort();
	if (r.job) {
		if (r.status != 200 || r.body)
			abort();
	} else if (!(r.endpoint == EP_METRICS && r.status == 200)) {
		json_t *j = json_loads(r.body, 0, NULL); /* every reply is JSON */
		if (!j)
			abort();
		json_decref(j);
	}
	server_count(s, r.endpoint, r.status);
	server_reply_free(&r);
	return 0;
}
