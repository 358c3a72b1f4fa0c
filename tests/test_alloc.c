/* Library paths never abort: every allocation point of forward_new,
 * engine_generate and prefill attention (base/alloc.h) is made to fail in
 * turn, N = 1, 2, ... until a run passes them all; each failed run must
 * return NULL / -1 with a one-line message naming what could not be
 * allocated, and leave nothing behind (under `make SANITIZE=address`, LSan
 * turns a leak into a failure at exit). The same on a gang of two, where
 * an attention chunk fails on whichever thread runs it. */
#include <pthread.h>
#include <stdatomic.h>

#include "base/alloc.h"
#include "base/base.h"
#include "gang/gang.h"
#include "kernels/kernels.h"
#include "model/forward.h"
#include "model/model.h"
#include "engine/engine.h"

#include "testutil.h"

static void expect_alloc_message(uint64_t n)
{
	const char *e = err_get();
	if (!strstr(e, "cannot allocate") || strchr(e, '\n'))
		fail_msg("failure at allocation point %llu: message '%s'",
			 (unsigned long long)n, e);
}

/* forward_new: every failure point gives NULL and a message. */
static void test_forward_new_fails_cleanly(void **state)
{
	(void)state;
	model_t *m = test_synth_model("alloc.gguf", 3, 2);
	uint64_t n;
	for (n = 1; n < 1000; n++) {
		eg_alloc_fail_at(n);
		forward_t *f = forward_new(m, 64, 0);
		uint64_t passed = eg_alloc_count();
		eg_alloc_fail_at(0);
		if (f) {
			/* the failure point was never reached: all were tried */
			assert_true(passed < n);
			forward_free(f);
			break;
		}
		expect_alloc_message(n);
	}
	print_message("forward_new: %llu allocation points, each failed once\n",
		      (unsigned long long)(n - 1));
	assert_true(n > 20); /* the hook really reached forward_new's buffers */
	assert_true(n < 1000);
	model_free(m);
}

static int count_text(void *user, const char *s, size_t len)
{
	(void)s;
	*(size_t *)user += len;
	return 0;
}

/* engine_generate with a prompt of several prefill batches and a stop
 * string: every allocation point it passes (token ids, the held-back text,
 * the attention scratch of each prefill chunk) fails once. */
static void generate_all_points(gang_t *g, const char *what, uint64_t min_failed)
{
	model_t *m = test_synth_model("alloc.gguf", 3, 2);
	forward_t *f = forward_new(m, 128, 0);
	assert_non_null(f);
	size_t chars = 0;
	engine_params_t ep = {
		.prompt = "the quick brown fox jumps over the lazy dog and then the "
			  "fox naps under a tree while the dog barks at the moon",
		.n_predict = 16,
		.sampler = {.temp = 0.0f, .top_p = 1.0f},
		.on_text = count_text,
		.user = &chars,
		.stop = (const char *const[]){ "zzzzzz" },
		.n_stop = 1,
	};
	engine_result_t r;
	/* the reference: no failure */
	assert_int_equal(engine_generate(m, f, g, &ep, &r), 0);
	int64_t want = r.n_gen;
	engine_result_free(&r);
	uint64_t n, failed = 0;
	for (n = 1; n < 100000; n++) {
		eg_alloc_fail_at(n);
		int rc = engine_generate(m, f, g, &ep, &r);
		uint64_t passed = eg_alloc_count();
		eg_alloc_fail_at(0);
		engine_result_free(&r);
		if (rc == 0 && passed < n) {
			assert_int_equal(r.n_gen, want);
			break;
		}
		/* a SIMD attention level survives its scratch's failure on the
		 * reference's smaller one: rc 0 with the point passed is fine */
		if (rc < 0) {
			expect_alloc_message(n);
			failed++;
		}
	}
	print_message("%s: %llu allocation points, %llu failed the generation\n",
		      what, (unsigned long long)(n - 1), (unsigned long long)failed);
	assert_true(n < 100000);
	assert_true(failed >= min_failed);
	forward_free(f);
	model_free(m);
}

static void test_generate_fails_cleanly_serial(void **state)
{
	(void)state;
	/* at the generic level, where a failed attention scratch has no
	 * smaller one to fall back on: ids, held-back text and every
	 * attention chunk of the prompt fail the generation */
	const char *keep = kernels_isa();
	assert_int_equal(kernels_set_isa("generic"), 0);
	generate_all_points(NULL, "engine_generate, serial, generic level", 10);
	assert_int_equal(kernels_set_isa(keep), 0);
}

static void test_generate_fails_cleanly_gang(void **state)
{
	(void)state;
	int cpus[2];
	int k = topo_cores(cpus, 2);
	assert_true(k >= 1);
	if (k < 2)
		cpus[1] = cpus[0];
	gang_config_t gc = {.cpus = cpus, .n_cpus = 2, .pin = false};
	gang_t *g = gang_init(&gc);
	assert_non_null(g);
	gang_request(g, gang_all(g));
	/* at the level in use (a SIMD attention falls back on the
	 * reference's smaller scratch), then at the generic level, where an
	 * attention chunk's failure on a worker reaches the leader */
	generate_all_points(g, "engine_generate, gang of 2", 2);
	const char *keep = kernels_isa();
	assert_int_equal(kernels_set_isa("generic"), 0);
	generate_all_points(g, "engine_generate, gang of 2, generic level", 10);
	assert_int_equal(kernels_set_isa(keep), 0);
	gang_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forward_new_fails_cleanly),
		cmocka_unit_test(test_generate_fails_cleanly_serial),
		cmocka_unit_test(test_generate_fails_cleanly_gang),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
