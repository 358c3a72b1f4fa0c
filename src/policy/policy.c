/* policy: requested masks per token, and the online knee (policy.h). */
#include "policy/policy.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define KNEE_EXPLORE_EVERY 16
#define KNEE_ALPHA 0.2
#define KNEE_WARM 4 /* samples per width before the knee is trusted */
#define KNEE_TOLERANCE 0.95

static uint32_t first_slots(int w)
{
	return w >= 32 ? 0xffffffffu : (1u << w) - 1;
}

void knee_init(knee_state_t *k, int n_slots)
{
	memset(k, 0, sizeof *k);
	k->knee = n_slots;
	k->batch = 1;
	k->rng = 0x9e3779b97f4a7c15ull;
	k->tolerance = KNEE_TOLERANCE;
}

int knee_table_set(knee_table_t *t, int batch, int knee, int n_slots)
{
	if (batch < 1)
		return err_set("batch %d is not a batch size (>= 1)", batch);
	if (knee < 1 || knee > n_slots)
		return err_set("knee %d at batch %d is out of range [1, %d]", knee,
			       batch, n_slots);
	int i = 0;
	while (i < t->n && t->batch[i] < batch)
		i++;
	if (i < t->n && t->batch[i] == batch) {
		t->knee[i] = knee;
		return 0;
	}
	if (t->n == KNEE_TABLE_MAX)
		return err_set("more than %d batch sizes", KNEE_TABLE_MAX);
	memmove(&t->batch[i + 1], &t->batch[i], (size_t)(t->n - i) * sizeof *t->batch);
	memmove(&t->knee[i + 1], &t->knee[i], (size_t)(t->n - i) * sizeof *t->knee);
	t->batch[i] = batch;
	t->knee[i] = knee;
	t->n++;
	return 0;
}

int knee_table_lookup(const knee_table_t *t, int batch)
{
	if (t->n < 1 || batch < 1)
		return 0;
	int i = 0;
	while (i + 1 < t->n && t->batch[i + 1] <= batch)
		i++;
	return t->knee[i];
}

int knee_table_parse(knee_table_t *t, const char *s, int n_slots)
{
	knee_table_t out = {0};
	const char *p = s;
	if (!*p)
		return err_set("'' is not a list of BATCH:KNEE");
	while (*p) {
		char *end;
		errno = 0;
		long b = strtol(p, &end, 10);
		long k = 0;
		bool ok = end != p && *end == ':' && !errno && b >= 1 && b <= 1 << 20;
		if (ok) {
			const char *q = end + 1;
			k = strtol(q, &end, 10);
			ok = end != q && (*end == ',' || !*end) && !errno;
		}
		if (!ok)
			return err_set("'%s': entry %d is not BATCH:KNEE (batch 1..%d)", s,
				       out.n + 1, 1 << 20);
		if (out.n && b <= out.batch[out.n - 1])
			return err_set("'%s': batch %ld does not follow %d (increasing)", s,
				       b, out.batch[out.n - 1]);
		if (knee_table_set(&out, (int)b, (int)k, n_slots) < 0)
			return err_wrap("'%s'", s);
		p = *end ? end + 1 : end;
		if (*end && !*p)
			return err_set("'%s': empty entry at the end", s);
	}
	*t = out;
	return 0;
}

char *knee_table_format(const knee_table_t *t, char *buf, size_t cap)
{
	size_t len = 0;
	buf[0] = '\0';
	for (int i = 0; i < t->n && len < cap; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%d:%d", i ? "," : "",
					t->batch[i], t->knee[i]);
	return buf;
}

/* The bucket of a batch size: floor(log2), capped. */
static int bucket_of(int batch)
{
	int b = batch > 1 ? 31 - __builtin_clz((unsigned)batch) : 0;
	return b < KNEE_BUCKETS ? b : KNEE_BUCKETS - 1;
}

void knee_set_batch(knee_state_t *k, int batch)
{
	k->batch = batch > 1 ? batch : 1;
}

int knee_of_rates(const double *rate, int n, double tolerance)
{
	double cheapest = 0; /* least core-seconds per token */
	for (int w = 1; w <= n; w++)
		if (rate[w] > 0 && (cheapest == 0 || w / rate[w] < cheapest))
			cheapest = w / rate[w];
	int knee = 0;
	for (int w = 1; w <= n; w++)
		if (rate[w] > 0 && w / rate[w] * tolerance <= cheapest)
			knee = w;
	return knee ? knee : n;
}

int knee_estimate(const knee_state_t *k, int n_slots)
{
	int b = bucket_of(k->batch);
	double rate[GANG_MAX_SLOTS + 1] = {0};
	for (int w = 1; w <= n_slots; w++)
		if (k->seen[b][w])
			rate[w] = 1e9 / k->ns[b][w];
	return knee_of_rates(rate, n_slots, k->tolerance);
}

/* The lowest k slots of mask (all of them when it has fewer). */
static uint32_t lowest_k(uint32_t mask, int k)
{
	uint32_t out = 0;
	for (; mask && k > 0; mask &= mask - 1, k--)
		out |= mask & -mask;
	return out;
}

static int clamp_width(const policy_t *p, int w, int n_slots)
{
	int lo = p->min_width > 0 ? p->min_width : 1;
	int hi = p->max_width > 0 && p->max_width < n_slots ? p->max_width : n_slots;
	return w < lo ? lo : w > hi ? hi : w;
}

/* The width the knee policy runs the next step at: the record's table's
 * knee for the batch, or the online knee of the batch's bucket (first every
 * width KNEE_WARM times, widest first, then one random width every
 * KNEE_EXPLORE_EVERY tokens). */
static int knee_width(const policy_t *p, knee_state_t *k, int n_slots)
{
	k->exploring = 0;
	if (p->knees.n) {
		k->knee = knee_table_lookup(&p->knees, k->batch);
		return k->knee;
	}
	int b = bucket_of(k->batch);
	k->knee = knee_estimate(k, n_slots);
	for (int v = n_slots; v >= 1; v--)
		if (k->seen[b][v] < KNEE_WARM) {
			k->exploring = v;
			break;
		}
	if (!k->exploring && k->tokens % KNEE_EXPLORE_EVERY == KNEE_EXPLORE_EVERY - 1) {
		k->rng ^= k->rng << 13;
		k->rng ^= k->rng >> 7;
		k->rng ^= k->rng << 17;
		k->exploring = 1 + (int)(k->rng % (uint64_t)n_slots);
	}
	return k->exploring ? k->exploring : k->knee;
}

uint32_t policy_next_mask(const policy_t *p, knee_state_t *k, int n_slots)
{
	uint32_t all = first_slots(n_slots) & ~p->reserved_mask;
	switch (p->width) {
	case WIDTH_STATIC:
		return (p->static_mask & all) | 1u;
	case WIDTH_KNEE:
		return lowest_k(all | 1u, clamp_width(p, knee_width(p, k, n_slots), n_slots)) | 1u;
	default:
		return lowest_k(all | 1u, clamp_width(p, n_slots, n_slots)) | 1u;
	}
}

void policy_observe(const policy_t *p, knee_state_t *k, uint32_t mask,
		    uint64_t token_ns)
{
	if (p->width != WIDTH_KNEE || p->knees.n)
		return;
	int w = __builtin_popcount(mask);
	int b = bucket_of(k->batch);
	/* a token whose latch had fewer members than requested (a worker was
	 * still waking) measures the width it ran at */
	/* The first KNEE_WARM samples keep their best (the first token of a
	 * generation also pays for waking the workers); after that a running
	 * mean in which one slow token (a tenant's interrupt, a page fault)
	 * counts as at most 1.5x the mean, so a width is not dropped for
	 * dozens of tokens because of one outlier while it is sampled only
	 * on explorations. */
	double t = (double)token_ns, *ns = &k->ns[b][w];
	if (!k->seen[b][w])
		*ns = t;
	else if (k->seen[b][w] < KNEE_WARM)
		*ns = t < *ns ? t : *ns;
	else
		*ns = (1 - KNEE_ALPHA) * *ns + KNEE_ALPHA * (t < 1.5 * *ns ? t : 1.5 * *ns);
	k->seen[b][w]++;
	k->tokens++;
	k->knee = knee_estimate(k, GANG_MAX_SLOTS);
	knee_table_set(&k->table, 1 << b, k->knee, GANG_MAX_SLOTS);
}

/* ---- records: names, validation, printing ---- */

static const char *const width_names[WIDTH_COUNT] = {"all", "static", "knee"};
static const char *const acquire_names[GANG_ACQUIRE_COUNT] = {"polite", "preempt"};

const char *policy_width_name(policy_width_t w)
{
	return w < WIDTH_COUNT ? width_names[w] : "?";
}

const char *policy_acquire_name(gang_acquire_t a)
{
	return a < GANG_ACQUIRE_COUNT ? acquire_names[a] : "?";
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= POLICY_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.:-", *s))
			return false;
	return true;
}

static int field_err(const char **field, const char *name)
{
	*field = name;
	return -1;
}

int policy_validate(const policy_t *p, int n_slots, const char **field)
{
	const char *dummy;
	if (!field)
		field = &dummy;
	*field = "";
	uint32_t all = first_slots(n_slots);
	if (n_slots < 1 || n_slots > GANG_MAX_SLOTS)
		return err_set("the gang has %d slots (1..%d)", n_slots, GANG_MAX_SLOTS);
	if (!name_ok(p->name))
		return field_err(field, "name"),
		       err_set("name: '%s' is not 1..%d characters of "
			       "[A-Za-z0-9_.:-]", p->name, POLICY_NAME_MAX - 1);
	if (p->width >= WIDTH_COUNT)
		return field_err(field, "width"), err_set("width: %d is not all, "
							  "static or knee", (int)p->width);
	if (p->acquire >= GANG_ACQUIRE_COUNT)
		return field_err(field, "acquire"),
		       err_set("acquire: %d is not polite or preempt", (int)p->acquire);
	if (p->min_width < 0 || p->min_width > n_slots)
		return field_err(field, "min_width"),
		       err_set("min_width: %d is out of range [1, %d]", p->min_width, n_slots);
	int lo = p->min_width ? p->min_width : 1;
	if (p->max_width < 0 || p->max_width > n_slots ||
	    (p->max_width && p->max_width < lo))
		return field_err(field, "max_width"),
		       err_set("max_width: %d is out of range [%d, %d]", p->max_width,
			       lo, n_slots);
	if (p->reserved_mask & ~all)
		return field_err(field, "reserved"),
		       err_set("reserved: slot %d is outside the gang's slots 0..%d",
			       31 - __builtin_clz(p->reserved_mask & ~all), n_slots - 1);
	if (p->reserved_mask & 1u)
		return field_err(field, "reserved"),
		       err_set("reserved: the leader (slot 0) runs every token and "
			       "cannot be reserved");
	int free_slots = n_slots - __builtin_popcount(p->reserved_mask);
	if (lo > free_slots)
		return field_err(field, "min_width"),
		       err_set("min_width: %d is more than the %d slots left after "
			       "reserved", lo, free_slots);
	if (p->width == WIDTH_STATIC) {
		if (!p->static_mask)
			return field_err(field, "cores"),
			       err_set("cores: width static needs a core set");
		if (p->static_mask & ~all)
			return field_err(field, "cores"),
			       err_set("cores: slot %d is outside the gang's slots 0..%d",
				       31 - __builtin_clz(p->static_mask & ~all), n_slots - 1);
		if (!(p->static_mask & 1u))
			return field_err(field, "cores"),
			       err_set("cores: must include the leader (slot 0)");
		if (p->static_mask & p->reserved_mask)
			return field_err(field, "cores"),
			       err_set("cores: overlaps reserved");
		if (p->min_width || p->max_width)
			return field_err(field, p->min_width ? "min_width" : "max_width"),
			       err_set("%s: width static takes its width from cores",
				       p->min_width ? "min_width" : "max_width");
	} else if (p->static_mask) {
		return field_err(field, "cores"),
		       err_set("cores: a core set needs width static");
	}
	if (p->keep_ms > POLICY_KEEP_MS_MAX)
		return field_err(field, "keep_ms"),
		       err_set("keep_ms: %u is out of range [0, %d]", p->keep_ms,
			       POLICY_KEEP_MS_MAX);
	if (!(p->guard_ttft_p99_ms >= 0 && p->guard_ttft_p99_ms <= 3600000))
		return field_err(field, "guard_ttft_p99_ms"),
		       err_set("guard_ttft_p99_ms: %g is out of range (0, 3600000]",
			       p->guard_ttft_p99_ms);
	if (p->guard_queue_depth > 1000000)
		return field_err(field, "guard_queue_depth"),
		       err_set("guard_queue_depth: %u is out of range [1, 1000000]",
			       p->guard_queue_depth);
	if (p->kguard_wait_p99_us > POLICY_KGUARD_WAIT_MAX)
		return field_err(field, "kguard_wait_p99_us"),
		       err_set("kguard_wait_p99_us: %u is out of range [1, %d]",
			       p->kguard_wait_p99_us, POLICY_KGUARD_WAIT_MAX);
	if (p->kguard_wait_p99_us && (p->kguard_windows < 1 || p->kguard_windows > 1000))
		return field_err(field, "kguard_windows"),
		       err_set("kguard_windows: %u is out of range [1, 1000]",
			       p->kguard_windows);
	if (p->kguard_wait_p99_us &&
	    (p->kguard_window_ms < 10 || p->kguard_window_ms > 60000))
		return field_err(field, "kguard_window_ms"),
		       err_set("kguard_window_ms: %u is out of range [10, 60000]",
			       p->kguard_window_ms);
	if (!p->kguard_wait_p99_us && (p->kguard_windows || p->kguard_window_ms))
		return field_err(field, p->kguard_windows ? "kguard_windows"
							  : "kguard_window_ms"),
		       err_set("%s: set without kguard_wait_p99_us",
			       p->kguard_windows ? "kguard_windows" : "kguard_window_ms");
	if (p->knees.n && p->width != WIDTH_KNEE)
		return field_err(field, "knees"), err_set("knees: needs width knee");
	for (int i = 0; i < p->knees.n; i++)
		if (p->knees.knee[i] < 1 || p->knees.knee[i] > n_slots ||
		    p->knees.batch[i] < 1 || p->knees.n > KNEE_TABLE_MAX ||
		    (i && p->knees.batch[i] <= p->knees.batch[i - 1]))
			return field_err(field, "knees"),
			       err_set("knees: entry %d (%d:%d) is not an increasing batch "
				       "with a knee in [1, %d]", i + 1, p->knees.batch[i],
				       p->knees.knee[i], n_slots);
	bool guarded = p->guard_ttft_p99_ms > 0 || p->guard_queue_depth > 0;
	if (guarded && (p->guard_checks < 1 || p->guard_checks > 1000))
		return field_err(field, "guard_checks"),
		       err_set("guard_checks: %u is out of range [1, 1000]", p->guard_checks);
	if (!guarded && p->guard_checks)
		return field_err(field, "guard_checks"),
		       err_set("guard_checks: set without guard_ttft_p99_ms or "
			       "guard_queue_depth");
	return 0;
}

static char *slots_format(uint32_t m, char *buf, size_t cap)
{
	cpumask_t s = cpumask_of_bits(m);
	return cpumask_format(&s, buf, cap);
}

void policy_print(const policy_t *p, int n_slots, FILE *f)
{
	char buf[256];
	fprintf(f, "[%s]\nwidth = %s\n", p->name, policy_width_name(p->width));
	if (p->width == WIDTH_STATIC)
		fprintf(f, "cores = %s\n", slots_format(p->static_mask, buf, sizeof buf));
	else
		fprintf(f, "min_width = %d\nmax_width = %d\n",
			p->min_width ? p->min_width : 1,
			p->max_width ? p->max_width : n_slots);
	if (p->reserved_mask)
		fprintf(f, "reserved = %s\n", slots_format(p->reserved_mask, buf, sizeof buf));
	fprintf(f, "acquire = %s\nkeep_ms = %u\n", policy_acquire_name(p->acquire),
		p->keep_ms);
	if (p->guard_ttft_p99_ms > 0)
		fprintf(f, "guard_ttft_p99_ms = %g\n", p->guard_ttft_p99_ms);
	if (p->guard_queue_depth)
		fprintf(f, "guard_queue_depth = %u\n", p->guard_queue_depth);
	if (p->guard_checks)
		fprintf(f, "guard_checks = %u\n", p->guard_checks);
	if (p->kguard_wait_p99_us)
		fprintf(f, "kguard_wait_p99_us = %u\nkguard_windows = %u\n"
			"kguard_window_ms = %u\n", p->kguard_wait_p99_us,
			p->kguard_windows, p->kguard_window_ms);
	if (p->knees.n)
		fprintf(f, "knees = %s\n", knee_table_format(&p->knees, buf, sizeof buf));
}

/* ---- the library ---- */

static void lib_add(policy_lib_t *lib, policy_t p)
{
	assert(lib->n < POLICY_LIB_MAX);
	assert(policy_validate(&p, lib->n_slots, NULL) == 0);
	lib->rec[lib->n++] = p;
}

void policy_lib_builtin(policy_lib_t *lib, int n_slots)
{
	assert(n_slots >= 1 && n_slots <= GANG_MAX_SLOTS);
	memset(lib, 0, sizeof *lib);
	lib->n_slots = n_slots;
	lib_add(lib, (policy_t){.name = "elastic", .width = WIDTH_ALL});
	lib_add(lib, (policy_t){.name = "knee", .width = WIDTH_KNEE});
	/* latency runs at the online knee, not at every core, by measurement
	 * (2 cores, stories260K, two CPU-bound tenants pinned per core, two
	 * closed-loop clients of 48-token requests for 3 s, SCHED_FIFO in
	 * all): every core served 340-424 requests for 0.94-1.05 CPU s per
	 * 100, the knee 521-568 for 0.88-0.92 s (the tok/s knee and, after
	 * the rebase, the core-time knee alike), one core 432-525 for
	 * 0.61-0.66 s. Past the knee a core adds barrier waits more than
	 * speed and takes a whole core from the tenants at SCHED_FIFO; on a
	 * model whose decode scales the knee is every core, as before. */
	lib_add(lib, (policy_t){.name = "latency", .width = WIDTH_KNEE,
				.acquire = GANG_ACQUIRE_PREEMPT, .keep_ms = 50});
	int half = n_slots / 2 > 0 ? n_slots / 2 : 1;
	/* No guard on throughput, by measurement (`egang bench switching`,
	 * 2 cores, stories260K, two CPU-bound tenants pinned per core): the
	 * guard falls back to record 0, elastic (polite, every core), which
	 * serves 6.9 requests/s there against throughput's 26.7 (its barriers
	 * wait on a core a tenant holds for a whole slice). With the earlier
	 * bound (queue depth > 8, 3 checks) every burst tripped it and the
	 * fallback turned a queue that drains in seconds into one that never
	 * does. A guard is only as good as its fallback; user records may
	 * still declare one. */
	lib_add(lib, (policy_t){.name = "throughput", .width = WIDTH_STATIC,
				.static_mask = first_slots(half),
				.reserved_mask = first_slots(n_slots) & ~first_slots(half)});
	for (int k = 1; k < n_slots; k++) {
		policy_t p = {.width = WIDTH_STATIC, .static_mask = first_slots(k)};
		snprintf(p.name, sizeof p.name, "static:%d", k);
		lib_add(lib, p);
	}
	lib->n_builtin = lib->n;
}

int policy_lib_find(const policy_lib_t *lib, const char *name)
{
	for (int i = 0; i < lib->n; i++)
		if (!strcmp(lib->rec[i].name, name))
			return i;
	char *end;
	errno = 0;
	long v = strtol(name, &end, 10);
	if (*name && !*end && !errno && v >= 0 && v < lib->n)
		return (int)v;
	return -1;
}

int policy_lib_load(policy_lib_t *lib, const char *path)
{
	size_t len;
	char *text = file_read_all(path, &len);
	if (!text)
		return err_wrap("%s", path);
	if (strlen(text) != len) {
		free(text);
		return err_set("%s: a NUL byte in the file", path);
	}
	int rc = policy_lib_parse(lib, path, text);
	free(text);
	return rc;
}

/* ---- the INI loader ---- */

typedef enum ini_key {
	KEY_WIDTH,
	KEY_MIN_WIDTH,
	KEY_MAX_WIDTH,
	KEY_CORES,
	KEY_RESERVED,
	KEY_ACQUIRE,
	KEY_KEEP_MS,
	KEY_GUARD_TTFT,
	KEY_GUARD_QUEUE,
	KEY_GUARD_CHECKS,
	KEY_KGUARD_WAIT,
	KEY_KGUARD_WINDOWS,
	KEY_KGUARD_WINDOW_MS,
	KEY_KNEES,
	KEY_COUNT
} ini_key_t;

static const char *const key_names[KEY_COUNT] = {
	"width", "min_width", "max_width", "cores", "reserved", "acquire",
	"keep_ms", "guard_ttft_p99_ms", "guard_queue_depth", "guard_checks",
	"kguard_wait_p99_us", "kguard_windows", "kguard_window_ms", "knees"};

typedef struct ini_rec {
	policy_t p;
	int line;               /* the [name] line */
	int key_line[KEY_COUNT]; /* 0: not set */
} ini_rec_t;

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	char *e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int parse_uint(const char *v, int64_t max, int64_t *out)
{
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (!*v || *end || errno || x < 0 || x > max)
		return -1;
	*out = x;
	return 0;
}

/* The index of v among names[0..n), -1 if absent. */
static int name_index(const char *const *names, int n, const char *v)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(v, names[i]))
			return i;
	return -1;
}

/* Slot list "0-1,3" inside 0..n_slots-1. */
static int parse_slots(const char *v, int n_slots, uint32_t *out)
{
	cpumask_t m;
	if (cpumask_parse(v, &m) < 0)
		return err_set("'%s' is not a slot list such as 0-1,3", v);
	if (cpumask_last(&m) >= n_slots)
		return err_set("slot %d is outside the gang's slots 0..%d",
			       cpumask_last(&m), n_slots - 1);
	*out = (uint32_t)m.w[0];
	return 0;
}

/* One "key = value" of record r; -1 + err_get() "key: ...". */
static int ini_set(ini_rec_t *r, int n_slots, ini_key_t k, const char *v)
{
	policy_t *p = &r->p;
	int64_t x;
	double d;
	char *end;
	int i;
	switch (k) {
	case KEY_WIDTH:
		if ((i = name_index(width_names, WIDTH_COUNT, v)) < 0)
			return err_set("width: '%s' is not all, static or knee", v);
		p->width = (policy_width_t)i;
		return 0;
	case KEY_MIN_WIDTH:
	case KEY_MAX_WIDTH:
		if (parse_uint(v, INT32_MAX, &x) < 0 || x < 1 || x > n_slots)
			return err_set("%s: '%s' is out of range [1, %d]", key_names[k],
				       v, n_slots);
		*(k == KEY_MIN_WIDTH ? &p->min_width : &p->max_width) = (int32_t)x;
		return 0;
	case KEY_CORES:
		if (parse_slots(v, n_slots, &p->static_mask) < 0)
			return err_wrap("cores");
		if (!r->key_line[KEY_WIDTH])
			p->width = WIDTH_STATIC;
		return 0;
	case KEY_RESERVED:
		return parse_slots(v, n_slots, &p->reserved_mask) < 0
			       ? err_wrap("reserved") : 0;
	case KEY_ACQUIRE:
		if ((i = name_index(acquire_names, GANG_ACQUIRE_COUNT, v)) < 0)
			return err_set("acquire: '%s' is not polite or preempt", v);
		p->acquire = (gang_acquire_t)i;
		return 0;
	case KEY_KEEP_MS:
		if (parse_uint(v, POLICY_KEEP_MS_MAX, &x) < 0)
			return err_set("keep_ms: '%s' is out of range [0, %d]", v,
				       POLICY_KEEP_MS_MAX);
		p->keep_ms = (uint32_t)x;
		return 0;
	case KEY_GUARD_TTFT:
		errno = 0;
		d = strtod(v, &end);
		if (!*v || *end || errno || !(d > 0 && d <= 3600000))
			return err_set("guard_ttft_p99_ms: '%s' is out of range "
				       "(0, 3600000]", v);
		p->guard_ttft_p99_ms = d;
		return 0;
	case KEY_GUARD_QUEUE:
		if (parse_uint(v, 1000000, &x) < 0 || x < 1)
			return err_set("guard_queue_depth: '%s' is out of range "
				       "[1, 1000000]", v);
		p->guard_queue_depth = (uint32_t)x;
		return 0;
	case KEY_GUARD_CHECKS:
		if (parse_uint(v, 1000, &x) < 0 || x < 1)
			return err_set("guard_checks: '%s' is out of range [1, 1000]", v);
		p->guard_checks = (uint32_t)x;
		return 0;
	case KEY_KGUARD_WAIT:
		if (parse_uint(v, POLICY_KGUARD_WAIT_MAX, &x) < 0 || x < 1)
			return err_set("kguard_wait_p99_us: '%s' is out of range "
				       "[1, %d]", v, POLICY_KGUARD_WAIT_MAX);
		p->kguard_wait_p99_us = (uint32_t)x;
		return 0;
	case KEY_KGUARD_WINDOWS:
		if (parse_uint(v, 1000, &x) < 0 || x < 1)
			return err_set("kguard_windows: '%s' is out of range [1, 1000]", v);
		p->kguard_windows = (uint32_t)x;
		return 0;
	case KEY_KGUARD_WINDOW_MS:
		if (parse_uint(v, 60000, &x) < 0 || x < 10)
			return err_set("kguard_window_ms: '%s' is out of range "
				       "[10, 60000]", v);
		p->kguard_window_ms = (uint32_t)x;
		return 0;
	case KEY_KNEES:
		return knee_table_parse(&p->knees, v, n_slots) < 0 ? err_wrap("knees") : 0;
	default:
		assert(0);
		return -1;
	}
}

/* Prefixes the current message with "FILE:LINE: [record] "; -1. */
static int rec_err(const char *path, int line, const char *name)
{
	char m[256];
	snprintf(m, sizeof m, "%s", err_get());
	return err_set("%s:%d: [%s] %s", path, line, name, m);
}

/* Closes record r: defaults, then the whole-record check. */
static int ini_close(policy_lib_t *lib, int n_old, ini_rec_t *r, const char *path)
{
	policy_t *p = &r->p;
	if ((p->guard_ttft_p99_ms > 0 || p->guard_queue_depth) && !p->guard_checks)
		p->guard_checks = 3;
	if (p->kguard_wait_p99_us) {
		if (!p->kguard_windows)
			p->kguard_windows = 3;
		if (!p->kguard_window_ms)
			p->kguard_window_ms = 100;
	}
	const char *field;
	if (policy_validate(p, lib->n_slots, &field) < 0) {
		int line = r->line;
		for (int k = 0; k < KEY_COUNT; k++)
			if (!strcmp(field, key_names[k]) && r->key_line[k])
				line = r->key_line[k];
		lib->n = n_old;
		return rec_err(path, line, p->name);
	}
	if (lib->n == POLICY_LIB_MAX) {
		lib->n = n_old;
		return err_set("%s:%d: [%s]: more than %d records in the library",
			       path, r->line, p->name, POLICY_LIB_MAX);
	}
	lib->rec[lib->n++] = *p;
	return 0;
}

int policy_lib_parse(policy_lib_t *lib, const char *path, const char *text)
{
	int n_old = lib->n, line = 0;
	ini_rec_t r;
	bool open_rec = false;
	char buf[1024];
	for (const char *s = text; *s;) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		line++;
		if (len >= sizeof buf) {
			lib->n = n_old;
			return err_set("%s:%d: the line is longer than %zu bytes", path,
				       line, sizeof buf - 1);
		}
		memcpy(buf, s, len);
		buf[len] = '\0';
		s += len + (nl ? 1 : 0);
		char *t = trim(buf);
		if (!*t || *t == '#' || *t == ';')
			continue;
		if (*t == '[') {
			char *close = strchr(t, ']');
			if (!close || trim(close + 1)[0]) {
				lib->n = n_old;
				return err_set("%s:%d: '%.60s' is not a [name] line", path,
					       line, t);
			}
			if (open_rec && ini_close(lib, n_old, &r, path) < 0)
				return -1;
			*close = '\0';
			char *name = trim(t + 1);
			memset(&r, 0, sizeof r);
			r.line = line;
			open_rec = true;
			if (!name_ok(name)) {
				lib->n = n_old;
				return err_set("%s:%d: [%.60s] name: %s", path, line, name,
					       *name ? "not 1..31 characters of [A-Za-z0-9_.:-]"
						     : "the record name is empty");
			}
			int dup = -1;
			for (int i = 0; i < lib->n; i++)
				if (!strcmp(lib->rec[i].name, name))
					dup = i;
			if (dup >= 0) {
				lib->n = n_old;
				return err_set("%s:%d: [%s] name: duplicate of record %d "
					       "(%s)", path, line, name, dup,
					       dup < n_old ? "already in the library"
							   : "earlier in this file");
			}
			snprintf(r.p.name, sizeof r.p.name, "%s", name);
			continue;
		}
		char *eq = strchr(t, '=');
		if (!eq) {
			lib->n = n_old;
			return err_set("%s:%d: '%.60s' is not [name], key = value or "
				       "a # comment", path, line, t);
		}
		*eq = '\0';
		char *key = trim(t), *val = trim(eq + 1);
		if (!open_rec) {
			lib->n = n_old;
			return err_set("%s:%d: %s: a key before the first [name]", path,
				       line, key);
		}
		int k = 0;
		while (k < KEY_COUNT && strcmp(key, key_names[k]))
			k++;
		if (k == KEY_COUNT) {
			lib->n = n_old;
			return err_set("%s:%d: [%s] %.60s: unknown key", path, line,
				       r.p.name, key);
		}
		if (r.key_line[k]) {
			lib->n = n_old;
			return err_set("%s:%d: [%s] %s: set twice (line %d)", path, line,
				       r.p.name, key, r.key_line[k]);
		}
		r.key_line[k] = line;
		if (ini_set(&r, lib->n_slots, (ini_key_t)k, val) < 0) {
			lib->n = n_old;
			return rec_err(path, line, r.p.name);
		}
	}
	if (!open_rec)
		return err_set("%s: no [name] record in the file", path);
	return ini_close(lib, n_old, &r, path);
}
