/* control: the control word file and the leader's policy runtime
 * (control.h). */
#include "policy/control.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/stats.h"

/* ---- the file ---- */

const char *control_default_path(char *buf, size_t cap)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	if (xdg && *xdg)
		snprintf(buf, cap, "%s/egang-control", xdg);
	else
		snprintf(buf, cap, "/dev/shm/egang-control-%u", (unsigned)geteuid());
	return buf;
}

/* ---- the index's home (control.h) ---- */

static control_index_fn index_provider;
/* the words opened in this process whose index lives elsewhere */
#define BOUND_MAX 16
static struct {
	control_word_t *w;
	_Atomic uint32_t *index;
} bound[BOUND_MAX];
static pthread_mutex_t bound_lock = PTHREAD_MUTEX_INITIALIZER;

void control_set_index_provider(control_index_fn fn)
{
	index_provider = fn;
}

_Atomic uint32_t *control_index_of(control_word_t *w)
{
	_Atomic uint32_t *idx = &w->index;
	pthread_mutex_lock(&bound_lock);
	for (int i = 0; i < BOUND_MAX; i++)
		if (bound[i].w == w)
			idx = bound[i].index;
	pthread_mutex_unlock(&bound_lock);
	return idx;
}

void control_bind_index(control_t *c)
{
	if (c->index != &c->w->index)
		return; /* bound already */
	_Atomic uint32_t *idx = index_provider ? index_provider() : NULL;
	if (!idx)
		return;
	pthread_mutex_lock(&bound_lock);
	for (int i = 0; i < BOUND_MAX; i++)
		if (!bound[i].w) {
			bound[i].w = c->w;
			bound[i].index = idx;
			c->index = idx;
			break;
		}
	pthread_mutex_unlock(&bound_lock);
}

static void unbind_index(control_t *c)
{
	pthread_mutex_lock(&bound_lock);
	for (int i = 0; i < BOUND_MAX; i++)
		if (bound[i].w == c->w)
			bound[i].w = NULL;
	pthread_mutex_unlock(&bound_lock);
}

control_t *control_open(const char *path, bool create)
{
	bool created = false;
	int fd = -1;
	if (create) {
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		created = fd >= 0;
		if (fd < 0 && errno != EEXIST)
			return err_set("control %s: open: %s", path, strerror(errno)), NULL;
	}
	if (fd < 0)
		fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_set("control %s: open: %s%s", path, strerror(errno),
			       errno == ELOOP ? " (a symbolic link is refused)" : ""),
		       NULL;
	struct stat st;
	const char *bad = NULL;
	char why[128];
	if (fstat(fd, &st) < 0) {
		snprintf(why, sizeof why, "fstat: %s", strerror(errno));
		bad = why;
	} else if (!S_ISREG(st.st_mode)) {
		bad = "not a regular file";
	} else if (st.st_uid != geteuid()) {
		snprintf(why, sizeof why, "owned by uid %u, not by this user (%u)",
			 (unsigned)st.st_uid, (unsigned)geteuid());
		bad = why;
	} else if (st.st_mode & 077) {
		snprintf(why, sizeof why, "mode %04o gives group/other access "
			 "(chmod 600 it)", (unsigned)(st.st_mode & 07777));
		bad = why;
	} else if (created && (fchmod(fd, 0600) < 0 ||
			       ftruncate(fd, CONTROL_SIZE) < 0)) {
		snprintf(why, sizeof why, "ftruncate: %s", strerror(errno));
		bad = why;
	} else if (!created && st.st_size != CONTROL_SIZE) {
		snprintf(why, sizeof why, "%lld bytes, not %u: truncated or not a "
			 "control file", (long long)st.st_size, CONTROL_SIZE);
		bad = why;
	}
	control_word_t *w = NULL;
	if (!bad) {
		void *m = mmap(NULL, CONTROL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
			       fd, 0);
		if (m == MAP_FAILED) {
			snprintf(why, sizeof why, "mmap: %s", strerror(errno));
			bad = why;
		} else {
			w = m;
		}
	}
	if (!bad && created) {
		w->version = CONTROL_VERSION;
		w->size = CONTROL_SIZE;
		/* release: pairs with the acquire load of magic below (another
		 * process opening the file): the header, and the zeroed index
		 * (default policy), are in place before the magic says so */
		atomic_store_explicit(&w->magic, CONTROL_MAGIC, memory_order_release);
	} else if (!bad) {
		/* acquire: pairs with the creator's release store above */
		uint32_t magic = atomic_load_explicit(&w->magic, memory_order_acquire);
		if (magic != CONTROL_MAGIC) {
			snprintf(why, sizeof why, "bad magic %#x: not an egang control "
				 "file (or still being created)", magic);
			bad = why;
		} else if (w->version != CONTROL_VERSION || w->size != CONTROL_SIZE) {
			snprintf(why, sizeof why, "version %u size %u, expected %u %u",
				 w->version, w->size, CONTROL_VERSION, CONTROL_SIZE);
			bad = why;
		}
	}
	if (bad) {
		err_set("control %s: %s", path, bad);
		if (w)
			munmap(w, CONTROL_SIZE);
		close(fd);
		if (created)
			unlink(path);
		return NULL;
	}
	control_t *c = malloc(sizeof *c);
	if (!c) {
		munmap(w, CONTROL_SIZE);
		close(fd);
		return err_sys("malloc"), NULL;
	}
	c->w = w;
	c->index = &w->index;
	c->fd = fd;
	control_bind_index(c);
	return c;
}

void control_close(control_t *c)
{
	if (!c)
		return;
	unbind_index(c);
	munmap(c->w, CONTROL_SIZE);
	close(c->fd);
	free(c);
}

void control_write_index(control_t *c, uint32_t index)
{
	/* release: orders nothing the leader needs today (the index is
	 * self-contained); pairs with the leader's relaxed load, which is
	 * enough because no data travels with the index. Stronger than
	 * needed, and free on x86 (a plain mov). */
	atomic_store_explicit(c->index, index, memory_order_release);
}

void control_print_status(const control_t *cw, const char *path, FILE *out)
{
	control_word_t *c = cw->w;
#define LD(f) (unsigned long long)atomic_load_explicit(&c->f, memory_order_relaxed)
	/* relaxed loads: each field stands alone (control.h) */
	fprintf(out, "control=%s\nindex=%llu\neffective=%llu\nfallback=%llu\n"
		"n_policies=%llu\nn_slots=%llu\ntokens=%llu\ngenerations=%llu\n"
		"invalid_reads=%llu\nguard_fallbacks=%llu\napplied_seq=%llu\n"
		"applied_raw=%llu\nqueue_depth=%llu\nttft_p50_us=%llu\n"
		"ttft_p99_us=%llu\ndecode_tok_s=%.3f\ngang_width=%llu\n"
		"tenant_width=%llu\nleader_pid=%llu\n",
		path, (unsigned long long)atomic_load_explicit(cw->index,
		memory_order_relaxed), LD(effective), LD(fallback), LD(n_policies),
		LD(n_slots), LD(tokens), LD(generations), LD(invalid_reads),
		LD(guard_fallbacks), LD(applied_seq), LD(applied_raw),
		LD(queue_depth), LD(ttft_p50_us), LD(ttft_p99_us),
		(double)LD(decode_mtok_s) / 1e3, LD(gang_width), LD(tenant_width),
		LD(leader_pid));
	fprintf(out, "index_home=%s\n", cw->index != &c->index ? "sched_ext"
		: LD(index_external) ? "file (the leader reads sched_ext's!)" : "file");
#undef LD
}

/* ---- the runtime ---- */

/* Telemetry stores: the leader is the only writer; relaxed, because each
 * field is read on its own and carries no other data (control.h). */
#define TSTORE(field, v) atomic_store_explicit(&(field), (v), memory_order_relaxed)

uint32_t policy_keep_us(const policy_lib_t *lib, uint32_t index)
{
	return index < (uint32_t)lib->n ? lib->rec[index].keep_ms * 1000u : 0;
}

void policy_rt_init(policy_rt_t *rt, const policy_lib_t *lib,
		    control_word_t *cw, gang_t *g)
{
	memset(rt, 0, sizeof *rt);
	rt->lib = lib;
	rt->cw = cw;
	rt->index = control_index_of(cw);
	rt->g = g;
	rt->n_slots = g ? gang_n_slots(g) : lib->n_slots;
	assert(rt->n_slots == lib->n_slots);
	rt->acquire = -1;
	rt->keep_ms = -1;
	knee_init(&rt->knee, rt->n_slots);
	rt->batch = 1;
	TSTORE(cw->n_policies, (uint32_t)lib->n);
	TSTORE(cw->n_slots, (uint32_t)rt->n_slots);
	TSTORE(cw->leader_pid, (uint32_t)getpid());
	TSTORE(cw->index_external, rt->index != &cw->index ? 1u : 0u);
	/* the record named now is reported as in force before the first
	 * token (it is applied there); relaxed: see policy_rt_before_token */
	uint32_t raw = atomic_load_explicit(rt->index, memory_order_relaxed);
	rt->effective = raw < (uint32_t)lib->n ? raw : 0;
	TSTORE(cw->effective, rt->effective);
	TSTORE(cw->fallback, 0u);
}

static void set_effective(policy_rt_t *rt, uint32_t eff)
{
	rt->effective = eff;
	rt->breaches = 0;
	rt->n_ttft = rt->ttft_next = 0;
	knee_init(&rt->knee, rt->n_slots);
	TSTORE(rt->cw->effective, eff);
}

void policy_rt_set_batch(policy_rt_t *rt, int batch)
{
	rt->batch = batch > 1 ? batch : 1;
}

void policy_rt_before_token(policy_rt_t *rt, uint64_t pos)
{
	control_word_t *cw = rt->cw;
	/* THE load of the token. relaxed: pairs with control_write_index's
	 * store only for the value itself; no other data depends on it (the
	 * library is immutable and private to this process). */
	uint32_t raw = atomic_load_explicit(rt->index, memory_order_relaxed);
	uint64_t now = time_now_ns();
	const policy_t *rec = &rt->lib->rec[rt->effective];
	/* the knee learns from the token that just ended (not across the gap
	 * between two generations) */
	if (rec->width == WIDTH_KNEE && pos > 0 && rt->g) {
		gang_stats_t st;
		gang_stats(rt->g, &st);
		policy_observe(rec, &rt->knee, st.last_mask, now - rt->t_token);
	}
	rt->t_token = now;
	rt->tokens++;
	bool changed = !rt->started || raw != rt->raw;
	if (changed) {
		rt->started = true;
		rt->raw = raw;
		if (rt->fallback && raw != rt->fallback_raw) {
			rt->fallback = false;
			TSTORE(cw->fallback, 0u);
		}
	}
	bool valid = raw < (uint32_t)rt->lib->n;
	if (!valid)
		TSTORE(cw->invalid_reads, ++rt->invalid);
	uint32_t eff = valid && !rt->fallback ? raw : 0;
	if (eff != rt->effective)
		set_effective(rt, eff);
	rec = &rt->lib->rec[eff];
	/* after policy_observe: the token that ended ran at the old batch */
	knee_set_batch(&rt->knee, rt->batch);
	uint32_t mask = policy_next_mask(rec, &rt->knee, rt->n_slots);
	if (rt->g && mask != rt->mask)
		gang_request(rt->g, mask);
	if (mask != rt->mask) {
		uint32_t w = (uint32_t)__builtin_popcount(mask);
		TSTORE(cw->gang_width, w);
		TSTORE(cw->tenant_width, (uint32_t)rt->n_slots - w);
		rt->mask = mask;
	}
	/* the record's own settings apply from this token: the acquire mode
	 * (workers at their next wake) and the keep spin (each worker the
	 * next time it stops being requested) */
	if (rt->g && (int)rec->acquire != rt->acquire)
		gang_set_acquire(rt->g, rec->acquire);
	rt->acquire = (int)rec->acquire;
	if (rt->g && (int64_t)rec->keep_ms != rt->keep_ms)
		gang_set_keep(rt->g, rec->keep_ms * 1000u);
	rt->keep_ms = (int64_t)rec->keep_ms;
	TSTORE(cw->tokens, rt->tokens);
	if (changed) {
		TSTORE(cw->applied_raw, raw);
		TSTORE(cw->applied_token, rt->tokens);
		TSTORE(cw->applied_ns, now);
		/* release: pairs with the acquire load of applied_seq by a
		 * controller (bench switch): applied_raw/_token/_ns above are
		 * those of this change when it sees the new sequence number */
		atomic_store_explicit(&cw->applied_seq, ++rt->applied,
				      memory_order_release);
	}
}

/* The q-quantile (nearest rank, base/stats.h) of the window, in ms; 0
 * when empty. */
static double window_quantile(const policy_rt_t *rt, double q)
{
	double v[POLICY_RT_WINDOW];
	memcpy(v, rt->ttft_ms, (size_t)rt->n_ttft * sizeof *v);
	return stats_quantile(v, (size_t)rt->n_ttft, q);
}

void policy_rt_generation_end(policy_rt_t *rt, double ttft_s,
			      double decode_tok_s, uint32_t queue_depth)
{
	control_word_t *cw = rt->cw;
	if (ttft_s >= 0) {
		rt->ttft_ms[rt->ttft_next] = ttft_s * 1e3;
		rt->ttft_next = (rt->ttft_next + 1) % POLICY_RT_WINDOW;
		if (rt->n_ttft < POLICY_RT_WINDOW)
			rt->n_ttft++;
	}
	double p99 = window_quantile(rt, 0.99);
	TSTORE(cw->generations, ++rt->generations);
	TSTORE(cw->ttft_p50_us, (uint64_t)(window_quantile(rt, 0.5) * 1e3));
	TSTORE(cw->ttft_p99_us, (uint64_t)(p99 * 1e3));
	TSTORE(cw->decode_mtok_s, (uint64_t)(decode_tok_s > 0 ? decode_tok_s * 1e3 : 0));
	TSTORE(cw->queue_depth, queue_depth);
	const policy_t *rec = &rt->lib->rec[rt->effective];
	if (rt->g && !rec->keep_ms) {
		/* the generation is over: nothing is requested but the leader */
		gang_request(rt->g, 1u);
		rt->mask = 1u;
		TSTORE(cw->gang_width, 1u);
		TSTORE(cw->tenant_width, (uint32_t)rt->n_slots - 1);
	}
	/* the guard: the default record has nothing to fall back to */
	if (rt->effective == 0 || !rec->guard_checks)
		return;
	bool breach = (rec->guard_ttft_p99_ms > 0 && rt->n_ttft &&
		       p99 > rec->guard_ttft_p99_ms) ||
		      (rec->guard_queue_depth && queue_depth > rec->guard_queue_depth);
	rt->breaches = breach ? rt->breaches + 1 : 0;
	if (rt->breaches < rec->guard_checks)
		return;
	rt->fallback = true;
	rt->fallback_raw = rt->raw;
	if (rt->index != &cw->index) {
		/* the index is the sched_ext scheduler's too: the fallback is a
		 * store of 0 there, so the kernel policy falls back with the
		 * gang (from the breaching value only: a controller's write in
		 * between wins). acq_rel: pairs with nothing that carries
		 * data; the value alone matters, as for every index store */
		uint32_t expect = rt->raw;
		if (atomic_compare_exchange_strong_explicit(rt->index, &expect, 0u,
							    memory_order_acq_rel,
							    memory_order_relaxed)) {
			rt->raw = 0;
			rt->fallback_raw = 0; /* holds until another index */
		}
	}
	set_effective(rt, 0); /* the next token requests record 0's mask */
	TSTORE(cw->fallback, 1u);
	TSTORE(cw->guard_fallbacks, ++rt->fallbacks);
}
