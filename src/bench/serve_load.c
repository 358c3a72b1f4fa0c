/* serve_load: the `bench serve` load generator (serve_load.h). */
#include "bench/serve_load.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/base.h"
#include "base/stats.h"
#include "bench/loadgen.h"
#include "server/buf.h"

typedef enum outcome {
	OUTCOME_OK,
	OUTCOME_BUSY,           /* 429 */
	OUTCOME_FAILED_CONNECT, /* no status line came */
	OUTCOME_FAILED_STATUS,  /* a status other than 200/429 */
	OUTCOME_FAILED_STREAM,  /* a 200 whose stream broke */
	OUTCOME_COUNT
} outcome_t;

static const char *const outcome_names[OUTCOME_COUNT] = {
	"ok", "busy", "failed_connect", "failed_status", "failed_stream",
};

typedef struct bench_cfg {
	serve_load_config_t c;
	char url[1024]; /* without a trailing '/' */
	uint64_t t0, t_end;
	unsigned run;   /* --vary: this run's tag, so runs differ too */
	char *body;
	FILE *log;      /* log_path, NULL without one */
} bench_cfg_t;

typedef struct bench_shared {
	_Atomic uint64_t done; /* requests finished (any outcome) */
	_Atomic uint64_t issued; /* requests started (--requests) */
	_Atomic int rss_taken;
	long rss_100;
} bench_shared_t;

typedef struct client {
	const bench_cfg_t *cfg;
	bench_shared_t *sh;
	uint64_t ok, busy, failed, tokens;
	uint64_t failed_kind[OUTCOME_COUNT];
	int index;
	double *ttft; /* seconds, one per 200 */
	size_t n_ttft, cap_ttft;
	char why[200]; /* the first failure */
} client_t;

/* GET url/metrics and read the value of `name` (a sample line "name V");
 * -1 if absent. */
static double metric_value(const char *base, const char *key, const char *name)
{
	char url[1024];
	snprintf(url, sizeof url, "%s/metrics", base);
	CURL *h = curl_easy_init();
	if (!h)
		return 0;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct curl_slist *hdr = NULL;
	char auth[512];
	if (key) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
		hdr = curl_slist_append(hdr, auth);
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, f);
	CURLcode rc = curl_easy_perform(h);
	fclose(f);
	curl_easy_cleanup(h);
	curl_slist_free_all(hdr);
	double v = -1;
	char want[200];
	snprintf(want, sizeof want, "\n%s ", name);
	const char *p = rc == CURLE_OK && buf ? strstr(buf, want) : NULL;
	if (p)
		v = strtod(p + strlen(want), NULL);
	free(buf);
	return v;
}

/* process_resident_memory_bytes from url/metrics; 0 if absent. */
static long rss_from_metrics(const char *base, const char *key)
{
	double v = metric_value(base, key, "process_resident_memory_bytes");
	return v > 0 ? (long)v : 0;
}

static long rss_from_proc(long pid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%ld/status", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	long kb = 0;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = strtol(line + 6, NULL, 10);
	fclose(f);
	return kb * 1024;
}

static long server_rss(const bench_cfg_t *b)
{
	return b->c.pid ? rss_from_proc(b->c.pid) : rss_from_metrics(b->url, b->c.api_key);
}

/* ---- one request ---- */

/* The outcome of a finished transfer (rc, its status code), with why
 * (a failure's reason) filled in for a failure. */
static outcome_t classify(const loadgen_stream_t *st, CURLcode rc, long code,
			  int max_tokens, char *why, size_t n)
{
	if (code == 0) {
		snprintf(why, n, "no response: %s", curl_easy_strerror(rc));
		return OUTCOME_FAILED_CONNECT;
	}
	if (code == 429)
		return OUTCOME_BUSY;
	if (code != 200) {
		snprintf(why, n, "HTTP %ld", code);
		return OUTCOME_FAILED_STATUS;
	}
	if (rc != CURLE_OK)
		snprintf(why, n, "stream broken: %s (HTTP 200)", curl_easy_strerror(rc));
	else if (st->error_seen)
		snprintf(why, n, "stream ended with an error event (HTTP 200)");
	else if (!st->done_seen)
		snprintf(why, n, "stream ended without data: [DONE] (HTTP 200)");
	else if (!strcmp(st->finish, "length") && st->completion_tokens >= 0 &&
		 st->completion_tokens < max_tokens)
		snprintf(why, n, "stream cut short: finish_reason length after %lld "
			 "of %d tokens (HTTP 200)", (long long)st->completion_tokens,
			 max_tokens);
	else
		return OUTCOME_OK;
	return OUTCOME_FAILED_STREAM;
}

static double unix_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A client's conversation (turns): its id and the prompt so far. */
typedef struct convo {
	unsigned index;    /* the client's conversations, from 0 */
	int turn;          /* 1.. */
	char id[64];
	sbuf_t prompt;
} convo_t;

/* The next request's body: the conversation's next turn (turns), a
 * prompt of its own (vary), or the shared body (NULL: use cfg->body). */
static char *client_body(client_t *cl, convo_t *cv, uint64_t n_req)
{
	const bench_cfg_t *c = cl->cfg;
	char *text = NULL, *body;
	if (c->c.turns) {
		if (cv->turn == 1) {
			snprintf(cv->id, sizeof cv->id, "%x-%d-%u", c->run, cl->index, cv->index);
			cv->prompt.len = 0;
			sbuf_str(&cv->prompt, cv->id);
			sbuf_str(&cv->prompt, " ");
		}
		sbuf_str(&cv->prompt, c->c.prompt);
		return loadgen_body(cv->prompt.p, c->c.max_tokens, c->c.chat, 0.8);
	}
	if (!c->c.vary) /* its own first tokens: no prefix-cache hit */
		return NULL;
	if (asprintf(&text, "%x.%d.%llu %s", c->run, cl->index,
		     (unsigned long long)n_req, c->c.prompt) < 0)
		return NULL;
	body = loadgen_body(text, c->c.max_tokens, c->c.chat, 0.8);
	free(text);
	return body;
}

/* After a turn: an answered one adds its text to the conversation and
 * the next turn follows (a new conversation after the last); a refused
 * one (429) is asked again; a failed one ends the conversation. */
static void convo_next(const bench_cfg_t *c, convo_t *cv, outcome_t o,
		       const loadgen_stream_t *st)
{
	if (o == OUTCOME_BUSY) { /* the same turn again */
		cv->prompt.len -= strlen(c->c.prompt);
		cv->prompt.p[cv->prompt.len] = '\0';
		return;
	}
	if (o == OUTCOME_OK && cv->turn < c->c.turns) {
		if (st->text.len)
			sbuf_add(&cv->prompt, st->text.p, st->text.len);
		sbuf_str(&cv->prompt, " ");
		cv->turn++;
		return;
	}
	cv->index++;
	cv->turn = 1;
}

/* The request's headers: the shared ones and, with a session header, the
 * conversation's id (a list of its own, freed by the caller). */
static struct curl_slist *client_headers(const bench_cfg_t *c, const convo_t *cv)
{
	struct curl_slist *hdr = loadgen_headers(c->c.api_key);
	char line[256];
	snprintf(line, sizeof line, "%s: %s", c->c.session_header, cv->id);
	return curl_slist_append(hdr, line);
}

/* Counts one request's outcome into cl, its TTFT with an ok. */
static void client_count(client_t *cl, outcome_t o, const loadgen_stream_t *st,
			 const char *why)
{
	if (o == OUTCOME_OK) {
		cl->ok++;
		cl->tokens += (uint64_t)(st->completion_tokens > 0 ? st->completion_tokens : 0);
		if (st->t_first) {
			if (cl->n_ttft == cl->cap_ttft) {
				cl->cap_ttft = cl->cap_ttft ? 2 * cl->cap_ttft : 64;
				cl->ttft = realloc(cl->ttft, cl->cap_ttft * sizeof *cl->ttft);
			}
			cl->ttft[cl->n_ttft++] = (double)(st->t_first - st->t0) / 1e9;
		}
		return;
	}
	if (o == OUTCOME_BUSY) {
		cl->busy++;
		usleep(20000); /* back off a little */
		return;
	}
	cl->failed++;
	cl->failed_kind[o]++;
	if (!cl->why[0])
		snprintf(cl->why, sizeof cl->why, "%s", why);
}

static void client_log(const client_t *cl, uint64_t n_req, const convo_t *cv,
		       double t_start, long code, outcome_t o,
		       const loadgen_stream_t *st)
{
	const bench_cfg_t *c = cl->cfg;
	if (!c->log)
		return;
	double ttft = st->t_first ? (double)(st->t_first - st->t0) / 1e9 : -1;
	/* one fprintf per line: stdio locks the stream for the call, so the
	 * clients' lines do not interleave */
	fprintf(c->log, "%d,%llu,%s,%d,%.3f,%.3f,%ld,%s,%.4f,%lld,%lld,%s\n",
		cl->index, (unsigned long long)n_req, c->c.turns ? cv->id : "",
		c->c.turns ? cv->turn : 0, t_start, unix_now(), code,
		outcome_names[o], ttft, (long long)st->prompt_tokens,
		(long long)st->completion_tokens, st->header_value);
}

static void *client_main(void *arg)
{
	client_t *cl = arg;
	const bench_cfg_t *c = cl->cfg;
	CURL *h = curl_easy_init();
	char url[1100], why[200];
	snprintf(url, sizeof url, "%s%s", c->url,
		 c->c.chat ? "/v1/chat/completions" : "/v1/completions");
	struct curl_slist *hdr = loadgen_headers(c->c.api_key);
	loadgen_stream_t *st = calloc(1, sizeof *st);
	convo_t cv = {.turn = 1};
	uint64_t n_req = 0;
	uint64_t start = c->t0 + (uint64_t)(c->c.ramp * 1e9 * cl->index / c->c.clients);
	for (uint64_t now; (now = time_now_ns()) < start && now < c->t_end;)
		time_sleep_until(now, start);
	while (h && st && time_now_ns() < c->t_end) {
		/* relaxed: a count, orders nothing */
		if (c->c.requests && atomic_fetch_add_explicit(&cl->sh->issued, 1,
							      memory_order_relaxed) >=
					     (uint64_t)c->c.requests)
			break;
		char *body = client_body(cl, &cv, n_req);
		if ((c->c.vary || c->c.turns) && !body)
			break;
		struct curl_slist *sess = c->c.session_header ? client_headers(c, &cv) : NULL;
		loadgen_setup(h, url, sess ? sess : hdr, body ? body : c->body,
			      c->c.req_timeout, st);
		st->keep_text = c->c.turns > 0;
		st->want_header = c->c.log_header;
		double t_start = unix_now();
		st->t0 = time_now_ns();
		CURLcode rc = curl_easy_perform(h);
		long code = 0;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		why[0] = '\0';
		outcome_t o = classify(st, rc, code, c->c.max_tokens, why, sizeof why);
		client_log(cl, n_req, &cv, t_start, code, o, st);
		client_count(cl, o, st, why);
		if (c->c.turns)
			convo_next(c, &cv, o, st);
		n_req++;
		/* seq_cst RMWs, stronger than needed: exactly one client
		 * reads the RSS after the 100th request; the joins order
		 * rss_100 before the report */
		if (atomic_fetch_add(&cl->sh->done, 1) + 1 == 100 &&
		    !atomic_exchange(&cl->sh->rss_taken, 1))
			cl->sh->rss_100 = server_rss(c);
		curl_slist_free_all(sess);
		free(body);
	}
	if (st)
		sbuf_free(&st->text);
	free(st);
	sbuf_free(&cv.prompt);
	curl_slist_free_all(hdr);
	if (h)
		curl_easy_cleanup(h);
	return NULL;
}

/* Sums the clients into r; the TTFT percentiles over all of them. */
static void collect(client_t *cl, int started, serve_load_result_t *r)
{
	size_t n_ttft = 0, k = 0;
	for (int i = 0; i < started; i++) {
		r->ok += cl[i].ok;
		r->busy += cl[i].busy;
		r->failed += cl[i].failed;
		r->failed_connect += cl[i].failed_kind[OUTCOME_FAILED_CONNECT];
		r->failed_status += cl[i].failed_kind[OUTCOME_FAILED_STATUS];
		r->failed_stream += cl[i].failed_kind[OUTCOME_FAILED_STREAM];
		r->tokens += cl[i].tokens;
		n_ttft += cl[i].n_ttft;
		if (!r->why[0] && cl[i].why[0])
			snprintf(r->why, sizeof r->why, "%s", cl[i].why);
	}
	r->total = r->ok + r->busy + r->failed;
	double *all = malloc((n_ttft ? n_ttft : 1) * sizeof *all);
	for (int i = 0; all && i < started; i++) {
		memcpy(all + k, cl[i].ttft, cl[i].n_ttft * sizeof *all);
		k += cl[i].n_ttft;
	}
	r->ttft_p50_s = all ? stats_quantile(all, k, 0.5) : 0;
	r->ttft_p99_s = all ? stats_quantile(all, k, 0.99) : 0;
	free(all);
}

int serve_load_run(const serve_load_config_t *c, serve_load_result_t *r,
		   int *exit_code)
{
	static bench_cfg_t b;
	memset(&b, 0, sizeof b);
	memset(r, 0, sizeof *r);
	b.c = *c;
	snprintf(b.url, sizeof b.url, "%s", c->url);
	for (size_t ul = strlen(b.url); ul && b.url[ul - 1] == '/';)
		b.url[--ul] = '\0';
	*exit_code = EXIT_INPUT;
	if (!(b.body = loadgen_body(c->prompt, c->max_tokens, c->chat, 0.8)))
		return err_set("bench serve: --prompt is not valid UTF-8");
	if (c->log_path && !(b.log = fopen(c->log_path, "w"))) {
		free(b.body);
		return err_set("bench serve: --log %s: %s", c->log_path, strerror(errno));
	}
	if (b.log) {
		/* a line per request as it ends: a reader can follow the run */
		setvbuf(b.log, NULL, _IOLBF, 0);
		fputs("client,request,session,turn,start_s,end_s,status,outcome,"
		      "ttft_s,prompt_tokens,completion_tokens,header\n", b.log);
	}
	*exit_code = EXIT_FAIL;
	bench_shared_t sh = {0};
	client_t *cl = calloc((size_t)c->clients, sizeof *cl);
	pthread_t *th = calloc((size_t)c->clients, sizeof *th);
	if (!cl || !th || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		free(cl);
		free(th);
		free(b.body);
		if (b.log)
			fclose(b.log);
		return err_set("bench serve: curl_global_init failed");
	}
	/* the server's CPU time over the run: its own counter, so that the
	 * clients' CPU (on the same machine, often) is not in it */
	double cpu0 = metric_value(b.url, c->api_key, "process_cpu_seconds_total");
	uint64_t t0 = time_now_ns();
	b.t0 = t0;
	/* without it a second run against the same server sent the first
	 * run's prompts again and hit its prefix cache */
	b.run = (unsigned)((t0 ^ ((uint64_t)getpid() << 20)) & 0xffffff);
	b.t_end = t0 + (uint64_t)(c->seconds * 1e9);
	for (int i = 0; i < c->clients; i++) {
		cl[i].cfg = &b;
		cl[i].index = i;
		cl[i].sh = &sh;
		if (pthread_create(&th[i], NULL, client_main, &cl[i]))
			break;
		r->started++;
	}
	for (int i = 0; i < r->started; i++)
		pthread_join(th[i], NULL);
	r->wall_s = (double)(time_now_ns() - t0) / 1e9;
	r->rss_end = server_rss(&b);
	double cpu1 = metric_value(b.url, c->api_key, "process_cpu_seconds_total");
	r->server_cpu_s = cpu0 >= 0 && cpu1 >= cpu0 ? cpu1 - cpu0 : -1;
	double qs = metric_value(b.url, c->api_key, "egang_queue_wait_seconds_sum");
	double qn = metric_value(b.url, c->api_key, "egang_queue_wait_seconds_count");
	r->queue_wait_s = qs >= 0 && qn > 0 ? qs / qn : -1;
	r->rss_100 = atomic_load(&sh.rss_taken) ? sh.rss_100 : 0; /* after the joins */
	collect(cl, r->started, r);
	for (int i = 0; i < r->started; i++)
		free(cl[i].ttft);
	free(cl);
	free(th);
	free(b.body);
	curl_global_cleanup();
	if (b.log && fclose(b.log)) {
		*exit_code = EXIT_INPUT;
		return err_set("bench serve: --log %s: %s", c->log_path, strerror(errno));
	}
	*exit_code = EXIT_OK;
	return 0;
}
