/* Tokenizer tests: llama2.c reference ids, GGUF vocabularies, byte-level
 * BPE on a hand-built vocabulary, pre-tokenizer splits, round trips on
 * synthetic vocabularies, malformed files, the GGUF write/load round trip
 * and speed. */
#include "testutil.h"

#include <stdbool.h>

#include "base/base.h"
#include "model/gguf.h"
#include "model/tokenizer.h"

#define MAX_IDS 4096

/* Encodes text and checks the ids against want[0..n). */
static void check_ids(const tokenizer_t *t, const char *text, bool bos,
		      const int32_t *want, int64_t n)
{
	int32_t ids[MAX_IDS];
	int64_t got = tokenizer_encode(t, text, strlen(text), bos, ids, MAX_IDS);
	bool same = got == n;
	for (int64_t i = 0; same && i < n; i++)
		same = ids[i] == want[i];
	if (!same) {
		print_message("text \"%s\": got %lld ids:", text, (long long)got);
		for (int64_t i = 0; i < got && i < MAX_IDS; i++)
			print_message(" %d", ids[i]);
		print_message("\nwant %lld ids:", (long long)n);
		for (int64_t i = 0; i < n; i++)
			print_message(" %d", want[i]);
		print_message("\n");
		fail();
	}
}

#define CHECK_IDS(t, text, bos, ...)                                          \
	do {                                                                  \
		const int32_t want_[] = { __VA_ARGS__ };                      \
		check_ids(t, text, bos, want_, (int64_t)EG_ARRAY_LEN(want_)); \
	} while (0)

/* Decodes ids[0..n) (prev = the id before, -1 for the first) into buf. */
static size_t decode_all(const tokenizer_t *t, const int32_t *ids, int64_t n,
			 char *buf, size_t cap)
{
	size_t k = 0;
	for (int64_t i = 0; i < n; i++) {
		char piece[256];
		int m = tokenizer_decode(t, i ? ids[i - 1] : -1, ids[i], piece,
					 sizeof piece);
		assert_true(m >= 0);
		assert_true(k + (size_t)m <= cap);
		memcpy(buf + k, piece, (size_t)m);
		k += (size_t)m;
	}
	return k;
}

static int32_t *encode_alloc(const tokenizer_t *t, const char *s, size_t n,
			     bool bos, int64_t *count)
{
	int64_t c = tokenizer_encode(t, s, n, bos, NULL, 0);
	assert_true(c >= 0);
	int32_t *ids = malloc((size_t)(c + 1) * sizeof *ids);
	assert_int_equal(tokenizer_encode(t, s, n, bos, ids, c), c);
	*count = c;
	return ids;
}

/* Encodes, decodes and checks the text comes back byte for byte. */
static void check_round_trip(const tokenizer_t *t, const char *s, size_t n)
{
	int64_t c;
	int32_t *ids = encode_alloc(t, s, n, true, &c);
	char *back = malloc(8 * n + 64);
	size_t m = decode_all(t, ids, c, back, 8 * n + 64);
	if (m != n || memcmp(back, s, n) != 0) {
		print_message("round trip failed for %zu bytes:", n);
		for (size_t i = 0; i < n; i++)
			print_message(" %02x", (unsigned char)s[i]);
		print_message("\ncame back as %zu bytes:", m);
		for (size_t i = 0; i < m; i++)
			print_message(" %02x", (unsigned char)back[i]);
		print_message("\n");
		fail();
	}
	free(back);
	free(ids);
}

static tokenizer_t *load_gguf_file(const char *path, gguf_t **g)
{
	*g = gguf_open(path);
	if (!*g)
		fail_msg("gguf_open %s: %s", path, err_get());
	return tokenizer_load_gguf(*g);
}

/* ---- llama2.c vocabularies ---- */

static void test_tok512_known_ids(void **state)
{
	const char *path = test_repo_model_path("tok512.bin");
	tokenizer_t *t = tokenizer_load_llama2c(path, 512);
	assert_non_null(t);
	assert_int_equal(tokenizer_kind(t), TOKENIZER_LLAMA);
	assert_int_equal(tokenizer_n_vocab(t), 512);
	assert_int_equal(tokenizer_bos(t), 1);
	assert_int_equal(tokenizer_eos(t), 2);
	assert_string_equal(tokenizer_piece(t, 1), "<s>");
	assert_string_equal(tokenizer_piece(t, 259), "\xE2\x96\x81t");
	assert_null(tokenizer_piece(t, 512));
	assert_int_equal(tokenizer_find(t, "<0x41>"), 3 + 0x41);
	CHECK_IDS(t, "Once upon a time", true, 1, 403, 407, 261, 378);
	CHECK_IDS(t, "Once upon a time", false, 403, 407, 261, 378);
	CHECK_IDS(t, "", true, 1);
	int32_t none[1];
	assert_int_equal(tokenizer_encode(t, "", 0, false, none, 1), 0);
	/* a character outside the vocabulary: its UTF-8 bytes, id 3 + byte */
	int32_t sp = tokenizer_find(t, "\xE2\x96\x81");
	assert_true(sp > 258);
	CHECK_IDS(t, "\xE6\x97\xA5", true, 1, sp, 3 + 0xE6, 3 + 0x97, 3 + 0xA5);
	/* tok512 does hold "\xC3\xA9" as a piece of its own */
	CHECK_IDS(t, "\xC3\xA9", true, 1, sp, 485);
	/* max smaller than the count: the count, max ids written */
	int32_t ids[2] = { -7, -7 };
	assert_int_equal(tokenizer_encode(t, "Once upon", 9, true, ids, 1), 3);
	assert_int_equal(ids[0], 1);
	assert_int_equal(ids[1], -7);
	/* decode: the space after BOS goes, byte pieces give bytes */
	char out[64];
	assert_int_equal(tokenizer_decode(t, 1, 403, out, sizeof out), 4);
	assert_memory_equal(out, "Once", 4);
	assert_int_equal(tokenizer_decode(t, 403, 407, out, sizeof out), 5);
	assert_memory_equal(out, " upon", 5);
	assert_int_equal(tokenizer_decode(t, 1, 3 + 0xE6, out, sizeof out), 1);
	assert_int_equal((unsigned char)out[0], 0xE6);
	assert_int_equal(tokenizer_decode(t, 0, 1, out, sizeof out), 0);
	assert_int_equal(tokenizer_decode(t, 0, 2, out, sizeof out), 0);
	assert_int_equal(tokenizer_decode(t, 0, 512, out, sizeof out), -1);
	assert_int_equal(tokenizer_decode(t, 403, 407, out, 2), 2); /* cut */
	tokenizer_free(t);
}

/* The prompt ids that llama2.c run.c printed for "Once upon a time". */
static void check_expected_prompt(const char *tok_file, int32_t vocab,
				  const char *ids_file)
{
	char path[4200], ids_path[4200];
	snprintf(path, sizeof path, "%s", test_model_path(tok_file));
	snprintf(ids_path, sizeof ids_path, "%s", test_model_path(ids_file));
	char *txt = file_read_all(ids_path, NULL);
	assert_non_null(txt);
	assert_non_null(strstr(txt, "prompt_ids:"));
	int32_t want[64];
	int64_t n = 0;
	char *p = strstr(txt, "prompt_ids:") + strlen("prompt_ids:");
	while (*p && *p != '\n' && n < 64) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		want[n++] = (int32_t)v;
		p = end;
	}
	free(txt);
	assert_true(n > 1);
	tokenizer_t *t = tokenizer_load_llama2c(path, vocab);
	assert_non_null(t);
	check_ids(t, "Once upon a time", true, want, n);
	tokenizer_free(t);
}

static void test_expected_prompts(void **state)
{
	SKIP_WITHOUT_MODEL(p1, "expected/stories260K.once_t0_n200.ids");
	SKIP_WITHOUT_MODEL(p2, "expected/babyllama105.once_t0_n200.ids");
	check_expected_prompt("tok512.bin", 512,
			      "expected/stories260K.once_t0_n200.ids");
	check_expected_prompt("tok105.bin", 105,
			      "expected/babyllama105.once_t0_n200.ids");
}

static const char *const sample_texts[] = {
	"Once upon a time",
	"Hello world",
	"Lily's mom said, \"Lily, let's go to the park.\"",
	"  two leading spaces and trailing  ",
	"tabs\tand\nnewlines\n\n",
	"caf\xC3\xA9 na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80",
	"<s> and </s> typed as text",
	"1234567890 !@#$%^&*()",
	"\xFF\xFE invalid \x80 bytes \xC3",
	"",
};

static void test_stories_gguf_matches_bin(void **state)
{
	const char *bin = test_repo_model_path("tok512.bin");
	tokenizer_t *a = tokenizer_load_llama2c(bin, 512);
	assert_non_null(a);
	SKIP_WITHOUT_MODEL(gpath, "stories260K.gguf");
	gguf_t *g;
	tokenizer_t *b = load_gguf_file(gpath, &g);
	assert_non_null(b);
	assert_int_equal(tokenizer_kind(b), TOKENIZER_LLAMA);
	assert_int_equal(tokenizer_n_vocab(b), 512);
	assert_int_equal(tokenizer_bos(b), 1);
	assert_int_equal(tokenizer_eos(b), 2);
	assert_int_equal(tokenizer_unk(b), 0);
	for (int32_t i = 0; i < 512; i++)
		assert_string_equal(tokenizer_piece(a, i), tokenizer_piece(b, i));
	CHECK_IDS(b, "Once upon a time", true, 1, 403, 407, 261, 378);
	for (size_t s = 0; s < EG_ARRAY_LEN(sample_texts); s++) {
		const char *x = sample_texts[s];
		int64_t na, nb;
		int32_t *ia = encode_alloc(a, x, strlen(x), true, &na);
		int32_t *ib = encode_alloc(b, x, strlen(x), true, &nb);
		assert_int_equal(na, nb);
		assert_memory_equal(ia, ib, (size_t)na * sizeof *ia);
		check_round_trip(a, x, strlen(x));
		check_round_trip(b, x, strlen(x));
		free(ia);
		free(ib);
	}
	tokenizer_free(a);
	tokenizer_free(b);
	gguf_close(g);
}

static void test_tok105_char_level(void **state)
{
	SKIP_WITHOUT_MODEL(path, "tok105.bin");
	tokenizer_t *t = tokenizer_load_llama2c(path, 105);
	assert_non_null(t);
	assert_int_equal(tokenizer_find(t, "<0x41>"), -1); /* no byte pieces */
	assert_int_equal(tokenizer_find(t, "\xE2\x96\x81"), 3);
	CHECK_IDS(t, "Once upon a time", true, 1, 3, 34, 9, 22, 4, 3, 18, 20, 7,
		  9, 3, 5, 3, 6, 10, 16, 4);
	/* a character outside the vocabulary is one <unk> (id 0), not run.c's
	 * 3 + byte, which would name unrelated characters here */
	int32_t x = tokenizer_find(t, "x");
	assert_true(x > 0);
	CHECK_IDS(t, "\xE6\x97\xA5x", true, 1, 3, 0, x);
	CHECK_IDS(t, "\xF0\x9F\x98\x80\xF0\x9F\x98\x80", false, 3, 0, 0);
	char out[16];
	assert_int_equal(tokenizer_decode(t, 3, 0, out, sizeof out), 5);
	assert_memory_equal(out, "<unk>", 5);
	tokenizer_free(t);
}

static void test_llama2_vocab(void **state)
{
	SKIP_WITHOUT_MODEL(path, "tokenizer.bin");
	tokenizer_t *t = tokenizer_load_llama2c(path, 32000);
	assert_non_null(t);
	/* published Llama 2 ids (SentencePiece / llama.cpp) */
	CHECK_IDS(t, "Hello world", true, 1, 15043, 3186);
	CHECK_IDS(t, "I believe the meaning of life is", true, 1, 306, 4658, 278,
		  6593, 310, 2834, 338);
	/* emoji: no piece, so "\xE2\x96\x81" alone and byte fallback F0 9F 98 80 */
	CHECK_IDS(t, "\xF0\x9F\x98\x80", true, 1, 29871, 3 + 0xF0, 3 + 0x9F,
		  3 + 0x98, 3 + 0x80);
	/* CJK characters that have pieces of their own */
	int32_t ri = tokenizer_find(t, "\xE6\x97\xA5"), rb = tokenizer_find(t, "\xE6\x9C\xAC");
	assert_true(ri > 258 && rb > 258);
	CHECK_IDS(t, "\xE6\x97\xA5\xE6\x9C\xAC", true, 1, 29871, ri, rb);
	for (size_t s = 0; s < EG_ARRAY_LEN(sample_texts); s++)
		check_round_trip(t, sample_texts[s], strlen(sample_texts[s]));
	tokenizer_free(t);
}

/* ---- malformed llama2.c files ---- */

static const char *write_tmp(const char *name, const void *data, size_t n)
{
	static char path[256];
	snprintf(path, sizeof path, "%s/%s", test_tmpdir(), name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	fclose(f);
	return path;
}

static void expect_load_fail(const char *path, int32_t vocab,
			     const char *needle)
{
	tokenizer_t *t = tokenizer_load_llama2c(path, vocab);
	if (t)
		fail_msg("%s loaded", path);
	const char *msg = err_get();
	print_message("  %s\n", msg);
	assert_non_null(strstr(msg, path));
	assert_null(strchr(msg, '\n'));
	if (needle && !strstr(msg, needle))
		fail_msg("message \"%s\" lacks \"%s\"", msg, needle);
}

static void test_llama2c_malformed(void **state)
{
	unsigned char buf[64];
	size_t n = 0;
	uint32_t max_len = 7;
	memcpy(buf, &max_len, 4);
	n = 4;
	/* record 0: "<unk>", record 1: negative length */
	float sc = 0;
	int32_t len = 5;
	memcpy(buf + n, &sc, 4);
	memcpy(buf + n + 4, &len, 4);
	memcpy(buf + n + 8, "<unk>", 5);
	n += 13;
	len = -5;
	memcpy(buf + n, &sc, 4);
	memcpy(buf + n + 4, &len, 4);
	n += 8;
	const char *p = write_tmp("neg.bin", buf, n);
	expect_load_fail(p, 2, "record 1 at offset 17: length -5 at offset 21");
	/* huge length */
	len = 0x7fffffff;
	memcpy(buf + 21, &len, 4);
	p = write_tmp("huge.bin", buf, n);
	expect_load_fail(p, 2, "record 1");
	/* length within max_token_length but past the end of the file */
	len = 6;
	memcpy(buf + 21, &len, 4);
	p = write_tmp("past.bin", buf, n);
	expect_load_fail(p, 2, "past the end");
	/* more records asked for than the file holds */
	p = write_tmp("one.bin", buf, 17);
	expect_load_fail(p, 2, "record 1 at offset 17");
	tokenizer_t *t = tokenizer_load_llama2c(p, 1); /* that one record */
	assert_non_null(t);
	assert_int_equal(tokenizer_unk(t), 0);
	tokenizer_free(t);
	/* short header, empty vocabulary, missing file */
	p = write_tmp("short.bin", buf, 2);
	expect_load_fail(p, 1, "short file");
	p = write_tmp("zero.bin", buf, 17);
	expect_load_fail(p, 0, "vocab_size 0");
	expect_load_fail(p, -3, "vocab_size -3");
	expect_load_fail("/nonexistent/tokenizer.bin", 10, "No such file");
	/* a real file cut inside a record */
	const char *real = test_model_path("tok512.bin");
	if (real) {
		size_t size;
		char *data = file_read_all(real, &size);
		assert_non_null(data);
		p = write_tmp("cut.bin", data, 1000);
		expect_load_fail(p, 512, "record");
		free(data);
	}
}

/* ---- gpt2: a hand-built vocabulary ---- */

/* GPT-2's byte -> char table, written out independently of tokenizer.c:
 * printable Latin-1 keeps its code point, the rest take 256.. in order. */
static void gpt2_chars(char out[256][4])
{
	int n = 0;
	for (int b = 0; b < 256; b++) {
		bool keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
			    b >= 0xAE;
		unsigned cp = keep ? (unsigned)b : 256u + (unsigned)n++;
		memset(out[b], 0, 4);
		if (cp < 0x80) {
			out[b][0] = (char)cp;
		} else {
			out[b][0] = (char)(0xC0 | cp >> 6);
			out[b][1] = (char)(0x80 | (cp & 0x3F));
		}
	}
}

/* Writes and loads a gpt2 GGUF vocabulary: the 256 byte chars in GPT-2's
 * id order (by code point), then extra pieces, with merges. */
typedef struct mini {
	const char *pre;
	const char *const *extra; /* pieces after the byte chars */
	const int32_t *extra_type;
	int n_extra;
	const char *const *merges;
	int n_merges;
	int64_t bos; /* -2: leave the key out */
} mini_t;

static tokenizer_t *mini_load(const mini_t *m, gguf_t **g)
{
	char chars[256][4];
	gpt2_chars(chars);
	/* order by code point: sort bytes by their char's code point */
	const char *toks[512];
	int32_t types[512];
	int n = 0;
	for (unsigned cp = 0; cp < 0x200; cp++)
		for (int b = 0; b < 256; b++) {
			const unsigned char *c = (const unsigned char *)chars[b];
			unsigned v = c[0] < 0x80 ? c[0]
						 : (unsigned)(c[0] & 0x1F) << 6 | (c[1] & 0x3F);
			if (v == cp) {
				types[n] = 1;
				toks[n++] = chars[b];
			}
		}
	assert_int_equal(n, 256);
	for (int i = 0; i < m->n_extra; i++) {
		types[n] = m->extra_type ? m->extra_type[i] : 1;
		toks[n++] = m->extra[i];
	}
	gguf_writer_t *w = gguf_writer_new();
	gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
	if (m->pre)
		gguf_writer_set_str(w, "tokenizer.ggml.pre", m->pre);
	gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, (uint64_t)n);
	gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32,
			    types, (uint64_t)n);
	static const char *const no_merges[1] = { "" };
	gguf_writer_set_arr_str(w, "tokenizer.ggml.merges",
				m->merges ? m->merges : no_merges,
				(uint64_t)m->n_merges);
	if (m->bos != -2)
		gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id",
				    (uint32_t)m->bos);
	char path[256];
	snprintf(path, sizeof path, "%s/mini.gguf", test_tmpdir());
	if (gguf_writer_write(w, path) < 0)
		fail_msg("gguf_writer_write: %s", err_get());
	gguf_writer_free(w);
	*g = gguf_open(path);
	if (!*g)
		fail_msg("gguf_open: %s", err_get());
	return tokenizer_load_gguf(*g);
}

/* GPT-2 ids of the byte chars: '!'..'~' are 0..93, so id = c - 33. */
#define B(c) ((c) - 33)
/* space (byte 0x20) becomes U+0120, id 188 + 32 = 220 as in GPT-2 */
#define SPACE_ID 220

static const char *const mini_extra[] = {
	"he", "ll", "hell", "hello", "\xC4\xA0w", "or", "\xC4\xA0wor",
	"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im", "\xC4\xA0\xC4\xA0",
};
static const int32_t mini_types[] = { 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 4, 1 };
static const char *const mini_merges[] = {
	"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "o r", "\xC4\xA0w or",
	"\xC4\xA0 \xC4\xA0",
};

static void test_gpt2_mini_bpe(void **state)
{
	mini_t m = { "gpt2", mini_extra, mini_types, 12, mini_merges, 8, 258 };
	gguf_t *g;
	tokenizer_t *t = mini_load(&m, &g);
	if (!t)
		fail_msg("load: %s", err_get());
	assert_int_equal(tokenizer_kind(t), TOKENIZER_GPT2);
	assert_int_equal(tokenizer_n_vocab(t), 268);
	assert_int_equal(tokenizer_bos(t), 258);
	assert_int_equal(tokenizer_eos(t), -1);
	assert_false(tokenizer_add_bos(t));
	assert_string_equal(tokenizer_pre(t), "gpt2");
	/* ids: 256 he, 257 ll, 258 hell, 259 hello, 260 " w", 261 or,
	 * 262 " wor", 263 <|im_start|>, 264 <|im_end|>, 265 <|endoftext|>,
	 * 266 "<|im" (user-defined), 267 "  " */
	CHECK_IDS(t, "hello world", false, 259, 262, B('l'), B('d'));
	/* rank order, not position: "ell" merges l+l (rank 1) only */
	CHECK_IDS(t, "ell", false, B('e'), 257);
	/* "hel": h+e (rank 0) first, then he+l has no merge */
	CHECK_IDS(t, "hel", false, 256, B('l'));
	CHECK_IDS(t, "hellohello", false, 259, 259);
	/* BOS first when asked (it decodes to nothing) */
	CHECK_IDS(t, "hello", true, 258, 259);
	/* special tokens match whole, before the pre-tokenizer; the longest
	 * wins over the user-defined "<|im" */
	CHECK_IDS(t, "<|im_start|>hello<|im_end|>", false, 263, 259, 264);
	CHECK_IDS(t, "<|im_start|> world<|endoftext|>", false, 263, 262,
		  B('l'), B('d'), 265);
	CHECK_IDS(t, "<|im_sta", false, 266, B('_'), B('s'), B('t'), B('a'));
	/* bytes outside ASCII: byte 0xC3 is the char U+00C3, 0xA9 is U+00A9 */
	int32_t c3 = tokenizer_find(t, "\xC3\x83"), a9 = tokenizer_find(t, "\xC2\xA9");
	assert_true(c3 >= 0 && a9 >= 0);
	CHECK_IDS(t, "\xC3\xA9", false, c3, a9);
	/* three spaces before a letter: "  " (then " w" with the letter) */
	CHECK_IDS(t, "   wor", false, 267, 262);
	/* decode */
	char out[64];
	assert_int_equal(tokenizer_decode(t, -1, 262, out, sizeof out), 4);
	assert_memory_equal(out, " wor", 4);
	assert_int_equal(tokenizer_decode(t, -1, 263, out, sizeof out), 0);
	assert_int_equal(tokenizer_decode(t, -1, 266, out, sizeof out), 4);
	assert_memory_equal(out, "<|im", 4);
	assert_int_equal(tokenizer_decode(t, -1, SPACE_ID, out, sizeof out), 1);
	assert_int_equal(out[0], ' ');
	assert_int_equal(tokenizer_decode(t, -1, c3, out, sizeof out), 1);
	assert_int_equal((unsigned char)out[0], 0xC3);
	for (size_t s = 0; s < EG_ARRAY_LEN(sample_texts); s++)
		check_round_trip(t, sample_texts[s], strlen(sample_texts[s]));
	/* control tokens decode to nothing: a chat turn loses its markers */
	int64_t c;
	int32_t *ids = encode_alloc(t, "<|im_start|>user\nhi<|im_end|>\n", 30,
				    false, &c);
	assert_int_equal(ids[0], 263);
	char back[64];
	size_t m2 = decode_all(t, ids, c, back, sizeof back);
	assert_int_equal(m2, 8);
	assert_memory_equal(back, "user\nhi\n", 8);
	free(ids);
	tokenizer_free(t);
	gguf_close(g);
}

/* Splits text and compares the chunks with want ("|" separated). */
static void check_split(const tokenizer_t *t, const char *text,
			const char *const *want, int64_t n)
{
	size_t ends[128];
	int64_t got = tokenizer_pre_split(t, text, strlen(text), ends, 128);
	bool same = got == n;
	size_t s = 0;
	for (int64_t i = 0; same && i < n; i++) {
		same = ends[i] - s == strlen(want[i]) &&
		       memcmp(text + s, want[i], strlen(want[i])) == 0;
		s = ends[i];
	}
	if (!same) {
		print_message("pre %s: got %lld chunks:", tokenizer_pre(t),
			      (long long)got);
		s = 0;
		for (int64_t i = 0; i < got && i < 128; i++) {
			print_message(" [%.*s]", (int)(ends[i] - s), text + s);
			s = ends[i];
		}
		print_message("\n");
		fail();
	}
}

#define CHECK_SPLIT(t, text, ...)                                             \
	do {                                                                  \
		const char *const want_[] = { __VA_ARGS__ };                  \
		check_split(t, text, want_, (int64_t)EG_ARRAY_LEN(want_));    \
	} while (0)

static tokenizer_t *mini_pre(const char *pre, gguf_t **g)
{
	mini_t m = { pre, NULL, NULL, 0, NULL, 0, -2 };
	tokenizer_t *t = mini_load(&m, g);
	if (!t)
		fail_msg("load pre %s: %s", pre ? pre : "(none)", err_get());
	return t;
}

/* Expected chunks derived by hand from llama.cpp's regex lists, and
 * cross-checked against Python's `regex` module with the same sequential
 * split (gaps kept as chunks). */
static void test_pre_splits(void **state)
{
	const char *x = "Hello, world!  It's 2024.\n\n  x";
	gguf_t *g;
	tokenizer_t *t = mini_pre("gpt2", &g);
	CHECK_SPLIT(t, x, "Hello", ",", " world", "!", " ", " It", "'s",
		    " 2024", ".", "\n\n ", " x");
	CHECK_SPLIT(t, "I'LL don't", "I", "'", "LL", " don", "'t");
	tokenizer_free(t);
	gguf_close(g);

	t = mini_pre("llama-bpe", &g);
	assert_true(tokenizer_add_bos(t));
	CHECK_SPLIT(t, x, "Hello", ",", " world", "!", " ", " It", "'s", " ",
		    "202", "4", ".\n\n", " ", " x");
	CHECK_SPLIT(t, "I'LL don't\r\n\r\nok", "I", "'LL", " don", "'t",
		    "\r\n\r\n", "ok");
	tokenizer_free(t);
	gguf_close(g);

	t = mini_pre("qwen2", &g);
	CHECK_SPLIT(t, x, "Hello", ",", " world", "!", " ", " It", "'s", " ",
		    "2", "0", "2", "4", ".\n\n", " ", " x");
	tokenizer_free(t);
	gguf_close(g);

	t = mini_pre("smollm", &g);
	CHECK_SPLIT(t, x, "Hello", ",", " world", "!", " ", " It", "'s", " ",
		    "2", "0", "2", "4", ".", "\n\n ", " x");
	tokenizer_free(t);
	gguf_close(g);

	t = mini_pre(NULL, &g); /* absent key: llama.cpp's "default" */
	assert_string_equal(tokenizer_pre(t), "");
	CHECK_SPLIT(t, x, "Hello", ",", " world", "!", " ", " It", "'", "s",
		    " ", "202", "4", ".", "\n\n ", " x");
	tokenizer_free(t);
	gguf_close(g);

	/* non-ASCII letters and digits, and invalid UTF-8 kept in gaps */
	t = mini_pre("gpt2", &g);
	CHECK_SPLIT(t, "na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC \xD9\xA3\xD9\xA4!",
		    "na\xC3\xAFve", " \xE6\x97\xA5\xE6\x9C\xAC",
		    " \xD9\xA3\xD9\xA4", "!");
	CHECK_SPLIT(t, "ab\xFF\xFE cd", "ab", "\xFF\xFE", " cd");
	tokenizer_free(t);
	gguf_close(g);
}

static void test_gpt2_validation(void **state)
{
	gguf_t *g;
	/* a merge naming a piece that is not in the vocabulary */
	const char *const bad_merge[] = { "h e", "x yz" };
	mini_t m = { "gpt2", mini_extra, mini_types, 12, bad_merge, 2, -2 };
	assert_null(mini_load(&m, &g));
	print_message("  %s\n", err_get());
	assert_non_null(strstr(err_get(), "merges[1]"));
	gguf_close(g);
	/* a merge whose result is not a piece */
	const char *const no_result[] = { "x y" };
	m.merges = no_result;
	m.n_merges = 1;
	assert_null(mini_load(&m, &g));
	assert_non_null(strstr(err_get(), "merged piece"));
	gguf_close(g);
	/* not "left right" */
	const char *const one[] = { "xy" };
	m.merges = one;
	assert_null(mini_load(&m, &g));
	assert_non_null(strstr(err_get(), "merges[0]"));
	gguf_close(g);
	/* bos out of range; 0xFFFFFFFF means none */
	m.merges = mini_merges;
	m.n_merges = 8;
	m.bos = 268;
	assert_null(mini_load(&m, &g));
	print_message("  %s\n", err_get());
	assert_non_null(strstr(err_get(), "bos_token_id"));
	gguf_close(g);
	m.bos = 0xFFFFFFFFu;
	tokenizer_t *t = mini_load(&m, &g);
	assert_non_null(t);
	assert_int_equal(tokenizer_bos(t), -1);
	tokenizer_free(t);
	gguf_close(g);
	/* unknown pre-tokenizer: refused */
	m.bos = -2;
	m.pre = "no-such-pre";
	assert_null(mini_load(&m, &g));
	assert_non_null(strstr(err_get(), "no-such-pre"));
	gguf_close(g);

	/* empty vocabulary, unsupported model, bad scores */
	char path[256];
	snprintf(path, sizeof path, "%s/bad.gguf", test_tmpdir());
	for (int c = 0; c < 3; c++) {
		gguf_writer_t *w = gguf_writer_new();
		const char *toks[2] = { "a", "b" };
		float sc[1] = { 0 };
		gguf_writer_set_str(w, "tokenizer.ggml.model",
				    c == 1 ? "bert" : "llama");
		gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks,
					c == 0 ? 0 : 2);
		if (c == 2)
			gguf_writer_set_arr(w, "tokenizer.ggml.scores",
					    GGUF_TYPE_FLOAT32, sc, 1);
		assert_int_equal(gguf_writer_write(w, path), 0);
		gguf_writer_free(w);
		g = gguf_open(path);
		assert_non_null(g);
		assert_null(tokenizer_load_gguf(g));
		print_message("  %s\n", err_get());
		const char *want[] = { "vocabulary size 0", "bert", "scores" };
		assert_non_null(strstr(err_get(), want[c]));
		gguf_close(g);
	}
}

/* ---- synthetic vocabularies and round trips ---- */

/* Appends the UTF-8 of cp to s. */
static size_t put_cp(char *s, uint32_t cp)
{
	if (cp < 0x80) {
		s[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		s[0] = (char)(0xC0 | cp >> 6);
		s[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		s[0] = (char)(0xE0 | cp >> 12);
		s[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		s[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	s[0] = (char)(0xF0 | cp >> 18);
	s[1] = (char)(0x80 | (cp >> 12 & 0x3F));
	s[2] = (char)(0x80 | (cp >> 6 & 0x3F));
	s[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* A random valid UTF-8 string, mostly English-like, never U+2581 (which
 * SentencePiece reads as a space). */
static size_t random_utf8(rng_t *r, char *s, size_t cap_cps)
{
	size_t n = 0, k = rng_next(r) % cap_cps;
	for (size_t i = 0; i < k; i++) {
		uint32_t u = (uint32_t)(rng_next(r) % 100), cp;
		if (u < 55)
			cp = 'a' + (uint32_t)(rng_next(r) % 26);
		else if (u < 70)
			cp = ' ';
		else if (u < 80)
			cp = 0x20 + (uint32_t)(rng_next(r) % 0x5F);
		else if (u < 84)
			cp = "\n\t\r"[rng_next(r) % 3];
		else if (u < 90)
			cp = 0x80 + (uint32_t)(rng_next(r) % 0x780);
		else if (u < 96)
			cp = 0x800 + (uint32_t)(rng_next(r) % 0xF800);
		else
			cp = 0x10000 + (uint32_t)(rng_next(r) % 0x100000);
		if ((cp >= 0xD800 && cp <= 0xDFFF) || cp == 0x2581)
			cp = 'z';
		n += put_cp(s + n, cp);
	}
	return n;
}

static size_t random_bytes(rng_t *r, char *s, size_t cap)
{
	size_t n = rng_next(r) % cap;
	for (size_t i = 0; i < n; i++)
		s[i] = (char)rng_next(r);
	/* U+2581 typed in the text is a space to SentencePiece: avoid it */
	for (size_t i = 0; i + 2 < n; i++)
		if (memcmp(s + i, "\xE2\x96\x81", 3) == 0)
			s[i] = 'x';
	return n;
}

static void round_trips(const tokenizer_t *t, uint64_t seed)
{
	rng_t r;
	rng_seed(&r, seed);
	char s[256];
	for (int i = 0; i < 1000; i++) {
		size_t n = random_utf8(&r, s, 60);
		check_round_trip(t, s, n);
	}
	for (int i = 0; i < 1000; i++) {
		size_t n = random_bytes(&r, s, sizeof s);
		check_round_trip(t, s, n);
	}
}

static void test_synth_round_trips(void **state)
{
	const int32_t sizes[] = { 512, 49152 };
	for (int k = 0; k < TOKENIZER_COUNT; k++)
		for (size_t i = 0; i < EG_ARRAY_LEN(sizes); i++) {
			tokenizer_t *t = tokenizer_synth((tokenizer_kind_t)k,
							 sizes[i], 42 + i);
			assert_non_null(t);
			assert_int_equal(tokenizer_n_vocab(t), sizes[i]);
			round_trips(t, 7 + i);
			/* merges happen: common text is shorter than its bytes */
			const char *x = "the cat sat on the mat and then the "
					"rest of the story went on";
			int64_t c = tokenizer_encode(t, x, strlen(x), false, NULL, 0);
			assert_true(c > 0 && c < (int64_t)strlen(x));
			tokenizer_free(t);
		}
}

static void test_real_round_trips(void **state)
{
	const char *path = test_repo_model_path("tok512.bin");
	tokenizer_t *t = tokenizer_load_llama2c(path, 512);
	assert_non_null(t);
	round_trips(t, 99);
	tokenizer_free(t);
	const char *big = test_model_path("tokenizer.bin");
	if (big) {
		t = tokenizer_load_llama2c(big, 32000);
		assert_non_null(t);
		round_trips(t, 100);
		tokenizer_free(t);
	}
}

static void test_synth_shape(void **state)
{
	tokenizer_t *a = tokenizer_synth(TOKENIZER_LLAMA, 512, 1);
	tokenizer_t *b = tokenizer_synth(TOKENIZER_LLAMA, 512, 1);
	tokenizer_t *c = tokenizer_synth(TOKENIZER_LLAMA, 512, 2);
	assert_string_equal(tokenizer_piece(a, 0), "<unk>");
	assert_string_equal(tokenizer_piece(a, 1), "<s>");
	assert_string_equal(tokenizer_piece(a, 2), "</s>");
	assert_string_equal(tokenizer_piece(a, 3 + 0x41), "<0x41>");
	assert_int_equal(tokenizer_bos(a), 1);
	assert_int_equal(tokenizer_eos(a), 2);
	assert_int_equal(tokenizer_unk(a), 0);
	bool differ = false;
	for (int32_t i = 0; i < 512; i++) {
		assert_string_equal(tokenizer_piece(a, i), tokenizer_piece(b, i));
		differ |= strcmp(tokenizer_piece(a, i), tokenizer_piece(c, i)) != 0;
		/* unique pieces */
		assert_int_equal(tokenizer_find(a, tokenizer_piece(a, i)), i);
	}
	assert_true(differ);
	tokenizer_free(a);
	tokenizer_free(b);
	tokenizer_free(c);
	tokenizer_t *g = tokenizer_synth(TOKENIZER_GPT2, 49152, 1);
	assert_non_null(g);
	assert_string_equal(tokenizer_pre(g), "smollm");
	assert_int_equal(tokenizer_find(g, "!"), 0);
	assert_int_equal(tokenizer_find(g, "\xC4\xA0"), SPACE_ID);
	int32_t st = tokenizer_find(g, "<|im_start|>");
	int32_t en = tokenizer_find(g, "<|im_end|>");
	assert_true(st >= 256 && en >= 256);
	CHECK_IDS(g, "<|im_start|><|im_end|>", false, st, en);
	tokenizer_free(g);
	assert_null(tokenizer_synth(TOKENIZER_LLAMA, 100, 1));
	assert_null(tokenizer_synth(TOKENIZER_COUNT, 1000, 1));
}

/* ---- GGUF write / load round trip ---- */

static void check_same_tokenizer(const tokenizer_t *a, const tokenizer_t *b)
{
	assert_int_equal(tokenizer_kind(a), tokenizer_kind(b));
	assert_int_equal(tokenizer_n_vocab(a), tokenizer_n_vocab(b));
	assert_int_equal(tokenizer_bos(a), tokenizer_bos(b));
	assert_int_equal(tokenizer_eos(a), tokenizer_eos(b));
	assert_int_equal(tokenizer_unk(a), tokenizer_unk(b));
	assert_int_equal(tokenizer_add_bos(a), tokenizer_add_bos(b));
	for (int32_t i = 0; i < tokenizer_n_vocab(a); i++)
		assert_string_equal(tokenizer_piece(a, i), tokenizer_piece(b, i));
	rng_t r;
	rng_seed(&r, 5);
	char s[256];
	for (int i = 0; i < 300 + (int)EG_ARRAY_LEN(sample_texts); i++) {
		size_t n;
		if (i < (int)EG_ARRAY_LEN(sample_texts)) {
			n = strlen(sample_texts[i]);
			memcpy(s, sample_texts[i], n);
		} else {
			n = random_utf8(&r, s, 60);
		}
		int64_t na, nb;
		int32_t *ia = encode_alloc(a, s, n, true, &na);
		int32_t *ib = encode_alloc(b, s, n, true, &nb);
		assert_int_equal(na, nb);
		assert_memory_equal(ia, ib, (size_t)na * sizeof *ia);
		for (int64_t k = 0; k < na; k++) {
			char pa[256], pb[256];
			int ma = tokenizer_decode(a, k ? ia[k - 1] : -1, ia[k], pa, 256);
			int mb = tokenizer_decode(b, k ? ib[k - 1] : -1, ib[k], pb, 256);
			assert_int_equal(ma, mb);
			assert_memory_equal(pa, pb, (size_t)ma);
		}
		free(ia);
		free(ib);
	}
}

static void write_load_compare(const tokenizer_t *a, const char *name)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", test_tmpdir(), name);
	gguf_writer_t *w = gguf_writer_new();
	tokenizer_write_gguf(a, w);
	if (gguf_writer_write(w, path) < 0)
		fail_msg("gguf_writer_write: %s", err_get());
	gguf_writer_free(w);
	gguf_t *g;
	tokenizer_t *b = load_gguf_file(path, &g);
	if (!b)
		fail_msg("reload %s: %s", name, err_get());
	check_same_tokenizer(a, b);
	tokenizer_free(b);
	gguf_close(g);
}

static void test_gguf_write_round_trip(void **state)
{
	const char *p = test_model_path("tok512.bin");
	if (p) {
		tokenizer_t *a = tokenizer_load_llama2c(p, 512);
		assert_non_null(a);
		write_load_compare(a, "tok512.gguf");
		/* add_space_prefix = false: no dummy space, none stripped */
		char path[256];
		snprintf(path, sizeof path, "%s/nospace.gguf", test_tmpdir());
		gguf_writer_t *w = gguf_writer_new();
		tokenizer_write_gguf(a, w);
		gguf_writer_set_bool(w, "tokenizer.ggml.add_space_prefix", false);
		assert_int_equal(gguf_writer_write(w, path), 0);
		gguf_writer_free(w);
		gguf_t *g;
		tokenizer_t *b = load_gguf_file(path, &g);
		assert_non_null(b);
		int32_t ids[8];
		int64_t n = tokenizer_encode(b, "Once", 4, true, ids, 8);
		print_message("  \"Once\" without the dummy space: %lld ids\n",
			      (long long)n);
		/* no piece starts with U+2581: "\xE2\x96\x81Once" (403) cannot */
		assert_true(n >= 2 && n <= 5 && ids[0] == 1);
		for (int64_t i = 1; i < n; i++)
			assert_true(strncmp(tokenizer_piece(b, ids[i]),
					    "\xE2\x96\x81", 3) != 0);
		char back[64];
		assert_int_equal(decode_all(b, ids, n, back, sizeof back), 4);
		assert_memory_equal(back, "Once", 4);
		write_load_compare(b, "nospace2.gguf");
		tokenizer_free(b);
		gguf_close(g);
		tokenizer_free(a);
	}
	const int32_t sizes[] = { 512, 32000, 49152, 151936 };
	for (int k = 0; k < TOKENIZER_COUNT; k++)
		for (size_t i = 0; i < EG_ARRAY_LEN(sizes); i++) {
			if (k == TOKENIZER_LLAMA && sizes[i] > 32000)
				continue;
			tokenizer_t *a = tokenizer_synth((tokenizer_kind_t)k,
							 sizes[i], 3);
			assert_non_null(a);
			write_load_compare(a, "synth.gguf");
			tokenizer_free(a);
		}
}

/* ---- speed ---- */

static double seconds_since(uint64_t t0)
{
	return (double)(time_now_ns() - t0) * 1e-9;
}

static void test_speed(void **state)
{
	uint64_t t0 = time_now_ns();
	tokenizer_t *q = tokenizer_synth(TOKENIZER_GPT2, 151936, 11);
	double synth_s = seconds_since(t0);
	assert_non_null(q);
	tokenizer_t *l = tokenizer_synth(TOKENIZER_LLAMA, 32000, 11);
	assert_non_null(l);
	/* 100 KB of English-like text */
	size_t n = 100 * 1024;
	char *text = malloc(n + 1);
	rng_t r;
	rng_seed(&r, 3);
	for (size_t i = 0; i < n; i++) {
		uint64_t u = rng_next(&r) % 7;
		text[i] = u == 0 ? ' ' : "etaoinshrdlu"[rng_next(&r) % 12];
	}
	text[n] = '\0';
	t0 = time_now_ns();
	int64_t cq = tokenizer_encode(q, text, n, false, NULL, 0);
	double q_s = seconds_since(t0);
	t0 = time_now_ns();
	int64_t cl = tokenizer_encode(l, text, n, true, NULL, 0);
	double l_s = seconds_since(t0);
	/* one long chunk (no spaces) is the worst case for the merge loop */
	memset(text, 'e', n);
	t0 = time_now_ns();
	int64_t ce = tokenizer_encode(q, text, n, false, NULL, 0);
	double e_s = seconds_since(t0);
	print_message("tokenizer speed: synth151936 %.3f s, encode 100KB "
		      "gpt2 %.3f s (%lld ids), llama %.3f s (%lld ids), "
		      "100KB one chunk %.3f s (%lld ids)\n", synth_s, q_s,
		      (long long)cq, l_s, (long long)cl, e_s, (long long)ce);
	/* the times are printed, not asserted (a shared machine's timings are
	 * noise); a quadratic merge loop shows as seconds in this line */
	assert_true(cq > 0 && cl > 0 && ce > 0);
	free(text);
	tokenizer_free(q);
	tokenizer_free(l);
}

/* tokenizer_tokenize: llama_tokenize's special-token partition, space
 * prefix after special tokens and add_special, on tok512. */
static void test_llamacpp_semantics(void **state)
{
	(void)state;
	tokenizer_t *t = tokenizer_load_llama2c(test_repo_model_path("tok512.bin"),
						512);
	assert_non_null(t);
	int32_t a[64], b[64];
	int64_t nb = tokenizer_encode(t, "hi", 2, false, b, 64);
	/* "<s>" read as BOS, then "hi" with its own space prefix */
	int64_t na = tokenizer_tokenize(t, "<s>hi", 5, false, true, a, 64);
	assert_int_equal(na, nb + 1);
	assert_int_equal(a[0], 1);
	assert_memory_equal(a + 1, b, (size_t)nb * sizeof *b);
	/* without parse_special "<s>" stays text, as tokenizer_encode has it */
	na = tokenizer_tokenize(t, "<s>hi", 5, false, false, a, 64);
	nb = tokenizer_encode(t, "<s>hi", 5, false, b, 64);
	assert_int_equal(na, nb);
	assert_memory_equal(a, b, (size_t)nb * sizeof *b);
	/* add_special: BOS first; "</s>" in the middle splits the text */
	na = tokenizer_tokenize(t, "a</s>b", 6, true, true, a, 64);
	assert_true(na >= 4);
	assert_int_equal(a[0], 1);
	bool eos = false;
	for (int64_t i = 1; i < na; i++)
		eos |= a[i] == 2;
	assert_true(eos);
	/* empty text: BOS only */
	assert_int_equal(tokenizer_tokenize(t, "", 0, true, true, a, 64), 1);
	tokenizer_free(t);
}

int main(void)
{
	log_quiet = true;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tok512_known_ids),
		cmocka_unit_test(test_llamacpp_semantics),
		cmocka_unit_test(test_expected_prompts),
		cmocka_unit_test(test_stories_gguf_matches_bin),
		cmocka_unit_test(test_tok105_char_level),
		cmocka_unit_test(test_llama2_vocab),
		cmocka_unit_test(test_llama2c_malformed),
		cmocka_unit_test(test_gpt2_mini_bpe),
		cmocka_unit_test(test_pre_splits),
		cmocka_unit_test(test_gpt2_validation),
		cmocka_unit_test(test_synth_shape),
		cmocka_unit_test(test_synth_round_trips),
		cmocka_unit_test(test_real_round_trips),
		cmocka_unit_test(test_gguf_write_round_trip),
		cmocka_unit_test(test_speed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
