/* egang bench serve: a load generator for `egang serve` (the clients:
 * bench/serve_load.h). Prints one summary line. */
#include <stdio.h>

#include "bench/serve_load.h"
#include "cli/cli.h"
#include "cli/cmd_bench.h"

static const char bench_serve_help[] =
	"usage: egang bench serve --url URL [options]\n"
	"\n"
	"Load for `egang serve`: CLIENTS threads send streaming completions back\n"
	"to back for SECONDS. Every request must get a 200 with a complete event\n"
	"stream or a 429; anything else counts as failed and makes the exit\n"
	"status 1: failed_connect (no response: a refused connection, a timeout\n"
	"before the status line), failed_status (another status), failed_stream\n"
	"(a 200 whose stream broke: a transport error or timeout, no data:\n"
	"[DONE], an error event, or finish_reason \"length\" before --max-tokens,\n"
	"an answer cut short; keep prompt + --max-tokens within the server's\n"
	"--ctx). Prints one line starting \"bench serve\": requests/s,\n"
	"time to first token p50/p99, generated tok/s, the server's CPU seconds\n"
	"over the run and per generated token (from /metrics'\n"
	"process_cpu_seconds_total: the clients' CPU is not in it), and the\n"
	"server's RSS after the first 100 requests and at the end (from /metrics'\n"
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
	"      --requests N        stop after N requests (default: at --seconds)\n"
	"      --vary              start each prompt with \"RUN.CLIENT.N \" (RUN: a\n"
	"                          tag of this run; distinct prompts, no\n"
	"                          prefix-cache hits, also across runs)\n"
	"      --ramp S            start the clients one after another over S\n"
	"                          seconds (client i at i*S/N; default 0: all at\n"
	"                          once, a burst of N first requests)\n"
	"      --turns N           conversations of N turns: each turn's prompt is\n"
	"                          the last turn's prompt and answer, then --prompt\n"
	"                          (the first starts with \"RUN-CLIENT-CONV \", its\n"
	"                          id); a 429 asks the turn again, a failure starts\n"
	"                          a new conversation\n"
	"      --session-header NAME  with --turns: send 'NAME: ID' (a balancer's\n"
	"                          affinity key, e.g. X-Session-Id)\n"
	"      --log FILE          one CSV line per request: client, request,\n"
	"                          session, turn, start_s, end_s (Unix time),\n"
	"                          status (0: none), outcome (ok, busy,\n"
	"                          failed_connect|status|stream), ttft_s,\n"
	"                          prompt_tokens, completion_tokens, header\n"
	"      --log-header NAME   the response header logged as 'header' (e.g.\n"
	"                          the replica name a balancer adds)\n"
	"  -h, --help              this text\n";

static void print_result(const serve_load_result_t *r)
{
	char rss[160];
	if (r->rss_100 > 0 && r->rss_end > 0)
		snprintf(rss, sizeof rss, "rss_after_100 %.1f MB rss_end %.1f MB "
			 "rss_growth %+.1f%%", (double)r->rss_100 / 1e6,
			 (double)r->rss_end / 1e6,
			 100.0 * ((double)r->rss_end - (double)r->rss_100) / (double)r->rss_100);
	else
		snprintf(rss, sizeof rss, "rss_end %.1f MB rss_growth n/a (%s)",
			 (double)r->rss_end / 1e6,
			 r->total < 100 ? "fewer than 100 requests" : "no RSS reading");
	char cpu[96];
	if (r->server_cpu_s >= 0 && r->tokens > 0)
		snprintf(cpu, sizeof cpu, "server_cpu_s %.2f cpu_ms_per_tok %.2f",
			 r->server_cpu_s, 1e3 * r->server_cpu_s / (double)r->tokens);
	else
		snprintf(cpu, sizeof cpu, "server_cpu_s n/a");
	printf("bench serve: clients %d seconds %.1f requests %llu ok %llu "
	       "busy_429 %llu failed %llu failed_connect %llu failed_status %llu "
	       "failed_stream %llu req/s %.2f ttft_p50 %.1f ms "
	       "ttft_p99 %.1f ms tok/s %.1f per_stream_tok/s %.2f queue_wait %.1f ms %s %s\n",
	       r->started, r->wall_s, (unsigned long long)r->total,
	       (unsigned long long)r->ok, (unsigned long long)r->busy,
	       (unsigned long long)r->failed, (unsigned long long)r->failed_connect,
	       (unsigned long long)r->failed_status,
	       (unsigned long long)r->failed_stream, (double)r->total / r->wall_s,
	       1e3 * r->ttft_p50_s, 1e3 * r->ttft_p99_s, (double)r->tokens / r->wall_s,
	       (double)r->tokens / r->wall_s / (r->started ? r->started : 1),
	       r->queue_wait_s >= 0 ? 1e3 * r->queue_wait_s : -1.0, cpu, rss);
	if (r->failed)
		log_error("bench serve: %llu request%s failed; the first: %s",
			  (unsigned long long)r->failed, r->failed > 1 ? "s" : "",
			  r->why[0] ? r->why : "?");
}

int cmd_bench_serve(int argc, char **argv)
{
	const char *url = NULL, *prompt = "Once upon a time", *api_key = NULL;
	const char *session_header = NULL, *log_path = NULL, *log_header = NULL;
	int64_t clients = 8, max_tokens = 16, pid = 0, req_timeout = 120, requests = 0;
	int64_t turns = 0;
	bool vary = false;
	double seconds = 10, ramp = 0;
	bool chat = false;
	const cli_opt_t opts[] = {
		OPT_STR("url", 0, &url, .required = true),
		OPT_INT("clients", 0, &clients, 1, 1024),
		OPT_FLOAT("seconds", 0, &seconds, 0.1, 86400),
		OPT_INT("max-tokens", 0, &max_tokens, 1, 1 << 20),
		OPT_STR("prompt", 0, &prompt, .empty_ok = true),
		OPT_FLAG("chat", 0, &chat),
		OPT_STR("api-key", 0, &api_key),
		OPT_INT("pid", 0, &pid, 1, 1 << 30),
		OPT_INT("request-timeout", 0, &req_timeout, 1, 86400),
		OPT_INT("requests", 0, &requests, 1, 1 << 30),
		OPT_FLAG("vary", 0, &vary),
		OPT_FLOAT("ramp", 0, &ramp, 0, 86400),
		OPT_INT("turns", 0, &turns, 1, 1 << 20),
		OPT_STR("session-header", 0, &session_header),
		OPT_STR("log", 0, &log_path),
		OPT_STR("log-header", 0, &log_header),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "bench serve", .help = bench_serve_help,
			       .opts = opts};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	if (ramp >= seconds) {
		log_error("bench serve: --ramp %g is not shorter than --seconds %g", ramp, seconds);
		return EXIT_INPUT;
	}
	if (session_header && !turns) {
		log_error("bench serve: --session-header needs --turns (it names a conversation)");
		return EXIT_INPUT;
	}
	serve_load_config_t c = {.url = url, .prompt = prompt, .api_key = api_key,
				 .clients = (int)clients, .seconds = seconds,
				 .max_tokens = (int)max_tokens, .chat = chat,
				 .pid = (long)pid, .req_timeout = (long)req_timeout,
				 .requests = (long)requests, .vary = vary,
				 .ramp = ramp, .turns = (int)turns,
				 .session_header = session_header,
				 .log_path = log_path, .log_header = log_header};
	serve_load_result_t r;
	if (serve_load_run(&c, &r, &status) < 0) {
		log_error("%s", err_get());
		return status;
	}
	print_result(&r);
	return r.failed || r.started < c.clients ? EXIT_FAIL : EXIT_OK;
}
