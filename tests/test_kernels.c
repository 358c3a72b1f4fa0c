/* Tests of the kernels layer: type table, fp16/bf16 conversion (exhaustive
 * over halves), quantization error bounds, every SIMD level against its
 * generic twin (bit-exact where kernels_impl.h promises it, within a named
 * tolerance elsewhere), chunk-split invariance of matvec_rows, ragged sizes,
 * the messages of Q8_1 weights and of an absent kernel called, and
 * rmsnorm / softmax / rope / swiglu against double-precision references.
 *
 * `test_kernels --isa` prints the level chosen by kernels_init (used to test
 * EGANG_ISA); `test_kernels --bench [rows cols reps] [--mb N] [--types L]
 * [--levels L]` runs the matvec microbenchmark instead of the tests
 * (bench_usage: --mb N reads from memory). */
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>

#include "base/base.h"
#include "kernels/kernels.h"

#include "testutil.h" /* after kernels.h: ISA levels, DOT_TOL */
#include "data/q5_ggml_golden.h" /* test_q5_ggml_golden */
#include "kernels/kernels_impl.h" /* exp_eg */
#include "model/sampler.h"

static void fill_normal(rng_t *r, float *x, int64_t n, float scale)
{
	for (int64_t i = 0; i < n; i++)
		x[i] = rng_normal(r) * scale;
}

/* -------------------------------------------------------------- table */

static void test_dtype_table(void **state)
{
	(void)state;
	assert_int_equal(dtype_info[DTYPE_F32].ggml_id, 0);
	assert_int_equal(dtype_info[DTYPE_F16].ggml_id, 1);
	assert_int_equal(dtype_info[DTYPE_BF16].ggml_id, 30);
	assert_int_equal(dtype_info[DTYPE_Q8_0].ggml_id, 8);
	assert_int_equal(dtype_info[DTYPE_Q4_0].ggml_id, 2);
	assert_int_equal(dtype_from_ggml(8), DTYPE_Q8_0);
	assert_int_equal(dtype_from_ggml(2), DTYPE_Q4_0);
	assert_int_equal(dtype_from_ggml(30), DTYPE_BF16);
	assert_int_equal(dtype_from_ggml(3), DTYPE_Q4_1);
	assert_int_equal(dtype_from_ggml(12), DTYPE_Q4_K);
	assert_int_equal(dtype_from_ggml(14), DTYPE_Q6_K);
	assert_int_equal(dtype_from_ggml(15), -1); /* q8_K: activations only */
	assert_int_equal(dtype_from_ggml(16), -1); /* iq2_xxs */
	assert_int_equal(dtype_from_name("q4_0"), DTYPE_Q4_0);
	assert_int_equal(dtype_from_name("bf16"), DTYPE_BF16);
	assert_int_equal(dtype_from_name("q5_k"), DTYPE_Q5_K);
	assert_int_equal(dtype_from_name("Q5_K"), DTYPE_Q5_K);
	assert_int_equal(dtype_from_ggml(20), DTYPE_IQ4_NL);
	assert_int_equal(dtype_from_ggml(23), DTYPE_IQ4_XS);
	assert_int_equal(dtype_row_bytes(DTYPE_IQ4_XS, 512), 272);
	assert_int_equal(dtype_row_bytes(DTYPE_IQ4_NL, 64), 36);
	assert_int_equal(dtype_from_name("IQ4_NL"), DTYPE_IQ4_NL);
	assert_int_equal(dtype_from_name("iq4_k"), -1);
	assert_int_equal(dtype_info[DTYPE_Q4_K].act, DTYPE_Q8_K);
	assert_int_equal(dtype_info[DTYPE_Q5_1].act, DTYPE_Q8_1);
	assert_int_equal(dtype_info[DTYPE_Q5_0].act, DTYPE_Q8_0);
	assert_int_equal(dtype_from_ggml(9), -1); /* Q8_1: activations only */
	assert_int_equal(dtype_row_bytes(DTYPE_Q4_K, 512), 288);
	assert_int_equal(dtype_row_bytes(DTYPE_Q6_K, 576), 0);
	assert_int_equal(dtype_row_bytes(DTYPE_Q3_K, 256), 110);
	assert_int_equal(dtype_info[DTYPE_F16].act, DTYPE_F32);
	assert_int_equal(dtype_info[DTYPE_BF16].act, DTYPE_F32);
	assert_int_equal(dtype_info[DTYPE_Q8_0].act, DTYPE_Q8_0);
	assert_int_equal(dtype_info[DTYPE_Q4_0].act, DTYPE_Q8_0);
	assert_int_equal(dtype_row_bytes(DTYPE_F32, 105), 420);
	assert_int_equal(dtype_row_bytes(DTYPE_BF16, 33), 66);
	assert_int_equal(dtype_row_bytes(DTYPE_Q8_0, 64), 68);
	assert_int_equal(dtype_row_bytes(DTYPE_Q4_0, 4096), 128 * 18);
	assert_int_equal(dtype_row_bytes(DTYPE_Q4_0, 33), 0);
	assert_int_equal(dtype_row_bytes(DTYPE_F32, -1), 0);
}

static void test_isa_names(void **state)
{
	(void)state;
	const char *isa = kernels_isa(); /* lazy init works */
	assert_non_null(isa);
	assert_int_equal(kernels_set_isa("sse9"), -1);
	assert_int_equal(kernels_set_isa(NULL), -1);
	assert_string_equal(kernels_isa(), isa);
	const char *lv[TEST_N_ISA_LEVELS];
	int k = test_levels_available(lv);
	assert_true(k >= 1);
	assert_string_equal(lv[0], "generic");
	/* kernels_init picks the best level (unless EGANG_ISA says otherwise) */
	if (!getenv("EGANG_ISA"))
		assert_string_equal(isa, lv[k - 1]);
}

/* ---------------------------------------------------------- level tables */

/* One problem of a table: printed (unless quiet) and counted. */
static int table_problem(bool quiet, const char *fmt, ...)
{
	if (!quiet) {
		va_list ap;
		va_start(ap, fmt);
		char line[256];
		vsnprintf(line, sizeof line, fmt, ap);
		va_end(ap);
		print_error("%s\n", line);
	}
	return 1;
}

/* A packed matmat that is never called (test_tables_complete). */
static void matmat_p16_stub(const void *P, const void *X, size_t xs, float *Y, int64_t ys,
			    int64_t n, int64_t ng, int64_t ntok)
{
}

/* The problems of table k (kernels_impl.h's contract): an entry NULL (a
 * kernel forgotten); an absent kernel where KERNEL_TYPE_OPS / KERNEL_OPS
 * do not allow one; a packed matmat without the packed matvec that
 * pack16_used asks for. Every function-pointer field is visited: the
 * lists are held to the structs by kernels_impl.h's asserts. */
static int table_problems(const kernel_ops_t *k, bool quiet)
{
	int bad = 0;
	for (int t = 0; t < DTYPE_COUNT; t++) {
		const kernel_type_ops_t *e = &k->type[t];
		const char *tn = dtype_info[t].name;
#define CHECK_TYPE_ENTRY(field, absent, optional)                                          \
		if (!e->field)                                                             \
			bad += table_problem(quiet, "%s: type[%s].%s is NULL", k->name, tn, #field); \
		else if (e->field == absent && !(optional))                                \
			bad += table_problem(quiet, "%s: type[%s].%s is " #absent ", not optional", \
					     k->name, tn, #field);
		KERNEL_TYPE_OPS(CHECK_TYPE_ENTRY)
#undef CHECK_TYPE_ENTRY
		if (e->matmat_p16 && e->matmat_p16 != matmat_p16_absent &&
		    e->matvec_p16 == matvec_p16_absent)
			bad += table_problem(quiet, "%s: type[%s] has a packed matmat, no packed matvec",
					     k->name, tn);
	}
#define CHECK_ENTRY(field, absent, optional)                                                \
	if (!k->field)                                                                     \
		bad += table_problem(quiet, "%s: %s is NULL", k->name, #field);            \
	else if (k->field == absent && !(optional))                                        \
		bad += table_problem(quiet, "%s: %s is " #absent ", not optional", k->name, #field);
	KERNEL_OPS(CHECK_ENTRY)
#undef CHECK_ENTRY
	return bad;
}

/* Every entry of every level table of this build is set, the tables of
 * levels this CPU cannot run included, and every level of this
 * architecture has its table. The check itself is checked on copies of the
 * generic table with entries broken on purpose. */
static void test_tables_complete(void **state)
{
	(void)state;
	int found[TEST_N_ISA_LEVELS] = { 0 }, n = 0;
	for (int isa = 0; isa < ISA_COUNT; isa++) {
		const kernel_ops_t *k = kernels_table(isa);
		if (!k)
			continue;
		assert_non_null(k->name);
		assert_int_equal(table_problems(k, false), 0);
		for (int i = 0; i < TEST_N_ISA_LEVELS; i++)
			found[i] += strcmp(k->name, TEST_ISA_LEVELS[i]) == 0;
		n++;
	}
	for (int i = 0; i < TEST_N_ISA_LEVELS; i++)
		if (found[i] != 1)
			fail_msg("level %s: %d tables", TEST_ISA_LEVELS[i], found[i]);
	assert_int_equal(n, TEST_N_ISA_LEVELS);
	assert_null(kernels_table(ISA_COUNT));
	print_message("%d level tables complete\n", n);

	kernel_ops_t broken = kops_generic;
	broken.type[DTYPE_Q4_K].matvec = NULL;             /* forgotten */
	broken.swiglu = NULL;                              /* forgotten */
	broken.type[DTYPE_F32].vec_dot = dot_absent;       /* absent, not optional */
	broken.type[DTYPE_F16].matmat_p16 = matmat_p16_stub; /* no packed matvec */
	broken.type[DTYPE_Q6_K].matmat = matmat_absent;    /* optional: fine */
	assert_int_equal(table_problems(&broken, true), 4);
}


static void dot_q8_1(void)
{
	static uint8_t w[256], xa[256];
	vec_dot(DTYPE_Q8_1, w, xa, 32);
}

static void matvec_q8_1(void)
{
	static uint8_t w[256], xa[256];
	float y[1];
	matvec_rows(DTYPE_Q8_1, w, xa, y, 32, 0, 1);
}

static void matmat_absent_direct(void)
{
	matmat_absent(NULL, 0, NULL, 0, NULL, 0, 32, 0, 1, 1);
}

/* Q8_1 as weights is a caller's bug that the public entries name; an absent
 * kernel called anyway names its entry (one function stands for it at
 * every level, so no level). */
static void test_absent_messages(void **state)
{
	(void)state;
	char buf[1024];
#ifndef NDEBUG
	test_abort_message(dot_q8_1, buf, sizeof buf);
	assert_non_null(strstr(buf, "Q8_1 is an activation type, never weights"));
	test_abort_message(matvec_q8_1, buf, sizeof buf);
	assert_non_null(strstr(buf, "Q8_1 is an activation type, never weights"));
#endif
	test_abort_message(matmat_absent_direct, buf, sizeof buf);
	/* the first line is the message; under qemu-user the emulator adds
	 * its own "uncaught target signal 6" line after it */
	const char *want = "egang: matmat_absent called: a matmat that this level or "
			   "type lacks (kernels_impl.h: callers check for it)\n";
	size_t n = strlen(want);
	assert_int_equal(strncmp(buf, want, n), 0);
	assert_true(buf[n] == 0 || strncmp(buf + n, "qemu: ", 6) == 0);
}

/* EGANG_ISA forces a level in a fresh process; an unknown level or one this
 * CPU lacks is refused: kernels_check_env fails (`--isa` exits 2, as the
 * CLI does) and the best level stays in use. */
static void test_isa_env(void **state)
{
	(void)state;
	const char *lv[TEST_N_ISA_LEVELS];
	int k = test_levels_available(lv);
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	assert_true(len > 0);
	exe[len] = 0;
	/* every level name kernels.c knows (another architecture's are
	 * refused), an unknown one, and a feature that is no level */
	const char *tries[] = { "generic", "avx2", "avx512", "avx512vnni", "neon", "dotprod",
				"bogus", "avx512bf16" };
	/* under qemu-user without binfmt_misc (make test-arm64) the shell
	 * cannot exec this binary itself: EGANG_TEST_EXEC names the emulator */
	const char *wrap = getenv("EGANG_TEST_EXEC");
	for (size_t i = 0; i < EG_ARRAY_LEN(tries); i++) {
		char cmd[4400], out[160] = "";
		snprintf(cmd, sizeof cmd, "EGANG_ISA=%s %.200s '%s' --isa 2>&1",
			 tries[i], wrap ? wrap : "", exe);
		FILE *p = popen(cmd, "r");
		assert_non_null(p);
		assert_non_null(fgets(out, sizeof out, p));
		int st = pclose(p);
		out[strcspn(out, "\n")] = 0;
		bool have = false;
		for (int j = 0; j < k; j++)
			have |= strcmp(lv[j], tries[i]) == 0;
		if (have) {
			assert_int_equal(st, 0);
			assert_string_equal(out, tries[i]);
		} else {
			assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
			assert_non_null(strstr(out, "EGANG_ISA="));
			assert_non_null(strstr(out, tries[i]));
		}
	}
}

/* ------------------------------------------------------- conversions */

/* Every half converts to float and back unchanged (NaN: stays NaN, made
 * quiet); every level's row conversion agrees with the generic, bit for bit,
 * on all 65536 halves. */
static void test_fp16_exhaustive(void **state)
{
	(void)state;
	uint16_t *h = malloc(65536 * 2), *h2 = malloc(65536 * 2);
	float *f = malloc(65536 * 4), *g = malloc(65536 * 4);
	for (uint32_t i = 0; i < 65536; i++)
		h[i] = (uint16_t)i;
	for (uint32_t i = 0; i < 65536; i++) {
		f[i] = fp16_to_f32(h[i]);
		bool nan = (i & 0x7C00) == 0x7C00 && (i & 0x3FF);
		assert_true(nan == isnan(f[i]));
		uint16_t back = f32_to_fp16(f[i]);
		assert_int_equal(back, nan ? (i | 0x200) : i);
		/* value check, independent of the bit manipulation */
		if (!nan && (i & 0x7C00) != 0x7C00) {
			int e = (i >> 10) & 0x1F, m = i & 0x3FF;
			double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
			if (i & 0x8000)
				v = -v;
			assert_true((double)f[i] == v);
		}
	}
	const char *lv[TEST_N_ISA_LEVELS];
	int k = test_levels_available(lv);
	for (int l = 0; l < k; l++) {
		assert_int_equal(kernels_set_isa(lv[l]), 0);
		/* odd offsets and lengths exercise the tails */
		dequantize_row(DTYPE_F16, h + 3, g + 3, 65536 - 3 - 5);
		for (uint32_t i = 3; i < 65536 - 5; i++)
			if (f2u(g[i]) != f2u(f[i]))
				fail_msg("%s: fp16 %04x -> %08x, generic %08x", lv[l],
					 i, f2u(g[i]), f2u(f[i]));
		quantize_row(DTYPE_F16, f + 1, h2 + 1, 65536 - 2);
		for (uint32_t i = 1; i < 65536 - 1; i++)
			if (h2[i] != f32_to_fp16(f[i]))
				fail_msg("%s: f32 %08x -> fp16 %04x, generic %04x",
					 lv[l], f2u(f[i]), h2[i], f32_to_fp16(f[i]));
	}
	free(h);
	free(h2);
	free(f);
	free(g);
}

/* f32 -> fp16 rounds to nearest even: checked against the two neighbouring
 * halves in double, over a stride of all 2^32 floats plus every float near
 * each half boundary; and every level agrees with the generic on them. */
static void test_fp16_from_float(void **state)
{
	(void)state;
	enum { N = 1 << 20 };
	float *x = malloc(N * 4);
	uint16_t *hv = malloc(N * 2);
	int64_t n = 0;
	for (uint64_t u = 0; u < (1ull << 32) && n < N / 2; u += 8209)
		x[n++] = u2f((uint32_t)u);
	rng_t r;
	rng_seed(&r, 11);
	while (n < N) { /* halfway points and their neighbours, random halves */
		uint16_t h = (uint16_t)rng_next(&r);
		if ((h & 0x7C00) == 0x7C00)
			continue;
		float a = fp16_to_f32(h), b = fp16_to_f32((uint16_t)(h + 1));
		if ((h & 0x7FFF) == 0x7BFF)
			b = copysignf(65536.0f, a);
		float mid = (float)(((double)a + (double)b) / 2);
		x[n++] = mid;
		x[n++] = nextafterf(mid, 0.0f);
		x[n++] = nextafterf(mid, INFINITY * a);
		x[n++] = a;
		if (n > N - 4)
			break;
	}
	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		uint16_t h = f32_to_fp16(v);
		if (isnan(v)) {
			assert_true(isnan(fp16_to_f32(h)));
			continue;
		}
		double got = fp16_to_f32(h), dv = v;
		double big = 65504.0 + 16.0; /* halfway to 2^16: inf from here */
		if (fabs(dv) >= big) {
			assert_true(isinf(got) && (got > 0) == (dv > 0));
			continue;
		}
		/* neighbours of h toward and away from v */
		uint16_t hm = (h & 0x7FFF) ? (uint16_t)(h - 1) : h;
		uint16_t hp = (h & 0x7FFF) < 0x7BFF ? (uint16_t)(h + 1) : h;
		double em = fabs(dv - fp16_to_f32(hm)), ep = fabs(dv - fp16_to_f32(hp));
		double e = fabs(dv - got);
		if (e > em || e > ep)
			fail_msg("f32_to_fp16(%a) = %04x is not nearest", v, h);
		if ((e == em && hm != h) || (e == ep && hp != h))
			if (h & 1)
				fail_msg("f32_to_fp16(%a) = %04x: tie not even", v, h);
	}
	const char *lv[TEST_N_ISA_LEVELS];
	int k = test_levels_available(lv);
	for (int l = 0; l < k; l++) {
		assert_int_equal(kernels_set_isa(lv[l]), 0);
		quantize_row(DTYPE_F16, x, hv, n);
		for (int64_t i = 0; i < n; i++)
			if (hv[i] != f32_to_fp16(x[i]))
				fail_msg("%s: f32 %08x -> %04x, generic %04x", lv[l],
					 f2u(x[i]), hv[i], f32_to_fp16(x[i]));
	}
	free(x);
	free(hv);
}

static void test_bf16(void **state)
{
	(void)state;
	for (uint32_t i = 0; i < 65536; i++) {
		float f = bf16_to_f32((uint16_t)i);
		assert_int_equal(f2u(f), i << 16);
		bool nan = isnan(f);
		assert_int_equal(f32_to_bf16(f), nan ? (i | 0x40) : i);
	}
	/* round to nearest even at the halfway point, away from it otherwise */
	assert_int_equal(f32_to_bf16(u2f(0x3F808000)), 0x3F80);
	assert_int_equal(f32_to_bf16(u2f(0x3F818000)), 0x3F82);
	assert_int_equal(f32_to_bf16(u2f(0x3F808001)), 0x3F81);
	assert_int_equal(f32_to_bf16(u2f(0x7F7FFFFF)), 0x7F80); /* -> inf */
	assert_int_equal(f32_to_bf16(u2f(0x00008000)), 0x0000); /* tie, even */
	assert_int_equal(f32_to_bf16(u2f(0x00018000)), 0x0002);
	rng_t r;
	rng_seed(&r, 5);
	for (int i = 0; i < 100000; i++) {
		float v = u2f((uint32_t)rng_next(&r));
		if (isnan(v) || isinf(v) || fabsf(v) > 3e38f)
			continue;
		uint16_t h = f32_to_bf16(v);
		double e = fabs((double)v - bf16_to_f32(h));
		assert_true(e <= fabs((double)v) * 0x1p-8 + 0x1p-134);
	}
	float x[105], y[105];
	uint16_t q[105];
	rng_seed(&r, 6);
	fill_normal(&r, x, 105, 3.0f);
	quantize_row(DTYPE_BF16, x, q, 105);
	dequantize_row(DTYPE_BF16, q, y, 105);
	for (int i = 0; i < 105; i++)
		assert_true(fabsf(y[i] - x[i]) <= fabsf(x[i]) * 0x1p-8f);
}

/* ------------------------------------------------------- quantization */

/* Q8_0: d = amax/127 exactly would give |err| <= d/2; the stored scale is
 * d16 = fp16(d), |d16 - d| <= d * 2^-11 (normal halves), and |q| <= 127, so
 * |err| <= d/2 + 127 * d * 2^-11 (+ one float rounding of d16*q).
 * Q4_0: d = max/-8, q = round-half-up(x/d) + 8 clamped to 15: an element
 * not clamped has |err| <= |d|/2 + 8 |d| 2^-11; a clamped one (x/d >= 7.5,
 * only possible with the sign opposite to max) has |err| <= |d| + 8 |d| 2^-11. Both also: every level quantizes the
 * activations bit-exactly like the generic. */
static void test_quantize_bounds(void **state)
{
	(void)state;
	enum { N = 4096 };
	float *x = malloc(N * 4), *y = malloc(N * 4);
	void *q = malloc(N * 2), *q2 = malloc(N * 2);
	rng_t r;
	rng_seed(&r, 1);
	for (int rep = 0; rep < 20; rep++) {
		fill_normal(&r, x, N, rep < 10 ? 1.0f : 0.05f * (float)rep);
		if (rep == 1) /* a zero block, a block with one value, ties */
			for (int j = 0; j < 32; j++) {
				x[j] = 0.0f;
				x[32 + j] = j == 5 ? -3.0f : 0.0f;
				x[64 + j] = (float)(j - 16) * 0.5f;
			}
		if (rep == 2) /* halves of the step: ties of the rounding */
			for (int j = 0; j < 32; j++)
				x[j] = (j == 0 ? 127.0f : (float)j + 0.5f) * 0.25f;
		quantize_row(DTYPE_Q8_0, x, q, N);
		dequantize_row(DTYPE_Q8_0, q, y, N);
		const block_q8_0 *b8 = q;
		for (int bi = 0; bi < N / 32; bi++) {
			float amax = 0;
			for (int j = 0; j < 32; j++)
				amax = fmaxf(amax, fabsf(x[bi * 32 + j]));
			double d = amax / 127.0;
			assert_true(fabs(fp16_to_f32(b8[bi].d) - d) <= d * 0x1p-11);
			double bound = d / 2 + 127 * d * 0x1p-11 + amax * 0x1p-23;
			for (int j = 0; j < 32; j++) {
				int i = bi * 32 + j;
				if (fabs((double)y[i] - x[i]) > bound)
					fail_msg("q8_0 [%d] %g -> %g, bound %g", i, x[i],
						 y[i], bound);
				assert_true(b8[bi].qs[j] >= -127);
			}
		}
		if (rep == 2) /* x * 127 / amax = j + 0.5 exactly: ties go to the
			       * even neighbour, as llama.cpp's _MM_ROUND_NEAREST */
			for (int j = 1; j < 32; j++)
				assert_int_equal(b8[0].qs[j], j % 2 ? j + 1 : j);
		const char *lv[TEST_N_ISA_LEVELS];
		int k = test_levels_available(lv);
		for (int l = 0; l < k; l++) {
			assert_int_equal(kernels_set_isa(lv[l]), 0);
			act_prepare(DTYPE_Q4_0, x, q2, N);
			assert_memory_equal(q, q2, dtype_row_bytes(DTYPE_Q8_0, N));
		}

		quantize_row(DTYPE_Q4_0, x, q, N);
		dequantize_row(DTYPE_Q4_0, q, y, N);
		const block_q4_0 *b4 = q;
		for (int bi = 0; bi < N / 32; bi++) {
			float amax = 0, max = 0;
			for (int j = 0; j < 32; j++)
				if (fabsf(x[bi * 32 + j]) > amax) {
					amax = fabsf(x[bi * 32 + j]);
					max = x[bi * 32 + j];
				}
			double ad = amax / 8.0;
			for (int j = 0; j < 32; j++) {
				int i = bi * 32 + j;
				/* x/d >= 7.5 (d = max/-8) is clamped to q = 15 */
				bool clamped = max != 0 && -8.0 * x[i] / max >= 7.49;
				double bound = (clamped ? ad : ad / 2) + 8 * ad * 0x1p-11 +
					       amax * 0x1p-22;
				if (fabs((double)y[i] - x[i]) > bound)
					fail_msg("q4_0 [%d] %g -> %g, bound %g", i, x[i],
						 y[i], bound);
			}
			(void)b4;
		}
	}
	/* NaN and inf do not crash and give a defined block */
	float z[32] = { 1.0f, NAN, -2.0f, INFINITY };
	block_q8_0 zb, zb2;
	quantize_row(DTYPE_Q8_0, z, &zb, 32);
	const char *lv[TEST_N_ISA_LEVELS];
	int k = test_levels_available(lv);
	for (int l = 0; l < k; l++) {
		assert_int_equal(kernels_set_isa(lv[l]), 0);
		quantize_row(DTYPE_Q8_0, z, &zb2, 32);
		assert_memory_equal(&zb, &zb2, sizeof zb);
	}
	free(x);
	free(y);
	free(q);
	free(q2);
}

/* ----------------------------------------------------- dot and matvec */

typedef struct mat {
	dtype_t t;
	int64_t rows, n;
	size_t rb;
	uint8_t *w;   /* (rows, n) of type t, rows packed (unaligned blocks) */
	float *wf;    /* (rows, n) dequantized */
	float *x;     /* (n,) */
	void *xa;     /* prepared activations */
	float *xaf;   /* (n,) the activations as the kernel sees them */
} mat_t;

static void mat_make(mat_t *m, dtype_t t, int64_t rows, int64_t n, uint64_t seed)
{
	rng_t r;
	rng_seed(&r, seed);
	m->t = t;
	m->rows = rows;
	m->n = n;
	m->rb = dtype_row_bytes(t, n);
	assert_true(m->rb > 0);
	/* + 1 byte: the matrix starts at an odd address */
	uint8_t *raw = malloc(m->rb * (size_t)rows + 1);
	m->w = raw + 1;
	m->wf = malloc(sizeof(float) * (size_t)(rows * n));
	float *tmp = malloc(sizeof(float) * (size_t)n);
	for (int64_t i = 0; i < rows; i++) {
		fill_normal(&r, tmp, n, 0.02f + 0.01f * (float)(i % 7));
		if (i % 5 == 3) /* outliers in some rows */
			tmp[(i * 7) % n] = 0.9f;
		quantize_row(t, tmp, m->w + m->rb * (size_t)i, n);
		dequantize_row(t, m->w + m->rb * (size_t)i, m->wf + i * n, n);
	}
	free(tmp);
	m->x = malloc(sizeof(float) * (size_t)n);
	fill_normal(&r, m->x, n, 1.0f);
	dtype_t at = dtype_info[t].act;
	m->xa = malloc(dtype_row_bytes(at, n) + 1);
	act_prepare(t, m->x, m->xa, n);
	m->xaf = malloc(sizeof(float) * (size_t)n);
	dequantize_row(at, m->xa, m->xaf, n);
}

static void mat_free(mat_t *m)
{
	free(m->w - 1);
	free(m->wf);
	free(m->x);
	free(m->xa);
	free(m->xaf);
}

static bool exact_type(dtype_t t) { return dtype_info[t].block > 1; }

/* Q4_1 / Q5_1 rows against Q8_1: the dot product's min term is m * s per
 * block (s = f16(d * sum q), block_q8_1), where the dequantized reference
 * has m * d16 * sum q: the difference, in double. */
static double q8_1_min_correction(dtype_t t, const uint8_t *w, const uint8_t *xa,
				  int64_t n)
{
	double c = 0;
	size_t wb = dtype_info[t].block_bytes;
	for (int64_t b = 0; b < n / QK; b++) {
		const uint8_t *x = xa + (size_t)b * 36;
		int32_t sum = 0;
		for (int j = 0; j < QK; j++)
			sum += (int8_t)x[4 + j];
		double m = fp16_to_f32((uint16_t)(w[b * wb + 2] | w[b * wb + 3] << 8));
		double d = fp16_to_f32((uint16_t)(x[0] | x[1] << 8));
		double sx = fp16_to_f32((uint16_t)(x[2] | x[3] << 8));
		c += m * (sx - d * sum);
	}
	return c;
}

/* One matrix at every level: vec_dot against a double reference; matvec
 * over the whole range equal to vec_dot per row (bit-exact within a level);
 * random [r0, r1) splits equal to the whole call (bit-exact); level against
 * generic bit-exact for quantized types, within DOT_TOL for float ones. */
static void check_matrix(dtype_t t, int64_t rows, int64_t n, uint64_t seed)
{
	mat_t m;
	mat_make(&m, t, rows, n, seed);
	float *yg = malloc(sizeof(float) * (size_t)rows);
	float *y = malloc(sizeof(float) * (size_t)(rows + 2));
	float *ys = malloc(sizeof(float) * (size_t)rows);
	double *ref = malloc(sizeof(double) * (size_t)rows);
	double *sabs = malloc(sizeof(double) * (size_t)rows);
	for (int64_t i = 0; i < rows; i++) {
		double s = 0, sa = 0;
		for (int64_t j = 0; j < n; j++) {
			double p = (double)m.wf[i * n + j] * m.xaf[j];
			s += p;
			sa += fabs(p);
		}
		if (dtype_info[t].act == DTYPE_Q8_1) /* the min term uses s */
			s += q8_1_min_correction(t, m.w + m.rb * (size_t)i, m.xa, n);
		ref[i] = s;
		sabs[i] = sa;
		yg[i] = vec_dot_generic(t, m.w + m.rb * (size_t)i, m.xa, n);
		if (fabs(yg[i] - s) > DOT_TOL(n, sa))
			fail_msg("%s n=%ld row %ld: generic %g, ref %g",
				 dtype_info[t].name, (long)n, (long)i, yg[i], s);
	}
	const char *lv[TEST_N_ISA_LEVELS];
	int k = test_levels_available(lv);
	rng_t r;
	rng_seed(&r, seed ^ 0x5eed);
	for (int l = 0; l < k; l++) {
		assert_int_equal(kernels_set_isa(lv[l]), 0);
		y[0] = y[rows + 1] = 12345.0f; /* guards around y[0..rows) */
		matvec_rows(t, m.w, m.xa, y + 1, n, 0, rows);
		assert_true(y[0] == 12345.0f && y[rows + 1] == 12345.0f);
		for (int64_t i = 0; i < rows; i++) {
			float v = vec_dot(t, m.w + m.rb * (size_t)i, m.xa, n);
			if (f2u(v) != f2u(y[1 + i]))
				fail_msg("%s %s n=%ld row %ld: vec_dot %a != matvec %a",
					 lv[l], dtype_info[t].name, (long)n, (long)i, v,
					 y[1 + i]);
			if (exact_type(t) ? f2u(v) != f2u(yg[i])
					  : fabs(v - yg[i]) > DOT_TOL(n, sabs[i]))
				fail_msg("%s %s n=%ld row %ld: %a, generic %a", lv[l],
					 dtype_info[t].name, (long)n, (long)i, v, yg[i]);
			if (fabs(v - ref[i]) > DOT_TOL(n, sabs[i]))
				fail_msg("%s %s n=%ld row %ld: %g, ref %g", lv[l],
					 dtype_info[t].name, (long)n, (long)i, v, ref[i]);
		}
		for (int rep = 0; rep < 8; rep++) { /* random chunkings */
			memset(ys, 0xff, sizeof(float) * (size_t)rows);
			int64_t r0 = 0;
			while (r0 < rows) {
				/* up to 40: the 16-row groups of the AVX-512
				 * quantized kernel at any offset */
				int64_t len = 1 + (int64_t)(rng_next(&r) %
					(rep < 4 ? 3 : rep < 6 ? 9 : 40));
				int64_t r1 = r0 + len < rows ? r0 + len : rows;
				matvec_rows(t, m.w, m.xa, ys, n, r0, r1);
				r0 = r1;
			}
			assert_memory_equal(ys, y + 1, sizeof(float) * (size_t)rows);
		}
		matvec_rows(t, m.w, m.xa, ys, n, 3, 3); /* empty range */
	}
	free(yg);
	free(y);
	free(ys);
	free(ref);
	free(sabs);
	mat_free(&m);
}

static void test_dot_float_types(void **state)
{
	(void)state;
	static const int64_t ns[] = { 1, 2, 7, 8, 15, 16, 17, 31, 33, 64, 105,
				      172, 257, 4096 + 32, 5632 };
	dtype_t ts[] = { DTYPE_F32, DTYPE_F16, DTYPE_BF16 };
	for (size_t ti = 0; ti < EG_ARRAY_LEN(ts); ti++)
		for (size_t i = 0; i < EG_ARRAY_LEN(ns); i++)
			check_matrix(ts[ti], ns[i] > 1000 ? 9 : 13, ns[i],
				     100 + ti * 31 + i);
}

static void test_dot_quant_types(void **state)
{
	(void)state;
	static const int64_t ns[] = { 32, 64, 96, 160, 4096 + 32, 5632 };
	dtype_t ts[] = { DTYPE_Q8_0, DTYPE_Q4_0 };
	for (size_t ti = 0; ti < EG_ARRAY_LEN(ts); ti++)
		for (size_t i = 0; i < EG_ARRAY_LEN(ns); i++)
			check_matrix(ts[ti], ns[i] > 1000 ? 11 : i % 2 ? 17 : 53, ns[i],
				     200 + ti * 31 + i);
}

/* The types of kquants.h: dot products against a double reference and
 * every level bit-exact with the generic (check_matrix). */
static void test_dot_kquant_types(void **state)
{
	(void)state;
	static const int64_t ns[] = { 256, 512, 1536, 5632 };
	dtype_t ts[] = { DTYPE_Q4_1, DTYPE_Q5_0, DTYPE_Q5_1, DTYPE_Q8_K, DTYPE_Q2_K,
			 DTYPE_Q3_K, DTYPE_Q4_K, DTYPE_Q5_K, DTYPE_Q6_K, DTYPE_IQ4_NL,
			 DTYPE_IQ4_XS };
	for (size_t ti = 0; ti < EG_ARRAY_LEN(ts); ti++)
		for (size_t i = 0; i < EG_ARRAY_LEN(ns); i++)
			check_matrix(ts[ti], ns[i] > 1000 ? 11 : i % 2 ? 17 : 37, ns[i],
				     300 + ti * 31 + i);
}

/* Quantize then dequantize normal data: the relative RMS error of each
 * type under its bound (about 1.5x what the quantizer reaches), and the
 * quantized row's bytes the same at every level. A packing bug in one
 * direction (a bit or nibble misplaced) breaks the bound. */
static void test_kquant_roundtrip(void **state)
{
	(void)state;
	static const struct { dtype_t t; double bound; } c[] = {
		{ DTYPE_Q4_1, 0.12 }, { DTYPE_Q5_0, 0.07 }, { DTYPE_Q5_1, 0.06 },
		{ DTYPE_Q8_K, 0.016 }, { DTYPE_Q2_K, 0.48 }, { DTYPE_Q3_K, 0.24 },
		{ DTYPE_Q4_K, 0.12 }, { DTYPE_Q5_K, 0.06 }, { DTYPE_Q6_K, 0.031 },
		{ DTYPE_IQ4_NL, 0.12 }, { DTYPE_IQ4_XS, 0.12 },
	};
	enum { N = 4096 };
	float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
	uint8_t *q = malloc(N * 2);
	rng_t r;
	rng_seed(&r, 4242);
	fill_normal(&r, x, N, 0.05f);
	x[77] = 0.8f; /* an outlier */
	for (size_t i = 0; i < EG_ARRAY_LEN(c); i++) {
		memset(q, 0xA5, N * 2);
		quantize_row(c[i].t, x, q, N);
		dequantize_row(c[i].t, q, y, N);
		double se = 0, ss = 0;
		for (int j = 0; j < N; j++) {
			se += ((double)y[j] - x[j]) * ((double)y[j] - x[j]);
			ss += (double)x[j] * x[j];
		}
		double rel = sqrt(se / ss);
		print_message("# %s: relative RMS error %.4f\n", dtype_info[c[i].t].name, rel);
		if (!(rel < c[i].bound))
			fail_msg("%s: relative RMS error %g over %g", dtype_info[c[i].t].name,
				 rel, c[i].bound);
		assert_true(q[dtype_row_bytes(c[i].t, N)] == 0xA5); /* no overrun */
	}
	/* a zero row quantizes to zeros and back */
	memset(x, 0, N * sizeof *x);
	for (size_t i = 0; i < EG_ARRAY_LEN(c); i++) {
		quantize_row(c[i].t, x, q, N);
		dequantize_row(c[i].t, q, y, N);
		for (int j = 0; j < N; j++)
			assert_true(y[j] == 0.0f);
	}
	free(x);
	free(y);
	free(q);
}

/* Extreme quantized values: weights of -128 (legal in a file, never made by
 * our quantizer), +-127 activations, all-equal blocks. */
static void test_dot_quant_extremes(void **state)
{
	(void)state;
	enum { N = 256, R = 22 }; /* a group of 16 rows, one of 4, 2 single */
	block_q8_0 w8[R * N / 32], xa[N / 32];
	block_q4_0 w4[R * N / 32];
	rng_t r;
	rng_seed(&r, 77);
	for (int b = 0; b < N / 32; b++) {
		xa[b].d = f32_to_fp16(0.01f * (float)(b + 1));
		for (int j = 0; j < 32; j++)
			xa[b].qs[j] = (int8_t)(b % 2 ? -127 : 127);
	}
	for (int b = 0; b < R * N / 32; b++) {
		w8[b].d = f32_to_fp16(b % 3 ? 1e-3f : -2.5f);
		w4[b].d = w8[b].d;
		for (int j = 0; j < 32; j++)
			w8[b].qs[j] = (int8_t)(b % 4 == 0 ? -128 : (int)(rng_next(&r) % 256) - 128);
		for (int j = 0; j < 16; j++)
			w4[b].qs[j] = (uint8_t)(b % 4 == 0 ? 0x00 : b % 4 == 1 ? 0xFF : rng_next(&r));
	}
	float yg[R], y[R];
	for (int i = 0; i < R; i++) {
		yg[i] = vec_dot_generic(DTYPE_Q8_0, w8 + i * N / 32, xa, N);
		y[i] = vec_dot_generic(DTYPE_Q4_0, w4 + i * N / 32, xa, N);
	}
	const char *lv[TEST_N_ISA_LEVELS];
	int k = test_levels_available(lv);
	for (int l = 0; l < k; l++) {
		assert_int_equal(kernels_set_isa(lv[l]), 0);
		float o[R];
		matvec_rows(DTYPE_Q8_0, w8, xa, o, N, 0, R);
		assert_memory_equal(o, yg, sizeof o);
		matvec_rows(DTYPE_Q4_0, w4, xa, o, N, 0, R);
		assert_memory_equal(o, y, sizeof o);
	}
}

/* Packed copies (pack16): matvec_range over any row range, with the
 * packed copy or without one, gives every row the generic's bits, at every
 * level (the ones without a packed kernel read the rows as stored); odd
 * block counts (the last pair of blocks half empty), row counts that leave
 * unpacked rows, ranges that start and end inside a group, extreme bytes. */
/* The inputs of a pack16 case: activations xa (xa_bytes) prepared from
 * random x for type t, the packed copy P of w when it has one (pb bytes),
 * and the rows' reference and result buffers. */
typedef struct pack_case {
	float *x, *ref, *y;
	void *xa;
	uint8_t *P;
	size_t pb;
} pack_case_t;

static void pack_case_new(pack_case_t *c, rng_t *r, dtype_t t, const uint8_t *w,
			  int64_t rows, int64_t n, size_t xa_bytes)
{
	c->x = malloc((size_t)n * sizeof *c->x);
	fill_normal(r, c->x, n, 1.0f);
	c->xa = malloc(xa_bytes);
	act_prepare(t, c->x, c->xa, n);
	c->pb = pack16_bytes(t, rows, n);
	c->P = c->pb ? aligned_alloc(64, (c->pb + 63) & ~(size_t)63) : NULL;
	if (c->P)
		pack16(t, w, rows, n, c->P);
	c->ref = malloc((size_t)rows * sizeof *c->ref);
	c->y = malloc((size_t)rows * sizeof *c->y);
}

static void pack_case_free(pack_case_t *c)
{
	free(c->x);
	free(c->xa);
	free(c->P);
	free(c->ref);
	free(c->y);
}

/* matvec_range of rows [r0, r1) for each cut of (rows) against ref (the
 * whole matrix), bit for bit; P is W's packed copy or NULL. */
static void check_cuts(const char *level, dtype_t t, const void *w, const void *P,
		       int64_t rows, const void *xa, int64_t n, const float *ref, float *y,
		       const int64_t (*cuts)[2], size_t ncuts)
{
	for (size_t c = 0; c < ncuts; c++) {
		int64_t r0 = cuts[c][0], r1 = cuts[c][1];
		if (r1 > rows || r0 >= r1)
			continue;
		memset(y, 0xA5, (size_t)rows * sizeof *y);
		matvec_range(t, w, P, rows, xa, y, n, r0, r1);
		if (memcmp(y, ref + r0, (size_t)(r1 - r0) * sizeof *y))
			fail_msg("%s %s n=%lld rows=%lld [%lld,%lld) %s differs", level,
				 dtype_info[t].name, (long long)n, (long long)rows, (long long)r0,
				 (long long)r1, P ? "packed" : "unpacked");
	}
}

static void test_pack16(void **state)
{
	(void)state;
	static const int64_t ns[] = { 32, 96, 576, 2048 };
	static const int64_t rowss[] = { 16, 40, 105 };
	static const dtype_t ts[] = { DTYPE_Q8_0, DTYPE_Q4_0, DTYPE_Q5_0, DTYPE_Q4_K,
				      DTYPE_Q5_K, DTYPE_Q6_K, DTYPE_Q4_1, DTYPE_Q5_1 };
	rng_t r;
	rng_seed(&r, 1616);
	assert_int_equal(pack16_bytes(DTYPE_F16, 64, 64), 64 * 64 * 2);
	assert_int_equal(pack16_bytes(DTYPE_F16, 3, 64), 0);
	assert_int_equal(pack16_group_bytes(DTYPE_BF16, 172), 0);
	assert_int_equal(pack16_group_rows(DTYPE_F32), 4);
	assert_int_equal(pack16_bytes(DTYPE_Q8_0, 15, 64), 0);
	assert_int_equal(pack16_group_bytes(DTYPE_Q8_0, 96), 2 * 64 + 3 * 512);
	assert_int_equal(pack16_group_bytes(DTYPE_Q4_0, 64), 64 + 2 * 256);
	assert_int_equal(pack16_group_bytes(DTYPE_Q4_0, 33), 0);
	/* Q5_0 packs as Q8_0 blocks (kernels.h) */
	assert_int_equal(pack16_group_bytes(DTYPE_Q5_0, 96), 2 * 64 + 3 * 512);
	assert_int_equal(pack16_bytes(DTYPE_Q5_0, 40, 64), 2 * (64 + 2 * 512));
	assert_int_equal(pack16_group_rows(DTYPE_Q5_0), 16);
	/* Q4_1 / Q5_1: per block d, m (, qh), nibbles: the rows' size */
	assert_int_equal(pack16_group_bytes(DTYPE_Q4_1, 96), 3 * 16 * 20);
	assert_int_equal(pack16_group_bytes(DTYPE_Q5_1, 96), 3 * 16 * 24);
	assert_int_equal(pack16_bytes(DTYPE_Q5_1, 40, 64), 2 * 2 * 16 * 24);
	const char *lv[TEST_N_ISA_LEVELS];
	int k = test_levels_available(lv);
	const char *keep = kernels_isa();
	for (size_t it = 0; it < EG_ARRAY_LEN(ts); it++) {
		dtype_t t = ts[it];
		for (size_t in = 0; in < EG_ARRAY_LEN(ns); in++) {
			for (size_t ir = 0; ir < EG_ARRAY_LEN(rowss); ir++) {
				/* K-quants: super-blocks of 256 */
				const bool kq = t == DTYPE_Q4_K || t == DTYPE_Q5_K || t == DTYPE_Q6_K;
				int64_t n = kq ? ns[in] * 8 : ns[in], rows = rowss[ir];
				size_t rb = dtype_row_bytes(t, n);
				uint8_t *w = malloc(rb * (size_t)rows + 1);
				for (size_t i = 0; i < rb * (size_t)rows; i++)
					w[i] = (uint8_t)rng_next(&r);
				/* sane scales (Q4_K: d and dmin; Q4_1 / Q5_1: d and m; Q6_K: d last);
				 * every 5th block's quants -128 / 0xFF (the
				 * K-quants' scales and mins too: Q6_K's -1, the
				 * others' 63), every 7th Q6_K block's scales -128 */
				const int64_t bs = dtype_info[t].block;
				const size_t bb = dtype_info[t].block_bytes;
				for (int64_t b = 0; b < rows * (n / bs); b++) {
					uint8_t *blk = w + (size_t)b * bb;
					const int nh = t == DTYPE_Q4_K || t == DTYPE_Q5_K ||
						       t == DTYPE_Q4_1 || t == DTYPE_Q5_1 ? 2 : 1;
					const size_t d0 = t == DTYPE_Q6_K ? bb - 2 : 0;
					const size_t q0 = t == DTYPE_Q6_K ? 0 : 2 * (size_t)nh;
					if (b % 5 == 0)
						memset(blk + q0, t == DTYPE_Q8_0 ? 0x80 : 0xFF,
						       bb - 2 * (size_t)nh);
					if (t == DTYPE_Q6_K && b % 7 == 0)
						memset(blk + 192, 0x80, 16);
					for (int i = 0; i < nh; i++) {
						uint16_t d = f32_to_fp16((float)(rng_normal(&r) * 0.01));
						memcpy(blk + d0 + 2 * (size_t)i, &d, 2);
					}
				}
				pack_case_t c;
				pack_case_new(&c, &r, t, w, rows, n,
					      dtype_row_bytes(dtype_info[t].act, n));
				assert_non_null(c.P);
				for (int64_t i = 0; i < rows; i++)
					c.ref[i] = vec_dot_generic(t, w + (size_t)i * rb, c.xa, n);
				const int64_t cuts[][2] = { { 0, rows }, { 3, rows - 1 }, { 16, 32 },
							    { 5, 14 }, { rows - 1, rows }, { 17, rows } };
				/* ref: the generic's bits, which every level keeps */
				for (int l = 0; l < k; l++) {
					assert_int_equal(kernels_set_isa(lv[l]), 0);
					/* every x86 SIMD level has the packed kernels,
					 * the ARM64 levels Q4_K's and Q6_K's */
					assert_int_equal(pack16_used(t, n), test_level_packs(lv[l], t));
					check_cuts(lv[l], t, w, NULL, rows, c.xa, n, c.ref, c.y, cuts,
						   EG_ARRAY_LEN(cuts));
					check_cuts(lv[l], t, w, c.P, rows, c.xa, n, c.ref, c.y, cuts,
						   EG_ARRAY_LEN(cuts));
				}
				assert_int_equal(kernels_set_isa(keep), 0);
				free(w);
				pack_case_free(&c);
			}
		}
	}
}

/* Float rows packed 4 at a time: matvec_range over any cut of the rows,
 * from the packed copy or not, gives the bits of the level's own matvec
 * of the whole matrix as stored (a float row's bits are per level). */
static void test_pack16_float(void **state)
{
	(void)state;
	static const int64_t ns[] = { 32, 96, 172, 576, 2048 };
	static const int64_t rowss[] = { 4, 7, 40, 105 };
	static const dtype_t ts[] = { DTYPE_F32, DTYPE_F16, DTYPE_BF16 };
	rng_t r;
	rng_seed(&r, 4444);
	const char *lv[TEST_N_ISA_LEVELS];
	int k = test_levels_available(lv);
	const char *keep = kernels_isa();
	for (size_t it = 0; it < EG_ARRAY_LEN(ts); it++) {
		dtype_t t = ts[it];
		for (size_t in = 0; in < EG_ARRAY_LEN(ns); in++) {
			for (size_t ir = 0; ir < EG_ARRAY_LEN(rowss); ir++) {
				int64_t n = ns[in], rows = rowss[ir];
				size_t rb = dtype_row_bytes(t, n);
				float *wf = malloc((size_t)(rows * n) * sizeof *wf);
				fill_normal(&r, wf, rows * n, 0.05f);
				uint8_t *w = malloc(rb * (size_t)rows);
				for (int64_t i = 0; i < rows; i++)
					quantize_row(t, wf + i * n, w + (size_t)i * rb, n);
				pack_case_t c;
				pack_case_new(&c, &r, t, w, rows, n, (size_t)n * sizeof(float));
				assert_int_equal(c.pb, n % 32 || rows < 4 ? 0 : (size_t)(rows / 4) * 4 * rb);
				const int64_t cuts[][2] = { { 0, rows }, { 3, rows - 1 }, { 4, 32 },
							    { 5, 14 }, { rows - 1, rows }, { 17, rows } };
				for (int l = 0; l < k; l++) {
					assert_int_equal(kernels_set_isa(lv[l]), 0);
					/* every x86 SIMD level reads short packed rows */
					if (test_level_packs(lv[l], t) && n % 32 == 0 && n <= 576)
						assert_true(pack16_used(t, n));
					matvec_range(t, w, NULL, rows, c.xa, c.ref, n, 0, rows);
					check_cuts(lv[l], t, w, c.P, rows, c.xa, n, c.ref, c.y, cuts,
						   EG_ARRAY_LEN(cuts));
				}
				assert_int_equal(kernels_set_isa(keep), 0);
				free(wf);
				free(w);
				pack_case_free(&c);
			}
		}
	}
}

/* ------------------------------------------------ forward-pass math */

static void test_rmsnorm(void **state)
{
	(void)state;
	static const int64_t ns[] = { 1, 33, 105, 172, 2048 };
	rng_t r;
	rng_seed(&r, 9);
	for (size_t k = 0; k < EG_ARRAY_LEN(ns); k++) {
		int64_t n = ns[k];
		float *x = malloc(4 * (size_t)n), *w = malloc(4 * (size_t)n);
		float *o = malloc(4 * (size_t)n);
		fill_normal(&r, x, n, 2.0f);
		fill_normal(&r, w, n, 1.0f);
		double ss = 0;
		for (int64_t i = 0; i < n; i++)
			ss += (double)x[i] * x[i];
		double s = 1.0 / sqrt(ss / n + 1e-5);
		rmsnorm(o, x, w, n, 1e-5f);
		for (int64_t i = 0; i < n; i++) {
			double e = (double)w[i] * x[i] * s;
			/* n roundings in ss, a few more after: n * 2^-23 relative */
			assert_true(fabs(o[i] - e) <= fabs(e) * (n + 8) * 0x1p-23);
		}
		rmsnorm(x, x, w, n, 1e-5f); /* aliasing allowed */
		assert_memory_equal(x, o, 4 * (size_t)n);
		free(x);
		free(w);
		free(o);
	}
}

static void test_softmax(void **state)
{
	(void)state;
	static const int64_t ns[] = { 1, 2, 33, 105, 172, 1000 };
	rng_t r;
	rng_seed(&r, 10);
	for (size_t k = 0; k < EG_ARRAY_LEN(ns); k++) {
		int64_t n = ns[k];
		float *x = malloc(4 * (size_t)n);
		double *e = malloc(8 * (size_t)n);
		fill_normal(&r, x, n, 5.0f);
		double mx = -INFINITY, sum = 0;
		for (int64_t i = 0; i < n; i++)
			mx = fmax(mx, x[i]);
		for (int64_t i = 0; i < n; i++)
			sum += e[i] = exp((double)x[i] - mx);
		softmax(x, n);
		double tot = 0;
		for (int64_t i = 0; i < n; i++) {
			/* expf ~1 ulp, sum n roundings, one division */
			assert_true(fabs(x[i] - e[i] / sum) <= e[i] / sum * (n + 8) * 0x1p-23);
			tot += x[i];
		}
		assert_true(fabs(tot - 1.0) < 1e-5);
		free(x);
		free(e);
	}
}

static void rope_ref(double *v, const float *x, int n_heads, int hd, int rot,
		     int pos, float theta, int neox)
{
	for (int h = 0; h < n_heads; h++) {
		for (int i = 0; i < hd; i++)
			v[h * hd + i] = x[h * hd + i];
		for (int i = 0; i < rot / 2; i++) {
			double freq = pow(theta, -2.0 * i / rot), a = pos * freq;
			int p = neox ? i : 2 * i, q = neox ? i + rot / 2 : 2 * i + 1;
			double v0 = x[h * hd + p], v1 = x[h * hd + q];
			v[h * hd + p] = v0 * cos(a) - v1 * sin(a);
			v[h * hd + q] = v0 * sin(a) + v1 * cos(a);
		}
	}
}

static void test_rope(void **state)
{
	(void)state;
	struct { int nh, hd, rot, pos, neox; float theta; } cs[] = {
		{ 4, 64, 64, 0, 0, 10000.0f },    { 4, 64, 64, 7, 0, 10000.0f },
		{ 2, 128, 128, 300, 0, 500000.0f }, { 3, 64, 64, 41, 1, 1e6f },
		{ 2, 128, 64, 100, 1, 10000.0f }, { 2, 64, 32, 55, 0, 10000.0f },
	};
	rng_t r;
	rng_seed(&r, 12);
	for (size_t k = 0; k < EG_ARRAY_LEN(cs); k++) {
		int n = cs[k].nh * cs[k].hd;
		float *x = malloc(4 * (size_t)n), *x0 = malloc(4 * (size_t)n);
		double *e = malloc(8 * (size_t)n);
		fill_normal(&r, x, n, 1.0f);
		memcpy(x0, x, 4 * (size_t)n);
		rope_ref(e, x, cs[k].nh, cs[k].hd, cs[k].rot, cs[k].pos, cs[k].theta,
			 cs[k].neox);
		rope(x, cs[k].nh, cs[k].hd, cs[k].rot, cs[k].pos, cs[k].theta,
		     cs[k].neox);
		for (int i = 0; i < n; i++) {
			/* the angle pos*freq carries ~pos * 2^-22 absolute error
			 * from powf and the float product */
			double tol = 1e-5 + (cs[k].pos + 1) * 0x1p-21 *
				     (fabs(x0[i]) + fabs(x0[i ^ 1]) + 1.0);
			if (fabs(x[i] - e[i]) > tol)
				fail_msg("rope case %zu [%d]: %g vs %g", k, i, x[i], e[i]);
		}
		free(x);
		free(x0);
		free(e);
	}
}

/* A Q8_0 row as ggml-cpu's x86 quantize_row_q8_0 stores a K or V row
 * (llama.cpp's q8_0 cache): per block d = amax / 127 as f16, quants
 * x * (127 / amax) rounded to nearest even; written out here, apart from
 * the kernels. */
static void q8_0_row_ref(const float *x, uint8_t *row, int64_t n)
{
	for (int64_t b = 0; b < n / 32; b++) {
		const float *xb = x + 32 * b;
		uint8_t *blk = row + 34 * b;
		float amax = 0.0f;
		for (int j = 0; j < 32; j++)
			amax = fmaxf(amax, fabsf(xb[j]));
		uint16_t d = f32_to_fp16(amax / 127.0f);
		memcpy(blk, &d, 2);
		float id = amax != 0.0f ? 127.0f / amax : 0.0f;
		for (int j = 0; j < 32; j++)
			blk[2 + j] = (uint8_t)(int8_t)nearbyintf(xb[j] * id);
	}
}

/* The KV cache's element types (kernels.h kv_type_t): rows stored as
 * llama.cpp stores them, and every level's attention over them (decode,
 * batched rows, heads of a decode token) the same bits as the f32
 * attention on the rows' values (kv_load_row), which is also what the
 * generic twins give. Head sizes with tails for f16, whole blocks for
 * q8_0; rows at odd addresses. */
static void test_kv_types(void **state)
{
	(void)state;
	/* f16 rounding: ties to even, as vcvtps2ph */
	float x2[4] = { 1.0f + 0x1p-11f, 1.0f + 0x1p-11f * 3, 65519.0f, 65520.0f };
	uint16_t h2[4];
	kv_store_row(KV_F16, x2, h2, 4);
	assert_int_equal(h2[0], 0x3C00);
	assert_int_equal(h2[1], 0x3C02);
	assert_int_equal(h2[2], 0x7BFF);
	assert_int_equal(h2[3], 0x7C00);
	assert_int_equal(kv_row_bytes(KV_Q8_0, 64), 68);
	assert_int_equal(kv_row_bytes(KV_Q8_0, 40), 0);
	assert_int_equal(kv_row_bytes(KV_F16, 40), 80);
	const char *lv[TEST_N_ISA_LEVELS];
	int nl = test_levels_available(lv);
	const char *keep = kernels_isa();
	rng_t r;
	rng_seed(&r, 34);
	static const int hd_f16[] = { 8, 40, 64, 172 }, hd_q8[] = { 32, 64, 96, 128 };
	static const int nps[] = { 1, 15, 16, 17, 33, 70 };
	int checked = 0;
	for (int kt = 0; kt < KV_TYPE_COUNT; kt++) {
		const int *hds = kt == KV_Q8_0 ? hd_q8 : hd_f16;
		for (int a = 0; a < 4; a++) {
			int hd = hds[a], kvd = 3 * hd; /* 3 heads a row; K head 1, V head 2 */
			size_t rb = kv_row_bytes((kv_type_t)kt, kvd), np = 70;
			uint8_t *kb = malloc(rb * np + 1), *vb = malloc(rb * np + 1);
			uint8_t *K = kb + (kt != KV_F32), *V = vb + (kt != KV_F32);
			float *x = malloc(sizeof(float) * (size_t)kvd), *kf = malloc(4 * np * (size_t)kvd),
			      *vf = malloc(4 * np * (size_t)kvd);
			uint8_t *ref = malloc(rb);
			for (size_t t = 0; t < np; t++) {
				for (int rowkind = 0; rowkind < 2; rowkind++) {
					fill_normal(&r, x, kvd, 1.0f);
					uint8_t *row = (rowkind ? V : K) + t * rb;
					kv_store_row((kv_type_t)kt, x, row, kvd);
					if (kt == KV_F16)
						for (int i = 0; i < kvd; i++)
							assert_int_equal(ld_u16(row + 2 * i), f32_to_fp16(x[i]));
					if (kt == KV_Q8_0) {
						q8_0_row_ref(x, ref, kvd);
						if (memcmp(ref, row, rb))
							fail_msg("q8_0 row %zu is not llama.cpp's", t);
					}
					kv_load_row((kv_type_t)kt, row, (rowkind ? vf : kf) + t * (size_t)kvd,
						    kvd);
				}
			}
			const uint8_t *Kh = K + kv_row_bytes((kv_type_t)kt, hd);
			const uint8_t *Vh = V + kv_row_bytes((kv_type_t)kt, 2 * hd);
			const float *Kf = kf + hd, *Vf = vf + 2 * hd;
			enum { NH = 5 };
			float q[NH * 172], o1[NH * 172], o2[NH * 172], one[172];
			float s1[NH * 72], s2[NH * 72];
			fill_normal(&r, q, NH * hd, 1.0f);
			for (int l = 0; l < nl; l++) {
				assert_int_equal(kernels_set_isa(lv[l]), 0);
				for (size_t p = 0; p < EG_ARRAY_LEN(nps); p++) {
					int n = nps[p];
					/* decode: NH heads on one KV head */
					attention_heads_generic(o1, q, Kf, Vf, kvd, n, hd, s1, NH, 72);
					attention_heads_kv((kv_type_t)kt, o2, q, Kh, Vh, rb, n, hd, s2, NH,
							   72);
					for (int h = 0; h < NH; h++)
						if (memcmp(o1 + h * hd, o2 + h * hd, 4 * (size_t)hd) ||
						    memcmp(s1 + h * 72, s2 + h * 72, 4 * (size_t)n))
							fail_msg("%s %s attention hd=%d n_pos=%d head %d "
								 "differs from f32's", lv[l],
								 kv_type_names[kt], hd, n, h);
					attention_heads_kv_generic((kv_type_t)kt, o2, q, Kh, Vh, rb, n, hd,
								   s2, NH, 72);
					if (memcmp(o1, o2, 4 * (size_t)(NH * hd)))
						fail_msg("%s generic attention hd=%d differs", kv_type_names[kt],
							 hd);
					/* the heads of a decode token in the batch */
					assert_int_equal(attn_rows_heads_kv((kv_type_t)kt, q, hd, Kh, Vh, rb,
									    o2, hd, hd, n - 1, NH), 0);
					if (memcmp(o1, o2, 4 * (size_t)(NH * hd)))
						fail_msg("%s %s attn_rows_heads hd=%d n_pos=%d differs",
							 lv[l], kv_type_names[kt], hd, n);
					/* NH causal queries ending at position n - 1 */
					if (n < NH)
						continue;
					assert_int_equal(attn_rows_kv((kv_type_t)kt, q, hd, Kh, Vh, rb, o2,
								      hd, hd, n - NH, NH), 0);
					for (int j = 0; j < NH; j++) {
						attention_head_generic(one, q + j * hd, Kf, Vf, kvd,
								       n - NH + j + 1, hd, s1);
						if (memcmp(one, o2 + j * hd, 4 * (size_t)hd))
							fail_msg("%s %s attn_rows hd=%d query %d at %d "
								 "differs", lv[l], kv_type_names[kt], hd,
								 j, n - NH + j);
					}
					assert_int_equal(attn_rows_kv_generic((kv_type_t)kt, q, hd, Kh, Vh,
									      rb, o1, hd, hd, n - NH, NH),
							 0);
					if (memcmp(o1, o2, 4 * (size_t)(NH * hd)))
						fail_msg("%s generic attn_rows hd=%d differs",
							 kv_type_names[kt], hd);
					checked++;
				}
			}
			free(kb);
			free(vb);
			free(x);
			free(kf);
			free(vf);
			free(ref);
		}
	}
	assert_int_equal(kernels_set_isa(keep), 0);
	print_message("kv types: %d cases over %d levels bit-equal to f32 attention\n",
		      checked, nl);
}

/* Whether a and b (n floats) are the same bits, a NaN matching any NaN
 * (a NaN's payload is not its value). */
static bool same_or_nan(const float *a, const float *b, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		if (memcmp(&a[i], &b[i], 4) && !(isnan(a[i]) && isnan(b[i])))
			return false;
	return true;
}

/* Decode attention (attention_heads_kv: the query heads of one KV head at
 * one position) against its generic twin at every level and KV type: 1 to
 * 6 heads (the SIMD levels take them 4 at a time), lengths past several
 * vector blocks with tails, a head size with a tail (f16, f32) or a
 * partial pass (q8_0), and queries scaled so that the scores span expf's
 * range: at scale 40 many x - max lie past -88 (the vector expf's scalar
 * lanes, subnormal and zero results), at 3e36 all but the max do, and at
 * 1e38 dots overflow to infinities (inf - inf: NaN rows, NaN scores: the
 * generic's path). Each head's output and probabilities are the
 * generic's bits, NaN where it gives NaN; so is each head of the batch's
 * decode token (attn_rows_heads_kv) with queries and outputs at strides
 * other than hd. */
static void test_decode_heads(void **state)
{
	(void)state;
	const char *lv[TEST_N_ISA_LEVELS];
	int nl = test_levels_available(lv);
	const char *keep = kernels_isa();
	rng_t r;
	rng_seed(&r, 35);
	enum { NP = 1001, HMAX = 6, HDMAX = 96 };
	static const int nps[] = { 1, 31, 300, NP };
	static const float scales[] = { 1.0f, 40.0f, 3e36f, 1e38f };
	float *x = malloc(sizeof(float) * 2 * HDMAX), *q = malloc(sizeof(float) * HMAX * HDMAX);
	float *o1 = malloc(sizeof(float) * HMAX * HDMAX);
	float *o2 = malloc(sizeof(float) * HMAX * (HDMAX + 5));
	float *q2 = malloc(sizeof(float) * HMAX * (HDMAX + 3));
	float *s1 = malloc(sizeof(float) * HMAX * NP), *s2 = malloc(sizeof(float) * HMAX * NP);
	int checked = 0;
	for (int kt = 0; kt < KV_TYPE_COUNT; kt++) {
		int hd = kt == KV_Q8_0 ? 96 : 40;
		/* rows of two heads at an odd address (f16, q8_0); head 1 read */
		size_t rb = kv_row_bytes((kv_type_t)kt, 2 * hd);
		uint8_t *kb = malloc(rb * NP + 1), *vb = malloc(rb * NP + 1);
		uint8_t *K = kb + (kt != KV_F32), *V = vb + (kt != KV_F32);
		for (int t = 0; t < NP; t++) {
			fill_normal(&r, x, 2 * hd, 1.0f);
			kv_store_row((kv_type_t)kt, x, K + (size_t)t * rb, 2 * hd);
			fill_normal(&r, x, 2 * hd, 1.0f);
			kv_store_row((kv_type_t)kt, x, V + (size_t)t * rb, 2 * hd);
		}
		const uint8_t *Kh = K + kv_row_bytes((kv_type_t)kt, hd);
		const uint8_t *Vh = V + kv_row_bytes((kv_type_t)kt, hd);
		for (size_t c = 0; c < EG_ARRAY_LEN(scales); c++) {
			fill_normal(&r, q, HMAX * hd, scales[c]);
			for (int l = 0; l < nl; l++) {
				assert_int_equal(kernels_set_isa(lv[l]), 0);
				for (size_t p = 0; p < EG_ARRAY_LEN(nps); p++)
					for (int nh = 1; nh <= HMAX; nh++) {
						int n = nps[p];
						attention_heads_kv_generic((kv_type_t)kt, o1, q, Kh, Vh, rb, n,
									   hd, s1, nh, NP);
						attention_heads_kv((kv_type_t)kt, o2, q, Kh, Vh, rb, n, hd,
								   s2, nh, NP);
						for (int h = 0; h < nh; h++)
							if (!same_or_nan(o1 + h * hd, o2 + h * hd, hd) ||
							    !same_or_nan(s1 + h * NP, s2 + h * NP, n))
								fail_msg("%s %s decode attention scale %g "
									 "n_pos=%d head %d of %d differs "
									 "from generic", lv[l],
									 kv_type_names[kt],
									 (double)scales[c], n, h, nh);
						/* the batch's decode token, queries and
						 * outputs at strides other than hd */
						for (int h = 0; h < nh; h++)
							memcpy(q2 + h * (hd + 3), q + h * hd,
							       sizeof(float) * (size_t)hd);
						assert_int_equal(attn_rows_heads_kv((kv_type_t)kt, q2, hd + 3,
										    Kh, Vh, rb, o2, hd + 5,
										    hd, n - 1, nh),
								 0);
						for (int h = 0; h < nh; h++)
							if (!same_or_nan(o1 + h * hd, o2 + h * (hd + 5), hd))
								fail_msg("%s %s attn_rows_heads scale %g "
									 "n_pos=%d head %d of %d differs "
									 "from generic", lv[l],
									 kv_type_names[kt],
									 (double)scales[c], n, h, nh);
						checked++;
					}
			}
		}
		free(kb);
		free(vb);
	}
	assert_int_equal(kernels_set_isa(keep), 0);
	free(x);
	free(q);
	free(o1);
	free(o2);
	free(q2);
	free(s1);
	free(s2);
	print_message("decode heads: %d cases over %d levels bit-equal to generic\n", checked,
		      nl);
}

/* Every level's rmsnorm, softmax, rope and attention_head give the same
 * bits as the generic twins (kernels.h promises it), on ragged sizes
 * (dimension 172, vocabulary 105, lengths around the vector width). */
static void test_float_math_twins(void **state)
{
	(void)state;
	const char *lv[TEST_N_ISA_LEVELS];
	int k = test_levels_available(lv);
	const char *keep = kernels_isa();
	rng_t r;
	rng_seed(&r, 21);
	enum { NMAX = 2048 };
	float *x = malloc(4 * NMAX), *w = malloc(4 * NMAX), *a = malloc(4 * NMAX),
	      *b = malloc(4 * NMAX);
	static const int64_t ns[] = { 1, 2, 15, 16, 17, 105, 172, 576, 2048 };
	for (int l = 0; l < k; l++) {
		assert_int_equal(kernels_set_isa(lv[l]), 0);
		for (size_t i = 0; i < EG_ARRAY_LEN(ns); i++) {
			int64_t n = ns[i];
			fill_normal(&r, x, n, 3.0f);
			fill_normal(&r, w, n, 1.0f);
			rmsnorm_generic(a, x, w, n, 1e-5f);
			rmsnorm(b, x, w, n, 1e-5f);
			if (memcmp(a, b, 4 * (size_t)n))
				fail_msg("%s rmsnorm n=%ld differs from generic", lv[l], (long)n);
			memcpy(a, x, 4 * (size_t)n);
			memcpy(b, x, 4 * (size_t)n);
			softmax_generic(a, n);
			softmax(b, n);
			if (memcmp(a, b, 4 * (size_t)n))
				fail_msg("%s softmax n=%ld differs from generic", lv[l], (long)n);
		}
		/* swiglu, o aliasing a as forward.c calls it, with the exp's
		 * special and edge inputs among normal ones */
		static const float edge[] = { NAN, INFINITY, -INFINITY, 0.0f, -0.0f,
					      104.0f, 103.99999f, 104.00001f, 150.0f,
					      -88.7228317f, -88.7228394f, -100.0f,
					      87.0f, 95.5f, 1e-30f, -1e-30f };
		for (size_t i = 0; i < EG_ARRAY_LEN(ns); i++) {
			int64_t n = ns[i];
			fill_normal(&r, x, n, 8.0f);
			fill_normal(&r, w, n, 1.0f);
			for (int64_t j = 0; j < n; j += 3)
				x[j] = edge[(size_t)j / 3 % EG_ARRAY_LEN(edge)];
			swiglu_generic(a, x, w, n);
			memcpy(b, x, 4 * (size_t)n);
			swiglu(b, b, w, n);
			for (int64_t j = 0; j < n; j++) /* a NaN's sign is not its value */
				if (memcmp(&a[j], &b[j], 4) && !(isnan(a[j]) && isnan(b[j])))
					fail_msg("%s swiglu n=%ld [%ld]: %a, generic %a", lv[l],
						 (long)n, (long)j, (double)b[j], (double)a[j]);
		}
		/* softmax with a NaN and with -inf, at several places */
		for (int pos = 0; pos < 3; pos++) {
			fill_normal(&r, x, 105, 3.0f);
			x[pos * 50] = pos == 1 ? -INFINITY : NAN;
			memcpy(a, x, 4 * 105);
			memcpy(b, x, 4 * 105);
			softmax_generic(a, 105);
			softmax(b, 105);
			assert_memory_equal(a, b, 4 * 105);
		}
		struct { int nh, hd, rot, pos, neox; float theta; } cs[] = {
			{ 4, 64, 64, 7, 0, 10000.0f },   { 3, 64, 64, 41, 1, 1e6f },
			{ 2, 172, 172, 300, 0, 10000.0f }, { 2, 172, 172, 299, 1, 10000.0f },
			{ 3, 172, 42, 5, 0, 500000.0f }, { 3, 172, 42, 5, 1, 500000.0f },
			{ 2, 128, 64, 100, 1, 10000.0f }, { 5, 8, 2, 3, 1, 10000.0f },
		};
		for (size_t c = 0; c < EG_ARRAY_LEN(cs); c++) {
			int n = cs[c].nh * cs[c].hd;
			fill_normal(&r, x, n, 1.0f);
			memcpy(a, x, 4 * (size_t)n);
			memcpy(b, x, 4 * (size_t)n);
			rope_generic(a, cs[c].nh, cs[c].hd, cs[c].rot, cs[c].pos, cs[c].theta, cs[c].neox);
			rope(b, cs[c].nh, cs[c].hd, cs[c].rot, cs[c].pos, cs[c].theta, cs[c].neox);
			if (memcmp(a, b, 4 * (size_t)n))
				fail_msg("%s rope case %zu differs from generic", lv[l], c);
			/* the forward pass's two steps: the same bits */
			float tab[172];
			memcpy(b, x, 4 * (size_t)n);
			rope_table(tab, cs[c].rot, cs[c].pos, cs[c].theta);
			rope_with(b, cs[c].nh, cs[c].hd, cs[c].rot, tab, cs[c].neox);
			if (memcmp(a, b, 4 * (size_t)n))
				fail_msg("%s rope_table + rope_with case %zu differs from generic",
					 lv[l], c);
		}
		/* attention: q (hd), a KV cache of n_pos rows at stride kvd */
		static const int hds[] = { 8, 64, 172 };
		static const int nps[] = { 1, 15, 16, 17, 33, 105 };
		for (size_t h = 0; h < EG_ARRAY_LEN(hds); h++) {
			for (size_t p = 0; p < EG_ARRAY_LEN(nps); p++) {
				int hd = hds[h], np = nps[p];
				int64_t kvd = 3 * (int64_t)hd + 5;
				size_t cache = (size_t)np * (size_t)kvd;
				float *q = malloc(4 * (size_t)hd), *kc = malloc(4 * cache),
				      *vc = malloc(4 * cache);
				float *s1 = malloc(4 * (size_t)np), *s2 = malloc(4 * (size_t)np);
				fill_normal(&r, q, hd, 1.0f);
				fill_normal(&r, kc, (int64_t)cache, 1.0f);
				fill_normal(&r, vc, (int64_t)cache, 1.0f);
				attention_head_generic(a, q, kc + 1, vc + 2, kvd, np, hd, s1);
				attention_head(b, q, kc + 1, vc + 2, kvd, np, hd, s2);
				if (memcmp(a, b, 4 * (size_t)hd) || memcmp(s1, s2, 4 * (size_t)np))
					fail_msg("%s attention hd=%d n_pos=%d differs from generic",
						 lv[l], hd, np);
				/* 1..9 heads sharing the KV head (grouped-query
				 * attention, 4 heads per pass of the keys): each
				 * head the single head's bits */
				for (int nh = 1; nh <= 9; nh += 2 + (nh == 1)) {
					int64_t ss = np + 3;
					float *qs = malloc(4 * (size_t)(nh * hd));
					float *o1 = malloc(4 * (size_t)(nh * hd)), *o2 = malloc(4 * (size_t)(nh * hd));
					float *t1 = malloc(4 * (size_t)(nh * ss)), *t2 = malloc(4 * (size_t)(nh * ss));
					fill_normal(&r, qs, nh * hd, 1.0f);
					attention_heads(o2, qs, kc + 1, vc + 2, kvd, np, hd, t2, nh, ss);
					for (int j = 0; j < nh; j++) {
						attention_head_generic(o1, qs + j * hd, kc + 1, vc + 2,
								       kvd, np, hd, t1);
						if (memcmp(o1, o2 + j * hd, 4 * (size_t)hd) ||
						    memcmp(t1, t2 + j * ss, 4 * (size_t)np))
							fail_msg("%s attention hd=%d n_pos=%d head %d of %d "
								 "differs from generic", lv[l], hd, np, j, nh);
					}
					free(qs);
					free(o1);
					free(o2);
					free(t1);
					free(t2);
				}
				free(q);
				free(kc);
				free(vc);
				free(s1);
				free(s2);
			}
		}
	}
	assert_int_equal(kernels_set_isa(keep), 0);
	free(x);
	free(w);
	free(a);
	free(b);
}

/* exp_eg (SwiGLU's exp) against double exp on every 4099th float of its
 * range: relative error <= 1e-7 where e^x is a normal float, within one
 * unit (2^-149) below; the special values as expf has them. */
static void test_exp_eg(void **state)
{
	(void)state;
	double worst = 0.0, worst_sub = 0.0;
	for (uint64_t u = 0; u <= 0xFFFFFFFFu; u += 4099) {
		uint32_t b = (uint32_t)u;
		float x;
		memcpy(&x, &b, 4);
		if (!(x > EXP_EG_LO && x <= EXP_EG_HI))
			continue;
		double e = exp((double)x), d = fabs((double)exp_eg(x) - e);
		if (e >= 0x1p-126) {
			if (d / e > worst)
				worst = d / e;
		} else if (d / 0x1p-149 > worst_sub) {
			worst_sub = d / 0x1p-149;
		}
	}
	print_message("exp_eg: worst relative error %.3g (normal), %.3g units "
		      "(subnormal)\n", worst, worst_sub);
	if (worst > 1e-7 || worst_sub > 1.0)
		fail_msg("exp_eg: relative error %.3g (normal), %.3g units (subnormal)",
			 worst, worst_sub);
	assert_true(isnan(exp_eg(NAN)));
	assert_true(exp_eg(INFINITY) == INFINITY && exp_eg(89.0f) == INFINITY);
	assert_true(exp_eg(-INFINITY) == 0.0f && exp_eg(-104.0f) == 0.0f);
	assert_true(exp_eg(0.0f) == 1.0f && exp_eg(-0.0f) == 1.0f);
	assert_true(exp_eg(EXP_EG_HI) < INFINITY && exp_eg(-103.9f) > 0.0f);
}

static void test_swiglu(void **state)
{
	(void)state;
	enum { N = 1000 };
	float a[N], b[N], o[N];
	rng_t r;
	rng_seed(&r, 13);
	fill_normal(&r, a, N, 4.0f);
	fill_normal(&r, b, N, 1.0f);
	a[0] = -100.0f; /* expf(100) = inf: silu -> -0 */
	swiglu(o, a, b, N);
	for (int i = 0; i < N; i++) {
		double e = a[i] / (1.0 + exp(-(double)a[i])) * b[i];
		assert_true(fabs(o[i] - e) <= fabs(e) * 8 * 0x1p-23 + 1e-30);
	}
}

/* ------------------------------------------------------------ bench */

static double now_s(void) { return (double)time_now_ns() * 1e-9; }

/* CPU time of the calling thread: on a shared machine GB/s per CPU second
 * is the steadier figure (it still includes bandwidth contention). */
static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Min / med / max GB/s of one timed matvec form, wall clock and thread
 * CPU time (g, c: nrep figures each, sorted here). */
static void bench_print(const char *type, const char *level, int rows, int cols,
			double mb, const char *form, double *g, double *c, int nrep)
{
	qsort(g, (size_t)nrep, sizeof g[0], cmp_double);
	qsort(c, (size_t)nrep, sizeof c[0], cmp_double);
	printf("bench matvec %-4s %-10s %dx%d %6.1f MB %-6s GB/s wall min %5.1f "
	       "med %5.1f max %5.1f  cpu med %5.1f max %5.1f\n",
	       type, level, rows, cols, mb, form, g[0], g[nrep / 2], g[nrep - 1],
	       c[nrep / 2], c[nrep - 1]);
}

/* Whether name is in the comma list (NULL: every name). */
static bool in_list(const char *list, const char *name)
{
	if (!list)
		return true;
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		const char *e = strchr(p, ',');
		size_t k = e ? (size_t)(e - p) : strlen(p);
		if (k == n && strncasecmp(p, name, n) == 0)
			return true;
		p += k + (e != NULL);
	}
	return false;
}

/* Matvec read bandwidth per type and level on the calling thread: one
 * line per type, level and form ("rows", then "packed" where decode reads
 * the pack16 copy): GB/s wall min/med/max, GB/s per CPU second med/max.
 * With mb > 0 each timed call reads the next of as many copies of the
 * matrix (and of its packed form) as make at least mb MiB, so the figures
 * are from memory, as decode streams its weights; with mb = 0 one matrix
 * is read again and again (from cache when it fits). */
static int bench_main(int rows, int cols, int reps, int mb, const char *types,
		      const char *levels)
{
	dtype_t ts[] = { DTYPE_Q8_0, DTYPE_Q4_0, DTYPE_Q4_K, DTYPE_Q5_K, DTYPE_Q6_K,
			 DTYPE_F16, DTYPE_BF16, DTYPE_F32 };
	const char *lv[TEST_N_ISA_LEVELS];
	int k = test_levels_available(lv);
	for (size_t ti = 0; ti < EG_ARRAY_LEN(ts); ti++) {
		dtype_t t = ts[ti];
		if (!in_list(types, dtype_info[t].name))
			continue;
		size_t rb = dtype_row_bytes(t, cols), bytes = rb * (size_t)rows;
		size_t ncopy = mb > 0 ? ((size_t)mb << 20) / bytes + 1 : 1;
		uint8_t *w = malloc(bytes * ncopy);
		float *tmp = malloc(4 * (size_t)cols), *y = malloc(4 * (size_t)rows);
		void *xa = malloc(4 * (size_t)cols);
		if (!w || !tmp || !y || !xa) {
			printf("bench: out of memory (%zu copies of %zu bytes)\n", ncopy, bytes);
			return 1;
		}
		rng_t r;
		rng_seed(&r, 3);
		for (int i = 0; i < rows; i++) {
			fill_normal(&r, tmp, cols, 0.02f);
			quantize_row(t, tmp, w + rb * (size_t)i, cols);
		}
		for (size_t c = 1; c < ncopy; c++)
			memcpy(w + c * bytes, w, bytes);
		fill_normal(&r, tmp, cols, 1.0f);
		act_prepare(t, tmp, xa, cols);
		/* the packed copies, as decode reads them, where a level packs */
		size_t pb = pack16_bytes(t, rows, cols), pba = (pb + 63) & ~(size_t)63;
		uint8_t *P = NULL;
		for (int l = 0; l < k; l++) {
			if (!in_list(levels, lv[l]))
				continue;
			kernels_set_isa(lv[l]);
			double g[256], c[256];
			int nrep = reps < 256 ? reps : 256;
			/* warm-up on the last copy: the first timed call reads copy 0 */
			matvec_rows(t, w + (ncopy - 1) * bytes, xa, y, cols, 0, rows);
			for (int i = 0; i < nrep; i++) {
				const uint8_t *wi = w + (size_t)i % ncopy * bytes;
				double t0 = now_s(), c0 = cpu_s();
				matvec_rows(t, wi, xa, y, cols, 0, rows);
				c[i] = (double)bytes / (cpu_s() - c0) * 1e-9;
				g[i] = (double)bytes / (now_s() - t0) * 1e-9;
			}
			bench_print(dtype_info[t].name, lv[l], rows, cols, bytes / 1e6, "rows", g, c,
				    nrep);
			if (!pack16_used(t, cols))
				continue;
			if (!P) {
				P = aligned_alloc(64, pba * ncopy);
				if (!P) {
					printf("bench: out of memory (%zu packed copies)\n", ncopy);
					return 1;
				}
				pack16(t, w, rows, cols, P);
				for (size_t i = 1; i < ncopy; i++)
					memcpy(P + i * pba, P, pb);
			}
			matvec_range(t, w + (ncopy - 1) * bytes, P + (ncopy - 1) * pba, rows, xa, y,
				     cols, 0, rows);
			for (int i = 0; i < nrep; i++) {
				size_t ci = (size_t)i % ncopy;
				double t0 = now_s(), c0 = cpu_s();
				matvec_range(t, w + ci * bytes, P + ci * pba, rows, xa, y, cols, 0, rows);
				c[i] = (double)bytes / (cpu_s() - c0) * 1e-9;
				g[i] = (double)bytes / (now_s() - t0) * 1e-9;
			}
			bench_print(dtype_info[t].name, lv[l], rows, cols, bytes / 1e6, "packed", g,
				    c, nrep);
		}
		free(P);
		free(w);
		free(tmp);
		free(y);
		free(xa);
	}
	return 0;
}

static const char bench_usage[] =
	"usage: test_kernels --bench [ROWS COLS REPS] [--mb N] [--types LIST] [--levels LIST]\n"
	"  matvec GB/s of a ROWS x COLS matrix (default 2048 5632 20) per type and\n"
	"  ISA level, row form and packed (pack16) where the level packs.\n"
	"  --mb N         rotate over copies of the matrix that make at least N MiB,\n"
	"                 one copy per call: figures from memory (N above the\n"
	"                 last-level cache, e.g. 256); default 0: one matrix, from\n"
	"                 cache when it fits\n"
	"  --types LIST   weight types, e.g. q4_K,q6_K (default all)\n"
	"  --levels LIST  ISA levels, e.g. avx512vnni (default all this CPU has)\n";

/* sampler_argmax (two SIMD passes) against the one-pass loop that defines
 * it, on random logits with ties, NaNs, signed zeros and infinities. */
static int32_t argmax_ref(const float *x, int32_t n)
{
	int32_t best = 0;
	for (int32_t i = 1; i < n; i++)
		if (x[i] > x[best])
			best = i;
	return best;
}

/* The K-quants' activations (act_prepare -> Q8_K) give the generic
 * level's bytes at every level: random blocks, and blocks with a tie of
 * +amax and -amax (the first wins), NaNs and infinities (a NaN scale),
 * zeros, values at x * 127 / amax = k + 0.5 (ties to even). */
static void test_q8_K_levels(void **state)
{
	(void)state;
	enum { N = 16 * QK_K };
	float *x = malloc(N * sizeof *x);
	uint8_t *ref = malloc(dtype_row_bytes(DTYPE_Q8_K, N)), *q = malloc(dtype_row_bytes(DTYPE_Q8_K, N));
	rng_t r;
	rng_seed(&r, 88);
	fill_normal(&r, x, N, 1.0f);
	float *b = x + QK_K; /* block 1: -30 then +30 */
	b[5] = -30.0f;
	b[9] = 30.0f;
	b = x + 2 * QK_K; /* block 2: +30 then -30, a NaN */
	b[1] = NAN;
	b[7] = 30.0f;
	b[200] = -30.0f;
	b = x + 3 * QK_K; /* block 3: all zero but a -0 */
	memset(b, 0, QK_K * sizeof *b);
	b[3] = -0.0f;
	b = x + 4 * QK_K; /* block 4: all NaN */
	for (int j = 0; j < QK_K; j++)
		b[j] = NAN;
	b = x + 5 * QK_K; /* block 5: an infinity */
	b[17] = -INFINITY;
	b = x + 6 * QK_K; /* block 6: exact halves against max 127 */
	for (int j = 0; j < QK_K; j++)
		b[j] = (float)(j % 127) + 0.5f;
	b[255] = -127.0f;
	const char *lv[TEST_N_ISA_LEVELS];
	int k = test_levels_available(lv);
	const char *keep = kernels_isa();
	/* the reference: the generic level's (a block holding a NaN or an
	 * infinity gets a NaN scale there too: test_act_prepare_nonfinite) */
	assert_int_equal(kernels_set_isa("generic"), 0);
	act_prepare(DTYPE_Q4_K, x, ref, N);
	for (int l = 0; l < k; l++) {
		assert_int_equal(kernels_set_isa(lv[l]), 0);
		memset(q, 0xA5, dtype_row_bytes(DTYPE_Q8_K, N));
		act_prepare(DTYPE_Q4_K, x, q, N);
		if (memcmp(q, ref, dtype_row_bytes(DTYPE_Q8_K, N)))
			fail_msg("%s: Q8_K activations differ from the generic's", lv[l]);
	}
	assert_int_equal(kernels_set_isa(keep), 0);
	free(x);
	free(ref);
	free(q);
}

/* The Q5 family against llama.cpp's own arithmetic: rows quantized by
 * ggml's reference quantizers and the values its libraries give for them
 * (tests/data/q5_ggml_golden.h, written by tools/figures/q5/ggml-golden.c
 * from node-llama-cpp 3.21.1's libraries). At every level: the
 * dequantized rows are ggml's bit for bit (the fifth bits, the order of
 * scale and min, the f16 d and m); the activations are the bytes ggml's
 * x86 quantizer writes for the type ggml pairs with each (Q5_0: Q8_0,
 * Q5_1: Q8_1 with its f16 s from the unrounded d, Q5_K: Q8_K), ties of
 * k + 0.5 included; each dot product is within float rounding
 * (2^-19 of sum |w x|) of the exact product of those blocks and of ggml's
 * x86 value, and Q5_0's is ggml's generic C value bit for bit (the
 * same sum order: an exact integer sum per block times d_w d_x, blocks
 * added in order). */
static void test_q5_ggml_golden(void **state)
{
	(void)state;
	static const struct {
		dtype_t t;
		const uint8_t *w[Q5G_ROWS];
		const uint32_t *deq[Q5G_ROWS];
		const uint8_t *act;
		size_t act_bytes;
		const uint32_t *dot_x86, *dot_generic;
		const double *exact;
	} c[] = {
		{ DTYPE_Q5_0, { q5g_q5_0_w, q5g_q5_0_w1 }, { q5g_q5_0_deq, q5g_q5_0_deq1 },
		  q5g_q5_0_act, sizeof q5g_q5_0_act, q5g_q5_0_dot_x86, q5g_q5_0_dot_generic,
		  q5g_q5_0_exact },
		{ DTYPE_Q5_1, { q5g_q5_1_w, q5g_q5_1_w1 }, { q5g_q5_1_deq, q5g_q5_1_deq1 },
		  q5g_q5_1_act, sizeof q5g_q5_1_act, q5g_q5_1_dot_x86, q5g_q5_1_dot_generic,
		  q5g_q5_1_exact },
		{ DTYPE_Q5_K, { q5g_q5_K_w, q5g_q5_K_w1 }, { q5g_q5_K_deq, q5g_q5_K_deq1 },
		  q5g_q5_K_act, sizeof q5g_q5_K_act, q5g_q5_K_dot_x86, q5g_q5_K_dot_generic,
		  q5g_q5_K_exact },
	};
	float x[Q5G_N], y[Q5G_N], xq[Q5G_N];
	memcpy(x, q5g_x, sizeof x);
	uint8_t xa[QK_K + 64];
	const char *lv[TEST_N_ISA_LEVELS];
	int k = test_levels_available(lv);
	const char *keep = kernels_isa();
	for (int l = 0; l < k; l++) {
		assert_int_equal(kernels_set_isa(lv[l]), 0);
		for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
			dtype_t t = c[i].t;
			assert_int_equal(dtype_row_bytes(dtype_info[t].act, Q5G_N), c[i].act_bytes);
			memset(xa, 0xA5, sizeof xa);
			act_prepare(t, x, xa, Q5G_N);
			if (memcmp(xa, c[i].act, c[i].act_bytes))
				fail_msg("%s %s: activations differ from ggml's", lv[l], dtype_info[t].name);
			dequantize_row(dtype_info[t].act, xa, xq, Q5G_N);
			for (int r = 0; r < Q5G_ROWS; r++) {
				dequantize_row(t, c[i].w[r], y, Q5G_N);
				if (memcmp(y, c[i].deq[r], sizeof y))
					fail_msg("%s %s row %d: dequantized weights differ from ggml's",
						 lv[l], dtype_info[t].name, r);
				double mag = 0.0;
				for (int j = 0; j < Q5G_N; j++)
					mag += fabs((double)y[j] * xq[j]);
				float d = vec_dot(t, c[i].w[r], xa, Q5G_N), gx, gg;
				memcpy(&gx, &c[i].dot_x86[r], 4);
				memcpy(&gg, &c[i].dot_generic[r], 4);
				double tol = 0x1p-19 * mag;
				if (fabs(d - c[i].exact[r]) > tol || fabs((double)d - gx) > 2 * tol)
					fail_msg("%s %s row %d: %a, exact %a, ggml %a (tolerance %a)", lv[l],
						 dtype_info[t].name, r, d, c[i].exact[r], gx, tol);
				if (t == DTYPE_Q5_0 && d != gg)
					fail_msg("%s q5_0 row %d: %a is not ggml's generic %a", lv[l], r, d, gg);
			}
		}
	}
	assert_int_equal(kernels_set_isa(keep), 0);
}

/* act_prepare for F16 / BF16 weights rounds each activation to that type
 * (ggml's CPU backend converts them so before its dot products), F32 copies. */
static void test_act_prepare_float(void **state)
{
	(void)state;
	const float x[4] = {1.0f + 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-13f, -3.14159265f, 1e-30f};
	float y[4];
	act_prepare(DTYPE_F16, x, y, 4);
	for (int i = 0; i < 4; i++)
		assert_true(y[i] == fp16_to_f32(f32_to_fp16(x[i])));
	assert_true(y[0] == 1.0f);                  /* a tie: to even */
	assert_true(y[1] == 1.0f + 0x1p-10f);       /* above the tie: up */
	act_prepare(DTYPE_BF16, x, y, 4);
	for (int i = 0; i < 4; i++)
		assert_true(y[i] == bf16_to_f32(f32_to_bf16(x[i])));
	assert_true(y[2] != x[2]);
	act_prepare(DTYPE_F32, x, y, 4);
	assert_memory_equal(y, x, sizeof x);
}

/* A NaN or an infinity in the activations of a quantized matrix makes
 * every dot product that reads its block NaN, at every level, as it does
 * with float activations (the engine reports non-finite logits; a
 * quantizer that rounded NaN to an integer would hide them), and leaves
 * the other blocks' quantization as it was. */
static void test_act_prepare_nonfinite(void **state)
{
	(void)state;
	enum { N = 512 };
	static const dtype_t wts[] = {DTYPE_Q8_0, DTYPE_Q4_0, DTYPE_Q4_1, DTYPE_Q5_0,
				      DTYPE_Q5_1, DTYPE_Q2_K, DTYPE_Q3_K, DTYPE_Q4_K,
				      DTYPE_Q5_K, DTYPE_Q6_K, DTYPE_IQ4_NL, DTYPE_IQ4_XS};
	const float bad[3] = {NAN, INFINITY, -INFINITY};
	/* the first element, one inside, and one in the last block of every
	 * type (all_finite looks at 4 lanes at a time) */
	const int at[3] = {0, 257, N - 3};
	float x[N], w[N];
	rng_t r;
	rng_seed(&r, 33);
	for (int i = 0; i < N; i++) {
		x[i] = (float)((int)(rng_next(&r) % 2001) - 1000) * 1e-3f;
		w[i] = (float)((int)(rng_next(&r) % 2001) - 1000) * 1e-3f;
	}
	const char *lv[TEST_N_ISA_LEVELS];
	int k = test_levels_available(lv);
	const char *keep = kernels_isa();
	for (size_t t = 0; t < sizeof wts / sizeof wts[0]; t++) {
		dtype_t wt = wts[t], a = dtype_info[wt].act;
		size_t ab = dtype_row_bytes(a, N);
		uint8_t *wq = malloc(dtype_row_bytes(wt, N));
		uint8_t *xa = malloc(ab), *xg = malloc(ab);
		assert_non_null(wq);
		assert_non_null(xa);
		assert_non_null(xg);
		quantize_row(wt, w, wq, N);
		for (int l = 0; l < k; l++) {
			assert_int_equal(kernels_set_isa(lv[l]), 0);
			act_prepare(wt, x, xg, N);
			float good = vec_dot(wt, wq, xg, N);
			assert_true(isfinite(good));
			for (int v = 0; v < 3; v++) {
				float y[N];
				memcpy(y, x, sizeof y);
				y[at[v]] = bad[v];
				act_prepare(wt, y, xa, N);
				assert_true(isnan(vec_dot(wt, wq, xa, N)));
				/* the blocks before its block quantized as before */
				size_t bb = dtype_info[a].block_bytes;
				int64_t nb = at[v] / dtype_info[a].block;
				if (nb > 0)
					assert_memory_equal(xa, xg, (size_t)nb * bb);
				float o[1];
				matvec_rows(wt, wq, xa, o, N, 0, 1);
				assert_true(isnan(o[0]));
			}
		}
		free(wq);
		free(xa);
		free(xg);
	}
	assert_int_equal(kernels_set_isa(keep), 0);
}

static void test_argmax(void **state)
{
	(void)state;
	rng_t r;
	rng_seed(&r, 11);
	static const int32_t ns[] = { 1, 2, 7, 8, 9, 17, 105, 49152 };
	float *x = malloc(49152 * sizeof *x);
	for (size_t k = 0; k < EG_ARRAY_LEN(ns); k++) {
		int32_t n = ns[k];
		for (int mode = 0; mode < 7; mode++) {
			for (int32_t i = 0; i < n; i++) {
				float v = rng_normal(&r);
				uint64_t u = rng_next(&r);
				switch (mode) {
				case 1: v = floorf(v); break;                  /* ties */
				case 2: if (u % 5 == 0) v = NAN; break;        /* NaNs */
				case 3: v = (u & 1) ? 0.0f : -0.0f; break;     /* zeros */
				case 4: v = -INFINITY; break;
				case 5: if (u % 97 == 0) v = INFINITY; break;
				case 6: if (i == 0) v = NAN; break;            /* NaN first */
				}
				x[i] = v;
			}
			int32_t a = argmax_ref(x, n), b = sampler_argmax(x, n);
			if (a != b)
				fail_msg("argmax n=%d mode %d: %d, the loop says %d", n, mode, b, a);
		}
	}
	free(x);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--isa") == 0) {
		if (kernels_check_env() < 0) {
			printf("%s\n", err_get());
			return 2;
		}
		printf("%s\n", kernels_isa());
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
		int num[3] = { 2048, 5632, 20 }, nn = 0, mb = 0;
		const char *types = NULL, *levels = NULL;
		for (int i = 2; i < argc; i++) {
			if (strcmp(argv[i], "--mb") == 0 && i + 1 < argc)
				mb = atoi(argv[++i]);
			else if (strcmp(argv[i], "--types") == 0 && i + 1 < argc)
				types = argv[++i];
			else if (strcmp(argv[i], "--levels") == 0 && i + 1 < argc)
				levels = argv[++i];
			else if (nn < 3 && atoi(argv[i]) > 0)
				num[nn++] = atoi(argv[i]);
			else {
				printf("%s", bench_usage);
				return 2;
			}
		}
		return bench_main(num[0], num[1], num[2], mb, types, levels);
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_isa_names),
		cmocka_unit_test(test_dtype_table),
		cmocka_unit_test(test_tables_complete),
		cmocka_unit_test(test_absent_messages),
		cmocka_unit_test(test_isa_env),
		cmocka_unit_test(test_fp16_exhaustive),
		cmocka_unit_test(test_fp16_from_float),
		cmocka_unit_test(test_bf16),
		cmocka_unit_test(test_quantize_bounds),
		cmocka_unit_test(test_dot_float_types),
		cmocka_unit_test(test_dot_quant_types),
		cmocka_unit_test(test_dot_quant_extremes),
		cmocka_unit_test(test_dot_kquant_types),
		cmocka_unit_test(test_kquant_roundtrip),
		cmocka_unit_test(test_pack16),
		cmocka_unit_test(test_pack16_float),
		cmocka_unit_test(test_rmsnorm),
		cmocka_unit_test(test_softmax),
		cmocka_unit_test(test_rope),
		cmocka_unit_test(test_exp_eg),
		cmocka_unit_test(test_swiglu),
		cmocka_unit_test(test_float_math_twins),
		cmocka_unit_test(test_kv_types),
		cmocka_unit_test(test_decode_heads),
		cmocka_unit_test(test_act_prepare_float),
		cmocka_unit_test(test_q8_K_levels),
		cmocka_unit_test(test_q5_ggml_golden),
		cmocka_unit_test(test_act_prepare_nonfinite),
		cmocka_unit_test(test_argmax),
	};
	return test_run_group_levels(tests);
}
