/* egang bench switch: what a policy switch costs (DESIGN.md section 4).
 *
 * A controller thread writes a new valid index into the control word every
 * 1-3 ms while the leader decodes (a synthetic stories260k-shaped model by
 * default); for each write it measures the store itself (ns, between two
 * clock reads) and write-to-in-force: from just before the store to the
 * leader's applying it at a token boundary (applied_ns in the telemetry),
 * in microseconds and in token boundaries. One summary line "bench switch
 * ...". (AKTS reports 920 ns p50 for a BPF map update through a system
 * call; here the write is a plain store into a shared page.) */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "gang/gang.h"
#include "model/forward.h"
#include "model/model.h"
#include "policy/control.h"
#include "policy/policy.h"
#include "server/engine.h"

static const char switch_help[] =
	"usage: egang bench switch [options]\n"
	"\n"
	"Switches the policy index N times during decoding; reports the index\n"
	"write (ns) and write-to-in-force (tokens, us): median, p99, max.\n"
	"\n"
	"  -m, --model FILE      model (default: a synthetic stories260k shape,\n"
	"                        2 layers, written to a temporary folder)\n"
	"      --cores LIST      gang CPUs (default: all allowed)\n"
	"      --switches N      index writes (default 200)\n"
	"      --control PATH    control word (default: a temporary file, so a\n"
	"                        running server is not disturbed)\n"
	"  -q, --quiet           only the summary line\n"
	"  -h, --help            this text\n";

typedef struct sw_ctx {
	control_t *cw;
	uint32_t n_policies;
	int n_switches;
	_Atomic bool done;  /* relaxed: stops the leader's loop; join orders */
	uint64_t *write_ns, *force_ns, *force_tok;
	int n_done;
	policy_rt_t rt;
} sw_ctx_t;

static void sw_before_token(void *user, uint64_t pos)
{
	sw_ctx_t *c = user;
	policy_rt_before_token(&c->rt, pos);
}

static int sw_on_text(void *user, const char *s, size_t n)
{
	(void)s;
	(void)n;
	sw_ctx_t *c = user;
	return atomic_load_explicit(&c->done, memory_order_relaxed);
}

static void sleep_us(uint64_t us)
{
	struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
	nanosleep(&ts, NULL);
}

static void *controller_main(void *arg)
{
	sw_ctx_t *c = arg;
	control_word_t *w = c->cw->w;
	rng_t r;
	rng_seed(&r, 7);
	/* relaxed: a progress hint only */
	while (atomic_load_explicit(&w->tokens, memory_order_relaxed) < 16)
		sleep_us(200);
	uint32_t cur = atomic_load_explicit(&w->index, memory_order_relaxed);
	for (int i = 0; i < c->n_switches; i++) {
		sleep_us(1000 + rng_next(&r) % 2000);
		uint32_t v = (cur + 1 + (uint32_t)(rng_next(&r) % (c->n_policies - 1))) %
			     c->n_policies;
		/* acquire: pairs with the leader's release store of
		 * applied_seq; we wait for it to move past this value */
		uint64_t seq = atomic_load_explicit(&w->applied_seq, memory_order_acquire);
		uint64_t tok = atomic_load_explicit(&w->tokens, memory_order_relaxed);
		uint64_t t0 = time_now_ns();
		control_write_index(c->cw, v);
		uint64_t t1 = time_now_ns();
		uint64_t deadline = t1 + 2000000000ull;
		uint64_t s2;
		while ((s2 = atomic_load_explicit(&w->applied_seq, memory_order_acquire)) == seq &&
		       time_now_ns() < deadline)
			sleep_us(20);
		if (s2 == seq)
			break; /* the leader stopped */
		/* applied_* are those of seq s2 (acquire above); a single
		 * writer, so s2 == seq + 1 and applied_raw == v */
		if (atomic_load_explicit(&w->applied_raw, memory_order_relaxed) != v)
			break;
		c->write_ns[c->n_done] = t1 - t0;
		c->force_ns[c->n_done] =
			atomic_load_explicit(&w->applied_ns, memory_order_relaxed) - t0;
		c->force_tok[c->n_done] =
			atomic_load_explicit(&w->applied_token, memory_order_relaxed) - tok;
		c->n_done++;
		cur = v;
	}
	atomic_store_explicit(&c->done, true, memory_order_relaxed);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *v, int n, double q)
{
	qsort(v, (size_t)n, sizeof *v, cmp_u64);
	int i = (int)(q * n + 0.999999) - 1;
	return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

int cmd_bench_switch(int argc, char **argv)
{
	static const struct option opts[] = {
		{"model", required_argument, 0, 'm'},
		{"cores", required_argument, 0, 'C'},
		{"switches", required_argument, 0, 'n'},
		{"control", required_argument, 0, 'W'},
		{"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	const char *model_path = NULL, *cores = NULL, *control = NULL;
	int64_t n_switches = 200;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "m:qh", opts, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case 'm': model_path = optarg; break;
		case 'C': cores = optarg; break;
		case 'n': bad = cli_int("--switches", optarg, 1, 1000000, &n_switches); break;
		case 'W': control = optarg; break;
		case 'q': log_quiet = true; break;
		case 'h': fputs(switch_help, stdout); return EXIT_OK;
		default: return cli_usage_error("bench switch", argv[optind - 1]);
		}
		if (bad)
			return EXIT_INPUT;
	}
	if (cli_no_more_args("bench switch", argc, argv) < 0)
		return EXIT_INPUT;
	int cpus[GANG_MAX_SLOTS];
	int n_cpus = cli_cores(cores, cpus, GANG_MAX_SLOTS);
	if (n_cpus < 0) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	char dir[64] = "", synth_path[128] = "", cw_path[128] = "";
	if (!model_path || !control) {
		snprintf(dir, sizeof dir, "/tmp/egang-switch-XXXXXX");
		if (!mkdtemp(dir)) {
			log_error("mkdtemp: %s", strerror(errno));
			return EXIT_FAIL;
		}
	}
	if (!model_path) {
		snprintf(synth_path, sizeof synth_path, "%s/s260k.gguf", dir);
		if (synth_write(synth_find("stories260k"), DTYPE_F32, 1, 2, synth_path,
				NULL, NULL) < 0) {
			log_error("%s", err_get());
			rmdir(dir);
			return EXIT_FAIL;
		}
		model_path = synth_path;
	}
	if (!control) {
		snprintf(cw_path, sizeof cw_path, "%s/control", dir);
		control = cw_path;
	}
	static policy_lib_t lib;
	policy_lib_builtin(&lib, n_cpus);
	static sw_ctx_t sc;
	int status = EXIT_OK;
	model_t *m = model_load(model_path, NULL);
	forward_t *f = NULL;
	gang_t *g = NULL;
	sc.cw = control_open(control, true);
	if (!m || !sc.cw) {
		log_error("%s", err_get());
		status = EXIT_INPUT;
		goto out;
	}
	if (lib.n < 2) {
		log_error("bench switch: the library has one record; nothing to "
			  "switch to");
		status = EXIT_INPUT;
		goto out;
	}
	f = forward_new(m, m->cfg.ctx < 512 ? m->cfg.ctx : 512, 0);
	if (!f) {
		log_error("%s", err_get());
		status = EXIT_FAIL;
		goto out;
	}
	if (n_cpus > 1) {
		gang_config_t gc = {.cpus = cpus, .n_cpus = n_cpus, .pin = true};
		if (!(g = gang_init(&gc))) {
			log_error("%s", err_get());
			status = EXIT_FAIL;
			goto out;
		}
	}
	control_write_index(sc.cw, 0);
	policy_rt_init(&sc.rt, &lib, sc.cw->w, g);
	sc.n_policies = (uint32_t)lib.n;
	sc.n_switches = (int)n_switches;
	sc.write_ns = calloc((size_t)n_switches, sizeof(uint64_t));
	sc.force_ns = calloc((size_t)n_switches, sizeof(uint64_t));
	sc.force_tok = calloc((size_t)n_switches, sizeof(uint64_t));
	/* the plain store alone, amortized over a tight loop */
	uint64_t t0 = time_now_ns();
	for (int i = 0; i < 100000; i++)
		control_write_index(sc.cw, (uint32_t)i & 1);
	double store_ns = (double)(time_now_ns() - t0) / 100000;
	/* the clock's own cost, which every write_ns sample includes */
	uint64_t clk[1001];
	for (int i = 0; i < 1001; i++)
		clk[i] = time_now_ns();
	for (int i = 0; i < 1000; i++)
		clk[i] = clk[i + 1] - clk[i];
	uint64_t clock_ns = pct(clk, 1000, 0.5);
	control_write_index(sc.cw, 0);
	pthread_t th;
	pthread_create(&th, NULL, controller_main, &sc);
	uint64_t tokens = 0, t_dec = time_now_ns();
	for (uint64_t seed = 1; !atomic_load_explicit(&sc.done, memory_order_relaxed); seed++) {
		engine_params_t ep = {
			.prompt = "Once upon a time",
			.n_predict = 400,
			.sampler = {.temp = 0.8f, .top_p = 0.9f, .seed = seed},
			.before_token = sw_before_token,
			.on_text = sw_on_text,
			.user = &sc,
		};
		engine_result_t r;
		if (engine_generate(m, f, g, &ep, &r) < 0) {
			log_error("%s", err_get());
			atomic_store_explicit(&sc.done, true, memory_order_relaxed);
			status = EXIT_FAIL;
			break;
		}
		tokens += (uint64_t)(r.n_prompt + r.decode_steps);
		policy_rt_generation_end(&sc.rt, r.first_token_s, 0, 0);
		engine_result_free(&r);
	}
	double dec_s = (double)(time_now_ns() - t_dec) / 1e9;
	pthread_join(th, NULL);
	int n = sc.n_done;
	if (status == EXIT_OK && n < 1) {
		log_error("bench switch: no switch took force");
		status = EXIT_FAIL;
	}
	if (status == EXIT_OK) {
		uint64_t wmax = pct(sc.write_ns, n, 1), fmax = pct(sc.force_ns, n, 1),
			 tmax = pct(sc.force_tok, n, 1);
		printf("bench switch: switches %d cores %d policies %d tok_s %.0f "
		       "store_ns_amortized %.1f clock_ns %llu write_ns p50 %llu p99 %llu max %llu "
		       "in_force_tokens p50 %llu p99 %llu max %llu in_force_us p50 "
		       "%.1f p99 %.1f max %.1f\n",
		       n, n_cpus, lib.n, (double)tokens / dec_s, store_ns,
		       (unsigned long long)clock_ns,
		       (unsigned long long)pct(sc.write_ns, n, 0.5),
		       (unsigned long long)pct(sc.write_ns, n, 0.99),
		       (unsigned long long)wmax,
		       (unsigned long long)pct(sc.force_tok, n, 0.5),
		       (unsigned long long)pct(sc.force_tok, n, 0.99),
		       (unsigned long long)tmax,
		       (double)pct(sc.force_ns, n, 0.5) / 1e3,
		       (double)pct(sc.force_ns, n, 0.99) / 1e3, (double)fmax / 1e3);
		fflush(stdout);
		if (!log_quiet)
			fprintf(stderr, "(write_ns includes one clock read, clock_ns; "
					"in force = applied at a token boundary by the "
					"leader, tokens = boundaries from the write)\n");
	}
	free(sc.write_ns);
	free(sc.force_ns);
	free(sc.force_tok);
out:
	gang_free(g);
	forward_free(f);
	model_free(m);
	control_close(sc.cw);
	if (dir[0]) {
		if (!strcmp(model_path, synth_path))
			unlink(synth_path);
		if (!strcmp(control, cw_path))
			unlink(cw_path);
		rmdir(dir);
	}
	return status;
}
