/* gang: the elastic gang runtime (doc/ARCHITECTURE.md "The elastic gang
 * protocol").
 *
 * One worker thread per allowed core, pinned; the thread that calls
 * gang_run_token() is the leader and always takes part (slot 0). Membership
 * may change between any two tokens; the gang knows nothing about models: it
 * runs a wave_plan_t (base/wave.h) on whoever is in the token's latch.
 *
 * ---- The protocol ------------------------------------------------------
 * Shared state:
 *   requested  bit mask of slots the gang wants (any thread, any time).
 *   epoch      odd while a generation runs, even between generations; the
 *              leader bumps it at gang_begin() and gang_end().
 *   ack[s]     0 (slot s is not ready), e (slot s is ready in epoch e) or
 *              e|ACK_TAKEN (the leader has put s in the latch being
 *              published). Worker: 0 -> e (arrive), e -> 0 (leave, by CAS),
 *              e|TAKEN -> e (seen the latch). Leader: e -> e|TAKEN (by CAS).
 *   latch      one 64-bit word, tag (high 32 bits, a token counter) |
 *              participant mask (low 32 bits), published once per token.
 *   sync       one 64-bit word, tag (32) | wave (16) | arrivals (16): the
 *              wave barrier, tagged with the token and the wave.
 *   share[s]   slot s's part of the current wave's chunks, one word
 *              (next, end): the r-th of the mask's P slots is dealt
 *              [r n / P, (r + 1) n / P) of the wave's n chunks.
 *
 * Leader, per token:
 *   1. mask = {leader}; for every slot s in requested: if CAS(ack[s], e ->
 *      e|TAKEN) succeeds, mask |= s. (The leader never waits for an ack: a
 *      slot that is not ready is simply left out of this token.)
 *   2. sync = (tag, 0, 0), wave 0 dealt to the mask's shares;
 *      latch = tag | mask (release).
 *   3. takes part in every wave like any participant (below); the token ends
 *      when sync reads (tag, n_waves, 0).
 * Participant, for wave w of token tag:
 *   claim chunks, each by one CAS: the front of its own share, then the
 *   back of the other participants' shares, until every share is empty;
 *   then arrive: CAS sync (tag, w, k) -> (tag, w, k+1). The participant
 *   whose arrival makes k+1 == popcount(mask) runs the wave's finish(),
 *   deals wave w+1 and stores sync = (tag, w+1, 0) (release); the others
 *   wait until sync no longer reads (tag, w, *).
 * Worker s (pinned to its core):
 *   - while s is not requested or the epoch is even: sleeps on a futex;
 *   - arrive: reads latch (its tag becomes `seen`), then ack[s] = e;
 *   - then waits for a latch tag != seen. If its bit is set it stores
 *     ack[s] = e (clearing TAKEN) and takes part in every wave of that token;
 *     if not, it is out of that token and touches nothing of it;
 *   - leave (s no longer requested, or the epoch changed): CAS(ack[s], e ->
 *     0). If the CAS fails the leader has just taken s into a latch: s goes
 *     on reading latches as before, skipping any without its bit (`seen`
 *     may be older than a latch published before the leader's CAS), takes
 *     part in the first one with its bit, then tries to leave again. (The
 *     Promela model's SPEC_LITERAL variant, "wait for the next latch and
 *     take part in it", deadlocks: spin found it.) Leaving therefore happens
 *     only at a token boundary, and the core goes to the OS at once.
 *
 * Why it is safe (each invariant has a test that tries to break it, named
 * in doc/ARCHITECTURE.md "The elastic gang protocol"):
 *   I1 (no deadlock on departure) every slot in a latch's mask reaches every
 *      barrier of that token: a slot enters the mask only through the
 *      leader's successful CAS e -> e|TAKEN, after which the slot's own
 *      leave-CAS (e -> 0) fails until the slot has seen a latch with its
 *      bit, so it cannot go to sleep before; the first latch with its bit
 *      that it reads is the one it was taken into (TAKEN stays set until
 *      then, so no other latch can have taken it), and that latch stays
 *      published until this token's barriers, which need the slot, have
 *      completed. Latches without its bit it skips, whatever their age.
 *   I2 (never waits on a named core) the leader's only waits are the wave
 *      barriers, which count exactly popcount(mask) arrivals of slots that
 *      committed (I1) before the latch was published.
 *   I3 (no corruption on arrival) a slot touches a share, sync or the
 *      plan's buffers only inside a token whose mask has its bit, and sync's
 *      (tag, wave) check makes a stale arrival impossible to count.
 *   I4 (joins within one token) a requested slot that has acked before the
 *      leader's step 1 is in that token's mask; one that acks later is in
 *      the next one.
 *   I5 (bit-exact) every chunk is a pure function of the plan's inputs and
 *      finish() runs once per wave after all chunks, so the output does not
 *      depend on the mask.
 *   I6 (generations return cores) gang_end() makes the epoch even: every
 *      ack is stale, every worker leaves and sleeps (after keep_us of
 *      spinning, 0 by default) until a generation begins again.
 *
 * Synchronization table:
 *   gang_request(), gang_stats()     any thread, any time.
 *   gang_begin(), gang_run_token(),  the leader thread only (one at a time).
 *   gang_end()
 *   gang_init() / gang_free()        no other call in flight.
 */
#ifndef EGANG_GANG_H
#define EGANG_GANG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/base.h"
#include "base/wave.h"

/* Slots (threads, one per CPU) a gang has at most. The participant mask is
 * the low 32 bits of the latch word (the high 32 are the token tag, which
 * I2's ABA argument needs), and every slot mask in the API, the policies
 * and the telemetry is a uint32_t. What the user sees at the limit: a
 * --cores list of more than 32 CPUs is refused ("--cores 0-40: 41 CPUs,
 * but the gang has 32 slots (GANG_MAX_SLOTS)"); without --cores, on a
 * machine that allows more, egang takes the first 32 (physical cores
 * first) and says so once on stderr; gang_init refuses n_cpus above it.
 * To lift it: a 128-bit latch (cmpxchg16b) or a second mask word read
 * under the same tag, and uint64_t masks above the gang. */
#define GANG_MAX_SLOTS 32
/* Waves per token at most: sync's wave field is 16 bits and reaches
 * n_waves after the last wave. */
#define GANG_MAX_WAVES 0xffffu

typedef struct gang gang_t; /* opaque */

typedef struct gang_stats {
	uint64_t tokens;           /* tokens run */
	uint64_t latch_changes;    /* tokens whose mask differed from the last */
	uint64_t joins;            /* slot entered the mask */
	uint64_t departures;       /* slot left the mask */
	uint64_t wakes;            /* futex wakes issued to sleeping workers */
	/* tokens each slot was in, and chunks it ran: a worker adds its
	 * token after the token's last barrier, so right after
	 * gang_run_token returns a worker's counts may lag by that token */
	uint64_t participation[GANG_MAX_SLOTS];
	uint64_t chunks[GANG_MAX_SLOTS];
	int n_slots;
	int cpus[GANG_MAX_SLOTS];  /* CPU of each slot */
	uint64_t ack_ns[GANG_MAX_SLOTS]; /* time_now_ns() of each slot's last ack */
	uint64_t preempted_tokens;   /* tokens in which a participant was
					switched out involuntarily */
	uint64_t preemptions;        /* involuntary switches inside tokens */
	uint32_t raise_denied;       /* SCHED_FIFO or nice -20 refused
					(acquire preempt) */
	uint32_t last_mask;        /* mask of the last token */
	uint32_t keep_us;          /* the keep spin now (gang_set_keep) */
	uint32_t acquire;          /* gang_acquire_t now (gang_set_acquire) */
	uint32_t sleepers;         /* workers asleep on the futex right now */
} gang_stats_t;

/* How a waking worker takes its core from a running tenant. */
typedef enum gang_acquire {
	GANG_ACQUIRE_POLITE,  /* SCHED_OTHER: the scheduler decides (a running
				 tenant may finish its slice) */
	GANG_ACQUIRE_PREEMPT, /* workers in SCHED_FIFO 1: a woken worker
				 preempts at once and is never time-sliced
				 against tenants; the leader, while a
				 generation runs, at nice -20 (not FIFO: RT
				 throttling, gang.c sched_apply). Needs
				 CAP_SYS_NICE (or RLIMIT_RTPRIO/NICE);
				 refused -> polite, counted in raise_denied */
	GANG_ACQUIRE_COUNT
} gang_acquire_t;

typedef struct gang_config {
	const int *cpus;  /* CPUs, slot order; cpus[0] is the leader's */
	int n_cpus;       /* 1..GANG_MAX_SLOTS */
	bool pin;         /* pin workers (and the leader) to their CPUs */
	uint32_t spin_us; /* bounded spin before a futex sleep while requested
			     (between tokens, in barriers; default 200) */
	uint32_t keep_us; /* spin once no longer requested (default 0: sleep
			     at once, the core goes back to the OS) */
	gang_acquire_t acquire;
	bool count_preempt; /* count involuntary context switches inside
			       tokens (two getrusage calls per token) */
} gang_config_t;

/* Starts n_cpus - 1 workers; they sleep until requested. NULL + err_get(). */
gang_t *gang_init(const gang_config_t *cfg);
/* Stops and joins the workers. */
void gang_free(gang_t *g);

int gang_n_slots(const gang_t *g);
/* Slot mask of every slot. */
uint32_t gang_all(const gang_t *g);

/* Sets the requested slot mask (slot 0, the leader, is always in). Any
 * thread, any time; takes effect at the next token boundary. */
void gang_request(gang_t *g, uint32_t mask);
uint32_t gang_requested(const gang_t *g);

/* Starts / ends a generation (epoch odd / even). Leader thread only. */
void gang_begin(gang_t *g);
void gang_end(gang_t *g);

/* Runs one token's plan on the leader and the slots in this token's latch;
 * returns the participant mask. Leader thread only, between begin/end. */
uint32_t gang_run_token(gang_t *g, const wave_plan_t *plan);

/* A consistent-enough snapshot (counters are read one by one). */
void gang_stats(const gang_t *g, gang_stats_t *out);
/* One line "gang: T tokens, L latch changes, J joins, D departures,
 * participation cpuN=K ..." (what `egang generate` prints and its tests
 * read). */
void gang_stats_print(const gang_t *g, FILE *f);

/* Sets the acquire mode (any thread; workers apply it at their next wake,
 * the leader at its next gang_begin). */
void gang_set_acquire(gang_t *g, gang_acquire_t mode);
/* Sets gang_config.keep_us (any thread; a worker reads it each time it
 * stops being requested). */
void gang_set_keep(gang_t *g, uint32_t keep_us);

/* Testing hook: slots in mask stop before their next ack (held as if the
 * OS never ran them) until released with another call. */
void gang_hold(gang_t *g, uint32_t mask);

#ifdef EGANG_DEBUG
/* Debug builds: per 65536 protocol steps, how many stall the thread at
 * random (spin, yield or sleep) to shake out interleavings. */
extern _Atomic uint32_t gang_fault_rate;
#endif

/* A one-line dump of the protocol state (for watchdogs). */
void gang_dump(const gang_t *g, char *buf, size_t cap);

#endif
