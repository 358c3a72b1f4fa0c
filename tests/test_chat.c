/* Chat templates (model/chat.h): recognition by markers, the rendered text
 * of each kind, and the tokenization of that text (BOS/EOS spellings to
 * their ids, BOS first once); tools (model/chat_tools.h): calls found in
 * a model's text, while it streams too, and the grammar of a call. */
#include "testutil.h"

#include "base/base.h"
#include "model/chat.h"
#include "model/chat_tools.h"
#include "model/grammar.h"
#include "model/tokenizer.h"

static const chat_msg_t conv[] = {
	{.role = "system", .text = "Be brief.", .len = 9},
	{.role = "user", .text = "Hi", .len = 2},
	{.role = "assistant", .text = "Hello", .len = 5},
	{.role = "user", .text = "Bye", .len = 3},
};

static void test_kind(void **state)
{
	tokenizer_t *gpt2 = tokenizer_synth(TOKENIZER_GPT2, 600, 1);
	tokenizer_t *llama = tokenizer_synth(TOKENIZER_LLAMA, 600, 1);
	assert_int_equal(chat_kind("{{'<|im_start|>' + m.role}}", NULL), CHAT_CHATML);
	assert_int_equal(chat_kind("<|start_header_id|>{{ role }}", NULL), CHAT_LLAMA3);
	assert_int_equal(chat_kind("{{ bos_token }}[INST] {{ m }} [/INST]", NULL), CHAT_LLAMA2);
	assert_int_equal(chat_kind("<|user|>\n{{ c }}</s>\n<|assistant|>", NULL), CHAT_ZEPHYR);
	assert_int_equal(chat_kind("<|user|> only", NULL), CHAT_NONE);
	assert_int_equal(chat_kind("{{ something else }}", llama), CHAT_NONE);
	assert_int_equal(chat_kind(NULL, gpt2), CHAT_CHATML); /* has <|im_start|> */
	assert_int_equal(chat_kind(NULL, NULL), CHAT_NONE);
	assert_string_equal(chat_name(CHAT_LLAMA3), "llama3");
	assert_string_equal(chat_name(CHAT_COUNT), "?");
	tokenizer_free(gpt2);
	tokenizer_free(llama);
}

static void check_render(const char *tmpl, const tokenizer_t *tok, bool gen,
			 const char *want)
{
	chat_template_t *t = chat_template_new(tmpl, tok);
	char *text;
	int64_t n = chat_render(t, conv, 4, gen, &text);
	assert_int_equal(n, (int64_t)strlen(want));
	assert_string_equal(text, want);
	free(text);
	chat_template_free(t);
}

static void test_render(void **state)
{
	tokenizer_t *llama = tokenizer_synth(TOKENIZER_LLAMA, 600, 1);
	check_render("<|im_start|>", llama, true,
		     "<|im_start|>system\nBe brief.<|im_end|>\n"
		     "<|im_start|>user\nHi<|im_end|>\n"
		     "<|im_start|>assistant\nHello<|im_end|>\n"
		     "<|im_start|>user\nBye<|im_end|>\n"
		     "<|im_start|>assistant\n");
	check_render("<|im_start|>", llama, false,
		     "<|im_start|>system\nBe brief.<|im_end|>\n"
		     "<|im_start|>user\nHi<|im_end|>\n"
		     "<|im_start|>assistant\nHello<|im_end|>\n"
		     "<|im_start|>user\nBye<|im_end|>\n");
	check_render("[INST]", llama, true,
		     "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello </s>"
		     "<s>[INST] Bye [/INST]");
	check_render("<|start_header_id|>", llama, true,
		     "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
		     "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
		     "<|start_header_id|>assistant<|end_header_id|>\n\nHello<|eot_id|>"
		     "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
		     "<|start_header_id|>assistant<|end_header_id|>\n\n");
	check_render("<|user|><|assistant|>", llama, true,
		     "<|system|>\nBe brief.</s>\n<|user|>\nHi</s>\n"
		     "<|assistant|>\nHello</s>\n<|user|>\nBye</s>\n<|assistant|>\n");
	/* no template, an unknown role: errors */
	chat_template_t *none = chat_template_new(NULL, llama);
	char *text;
	assert_int_equal(chat_render(none, conv, 4, true, &text), -1);
	assert_null(text);
	chat_template_free(none);
	chat_template_t *t = chat_template_new("<|im_start|>", llama);
	chat_msg_t bad = {.role = "wizard", .text = "x", .len = 1};
	assert_int_equal(chat_render(t, &bad, 1, true, &text), -1);
	assert_non_null(strstr(err_get(), "wizard"));
	chat_template_free(t);
	tokenizer_free(llama);
}

/* A ChatML template that writes a default system message (SmolLM2's,
 * with its literal newlines; Qwen2.5's style with the escape \n) renders
 * it before a conversation that does not start with a system message, and
 * not before one that does; a template without one, or whose "default"
 * holds an expression, renders none. */
static void test_chatml_default_system(void **state)
{
	static const char smollm2[] =
		"{% for message in messages %}{% if loop.first and "
		"messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou "
		"are a helpful AI assistant named SmolLM, trained by Hugging "
		"Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + "
		"message['role'] + '\n' + message['content'] + '<|im_end|>' + "
		"'\n'}}{% endfor %}";
	static const char qwen[] =
		"{%- if messages[0]['role'] != 'system' %}{{- "
		"'<|im_start|>system\\nYou are Qwen, it\\'s \\\\ ok.<|im_end|>\\n' }}";
	static const char expr[] =
		"{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n' + "
		"x + '<|im_end|>' }}";
	tokenizer_t *llama = tokenizer_synth(TOKENIZER_LLAMA, 600, 1);
	char *text;
	chat_template_t *t = chat_template_new(smollm2, llama);
	assert_int_equal(chat_template_kind(t), CHAT_CHATML);
	static const char want[] =
		"<|im_start|>system\nYou are a helpful AI assistant named SmolLM, "
		"trained by Hugging Face<|im_end|>\n"
		"<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
	assert_int_equal(chat_render(t, conv + 1, 1, true, &text), (int64_t)strlen(want));
	assert_string_equal(text, want);
	free(text);
	assert_true(chat_render(t, conv, 2, false, &text) > 0); /* its own system */
	assert_string_equal(text, "<|im_start|>system\nBe brief.<|im_end|>\n"
				  "<|im_start|>user\nHi<|im_end|>\n");
	free(text);
	assert_int_equal(chat_render(t, conv, 0, false, &text), 0); /* no messages */
	free(text);
	chat_template_free(t);
	t = chat_template_new(qwen, llama);
	assert_true(chat_render(t, conv + 1, 1, false, &text) > 0);
	assert_string_equal(text, "<|im_start|>system\nYou are Qwen, it's \\ ok.<|im_end|>\n"
				  "<|im_start|>user\nHi<|im_end|>\n");
	free(text);
	chat_template_free(t);
	t = chat_template_new(expr, llama);
	assert_true(chat_render(t, conv + 1, 1, false, &text) > 0);
	assert_string_equal(text, "<|im_start|>user\nHi<|im_end|>\n");
	free(text);
	chat_template_free(t);
	tokenizer_free(llama);
}

/* ids of text encoded as a prompt, without BOS */
static int64_t enc(const tokenizer_t *tok, const char *s, int32_t *ids)
{
	return tokenizer_encode(tok, s, strlen(s), false, ids, 256);
}

static void test_tokenize(void **state)
{
	tokenizer_t *tok = tokenizer_synth(TOKENIZER_LLAMA, 600, 1);
	int32_t bos = tokenizer_bos(tok), eos = tokenizer_eos(tok);
	chat_template_t *t = chat_template_new("[INST]", tok);
	/* BOS, "[INST] Hi [/INST] Hello ", EOS, BOS, "[INST] Bye [/INST]" */
	const char *text = "[INST] Hi [/INST] Hello </s><s>[INST] Bye [/INST]";
	int32_t got[256], a[256], b[256];
	int64_t n = chat_tokenize(t, text, strlen(text), got, 256);
	int64_t na = enc(tok, "[INST] Hi [/INST] Hello ", a);
	int64_t nb = enc(tok, "[INST] Bye [/INST]", b);
	assert_int_equal(n, 1 + na + 2 + nb);
	assert_int_equal(got[0], bos);
	assert_memory_equal(got + 1, a, (size_t)na * sizeof *a);
	assert_int_equal(got[1 + na], eos);
	assert_int_equal(got[2 + na], bos);
	assert_memory_equal(got + 3 + na, b, (size_t)nb * sizeof *b);
	/* a leading BOS in the text is not doubled */
	int64_t n2 = chat_tokenize(t, "<s>[INST] Bye [/INST]", 21, got, 256);
	assert_int_equal(n2, 1 + nb);
	assert_int_equal(got[0], bos);
	assert_int_not_equal(got[1], bos);
	/* too many for max: the whole count, only max written */
	int32_t few[3] = {-7, -7, -7};
	assert_int_equal(chat_tokenize(t, text, strlen(text), few, 2), n);
	assert_int_equal(few[2], -7);
	chat_template_free(t);
	tokenizer_free(tok);
	/* gpt2: no BOS asked for; <|im_end|> (EOS) and <|im_start|> are ids */
	tok = tokenizer_synth(TOKENIZER_GPT2, 600, 1);
	t = chat_template_new(NULL, tok);
	assert_int_equal(chat_template_kind(t), CHAT_CHATML);
	char *r;
	int64_t len = chat_render(t, conv + 1, 1, true, &r);
	n = chat_tokenize(t, r, (size_t)len, got, 256);
	int32_t st = tokenizer_find(tok, "<|im_start|>");
	assert_true(n > 4);
	assert_int_equal(got[0], st);
	int eos_seen = 0;
	for (int64_t i = 0; i < n; i++)
		eos_seen += got[i] == tokenizer_eos(tok);
	assert_int_equal(eos_seen, 1);
	free(r);
	chat_template_free(t);
	tokenizer_free(tok);
}

/* one user message through the template, the assistant's header after it:
 * the agent's prompt (chat_user_prompt_ids) is chat_render + chat_tokenize */
static void test_user_prompt_ids(void **state)
{
	(void)state;
	tokenizer_t *tok = tokenizer_synth(TOKENIZER_GPT2, 600, 1);
	chat_template_t *t = chat_template_new(NULL, tok); /* ChatML */
	const char *q = "Policies: 0 elastic. Answer:";
	chat_msg_t m = {.role = "user", .text = q, .len = strlen(q)};
	char *r;
	int64_t len = chat_render(t, &m, 1, true, &r);
	assert_true(len > 0 && strstr(r, q) && strstr(r, "<|im_start|>assistant"));
	int32_t want[512], *got = NULL;
	int64_t nw = chat_tokenize(t, r, (size_t)len, want, 512);
	int64_t n = chat_user_prompt_ids(t, q, &got);
	assert_true(nw > 0);
	assert_int_equal(n, nw);
	assert_memory_equal(got, want, (size_t)n * sizeof *got);
	assert_int_equal(got[0], tokenizer_find(tok, "<|im_start|>"));
	free(got);
	free(r);
	chat_template_free(t);
	/* no template: an error, nothing allocated */
	t = chat_template_new_kind(CHAT_NONE, tok);
	got = NULL;
	assert_int_equal(chat_user_prompt_ids(t, q, &got), -1);
	assert_null(got);
	chat_template_free(t);
	tokenizer_free(tok);
}

/* ---- tools (model/chat_tools.h) ---- */

static json_t *tools_json(void)
{
	json_t *t = json_loads(
		"[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
		"\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":"
		"{\"enum\":[\"Paris\",\"Rome\"]}},\"required\":[\"city\"]}}},"
		"{\"type\":\"function\",\"function\":{\"name\":\"now\"}}]", 0, NULL);
	assert_non_null(t);
	assert_int_equal(chat_tools_check(t), 0);
	return t;
}

/* text in syntax s: its n_calls calls, the first named name with args,
 * after n_content bytes of text. */
static void expect_parse(chat_tool_syntax_t s, const char *text, const json_t *tools,
			 int n_calls, size_t n_content, const char *name, const char *args)
{
	chat_parsed_t p;
	chat_tools_parse(s, text, strlen(text), tools, &p);
	if (p.n_calls != n_calls || p.n_content != n_content)
		fail_msg("'%s': %d calls after %zu bytes, want %d after %zu", text,
			 p.n_calls, p.n_content, n_calls, n_content);
	if (n_calls) {
		assert_string_equal(p.calls[0].name, name);
		assert_string_equal(p.calls[0].args, args);
	}
	chat_parsed_free(&p);
}

/* Calls found in the Hermes and Llama 3.1 syntaxes; anything not wholly
 * calls of known functions after the text is text. */
static void test_tools_parse(void **state)
{
	(void)state;
	json_t *t = tools_json();
	const chat_tool_syntax_t H = CHAT_TOOLS_HERMES, L = CHAT_TOOLS_LLAMA31;
	expect_parse(H, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
		     "{\"city\": \"Rome\"}}\n</tool_call>", t, 1, 0, "get_weather",
		     "{\"city\":\"Rome\"}");
	expect_parse(H, "Let me see.\n\n<tool_call>{\"name\":\"now\",\"arguments\":{}}"
		     "</tool_call>\n<tool_call>{\"name\":\"get_weather\",\"arguments\":"
		     "\"{\\\"city\\\": \\\"Paris\\\"}\"}</tool_call>\n", t, 2, 11, "now", "{}");
	/* the closing tag missing, or cut by the token limit */
	expect_parse(H, "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}", t, 1, 0,
		     "now", "{}");
	expect_parse(H, "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_c", t,
		     1, 0, "now", "{}");
	/* not calls: an unknown function, text after the call, bad JSON,
	 * arguments that are not an object, an extra key, no call at all */
	const char *text[] = {
		"<tool_call>{\"name\":\"rm\",\"arguments\":{}}</tool_call>",
		"<tool_call>{\"name\":\"now\",\"arguments\":{}}</tool_call> and more",
		"<tool_call>{\"name\":\"now\",\"arguments\":{</tool_call>",
		"<tool_call>{\"name\":\"now\",\"arguments\":[1]}</tool_call>",
		"<tool_call>{\"name\":\"now\",\"arguments\":{},\"x\":1}</tool_call>",
		"just text",
		"",
	};
	for (size_t i = 0; i < EG_ARRAY_LEN(text); i++)
		expect_parse(H, text[i], t, 0, strlen(text[i]), NULL, NULL);
	/* Llama 3.1: the whole answer, "parameters" (or "arguments") */
	expect_parse(L, " {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
		     t, 1, 0, "get_weather", "{\"city\":\"Paris\"}");
	expect_parse(L, "<|python_tag|>{\"name\": \"now\", \"arguments\": {}}", t, 1, 0,
		     "now", "{}");
	static const char prose[] = "It is {\"name\": \"now\", \"parameters\": {}}";
	expect_parse(L, prose, t, 0, sizeof prose - 1, NULL, NULL);
	json_decref(t);
}

/* What of a streamed answer may go out as text before the rest comes. */
static void test_tools_stream_safe(void **state)
{
	(void)state;
	bool call;
	static const struct {
		chat_tool_syntax_t s;
		const char *text;
		size_t from, safe;
		bool call;
	} c[] = {
		{CHAT_TOOLS_HERMES, "Hello", 0, 5, false},
		{CHAT_TOOLS_HERMES, "Hello <tool", 0, 5, false}, /* may begin a call */
		{CHAT_TOOLS_HERMES, "Hello <tools", 0, 12, false},
		{CHAT_TOOLS_HERMES, "Hi\n\n<tool_call>{", 0, 2, true},
		{CHAT_TOOLS_HERMES, "Hi\n\n<tool_call>{", 2, 2, true},
		{CHAT_TOOLS_HERMES, "Hi \n", 2, 2, false},
		{CHAT_TOOLS_LLAMA31, "  ", 0, 0, false},
		{CHAT_TOOLS_LLAMA31, " {\"na", 0, 0, true},
		{CHAT_TOOLS_LLAMA31, "<|pyth", 0, 0, true},
		{CHAT_TOOLS_LLAMA31, "<b>", 0, 3, false},
		{CHAT_TOOLS_LLAMA31, "Sure", 0, 4, false},
	};
	for (size_t i = 0; i < EG_ARRAY_LEN(c); i++) {
		size_t safe = chat_tools_stream_safe(c[i].s, c[i].text, strlen(c[i].text),
						     c[i].from, &call);
		if (safe != c[i].safe || call != c[i].call)
			fail_msg("'%s' from %zu: %zu safe, call %d; want %zu, %d", c[i].text,
				 c[i].from, safe, call, c[i].safe, c[i].call);
	}
}

/* The grammar of a call matches the call chat_tools_parse reads, with
 * arguments by the schema, and nothing else. */
static void test_tools_grammar(void **state)
{
	(void)state;
	json_t *t = tools_json();
	static const struct {
		chat_tool_syntax_t s;
		const char *name, *text;
		bool ok;
	} c[] = {
		{CHAT_TOOLS_HERMES, NULL, "<tool_call>\n{\"name\": \"get_weather\", "
		 "\"arguments\": {\"city\": \"Rome\"}}\n</tool_call>", true},
		{CHAT_TOOLS_HERMES, NULL, "<tool_call>\n{\"name\": \"now\", "
		 "\"arguments\": {}}\n</tool_call>", true},
		{CHAT_TOOLS_HERMES, "now", "<tool_call>\n{\"name\": \"get_weather\", "
		 "\"arguments\": {\"city\": \"Rome\"}}\n</tool_call>", false},
		{CHAT_TOOLS_HERMES, NULL, "<tool_call>\n{\"name\": \"get_weather\", "
		 "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>", false},
		{CHAT_TOOLS_HERMES, NULL, "<tool_call>\n{\"name\": \"rm\", "
		 "\"arguments\": {}}\n</tool_call>", false},
		{CHAT_TOOLS_HERMES, NULL, "Sure! <tool_call>\n{\"name\": \"now\", "
		 "\"arguments\": {}}\n</tool_call>", false},
		{CHAT_TOOLS_LLAMA31, "get_weather", "{\"name\": \"get_weather\", "
		 "\"parameters\": {\"city\": \"Paris\"}}", true},
		{CHAT_TOOLS_LLAMA31, NULL, "{\"name\": \"now\", \"arguments\": {}}", false},
	};
	for (size_t i = 0; i < EG_ARRAY_LEN(c); i++) {
		char *g = chat_tools_grammar(c[i].s, t, c[i].name);
		assert_non_null(g);
		grammar_t *gr = grammar_parse(g);
		if (!gr)
			fail_msg("%s: %s", g, err_get());
		grammar_state_t *st = grammar_state_new(gr, NULL);
		assert_non_null(st);
		bool ok = grammar_accept_bytes(st, c[i].text, strlen(c[i].text)) == 0 &&
			  grammar_done(st);
		if (ok != c[i].ok)
			fail_msg("'%s' %s the grammar\n%s", c[i].text,
				 ok ? "matches" : "does not match", g);
		if (ok) { /* and parses back as the call */
			chat_parsed_t p;
			chat_tools_parse(c[i].s, c[i].text, strlen(c[i].text), t, &p);
			assert_int_equal(p.n_calls, 1);
			chat_parsed_free(&p);
		}
		grammar_state_free(st);
		grammar_free(gr);
		free(g);
	}
	/* a name not in tools; a schema the compiler refuses */
	assert_null(chat_tools_grammar(CHAT_TOOLS_HERMES, t, "rm"));
	assert_non_null(strstr(err_get(), "'rm'"));
	json_t *bad = json_loads("[{\"type\":\"function\",\"function\":{\"name\":\"f\","
				 "\"parameters\":{\"type\":\"integer\",\"minimum\":1}}}]", 0, NULL);
	assert_null(chat_tools_grammar(CHAT_TOOLS_HERMES, bad, NULL));
	assert_non_null(strstr(err_get(), "tools[0].function.parameters"));
	json_decref(bad);
	json_decref(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_chatml_default_system),
		cmocka_unit_test(test_tokenize),
		cmocka_unit_test(test_user_prompt_ids),
		cmocka_unit_test(test_tools_parse),
		cmocka_unit_test(test_tools_stream_safe),
		cmocka_unit_test(test_tools_grammar),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
