/* gang: the elastic gang runtime. The protocol and its invariants are in
 * gang.h; this file follows the same names. */
#include "gang/gang.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ACK_TAKEN 0x80000000u
#define EPOCH_MASK 0x7fffffffu

/* sync word: tag (32) | wave (16) | arrivals (16) */
#define SYNC(tag, wave, n) (((uint64_t)(tag) << 32) | ((uint64_t)(wave) << 16) | (n))
#define SYNC_TAG(v) ((uint32_t)((v) >> 32))
#define SYNC_WAVE(v) ((uint32_t)((v) >> 16) & 0xffffu)
#define SYNC_COUNT(v) ((uint32_t)(v) & 0xffffu)
#define SYNC_PHASE(v) ((v) >> 16) /* tag and wave, without arrivals */

#define LATCH_TAG(v) ((uint32_t)((v) >> 32))
#define LATCH_MASK(v) ((uint32_t)(v))
_Static_assert(GANG_MAX_SLOTS <= 32, "a slot is a bit of the latch's 32-bit mask");

/* ---- fault injection (debug builds) ----
 * EGANG_DEBUG builds call gang_fault() at every step of the protocol; when
 * gang_fault_rate is nonzero a random fraction of those calls stall the
 * thread (spin, yield or sleep), which torture tests use to shake out
 * interleavings. */
#ifdef EGANG_DEBUG
_Atomic uint32_t gang_fault_rate; /* per 65536 calls; set by tests */
static void gang_fault(void)
{
	static _Thread_local rng_t rng;
	static _Thread_local bool seeded;
	uint32_t rate = atomic_load_explicit(&gang_fault_rate,
					     memory_order_relaxed);
	if (!rate)
		return;
	if (!seeded) {
		rng_seed(&rng, (uint64_t)pthread_self() ^ time_now_ns());
		seeded = true;
	}
	uint64_t r = rng_next(&rng);
	if ((r & 0xffff) >= rate)
		return;
	switch ((r >> 16) % 3) {
	case 0:
		for (uint64_t i = (r >> 20) % 20000; i; i--)
			cpu_relax();
		break;
	case 1:
		sched_yield();
		break;
	default:
		usleep((useconds_t)((r >> 20) % 200));
	}
}
#define FAULT() gang_fault()
#else
#define FAULT() ((void)0)
#endif

typedef struct slot {
	/* ack[s]: 0, e or e|ACK_TAKEN (gang.h). Written by the worker (store,
	 * CAS) and the leader (CAS); on its own line because the leader
	 * reads every slot's ack each token. */
	_Alignas(EG_CACHELINE) _Atomic uint32_t ack;
	/* The slot's share of the current wave's chunks, RANGE(next, end):
	 * claimed from the front by the slot itself and from the back by the
	 * other participants once their own share is done (claim()); dealt by
	 * the leader (wave 0) and by each wave's last arriver (the next
	 * wave). On its own line: the owner's claims stay local. */
	_Alignas(EG_CACHELINE) _Atomic uint64_t range;
	/* statistics, written by the slot's own thread only */
	_Alignas(EG_CACHELINE) _Atomic uint64_t participation;
	_Atomic uint64_t chunks;
	_Atomic uint64_t ack_ns; /* time of the last ack (benchmarks) */
	_Atomic uint64_t preempted_tokens, preemptions;
	int sched_policy; /* the thread's current class (its own thread only) */
	pthread_t thread;
	int cpu;
	struct gang *g;
	int index;
} slot_t;

struct gang {
	/* Published once per token by the leader (release); read by every
	 * worker waiting for a token. */
	_Alignas(EG_CACHELINE) _Atomic uint64_t latch;
	/* The wave barrier: CAS by every arrival, stored by the releaser. */
	_Alignas(EG_CACHELINE) _Atomic uint64_t sync;
#ifdef EGANG_DEBUG
	_Atomic uint32_t arrived; /* arrivals' slot bits, checked per wave */
#endif
	/* Futex words: doorbell wakes idle and waiting workers, bar_seq
	 * wakes participants asleep in a barrier. */
	_Alignas(EG_CACHELINE) _Atomic uint32_t doorbell;
	_Atomic uint32_t sleepers;
	_Alignas(EG_CACHELINE) _Atomic uint32_t bar_seq;
	_Atomic uint32_t bar_sleepers;
	/* Control: requested by anyone, epoch by the leader. */
	_Alignas(EG_CACHELINE) _Atomic uint32_t requested;
	_Atomic uint32_t epoch;
	_Atomic bool stop;
	_Atomic uint32_t hold; /* gang_hold(): slots kept from acking */
	/* The plan of the token in flight: written by the leader before the
	 * latch store (release), read by participants after their acquire of
	 * the latch. */
	const wave_plan_t *plan;

	/* spin before sleeping once not requested: set by gang_set_keep (any
	 * thread), read by each worker as it goes idle */
	_Atomic uint64_t keep_ns;
	/* leader-only state */
	_Alignas(EG_CACHELINE) uint32_t tag;
	uint32_t last_mask;
	uint64_t spin_ns; /* spin before sleeping while requested */
	int n;
	bool pin;
	/* the class polite acquire runs in: SCHED_OTHER, or SCHED_EXT when
	 * the creating thread was in it (egang's sched_ext backend, whose BPF
	 * policies do the preempting, so acquire preempt keeps it too) */
	int base_policy;
	_Atomic uint64_t tokens, latch_changes, joins, departures, wakes;
	_Atomic uint32_t acquire;     /* gang_acquire_t */
	_Atomic uint32_t raise_denied;
	int leader_nice; /* the leader's nice before acquire preempt raised it */
	bool count_preempt;

	slot_t slots[GANG_MAX_SLOTS];
};

/* ---- sleeping and waking ---- */

/* Makes a state change (stored just before) visible to sleepers on *word.
 * Both sides do a read-modify-write on *word, which orders them: if our
 * RMW comes after a sleeper's, its acquire sees the sleeper's `sleepers`
 * increment and we wake it; if it comes before, the sleeper's RMW acquires
 * our release and its re-check sees the change (and futex_wait fails on the
 * bumped word). No fence is needed (and ThreadSanitizer can follow it). */
static void ring(gang_t *g, _Atomic uint32_t *word, _Atomic uint32_t *sleepers)
{
	atomic_fetch_add_explicit(word, 1, memory_order_acq_rel);
	if (atomic_load_explicit(sleepers, memory_order_relaxed)) {
		futex_wake((uint32_t *)word, INT_MAX);
		atomic_fetch_add_explicit(&g->wakes, 1, memory_order_relaxed);
	}
}

typedef bool (*wait_done_fn)(gang_t *g, const void *arg);

/* Spins up to spin_ns (with a pause instruction) until done(); false if
 * the time ran out first. */
static bool spin_for(gang_t *g, wait_done_fn done, const void *arg,
		     uint64_t spin_ns)
{
	if (done(g, arg))
		return true;
	uint64_t t0 = time_now_ns();
	for (unsigned i = 1; spin_ns; i++) {
		cpu_relax();
		if (done(g, arg))
			return true;
		if ((i & 63) == 0 && time_now_ns() - t0 > spin_ns)
			break;
	}
	return false;
}

/* Spins up to spin_ns, then sleeps on *word until done() holds. */
static void wait_for(gang_t *g, wait_done_fn done, const void *arg,
		     _Atomic uint32_t *word, _Atomic uint32_t *sleepers,
		     uint64_t spin_ns)
{
	if (spin_for(g, done, arg, spin_ns))
		return;
	for (;;) {
		atomic_fetch_add_explicit(sleepers, 1, memory_order_relaxed);
		/* pairs with ring(): see there */
		uint32_t v = atomic_fetch_add_explicit(word, 0, memory_order_acq_rel);
		bool ok = done(g, arg);
		if (!ok)
			futex_wait((uint32_t *)word, v);
		atomic_fetch_sub_explicit(sleepers, 1, memory_order_relaxed);
		if (ok || done(g, arg))
			return;
	}
}

/* ---- scheduling class (acquire modes) ---- */

#define GANG_SCHED_EXT 7 /* SCHED_EXT (Linux 6.12+; glibc 2.36 lacks the name) */

/* Acquire preempt puts the workers in SCHED_FIFO 1 but the leader at nice
 * LEADER_NICE in SCHED_OTHER. The leader runs whenever a generation runs
 * (at a knee of one core, alone, for as long as requests keep coming), so a
 * FIFO leader hits RT throttling (sched_rt_runtime_us: 950 ms a second
 * here): its core idles, or serves a tenant, for 50 ms of every second a
 * busy leader runs, ~5% of its decode speed, which a static split, whose
 * leader is SCHED_OTHER on a core of its own, does not pay (issue 4's
 * duty-100 point). At nice -20 (weight 88761 against a nice-0 tenant's
 * 1024) the leader is time-sliced for ~1% of its core instead, and the
 * load balancer, seeing that weight, moves unpinned tenants to the other
 * cores while the leader is busy. Workers stay FIFO: they run only inside
 * tokens, where a worker sliced away would stall every barrier. */
#define LEADER_NICE (-20)
#define CLASS_LEADER_NICE (-2) /* slot.sched_policy: SCHED_OTHER at LEADER_NICE */

static void leader_nice_undo(gang_t *g, slot_t *s)
{
	if (s->sched_policy != CLASS_LEADER_NICE)
		return;
	setpriority(PRIO_PROCESS, (id_t)gettid(), g->leader_nice);
	s->sched_policy = SCHED_OTHER;
}

/* Puts the calling slot's thread in the class the acquire mode asks for
 * (no system call when it already is). */
static void sched_apply(gang_t *g, slot_t *s)
{
	bool raise = atomic_load_explicit(&g->acquire, memory_order_relaxed) ==
			     GANG_ACQUIRE_PREEMPT &&
		     g->base_policy != GANG_SCHED_EXT;
	int want = !raise ? g->base_policy : s->index == 0 ? CLASS_LEADER_NICE : SCHED_FIFO;
	if (s->sched_policy == want)
		return;
	leader_nice_undo(g, s);
	if (want == CLASS_LEADER_NICE) {
		errno = 0;
		int nice = getpriority(PRIO_PROCESS, (id_t)gettid());
		g->leader_nice = errno ? 0 : nice;
		/* relaxed: a statistic, read by gang_stats; orders nothing */
		if (setpriority(PRIO_PROCESS, (id_t)gettid(), LEADER_NICE) != 0)
			atomic_fetch_add_explicit(&g->raise_denied, 1, memory_order_relaxed);
		/* refused: do not try again until the mode changes */
		s->sched_policy = CLASS_LEADER_NICE;
		return;
	}
	struct sched_param sp = {.sched_priority = want == SCHED_FIFO ? 1 : 0};
	if (pthread_setschedparam(pthread_self(), want, &sp) == 0) {
		s->sched_policy = want;
	} else if (want == SCHED_FIFO) {
		/* relaxed: a statistic, as above */
		atomic_fetch_add_explicit(&g->raise_denied, 1, memory_order_relaxed);
		/* do not try again until the mode changes */
		s->sched_policy = SCHED_FIFO;
	}
}

static uint64_t nivcsw_self(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return (uint64_t)ru.ru_nivcsw;
}

/* ---- the wave barrier ---- */

typedef struct phase_arg {
	uint64_t phase; /* SYNC_PHASE of the wave being waited on */
} phase_arg_t;

static bool phase_passed(gang_t *g, const void *arg)
{
	const phase_arg_t *a = arg;
	/* acquire: pairs with the releaser's store, so the finish() and every
	 * chunk of the wave happen before what we do next */
	return SYNC_PHASE(atomic_load_explicit(&g->sync, memory_order_acquire)) !=
	       a->phase;
}

/* ---- chunk claims ----
 *
 * Each participant owns a contiguous share of the wave's chunk indices,
 * [r n / P, (r + 1) n / P) for the r-th of the P slots of the mask (deal()),
 * and claims it front to back with a CAS on its own cache line; when its
 * share is empty it takes chunks from the back of the others' shares (the
 * next slot up first, cyclically) until every share is empty, then
 * arrives. So a member never waits for a named core (a preempted member's
 * chunks are taken by the others), every chunk is claimed exactly once
 * (every claim is one CAS on the share's word: the front and the back
 * cannot pass each other), and a share that was seen empty stays empty for
 * the rest of the wave, so the arrival of the last participant means every
 * chunk was claimed and, as before, run. With one shared cursor, every
 * claim moved a cache line between the cores (run_waves was ~1% of a
 * token's samples), and a member's next chunk was rarely the one after its
 * last, which restarted the hardware prefetcher's stream; a contiguous
 * share is one stream (decode was faster, doc/measurements.md). The cost:
 * the deal writes every participant's line and each reads the others'
 * before arriving, so a wave barrier is slower.
 * Chunk indices still name fixed rows (forward.c), so which slot runs a
 * chunk changes no bit. */
#define RANGE(next, end) ((uint64_t)(end) << 32 | (uint32_t)(next))
#define RANGE_NEXT(v) ((uint32_t)(v))
#define RANGE_END(v) ((uint32_t)((v) >> 32))
#define NO_CHUNK UINT32_MAX

/* Deals the n chunks of a wave to the slots of mask. Called only while no
 * participant can claim: by the leader before the latch's release store,
 * by a wave's last arriver before the sync's release store. Relaxed: those
 * releases publish the deal, paired with the participants' acquire of the
 * latch (worker_main) and of sync (phase_passed) before they claim. */
static void deal(gang_t *g, uint32_t mask, uint32_t n)
{
	uint64_t P = (uint64_t)__builtin_popcount(mask), r = 0;
	for (uint32_t m = mask; m; m &= m - 1, r++)
		atomic_store_explicit(&g->slots[__builtin_ctz(m)].range,
				      RANGE(r * n / P, (r + 1) * n / P),
				      memory_order_relaxed);
}

/* Takes the chunk at the back of share *r, or returns NO_CHUNK once it is
 * empty. Relaxed: a claim only needs atomicity; the chunk's inputs were
 * published by the wave's release. */
static uint32_t steal_from(_Atomic uint64_t *r)
{
	uint64_t v = atomic_load_explicit(r, memory_order_relaxed);
	while (RANGE_NEXT(v) < RANGE_END(v))
		if (atomic_compare_exchange_weak_explicit(r, &v, v - (1ull << 32),
							  memory_order_relaxed,
							  memory_order_relaxed))
			return RANGE_END(v) - 1;
	return NO_CHUNK;
}

/* The next chunk for participant `slot` of mask: its own share's front
 * (relaxed CAS, as steal_from), else another share's back, the slots above
 * `slot` first, then those below; NO_CHUNK when every share is empty. */
static uint32_t claim(gang_t *g, int slot, uint32_t mask)
{
	_Atomic uint64_t *own = &g->slots[slot].range;
	uint64_t v = atomic_load_explicit(own, memory_order_relaxed);
	while (RANGE_NEXT(v) < RANGE_END(v))
		if (atomic_compare_exchange_weak_explicit(own, &v, v + 1, memory_order_relaxed,
							  memory_order_relaxed))
			return RANGE_NEXT(v);
	const uint32_t others = mask & ~(1u << slot);
	const uint32_t order[2] = { others & ~((2u << slot) - 1), others & ((1u << slot) - 1) };
	for (int k = 0; k < 2; k++)
		for (uint32_t m = order[k]; m; m &= m - 1) {
			uint32_t i = steal_from(&g->slots[__builtin_ctz(m)].range);
			if (i != NO_CHUNK)
				return i;
		}
	return NO_CHUNK;
}

static void barrier_arrive(gang_t *g, int slot, uint32_t tag, uint32_t w,
			   uint32_t mask, const wave_plan_t *p)
{
	uint32_t n_part = (uint32_t)__builtin_popcount(mask);
#ifdef EGANG_DEBUG
	/* before the arrival CAS, so the last arriver sees every bit */
	atomic_fetch_or_explicit(&g->arrived, 1u << slot, memory_order_relaxed);
#else
	(void)slot;
#endif
	uint64_t v = atomic_load_explicit(&g->sync, memory_order_relaxed);
	/* acq_rel: release publishes this participant's chunk results to the
	 * last arriver; acquire (through the RMW chain) gives the last arriver
	 * every earlier arrival's results. */
	do {
		/* I3: an arrival is only ever counted in its own token and
		 * wave. The wave cannot complete without us, so a failed CAS
		 * reloads the same (tag, wave). */
		assert(SYNC_TAG(v) == tag && SYNC_WAVE(v) == w);
	} while (!atomic_compare_exchange_weak_explicit(
		&g->sync, &v, v + 1, memory_order_acq_rel, memory_order_relaxed));
	if (SYNC_COUNT(v) + 1 == n_part) {
#ifdef EGANG_DEBUG
		/* exactly the latch's participants arrived */
		assert(atomic_load_explicit(&g->arrived, memory_order_relaxed) == mask);
		atomic_store_explicit(&g->arrived, 0, memory_order_relaxed);
#endif
		const wave_t *wv = &p->waves[w];
		if (wv->finish)
			wv->finish(p->ctx, w);
		/* Every claim of this wave happened before its claimer's
		 * arrival, so no one touches a share until the release below
		 * makes the next wave's deal visible. */
		if (w + 1 < p->n_waves)
			deal(g, mask, p->waves[w + 1].n_chunks);
		atomic_store_explicit(&g->sync, SYNC(tag, w + 1, 0),
				      memory_order_release);
		ring(g, &g->bar_seq, &g->bar_sleepers);
		return;
	}
	phase_arg_t a = {SYNC_PHASE(SYNC(tag, w, 0))};
	wait_for(g, phase_passed, &a, &g->bar_seq, &g->bar_sleepers, g->spin_ns);
}

/* Runs every wave of the token as participant `slot`. */
static void run_waves(gang_t *g, int slot, uint32_t tag, uint32_t mask,
		      const wave_plan_t *p)
{
	slot_t *s = &g->slots[slot];
	uint64_t done = 0;
	uint64_t csw0 = g->count_preempt ? nivcsw_self() : 0;
	/* The plan is read only while the token is in flight: once the last
	 * wave's barrier has released, the leader returns and its caller may
	 * free the plan (a forward_t) while this participant is still here, so
	 * the loop's bound is read before the first barrier. */
	const uint32_t n_waves = p->n_waves;
	for (uint32_t w = 0; w < n_waves; w++) {
		const wave_t *wv = &p->waves[w];
		for (;;) {
			uint32_t i = claim(g, slot, mask);
			if (i == NO_CHUNK)
				break;
#ifdef EGANG_DEBUG
			/* I3: no slot outside the latch claims a chunk */
			uint64_t l = atomic_load_explicit(&g->latch,
							  memory_order_relaxed);
			assert(LATCH_TAG(l) == tag && (LATCH_MASK(l) >> slot & 1));
#endif
			FAULT();
			wv->chunk(p->ctx, w, i);
			done++;
		}
		FAULT();
		barrier_arrive(g, slot, tag, w, mask, p);
	}
	atomic_store_explicit(&s->chunks,
			      atomic_load_explicit(&s->chunks, memory_order_relaxed) + done,
			      memory_order_relaxed);
	if (g->count_preempt) {
		uint64_t d = nivcsw_self() - csw0;
		if (d) {
			atomic_fetch_add_explicit(&s->preempted_tokens, 1,
						  memory_order_relaxed);
			atomic_fetch_add_explicit(&s->preemptions, d,
						  memory_order_relaxed);
		}
	}
	atomic_store_explicit(&s->participation,
			      atomic_load_explicit(&s->participation, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* ---- workers ---- */

typedef struct worker_arg {
	const slot_t *s;
	uint32_t epoch;  /* the epoch this worker acked (0 if idle) */
	uint32_t seen;   /* the latch tag it saw last */
} worker_arg_t;

static bool worker_wanted(gang_t *g, const slot_t *s)
{
	uint32_t e = atomic_load_explicit(&g->epoch, memory_order_acquire);
	return (e & 1) &&
	       (atomic_load_explicit(&g->requested, memory_order_relaxed) >> s->index & 1);
}

static bool idle_done(gang_t *g, const void *arg)
{
	const worker_arg_t *a = arg;
	return atomic_load_explicit(&g->stop, memory_order_relaxed) ||
	       worker_wanted(g, a->s);
}

static bool acked_done(gang_t *g, const void *arg)
{
	const worker_arg_t *a = arg;
	uint64_t l = atomic_load_explicit(&g->latch, memory_order_acquire);
	return LATCH_TAG(l) != a->seen ||
	       atomic_load_explicit(&g->stop, memory_order_relaxed) ||
	       atomic_load_explicit(&g->epoch, memory_order_relaxed) != a->epoch ||
	       !(atomic_load_explicit(&g->requested, memory_order_relaxed) >> a->s->index & 1);
}

static bool latch_moved(gang_t *g, const void *arg)
{
	const worker_arg_t *a = arg;
	return LATCH_TAG(atomic_load_explicit(&g->latch, memory_order_acquire)) !=
	       a->seen;
}

static void *worker_main(void *arg)
{
	slot_t *s = arg;
	gang_t *g = s->g;
	if (g->pin)
		affinity_pin_self(s->cpu);
	uint32_t bit = 1u << s->index;
	worker_arg_t a = {.s = s};
	for (;;) {
		/* idle: asleep until requested in a running generation. A
		 * worker that was just in use spins keep_ns first (a policy's
		 * "keep cores warm"); by default it sleeps at once, so its core
		 * goes back to the OS the moment it is not needed. */
		/* relaxed: pairs with gang_set_keep's store; only the value
		 * travels (the length of one spin) */
		wait_for(g, idle_done, &a, &g->doorbell, &g->sleepers,
			 atomic_load_explicit(&g->keep_ns, memory_order_relaxed));
		if (atomic_load_explicit(&g->stop, memory_order_relaxed))
			break;
		while ((atomic_load_explicit(&g->hold, memory_order_relaxed) & bit) &&
		       !atomic_load_explicit(&g->stop, memory_order_relaxed))
			usleep(100);
		sched_apply(g, s);
		FAULT();
		/* arrive: read the latch first, then ack. A latch that takes
		 * this ack must be stored after the leader's CAS saw it, hence
		 * after this load: its tag differs from `seen` (gang.h I1). */
		a.epoch = atomic_load_explicit(&g->epoch, memory_order_acquire);
		if (!(a.epoch & 1))
			continue;
		a.seen = LATCH_TAG(atomic_load_explicit(&g->latch,
							memory_order_acquire));
		/* release: orders the latch load above before the ack (a
		 * release store keeps earlier loads before it). Pairs with the
		 * leader's acquire CAS (gang_run_token step 1): a latch the
		 * leader stores after taking this ack happens after our latch
		 * load, so we cannot have read it: its tag differs from
		 * `seen`. A relaxed ack is spec/README.md's ack-first mutation,
		 * which spin shows deadlocks. */
		atomic_store_explicit(&s->ack, a.epoch, memory_order_release);
		atomic_store_explicit(&s->ack_ns, time_now_ns(), memory_order_relaxed);
		FAULT();
		for (;;) {
			/* Spin spin_us, then sleep still acked: the leader
			 * may take a sleeping worker, and then waits for its
			 * wake-up at the first barrier (a futex wake, ~50 us
			 * here; a tenant's slice under acquire polite). A
			 * worker that withdrew its ack before sleeping would
			 * miss every token whenever the gap between tokens
			 * is longer than spin_us (tried, and measured so). */
			wait_for(g, acked_done, &a, &g->doorbell, &g->sleepers,
				 g->spin_ns);
			uint64_t l = atomic_load_explicit(&g->latch,
							  memory_order_acquire);
			if (LATCH_TAG(l) != a.seen) {
				a.seen = LATCH_TAG(l);
				if (!(LATCH_MASK(l) & bit))
					continue; /* out of this token */
				/* in: drop TAKEN (only we write it now; the
				 * leader CASes again only after this token's
				 * barriers, which we are part of) */
				atomic_store_explicit(&s->ack, a.epoch,
						      memory_order_relaxed);
				run_waves(g, s->index, a.seen, LATCH_MASK(l),
					  g->plan);
				continue;
			}
			/* leave: not requested, epoch changed or stopping.
			 * The CAS fails iff the leader took us into a latch
			 * (e|TAKEN): then wait for it and take part. Only the
			 * CAS's atomicity against the leader's CAS matters
			 * (one of them wins); the latch's own acquire (below,
			 * and in acked_done) carries the token's data. The
			 * acq_rel / acquire orders are stronger than needed:
			 * they pair with the leader's acq_rel CAS on this ack,
			 * cost nothing over relaxed on x86 (a locked CMPXCHG
			 * either way) and keep the ack word a simple
			 * release/acquire chain to reason about. */
			uint32_t expect = a.epoch;
			if (atomic_compare_exchange_strong_explicit(
				    &s->ack, &expect, 0, memory_order_acq_rel,
				    memory_order_acquire))
				break;
			assert(expect == (a.epoch | ACK_TAKEN));
			FAULT();
			/* the latch with our bit is about to be published */
			wait_for(g, latch_moved, &a, &g->doorbell, &g->sleepers,
				 g->spin_ns);
		}
		a.epoch = 0;
	}
	return NULL;
}

/* ---- API ---- */

gang_t *gang_init(const gang_config_t *cfg)
{
	if (cfg->n_cpus < 1 || cfg->n_cpus > GANG_MAX_SLOTS) {
		err_set("gang: %d CPUs requested; 1..%d are supported "
			"(GANG_MAX_SLOTS)", cfg->n_cpus, GANG_MAX_SLOTS);
		return NULL;
	}
	gang_t *g = aligned_alloc(EG_CACHELINE, (sizeof(gang_t) + EG_CACHELINE - 1) /
							EG_CACHELINE * EG_CACHELINE);
	if (!g) {
		err_sys("aligned_alloc");
		return NULL;
	}
	memset(g, 0, sizeof *g);
	g->n = cfg->n_cpus;
	g->pin = cfg->pin;
	g->spin_ns = (uint64_t)(cfg->spin_us ? cfg->spin_us : 200) * 1000;
	atomic_init(&g->keep_ns, (uint64_t)cfg->keep_us * 1000);
	g->count_preempt = cfg->count_preempt;
	atomic_store(&g->acquire, cfg->acquire);
	/* workers inherit the creating thread's class (pthread_create) */
	g->base_policy = sched_getscheduler(0) == GANG_SCHED_EXT ? GANG_SCHED_EXT
								  : SCHED_OTHER;
	for (int i = 0; i < g->n; i++)
		g->slots[i].sched_policy = g->base_policy;
	atomic_store(&g->requested, 1);
	for (int i = 0; i < g->n; i++) {
		g->slots[i].g = g;
		g->slots[i].index = i;
		g->slots[i].cpu = cfg->cpus[i];
	}
	if (g->pin && affinity_pin_self(cfg->cpus[0]) < 0) {
		free(g);
		return NULL;
	}
	for (int i = 1; i < g->n; i++) {
		int rc = pthread_create(&g->slots[i].thread, NULL, worker_main,
					&g->slots[i]);
		if (rc) {
			errno = rc;
			err_sys("pthread_create");
			g->n = i;
			gang_free(g);
			return NULL;
		}
	}
	return g;
}

void gang_free(gang_t *g)
{
	if (!g)
		return;
	atomic_store(&g->stop, true);
	ring(g, &g->doorbell, &g->sleepers);
	for (int i = 1; i < g->n; i++)
		pthread_join(g->slots[i].thread, NULL);
	free(g);
}

int gang_n_slots(const gang_t *g) { return g->n; }

uint32_t gang_all(const gang_t *g)
{
	return g->n == 32 ? 0xffffffffu : (1u << g->n) - 1;
}

void gang_request(gang_t *g, uint32_t mask)
{
	mask = (mask & gang_all(g)) | 1u;
	/* release: pairs with the leader's acquire load at step 1
	 * (gang_run_token), so what the requester wrote before asking (a
	 * policy's settings) is visible to the leader that acts on the mask.
	 * No seq_cst: no decision rests on a store-then-load race through
	 * `requested` (a slot's join or leave is settled by the CASes on its
	 * ack). Sleeping workers see the new mask through ring()'s RMW on
	 * the doorbell, which comes after this store. */
	if (atomic_exchange_explicit(&g->requested, mask, memory_order_release) != mask)
		ring(g, &g->doorbell, &g->sleepers);
}

uint32_t gang_requested(const gang_t *g)
{
	return atomic_load_explicit(&((gang_t *)g)->requested, memory_order_relaxed);
}

static void epoch_bump(gang_t *g)
{
	uint32_t e = atomic_load_explicit(&g->epoch, memory_order_relaxed);
	e = (e + 1) & EPOCH_MASK;
	/* release: pairs with the workers' acquire loads of the epoch
	 * (worker_wanted, the arrive in worker_main): what the leader did
	 * before gang_begin/gang_end happens before a worker acts on the new
	 * epoch. No seq_cst: a stale epoch is harmless by construction (the
	 * leader's CAS expects the current e, so an ack of an old epoch is
	 * never taken; a worker that still sees the old epoch leaves at its
	 * next check). Sleepers see it through ring()'s RMW, as in
	 * gang_request. */
	atomic_store_explicit(&g->epoch, e, memory_order_release);
	ring(g, &g->doorbell, &g->sleepers);
}

void gang_begin(gang_t *g)
{
	assert(!(atomic_load(&g->epoch) & 1));
	sched_apply(g, &g->slots[0]);
	epoch_bump(g);
}

void gang_end(gang_t *g)
{
	assert(atomic_load(&g->epoch) & 1);
	epoch_bump(g);
	/* the leader holds its raised priority only while a generation runs */
	leader_nice_undo(g, &g->slots[0]);
}

void gang_set_acquire(gang_t *g, gang_acquire_t mode)
{
	/* relaxed: each thread reads it when it next wakes (sched_apply) */
	atomic_store_explicit(&g->acquire, (uint32_t)mode, memory_order_relaxed);
}

void gang_set_keep(gang_t *g, uint32_t keep_us)
{
	/* relaxed: pairs with the worker's load as it goes idle; a worker
	 * already spinning finishes the spin it started */
	atomic_store_explicit(&g->keep_ns, (uint64_t)keep_us * 1000,
			      memory_order_relaxed);
}

/* The sync word's arrival count holds every participant. */
_Static_assert(GANG_MAX_SLOTS <= 0xffff, "arrivals must fit sync's 16 bits");

uint32_t gang_run_token(gang_t *g, const wave_plan_t *plan)
{
	uint32_t e = atomic_load_explicit(&g->epoch, memory_order_relaxed);
	assert(e & 1);
	/* sync's wave field is 16 bits and holds wave + 1 after the last
	 * wave: a longer plan would alias waves and break I3. Callers check
	 * (forward_new refuses such models); this is the last guard. */
	if (plan->n_waves > GANG_MAX_WAVES) {
		fprintf(stderr, "egang: gang_run_token: a plan of %u waves; the "
				"sync word holds at most %u\n",
			plan->n_waves, GANG_MAX_WAVES);
		abort();
	}
	/* 0. the leader's class follows the acquire mode from token to token
	 * (no system call unless the mode changed): a policy that switches to
	 * preempt in the middle of a generation must raise the leader too, or
	 * it shares its core with a tenant half and half and every barrier
	 * waits for it (egang generate under `compare-llamacpp --busy` ran at
	 * half speed: the policy arrives after gang_begin) */
	sched_apply(g, &g->slots[0]);
	/* 1. take every requested slot that is ready (never wait). acquire:
	 * pairs with gang_request's release (see there). */
	uint32_t req = atomic_load_explicit(&g->requested, memory_order_acquire);
	uint32_t mask = 1;
	for (uint32_t r = req & ~1u & gang_all(g); r; r &= r - 1) {
		int s = __builtin_ctz(r);
		uint32_t expect = e;
		/* acquire: pairs with the worker's release ack store, so its
		 * latch load happened before the latch we store below (its
		 * `seen` is older: gang.h I1). release: stronger than needed
		 * (the worker learns it was taken from a failed leave CAS and
		 * reads the token through the latch's acquire); kept because
		 * it costs nothing on x86 (a locked CMPXCHG whatever the order)
		 * and pairs with the leave CAS's acquire. Only one of this CAS
		 * and the worker's leave CAS can win. */
		if (atomic_compare_exchange_strong_explicit(
			    &g->slots[s].ack, &expect, e | ACK_TAKEN,
			    memory_order_acq_rel, memory_order_relaxed))
			mask |= 1u << s;
	}
	/* 2. publish */
	uint32_t tag = ++g->tag;
	if (tag == 0) /* tag 0 is the initial latch: skip it on wrap */
		tag = ++g->tag;
	g->plan = plan;
	if (plan->n_waves)
		deal(g, mask, plan->waves[0].n_chunks);
	atomic_store_explicit(&g->sync, SYNC(tag, 0, 0), memory_order_relaxed);
	/* release: the plan, the deal and sync above are visible to every
	 * worker that acquires this latch. */
	atomic_store_explicit(&g->latch, (uint64_t)tag << 32 | mask,
			      memory_order_release);
	ring(g, &g->doorbell, &g->sleepers);
	/* 3. take part */
	run_waves(g, 0, tag, mask, plan);

	uint32_t changed = mask ^ g->last_mask;
	atomic_fetch_add_explicit(&g->tokens, 1, memory_order_relaxed);
	if (changed && g->tokens > 1) {
		atomic_fetch_add_explicit(&g->latch_changes, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&g->joins, (uint64_t)__builtin_popcount(changed & mask),
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&g->departures,
					  (uint64_t)__builtin_popcount(changed & g->last_mask),
					  memory_order_relaxed);
	}
	g->last_mask = mask;
	return mask;
}

void gang_stats(const gang_t *gc, gang_stats_t *out)
{
	gang_t *g = (gang_t *)gc;
	memset(out, 0, sizeof *out);
	out->tokens = atomic_load(&g->tokens);
	out->latch_changes = atomic_load(&g->latch_changes);
	out->joins = atomic_load(&g->joins);
	out->departures = atomic_load(&g->departures);
	out->wakes = atomic_load(&g->wakes);
	out->n_slots = g->n;
	out->last_mask = LATCH_MASK(atomic_load(&g->latch));
	out->sleepers = atomic_load(&g->sleepers);
	out->raise_denied = atomic_load(&g->raise_denied);
	out->keep_us = (uint32_t)(atomic_load(&g->keep_ns) / 1000);
	out->acquire = atomic_load(&g->acquire);
	for (int i = 0; i < g->n; i++) {
		out->participation[i] = atomic_load(&g->slots[i].participation);
		out->chunks[i] = atomic_load(&g->slots[i].chunks);
		out->cpus[i] = g->slots[i].cpu;
		out->ack_ns[i] = atomic_load(&g->slots[i].ack_ns);
		out->preempted_tokens += atomic_load(&g->slots[i].preempted_tokens);
		out->preemptions += atomic_load(&g->slots[i].preemptions);
	}
}

void gang_hold(gang_t *g, uint32_t mask)
{
	atomic_store_explicit(&g->hold, mask, memory_order_relaxed);
}

void gang_dump(const gang_t *gc, char *buf, size_t cap)
{
	gang_t *g = (gang_t *)gc;
	uint64_t l = atomic_load(&g->latch), sy = atomic_load(&g->sync);
	int n = snprintf(buf, cap,
			 "latch tag=%u mask=%#x sync tag=%u wave=%u arrived=%u "
			 "requested=%#x epoch=%u sleepers=%u bar_sleepers=%u acks=",
			 LATCH_TAG(l), LATCH_MASK(l), SYNC_TAG(sy), SYNC_WAVE(sy),
			 SYNC_COUNT(sy), atomic_load(&g->requested), atomic_load(&g->epoch),
			 atomic_load(&g->sleepers), atomic_load(&g->bar_sleepers));
	for (int i = 0; i < g->n && n > 0 && (size_t)n < cap; i++)
		n += snprintf(buf + n, cap - (size_t)n, "%s%#x", i ? "," : "",
			      atomic_load(&g->slots[i].ack));
	/* each slot's share of the current wave, next..end */
	for (int i = 0; i < g->n && n > 0 && (size_t)n < cap; i++) {
		uint64_t r = atomic_load(&g->slots[i].range);
		n += snprintf(buf + n, cap - (size_t)n, "%s%u..%u", i ? "," : " shares=",
			      RANGE_NEXT(r), RANGE_END(r));
	}
}

void gang_stats_print(const gang_t *g, FILE *f)
{
	gang_stats_t st;
	gang_stats(g, &st);
	fprintf(f, "gang: %llu tokens, %llu latch changes, %llu joins, "
		   "%llu departures, participation",
		(unsigned long long)st.tokens, (unsigned long long)st.latch_changes,
		(unsigned long long)st.joins, (unsigned long long)st.departures);
	for (int i = 0; i < st.n_slots; i++)
		fprintf(f, " cpu%d=%llu", st.cpus[i],
			(unsigned long long)st.participation[i]);
	fputc('\n', f);
}
