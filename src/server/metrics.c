/* metrics: the counters and histograms the server keeps, /metrics in the
 * Prometheus text exposition format (version 0.0.4), and /health. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "scx/scx.h"
#include "server/buf.h"
#include "server/metrics.h"

typedef struct hist {
	const double *le; /* upper bounds, ascending; +Inf implied */
	int n;
	uint64_t counts[16]; /* n + 1 */
	double sum;
	uint64_t count;
} hist_t;

struct metrics {
	metrics_config_t cfg;
	pthread_mutex_t mu; /* guards everything below */
	uint64_t req[EP_COUNT][600];
	uint64_t tok_prompt, tok_gen, cancelled, failed;
	double prefill_tps, decode_tps;
	hist_t hist[METRICS_HIST_COUNT];
	uint32_t gang_width;
	uint64_t latch_changes, joins, departures, gang_tokens;
	/* continuous batching (sched_batch.c): KV bytes in use (live
	 * sequences and the prefix cache), prefix hits and the prompt
	 * positions they saved */
	size_t kv_used;
	uint64_t prefix_hits, prefix_tokens;
	/* the drain (server.c, http.c); the transport's closes (http_conn.c) */
	int in_flight;
	bool draining;
	uint64_t closed[METRICS_CLOSE_COUNT];
};

static const double ttft_le[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
				 1, 2.5, 5, 10, 30};
static const double tpot_le[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
				 0.05, 0.1, 0.25, 0.5, 1};
static const double batch_le[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
static const double wait_le[] = {0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
				 10, 30, 60};

static const char *const ep_names[EP_COUNT] = {
	"completions", "chat_completions", "models", "health", "metrics",
	"tokenize", "detokenize", "other"};

/* ---- the object ---- */

metrics_t *metrics_new(const metrics_config_t *cfg)
{
	metrics_t *m = calloc(1, sizeof *m);
	if (!m)
		return err_sys("calloc"), NULL;
	m->cfg = *cfg;
	static const struct {
		const double *le;
		int n;
	} bounds[METRICS_HIST_COUNT] = {
		[METRICS_HIST_TTFT] = {ttft_le, (int)EG_ARRAY_LEN(ttft_le)},
		[METRICS_HIST_TPOT] = {tpot_le, (int)EG_ARRAY_LEN(tpot_le)},
		[METRICS_HIST_BATCH_SIZE] = {batch_le, (int)EG_ARRAY_LEN(batch_le)},
		[METRICS_HIST_QUEUE_WAIT] = {wait_le, (int)EG_ARRAY_LEN(wait_le)},
	};
	for (int h = 0; h < METRICS_HIST_COUNT; h++) {
		m->hist[h].le = bounds[h].le;
		m->hist[h].n = bounds[h].n;
	}
	m->gang_width = 1;
	pthread_mutex_init(&m->mu, NULL);
	return m;
}

void metrics_free(metrics_t *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->mu);
	free(m);
}

/* ---- recording ---- */

static void hist_observe(hist_t *h, double v)
{
	int i = 0;
	while (i < h->n && v > h->le[i])
		i++;
	h->counts[i]++;
	h->sum += v;
	h->count++;
}

void metrics_count(metrics_t *m, server_endpoint_t ep, int status)
{
	if (ep >= EP_COUNT || status < 100 || status > 599)
		return;
	pthread_mutex_lock(&m->mu);
	m->req[ep][status]++;
	pthread_mutex_unlock(&m->mu);
}

void metrics_observe(metrics_t *m, metrics_hist_t h, double v)
{
	pthread_mutex_lock(&m->mu);
	hist_observe(&m->hist[h], v);
	pthread_mutex_unlock(&m->mu);
}

void metrics_job_failed(metrics_t *m, int status)
{
	pthread_mutex_lock(&m->mu);
	m->failed += status == 500;
	m->cancelled += status == 503;
	pthread_mutex_unlock(&m->mu);
}

double metrics_record_generation(metrics_t *m, const metrics_generation_t *g,
				 const gang_stats_t *st)
{
	pthread_mutex_lock(&m->mu);
	m->tok_prompt += (uint64_t)g->n_prompt;
	m->tok_gen += (uint64_t)g->n_gen;
	m->cancelled += g->cancelled;
	if (g->prefill_s > 0)
		m->prefill_tps = (double)g->n_prompt / g->prefill_s;
	if (g->decode_s > 0 && g->decode_steps > 0)
		m->decode_tps = (double)g->decode_steps / g->decode_s;
	if (g->n_gen > 0)
		hist_observe(&m->hist[METRICS_HIST_TTFT], g->ttft_s);
	if (st) {
		m->gang_width = (uint32_t)__builtin_popcount(st->last_mask);
		m->latch_changes = st->latch_changes;
		m->joins = st->joins;
		m->departures = st->departures;
		m->gang_tokens = st->tokens;
	} else {
		m->gang_tokens += (uint64_t)(g->n_prompt + g->decode_steps);
	}
	double decode_tps = m->decode_tps;
	pthread_mutex_unlock(&m->mu);
	return decode_tps;
}

void metrics_record_admission(metrics_t *m, double wait_s, bool hit,
			      uint64_t saved)
{
	pthread_mutex_lock(&m->mu);
	hist_observe(&m->hist[METRICS_HIST_QUEUE_WAIT], wait_s);
	m->prefix_hits += hit;
	m->prefix_tokens += saved;
	pthread_mutex_unlock(&m->mu);
}

void metrics_record_prefix(metrics_t *m, uint64_t saved)
{
	pthread_mutex_lock(&m->mu);
	m->prefix_hits++;
	m->prefix_tokens += saved;
	pthread_mutex_unlock(&m->mu);
}

void metrics_set_gang_width(metrics_t *m, uint32_t width)
{
	pthread_mutex_lock(&m->mu);
	m->gang_width = width;
	pthread_mutex_unlock(&m->mu);
}

void metrics_set_kv_used(metrics_t *m, size_t bytes)
{
	pthread_mutex_lock(&m->mu);
	m->kv_used = bytes;
	pthread_mutex_unlock(&m->mu);
}

void metrics_in_flight_add(metrics_t *m, int delta)
{
	pthread_mutex_lock(&m->mu);
	m->in_flight += delta;
	pthread_mutex_unlock(&m->mu);
}

int metrics_in_flight(metrics_t *m)
{
	pthread_mutex_lock(&m->mu);
	int n = m->in_flight;
	pthread_mutex_unlock(&m->mu);
	return n;
}

void metrics_set_draining(metrics_t *m)
{
	pthread_mutex_lock(&m->mu);
	m->draining = true;
	pthread_mutex_unlock(&m->mu);
}

void metrics_count_closed(metrics_t *m, metrics_close_t why, int n)
{
	if ((unsigned)why >= METRICS_CLOSE_COUNT || n <= 0)
		return;
	pthread_mutex_lock(&m->mu);
	m->closed[why] += (uint64_t)n;
	pthread_mutex_unlock(&m->mu);
}

/* ---- /health ---- */

char *metrics_health_text(const char *model, const char *down, int depth,
			  bool busy, int *status)
{
	*status = down ? 503 : 200;
	return buf_json_dump(json_pack("{s:s, s:s, s:i, s:b}", "status",
				       down ? down : "ok", "model",
				       model, "queue", depth, "busy", busy));
}

/* ---- /metrics ---- */

static long rss_bytes(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return 0;
	char line[256];
	long kb = 0;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "VmRSS:", 6)) {
			kb = strtol(line + 6, NULL, 10);
			break;
		}
	fclose(f);
	return kb * 1024;
}

/* CPU time of the whole process (every thread: the gang, the transport),
 * seconds; 0 if the clock cannot be read. */
static double process_cpu_s(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void metric_head(FILE *f, const char *name, const char *type,
			const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void hist_print(FILE *f, const char *name, const char *help,
		       const hist_t *h)
{
	metric_head(f, name, "histogram", help);
	uint64_t cum = 0;
	for (int i = 0; i < h->n; i++) {
		cum += h->counts[i];
		fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name, h->le[i],
			(unsigned long long)cum);
	}
	cum += h->counts[h->n];
	fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n%s_count %llu\n",
		name, (unsigned long long)cum, name, h->sum, name,
		(unsigned long long)h->count);
}

/* Continuous batching's families (sched_batch.c), under m->mu. */
static void metrics_print_batch(FILE *f, const metrics_t *m)
{
	hist_print(f, "egang_batch_size", "Sequences per token step (--parallel > 1).",
		   &m->hist[METRICS_HIST_BATCH_SIZE]);
	hist_print(f, "egang_queue_wait_seconds",
		   "From a request's enqueue to the start of its generation.",
		   &m->hist[METRICS_HIST_QUEUE_WAIT]);
	metric_head(f, "egang_kv_bytes_in_use", "gauge",
		    "KV cache bytes held by live sequences and the prefix cache.");
	fprintf(f, "egang_kv_bytes_in_use %zu\n", m->kv_used);
	metric_head(f, "egang_kv_bytes_budget", "gauge", "--kv-mb in bytes.");
	fprintf(f, "egang_kv_bytes_budget %zu\n", m->cfg.kv_bytes);
	metric_head(f, "egang_prefix_cache_hits_total", "counter",
		    "Prompts that started from a cached prefix's KV (or from "
		    "their request's first choice's, n > 1).");
	fprintf(f, "egang_prefix_cache_hits_total %llu\n",
		(unsigned long long)m->prefix_hits);
	metric_head(f, "egang_prefix_cache_tokens_saved_total", "counter",
		    "Prompt positions taken from the prefix cache (or another "
		    "choice) instead of computed.");
	fprintf(f, "egang_prefix_cache_tokens_saved_total %llu\n",
		(unsigned long long)m->prefix_tokens);
}

/* Requests, tokens and their latencies, under m->mu. */
static void metrics_print_requests(FILE *f, const metrics_t *m)
{
	metric_head(f, "egang_requests_total", "counter",
		    "HTTP requests answered, by endpoint and status.");
	for (int e = 0; e < EP_COUNT; e++)
		for (int st = 100; st < 600; st++)
			if (m->req[e][st])
				fprintf(f, "egang_requests_total{endpoint=\"%s\","
					   "status=\"%d\"} %llu\n", ep_names[e], st,
					(unsigned long long)m->req[e][st]);
	metric_head(f, "egang_prompt_tokens_total", "counter",
		    "Prompt tokens processed (BOS included).");
	fprintf(f, "egang_prompt_tokens_total %llu\n", (unsigned long long)m->tok_prompt);
	metric_head(f, "egang_generated_tokens_total", "counter",
		    "Tokens generated.");
	fprintf(f, "egang_generated_tokens_total %llu\n", (unsigned long long)m->tok_gen);
	metric_head(f, "egang_generations_cancelled_total", "counter",
		    "Generations cut short by a client that went away or by shutdown.");
	fprintf(f, "egang_generations_cancelled_total %llu\n",
		(unsigned long long)m->cancelled);
	metric_head(f, "egang_generations_failed_total", "counter",
		    "Generations that failed after they were accepted.");
	fprintf(f, "egang_generations_failed_total %llu\n", (unsigned long long)m->failed);
	metric_head(f, "egang_prefill_tokens_per_second", "gauge",
		    "Prompt tokens per second of the last generation.");
	fprintf(f, "egang_prefill_tokens_per_second %.6g\n", m->prefill_tps);
	metric_head(f, "egang_decode_tokens_per_second", "gauge",
		    "Decode tokens per second of the last generation.");
	fprintf(f, "egang_decode_tokens_per_second %.6g\n", m->decode_tps);
	hist_print(f, "egang_time_to_first_token_seconds",
		   "From a request's enqueue to its first generated token.",
		   &m->hist[METRICS_HIST_TTFT]);
	hist_print(f, "egang_time_per_output_token_seconds",
		   "Wall time of each decode step.", &m->hist[METRICS_HIST_TPOT]);
}

/* The queue (depth and busy as read under the queue lock) and the gang,
 * under m->mu. */
static void metrics_print_gang(FILE *f, const metrics_t *m, int depth, bool busy)
{
	metric_head(f, "egang_queue_depth", "gauge",
		    "Requests waiting behind the running generation.");
	fprintf(f, "egang_queue_depth %d\n", depth);
	metric_head(f, "egang_queue_capacity", "gauge", "--max-queue.");
	fprintf(f, "egang_queue_capacity %d\n", m->cfg.max_queue);
	metric_head(f, "egang_generation_running", "gauge",
		    "1 while a generation runs on the gang.");
	fprintf(f, "egang_generation_running %d\n", busy ? 1 : 0);
	metric_head(f, "egang_gang_width", "gauge",
		    "Cores in the last token's latch (popcount of its mask).");
	fprintf(f, "egang_gang_width %u\n", m->gang_width);
	metric_head(f, "egang_gang_tokens_total", "counter", "Tokens run on the gang.");
	fprintf(f, "egang_gang_tokens_total %llu\n", (unsigned long long)m->gang_tokens);
	metric_head(f, "egang_gang_latch_changes_total", "counter",
		    "Tokens whose participant mask differed from the previous one.");
	fprintf(f, "egang_gang_latch_changes_total %llu\n",
		(unsigned long long)m->latch_changes);
	metric_head(f, "egang_gang_joins_total", "counter", "Cores that entered the latch.");
	fprintf(f, "egang_gang_joins_total %llu\n", (unsigned long long)m->joins);
	metric_head(f, "egang_gang_departures_total", "counter", "Cores that left the latch.");
	fprintf(f, "egang_gang_departures_total %llu\n", (unsigned long long)m->departures);
}

/* The control word's telemetry: relaxed loads, each field on its own
 * (single writer, the generation thread; policy/control.h). */
static void metrics_print_policy(FILE *f, const metrics_t *m)
{
	control_word_t *cw = m->cfg.policies ? m->cfg.control : NULL;
#define CW(field) (cw ? (unsigned long long)atomic_load_explicit(&cw->field, \
					memory_order_relaxed) : 0ull)
	metric_head(f, "egang_policy_index", "gauge",
		    "The policy record in force (egang policy list).");
	fprintf(f, "egang_policy_index %llu\n",
		cw ? CW(effective) : (unsigned long long)m->cfg.policy_index);
	metric_head(f, "egang_policy_requested_index", "gauge",
		    "The raw index in the control word (may name no record).");
	fprintf(f, "egang_policy_requested_index %llu\n",
		cw ? (unsigned long long)atomic_load_explicit(control_index_of(cw),
							  memory_order_relaxed)
		   : (unsigned long long)m->cfg.policy_index);
	metric_head(f, "egang_policy_invalid_index_total", "counter",
		    "Token-boundary reads of an index that names no validated "
		    "record (the default policy ran instead).");
	fprintf(f, "egang_policy_invalid_index_total %llu\n", CW(invalid_reads));
	metric_head(f, "egang_policy_guard_fallbacks_total", "counter",
		    "Times the leader's guard fell back to the default policy.");
	fprintf(f, "egang_policy_guard_fallbacks_total %llu\n", CW(guard_fallbacks));
	metric_head(f, "egang_policy_guard_fallback", "gauge",
		    "1 while the guard's fallback to the default policy holds.");
	fprintf(f, "egang_policy_guard_fallback %llu\n", CW(fallback));
#undef CW
	/* the in-kernel guard (sched_ext backend, bpf/egang_kguard.h) */
	struct egang_kguard g;
	if (!scx_loaded() || scx_read_kguard(&g) < 0)
		return;
	metric_head(f, "egang_scx_kguard_fallbacks_total", "counter",
		    "Times the in-kernel guard stored the safe index 0.");
	fprintf(f, "egang_scx_kguard_fallbacks_total %llu\n",
		(unsigned long long)g.fallbacks);
	metric_head(f, "egang_scx_kguard_fallback_from_index", "gauge",
		    "The index the last kernel fallback left (why: its gang "
		    "run-queue wait p99 broke the record's bound).");
	fprintf(f, "egang_scx_kguard_fallback_from_index %llu\n",
		g.fallbacks ? (unsigned long long)g.why_index : 0ull);
	metric_head(f, "egang_scx_kguard_fallback_p99_seconds", "gauge",
		    "The gang run-queue wait p99 of the window that made it fall back.");
	fprintf(f, "egang_scx_kguard_fallback_p99_seconds %.9f\n",
		(double)g.why_p99_ns / 1e9);
	metric_head(f, "egang_scx_kguard_wait_p99_seconds", "gauge",
		    "The gang run-queue wait p99 of the last window.");
	fprintf(f, "egang_scx_kguard_wait_p99_seconds %.9f\n",
		(double)g.last_p99_ns / 1e9);
}

/* The drain and the transport's own closes, under m->mu. */
static void metrics_print_lifecycle(FILE *f, const metrics_t *m)
{
	static const char *const why[METRICS_CLOSE_COUNT] = {
		[METRICS_CLOSE_EVICTED] = "evicted",
		[METRICS_CLOSE_REQUEST_TIMEOUT] = "request_timeout",
		[METRICS_CLOSE_PER_IP] = "per_ip"};
	metric_head(f, "egang_draining", "gauge",
		    "1 once SIGTERM or SIGINT began the drain (/health answers 503).");
	fprintf(f, "egang_draining %d\n", m->draining ? 1 : 0);
	metric_head(f, "egang_requests_in_flight", "gauge",
		    "Generation requests accepted and not yet answered in full "
		    "(queued, running, or a stream's last bytes unsent).");
	fprintf(f, "egang_requests_in_flight %d\n", m->in_flight);
	metric_head(f, "egang_connections_closed_total", "counter",
		    "Connections the server closed before a whole request arrived: "
		    "evicted past --max-conns, past --request-timeout, or past "
		    "--max-conns-per-ip without a request.");
	for (int i = 0; i < METRICS_CLOSE_COUNT; i++)
		fprintf(f, "egang_connections_closed_total{reason=\"%s\"} %llu\n",
			why[i], (unsigned long long)m->closed[i]);
}

char *metrics_text(metrics_t *m, int depth, bool busy)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort();
	pthread_mutex_lock(&m->mu);
	metrics_print_requests(f, m);
	metrics_print_gang(f, m, depth, busy);
	metrics_print_batch(f, m);
	metrics_print_lifecycle(f, m);
	pthread_mutex_unlock(&m->mu);
	metrics_print_policy(f, m);
	metric_head(f, "process_resident_memory_bytes", "gauge",
		    "Resident set size (VmRSS).");
	fprintf(f, "process_resident_memory_bytes %ld\n", rss_bytes());
	metric_head(f, "process_cpu_seconds_total", "counter",
		    "CPU time of every thread of the server (user and system).");
	fprintf(f, "process_cpu_seconds_total %.6f\n", process_cpu_s());
	fclose(f);
	return text;
}
