/* base: errors, logging, time, futex, CPU sets and affinity.
 *
 * Error convention (three kinds, three mechanisms):
 *  - bad input: the function returns -1 (or NULL) after err_set() recorded a
 *    one-line message naming what was wrong and where (field, offset);
 *  - a failed system call: err_sys() records "call: strerror(errno)";
 *  - a broken invariant: assert().
 * The message is per thread; err_get() returns the last one. */
#ifndef EGANG_BASE_H
#define EGANG_BASE_H

#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EG_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define EG_CACHELINE 64

/* Exit codes of every egang command. */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,  /* runtime failure (system call, resource) */
	EXIT_INPUT = 2, /* bad input: flag, file, request */
};

/* Records a formatted one-line message for this thread; returns -1. */
int err_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Records "<what>: strerror(errno)"; returns -1. */
int err_sys(const char *what);
/* Prepends "<prefix>: " to the current message (context on the way up). */
int err_wrap(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The last message recorded on this thread ("" if none). */
const char *err_get(void);

/* Logging to stderr. log_quiet silences info (not errors). */
extern bool log_quiet;
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Monotonic clock in nanoseconds. */
uint64_t time_now_ns(void);
/* Sleeps from now until next (time_now_ns values); returns at once when
 * next is past (next - now would wrap to centuries). A signal may end it
 * early. */
void time_sleep_until(uint64_t now, uint64_t next);

/* Process-wide futex on a 32-bit word (private). wait returns when *addr !=
 * val, on a wake, or spuriously; wake returns the number woken. */
int futex_wait(uint32_t *addr, uint32_t val);
int futex_wake(uint32_t *addr, int n);

/* A spin-wait hint: x86 pause, ARM64 yield. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* ---- CPU sets ----
 * A set of CPU numbers 0..CPUMASK_MAX-1, a bit per CPU. CPUMASK_MAX is
 * glibc's CPU_SETSIZE, the width of the cpu_set_t that affinity calls use
 * (base.c asserts the two are equal). What the user sees at the limit:
 * a --cores list naming CPU 1024 or above is refused ("CPU 1024 is beyond
 * the limit of 1023 (CPUMASK_MAX)"), and on a kernel whose CPU mask is
 * wider topo_load keeps CPUs 0..1023 and topo_notice says how many above
 * are left out. To lift it: size the sets at run time (CPU_ALLOC, as
 * topo_load's read already is) and make cpumask_t a pointer to one.
 * Not the gang's participant mask: that is 32 bits (the low half of the
 * latch word, one bit per slot, at most GANG_MAX_SLOTS = 32 slots,
 * gang.h). */
#define CPUMASK_MAX 1024
typedef struct cpumask {
	uint64_t w[CPUMASK_MAX / 64]; /* CPU c is bit c % 64 of w[c / 64] */
} cpumask_t;
/* A buffer this long holds any cpumask_format list: the longest, pairs with
 * one CPU left out between them ("0-1,3-4,...,1020-1021,1023"), is 2,673
 * characters (tests/test_base.c formats it). */
#define CPUMASK_LIST_CAP 2688

/* Adds CPU cpu (0..CPUMASK_MAX-1; outside it, an assert). */
void cpumask_set(cpumask_t *m, int cpu);
/* Whether CPU cpu is in m; false for any cpu outside 0..CPUMASK_MAX-1. */
bool cpumask_has(const cpumask_t *m, int cpu);
/* The number of CPUs in m. */
int cpumask_count(const cpumask_t *m);
/* The highest CPU in m; -1 when m is empty. */
int cpumask_last(const cpumask_t *m);
/* The set of the numbers whose bits are set in bits (0..63): slot masks
 * printed and parsed as lists. */
cpumask_t cpumask_of_bits(uint64_t bits);
/* The set of cpus[0..n) (each 0..CPUMASK_MAX-1). */
cpumask_t cpumask_of_cpus(const int *cpus, int n);

/* Parses "0-3,6,8-9" into *out: numbers and ranges a-b (a <= b), comma
 * separated, no spaces, no empty items. -1 with a message naming the
 * character on a malformed list, and naming CPUMASK_MAX on a CPU at or
 * above it. */
int cpumask_parse(const char *s, cpumask_t *out);
/* The CPUs 0..CPUMASK_MAX-1 of set (a kernel CPU set of setsize bytes,
 * CPU_ALLOC_SIZE) into *out; returns how many CPUs of set are numbered
 * CPUMASK_MAX or above (left out). */
int cpumask_from_set(cpumask_t *out, const cpu_set_t *set, size_t setsize);
/* Writes m as "0-3,6" into buf (always terminated when cap > 0; "" for an
 * empty set); a list longer than cap - 1 is cut after a whole item and
 * ends in "..." (given cap >= 4). Returns buf. */
char *cpumask_format(const cpumask_t *m, char *buf, size_t cap);

/* ---- affinity and topology ---- */

/* Pins the calling thread to one CPU; -1 on failure. */
int affinity_pin_self(int cpu);

/* The CPUs the process may run on, in the order egang gives them to gang
 * slots: the first PU (hardware thread) of every core, then the second PU
 * of every core, and so on (hwloc), then any allowed CPU hwloc did not
 * place, in number order; with each CPU's NUMA node.
 * NUMA: egang does nothing NUMA-aware. Workers are pinned in this order,
 * weights and the KV cache live wherever first touch put them, and no
 * wave is split by node. topo_numa_nodes counts the nodes a choice spans so
 * that the command line can say so; NUMA placement would start here
 * (order within a node, one gang per node). */
typedef struct topo {
	int n;                  /* allowed CPUs, 1..CPUMASK_MAX */
	int cpu[CPUMASK_MAX];   /* the allowed CPUs in slot order */
	int node[CPUMASK_MAX];  /* NUMA node (os index) of cpu[i]; -1 unknown */
	int n_above;            /* allowed CPUs numbered CPUMASK_MAX or above:
				   left out of cpu[] */
} topo_t;

/* Fills *t from sched_getaffinity (a set as wide as the kernel's) and
 * hwloc, CPUs 0..CPUMASK_MAX-1 only (t->n_above counts the rest); -1 with
 * a message when the call fails or no allowed CPU is below CPUMASK_MAX. */
int topo_load(topo_t *t);
/* Orders the CPUs of allowed into *t as topo_load does, with hwloc's view
 * of this machine (CPUs hwloc does not know go last, node -1). */
void topo_order(topo_t *t, const cpumask_t *allowed);
/* The CPUs a command runs on, in slot order, into cpus (room for max).
 * want NULL: the first max of t's order. want set: exactly its CPUs,
 * lowest first; -1 with a message when it holds more than max CPUs
 * ("N CPUs, at most max") or one that t does not allow. Returns the
 * count. */
int topo_choose(const topo_t *t, const cpumask_t *want, int max, int *cpus);
/* The first max CPUs of topo_load's order into cpus; returns the count
 * written (<= max), -1 with a message on error. */
int topo_cores(int *cpus, int max);
/* The number of NUMA nodes among cpus[0..n) by t (CPUs of unknown node
 * not counted). */
int topo_numa_nodes(const topo_t *t, const int *cpus, int n);
/* What a choice of cpus[0..n) from t leaves unsaid, as lines for stderr
 * into buf ("" when nothing): when egang picked them (listed false) and t
 * allows more, the count left out and why (limit, e.g. "the gang has 32
 * slots (GANG_MAX_SLOTS)"); when egang picked them and t left out CPUs
 * numbered CPUMASK_MAX or above, how many; when they span NUMA nodes, that
 * egang ignores NUMA. Lines end in '\n' except the last. Returns buf. */
char *topo_notice(const topo_t *t, bool listed, const int *cpus, int n,
		  const char *limit, char *buf, size_t cap);

/* Deterministic PRNG (splitmix64 seeding xoshiro256**). */
typedef struct { uint64_t s[4]; } rng_t;
void rng_seed(rng_t *r, uint64_t seed);
uint64_t rng_next(rng_t *r);
/* Uniform float in [0, 1). */
float rng_float(rng_t *r);
/* Standard normal (Box-Muller). */
float rng_normal(rng_t *r);

/* 64-bit FNV-1a over bytes (used for logits hashes). */
uint64_t hash64(const void *data, size_t n, uint64_t h);
#define HASH64_INIT 0xcbf29ce484222325ull

/* Reads a whole text file (at most FILE_READ_MAX bytes) into a malloc'd
 * buffer, NUL-terminated, its length in *len (may be NULL); NULL +
 * err_get() naming the file when it cannot be opened or read, is larger,
 * or memory ran out. */
#define FILE_READ_MAX ((size_t)64 << 20)
char *file_read_all(const char *path, size_t *len);
/* file_read_all with the error worded "WHAT PATH: why" ("grammar x.gbnf:
 * No such file or directory"). */
char *file_read_as(const char *what, const char *path, size_t *len);

#endif
