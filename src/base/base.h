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

/* A set of CPU numbers 0..63 (a bit per CPU). Not the gang's participant
 * mask: that is 32 bits (the low half of the latch word, one bit per slot,
 * at most GANG_MAX_SLOTS = 32 slots, gang.h). */
typedef uint64_t cpumask_t;
#define CPUMASK_MAX 64

/* Parses "0-3,6,8-9" into *out; -1 with a message on a malformed list or a
 * CPU >= CPUMASK_MAX. */
int cpumask_parse(const char *s, cpumask_t *out);
/* Writes "0-3,6" into buf (always terminated); returns buf. */
char *cpumask_format(cpumask_t m, char *buf, size_t cap);

/* Pins the calling thread to one CPU; -1 on failure. */
int affinity_pin_self(int cpu);
/* The CPUs the process may run on, ordered physical cores first, then SMT
 * siblings (hwloc); returns the count written to cpus (<= max), -1 on error. */
int topo_cores(int *cpus, int max);

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

/* Reads a whole small file into a malloc'd buffer (NUL-terminated). */
char *file_read_all(const char *path, size_t *len);

#endif
