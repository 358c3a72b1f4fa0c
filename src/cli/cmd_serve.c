/* egang serve: the OpenAI-compatible HTTP server (src/server/server.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "engine/engine_open.h"
#include "gang/gang.h"
#include "model/chat.h"
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
	"events), GET /v1/models[/ID], GET /health, GET /metrics (Prometheus text).\n"
	"Up to --parallel generations run at once on the elastic gang, one token\n"
	"step for all of them (continuous batching: requests join and leave at\n"
	"any step, a sequence's logits do not depend on the others); the rest\n"
	"wait in a bounded FIFO queue (full: 429). SIGTERM or SIGINT drains: new\n"
	"and queued requests get 503, /health 503 \"draining\", the running\n"
	"generations go on for up to --drain-seconds; what still runs then (or at\n"
	"a second signal) ends with an error (503, or a last SSE error event, no\n"
	"[DONE]). Exit 0 when every one finished, 3 when some were cut.\n"
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
	"                          model's, at most 4096)\n" CLI_KV_TYPE_HELP
	"      --max-queue N       requests waiting behind the running ones (default 64)\n"
	"      --parallel N        sequences per token step, 1..64 (default: as many\n"
	"                          full contexts as --kv-mb holds, 1..16); 1 = one\n"
	"                          request at a time, no KV budget or prefix cache\n"
	"      --kv-mb N           KV cache budget of the live sequences and the\n"
	"                          prefix cache, MiB (default: a quarter of the RAM,\n"
	"                          at most 4096); a request waits until its KV fits,\n"
	"                          a prompt longer than the budget gets 400\n"
	"      --prefill-chunk N   prompt tokens per step next to the running\n"
	"                          sequences (default 64)\n"
	"      --api-key KEY       require 'Authorization: Bearer KEY' (not on /health)\n"
	"      --api-key-file FILE the key from FILE's first line (out of /proc/PID/\n"
	"                          cmdline), else from $EGANG_API_KEY; a flag wins over\n"
	"                          it, both flags or an empty key are refused\n"
	"      --chat-template NAME  a built-in chat template instead of the model's\n"
	"                          (chatml, llama2, llama3, llama31, zephyr, qwen3,\n"
	"                          gemma3);\n"
	"                          without one an unrecognised template gets 400\n"
	"      --timeout S         close connections idle for S seconds (default 30)\n"
	"      --request-timeout S close a connection that has not sent a whole\n"
	"                          request S seconds after it opened or after its\n"
	"                          last response, active or not (default 20; 0 off)\n"
	"      --max-conns N       concurrent connections (default 256); past it the\n"
	"                          one waiting longest for a whole request is closed\n"
	"      --max-conns-per-ip N  connections from one address (default 64; past\n"
	"                          it a request gets 429; 0 = none, behind a balancer)\n"
	"      --drain-seconds N   on SIGTERM, let running generations finish for up\n"
	"                          to N seconds (default 30; 0 = cut at once)\n"
	"      --cors ORIGIN       let pages from ORIGIN (scheme://host[:port], a comma\n"
	"                          list, repeatable; * = any) call it (CORS, below)\n"
	"  -q, --quiet             no startup and shutdown lines\n"
	"  -h, --help              this text\n";

typedef struct serve_opts {
	const char *model, *tok, *host, *policy, *policies, *control, *api_key,
		*chat_template, *api_key_file;
	char *key; /* from api_key, api_key_file or $EGANG_API_KEY */
	const char *cors_arg[SERVER_MAX_CORS]; /* --cors: n_cors_arg values */
	int n_cors_arg; server_cors_t cors;    /* and their origins */
	int backend, kv; /* backend: 0 user, 1 scx */
	int64_t port, ctx, max_queue, timeout, max_conns, max_per_ip, req_timeout, drain;
	int64_t parallel, kv_mb, prefill_chunk;
	cli_cpus_t cpus;
} serve_opts_t;

/* The checks that need no model: the backend, the host, the initial
 * policy (a library loaded for the lookup only; engine_open loads the one
 * the server keeps), then --cors into o->cors and the API key into o->key. The policy's index,
 * or -1 with *status set. */
static int check_opts(serve_opts_t *o, int *status)
{
	*status = EXIT_INPUT;
	if (o->backend && !scx_built())
		return log_error("--backend scx: this build has no sched_ext support "
				 "(rebuild with `make SCX=1`; tools/deps-scx.sh)"),
		       *status = EXIT_FAIL, -1;
	if (!server_host_ok(o->host))
		return log_error("--host '%s' is not a numeric IPv4 or IPv6 address",
				 o->host), -1;
	static policy_lib_t lib;
	if (engine_policies(&lib, o->cpus.n, o->policies) < 0)
		return log_error("%s", err_get()), -1;
	int index = policy_lib_find(&lib, o->policy);
	if (index < 0)
		log_error("--policy: '%s' names no record (indices 0..%d; see "
			  "`egang policy list`)", o->policy, lib.n - 1);
	else if (server_config_cors(&o->cors, o->cors_arg, o->n_cors_arg) < 0 ||
		 server_config_api_key(o->api_key, o->api_key_file,
				       getenv("EGANG_API_KEY"), &o->key) < 0)
		return log_error("serve: %s", err_get()), -1;
	return index;
}

/* Runs the server on an open engine until SIGINT/SIGTERM; an exit code. */
static int serve(const serve_opts_t *o, engine_t *e, int index)
{
	model_t *m = e->m;
	char *tmpl = server_chat_template(m, o->chat_template);
	server_config_t cfg = {
		.chat_template = tmpl, .max_queue = (int)o->max_queue,
		.api_key = o->key, .policy_index = index, .host = o->host,
		.port = (int)o->port, .timeout_s = (int)o->timeout,
		.request_timeout_s = (int)o->req_timeout, .max_conns = (int)o->max_conns,
		.max_conns_per_ip = (int)o->max_per_ip,
		.cors = (const char *const *)o->cors.origin, .n_cors = o->cors.n,
	};
	server_config_engine(&cfg, e, o->model);
	server_config_batch(&cfg, m, o->kv_mb, o->parallel);
	cfg.prefill_chunk = (int)o->prefill_chunk;
	cfg.logits_dir = getenv("EGANG_SERVE_LOGITS_DIR"); /* tests */
	int status = EXIT_OK;
	server_t *s = server_new(&cfg);
	if (!s) {
		log_error("%s", err_get());
		free(tmpl);
		return EXIT_INPUT;
	}
	sigset_t set; /* blocked before any thread starts */
	server_signals_block(&set);
	if (server_start(s) < 0) {
		log_error("%s", err_get());
		status = EXIT_FAIL;
	} else {
		server_config_log(&cfg, server_port(s), o->control);
		status = server_run_until_signal(s, &set, (int)o->drain);
	}
	server_free(s);
	free(tmpl);
	return status;
}

/* Opens the engine (the policy library frozen from here on: the runtime
 * selects by index), attaches the backend, serves; an exit code. */
static int serve_engine(serve_opts_t *o, int index)
{
	char pathbuf[4096];
	if (!o->control)
		o->control = control_default_path(pathbuf, sizeof pathbuf);
	engine_config_t ec = { /* the server makes its own forward passes and gang */
		.model_path = o->model, .tok_path = o->tok, .cpus = o->cpus.cpu,
		.n_cpus = o->cpus.n, .ctx = (int32_t)o->ctx, .kv_type = o->kv, .no_gang = true,
		.no_forward = true, .control = o->control, .policies = o->policies,
	};
	int status;
	engine_t *e = engine_open(&ec, &status);
	if (!e)
		return log_error("%s", err_get()), status;
	control_write_index(e->cw, (uint32_t)index);
	bool scx_ours = false;
	if (o->backend && server_scx_attach(e, index, &scx_ours) < 0) {
		log_error("--backend scx: %s", err_get());
		status = EXIT_FAIL;
	} else {
		/* the scheduler may have been loaded just now: from here the
		 * control word's index is its page (one store for both) */
		if (o->backend)
			control_bind_index(e->cw);
		status = serve(o, e, index);
	}
	/* the scheduler this server loaded goes with it */
	if (scx_ours && scx_unload(NULL) < 0)
		log_error("--backend scx: %s", err_get());
	engine_close(e);
	return status;
}

static const char *const backends[] = {"user", "scx", NULL};

int cmd_serve(int argc, char **argv)
{
	serve_opts_t o = {.host = "127.0.0.1", .policy = "elastic", .port = 8080,
			  .max_queue = 64, .timeout = 30, .max_conns = 256,
			  .max_per_ip = 64, .req_timeout = 20, .drain = 30,
			  .prefill_chunk = 64};
	const cli_opt_t opts[] = {
		OPT_STR("model", 'm', &o.model, .required = true),
		OPT_STR("tokenizer", 'z', &o.tok),
		OPT_STR("host", 0, &o.host),
		OPT_INT("port", 0, &o.port, 0, 65535),
		OPT_CPUS("cores", &o.cpus, GANG_MAX_SLOTS),
		OPT_STR("policy", 0, &o.policy),
		OPT_STR("policies", 0, &o.policies),
		OPT_STR("control", 0, &o.control),
		OPT_INT("ctx", 0, &o.ctx, 2, 1 << 22),
		OPT_KV_TYPE(&o.kv),
		OPT_CHOICE("backend", 0, &o.backend, backends),
		OPT_INT("max-queue", 0, &o.max_queue, 0, 100000),
		OPT_STR("api-key", 0, &o.api_key),
		OPT_STR("api-key-file", 0, &o.api_key_file),
		OPT_STR("chat-template", 0, &o.chat_template),
		OPT_INT("timeout", 0, &o.timeout, 1, 86400),
		OPT_INT("max-conns", 0, &o.max_conns, 1, 100000),
		OPT_INT("max-conns-per-ip", 0, &o.max_per_ip, 0, 100000),
		OPT_INT("request-timeout", 0, &o.req_timeout, 0, 86400),
		OPT_INT("drain-seconds", 0, &o.drain, 0, 86400),
		OPT_INT("parallel", 0, &o.parallel, 1, 64),
		OPT_INT("kv-mb", 0, &o.kv_mb, 1, 1 << 20),
		OPT_INT("prefill-chunk", 0, &o.prefill_chunk, 1, 1024),
		OPT_LIST("cors", 0, o.cors_arg, &o.n_cors_arg),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "serve", .help = serve_help, .opts = opts,
			       .help_more = server_help_more};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	if (o.chat_template && chat_kind_from_name(o.chat_template) == CHAT_NONE) {
		log_error("serve: --chat-template '%s' is not one of chatml, llama2, "
			  "llama3, llama31, zephyr, qwen3, gemma3", o.chat_template);
		return EXIT_INPUT;
	}
	int index = check_opts(&o, &status);
	if (index >= 0)
		status = serve_engine(&o, index);
	server_config_api_key_free(o.key);
	server_config_cors_free(&o.cors);
	return status;
}
