/* policy: how the gang takes and returns cores (doc/ARCHITECTURE.md
 * "Policies, the control word and the guard").
 *
 * A policy is a record, not code: the leader asks it for the requested slot
 * mask before every token (policy_next_mask) and tells it how long the token
 * took (policy_observe). Records live in a library (policy_lib_t) that is
 * validated once at load and never changes afterwards; the policy in force
 * is chosen by its index alone (control.h). Slots are the gang's: slot 0 is
 * the leader, slots 1..n-1 the workers, in --cores order.
 *
 * ---- The built-in library (indices on a gang of n slots) ----------------
 *  0 elastic     every slot that is not reserved, while a generation runs;
 *                polite acquire, cores go back at once when it ends.
 *                Good: one tenant-free or lightly shared machine; decode
 *                runs at full width. Fails: a busy CPU-bound tenant holds a
 *                core for a whole tick (~4 ms) and the gang's barriers wait
 *                on it, so tok/s can fall below a narrower gang's. The
 *                default: an index that names no record selects it.
 *  1 knee        elastic capped at the width past which an added core no
 *                longer brings its share of tok/s (knee_of_rates),
 *                measured online per batch size (an exploration token
 *                every 16) or taken from the record's knees table. Good: a
 *                memory-bound model whose speed saturates before the last
 *                core; sharing where tenant work counts as much as
 *                inference. Fails: the estimate lags a tenant that comes
 *                and goes; exploration costs a token at the wrong width
 *                now and then; min_width/max_width clamp it; interactive
 *                latency (a narrower gang is slower per token).
 *  2 latency     the knee's width (as record 1), preempt acquire
 *                (SCHED_FIFO workers take a core from a tenant at once),
 *                keep cores 50 ms after a generation. Good: interactive
 *                serving, TTFT and per-token latency first. Fails: tenants
 *                lose their cores mid-slice (their throughput drops); needs
 *                CAP_SYS_NICE, refused -> polite (counted in
 *                gang_stats.raise_denied); RT throttling of the
 *                FIFO workers; the knee's exploration tokens. (Every core until issue 6's
 *                measurement: past the knee a core only adds barrier waits.)
 *  3 throughput  half the slots (at least the leader), polite; the rest are
 *                reserved for tenants. Good: batch tenants that must keep a
 *                known share of the machine. Fails: decode is capped at half
 *                width even when the tenants are idle; a burst queues. No
 *                guard: its fallback, elastic, is slower still under
 *                CPU-bound tenants (policy.c).
 *  4.. static:K  exactly slots 0..K-1 (K = 1..n-1), polite: the static
 *                partition baseline. Good: predictable interference. Fails:
 *                idle cores are never used; a tenant sharing one of the K
 *                cores stalls every barrier.
 * User libraries (--policies FILE) are appended after the built-ins.
 *
 * ---- The library file (INI; policy_lib_load) ----------------------------
 *   # comment              ; comment          blank lines are ignored
 *   [name]                 a record: 1..31 chars of [A-Za-z0-9_.:-], unique
 *                          (also against the built-ins)
 *   width = all|knee|static          default all (static when cores is set)
 *   min_width = N          1..n, default 1 (knee: the smallest cap)
 *   max_width = N          min_width..n, default n (all, knee: the cap)
 *   cores = LIST           static core set, slots (e.g. 0-1,3), inside
 *                          0..n-1, must include the leader 0
 *   reserved = LIST        slots never requested (for tenants), 1..n-1
 *   acquire = polite|preempt          default polite
 *   keep_ms = N            0..60000: keep cores after a generation
 *   guard_ttft_p99_ms = X  (0, 3600000]: service bound on TTFT p99
 *   guard_queue_depth = N  1..1000000: service bound on the queue depth
 *   guard_checks = N       1..1000 consecutive breaches before the fallback
 *                          (default 3; needs a guard bound)
 *   kguard_wait_p99_us = N 1..10000000: the in-kernel guard's bound on the
 *                          p99 run-queue wait of the gang's threads
 *                          (sched_ext backend only; rules in
 *                          bpf/egang_kguard.h); user records only, so the
 *                          safe record 0 never has one
 *   kguard_windows = N     1..1000 consecutive breached windows before the
 *                          BPF side stores index 0 (default 3)
 *   kguard_window_ms = N   10..60000, the window (default 100)
 *   knees = B:K,...        width knee only: the knee K per batch size B
 *                          (tokens per step), batches increasing, K in
 *                          1..n; a step uses the entry of the largest
 *                          B <= its batch (`egang bench width --batch`
 *                          prints the line); without it the knee is
 *                          measured online per batch size
 * Every record is checked once at load; a bad one refuses the whole file
 * with "FILE:LINE: [record] field: what is wrong".
 *
 * Races accepted: none inside a record (frozen after load). Which record a
 * token runs under is decided by one atomic load of the control word per
 * token (control.h); a write lands at the next token boundary. */
#ifndef EGANG_POLICY_H
#define EGANG_POLICY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gang/gang.h"

typedef enum policy_width {
	WIDTH_ALL,    /* every slot not reserved (up to max_width) */
	WIDTH_STATIC, /* exactly static_mask */
	WIDTH_KNEE,   /* the online knee, within [min_width, max_width] */
	WIDTH_COUNT
} policy_width_t;

#define POLICY_NAME_MAX 32
#define POLICY_KEEP_MS_MAX 60000
#define POLICY_KGUARD_WAIT_MAX 10000000 /* 10 s */

/* The knee per batch size: a step of B tokens (continuous batching) costs
 * more compute for the same weight traffic, so the useful gang width
 * depends on B. Entries are sorted by batch; a batch size uses the entry
 * with the largest batch <= it (the first entry below the smallest). */
#define KNEE_TABLE_MAX 16
typedef struct knee_table {
	int32_t n;
	int32_t batch[KNEE_TABLE_MAX]; /* strictly increasing, >= 1 */
	int32_t knee[KNEE_TABLE_MAX];  /* 1..n_slots */
} knee_table_t;

/* Sets batch's knee (replacing an entry of the same batch); -1 + err_get()
 * for batch < 1, knee outside 1..n_slots or a full table. */
int knee_table_set(knee_table_t *t, int batch, int knee, int n_slots);
/* The knee for a batch of `batch` tokens (next-lower entry); 0 when the
 * table is empty or batch < 1. */
int knee_table_lookup(const knee_table_t *t, int batch);
/* "B:K,B:K,..." (batches strictly increasing) into t; -1 + err_get()
 * naming the bad entry (t is then unchanged). */
int knee_table_parse(knee_table_t *t, const char *s, int n_slots);
/* The same syntax into buf (empty for an empty table). */
char *knee_table_format(const knee_table_t *t, char *buf, size_t cap);

typedef struct policy {
	char name[POLICY_NAME_MAX];
	policy_width_t width;
	uint32_t static_mask;   /* WIDTH_STATIC: the slots used */
	uint32_t reserved_mask; /* slots never requested (for tenants) */
	gang_acquire_t acquire;
	/* 0 = unset (1 and n); records built by hand may leave them 0 */
	int32_t min_width, max_width;
	uint32_t keep_ms;          /* keep cores this long after a generation */
	double guard_ttft_p99_ms;  /* 0: no TTFT bound */
	uint32_t guard_queue_depth; /* 0: no queue bound */
	uint32_t guard_checks;     /* consecutive breaches before fallback */
	/* the in-kernel guard (sched_ext backend, bpf/egang_kguard.h) */
	uint32_t kguard_wait_p99_us; /* 0: none */
	uint32_t kguard_windows;     /* consecutive breached windows */
	uint32_t kguard_window_ms;
	/* WIDTH_KNEE: a measured knee per batch size (`bench width --batch`);
	 * empty: the knee is measured online per batch size */
	knee_table_t knees;
} policy_t;

/* Online knee measurement: an exponentially weighted mean of the token time
 * at each width, an exploration step every KNEE_EXPLORE_EVERY tokens; one
 * such measurement per batch bucket (batch sizes rounded down to a power of
 * two, 1..2^(KNEE_BUCKETS-1)), since the knee moves with the batch size. */
#define KNEE_BUCKETS 8
typedef struct knee_state {
	double ns[KNEE_BUCKETS][GANG_MAX_SLOTS + 1]; /* EWMA token time per width */
	uint32_t seen[KNEE_BUCKETS][GANG_MAX_SLOTS + 1];
	uint64_t tokens;
	int batch;     /* tokens in the current step (knee_set_batch), >= 1 */
	int knee;      /* current cap (the current batch's) */
	knee_table_t table; /* the measured knee of each bucket seen so far */
	int exploring; /* width being tried this token, 0 if none */
	uint64_t rng;
	double tolerance; /* see knee_of_rates (0.95 by default) */
} knee_state_t;

void knee_init(knee_state_t *k, int n_slots);
/* The knee of measured decode rates (tok/s at widths 1..n, index 0
 * unused, 0 = not measured): the widest width whose core time per token,
 * w / rate(w), is within 1 / tolerance of the cheapest width's. A core is
 * worth adding while it brings its share of speed: with linear scaling
 * every width costs the same and the knee is n; past the point where
 * decode saturates memory bandwidth each added core costs more core time
 * than it saves, and those cores do more for tenants. (The smallest width
 * within 5% of the best rate, the other usual definition, keeps every core
 * that adds 5%: on a machine where two cores decode only 1.3x faster than
 * one it spends 2 core-seconds for 1.3 core-seconds' worth of tokens.)
 * n if nothing was measured. */
int knee_of_rates(const double *rate, int n, double tolerance);
/* knee_of_rates over the widths k has measured at its current batch. */
int knee_estimate(const knee_state_t *k, int n_slots);
/* The batch size of the next step (tokens it runs; < 1 counts as 1); the
 * following policy_observe is attributed to it. */
void knee_set_batch(knee_state_t *k, int batch);

/* The mask to request for the next token (slot 0 always in). */
uint32_t policy_next_mask(const policy_t *p, knee_state_t *k, int n_slots);
/* Reports the last token: its participant mask and its time. */
void policy_observe(const policy_t *p, knee_state_t *k, uint32_t mask,
		    uint64_t token_ns);

/* Checks every field of p for a gang of n_slots; 0, or -1 + err_get()
 * "field: what is wrong" (the caller adds file and record) and *field (if
 * not NULL) set to the field's key. */
int policy_validate(const policy_t *p, int n_slots, const char **field);
/* Writes the record's fields, one "key = value" line each (the file's
 * syntax, so `policy show` output can be pasted into a library file). */
void policy_print(const policy_t *p, int n_slots, FILE *f);
const char *policy_width_name(policy_width_t w);
const char *policy_acquire_name(gang_acquire_t a);

/* ---- the library ---- */
#define POLICY_LIB_MAX 128

typedef struct policy_lib {
	int n_slots;      /* the gang the records were validated for */
	int n;            /* records; index 0 is the default (elastic) */
	int n_builtin;
	policy_t rec[POLICY_LIB_MAX];
} policy_lib_t;

/* The built-in records (header comment) for a gang of n_slots (1..32). */
void policy_lib_builtin(policy_lib_t *lib, int n_slots);
/* Appends the records of an INI file (format above) after the built-ins;
 * on any bad record adds nothing and returns -1 + err_get() "FILE:LINE:
 * [record] field: ...". */
int policy_lib_load(policy_lib_t *lib, const char *path);
/* Same, from text in memory (path only names it in messages). */
int policy_lib_parse(policy_lib_t *lib, const char *path, const char *text);
/* Index of the record named `name`, or of the decimal index `name`; -1. */
int policy_lib_find(const policy_lib_t *lib, const char *name);

#endif
