/* scx: the sched_ext backend's loader (bpf/egang.bpf.c is the scheduler,
 * bpf/egang_scx.h the layout both share).
 *
 * `scx_load` opens the bpftool skeleton, loads and verifies every program
 * (the scheduler's callbacks and every policy kind's), fills the kernel
 * records and the three tail-call arrays from the policy library, pins the
 * maps and then attaches the struct_ops link and pins it too, all under
 * EGANG_SCX_PIN (/sys/fs/bpf/egang): the scheduler outlives the command
 * that loaded it, and `status`, `set`, `unload` are separate processes that
 * open the pins. The prog arrays must stay pinned: the kernel empties a
 * PROG_ARRAY when its last user-space reference (fd or pin) goes, so an
 * unpinned array would make every index fall through.
 *
 * Built only with `make SCX=1` (libbpf >= 1.4, bpftool, clang for the bpf
 * target, a vmlinux BTF that has sched_ext); otherwise every call below
 * except scx_krec_from_policy fails with "this build has no sched_ext
 * support" and scx_built() is false. */
#ifndef EGANG_SCX_SCX_H
#define EGANG_SCX_SCX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "../../bpf/egang_scx.h"
#include "policy/policy.h"

#define SCHED_EXT_POLICY 7 /* SCHED_EXT in include/uapi/linux/sched.h */

/* True when this binary carries the BPF scheduler. */
bool scx_built(void);
/* 0 when it does; else -1 + err_get(): "this build has no sched_ext
 * support (rebuild with `make SCX=1`: ...)", the one refusal. */
int scx_require(void);

/* The kernel form of record p on a gang whose slot i runs on cpus[i]
 * (n slots): kind, CPU masks, slices. kind EGANG_KIND_NONE (a polite knee
 * record without reserved cores: all it adds is a width that user space
 * measures) leaves the slot empty. */
void scx_krec_from_policy(const policy_t *p, const int *cpus, int n,
			  struct egang_krec *out);
const char *scx_kind_name(uint32_t kind);
/* 0 when every cpus[0..n) has a bit in a record's CPU sets (below
 * EGANG_SCX_CPUS); -1 with a message naming the limit otherwise. */
int scx_check_cpus(const int *cpus, int n);

/* /sys/kernel/sched_ext/state into buf ("disabled", "enabled", ...);
 * -1 + err_get() when the kernel has no sched_ext. */
int scx_state(char *buf, size_t n);
/* /sys/kernel/sched_ext/root/ops into buf ("" when none). */
int scx_root_ops(char *buf, size_t n);

/* Loads, verifies, fills, pins and attaches (above) with `index` in force;
 * 0, or -1 + err_get() (a CPU beyond EGANG_SCX_CPUS included). */
int scx_load(const policy_lib_t *lib, const int *cpus, int n, uint32_t index);
/* Detaches the pinned scheduler, waits for sched_ext to be disabled (5 s at
 * most), removes the pins; *ex (if not NULL) gets the exit record. */
int scx_unload(struct egang_exit *ex);
/* true when egang's scheduler is pinned (loaded by scx_load). */
bool scx_loaded(void);

/* One map update of the pinned index (the switch); *ns (if not NULL) gets
 * the update's duration. Any value is accepted: the guard is the caller's. */
int scx_set_index(uint32_t index, uint64_t *ns);
/* Names tgid's threads the gang (0: none). */
int scx_set_gang(uint32_t tgid);

typedef struct scx_counts {
	uint32_t index, gang;
	struct egang_krec krec[EGANG_SLOTS];
	uint64_t xfer[EGANG_SLOTS][EGANG_CB_COUNT];     /* summed over CPUs */
	uint64_t fall[EGANG_SLOTS + 1][EGANG_CB_COUNT]; /* [EGANG_SLOTS]: past the end */
} scx_counts_t;
/* Reads the pinned maps. */
int scx_read(scx_counts_t *c);

/* `egang scx status`: sched_ext's state, the ops, whether egang's scheduler
 * is loaded and, when it is, the index, the gang and one line per slot
 * (name from lib, kind, transfers, fall-throughs, per callback), the
 * out-of-range line always; key=value lines to out. 0, or -1 + err_get(). */
int scx_print_status(const policy_lib_t *lib, FILE *out);

/* The index `egang scx set P` writes (the user-space guard): P names a
 * record of lib (on a gang over cpus[0..n)) that has a kernel form; with
 * force, any record or any number 0..UINT32_MAX (inert by construction).
 * 0, or -1 + err_get(). */
int scx_index_of(const policy_lib_t *lib, const int *cpus, int n,
		 const char *p, bool force, uint32_t *out);

/* The name of an exit record's kind (enum scx_exit_kind), "?" if unknown. */
const char *scx_exit_name(int64_t kind);

/* ---- one index (doc/ARCHITECTURE.md "The sched_ext backend") ----
 * The loaded scheduler's index as a word of this process's memory (the
 * BPF_F_MMAPABLE policy_index map's page, mapped once and kept for the
 * life of the process), or NULL when no scheduler is loaded (or this build
 * has none). The CLI gives it to control_set_index_provider, so the control
 * word's index IS this word: `policy set`, the controllers and the leader's
 * guard write it with one store, the leader and the BPF callbacks read it. */
_Atomic uint32_t *scx_index_page(void);

/* The pinned policy_index map as a descriptor (for repeated updates
 * without an open each: bench/scx_first.h); close() it. -1 + err_get(). */
int scx_index_open(void);
/* One map update of the index through fd (from scx_index_open); 0, or -1 +
 * err_get(). */
int scx_index_update(int fd, uint32_t index);

/* The scheduler's first-transfer stamps (first_ns[slot]: the bpf_ktime of
 * the first callback that transferred a task into slot since user space
 * zeroed it; EGANG_SLOTS words) mapped into this process; NULL + err_get().
 * Unmap with scx_first_ns_unmap (NULL is ignored). */
_Atomic uint64_t *scx_first_ns_map(void);
void scx_first_ns_unmap(_Atomic uint64_t *first);

/* Every loaded struct_ops program (egang's and the policies'): id, name
 * (15 characters, the kernel's cut), JIT image bytes, translated bytes,
 * instructions verified; what `bpftool prog show` reads (bpf_prog_info).
 * The Gate 1 variants (g1_notail, g1_plain) are freed once loaded and
 * measured: `egang scx load` prints their sizes ("scx: gate1 ..."). */
int scx_print_progs(FILE *out);

/* The gang's acquire latency (runnable -> running) and the tenants'
 * stints (running -> stopping while runnable) since the last reset; with
 * reset, zeroes them after reading. */
int scx_acq(struct egang_acq *a, bool reset);
/* "gang_wait n=N p10_us=.. p50_us=.. p90_us=.. p99_us=.. max_us=.." and
 * the same for tenant_stint (bucket upper bounds: within 25%). */
void scx_print_acq(const struct egang_acq *a, FILE *out);

/* The in-kernel guard's counters and reason (bpf/egang_kguard.h). */
int scx_read_kguard(struct egang_kguard *g);
/* Its key=value lines (kguard_*; kguard_reason= once it has fallen back). */
void scx_print_kguard(const struct egang_kguard *g, const policy_lib_t *lib,
		      FILE *out);

/* Puts thread (or process) tid in SCHED_EXT with sched_setattr(2); 0 = the
 * caller. Threads it creates afterwards inherit the class. */
int scx_enter(pid_t tid);
/* Runs cmd (cmd[0] looked up on PATH, NULL-terminated) in SCHED_EXT in
 * place of this process; with gang, its threads are the gang the policies
 * serve (scx_set_gang). Returns only when it failed, with err_get() saying
 * why: SCX_EXEC_NOT_FOUND when cmd[0] was not found (bad input), -1 when
 * any other step failed (no sched_ext, no scheduler loaded for gang, an
 * exec error other than ENOENT: a runtime failure). */
#define SCX_EXEC_NOT_FOUND (-2)
int scx_exec(char *const cmd[], bool gang);

#endif
