/* The bench layer's tools: the membw kernels agree at every level with
 * their scalar twin, the fixed pool runs every chunk of every wave exactly
 * once and finishes each wave once, the tenant's units and its runner's
 * reports, the load generator's request bodies, the model drivers' input
 * checks and decode on a tiny synthetic model (the width knee the one its
 * rates imply), the antagonists' work buckets, the serve log's port, a
 * child's descriptors, no signal from child_stop to a pid that is no
 * child, the figures (built-in scripts fed to gnuplot on a pipe, no
 * shell, the copy never written through a link, the missing-gnuplot
 * error) and the switching goal's arithmetic. */
#include "testutil.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <jansson.h>

#include "base/base.h"
#include "bench/burn.h"
#include "bench/burners.h"
#include "bench/child.h"
#include "bench/decode.h"
#include "bench/loadgen.h"
#include "bench/plot.h"
#include "bench/pool.h"
#include "bench/switching.h"
#include "kernels/membw.h"
#include "model/model.h"

/* ---- membw: every level is the xor of the buffer's words ---- */

static void test_membw_twins(void **state)
{
	(void)state;
	size_t bytes = 64 << 10;
	uint64_t *buf = aligned_alloc(64, bytes);
	rng_t r;
	rng_seed(&r, 3);
	uint64_t want = 0;
	for (size_t i = 0; i < bytes / 8; i++) {
		buf[i] = rng_next(&r);
		want ^= buf[i];
	}
	assert_int_equal(membw_read_generic(buf, bytes), want);
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		assert_int_equal(membw_read_avx2(buf, bytes), want);
	if (__builtin_cpu_supports("avx512f"))
		assert_int_equal(membw_read_avx512(buf, bytes), want);
#endif
	const char *name = NULL;
	membw_read_fn rd = membw_reader(&name);
	assert_non_null(name);
	assert_int_equal(rd(buf, bytes), want);
	/* one word changed changes the result: no load is dropped */
	buf[bytes / 8 - 1] ^= 1;
	assert_int_equal(rd(buf, bytes), want ^ 1);
	free(buf);
}

/* ---- the fixed pool ---- */

#define POOL_WAVES 5
#define POOL_CHUNKS 97

typedef struct pool_probe {
	_Atomic uint32_t runs[POOL_WAVES][POOL_CHUNKS];
	_Atomic uint32_t finishes[POOL_WAVES];
	_Atomic uint32_t bad_order; /* a chunk of wave w ran before w-1 finished */
} pool_probe_t;

static void pool_chunk(void *ctx, uint32_t w, uint32_t i)
{
	pool_probe_t *p = ctx;
	/* seq_cst, stronger than needed: test counters read after the run */
	if (w > 0 && atomic_load(&p->finishes[w - 1]) == 0)
		atomic_fetch_add(&p->bad_order, 1);
	atomic_fetch_add(&p->runs[w][i], 1);
}

static void pool_finish(void *ctx, uint32_t w)
{
	pool_probe_t *p = ctx;
	atomic_fetch_add(&p->finishes[w], 1); /* seq_cst: as above */
}

static void test_pool_runs_every_chunk_once(void **state)
{
	(void)state;
	int cpus[2], n = 0;
	int all[CPUMASK_MAX], n_all = topo_cores(all, CPUMASK_MAX);
	assert_true(n_all >= 1);
	for (int i = 0; i < n_all && n < 2; i++)
		cpus[n++] = all[i];
	cpus[1] = cpus[n - 1]; /* one CPU: two threads share it */
	bench_pool_t *pool = bench_pool_new(cpus, 2);
	assert_non_null(pool);
	static pool_probe_t probe;
	wave_t waves[POOL_WAVES];
	for (int w = 0; w < POOL_WAVES; w++)
		waves[w] = (wave_t){POOL_CHUNKS, pool_chunk, pool_finish};
	wave_plan_t plan = {&probe, POOL_WAVES, waves};
	for (int token = 1; token <= 3; token++) {
		memset(&probe, 0, sizeof probe);
		bench_pool_run(pool, &plan);
		for (int w = 0; w < POOL_WAVES; w++) {
			assert_int_equal(atomic_load(&probe.finishes[w]), 1);
			for (int i = 0; i < POOL_CHUNKS; i++)
				assert_int_equal(atomic_load(&probe.runs[w][i]), 1);
		}
		assert_int_equal(atomic_load(&probe.bad_order), 0);
	}
	bench_pool_free(pool);
}

/* ---- the tenant ---- */

static void test_burn_units(void **state)
{
	(void)state;
	/* the CPU unit is a pure function of its input */
	assert_int_equal(burn_cpu_unit(1), burn_cpu_unit(1));
	assert_int_not_equal(burn_cpu_unit(1), burn_cpu_unit(2));
	/* the memory unit reads 64 KiB and wraps at the buffer's end */
	size_t len = 128 << 10, pos = 0;
	uint64_t *buf = calloc(1, len);
	buf[0] = 5;
	assert_int_equal(burn_mem_unit(buf, len, &pos), 5);
	assert_int_equal(pos, 65536);
	assert_int_equal(burn_mem_unit(buf, len, &pos), 0);
	assert_int_equal(pos, 0);
	free(buf);
	assert_string_equal(burn_mode_names[BURN_MODE_CPU], "cpu");
	assert_string_equal(burn_mode_names[BURN_MODE_MEM], "mem");
	assert_null(burn_mode_names[BURN_MODE_COUNT]);
}

static void count_report(void *user, double t_s, double units_s, uint64_t now_ns)
{
	int *n = user;
	assert_true(t_s > 0 && units_s >= 0);
	assert_true(now_ns > 0 && now_ns <= time_now_ns());
	(*n)++;
}

/* A reporter that comes back late from its first report (descheduled,
 * or its pipe full), past the next period's start: the run must go on
 * reporting and end on time (the next deadline once wrapped to centuries,
 * and the rest of the run reported nothing) */
typedef struct late {
	int n;
	double last_t;
	uint64_t last_ns;
	bool ordered;
} late_t;

static void late_report(void *user, double t_s, double units_s, uint64_t now_ns)
{
	late_t *l = user;
	(void)units_s;
	if (t_s <= l->last_t || now_ns <= l->last_ns)
		l->ordered = false;
	l->last_t = t_s;
	l->last_ns = now_ns;
	if (l->n++ == 0)
		usleep(120000); /* six periods */
}

static void test_burn_run_late_report(void **state)
{
	(void)state;
	late_t l = {.ordered = true};
	burn_config_t c = {.mode = BURN_MODE_CPU, .threads = 1, .seconds = 0.6,
			   .report_ms = 20, .report = late_report, .user = &l};
	burn_result_t r;
	uint64_t t0 = time_now_ns();
	assert_int_equal(burn_run(&c, &r), 0);
	assert_true(time_now_ns() - t0 < 30000000000ull); /* it ended */
	assert_true(l.ordered);
	/* reports resumed after the late one (the remaining ~0.48 s holds
	 * many 20 ms periods; a loaded machine may lose some) */
	assert_true(l.n >= 3);
}

static void test_burn_report_line(void **state)
{
	(void)state;
	char line[128];
	double t, rate;
	uint64_t at;
	burn_report_format(line, sizeof line, 1.25, 1234.0, 987654321012ull);
	assert_string_equal(line, "burn t=1.250 units/s=1234 at_ns=987654321012");
	assert_int_equal(burn_report_parse(line, &t, &rate, &at), 0);
	assert_true(t == 1.25 && rate == 1234.0 && at == 987654321012ull);
	/* an older burner's line without the stamp: placed at its arrival */
	assert_int_equal(burn_report_parse("burn t=0.5 units/s=10", &t, &rate, &at), 0);
	assert_true(t == 0.5 && rate == 10 && at == 0);
	assert_int_equal(burn_report_parse("burn total: 5 units", &t, &rate, &at), -1);
}

static void test_burn_run_reports(void **state)
{
	(void)state;
	int reports = 0;
	burn_config_t c = {.mode = BURN_MODE_CPU, .threads = 2, .seconds = 0.2,
			   .report_ms = 20, .report = count_report, .user = &reports};
	burn_result_t r;
	assert_int_equal(burn_run(&c, &r), 0);
	assert_true(r.units > 0);
	assert_true(r.seconds >= 0.2);
	/* a report per period that ended before the end: at most 10, and
	 * the first period ends long before the run does */
	assert_true(reports >= 1 && reports <= 10);
}

/* ---- the load generator's bodies ---- */

static void test_loadgen_body(void **state)
{
	(void)state;
	char *b = loadgen_body("Once", 7, false, 0.5);
	json_t *j = json_loads(b, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "prompt")), "Once");
	assert_int_equal(json_integer_value(json_object_get(j, "max_tokens")), 7);
	assert_true(json_is_true(json_object_get(j, "stream")));
	json_decref(j);
	free(b);
	b = loadgen_body("Hi", 3, true, 0);
	j = json_loads(b, 0, NULL);
	json_t *msg = json_array_get(json_object_get(j, "messages"), 0);
	assert_string_equal(json_string_value(json_object_get(msg, "content")), "Hi");
	assert_string_equal(json_string_value(json_object_get(msg, "role")), "user");
	json_decref(j);
	free(b);
	assert_null(loadgen_body("\xff\xfe", 3, false, 0)); /* not UTF-8 */
}

/* ---- the model drivers ---- */

static const char *tiny_model(void)
{
	static char path[128];
	if (!path[0]) {
		snprintf(path, sizeof path, "%s/tiny.gguf", test_tmpdir());
		assert_int_equal(synth_write(synth_find("stories260k"), DTYPE_Q8_0, 1, 2,
					     path, NULL, NULL), 0);
	}
	return path;
}

static void test_model_open_checks(void **state)
{
	(void)state;
	int cpu0 = 0, all[CPUMASK_MAX];
	assert_true(topo_cores(all, CPUMASK_MAX) >= 1);
	cpu0 = all[0];
	int rc = -1;
	bench_model_config_t c = {.name = "bench decode", .model = tiny_model(),
				  .cpus = &cpu0, .n_cpus = 1, .tokens = 100000};
	assert_null(bench_model_open(&c, &rc));
	assert_int_equal(rc, EXIT_INPUT);
	assert_non_null(strstr(err_get(), "--tokens 100000 does not fit"));
	c.model = "/nonexistent.gguf";
	c.tokens = 8;
	assert_null(bench_model_open(&c, &rc));
	assert_int_equal(rc, EXIT_INPUT);
}

static void test_decode_and_width(void **state)
{
	(void)state;
	int all[CPUMASK_MAX], n = topo_cores(all, CPUMASK_MAX);
	n = n > 2 ? 2 : n;
	int rc = -1;
	bench_model_config_t c = {.name = "bench decode", .model = tiny_model(),
				  .cpus = all, .n_cpus = n, .tokens = 8};
	engine_t *e = bench_model_open(&c, &rc);
	assert_non_null(e);
	assert_int_equal(rc, EXIT_OK);
	assert_non_null(e->g); /* a gang even on one CPU */
	assert_string_equal(bench_model_type(e->m), "q8_0");
	double v[2];
	bench_decode_run(e, 8, 2, false, v);
	assert_true(v[0] > 0 && v[1] > 0);
	assert_int_equal(bench_prefill_run(e, 8, 2, false, v), 0);
	assert_true(v[0] > 0 && v[1] > 0);
	bench_width_result_t w;
	assert_int_equal(bench_width_run(e, 4, 1, &w), 0);
	/* the knee is the one its medians imply (knee_of_rates itself is
	 * tested on curves with known knees in test_policy.c) and best is
	 * their largest */
	double rate[GANG_MAX_SLOTS + 1] = {0}, best = 0;
	for (int i = 0; i < n; i++) {
		assert_true(w.s[i].p50 > 0);
		rate[i + 1] = w.s[i].p50;
		best = rate[i + 1] > best ? rate[i + 1] : best;
	}
	assert_int_equal(w.knee, knee_of_rates(rate, n, 0.95));
	assert_true(w.best == best);
	engine_close(e);
}

/* ---- the antagonists' buckets ---- */

static void test_burners_buckets(void **state)
{
	(void)state;
	const uint64_t T = 1000000000000ull, ms = 1000000ull;
	double bucket[4] = {0};
	burners_t b = {.t_start = T, .bucket = bucket, .n_bucket = 4};
	/* 100 units over [25, 75) ms: half in bucket 0, half in bucket 1 */
	burners_add(&b, T + 25 * ms, T + 75 * ms, 100);
	assert_true(fabs(bucket[0] - 50) < 1e-9 && fabs(bucket[1] - 50) < 1e-9);
	assert_true(fabs(burners_window(&b, T, T + 50 * ms) - 50) < 1e-9);
	/* a window cutting a bucket counts the fraction inside */
	assert_true(fabs(burners_window(&b, T + 25 * ms, T + 50 * ms) - 25) < 1e-9);
	assert_true(fabs(burners_window(&b, T, T + 200 * ms) - 100) < 1e-9);
	/* time before the start: spread over what is left of the report */
	burners_add(&b, T - 50 * ms, T + 50 * ms, 30);
	assert_true(fabs(bucket[0] - 80) < 1e-9);
	/* past the last bucket: in the total only */
	burners_add(&b, T + 190 * ms, T + 210 * ms, 20);
	assert_true(fabs(bucket[3] - 10) < 1e-9);
	assert_true(fabs(burners_window(&b, T, T + 1000 * ms) - 140) < 1e-9);
	assert_true(fabs(b.total - 150) < 1e-9);
	/* an empty report adds to the total, to no bucket */
	burners_add(&b, T + 10 * ms, T + 10 * ms, 5);
	assert_true(fabs(b.total - 155) < 1e-9);
	assert_true(fabs(burners_window(&b, T, T + 1000 * ms) - 140) < 1e-9);
}

/* ---- children: the serve log's port ---- */

static void test_child_serve_port(void **state)
{
	(void)state;
	char path[256];
	snprintf(path, sizeof path, "%s/serve.log", test_tmpdir());
	assert_int_equal(child_serve_port(path), 0); /* no log yet */
	FILE *f = fopen(path, "w");
	fputs("egang: loading\n", f);
	fclose(f);
	assert_int_equal(child_serve_port(path), 0); /* no startup line yet */
	f = fopen(path, "a");
	fputs("egang serve: stories260K (none chat template) on "
	      "http://127.0.0.1:43817, 4 slots\n", f);
	fclose(f);
	assert_int_equal(child_serve_port(path), 43817);
	assert_int_equal(child_find_exe(), 0);
	assert_true(child_exe()[0] == '/');
}

/* This process's descriptors above stderr that are /dev/null and would
 * pass an exec (no FD_CLOEXEC), one line each, into buf. */
static void fd_devnull(char *buf, size_t cap)
{
	size_t len = 0;
	buf[0] = 0;
	for (int fd = 3; fd < 1024; fd++) {
		char link[64], target[256];
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, target, sizeof target - 1);
		int fl = fcntl(fd, F_GETFD);
		if (n <= 0 || fl < 0 || (fl & FD_CLOEXEC))
			continue;
		target[n] = 0;
		if (!strcmp(target, "/dev/null") && len < cap)
			len += (size_t)snprintf(buf + len, cap - len, "fd %d\n", fd);
	}
}

/* child_spawn's child (this program as "fd-probe", main): fd_devnull. */
static int fd_probe(void)
{
	char buf[1024];
	fd_devnull(buf, sizeof buf);
	fputs(buf, stdout);
	return 0;
}

/* A child gets stdin, stdout and stderr and no other descriptor of
 * child_spawn's own (its /dev/null is closed after the dup2s): its
 * /dev/null descriptors above stderr are those this process passes on. */
static void test_child_spawn_descriptors(void **state)
{
	(void)state;
	if (test_under_emulator())
		skip();
	int p[2];
	assert_int_equal(child_find_exe(), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	char *args[] = {"fd-probe", NULL};
	pid_t pid = child_spawn(args, p[1], -1);
	close(p[1]);
	assert_true(pid > 0);
	char out[1024];
	size_t len = 0;
	ssize_t k;
	while ((k = read(p[0], out + len, sizeof out - 1 - len)) > 0)
		len += (size_t)k;
	close(p[0]);
	out[len] = 0;
	assert_true(child_wait_ok(pid));
	char want[1024];
	fd_devnull(want, sizeof want);
	assert_string_equal(out, want);
}

/* A pid that is no child of ours (a reaped child's pid may be another
 * process's) gets no signal from child_stop: here a grandchild, which
 * its parent reports killed by a signal (1) or exited (0). */
static void grandchild_on_usr1(int sig)
{
	(void)sig;
	_exit(0);
}

static void test_child_stop_spares_a_non_child(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t mid = fork();
	assert_true(mid >= 0);
	if (mid == 0) {
		pid_t g = fork();
		if (g == 0) {
			signal(SIGUSR1, grandchild_on_usr1);
			pid_t me = getpid();
			if (write(p[1], &me, sizeof me) != sizeof me)
				_exit(2);
			for (int i = 0; i < 1000; i++) /* 10 s at most */
				usleep(10000);
			_exit(3);
		}
		int st = 0;
		if (g < 0 || waitpid(g, &st, 0) != g)
			_exit(4);
		_exit(WIFSIGNALED(st) ? 1 : WIFEXITED(st) ? WEXITSTATUS(st) : 5);
	}
	close(p[1]);
	pid_t g = 0;
	assert_int_equal(read(p[0], &g, sizeof g), (ssize_t)sizeof g);
	close(p[0]);
	child_stop(g, SIGTERM, 0.05);
	assert_int_equal(kill(g, SIGUSR1), 0); /* its own way out */
	int st = 0;
	assert_int_equal(waitpid(mid, &st, 0), mid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* a child of ours that has ended is reaped, not signalled */
	pid_t c = fork();
	if (c == 0)
		_exit(0);
	assert_true(c > 0);
	usleep(20000);
	child_stop(c, SIGTERM, 1);
	assert_int_equal(waitpid(c, NULL, WNOHANG), -1); /* reaped */
}

/* ---- the figures ---- */

/* The built-in script is tools/plot/NAME.gp byte for byte. */
static void test_plot_scripts_built_in(void **state)
{
	(void)state;
	for (int p = 0; p < BENCH_PLOT_COUNT; p++) {
		char path[256];
		snprintf(path, sizeof path, "tools/plot/%s.gp", bench_plot_name(p));
		size_t len;
		char *want = file_read_all(path, &len);
		assert_non_null(want);
		assert_true(len > 100);
		assert_string_equal(bench_plot_script(p), want);
		free(want);
	}
}

/* A folder whose name holds a quote and $(...) is only a name (no shell,
 * no gnuplot code built from it); without gnuplot the error is one line. */
static void test_plot_draw(void **state)
{
	(void)state;
	/* were the name run by a shell, it would leave the canary in the
	 * working directory */
	const char *canary = "egang-plot-canary";
	char dir[512], csv[600], png[600], gp[600];
	snprintf(dir, sizeof dir, "%s/it's $(touch %s)", test_tmpdir(), canary);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(csv, sizeof csv, "%s/coschedule.csv", dir);
	FILE *f = fopen(csv, "w");
	fputs("policy,duty,inference_tok_s,lat_p50_ms,lat_p99_ms,tenant_units_s,"
	      "tenant_frac,mean_width,preempted_tokens,generations,logit_mismatches\n"
	      "static:1,50,10.0,1,2,100,0.5,1,0,10,0\n"
	      "elastic-preempt,50,12.0,1,2,150,0.7,1.5,0,12,0\n"
	      "knee,50,11.0,1,2,140,0.65,1.2,0,11,0\n", f);
	fclose(f);
	snprintf(png, sizeof png, "%s/coschedule.png", dir);
	snprintf(gp, sizeof gp, "%s/coschedule.gp", dir);
	/* run = false: the script only */
	assert_int_equal(bench_plot_draw(BENCH_PLOT_COSCHEDULE, dir, NULL, false), 0);
	assert_int_equal(access(gp, R_OK), 0);
	assert_int_not_equal(access(png, F_OK), 0);
	/* no gnuplot on PATH: one line naming it, the script left to run */
	if (test_under_emulator())
		skip();
	const char *path = getenv("PATH");
	char *saved = strdup(path ? path : "/usr/bin:/bin");
	setenv("PATH", "/nonexistent", 1);
	assert_int_equal(bench_plot_draw(BENCH_PLOT_COSCHEDULE, dir, NULL, true), -1);
	setenv("PATH", saved, 1);
	free(saved);
	assert_non_null(strstr(err_get(), "gnuplot is not installed"));
	assert_non_null(strstr(err_get(), "gnuplot -c "));
	assert_null(strchr(err_get(), '\n'));
	if (bench_plot_draw(BENCH_PLOT_COSCHEDULE, dir, NULL, true) < 0) {
		/* the drawing itself needs gnuplot (tools/deps.sh) */
		assert_non_null(strstr(err_get(), "gnuplot is not installed"));
		skip();
	}
	char head[8] = {0};
	f = fopen(png, "rb");
	assert_non_null(f);
	assert_int_equal(fread(head, 1, 4, f), 4);
	fclose(f);
	assert_memory_equal(head + 1, "PNG", 3);
	assert_int_not_equal(access(canary, F_OK), 0); /* nothing ran $(...) */
}

/* gnuplot reads the built-in script on its stdin, with no signal blocked;
 * the copy for redrawing by hand is written 0644, never through a symbolic
 * link; a path too long is one line. The fake gnuplot is this program
 * under that name (main): it records its arguments, its stdin and its
 * blocked signals in DIR (its third argument). */
static int fake_gnuplot(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	char path[4200], buf[8192];
	snprintf(path, sizeof path, "/proc/self/status");
	FILE *st = fopen(path, "r"), *out;
	snprintf(path, sizeof path, "%s/sigblk", argv[3]);
	out = fopen(path, "w");
	while (st && out && fgets(buf, sizeof buf, st))
		if (!strncmp(buf, "SigBlk:", 7))
			fputs(buf, out);
	snprintf(path, sizeof path, "%s/argv", argv[3]);
	FILE *a = fopen(path, "w");
	for (int i = 1; a && i < argc; i++)
		fprintf(a, "%s\n", argv[i]);
	snprintf(path, sizeof path, "%s/stdin", argv[3]);
	FILE *in = fopen(path, "w");
	size_t k;
	while (in && (k = fread(buf, 1, sizeof buf, stdin)) > 0)
		fwrite(buf, 1, k, in);
	return !(st && out && a && in && !fclose(st) && !fclose(out) &&
		 !fclose(a) && !fclose(in));
}

static void test_plot_script_on_stdin(void **state)
{
	(void)state;
	if (test_under_emulator())
		skip();
	char dir[512], bin[600], fake[700], gp[700], other[700], rec[700];
	snprintf(dir, sizeof dir, "%s/plot-stdin", test_tmpdir());
	snprintf(bin, sizeof bin, "%s/bin", dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(mkdir(bin, 0755), 0);
	snprintf(fake, sizeof fake, "%s/gnuplot", bin);
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	assert_true(n > 0);
	self[n] = 0;
	assert_int_equal(symlink(self, fake), 0);
	const char *path = getenv("PATH");
	char *saved = strdup(path ? path : "/usr/bin:/bin"), newpath[4800];
	snprintf(newpath, sizeof newpath, "%s:%s", bin, saved);
	setenv("PATH", newpath, 1);
	sigset_t usr1, old;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, &old);
	int rc = bench_plot_draw(BENCH_PLOT_SWITCHING, dir, "L", true);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	setenv("PATH", saved, 1);
	free(saved);
	assert_int_equal(rc, 0);
	size_t len;
	snprintf(rec, sizeof rec, "%s/argv", dir);
	char *t = file_read_all(rec, &len), want[700];
	snprintf(want, sizeof want, "-c\n/dev/stdin\n%s\nL\n", dir);
	assert_string_equal(t, want);
	free(t);
	snprintf(rec, sizeof rec, "%s/stdin", dir);
	t = file_read_all(rec, &len);
	assert_string_equal(t, bench_plot_script(BENCH_PLOT_SWITCHING));
	free(t);
	snprintf(rec, sizeof rec, "%s/sigblk", dir);
	t = file_read_all(rec, &len);
	assert_string_equal(t, "SigBlk:\t0000000000000000\n");
	free(t);
	struct stat st;
	snprintf(gp, sizeof gp, "%s/switching.gp", dir);
	assert_int_equal(lstat(gp, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	/* a symbolic link in place of the copy: refused, its target untouched */
	snprintf(other, sizeof other, "%s/other", dir);
	FILE *f = fopen(other, "w");
	fputs("keep\n", f);
	fclose(f);
	unlink(gp);
	assert_int_equal(symlink(other, gp), 0);
	assert_int_equal(bench_plot_draw(BENCH_PLOT_SWITCHING, dir, NULL, false), -1);
	assert_non_null(strstr(err_get(), "switching.gp"));
	t = file_read_all(other, &len);
	assert_string_equal(t, "keep\n");
	free(t);
	/* a folder name too long for the script's path */
	char *longdir = malloc(4300);
	memset(longdir, 'd', 4299);
	longdir[4299] = 0;
	assert_int_equal(bench_plot_draw(BENCH_PLOT_SWITCHING, longdir, NULL, false), -1);
	assert_non_null(strstr(err_get(), "the script's path is longer than"));
	free(longdir);
}

/* ---- the switching goal ---- */

static void test_switching_goal(void **state)
{
	(void)state;
	switching_config_t c = {0};
	switching_defaults(&c);
	assert_int_equal(c.reps, 3);
	assert_true(c.arm_on[SWITCHING_ARM_AGENT]);
	switching_summary_t s = {0};
	s.arm[SWITCHING_ARM_LATENCY].p99[1] = 100;
	s.arm[SWITCHING_ARM_LATENCY].p99_sd[1] = 10;
	s.arm[SWITCHING_ARM_THROUGHPUT].work = 0.8;
	s.arm[SWITCHING_ARM_THROUGHPUT].left = 0.5;
	s.arm[SWITCHING_ARM_ORACLE] = (switching_arm_summary_t){.work = 0.79, .left = 0.5};
	s.arm[SWITCHING_ARM_ORACLE].p99[1] = 109;
	s.arm[SWITCHING_ARM_ORACLE].p99_sd[1] = 5;
	switching_goal_t g;
	assert_true(switching_goal(&c, &s, SWITCHING_ARM_ORACLE, &g));
	assert_true(g.latency_ok); /* 109 <= 100 + max(10, 5) */
	assert_true(g.work_ok);    /* 0.79 / 0.8 >= 0.97 */
	s.arm[SWITCHING_ARM_ORACLE].p99[1] = 111;
	s.arm[SWITCHING_ARM_ORACLE].work = 0.7;
	assert_true(switching_goal(&c, &s, SWITCHING_ARM_ORACLE, &g));
	assert_false(g.latency_ok);
	assert_false(g.work_ok);
	/* no goal for a fixed arm, nor without the latency arm */
	assert_false(switching_goal(&c, &s, SWITCHING_ARM_THROUGHPUT, &g));
	c.arm_on[SWITCHING_ARM_LATENCY] = false;
	assert_false(switching_goal(&c, &s, SWITCHING_ARM_ORACLE, &g));
}

int main(int argc, char **argv)
{
	const char *me = strrchr(argv[0], '/');
	if (!strcmp(me ? me + 1 : argv[0], "gnuplot"))
		return fake_gnuplot(argc, argv);
	if (!strcmp(argv[0], "fd-probe"))
		return fd_probe();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_membw_twins),
		cmocka_unit_test(test_pool_runs_every_chunk_once),
		cmocka_unit_test(test_burn_units),
		cmocka_unit_test(test_burn_run_reports),
		cmocka_unit_test(test_burn_run_late_report),
		cmocka_unit_test(test_burn_report_line),
		cmocka_unit_test(test_loadgen_body),
		cmocka_unit_test(test_model_open_checks),
		cmocka_unit_test(test_decode_and_width),
		cmocka_unit_test(test_burners_buckets),
		cmocka_unit_test(test_child_serve_port),
		cmocka_unit_test(test_child_spawn_descriptors),
		cmocka_unit_test(test_child_stop_spares_a_non_child),
		cmocka_unit_test(test_plot_scripts_built_in),
		cmocka_unit_test(test_plot_draw),
		cmocka_unit_test(test_plot_script_on_stdin),
		cmocka_unit_test(test_switching_goal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
