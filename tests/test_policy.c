/* Tests of the policy library, the control word and the leader's policy
 * runtime (src/policy/policy.h, control.h):
 *  - the built-in library and the INI loader (every malformed file refused
 *    with one line naming file, line, record and field);
 *  - the control file (0600, O_NOFOLLOW, refusing group access, truncated
 *    or garbage files);
 *  - INVALID INDICES ARE INERT: >= 100,000 token-boundary reads while a
 *    writer thread stores random 32-bit values (negative, huge, just past
 *    the end, valid) into the control word; every token's result equals a
 *    serial run, and the invalid-read counter equals the number of invalid
 *    values the leader read (the leader side records each value it read);
 *    then the same on a synthetic model: logits hashes equal a fixed-policy
 *    run's;
 *  - the guard: a forced breach falls back to record 0, is counted, holds
 *    until another index is written. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>

#include "gang/gang.h"
#include "model/forward.h"
#include "model/model.h"
#include "policy/control.h"
#include "policy/policy.h"
#include "engine/engine.h"

#include "testutil.h" /* after gang.h: the toy wave plan */

/* ---- the library ---- */

static void test_builtin(void **state)
{
	(void)state;
	static policy_lib_t lib;
	for (int n = 1; n <= 8; n++) {
		policy_lib_builtin(&lib, n);
		assert_int_equal(lib.n, 4 + n - 1);
		assert_string_equal(lib.rec[0].name, "elastic");
		assert_int_equal(policy_lib_find(&lib, "knee"), 1);
		assert_int_equal(policy_lib_find(&lib, "latency"), 2);
		assert_int_equal(policy_lib_find(&lib, "throughput"), 3);
		for (int k = 1; k < n; k++) {
			char name[16];
			snprintf(name, sizeof name, "static:%d", k);
			int i = policy_lib_find(&lib, name);
			assert_int_equal(i, 3 + k);
			knee_state_t ks;
			knee_init(&ks, n);
			assert_int_equal(policy_next_mask(&lib.rec[i], &ks, n),
					 (1u << k) - 1);
		}
		for (int i = 0; i < lib.n; i++)
			assert_int_equal(policy_validate(&lib.rec[i], n, NULL), 0);
		knee_state_t ks;
		knee_init(&ks, n);
		assert_int_equal(policy_next_mask(&lib.rec[0], &ks, n), (1u << n) - 1);
		uint32_t tp = policy_next_mask(&lib.rec[3], &ks, n);
		assert_true(tp & 1u);
		assert_int_equal(__builtin_popcount(tp), n / 2 ? n / 2 : 1);
		assert_int_equal(lib.rec[2].acquire, GANG_ACQUIRE_PREEMPT);
		assert_int_equal(lib.rec[2].keep_ms, 50);
	}
	assert_int_equal(policy_lib_find(&lib, "4"), 4);
	assert_int_equal(policy_lib_find(&lib, "999"), -1);
	assert_int_equal(policy_lib_find(&lib, "nope"), -1);
}

typedef struct bad_file {
	const char *text;
	const char *expect; /* substring of the message after "lib.ini:" */
} bad_file_t;

/* The knee is where an added core stops bringing its share of speed. */
static void test_knee(void **state)
{
	(void)state;
	/* rates indexed by width; 0 = not measured */
	double linear[9] = {0, 10, 20, 30, 40, 50, 60, 70, 80};
	assert_int_equal(knee_of_rates(linear, 8, 0.95), 8);
	double saturates[9] = {0, 10, 20, 30, 40, 42, 43, 44, 44};
	assert_int_equal(knee_of_rates(saturates, 8, 0.95), 4);
	/* this machine: two cores decode 1.3x faster than one */
	double sublinear[3] = {0, 86, 112};
	assert_int_equal(knee_of_rates(sublinear, 2, 0.95), 1);
	assert_int_equal(knee_of_rates(sublinear, 2, 0.6), 2);
	double none[5] = {0};
	assert_int_equal(knee_of_rates(none, 4, 0.95), 4);
	double partial[5] = {0, 0, 0, 30, 0}; /* only width 3 measured */
	assert_int_equal(knee_of_rates(partial, 4, 0.95), 3);

	/* online: token times of the saturating machine; after the first
	 * visits and a few explorations the cap settles at 4 */
	policy_t p = {.width = WIDTH_KNEE};
	knee_state_t ks;
	knee_init(&ks, 8);
	int at4 = 0;
	for (int t = 0; t < 400; t++) {
		uint32_t m = policy_next_mask(&p, &ks, 8);
		int w = __builtin_popcount(m);
		assert_true(m & 1u);
		policy_observe(&p, &ks, m, (uint64_t)(1e9 / saturates[w]));
		at4 += t >= 200 && w == 4;
	}
	assert_int_equal(ks.knee, 4);
	assert_true(at4 >= 200 - 200 / 16 - 1); /* all but the explorations */
}

/* The knee per batch size: the table's next-lower lookup, the policy
 * following the batch size, and bad tables refused. */
static void test_knee_per_batch(void **state)
{
	(void)state;
	knee_table_t t = {0};
	assert_int_equal(knee_table_lookup(&t, 4), 0); /* empty */
	assert_int_equal(knee_table_set(&t, 8, 2, 4), 0);
	assert_int_equal(knee_table_set(&t, 1, 1, 4), 0); /* kept sorted */
	assert_int_equal(knee_table_set(&t, 4, 3, 4), 0);
	assert_int_equal(t.n, 3);
	assert_int_equal(t.batch[0], 1);
	assert_int_equal(t.batch[1], 4);
	assert_int_equal(t.batch[2], 8);
	static const int want[][2] = {{1, 1}, {2, 1}, {3, 1}, {4, 3}, {7, 3},
				      {8, 2}, {100, 2}};
	for (size_t i = 0; i < EG_ARRAY_LEN(want); i++)
		assert_int_equal(knee_table_lookup(&t, want[i][0]), want[i][1]);
	assert_int_equal(knee_table_lookup(&t, 0), 0);
	assert_int_equal(knee_table_lookup(&t, -3), 0);
	assert_int_equal(knee_table_set(&t, 4, 4, 4), 0); /* replaces */
	assert_int_equal(t.n, 3);
	assert_int_equal(knee_table_lookup(&t, 5), 4);
	/* below the smallest entry: the first */
	knee_table_t hi = {0};
	assert_int_equal(knee_table_set(&hi, 4, 2, 4), 0);
	assert_int_equal(knee_table_lookup(&hi, 1), 2);
	/* invalid entries leave the table as it was */
	assert_int_equal(knee_table_set(&t, 0, 1, 4), -1);
	assert_non_null(strstr(err_get(), "batch 0"));
	assert_int_equal(knee_table_set(&t, 2, 0, 4), -1);
	assert_int_equal(knee_table_set(&t, 2, 5, 4), -1);
	assert_non_null(strstr(err_get(), "knee 5 at batch 2 is out of range [1, 4]"));
	assert_int_equal(t.n, 3);
	knee_table_t full = {0};
	for (int b = 1; b <= KNEE_TABLE_MAX; b++)
		assert_int_equal(knee_table_set(&full, b, 1, 4), 0);
	assert_int_equal(knee_table_set(&full, 99, 1, 4), -1);
	assert_int_equal(knee_table_set(&full, 3, 2, 4), 0); /* replacing fits */
	/* parse and format are each other's inverse; bad text changes nothing */
	knee_table_t p = {0};
	assert_int_equal(knee_table_parse(&p, "1:1,4:3,8:2", 4), 0);
	char buf[256];
	assert_string_equal(knee_table_format(&p, buf, sizeof buf), "1:1,4:3,8:2");
	static const char *const bad[] = {"", ",", "1", "1:", ":1", "1:1,", "1:1,,2:1",
					  "2:1,2:1", "4:1,2:1", "1:0", "1:9", "x:1",
					  "1:1 ", "-1:1", "1:2:3"};
	for (size_t i = 0; i < EG_ARRAY_LEN(bad); i++) {
		if (knee_table_parse(&p, bad[i], 4) != -1)
			fail_msg("'%s' accepted", bad[i]);
		assert_null(strchr(err_get(), '\n'));
		assert_string_equal(knee_table_format(&p, buf, sizeof buf), "1:1,4:3,8:2");
	}

	/* a record's table: the width follows the batch, no exploration */
	policy_t rec = {.name = "t", .width = WIDTH_KNEE, .knees = p};
	assert_int_equal(policy_validate(&rec, 4, NULL), 0);
	knee_state_t ks;
	knee_init(&ks, 4);
	static const int step[][2] = {{1, 1}, {4, 3}, {16, 2}, {2, 1}, {5, 3}};
	for (int r = 0; r < 40; r++)
		for (size_t i = 0; i < EG_ARRAY_LEN(step); i++) {
			knee_set_batch(&ks, step[i][0]);
			uint32_t m = policy_next_mask(&rec, &ks, 4);
			assert_int_equal(m, (1u << step[i][1]) - 1);
			policy_observe(&rec, &ks, m, 1000);
		}
	rec.max_width = 2; /* clamped as ever */
	knee_set_batch(&ks, 4);
	assert_int_equal(policy_next_mask(&rec, &ks, 4), 0x3);
	rec.width = WIDTH_ALL; /* a table needs width knee */
	const char *field;
	assert_int_equal(policy_validate(&rec, 4, &field), -1);
	assert_string_equal(field, "knees");
	rec = (policy_t){.name = "t", .width = WIDTH_KNEE, .knees = p};
	assert_int_equal(policy_validate(&rec, 2, &field), -1); /* knee 3 > 2 slots */
	assert_string_equal(field, "knees");

	/* online: batch 1 saturates at 1 core, batch 16 scales to 4; the cap
	 * settles on each batch's own knee and the policy switches width when
	 * the batch size changes */
	static const double rate1[5] = {0, 100, 110, 112, 113};
	static const double rate16[5] = {0, 100, 200, 300, 400};
	policy_t on = {.width = WIDTH_KNEE};
	knee_init(&ks, 4);
	int w1 = 0, w16 = 0, n1 = 0, n16 = 0;
	for (int st = 0; st < 800; st++) {
		int batch = (st / 10) % 2 ? 16 : 1; /* ten steps of each in turn */
		knee_set_batch(&ks, batch);
		uint32_t m = policy_next_mask(&on, &ks, 4);
		int w = __builtin_popcount(m);
		const double *rate = batch == 16 ? rate16 : rate1;
		policy_observe(&on, &ks, m, (uint64_t)(1e9 / rate[w]));
		if (st >= 400 && !ks.exploring) {
			w1 += batch == 1 && w == 1;
			n1 += batch == 1;
			w16 += batch == 16 && w == 4;
			n16 += batch == 16;
		}
	}
	assert_true(n1 > 150 && n16 > 150);
	assert_int_equal(w1, n1);
	assert_int_equal(w16, n16);
	/* the learned table: bucket 1 -> 1, bucket 16 -> 4 */
	assert_int_equal(knee_table_lookup(&ks.table, 1), 1);
	assert_int_equal(knee_table_lookup(&ks.table, 16), 4);
	assert_int_equal(knee_table_lookup(&ks.table, 31), 4);
	/* a batch inside a bucket shares its measurement (17..31 -> 16) */
	knee_set_batch(&ks, 20);
	ks.tokens = 0; /* not an exploration token */
	assert_int_equal(policy_next_mask(&on, &ks, 4), 0xf);
	knee_set_batch(&ks, 0); /* < 1 counts as 1 */
	assert_int_equal(ks.batch, 1);
	assert_int_equal(policy_next_mask(&on, &ks, 4), 0x1);

	/* the runtime (the server's batch path): policy_rt_set_batch before
	 * each step, the width of that step's batch */
	static policy_lib_t lib;
	policy_lib_builtin(&lib, 4);
	assert_int_equal(policy_lib_parse(&lib, "k.ini", "[tab]\nwidth = knee\n"
					  "knees = 1:1,4:3,8:2\n"), 0);
	char path[256];
	snprintf(path, sizeof path, "%s/cw-knees", test_tmpdir());
	control_t *cw = control_open(path, true);
	assert_non_null(cw);
	control_write_index(cw, (uint32_t)policy_lib_find(&lib, "tab"));
	static policy_rt_t rt;
	policy_rt_init(&rt, &lib, cw->w, NULL);
	static const int rt_step[][2] = {{1, 1}, {6, 3}, {8, 2}, {64, 2}, {3, 1}, {4, 3}};
	for (size_t i = 0; i < EG_ARRAY_LEN(rt_step); i++) {
		policy_rt_set_batch(&rt, rt_step[i][0]);
		policy_rt_before_token(&rt, i);
		assert_int_equal(rt.mask, (1u << rt_step[i][1]) - 1);
		assert_int_equal(atomic_load(&cw->w->gang_width), (uint32_t)rt_step[i][1]);
	}
	control_close(cw);
}

static void test_loader_refuses(void **state)
{
	(void)state;
	static const bad_file_t bad[] = {
		{"[a]\nfoo = 1\n", "2: [a] foo: unknown key"},
		{"[a]\nmax_width = 9\n", "2: [a] max_width: '9' is out of range [1, 4]"},
		{"[a]\nmin_width = 0\n", "2: [a] min_width: '0' is out of range"},
		{"[a]\nmin_width = 3\nmax_width = 2\n", "3: [a] max_width: 2 is out of range [3, 4]"},
		{"[a]\ncores = 0-5\n", "2: [a] cores: slot 5 is outside the gang's slots 0..3"},
		{"[a]\nreserved = 4\n", "2: [a] reserved: slot 4 is outside"},
		{"[a]\nreserved = 0\n", "2: [a] reserved: the leader (slot 0)"},
		{"[a]\ncores = 1-2\n", "2: [a] cores: must include the leader (slot 0)"},
		{"[a]\ncores = 0-1\nreserved = 1\n", "2: [a] cores: overlaps reserved"},
		{"[a]\nwidth = static\n", "1: [a] cores: width static needs a core set"},
		{"[a]\nwidth = knee\ncores = 0\n", "3: [a] cores: a core set needs width static"},
		{"[]\n", "1: [] name: the record name is empty"},
		{"[ a b ]\n", "1: [a b] name: not 1..31 characters"},
		{"[x]\n[x]\n", "2: [x] name: duplicate of record 8 (earlier in this file)"},
		{"[elastic]\n", "1: [elastic] name: duplicate of record 0 (already in the library)"},
		{"[a]\nhello world\n", "2: 'hello world' is not [name], key = value"},
		{"\x01\x02garbage\n", "1: '\x01\x02garbage' is not [name]"},
		{"[a\nwidth = all\n", "1: '[a' is not a [name] line"},
		{"width = all\n", "1: width: a key before the first [name]"},
		{"[a]\nwidth = wide\n", "2: [a] width: 'wide' is not all, static or knee"},
		{"[a]\nacquire = rude\n", "2: [a] acquire: 'rude' is not polite or preempt"},
		{"[a]\nkeep_ms = -1\n", "2: [a] keep_ms: '-1' is out of range"},
		{"[a]\nkeep_ms = 60001\n", "2: [a] keep_ms: '60001' is out of range"},
		{"[a]\nguard_ttft_p99_ms = 0\n", "2: [a] guard_ttft_p99_ms: '0' is out of range"},
		{"[a]\nguard_ttft_p99_ms = nan\n", "2: [a] guard_ttft_p99_ms: 'nan'"},
		{"[a]\nguard_queue_depth = 0\n", "2: [a] guard_queue_depth: '0' is out of range"},
		{"[a]\nguard_checks = 2\n", "2: [a] guard_checks: set without guard_ttft_p99_ms"},
		{"[a]\nkguard_wait_p99_us = 0\n", "2: [a] kguard_wait_p99_us: '0' is out of range"},
		{"[a]\nkguard_wait_p99_us = 10000001\n", "2: [a] kguard_wait_p99_us: '10000001'"},
		{"[a]\nkguard_windows = 2\n", "2: [a] kguard_windows: set without kguard_wait_p99_us"},
		{"[a]\nkguard_wait_p99_us = 5\nkguard_window_ms = 9\n", "3: [a] kguard_window_ms: '9' is out of range"},
		{"[a]\nkguard_wait_p99_us = 5\nkguard_windows = 1001\n", "3: [a] kguard_windows: '1001' is out of range"},
		{"[a]\nguard_queue_depth = 2\nguard_checks = 0\n", "3: [a] guard_checks: '0' is out of range"},
		{"[a]\nwidth = all\nwidth = knee\n", "3: [a] width: set twice (line 2)"},
		{"[a]\ncores = x\n", "2: [a] cores: 'x' is not a slot list"},
		{"# only a comment\n", "no [name] record in the file"},
		{"", "no [name] record in the file"},
		{"[a]\nknees = 1:2\n", "2: [a] knees: needs width knee"},
		{"[a]\nwidth = knee\nknees = 1:5\n", "3: [a] knees: '1:5': knee 5 at batch 1 is out of range [1, 4]"},
		{"[a]\nwidth = knee\nknees = 0:1\n", "3: [a] knees: '0:1': entry 1 is not BATCH:KNEE"},
		{"[a]\nwidth = knee\nknees = 4:1,2:2\n", "batch 2 does not follow 4"},
		{"[a]\nwidth = knee\nknees = 1:1,\n", "empty entry at the end"},
		{"[a]\nwidth = knee\nknees = 1:x\n", "entry 1 is not BATCH:KNEE"},
		{"[a]\nwidth = knee\nknees = 1:1;2:2\n", "entry 1 is not BATCH:KNEE"},
		/* a bad record later in the file refuses the good ones too */
		{"[good]\n[bad]\nmax_width = 0\n", "3: [bad] max_width"},
	};
	static policy_lib_t lib;
	for (size_t i = 0; i < EG_ARRAY_LEN(bad); i++) {
		policy_lib_builtin(&lib, 4);
		if (!strncmp(bad[i].text, "[x]\n[x]", 7))
			policy_lib_parse(&lib, "none", "[y]\n"); /* x becomes record 8 */
		int n0 = lib.n;
		int rc = policy_lib_parse(&lib, "lib.ini", bad[i].text);
		const char *msg = err_get();
		if (rc != -1 || strncmp(msg, "lib.ini", 7) || !strstr(msg, bad[i].expect) ||
		    strchr(msg, '\n'))
			fail_msg("file %zu '%s': rc %d, message '%s', expected '%s'", i,
				 bad[i].text, rc, msg, bad[i].expect);
		assert_int_equal(lib.n, n0); /* nothing added */
	}
	/* from a file: the path is in the message */
	char path[256];
	snprintf(path, sizeof path, "%s/bad.ini", test_tmpdir());
	FILE *f = fopen(path, "w");
	fputs("[ok]\nwidth = knee\n\n[a]\nbogus = 1\n", f);
	fclose(f);
	policy_lib_builtin(&lib, 2);
	assert_int_equal(policy_lib_load(&lib, path), -1);
	char want[300];
	snprintf(want, sizeof want, "%s:5: [a] bogus: unknown key", path);
	assert_string_equal(err_get(), want);
	assert_int_equal(policy_lib_load(&lib, "/nonexistent/x.ini"), -1);
	assert_non_null(strstr(err_get(), "/nonexistent/x.ini"));
}

static void test_loader_accepts(void **state)
{
	(void)state;
	static policy_lib_t lib, again;
	policy_lib_builtin(&lib, 4);
	const char *text =
		"# a library\n"
		"; another comment\n"
		"[fast]\n"
		"  width = knee \r\n"
		"min_width=2\n"
		"max_width = 3\n"
		"acquire = preempt\n"
		"keep_ms = 20\n"
		"\n"
		"[pair]\n"
		"cores = 0,2\n"
		"reserved = 3\n"
		"guard_ttft_p99_ms = 250.5\n"
		"[q]\n"
		"reserved = 2-3\n"
		"guard_queue_depth = 4\n"
		"guard_checks = 5\n"
		"kguard_wait_p99_us = 2000\n"
		"[tab]\n"
		"width = knee\n"
		"knees = 1:1,4:2,16:4\n";
	assert_int_equal(policy_lib_parse(&lib, "t.ini", text), 0);
	assert_int_equal(lib.n, lib.n_builtin + 4);
	const policy_t *p = &lib.rec[policy_lib_find(&lib, "fast")];
	assert_int_equal(p->width, WIDTH_KNEE);
	assert_int_equal(p->min_width, 2);
	assert_int_equal(p->max_width, 3);
	assert_int_equal(p->acquire, GANG_ACQUIRE_PREEMPT);
	assert_int_equal(p->keep_ms, 20);
	p = &lib.rec[policy_lib_find(&lib, "pair")];
	assert_int_equal(p->width, WIDTH_STATIC);
	assert_int_equal(p->static_mask, 0x5);
	assert_int_equal(p->reserved_mask, 0x8);
	assert_true(p->guard_ttft_p99_ms == 250.5);
	assert_int_equal(p->guard_checks, 3); /* the default */
	knee_state_t ks;
	knee_init(&ks, 4);
	assert_int_equal(policy_next_mask(p, &ks, 4), 0x5);
	p = &lib.rec[policy_lib_find(&lib, "q")];
	assert_int_equal(policy_next_mask(p, &ks, 4), 0x3);
	assert_int_equal(p->guard_checks, 5);
	assert_int_equal(p->kguard_wait_p99_us, 2000);
	assert_int_equal(p->kguard_windows, 3);     /* the default */
	assert_int_equal(p->kguard_window_ms, 100); /* the default */
	/* the knee never leaves [min_width, max_width] */
	p = &lib.rec[policy_lib_find(&lib, "fast")];
	for (int t = 0; t < 200; t++) {
		uint32_t m = policy_next_mask(p, &ks, 4);
		int w = __builtin_popcount(m);
		assert_true(m & 1u);
		assert_true(w >= 2 && w <= 3);
		policy_observe(p, &ks, m, (uint64_t)(1000000 / w));
	}
	/* policy_print writes the file syntax: it loads back the same */
	for (int i = 0; i < lib.n; i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		policy_print(&lib.rec[i], 4, f);
		fclose(f);
		/* rename so it is not a duplicate */
		char *text2 = malloc(len + 8);
		snprintf(text2, len + 8, "[r%s", strchr(buf, ']'));
		policy_lib_builtin(&again, 4);
		int rc = policy_lib_parse(&again, "print", text2);
		if (rc)
			fail_msg("record %d does not load back: %s\n%s", i, err_get(), buf);
		const policy_t *a = &lib.rec[i], *b = &again.rec[again.n - 1];
		assert_string_equal(b->name, "r");
		assert_int_equal(a->width, b->width);
		assert_int_equal(a->static_mask, b->static_mask);
		assert_int_equal(a->reserved_mask, b->reserved_mask);
		assert_int_equal(a->acquire, b->acquire);
		/* printed widths are explicit: 1 and n mean unset */
		if (a->width != WIDTH_STATIC) {
			assert_int_equal(a->min_width ? a->min_width : 1, b->min_width);
			assert_int_equal(a->max_width ? a->max_width : 4, b->max_width);
		}
		assert_int_equal(a->keep_ms, b->keep_ms);
		assert_true(a->guard_ttft_p99_ms == b->guard_ttft_p99_ms);
		assert_int_equal(a->guard_queue_depth, b->guard_queue_depth);
		assert_int_equal(a->guard_checks, b->guard_checks);
		assert_memory_equal(&a->knees, &b->knees, sizeof a->knees);
		free(text2);
		free(buf);
	}
}

/* ---- the control file ---- */

static void test_control_file(void **state)
{
	(void)state;
	char path[256], other[256];
	snprintf(path, sizeof path, "%s/cw", test_tmpdir());
	mode_t old = umask(0);
	control_t *c = control_open(path, true);
	umask(old);
	assert_non_null(c);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, CONTROL_SIZE);
	assert_int_equal(atomic_load(&c->w->index), 0);
	control_write_index(c, 7);
	control_t *d = control_open(path, false); /* a second mapping */
	assert_non_null(d);
	assert_int_equal(atomic_load(&d->w->index), 7);
	control_close(d);
	control_close(c);
	/* reopening with create keeps the file and its index */
	c = control_open(path, true);
	assert_non_null(c);
	assert_int_equal(atomic_load(&c->w->index), 7);
	control_close(c);
	/* group-writable: refused */
	chmod(path, 0660);
	assert_null(control_open(path, false));
	assert_non_null(strstr(err_get(), "group/other"));
	assert_null(control_open(path, true));
	chmod(path, 0604);
	assert_null(control_open(path, false));
	chmod(path, 0600);
	/* a symbolic link: refused (O_NOFOLLOW) */
	snprintf(other, sizeof other, "%s/link", test_tmpdir());
	assert_int_equal(symlink(path, other), 0);
	assert_null(control_open(other, true));
	assert_non_null(strstr(err_get(), "symbolic link"));
	/* truncated */
	snprintf(other, sizeof other, "%s/short", test_tmpdir());
	int fd = open(other, O_CREAT | O_WRONLY, 0600);
	assert_int_equal(write(fd, "EGCW", 4), 4);
	close(fd);
	assert_null(control_open(other, true));
	assert_non_null(strstr(err_get(), "truncated"));
	assert_null(strchr(err_get(), '\n'));
	/* garbage of the right size */
	snprintf(other, sizeof other, "%s/garbage", test_tmpdir());
	fd = open(other, O_CREAT | O_WRONLY, 0600);
	char junk[CONTROL_SIZE];
	memset(junk, 0x5a, sizeof junk);
	assert_int_equal(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
	close(fd);
	assert_null(control_open(other, false));
	assert_non_null(strstr(err_get(), "bad magic"));
	/* a directory, a missing file without create */
	assert_null(control_open(test_tmpdir(), false));
	snprintf(other, sizeof other, "%s/missing", test_tmpdir());
	assert_null(control_open(other, false));
	assert_non_null(strstr(err_get(), other));
	char buf[256];
	assert_non_null(strstr(control_default_path(buf, sizeof buf), "egang-control"));
}

/* ---- invalid indices are inert ---- */

typedef struct writer {
	control_t *cw;
	uint32_t n_policies;
	_Atomic bool stop; /* relaxed: only ends the loop; join orders the rest */
	uint32_t *written; /* every value stored, in order */
	size_t n_written, cap;
	uint32_t pause_us;
} writer_t;

/* A random index: valid, just past the end, a little past, negative,
 * huge, or UINT32_MAX. */
static uint32_t random_index(rng_t *r, uint32_t n)
{
	uint64_t x = rng_next(r);
	switch (x % 6) {
	case 0: return (uint32_t)(x >> 8) % n;
	case 1: return n;
	case 2: return n + 1 + (uint32_t)(x >> 8) % 100;
	case 3: return (uint32_t)-(int32_t)(1 + (x >> 8) % 1000);
	case 4: return 0x7fffffffu - (uint32_t)(x >> 8) % 16;
	default: return UINT32_MAX;
	}
}

static void *writer_main(void *arg)
{
	writer_t *w = arg;
	rng_t r;
	rng_seed(&r, 12345);
	while (!atomic_load_explicit(&w->stop, memory_order_relaxed)) {
		uint32_t v = random_index(&r, w->n_policies);
		if (w->n_written < w->cap)
			w->written[w->n_written++] = v;
		else
			v = 0; /* out of log space: only 0 from here on (valid) */
		control_write_index(w->cw, v);
		struct timespec ts = {0, (long)w->pause_us * 1000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int test_cpus(int *cpus)
{
	int n = topo_cores(cpus, 3);
	assert_true(n >= 1);
	if (n < 2) { /* one CPU: two unpinned slots still share it */
		cpus[1] = cpus[0];
		n = 2;
	}
	return n;
}

static void test_invalid_index_inert(void **state)
{
	(void)state;
	const char *env = getenv("EGANG_POLICY_TOKENS");
	long n_tokens = env ? atol(env) : 100000;
	if (n_tokens < 100000)
		n_tokens = 100000;
	int cpus[3];
	int n = test_cpus(cpus);
	gang_config_t gc = {.cpus = cpus, .n_cpus = n, .pin = false};
	gang_t *g = gang_init(&gc);
	assert_non_null(g);
	static policy_lib_t lib;
	policy_lib_builtin(&lib, n);
	char path[256];
	snprintf(path, sizeof path, "%s/cw-inert", test_tmpdir());
	control_t *cw = control_open(path, true);
	assert_non_null(cw);
	control_write_index(cw, 0);
	static policy_rt_t rt;
	policy_rt_init(&rt, &lib, cw->w, g);
	writer_t w = {.cw = cw, .n_policies = (uint32_t)lib.n, .cap = 1u << 20,
		      .pause_us = 30};
	w.written = malloc(w.cap * sizeof *w.written);
	uint32_t *reads = malloc((size_t)n_tokens * sizeof *reads);
	static toy_t t;
	toy_init(&t);
	pthread_t th;
	pthread_create(&th, NULL, writer_main, &w);
	uint64_t expect_invalid = 0;
	long gen_len = 997;
	for (long i = 0; i < n_tokens; i++) {
		if (i % gen_len == 0)
			gang_begin(g);
		policy_rt_before_token(&rt, (uint64_t)(i % gen_len));
		uint32_t raw = rt.raw;
		reads[i] = raw;
		bool valid = raw < (uint32_t)lib.n;
		expect_invalid += !valid;
		/* the record in force is the index, or the default */
		if (rt.effective != (valid ? raw : 0))
			fail_msg("token %ld read %u, runs record %u", i, raw, rt.effective);
		/* the request is the record's, leader included */
		assert_true(gang_requested(g) & 1u);
		toy_reset(&t, (uint64_t)i * 0x1000193u);
		uint32_t mask = gang_run_token(g, &t.plan);
		assert_true(mask & 1u);
		/* every chunk once, the serial run's result */
		toy_check(&t);
		if (i % gen_len == gen_len - 1 || i == n_tokens - 1) {
			gang_end(g);
			policy_rt_generation_end(&rt, -1, 0, 0);
		}
	}
	atomic_store_explicit(&w.stop, true, memory_order_relaxed);
	pthread_join(th, NULL);
	/* exact: the counter equals the invalid values the leader read */
	uint64_t counted = atomic_load(&cw->w->invalid_reads);
	print_message("%ld token reads, %zu writes, %llu invalid reads (%llu "
		      "counted), %llu index changes applied\n", n_tokens,
		      w.n_written, (unsigned long long)expect_invalid,
		      (unsigned long long)counted,
		      (unsigned long long)atomic_load(&cw->w->applied_seq));
	assert_int_equal(counted, expect_invalid);
	assert_int_equal(atomic_load(&cw->w->tokens), (uint64_t)n_tokens);
	/* the reads really raced the writer: many distinct values, both kinds */
	assert_true(expect_invalid > 0);
	assert_true(expect_invalid < (uint64_t)n_tokens);
	assert_true(w.n_written > 100);
	/* every value read is one the writer wrote (or the initial 0) */
	qsort(w.written, w.n_written, sizeof *w.written, cmp_u32);
	for (long i = 0; i < n_tokens; i++)
		if (reads[i] != 0 &&
		    !bsearch(&reads[i], w.written, w.n_written, sizeof *w.written, cmp_u32))
			fail_msg("token %ld read %u, which nobody wrote", i, reads[i]);
	free(reads);
	free(w.written);
	control_close(cw);
	gang_free(g);
}

/* The same on a model: logits hashes of generations under a control word
 * hammered with random indices equal those of a fixed-policy run. */
typedef struct gen_hook {
	policy_rt_t *rt;
	uint64_t reads, invalid;
	uint32_t n;
} gen_hook_t;

static void hook_before_token(void *user, uint64_t pos)
{
	gen_hook_t *h = user;
	if (!h->rt)
		return;
	policy_rt_before_token(h->rt, pos);
	h->reads++;
	h->invalid += h->rt->raw >= h->n;
}

static char *run_generations(const model_t *m, forward_t *f, gang_t *g,
			     gen_hook_t *h, int n_gen)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *hash = open_memstream(&buf, &len);
	for (int k = 0; k < n_gen; k++) {
		engine_params_t ep = {
			.prompt = "Once upon a time",
			.n_predict = 200,
			.sampler = {.temp = 0.8f, .top_p = 0.9f, .seed = (uint64_t)k + 1},
			.logits_hash = hash,
			.before_token = hook_before_token,
			.user = h,
		};
		engine_result_t r;
		assert_int_equal(engine_generate(m, f, g, &ep, &r), 0);
		if (h->rt)
			policy_rt_generation_end(h->rt, r.first_token_s, 0, 0);
		engine_result_free(&r);
	}
	fclose(hash);
	return buf;
}

static void test_model_bit_exact(void **state)
{
	(void)state;
	model_t *m = test_synth_model("s260k.gguf", 7, 2);
	forward_t *f = forward_new(m, 256, 0);
	assert_non_null(f);
	int cpus[3];
	int n = test_cpus(cpus);
	gang_config_t gc = {.cpus = cpus, .n_cpus = n, .pin = false};
	gang_t *g = gang_init(&gc);
	assert_non_null(g);
	gang_request(g, gang_all(g));
	gen_hook_t fixed = {0};
	char *want = run_generations(m, f, g, &fixed, 8);
	static policy_lib_t lib;
	policy_lib_builtin(&lib, n);
	char path[256];
	snprintf(path, sizeof path, "%s/cw-model", test_tmpdir());
	control_t *cw = control_open(path, true);
	assert_non_null(cw);
	static policy_rt_t rt;
	policy_rt_init(&rt, &lib, cw->w, g);
	writer_t w = {.cw = cw, .n_policies = (uint32_t)lib.n, .cap = 1u << 16,
		      .pause_us = 200};
	w.written = malloc(w.cap * sizeof *w.written);
	pthread_t th;
	pthread_create(&th, NULL, writer_main, &w);
	gen_hook_t h = {.rt = &rt, .n = (uint32_t)lib.n};
	char *got = run_generations(m, f, g, &h, 8);
	atomic_store_explicit(&w.stop, true, memory_order_relaxed);
	pthread_join(th, NULL);
	assert_true(strlen(want) > 1000);
	assert_string_equal(got, want);
	assert_int_equal(atomic_load(&cw->w->invalid_reads), h.invalid);
	assert_int_equal(atomic_load(&cw->w->tokens), h.reads);
	assert_int_equal(atomic_load(&cw->w->generations), 8);
	print_message("model: %llu token reads, %llu invalid, %zu writes\n",
		      (unsigned long long)h.reads, (unsigned long long)h.invalid,
		      w.n_written);
	free(w.written);
	free(want);
	free(got);
	control_close(cw);
	gang_free(g);
	forward_free(f);
	model_free(m);
}

/* ---- the guard ---- */

static void test_guard(void **state)
{
	(void)state;
	static policy_lib_t lib;
	policy_lib_builtin(&lib, 2);
	assert_int_equal(policy_lib_parse(&lib, "guard.ini",
					  "[tight]\ncores = 0\nguard_ttft_p99_ms = 0.001\n"
					  "guard_checks = 2\n"
					  "[queue]\nguard_queue_depth = 3\nguard_checks = 1\n"),
			 0);
	int tight = policy_lib_find(&lib, "tight"), queue = policy_lib_find(&lib, "queue");
	char path[256];
	snprintf(path, sizeof path, "%s/cw-guard", test_tmpdir());
	control_t *cw = control_open(path, true);
	assert_non_null(cw);
	int cpus[3];
	int n = test_cpus(cpus);
	assert_true(n >= 2);
	gang_config_t gc = {.cpus = cpus, .n_cpus = 2, .pin = false};
	gang_t *g = gang_init(&gc);
	assert_non_null(g);
	static policy_rt_t rt;
	policy_rt_init(&rt, &lib, cw->w, g);
	control_write_index(cw, (uint32_t)tight);
	policy_rt_before_token(&rt, 0);
	assert_int_equal(rt.effective, tight);
	assert_int_equal(gang_requested(g), 1u); /* static {0} */
	/* one breach: not yet (guard_checks = 2) */
	policy_rt_generation_end(&rt, 0.010, 100, 0);
	assert_int_equal(atomic_load(&cw->w->guard_fallbacks), 0);
	policy_rt_before_token(&rt, 0);
	assert_int_equal(rt.effective, tight);
	/* the second consecutive breach falls back, by the leader alone */
	policy_rt_generation_end(&rt, 0.010, 100, 0);
	assert_int_equal(atomic_load(&cw->w->guard_fallbacks), 1);
	assert_int_equal(atomic_load(&cw->w->fallback), 1);
	assert_int_equal(atomic_load(&cw->w->effective), 0);
	policy_rt_before_token(&rt, 0);
	assert_int_equal(rt.effective, 0);
	assert_int_equal(gang_requested(g), 3u); /* elastic */
	/* the same index written again does not lift it */
	control_write_index(cw, (uint32_t)tight);
	policy_rt_before_token(&rt, 1);
	assert_int_equal(rt.effective, 0);
	assert_int_equal(atomic_load(&cw->w->invalid_reads), 0);
	/* another index does; then the record runs again, with a fresh window */
	control_write_index(cw, 1);
	policy_rt_before_token(&rt, 2);
	assert_int_equal(atomic_load(&cw->w->fallback), 0);
	control_write_index(cw, (uint32_t)tight);
	policy_rt_before_token(&rt, 3);
	assert_int_equal(rt.effective, tight);
	/* a breach, then a good generation: the count restarts */
	policy_rt_generation_end(&rt, 0.010, 100, 0);
	rt.n_ttft = rt.ttft_next = 0; /* (a window of good TTFTs only) */
	policy_rt_generation_end(&rt, 0.0000001, 100, 0);
	policy_rt_generation_end(&rt, 0.010, 100, 0);
	assert_int_equal(atomic_load(&cw->w->guard_fallbacks), 1);
	assert_int_equal(rt.effective, tight);
	/* the queue bound */
	control_write_index(cw, (uint32_t)queue);
	policy_rt_before_token(&rt, 0);
	assert_int_equal(rt.effective, queue);
	policy_rt_generation_end(&rt, 0.010, 100, 3);
	assert_int_equal(rt.effective, queue);
	policy_rt_generation_end(&rt, 0.010, 100, 4);
	assert_int_equal(rt.effective, 0);
	assert_int_equal(atomic_load(&cw->w->guard_fallbacks), 2);
	/* the default has no guard to fall back from */
	control_write_index(cw, 0);
	policy_rt_before_token(&rt, 0);
	for (int i = 0; i < 5; i++)
		policy_rt_generation_end(&rt, 100, 1, 1000);
	assert_int_equal(atomic_load(&cw->w->guard_fallbacks), 2);
	/* keep_ms = 0: the request drops to the leader after a generation;
	 * latency (keep 50 ms) leaves it set */
	assert_int_equal(gang_requested(g), 1u);
	control_write_index(cw, 2);
	policy_rt_before_token(&rt, 0);
	assert_int_equal(gang_requested(g), 3u);
	policy_rt_generation_end(&rt, 0.001, 1, 0);
	assert_int_equal(gang_requested(g), 3u);
	assert_int_equal(policy_keep_us(&lib, 2), 50000);
	assert_int_equal(policy_keep_us(&lib, 99), 0);
	gang_free(g);
	control_close(cw);
}

/* ---- per-record settings at a switch (issue 20 item 7) ---- */

/* The record in force sets the gang's keep spin and acquire mode at the
 * next token after a switch, not only at gang_init. */
static void test_settings_at_switch(void **state)
{
	(void)state;
	static policy_lib_t lib;
	policy_lib_builtin(&lib, 2);
	assert_int_equal(policy_lib_parse(&lib, "keep.ini",
					  "[warm]\nkeep_ms = 7\nacquire = preempt\n"
					  "[cold]\nkeep_ms = 0\nacquire = polite\n"),
			 0);
	int warm = policy_lib_find(&lib, "warm"), cold = policy_lib_find(&lib, "cold");
	char path[256];
	snprintf(path, sizeof path, "%s/cw-keep", test_tmpdir());
	control_t *cw = control_open(path, true);
	assert_non_null(cw);
	int cpus[3];
	assert_true(test_cpus(cpus) >= 2);
	/* the gang starts with record 0's settings (keep 0, polite) */
	gang_config_t gc = {.cpus = cpus, .n_cpus = 2, .pin = false,
			    .keep_us = policy_keep_us(&lib, 0)};
	gang_t *g = gang_init(&gc);
	assert_non_null(g);
	static policy_rt_t rt;
	policy_rt_init(&rt, &lib, cw->w, g);
	gang_stats_t st;
	policy_rt_before_token(&rt, 0);
	gang_stats(g, &st);
	assert_int_equal(st.keep_us, 0);
	assert_int_equal(st.acquire, GANG_ACQUIRE_POLITE);
	/* a switch mid-generation: the next token runs under warm's */
	control_write_index(cw, (uint32_t)warm);
	gang_stats(g, &st);
	assert_int_equal(st.keep_us, 0); /* not before the token boundary */
	policy_rt_before_token(&rt, 1);
	gang_stats(g, &st);
	assert_int_equal(st.keep_us, 7000);
	assert_int_equal(st.acquire, GANG_ACQUIRE_PREEMPT);
	/* a generation end keeps warm's mask (keep_ms != 0) */
	policy_rt_generation_end(&rt, 0.001, 1, 0);
	assert_int_equal(gang_requested(g), 3u);
	/* back to cold: keep 0 and polite again, and its generation end
	 * drops the request to the leader */
	control_write_index(cw, (uint32_t)cold);
	policy_rt_before_token(&rt, 0);
	gang_stats(g, &st);
	assert_int_equal(st.keep_us, 0);
	assert_int_equal(st.acquire, GANG_ACQUIRE_POLITE);
	policy_rt_generation_end(&rt, 0.001, 1, 0);
	assert_int_equal(gang_requested(g), 1u);
	/* the built-in latency record: 50 ms keep, preempt */
	control_write_index(cw, 2);
	policy_rt_before_token(&rt, 0);
	gang_stats(g, &st);
	assert_int_equal(st.keep_us, 50000);
	assert_int_equal(st.acquire, GANG_ACQUIRE_PREEMPT);
	/* an invalid index selects record 0, and record 0's settings */
	control_write_index(cw, 1000);
	policy_rt_before_token(&rt, 1);
	gang_stats(g, &st);
	assert_int_equal(st.keep_us, 0);
	assert_int_equal(st.acquire, GANG_ACQUIRE_POLITE);
	gang_free(g);
	control_close(cw);
}

/* ---- the index provided by another layer (the sched_ext page) ---- */

static _Atomic uint32_t fake_page[16];
static _Atomic uint32_t *fake_provider(void) { return &fake_page[0]; }

/* With a provider, one store by a writer is what the leader reads, and the
 * file's own index is not touched; control_close unbinds. */
static void test_index_provider(void **state)
{
	(void)state;
	static policy_lib_t lib;
	policy_lib_builtin(&lib, 2);
	assert_int_equal(policy_lib_parse(&lib, "g.ini",
					  "[g]\nguard_queue_depth = 1\nguard_checks = 1\n"),
			 0);
	char path[256];
	snprintf(path, sizeof path, "%s/cw-provider", test_tmpdir());
	control_set_index_provider(fake_provider);
	control_t *leader = control_open(path, true);
	control_t *writer = control_open(path, false);
	assert_non_null(leader);
	assert_non_null(writer);
	assert_ptr_equal(writer->index, &fake_page[0]);
	assert_ptr_equal(control_index_of(leader->w), &fake_page[0]);
	static policy_rt_t rt;
	policy_rt_init(&rt, &lib, leader->w, NULL);
	assert_int_equal(atomic_load(&leader->w->index_external), 1);
	control_write_index(writer, 2);
	assert_int_equal(atomic_load(&fake_page[0]), 2);
	assert_int_equal(atomic_load(&leader->w->index), 0); /* the file's */
	policy_rt_before_token(&rt, 0);
	assert_int_equal(rt.effective, 2);
	/* a store by anyone else into the page (the kernel's guard) too */
	atomic_store(&fake_page[0], 0);
	policy_rt_before_token(&rt, 1);
	assert_int_equal(rt.effective, 0);
	/* the leader's guard falls back by storing 0 into the shared index */
	int gi = policy_lib_find(&lib, "g");
	control_write_index(writer, (uint32_t)gi);
	policy_rt_before_token(&rt, 0);
	assert_int_equal(rt.effective, gi);
	policy_rt_generation_end(&rt, 0.001, 1, 5);
	assert_int_equal(atomic_load(&fake_page[0]), 0); /* the kernel sees 0 */
	assert_int_equal(atomic_load(&leader->w->fallback), 1);
	policy_rt_before_token(&rt, 1);
	assert_int_equal(rt.effective, 0);
	assert_int_equal(atomic_load(&leader->w->fallback), 1); /* holds */
	control_write_index(writer, (uint32_t)gi); /* a controller re-arms it */
	policy_rt_before_token(&rt, 2);
	assert_int_equal(rt.effective, gi);
	assert_int_equal(atomic_load(&leader->w->fallback), 0);
	control_close(writer);
	control_close(leader);
	/* without a provider: the file's index, as before */
	control_set_index_provider(NULL);
	control_t *plain = control_open(path, false);
	assert_non_null(plain);
	assert_ptr_equal(plain->index, &plain->w->index);
	assert_ptr_equal(control_index_of(plain->w), &plain->w->index);
	control_close(plain);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin),
		cmocka_unit_test(test_knee),
		cmocka_unit_test(test_knee_per_batch),
		cmocka_unit_test(test_loader_refuses),
		cmocka_unit_test(test_loader_accepts),
		cmocka_unit_test(test_control_file),
		cmocka_unit_test(test_guard),
		cmocka_unit_test(test_settings_at_switch),
		cmocka_unit_test(test_index_provider),
		cmocka_unit_test(test_invalid_index_inert),
		cmocka_unit_test(test_model_bit_exact),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
