/* Helpers shared by the cmocka tests. */
#ifndef EGANG_TESTUTIL_H
#define EGANG_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* A float's bits, and the float of some bits (bit-exact comparisons). */
static inline uint32_t f2u(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static inline float u2f(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* Whether the tests run under a user-mode emulator (tests/arm64/run.sh:
 * EGANG_TEST_EXEC names qemu-aarch64). There a child cannot exec this
 * binary itself (no binfmt_misc), and posix_spawn's exec errors do not
 * reach the parent (qemu-user runs its CLONE_VFORK child as a fork), so
 * the tests of spawning children skip. */
static inline int test_under_emulator(void) { return getenv("EGANG_TEST_EXEC") != NULL; }

/* The first i < n where a[i] and b[i] differ in their bits, or -1. */
static inline int64_t first_bits_diff(const float *a, const float *b, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		if (f2u(a[i]) != f2u(b[i]))
			return i;
	return -1;
}

/* fn's stderr, run in a child that must end by SIGABRT, into buf (a
 * test failure naming the child's status and stderr otherwise). */
static inline void test_abort_message(void (*fn)(void), char *buf, size_t cap)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	fflush(stderr);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGABRT, SIG_DFL);
		dup2(p[1], 2);
		fn();
		_exit(0);
	}
	close(p[1]);
	size_t len = 0;
	ssize_t k;
	while (len < cap - 1 && (k = read(p[0], buf + len, cap - 1 - len)) > 0)
		len += (size_t)k;
	buf[len] = 0;
	close(p[0]);
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT))
		fail_msg("no abort (status %d, stderr '%s')", st, buf);
}

/* Path of a file in ../shared/models, or NULL when the folder is absent (the
 * test then skips; under CI=true a missing model is a failure). One buffer:
 * copy the path before the next call. */
static inline const char *test_model_path(const char *file)
{
	static char buf[4096];
	const char *dir = getenv("EGANG_MODELS");
	snprintf(buf, sizeof buf, "%s/%s", dir ? dir : "../shared/models", file);
	if (access(buf, R_OK) == 0)
		return buf;
	const char *ci = getenv("CI");
	if (ci && strcmp(ci, "true") == 0)
		fail_msg("model %s is missing under CI", buf);
	return NULL;
}

#define SKIP_WITHOUT_MODEL(var, file)                                        \
	const char *var = test_model_path(file);                             \
	if (!var) {                                                          \
		print_message("no %s: skipped (../shared/models absent)\n", file); \
		skip();                                                      \
	}

/* Path of a file in the repository's models/ (stories260K.bin, tok512.bin:
 * committed, so always there; a missing one fails). Own buffer. */
static inline const char *test_repo_model_path(const char *file)
{
	static char buf[4096];
	const char *dir = getenv("EGANG_REPO_MODELS");
	snprintf(buf, sizeof buf, "%s/%s", dir ? dir : "models", file);
	if (access(buf, R_OK) != 0)
		fail_msg("%s is missing (models/ is part of the repository)", buf);
	return buf;
}

/* A fresh temporary directory for the test (removed by the OS's tmp). */
static inline const char *test_tmpdir(void)
{
	static char dir[64];
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "/tmp/egang-test-XXXXXX");
		if (!mkdtemp(dir))
			fail_msg("mkdtemp failed");
	}
	return dir;
}

/* ---- synthetic models (tests that include model/model.h first) ---- */
#ifdef EGANG_MODEL_H
/* A synthetic stories260k-shaped f32 model of `layers` layers written to
 * the test directory as NAME and loaded. */
static inline model_t *test_synth_model(const char *name, uint64_t seed, int layers)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", test_tmpdir(), name);
	if (synth_write(synth_find("stories260k"), DTYPE_F32, seed, layers, path, NULL,
			NULL) != 0)
		fail_msg("synth_write %s: %s", path, err_get());
	model_t *m = model_load(path, NULL);
	if (!m)
		fail_msg("model_load %s: %s", path, err_get());
	return m;
}
#endif

/* ---- ISA levels ---- */

#ifdef EGANG_KERNELS_H
/* the levels of this build's architecture (kernels.c), lowest first */
#if defined(__aarch64__)
static const char *const TEST_ISA_LEVELS[] = { "generic", "neon", "dotprod" };
#define TEST_N_ISA_LEVELS 3
#else
static const char *const TEST_ISA_LEVELS[] = { "generic", "avx2", "avx512", "avx512vnni", "amx" };
#define TEST_N_ISA_LEVELS 5
#endif

/* Levels this CPU runs (always at least generic), in TEST_ISA_LEVELS
 * order; the level in force is restored. */
static inline int test_levels_available(const char **out)
{
	int k = 0;
	const char *keep = kernels_isa();
	for (int i = 0; i < TEST_N_ISA_LEVELS; i++)
		if (kernels_set_isa(TEST_ISA_LEVELS[i]) == 0)
			out[k++] = TEST_ISA_LEVELS[i];
	assert_int_equal(kernels_set_isa(keep), 0);
	return k;
}

/* Whether level lv decodes type t from the packed (pack16) copies: every
 * x86 SIMD level (Q4_1 and Q5_1: the AVX-512 levels; BF16 not at amx,
 * whose lanes read the rows as stored); the ARM64 levels for Q4_K and Q6_K
 * (other types: the rows as stored). */
static inline bool test_level_packs(const char *lv, dtype_t t)
{
#if defined(__aarch64__)
	return strcmp(lv, "generic") != 0 && (t == DTYPE_Q4_K || t == DTYPE_Q6_K);
#else
	if (t == DTYPE_Q4_1 || t == DTYPE_Q5_1)
		return strncmp(lv, "avx512", 6) == 0;
	if (t == DTYPE_BF16 && strcmp(lv, "amx") == 0)
		return false;
	return strcmp(lv, "generic") != 0;
#endif
}

/* A level this CPU lacks: one SKIPPED test that names it, so that a level
 * the tests could not check shows in the summary instead of vanishing. */
static inline void test_isa_level_lacking(void **state)
{
	print_message("this CPU lacks %s: its level tests did not run\n", (const char *)*state);
	skip();
}

/* The most tests a program passes to test_run_levels. */
#define TEST_MAX_TESTS 64

/* Runs the n tests of group and then one test_isa_level_lacking per level
 * of TEST_ISA_LEVELS that this CPU lacks. The levels it runs went through
 * every level test of the group and count no test of their own: an INFO
 * line names them. */
static inline int test_run_levels(const char *group, const struct CMUnitTest *tests, size_t n)
{
	static const char *const names[] = {
#if defined(__aarch64__)
		"isa level generic", "isa level neon", "isa level dotprod",
#else
		"isa level generic", "isa level avx2", "isa level avx512", "isa level avx512vnni",
		"isa level amx",
#endif
	};
	_Static_assert(sizeof names / sizeof names[0] == TEST_N_ISA_LEVELS,
		       "a name per level of TEST_ISA_LEVELS");
	struct CMUnitTest all[TEST_MAX_TESTS + TEST_N_ISA_LEVELS];
	if (n > TEST_MAX_TESTS) {
		fprintf(stderr, "test_run_levels: %zu tests, at most %d\n", n, TEST_MAX_TESTS);
		return 1;
	}
	memcpy(all, tests, n * sizeof *tests);
	char ran[128] = "";
	const char *keep = kernels_isa();
	for (int i = 0; i < TEST_N_ISA_LEVELS; i++) {
		if (kernels_set_isa(TEST_ISA_LEVELS[i]) == 0) {
			strcat(strcat(ran, " "), TEST_ISA_LEVELS[i]);
			continue;
		}
		all[n++] = (struct CMUnitTest){ names[i], test_isa_level_lacking, NULL, NULL,
						(void *)TEST_ISA_LEVELS[i] };
	}
	kernels_set_isa(keep);
	printf("[ INFO     ] levels this CPU runs, each through every level test:%s\n", ran);
	return _cmocka_run_group_tests(group, all, n, NULL, NULL);
}
#define test_run_group_levels(tests)                                               \
	test_run_levels(#tests, tests, sizeof(tests) / sizeof((tests)[0]))

/* Float-weight dot products: generic and SIMD use different (each fixed)
 * summation orders, and SIMD uses FMA. Each order's error is at most about
 * n * 2^-24 * sum|w x| (the classic recursive-summation bound), so two
 * orders differ by at most n * 2^-23 * sum|w x|; the tests use that bound
 * plus a small absolute floor (1e-30) for all-zero rows. */
#define DOT_TOL(n, sabs) ((double)(n) * 0x1p-23 * (sabs) + 1e-30)
#endif

/* ---- a toy wave plan that checks itself ----
 * (tests of the gang and of what drives it: include base/wave.h first)
 * Every chunk records how often it ran, every finish checks that all of
 * its wave's chunks ran once, and a token's result is compared with a
 * serial run of the same plan (toy_check). */
#ifdef EGANG_WAVE_H
#include <stdatomic.h>

#define TOY_WAVES 6
#define TOY_MAX_CHUNKS 17

typedef struct toy {
	uint64_t input;                         /* per token */
	uint64_t out[TOY_WAVES][TOY_MAX_CHUNKS]; /* chunk results */
	uint64_t acc[TOY_WAVES];                /* finish results */
	_Atomic uint32_t runs[TOY_WAVES][TOY_MAX_CHUNKS];
	_Atomic uint32_t finishes[TOY_WAVES];
	_Atomic uint32_t errors;
	wave_t waves[TOY_WAVES];
	wave_plan_t plan;
} toy_t;

static inline uint64_t toy_mix(uint64_t a, uint64_t b)
{
	return hash64(&b, sizeof b, a ^ 0x9e3779b97f4a7c15ull);
}

static inline void toy_chunk(void *ctx, uint32_t w, uint32_t i)
{
	toy_t *t = ctx;
	uint64_t prev = w ? t->acc[w - 1] : t->input;
	t->out[w][i] = toy_mix(prev, (uint64_t)w << 32 | i);
	/* relaxed: counted, read by finish after the wave's barrier */
	atomic_fetch_add_explicit(&t->runs[w][i], 1, memory_order_relaxed);
}

static inline void toy_finish(void *ctx, uint32_t w)
{
	toy_t *t = ctx;
	uint64_t a = w;
	for (uint32_t i = 0; i < t->waves[w].n_chunks; i++) {
		if (atomic_load_explicit(&t->runs[w][i], memory_order_relaxed) != 1)
			atomic_fetch_add(&t->errors, 1);
		a = toy_mix(a, t->out[w][i]);
	}
	t->acc[w] = a;
	atomic_fetch_add_explicit(&t->finishes[w], 1, memory_order_relaxed);
}

static inline void toy_init(toy_t *t)
{
	memset(t, 0, sizeof *t);
	static const uint32_t chunks[TOY_WAVES] = {1, 17, 3, 8, 16, 5};
	for (int w = 0; w < TOY_WAVES; w++)
		t->waves[w] = (wave_t){chunks[w], toy_chunk, toy_finish};
	t->plan = (wave_plan_t){t, TOY_WAVES, t->waves};
}

/* A new token: its input, and the run counters back to zero. */
static inline void toy_reset(toy_t *t, uint64_t input)
{
	t->input = input;
	for (int w = 0; w < TOY_WAVES; w++) {
		atomic_store(&t->finishes[w], 0);
		for (int i = 0; i < TOY_MAX_CHUNKS; i++)
			atomic_store(&t->runs[w][i], 0);
	}
}

/* The reference result of a token, computed serially. */
static inline uint64_t toy_reference(uint64_t input)
{
	static toy_t ref;
	toy_init(&ref);
	toy_reset(&ref, input);
	wave_plan_run_serial(&ref.plan);
	return ref.acc[TOY_WAVES - 1];
}

/* Every chunk ran once, every finish once, the result is the serial one. */
static inline void toy_check(toy_t *t)
{
	assert_int_equal(atomic_load(&t->errors), 0);
	for (int w = 0; w < TOY_WAVES; w++)
		assert_int_equal(atomic_load(&t->finishes[w]), 1);
	assert_true(t->acc[TOY_WAVES - 1] == toy_reference(t->input));
}
#endif

#endif
