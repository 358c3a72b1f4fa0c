/* Tests of the controllers of `egang control` (src/policy/controller.h),
 * each driven on synthetic telemetry, no timing involved:
 *  - the oracle picks each phase's index at times inside it, keeps the
 *    last index in gaps and after the schedule, and refuses malformed
 *    schedules with the character and phase named;
 *  - UCB1 tries every arm once (in the seeded order, the same for the
 *    same seed), then pulls the arm with the best reward most; periods
 *    without a new generation are skipped; a choice is held `hold`
 *    periods;
 *  - the agent's answer parsing accepts a lone digit (bare or after a
 *    vocabulary's space) and refuses anything else; its decision is the
 *    best valid digit, the unconstrained answer counted when invalid. */
#include "testutil.h"

#include <math.h>

#include "model/model.h"
#include "policy/controller.h"
#include "policy/policy.h"

static policy_lib_t lib; /* the built-ins for one slot: 4 records */

static controller_decision_t step(controller_t *c, const controller_snap_t *s,
				  double t)
{
	controller_decision_t d;
	assert_int_equal(controller_step(c, s, t, 0, &d), 0);
	return d;
}

/* ---- the oracle ---- */

static void test_oracle_schedule(void **state)
{
	(void)state;
	policy_lib_builtin(&lib, 1);
	static controller_t c;
	controller_config_t cfg = {.kind = CONTROLLER_ORACLE, .lib = &lib,
				   .n_arms = lib.n,
				   .schedule = "0.5-1s:latency,1-2s:3, 3-4s:knee"};
	assert_int_equal(controller_init(&c, &cfg), 0);
	assert_int_equal(c.oracle.n, 3);
	assert_true(controller_end(&c) == 4);
	controller_snap_t s = {0};
	controller_decision_t d = step(&c, &s, 0.2);
	assert_int_equal(d.index, -1); /* before the schedule: nothing yet */
	assert_false(d.decided);
	assert_string_equal(d.reason, "before-schedule");
	d = step(&c, &s, 0.7);
	assert_int_equal(d.index, 2);
	assert_true(d.decided);
	assert_string_equal(d.reason, "phase:1:0.5-1s:latency");
	assert_int_equal(step(&c, &s, 1.0).index, 3);
	assert_int_equal(step(&c, &s, 1.99).index, 3);
	d = step(&c, &s, 2.5); /* the gap keeps the last index */
	assert_int_equal(d.index, 3);
	assert_false(d.decided);
	assert_string_equal(d.reason, "gap");
	assert_int_equal(step(&c, &s, 3.5).index, 1);
	d = step(&c, &s, 9);
	assert_int_equal(d.index, 1);
	assert_string_equal(d.reason, "after-schedule");
	controller_free(&c);
}

static void test_oracle_refuses(void **state)
{
	(void)state;
	policy_lib_builtin(&lib, 1);
	static oracle_t o;
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{"", "the schedule is empty"},
		{"0-1s", "at character 5 (phase 1): expected ':'"},
		{"0-1s:", "at character 6 (phase 1): missing the policy"},
		{"0-1s:latency,1-xs:knee", "at character 16 (phase 2): expected the end"},
		{"x-1:knee", "at character 1 (phase 1): expected the start"},
		{"0+1:knee", "at character 2 (phase 1): expected '-'"},
		{"2-1s:knee", "at character 1 (phase 1): the phase ends"},
		{"0-2s:knee,1-3s:latency", "at character 11 (phase 2): the phase starts at 1s"},
		{"0-1s:latency,1-2s:bogus", "at character 14 (phase 2): 'bogus' names no record"},
		{"0-1s:4", "'4' names no record"},
		{"/nonexistent/schedule", "no such file"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(oracle_parse(&o, &lib, bad[i].text), -1);
		if (!strstr(err_get(), bad[i].msg))
			fail_msg("'%s': got '%s', want '%s'", bad[i].text, err_get(),
				 bad[i].msg);
	}
	char path[256];
	snprintf(path, sizeof path, "%s/sched", test_tmpdir());
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("# phases\n0 1 latency\n\n1s 2s 3 # by index\n", f);
	fclose(f);
	assert_int_equal(oracle_parse(&o, &lib, path), 0);
	assert_int_equal(o.n, 2);
	assert_int_equal(o.ph[1].index, 3);
	f = fopen(path, "w");
	fputs("0 1 latency\n1 x knee\n", f);
	fclose(f);
	assert_int_equal(oracle_parse(&o, &lib, path), -1);
	assert_non_null(strstr(err_get(), "sched:2: 'x' is not an end in seconds"));
}

/* ---- the bandit ---- */

/* A bandit over the four built-ins for one slot. */
static controller_config_t bandit(bandit_config_t b)
{
	policy_lib_builtin(&lib, 1);
	return (controller_config_t){.kind = CONTROLLER_BANDIT, .lib = &lib,
				     .n_arms = 4, .bandit = b};
}

/* A leader whose TTFT p50 is ttft_us[arm in force]: one generation per
 * period. */
static controller_snap_t leader(controller_snap_t *s, int64_t index,
				const uint64_t *ttft_us)
{
	s->generations++;
	s->ttft_p50_us = ttft_us[index];
	return *s;
}

static void test_bandit_explores_then_exploits(void **state)
{
	(void)state;
	static const uint64_t ttft_us[4] = {4000, 3000, 1000, 2000}; /* arm 2 */
	static controller_t c, c2;
	controller_config_t cfg = bandit((bandit_config_t){.hold = 1, .w_ttft = 1,
							   .seed = 9});
	assert_int_equal(controller_init(&c, &cfg), 0);
	assert_int_equal(controller_init(&c2, &cfg), 0);
	controller_snap_t s = {0}, s2 = {0};
	int tried[4] = {0};
	int64_t idx = -1;
	for (int k = 0; k < 4; k++) { /* each arm once, untried first */
		if (idx >= 0)
			leader(&s, idx, ttft_us);
		controller_decision_t d = step(&c, &s, k);
		assert_true(d.decided);
		assert_string_equal(d.reason, "ucb:untried");
		assert_in_range(d.index, 0, 3);
		tried[d.index]++;
		idx = d.index;
		/* the same seed gives the same order */
		if (k)
			leader(&s2, idx, ttft_us);
		assert_int_equal(step(&c2, &s2, k).index, d.index);
	}
	for (int i = 0; i < 4; i++)
		assert_int_equal(tried[i], 1);
	for (int k = 0; k < 200; k++) {
		leader(&s, idx, ttft_us);
		controller_decision_t d = step(&c, &s, 4 + k);
		assert_true(d.decided);
		assert_non_null(strstr(d.reason, "ucb:score="));
		idx = d.index;
	}
	for (int i = 0; i < 4; i++)
		if (i != 2)
			assert_true(c.bandit.pulls[2] > 2 * c.bandit.pulls[i]);
	/* the reward is the best TTFT over the arm's: 1 for the best arm */
	assert_true(fabs(c.bandit.sum[2] / (double)c.bandit.pulls[2] - 1) < 1e-9);
	controller_free(&c);
	controller_free(&c2);
}

static void test_bandit_skips_and_holds(void **state)
{
	(void)state;
	static controller_t c;
	controller_config_t cfg = bandit((bandit_config_t){.hold = 3, .w_ttft = 0.5,
							   .seed = 1, .n_slots = 1});
	assert_int_equal(controller_init(&c, &cfg), 0);
	controller_snap_t s = {.n_slots = 1};
	controller_decision_t d = step(&c, &s, 0);
	int64_t first = d.index;
	assert_string_equal(step(&c, &s, 1).reason, "hold:1/3");
	assert_string_equal(step(&c, &s, 2).reason, "hold:2/3");
	d = step(&c, &s, 3); /* held long enough, but no generation ended */
	assert_true(d.skipped);
	assert_false(d.decided);
	assert_int_equal(d.index, first);
	assert_string_equal(d.reason, "skip:no-new-generation");
	s.generations = 1;
	s.ttft_p50_us = 500;
	controller_sample(&c, &(controller_snap_t){.tenant_width = 1});
	d = step(&c, &s, 4);
	assert_true(d.decided);
	assert_int_equal(c.bandit.pulls[first], 1);
	/* r = 0.5 * 1 (the only TTFT seen) + 0.5 * tenant share 1 */
	assert_true(fabs(c.bandit.sum[first] - 1) < 1e-9);
	controller_free(&c);
}

static void test_bandit_units_file(void **state)
{
	(void)state;
	static controller_t c;
	controller_config_t cfg = bandit((bandit_config_t){
		.hold = 1, .w_ttft = 0.5, .units_path = "/nonexistent/units"});
	assert_int_equal(controller_init(&c, &cfg), -1);
	assert_non_null(strstr(err_get(), "--tenant-units /nonexistent/units"));
	char path[256];
	snprintf(path, sizeof path, "%s/units", test_tmpdir());
	static const char *const bad[] = {"", "x", "-1", "nan"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		FILE *f = fopen(path, "w");
		fputs(bad[i], f);
		fclose(f);
		double u;
		assert_int_equal(controller_read_units(path, &u), -1);
	}
	FILE *f = fopen(path, "w");
	fputs("12.5\n", f);
	fclose(f);
	double u = 0;
	assert_int_equal(controller_read_units(path, &u), 0);
	assert_true(u == 12.5);
}

/* ---- the agent ---- */

static void test_agent_answer_parsing(void **state)
{
	(void)state;
	for (int d = 0; d <= 9; d++) {
		char s[8];
		snprintf(s, sizeof s, "%d", d);
		assert_int_equal(controller_answer_digit(s), d);
		snprintf(s, sizeof s, "\xe2\x96\x81%d", d);
		assert_int_equal(controller_answer_digit(s), d);
		snprintf(s, sizeof s, "\xc4\xa0%d", d);
		assert_int_equal(controller_answer_digit(s), d);
	}
	static const char *const refused[] = {
		"", "a", "x7", "12", "-1", "+3", "3.", " 3", "3 ", "\xe2\x96\x81",
		"\xe2\x96\x81x", "\xc4\xa0\xc4\xa0\x31", "\xef\xbc\x93", /* U+FF13 */
	};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
		if (controller_answer_digit(refused[i]) != -1)
			fail_msg("'%s' was taken for a digit", refused[i]);
}

typedef struct fake_model {
	float *logits;
	int calls;
	bool fail;
} fake_model_t;

static const float *fake_logits(void *user, const char *prompt)
{
	fake_model_t *fm = user;
	fm->calls++;
	assert_non_null(strstr(prompt, "Policies: 0 elastic, 1 knee, 2 latency, 3 throughput."));
	assert_non_null(strstr(prompt, "Answer with one digit:"));
	if (fm->fail)
		return err_set("forward failed"), NULL;
	return fm->logits;
}

static void test_agent_decides_valid_digits(void **state)
{
	(void)state;
	policy_lib_builtin(&lib, 1);
	char path[256];
	snprintf(path, sizeof path, "%s/agent.gguf", test_tmpdir());
	assert_int_equal(synth_write(synth_find("stories260k"), DTYPE_F32, 3, 1,
				     path, NULL, NULL), 0);
	model_set_weights(MODEL_WEIGHTS_MAP);
	model_t *m = model_load(path, NULL);
	assert_non_null(m);
	int32_t vocab = m->cfg.vocab_size;
	fake_model_t fm = {.logits = calloc((size_t)vocab, sizeof(float))};
	assert_non_null(fm.logits);
	static controller_t c;
	controller_config_t cfg = {.kind = CONTROLLER_AGENT, .lib = &lib,
				   .n_arms = lib.n, .tok = m->tok, .vocab = vocab,
				   .logits = fake_logits, .user = &fm};
	assert_int_equal(controller_init(&c, &cfg), 0);
	int32_t tok[10], other = -1;
	for (int32_t t = 0; t < vocab; t++) {
		int d = c.agent.digit_of[t];
		if (d >= 0)
			tok[d] = t;
		else if (other < 0)
			other = t;
	}
	/* the model's favourite is not a digit: the best valid digit wins,
	 * the raw answer is counted invalid */
	fm.logits[other] = 10;
	fm.logits[tok[9]] = 8; /* a digit, but no record 9 */
	fm.logits[tok[2]] = 5;
	fm.logits[tok[1]] = 4;
	controller_snap_t s = {0};
	controller_decision_t d = step(&c, &s, 0);
	assert_int_equal(d.index, 2);
	assert_true(d.raw_invalid);
	assert_non_null(strstr(d.reason, "agent:raw=invalid"));
	/* a valid favourite is taken as is */
	fm.logits[tok[3]] = 20;
	d = step(&c, &s, 1);
	assert_int_equal(d.index, 3);
	assert_false(d.raw_invalid);
	/* a failing model is an error, not an index */
	fm.fail = true;
	assert_int_equal(controller_step(&c, &s, 2, 0, &d), -1);
	assert_int_equal(fm.calls, 3);
	controller_free(&c);
	free(fm.logits);
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oracle_schedule),
		cmocka_unit_test(test_oracle_refuses),
		cmocka_unit_test(test_bandit_explores_then_exploits),
		cmocka_unit_test(test_bandit_skips_and_holds),
		cmocka_unit_test(test_bandit_units_file),
		cmocka_unit_test(test_agent_answer_parsing),
		cmocka_unit_test(test_agent_decides_valid_digits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
