/* serve_load: the `bench serve` load generator (serve_load.h). */
#include "bench/serve_load.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/base.h"
#include "base/stats.h"
#include "bench/loadgen.h"

typedef struct bench_cfg {
	serve_load_config_t c;
	char url[1024]; /* without a trailing '/' */
	uint64_t t0, t_end;
	unsigned run;   /* --vary: this run's tag, so runs differ too */
	char *body;
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

static void client_fail(client_t *cl, const char *fmt, const char *a, long b)
{
	cl->failed++;
	if (!cl->why[0])
		snprintf(cl->why, sizeof cl->why, fmt, a, b);
}

static void *client_main(void *arg)
{
	client_t *cl = arg;
	const bench_cfg_t *c = cl->cfg;
	CURL *h = curl_easy_init();
	char url[1100];
	snprintf(url, sizeof url, "%s%s", c->url,
		 c->c.chat ? "/v1/chat/completions" : "/v1/completions");
	struct curl_slist *hdr = loadgen_headers(c->c.api_key);
	loadgen_stream_t *st = malloc(sizeof *st);
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
		char *body = NULL;
		if (c->c.vary) { /* its own first tokens: no prefix-cache hit */
			char *text = NULL;
			if (asprintf(&text, "%x.%d.%llu %s", c->run, cl->index,
				     (unsigned long long)n_req, c->c.prompt) < 0)
				break;
			body = loadgen_body(text, c->c.max_tokens, c->c.chat, 0.8);
			free(text);
			if (!body)
				break;
		}
		n_req++;
		loadgen_setup(h, url, hdr, body ? body : c->body, c->c.req_timeout, st);
		st->t0 = time_now_ns();
		CURLcode rc = curl_easy_perform(h);
		long code = 0;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		if (rc != CURLE_OK) {
			client_fail(cl, "transport error: %s (HTTP %ld)",
				    curl_easy_strerror(rc), code);
		} else if (code == 429) {
			cl->busy++;
			usleep(20000); /* back off a little */
		} else if (code != 200) {
			client_fail(cl, "%sHTTP %ld", "", code);
		} else if (!st->done_seen) {
			client_fail(cl, "%sstream ended without data: [DONE] (HTTP %ld)",
				    "", code);
		} else {
			cl->ok++;
			cl->tokens += (uint64_t)(st->completion_tokens > 0 ? st->completion_tokens : 0);
			if (st->t_first) {
				if (cl->n_ttft == cl->cap_ttft) {
					cl->cap_ttft = cl->cap_ttft ? 2 * cl->cap_ttft : 64;
					cl->ttft = realloc(cl->ttft, cl->cap_ttft * sizeof *cl->ttft);
				}
				cl->ttft[cl->n_ttft++] = (double)(st->t_first - st->t0) / 1e9;
			}
		}
		/* seq_cst RMWs, stronger than needed: exactly one client
		 * reads the RSS after the 100th request; the joins order
		 * rss_100 before the report */
		if (atomic_fetch_add(&cl->sh->done, 1) + 1 == 100 &&
		    !atomic_exchange(&cl->sh->rss_taken, 1))
			cl->sh->rss_100 = server_rss(c);
		free(body);
	}
	free(st);
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
	*exit_code = EXIT_FAIL;
	bench_shared_t sh = {0};
	client_t *cl = calloc((size_t)c->clients, sizeof *cl);
	pthread_t *th = calloc((size_t)c->clients, sizeof *th);
	if (!cl || !th || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		free(cl);
		free(th);
		free(b.body);
		return err_set("bench serve: curl_global_init failed");
	}
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
	*exit_code = EXIT_OK;
	return 0;
}
