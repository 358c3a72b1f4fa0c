/* base: errors, logging, time, futex, CPU sets, affinity, topology, PRNG. */
#include "base/base.h"

#include <assert.h>
#include <errno.h>
#include <hwloc.h>
#include <limits.h>
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

_Static_assert(CPUMASK_MAX == CPU_SETSIZE,
	       "cpumask_t and cpu_set_t must cover the same CPUs");
_Static_assert(CPUMASK_MAX % 64 == 0, "cpumask_t is whole words");

void cpumask_set(cpumask_t *m, int cpu)
{
	assert(cpu >= 0 && cpu < CPUMASK_MAX);
	m->w[cpu / 64] |= 1ull << (cpu % 64);
}

bool cpumask_has(const cpumask_t *m, int cpu)
{
	return cpu >= 0 && cpu < CPUMASK_MAX && (m->w[cpu / 64] >> (cpu % 64) & 1);
}

int cpumask_count(const cpumask_t *m)
{
	int n = 0;
	for (size_t i = 0; i < EG_ARRAY_LEN(m->w); i++)
		n += __builtin_popcountll(m->w[i]);
	return n;
}

int cpumask_last(const cpumask_t *m)
{
	for (int i = (int)EG_ARRAY_LEN(m->w) - 1; i >= 0; i--)
		if (m->w[i])
			return i * 64 + 63 - __builtin_clzll(m->w[i]);
	return -1;
}

cpumask_t cpumask_of_bits(uint64_t bits)
{
	cpumask_t m = {{bits}};
	return m;
}

cpumask_t cpumask_of_cpus(const int *cpus, int n)
{
	cpumask_t m = {{0}};
	for (int i = 0; i < n; i++)
		cpumask_set(&m, cpus[i]);
	return m;
}

/* A decimal number at *p (digits only: no sign, no space); -1 when there
 * is none. A number too large for long reads as LONG_MAX, beyond any
 * CPU. */
static int parse_uint(const char **p, long *out)
{
	char *end;
	if (**p < '0' || **p > '9')
		return -1;
	errno = 0;
	*out = strtol(*p, &end, 10);
	if (errno == ERANGE)
		*out = LONG_MAX;
	*p = end;
	return 0;
}

int cpumask_parse(const char *s, cpumask_t *out)
{
	cpumask_t m = {{0}};
	const char *p = s;
	if (!s || !*s)
		return err_set("empty CPU list");
	for (;;) {
		long a, b;
		const char *num = p; /* the larger number, as written */
		if (parse_uint(&p, &a) < 0)
			return err_set("CPU list '%s': expected a number at "
				       "character %td", s, p - s + 1);
		b = a;
		if (*p == '-') {
			num = ++p;
			if (parse_uint(&p, &b) < 0)
				return err_set("CPU list '%s': expected a "
					       "number at character %td",
					       s, p - s + 1);
		}
		if (b < a)
			return err_set("CPU list '%s': range %ld-%ld is "
				       "reversed", s, a, b);
		if (b >= CPUMASK_MAX)
			return err_set("CPU list '%s': CPU %.*s is beyond the "
				       "limit of %d (CPUMASK_MAX)", s,
				       (int)(p - num), num, CPUMASK_MAX - 1);
		for (long c = a; c <= b; c++)
			cpumask_set(&m, (int)c);
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

int cpumask_from_set(cpumask_t *out, const cpu_set_t *set, size_t setsize)
{
	memset(out, 0, sizeof *out);
	int above = 0;
	for (size_t c = 0; c < setsize * 8; c++)
		if (CPU_ISSET_S(c, setsize, set)) {
			if (c < CPUMASK_MAX)
				cpumask_set(out, (int)c);
			else
				above++;
		}
	return above;
}

char *cpumask_format(const cpumask_t *m, char *buf, size_t cap)
{
	static const char cut[] = "...";
	size_t n = 0;
	if (cap == 0)
		return buf;
	buf[0] = '\0';
	for (int c = 0; c < CPUMASK_MAX; c++) {
		if (!cpumask_has(m, c))
			continue;
		int e = c;
		while (cpumask_has(m, e + 1))
			e++;
		char item[32];
		int k = e == c ? snprintf(item, sizeof item, "%s%d", n ? "," : "", c)
			       : snprintf(item, sizeof item, "%s%d-%d", n ? "," : "", c, e);
		if (n + (size_t)k >= cap) { /* does not fit: mark the cut */
			size_t b = n; /* the end of a whole item with room for cut */
			while (b > 0 && b + sizeof cut > cap)
				while (--b > 0 && buf[b] != ',')
					;
			if (b + sizeof cut <= cap)
				memcpy(buf + b, cut, sizeof cut);
			return buf;
		}
		memcpy(buf + n, item, (size_t)k + 1);
		n += (size_t)k;
		c = e;
	}
	return buf;
}

/* ---- affinity and topology ---- */

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

/* Appends cpu to t's order once (node: its NUMA node, -1 unknown). */
static void topo_add(topo_t *t, cpumask_t *placed, int cpu, int node)
{
	if (cpumask_has(placed, cpu))
		return;
	cpumask_set(placed, cpu);
	t->cpu[t->n] = cpu;
	t->node[t->n] = node;
	t->n++;
}

/* The os index of the NUMA node whose CPUs include pu; -1 if none does. */
static int topo_node_of(hwloc_topology_t topo, hwloc_obj_t pu)
{
	hwloc_obj_t node = NULL;
	while ((node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, node)))
		if (node->cpuset && hwloc_bitmap_isset(node->cpuset, pu->os_index))
			return (int)node->os_index;
	return -1;
}

/* Physical cores first: rank r takes the r-th PU of every core, so the
 * first slots land on distinct cores and SMT siblings come last. */
static void topo_order_hwloc(topo_t *t, cpumask_t *placed, const cpumask_t *allowed,
			     hwloc_topology_t topo)
{
	int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
	for (int rank = 0, more = 1; more && ncores > 0; rank++) {
		more = 0;
		for (int i = 0; i < ncores; i++) {
			hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, i);
			hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(
				topo, core->cpuset, HWLOC_OBJ_PU, (unsigned)rank);
			if (!pu)
				continue;
			more = 1;
			if (pu->os_index < CPUMASK_MAX &&
			    cpumask_has(allowed, (int)pu->os_index))
				topo_add(t, placed, (int)pu->os_index,
					 topo_node_of(topo, pu));
		}
	}
}

void topo_order(topo_t *t, const cpumask_t *allowed)
{
	cpumask_t placed = {{0}};
	t->n = 0;
	hwloc_topology_t topo;
	if (hwloc_topology_init(&topo) == 0) {
		if (hwloc_topology_load(topo) == 0)
			topo_order_hwloc(t, &placed, allowed, topo);
		hwloc_topology_destroy(topo);
	}
	/* CPUs hwloc did not place (no topology, or a PU it missed) */
	for (int c = 0; c < CPUMASK_MAX; c++)
		if (cpumask_has(allowed, c))
			topo_add(t, &placed, c, -1);
}

/* The most CPUs topo_load asks the kernel about (its mask's width). */
#define TOPO_SET_MAX (1 << 22)

int topo_load(topo_t *t)
{
	/* a set as wide as the kernel's mask: EINVAL says it is wider */
	cpu_set_t *set = NULL;
	size_t ncpu = CPUMASK_MAX, size = 0;
	for (;;) {
		if (!(set = CPU_ALLOC(ncpu)))
			return err_set("sched_getaffinity: out of memory");
		size = CPU_ALLOC_SIZE(ncpu);
		if (sched_getaffinity(0, size, set) == 0)
			break;
		int e = errno;
		CPU_FREE(set);
		errno = e;
		if (e != EINVAL || ncpu >= TOPO_SET_MAX)
			return err_sys("sched_getaffinity");
		ncpu *= 2;
	}
	cpumask_t allowed;
	t->n_above = cpumask_from_set(&allowed, set, size);
	CPU_FREE(set);
	topo_order(t, &allowed);
	if (t->n == 0 && t->n_above)
		return err_set("sched_getaffinity: no CPU allowed below %d "
			       "(CPUMASK_MAX)", CPUMASK_MAX);
	if (t->n == 0)
		return err_set("sched_getaffinity: no CPU allowed");
	return 0;
}

int topo_choose(const topo_t *t, const cpumask_t *want, int max, int *cpus)
{
	if (!want) {
		int n = t->n < max ? t->n : max;
		memcpy(cpus, t->cpu, (size_t)n * sizeof *cpus);
		return n;
	}
	char a[CPUMASK_LIST_CAP], b[CPUMASK_LIST_CAP];
	int k = cpumask_count(want);
	if (k > max)
		return err_set("%d CPUs, at most %d", k, max);
	cpumask_t allowed = cpumask_of_cpus(t->cpu, t->n), out = *want;
	for (size_t i = 0; i < EG_ARRAY_LEN(out.w); i++)
		out.w[i] &= ~allowed.w[i];
	if (cpumask_count(&out))
		return err_set("CPUs %s are not in this process's affinity mask "
			       "(%s)", cpumask_format(&out, a, sizeof a),
			       cpumask_format(&allowed, b, sizeof b));
	int n = 0;
	for (int c = 0; c < CPUMASK_MAX; c++)
		if (cpumask_has(want, c))
			cpus[n++] = c;
	return n;
}

int topo_cores(int *cpus, int max)
{
	topo_t t;
	if (topo_load(&t) < 0)
		return -1;
	return topo_choose(&t, NULL, max, cpus);
}

int topo_numa_nodes(const topo_t *t, const int *cpus, int n)
{
	int nodes[CPUMASK_MAX], k = 0; /* distinct nodes seen (few) */
	for (int i = 0; i < n; i++)
		for (int j = 0; j < t->n; j++) {
			if (t->cpu[j] != cpus[i] || t->node[j] < 0)
				continue;
			int s = 0;
			while (s < k && nodes[s] != t->node[j])
				s++;
			if (s == k)
				nodes[k++] = t->node[j];
		}
	return k;
}

char *topo_notice(const topo_t *t, bool listed, const int *cpus, int n,
		  const char *limit, char *buf, size_t cap)
{
	char used[CPUMASK_LIST_CAP];
	cpumask_t m = cpumask_of_cpus(cpus, n);
	cpumask_format(&m, used, sizeof used);
	int k = 0, nodes = topo_numa_nodes(t, cpus, n);
	buf[0] = '\0';
	if (!listed && t->n > n)
		k = snprintf(buf, cap, "egang: using %d of the %d CPUs this process "
			     "may run on (%s, physical cores first): %s; --cores "
			     "picks others", n, t->n, used, limit);
	if (!listed && t->n_above > 0 && k >= 0 && (size_t)k < cap)
		k += snprintf(buf + k, cap - (size_t)k, "%segang: %d CPUs this "
			      "process may run on are numbered above %d and left "
			      "out (CPUMASK_MAX)", k ? "\n" : "", t->n_above,
			      CPUMASK_MAX - 1);
	if (nodes > 1 && k >= 0 && (size_t)k < cap)
		snprintf(buf + k, cap - (size_t)k, "%segang: CPUs %s span %d NUMA "
			 "nodes; egang places threads and memory without regard "
			 "to NUMA", k ? "\n" : "", used, nodes);
	return buf;
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
	bool big = false;
	while (buf) {
		if (n + 1 >= cap) {
			big = cap >= FILE_READ_MAX;
			char *t = big ? NULL : realloc(buf, cap *= 2);
			if (!t)
				free(buf);
			buf = t;
			if (!buf)
				break;
		}
		size_t k = fread(buf + n, 1, cap - n - 1, f);
		if (k == 0)
			break;
		n += k;
	}
	int bad = ferror(f);
	fclose(f);
	if (!buf || bad) {
		free(buf);
		err_set("%s: %s", path, bad ? "read error" : big ?
			"larger than the 64 MiB a text file may have" : "out of memory");
		return NULL;
	}
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

char *file_read_as(const char *what, const char *path, size_t *len)
{
	char *text = file_read_all(path, len);
	if (!text) {
		char m[1024]; /* err_get's buffer is err_set's: copy it first */
		snprintf(m, sizeof m, "%s", err_get());
		err_set("%s %s", what, m);
	}
	return text;
}
