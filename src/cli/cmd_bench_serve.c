/* egang bench serve: a load generator for `egang serve`. One thread per
 * client, each sending streaming completions back to back with libcurl
 * until the time is up; every request must end in a 200 with a complete
 * stream ("data: [DONE]") or in a 429. Prints one summary line. */
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cli/cli.h"
#include "cli/loadgen.h"

static const char bench_serve_help[] =
	"usage: egang bench serve --url URL [options]\n"
	"\n"
	"Load for `egang serve`: CLIENTS threads send streaming completions back\n"
	"to back for SECONDS. Every request must get a 200 with a complete event\n"
	"stream or a 429; anything else (another status, a transport error, a\n"
	"stream without data: [DONE], a timeout) counts as failed and makes the\n"
	"exit status 1. Prints one line starting \"bench serve\": requests/s,\n"
	"time to first token p50/p99, generated tok/s, and the server's RSS\n"
	"after the first 100 requests and at the end (from /metrics'\n"
	"process_resident_memory_bytes, or /proc/PID/status with --pid).\n"
	"\n"
	"      --url URL           the server, e.g. http://127.0.0.1:8080 (required)\n"
	"      --clients N         concurrent clients (default 8)\n"
	"      --seconds S         duration (default 10)\n"
	"      --max-tokens N      tokens per request (default 16)\n"
	"      --prompt TEXT       prompt (default \"Once upon a time\")\n"
	"      --chat              use /v1/chat/completions instead\n"
	"      --api-key KEY       send 'Authorization: Bearer KEY'\n"
	"      --pid PID           read the server's RSS from /proc/PID/status\n"
	"      --request-timeout S give up on one request after S s (default 120)\n"
	"  -h, --help              this text\n";

typedef struct bench_cfg {
	const char *url, *prompt, *api_key;
	int clients;
	double seconds;
	int max_tokens;
	bool chat;
	long pid;
	long req_timeout;
	uint64_t t_end;
	char *body;
} bench_cfg_t;

typedef struct bench_shared {
	_Atomic uint64_t done; /* requests finished (any outcome) */
	_Atomic int rss_taken;
	long rss_100;
} bench_shared_t;

typedef struct client {
	const bench_cfg_t *cfg;
	bench_shared_t *sh;
	uint64_t ok, busy, failed, tokens;
	double *ttft; /* seconds, one per 200 */
	size_t n_ttft, cap_ttft;
	char why[200]; /* the first failure */
} client_t;

/* GET url/metrics and read process_resident_memory_bytes; 0 if absent. */
static long rss_from_metrics(const char *base, const char *key)
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
	long v = 0;
	const char *p = rc == CURLE_OK && buf ? strstr(buf, "\nprocess_resident_memory_bytes ") : NULL;
	if (p)
		v = strtol(p + 31, NULL, 10);
	free(buf);
	return v;
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

static long server_rss(const bench_cfg_t *c)
{
	return c->pid ? rss_from_proc(c->pid) : rss_from_metrics(c->url, c->api_key);
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
	char url[1024];
	snprintf(url, sizeof url, "%s%s", c->url,
		 c->chat ? "/v1/chat/completions" : "/v1/completions");
	struct curl_slist *hdr = loadgen_headers(c->api_key);
	loadgen_stream_t *st = malloc(sizeof *st);
	while (h && st && time_now_ns() < c->t_end) {
		loadgen_setup(h, url, hdr, c->body, c->req_timeout, st);
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
		if (atomic_fetch_add(&cl->sh->done, 1) + 1 == 100 &&
		    !atomic_exchange(&cl->sh->rss_taken, 1))
			cl->sh->rss_100 = server_rss(c);
	}
	free(st);
	curl_slist_free_all(hdr);
	if (h)
		curl_easy_cleanup(h);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double pct(const double *v, size_t n, double p)
{
	if (!n)
		return 0;
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

int cmd_bench_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{"url", required_argument, 0, 'u'},
		{"clients", required_argument, 0, 'c'},
		{"seconds", required_argument, 0, 's'},
		{"max-tokens", required_argument, 0, 'n'},
		{"prompt", required_argument, 0, 'p'},
		{"chat", no_argument, 0, 'C'},
		{"api-key", required_argument, 0, 'k'},
		{"pid", required_argument, 0, 'P'},
		{"request-timeout", required_argument, 0, 'T'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	bench_cfg_t c = {.prompt = "Once upon a time", .clients = 8,
			 .seconds = 10, .max_tokens = 16, .req_timeout = 120};
	int64_t v;
	double d;
	int opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		int bad = 0;
		switch (opt) {
		case 'u': c.url = optarg; break;
		case 'c': bad = cli_int("--clients", optarg, 1, 1024, &v); c.clients = (int)v; break;
		case 's': bad = cli_float("--seconds", optarg, 0.1, 86400, &d); c.seconds = d; break;
		case 'n': bad = cli_int("--max-tokens", optarg, 1, 1 << 20, &v); c.max_tokens = (int)v; break;
		case 'p': c.prompt = optarg; break;
		case 'C': c.chat = true; break;
		case 'k': c.api_key = optarg; break;
		case 'P': bad = cli_int("--pid", optarg, 1, 1 << 30, &v); c.pid = (long)v; break;
		case 'T': bad = cli_int("--request-timeout", optarg, 1, 86400, &v); c.req_timeout = (long)v; break;
		case 'h': fputs(bench_serve_help, stdout); return EXIT_OK;
		default: return cli_usage_error("bench serve", argv[optind - 1]);
		}
		if (bad)
			return EXIT_INPUT;
	}
	if (cli_no_more_args("bench serve", argc, argv) < 0)
		return EXIT_INPUT;
	if (!c.url) {
		log_error("bench serve: --url URL is required");
		return EXIT_INPUT;
	}
	char url[1024];
	snprintf(url, sizeof url, "%s", c.url);
	size_t ul = strlen(url);
	while (ul && url[ul - 1] == '/')
		url[--ul] = '\0';
	c.url = url;
	c.body = loadgen_body(c.prompt, c.max_tokens, c.chat, 0.8);
	if (!c.body) {
		log_error("bench serve: --prompt is not valid UTF-8");
		return EXIT_INPUT;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		log_error("bench serve: curl_global_init failed");
		free(c.body);
		return EXIT_FAIL;
	}
	bench_shared_t sh = {0};
	client_t *cl = calloc((size_t)c.clients, sizeof *cl);
	pthread_t *th = calloc((size_t)c.clients, sizeof *th);
	uint64_t t0 = time_now_ns();
	c.t_end = t0 + (uint64_t)(c.seconds * 1e9);
	int started = 0;
	for (int i = 0; i < c.clients; i++) {
		cl[i].cfg = &c;
		cl[i].sh = &sh;
		if (pthread_create(&th[i], NULL, client_main, &cl[i]))
			break;
		started++;
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	double wall = (double)(time_now_ns() - t0) / 1e9;
	long rss_end = server_rss(&c);
	uint64_t ok = 0, busy = 0, failed = 0, tokens = 0;
	size_t n_ttft = 0;
	const char *why = NULL;
	for (int i = 0; i < started; i++) {
		ok += cl[i].ok;
		busy += cl[i].busy;
		failed += cl[i].failed;
		tokens += cl[i].tokens;
		n_ttft += cl[i].n_ttft;
		if (!why && cl[i].why[0])
			why = cl[i].why;
	}
	double *all = malloc((n_ttft ? n_ttft : 1) * sizeof *all);
	size_t k = 0;
	for (int i = 0; i < started; i++) {
		memcpy(all + k, cl[i].ttft, cl[i].n_ttft * sizeof *all);
		k += cl[i].n_ttft;
	}
	qsort(all, n_ttft, sizeof *all, cmp_double);
	uint64_t total = ok + busy + failed;
	char rss[160];
	if (sh.rss_taken && sh.rss_100 > 0 && rss_end > 0)
		snprintf(rss, sizeof rss, "rss_after_100 %.1f MB rss_end %.1f MB "
			 "rss_growth %+.1f%%", (double)sh.rss_100 / 1e6,
			 (double)rss_end / 1e6,
			 100.0 * ((double)rss_end - (double)sh.rss_100) / (double)sh.rss_100);
	else
		snprintf(rss, sizeof rss, "rss_end %.1f MB rss_growth n/a (%s)",
			 (double)rss_end / 1e6,
			 total < 100 ? "fewer than 100 requests" : "no RSS reading");
	printf("bench serve: clients %d seconds %.1f requests %llu ok %llu "
	       "busy_429 %llu failed %llu req/s %.2f ttft_p50 %.1f ms "
	       "ttft_p99 %.1f ms tok/s %.1f %s\n",
	       started, wall, (unsigned long long)total, (unsigned long long)ok,
	       (unsigned long long)busy, (unsigned long long)failed,
	       (double)total / wall, 1e3 * pct(all, n_ttft, 0.5),
	       1e3 * pct(all, n_ttft, 0.99), (double)tokens / wall, rss);
	if (failed)
		log_error("bench serve: %llu request%s failed; the first: %s",
			  (unsigned long long)failed, failed > 1 ? "s" : "",
			  why ? why : "?");
	for (int i = 0; i < started; i++)
		free(cl[i].ttft);
	free(all);
	free(cl);
	free(th);
	free(c.body);
	curl_global_cleanup();
	return failed || started < c.clients ? EXIT_FAIL : EXIT_OK;
}
