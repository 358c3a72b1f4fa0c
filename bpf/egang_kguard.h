/* egang_kguard.h: the in-kernel guard's arithmetic, shared by the BPF
 * scheduler (bpf/egang.bpf.c, which runs it in its callbacks) and the host
 * (tests/test_scx.c checks the rules below without a sched_ext kernel).
 * Pure functions on plain integers: no maps, no helpers.
 *
 * What it measures. The run-queue wait of the gang's threads: from the
 * moment a gang thread becomes runnable (ops.runnable, or ops.enqueue for a
 * thread put back after its slice) to the moment it runs (ops.running).
 * Waits go into a histogram of KG_BUCKETS log-spaced buckets (4 per
 * power of two, so a quantile is known within 19%); every window
 * (krec.kguard_window_ns of bpf_ktime) the first callback past the window's
 * end takes the window (one compare-and-swap), computes its p99 and judges
 * it with kg_judge().
 *
 * The rules (kg_judge), so that the guard neither fires on noise nor
 * oscillates:
 *   R1 hold-off: a window is judged only if the index was the same at its
 *      start and at its end; the first window after any switch is thrown
 *      away (it mixes two policies) and the breach count restarts at 0.
 *   R2 only a record that declares a bound (kguard_wait_ns > 0) is judged;
 *      the safe index (0, the default record) never declares one (policy.c
 *      refuses kguard_* on a record that could be 0: only user records,
 *      appended after the built-ins, may), so the guard has nothing to
 *      fire from once it has fallen back: no oscillation between guarded
 *      records.
 *   R3 a window with fewer than KG_MIN_SAMPLES waits is not judged: it
 *      neither counts as a breach nor resets the count (an idle gang is not
 *      evidence either way).
 *   R4 p99 > bound is a breach; a judged window within the bound resets the
 *      count. After kguard_windows consecutive breaches the guard stores 0
 *      into the index with a compare-and-swap from the breaching index (a
 *      controller's concurrent write wins), counts the fallback and leaves
 *      its reason (index, p99, bound, windows, time).
 *   R5 re-arm: the guard of a record re-arms only when the index changes to
 *      it again (a controller's write); R1 then makes it wait one window,
 *      and it needs kguard_windows fresh breaches to fire again. */
#ifndef EGANG_KGUARD_H
#define EGANG_KGUARD_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/* inlined: a BPF subprogram call next to the tail calls would limit the
 * callers' stack (and the kernel's tail-call-with-subprogram rules) */
#define KG_FN static inline __attribute__((always_inline))

#define KG_BUCKETS 128 /* 4 per power of two: waits up to 2^33 ns */
#define KG_MIN_SAMPLES 16

/* floor(log2(v)) for v >= 1, by halving (the BPF target has no clz) */
KG_FN __u32 kg_log2(__u64 v)
{
	__u32 r = 0;
	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) r += 1;
	return r;
}

/* The bucket of a wait of ns: 4 * (log2 - 1) + the two bits after the
 * leading one (0..3 ns: buckets 0..3 exactly). */
KG_FN __u32 kg_bucket(__u64 ns)
{
	if (ns < 4)
		return (__u32)ns;
	__u32 l = kg_log2(ns);
	__u32 b = 4 * (l - 1) + (__u32)((ns >> (l - 2)) & 3);
	return b < KG_BUCKETS ? b : KG_BUCKETS - 1;
}

/* The largest wait that falls in bucket b (a quantile's upper bound). */
KG_FN __u64 kg_bucket_max(__u32 b)
{
	if (b < 4)
		return b;
	__u32 l = b / 4 + 1, sub = b % 4;
	return ((4ull + sub + 1) << (l - 2)) - 1;
}

/* The guard's state between windows (one per scheduler). */
struct kg_state {
	__u32 index;    /* the index at the start of the window judged next */
	__u32 breaches; /* consecutive breached windows */
};

enum kg_verdict {
	KG_SKIP,     /* not judged (R1, R2, R3) */
	KG_OK,       /* judged, within the bound */
	KG_BREACH,   /* judged, breached, not yet kguard_windows of them */
	KG_FALLBACK, /* the kguard_windows-th consecutive breach: store 0 */
};

/* Judges one window that ends with `index` in force (bound_ns and windows
 * are that record's; bound_ns 0 = no bound), p99_ns over n waits. */
KG_FN enum kg_verdict kg_judge(struct kg_state *s, __u32 index,
				       __u64 bound_ns, __u32 windows,
				       __u64 p99_ns, __u64 n)
{
	if (index != s->index) { /* R1 */
		s->index = index;
		s->breaches = 0;
		return KG_SKIP;
	}
	if (!bound_ns || index == 0) { /* R2 */
		s->breaches = 0;
		return KG_SKIP;
	}
	if (n < KG_MIN_SAMPLES) /* R3 */
		return KG_SKIP;
	if (p99_ns <= bound_ns) { /* R4 */
		s->breaches = 0;
		return KG_OK;
	}
	if (++s->breaches < (windows ? windows : 1))
		return KG_BREACH;
	s->breaches = 0;
	s->index = 0; /* the index it stores; a window under 0 follows (R5) */
	return KG_FALLBACK;
}

#endif
