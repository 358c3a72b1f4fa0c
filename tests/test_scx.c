/* Tests of the sched_ext backend's user-space side that need no sched_ext
 * kernel (src/scx/scx.h); the scheduler itself is tested in a real
 * sched_ext kernel under QEMU by `make test-scx` (tests/scx/):
 *  - every built-in record's kernel form: kind, the gang's and the
 *    tenants' CPU sets through the --cores mapping, slices;
 *  - a build without SCX=1 refuses every kernel call with one message;
 *  - the in-kernel guard's arithmetic and rules (bpf/egang_kguard.h, the
 *    same code the BPF scheduler runs): buckets, hold-off, re-arm. */
#include "testutil.h"

#include "policy/policy.h"
#include "scx/scx.h"
#include "bench/scx_first.h"
#include "../bpf/egang_kguard.h"

static void test_builtin_kernel_forms(void **state)
{
	(void)state;
	static policy_lib_t lib;
	int cpus[4] = {0, 1, 2, 3};
	policy_lib_builtin(&lib, 4);
	struct egang_krec r;
	/* 0 elastic: every slot, polite */
	scx_krec_from_policy(&lib.rec[0], cpus, 4, &r);
	assert_int_equal(r.kind, EGANG_KIND_ELASTIC);
	assert_int_equal(r.gang_cpus, 0xf);
	assert_int_equal(r.tenant_cpus, 0);
	/* 1 knee: measured in user space, no kernel form */
	scx_krec_from_policy(&lib.rec[1], cpus, 4, &r);
	assert_int_equal(r.kind, EGANG_KIND_NONE);
	/* 2 latency: preempt (at the knee), short tenant slices */
	scx_krec_from_policy(&lib.rec[2], cpus, 4, &r);
	assert_int_equal(r.kind, EGANG_KIND_LATENCY);
	assert_int_equal(r.gang_cpus, 0xf);
	assert_true(r.tenant_slice_ns < r.gang_slice_ns);
	/* 3 throughput: half the slots, the rest reserved for tenants */
	scx_krec_from_policy(&lib.rec[3], cpus, 4, &r);
	assert_int_equal(r.kind, EGANG_KIND_SHARE);
	assert_int_equal(r.gang_cpus, 0x3);
	assert_int_equal(r.tenant_cpus, 0xc);
	/* 4.. static:K: slots 0..K-1, tenants prefer the others */
	for (int k = 1; k < 4; k++) {
		scx_krec_from_policy(&lib.rec[3 + k], cpus, 4, &r);
		assert_int_equal(r.kind, EGANG_KIND_STATIC);
		assert_int_equal(r.gang_cpus, (1u << k) - 1);
		assert_int_equal(r.tenant_cpus, 0xf & ~((1u << k) - 1));
	}
	assert_string_equal(scx_kind_name(EGANG_KIND_SHARE), "share");
	assert_string_equal(scx_kind_name(99), "?");
}

static void test_cores_mapping(void **state)
{
	(void)state;
	static policy_lib_t lib;
	/* slots run on CPUs 6, 2, 5: slot masks become those CPUs' bits */
	int cpus[3] = {6, 2, 5};
	policy_lib_builtin(&lib, 3);
	struct egang_krec r;
	scx_krec_from_policy(&lib.rec[4], cpus, 3, &r); /* static:1 */
	assert_int_equal(r.gang_cpus, 1u << 6);
	assert_int_equal(r.tenant_cpus, (1u << 2) | (1u << 5));
	/* a polite knee record with reserved cores has a kernel form */
	policy_t kr = {.name = "k", .width = WIDTH_KNEE, .reserved_mask = 1u << 2};
	scx_krec_from_policy(&kr, cpus, 3, &r);
	assert_int_equal(r.kind, EGANG_KIND_SHARE);
	assert_int_equal(r.gang_cpus, (1u << 6) | (1u << 2));
	/* a user record: all width, slot 2 reserved, preempt */
	policy_t p = {.name = "u", .width = WIDTH_ALL, .reserved_mask = 1u << 2,
		      .acquire = GANG_ACQUIRE_PREEMPT};
	assert_int_equal(policy_validate(&p, 3, NULL), 0);
	scx_krec_from_policy(&p, cpus, 3, &r);
	assert_int_equal(r.kind, EGANG_KIND_LATENCY);
	assert_int_equal(r.gang_cpus, (1u << 6) | (1u << 2));
	assert_int_equal(r.tenant_cpus, 1u << 5);
}

/* The records' CPU sets are 64 bits: a CPU beyond is refused, named. */
static void test_cpu_limit(void **state)
{
	(void)state;
	int ok[] = {0, 63, 17}, high[] = {3, 64};
	assert_int_equal(scx_check_cpus(ok, 3), 0);
	assert_int_equal(scx_check_cpus(high, 2), -1);
	assert_string_equal(err_get(), "scx: CPU 64 is beyond the sched_ext backend's "
				       "limit of 63 (EGANG_SCX_CPUS: its CPU sets are 64 bits)");
	static policy_lib_t lib;
	policy_lib_builtin(&lib, 2);
	assert_int_equal(scx_load(&lib, high, 2, 0), -1);
	assert_non_null(strstr(err_get(), "EGANG_SCX_CPUS"));
}

static void test_build_without_scx(void **state)
{
	(void)state;
#if EGANG_SCX
	skip();
#else
	static policy_lib_t lib;
	int cpus[1] = {0};
	policy_lib_builtin(&lib, 1);
	assert_false(scx_built());
	assert_false(scx_loaded());
	assert_int_equal(scx_load(&lib, cpus, 1, 0), -1);
	assert_non_null(strstr(err_get(), "no sched_ext support"));
	assert_int_equal(scx_set_index(3, NULL), -1);
	static scx_counts_t c;
	assert_int_equal(scx_read(&c), -1);
	assert_int_equal(scx_unload(NULL), -1);
	assert_null(scx_index_page()); /* the control word keeps its index */
	assert_int_equal(scx_index_open(), -1);
	assert_null(scx_first_ns_map());
	/* the benches on the loader's exports refuse the same way */
	scx_first_t f[2];
	assert_int_equal(scx_first_run(10, 0, f), -1);
	assert_non_null(strstr(err_get(), "no sched_ext support"));
	scx_first_write_t w;
	assert_int_equal(scx_first_write_cost(10, &w), -1);
	assert_non_null(strstr(err_get(), "no sched_ext support"));
#endif
}

/* The histogram's buckets: every wait falls in a bucket whose bounds hold
 * it, bucket maxima rise, and a quantile is known within 25%. */
static void test_kguard_buckets(void **state)
{
	(void)state;
	uint64_t prev = 0;
	for (uint32_t b = 0; b < KG_BUCKETS - 1; b++) {
		uint64_t hi = kg_bucket_max(b);
		if (b)
			assert_true(hi > prev);
		assert_int_equal(kg_bucket(hi), b);
		assert_int_equal(kg_bucket(hi + 1), b + 1);
		if (hi >= 16)
			assert_true((double)(hi + 1) / (double)(prev + 1) <= 1.25 + 1e-9);
		prev = hi;
	}
	assert_int_equal(kg_log2(1), 0);
	assert_int_equal(kg_log2(1ull << 40), 40);
	assert_int_equal(kg_log2((1ull << 40) - 1), 39);
	assert_int_equal(kg_bucket(UINT64_MAX), KG_BUCKETS - 1);
	uint64_t w = 1500000; /* 1.5 ms */
	assert_true(kg_bucket_max(kg_bucket(w)) >= w);
	assert_true(kg_bucket_max(kg_bucket(w)) < w * 5 / 4);
}

/* The rules R1..R5 of egang_kguard.h. */
static void test_kguard_rules(void **state)
{
	(void)state;
	struct kg_state s = {0};
	const uint64_t bound = 1000000, hi = 5000000, lo = 10000;
	/* R1: the first window under index 7 is not judged */
	assert_int_equal(kg_judge(&s, 7, bound, 3, hi, 100), KG_SKIP);
	/* R4: two breaches, then a good window restarts the count */
	assert_int_equal(kg_judge(&s, 7, bound, 3, hi, 100), KG_BREACH);
	assert_int_equal(kg_judge(&s, 7, bound, 3, hi, 100), KG_BREACH);
	assert_int_equal(kg_judge(&s, 7, bound, 3, lo, 100), KG_OK);
	/* R3: a window with too few waits is neither breach nor reset */
	assert_int_equal(kg_judge(&s, 7, bound, 3, hi, 100), KG_BREACH);
	assert_int_equal(kg_judge(&s, 7, bound, 3, hi, KG_MIN_SAMPLES - 1), KG_SKIP);
	assert_int_equal(kg_judge(&s, 7, bound, 3, hi, 100), KG_BREACH);
	/* R1: a switch away and back resets the count (hold-off) */
	assert_int_equal(kg_judge(&s, 8, bound, 3, hi, 100), KG_SKIP);
	assert_int_equal(kg_judge(&s, 7, bound, 3, hi, 100), KG_SKIP);
	assert_int_equal(kg_judge(&s, 7, bound, 3, hi, 100), KG_BREACH);
	assert_int_equal(kg_judge(&s, 7, bound, 3, hi, 100), KG_BREACH);
	/* the third consecutive breach falls back to 0 */
	assert_int_equal(kg_judge(&s, 7, bound, 3, hi, 100), KG_FALLBACK);
	/* R2: under 0 nothing is judged, however bad (no oscillation) */
	for (int i = 0; i < 10; i++)
		assert_int_equal(kg_judge(&s, 0, bound, 3, hi, 100), KG_SKIP);
	/* a record without a bound is never judged */
	assert_int_equal(kg_judge(&s, 5, 0, 3, hi, 100), KG_SKIP);
	for (int i = 0; i < 10; i++)
		assert_int_equal(kg_judge(&s, 5, 0, 3, hi, 100), KG_SKIP);
	/* R5: a controller writes 7 again: re-armed, hold-off first */
	assert_int_equal(kg_judge(&s, 7, bound, 3, hi, 100), KG_SKIP);
	assert_int_equal(kg_judge(&s, 7, bound, 3, hi, 100), KG_BREACH);
	/* windows = 1: the first judged breach falls back */
	struct kg_state t = {0};
	assert_int_equal(kg_judge(&t, 9, bound, 1, hi, 100), KG_SKIP);
	assert_int_equal(kg_judge(&t, 9, bound, 1, hi, 100), KG_FALLBACK);
}

/* A record's kernel guard reaches its kernel form. */
static void test_kguard_krec(void **state)
{
	(void)state;
	static policy_lib_t lib;
	int cpus[2] = {0, 1};
	policy_lib_builtin(&lib, 2);
	assert_int_equal(policy_lib_parse(&lib, "k.ini",
					  "[g]\nreserved = 1\nkguard_wait_p99_us = 1500\n"
					  "kguard_windows = 2\nkguard_window_ms = 50\n"),
			 0);
	struct egang_krec r;
	scx_krec_from_policy(&lib.rec[policy_lib_find(&lib, "g")], cpus, 2, &r);
	assert_int_equal(r.kind, EGANG_KIND_SHARE);
	assert_int_equal(r.kguard_wait_ns, 1500000);
	assert_int_equal(r.kguard_windows, 2);
	assert_int_equal(r.kguard_window_ns, 50000000);
	for (int i = 0; i < lib.n_builtin; i++) {
		scx_krec_from_policy(&lib.rec[i], cpus, 2, &r);
		assert_int_equal(r.kguard_wait_ns, 0); /* built-ins have none */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin_kernel_forms),
		cmocka_unit_test(test_cores_mapping),
		cmocka_unit_test(test_cpu_limit),
		cmocka_unit_test(test_build_without_scx),
		cmocka_unit_test(test_kguard_buckets),
		cmocka_unit_test(test_kguard_rules),
		cmocka_unit_test(test_kguard_krec),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
