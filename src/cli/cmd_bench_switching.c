/* egang bench switching: the policy-switching experiment (issue 6; the AKTS
 * paper's "switching beats any fixed policy").
 *
 * One run = one arm x one repetition, each from scratch:
 *  1. antagonists: BURNS x n `egang burn` processes (n = the gang's cores),
 *     each pinned to one core, two per core by default. Pinned so that every
 *     arm faces the same contention on every core (the CFS balancer does not
 *     get to move them differently from run to run) and so that the
 *     `throughput` record's reserved core really holds tenants. Each reports
 *     its rate every 50 ms on a pipe; a monitor thread integrates the reports
 *     into 50 ms buckets (the work done, on the bench's clock) and rewrites a
 *     units file the bandit reads (--tenant-units).
 *  2. `egang serve` on all the gang's cores, a private control word
 *     (/dev/shm/egang-switching-PID-RUN, 0600), an unbounded queue (so no
 *     429 hides a burst), its port picked by the kernel (--port 0, read from
 *     its startup line). Its initial policy is the arm's first: the gang's
 *     keep spin is fixed when the gang starts (control.h), so the fixed
 *     `latency` arm keeps its 50 ms spin and the switching arms, which start
 *     in `throughput`, have none.
 *  3. three warm-up requests (not counted), then the arm's controller:
 *     `egang policy set` (fixed arms), `egang control --oracle` with the
 *     phase schedule (throughput, latency for the burst, throughput),
 *     `egang control --bandit --tenant-units`, `egang control --agent`.
 *  4. open-loop arrivals: a Poisson process per phase at its rate, from a
 *     seed that depends on the repetition only (every arm of a repetition
 *     sees the same arrival times). One thread drives every request on a
 *     curl multi handle; TTFT counts from the *scheduled* arrival, so a
 *     slow client cannot hide queueing (no coordinated omission). After the
 *     last arrival the run waits for the backlog (at most --drain-seconds).
 *  5. antagonist work is the burners' units inside [t0, t0 + phases]: the
 *     same window in every arm (rates are chosen so that the throughput
 *     arm's backlog drains inside the last phase; the drain time is
 *     reported). Guard fallbacks are read from the control word.
 * Arms are interleaved inside each repetition (latency, throughput, oracle,
 * bandit, agent, then again) so that drift of the shared machine spreads
 * over all of them.
 *
 * The goal (the paper's result), reported per switching arm: burst TTFT p99
 * no worse than the latency arm's by more than one standard deviation (the
 * larger of the two arms' over repetitions) and antagonist work at least
 * 97% of the throughput arm's. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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

#include "cli/cli.h"
#include "cli/loadgen.h"
#include "gang/gang.h"
#include "policy/control.h"

static const char switching_help[] =
	"usage: egang bench switching -m MODEL [options]\n"
	"\n"
	"The policy-switching experiment: `egang serve` on all cores with CPU-bound\n"
	"antagonists (`egang burn`, pinned, BURNS per core) running throughout,\n"
	"and open-loop Poisson arrivals in three phases (steady, burst, steady).\n"
	"Per arm and repetition a fresh server and fresh antagonists. Arms:\n"
	"  latency     the `latency` record, fixed (`egang policy set`)\n"
	"  throughput  the `throughput` record, fixed\n"
	"  oracle      `egang control --oracle`: throughput, latency in the\n"
	"              burst, throughput (knows the phases: the upper bound)\n"
	"  bandit      `egang control --bandit` (UCB1, reward from TTFT and the\n"
	"              antagonists' measured work)\n"
	"  agent       `egang control --agent -m MODEL` (the same model)\n"
	"Prints one summary line per arm (TTFT p50/p99 per phase as mean +- sd\n"
	"over repetitions, requests served, antagonist work, guard fallbacks)\n"
	"and one goal line per switching arm; writes DIR/switching.csv (one row\n"
	"per arm, repetition and phase), DIR/requests.csv, DIR/timeline.csv and\n"
	"DIR/switching.png (TTFT and antagonist work over time, oracle arm).\n"
	"\n"
	"  -m, --model FILE        the served model (required; GGUF or llama2.c)\n"
	"  -z, --tokenizer FILE    tokenizer.bin for a llama2.c checkpoint\n"
	"      --reps N            repetitions of every arm (default 3)\n"
	"      --arms LIST         comma-separated arms (default all five)\n"
	"      --phase-seconds A,B,C  steady, burst, steady durations (default 6,2,6)\n"
	"      --rates A,B,C       arrivals per second in each phase (default 8,150,8)\n"
	"      --max-tokens N      tokens generated per request (default 48)\n"
	"      --burns-per-core N  antagonist processes per core (default 2)\n"
	"      --cores LIST        the server's CPUs (default: all allowed)\n"
	"      --period-ms N       controllers' period (default 100)\n"
	"      --drain-seconds S   wait at most S for the backlog (default 10)\n"
	"      --seed N            arrivals (default 1; repetition r uses N + r)\n"
	"      --out DIR           output folder (default switching-out)\n"
	"  -q, --quiet             no progress lines (summary lines stay)\n"
	"  -h, --help              this text\n";

enum { ARM_LATENCY, ARM_THROUGHPUT, ARM_ORACLE, ARM_BANDIT, ARM_AGENT, ARM_COUNT };
static const char *const arm_names[ARM_COUNT] = {"latency", "throughput",
						 "oracle", "bandit", "agent"};
#define N_PHASES 3
static const char *const phase_names[N_PHASES] = {"steady1", "burst", "steady2"};

#define BUCKET_NS 50000000ull /* antagonist work buckets: 50 ms */
#define MAX_BURNERS 256

typedef struct cfg {
	const char *model, *tok, *cores, *out;
	int reps;
	bool arm_on[ARM_COUNT];
	double phase_s[N_PHASES], rate[N_PHASES];
	int max_tokens, burns, period_ms;
	double drain_s;
	int64_t seed;
	char self[4096]; /* this executable */
	int n_cpus;
	int cpus[GANG_MAX_SLOTS];
} cfg_t;

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
	execv(c->self, args);
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

static void burners_line(burners_t *b, int i, uint64_t now)
{
	double t, rate;
	b->buf[i][b->len[i]] = 0;
	if (sscanf(b->buf[i], "burn t=%lf units/s=%lf", &t, &rate) != 2)
		return;
	double dt = t - b->last_t[i];
	b->last_t[i] = t;
	if (dt <= 0)
		return;
	burners_add(b, now - (uint64_t)(dt * 1e9), now, rate * dt);
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
	while (!atomic_load(&b->stop)) {
		for (int i = 0; i < b->n; i++)
			pf[i] = (struct pollfd){.fd = b->fd[i], .events = POLLIN};
		int r = poll(pf, (nfds_t)b->n, 20);
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
		b->pid[b->n] = spawn(c, args, p[1], -1);
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
	atomic_store(&b->stop, false);
	if (pthread_create(&b->thread, NULL, burners_main, b))
		return err_set("pthread_create failed");
	return 0;
}

static void burners_stop(burners_t *b)
{
	atomic_store(&b->stop, true);
	pthread_join(b->thread, NULL);
	for (int i = 0; i < b->n; i++)
		kill(b->pid[i], SIGTERM);
	for (int i = 0; i < b->n; i++) {
		reap(b->pid[i], 0, 2);
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

static int cmp_d(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

/* nearest-rank quantile of v[0..n) (sorted here) */
static double quantile(double *v, int n, double q)
{
	if (n <= 0)
		return NAN;
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	int i = (int)ceil(q * n) - 1;
	return v[i < 0 ? 0 : i >= n ? n - 1 : i];
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

static int run_one(const cfg_t *c, int arm, int rep, int run_id,
		   result_t *res, FILE *req_csv, FILE *tl_csv)
{
	memset(res, 0, sizeof *res);
	char ctl_path[256], log_path[4200], units_path[4200], cores[256];
	snprintf(ctl_path, sizeof ctl_path, "/dev/shm/egang-switching-%d-%d",
		 (int)getpid(), run_id);
	snprintf(log_path, sizeof log_path, "%s/logs/serve-%s-%d.log", c->out,
		 arm_names[arm], rep + 1);
	snprintf(units_path, sizeof units_path, "%s/logs/units-%s-%d", c->out,
		 arm_names[arm], rep + 1);
	int k = 0;
	cores[0] = 0;
	for (int i = 0; i < c->n_cpus; i++)
		k += snprintf(cores + k, sizeof cores - (size_t)k, "%s%d", i ? "," : "",
			      c->cpus[i]);
	double T = total_phase_s(c);
	int rc = 0;
	pid_t srv = -1, ctl = -1;
	uint64_t t0 = 0, pre0 = 0, pre1 = 0, post0 = 0, post1 = 0;
	static burners_t b;
	memset(&b, 0, sizeof b);
	b.units_path = arm == ARM_BANDIT ? units_path : NULL;
	if (b.units_path)
		units_write(&b);
	int n = 0;
	req_t *r = arrivals(c, rep, &n);
	if (!r)
		return err_set("out of memory");
	if (burners_start(&b, c, T + c->drain_s + 60) < 0) {
		for (int i = 0; i < b.n; i++) { /* the ones started */
			reap(b.pid[i], SIGTERM, 2);
			close(b.fd[i]);
		}
		free(b.bucket);
		free(r);
		return -1;
	}
	/* the server, with the arm's first policy */
	const char *init = arm == ARM_LATENCY ? "latency" : "throughput";
	int lfd = file_open_w(log_path);
	char *sargs[] = {"egang", "serve", "-m", (char *)c->model, "--port", "0",
			 "--control", ctl_path, "--policy", (char *)init,
			 "--max-queue", "100000", "--max-conns", "10000",
			 "--timeout", "600", "--cores", cores,
			 c->tok ? "-z" : NULL, (char *)c->tok, NULL};
	srv = spawn(c, sargs, lfd, lfd);
	close(lfd);
	char url[128], health[160];
	int port = 0;
	for (int i = 0; i < 1000 && !port; i++) {
		if (waitpid(srv, NULL, WNOHANG) == srv) {
			srv = -1;
			break;
		}
		usleep(10000);
		port = server_port_from_log(log_path);
	}
	if (!port) {
		rc = err_set("egang serve did not start (see %s)", log_path);
		goto out;
	}
	snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/completions", port);
	snprintf(health, sizeof health, "http://127.0.0.1:%d/health", port);
	for (int i = 0; i < 500 && !http_ok(health); i++)
		usleep(10000);
	struct curl_slist *hdr = loadgen_headers(NULL);
	/* temperature 0: every request generates the same tokens (the same
	 * work in every arm) */
	char *body = loadgen_body("Once upon a time", c->max_tokens, false, 0);
	for (int i = 0; i < 3; i++)
		if (!warm_request(url, hdr, body)) {
			rc = err_set("the warm-up request failed (see %s)", log_path);
			break;
		}
	char ctl_log[4200];
	snprintf(ctl_log, sizeof ctl_log, "%s/logs/control-%s-%d.log", c->out,
		 arm_names[arm], rep + 1);
	char period[16], secs[32], sched[256];
	snprintf(period, sizeof period, "%d", c->period_ms);
	snprintf(secs, sizeof secs, "%g", T);
	snprintf(sched, sizeof sched, "0-%gs:throughput,%g-%gs:latency,%g-%gs:throughput",
		 c->phase_s[0], c->phase_s[0], c->phase_s[0] + c->phase_s[1],
		 c->phase_s[0] + c->phase_s[1], T);
	/* the baseline before: 1 s of antagonists beside an idle server */
	pre0 = time_now_ns();
	if (!rc)
		usleep(1000000);
	pre1 = time_now_ns();
	control_t *cw = rc ? NULL : control_open(ctl_path, false);
	if (!rc && !cw)
		rc = -1;
	if (!rc) {
		/* an index no record has, so the controller's first write shows
		 * (the server is idle: no token reads it) */
		if (arm != ARM_LATENCY && arm != ARM_THROUGHPUT)
			control_write_index(cw, UINT32_MAX);
		int cfd = file_open_w(ctl_log);
		if (arm == ARM_LATENCY || arm == ARM_THROUGHPUT) {
			char *a[] = {"egang", "policy", "set", (char *)arm_names[arm],
				     "--control", ctl_path, "--cores", cores, NULL};
			pid_t p = spawn(c, a, cfd, cfd);
			int st = 0;
			waitpid(p, &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				rc = err_set("egang policy set %s failed (see %s)",
					     arm_names[arm], ctl_log);
		} else {
			char *a[32] = {"egang", "control", "--control", ctl_path,
				       "--period-ms", period, "--seconds", secs,
				       "--cores", cores, "-q"};
			int na = 11;
			if (arm == ARM_ORACLE) {
				a[na++] = "--oracle";
				a[na++] = sched;
			} else if (arm == ARM_BANDIT) {
				a[na++] = "--bandit";
				a[na++] = "--tenant-units";
				a[na++] = units_path;
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
			ctl = spawn(c, a, cfd, cfd);
		}
		close(cfd);
		t0 = time_now_ns();
		if (ctl > 0) {
			/* the oracle's phases count from its own start: its first
			 * write comes one period after it, so the load starts at
			 * that write minus a period; the bandit and the agent
			 * start the load at their first write */
			uint64_t give_up = t0 + 60000000000ull;
			while (atomic_load(&cw->w->index) == UINT32_MAX &&
			       time_now_ns() < give_up && waitpid(ctl, NULL, WNOHANG) == 0)
				usleep(500);
			if (atomic_load(&cw->w->index) == UINT32_MAX)
				rc = err_set("the controller wrote no index (see %s)", ctl_log);
			t0 = time_now_ns();
			if (arm == ARM_ORACLE)
				t0 -= (uint64_t)c->period_ms * 1000000ull;
		}
	}
	if (!rc) {
		double cpu0 = proc_cpu_s(srv) + proc_cpu_s(ctl);
		res->drain_s = drive(c, r, n, t0, url, hdr, body);
		/* the controller has ended by now or ends at once (--seconds) */
		if (ctl > 0)
			usleep(200000);
		res->cpu_s = proc_cpu_s(srv) + proc_cpu_s(ctl) - cpu0;
		if (ctl > 0) {
			/* every controller ends at --seconds (the phases' end);
			 * SIGTERM ends one still running with its summary */
			reap(ctl, SIGTERM, 5);
			ctl = -1;
			size_t len;
			char *t = file_read_all(ctl_log, &len);
			char *s = t ? strstr(t, "control summary: ") : NULL;
			if (s) {
				char *nl = strchr(s, '\n');
				if (nl)
					*nl = 0;
				snprintf(res->ctl, sizeof res->ctl, "%s", s + 17);
			}
			free(t);
		}
		res->fallbacks = atomic_load(&cw->w->guard_fallbacks);
		res->invalid_reads = atomic_load(&cw->w->invalid_reads);
	}
	if (cw)
		control_close(cw);
	/* the baseline after (the controllers have ended) */
	post0 = time_now_ns();
	if (!rc)
		usleep(1000000);
	post1 = time_now_ns();
	curl_slist_free_all(hdr);
	free(body);
out:
	if (ctl > 0)
		reap(ctl, SIGTERM, 5);
	if (srv > 0)
		reap(srv, SIGTERM, 10);
	burners_stop(&b);
	unlink(ctl_path);
	if (!rc) {
		double *v[N_PHASES];
		int nv[N_PHASES] = {0};
		for (int p = 0; p < N_PHASES; p++)
			v[p] = malloc((size_t)(n + 1) * sizeof *v[p]);
		for (int i = 0; i < n; i++) {
			int p = r[i].phase;
			res->sent[p]++;
			if (r[i].ok) {
				res->served[p]++;
				v[p][nv[p]++] = r[i].ttft_ms;
			}
			char tt[32];
			snprintf(tt, sizeof tt, r[i].ok ? "%.3f" : "nan", r[i].ttft_ms);
			fprintf(req_csv, "%s,%d,%s,%.4f,%s,%ld,%lld\n", arm_names[arm],
				rep + 1, phase_names[p], (double)r[i].t_arr / 1e9, tt,
				r[i].code, (long long)r[i].st.completion_tokens);
		}
		for (int p = 0; p < N_PHASES; p++) {
			res->p50[p] = quantile(v[p], nv[p], 0.5);
			res->p99[p] = quantile(v[p], nv[p], 0.99);
			free(v[p]);
		}
		double start = 0;
		for (int p = 0; p < N_PHASES; p++) {
			uint64_t a = t0 + (uint64_t)(start * 1e9);
			start += c->phase_s[p];
			res->units_phase[p] = burners_window(&b, a, t0 + (uint64_t)(start * 1e9));
			res->units += res->units_phase[p];
		}
		/* whole buckets inside each baseline window */
		uint64_t q0 = pre0 + BUCKET_NS, q1 = pre1 - BUCKET_NS;
		uint64_t s0 = post0 + BUCKET_NS, s1 = post1 - BUCKET_NS;
		double pre = burners_window(&b, q0, q1) / ((double)(q1 - q0) / 1e9);
		double post = burners_window(&b, s0, s1) / ((double)(s1 - s0) / 1e9);
		res->base_rate = (pre + post) / 2;
		/* the work lost to serving this load: the whole load, the
		 * backlog's drain included (an arm that pushes work past the
		 * phases' end still pays for it), against the baseline rate;
		 * share = the fraction of the phases' antagonist capacity left */
		uint64_t w1 = t0 + (uint64_t)((T + res->drain_s) * 1e9);
		double all = burners_window(&b, t0, w1);
		double lost = res->base_rate * (T + res->drain_s) - all;
		res->share = res->base_rate > 0 ? 1 - lost / (res->base_rate * T) : NAN;
		for (int i = 0; i < n; i++)
			if (r[i].ok)
				fprintf(tl_csv, "%s,%d,ttft,%.4f,%.3f\n", arm_names[arm],
					rep + 1, (double)r[i].t_arr / 1e9, r[i].ttft_ms);
		/* antagonist work per 250 ms (5 buckets) */
		for (size_t i = 0; i + 5 <= b.n_bucket; i += 5) {
			uint64_t a = b.t_start + (uint64_t)i * BUCKET_NS;
			if (a < t0 || a + 5 * BUCKET_NS > t0 + (uint64_t)(T * 1e9) + BUCKET_NS)
				continue;
			double s = 0;
			for (int j = 0; j < 5; j++)
				s += b.bucket[i + (size_t)j];
			fprintf(tl_csv, "%s,%d,tenant,%.4f,%.0f\n", arm_names[arm], rep + 1,
				(double)(a - t0) / 1e9 + 0.125, s / (5 * BUCKET_NS / 1e9));
		}
		fflush(tl_csv);
	}
	free(b.bucket);
	free(r);
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
		"set multiplot layout 2,1 title 'egang policy switching: oracle arm, "
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
		c->out, c->rate[0], c->rate[1], c->rate[2], a, b2, total_phase_s(c),
		c->out, c->out);
	fclose(f);
	char cmd[8600];
	snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>&1", path);
	if (system(cmd) != 0)
		return err_set("gnuplot failed on %s; the CSV files are complete", path);
	return 0;
}

/* ---- flags ---- */

/* "A,B,C" of three numbers in [lo, hi]. */
static int three(const char *flag, const char *s, double lo, double hi, double out[3])
{
	const char *p = s;
	for (int i = 0; i < 3; i++) {
		char *end;
		errno = 0;
		double v = strtod(p, &end);
		if (end == p || errno || !isfinite(v) || v < lo || v > hi ||
		    (i < 2 && *end != ',') || (i == 2 && *end)) {
			log_error("%s: '%s' is not three numbers A,B,C in [%g, %g]",
				  flag, s, lo, hi);
			return -1;
		}
		out[i] = v;
		p = end + 1;
	}
	return 0;
}

static int parse_arms(const char *s, bool on[ARM_COUNT])
{
	memset(on, 0, ARM_COUNT * sizeof *on);
	char buf[256];
	snprintf(buf, sizeof buf, "%s", s);
	char *save = NULL;
	int n = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int a = 0;
		while (a < ARM_COUNT && strcmp(t, arm_names[a]))
			a++;
		if (a == ARM_COUNT) {
			log_error("--arms: '%s' is not latency, throughput, oracle, "
				  "bandit or agent", t);
			return -1;
		}
		on[a] = true;
		n++;
	}
	if (!n) {
		log_error("--arms: the list is empty");
		return -1;
	}
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

int cmd_bench_switching(int argc, char **argv)
{
	static const struct option opts[] = {
		{"model", required_argument, 0, 'm'},
		{"tokenizer", required_argument, 0, 'z'},
		{"reps", required_argument, 0, 'r'},
		{"arms", required_argument, 0, 'a'},
		{"phase-seconds", required_argument, 0, 'S'},
		{"rates", required_argument, 0, 'R'},
		{"max-tokens", required_argument, 0, 'n'},
		{"burns-per-core", required_argument, 0, 'b'},
		{"cores", required_argument, 0, 'C'},
		{"period-ms", required_argument, 0, 'p'},
		{"drain-seconds", required_argument, 0, 'd'},
		{"seed", required_argument, 0, 's'},
		{"out", required_argument, 0, 'o'},
		{"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	static cfg_t c;
	memset(&c, 0, sizeof c);
	c.reps = 3;
	c.out = "switching-out";
	/* defaults chosen by measurement on a quiet machine (README "Policy
	 * switching"): on 2 cores with two tenants per core, throughput serves
	 * ~95 requests/s of 48 tokens of stories260K (one polite core shared
	 * with two tenants), latency more than the burst; a 150/s burst
	 * queues ~110 requests under throughput for 2 s (TTFT p99 ~1.2 s),
	 * which drain in the second steady phase; 15 runs take about 4
	 * minutes. (Under foreign load, 60/s already queued: the rates are a
	 * property of the machine, hence the flag.) */
	c.phase_s[0] = 6, c.phase_s[1] = 2, c.phase_s[2] = 6;
	c.rate[0] = 8, c.rate[1] = 150, c.rate[2] = 8;
	c.max_tokens = 48;
	c.burns = 2;
	c.period_ms = 100;
	c.drain_s = 10;
	c.seed = 1;
	for (int a = 0; a < ARM_COUNT; a++)
		c.arm_on[a] = true;
	int64_t v;
	int opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "m:z:qh", opts, NULL)) != -1) {
		int bad = 0;
		switch (opt) {
		case 'm': c.model = optarg; break;
		case 'z': c.tok = optarg; break;
		case 'r': bad = cli_int("--reps", optarg, 1, 1000, &v); c.reps = (int)v; break;
		case 'a': bad = parse_arms(optarg, c.arm_on); break;
		case 'S': bad = three("--phase-seconds", optarg, 0.1, 3600, c.phase_s); break;
		case 'R': bad = three("--rates", optarg, 0.01, 10000, c.rate); break;
		case 'n': bad = cli_int("--max-tokens", optarg, 1, 4096, &v); c.max_tokens = (int)v; break;
		case 'b': bad = cli_int("--burns-per-core", optarg, 0, 16, &v); c.burns = (int)v; break;
		case 'C': c.cores = optarg; break;
		case 'p': bad = cli_int("--period-ms", optarg, 1, 60000, &v); c.period_ms = (int)v; break;
		case 'd': bad = cli_float("--drain-seconds", optarg, 0, 3600, &c.drain_s); break;
		case 's': bad = cli_int("--seed", optarg, 0, INT64_MAX / 2, &c.seed); break;
		case 'o': c.out = optarg; break;
		case 'q': log_quiet = true; break;
		case 'h': fputs(switching_help, stdout); return EXIT_OK;
		default: return cli_usage_error("bench switching", argv[optind - 1]);
		}
		if (bad)
			return EXIT_INPUT;
	}
	if (cli_no_more_args("bench switching", argc, argv) < 0)
		return EXIT_INPUT;
	if (!c.model) {
		log_error("bench switching: -m MODEL is required");
		return EXIT_INPUT;
	}
	if (access(c.model, R_OK) < 0) {
		log_error("bench switching: -m %s: %s", c.model, strerror(errno));
		return EXIT_INPUT;
	}
	if (c.tok && access(c.tok, R_OK) < 0) {
		log_error("bench switching: -z %s: %s", c.tok, strerror(errno));
		return EXIT_INPUT;
	}
	c.n_cpus = cli_cores(c.cores, c.cpus, GANG_MAX_SLOTS);
	if (c.n_cpus < 0) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	if (c.burns * c.n_cpus > MAX_BURNERS) {
		log_error("--burns-per-core: %d x %d cores is more than %d antagonists",
			  c.burns, c.n_cpus, MAX_BURNERS);
		return EXIT_INPUT;
	}
	ssize_t sl = readlink("/proc/self/exe", c.self, sizeof c.self - 1);
	if (sl <= 0) {
		log_error("bench switching: cannot find this executable (/proc/self/exe)");
		return EXIT_FAIL;
	}
	c.self[sl] = 0;
	char logs[4200];
	snprintf(logs, sizeof logs, "%s/logs", c.out);
	if ((mkdir(c.out, 0755) < 0 && errno != EEXIST) ||
	    (mkdir(logs, 0755) < 0 && errno != EEXIST)) {
		log_error("--out %s: %s", c.out, strerror(errno));
		return EXIT_INPUT;
	}
	char p_req[4200], p_tl[4200], p_csv[4200];
	snprintf(p_req, sizeof p_req, "%s/requests.csv", c.out);
	snprintf(p_tl, sizeof p_tl, "%s/timeline.csv", c.out);
	snprintf(p_csv, sizeof p_csv, "%s/switching.csv", c.out);
	FILE *freq = fopen(p_req, "w"), *ftl = fopen(p_tl, "w"), *fcsv = fopen(p_csv, "w");
	if (!freq || !ftl || !fcsv) {
		log_error("--out %s: cannot write the CSV files: %s", c.out, strerror(errno));
		return EXIT_INPUT;
	}
	fprintf(freq, "arm,rep,phase,arrival_s,ttft_ms,http_status,completion_tokens\n");
	fprintf(ftl, "arm,rep,kind,t_s,value\n");
	fprintf(fcsv, "arm,rep,phase,rate_per_s,seconds,sent,served,ttft_p50_ms,"
		"ttft_p99_ms,antagonist_units,antagonist_base_units_per_s,"
		"antagonist_share_run,inference_cpu_s_run,guard_fallbacks,drain_s\n");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		log_error("bench switching: curl_global_init failed");
		return EXIT_FAIL;
	}
	signal(SIGPIPE, SIG_IGN);
	static result_t res[ARM_COUNT][1000];
	int n_runs = 0, total_runs = 0;
	for (int a = 0; a < ARM_COUNT; a++)
		total_runs += c.arm_on[a] * c.reps;
	uint64_t t_bench = time_now_ns();
	int status = EXIT_OK;
	for (int rep = 0; rep < c.reps && status == EXIT_OK; rep++)
		for (int a = 0; a < ARM_COUNT && status == EXIT_OK; a++) {
			if (!c.arm_on[a])
				continue;
			if (!log_quiet)
				fprintf(stderr, "bench switching: run %d/%d: %s, repetition %d "
					"(%.0f s elapsed)\n", n_runs + 1, total_runs,
					arm_names[a], rep + 1,
					(double)(time_now_ns() - t_bench) / 1e9);
			if (run_one(&c, a, rep, n_runs, &res[a][rep], freq, ftl) < 0) {
				log_error("bench switching: %s, repetition %d: %s",
					  arm_names[a], rep + 1, err_get());
				status = EXIT_FAIL;
				break;
			}
			n_runs++;
			const result_t *x = &res[a][rep];
			for (int p = 0; p < N_PHASES; p++)
				fprintf(fcsv, "%s,%d,%s,%g,%g,%d,%d,%.3f,%.3f,%.0f,%.0f,%.4f,%.3f,%llu,%.3f\n",
					arm_names[a], rep + 1, phase_names[p], c.rate[p],
					c.phase_s[p], x->sent[p], x->served[p], x->p50[p],
					x->p99[p], x->units_phase[p], x->base_rate, x->share, x->cpu_s,
					(unsigned long long)x->fallbacks, x->drain_s);
			fflush(fcsv);
		}
	fclose(freq);
	fclose(ftl);
	fclose(fcsv);
	curl_global_cleanup();
	if (status != EXIT_OK)
		return status;
	/* summary: mean +- sd over repetitions */
	double burst_p99[ARM_COUNT], burst_sd[ARM_COUNT], work[ARM_COUNT] = {0},
	       work_sd[ARM_COUNT] = {0}, left[ARM_COUNT] = {0}, left_sd[ARM_COUNT] = {0};
	const double machine_s = c.n_cpus * total_phase_s(&c);
	for (int a = 0; a < ARM_COUNT; a++) {
		double u[1000], l[1000];
		for (int r = 0; r < c.reps && c.arm_on[a]; r++) {
			u[r] = res[a][r].share;
			l[r] = 1 - res[a][r].cpu_s / machine_s;
		}
		if (c.arm_on[a]) {
			mean_sd(u, c.reps, &work[a], &work_sd[a]);
			mean_sd(l, c.reps, &left[a], &left_sd[a]);
		}
	}
	for (int a = 0; a < ARM_COUNT; a++) {
		if (!c.arm_on[a])
			continue;
		char line[2048];
		int k = snprintf(line, sizeof line, "bench switching: arm %s reps %d",
				 arm_names[a], c.reps);
		double tmp[1000], m50, s50, m99, s99;
		int sent = 0, served = 0;
		uint64_t fb = 0;
		double dmax = 0;
		for (int p = 0; p < N_PHASES; p++) {
			for (int r = 0; r < c.reps; r++)
				tmp[r] = res[a][r].p50[p];
			mean_sd(tmp, c.reps, &m50, &s50);
			for (int r = 0; r < c.reps; r++)
				tmp[r] = res[a][r].p99[p];
			mean_sd(tmp, c.reps, &m99, &s99);
			k += snprintf(line + k, sizeof line - (size_t)k,
				      " %s ttft_p50 %.1f+-%.1f ms p99 %.1f+-%.1f ms",
				      phase_names[p], m50, s50, m99, s99);
			if (p == 1) {
				burst_p99[a] = m99;
				burst_sd[a] = s99;
			}
		}
		for (int r = 0; r < c.reps; r++) {
			for (int p = 0; p < N_PHASES; p++) {
				sent += res[a][r].sent[p];
				served += res[a][r].served[p];
			}
			fb += res[a][r].fallbacks;
			if (res[a][r].drain_s > dmax)
				dmax = res[a][r].drain_s;
		}
		double mw = work[a], sw = work_sd[a];
		double raw[1000], mr, sr;
		for (int r = 0; r < c.reps; r++)
			raw[r] = res[a][r].units;
		mean_sd(raw, c.reps, &mr, &sr);
		k += snprintf(line + k, sizeof line - (size_t)k,
			      " served %d/%d antagonist %.3g+-%.2g units = %.1f+-%.1f%% "
			      "of alone", served, sent, mr, sr, 100 * mw, 100 * sw);
		if (c.arm_on[ARM_THROUGHPUT])
			k += snprintf(line + k, sizeof line - (size_t)k,
				      " (%.1f%% of throughput's)",
				      100 * mw / (work[ARM_THROUGHPUT] > 0 ? work[ARM_THROUGHPUT] : NAN));
		k += snprintf(line + k, sizeof line - (size_t)k,
			      " cpu_left %.1f+-%.1f%%", 100 * left[a], 100 * left_sd[a]);
		if (c.arm_on[ARM_THROUGHPUT])
			k += snprintf(line + k, sizeof line - (size_t)k,
				      " (%.1f%% of throughput's)", 100 * left[a] / left[ARM_THROUGHPUT]);
		k += snprintf(line + k, sizeof line - (size_t)k,
			      " guard_fallbacks %llu drain_max %.2f s",
			      (unsigned long long)fb, dmax);
		if (res[a][c.reps - 1].ctl[0])
			snprintf(line + k, sizeof line - (size_t)k, " [last control: %s]",
				 res[a][c.reps - 1].ctl);
		printf("%s\n", line);
	}
	if (c.arm_on[ARM_LATENCY] && c.arm_on[ARM_THROUGHPUT])
		for (int a = ARM_ORACLE; a < ARM_COUNT; a++) {
			if (!c.arm_on[a])
				continue;
			double sd = burst_sd[a] > burst_sd[ARM_LATENCY] ? burst_sd[a]
									: burst_sd[ARM_LATENCY];
			bool lat_ok = burst_p99[a] <= burst_p99[ARM_LATENCY] + sd;
			double share = work[a] / work[ARM_THROUGHPUT];
			double cpu = left[a] / left[ARM_THROUGHPUT];
			bool work_ok = share >= 0.97;
			printf("bench switching goal: arm %s burst ttft_p99 %.1f ms vs "
			       "latency %.1f ms (sd %.1f): %s; antagonist work %.1f%% of "
			       "throughput's: %s (cpu_left: %.1f%%); goal %s\n",
			       arm_names[a], burst_p99[a], burst_p99[ARM_LATENCY], sd,
			       lat_ok ? "within one sd" : "NOT within one sd",
			       100 * share, work_ok ? ">= 97%" : "BELOW 97%", 100 * cpu,
			       lat_ok && work_ok ? "met" : "not met");
		}
	if (c.arm_on[ARM_ORACLE] && write_plot(&c) < 0) {
		log_error("bench switching: %s", err_get());
		return EXIT_FAIL;
	}
	if (!log_quiet)
		fprintf(stderr, "bench switching: %d runs in %.0f s; %s/switching.csv%s\n",
			n_runs, (double)(time_now_ns() - t_bench) / 1e9, c.out,
			c.arm_on[ARM_ORACLE] ? ", switching.png" : "");
	return EXIT_OK;
}
