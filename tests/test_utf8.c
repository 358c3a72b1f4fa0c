/* The UTF-8 policy's streaming decoder (model/utf8.h): split characters
 * wait for their end, U+FFFD per maximal subpart of an ill-formed sequence
 * (overlong forms, surrogates, past U+10FFFF, bad continuations), one
 * U+FFFD for a truncated end, and the same output however the bytes are
 * split into pieces. */
#include "testutil.h"

#include "base/base.h"
#include "model/utf8.h"

#define R "\xEF\xBF\xBD" /* U+FFFD */

/* Feeds the pieces (NULL-terminated) one by one, then flushes; checks the
 * concatenated output against want. */
static void check_pieces(const char *const *pieces, const char *want,
			 size_t want_len)
{
	utf8_stream_t st = {0};
	char out[1024];
	size_t o = 0;
	for (int i = 0; pieces[i]; i++) {
		size_t n = strlen(pieces[i]);
		assert_true(o + UTF8_STREAM_OUT_MAX(n) < sizeof out);
		o += utf8_stream_feed(&st, pieces[i], n, out + o);
	}
	o += utf8_stream_flush(&st, out + o);
	if (o != want_len || memcmp(out, want, o)) {
		print_message("got %zu bytes, want %zu\n", o, want_len);
		fail();
	}
}

#define CHECK(want, ...)                                                     \
	do {                                                                 \
		const char *const p_[] = {__VA_ARGS__, NULL};                \
		check_pieces(p_, want, sizeof(want) - 1);                    \
	} while (0)

static void test_valid_passes(void **state)
{
	CHECK("plain ASCII", "plain ASCII");
	CHECK("caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80", "caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80");
	/* the edges of each range of table 3-7 */
	CHECK("\xC2\x80\xDF\xBF\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80\xF0\x90\x80\x80\xF4\x8F\xBF\xBF",
	      "\xC2\x80\xDF\xBF\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80\xF0\x90\x80\x80\xF4\x8F\xBF\xBF");
	/* U+0000 is valid UTF-8 and stays */
	utf8_stream_t st = {0};
	char out[16];
	assert_int_equal(utf8_stream_feed(&st, "\0b", 2, out), 2);
	assert_memory_equal(out, "\0b", 2);
}

static void test_split_sequences(void **state)
{
	CHECK("\xE4\xB8\xAD", "\xE4", "\xB8", "\xAD");
	CHECK("a\xE4\xB8\xAD" "b", "a\xE4", "\xB8\xAD" "b");
	CHECK("\xF0\x9F\x98\x80", "\xF0", "\x9F\x98\x80");
	CHECK("\xF0\x9F\x98\x80", "\xF0\x9F", "\x98\x80");
	CHECK("\xF0\x9F\x98\x80", "\xF0\x9F\x98", "\x80");
	CHECK("\xC3\xA9\xC3\xA9", "\xC3", "\xA9\xC3", "\xA9");
	/* nothing comes out until the character is whole */
	utf8_stream_t st = {0};
	char out[32];
	assert_int_equal(utf8_stream_feed(&st, "x\xE4", 2, out), 1);
	assert_int_equal(utf8_stream_feed(&st, "\xB8", 1, out), 0);
	assert_int_equal(utf8_stream_feed(&st, "\xAD", 1, out), 3);
	assert_memory_equal(out, "\xE4\xB8\xAD", 3);
	assert_int_equal(utf8_stream_flush(&st, out), 0);
}

static void test_overlong(void **state)
{
	CHECK(R R, "\xC0\xAF");                 /* C0, C1 never lead */
	CHECK(R R, "\xC1\xBF");
	CHECK(R R R, "\xE0\x80\xAF");           /* E0 needs A0..BF next */
	CHECK(R R R R, "\xF0\x80\x80\xAF");     /* F0 needs 90..BF next */
	CHECK(R R R, "\xE0", "\x80", "\xAF");   /* split the same */
}

static void test_surrogates_and_range(void **state)
{
	CHECK(R R R, "\xED\xA0\x80");           /* U+D800 */
	CHECK(R R R, "\xED\xBF\xBF");           /* U+DFFF */
	CHECK(R R R R, "\xF4\x90\x80\x80");     /* U+110000 */
	CHECK(R R R R, "\xF5\x80\x80\x80");     /* F5..FF never lead */
	CHECK(R, "\xFF");
}

static void test_invalid_continuation(void **state)
{
	CHECK(R "A", "\xC3" "A");
	CHECK(R "A", "\xE4\xB8" "A");           /* maximal subpart E4 B8 */
	CHECK(R "A", "\xF0\x9F\x98" "A");       /* maximal subpart F0 9F 98 */
	CHECK(R "\xC3\xA9", "\xE4\xC3\xA9");    /* a new lead ends the subpart */
	CHECK(R "\xE4\xB8\xAD", "\xE4", "\xE4\xB8\xAD");
	CHECK(R R "x", "\x80\xBF" "x");         /* lone continuations */
	/* the Unicode Standard's example (chapter 3, table 3-8) */
	CHECK("a" R R R "b" R "c" R R "d",
	      "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64");
}

static void test_truncated_end(void **state)
{
	CHECK("ab" R, "ab\xF0\x9F\x98");
	CHECK("ab" R, "ab\xF0", "\x9F", "\x98");
	CHECK(R, "\xE2\x82");
	CHECK(R, "\xC3");
	/* flush resets: a new text starts clean */
	utf8_stream_t st = {0};
	char out[16];
	utf8_stream_feed(&st, "\xE2", 1, out);
	assert_int_equal(utf8_stream_flush(&st, out), 3);
	assert_int_equal(utf8_stream_feed(&st, "ok", 2, out), 2);
	assert_int_equal(utf8_stream_flush(&st, out), 0);
}

/* Random bytes (biased towards UTF-8 lead and continuation bytes), split
 * at random: the same output as one piece, and always well-formed. */
static void test_random_splits(void **state)
{
	rng_t r;
	rng_seed(&r, 11);
	for (int it = 0; it < 2000; it++) {
		unsigned char in[64];
		size_t n = 1 + rng_next(&r) % sizeof in;
		for (size_t i = 0; i < n; i++) {
			uint64_t u = rng_next(&r);
			in[i] = u % 3 == 0 ? (unsigned char)(0x80 + (u >> 8) % 64)
				: u % 3 == 1 ? (unsigned char)(0xC0 + (u >> 8) % 64)
					     : (unsigned char)(u >> 8);
		}
		size_t one_len;
		char *one = utf8_sanitize((const char *)in, n, &one_len);
		for (size_t i = 0; i < one_len;) { /* well-formed */
			size_t k = utf8_seq_len(one + i, one_len - i);
			assert_true(k > 0);
			i += k;
		}
		utf8_stream_t st = {0};
		char out[UTF8_STREAM_OUT_MAX(64)];
		size_t o = 0;
		for (size_t i = 0; i < n;) {
			size_t k = 1 + rng_next(&r) % 4;
			if (k > n - i)
				k = n - i;
			o += utf8_stream_feed(&st, (const char *)in + i, k, out + o);
			i += k;
		}
		o += utf8_stream_flush(&st, out + o);
		assert_int_equal(o, one_len);
		assert_memory_equal(out, one, o);
		free(one);
	}
}

static void test_seq_len(void **state)
{
	assert_int_equal(utf8_seq_len("a", 1), 1);
	assert_int_equal(utf8_seq_len("\xC3\xA9", 2), 2);
	assert_int_equal(utf8_seq_len("\xC3\xA9", 1), 0); /* cut short */
	assert_int_equal(utf8_seq_len("\xED\xA0\x80", 3), 0);
	assert_int_equal(utf8_seq_len("\xF0\x9F\x98\x80", 4), 4);
	assert_int_equal(utf8_seq_len("", 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_passes),
		cmocka_unit_test(test_split_sequences),
		cmocka_unit_test(test_overlong),
		cmocka_unit_test(test_surrogates_and_range),
		cmocka_unit_test(test_invalid_continuation),
		cmocka_unit_test(test_truncated_end),
		cmocka_unit_test(test_random_splits),
		cmocka_unit_test(test_seq_len),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
