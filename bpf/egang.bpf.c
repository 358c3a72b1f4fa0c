/* egang's sched_ext scheduler: the policy library in the kernel.
 *
 * What it does. A partial-switch scheduler (SCX_OPS_SWITCH_PARTIAL): it
 * schedules only the tasks user space put in SCHED_EXT (`egang scx exec`,
 * `egang serve --backend scx`): the gang's threads (those of the process
 * whose tgid user space wrote into `gang`) and the tenants egang launches.
 * Its three scheduling callbacks read one integer, the policy index (map
 * `policy_index`, one u32 in a BPF_F_MMAPABLE page that user space maps as
 * the control word's index, so `egang policy set`, a controller or the
 * leader's guard switch the gang and these programs with one store; `egang
 * scx set N` writes it with a map update) and tail-call into one
 * BPF_MAP_TYPE_PROG_ARRAY per callback
 * (`sel_progs`, `enq_progs`, `dsp_progs`), slot = index in egang's policy
 * library. Every slot whose record has a kernel form holds the program of
 * that record's kind (elastic, latency, share = throughput, static); its
 * numbers (CPU sets, slices) are the record's, in `krec[index]`. All of them
 * are loaded and verified before the scheduler attaches; none changes after.
 *
 * Why tail calls must agree. A tail call only works into a program of the
 * caller's type with the caller's attach function prototype (the kernel
 * compares prog type and attach_func_proto when a program enters the array),
 * so each callback has its own array and every program in it is a struct_ops
 * program for the same sched_ext_ops member. libbpf loads a struct_ops
 * program only if some struct_ops map references it, so each kind's three
 * programs sit in a second `.struct_ops.link` map of their own that is
 * loaded but never attached (never registered): it only gives libbpf and the
 * verifier the member each program implements.
 *
 * Inert by construction. bpf_tail_call() into an empty slot or past the
 * array's end does not jump and raises no error: execution continues after
 * the call, where the default action runs (the kernel's idle-CPU selection
 * and one FIFO, DSQ_TENANT, drained after DSQ_GANG, so nothing queued under
 * a previous index is stranded). Not SCX_DSQ_GLOBAL: the kernel consumes
 * the global queue before it calls ops.dispatch, so with CPU-bound tasks
 * always on it the default dispatch never ran and a task left in a
 * policy's queue by the previous index starved until the watchdog ejected
 * the scheduler ("runnable task stall", seen under QEMU). Because a failed tail call is silent,
 * both sides count: each target counts its transfer at entry
 * (`xfer[index][callback]`), each caller counts a fall-through after the
 * call (`fall[min(index, EGANG_SLOTS)][callback]`); the two sums together
 * equal the callbacks run.
 *
 * Kinds (what each is good for and how it fails is in src/policy/policy.h;
 * these are their kernel forms):
 *   elastic  gang threads on their CPUs go first (their own queue, consumed
 *            before the tenants'); a woken gang thread only wakes an idle
 *            CPU: a tenant keeps its slice (polite).
 *   latency  as elastic, but a woken gang thread preempts the tenant on its
 *            CPU at once (SCX_KICK_PREEMPT: the kernel form of acquire
 *            preempt, no SCHED_FIFO needed); tenants get short slices.
 *   share    the record's reserved CPUs serve tenants first and the gang
 *            only when no tenant waits; tenants prefer idle reserved CPUs.
 *            Long slices (throughput).
 *   static   the gang goes first on its K CPUs only; tenants prefer the
 *            other CPUs.
 * The in-kernel guard (egang_kguard.h) runs in ops.runnable, ops.enqueue
 * and ops.running, outside the tail calls: it measures the gang threads'
 * run-queue wait and may store 0 into the index itself. ops.stopping
 * measures the tenants' stints (acquire latency against slices, `scx
 * waits`).
 * Races accepted: the index is read once per callback; a write lands at the
 * next callback on each CPU. The slot number passes to the target through
 * a per-CPU scratch word, safe because a callback runs to its end on one CPU
 * (sched_ext callbacks run with preemption off). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "egang_scx.h"
#include "egang_kguard.h"

char LICENSE[] SEC("license") = "GPL";

/* sched_ext kfuncs of Linux 6.12 (kernel/sched/ext.c) */
extern s32 scx_bpf_create_dsq(u64 dsq_id, s32 node) __ksym;
extern void scx_bpf_dispatch(struct task_struct *p, u64 dsq_id, u64 slice,
			     u64 enq_flags) __ksym;
extern bool scx_bpf_consume(u64 dsq_id) __ksym;
extern s32 scx_bpf_select_cpu_dfl(struct task_struct *p, s32 prev_cpu,
				  u64 wake_flags, bool *is_idle) __ksym;
extern bool scx_bpf_test_and_clear_cpu_idle(s32 cpu) __ksym;
extern void scx_bpf_kick_cpu(s32 cpu, u64 flags) __ksym;
extern s32 scx_bpf_task_cpu(const struct task_struct *p) __ksym;
extern u32 scx_bpf_nr_cpu_ids(void) __ksym;
extern bool bpf_cpumask_test_cpu(u32 cpu, const struct cpumask *cpumask) __ksym;

/* the two queues of the policies (custom DSQ ids) */
#define DSQ_GANG 1
#define DSQ_TENANT 2

/* ---- maps shared with user space (layout in egang_scx.h) ---- */

/* one page that user space maps as the control word's index */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} policy_index SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, EGANG_SLOTS);
	__type(key, u32);
	__type(value, u64);
} first_ns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct egang_kguard);
} kguard SEC(".maps");

/* when a task became runnable / started running (0: not) */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct egang_tstamp);
} kg_stamp SEC(".maps");

/* acquire latency vs tenant stints, cumulative until user space zeroes it */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct egang_acq);
} acq SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} gang SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EGANG_SLOTS);
	__type(key, u32);
	__type(value, struct egang_krec);
} krec SEC(".maps");

/* counters: key = slot * EGANG_CB_COUNT + callback */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EGANG_SLOTS * EGANG_CB_COUNT);
	__type(key, u32);
	__type(value, u64);
} xfer SEC(".maps");

/* slot EGANG_SLOTS counts every index past the array */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, (EGANG_SLOTS + 1) * EGANG_CB_COUNT);
	__type(key, u32);
	__type(value, u64);
} fall SEC(".maps");

/* the slot a tail call was made for, read by the target */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, EGANG_SLOTS);
	__type(key, u32);
	__type(value, u32);
} sel_progs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, EGANG_SLOTS);
	__type(key, u32);
	__type(value, u32);
} enq_progs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, EGANG_SLOTS);
	__type(key, u32);
	__type(value, u32);
} dsp_progs SEC(".maps");

/* why the scheduler stopped, read by `egang scx unload` */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct egang_exit);
} exit_rec SEC(".maps");

/* ---- helpers ---- */

static __always_inline void count(void *map, u32 key)
{
	u64 *v = bpf_map_lookup_elem(map, &key);
	if (v)
		(*v)++;
}

static __always_inline u32 read_index(void)
{
	u32 k = 0;
	u32 *v = bpf_map_lookup_elem(&policy_index, &k);
	u32 idx = v ? *v : 0;
	u32 *s = bpf_map_lookup_elem(&scratch, &k);
	if (s)
		*s = idx;
	return idx;
}

static __always_inline void count_fall(u32 idx, u32 cb)
{
	u32 slot = idx < EGANG_SLOTS ? idx : EGANG_SLOTS;
	count(&fall, slot * EGANG_CB_COUNT + cb);
}

/* In a target: the record of the slot it was called for, transfer counted. */
static __always_inline struct egang_krec *enter(u32 cb)
{
	u32 k = 0;
	u32 *s = bpf_map_lookup_elem(&scratch, &k);
	if (!s)
		return NULL;
	u32 slot = *s;
	if (slot >= EGANG_SLOTS)
		return NULL;
	count(&xfer, slot * EGANG_CB_COUNT + cb);
	/* the first transfer since user space zeroed the slot's word */
	u64 *f = bpf_map_lookup_elem(&first_ns, &slot);
	if (f && !*f)
		*f = bpf_ktime_get_ns();
	return bpf_map_lookup_elem(&krec, &slot);
}

static __always_inline bool is_gang(struct task_struct *p)
{
	u32 k = 0;
	u32 *t = bpf_map_lookup_elem(&gang, &k);
	return t && *t && (u32)p->tgid == *t;
}

static __always_inline bool cpu_in(u64 mask, s32 cpu)
{
	return cpu >= 0 && cpu < EGANG_SCX_CPUS && (mask >> cpu) & 1;
}

/* ---- the policy programs, one triple per kind ---- */

static __always_inline s32 pol_select(struct task_struct *p, s32 prev_cpu,
				      u64 wake_flags, u32 kind)
{
	struct egang_krec *r = enter(EGANG_CB_SELECT);
	if (!r)
		return prev_cpu;
	if (is_gang(p)) {
		/* gang threads are pinned: their CPU is prev_cpu */
		if (cpu_in(r->gang_cpus, prev_cpu) &&
		    scx_bpf_test_and_clear_cpu_idle(prev_cpu))
			scx_bpf_dispatch(p, SCX_DSQ_LOCAL, r->gang_slice_ns, 0);
		return prev_cpu;
	}
	/* a tenant: an idle CPU of its preferred set first */
	if (kind == EGANG_KIND_SHARE || kind == EGANG_KIND_STATIC) {
		u32 n = scx_bpf_nr_cpu_ids();
		for (s32 c = 0; c < 64; c++) {
			if ((u32)c >= n)
				break;
			if (cpu_in(r->tenant_cpus, c) &&
			    bpf_cpumask_test_cpu(c, p->cpus_ptr) &&
			    scx_bpf_test_and_clear_cpu_idle(c)) {
				scx_bpf_dispatch(p, SCX_DSQ_LOCAL, r->tenant_slice_ns, 0);
				return c;
			}
		}
	}
	bool idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);
	if (idle)
		scx_bpf_dispatch(p, SCX_DSQ_LOCAL, r->tenant_slice_ns, 0);
	return cpu;
}

static __always_inline void pol_enqueue(struct task_struct *p, u64 enq_flags,
					u32 kind)
{
	struct egang_krec *r = enter(EGANG_CB_ENQUEUE);
	if (!r) {
		scx_bpf_dispatch(p, DSQ_TENANT, SCX_SLICE_DFL, enq_flags);
		return;
	}
	if (is_gang(p)) {
		s32 cpu = scx_bpf_task_cpu(p);
		if (cpu_in(r->gang_cpus, cpu)) {
			scx_bpf_dispatch(p, DSQ_GANG, r->gang_slice_ns, enq_flags);
			scx_bpf_kick_cpu(cpu, kind == EGANG_KIND_LATENCY ?
					 SCX_KICK_PREEMPT : SCX_KICK_IDLE);
			return;
		}
		/* a gang thread outside the record's CPUs: a tenant's rank */
		scx_bpf_dispatch(p, DSQ_TENANT, r->tenant_slice_ns, enq_flags);
		return;
	}
	scx_bpf_dispatch(p, DSQ_TENANT, r->tenant_slice_ns, enq_flags);
}

static __always_inline void pol_dispatch(s32 cpu, struct task_struct *prev,
					 u32 kind)
{
	struct egang_krec *r = enter(EGANG_CB_DISPATCH);
	if (r && kind == EGANG_KIND_SHARE && cpu_in(r->tenant_cpus, cpu)) {
		if (!scx_bpf_consume(DSQ_TENANT))
			scx_bpf_consume(DSQ_GANG);
		return;
	}
	if (!scx_bpf_consume(DSQ_GANG))
		scx_bpf_consume(DSQ_TENANT);
}

#define EGANG_POLICY(pol, kind)                                                   \
	SEC("struct_ops/" #pol "_select_cpu")                                     \
	s32 BPF_PROG(pol##_select_cpu, struct task_struct *p, s32 prev_cpu,       \
		     u64 wake_flags)                                               \
	{                                                                          \
		return pol_select(p, prev_cpu, wake_flags, kind);                  \
	}                                                                          \
	SEC("struct_ops/" #pol "_enqueue")                                        \
	void BPF_PROG(pol##_enqueue, struct task_struct *p, u64 enq_flags)        \
	{                                                                          \
		pol_enqueue(p, enq_flags, kind);                                   \
	}                                                                          \
	SEC("struct_ops/" #pol "_dispatch")                                       \
	void BPF_PROG(pol##_dispatch, s32 cpu, struct task_struct *prev)          \
	{                                                                          \
		pol_dispatch(cpu, prev, kind);                                     \
	}                                                                          \
	/* never attached: it only makes libbpf load and verify the three */      \
	SEC(".struct_ops.link")                                                    \
	struct sched_ext_ops pol##_shadow = {                                     \
		.select_cpu = (void *)pol##_select_cpu,                           \
		.enqueue = (void *)pol##_enqueue,                                 \
		.dispatch = (void *)pol##_dispatch,                               \
		.name = "egang_" #pol,                                            \
	};

EGANG_POLICY(elastic, EGANG_KIND_ELASTIC)
EGANG_POLICY(latency, EGANG_KIND_LATENCY)
EGANG_POLICY(share, EGANG_KIND_SHARE)
EGANG_POLICY(static_set, EGANG_KIND_STATIC)


/* ---- the in-kernel guard (rules in egang_kguard.h) ---- */

#define KG_WINDOW_DFL_NS 100000000ull /* 100 ms when the record names none */

/* Marks p runnable now (only_unset: unless it already waits). Gang
 * threads only: the bound is on the gang's service. */
static __always_inline void kg_mark(struct task_struct *p, bool only_unset)
{
	if (!is_gang(p))
		return;
	struct egang_tstamp *t = bpf_task_storage_get(&kg_stamp, p, 0,
						      BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t && (!only_unset || !t->runnable_at))
		t->runnable_at = bpf_ktime_get_ns();
}

/* The window's end: the first CPU past it takes it (one compare-and-swap
 * of win_start), computes the p99 of its waits, empties the histogram and
 * judges it (kg_judge); a fallback is a compare-and-swap of the index
 * from the breaching record to 0, so a controller's write in between
 * wins. Races accepted: a wait counted while another CPU empties the
 * histogram may land in either window. */
static __always_inline void kg_window(u64 now)
{
	u32 k = 0;
	struct egang_kguard *g = bpf_map_lookup_elem(&kguard, &k);
	u32 *ip = bpf_map_lookup_elem(&policy_index, &k);
	if (!g || !ip)
		return;
	u64 start = g->win_start;
	if (!start) {
		/* full-barrier CAS (the BPF atomics are): the first window's
		 * start, one CPU wins; it orders nothing else */
		__sync_val_compare_and_swap(&g->win_start, 0, now);
		return;
	}
	u32 idx = *ip;
	struct egang_krec *r = idx < EGANG_SLOTS ? bpf_map_lookup_elem(&krec, &idx) : NULL;
	u64 len = r && r->kguard_window_ns ? r->kguard_window_ns : KG_WINDOW_DFL_NS;
	if (now - start < len)
		return;
	/* the CAS elects the one CPU that ends this window (pairs with the
	 * same CAS on the others); the histogram and state below are then
	 * its alone until the next window's end (races accepted above) */
	if (__sync_val_compare_and_swap(&g->win_start, start, now) != start)
		return; /* another CPU ends this window */
	u64 n = 0;
	for (u32 b = 0; b < EGANG_KG_BUCKETS; b++)
		n += g->hist[b];
	u64 need = n - n / 100; /* nearest rank: ceil(0.99 n) */
	u64 cum = 0, p99 = 0;
	for (u32 b = 0; b < EGANG_KG_BUCKETS; b++) {
		cum += g->hist[b];
		if (n && !p99 && cum >= need)
			p99 = kg_bucket_max(b);
		g->hist[b] = 0;
	}
	struct kg_state st = {.index = g->win_index, .breaches = g->breaches};
	enum kg_verdict v = kg_judge(&st, idx, r ? r->kguard_wait_ns : 0,
				     r ? r->kguard_windows : 0, p99, n);
	g->win_index = st.index;
	g->breaches = st.breaches;
	g->windows++;
	g->last_p99_ns = p99;
	g->last_n = n;
	if (v != KG_SKIP)
		g->judged++;
	if (v == KG_BREACH || v == KG_FALLBACK)
		g->breached++;
	/* the fallback store: a CAS from the breaching index, so a
	 * controller's store in between (user space, through the mapped
	 * page) wins; only the value travels, nothing is ordered with it */
	if (v == KG_FALLBACK && __sync_val_compare_and_swap(ip, idx, 0) == idx) {
		g->fallbacks++;
		g->why_index = idx;
		g->why_windows = r ? r->kguard_windows : 0;
		g->why_p99_ns = p99;
		g->why_bound_ns = r ? r->kguard_wait_ns : 0;
		g->why_at_ns = now;
	}
}

SEC("struct_ops/egang_runnable")
void BPF_PROG(egang_runnable, struct task_struct *p, u64 enq_flags)
{
	kg_mark(p, false);
}

/* A gang thread: its wait since kg_mark into this window's histogram and
 * the cumulative one; a tenant: the start of its stint. */
SEC("struct_ops/egang_running")
void BPF_PROG(egang_running, struct task_struct *p)
{
	u64 now = bpf_ktime_get_ns();
	u32 k = 0;
	bool gang_thread = is_gang(p);
	struct egang_tstamp *t = bpf_task_storage_get(&kg_stamp, p, 0,
		gang_thread ? 0 : BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t && gang_thread && t->runnable_at) {
		u64 wait = now > t->runnable_at ? now - t->runnable_at : 0;
		t->runnable_at = 0;
		struct egang_kguard *g = bpf_map_lookup_elem(&kguard, &k);
		struct egang_acq *a = bpf_map_lookup_elem(&acq, &k);
		u32 b = kg_bucket(wait);
		/* atomic adds: callbacks on every CPU count into one
		 * histogram; counts only, nothing ordered with them */
		if (g && b < EGANG_KG_BUCKETS)
			__sync_fetch_and_add(&g->hist[b], 1);
		if (a && b < EGANG_KG_BUCKETS)
			__sync_fetch_and_add(&a->wait[b], 1);
	} else if (t && !gang_thread) {
		t->running_at = now;
	}
	kg_window(now);
}

/* A tenant leaves its CPU still runnable (its slice ended, or it was
 * preempted): the stint's length, to set against the slice it was given. */
SEC("struct_ops/egang_stopping")
void BPF_PROG(egang_stopping, struct task_struct *p, bool runnable)
{
	if (is_gang(p))
		return;
	struct egang_tstamp *t = bpf_task_storage_get(&kg_stamp, p, 0, 0);
	if (!t || !t->running_at)
		return;
	u64 now = bpf_ktime_get_ns();
	u64 ran = now > t->running_at ? now - t->running_at : 0;
	t->running_at = 0;
	if (!runnable)
		return; /* it blocked: its own choice, not the scheduler's */
	u32 k = 0;
	struct egang_acq *a = bpf_map_lookup_elem(&acq, &k);
	u32 b = kg_bucket(ran);
	if (a && b < EGANG_KG_BUCKETS)
		__sync_fetch_and_add(&a->stint[b], 1); /* a count, as above */
}

/* ---- the scheduler: read the index, tail-call, else the default ---- */

SEC("struct_ops/egang_select_cpu")
s32 BPF_PROG(egang_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	u32 idx = read_index();
	bpf_tail_call(ctx, &sel_progs, idx);
	count_fall(idx, EGANG_CB_SELECT);
	bool idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);
	if (idle)
		scx_bpf_dispatch(p, SCX_DSQ_LOCAL, SCX_SLICE_DFL, 0);
	return cpu;
}

SEC("struct_ops/egang_enqueue")
void BPF_PROG(egang_enqueue, struct task_struct *p, u64 enq_flags)
{
	kg_mark(p, true); /* put back after its slice: it waits from now */
	u32 idx = read_index();
	bpf_tail_call(ctx, &enq_progs, idx);
	count_fall(idx, EGANG_CB_ENQUEUE);
	scx_bpf_dispatch(p, DSQ_TENANT, SCX_SLICE_DFL, enq_flags);
}

SEC("struct_ops/egang_dispatch")
void BPF_PROG(egang_dispatch, s32 cpu, struct task_struct *prev)
{
	u32 idx = read_index();
	bpf_tail_call(ctx, &dsp_progs, idx);
	count_fall(idx, EGANG_CB_DISPATCH);
	/* what a policy queued before the index changed still runs */
	if (!scx_bpf_consume(DSQ_GANG))
		scx_bpf_consume(DSQ_TENANT);
}

/* ---- Gate 1 (AKTS): loaded, verified and JIT-compiled, never attached ----
 * The dispatcher as above without its tail call, and a plain struct_ops
 * program with no index at all, so `egang scx progs` can set their JIT
 * image sizes next to egang_select_cpu's (the cost of the tail call). */
SEC("struct_ops/g1_notail")
s32 BPF_PROG(g1_notail, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	u32 idx = read_index();
	count_fall(idx, EGANG_CB_SELECT);
	bool idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);
	if (idle)
		scx_bpf_dispatch(p, SCX_DSQ_LOCAL, SCX_SLICE_DFL, 0);
	return cpu;
}

SEC("struct_ops/g1_plain")
s32 BPF_PROG(g1_plain, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);
	if (idle)
		scx_bpf_dispatch(p, SCX_DSQ_LOCAL, SCX_SLICE_DFL, 0);
	return cpu;
}

SEC(".struct_ops.link")
struct sched_ext_ops g1_notail_shadow = {
	.select_cpu = (void *)g1_notail,
	.name = "egang_g1_notail",
};

SEC(".struct_ops.link")
struct sched_ext_ops g1_plain_shadow = {
	.select_cpu = (void *)g1_plain,
	.name = "egang_g1_plain",
};

SEC("struct_ops.s/egang_init")
s32 BPF_PROG(egang_init)
{
	s32 rc = scx_bpf_create_dsq(DSQ_GANG, -1);
	if (rc)
		return rc;
	return scx_bpf_create_dsq(DSQ_TENANT, -1);
}

SEC("struct_ops/egang_exit")
void BPF_PROG(egang_exit, struct scx_exit_info *ei)
{
	u32 k = 0;
	struct egang_exit *e = bpf_map_lookup_elem(&exit_rec, &k);
	if (!e)
		return;
	/* kind and code only: the reason strings would need
	 * bpf_probe_read_kernel_str, which libbpf rewrites to the tracing-only
	 * bpf_probe_read_str when its kprobe probe fails (no tracing core in
	 * the test kernel); the kernel logs the reason itself */
	e->kind = ei->kind;
	e->exit_code = ei->exit_code;
}

SEC(".struct_ops.link")
struct sched_ext_ops egang_ops = {
	.select_cpu = (void *)egang_select_cpu,
	.enqueue = (void *)egang_enqueue,
	.dispatch = (void *)egang_dispatch,
	.runnable = (void *)egang_runnable,
	.running = (void *)egang_running,
	.stopping = (void *)egang_stopping,
	.init = (void *)egang_init,
	.exit = (void *)egang_exit,
	.flags = SCX_OPS_SWITCH_PARTIAL,
	.name = "egang",
};
