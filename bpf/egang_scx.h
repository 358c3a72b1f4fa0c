/* egang_scx.h: the layout shared by the BPF scheduler (bpf/egang.bpf.c) and
 * its loader (src/scx/scx.c). Maps:
 *   policy_index  ARRAY[1] u32       the index in force (one map update)
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
	__u32 pad;
};

struct egang_exit {
	__s64 kind; /* enum scx_exit_kind: 0 none, 1 done, 2 unregistered... */
	__s64 exit_code;
};

#endif
