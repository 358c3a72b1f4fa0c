/* egang control: a controller process. Every period it reads the control
 * word's telemetry (src/policy/control.h) and writes a policy index chosen
 * by one of three controllers:
 *
 *  --oracle SCHEDULE  follows a given phase schedule ("0-10s:latency,..." or
 *                     a file of "START_S END_S POLICY" lines);
 *  --bandit           UCB1 over the library's records (the arms); reward
 *                     r = w * r_ttft + (1 - w) * r_tenant in [0, 1]:
 *                       r_ttft   = (smallest TTFT p50 seen so far) / (this
 *                                  arm's TTFT p50; the leader's window is
 *                                  reset when a record takes force, so it is
 *                                  the arm's own);
 *                       r_tenant = with --tenant-units FILE (a number, the
 *                                  tenant's cumulative work units, rewritten
 *                                  by the tenant): the units/s during the
 *                                  hold over the best rate seen so far;
 *                                  otherwise the telemetry's tenant_width /
 *                                  n_slots averaged over ten samples a period
 *                                  (the share of the gang's cores left to
 *                                  tenants);
 *                     a choice is held at least --hold periods and only
 *                     scored when the leader ended a generation since it was
 *                     written (periods without one carry no information:
 *                     skipped). Deterministic given --seed (the order in
 *                     which untried arms are tried first);
 *  --agent -m MODEL   asks an egang model (serial, in-process) for one digit:
 *                     decoding is constrained to the digit tokens of valid
 *                     indices; the unconstrained argmax is counted in
 *                     invalid_raw when it is not a valid index.
 *
 * Output: one "control t=... index=N reason=..." line a period (stdout,
 * unless -q) and one "control summary: ..." line at the end (always).
 * SIGINT/SIGTERM end the run cleanly with the summary. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/sampler.h"
#include "model/tokenizer.h"
#include "policy/control.h"
#include "policy/policy.h"

static const char control_help[] =
	"usage: egang control --control PATH (--oracle SCHEDULE | --bandit |\n"
	"                     --agent -m MODEL [-z TOK]) [options]\n"
	"\n"
	"A controller: every period it reads the control word's telemetry and\n"
	"writes a policy index (see `egang policy --help`).\n"
	"\n"
	"      --control PATH     the control word file (required; created 0600\n"
	"                         if absent, as `egang policy set` does)\n"
	"      --oracle SCHEDULE  follow phases: \"0-10s:latency,10-20s:2\" or a\n"
	"                         file of \"START_S END_S POLICY\" lines (POLICY:\n"
	"                         a name or an index; '#' comments). Without\n"
	"                         --seconds it ends at the last phase's end\n"
	"      --bandit           UCB1 over the library's records. Reward in\n"
	"                         [0,1]: w*r_ttft + (1-w)*r_tenant, r_ttft = best\n"
	"                         TTFT p50 seen / the arm's TTFT p50, r_tenant =\n"
	"                         tenant units/s / best rate seen (--tenant-units)\n"
	"                         or the mean tenant_width / n_slots (telemetry).\n"
	"                         Periods without a new generation are skipped\n"
	"      --agent            ask a model (-m) for one digit; decoding is\n"
	"                         constrained to valid indices (at most 0..9)\n"
	"  -m, --model PATH       the agent's model (GGUF or llama2.c)\n"
	"  -z, --tokenizer PATH   tokenizer.bin for a llama2.c checkpoint\n"
	"      --period-ms N      the period (default 100; 1..60000)\n"
	"      --seconds S        run this long (default: until SIGINT/SIGTERM;\n"
	"                         oracle: until the schedule ends)\n"
	"      --hold N           bandit: periods a choice is held (default 1)\n"
	"      --ttft-weight W    bandit: weight of r_ttft (default 0.5, 0..1)\n"
	"      --tenant-units FILE  bandit: a file holding the tenant's\n"
	"                         cumulative work units (one number)\n"
	"      --seed N           bandit: order of the first tries (default 1)\n"
	"      --policies FILE    a user library appended to the built-ins\n"
	"      --cores LIST       the gang's CPUs (use the server's --cores)\n"
	"  -q, --quiet            no per-period lines (the summary stays)\n"
	"  -h, --help             this text\n";

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* ---- telemetry ---- */
typedef struct snap {
	uint64_t generations, ttft_p50_us, ttft_p99_us, decode_mtok_s;
	uint32_t index, effective, fallback, n_policies, n_slots, gang_width,
		tenant_width, queue_depth;
} snap_t;

static void snap_read(control_word_t *w, snap_t *s)
{
#define LD(f) atomic_load_explicit(&w->f, memory_order_relaxed)
	/* relaxed: each field stands alone (control.h) */
	s->generations = LD(generations);
	s->ttft_p50_us = LD(ttft_p50_us);
	s->ttft_p99_us = LD(ttft_p99_us);
	s->decode_mtok_s = LD(decode_mtok_s);
	s->index = LD(index);
	s->effective = LD(effective);
	s->fallback = LD(fallback);
	s->n_policies = LD(n_policies);
	s->n_slots = LD(n_slots);
	s->gang_width = LD(gang_width);
	s->tenant_width = LD(tenant_width);
	s->queue_depth = LD(queue_depth);
#undef LD
}

/* ---- the oracle's schedule ---- */
#define MAX_PHASES 256

typedef struct phase {
	double start, end;
	int index;
} phase_t;

typedef struct schedule {
	phase_t ph[MAX_PHASES];
	int n;
} schedule_t;

static void skip_ws(const char **p)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
}

/* Adds a phase after checking it; -1 with err_set(what is wrong). */
static int phase_add(schedule_t *s, const policy_lib_t *lib, double a,
		     double b, const char *name)
{
	if (!(b > a))
		return err_set("the phase ends (%gs) before it starts (%gs)", b, a);
	if (s->n && a < s->ph[s->n - 1].end)
		return err_set("the phase starts at %gs, before the previous one "
			       "ends (%gs): phases must be in order and not "
			       "overlap", a, s->ph[s->n - 1].end);
	if (s->n == MAX_PHASES)
		return err_set("more than %d phases", MAX_PHASES);
	int idx = policy_lib_find(lib, name);
	if (idx < 0)
		return err_set("'%s' names no record (indices 0..%d; see `egang "
			       "policy list`)", name, lib->n - 1);
	s->ph[s->n++] = (phase_t){a, b, idx};
	return 0;
}

/* A number of seconds at *p (no sign, finite); advances *p. */
static int parse_secs(const char **p, double *out)
{
	if (!((**p >= '0' && **p <= '9') || **p == '.'))
		return -1;
	char *end;
	errno = 0;
	double v = strtod(*p, &end);
	if (end == *p || errno || !isfinite(v) || v < 0)
		return -1;
	*p = end;
	*out = v;
	return 0;
}

/* A whole field "N" or "Ns". */
static int secs_field(const char *p, double *out)
{
	if (parse_secs(&p, out) < 0)
		return -1;
	if (*p == 's')
		p++;
	return *p ? -1 : 0;
}

/* "START-END[s]:POLICY[,...]"; errors name the character position. */
static int schedule_parse_inline(schedule_t *s, const policy_lib_t *lib,
				 const char *text)
{
	const char *p = text;
	int k = 0;
	if (!*text)
		return err_set("--oracle: the schedule is empty");
	for (;;) {
		k++;
		const char *item = p;
		double a, b;
		skip_ws(&p);
		if (parse_secs(&p, &a) < 0)
			return err_set("--oracle: at character %d (phase %d): "
				       "expected the start in seconds, as in "
				       "0-10s:latency", (int)(p - text) + 1, k);
		if (*p == 's')
			p++;
		if (*p != '-')
			return err_set("--oracle: at character %d (phase %d): "
				       "expected '-' after the start",
				       (int)(p - text) + 1, k);
		p++;
		if (parse_secs(&p, &b) < 0)
			return err_set("--oracle: at character %d (phase %d): "
				       "expected the end in seconds",
				       (int)(p - text) + 1, k);
		if (*p == 's')
			p++;
		if (*p != ':')
			return err_set("--oracle: at character %d (phase %d): "
				       "expected ':' and a policy after the end",
				       (int)(p - text) + 1, k);
		p++;
		const char *nm = p;
		while (*p && *p != ',')
			p++;
		char name[POLICY_NAME_MAX + 8];
		size_t len = (size_t)(p - nm);
		while (len && (nm[len - 1] == ' ' || nm[len - 1] == '\t'))
			len--;
		if (!len)
			return err_set("--oracle: at character %d (phase %d): "
				       "missing the policy", (int)(nm - text) + 1, k);
		if (len >= sizeof name)
			return err_set("--oracle: at character %d (phase %d): the "
				       "policy name is too long",
				       (int)(nm - text) + 1, k);
		memcpy(name, nm, len);
		name[len] = 0;
		if (phase_add(s, lib, a, b, name) < 0)
			return err_wrap("--oracle: at character %d (phase %d)",
					(int)(item - text) + 1, k);
		if (!*p)
			return 0;
		p++; /* ',' */
	}
}

/* Lines "START_S END_S POLICY"; errors "FILE:LINE: ...". */
static int schedule_parse_file(schedule_t *s, const policy_lib_t *lib,
			       const char *path)
{
	size_t len;
	char *text = file_read_all(path, &len);
	if (!text)
		return err_wrap("--oracle %s", path);
	int line = 0, rc = 0;
	char *save = NULL;
	char *cur = text;
	while (cur && rc == 0) {
		char *nl = strchr(cur, '\n');
		if (nl)
			*nl = 0;
		line++;
		char *l = cur;
		cur = nl ? nl + 1 : NULL;
		char *hash = strchr(l, '#');
		if (hash)
			*hash = 0;
		char *f[4];
		int nf = 0;
		for (char *t = strtok_r(l, " \t\r", &save); t;
		     t = strtok_r(NULL, " \t\r", &save))
			if (nf < 4)
				f[nf++] = t;
			else
				nf = 5;
		if (nf == 0)
			continue;
		if (nf != 3) {
			rc = err_set("%s:%d: expected START_S END_S POLICY", path, line);
			break;
		}
		double a, b;
		if (secs_field(f[0], &a) < 0) {
			rc = err_set("%s:%d: '%s' is not a start in seconds", path,
				     line, f[0]);
			break;
		}
		if (secs_field(f[1], &b) < 0) {
			rc = err_set("%s:%d: '%s' is not an end in seconds", path,
				     line, f[1]);
			break;
		}
		if (phase_add(s, lib, a, b, f[2]) < 0)
			rc = err_wrap("%s:%d", path, line);
	}
	free(text);
	if (rc == 0 && s->n == 0)
		rc = err_set("%s: no phases", path);
	return rc;
}

static int schedule_parse(schedule_t *s, const policy_lib_t *lib,
			  const char *arg)
{
	struct stat st;
	s->n = 0;
	if (stat(arg, &st) == 0 && S_ISREG(st.st_mode))
		return schedule_parse_file(s, lib, arg);
	if (strchr(arg, '/') && !strchr(arg, ':'))
		return err_set("--oracle %s: no such file", arg);
	return schedule_parse_inline(s, lib, arg);
}

/* ---- the agent ---- */
typedef struct agent {
	model_t *m;
	forward_t *f;
	int32_t vocab;
	int8_t *digit_of; /* (vocab) the digit a token spells, -1 if none */
	int32_t *ids;
	int32_t ctx;
} agent_t;

static void agent_mark(agent_t *a, int32_t id, int d)
{
	if (id >= 0 && id < a->vocab)
		a->digit_of[id] = (int8_t)d;
}

static int agent_init(agent_t *a, const char *model, const char *tok)
{
	memset(a, 0, sizeof *a);
	a->m = model_load(model, tok);
	if (!a->m)
		return -1;
	a->ctx = a->m->cfg.ctx > 1024 ? 1024 : a->m->cfg.ctx;
	a->f = forward_new(a->m, a->ctx, 0);
	if (!a->f)
		return -1;
	a->vocab = a->m->cfg.vocab_size;
	a->digit_of = malloc((size_t)a->vocab);
	a->ids = malloc((size_t)(a->ctx + 8) * sizeof *a->ids);
	if (!a->digit_of || !a->ids)
		return err_set("out of memory");
	memset(a->digit_of, -1, (size_t)a->vocab);
	int found = 0;
	for (int d = 0; d <= 9; d++) {
		/* the bare piece, and the piece after a space in each
		 * vocabulary's spelling (U+2581 llama, U+0120 gpt2) */
		char s[8];
		snprintf(s, sizeof s, "%d", d);
		int32_t id = tokenizer_find(a->m->tok, s);
		found += id >= 0;
		agent_mark(a, id, d);
		snprintf(s, sizeof s, "\xe2\x96\x81%d", d);
		agent_mark(a, tokenizer_find(a->m->tok, s), d);
		snprintf(s, sizeof s, "\xc4\xa0%d", d);
		agent_mark(a, tokenizer_find(a->m->tok, s), d);
		if (id < 0) {
			int32_t one[4];
			int64_t n = tokenizer_encode(a->m->tok, s + 2, 1, false, one, 4);
			if (n == 1) {
				agent_mark(a, one[0], d);
				found++;
			}
		}
	}
	if (found < 10)
		return err_set("%s: the vocabulary has no token for some digit "
			       "0..9", model);
	return 0;
}

static void agent_free(agent_t *a)
{
	free(a->digit_of);
	free(a->ids);
	if (a->f)
		forward_free(a->f);
	if (a->m)
		model_free(a->m);
}

/* One decision: the constrained argmax over digits < n_valid; *raw_ok is
 * whether the unconstrained argmax was a valid index too. -1 on error. */
static int agent_decide(agent_t *a, const char *prompt, int n_valid,
			bool *raw_ok, int *raw_id)
{
	int64_t n = tokenizer_encode(a->m->tok, prompt, strlen(prompt), true,
				     a->ids, a->ctx);
	if (n < 0)
		return err_set("the prompt could not be encoded");
	const int32_t *ids = a->ids;
	if (n > a->ctx) /* keep the end of the prompt (the question) */
		return err_set("the prompt (%lld tokens) exceeds the context %d",
			       (long long)n, a->ctx);
	float *logits = NULL;
	for (int64_t i = 0; i < n; i++)
		if (!(logits = forward_token_serial(a->f, ids[i], (int32_t)i)))
			return err_set("forward failed at position %lld", (long long)i);
	int32_t raw = sampler_argmax(logits, a->vocab);
	*raw_id = raw;
	*raw_ok = a->digit_of[raw] >= 0 && a->digit_of[raw] < n_valid;
	int best = -1;
	float bv = -INFINITY;
	for (int32_t t = 0; t < a->vocab; t++) {
		int d = a->digit_of[t];
		float v = d >= 0 && d < n_valid ? logits[t] : -INFINITY;
		if (best < 0 || v > bv) {
			if (d >= 0 && d < n_valid) {
				best = d;
				bv = v;
			}
		}
	}
	return best < 0 ? 0 : best;
}

/* ---- helpers ---- */
static int cmp_d(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

static double quantile(double *v, int n, double q)
{
	if (!n)
		return 0;
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	int i = (int)(q * n + 0.999999) - 1;
	return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ull),
			      (long)(ns % 1000000000ull)};
	nanosleep(&ts, NULL); /* EINTR: a signal; the loop checks stop_flag */
}

/* The tenant's cumulative units from FILE; -1 when unreadable. */
static int read_units(const char *path, double *out)
{
	size_t len;
	char *t = file_read_all(path, &len);
	if (!t)
		return -1;
	char *end;
	errno = 0;
	double v = strtod(t, &end);
	int ok = end != t && !errno && isfinite(v) && v >= 0;
	free(t);
	if (!ok)
		return -1;
	*out = v;
	return 0;
}

enum { MODE_NONE, MODE_ORACLE, MODE_BANDIT, MODE_AGENT };

int cmd_control(int argc, char **argv)
{
	static const struct option opts[] = {
		{"control", required_argument, 0, 'c'},
		{"oracle", required_argument, 0, 'O'},
		{"bandit", no_argument, 0, 'B'},
		{"agent", no_argument, 0, 'A'},
		{"model", required_argument, 0, 'm'},
		{"tokenizer", required_argument, 0, 'z'},
		{"period-ms", required_argument, 0, 'p'},
		{"seconds", required_argument, 0, 's'},
		{"hold", required_argument, 0, 'H'},
		{"ttft-weight", required_argument, 0, 'w'},
		{"tenant-units", required_argument, 0, 'U'},
		{"seed", required_argument, 0, 'S'},
		{"policies", required_argument, 0, 'P'},
		{"cores", required_argument, 0, 'C'},
		{"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	const char *control = NULL, *oracle = NULL, *model = NULL, *tok = NULL,
		   *units_path = NULL, *file = NULL, *cores = NULL;
	int mode = MODE_NONE, n_modes = 0;
	int64_t period_ms = 100, hold = 1, seed = 1;
	double seconds = 0, w_ttft = 0.5;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "m:z:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'c': control = optarg; break;
		case 'O': oracle = optarg; mode = MODE_ORACLE; n_modes++; break;
		case 'B': mode = MODE_BANDIT; n_modes++; break;
		case 'A': mode = MODE_AGENT; n_modes++; break;
		case 'm': model = optarg; break;
		case 'z': tok = optarg; break;
		case 'p':
			if (cli_int("--period-ms", optarg, 1, 60000, &period_ms) < 0)
				return EXIT_INPUT;
			break;
		case 's':
			if (cli_float("--seconds", optarg, 0.001, 1e7, &seconds) < 0)
				return EXIT_INPUT;
			break;
		case 'H':
			if (cli_int("--hold", optarg, 1, 1000000, &hold) < 0)
				return EXIT_INPUT;
			break;
		case 'w':
			if (cli_float("--ttft-weight", optarg, 0, 1, &w_ttft) < 0)
				return EXIT_INPUT;
			break;
		case 'U': units_path = optarg; break;
		case 'S':
			if (cli_int("--seed", optarg, 0, INT64_MAX, &seed) < 0)
				return EXIT_INPUT;
			break;
		case 'P': file = optarg; break;
		case 'C': cores = optarg; break;
		case 'q': log_quiet = true; break;
		case 'h': fputs(control_help, stdout); return EXIT_OK;
		default: return cli_usage_error("control", argv[optind - 1]);
		}
	}
	if (cli_no_more_args("control", argc, argv) < 0)
		return EXIT_INPUT;
	if (!control) {
		log_error("control: missing --control PATH (the control word "
			  "file the server uses)");
		return EXIT_INPUT;
	}
	if (n_modes != 1) {
		log_error("control: %s", n_modes ? "give only one of --oracle, "
			  "--bandit, --agent" : "missing --oracle SCHEDULE, "
			  "--bandit or --agent");
		return EXIT_INPUT;
	}
	if (mode == MODE_AGENT && !model) {
		log_error("control --agent: missing -m MODEL");
		return EXIT_INPUT;
	}
	if (mode != MODE_AGENT && (model || tok)) {
		log_error("control: -m/-z are only for --agent");
		return EXIT_INPUT;
	}
	if (mode != MODE_BANDIT && units_path) {
		log_error("control: --tenant-units is only for --bandit");
		return EXIT_INPUT;
	}
	static policy_lib_t lib;
	int cpus[GANG_MAX_SLOTS];
	int n_cpus = cli_cores(cores, cpus, GANG_MAX_SLOTS);
	if (n_cpus < 0) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	policy_lib_builtin(&lib, n_cpus);
	if (file && policy_lib_load(&lib, file) < 0) {
		log_error("--policies %s", err_get());
		return EXIT_INPUT;
	}
	static schedule_t sched;
	if (mode == MODE_ORACLE && schedule_parse(&sched, &lib, oracle) < 0) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	double units0 = 0;
	if (units_path && read_units(units_path, &units0) < 0) {
		log_error("--tenant-units %s: not readable as one number",
			  units_path);
		return EXIT_INPUT;
	}
	control_t *cw = control_open(control, true);
	if (!cw) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	/* the arms: the library, cut to the running leader's if it is smaller */
	snap_t sn;
	snap_read(cw->w, &sn);
	int n_arms = lib.n;
	if (sn.n_policies && (int)sn.n_policies != lib.n) {
		log_info("control: the leader's library has %u records, this one "
			 "%d (does --policies/--cores match the server's?); using "
			 "the first %d", sn.n_policies, lib.n,
			 sn.n_policies < (uint32_t)lib.n ? (int)sn.n_policies : lib.n);
		if (sn.n_policies < (uint32_t)lib.n)
			n_arms = (int)sn.n_policies;
	}
	static agent_t ag;
	int n_valid_digit = n_arms < 10 ? n_arms : 10;
	if (mode == MODE_AGENT && agent_init(&ag, model, tok) < 0) {
		log_error("control --agent: %s", err_get());
		agent_free(&ag);
		control_close(cw);
		return EXIT_INPUT;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal; /* no SA_RESTART: nanosleep returns */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	/* bandit state */
	uint64_t *pulls = calloc((size_t)n_arms, sizeof *pulls);
	double *sum = calloc((size_t)n_arms, sizeof *sum);
	int *order = malloc((size_t)n_arms * sizeof *order);
	size_t dcap = 1024;
	double *dms = malloc(dcap * sizeof *dms);
	if (!pulls || !sum || !order || !dms) {
		log_error("control: out of memory");
		return EXIT_FAIL;
	}
	rng_t rng;
	rng_seed(&rng, (uint64_t)seed);
	for (int i = 0; i < n_arms; i++)
		order[i] = i;
	for (int i = n_arms - 1; i > 0; i--) { /* Fisher-Yates, seeded */
		int j = (int)(rng_next(&rng) % (uint64_t)(i + 1));
		int t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	int arm = -1;           /* the arm being held */
	int64_t held = 0;       /* periods it has been held */
	uint64_t gen0 = 0;      /* generations when it was written */
	double tw_sum = 0;      /* tenant_width samples during the hold */
	int tw_n = 0;
	double units_at = units0, best_rate = 0, best_ttft = 0;
	uint64_t units_t = time_now_ns();

	uint64_t decisions = 0, switches = 0, invalid_raw = 0, skipped = 0;
	uint64_t n_dms = 0;
	int64_t last = -1;
	int rc = EXIT_OK;
	const uint64_t period = (uint64_t)period_ms * 1000000ull;
	const uint64_t t0 = time_now_ns();
	double end_s = seconds > 0 ? seconds
				   : mode == MODE_ORACLE ? sched.ph[sched.n - 1].end
				   : INFINITY;
	uint64_t next = t0;
	while (!stop_flag) {
		/* wait for the period's end, sampling tenant_width ten times */
		next += period;
		for (int k = 1; k <= 10 && !stop_flag; k++) {
			uint64_t at = next - period + period * (uint64_t)k / 10;
			uint64_t now = time_now_ns();
			if (at > now)
				sleep_ns(at - now);
			if (mode == MODE_BANDIT) {
				tw_sum += atomic_load_explicit(&cw->w->tenant_width,
							      memory_order_relaxed);
				tw_n++;
			}
		}
		if (stop_flag)
			break;
		uint64_t now = time_now_ns();
		double t = (double)(now - t0) / 1e9;
		if (now > next + period)
			next = now; /* fell behind (a slow agent): no catch-up burst */
		snap_read(cw->w, &sn);
		char reason[160];
		int64_t idx = -1;
		uint64_t d0 = time_now_ns();
		bool decided = false;
		if (mode == MODE_ORACLE) {
			/* the phase at t (t is this period's end) */
			int k = -1;
			for (int i = 0; i < sched.n; i++)
				if (t >= sched.ph[i].start && t < sched.ph[i].end)
					k = i;
			if (k >= 0) {
				idx = sched.ph[k].index;
				snprintf(reason, sizeof reason, "phase:%d:%g-%gs:%s",
					 k + 1, sched.ph[k].start, sched.ph[k].end,
					 lib.rec[idx].name);
				decided = true;
			} else {
				idx = last;
				snprintf(reason, sizeof reason, "%s",
					 t < sched.ph[0].start ? "before-schedule"
					 : t >= sched.ph[sched.n - 1].end ? "after-schedule"
					 : "gap");
			}
		} else if (mode == MODE_BANDIT) {
			held++;
			if (arm >= 0 && held < hold) {
				idx = arm;
				snprintf(reason, sizeof reason, "hold:%lld/%lld",
					 (long long)held, (long long)hold);
			} else if (arm >= 0 && (sn.generations <= gen0 ||
						!sn.ttft_p50_us)) {
				idx = arm;
				skipped++;
				snprintf(reason, sizeof reason, "skip:no-new-generation");
			} else {
				if (arm >= 0) { /* score the arm held */
					double ttft = (double)sn.ttft_p50_us / 1e3;
					if (best_ttft == 0 || ttft < best_ttft)
						best_ttft = ttft;
					double r_ttft = best_ttft / ttft, r_ten;
					if (units_path) {
						double u = units_at, dt = (double)(now - units_t) / 1e9;
						if (read_units(units_path, &u) < 0)
							u = units_at;
						double rate = dt > 0 && u >= units_at ? (u - units_at) / dt : 0;
						if (rate > best_rate)
							best_rate = rate;
						r_ten = best_rate > 0 ? rate / best_rate : 0;
						units_at = u;
					} else {
						uint32_t ns = sn.n_slots ? sn.n_slots : (uint32_t)lib.n_slots;
						r_ten = tw_n ? tw_sum / tw_n / ns : 0;
						if (r_ten > 1)
							r_ten = 1;
					}
					double r = w_ttft * r_ttft + (1 - w_ttft) * r_ten;
					pulls[arm]++;
					sum[arm] += r;
				}
				/* UCB1: untried arms first (seeded order), then the
				 * highest mean + sqrt(2 ln N / n) */
				uint64_t total = 0;
				for (int i = 0; i < n_arms; i++)
					total += pulls[i];
				int best = -1;
				double bs = -1;
				for (int j = 0; j < n_arms; j++) {
					int i = order[j];
					double sc = !pulls[i] ? INFINITY
						: sum[i] / (double)pulls[i] +
						  sqrt(2 * log((double)total) / (double)pulls[i]);
					if (best < 0 || sc > bs) {
						best = i;
						bs = sc;
					}
				}
				if (pulls[best])
					snprintf(reason, sizeof reason,
						 "ucb:score=%.3f,mean=%.3f,n=%llu", bs,
						 sum[best] / (double)pulls[best],
						 (unsigned long long)pulls[best]);
				else
					snprintf(reason, sizeof reason, "ucb:untried");
				arm = best;
				idx = arm;
				held = 0;
				gen0 = sn.generations;
				tw_sum = 0;
				tw_n = 0;
				units_t = now;
				decided = true;
			}
		} else {
			char prompt[2048];
			int k = snprintf(prompt, sizeof prompt, "Policies:");
			for (int i = 0; i < n_valid_digit; i++)
				k += snprintf(prompt + k, sizeof prompt - (size_t)k,
					      "%s %d %s", i ? "," : "", i,
					      lib.rec[i].name);
			snprintf(prompt + k, sizeof prompt - (size_t)k,
				 ". Telemetry: ttft_p99_ms=%.3f, ttft_p50_ms=%.3f, "
				 "queue=%u, decode_tok_s=%.1f, tenant_width=%u, "
				 "index=%u, fallback=%u. Answer with one digit:",
				 (double)sn.ttft_p99_us / 1e3,
				 (double)sn.ttft_p50_us / 1e3, sn.queue_depth,
				 (double)sn.decode_mtok_s / 1e3, sn.tenant_width,
				 sn.index, sn.fallback);
			bool raw_ok = false;
			int raw_id = -1;
			int d = agent_decide(&ag, prompt, n_valid_digit, &raw_ok, &raw_id);
			if (d < 0) {
				log_error("control --agent: %s", err_get());
				rc = EXIT_FAIL;
				break;
			}
			invalid_raw += !raw_ok;
			idx = d;
			snprintf(reason, sizeof reason, "agent:raw=%s(token %d)",
				 raw_ok ? "valid" : "invalid", raw_id);
			decided = true;
		}
		if (decided) {
			double ms = (double)(time_now_ns() - d0) / 1e6;
			if (n_dms == dcap) {
				double *nd = realloc(dms, 2 * dcap * sizeof *dms);
				if (nd) {
					dms = nd;
					dcap *= 2;
				}
			}
			if (n_dms < dcap)
				dms[n_dms++] = ms;
			decisions++;
		}
		if (idx >= 0) {
			control_write_index(cw, (uint32_t)idx);
			if (last >= 0 && idx != last)
				switches++;
			last = idx;
		}
		if (!log_quiet) {
			printf("control t=%.3f index=%lld reason=%s\n", t,
			       (long long)idx, reason);
			fflush(stdout);
		}
		if (t >= end_s)
			break;
	}
	printf("control summary: decisions=%llu, switches=%llu, invalid_raw=%llu, "
	       "decision_ms p50=%.3f p99=%.3f, skipped=%llu, mode=%s\n",
	       (unsigned long long)decisions, (unsigned long long)switches,
	       (unsigned long long)invalid_raw, quantile(dms, (int)n_dms, 0.5),
	       quantile(dms, (int)n_dms, 0.99), (unsigned long long)skipped,
	       mode == MODE_ORACLE ? "oracle" : mode == MODE_BANDIT ? "bandit"
							      : "agent");
	fflush(stdout);
	free(pulls);
	free(sum);
	free(order);
	free(dms);
	if (mode == MODE_AGENT)
		agent_free(&ag);
	control_close(cw);
	return rc;
}
