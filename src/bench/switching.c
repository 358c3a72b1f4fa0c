/* switching: the policy-switching experiment (switching.h). */
#include "bench/switching.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/base.h"
#include "base/stats.h"
#include "bench/burn.h"
#include "bench/loadgen.h"
#include "policy/control.h"

const char *const switching_arm_names[SWITCHING_ARM_COUNT + 1] = {
	"latency", "throughput", "oracle", "bandit", "agent", NULL};
#define N_PHASES SWITCHING_PHASES
#define MAX_BURNERS SWITCHING_MAX_BURNERS
static const char *const phase_names[N_PHASES] = {"steady1", "burst", "steady2"};

#define BUCKET_NS 50000000ull /* antagonist work buckets: 50 ms */
typedef switching_config_t cfg_t;

static char self_exe[4096]; /* this executable, for the children */

/* ---- child processes ---- */

/* fork + exec of this egang with args; stdout and stderr to the given
 * descriptors (-1: /dev/null). */
static pid_t spawn(const cfg_t *c, char *const args[], int out_fd, int err_fd)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	int dn = open("/dev/null", O_RDWR);
	dup2(dn, 0);
	dup2(out_fd >= 0 ? out_fd : dn, 1);
	dup2(err_fd >= 0 ? err_fd : dn, 2);
	/* the child starts on the affinity the bench was started with (not a
	 * pinned thread's) and in the default scheduling class */
	execv(self_exe, args);
	_exit(127);
}

static void reap(pid_t pid, int sig, double wait_s)
{
	if (pid <= 0)
		return;
	if (sig)
		kill(pid, sig);
	uint64_t end = time_now_ns() + (uint64_t)(wait_s * 1e9);
	while (time_now_ns() < end) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static int file_open_w(const char *path)
{
	return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
}

/* ---- antagonists and their monitor ---- */

typedef struct burners {
	int n;
	pid_t pid[MAX_BURNERS];
	int fd[MAX_BURNERS];        /* read end of each stdout pipe */
	char buf[MAX_BURNERS][256]; /* a partial line */
	size_t len[MAX_BURNERS];
	double last_t[MAX_BURNERS]; /* the burner's own clock at its last report */
	uint64_t t_start;           /* bucket 0 starts here */
	double *bucket;             /* units per BUCKET_NS */
	size_t n_bucket;
	double total;
	const char *units_path;     /* rewritten with the total (bandit) */
	_Atomic bool stop;
	pthread_t thread;
} burners_t;

/* Spreads units done over [a, b] (ns, bench clock) over the buckets. */
static void burners_add(burners_t *b, uint64_t a, uint64_t e, double units)
{
	b->total += units;
	if (a < b->t_start)
		a = b->t_start;
	if (e <= a)
		return;
	double per_ns = units / (double)(e - a);
	for (uint64_t t = a; t < e;) {
		size_t i = (size_t)((t - b->t_start) / BUCKET_NS);
		uint64_t edge = b->t_start + (uint64_t)(i + 1) * BUCKET_NS;
		uint64_t stop = edge < e ? edge : e;
		if (i < b->n_bucket)
			b->bucket[i] += per_ns * (double)(stop - t);
		t = stop;
	}
}

/* One report line: the units of the period it covers, placed at the
 * period's end as the burner stamped it (at_ns: the same monotonic clock),
 * so a line read late (the monitor or the pipe behind) still lands in its
 * window; a line without the stamp is placed at its arrival, now. */
static void burners_line(burners_t *b, int i, uint64_t now)
{
	double t, rate;
	uint64_t at;
	b->buf[i][b->len[i]] = 0;
	if (burn_report_parse(b->buf[i], &t, &rate, &at) < 0)
		return;
	double dt = t - b->last_t[i];
	b->last_t[i] = t;
	if (dt <= 0)
		return;
	uint64_t end = at ? at : now;
	burners_add(b, end - (uint64_t)(dt * 1e9), end, rate * dt);
}

static void units_write(const burners_t *b)
{
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", b->units_path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "%.0f\n", b->total);
	fclose(f);
	rename(tmp, b->units_path);
}

static void *burners_main(void *arg)
{
	burners_t *b = arg;
	struct pollfd pf[MAX_BURNERS];
	uint64_t last_write = 0;
	/* seq_cst, stronger than needed: a stop flag; the join orders the
	 * buckets for the reader. Once stopped (the burners are gone), the
	 * passes drain what is still in the pipes, then end. */
	for (;;) {
		bool last = atomic_load(&b->stop);
		for (int i = 0; i < b->n; i++)
			pf[i] = (struct pollfd){.fd = b->fd[i], .events = POLLIN};
		int r = poll(pf, (nfds_t)b->n, last ? 0 : 20);
		if (last && r <= 0)
			break;
		uint64_t now = time_now_ns();
		for (int i = 0; r > 0 && i < b->n; i++) {
			if (!(pf[i].revents & (POLLIN | POLLHUP)))
				continue;
			char tmp[512];
			ssize_t k = read(b->fd[i], tmp, sizeof tmp);
			for (ssize_t j = 0; j < k; j++) {
				if (tmp[j] == '\n') {
					burners_line(b, i, now);
					b->len[i] = 0;
				} else if (b->len[i] + 1 < sizeof b->buf[i]) {
					b->buf[i][b->len[i]++] = tmp[j];
				}
			}
			if (k <= 0) {
				close(b->fd[i]);
				b->fd[i] = -1; /* poll ignores it from now on */
			}
		}
		if (b->units_path && now - last_write > 20000000ull) {
			units_write(b);
			last_write = now;
		}
	}
	return NULL;
}

static int burners_start(burners_t *b, const cfg_t *c, double max_s)
{
	b->n = 0;
	b->t_start = time_now_ns();
	b->n_bucket = (size_t)(max_s * 1e9 / (double)BUCKET_NS) + 1;
	b->bucket = calloc(b->n_bucket, sizeof *b->bucket);
	if (!b->bucket)
		return err_set("out of memory");
	for (int k = 0; k < c->burns * c->n_cpus && k < MAX_BURNERS; k++) {
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0)
			return err_set("pipe: %s", strerror(errno));
		char cpu[16];
		snprintf(cpu, sizeof cpu, "%d", c->cpus[k % c->n_cpus]);
		char *args[] = {"egang", "burn", "--seconds", "0", "--report-ms", "50",
				"--cores", cpu, NULL};
		/* --backend scx: the same burner, in SCHED_EXT */
		char *sargs[] = {"egang", "scx", "exec", "--", self_exe, "burn",
				 "--seconds", "0", "--report-ms", "50", "--cores", cpu, NULL};
		b->pid[b->n] = spawn(c, c->scx ? sargs : args, p[1], -1);
		close(p[1]);
		if (b->pid[b->n] < 0) {
			close(p[0]);
			return err_set("fork: %s", strerror(errno));
		}
		b->fd[b->n] = p[0];
		b->len[b->n] = 0;
		b->last_t[b->n] = 0;
		b->n++;
	}
	atomic_store(&b->stop, false); /* before the thread starts */
	if (pthread_create(&b->thread, NULL, burners_main, b))
		return err_set("pthread_create failed");
	return 0;
}

/* Ends the burners, then the monitor once it has read every report they
 * wrote (the last ones cover the baseline after the load). */
static void burners_stop(burners_t *b)
{
	for (int i = 0; i < b->n; i++)
		kill(b->pid[i], SIGTERM);
	for (int i = 0; i < b->n; i++)
		reap(b->pid[i], 0, 2);
	atomic_store(&b->stop, true); /* polled by burners_main */
	pthread_join(b->thread, NULL);
	for (int i = 0; i < b->n; i++) {
		if (b->fd[i] >= 0)
			close(b->fd[i]);
		b->fd[i] = -1;
	}
}

/* Units in [t0, t1) (ns, bench clock); a bucket cut by an edge counts by
 * the fraction inside. */
static double burners_window(const burners_t *b, uint64_t t0, uint64_t t1)
{
	double s = 0;
	for (size_t i = 0; i < b->n_bucket; i++) {
		uint64_t a = b->t_start + (uint64_t)i * BUCKET_NS, e = a + BUCKET_NS;
		uint64_t lo = a > t0 ? a : t0, hi = e < t1 ? e : t1;
		if (hi > lo)
			s += b->bucket[i] * (double)(hi - lo) / (double)BUCKET_NS;
	}
	return s;
}

/* ---- one run ---- */

typedef struct req {
	uint64_t t_arr; /* scheduled arrival, ns after t0 */
	int phase;
	CURL *h;
	loadgen_stream_t st;
	long code;
	bool ok, done;
	double ttft_ms;
} req_t;

typedef struct result {
	double p50[N_PHASES], p99[N_PHASES];
	int sent[N_PHASES], served[N_PHASES];
	double units, units_phase[N_PHASES];
	double base_rate;  /* antagonist units/s with the server idle, before
			      and after the load (mean of the two) */
	double share;      /* units / (base_rate x the phases' seconds) */
	double cpu_s;      /* CPU seconds of the server and the controller from
			      t0 until the last request ended: what serving
			      the load took from the tenants */
	uint64_t fallbacks, invalid_reads;
	double drain_s;
	char ctl[256]; /* the controller's summary, if any */
} result_t;

/* The q-quantile of v[0..n) (sorted here); NaN for no sample (the CSV's
 * "nan": a phase where nothing was served). */
static double quantile(double *v, int n, double q)
{
	return n > 0 ? stats_quantile(v, (size_t)n, q) : NAN;
}

/* The arrival times of a repetition: Poisson per phase. */
static req_t *arrivals(const cfg_t *c, int rep, int *n_out)
{
	rng_t rng;
	rng_seed(&rng, (uint64_t)c->seed + (uint64_t)rep);
	size_t cap = 64, n = 0;
	req_t *r = malloc(cap * sizeof *r);
	double start = 0;
	for (int p = 0; p < N_PHASES && r; p++) {
		double t = start, end = start + c->phase_s[p];
		for (;;) {
			double u = ((double)(rng_next(&rng) >> 11) + 0.5) / 9007199254740992.0;
			t += -log(u) / c->rate[p];
			if (t >= end)
				break;
			if (n == cap) {
				req_t *nr = realloc(r, 2 * cap * sizeof *r);
				if (!nr) {
					free(r);
					return NULL;
				}
				r = nr;
				cap *= 2;
			}
			memset(&r[n], 0, sizeof r[n]);
			r[n].t_arr = (uint64_t)(t * 1e9);
			r[n].phase = p;
			n++;
		}
		start = end;
	}
	*n_out = (int)n;
	return r;
}

/* Reads the port from the server's startup line in its log; 0 until then. */
static int server_port_from_log(const char *path)
{
	size_t len;
	char *t = file_read_all(path, &len);
	if (!t)
		return 0;
	int port = 0;
	char *p = strstr(t, " on http://");
	if (p) {
		char *comma = strchr(p, ',');
		if (comma) {
			char *colon = comma;
			while (colon > p && *colon != ':')
				colon--;
			port = atoi(colon + 1);
		}
	}
	free(t);
	return port;
}

static bool http_ok(const char *url)
{
	CURL *h = curl_easy_init();
	if (!h)
		return false;
	FILE *devnull = fopen("/dev/null", "w");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 5L);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, devnull);
	CURLcode rc = curl_easy_perform(h);
	long code = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	fclose(devnull);
	return rc == CURLE_OK && code == 200;
}

/* One blocking request (warm-up); true on a complete 200 stream. */
static bool warm_request(const char *url, struct curl_slist *hdr, const char *body)
{
	CURL *h = curl_easy_init();
	loadgen_stream_t *st = malloc(sizeof *st);
	bool ok = false;
	if (h && st) {
		loadgen_setup(h, url, hdr, body, 30, st);
		long code = 0;
		ok = curl_easy_perform(h) == CURLE_OK &&
		     curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK &&
		     code == 200 && st->done_seen;
	}
	free(st);
	if (h)
		curl_easy_cleanup(h);
	return ok;
}

static double total_phase_s(const cfg_t *c)
{
	return c->phase_s[0] + c->phase_s[1] + c->phase_s[2];
}

/* CPU seconds (user + system, all threads) of a child so far, from
 * /proc/PID/stat (readable until it is reaped); 0 when unreadable. */
static double proc_cpu_s(pid_t pid)
{
	if (pid <= 0)
		return 0;
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t k = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[k] = 0;
	char *p = strrchr(buf, ')'); /* the command name may hold spaces */
	unsigned long long ut = 0, st = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Drives the requests open-loop; returns the drain time (s after the last
 * phase's end until the last request finished; 0 if none was left). */
static double drive(const cfg_t *c, req_t *r, int n, uint64_t t0,
		    const char *url, struct curl_slist *hdr, const char *body)
{
	CURLM *m = curl_multi_init();
	int next = 0, running = 0;
	uint64_t t_end = t0 + (uint64_t)(total_phase_s(c) * 1e9);
	uint64_t deadline = t_end + (uint64_t)(c->drain_s * 1e9);
	uint64_t last_done = t_end;
	while (next < n || running > 0) {
		uint64_t now = time_now_ns();
		while (next < n && t0 + r[next].t_arr <= now) {
			req_t *q = &r[next++];
			q->h = curl_easy_init();
			if (!q->h)
				continue;
			loadgen_setup(q->h, url, hdr, body,
				      (long)(total_phase_s(c) + c->drain_s + 5), &q->st);
			q->st.t0 = t0 + q->t_arr;
			curl_easy_setopt(q->h, CURLOPT_PRIVATE, q);
			curl_multi_add_handle(m, q->h);
			running++;
		}
		int still = 0;
		curl_multi_perform(m, &still);
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			req_t *q = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&q);
			curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &q->code);
			q->done = true;
			q->ok = msg->data.result == CURLE_OK && q->code == 200 &&
				q->st.done_seen && q->st.t_first;
			if (q->ok)
				q->ttft_ms = (double)(q->st.t_first - q->st.t0) / 1e6;
			curl_multi_remove_handle(m, q->h);
			curl_easy_cleanup(q->h);
			q->h = NULL;
			running--;
			uint64_t t = time_now_ns();
			if (t > last_done)
				last_done = t;
		}
		now = time_now_ns();
		if (next >= n && now > deadline)
			break;
		long wait_ms = 50;
		if (next < n) {
			uint64_t at = t0 + r[next].t_arr;
			wait_ms = at > now ? (long)((at - now) / 1000000ull) : 0;
			if (wait_ms > 50)
				wait_ms = 50;
		}
		if (wait_ms > 0)
			curl_multi_poll(m, NULL, 0, (int)wait_ms, NULL);
	}
	uint64_t now = time_now_ns();
	if (t_end > now) /* every request was done before the phases' end */
		usleep((useconds_t)((t_end - now) / 1000));
	for (int i = 0; i < n; i++)
		if (r[i].h) { /* not done by the deadline: not served */
			curl_multi_remove_handle(m, r[i].h);
			curl_easy_cleanup(r[i].h);
			r[i].h = NULL;
		}
	curl_multi_cleanup(m);
	return (double)(last_done - t_end) / 1e9;
}

/* One run's state: its paths, children, control word and requests. */
typedef struct run {
	const cfg_t *c;
	int arm, rep;
	char ctl_path[256], log_path[4200], units_path[4200], ctl_log[4200];
	char cores[256], url[128];
	pid_t srv, ctl;
	control_t *cw;
	struct curl_slist *hdr;
	char *body;
	uint64_t t0, pre0, pre1, post0, post1;
	burners_t *b;
	req_t *r;
	int n;
} run_t;

/* `egang serve` with the arm's first policy, its port from its log, three
 * warm-up requests; 0 or -1 + err_get(). */
static int server_start(run_t *u)
{
	const cfg_t *c = u->c;
	const char *init = u->arm == SWITCHING_ARM_LATENCY ? "latency" : "throughput";
	int lfd = file_open_w(u->log_path);
	char *sargs[] = {"egang", "serve", "-m", (char *)c->model, "--port", "0",
			 "--control", u->ctl_path, "--policy", (char *)init,
			 "--max-queue", "100000", "--max-conns", "10000",
			 "--timeout", "600", "--cores", u->cores,
			 "--backend", c->scx ? "scx" : "user",
			 c->tok ? "-z" : NULL, (char *)c->tok, NULL};
	u->srv = spawn(c, sargs, lfd, lfd);
	close(lfd);
	int port = 0; /* up to 30 s: an emulated guest loads slowly */
	for (int i = 0; i < 3000 && !port; i++) {
		if (waitpid(u->srv, NULL, WNOHANG) == u->srv) {
			u->srv = -1;
			break;
		}
		usleep(10000);
		port = server_port_from_log(u->log_path);
	}
	if (!port)
		return err_set("egang serve did not start (see %s)", u->log_path);
	char health[160];
	snprintf(u->url, sizeof u->url, "http://127.0.0.1:%d/v1/completions", port);
	snprintf(health, sizeof health, "http://127.0.0.1:%d/health", port);
	for (int i = 0; i < 500 && !http_ok(health); i++)
		usleep(10000);
	u->hdr = loadgen_headers(NULL);
	/* temperature 0: every request generates the same tokens (the same
	 * work in every arm) */
	u->body = loadgen_body("Once upon a time", c->max_tokens, false, 0);
	for (int i = 0; i < 3; i++)
		if (!warm_request(u->url, u->hdr, u->body))
			return err_set("the warm-up request failed (see %s)", u->log_path);
	return 0;
}

/* The arm's controller: `egang policy set` run to its end (fixed arms) or
 * `egang control` left running (u->ctl); 0 or -1 + err_get(). */
static int controller_spawn(run_t *u)
{
	const cfg_t *c = u->c;
	double T = total_phase_s(c);
	char period[16], secs[32], sched[256];
	snprintf(period, sizeof period, "%d", c->period_ms);
	snprintf(secs, sizeof secs, "%g", T);
	snprintf(sched, sizeof sched, "0-%gs:throughput,%g-%gs:latency,%g-%gs:throughput",
		 c->phase_s[0], c->phase_s[0], c->phase_s[0] + c->phase_s[1],
		 c->phase_s[0] + c->phase_s[1], T);
	int cfd = file_open_w(u->ctl_log), rc = 0;
	if (u->arm == SWITCHING_ARM_LATENCY || u->arm == SWITCHING_ARM_THROUGHPUT) {
		char *a[] = {"egang", "policy", "set", (char *)switching_arm_names[u->arm],
			     "--control", u->ctl_path, "--cores", u->cores, NULL};
		pid_t p = spawn(c, a, cfd, cfd);
		int st = 0;
		waitpid(p, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			rc = err_set("egang policy set %s failed (see %s)",
				     switching_arm_names[u->arm], u->ctl_log);
	} else {
		char *a[32] = {"egang", "control", "--control", u->ctl_path,
			       "--period-ms", period, "--seconds", secs,
			       "--cores", u->cores, "-q"};
		int na = 11;
		if (u->arm == SWITCHING_ARM_ORACLE) {
			a[na++] = "--oracle";
			a[na++] = sched;
		} else if (u->arm == SWITCHING_ARM_BANDIT) {
			a[na++] = "--bandit";
			a[na++] = "--tenant-units";
			a[na++] = u->units_path;
		} else {
			a[na++] = "--agent";
			a[na++] = "-m";
			a[na++] = (char *)c->model;
			if (c->tok) {
				a[na++] = "-z";
				a[na++] = (char *)c->tok;
			}
		}
		a[na] = NULL;
		u->ctl = spawn(c, a, cfd, cfd);
	}
	close(cfd);
	return rc;
}

/* Opens the control word, starts the controller and sets u->t0, the load's
 * start; 0 or -1 + err_get(). */
static int controller_start(run_t *u)
{
	bool fixed = u->arm == SWITCHING_ARM_LATENCY || u->arm == SWITCHING_ARM_THROUGHPUT;
	if (!(u->cw = control_open(u->ctl_path, false)))
		return -1;
	/* an index no record has, so the controller's first write shows (the
	 * server is idle: no token reads it) */
	if (!fixed)
		control_write_index(u->cw, UINT32_MAX);
	int rc = controller_spawn(u);
	u->t0 = time_now_ns();
	if (rc < 0 || u->ctl <= 0)
		return rc;
	/* the oracle's phases count from its own start: its first write comes
	 * one period after it, so the load starts at that write minus a
	 * period; the bandit and the agent start the load at their first
	 * write. seq_cst loads, stronger than needed: a value test only. */
	uint64_t give_up = u->t0 + 60000000000ull;
	while (atomic_load(u->cw->index) == UINT32_MAX &&
	       time_now_ns() < give_up && waitpid(u->ctl, NULL, WNOHANG) == 0)
		usleep(500);
	if (atomic_load(u->cw->index) == UINT32_MAX)
		return err_set("the controller wrote no index (see %s)", u->ctl_log);
	u->t0 = time_now_ns();
	if (u->arm == SWITCHING_ARM_ORACLE)
		u->t0 -= (uint64_t)u->c->period_ms * 1000000ull;
	return 0;
}

/* Drives the load; the server's and the controller's CPU time, the
 * controller's summary line and the guard's counters into res. */
static void load(run_t *u, result_t *res)
{
	double cpu0 = proc_cpu_s(u->srv) + proc_cpu_s(u->ctl);
	res->drain_s = drive(u->c, u->r, u->n, u->t0, u->url, u->hdr, u->body);
	/* the controller has ended by now or ends at once (--seconds) */
	if (u->ctl > 0)
		usleep(200000);
	res->cpu_s = proc_cpu_s(u->srv) + proc_cpu_s(u->ctl) - cpu0;
	if (u->ctl > 0) {
		/* every controller ends at --seconds (the phases' end); SIGTERM
		 * ends one still running with its summary */
		reap(u->ctl, SIGTERM, 5);
		u->ctl = -1;
		size_t len;
		char *t = file_read_all(u->ctl_log, &len);
		char *s = t ? strstr(t, "control summary: ") : NULL;
		if (s) {
			char *nl = strchr(s, '\n');
			if (nl)
				*nl = 0;
			snprintf(res->ctl, sizeof res->ctl, "%s", s + 17);
		}
		free(t);
	}
	/* seq_cst loads, stronger than needed: counters read once */
	res->fallbacks = atomic_load(&u->cw->w->guard_fallbacks);
	res->invalid_reads = atomic_load(&u->cw->w->invalid_reads);
}

/* TTFT percentiles per phase and requests.csv's rows. */
static void record_requests(const run_t *u, result_t *res, FILE *req_csv)
{
	double *v[N_PHASES];
	int nv[N_PHASES] = {0};
	for (int p = 0; p < N_PHASES; p++)
		v[p] = malloc((size_t)(u->n + 1) * sizeof *v[p]);
	for (int i = 0; i < u->n; i++) {
		const req_t *q = &u->r[i];
		int p = q->phase;
		res->sent[p]++;
		if (q->ok) {
			res->served[p]++;
			if (v[p])
				v[p][nv[p]++] = q->ttft_ms;
		}
		char tt[32];
		snprintf(tt, sizeof tt, q->ok ? "%.3f" : "nan", q->ttft_ms);
		fprintf(req_csv, "%s,%d,%s,%.4f,%s,%ld,%lld\n", switching_arm_names[u->arm],
			u->rep + 1, phase_names[p], (double)q->t_arr / 1e9, tt, q->code,
			(long long)q->st.completion_tokens);
	}
	for (int p = 0; p < N_PHASES; p++) {
		res->p50[p] = quantile(v[p], nv[p], 0.5);
		res->p99[p] = quantile(v[p], nv[p], 0.99);
		free(v[p]);
	}
}

/* The antagonists' work: per phase, the baselines, the share; and the
 * timeline's rows. */
static void record_work(const run_t *u, result_t *res, FILE *tl_csv)
{
	const cfg_t *c = u->c;
	const burners_t *b = u->b;
	double T = total_phase_s(c), start = 0;
	uint64_t t0 = u->t0;
	for (int p = 0; p < N_PHASES; p++) {
		uint64_t a = t0 + (uint64_t)(start * 1e9);
		start += c->phase_s[p];
		res->units_phase[p] = burners_window(b, a, t0 + (uint64_t)(start * 1e9));
		res->units += res->units_phase[p];
	}
	/* whole buckets inside each baseline window */
	uint64_t q0 = u->pre0 + BUCKET_NS, q1 = u->pre1 - BUCKET_NS;
	uint64_t s0 = u->post0 + BUCKET_NS, s1 = u->post1 - BUCKET_NS;
	double pre = burners_window(b, q0, q1) / ((double)(q1 - q0) / 1e9);
	double post = burners_window(b, s0, s1) / ((double)(s1 - s0) / 1e9);
	res->base_rate = (pre + post) / 2;
	/* the work lost to serving this load: the whole load, the backlog's
	 * drain included (an arm that pushes work past the phases' end still
	 * pays for it), against the baseline rate; share = the fraction of the
	 * phases' antagonist capacity left */
	uint64_t w1 = t0 + (uint64_t)((T + res->drain_s) * 1e9);
	double all = burners_window(b, t0, w1);
	double lost = res->base_rate * (T + res->drain_s) - all;
	res->share = res->base_rate > 0 ? 1 - lost / (res->base_rate * T) : NAN;
	const char *arm = switching_arm_names[u->arm];
	for (int i = 0; i < u->n; i++)
		if (u->r[i].ok)
			fprintf(tl_csv, "%s,%d,ttft,%.4f,%.3f\n", arm, u->rep + 1,
				(double)u->r[i].t_arr / 1e9, u->r[i].ttft_ms);
	/* antagonist work per 250 ms (5 buckets) */
	for (size_t i = 0; i + 5 <= b->n_bucket; i += 5) {
		uint64_t a = b->t_start + (uint64_t)i * BUCKET_NS;
		if (a < t0 || a + 5 * BUCKET_NS > t0 + (uint64_t)(T * 1e9) + BUCKET_NS)
			continue;
		double s = 0;
		for (int j = 0; j < 5; j++)
			s += b->bucket[i + (size_t)j];
		fprintf(tl_csv, "%s,%d,tenant,%.4f,%.0f\n", arm, u->rep + 1,
			(double)(a - t0) / 1e9 + 0.125, s / (5 * BUCKET_NS / 1e9));
	}
	fflush(tl_csv);
}

/* The run's paths and its --cores list. */
static void run_paths(run_t *u, int run_id)
{
	const cfg_t *c = u->c;
	const char *arm = switching_arm_names[u->arm];
	snprintf(u->ctl_path, sizeof u->ctl_path, "/dev/shm/egang-switching-%d-%d",
		 (int)getpid(), run_id);
	snprintf(u->log_path, sizeof u->log_path, "%s/logs/serve-%s-%d.log", c->out,
		 arm, u->rep + 1);
	snprintf(u->units_path, sizeof u->units_path, "%s/logs/units-%s-%d", c->out,
		 arm, u->rep + 1);
	snprintf(u->ctl_log, sizeof u->ctl_log, "%s/logs/control-%s-%d.log", c->out,
		 arm, u->rep + 1);
	int k = 0;
	u->cores[0] = 0;
	for (int i = 0; i < c->n_cpus; i++)
		k += snprintf(u->cores + k, sizeof u->cores - (size_t)k, "%s%d",
			      i ? "," : "", c->cpus[i]);
}

/* 1 s of antagonists beside an idle server: a baseline window. */
static void baseline(bool wait, uint64_t *t0, uint64_t *t1)
{
	*t0 = time_now_ns();
	if (wait)
		usleep(1000000);
	*t1 = time_now_ns();
}

static int run_one(const cfg_t *c, int arm, int rep, int run_id,
		   result_t *res, FILE *req_csv, FILE *tl_csv)
{
	static burners_t b;
	memset(&b, 0, sizeof b);
	memset(res, 0, sizeof *res);
	run_t u = {.c = c, .arm = arm, .rep = rep, .srv = -1, .ctl = -1, .b = &b};
	run_paths(&u, run_id);
	b.units_path = arm == SWITCHING_ARM_BANDIT ? u.units_path : NULL;
	if (b.units_path)
		units_write(&b);
	if (!(u.r = arrivals(c, rep, &u.n)))
		return err_set("out of memory");
	if (burners_start(&b, c, total_phase_s(c) + c->drain_s + 60) < 0) {
		for (int i = 0; i < b.n; i++) { /* the ones started */
			reap(b.pid[i], SIGTERM, 2);
			close(b.fd[i]);
		}
		free(b.bucket);
		free(u.r);
		return -1;
	}
	int rc = server_start(&u);
	if (u.hdr) {
		baseline(!rc, &u.pre0, &u.pre1);
		if (!rc)
			rc = controller_start(&u);
		if (!rc)
			load(&u, res);
		control_close(u.cw);
		/* the baseline after (the controllers have ended) */
		baseline(!rc, &u.post0, &u.post1);
	}
	curl_slist_free_all(u.hdr);
	free(u.body);
	if (u.ctl > 0)
		reap(u.ctl, SIGTERM, 5);
	if (u.srv > 0)
		reap(u.srv, SIGTERM, 10);
	burners_stop(&b);
	unlink(u.ctl_path);
	if (!rc) {
		record_requests(&u, res, req_csv);
		record_work(&u, res, tl_csv);
	}
	free(b.bucket);
	free(u.r);
	return rc;
}

/* ---- the plot ---- */

static int write_plot(const cfg_t *c)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/switching.gp", c->out);
	FILE *f = fopen(path, "w");
	if (!f)
		return err_set("%s: %s", path, strerror(errno));
	double a = c->phase_s[0], b2 = c->phase_s[0] + c->phase_s[1];
	fprintf(f,
		"set terminal pngcairo size 1000,700 noenhanced\n"
		"set output '%s/switching.png'\n"
		"set datafile separator ','\n"
		"set multiplot layout 2,1 title 'egang policy switching%s: oracle arm, "
		"repetition 1 (steady %g/s, burst %g/s, steady %g/s)'\n"
		"set grid\nset key top left\n"
		"set object 1 rect from %g, graph 0 to %g, graph 1 fc rgb '#eeeeee' behind\n"
		"set xrange [0:%g]\n"
		"set ylabel 'TTFT ms (log)'\nset logscale y\n"
		"plot '%s/timeline.csv' using (strcol(1) eq 'throughput' && $2==1 && "
		"strcol(3) eq 'ttft' ? $4 : 1/0):5 with points pt 6 ps 0.5 lc rgb '#bbbbbb' "
		"title 'fixed throughput', "
		"'' using (strcol(1) eq 'latency' && $2==1 && strcol(3) eq 'ttft' ? $4 : 1/0):5 "
		"with points pt 4 ps 0.5 lc rgb '#99bbee' title 'fixed latency', "
		"'' using (strcol(1) eq 'oracle' && $2==1 && strcol(3) eq 'ttft' ? $4 : 1/0):5 "
		"with points pt 7 ps 0.6 lc rgb '#cc0000' title 'oracle'\n"
		"unset logscale y\n"
		"set xlabel 'seconds (grey: the burst)'\n"
		"set ylabel 'antagonist units/s'\nset yrange [0:*]\nset key bottom left\n"
		"plot '%s/timeline.csv' using (strcol(1) eq 'throughput' && $2==1 && "
		"strcol(3) eq 'tenant' ? $4 : 1/0):5 with lines lc rgb '#bbbbbb' "
		"title 'fixed throughput', "
		"'' using (strcol(1) eq 'latency' && $2==1 && strcol(3) eq 'tenant' ? $4 : 1/0):5 "
		"with lines lc rgb '#99bbee' title 'fixed latency', "
		"'' using (strcol(1) eq 'oracle' && $2==1 && strcol(3) eq 'tenant' ? $4 : 1/0):5 "
		"with lines lw 2 lc rgb '#cc0000' title 'oracle'\n"
		"unset multiplot\n",
		c->out, c->scx ? " (sched_ext backend)" : "", c->rate[0], c->rate[1],
		c->rate[2], a, b2, total_phase_s(c), c->out, c->out);
	fclose(f);
	if (c->no_plot)
		return 0;
	char cmd[8600];
	snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>&1", path);
	if (system(cmd) != 0)
		return err_set("gnuplot failed on %s; the CSV files are complete", path);
	return 0;
}

static void mean_sd(const double *v, int n, double *mean, double *sd)
{
	double s = 0, q = 0;
	int k = 0;
	for (int i = 0; i < n; i++)
		if (isfinite(v[i])) {
			s += v[i];
			k++;
		}
	*mean = k ? s / k : NAN;
	for (int i = 0; i < n; i++)
		if (isfinite(v[i]))
			q += (v[i] - *mean) * (v[i] - *mean);
	*sd = k > 1 ? sqrt(q / (k - 1)) : 0;
}


/* ---- the experiment ---- */

void switching_defaults(switching_config_t *c)
{
	/* defaults chosen by measurement on a quiet machine (README "Policy
	 * switching"): on 2 cores with two tenants per core, throughput serves
	 * ~95 requests/s of 48 tokens of stories260K (one polite core shared
	 * with two tenants), latency more than the burst; a 150/s burst
	 * queues ~110 requests under throughput for 2 s (TTFT p99 ~1.2 s),
	 * which drain in the second steady phase; 15 runs take about 4
	 * minutes. (Under foreign load, 60/s already queued: the rates are a
	 * property of the machine, hence the flag.) */
	c->reps = 3;
	c->out = "switching-out";
	c->phase_s[0] = 6, c->phase_s[1] = 2, c->phase_s[2] = 6;
	c->rate[0] = 8, c->rate[1] = 150, c->rate[2] = 8;
	c->max_tokens = 48;
	c->burns = 2;
	c->period_ms = 100;
	c->drain_s = 10;
	c->seed = 1;
	for (int a = 0; a < SWITCHING_ARM_COUNT; a++)
		c->arm_on[a] = true;
}

/* The three CSV files with their headers; EXIT_OK or EXIT_INPUT. */
static int open_csvs(const cfg_t *c, FILE **freq, FILE **ftl, FILE **fcsv)
{
	char logs[4200], p_req[4200], p_tl[4200], p_csv[4200];
	snprintf(logs, sizeof logs, "%s/logs", c->out);
	if ((mkdir(c->out, 0755) < 0 && errno != EEXIST) ||
	    (mkdir(logs, 0755) < 0 && errno != EEXIST))
		return err_set("--out %s: %s", c->out, strerror(errno));
	snprintf(p_req, sizeof p_req, "%s/requests.csv", c->out);
	snprintf(p_tl, sizeof p_tl, "%s/timeline.csv", c->out);
	snprintf(p_csv, sizeof p_csv, "%s/switching.csv", c->out);
	*freq = fopen(p_req, "w");
	*ftl = fopen(p_tl, "w");
	*fcsv = fopen(p_csv, "w");
	if (!*freq || !*ftl || !*fcsv)
		return err_set("--out %s: cannot write the CSV files: %s", c->out,
			       strerror(errno));
	fprintf(*freq, "arm,rep,phase,arrival_s,ttft_ms,http_status,completion_tokens\n");
	fprintf(*ftl, "arm,rep,kind,t_s,value\n");
	fprintf(*fcsv, "arm,rep,phase,rate_per_s,seconds,sent,served,ttft_p50_ms,"
		"ttft_p99_ms,antagonist_units,antagonist_base_units_per_s,"
		"antagonist_share_run,inference_cpu_s_run,guard_fallbacks,drain_s\n");
	return 0;
}

/* Checks that need no child: the files, the antagonist count, this
 * executable's path. */
static int check(const cfg_t *c)
{
	if (access(c->model, R_OK) < 0)
		return err_set("bench switching: -m %s: %s", c->model, strerror(errno));
	if (c->tok && access(c->tok, R_OK) < 0)
		return err_set("bench switching: -z %s: %s", c->tok, strerror(errno));
	if (c->burns * c->n_cpus > MAX_BURNERS)
		return err_set("--burns-per-core: %d x %d cores is more than %d antagonists",
			       c->burns, c->n_cpus, MAX_BURNERS);
	if (c->reps < 1 || c->reps > SWITCHING_MAX_REPS)
		return err_set("--reps: %d is out of range [1, %d]", c->reps,
			       SWITCHING_MAX_REPS);
	return 0;
}

/* Mean and sd over repetitions of one arm's results. */
static void summarize(const cfg_t *c, const result_t *res, switching_arm_summary_t *s)
{
	const double machine_s = c->n_cpus * total_phase_s(c);
	double u[SWITCHING_MAX_REPS], l[SWITCHING_MAX_REPS], raw[SWITCHING_MAX_REPS];
	double p50[SWITCHING_MAX_REPS], p99[SWITCHING_MAX_REPS];
	for (int r = 0; r < c->reps; r++) {
		u[r] = res[r].share;
		l[r] = 1 - res[r].cpu_s / machine_s;
		raw[r] = res[r].units;
		for (int p = 0; p < N_PHASES; p++) {
			s->sent += res[r].sent[p];
			s->served += res[r].served[p];
		}
		s->fallbacks += res[r].fallbacks;
		if (res[r].drain_s > s->drain_max_s)
			s->drain_max_s = res[r].drain_s;
	}
	mean_sd(u, c->reps, &s->work, &s->work_sd);
	mean_sd(l, c->reps, &s->left, &s->left_sd);
	mean_sd(raw, c->reps, &s->units, &s->units_sd);
	for (int p = 0; p < N_PHASES; p++) {
		for (int r = 0; r < c->reps; r++) {
			p50[r] = res[r].p50[p];
			p99[r] = res[r].p99[p];
		}
		mean_sd(p50, c->reps, &s->p50[p], &s->p50_sd[p]);
		mean_sd(p99, c->reps, &s->p99[p], &s->p99_sd[p]);
	}
	snprintf(s->ctl, sizeof s->ctl, "%s", res[c->reps - 1].ctl);
}

static void csv_rows(FILE *f, const cfg_t *c, int a, int rep, const result_t *x)
{
	for (int p = 0; p < N_PHASES; p++)
		fprintf(f, "%s,%d,%s,%g,%g,%d,%d,%.3f,%.3f,%.0f,%.0f,%.4f,%.3f,%llu,%.3f\n",
			switching_arm_names[a], rep + 1, phase_names[p], c->rate[p],
			c->phase_s[p], x->sent[p], x->served[p], x->p50[p], x->p99[p],
			x->units_phase[p], x->base_rate, x->share, x->cpu_s,
			(unsigned long long)x->fallbacks, x->drain_s);
	fflush(f);
}

/* Every run, interleaved by repetition; 0 or -1 + err_get(). */
static int runs(const cfg_t *c, result_t (*res)[SWITCHING_MAX_REPS], FILE *freq,
		FILE *ftl, FILE *fcsv, switching_summary_t *s)
{
	int total_runs = 0;
	for (int a = 0; a < SWITCHING_ARM_COUNT; a++)
		total_runs += c->arm_on[a] * c->reps;
	uint64_t t_bench = time_now_ns();
	for (int rep = 0; rep < c->reps; rep++)
		for (int a = 0; a < SWITCHING_ARM_COUNT; a++) {
			if (!c->arm_on[a])
				continue;
			log_info("bench switching: run %d/%d: %s, repetition %d "
				 "(%.0f s elapsed)", s->runs + 1, total_runs,
				 switching_arm_names[a], rep + 1,
				 (double)(time_now_ns() - t_bench) / 1e9);
			if (run_one(c, a, rep, s->runs, &res[a][rep], freq, ftl) < 0)
				return err_wrap("bench switching: %s, repetition %d",
						switching_arm_names[a], rep + 1);
			s->runs++;
			csv_rows(fcsv, c, a, rep, &res[a][rep]);
		}
	s->seconds = (double)(time_now_ns() - t_bench) / 1e9;
	return 0;
}

int switching_run(const switching_config_t *c, switching_summary_t *s,
		  int *exit_code)
{
	memset(s, 0, sizeof *s);
	*exit_code = EXIT_INPUT;
	if (check(c) < 0)
		return -1;
	ssize_t sl = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
	*exit_code = EXIT_FAIL;
	if (sl <= 0)
		return err_set("bench switching: cannot find this executable "
			       "(/proc/self/exe)");
	self_exe[sl] = 0;
	FILE *freq = NULL, *ftl = NULL, *fcsv = NULL;
	static result_t res[SWITCHING_ARM_COUNT][SWITCHING_MAX_REPS];
	int rc = open_csvs(c, &freq, &ftl, &fcsv);
	if (rc < 0)
		*exit_code = EXIT_INPUT;
	else if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		rc = err_set("bench switching: curl_global_init failed");
	else {
		signal(SIGPIPE, SIG_IGN);
		rc = runs(c, res, freq, ftl, fcsv, s);
		curl_global_cleanup();
	}
	if (freq)
		fclose(freq);
	if (ftl)
		fclose(ftl);
	if (fcsv)
		fclose(fcsv);
	if (rc < 0)
		return -1;
	for (int a = 0; a < SWITCHING_ARM_COUNT; a++)
		if (c->arm_on[a])
			summarize(c, res[a], &s->arm[a]);
	if (c->arm_on[SWITCHING_ARM_ORACLE] && write_plot(c) < 0)
		snprintf(s->plot_error, sizeof s->plot_error, "%s", err_get());
	*exit_code = EXIT_OK;
	return 0;
}

bool switching_goal(const switching_config_t *c, const switching_summary_t *s,
		    switching_arm_t arm, switching_goal_t *g)
{
	if (arm < SWITCHING_ARM_ORACLE || !c->arm_on[arm] ||
	    !c->arm_on[SWITCHING_ARM_LATENCY] || !c->arm_on[SWITCHING_ARM_THROUGHPUT])
		return false;
	const switching_arm_summary_t *a = &s->arm[arm],
		*lat = &s->arm[SWITCHING_ARM_LATENCY],
		*thr = &s->arm[SWITCHING_ARM_THROUGHPUT];
	g->sd = a->p99_sd[1] > lat->p99_sd[1] ? a->p99_sd[1] : lat->p99_sd[1];
	g->latency_ok = a->p99[1] <= lat->p99[1] + g->sd;
	g->share = a->work / thr->work;
	g->cpu = a->left / thr->left;
	g->work_ok = g->share >= 0.97;
	return true;
}
