/* Chat templates (model/chat.h): recognition by markers, the rendered text
 * of each kind, and the tokenization of that text (BOS/EOS spellings to
 * their ids, BOS first once). */
#include "testutil.h"

#include "base/base.h"
#include "model/chat.h"
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_chatml_default_system),
		cmocka_unit_test(test_tokenize),
		cmocka_unit_test(test_user_prompt_ids),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
