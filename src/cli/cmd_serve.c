/* egang serve: the OpenAI-compatible HTTP server (src/server/server.h). */
#include <arpa/inet.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "gang/gang.h"
#include "model/model.h"
#include "policy/control.h"
#include "policy/policy.h"
#include "scx/scx.h"
#include "server/server.h"

static const char serve_help[] =
	"usage: egang serve -m MODEL [options]\n"
	"\n"
	"Serves the model over an OpenAI-compatible HTTP API: POST /v1/completions,\n"
	"POST /v1/chat/completions (both with \"stream\": true as server-sent\n"
	"events), GET /v1/models, GET /health, GET /metrics (Prometheus text).\n"
	"One generation runs at a time on the elastic gang; the others wait in a\n"
	"bounded FIFO queue (full: 429). SIGINT/SIGTERM cancel the running\n"
	"generation, answer queued requests with 503 and exit 0.\n"
	"\n"
	"  -m, --model FILE        GGUF file or llama2.c checkpoint (required)\n"
	"  -z, --tokenizer FILE    llama2.c tokenizer.bin (required for .bin models)\n"
	"      --host ADDR         numeric address to bind (default 127.0.0.1)\n"
	"      --port N            TCP port (default 8080; 0 = any free port)\n"
	"      --cores LIST        gang CPUs, e.g. 0-3 (default: all allowed;\n"
	"                          1 CPU = run serially)\n"
	"      --policy P          the initial policy, a name or an index of the\n"
	"                          library (default elastic, 0; `egang policy list`);\n"
	"                          written into the control word at start\n"
	"      --policies FILE     add a user policy library (INI, see `egang policy\n"
	"                          --help`); every record is validated at start\n"
	"      --control PATH      control word the leader reads before every token\n"
	"                          (default $XDG_RUNTIME_DIR/egang-control, else\n"
	"                          /dev/shm/egang-control-$UID); `egang policy set`\n"
	"                          writes it\n"
	"      --backend B         user (default): the gang's own acquire modes;\n"
	"                          scx: the sched_ext BPF policies enforce them in\n"
	"                          the kernel (loads egang's scheduler unless it is\n"
	"                          loaded, sets its index to --policy, puts the\n"
	"                          server's threads in SCHED_EXT; `egang scx --help`)\n"
	"      --ctx N             context length: prompt + output (default: the\n"
	"                          model's, at most 4096)\n"
	"      --max-queue N       requests waiting behind the running one (default 64)\n"
	"      --api-key KEY       require 'Authorization: Bearer KEY' (not on /health)\n"
	"      --timeout S         close connections idle for S seconds (default 30)\n"
	"      --max-conns N       concurrent connections (default 256)\n"
	"  -q, --quiet             no startup and shutdown lines\n"
	"  -h, --help              this text\n"
	"\n"
	"Errors are JSON {\"error\":{\"message\",\"type\",\"param\",\"code\"}}: 400 bad\n"
	"request, 401 bad key, 404 unknown path or model, 405 wrong method,\n"
	"413 body over 1 MiB, 429 queue full, 503 shutting down.\n";

int cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{"model", required_argument, 0, 'm'},
		{"tokenizer", required_argument, 0, 'z'},
		{"host", required_argument, 0, 'H'},
		{"port", required_argument, 0, 'p'},
		{"cores", required_argument, 0, 'C'},
		{"policy", required_argument, 0, 'P'},
		{"policies", required_argument, 0, 'L'},
		{"control", required_argument, 0, 'W'},
		{"ctx", required_argument, 0, 'c'},
		{"backend", required_argument, 0, 'B'},
		{"max-queue", required_argument, 0, 'Q'},
		{"api-key", required_argument, 0, 'k'},
		{"timeout", required_argument, 0, 'T'},
		{"max-conns", required_argument, 0, 'N'},
		{"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	const char *model_path = NULL, *tok_path = NULL, *host = "127.0.0.1",
		   *cores = NULL, *policy = "elastic", *api_key = NULL,
		   *policies = NULL, *control = NULL, *backend = "user";
	int64_t port = 8080, ctx = 0, max_queue = 64, timeout = 30,
		max_conns = 256;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "m:z:qh", opts, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case 'm': model_path = optarg; break;
		case 'z': tok_path = optarg; break;
		case 'H': host = optarg; break;
		case 'p': bad = cli_int("--port", optarg, 0, 65535, &port); break;
		case 'C': cores = optarg; break;
		case 'P': policy = optarg; break;
		case 'L': policies = optarg; break;
		case 'W': control = optarg; break;
		case 'B': backend = optarg; break;
		case 'c': bad = cli_int("--ctx", optarg, 2, 1 << 22, &ctx); break;
		case 'Q': bad = cli_int("--max-queue", optarg, 0, 100000, &max_queue); break;
		case 'k':
			api_key = optarg;
			if (!*api_key) {
				log_error("--api-key: the key is empty");
				bad = -1;
			}
			break;
		case 'T': bad = cli_int("--timeout", optarg, 1, 86400, &timeout); break;
		case 'N': bad = cli_int("--max-conns", optarg, 1, 100000, &max_conns); break;
		case 'q': log_quiet = true; break;
		case 'h': fputs(serve_help, stdout); return EXIT_OK;
		default: return cli_usage_error("serve", argv[optind - 1]);
		}
		if (bad)
			return EXIT_INPUT;
	}
	if (cli_no_more_args("serve", argc, argv) < 0)
		return EXIT_INPUT;
	if (!model_path) {
		log_error("serve: -m MODEL is required");
		return EXIT_INPUT;
	}
	bool scx = !strcmp(backend, "scx");
	if (!scx && strcmp(backend, "user")) {
		log_error("--backend: '%s' is not user or scx", backend);
		return EXIT_INPUT;
	}
	if (scx && !scx_built()) {
		log_error("--backend scx: this build has no sched_ext support (rebuild "
			  "with `make SCX=1`; tools/deps-scx.sh)");
		return EXIT_FAIL;
	}
	unsigned char addr[sizeof(struct in6_addr)];
	if (inet_pton(AF_INET, host, addr) != 1 && inet_pton(AF_INET6, host, addr) != 1) {
		log_error("--host '%s' is not a numeric IPv4 or IPv6 address", host);
		return EXIT_INPUT;
	}
	int cpus[GANG_MAX_SLOTS];
	int n_cpus = cli_cores(cores, cpus, GANG_MAX_SLOTS);
	if (n_cpus < 0) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	/* the library: frozen from here on (the runtime selects by index) */
	static policy_lib_t lib;
	policy_lib_builtin(&lib, n_cpus);
	if (policies && policy_lib_load(&lib, policies) < 0) {
		log_error("--policies %s", err_get());
		return EXIT_INPUT;
	}
	int policy_index = policy_lib_find(&lib, policy);
	if (policy_index < 0) {
		log_error("--policy: '%s' names no record (indices 0..%d; see "
			  "`egang policy list`)", policy, lib.n - 1);
		return EXIT_INPUT;
	}
	char pathbuf[4096];
	if (!control)
		control = control_default_path(pathbuf, sizeof pathbuf);
	control_t *cw = control_open(control, true);
	if (!cw) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	control_write_index(cw, (uint32_t)policy_index);
	/* --backend scx: the kernel side before the gang exists, so every
	 * thread server_new starts inherits SCHED_EXT (gang.c base_policy) */
	bool scx_ours = false;
	if (scx) {
		if (!scx_loaded()) {
			if (scx_load(&lib, cpus, n_cpus, (uint32_t)policy_index) < 0) {
				log_error("--backend scx: %s", err_get());
				control_close(cw);
				return EXIT_FAIL;
			}
			scx_ours = true;
		} else if (scx_set_index((uint32_t)policy_index, NULL) < 0) {
			log_error("--backend scx: %s", err_get());
			control_close(cw);
			return EXIT_FAIL;
		}
		if (scx_set_gang((uint32_t)getpid()) < 0 || scx_enter(0) < 0) {
			log_error("--backend scx: %s", err_get());
			if (scx_ours)
				scx_unload(NULL);
			control_close(cw);
			return EXIT_FAIL;
		}
	}
	model_t *m = model_load(model_path, tok_path);
	if (!m) {
		log_error("%s", err_get());
		if (scx_ours)
			scx_unload(NULL);
		control_close(cw);
		return EXIT_INPUT;
	}
	if (ctx == 0)
		ctx = m->cfg.ctx < 4096 ? m->cfg.ctx : 4096;
	if (ctx > m->cfg.ctx) {
		log_error("--ctx %lld is larger than the model's context %d",
			  (long long)ctx, m->cfg.ctx);
		model_free(m);
		if (scx_ours)
			scx_unload(NULL);
		control_close(cw);
		return EXIT_INPUT;
	}
	char *tmpl = NULL;
	gguf_str_t ts;
	if (m->gguf && gguf_get_str(m->gguf, "tokenizer.chat_template", &ts) == 0)
		tmpl = strndup(ts.s, (size_t)ts.n);
	const char *base = strrchr(model_path, '/');
	base = base ? base + 1 : model_path;
	server_config_t cfg = {
		.tok = m->tok,
		.model_id = m->name,
		.model_file = base,
		.chat_template = tmpl,
		.ctx = (int32_t)ctx,
		.max_queue = (int)max_queue,
		.api_key = api_key,
		.policy_index = policy_index,
		.m = m,
		.cpus = cpus,
		.n_cpus = n_cpus,
		.policies = &lib,
		.control = cw->w,
		.host = host,
		.port = (int)port,
		.timeout_s = (int)timeout,
		.max_conns = (int)max_conns,
	};
	int status = EXIT_OK;
	server_t *s = server_new(&cfg);
	if (!s) {
		log_error("%s", err_get());
		status = EXIT_INPUT;
		goto out;
	}
	/* Every thread started from here on inherits this mask, so only
	 * sigwait() below sees SIGINT/SIGTERM; SIGPIPE never kills us. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (server_start(s) < 0) {
		log_error("%s", err_get());
		status = EXIT_FAIL;
		goto out;
	}
	log_info("egang serve: %s (%s chat template) on http://%s%s%s:%d, %d "
		 "core%s, policy %s, control %s, ctx %lld, queue %lld",
		 m->name, chat_name(chat_kind(tmpl, m->tok)),
		 strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
		 server_port(s), n_cpus, n_cpus > 1 ? "s" : "",
		 lib.rec[policy_index].name, control, (long long)ctx, (long long)max_queue);
	int sig = 0;
	sigwait(&set, &sig);
	log_info("egang serve: %s, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
	server_stop(s);
out:
	server_free(s);
	free(tmpl);
	model_free(m);
	/* the scheduler this server loaded goes with it */
	if (scx_ours && scx_unload(NULL) < 0)
		log_error("--backend scx: %s", err_get());
	control_close(cw);
	return status;
}
