/* control: the control word and the policy runtime (doc/ARCHITECTURE.md
 * "Policies, the control word and the guard").
 *
 * The policy in force is an index into a validated library (policy.h) held
 * in a small shared-memory file, the control word. Controllers (`egang
 * policy set`, scripts, bandits, agents) write the index; the leader reads it
 * with ONE atomic load before every token and applies it at that token
 * boundary. An index that names no record selects the default (record 0,
 * elastic) and is counted: an invalid write is inert.
 *
 * ---- The file (CONTROL_SIZE bytes, host byte order, one page) -----------
 *   1. offset   0: u32 magic "EGCW" (0x57434745), stored last at creation
 *   2. offset   4: u32 version (CONTROL_VERSION)
 *   3. offset   8: u32 size (CONTROL_SIZE)
 *   4. offset  64: u32 index, the policy index: controllers write it, the
 *                  leader reads it once per token (its own cache line)
 *   5. offset 128: telemetry (control_word_t below), written by the leader
 *                  only, read by anyone. Each field is one aligned atomic;
 *                  fields are read one by one (a snapshot is not atomic).
 * The file is created 0600 with O_NOFOLLOW; an existing file is refused
 * unless it is a regular file owned by this user with no group or other
 * permission bits, exactly CONTROL_SIZE bytes, with the magic and version.
 * A file still being created (magic not yet stored) is refused the same way
 * (accepted race: a controller started in the same microsecond as the
 * server retries).
 *
 * ---- The runtime (policy_rt_t, leader thread only) ----------------------
 * policy_rt_before_token(), called from the engine's before_token hook:
 *   1. raw = load(index) (the file's, or the sched_ext scheduler's page
 *      when one was provided: control_set_index_provider below; relaxed:
 *      the index carries no data with it; the
 *      records it names were validated before the word was published);
 *   2. record = raw < library size ? raw : 0 (and invalid_reads += 1);
 *      while the guard's fallback holds (below), record = 0;
 *   3. mask = policy_next_mask(record) (knee included); gang_request and
 *      gang_set_acquire only when the mask or the mode changes.
 * policy_rt_generation_end(), after each generation: TTFT window, decode
 * rate, queue depth into the telemetry; then the GUARD, checked once per
 * generation end: when the record in force (not the default) declares a
 * bound (guard_ttft_p99_ms: p99 of the TTFTs since it took force, at most
 * the last POLICY_RT_WINDOW generations; guard_queue_depth: the queue depth
 * at the end of the generation) and breaks it in guard_checks consecutive
 * checks, the leader falls back to record 0 by itself, counts it in
 * guard_fallbacks and sets `fallback` in the telemetry. The fallback holds
 * until a controller writes an index other than the one that was in force
 * (rewriting the same value does not lift it: write another first). When
 * the index is the sched_ext scheduler's page (control_set_index_provider)
 * the fallback also stores 0 into it (compare-and-swap from the breaching
 * value), so the kernel policy falls back with the gang; the fallback then
 * holds until any index other than 0 is written.
 * keep_ms: with keep_ms = 0 the requested mask is cut to the leader at the
 * end of a generation; otherwise it is left set. The record in force also
 * sets the gang's keep spin (gang_set_keep: keep_ms * 1000 us) and its
 * acquire mode (gang_set_acquire) at the first token it runs, so after a
 * switch both are the new record's from the next token on (callers still
 * seed gang_config.keep_us from the initial record with policy_keep_us()).
 *
 * Synchronization table:
 *   control_open/close            any thread, any process.
 *   control_write_index           any thread, any process, any time.
 *   telemetry loads               any thread, any process, any time.
 *   policy_rt_*                   the leader thread only (one runtime per
 *                                 control word is expected; two leaders on
 *                                 one word would mix their telemetry). */
#ifndef EGANG_CONTROL_H
#define EGANG_CONTROL_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gang/gang.h"
#include "policy/policy.h"

#define CONTROL_MAGIC 0x57434745u /* "EGCW" */
#define CONTROL_VERSION 1u
#define CONTROL_SIZE 4096u

typedef struct control_word {
	_Atomic uint32_t magic;
	uint32_t version;
	uint32_t size;
	/* the policy index: controllers store, the leader loads once per token */
	alignas(64) _Atomic uint32_t index;
	/* telemetry: single writer (the leader), relaxed stores and loads;
	 * applied_seq orders the applied_* group (release / acquire) */
	alignas(64) _Atomic uint64_t tokens;      /* token boundaries read */
	_Atomic uint64_t generations;             /* generations ended */
	_Atomic uint64_t invalid_reads;           /* reads of an invalid index */
	_Atomic uint64_t guard_fallbacks;         /* guard fallbacks taken */
	_Atomic uint64_t applied_seq;             /* index changes applied */
	_Atomic uint64_t applied_token;           /* `tokens` at the last one */
	_Atomic uint64_t applied_ns;              /* time_now_ns() of it */
	_Atomic uint64_t ttft_p50_us, ttft_p99_us; /* of the window */
	_Atomic uint64_t decode_mtok_s;           /* last generation, tok/s*1000 */
	_Atomic uint32_t applied_raw;             /* the raw index applied */
	_Atomic uint32_t effective;               /* record in force */
	_Atomic uint32_t fallback;                /* 1 while the guard holds */
	_Atomic uint32_t n_policies;              /* library size */
	_Atomic uint32_t n_slots;
	_Atomic uint32_t gang_width;              /* popcount of the request */
	_Atomic uint32_t tenant_width;            /* n_slots - gang_width */
	_Atomic uint32_t queue_depth;
	_Atomic uint32_t leader_pid;
	/* 1 while the leader reads its index from the sched_ext scheduler's
	 * page (control_set_index_provider) rather than from `index` above */
	_Atomic uint32_t index_external;
} control_word_t;

_Static_assert(sizeof(control_word_t) <= CONTROL_SIZE, "control word > file");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2,
	       "shared-memory atomics must be lock-free");

typedef struct control {
	control_word_t *w; /* mapped MAP_SHARED */
	_Atomic uint32_t *index; /* the index: &w->index, or the provider's */
	int fd;
} control_t;

/* ---- one index for the gang and the kernel -----------------------------
 * (doc/ARCHITECTURE.md "The sched_ext backend".)
 * A higher layer (the sched_ext backend, registered by the CLI) may
 * provide another home for the index: a page it shares with the kernel's
 * scheduler (a BPF_F_MMAPABLE array map). control_open asks the provider
 * once per open; when it returns a word, that word is the index for every
 * reader and writer in this process (control_write_index, the leader's
 * policy_rt_before_token), so one store switches the gang and the kernel
 * policy. NULL (no scheduler loaded) leaves the file's own index. The
 * provider's word must stay mapped for the life of the process. */
typedef _Atomic uint32_t *(*control_index_fn)(void);
void control_set_index_provider(control_index_fn fn);
/* Asks the provider again (control_open does it once): for a process that
 * loads the scheduler after opening the word (`serve --backend scx`);
 * before any policy_rt_init on the word. No-op when bound already. */
void control_bind_index(control_t *c);
/* The index word of a control word opened in this process (&w->index if
 * it was opened without a provided index, or not opened here). */
_Atomic uint32_t *control_index_of(control_word_t *w);

/* $XDG_RUNTIME_DIR/egang-control, else /dev/shm/egang-control-$UID. */
const char *control_default_path(char *buf, size_t cap);
/* Opens (create: or creates, 0600) the control file; NULL + err_get()
 * naming the file and what is wrong with it. */
control_t *control_open(const char *path, bool create);
void control_close(control_t *c);
/* A controller's write: one release store (pairs with nothing that needs
 * it today; release so a future field written before it is seen with it). */
void control_write_index(control_t *c, uint32_t index);
/* The word's telemetry as key=value lines (`egang policy status`): the
 * file's path, the index in force, then every field; index_home says
 * whether the index is the file's or the sched_ext scheduler's page.
 * Relaxed loads: each field stands alone. */
void control_print_status(const control_t *cw, const char *path, FILE *out);

/* ---- the runtime ---- */
#define POLICY_RT_WINDOW 64

typedef struct policy_rt {
	const policy_lib_t *lib; /* frozen: never changes after init */
	control_word_t *cw;
	_Atomic uint32_t *index; /* control_index_of(cw): read once per token */
	gang_t *g;               /* NULL: serial, nothing to request */
	int n_slots;
	uint32_t raw;            /* the index read at the last token */
	bool started;            /* raw is valid */
	uint32_t effective;      /* record in force */
	bool fallback;           /* the guard fell back to record 0 */
	uint32_t fallback_raw;   /* ... while the index still reads this */
	uint32_t breaches;       /* consecutive guard breaches */
	uint32_t mask;           /* last requested mask (0: none yet) */
	int acquire;             /* last acquire mode (-1: none yet) */
	int64_t keep_ms;         /* last keep applied (-1: none yet) */
	knee_state_t knee;
	int batch;               /* tokens of the next step (policy_rt_set_batch) */
	uint64_t t_token;        /* start of the last token (knee) */
	uint64_t tokens, invalid, fallbacks, applied, generations;
	double ttft_ms[POLICY_RT_WINDOW]; /* since the record took force */
	int n_ttft, ttft_next;
} policy_rt_t;

/* Binds a runtime to a library, a control word and a gang (may be NULL);
 * publishes the library size in the telemetry. */
void policy_rt_init(policy_rt_t *rt, const policy_lib_t *lib,
		    control_word_t *cw, gang_t *g);
/* Before every token (pos = the engine's position, 0 at the start of a
 * generation): one load of the index, the request for this token. */
void policy_rt_before_token(policy_rt_t *rt, uint64_t pos);
/* The batch size (tokens) of the step the next policy_rt_before_token
 * starts (continuous batching; 1 unless set): the knee policy runs it at
 * its batch size's knee, and measures it as that batch size's step. */
void policy_rt_set_batch(policy_rt_t *rt, int batch);
/* After a generation: ttft_s < 0 when no token was generated. */
void policy_rt_generation_end(policy_rt_t *rt, double ttft_s,
			      double decode_tok_s, uint32_t queue_depth);
/* The keep spin for gang_config.keep_us from record `index` (0 if none). */
uint32_t policy_keep_us(const policy_lib_t *lib, uint32_t index);

#endif
