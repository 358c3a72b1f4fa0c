/* base: the one percentile definition (stats.c, nearest rank), CPU lists
 * (cpumask_parse / cpumask_format) and the choice of CPUs (topo_choose,
 * topo_notice) on faked machines larger than this one: 128 CPUs on two
 * NUMA nodes, CPUs numbered up to CPUMASK_MAX - 1, a kernel mask wider
 * than CPUMASK_MAX. */
#include <math.h>
#include <sched.h>

#include "base/base.h"
#include "base/stats.h"

#include "testutil.h"

/* ---- stats: nearest rank ---- */

/* The definition in integers: the q = k/1000 quantile of n values is the
 * value of rank ceil(k n / 1000) (1-based), the minimum for k = 0. */
static size_t rank_reference(size_t n, unsigned k)
{
	size_t r = ((size_t)k * n + 999) / 1000;
	return r ? r - 1 : 0;
}

static void test_rank_is_nearest_rank(void **state)
{
	(void)state;
	for (size_t n = 1; n <= 200; n++)
		for (unsigned k = 0; k <= 1000; k++)
			if (stats_rank(n, k / 1000.0) != rank_reference(n, k))
				fail_msg("n=%zu q=%u/1000: rank %zu, nearest rank %zu",
					 n, k, stats_rank(n, k / 1000.0),
					 rank_reference(n, k));
	assert_int_equal(stats_rank(100, 0.99), 98); /* the 99th smallest */
	assert_int_equal(stats_rank(4, 0.5), 1);     /* the lower middle */
	assert_int_equal(stats_rank(5, 0.5), 2);
}

static void test_rank_edges(void **state)
{
	(void)state;
	assert_int_equal(stats_rank(0, 0.5), 0);
	assert_int_equal(stats_rank(1, 0.0), 0);
	assert_int_equal(stats_rank(1, 1.0), 0);
	assert_int_equal(stats_rank(7, 0.0), 0);
	assert_int_equal(stats_rank(7, 1.0), 6);
	assert_int_equal(stats_rank(7, -1.0), 0); /* out of [0, 1]: clamped */
	assert_int_equal(stats_rank(7, 2.0), 6);
	assert_int_equal(stats_rank(7, NAN), 0);
	assert_int_equal(stats_rank(7, INFINITY), 6);
	assert_int_equal(stats_rank(7, -INFINITY), 0);
}

static void test_quantile_empty_and_one(void **state)
{
	(void)state;
	double none[1] = {42};
	assert_true(stats_quantile(none, 0, 0.5) == 0);
	assert_true(stats_quantile_u64(NULL, 0, 0.5) == 0);
	double one[1] = {3.5};
	assert_true(stats_quantile(one, 1, 0.0) == 3.5);
	assert_true(stats_quantile(one, 1, 0.5) == 3.5);
	assert_true(stats_quantile(one, 1, 1.0) == 3.5);
	stats_summary_t s = stats_summarize(none, 0);
	assert_true(s.n == 0 && s.min == 0 && s.p50 == 0 && s.max == 0 && s.mean == 0);
}

static void test_quantile_unsorted_and_ties(void **state)
{
	(void)state;
	double v[] = {5, 1, 4, 2, 3};
	assert_true(stats_quantile(v, 5, 0.5) == 3);
	for (int i = 0; i < 5; i++) /* sorted in place */
		assert_true(v[i] == i + 1);
	assert_true(stats_quantile(v, 5, 0.0) == 1);
	assert_true(stats_quantile(v, 5, 1.0) == 5);
	assert_true(stats_quantile(v, 5, 0.2) == 1); /* rank ceil(1) = 1 */
	assert_true(stats_quantile(v, 5, 0.21) == 2);

	double t[] = {2, 3, 2, 1, 2};
	assert_true(stats_quantile(t, 5, 0.2) == 1);
	assert_true(stats_quantile(t, 5, 0.4) == 2);
	assert_true(stats_quantile(t, 5, 0.8) == 2);
	assert_true(stats_quantile(t, 5, 0.81) == 3);
}

static void test_quantile_u64_exact(void **state)
{
	(void)state;
	/* above 2^53: a detour through double would merge these */
	uint64_t v[] = {UINT64_MAX, 1, UINT64_MAX - 1};
	assert_true(stats_quantile_u64(v, 3, 1.0) == UINT64_MAX);
	assert_true(stats_quantile_u64(v, 3, 0.5) == UINT64_MAX - 1);
	assert_true(stats_quantile_u64(v, 3, 0.0) == 1);
}

static void test_summarize(void **state)
{
	(void)state;
	double v[] = {3, 1, 2, 4};
	stats_summary_t s = stats_summarize(v, 4);
	assert_true(s.n == 4);
	assert_true(s.min == 1 && s.p50 == 2 && s.p99 == 4 && s.max == 4);
	assert_true(s.mean == 2.5);
	double w[100];
	for (int i = 0; i < 100; i++)
		w[i] = 100 - i; /* 100..1, descending */
	s = stats_summarize(w, 100);
	assert_true(s.min == 1 && s.p50 == 50 && s.p99 == 99 && s.max == 100);
}

/* A NaN sorts last and leaves the order of the others intact. */
static void test_nan_sorts_last(void **state)
{
	(void)state;
	double v[64];
	rng_t r;
	rng_seed(&r, 7);
	for (int i = 0; i < 64; i++)
		v[i] = i % 5 == 2 ? NAN : (double)(rng_next(&r) % 1000);
	stats_sort(v, 64);
	int nans = 0;
	for (int i = 0; i < 64; i++) {
		if (isnan(v[i])) {
			nans++;
			continue;
		}
		assert_int_equal(nans, 0); /* no number after a NaN */
		if (i)
			assert_true(v[i - 1] <= v[i]);
	}
	assert_int_equal(nans, 13);
	double w[] = {NAN, 3, 1, 2};
	stats_summary_t s = stats_summarize(w, 4);
	assert_true(s.min == 1 && s.p50 == 2 && isnan(s.max) && isnan(s.mean));
}

/* ---- CPU lists ---- */

static cpumask_t mask_of(const char *s)
{
	cpumask_t m;
	if (cpumask_parse(s, &m) < 0)
		fail_msg("'%s': %s", s, err_get());
	return m;
}

static void expect_list(const char *in, const char *want)
{
	char buf[CPUMASK_LIST_CAP];
	cpumask_t m = mask_of(in);
	if (strcmp(cpumask_format(&m, buf, sizeof buf), want) != 0)
		fail_msg("'%s' formats as '%s', not '%s'", in, buf, want);
}

static void test_parse_lists(void **state)
{
	(void)state;
	expect_list("0", "0");
	expect_list("3", "3");
	expect_list("0-3,6,8-9", "0-3,6,8-9");
	expect_list("8-9,0-3,6", "0-3,6,8-9"); /* any order, one canonical form */
	expect_list("5-5", "5");
	expect_list("1,1,0-2", "0-2");
	expect_list("0,1,2,3", "0-3");
	expect_list("63,64", "63-64");         /* across a word */
	expect_list("100-115", "100-115");     /* within the second word */
	expect_list("1023", "1023");
	expect_list("0-1023", "0-1023");
	expect_list("007", "7");
	cpumask_t m = mask_of("0-3,6,8-9");
	assert_int_equal(cpumask_count(&m), 7);
	assert_int_equal(cpumask_last(&m), 9);
	assert_true(cpumask_has(&m, 6) && !cpumask_has(&m, 7));
	assert_true(!cpumask_has(&m, -1) && !cpumask_has(&m, CPUMASK_MAX));
	m = mask_of("0-1023");
	assert_int_equal(cpumask_count(&m), CPUMASK_MAX);
	assert_int_equal(cpumask_last(&m), CPUMASK_MAX - 1);
}

/* A refused list: -1, *out untouched, one line naming `what`. */
static void expect_refused(const char *in, const char *what)
{
	cpumask_t m = cpumask_of_bits(0x5a);
	err_set("none");
	if (cpumask_parse(in, &m) != -1)
		fail_msg("'%s' was accepted", in ? in : "(null)");
	const char *e = err_get();
	if (!strstr(e, what) || strchr(e, '\n'))
		fail_msg("'%s': message '%s' lacks '%s'", in ? in : "(null)", e, what);
	assert_true(m.w[0] == 0x5a);
	for (size_t i = 1; i < EG_ARRAY_LEN(m.w); i++)
		assert_true(m.w[i] == 0);
}

static void test_parse_refusals(void **state)
{
	(void)state;
	expect_refused("", "empty CPU list");
	expect_refused(NULL, "empty CPU list");
	expect_refused(" 1", "expected a number at character 1");
	expect_refused("1 ", "unexpected ' ' at character 2");
	expect_refused("1, 2", "expected a number at character 3");
	expect_refused("3-1", "range 3-1 is reversed");
	expect_refused("-", "expected a number at character 1");
	expect_refused("-1", "expected a number at character 1");
	expect_refused("1-", "expected a number at character 3");
	expect_refused("1,,2", "expected a number at character 3");
	expect_refused("1,", "expected a number at character 3");
	expect_refused(",1", "expected a number at character 1");
	expect_refused("1-2-3", "unexpected '-' at character 4");
	expect_refused("+1", "expected a number");
	expect_refused("0x3", "unexpected 'x'");
	expect_refused("a", "expected a number");
	/* the limit, named */
	expect_refused("1024", "CPU 1024 is beyond the limit of 1023 (CPUMASK_MAX)");
	expect_refused("0-1024", "CPU 1024 is beyond the limit of 1023");
	expect_refused("5,2000", "CPU 2000 is beyond the limit");
	/* numbers beyond long and beyond int: beyond the limit, not wrapped */
	expect_refused("99999999999999999999999", "CPU 99999999999999999999999 is beyond the limit of 1023");
	expect_refused("4294967296", "CPU 4294967296 is beyond the limit");
	expect_refused("0-99999999999999999999999", "CPU 99999999999999999999999 is beyond");
	expect_refused("00001024", "CPU 00001024 is beyond");
}

static void test_format(void **state)
{
	(void)state;
	char buf[CPUMASK_LIST_CAP];
	cpumask_t m = {{0}};
	assert_string_equal(cpumask_format(&m, buf, sizeof buf), "");
	cpumask_set(&m, 0);
	cpumask_set(&m, 2);
	assert_string_equal(cpumask_format(&m, buf, sizeof buf), "0,2");
	m = cpumask_of_bits(0x7);
	assert_string_equal(cpumask_format(&m, buf, sizeof buf), "0-2");
	int cpus[] = {1023, 64, 63, 5};
	m = cpumask_of_cpus(cpus, 4);
	assert_string_equal(cpumask_format(&m, buf, sizeof buf), "5,63-64,1023");
}

/* A list longer than the buffer is cut and says so. */
static void test_format_cut(void **state)
{
	(void)state;
	char buf[32];
	cpumask_t m = mask_of("0-3,6,8-9,100,200,300");
	cpumask_format(&m, buf, 12);
	assert_string_equal(buf, "0-3,6...");
	cpumask_format(&m, buf, 13);
	assert_string_equal(buf, "0-3,6,8-9...");
	cpumask_format(&m, buf, 16);
	assert_string_equal(buf, "0-3,6,8-9...");
	cpumask_format(&m, buf, 17);
	assert_string_equal(buf, "0-3,6,8-9,100...");
	cpumask_format(&m, buf, sizeof buf);
	assert_string_equal(buf, "0-3,6,8-9,100,200,300");
	cpumask_format(&m, buf, 4);
	assert_string_equal(buf, "...");
	cpumask_format(&m, buf, 1);
	assert_string_equal(buf, "");
	buf[0] = 'x';
	cpumask_format(&m, buf, 0); /* writes nothing */
	assert_true(buf[0] == 'x');
}

/* The longest list fits CPUMASK_LIST_CAP whole. */
static void test_format_longest(void **state)
{
	(void)state;
	char buf[CPUMASK_LIST_CAP];
	cpumask_t m = {{0}};
	for (int c = 0; c < CPUMASK_MAX; c++)
		if (c % 3 != 2)
			cpumask_set(&m, c);
	cpumask_format(&m, buf, sizeof buf);
	assert_int_equal(strlen(buf), 2673);
	assert_null(strstr(buf, "..."));
	cpumask_t back;
	assert_int_equal(cpumask_parse(buf, &back), 0);
	assert_memory_equal(&m, &back, sizeof m);
}

static void test_round_trip(void **state)
{
	(void)state;
	rng_t r;
	rng_seed(&r, 30);
	char buf[CPUMASK_LIST_CAP];
	for (int k = 0; k < 2000; k++) {
		cpumask_t m = {{0}};
		int density = (int)(rng_next(&r) % 64) + 1, n = 0;
		for (int c = 0; c < CPUMASK_MAX; c++)
			if ((int)(rng_next(&r) % 64) < density) {
				cpumask_set(&m, c);
				n++;
			}
		if (n == 0)
			cpumask_set(&m, (int)(rng_next(&r) % CPUMASK_MAX));
		cpumask_format(&m, buf, sizeof buf);
		cpumask_t back;
		if (cpumask_parse(buf, &back) < 0)
			fail_msg("'%s' does not parse: %s", buf, err_get());
		assert_memory_equal(&m, &back, sizeof m);
	}
}

static void test_of_bits(void **state)
{
	(void)state;
	cpumask_t m = cpumask_of_bits(0x8000000000000001ull);
	assert_int_equal(cpumask_count(&m), 2);
	assert_true(cpumask_has(&m, 0) && cpumask_has(&m, 63));
	assert_int_equal(cpumask_last(&m), 63);
	m = cpumask_of_bits(0);
	assert_int_equal(cpumask_last(&m), -1);
	assert_int_equal(cpumask_count(&m), 0);
}

/* ---- the choice of CPUs ---- */

/* A faked machine: n CPUs, SMT pairs (c, c + n/2) on one core, so the
 * order is 0..n/2-1 then n/2..n-1; CPUs below `split` on node 0, the
 * rest on node 1. */
static void fake_topo(topo_t *t, int n, int split)
{
	t->n = n;
	for (int i = 0; i < n; i++) {
		t->cpu[i] = i;
		t->node[i] = i < split ? 0 : 1;
	}
}

static void test_choose_default(void **state)
{
	(void)state;
	static topo_t t;
	int cpus[CPUMASK_MAX];
	fake_topo(&t, 128, 64);
	t.cpu[0] = 5; /* the order is topo's, not numeric */
	t.cpu[5] = 0;
	assert_int_equal(topo_choose(&t, NULL, 32, cpus), 32);
	assert_memory_equal(cpus, t.cpu, 32 * sizeof *cpus);
	assert_int_equal(topo_choose(&t, NULL, 1024, cpus), 128);
	fake_topo(&t, 2, 2);
	assert_int_equal(topo_choose(&t, NULL, 32, cpus), 2);
	assert_true(cpus[0] == 0 && cpus[1] == 1);
}

static void test_choose_list(void **state)
{
	(void)state;
	static topo_t t;
	int cpus[CPUMASK_MAX];
	fake_topo(&t, 128, 64);
	/* a 128-CPU machine, --cores 100-115: sixteen slots, lowest first */
	cpumask_t want = mask_of("115,100-114");
	assert_int_equal(topo_choose(&t, &want, 32, cpus), 16);
	for (int i = 0; i < 16; i++)
		assert_int_equal(cpus[i], 100 + i);
	want = mask_of("96-127");
	assert_int_equal(topo_choose(&t, &want, 32, cpus), 32);
	/* more than the slots */
	want = mask_of("0-40");
	assert_int_equal(topo_choose(&t, &want, 32, cpus), -1);
	assert_string_equal(err_get(), "41 CPUs, at most 32");
	/* outside the affinity set */
	want = mask_of("120-130,500");
	assert_int_equal(topo_choose(&t, &want, 32, cpus), -1);
	assert_string_equal(err_get(), "CPUs 128-130,500 are not in this process's "
				       "affinity mask (0-127)");
	/* the whole width on a machine that has it */
	fake_topo(&t, CPUMASK_MAX, CPUMASK_MAX);
	want = mask_of("1000-1023");
	assert_int_equal(topo_choose(&t, &want, 32, cpus), 24);
	assert_int_equal(cpus[23], 1023);
}

static void test_numa_nodes(void **state)
{
	(void)state;
	static topo_t t;
	fake_topo(&t, 128, 64);
	int a[] = {0, 1, 63}, b[] = {60, 64}, c[] = {100, 127};
	assert_int_equal(topo_numa_nodes(&t, a, 3), 1);
	assert_int_equal(topo_numa_nodes(&t, b, 2), 2);
	assert_int_equal(topo_numa_nodes(&t, c, 2), 1);
	t.node[64] = -1; /* unknown: not counted */
	assert_int_equal(topo_numa_nodes(&t, b, 2), 1);
}

static void test_notice(void **state)
{
	(void)state;
	static topo_t t;
	char buf[4 * CPUMASK_LIST_CAP];
	int cpus[CPUMASK_MAX];
	const char *lim = "the gang has 32 slots (GANG_MAX_SLOTS)";
	fake_topo(&t, 48, 48);
	/* egang picked 32 of 48: said, with the limit */
	int n = topo_choose(&t, NULL, 32, cpus);
	assert_string_equal(topo_notice(&t, false, cpus, n, lim, buf, sizeof buf),
			    "egang: using 32 of the 48 CPUs this process may run on "
			    "(0-31, physical cores first): the gang has 32 slots "
			    "(GANG_MAX_SLOTS); --cores picks others");
	/* the user picked them: nothing to say */
	assert_string_equal(topo_notice(&t, true, cpus, n, lim, buf, sizeof buf), "");
	/* all of them fit: nothing to say */
	fake_topo(&t, 16, 16);
	n = topo_choose(&t, NULL, 32, cpus);
	assert_string_equal(topo_notice(&t, false, cpus, n, lim, buf, sizeof buf), "");
	/* two NUMA nodes among the chosen */
	fake_topo(&t, 128, 64);
	cpumask_t want = mask_of("60-67");
	n = topo_choose(&t, &want, 32, cpus);
	assert_string_equal(topo_notice(&t, true, cpus, n, lim, buf, sizeof buf),
			    "egang: CPUs 60-67 span 2 NUMA nodes; egang places "
			    "threads and memory without regard to NUMA");
	/* both at once: two lines */
	n = topo_choose(&t, NULL, 100, cpus);
	topo_notice(&t, false, cpus, n, "this command takes at most 100", buf, sizeof buf);
	assert_non_null(strstr(buf, "using 100 of the 128 CPUs"));
	assert_non_null(strstr(buf, "\negang: CPUs 0-99 span 2 NUMA nodes"));
}

/* A kernel whose CPU mask is wider than CPUMASK_MAX: its CPUs 0..1023
 * are kept, those above counted and said when egang picks the CPUs (a
 * --cores list naming one above is refused by cpumask_parse). */
static void test_wide_kernel_mask(void **state)
{
	(void)state;
	size_t size = CPU_ALLOC_SIZE(4096);
	cpu_set_t *set = CPU_ALLOC(4096);
	assert_non_null(set);
	CPU_ZERO_S(size, set);
	int bits[] = {0, 63, 64, 1023, 1024, 1025, 4095};
	for (size_t i = 0; i < EG_ARRAY_LEN(bits); i++)
		CPU_SET_S(bits[i], size, set);
	cpumask_t m;
	memset(&m, 0xff, sizeof m);
	assert_int_equal(cpumask_from_set(&m, set, size), 3);
	char buf[4 * CPUMASK_LIST_CAP];
	assert_string_equal(cpumask_format(&m, buf, sizeof buf), "0,63-64,1023");
	CPU_FREE(set);
	static topo_t t;
	int cpus[CPUMASK_MAX];
	fake_topo(&t, 16, 16);
	t.n_above = 3;
	int n = topo_choose(&t, NULL, 32, cpus);
	assert_string_equal(topo_notice(&t, false, cpus, n, "the gang has 32 slots "
					"(GANG_MAX_SLOTS)", buf, sizeof buf),
			    "egang: 3 CPUs this process may run on are numbered "
			    "above 1023 and left out (CPUMASK_MAX)");
	/* the user's list: nothing left out of it */
	assert_string_equal(topo_notice(&t, true, cpus, n, "", buf, sizeof buf), "");
	/* both lines when egang also leaves lower ones out */
	fake_topo(&t, 48, 48);
	n = topo_choose(&t, NULL, 32, cpus);
	topo_notice(&t, false, cpus, n, "the gang has 32 slots", buf, sizeof buf);
	assert_non_null(strstr(buf, "using 32 of the 48 CPUs"));
	assert_non_null(strstr(buf, "slots; --cores picks others\negang: 3 CPUs "));
	t.n_above = 0;
}

/* CPUs hwloc does not know (a faked set above this machine's) keep their
 * number order; this machine's own set comes back whole, once each. */
static void test_order_and_load(void **state)
{
	(void)state;
	static topo_t t;
	cpumask_t fake = mask_of("900-903,1000");
	topo_order(&t, &fake);
	assert_int_equal(t.n, 5);
	int want[] = {900, 901, 902, 903, 1000};
	for (int i = 0; i < 5; i++) {
		assert_int_equal(t.cpu[i], want[i]);
		assert_int_equal(t.node[i], -1);
	}
	assert_int_equal(topo_load(&t), 0);
	cpu_set_t set;
	assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
	assert_int_equal(t.n, CPU_COUNT(&set));
	cpumask_t seen = {{0}};
	for (int i = 0; i < t.n; i++) {
		assert_true(CPU_ISSET(t.cpu[i], &set));
		assert_false(cpumask_has(&seen, t.cpu[i]));
		cpumask_set(&seen, t.cpu[i]);
	}
	/* hwloc puts every CPU of a loaded topology in a NUMA node */
	assert_true(topo_numa_nodes(&t, t.cpu, t.n) >= 1);
	int cpus[CPUMASK_MAX];
	assert_int_equal(topo_cores(cpus, 1), 1);
	assert_int_equal(cpus[0], t.cpu[0]);
	assert_int_equal(topo_cores(cpus, CPUMASK_MAX), t.n);
	assert_memory_equal(cpus, t.cpu, (size_t)t.n * sizeof *cpus);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rank_is_nearest_rank),
		cmocka_unit_test(test_wide_kernel_mask),
		cmocka_unit_test(test_rank_edges),
		cmocka_unit_test(test_quantile_empty_and_one),
		cmocka_unit_test(test_quantile_unsorted_and_ties),
		cmocka_unit_test(test_quantile_u64_exact),
		cmocka_unit_test(test_summarize),
		cmocka_unit_test(test_nan_sorts_last),
		cmocka_unit_test(test_parse_lists),
		cmocka_unit_test(test_parse_refusals),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_format_cut),
		cmocka_unit_test(test_format_longest),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_of_bits),
		cmocka_unit_test(test_choose_default),
		cmocka_unit_test(test_choose_list),
		cmocka_unit_test(test_numa_nodes),
		cmocka_unit_test(test_notice),
		cmocka_unit_test(test_order_and_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
