/* server_config: what `egang serve` (or any program that serves a model)
 * derives before server_new: the API key from its sources, the
 * configuration from an open engine, the batching defaults from the
 * memory, the chat template, and the sched_ext backend for the process;
 * and around its run, the signals that begin the drain. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/base.h"
#include "model/forward.h"
#include "model/gguf.h"
#include "scx/scx.h"
#include "server/http.h"
#include "server/server.h"

/* ---- the API key ---- */

/* A key that is not empty, fits SERVER_API_KEY_MAX bytes and has no
 * control byte (a bearer token in a header cannot carry one); 0 or -1 +
 * err_get() naming the source `what`. */
static int key_check(const char *key, size_t n, const char *what)
{
	if (n == 0)
		return err_set("%s: the API key is empty", what);
	if (n > SERVER_API_KEY_MAX)
		return err_set("%s: the API key is over %d bytes", what,
			       SERVER_API_KEY_MAX);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)key[i];
		if (c < 0x20 || c == 0x7f)
			return err_set("%s: the API key has the control byte 0x%02x "
				       "at offset %zu", what, c, i);
	}
	return 0;
}

/* The first line of path without its newline (and a CR before it) into
 * buf (SERVER_API_KEY_MAX + 2 bytes); reads no further than that, so a
 * huge file or a device costs nothing. Its length, or -1 + err_get(). */
static int64_t key_read_line(const char *path, char *buf)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return err_set("--api-key-file %s: %s", path, strerror(errno));
	size_t n = 0;
	int c = EOF;
	while (n <= SERVER_API_KEY_MAX && (c = getc(f)) != EOF && c != '\n')
		buf[n++] = (char)c;
	int e = errno;
	bool failed = ferror(f), empty = n == 0 && c == EOF;
	fclose(f);
	if (failed)
		return err_set("--api-key-file %s: %s", path, strerror(e));
	if (empty)
		return err_set("--api-key-file %s: the file is empty", path);
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	buf[n] = '\0';
	return (int64_t)n;
}

int server_config_api_key(const char *flag, const char *file, const char *env,
			  char **key)
{
	*key = NULL;
	if (flag && file)
		return err_set("--api-key and --api-key-file both give the API key; "
			       "pass one");
	char buf[SERVER_API_KEY_MAX + 2];
	const char *what = flag ? "--api-key" : file ? "--api-key-file" : "EGANG_API_KEY";
	const char *k = flag ? flag : env;
	int64_t n = k ? (int64_t)strlen(k) : 0;
	if (file) {
		n = key_read_line(file, buf);
		if (n < 0)
			return -1;
		k = buf;
	}
	if (!k)
		return 0; /* no key: no authentication */
	if (key_check(k, (size_t)n, what) < 0)
		return -1;
	*key = strdup(k);
	if (!*key)
		return err_sys("strdup");
	return 0;
}

void server_config_api_key_free(char *key)
{
	if (key)
		explicit_bzero(key, strlen(key));
	free(key);
}

/* ---- CORS origins ---- */

/* True when s[0..n) is "http" or "https", "://", a host and an optional
 * ":PORT" (1..65535), and nothing more. */
static bool origin_ok(const char *s, size_t n)
{
	const char *end = s + n, *p;
	if (n > 8 && !strncasecmp(s, "https://", 8))
		p = s + 8;
	else if (n > 7 && !strncasecmp(s, "http://", 7))
		p = s + 7;
	else
		return false;
	const char *host = p;
	if (*p == '[') { /* an IPv6 address */
		p++;
		while (p < end && (isxdigit((unsigned char)*p) || *p == ':' || *p == '.'))
			p++;
		if (p == end || *p != ']' || p == host + 1)
			return false;
		p++;
	} else {
		while (p < end && (isalnum((unsigned char)*p) || *p == '.' || *p == '-'))
			p++;
		if (p == host)
			return false;
	}
	if (p == end)
		return true;
	if (*p++ != ':' || p == end || end - p > 5)
		return false;
	long port = 0;
	for (; p < end; p++) {
		if (!isdigit((unsigned char)*p))
			return false;
		port = port * 10 + (*p - '0');
	}
	return port >= 1 && port <= 65535;
}

int server_config_cors(server_cors_t *c, const char *const *vals, int n)
{
	for (int i = 0; i < n; i++) {
		for (const char *p = vals[i];;) {
			size_t len = strcspn(p, ",");
			if (!(len == 1 && *p == '*') && !origin_ok(p, len))
				return err_set("--cors '%s'%s%.*s%s is not an origin "
					       "(scheme://host[:port], e.g. "
					       "http://localhost:3000) nor *", vals[i],
					       p[len] || p != vals[i] ? ": '" : "",
					       p[len] || p != vals[i] ? (int)(len > 200 ? 200 : len) : 0,
					       p, p[len] || p != vals[i] ? "'" : "");
			if (c->n == SERVER_MAX_CORS)
				return err_set("--cors: more than %d origins",
					       SERVER_MAX_CORS);
			if (!(c->origin[c->n++] = strndup(p, len)))
				return err_sys("strndup");
			if (!p[len])
				break;
			p += len + 1;
		}
	}
	return 0;
}

void server_config_cors_free(server_cors_t *c)
{
	for (int i = 0; i < c->n; i++)
		free(c->origin[i]);
	c->n = 0;
}

void server_help_more(FILE *out)
{
	fputs("\n"
	      "Errors are JSON {\"error\":{\"message\",\"type\",\"param\",\"code\"}}: 400 bad request\n"
	      "or unimplemented field (below), 401 bad key, 404 unknown path or model, 405\n"
	      "wrong method, 413 body over 1 MiB, 429 queue full, 500 failed, 501 transfer\n"
	      "coding, 503 stopping. OPTIONS on an endpoint: 204 with its Allow header.\n"
	      "\n"
	      "CORS (a web page calling the server from a browser) is off unless --cors\n"
	      "names the page's origin: then a request with that Origin header gets\n"
	      "Access-Control-Allow-Origin (that origin), and a preflight OPTIONS also\n"
	      "Allow-Methods, Allow-Headers (Authorization, Content-Type) and Max-Age;\n"
	      "every reply says Vary: Origin. Other origins get no Access-Control-*\n"
	      "header. --cors '*' lets a page from anywhere call the server (a page the\n"
	      "user opens can use it, and read what it answers; --api-key still guards\n"
	      "it, as a page cannot know the key unless it is given it).\n",
	      out);
	api_fields_help(out);
}

/* ---- the engine, batching, the chat template, the backend ---- */

void server_config_engine(server_config_t *cfg, const engine_t *e,
			  const char *model_path)
{
	const char *base = strrchr(model_path, '/');
	cfg->tok = e->m->tok;
	cfg->model_id = e->m->name;
	cfg->model_file = base ? base + 1 : model_path;
	cfg->ctx = e->ctx;
	cfg->kv_type = e->kv_type;
	cfg->m = e->m;
	cfg->cpus = e->cpus;
	cfg->n_cpus = e->n_cpus;
	cfg->policies = &e->lib;
	cfg->control = e->cw ? e->cw->w : NULL;
}

void server_config_batch(server_config_t *cfg, const model_t *m, int64_t kv_mb,
			 int64_t parallel)
{
	size_t per_pos = forward_kv_pos_bytes(m, cfg->kv_type);
	size_t mb = (size_t)kv_mb;
	if (!mb) {
		long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
		mb = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz / 4 / (1u << 20) : 1024;
		if (mb > 4096)
			mb = 4096;
	}
	cfg->kv_bytes = mb << 20;
	size_t pos = cfg->kv_bytes / per_pos;
	if (!parallel) {
		parallel = (int64_t)(pos / (size_t)cfg->ctx);
		parallel = parallel < 1 ? 1 : parallel > 16 ? 16 : parallel;
	}
	cfg->parallel = (int)parallel;
	if (parallel > 1)
		cfg->kv_positions = pos > (size_t)cfg->ctx ? cfg->ctx : (int32_t)pos;
}

char *server_chat_template(const model_t *m, const char *name)
{
	gguf_str_t ts;
	if (name) /* the markers that select the built-in */
		return strdup(chat_markers(chat_kind_from_name(name)));
	if (m->gguf && gguf_get_str(m->gguf, "tokenizer.chat_template", &ts) == 0)
		return strndup(ts.s, (size_t)ts.n);
	return NULL;
}

bool server_host_ok(const char *host) { return http_host_ok(host); }

/* ---- running until a signal ---- */

void server_signals_block(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, set, NULL);
	signal(SIGPIPE, SIG_IGN);
}

void server_config_log(const server_config_t *cfg, int port, const char *control)
{
	bool v6 = strchr(cfg->host, ':') != NULL;
	const char *policy = cfg->policies ? cfg->policies->rec[cfg->policy_index].name
					   : "static";
	log_info("egang serve: %s (%s chat template) on http://%s%s%s:%d, %d "
		 "core%s, policy %s, control %s, ctx %d, queue %d, parallel %d, "
		 "kv %s (%zu B/position), %zu MiB",
		 cfg->model_id, chat_name(chat_kind(cfg->chat_template, cfg->tok)),
		 v6 ? "[" : "", cfg->host, v6 ? "]" : "", port, cfg->n_cpus,
		 cfg->n_cpus > 1 ? "s" : "", policy, control, cfg->ctx,
		 cfg->max_queue, cfg->parallel, kv_type_names[cfg->kv_type],
		 forward_kv_pos_bytes(cfg->m, cfg->kv_type), cfg->kv_bytes >> 20);
}

int server_run_until_signal(server_t *s, const sigset_t *set, int drain_s)
{
	int sig = 0;
	sigwait(set, &sig);
	log_info("egang serve: %s, draining (up to %d s; a second signal cuts at "
		 "once)", sig == SIGINT ? "SIGINT" : "SIGTERM", drain_s);
	int cut = server_drain(s, drain_s, set);
	if (!cut) {
		log_info("egang serve: drained, every generation finished");
		return EXIT_OK;
	}
	log_error("serve: the drain cut %d running generation%s (exit %d)",
		  cut, cut > 1 ? "s" : "", SERVER_EXIT_CUT);
	return SERVER_EXIT_CUT;
}

int server_scx_attach(const engine_t *e, int index, bool *ours)
{
	*ours = false;
	if (!scx_loaded()) {
		if (scx_load(&e->lib, e->cpus, e->n_cpus, (uint32_t)index) < 0)
			return -1;
		*ours = true;
	} else if (scx_check_cpus(e->cpus, e->n_cpus) < 0 ||
		   scx_set_index((uint32_t)index, NULL) < 0) {
		return -1;
	}
	if (scx_set_gang((uint32_t)getpid()) < 0 || scx_enter(0) < 0) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", err_get());
		if (*ours)
			scx_unload(NULL);
		*ours = false;
		return err_set("%s", msg);
	}
	return 0;
}
