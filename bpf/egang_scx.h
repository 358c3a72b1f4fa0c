/* egang_scx.h: the layout shared by the BPF scheduler (bpf/egang.bpf.c) and
 * its loader (src/scx/scx.c). Maps:
 *   policy_index  ARRAY[1] u32, BPF_F_MMAPABLE: the index in force. User
 *                 space maps its page (scx_map_index) and the control word
 *                 uses it as its index: a switch is one store for the
 *                 gang's leader and for these programs
 *                 (doc/ARCHITECTURE.md "The sched_ext backend")
 *   first_ns      ARRAY[EGANG_SLOTS] u64, BPF_F_MMAPABLE: bpf_ktime (=
 *                 CLOCK_MONOTONIC) of a slot's first transfer since user
 *                 space zeroed it (the store-to-first-transfer figure)
 *   kguard        ARRAY[1] struct egang_kguard: the in-kernel guard
 *                 (egang_kguard.h) and its reason
 *   kg_stamp      TASK_STORAGE struct egang_tstamp: when a task became
 *                 runnable / started running
 *   acq           ARRAY[1] struct egang_acq: cumulative histograms of the
 *                 gang's run-queue waits (its acquire latency) and of the
 *                 tenants' stints; user space zeroes it to start a phase
 *   gang          ARRAY[1] u32       tgid whose threads are the gang
 *   krec          ARRAY[EGANG_SLOTS] struct egang_krec, by library index
 *   xfer          PERCPU_ARRAY[EGANG_SLOTS * EGANG_CB_COUNT] u64 transfers,
 *                 key slot * EGANG_CB_COUNT + callback (counted in targets)
 *   fall          PERCPU_ARRAY[(EGANG_SLOTS + 1) * EGANG_CB_COUNT] u64
 *                 fall-throughs (counted by the callers after the tail
 *                 call; slot EGANG_SLOTS = every index past the array)
 *   exit_rec      ARRAY[1] struct egang_exit: why the scheduler stopped
 *   sel_progs, enq_progs, dsp_progs   PROG_ARRAY[EGANG_SLOTS], one per
 *                 callback, slot = library index
 * Pinned under EGANG_SCX_PIN by `egang scx load`. */
#ifndef EGANG_SCX_H
#define EGANG_SCX_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define EGANG_SLOTS 128 /* = POLICY_LIB_MAX: one slot per library record */
#define EGANG_SCX_PIN "/sys/fs/bpf/egang"
/* CPUs 0..EGANG_SCX_CPUS-1 only: a record's CPU sets (gang_cpus,
 * tenant_cpus) are one __u64 each. scx_load refuses a gang on a CPU
 * beyond (scx_check_cpus). To lift it: a bpf_cpumask kptr per record. */
#define EGANG_SCX_CPUS 64

enum egang_cb { EGANG_CB_SELECT, EGANG_CB_ENQUEUE, EGANG_CB_DISPATCH, EGANG_CB_COUNT };

enum egang_kind {
	EGANG_KIND_NONE, /* no kernel form: the slot stays empty */
	EGANG_KIND_ELASTIC,
	EGANG_KIND_LATENCY,
	EGANG_KIND_SHARE,
	EGANG_KIND_STATIC,
	EGANG_KIND_COUNT
};

/* A library record's kernel form (src/scx/scx.c: scx_krec_from_policy). */
struct egang_krec {
	__u64 gang_cpus;      /* CPUs where the gang's threads go first */
	__u64 tenant_cpus;    /* CPUs tenants prefer (share: serve them first) */
	__u64 gang_slice_ns;
	__u64 tenant_slice_ns;
	__u32 kind;           /* enum egang_kind */
	/* the in-kernel guard (egang_kguard.h): 0 = none */
	__u32 kguard_windows;     /* consecutive breached windows to fall back */
	__u64 kguard_wait_ns;     /* bound on the gang's run-queue wait p99 */
	__u64 kguard_window_ns;   /* window length */
};

#define EGANG_KG_BUCKETS 128 /* = KG_BUCKETS */

/* The in-kernel guard's state and what it did (one per scheduler). */
struct egang_kguard {
	__u64 win_start;          /* bpf_ktime of this window's start */
	__u32 win_index;          /* kg_state.index */
	__u32 breaches;           /* kg_state.breaches */
	__u64 windows;            /* windows ended */
	__u64 judged, breached;   /* windows judged, breached */
	__u64 fallbacks;          /* times the guard stored 0 */
	__u64 last_p99_ns, last_n;/* the last window's p99 and its waits */
	/* the reason of the last fallback */
	__u32 why_index, why_windows;
	__u64 why_p99_ns, why_bound_ns, why_at_ns;
	__u64 hist[EGANG_KG_BUCKETS]; /* this window's waits */
};

struct egang_exit {
	__s64 kind; /* enum scx_exit_kind: 0 none, 1 done, 2 unregistered... */
	__s64 exit_code;
};

/* Per task (task storage): 0 = not waiting / not running. */
struct egang_tstamp {
	__u64 runnable_at; /* gang threads: became runnable (kg_mark) */
	__u64 running_at;  /* tenants: started running */
};

/* Acquire latency against tenant stints (polite vs preempt; buckets as
 * egang_kguard.h's). */
struct egang_acq {
	__u64 wait[EGANG_KG_BUCKETS];  /* gang: runnable -> running */
	__u64 stint[EGANG_KG_BUCKETS]; /* tenants: running -> stopping while
					  still runnable (slice end or preempted) */
};

#endif
