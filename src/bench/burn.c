/* burn: the tenant's work loop and the `egang burn` runner (burn.h). */
#include "bench/burn.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"

const char *const burn_mode_names[BURN_MODE_COUNT + 1] = {"cpu", "mem", NULL};

uint64_t burn_cpu_unit(uint64_t x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

uint64_t burn_mem_unit(const uint64_t *buf, size_t len, size_t *pos)
{
	uint64_t s = 0;
	const uint64_t *p = buf + *pos / sizeof *buf;
	for (size_t i = 0; i < 65536 / sizeof *buf; i += 8)
		s += p[i] ^ p[i + 1] ^ p[i + 2] ^ p[i + 3] ^ p[i + 4] ^ p[i + 5] ^
		     p[i + 6] ^ p[i + 7];
	*pos = (*pos + 65536) % len;
	return s;
}

void burn_loop(burn_mode_t mode, _Atomic uint64_t *units, _Atomic bool *stop)
{
	size_t len = 64u << 20, pos = 0;
	uint64_t *buf = NULL;
	if (mode == BURN_MODE_MEM) {
		buf = malloc(len);
		if (!buf)
			return;
		for (size_t i = 0; i < len / sizeof *buf; i++)
			buf[i] = i * 0x9e3779b97f4a7c15ull;
	}
	volatile uint64_t sink = 0;
	uint64_t x = 1;
	/* relaxed: a stop flag polled every 16 units; nothing it publishes */
	while (!atomic_load_explicit(stop, memory_order_relaxed)) {
		for (int k = 0; k < 16; k++)
			x ^= mode == BURN_MODE_MEM ? burn_mem_unit(buf, len, &pos)
						   : burn_cpu_unit(x);
		/* relaxed: a counter read by the reporter, no ordering */
		atomic_fetch_add_explicit(units, 16, memory_order_relaxed);
	}
	sink = x;
	(void)sink;
	free(buf);
}

typedef struct burner {
	burn_mode_t mode;
	int cpu; /* -1: not pinned */
	_Atomic uint64_t *units;
	_Atomic bool *stop;
	pthread_t thread;
} burner_t;

static void *burner_main(void *arg)
{
	burner_t *b = arg;
	if (b->cpu >= 0)
		affinity_pin_self(b->cpu);
	burn_loop(b->mode, b->units, b->stop);
	return NULL;
}

int burn_report_format(char *buf, size_t n, double t_s, double units_s,
		       uint64_t now_ns)
{
	return snprintf(buf, n, "burn t=%.3f units/s=%.0f at_ns=%llu", t_s, units_s,
			(unsigned long long)now_ns);
}

int burn_report_parse(const char *line, double *t_s, double *units_s,
		      uint64_t *now_ns)
{
	unsigned long long at = 0;
	int k = sscanf(line, "burn t=%lf units/s=%lf at_ns=%llu", t_s, units_s, &at);
	if (k < 2)
		return -1;
	*now_ns = k == 3 ? (uint64_t)at : 0;
	return 0;
}

int burn_run(const burn_config_t *c, burn_result_t *r)
{
	_Atomic uint64_t units = 0;
	_Atomic bool stop = false;
	burner_t *b = calloc((size_t)c->threads, sizeof *b);
	if (!b)
		return err_sys("burn: calloc");
	int started = 0, rc = 0;
	for (; started < c->threads; started++) {
		b[started] = (burner_t){.mode = c->mode, .units = &units, .stop = &stop,
					.cpu = c->cpus && c->n_cpus
						? c->cpus[started % c->n_cpus] : -1};
		if (pthread_create(&b[started].thread, NULL, burner_main, &b[started])) {
			rc = err_set("burn: cannot start thread %d", started + 1);
			break;
		}
	}
	uint64_t t0 = time_now_ns(), last_t = t0, last_u = 0;
	uint64_t end = c->seconds > 0 ? t0 + (uint64_t)(c->seconds * 1e9) : UINT64_MAX;
	for (uint64_t now = t0; rc == 0 && (now = time_now_ns()) < end;) {
		uint64_t step = c->report_ms ? (uint64_t)c->report_ms * 1000000ull
					     : end - now;
		time_sleep_until(now, last_t + step < end ? last_t + step : end);
		now = time_now_ns();
		uint64_t u = atomic_load(&units); /* a running count: no ordering */
		if (c->report_ms && c->report && now < end)
			c->report(c->user, (double)(now - t0) / 1e9,
				  (double)(u - last_u) / ((double)(now - last_t) / 1e9),
				  now);
		last_t = now;
		last_u = u;
	}
	/* seq_cst, stronger than needed: the threads only poll it; the joins
	 * below order their last counts before the read of units */
	atomic_store(&stop, true);
	for (int i = 0; i < started; i++)
		pthread_join(b[i].thread, NULL);
	r->units = atomic_load(&units); /* after the joins */
	r->seconds = (double)(time_now_ns() - t0) / 1e9;
	free(b);
	return rc;
}
