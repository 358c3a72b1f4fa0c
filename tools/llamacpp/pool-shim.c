/* tools/llamacpp/pool-shim.c: give llama.cpp, as node-llama-cpp loads it, the
 * persistent thread pool that llama-bench and llama-server attach.
 *
 * Why: without an attached pool, ggml's CPU backend creates and joins its
 * worker threads for every graph it computes (one graph per token in
 * decode). On this 2-vCPU machine that makes llama.cpp's 2-thread decode
 * slower than its 1-thread decode, which is not llama.cpp at its best.
 * node-llama-cpp 3.21.1 never calls llama_attach_threadpool, so this
 * LD_PRELOAD library does it for every context:
 *
 *   llama_init_from_model  interposed: the real one, then a pool of
 *                          llama_n_threads(ctx) threads from the CPU
 *                          backend's ggml_threadpool_new (default params:
 *                          poll 50, normal priority, no pinning, as
 *                          llama-bench's defaults), attached for both
 *                          decode and batches (llama-bench does the same)
 *   llama_free             interposed: the real one, then the pool is freed
 *                          (after the context, which may still use it)
 *
 * How the real functions are found: node loads llama-addon.node with
 * dlopen(RTLD_LOCAL), and libllama/libggml come in as its dependencies, so
 * they are not in the global scope that dlsym(RTLD_NEXT) searches from a
 * preloaded library. The addon still calls *our* llama_init_from_model
 * (a dlopen'ed object looks symbols up in the global scope first, which
 * holds the preloaded shim). To call the real one we look for the loaded
 * object whose file name contains "libllama" (dl_iterate_phdr), take a
 * handle on it with RTLD_NOLOAD and dlsym from there; likewise libggml and
 * libggml-base. ggml_threadpool_new lives in the CPU backend, which ggml
 * loads at run time (one .so per CPU variant), so, as llama-bench does, it
 * is fetched through ggml_backend_reg_get_proc_address of the "CPU"
 * backend registry.
 *
 * The prototypes come from the headers of the llama.cpp source that the
 * npm package bundles (node-llama-cpp/llama/gitRelease.bundle, release
 * v0.4.0): compare-llamacpp checks it out and compiles this file
 * with -I include -I ggml/include. We only take function *types* from them
 * (__typeof__), never link against the libraries.
 *
 *   llama_decode          interposed (only with EGANG_LLAMA_TIMES=FILE):
 *                          the real one, timed; after it returns, one line
 *                          'N_TOKENS NANOSECONDS' is appended to FILE. This
 *                          is llama.cpp's own time per forward pass, the
 *                          quantity llama-bench reports, without
 *                          node-llama-cpp's per-token JavaScript, libuv
 *                          hand-off and sampling around it.
 *
 * Environment:
 *   EGANG_POOL_THREADS=N  pool size (default: the context's n_threads)
 *   EGANG_POOL_VERBOSE=1  one line on stderr per attach and free
 *   EGANG_POOL_OFF=1      attach nothing: llama.cpp as shipped (with
 *                          EGANG_LLAMA_TIMES, only the timing is added)
 *   EGANG_LLAMA_TIMES=F   time every llama_decode (above)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "llama.h"

#define SHIM_MAX_CTX 64

static pthread_mutex_t shim_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct llama_context *ctx;
	struct ggml_threadpool *pool;
} shim_pools[SHIM_MAX_CTX];

struct shim_find {
	const char *needle;
	const char *exclude;
	char path[4096];
};

static int shim_find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct shim_find *f = arg;
	const char *name = info->dlpi_name;
	const char *base;

	(void)size;
	if (name == NULL || name[0] == '\0')
		return 0;
	base = strrchr(name, '/');
	base = base ? base + 1 : name;
	if (strncmp(base, f->needle, strlen(f->needle)) != 0)
		return 0;
	if (f->exclude && strncmp(base, f->exclude, strlen(f->exclude)) == 0)
		return 0;
	snprintf(f->path, sizeof f->path, "%s", name);
	return 1;
}

/* The address of NAME in the loaded library whose file name starts with
 * PREFIX (and not with EXCLUDE); NULL if there is none. */
static void *shim_sym(const char *prefix, const char *exclude,
		      const char *name)
{
	struct shim_find f = { prefix, exclude, "" };
	void *handle, *p;

	p = dlsym(RTLD_NEXT, name);
	if (p)
		return p;
	if (!dl_iterate_phdr(shim_find_cb, &f))
		return NULL;
	handle = dlopen(f.path, RTLD_LAZY | RTLD_NOLOAD);
	if (handle == NULL)
		return NULL;
	p = dlsym(handle, name);
	dlclose(handle); /* RTLD_NOLOAD: drops only the reference we took */
	return p;
}

static void shim_fail(const char *what)
{
	fprintf(stderr, "egang pool shim: %s\n", what);
}

static int shim_verbose(void)
{
	const char *v = getenv("EGANG_POOL_VERBOSE");
	return v && v[0] && strcmp(v, "0") != 0;
}

static void shim_attach(struct llama_context *ctx)
{
	__typeof__(llama_n_threads) *n_threads_fn;
	__typeof__(llama_attach_threadpool) *attach_fn;
	__typeof__(ggml_backend_reg_by_name) *reg_by_name_fn;
	__typeof__(ggml_backend_reg_get_proc_address) *proc_fn;
	__typeof__(ggml_threadpool_params_default) *params_fn;
	__typeof__(ggml_threadpool_new) *new_fn;
	struct ggml_threadpool_params tpp;
	struct ggml_threadpool *pool;
	ggml_backend_reg_t cpu;
	const char *env;
	int n, i;

	env = getenv("EGANG_POOL_OFF");
	if (env && env[0] && strcmp(env, "0") != 0)
		return;
	n_threads_fn = shim_sym("libllama", "libllama-common", "llama_n_threads");
	attach_fn = shim_sym("libllama", "libllama-common", "llama_attach_threadpool");
	reg_by_name_fn = shim_sym("libggml.", NULL, "ggml_backend_reg_by_name");
	proc_fn = shim_sym("libggml-base", NULL, "ggml_backend_reg_get_proc_address");
	params_fn = shim_sym("libggml-base", NULL, "ggml_threadpool_params_default");
	if (!n_threads_fn || !attach_fn || !reg_by_name_fn || !proc_fn || !params_fn) {
		shim_fail("llama.cpp's thread pool API not found in the loaded libraries; no pool attached");
		return;
	}
	cpu = reg_by_name_fn("CPU");
	new_fn = cpu ? (__typeof__(ggml_threadpool_new) *)proc_fn(cpu, "ggml_threadpool_new") : NULL;
	if (new_fn == NULL) {
		shim_fail("the CPU backend has no ggml_threadpool_new; no pool attached");
		return;
	}
	n = n_threads_fn(ctx);
	env = getenv("EGANG_POOL_THREADS");
	if (env && atoi(env) > 0)
		n = atoi(env);
	if (n < 1)
		n = 1;
	tpp = params_fn(n);
	pool = new_fn(&tpp);
	if (pool == NULL) {
		shim_fail("ggml_threadpool_new failed; no pool attached");
		return;
	}
	attach_fn(ctx, pool, NULL);
	pthread_mutex_lock(&shim_lock);
	for (i = 0; i < SHIM_MAX_CTX; i++)
		if (shim_pools[i].ctx == NULL) {
			shim_pools[i].ctx = ctx;
			shim_pools[i].pool = pool;
			break;
		}
	pthread_mutex_unlock(&shim_lock);
	/* more than SHIM_MAX_CTX live contexts: the pool is never freed (a
	 * benchmark makes one or two) */
	if (shim_verbose())
		fprintf(stderr, "egang pool shim: attached a %d-thread pool to context %p\n",
			n, (void *)ctx);
}

struct llama_context *llama_init_from_model(struct llama_model *model,
					    struct llama_context_params params)
{
	static __typeof__(llama_init_from_model) *real;
	struct llama_context *ctx;

	if (real == NULL)
		real = shim_sym("libllama", "libllama-common", "llama_init_from_model");
	if (real == NULL) {
		shim_fail("the real llama_init_from_model is not loaded");
		return NULL;
	}
	ctx = real(model, params);
	if (ctx)
		shim_attach(ctx);
	return ctx;
}

void llama_free(struct llama_context *ctx)
{
	static __typeof__(llama_free) *real;
	__typeof__(ggml_backend_reg_by_name) *reg_by_name_fn;
	__typeof__(ggml_backend_reg_get_proc_address) *proc_fn;
	__typeof__(ggml_threadpool_free) *free_fn = NULL;
	struct ggml_threadpool *pool = NULL;
	ggml_backend_reg_t cpu;
	int i;

	if (real == NULL)
		real = shim_sym("libllama", "libllama-common", "llama_free");
	if (real == NULL) {
		shim_fail("the real llama_free is not loaded");
		return;
	}
	pthread_mutex_lock(&shim_lock);
	for (i = 0; ctx && i < SHIM_MAX_CTX; i++)
		if (shim_pools[i].ctx == ctx) {
			pool = shim_pools[i].pool;
			shim_pools[i].ctx = NULL;
			shim_pools[i].pool = NULL;
			break;
		}
	pthread_mutex_unlock(&shim_lock);
	real(ctx);
	if (pool == NULL)
		return;
	reg_by_name_fn = shim_sym("libggml.", NULL, "ggml_backend_reg_by_name");
	proc_fn = shim_sym("libggml-base", NULL, "ggml_backend_reg_get_proc_address");
	cpu = reg_by_name_fn ? reg_by_name_fn("CPU") : NULL;
	if (cpu && proc_fn)
		free_fn = (__typeof__(ggml_threadpool_free) *)proc_fn(cpu, "ggml_threadpool_free");
	if (free_fn)
		free_fn(pool);
	if (shim_verbose())
		fprintf(stderr, "egang pool shim: freed the pool of context %p\n", (void *)ctx);
}

int32_t llama_decode(struct llama_context *ctx, struct llama_batch batch)
{
	static __typeof__(llama_decode) *real;
	static int fd = -2;
	struct timespec t0, t1;
	char line[64];
	int32_t rc;
	int len;

	if (real == NULL)
		real = shim_sym("libllama", "libllama-common", "llama_decode");
	if (real == NULL) {
		shim_fail("the real llama_decode is not loaded");
		return -1;
	}
	if (fd == -2) {
		const char *path = getenv("EGANG_LLAMA_TIMES");
		fd = -1;
		if (path && path[0]) {
			fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
			if (fd < 0)
				shim_fail("cannot open EGANG_LLAMA_TIMES; llama_decode is not timed");
		}
	}
	if (fd < 0)
		return real(ctx, batch);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = real(ctx, batch);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	len = snprintf(line, sizeof line, "%d %lld\n", (int)batch.n_tokens,
		       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL +
			       (t1.tv_nsec - t0.tv_nsec));
	if (write(fd, line, (size_t)len) != len)
		shim_fail("short write to EGANG_LLAMA_TIMES");
	return rc;
}
