/* burners: antagonist processes and the monitor of their work (burners.h). */
#include "bench/burners.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "bench/burn.h"
#include "bench/child.h"

/* ---- the buckets ---- */

void burners_add(burners_t *b, uint64_t a, uint64_t e, double units)
{
	b->total += units;
	if (a < b->t_start)
		a = b->t_start;
	if (e <= a)
		return;
	double per_ns = units / (double)(e - a);
	for (uint64_t t = a; t < e;) {
		size_t i = (size_t)((t - b->t_start) / BURNERS_BUCKET_NS);
		if (i >= b->n_bucket)
			break;
		uint64_t edge = b->t_start + (uint64_t)(i + 1) * BURNERS_BUCKET_NS;
		uint64_t stop = edge < e ? edge : e;
		b->bucket[i] += per_ns * (double)(stop - t);
		t = stop;
	}
}

double burners_window(const burners_t *b, uint64_t t0, uint64_t t1)
{
	double s = 0;
	for (size_t i = 0; i < b->n_bucket; i++) {
		uint64_t a = b->t_start + (uint64_t)i * BURNERS_BUCKET_NS;
		uint64_t e = a + BURNERS_BUCKET_NS;
		uint64_t lo = a > t0 ? a : t0, hi = e < t1 ? e : t1;
		if (hi > lo)
			s += b->bucket[i] * (double)(hi - lo) / (double)BURNERS_BUCKET_NS;
	}
	return s;
}

void burners_write_units(const burners_t *b)
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

/* ---- the monitor ---- */

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

/* Reads what burner i's pipe holds; closes it at its end. */
static void burners_read(burners_t *b, int i, uint64_t now)
{
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

static void *burners_main(void *arg)
{
	burners_t *b = arg;
	struct pollfd pf[BURNERS_MAX];
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
		for (int i = 0; r > 0 && i < b->n; i++)
			if (pf[i].revents & (POLLIN | POLLHUP))
				burners_read(b, i, now);
		if (b->units_path && now - last_write > 20000000ull) {
			burners_write_units(b);
			last_write = now;
		}
	}
	return NULL;
}

/* ---- the processes ---- */

/* Burner number n on cpu, its stdout into a new pipe; 0 or -1 + err_get(). */
static int burners_spawn(burners_t *b, int cpu, bool scx)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return err_sys("pipe");
	char c[16];
	snprintf(c, sizeof c, "%d", cpu);
	char *args[] = {"egang", "burn", "--seconds", "0", "--report-ms", "50",
			"--cores", c, NULL};
	/* scx: the same burner, in SCHED_EXT */
	char *sargs[] = {"egang", "scx", "exec", "--", (char *)child_exe(), "burn",
			 "--seconds", "0", "--report-ms", "50", "--cores", c, NULL};
	pid_t pid = child_spawn(scx ? sargs : args, p[1], -1);
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return -1;
	}
	b->pid[b->n] = pid;
	b->fd[b->n] = p[0];
	b->len[b->n] = 0;
	b->last_t[b->n] = 0;
	b->n++;
	return 0;
}

int burners_start(burners_t *b, const int *cpus, int n_cpus, int per_core,
		  bool scx, double max_s)
{
	b->n = 0;
	b->total = 0;
	b->monitor = false;
	b->t_start = time_now_ns();
	b->n_bucket = (size_t)(max_s * 1e9 / (double)BURNERS_BUCKET_NS) + 1;
	b->bucket = calloc(b->n_bucket, sizeof *b->bucket);
	if (!b->bucket)
		return err_set("out of memory");
	if (child_find_exe() < 0)
		return -1;
	for (int k = 0; k < per_core * n_cpus && k < BURNERS_MAX; k++)
		if (burners_spawn(b, cpus[k % n_cpus], scx) < 0)
			return -1;
	atomic_store(&b->stop, false); /* before the thread starts */
	if (pthread_create(&b->thread, NULL, burners_main, b))
		return err_set("pthread_create failed");
	b->monitor = true;
	return 0;
}

void burners_stop(burners_t *b)
{
	for (int i = 0; i < b->n; i++)
		kill(b->pid[i], SIGTERM);
	for (int i = 0; i < b->n; i++)
		child_stop(b->pid[i], 0, 2);
	if (b->monitor) {
		atomic_store(&b->stop, true); /* polled by burners_main */
		pthread_join(b->thread, NULL);
		b->monitor = false;
	}
	for (int i = 0; i < b->n; i++) {
		if (b->fd[i] >= 0)
			close(b->fd[i]);
		b->fd[i] = -1;
	}
	b->n = 0;
}

void burners_free(burners_t *b)
{
	free(b->bucket);
	b->bucket = NULL;
	b->n_bucket = 0;
}
