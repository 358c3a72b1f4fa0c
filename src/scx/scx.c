/* scx: the sched_ext backend's loader (scx.h). */
#include "scx/scx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base.h"
#include "../../bpf/egang_kguard.h"

/* ---- the kernel form of a record (always built: pure, unit-tested) ---- */

#define SLICE_GANG_NS 20000000ull      /* 20 ms: SCX_SLICE_DFL */
#define SLICE_SHORT_NS 1000000ull      /* latency: tenants yield within 1 ms */
#define SLICE_ELASTIC_NS 5000000ull    /* elastic, static: 5 ms */
#define SLICE_THROUGHPUT_NS 20000000ull

/* CPUs at or beyond EGANG_SCX_CPUS have no bit: scx_load refuses them. */
static uint64_t cpu_mask(uint32_t slots, const int *cpus, int n)
{
	uint64_t m = 0;
	for (int i = 0; i < n; i++)
		if ((slots >> i) & 1 && cpus[i] >= 0 && cpus[i] < EGANG_SCX_CPUS)
			m |= 1ull << cpus[i];
	return m;
}

int scx_check_cpus(const int *cpus, int n)
{
	for (int i = 0; i < n; i++)
		if (cpus[i] < 0 || cpus[i] >= EGANG_SCX_CPUS)
			return err_set("scx: CPU %d is beyond the sched_ext backend's "
				       "limit of %d (EGANG_SCX_CPUS: its CPU sets are "
				       "64 bits)", cpus[i], EGANG_SCX_CPUS - 1);
	return 0;
}

void scx_krec_from_policy(const policy_t *p, const int *cpus, int n,
			  struct egang_krec *out)
{
	memset(out, 0, sizeof *out);
	uint32_t all = n >= 32 ? 0xffffffffu : (1u << n) - 1;
	/* the in-kernel guard's bound (bpf/egang_kguard.h) */
	out->kguard_wait_ns = (uint64_t)p->kguard_wait_p99_us * 1000;
	out->kguard_windows = p->kguard_windows;
	out->kguard_window_ns = (uint64_t)p->kguard_window_ms * 1000000;
	/* A knee record's width is measured and capped in user space; if it
	 * asks nothing else of the kernel (polite, no reserved cores) its slot
	 * stays empty: the default scheduling is already what it needs. A knee
	 * record that preempts (latency) has a kernel form. */
	if (p->width == WIDTH_KNEE && p->acquire != GANG_ACQUIRE_PREEMPT &&
	    !p->reserved_mask) {
		memset(out, 0, sizeof *out);
		out->kind = EGANG_KIND_NONE;
		return;
	}
	uint32_t gang = p->width == WIDTH_STATIC ? p->static_mask
						 : all & ~p->reserved_mask;
	uint32_t tenant = p->reserved_mask ? p->reserved_mask
		: p->width == WIDTH_STATIC ? all & ~p->static_mask : 0;
	out->gang_cpus = cpu_mask(gang, cpus, n);
	out->tenant_cpus = cpu_mask(tenant, cpus, n);
	out->gang_slice_ns = SLICE_GANG_NS;
	if (p->acquire == GANG_ACQUIRE_PREEMPT) {
		out->kind = EGANG_KIND_LATENCY;
		out->tenant_slice_ns = SLICE_SHORT_NS;
	} else if (p->reserved_mask) {
		out->kind = EGANG_KIND_SHARE;
		out->tenant_slice_ns = SLICE_THROUGHPUT_NS;
	} else if (p->width == WIDTH_STATIC) {
		out->kind = EGANG_KIND_STATIC;
		out->tenant_slice_ns = SLICE_ELASTIC_NS;
	} else {
		out->kind = EGANG_KIND_ELASTIC;
		out->tenant_slice_ns = SLICE_ELASTIC_NS;
	}
}

const char *scx_kind_name(uint32_t kind)
{
	static const char *const names[EGANG_KIND_COUNT] = {
		[EGANG_KIND_NONE] = "none", [EGANG_KIND_ELASTIC] = "elastic",
		[EGANG_KIND_LATENCY] = "latency", [EGANG_KIND_SHARE] = "share",
		[EGANG_KIND_STATIC] = "static"};
	return kind < EGANG_KIND_COUNT ? names[kind] : "?";
}

/* ---- sysfs state ---- */

static int read_line(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, (int)n, f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

int scx_state(char *buf, size_t n)
{
	if (read_line("/sys/kernel/sched_ext/state", buf, n) < 0)
		return err_set("this kernel has no sched_ext (/sys/kernel/sched_ext/"
			       "state: %s; needs Linux 6.12+ with "
			       "CONFIG_SCHED_CLASS_EXT=y)", strerror(errno));
	return 0;
}

int scx_root_ops(char *buf, size_t n)
{
	if (read_line("/sys/kernel/sched_ext/root/ops", buf, n) < 0)
		buf[0] = 0;
	return 0;
}

/* sched_setattr(2)'s argument, first version (SCHED_ATTR_SIZE_VER0 = 48):
 * glibc 2.36 has no wrapper, so the layout is the kernel's uapi. */
struct egang_sched_attr {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
};

int scx_enter(pid_t tid)
{
	struct egang_sched_attr a = {.size = sizeof a, .sched_policy = SCHED_EXT_POLICY};
	if (syscall(SYS_sched_setattr, tid, &a, 0) < 0) {
		if (errno == EINVAL)
			return err_set("sched_setattr(SCHED_EXT): %s (no sched_ext "
				       "in this kernel?)", strerror(errno));
		return err_sys("sched_setattr(SCHED_EXT)");
	}
	return 0;
}

int scx_exec(char *const cmd[], bool gang)
{
	if (scx_enter(0) < 0 || (gang && scx_set_gang((uint32_t)getpid()) < 0))
		return -1;
	execvp(cmd[0], cmd);
	int e = errno;
	err_set("%s: %s", cmd[0], strerror(e));
	return e == ENOENT ? SCX_EXEC_NOT_FOUND : -1;
}

/* enum scx_exit_kind (kernel/sched/ext.c, Linux 6.12) */
const char *scx_exit_name(int64_t kind)
{
	switch (kind) {
	case 0: return "none";
	case 1: return "done";
	case 64: return "unregistered by user space";
	case 65: return "unregistered by BPF";
	case 66: return "unregistered by the kernel";
	case 67: return "sysrq";
	case 1024: return "error";
	case 1025: return "error raised by BPF";
	case 1026: return "runnable task stall";
	default: return "?";
	}
}

/* The q-quantile of a bucket histogram (nearest rank, the bucket's upper
 * bound, egang_kguard.h), 0 when empty; *n gets the count. */
static uint64_t hist_quantile(const __u64 *h, double q, uint64_t *n)
{
	uint64_t t = 0, c = 0;
	for (int b = 0; b < KG_BUCKETS; b++)
		t += h[b];
	*n = t;
	if (!t)
		return 0;
	uint64_t need = (uint64_t)((double)t * q);
	if ((double)need < (double)t * q)
		need++;
	if (!need)
		need = 1;
	for (int b = 0; b < KG_BUCKETS; b++)
		if ((c += h[b]) >= need)
			return kg_bucket_max((uint32_t)b);
	return kg_bucket_max(KG_BUCKETS - 1);
}

void scx_print_acq(const struct egang_acq *a, FILE *out)
{
	static const double qs[] = {0.1, 0.5, 0.9, 0.99, 1.0};
	static const char *const qn[] = {"p10", "p50", "p90", "p99", "max"};
	const __u64 *h[2] = {a->wait, a->stint};
	const char *what[2] = {"gang_wait", "tenant_stint"};
	for (int i = 0; i < 2; i++) {
		uint64_t n;
		hist_quantile(h[i], 0.5, &n);
		fprintf(out, "%s n=%llu", what[i], (unsigned long long)n);
		for (int k = 0; k < 5; k++)
			fprintf(out, " %s_us=%.1f", qn[k],
				(double)hist_quantile(h[i], qs[k], &n) / 1e3);
		fputc('\n', out);
	}
}

void scx_print_kguard(const struct egang_kguard *g, const policy_lib_t *lib,
		      FILE *out)
{
	fprintf(out, "kguard_windows=%llu\nkguard_judged=%llu\nkguard_breached=%llu\n"
		"kguard_breaches_now=%u\nkguard_last_p99_us=%.1f\nkguard_last_waits=%llu\n"
		"kguard_fallbacks=%llu\n", (unsigned long long)g->windows,
		(unsigned long long)g->judged, (unsigned long long)g->breached,
		g->breaches, (double)g->last_p99_ns / 1e3,
		(unsigned long long)g->last_n, (unsigned long long)g->fallbacks);
	if (g->fallbacks)
		fprintf(out, "kguard_reason=index %u (%s): run-queue wait p99 "
			"%.1f us > bound %.1f us in %u consecutive windows; the "
			"kernel stored index 0\n", g->why_index,
			lib && g->why_index < (uint32_t)lib->n
				? lib->rec[g->why_index].name : "?",
			(double)g->why_p99_ns / 1e3, (double)g->why_bound_ns / 1e3,
			g->why_windows);
}

int scx_print_status(const policy_lib_t *lib, FILE *out)
{
	char state[64], ops[128];
	if (scx_state(state, sizeof state) < 0)
		return -1;
	scx_root_ops(ops, sizeof ops);
	fprintf(out, "state=%s\nops=%s\nloaded=%s\n", state, ops,
		scx_loaded() ? "yes" : "no");
	if (!scx_loaded())
		return 0;
	static scx_counts_t c;
	if (scx_read(&c) < 0)
		return -1;
	fprintf(out, "index=%u\ngang_tgid=%u\n", c.index, c.gang);
	uint64_t tx = 0, tf = 0;
	for (int s = 0; s <= EGANG_SLOTS; s++) {
		uint64_t x = 0, f = 0;
		for (int cb = 0; cb < EGANG_CB_COUNT; cb++) {
			x += s < EGANG_SLOTS ? c.xfer[s][cb] : 0;
			f += c.fall[s][cb];
		}
		tx += x;
		tf += f;
		bool populated = s < EGANG_SLOTS && c.krec[s].kind != EGANG_KIND_NONE;
		/* the out-of-range line always: scripts read its count */
		if (!populated && !x && !f && !(s < lib->n) && s < EGANG_SLOTS)
			continue;
		if (s == EGANG_SLOTS)
			fprintf(out, "slot=out_of_range transfers=0 fallthroughs=%llu\n",
				(unsigned long long)f);
		else
			fprintf(out, "slot=%d name=%s kind=%s transfers=%llu "
				"fallthroughs=%llu "
				"select=%llu enqueue=%llu dispatch=%llu\n", s,
				s < lib->n ? lib->rec[s].name : "-",
				scx_kind_name(c.krec[s].kind), (unsigned long long)x,
				(unsigned long long)f,
				(unsigned long long)(c.xfer[s][0] + c.fall[s][0]),
				(unsigned long long)(c.xfer[s][1] + c.fall[s][1]),
				(unsigned long long)(c.xfer[s][2] + c.fall[s][2]));
	}
	fprintf(out, "transfers=%llu\nfallthroughs=%llu\n", (unsigned long long)tx,
		(unsigned long long)tf);
	struct egang_kguard g;
	if (scx_read_kguard(&g) < 0)
		return -1;
	scx_print_kguard(&g, lib, out);
	return 0;
}

int scx_index_of(const policy_lib_t *lib, const int *cpus, int n,
		 const char *p, bool force, uint32_t *out)
{
	int idx = policy_lib_find(lib, p);
	if (idx >= 0) {
		struct egang_krec r;
		scx_krec_from_policy(&lib->rec[idx], cpus, n, &r);
		if (r.kind == EGANG_KIND_NONE && !force)
			return err_set("'%s' (index %d) has no kernel form (its width "
				       "is measured in user space); --force writes "
				       "it anyway (falls through)", lib->rec[idx].name,
				       idx);
		*out = (uint32_t)idx;
		return 0;
	}
	if (!force)
		return err_set("'%s' names no record (0..%d or a name; --force "
			       "writes any index, inert)", p, lib->n - 1);
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 0);
	if (!*p || *end || errno || *p == '-' || v > UINT32_MAX)
		return err_set("'%s' is not an integer in [0, %u]", p, UINT32_MAX);
	*out = (uint32_t)v;
	return 0;
}

#if EGANG_SCX
/* ==== the loader (make SCX=1) ==== */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "egang.skel.h"

bool scx_built(void) { return true; }
int scx_require(void) { return 0; }

static const char *const pin_names[] = {
	"policy_index", "gang", "krec", "xfer", "fall", "exit_rec",
	"sel_progs", "enq_progs", "dsp_progs", "first_ns", "kguard", "acq"};

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* warnings carry the verifier's log when a program is refused */
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int pin_path(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", EGANG_SCX_PIN, name);
	return 0;
}

static int pin_open(const char *name)
{
	char path[256];
	pin_path(path, sizeof path, name);
	int fd = bpf_obj_get(path);
	if (fd < 0)
		return err_set("%s: %s (is egang's scheduler loaded? egang scx load)",
			       path, strerror(errno));
	return fd;
}

static void unpin_all(void)
{
	char path[256];
	for (size_t i = 0; i < EG_ARRAY_LEN(pin_names); i++) {
		pin_path(path, sizeof path, pin_names[i]);
		unlink(path);
	}
	pin_path(path, sizeof path, "link");
	unlink(path);
	rmdir(EGANG_SCX_PIN);
}

bool scx_loaded(void)
{
	char path[256];
	pin_path(path, sizeof path, "link");
	return access(path, F_OK) == 0;
}

static struct bpf_map *map_by_name(struct egang_bpf *s, const char *name)
{
	return bpf_object__find_map_by_name(s->obj, name);
}

/* What must hold before a load: sched_ext idle, a BPF filesystem, and no
 * scheduler of ours pinned (the pin folder is made here). */
static int load_check(void)
{
	char state[64], ops[128];
	if (scx_state(state, sizeof state) < 0)
		return -1;
	if (strcmp(state, "disabled")) {
		scx_root_ops(ops, sizeof ops);
		return err_set("sched_ext is %s (scheduler '%s'): unload it first%s",
			       state, ops, scx_loaded() ? " (egang scx unload)" : "");
	}
	if (access("/sys/fs/bpf", W_OK) < 0)
		return err_set("/sys/fs/bpf: %s (mount -t bpf bpf /sys/fs/bpf)",
			       strerror(errno));
	if (mkdir(EGANG_SCX_PIN, 0700) < 0) {
		if (errno == EEXIST)
			return err_set("%s exists: a scheduler is pinned (egang scx "
				       "unload)", EGANG_SCX_PIN);
		return err_set("mkdir %s: %s (is /sys/fs/bpf a BPF filesystem? "
			       "mount -t bpf bpf /sys/fs/bpf)", EGANG_SCX_PIN,
			       strerror(errno));
	}
	return 0;
}

static void gate1_line(const char *name, int fd)
{
	struct bpf_prog_info info;
	uint32_t len = sizeof info;
	memset(&info, 0, sizeof info);
	if (!bpf_prog_get_info_by_fd(fd, &info, &len))
		log_info("scx: gate1 %s jited_bytes=%u xlated_bytes=%u "
			 "verified_insns=%u", name, info.jited_prog_len,
			 info.xlated_prog_len, info.verified_insns);
}

/* Gate 1 (AKTS): the JIT images of the dispatcher with its tail call,
 * without it, a plain struct_ops program, and the XDP control: the
 * smallest XDP program (return XDP_PASS), loaded, never attached. The two
 * variants are freed with the skeleton (nothing references them), so the
 * sizes are read now. */
static void gate1_report(struct egang_bpf *s)
{
	struct bpf_program *g1[3] = {s->progs.egang_select_cpu, s->progs.g1_notail,
				     s->progs.g1_plain};
	for (int i = 0; i < 3; i++)
		gate1_line(bpf_program__name(g1[i]), bpf_program__fd(g1[i]));
	const struct bpf_insn xdp[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
		 .imm = XDP_PASS},
		{.code = BPF_JMP | BPF_EXIT},
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "g1_xdp", "GPL", xdp,
			       EG_ARRAY_LEN(xdp), NULL);
	if (fd < 0) {
		log_info("scx: gate1 g1_xdp not loaded: %s (a kernel without "
			 "CONFIG_NET?)", strerror(errno));
		return;
	}
	gate1_line("g1_xdp", fd);
	close(fd);
}

/* Fills the records and each record's three tail-call slots with its
 * kind's programs, and the index. */
static int load_fill(struct egang_bpf *s, const policy_lib_t *lib,
		     const int *cpus, int n, uint32_t index)
{
	struct bpf_program *progs[EGANG_KIND_COUNT][EGANG_CB_COUNT] = {
		[EGANG_KIND_ELASTIC] = {s->progs.elastic_select_cpu,
					s->progs.elastic_enqueue, s->progs.elastic_dispatch},
		[EGANG_KIND_LATENCY] = {s->progs.latency_select_cpu,
					s->progs.latency_enqueue, s->progs.latency_dispatch},
		[EGANG_KIND_SHARE] = {s->progs.share_select_cpu, s->progs.share_enqueue,
				      s->progs.share_dispatch},
		[EGANG_KIND_STATIC] = {s->progs.static_set_select_cpu,
				       s->progs.static_set_enqueue,
				       s->progs.static_set_dispatch},
	};
	int arrays[EGANG_CB_COUNT] = {bpf_map__fd(s->maps.sel_progs),
				      bpf_map__fd(s->maps.enq_progs),
				      bpf_map__fd(s->maps.dsp_progs)};
	for (int i = 0; i < lib->n && i < EGANG_SLOTS; i++) {
		uint32_t key = (uint32_t)i;
		struct egang_krec r;
		scx_krec_from_policy(&lib->rec[i], cpus, n, &r);
		if (bpf_map_update_elem(bpf_map__fd(s->maps.krec), &key, &r, BPF_ANY))
			return err_sys("bpf_map_update_elem(krec)");
		if (r.kind == EGANG_KIND_NONE)
			continue;
		for (int cb = 0; cb < EGANG_CB_COUNT; cb++) {
			int fd = bpf_program__fd(progs[r.kind][cb]);
			if (bpf_map_update_elem(arrays[cb], &key, &fd, BPF_ANY))
				return err_set("%s: slot %d (%s) refused by the "
					       "tail-call array: %s", lib->rec[i].name,
					       i, scx_kind_name(r.kind), strerror(errno));
		}
	}
	uint32_t zero = 0;
	if (bpf_map_update_elem(bpf_map__fd(s->maps.policy_index), &zero, &index, BPF_ANY))
		return err_sys("bpf_map_update_elem(policy_index)");
	return 0;
}

/* Pins the maps, attaches the scheduler and pins its link (the pin keeps
 * it attached after this process). */
static int load_attach(struct egang_bpf *s)
{
	char path[256];
	for (size_t i = 0; i < EG_ARRAY_LEN(pin_names); i++) {
		pin_path(path, sizeof path, pin_names[i]);
		if (bpf_map__pin(map_by_name(s, pin_names[i]), path))
			return err_set("pinning %s: %s", path, strerror(errno));
	}
	struct bpf_link *link = bpf_map__attach_struct_ops(s->maps.egang_ops);
	if (!link)
		return err_set("attaching the scheduler: %s", strerror(errno));
	pin_path(path, sizeof path, "link");
	if (bpf_link__pin(link, path)) {
		err_set("pinning %s: %s", path, strerror(errno));
		bpf_link__destroy(link);
		return -1;
	}
	bpf_link__disconnect(link);
	bpf_link__destroy(link);
	return 0;
}

int scx_load(const policy_lib_t *lib, const int *cpus, int n, uint32_t index)
{
	if (scx_check_cpus(cpus, n) < 0 || load_check() < 0)
		return -1;
	libbpf_set_print(libbpf_quiet);
	uint64_t t_open = time_now_ns();
	struct egang_bpf *s = egang_bpf__open();
	if (!s) {
		err_set("opening the BPF object: %s", strerror(errno));
		unpin_all();
		return -1;
	}
	/* every program, the policies' included, is verified here */
	uint64_t t_load = time_now_ns(), t_loaded = 0, t_fill = 0;
	int rc = -1;
	if (egang_bpf__load(s)) {
		err_set("loading the BPF scheduler: %s (the verifier's log is above)",
			strerror(errno));
	} else {
		t_loaded = time_now_ns();
		gate1_report(s);
		t_fill = time_now_ns();
		rc = load_fill(s, lib, cpus, n, index) < 0 ? -1 : load_attach(s);
	}
	egang_bpf__destroy(s);
	if (rc < 0) {
		unpin_all();
		return -1;
	}
	/* the code path's cost (AKTS 4.1): verify + JIT of every program */
	log_info("scx: open %.1f ms, load (verify + JIT of every program) %.1f ms, "
		 "fill + pin + attach %.1f ms", (double)(t_load - t_open) / 1e6,
		 (double)(t_loaded - t_load) / 1e6,
		 (double)(time_now_ns() - t_fill) / 1e6);
	return 0;
}

int scx_unload(struct egang_exit *ex)
{
	int lfd = pin_open("link");
	if (lfd < 0)
		return -1;
	int efd = pin_open("exit_rec");
	/* detach at once; if this kernel cannot detach a struct_ops link,
	 * dropping the last reference (the pin and lfd) unregisters it */
	bpf_link_detach(lfd);
	unpin_all();
	close(lfd);
	char state[64] = "";
	for (int i = 0; i < 500; i++) {
		if (scx_state(state, sizeof state) < 0 || !strcmp(state, "disabled"))
			break;
		usleep(10000);
	}
	if (ex) {
		memset(ex, 0, sizeof *ex);
		uint32_t zero = 0;
		if (efd >= 0)
			bpf_map_lookup_elem(efd, &zero, ex);
	}
	if (efd >= 0)
		close(efd);
	if (strcmp(state, "disabled"))
		return err_set("sched_ext is still %s 5 s after the detach", state);
	return 0;
}

int scx_set_index(uint32_t index, uint64_t *ns)
{
	int fd = pin_open("policy_index");
	if (fd < 0)
		return -1;
	uint32_t zero = 0;
	uint64_t t0 = time_now_ns();
	int rc = bpf_map_update_elem(fd, &zero, &index, BPF_ANY);
	uint64_t t1 = time_now_ns();
	close(fd);
	if (rc)
		return err_sys("bpf_map_update_elem(policy_index)");
	if (ns)
		*ns = t1 - t0;
	return 0;
}

int scx_index_open(void) { return pin_open("policy_index"); }

int scx_index_update(int fd, uint32_t index)
{
	uint32_t zero = 0;
	if (bpf_map_update_elem(fd, &zero, &index, BPF_ANY))
		return err_sys("bpf_map_update_elem(policy_index)");
	return 0;
}

int scx_set_gang(uint32_t tgid)
{
	int fd = pin_open("gang");
	if (fd < 0)
		return -1;
	uint32_t zero = 0;
	int rc = bpf_map_update_elem(fd, &zero, &tgid, BPF_ANY);
	close(fd);
	return rc ? err_sys("bpf_map_update_elem(gang)") : 0;
}

static int sum_percpu(int fd, uint32_t key, uint64_t *buf, int ncpu, uint64_t *out)
{
	if (bpf_map_lookup_elem(fd, &key, buf))
		return err_sys("bpf_map_lookup_elem(counters)");
	uint64_t s = 0;
	for (int c = 0; c < ncpu; c++)
		s += buf[c];
	*out = s;
	return 0;
}

int scx_read(scx_counts_t *c)
{
	memset(c, 0, sizeof *c);
	int fds[5] = {pin_open("policy_index"), -1, -1, -1, -1};
	if (fds[0] < 0)
		return -1;
	fds[1] = pin_open("gang");
	fds[2] = pin_open("krec");
	fds[3] = pin_open("xfer");
	fds[4] = pin_open("fall");
	int rc = -1;
	uint64_t *buf = NULL;
	for (int i = 1; i < 5; i++)
		if (fds[i] < 0)
			goto out;
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0) {
		err_set("libbpf_num_possible_cpus: %s", strerror(-ncpu));
		goto out;
	}
	buf = calloc((size_t)ncpu, sizeof *buf);
	if (!buf) {
		err_sys("calloc");
		goto out;
	}
	uint32_t zero = 0;
	if (bpf_map_lookup_elem(fds[0], &zero, &c->index) ||
	    bpf_map_lookup_elem(fds[1], &zero, &c->gang)) {
		err_sys("bpf_map_lookup_elem");
		goto out;
	}
	for (uint32_t s = 0; s <= EGANG_SLOTS; s++) {
		if (s < EGANG_SLOTS && bpf_map_lookup_elem(fds[2], &s, &c->krec[s])) {
			err_sys("bpf_map_lookup_elem(krec)");
			goto out;
		}
		for (uint32_t cb = 0; cb < EGANG_CB_COUNT; cb++) {
			uint32_t key = s * EGANG_CB_COUNT + cb;
			if (s < EGANG_SLOTS &&
			    sum_percpu(fds[3], key, buf, ncpu, &c->xfer[s][cb]) < 0)
				goto out;
			if (sum_percpu(fds[4], key, buf, ncpu, &c->fall[s][cb]) < 0)
				goto out;
		}
	}
	rc = 0;
out:
	free(buf);
	for (int i = 0; i < 5; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return rc;
}

/* ---- the index page and store-to-first-transfer ---- */

/* name's pinned map mapped shared (len bytes, a page at least); NULL +
 * err_get(). The mapping holds its own reference to the map. */
static void *map_pinned(const char *name, size_t len)
{
	int fd = pin_open(name);
	if (fd < 0)
		return NULL;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (m == MAP_FAILED)
		return err_set("mmap of %s/%s: %s (a scheduler loaded by an egang "
			       "without the mmapable index?)", EGANG_SCX_PIN, name,
			       strerror(e)),
		       NULL;
	return m;
}

_Atomic uint32_t *scx_index_page(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static _Atomic uint32_t *page;
	pthread_mutex_lock(&lock);
	if (!page && scx_loaded()) {
		page = map_pinned("policy_index", (size_t)sysconf(_SC_PAGESIZE));
		if (!page)
			log_error("scx: %s; the control word keeps its own index",
				  err_get());
	}
	_Atomic uint32_t *p = page;
	pthread_mutex_unlock(&lock);
	return p;
}

_Atomic uint64_t *scx_first_ns_map(void)
{
	return map_pinned("first_ns", (size_t)sysconf(_SC_PAGESIZE));
}

void scx_first_ns_unmap(_Atomic uint64_t *first)
{
	if (first)
		munmap((void *)first, (size_t)sysconf(_SC_PAGESIZE));
}

int scx_print_progs(FILE *out)
{
	uint32_t id = 0;
	int n = 0;
	while (!bpf_prog_get_next_id(id, &id)) {
		int fd = bpf_prog_get_fd_by_id(id);
		if (fd < 0)
			continue;
		struct bpf_prog_info info;
		uint32_t len = sizeof info;
		memset(&info, 0, sizeof info);
		if (!bpf_prog_get_info_by_fd(fd, &info, &len) &&
		    info.type == BPF_PROG_TYPE_STRUCT_OPS) {
			fprintf(out, "prog id=%u name=%s jited_bytes=%u xlated_bytes=%u "
				"verified_insns=%u\n", info.id, info.name,
				info.jited_prog_len, info.xlated_prog_len,
				info.verified_insns);
			n++;
		}
		close(fd);
	}
	if (!n)
		return err_set("no struct_ops program is loaded (egang scx load)");
	return 0;
}

int scx_acq(struct egang_acq *a, bool reset)
{
	int fd = pin_open("acq");
	if (fd < 0)
		return -1;
	uint32_t zero = 0;
	int rc = bpf_map_lookup_elem(fd, &zero, a);
	if (!rc && reset) {
		static const struct egang_acq empty;
		rc = bpf_map_update_elem(fd, &zero, &empty, BPF_ANY);
	}
	close(fd);
	return rc ? err_sys("bpf map acq") : 0;
}

int scx_read_kguard(struct egang_kguard *g)
{
	int fd = pin_open("kguard");
	if (fd < 0)
		return -1;
	uint32_t zero = 0;
	int rc = bpf_map_lookup_elem(fd, &zero, g);
	close(fd);
	return rc ? err_sys("bpf_map_lookup_elem(kguard)") : 0;
}

#else
/* ==== a build without libbpf >= 1.4 / the BPF toolchain ==== */
#define NO_SCX "this build has no sched_ext support (rebuild with `make SCX=1`: " \
	       "needs libbpf >= 1.4, bpftool, clang-19; tools/deps-scx.sh)"

bool scx_built(void) { return false; }
int scx_require(void) { return err_set(NO_SCX); }
bool scx_loaded(void) { return false; }
int scx_load(const policy_lib_t *lib, const int *cpus, int n, uint32_t index)
{
	return scx_check_cpus(cpus, n) < 0 ? -1 : err_set(NO_SCX);
}
int scx_unload(struct egang_exit *ex) { return err_set(NO_SCX); }
int scx_set_index(uint32_t index, uint64_t *ns) { return err_set(NO_SCX); }
int scx_set_gang(uint32_t tgid) { return err_set(NO_SCX); }
int scx_read(scx_counts_t *c) { return err_set(NO_SCX); }
_Atomic uint32_t *scx_index_page(void) { return NULL; }
int scx_index_open(void) { return err_set(NO_SCX); }
int scx_index_update(int fd, uint32_t index) { return err_set(NO_SCX); }
_Atomic uint64_t *scx_first_ns_map(void) { return err_set(NO_SCX), NULL; }
void scx_first_ns_unmap(_Atomic uint64_t *first) { (void)first; }
int scx_read_kguard(struct egang_kguard *g) { return err_set(NO_SCX); }
int scx_print_progs(FILE *out) { return err_set(NO_SCX); }
int scx_acq(struct egang_acq *a, bool reset) { return err_set(NO_SCX); }
#endif
