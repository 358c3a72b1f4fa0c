/* controller: the oracle, the UCB1 bandit and the agent, and the loop of
 * `egang control` (controller.h). */
#include "policy/controller.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/stats.h"
#include "model/sampler.h"

void controller_snap_read(control_word_t *w, controller_snap_t *s)
{
#define LD(f) atomic_load_explicit(&w->f, memory_order_relaxed)
	/* relaxed: each field stands alone (control.h) */
	*s = (controller_snap_t){
		.generations = LD(generations), .ttft_p50_us = LD(ttft_p50_us),
		.ttft_p99_us = LD(ttft_p99_us), .decode_mtok_s = LD(decode_mtok_s),
		.index = atomic_load_explicit(control_index_of(w), memory_order_relaxed),
		.fallback = LD(fallback),
		.n_policies = LD(n_policies), .n_slots = LD(n_slots),
		.tenant_width = LD(tenant_width), .queue_depth = LD(queue_depth),
	};
#undef LD
}

const char *controller_kind_name(controller_kind_t k)
{
	static const char *const names[CONTROLLER_COUNT] = {
		[CONTROLLER_ORACLE] = "oracle",
		[CONTROLLER_BANDIT] = "bandit",
		[CONTROLLER_AGENT] = "agent",
	};
	return k < CONTROLLER_COUNT ? names[k] : "?";
}

/* ---- the oracle's schedule ---- */

static void skip_ws(const char **p)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
}

/* Adds a phase after checking it; -1 with err_set(what is wrong). */
static int phase_add(oracle_t *s, const policy_lib_t *lib, double a,
		     double b, const char *name)
{
	if (!(b > a))
		return err_set("the phase ends (%gs) before it starts (%gs)", b, a);
	if (s->n && a < s->ph[s->n - 1].end)
		return err_set("the phase starts at %gs, before the previous one "
			       "ends (%gs): phases must be in order and not "
			       "overlap", a, s->ph[s->n - 1].end);
	if (s->n == ORACLE_MAX_PHASES)
		return err_set("more than %d phases", ORACLE_MAX_PHASES);
	int idx = policy_lib_find(lib, name);
	if (idx < 0)
		return err_set("'%s' names no record (indices 0..%d; see `egang "
			       "policy list`)", name, lib->n - 1);
	s->ph[s->n++] = (oracle_phase_t){a, b, idx};
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

/* Seconds then an optional 's' then `sep` at *p; advances past sep. */
static int secs_then(const char **p, char sep, double *out)
{
	if (parse_secs(p, out) < 0)
		return -1;
	if (**p == 's')
		(*p)++;
	if (**p != sep)
		return -2;
	(*p)++;
	return 0;
}

/* One inline phase "START-END[s]:POLICY" at *p (phase k); advances *p to
 * the ',' or the end. Errors name the character position. */
static int inline_phase(oracle_t *s, const policy_lib_t *lib,
			const char *text, const char **pp, int k)
{
	const char *p = *pp, *item = p;
	double a, b;
	skip_ws(&p);
	int rc = secs_then(&p, '-', &a);
	if (rc < 0)
		return err_set("--oracle: at character %d (phase %d): %s",
			       (int)(p - text) + 1, k, rc == -1
			       ? "expected the start in seconds, as in 0-10s:latency"
			       : "expected '-' after the start");
	rc = secs_then(&p, ':', &b);
	if (rc < 0)
		return err_set("--oracle: at character %d (phase %d): %s",
			       (int)(p - text) + 1, k, rc == -1
			       ? "expected the end in seconds"
			       : "expected ':' and a policy after the end");
	const char *nm = p;
	while (*p && *p != ',')
		p++;
	char name[POLICY_NAME_MAX + 8];
	size_t len = (size_t)(p - nm);
	while (len && (nm[len - 1] == ' ' || nm[len - 1] == '\t'))
		len--;
	if (!len || len >= sizeof name)
		return err_set("--oracle: at character %d (phase %d): %s",
			       (int)(nm - text) + 1, k, !len ? "missing the policy"
			       : "the policy name is too long");
	memcpy(name, nm, len);
	name[len] = 0;
	*pp = p;
	if (phase_add(s, lib, a, b, name) < 0)
		return err_wrap("--oracle: at character %d (phase %d)",
				(int)(item - text) + 1, k);
	return 0;
}

static int parse_inline(oracle_t *s, const policy_lib_t *lib,
			const char *text)
{
	if (!*text)
		return err_set("--oracle: the schedule is empty");
	const char *p = text;
	for (int k = 1;; k++) {
		if (inline_phase(s, lib, text, &p, k) < 0)
			return -1;
		if (!*p)
			return 0;
		p++; /* ',' */
	}
}

/* One file line (comment already cut); 0 for a phase or a blank line. */
static int file_line(oracle_t *s, const policy_lib_t *lib, const char *path,
		     int line, char *l)
{
	char *f[4], *save = NULL;
	int nf = 0;
	for (char *t = strtok_r(l, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save))
		if (nf < 4)
			f[nf++] = t;
		else
			nf = 5;
	if (nf == 0)
		return 0;
	if (nf != 3)
		return err_set("%s:%d: expected START_S END_S POLICY", path, line);
	double a, b;
	if (secs_field(f[0], &a) < 0)
		return err_set("%s:%d: '%s' is not a start in seconds", path, line, f[0]);
	if (secs_field(f[1], &b) < 0)
		return err_set("%s:%d: '%s' is not an end in seconds", path, line, f[1]);
	if (phase_add(s, lib, a, b, f[2]) < 0)
		return err_wrap("%s:%d", path, line);
	return 0;
}

static int parse_file(oracle_t *s, const policy_lib_t *lib, const char *path)
{
	size_t len;
	char *text = file_read_all(path, &len);
	if (!text)
		return err_wrap("--oracle %s", path);
	int line = 0, rc = 0;
	for (char *cur = text; cur && rc == 0;) {
		char *nl = strchr(cur, '\n');
		if (nl)
			*nl = 0;
		line++;
		char *hash = strchr(cur, '#');
		if (hash)
			*hash = 0;
		rc = file_line(s, lib, path, line, cur);
		cur = nl ? nl + 1 : NULL;
	}
	free(text);
	if (rc == 0 && s->n == 0)
		rc = err_set("%s: no phases", path);
	return rc;
}

int oracle_parse(oracle_t *o, const policy_lib_t *lib, const char *arg)
{
	struct stat st;
	o->n = 0;
	if (stat(arg, &st) == 0 && S_ISREG(st.st_mode))
		return parse_file(o, lib, arg);
	if (strchr(arg, '/') && !strchr(arg, ':'))
		return err_set("--oracle %s: no such file", arg);
	return parse_inline(o, lib, arg);
}

/* The phase at t (t is the period's end). */
static void oracle_step(controller_t *c, double t, controller_decision_t *d)
{
	const oracle_t *o = &c->oracle;
	int k = -1;
	for (int i = 0; i < o->n; i++)
		if (t >= o->ph[i].start && t < o->ph[i].end)
			k = i;
	if (k < 0) {
		d->index = c->last;
		snprintf(d->reason, sizeof d->reason, "%s",
			 t < o->ph[0].start ? "before-schedule"
			 : t >= o->ph[o->n - 1].end ? "after-schedule" : "gap");
		return;
	}
	d->index = o->ph[k].index;
	snprintf(d->reason, sizeof d->reason, "phase:%d:%g-%gs:%s", k + 1,
		 o->ph[k].start, o->ph[k].end, c->cfg.lib->rec[d->index].name);
	d->decided = true;
}

/* ---- the bandit ---- */

int controller_read_units(const char *path, double *out)
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

static int bandit_init(bandit_t *b, const bandit_config_t *cfg)
{
	memset(b, 0, sizeof *b);
	b->cfg = *cfg;
	b->arm = -1;
	if (cfg->units_path && controller_read_units(cfg->units_path, &b->units_at) < 0)
		return err_set("--tenant-units %s: not readable as one number",
			       cfg->units_path);
	b->units_t = time_now_ns();
	rng_t rng;
	rng_seed(&rng, cfg->seed);
	for (int i = 0; i < cfg->n_arms; i++)
		b->order[i] = i;
	for (int i = cfg->n_arms - 1; i > 0; i--) { /* Fisher-Yates, seeded */
		int j = (int)(rng_next(&rng) % (uint64_t)(i + 1));
		int t = b->order[i];
		b->order[i] = b->order[j];
		b->order[j] = t;
	}
	return 0;
}

/* The reward in [0, 1] of the arm held, from telemetry s at now. */
static double bandit_reward(bandit_t *b, const controller_snap_t *s, uint64_t now)
{
	double ttft = (double)s->ttft_p50_us / 1e3;
	if (b->best_ttft == 0 || ttft < b->best_ttft)
		b->best_ttft = ttft;
	double r_ttft = b->best_ttft / ttft, r_ten;
	if (b->cfg.units_path) {
		double u = b->units_at, dt = (double)(now - b->units_t) / 1e9;
		if (controller_read_units(b->cfg.units_path, &u) < 0)
			u = b->units_at;
		double rate = dt > 0 && u >= b->units_at ? (u - b->units_at) / dt : 0;
		if (rate > b->best_rate)
			b->best_rate = rate;
		r_ten = b->best_rate > 0 ? rate / b->best_rate : 0;
		b->units_at = u;
	} else {
		uint32_t ns = s->n_slots ? s->n_slots : b->cfg.n_slots;
		r_ten = b->tw_n && ns ? b->tw_sum / b->tw_n / ns : 0;
		if (r_ten > 1)
			r_ten = 1;
	}
	return b->cfg.w_ttft * r_ttft + (1 - b->cfg.w_ttft) * r_ten;
}

/* UCB1: untried arms first (seeded order), then the highest mean +
 * sqrt(2 ln N / n); *score gets the winner's. */
static int bandit_pick(const bandit_t *b, double *score)
{
	uint64_t total = 0;
	for (int i = 0; i < b->cfg.n_arms; i++)
		total += b->pulls[i];
	int best = -1;
	double bs = -1;
	for (int j = 0; j < b->cfg.n_arms; j++) {
		int i = b->order[j];
		double sc = !b->pulls[i] ? INFINITY
			: b->sum[i] / (double)b->pulls[i] +
			  sqrt(2 * log((double)total) / (double)b->pulls[i]);
		if (best < 0 || sc > bs) {
			best = i;
			bs = sc;
		}
	}
	*score = bs;
	return best;
}

static void bandit_step(bandit_t *b, const controller_snap_t *s, uint64_t now,
			controller_decision_t *d)
{
	b->held++;
	if (b->arm >= 0 && b->held < b->cfg.hold) {
		d->index = b->arm;
		snprintf(d->reason, sizeof d->reason, "hold:%lld/%lld",
			 (long long)b->held, (long long)b->cfg.hold);
		return;
	}
	if (b->arm >= 0 && (s->generations <= b->gen0 || !s->ttft_p50_us)) {
		d->index = b->arm;
		d->skipped = true;
		snprintf(d->reason, sizeof d->reason, "skip:no-new-generation");
		return;
	}
	if (b->arm >= 0) { /* score the arm held */
		b->pulls[b->arm]++;
		b->sum[b->arm] += bandit_reward(b, s, now);
	}
	double bs;
	int best = bandit_pick(b, &bs);
	if (b->pulls[best])
		snprintf(d->reason, sizeof d->reason, "ucb:score=%.3f,mean=%.3f,n=%llu",
			 bs, b->sum[best] / (double)b->pulls[best],
			 (unsigned long long)b->pulls[best]);
	else
		snprintf(d->reason, sizeof d->reason, "ucb:untried");
	b->arm = best;
	d->index = best;
	d->decided = true;
	b->held = 0;
	b->gen0 = s->generations;
	b->tw_sum = 0;
	b->tw_n = 0;
	b->units_t = now;
}

/* ---- the agent ---- */

int controller_answer_digit(const char *piece)
{
	static const char *const spaces[] = {"", "\xe2\x96\x81", "\xc4\xa0"};
	for (size_t i = 0; i < EG_ARRAY_LEN(spaces); i++) {
		size_t n = strlen(spaces[i]);
		if (strncmp(piece, spaces[i], n))
			continue;
		const char *d = piece + n;
		if (d[0] >= '0' && d[0] <= '9' && !d[1])
			return d[0] - '0';
	}
	return -1;
}

/* Marks every token whose piece is an answer (controller_answer_digit);
 * a digit spelled by no piece falls back to its one-token encoding (a
 * byte piece). The vocabulary must spell all ten. */
static int agent_digits(agent_t *a, const tokenizer_t *tok, int32_t vocab)
{
	a->vocab = vocab;
	a->digit_of = malloc((size_t)vocab);
	if (!a->digit_of)
		return err_sys("agent: malloc");
	bool have[10] = {0};
	for (int32_t t = 0; t < vocab; t++) {
		const char *piece = tokenizer_piece(tok, t);
		int d = piece ? controller_answer_digit(piece) : -1;
		a->digit_of[t] = (int8_t)d;
		if (d >= 0)
			have[d] = true;
	}
	for (int d = 0; d <= 9; d++) {
		char s[2] = {(char)('0' + d), 0};
		int32_t one[4];
		if (!have[d] && tokenizer_encode(tok, s, 1, false, one, 4) == 1 &&
		    one[0] >= 0 && one[0] < vocab) {
			a->digit_of[one[0]] = (int8_t)d;
			have[d] = true;
		}
		if (!have[d])
			return err_set("the vocabulary has no token for the digit %d", d);
	}
	return 0;
}

/* The answer's grammar text into buf: root ::= "0" | " 0" | "1" | ...,
 * one alternative per distinct text of a token that spells an index <
 * n_valid, in the tokenizer's spelling (its decoded bytes, escaped). */
static int agent_grammar_text(const agent_t *a, const tokenizer_t *tok, int n_valid,
			      char *buf, size_t cap)
{
	size_t k = (size_t)snprintf(buf, cap, "root ::=");
	int alts = 0;
	for (int32_t t = 0; t < a->vocab; t++) {
		if (a->digit_of[t] < 0 || a->digit_of[t] >= n_valid)
			continue;
		char piece[64], alt[300];
		int n = tokenizer_decode(tok, -1, t, piece, sizeof piece);
		if (n <= 0 || n > 16)
			continue;
		size_t m = (size_t)snprintf(alt, sizeof alt, " \"");
		for (int i = 0; i < n; i++)
			m += (size_t)snprintf(alt + m, sizeof alt - m, "\\x%02X",
					      (unsigned char)piece[i]);
		m += (size_t)snprintf(alt + m, sizeof alt - m, "\"");
		if (strstr(buf, alt)) /* the same text from another token */
			continue;
		if (k + m + 3 >= cap)
			return err_set("agent: the answer grammar is too long");
		k += (size_t)snprintf(buf + k, cap - k, "%s%s", alts++ ? " |" : "", alt);
	}
	return alts ? 0 : err_set("agent: no token spells an index below %d", n_valid);
}

/* The digits, the answer's grammar for indices < n_valid, its matcher on
 * the vocabulary's trie. */
static int agent_init(agent_t *a, const tokenizer_t *tok, int32_t vocab, int n_valid)
{
	char text[4096];
	if (agent_digits(a, tok, vocab) < 0 ||
	    agent_grammar_text(a, tok, n_valid, text, sizeof text) < 0)
		return -1;
	a->grammar = grammar_parse(text);
	a->gvocab = a->grammar ? grammar_vocab_new(tok, vocab) : NULL;
	a->gstate = a->gvocab ? grammar_state_new(a->grammar, a->gvocab) : NULL;
	a->masked = malloc((size_t)vocab * sizeof *a->masked);
	if (!a->gstate || !a->masked)
		return a->masked ? err_wrap("agent") : err_sys("agent: malloc");
	return 0;
}

/* The prompt: the first n_valid records by name, the telemetry, the
 * question. */
static void agent_prompt(const controller_t *c, const controller_snap_t *s,
			 int n_valid, char *buf, size_t cap)
{
	int k = snprintf(buf, cap, "Policies:");
	for (int i = 0; i < n_valid; i++)
		k += snprintf(buf + k, cap - (size_t)k, "%s %d %s", i ? "," : "",
			      i, c->cfg.lib->rec[i].name);
	snprintf(buf + k, cap - (size_t)k,
		 ". Telemetry: ttft_p99_ms=%.3f, ttft_p50_ms=%.3f, queue=%u, "
		 "decode_tok_s=%.1f, tenant_width=%u, index=%u, fallback=%u. "
		 "Answer with one digit:",
		 (double)s->ttft_p99_us / 1e3, (double)s->ttft_p50_us / 1e3,
		 s->queue_depth, (double)s->decode_mtok_s / 1e3, s->tenant_width,
		 s->index, s->fallback);
}

/* The answer: the logits masked by the answer's grammar, then the
 * largest among the tokens that complete it (a space alone is a prefix,
 * not an answer), the lowest id on ties; the index its text spells.
 * *raw_id: the unconstrained argmax. -1 + err_get() when no token
 * completes the grammar. */
static int agent_choose(agent_t *a, const tokenizer_t *tok, const float *logits,
			int32_t *raw_id)
{
	*raw_id = sampler_argmax(logits, a->vocab);
	memcpy(a->masked, logits, (size_t)a->vocab * sizeof *logits);
	if (grammar_mask(a->gstate, a->masked) < 0)
		return -1;
	int32_t best = -1;
	for (int32_t t = 0; t < a->vocab; t++)
		if (a->masked[t] != -INFINITY && (best < 0 || a->masked[t] > a->masked[best]) &&
		    grammar_completes(a->gstate, t))
			best = t;
	char piece[64];
	int n = best < 0 ? 0 : tokenizer_decode(tok, -1, best, piece, sizeof piece);
	if (n <= 0)
		return err_set("agent: no token of the vocabulary answers the grammar");
	return piece[n - 1] - '0'; /* the grammar's texts end in the digit */
}

static int agent_step(controller_t *c, const controller_snap_t *s,
		      controller_decision_t *d)
{
	agent_t *a = &c->agent;
	int n_valid = c->cfg.n_arms < 10 ? c->cfg.n_arms : 10;
	char prompt[2048];
	agent_prompt(c, s, n_valid, prompt, sizeof prompt);
	const float *logits = c->cfg.logits(c->cfg.user, prompt);
	if (!logits)
		return -1;
	int32_t raw;
	int index = agent_choose(a, c->cfg.tok, logits, &raw);
	if (index < 0)
		return -1;
	/* the guard against a corrupted answer: the grammar admits only
	 * indices below n_valid, so this never moves one */
	d->index = index < n_valid ? index : 0;
	bool raw_ok = a->digit_of[raw] >= 0 && a->digit_of[raw] < n_valid;
	d->raw_invalid = !raw_ok;
	d->decided = true;
	snprintf(d->reason, sizeof d->reason, "agent:raw=%s(token %d)",
		 raw_ok ? "valid" : "invalid", raw);
	return 0;
}

/* ---- a controller ---- */

int controller_init(controller_t *c, const controller_config_t *cfg)
{
	memset(c, 0, sizeof *c);
	c->cfg = *cfg;
	c->last = -1;
	if (cfg->n_arms < 1 || cfg->n_arms > cfg->lib->n)
		return err_set("controller: %d arms for a library of %d",
			       cfg->n_arms, cfg->lib->n);
	switch (cfg->kind) {
	case CONTROLLER_ORACLE:
		return oracle_parse(&c->oracle, cfg->lib, cfg->schedule);
	case CONTROLLER_BANDIT: {
		bandit_config_t bc = cfg->bandit;
		bc.n_arms = cfg->n_arms;
		return bandit_init(&c->bandit, &bc);
	}
	case CONTROLLER_AGENT:
		return agent_init(&c->agent, cfg->tok, cfg->vocab,
				  cfg->n_arms < 10 ? cfg->n_arms : 10);
	case CONTROLLER_COUNT:
		break;
	}
	return err_set("controller: unknown kind %d", (int)cfg->kind);
}

void controller_free(controller_t *c)
{
	agent_t *a = &c->agent;
	free(a->digit_of);
	grammar_state_free(a->gstate);
	grammar_vocab_free(a->gvocab);
	grammar_free(a->grammar);
	free(a->masked);
	memset(a, 0, sizeof *a);
}

void controller_sample(controller_t *c, const controller_snap_t *s)
{
	if (c->cfg.kind != CONTROLLER_BANDIT)
		return;
	c->bandit.tw_sum += s->tenant_width;
	c->bandit.tw_n++;
}

int controller_step(controller_t *c, const controller_snap_t *s, double t,
		    uint64_t now, controller_decision_t *d)
{
	memset(d, 0, sizeof *d);
	d->index = -1;
	int rc = 0;
	switch (c->cfg.kind) {
	case CONTROLLER_ORACLE: oracle_step(c, t, d); break;
	case CONTROLLER_BANDIT: bandit_step(&c->bandit, s, now, d); break;
	case CONTROLLER_AGENT: rc = agent_step(c, s, d); break;
	case CONTROLLER_COUNT: break;
	}
	if (rc == 0 && d->index >= 0)
		c->last = d->index;
	return rc;
}

double controller_end(const controller_t *c)
{
	if (c->cfg.kind == CONTROLLER_ORACLE && c->oracle.n)
		return c->oracle.ph[c->oracle.n - 1].end;
	return INFINITY;
}

/* ---- the loop ---- */

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ull),
			      (long)(ns % 1000000000ull)};
	nanosleep(&ts, NULL); /* EINTR: a signal; the loop checks *stop */
}

/* Waits for the period ending at `next`, sampling the telemetry ten
 * times; false when *stop was set. */
static bool wait_period(controller_t *c, control_t *cw, uint64_t next,
			uint64_t period, volatile sig_atomic_t *stop)
{
	for (int k = 1; k <= 10 && !*stop; k++) {
		uint64_t at = next - period + period * (uint64_t)k / 10;
		uint64_t now = time_now_ns();
		if (at > now)
			sleep_ns(at - now);
		controller_snap_t s;
		controller_snap_read(cw->w, &s);
		controller_sample(c, &s);
	}
	return !*stop;
}

/* Decision times in ms, grown as needed (a failed growth drops samples). */
typedef struct ms_list {
	double *v;
	size_t n, cap;
} ms_list_t;

static void ms_add(ms_list_t *l, double ms)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 1024;
		double *nv = realloc(l->v, cap * sizeof *nv);
		if (!nv)
			return;
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n++] = ms;
}

int controller_run(controller_t *c, control_t *cw, int64_t period_ms,
		   double seconds, volatile sig_atomic_t *stop, FILE *lines,
		   controller_summary_t *sum)
{
	memset(sum, 0, sizeof *sum);
	ms_list_t dms = {0};
	int rc = 0;
	const uint64_t period = (uint64_t)period_ms * 1000000ull;
	const uint64_t t0 = time_now_ns();
	const double end_s = seconds > 0 ? seconds : controller_end(c);
	uint64_t next = t0;
	for (;;) {
		next += period;
		if (!wait_period(c, cw, next, period, stop))
			break;
		uint64_t now = time_now_ns();
		double t = (double)(now - t0) / 1e9;
		if (now > next + period)
			next = now; /* fell behind (a slow agent): no catch-up burst */
		controller_snap_t s;
		controller_snap_read(cw->w, &s);
		controller_decision_t d;
		int64_t last = c->last;
		if (controller_step(c, &s, t, now, &d) < 0) {
			rc = -1;
			break;
		}
		if (d.decided) {
			ms_add(&dms, (double)(time_now_ns() - now) / 1e6);
			sum->decisions++;
		}
		sum->skipped += d.skipped;
		sum->invalid_raw += d.raw_invalid;
		if (d.index >= 0) {
			control_write_index(cw, (uint32_t)d.index);
			sum->switches += last >= 0 && d.index != last;
		}
		if (lines) {
			fprintf(lines, "control t=%.3f index=%lld reason=%s\n", t,
				(long long)d.index, d.reason);
			fflush(lines);
		}
		if (t >= end_s)
			break;
	}
	sum->decision_ms_p50 = stats_quantile(dms.v, dms.n, 0.5);
	sum->decision_ms_p99 = stats_quantile(dms.v, dms.n, 0.99);
	free(dms.v);
	return rc;
}
