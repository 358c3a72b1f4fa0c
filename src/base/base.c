/* base: errors, logging, time, futex, CPU sets, affinity, topology, PRNG. */
#include "base/base.h"

#include <errno.h>
#include <hwloc.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---- errors ---- */

#define ERR_CAP 1024
static _Thread_local char err_buf[ERR_CAP];

int err_set(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err_buf, sizeof err_buf, fmt, ap);
	va_end(ap);
	return -1;
}

int err_sys(const char *what)
{
	return err_set("%s: %s", what, strerror(errno));
}

int err_wrap(const char *fmt, ...)
{
	char prefix[512], old[ERR_CAP];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(old, err_buf, sizeof old);
	size_t n = strlen(prefix);
	if (n > sizeof err_buf - 3)
		n = sizeof err_buf - 3;
	memcpy(err_buf, prefix, n);
	memcpy(err_buf + n, ": ", 2);
	size_t m = strnlen(old, sizeof old - 1);
	if (m > sizeof err_buf - n - 3)
		m = sizeof err_buf - n - 3;
	memcpy(err_buf + n + 2, old, m);
	err_buf[n + 2 + m] = '\0';
	return -1;
}

const char *err_get(void) { return err_buf; }

/* ---- logging ---- */

bool log_quiet;

void log_info(const char *fmt, ...)
{
	if (log_quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void log_error(const char *fmt, ...)
{
	va_list ap;
	fputs("egang: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- time, futex ---- */

uint64_t time_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void time_sleep_until(uint64_t now, uint64_t next)
{
	if (next <= now)
		return;
	struct timespec ts = {(time_t)((next - now) / 1000000000ull),
			      (long)((next - now) % 1000000000ull)};
	nanosleep(&ts, NULL);
}

int futex_wait(uint32_t *addr, uint32_t val)
{
	return (int)syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL,
			    NULL, 0);
}

int futex_wake(uint32_t *addr, int n)
{
	return (int)syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL,
			    0);
}

/* ---- CPU sets ---- */

static int parse_uint(const char **p, long *out)
{
	char *end;
	if (**p < '0' || **p > '9')
		return -1;
	errno = 0;
	*out = strtol(*p, &end, 10);
	if (errno)
		return -1;
	*p = end;
	return 0;
}

int cpumask_parse(const char *s, cpumask_t *out)
{
	cpumask_t m = 0;
	const char *p = s;
	if (!s || !*s)
		return err_set("empty CPU list");
	for (;;) {
		long a, b;
		if (parse_uint(&p, &a) < 0)
			return err_set("CPU list '%s': expected a number at "
				       "character %td", s, p - s + 1);
		b = a;
		if (*p == '-') {
			p++;
			if (parse_uint(&p, &b) < 0)
				return err_set("CPU list '%s': expected a "
					       "number at character %td",
					       s, p - s + 1);
		}
		if (b < a)
			return err_set("CPU list '%s': range %ld-%ld is "
				       "reversed", s, a, b);
		if (b >= CPUMASK_MAX)
			return err_set("CPU list '%s': CPU %ld is beyond the "
				       "limit of %d", s, b, CPUMASK_MAX - 1);
		for (long c = a; c <= b; c++)
			m |= 1ull << c;
		if (*p == '\0')
			break;
		if (*p != ',')
			return err_set("CPU list '%s': unexpected '%c' at "
				       "character %td", s, *p, p - s + 1);
		p++;
	}
	*out = m;
	return 0;
}

char *cpumask_format(cpumask_t m, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int c = 0; c < CPUMASK_MAX && n < cap; c++) {
		if (!(m >> c & 1))
			continue;
		int e = c;
		while (e + 1 < CPUMASK_MAX && (m >> (e + 1) & 1))
			e++;
		int k = e == c ? snprintf(buf + n, cap - n, "%s%d",
					  n ? "," : "", c)
			       : snprintf(buf + n, cap - n, "%s%d-%d",
					  n ? "," : "", c, e);
		if (k < 0)
			break;
		n += (size_t)k;
		c = e;
	}
	return buf;
}

int affinity_pin_self(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	if (rc) {
		errno = rc;
		return err_sys("pthread_setaffinity_np");
	}
	return 0;
}

/* Physical cores first: the first PU of every core, then the second PU of
 * every core, and so on, restricted to the process's affinity mask. */
int topo_cores(int *cpus, int max)
{
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof allowed, &allowed) < 0)
		return err_sys("sched_getaffinity");
	hwloc_topology_t topo;
	int n = 0;
	if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) == 0) {
		int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
		for (int rank = 0; rank < 8 && ncores > 0; rank++) {
			for (int i = 0; i < ncores; i++) {
				hwloc_obj_t core = hwloc_get_obj_by_type(
					topo, HWLOC_OBJ_CORE, i);
				hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(
					topo, core->cpuset, HWLOC_OBJ_PU, rank);
				if (!pu || pu->os_index >= CPUMASK_MAX ||
				    !CPU_ISSET(pu->os_index, &allowed))
					continue;
				if (n < max)
					cpus[n] = (int)pu->os_index;
				n++;
			}
		}
		hwloc_topology_destroy(topo);
	}
	if (n == 0) { /* no topology: the affinity mask in CPU order */
		for (int c = 0; c < CPUMASK_MAX && c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed)) {
				if (n < max)
					cpus[n] = c;
				n++;
			}
	}
	return n < max ? n : max;
}

/* ---- PRNG, hash ---- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void rng_seed(rng_t *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_next(rng_t *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

float rng_float(rng_t *r) { return (float)(rng_next(r) >> 40) * 0x1.0p-24f; }

float rng_normal(rng_t *r)
{
	float u1 = rng_float(r), u2 = rng_float(r);
	if (u1 < 1e-12f)
		u1 = 1e-12f;
	return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

uint64_t hash64(const void *data, size_t n, uint64_t h)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

char *file_read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		err_set("%s: %s", path, strerror(errno));
		return NULL;
	}
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (n + 1 >= cap)
			buf = realloc(buf, cap *= 2);
		size_t k = fread(buf + n, 1, cap - n - 1, f);
		if (k == 0)
			break;
		n += k;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		err_set("%s: read error", path);
		return NULL;
	}
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}
