/* api_fields: the request fields of /v1/chat/completions and
 * /v1/completions that egang knows, one table: which endpoint takes each,
 * whether egang implements it, accepts it only at its no-op default, or
 * refuses it, and what it does. The check (every field of a request is in
 * the table for its endpoint, and one accepted only at its default has
 * that value) and `egang serve --help`'s list are both read from it, so
 * the two cannot disagree. A field not in the table is refused too: the
 * OpenAI API answers an unknown parameter with a 400 naming it, and so
 * does egang, rather than ignore a field a client thought mattered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api_impl.h"

enum { F_CHAT = 1, F_CMPL = 2, F_BOTH = 3 }; /* endpoints, a bit each */

typedef enum field_kind {
	FIELD_USED,    /* implemented: its value is checked and honoured */
	FIELD_DEFAULT, /* accepted only at its no-op default (is_default) */
	FIELD_REFUSED, /* any value but null: 400 unsupported_parameter */
	FIELD_COUNT
} field_kind_t;

typedef struct api_field {
	const char *name;
	unsigned eps;         /* F_CHAT | F_CMPL */
	field_kind_t kind;
	bool (*is_default)(const json_t *v); /* FIELD_DEFAULT: the values taken */
	const char *only;     /* FIELD_DEFAULT: those values, in words */
	const char *help;     /* what it does (or why refused); lines of at
				 most 50 characters */
} api_field_t;

static bool is_one(const json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) == 1;
}

static bool is_false(const json_t *v) { return json_is_false(v); }

static bool is_empty_string(const json_t *v)
{
	return json_is_string(v) && json_string_length(v) == 0;
}

static bool is_text_modality(const json_t *v)
{
	json_t *t = json_array_get(v, 0);
	return json_is_array(v) && json_array_size(v) == 1 && json_is_string(t) &&
	       !strcmp(json_string_value(t), "text");
}

/* {} or {"include_usage": BOOL}: usage rides on the last chunk anyway */
static bool is_stream_options(const json_t *v)
{
	json_t *u = json_object_get(v, "include_usage");
	return json_is_object(v) &&
	       json_object_size(v) == (size_t)(u != NULL) &&
	       (!u || json_is_boolean(u));
}

static const api_field_t fields[] = {
	/* ---- implemented ---- */
	{"model", F_BOTH, FIELD_USED, 0, 0,
	 "the served model's id or file name (else 404)"},
	{"messages", F_CHAT, FIELD_USED, 0, 0,
	 "system/developer, user and assistant messages:\n"
	 "{role, content}, content a string or text parts;\n"
	 "rendered with the model's chat template"},
	{"prompt", F_CMPL, FIELD_USED, 0, 0,
	 "a string (or an array of one string); BOS first"},
	{"max_tokens", F_BOTH, FIELD_USED, 0, 0,
	 "tokens to generate, 1..ctx (default: chat ctx,\n"
	 "completions 16)"},
	{"max_completion_tokens", F_CHAT, FIELD_USED, 0, 0,
	 "max_tokens under its newer name"},
	{"temperature", F_BOTH, FIELD_USED, 0, 0,
	 "0..2 (default 1); 0 is greedy"},
	{"top_p", F_BOTH, FIELD_USED, 0, 0,
	 "nucleus, (0, 1] (default 1: off), after\n"
	 "temperature"},
	{"top_k", F_BOTH, FIELD_USED, 0, 0,
	 "the k likeliest tokens, 0..vocab (0: off);\n"
	 "llama.cpp's extension"},
	{"seed", F_BOTH, FIELD_USED, 0, 0,
	 "a non-negative integer: the same request, the same\n"
	 "tokens (default: from the clock)"},
	{"stop", F_BOTH, FIELD_USED, 0, 0,
	 "a string or up to 4 (256 bytes each): the text\n"
	 "ends before the first, finish_reason \"stop\""},
	{"stream", F_BOTH, FIELD_USED, 0, 0,
	 "true: server-sent events, usage in the last chunk"},
	{"logit_bias", F_BOTH, FIELD_USED, 0, 0,
	 "{\"TOKEN_ID\": BIAS}, -100..100, added to the logit\n"
	 "before sampling and greedy alike; 100 forces the\n"
	 "token (only such tokens), -100 bans it"},
	{"presence_penalty", F_BOTH, FIELD_USED, 0, 0,
	 "-2..2 (0: off), OpenAI's: subtracted once from the\n"
	 "logit of each token generated so far"},
	{"frequency_penalty", F_BOTH, FIELD_USED, 0, 0,
	 "-2..2 (0: off), OpenAI's: subtracted per time a\n"
	 "token was generated so far"},
	{"repetition_penalty", F_BOTH, FIELD_USED, 0, 0,
	 "(0, 100] (1: off), llama.cpp's repeat_penalty: the\n"
	 "logit of each token among the last repeat_last_n\n"
	 "(prompt included) divided by it (multiplied when\n"
	 "negative)"},
	{"repeat_last_n", F_BOTH, FIELD_USED, 0, 0,
	 "its window, -1..ctx (default 64, -1: the context,\n"
	 "0: off), llama.cpp's"},
	{"min_p", F_BOTH, FIELD_USED, 0, 0,
	 "0..1 (0: off), llama.cpp's: after top_k and top_p,\n"
	 "drops tokens whose probability at temperature 1 is\n"
	 "under min_p times the likeliest's"},
	{"logprobs", F_CHAT, FIELD_USED, 0, 0,
	 "true: each token's log-probability in choices[].\n"
	 "logprobs.content (streamed: in each chunk), of the\n"
	 "model's distribution after logit_bias and the\n"
	 "penalties, at temperature 1, before temperature,\n"
	 "top_k, top_p and min_p (greedy's token is the most\n"
	 "likely; llama.cpp's n_probs without post-sampling)"},
	{"top_logprobs", F_CHAT, FIELD_USED, 0, 0,
	 "0..20 alternatives per token, likeliest first\n"
	 "(with logprobs: true)"},
	{"logprobs", F_CMPL, FIELD_USED, 0, 0,
	 "0..20: tokens, token_logprobs, that many\n"
	 "top_logprobs and text_offset (bytes into the\n"
	 "completion) in choices[].logprobs; the same\n"
	 "distribution as chat's"},
	{"tools", F_CHAT, FIELD_USED, 0, 0,
	 "[{\"type\": \"function\", \"function\": {name,\n"
	 "description, parameters}}]: shown to the model in\n"
	 "its template's tool syntax (<tool_call> blocks for\n"
	 "ChatML and Qwen3, Llama 3.1's JSON, <tool_call>\n"
	 "blocks in plain turns for the others); a call in\n"
	 "the answer becomes message.tool_calls (streamed:\n"
	 "delta.tool_calls), finish_reason \"tool_calls\""},
	{"tool_choice", F_CHAT, FIELD_USED, 0, 0,
	 "\"auto\" (with tools; unconstrained: text or\n"
	 "calls), \"none\" (tools not shown, text only),\n"
	 "\"required\" or {\"type\": \"function\", \"function\":\n"
	 "{\"name\"}}: one call, its syntax and arguments\n"
	 "forced by a grammar (the parameters schema)"},
	{"parallel_tool_calls", F_CHAT, FIELD_USED, 0, 0,
	 "true (default): every call the answer holds;\n"
	 "false: the first only"},
	{"response_format", F_BOTH, FIELD_USED, 0, 0,
	 "{\"type\": \"text\"} (default), {\"type\":\n"
	 "\"json_object\"}: any JSON object (up to 8 levels,\n"
	 "16 members or items each, strings of 256\n"
	 "characters), or {\"type\": \"json_schema\",\n"
	 "\"json_schema\": {\"name\", \"schema\", \"strict\"}}:\n"
	 "JSON valid under the schema, keys in its order\n"
	 "(always strict; `egang grammar from-schema` shows\n"
	 "the grammar; an unsupported keyword: 400 naming\n"
	 "it and its schema path)"},
	{"json_schema", F_BOTH, FIELD_USED, 0, 0,
	 "llama.cpp's: a JSON schema object, as\n"
	 "response_format's json_schema.schema"},
	{"grammar", F_BOTH, FIELD_USED, 0, 0,
	 "llama.cpp's: GBNF text (its grammars/README.md);\n"
	 "the output matches root. One of grammar,\n"
	 "json_schema, response_format (400 for two). A\n"
	 "step where the grammar allows no token ends the\n"
	 "request with a 500 naming the grammar (streamed:\n"
	 "an error event)"},
	{"n", F_BOTH, FIELD_USED, 0, 0,
	 "1..8 choices (default 1), each its own sequence:\n"
	 "choices[i] with index i (streamed: chunks tagged\n"
	 "with it); seeded seed+i when seed is given; the\n"
	 "prompt computed once (with --parallel > 1, the\n"
	 "others copy its KV); usage counts the prompt once\n"
	 "and every choice's tokens"},
	{"user", F_BOTH, FIELD_USED, 0, 0,
	 "a string identifying the end user; accepted, no\n"
	 "effect on the output (egang keeps no record)"},
	/* ---- accepted at their no-op default only ---- */
	{"echo", F_CMPL, FIELD_DEFAULT, is_false, "false", "the prompt is not echoed"},
	{"best_of", F_CMPL, FIELD_DEFAULT, is_one, "1", "one candidate"},
	{"suffix", F_CMPL, FIELD_DEFAULT, is_empty_string, "\"\"", "no insertion"},
	{"stream_options", F_BOTH, FIELD_DEFAULT, is_stream_options,
	 "{} or {\"include_usage\": true|false}",
	 "usage is in the last chunk whatever include_usage"},
	{"modalities", F_CHAT, FIELD_DEFAULT, is_text_modality, "[\"text\"]", "text out"},
	{"store", F_CHAT, FIELD_DEFAULT, is_false, "false", "nothing is stored"},
	/* ---- refused ---- */
	{"functions", F_CHAT, FIELD_REFUSED, 0, 0,
	 "OpenAI's deprecated form: send tools"},
	{"function_call", F_CHAT, FIELD_REFUSED, 0, 0,
	 "OpenAI's deprecated form: send tool_choice"},
	{"audio", F_CHAT, FIELD_REFUSED, 0, 0, "text only"},
	{"prediction", F_CHAT, FIELD_REFUSED, 0, 0, "no predicted outputs"},
	{"reasoning_effort", F_CHAT, FIELD_REFUSED, 0, 0, "no reasoning control"},
	{"web_search_options", F_CHAT, FIELD_REFUSED, 0, 0, "no web search"},
	{"metadata", F_CHAT, FIELD_REFUSED, 0, 0, "nothing is stored"},
	{"service_tier", F_CHAT, FIELD_REFUSED, 0, 0, "one tier"},
	{"verbosity", F_CHAT, FIELD_REFUSED, 0, 0, "no verbosity control"},
	{"prompt_cache_key", F_CHAT, FIELD_REFUSED, 0, 0,
	 "the prefix cache needs no key"},
	{"safety_identifier", F_CHAT, FIELD_REFUSED, 0, 0, "no safety monitoring"},
};

static unsigned ep_bit(server_endpoint_t ep)
{
	return ep == EP_CHAT ? F_CHAT : F_CMPL;
}

static const char *ep_path(server_endpoint_t ep)
{
	return ep == EP_CHAT ? "/v1/chat/completions" : "/v1/completions";
}

/* The entry for name on ep, NULL when egang does not know it there. */
static const api_field_t *field_find(server_endpoint_t ep, const char *name)
{
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
		if ((fields[i].eps & ep_bit(ep)) && !strcmp(fields[i].name, name))
			return &fields[i];
	return NULL;
}

/* v as compact JSON, cut to fit in n bytes. */
static void value_text(const json_t *v, char *buf, size_t n)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	snprintf(buf, n, "%s", s ? s : "?");
	if (s && strlen(s) >= n && n > 4)
		memcpy(buf + n - 4, "...", 4);
	free(s);
}

int api_fields_check(server_endpoint_t ep, json_t *root, server_reply_t *out)
{
	const char *name;
	json_t *v;
	json_object_foreach(root, name, v) {
		const api_field_t *f = field_find(ep, name);
		char val[48];
		if (!f) {
			REPLY_ERR(out, 400, name, "unsupported_parameter",
				  "'%.60s' is not a field of %s that egang "
				  "implements (`egang serve --help` lists them)",
				  name, ep_path(ep));
			return -1;
		}
		if (json_is_null(v) || f->kind == FIELD_USED)
			continue; /* null: absent, as OpenAI reads it */
		if (f->kind == FIELD_DEFAULT && f->is_default(v))
			continue;
		value_text(v, val, sizeof val);
		if (f->kind == FIELD_DEFAULT)
			REPLY_ERR(out, 400, name, "unsupported_parameter",
				  "'%s' is %s; egang implements only %s: %s (%s)",
				  name, val, name, f->only, f->help);
		else
			REPLY_ERR(out, 400, name, "unsupported_parameter",
				  "'%s' is not supported by egang: %s", name, f->help);
		return -1;
	}
	return 0;
}

/* One entry's lines: name, endpoints, help (continuation lines
 * indented under the first). */
static void field_print(FILE *out, const api_field_t *f)
{
	const char *eps = f->eps == F_BOTH ? "both" : f->eps == F_CHAT ? "chat" : "cmpl";
	char name[64];
	if (f->kind == FIELD_DEFAULT)
		snprintf(name, sizeof name, "%s: %s", f->name, f->only);
	else
		snprintf(name, sizeof name, "%s", f->name);
	bool long_name = strlen(name) > 22; /* alone on its line */
	if (long_name)
		fprintf(out, "  %s\n", name);
	fprintf(out, "  %-22s %s ", long_name ? "" : name, eps);
	for (const char *p = f->help; *p; p++) {
		fputc(*p, out);
		if (*p == '\n')
			fprintf(out, "  %-22s      ", "");
	}
	fputc('\n', out);
}

void api_fields_help(FILE *out)
{
	static const char *const heads[FIELD_COUNT] = {
		("Request fields (chat: /v1/chat/completions, cmpl: /v1/completions,\n"
		 "both). null is the same as leaving a field out. Implemented:\n"),
		"Accepted only at their no-op default (any other value is refused):\n",
		"Refused, whatever the value (400, code \"unsupported_parameter\"):\n",
	};
	for (int k = 0; k < FIELD_COUNT; k++) {
		fprintf(out, "\n%s", heads[k]);
		for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
			if (fields[i].kind == (field_kind_t)k)
				field_print(out, &fields[i]);
	}
	fputs("Any other field is refused the same way, naming it: egang never\n"
	      "ignores a field a client thought mattered. A message takes role and\n"
	      "content; an assistant's also tool_calls (its content may be null), a\n"
	      "tool result {\"role\": \"tool\", \"content\", \"tool_call_id\"}; name,\n"
	      "refusal, audio and function_call only as null.\n"
	      "\n"
	      "POST /tokenize {\"content\": TEXT, \"add_special\": false, \"parse_special\":\n"
	      "true, \"with_pieces\": false} -> {\"tokens\": [ID...]} (with_pieces: [{\"id\",\n"
	      "\"piece\"}]) and POST /detokenize {\"tokens\": [ID...]} -> {\"content\": TEXT},\n"
	      "in llama.cpp server's shapes; the ids are `egang tokenize`'s.\n",
	      out);
}
