/* Tests of the sched_ext backend's user-space side that need no sched_ext
 * kernel (src/scx/scx.h); the scheduler itself is tested in a real
 * sched_ext kernel under QEMU by `make test-scx` (tests/scx/):
 *  - every built-in record's kernel form: kind, the gang's and the
 *    tenants' CPU sets through the --cores mapping, slices;
 *  - a build without SCX=1 refuses every kernel call with one message. */
#include "testutil.h"

#include "policy/policy.h"
#include "scx/scx.h"

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
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin_kernel_forms),
		cmocka_unit_test(test_cores_mapping),
		cmocka_unit_test(test_build_without_scx),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
