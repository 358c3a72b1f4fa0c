/* model: loading GGUF and llama2.c files into model_t. */
#include "model/model.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "model/grammar.h"

/* The facts of each architecture (model.h): llama.cpp's llama_model_rope_type
 * and the graphs of its models (llama, qwen2, qwen3, gemma3, phi3). */
const arch_info_t arch_info[ARCH_COUNT] = {
	[ARCH_LLAMA] = {.name = "llama", .theta = 10000.0},
	[ARCH_QWEN2] = {.name = "qwen2", .rope_neox = 1, .qkv_bias = true, .theta = 1000000.0},
	[ARCH_QWEN3] = {.name = "qwen3", .rope_neox = 1, .qk_norm = true, .theta = 1000000.0},
	[ARCH_GEMMA3] = {.name = "gemma3", .rope_neox = 1, .qk_norm = true, .post_norms = true,
			 .gelu = true, .embed_scale = true, .swa = true, .theta = 1000000.0},
	[ARCH_PHI3] = {.name = "phi3", .rope_neox = 1, .fused = true, .theta = 10000.0},
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static void model_set_name(model_t *m, const char *name, size_t n)
{
	m->name_owned = malloc(n + 1);
	memcpy(m->name_owned, name, n);
	m->name_owned[n] = '\0';
	m->name = m->name_owned;
}

void model_free(model_t *m)
{
	if (!m)
		return;
	tokenizer_free(m->tok);
	gguf_close(m->gguf);
	if (m->map)
		munmap(m->map, m->map_len);
	if (m->wmem)
		munmap(m->wmem, m->wmem_len);
	if (m->pmem)
		munmap(m->pmem, m->pmem_len);
	free(m->layers);
	free(m->owned);
	free(m->name_owned);
	grammar_vocab_free(atomic_load_explicit(&m->grammar_vocab,
						memory_order_acquire));
	free(m);
}

const grammar_vocab_t *model_grammar_vocab(const model_t *m)
{
	/* acquire: pairs with the release of the CAS below, so the trie's
	 * contents are visible before its pointer is used */
	grammar_vocab_t *v = atomic_load_explicit(&m->grammar_vocab,
						  memory_order_acquire);
	if (v)
		return v;
	v = grammar_vocab_new(m->tok, m->cfg.vocab_size);
	if (!v)
		return NULL;
	grammar_vocab_t *none = NULL;
	/* the field is the cache of an object that is never defined const
	 * (model_load allocates it), so writing through the cast is sound */
	model_t *mm = (model_t *)m;
	if (!atomic_compare_exchange_strong_explicit(&mm->grammar_vocab, &none, v,
						     memory_order_acq_rel,
						     memory_order_acquire)) {
		grammar_vocab_free(v); /* another thread's copy won */
		v = none;
	}
	return v;
}

/* Checks the shape-level constraints shared by both formats. */
static int config_check(const char *file, const model_config_t *c)
{
#define REQUIRE(cond, ...)                                                   \
	do {                                                                 \
		if (!(cond))                                                 \
			return err_set(__VA_ARGS__);                         \
	} while (0)
	REQUIRE(c->dim > 0 && c->dim <= 1 << 16, "%s: dim %d is out of range",
		file, c->dim);
	REQUIRE(c->hidden_dim > 0 && c->hidden_dim <= 1 << 18,
		"%s: hidden_dim %d is out of range", file, c->hidden_dim);
	REQUIRE(c->n_layers > 0 && c->n_layers <= 1024,
		"%s: n_layers %d is out of range", file, c->n_layers);
	REQUIRE(c->n_heads > 0 && c->n_heads <= c->dim,
		"%s: n_heads %d is out of range", file, c->n_heads);
	REQUIRE(c->head_dim > 0 && c->head_dim <= 1 << 16,
		"%s: head dimension %d is out of range", file, c->head_dim);
	REQUIRE(c->swa_window >= 0, "%s: sliding window %d is out of range", file,
		c->swa_window);
	REQUIRE(c->n_kv_heads > 0 && c->n_kv_heads <= c->n_heads,
		"%s: n_kv_heads %d is out of range (n_heads %d)", file,
		c->n_kv_heads, c->n_heads);
	REQUIRE(c->n_heads % c->n_kv_heads == 0,
		"%s: n_kv_heads %d does not divide n_heads %d", file,
		c->n_kv_heads, c->n_heads);
	REQUIRE(c->vocab_size > 0 && c->vocab_size <= 1 << 22,
		"%s: vocab_size %d is out of range", file, c->vocab_size);
	REQUIRE(c->ctx > 0 && c->ctx <= 1 << 22,
		"%s: context length %d is out of range", file, c->ctx);
	REQUIRE(c->rope_dim > 0 && c->rope_dim <= c->head_dim &&
			c->rope_dim % 2 == 0,
		"%s: rope dimension %d is out of range (head_dim %d)", file,
		c->rope_dim, c->head_dim);
	/* a base below 1 turns the frequencies 1 / theta^(i / rope_dim) up
	 * with the dimension (gguf_config names the key) */
	REQUIRE(c->rope_theta >= 1 && c->rope_theta < 1e12f,
		"%s: rope theta %g is out of range [1, 1e12)", file, c->rope_theta);
	REQUIRE(c->rms_eps > 0 && c->rms_eps < 1,
		"%s: rms epsilon %g is out of range", file, c->rms_eps);
#undef REQUIRE
	return 0;
}

/* ---- llama2.c ---- */

static int mul_ok(uint64_t *acc, uint64_t a, uint64_t b)
{
	if (a && b > UINT64_MAX / a)
		return -1;
	*acc += a * b;
	return 0;
}

static model_t *load_llama2c(const char *path, const char *tok_path, int fd,
			     size_t size)
{
	const char *file = base_name(path);
	int32_t h[7];
	if (size < sizeof h) {
		err_set("%s: llama2.c header at offset 0: file is %zu bytes, "
			"needs 28", file, size);
		return NULL;
	}
	if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h) {
		err_sys("pread");
		return NULL;
	}
	static const char *names[7] = {"dim", "hidden_dim", "n_layers",
				       "n_heads", "n_kv_heads", "vocab_size",
				       "seq_len"};
	for (int i = 0; i < 7; i++)
		if ((i == 5 ? (h[i] == 0 || h[i] == INT32_MIN) : h[i] <= 0)) {
			err_set("%s: llama2.c header field %s at offset %d: "
				"invalid value %d", file, names[i], 4 * i, h[i]);
			return NULL;
		}
	model_config_t c = {
		.arch = ARCH_LLAMA, .dim = h[0], .hidden_dim = h[1],
		.n_layers = h[2], .n_heads = h[3], .n_kv_heads = h[4],
		.vocab_size = h[5] < 0 ? -h[5] : h[5], .ctx = h[6],
		.rope_theta = 10000.0f, .rms_eps = 1e-5f, .rope_neox = 0,
		.q_scale = 1.0f, .rope_scale = 1.0f, .rope_mscale = 1.0f,
	};
	bool shared = h[5] > 0;
	if (c.n_heads > 0 && c.dim % c.n_heads) {
		err_set("%s: n_heads %d does not divide dim %d", file, c.n_heads, c.dim);
		return NULL;
	}
	if (c.n_heads > 0)
		c.head_dim = c.dim / c.n_heads;
	c.rope_dim = c.head_dim;
	if (config_check(file, &c) < 0)
		return NULL;
	uint64_t D = (uint64_t)c.dim, H = (uint64_t)c.hidden_dim,
		 L = (uint64_t)c.n_layers, V = (uint64_t)c.vocab_size,
		 KV = (uint64_t)c.n_kv_heads * (uint64_t)c.head_dim;
	uint64_t n = 0;
	int bad = mul_ok(&n, V, D) | mul_ok(&n, L, D) | mul_ok(&n, L * D, D) |
		  mul_ok(&n, L * D, KV) | mul_ok(&n, L * D, KV) |
		  mul_ok(&n, L * D, D) | mul_ok(&n, L, D) |
		  mul_ok(&n, L * H, D) | mul_ok(&n, L * H, D) |
		  mul_ok(&n, L * H, D) | mul_ok(&n, 1, D) |
		  mul_ok(&n, (uint64_t)c.ctx, (uint64_t)c.head_dim);
	if (!shared)
		bad |= mul_ok(&n, V, D);
	if (bad || n > (UINT64_MAX - 28) / 4 || 28 + 4 * n > size) {
		err_set("%s: llama2.c weights: the header's shapes need %llu "
			"bytes but the file has %zu", file,
			bad ? 0ull : (unsigned long long)(28 + 4 * n), size);
		return NULL;
	}
	/* The header is the only description of the layout, and llama2.c's
	 * export writes exactly what it describes: bytes beyond it mean a
	 * header field that does not describe this file (every field is in
	 * the size), whose weights would be read from the wrong offsets. */
	if (28 + 4 * n != size) {
		err_set("%s: llama2.c header at offset 0: the shapes need %llu bytes "
			"but the file has %zu (%llu more: a header field that does not "
			"describe the file)", file, (unsigned long long)(28 + 4 * n),
			size, (unsigned long long)(size - 28 - 4 * n));
		return NULL;
	}
	void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		err_sys("mmap");
		return NULL;
	}
	model_t *m = calloc(1, sizeof *m);
	m->map = map;
	m->map_len = size;
	m->cfg = c;
	m->format = "llama2c";
	m->file_size = size;
	model_set_name(m, file, strlen(file));
	m->layers = calloc((size_t)L, sizeof *m->layers);
	const float *p = (const float *)((const char *)map + 28);
#define TAKE(count) (p += (count), p - (count))
	int64_t q = c.n_heads * (int64_t)c.head_dim;
	m->tok_embd = (tensor_t){DTYPE_F32, (int64_t)V, (int64_t)D,
				 TAKE(V * D), NULL};
	for (uint64_t l = 0; l < L; l++)
		m->layers[l].attn_norm = TAKE(D);
	for (uint64_t l = 0; l < L; l++)
		m->layers[l].wq = (tensor_t){DTYPE_F32, q, (int64_t)D,
					     TAKE(D * D), NULL};
	for (uint64_t l = 0; l < L; l++)
		m->layers[l].wk = (tensor_t){DTYPE_F32, (int64_t)KV,
					     (int64_t)D, TAKE(D * KV), NULL};
	for (uint64_t l = 0; l < L; l++)
		m->layers[l].wv = (tensor_t){DTYPE_F32, (int64_t)KV,
					     (int64_t)D, TAKE(D * KV), NULL};
	for (uint64_t l = 0; l < L; l++)
		m->layers[l].wo = (tensor_t){DTYPE_F32, (int64_t)D, q,
					     TAKE(D * D), NULL};
	for (uint64_t l = 0; l < L; l++)
		m->layers[l].ffn_norm = TAKE(D);
	for (uint64_t l = 0; l < L; l++)
		m->layers[l].w_gate = (tensor_t){DTYPE_F32, (int64_t)H,
						 (int64_t)D, TAKE(H * D), NULL};
	for (uint64_t l = 0; l < L; l++)
		m->layers[l].w_down = (tensor_t){DTYPE_F32, (int64_t)D,
						 (int64_t)H, TAKE(D * H), NULL};
	for (uint64_t l = 0; l < L; l++)
		m->layers[l].w_up = (tensor_t){DTYPE_F32, (int64_t)H,
					       (int64_t)D, TAKE(H * D), NULL};
	m->output_norm = TAKE(D);
	p += (uint64_t)c.ctx * (uint64_t)c.head_dim; /* legacy RoPE tables */
	m->output = shared ? m->tok_embd
			   : (tensor_t){DTYPE_F32, (int64_t)V, (int64_t)D,
					TAKE(V * D), NULL};
#undef TAKE
	if (!tok_path) {
		err_set("%s: a llama2.c checkpoint needs a tokenizer "
			"(-z tokenizer.bin)", file);
		model_free(m);
		return NULL;
	}
	m->tok = tokenizer_load_llama2c(tok_path, c.vocab_size);
	if (!m->tok) {
		model_free(m);
		return NULL;
	}
	return m;
}

/* ---- GGUF ---- */

typedef struct gguf_loader {
	const char *file;
	const gguf_t *g;
	model_t *m;
	float *owned_next; /* bump allocator into m->owned */
} gguf_loader_t;

static const gguf_tensor_t *find_tensor(gguf_loader_t *ld, const char *name,
					bool required)
{
	const gguf_tensor_t *t = gguf_find_tensor(ld->g, name);
	if (!t && required)
		err_set("%s: required tensor '%s' is missing", ld->file, name);
	return t;
}

/* A matrix of `rows` outputs of `cols` inputs: GGUF ne = {cols, rows}. */
static int take_matrix(gguf_loader_t *ld, const char *name, int64_t rows,
		       int64_t cols, tensor_t *out, bool required)
{
	const gguf_tensor_t *t = find_tensor(ld, name, required);
	if (!t)
		return required ? -1 : 0;
	if (t->n_dims != 2 || t->ne[0] != cols || t->ne[1] != rows)
		return err_set("%s: tensor '%s' has shape [%lld, %lld] (%u "
			       "dims), expected [%lld, %lld]", ld->file, name,
			       (long long)t->ne[0], (long long)t->ne[1],
			       t->n_dims, (long long)cols, (long long)rows);
	/* the added block types' scales: a NaN or infinity would poison every
	 * output of its rows (one pass over the scale fields, at load) */
	int64_t bad = kq_bad_block(t->type, t->data, t->nbytes);
	if (bad >= 0)
		return err_set("%s: tensor '%s' (%s): the block at offset %llu has a NaN or "
			       "infinite scale", ld->file, name, dtype_info[t->type].name,
			       (unsigned long long)(gguf_data_offset(ld->g) + t->offset +
						    (uint64_t)bad));
	*out = (tensor_t){t->type, rows, cols, t->data, NULL};
	return 1;
}

/* A vector of n floats (any float type, converted to f32). */
static int take_vector(gguf_loader_t *ld, const char *name, int64_t n,
		       const float **out, bool required)
{
	const gguf_tensor_t *t = find_tensor(ld, name, required);
	if (!t) {
		*out = NULL;
		return required ? -1 : 0;
	}
	if (t->n_dims != 1 || t->ne[0] != n)
		return err_set("%s: tensor '%s' has %lld elements (%u dims), "
			       "expected %lld", ld->file, name,
			       (long long)t->ne[0], t->n_dims, (long long)n);
	if (dtype_info[t->type].block != 1)
		return err_set("%s: tensor '%s' is %s; a norm or bias vector "
			       "must be f32, f16 or bf16", ld->file, name,
			       dtype_info[t->type].name);
	float *dst = ld->owned_next;
	ld->owned_next += n;
	dequantize_row(t->type, t->data, dst, n);
	*out = dst;
	return 1;
}

static int get_u32_key(gguf_loader_t *ld, const char *arch, const char *key,
		       int32_t *out, int64_t dflt)
{
	char full[128];
	int64_t v;
	snprintf(full, sizeof full, "%s.%s", arch, key);
	if (gguf_find_key(ld->g, full) < 0) {
		if (dflt < 0)
			return err_set("%s: required key '%s' is missing",
				       ld->file, full);
		v = dflt;
	} else if (gguf_get_int(ld->g, full, &v) < 0) {
		return err_set("%s: key '%s' is not an integer", ld->file, full);
	}
	if (v <= 0 || v > INT32_MAX)
		return err_set("%s: key '%s' = %lld is out of range", ld->file,
			       full, (long long)v);
	*out = (int32_t)v;
	return 0;
}

static int get_f32_key(gguf_loader_t *ld, const char *arch, const char *key,
		       float *out, double dflt)
{
	char full[128];
	double v = dflt;
	snprintf(full, sizeof full, "%s.%s", arch, key);
	if (gguf_find_key(ld->g, full) >= 0 && gguf_get_float(ld->g, full, &v) < 0)
		return err_set("%s: key '%s' is not a number", ld->file, full);
	*out = (float)v;
	return 0;
}

/* "file: key 'arch.key' at offset N = v is out of range R" (N: the offset
 * of the value; a default out of range names no offset); returns -1. */
static int key_range_err(gguf_loader_t *ld, const char *arch, const char *key,
			 double v, const char *range)
{
	char full[128];
	snprintf(full, sizeof full, "%s.%s", arch, key);
	int64_t i = gguf_find_key(ld->g, full);
	if (i < 0)
		return err_set("%s: key '%s' (default) = %g is out of range %s", ld->file,
			       full, v, range);
	return err_set("%s: key '%s' at offset %zu = %g is out of range %s", ld->file,
		       full, gguf_kv_offset(ld->g, i), v, range);
}

/* attention.sliding_window_pattern into *out when present: an integer
 * 0..INT32_MAX (0: every layer slides); llama.cpp's per-layer array form
 * (other architectures) is refused; -1 + err_get(). */
static int swa_pattern_key(gguf_loader_t *ld, const char *arch, int32_t *out)
{
	char full[128];
	int64_t v;
	snprintf(full, sizeof full, "%s.attention.sliding_window_pattern", arch);
	if (gguf_find_key(ld->g, full) < 0)
		return 0;
	if (gguf_get_int(ld->g, full, &v) < 0)
		return err_set("%s: key '%s' is not an integer", ld->file, full);
	if (v < 0 || v > INT32_MAX)
		return err_set("%s: key '%s' = %lld is out of range (0: every layer "
			       "slides, N: every Nth layer is global)", ld->file, full,
			       (long long)v);
	*out = (int32_t)v;
	return 0;
}

/* The RoPE and sliding-window keys (model_config_t): rope.scaling.type
 * none, linear (factor), llama3 (its factors are the rope_freqs tensor),
 * longrope (phi3's factor tensors) or yarn without extrapolation mixing is
 * refused by name; -1 + err_get(). */
static int gguf_rope_keys(gguf_loader_t *ld, const char *arch)
{
	model_config_t *c = &ld->m->cfg;
	char full[128];
	gguf_str_t s;
	float factor;
	c->rope_scale = 1.0f;
	snprintf(full, sizeof full, "%s.rope.scaling.type", arch);
	if (gguf_find_key(ld->g, full) >= 0) {
		if (gguf_get_str(ld->g, full, &s) < 0)
			return err_set("%s: key '%s' is not a string", ld->file, full);
		char t[32];
		snprintf(t, sizeof t, "%.*s", (int)(s.n < 31 ? s.n : 31), s.s);
		if (strcmp(t, "none") && strcmp(t, "linear") && strcmp(t, "longrope") &&
		    strcmp(t, "llama3"))
			return err_set("%s: key '%s' = '%s' is not supported (none, linear, "
				       "llama3, longrope)", ld->file, full, t);
	}
	if (get_f32_key(ld, arch, "rope.scaling.factor", &factor, 0.0) < 0 ||
	    get_f32_key(ld, arch, "rope.scaling.attn_factor", &c->rope_mscale, 1.0) < 0 ||
	    get_u32_key(ld, arch, "rope.scaling.original_context_length", &c->rope_orig_ctx,
			c->ctx) < 0)
		return -1;
	if (factor != 0.0f && !(factor > 0.0f && factor < 1e6f))
		return err_set("%s: key '%s.rope.scaling.factor' = %g is out of range",
			       ld->file, arch, factor);
	if (factor > 0.0f)
		c->rope_scale = 1.0f / factor;
	if (!(c->rope_mscale > 0.0f && c->rope_mscale < 100.0f))
		return err_set("%s: key '%s.rope.scaling.attn_factor' = %g is out of range",
			       ld->file, arch, c->rope_mscale);
	/* sliding windows: gemma3 (every 6th layer global, llama.cpp's
	 * default pattern, sliding_window_pattern overriding when the window
	 * is there, as llama.cpp reads it); phi3's key is read by llama.cpp and
	 * ignored (its SWA is disabled there), and so here */
	c->rope_theta_swa = 10000.0f;
	c->swa_pattern = 6;
	if (arch_info[c->arch].swa) {
		snprintf(full, sizeof full, "%s.attention.sliding_window", arch);
		if (gguf_find_key(ld->g, full) >= 0 &&
		    (get_u32_key(ld, arch, "attention.sliding_window", &c->swa_window, -1) < 0 ||
		     get_f32_key(ld, arch, "rope.freq_base_swa", &c->rope_theta_swa, 10000.0) < 0 ||
		     swa_pattern_key(ld, arch, &c->swa_pattern) < 0))
			return -1;
		if (!(c->rope_theta_swa >= 1 && c->rope_theta_swa < 1e12f))
			return key_range_err(ld, arch, "rope.freq_base_swa", c->rope_theta_swa,
					     "[1, 1e12)");
	}
	return 0;
}

/* The architecture and hyperparameters from the GGUF's keys, the vocabulary
 * size from the embedding; -1 + err_get() naming the file and key. */
static int gguf_config(gguf_loader_t *ld)
{
	const gguf_t *g = ld->g;
	const char *file = ld->file;
	model_config_t *c = &ld->m->cfg;
	gguf_str_t s;
	char arch[32];
	if (gguf_get_str(g, "general.architecture", &s) < 0)
		return err_set("%s: required key 'general.architecture' is missing "
			       "or not a string", file);
	snprintf(arch, sizeof arch, "%.*s", (int)(s.n < 31 ? s.n : 31), s.s);
	int a = 0;
	while (a < ARCH_COUNT && strcmp(arch, arch_info[a].name))
		a++;
	if (a == ARCH_COUNT)
		return err_set("%s: general.architecture '%s' is not supported (llama, "
			       "qwen2, qwen3, gemma3, phi3)", file, arch);
	const arch_info_t *ai = &arch_info[a];
	c->arch = (model_arch_t)a;
	c->rope_neox = ai->rope_neox;
	c->qk_norm = ai->qk_norm;
	c->post_norms = ai->post_norms;
	c->gelu = ai->gelu;
	c->q_scale = 1.0f;
	if (gguf_get_str(g, "general.name", &s) == 0 && s.n > 0 && s.n < 256)
		model_set_name(ld->m, s.s, s.n);
	else
		model_set_name(ld->m, file, strlen(file));
	if (get_u32_key(ld, arch, "embedding_length", &c->dim, -1) < 0 ||
	    get_u32_key(ld, arch, "feed_forward_length", &c->hidden_dim, -1) < 0 ||
	    get_u32_key(ld, arch, "block_count", &c->n_layers, -1) < 0 ||
	    get_u32_key(ld, arch, "attention.head_count", &c->n_heads, -1) < 0 ||
	    get_u32_key(ld, arch, "context_length", &c->ctx, 2048) < 0 ||
	    get_f32_key(ld, arch, "rope.freq_base", &c->rope_theta, ai->theta) < 0 ||
	    get_f32_key(ld, arch, "attention.layer_norm_rms_epsilon",
			&c->rms_eps, 1e-5) < 0 ||
	    get_u32_key(ld, arch, "attention.head_count_kv", &c->n_kv_heads,
			c->n_heads) < 0 ||
	    get_f32_key(ld, arch, "final_logit_softcapping", &c->logit_softcap, 0.0) < 0)
		return -1;
	/* head width: attention.key_length (qwen3, gemma3: not dim / heads),
	 * else dim / heads */
	int32_t kl, vl;
	if (get_u32_key(ld, arch, "attention.key_length", &kl,
			c->dim % c->n_heads ? 0 : c->dim / c->n_heads) < 0)
		return -1;
	if (kl == 0)
		return err_set("%s: attention.head_count %d does not divide "
			       "embedding_length %d and key '%s.attention.key_length' "
			       "is missing", file, c->n_heads, c->dim, arch);
	c->head_dim = kl;
	if (get_u32_key(ld, arch, "attention.value_length", &vl, kl) < 0)
		return -1;
	if (vl != kl)
		return err_set("%s: key '%s.attention.value_length' = %d differs from "
			       "key_length %d (unsupported)", file, arch, vl, kl);
	if (get_u32_key(ld, arch, "rope.dimension_count", &c->rope_dim,
			c->head_dim) < 0 || gguf_rope_keys(ld, arch) < 0)
		return -1;
	/* RoPE frequencies are 1 / theta^(i / rope_dim): a base below 1
	 * turns them up with the dimension, and near 0 they overflow float
	 * (a NaN rotation at position 0) */
	if (!(c->rope_theta >= 1 && c->rope_theta < 1e12f))
		return key_range_err(ld, arch, "rope.freq_base", c->rope_theta, "[1, 1e12)");
	if (!(c->rms_eps > 0 && c->rms_eps < 1))
		return key_range_err(ld, arch, "attention.layer_norm_rms_epsilon", c->rms_eps,
				     "(0, 1)");
	if (!(c->logit_softcap >= 0.0f && c->logit_softcap < 1e6f))
		return err_set("%s: key '%s.final_logit_softcapping' = %g is out of range",
			       file, arch, c->logit_softcap);
	if (ai->embed_scale)
		c->embed_scale = sqrtf((float)c->dim);
	/* gemma3 27B scales q by 1/sqrt(dim / heads) instead of the kernel's
	 * 1/sqrt(head_dim) (llama.cpp, after gemma_pytorch's config) */
	if (c->arch == ARCH_GEMMA3 && c->n_layers == 62)
		c->q_scale = sqrtf((float)c->head_dim) / sqrtf((float)(c->dim / c->n_heads));
	/* The vocabulary size comes from the embedding. */
	const gguf_tensor_t *te = find_tensor(ld, "token_embd.weight", true);
	if (!te)
		return -1;
	if (te->n_dims != 2 || te->ne[1] <= 0 || te->ne[1] > (1 << 22))
		return err_set("%s: tensor 'token_embd.weight' must be 2-D with at "
			       "most 4M rows", file);
	c->vocab_size = (int32_t)te->ne[1];
	return config_check(file, c);
}

/* Rows r0 .. r0 + n - 1 of t, as a matrix of its own (the fused tensors'
 * parts: whole rows, so any type splits). */
static tensor_t rows_view(const tensor_t *t, int64_t r0, int64_t n)
{
	return (tensor_t){t->type, n, t->cols,
			  (const char *)t->data + (size_t)r0 * dtype_row_bytes(t->type, t->cols),
			  NULL};
}

/* The attention and FFN matrices: separate, or fused as phi3 stores them
 * (attn_qkv rows q|k|v when present; ffn_up rows gate|up). */
static int gguf_layer_mats(gguf_loader_t *ld, int l, layer_t *y)
{
	const model_config_t *c = &ld->m->cfg;
	int64_t D = c->dim, H = c->hidden_dim, Q = (int64_t)c->n_heads * c->head_dim,
		KV = (int64_t)c->n_kv_heads * c->head_dim;
	bool fused = arch_info[c->arch].fused;
	char n[96];
	tensor_t t;
#define NAME(suffix) (snprintf(n, sizeof n, "blk.%d.%s", l, suffix), n)
	int rc = fused ? take_matrix(ld, NAME("attn_qkv.weight"), Q + 2 * KV, D, &t, false) : 0;
	if (rc < 0)
		return -1;
	if (rc > 0) {
		y->wq = rows_view(&t, 0, Q);
		y->wk = rows_view(&t, Q, KV);
		y->wv = rows_view(&t, Q + KV, KV);
	} else if (take_matrix(ld, NAME("attn_q.weight"), Q, D, &y->wq, true) < 0 ||
		   take_matrix(ld, NAME("attn_k.weight"), KV, D, &y->wk, true) < 0 ||
		   take_matrix(ld, NAME("attn_v.weight"), KV, D, &y->wv, true) < 0) {
		return -1;
	}
	if (take_matrix(ld, NAME("attn_output.weight"), D, Q, &y->wo, true) < 0 ||
	    take_matrix(ld, NAME("ffn_down.weight"), D, H, &y->w_down, true) < 0)
		return -1;
	if (fused) {
		if (take_matrix(ld, NAME("ffn_up.weight"), 2 * H, D, &t, true) < 0)
			return -1;
		y->w_gate = rows_view(&t, 0, H);
		y->w_up = rows_view(&t, H, H);
	} else if (take_matrix(ld, NAME("ffn_gate.weight"), H, D, &y->w_gate, true) < 0 ||
		   take_matrix(ld, NAME("ffn_up.weight"), H, D, &y->w_up, true) < 0) {
		return -1;
	}
#undef NAME
	return 0;
}

/* One layer's tensors: the architecture's (arch_info) required, the others
 * absent or ignored. */
static int gguf_layer(gguf_loader_t *ld, int l, layer_t *y)
{
	const model_config_t *c = &ld->m->cfg;
	const arch_info_t *ai = &arch_info[c->arch];
	int64_t D = c->dim, Q = (int64_t)c->n_heads * c->head_dim,
		KV = (int64_t)c->n_kv_heads * c->head_dim, hd = c->head_dim;
	bool bias = ai->qkv_bias, qkn = ai->qk_norm, post = ai->post_norms;
	char n[96];
#define NAME(suffix) (snprintf(n, sizeof n, "blk.%d.%s", l, suffix), n)
	if (take_vector(ld, NAME("attn_norm.weight"), D, &y->attn_norm, true) < 0 ||
	    gguf_layer_mats(ld, l, y) < 0 ||
	    (bias && (take_vector(ld, NAME("attn_q.bias"), Q, &y->bq, true) < 0 ||
		      take_vector(ld, NAME("attn_k.bias"), KV, &y->bk, true) < 0 ||
		      take_vector(ld, NAME("attn_v.bias"), KV, &y->bv, true) < 0)) ||
	    (qkn && (take_vector(ld, NAME("attn_q_norm.weight"), hd, &y->q_norm, true) < 0 ||
		     take_vector(ld, NAME("attn_k_norm.weight"), hd, &y->k_norm, true) < 0)) ||
	    (post && (take_vector(ld, NAME("post_attention_norm.weight"), D,
				  &y->post_attn_norm, true) < 0 ||
		      take_vector(ld, NAME("post_ffw_norm.weight"), D, &y->post_ffn_norm,
				  true) < 0)) ||
	    take_vector(ld, NAME("ffn_norm.weight"), D, &y->ffn_norm, true) < 0)
		return -1;
#undef NAME
	/* llama.cpp's set_swa_pattern: layer l slides unless
	 * (l + 1) % pattern == 0; pattern 0: every layer slides */
	y->swa = c->swa_window > 0 && (c->swa_pattern == 0 || (l + 1) % c->swa_pattern != 0);
	return 0;
}

/* Every weight tensor, checked against the configuration; the float
 * vectors are copied into m->owned (norms, biases, RoPE factors). */
static int gguf_weights(gguf_loader_t *ld)
{
	model_t *m = ld->m;
	const model_config_t *c = &m->cfg;
	int64_t D = c->dim, Q = (int64_t)c->n_heads * c->head_dim,
		KV = (int64_t)c->n_kv_heads * c->head_dim;
	size_t n_owned = (size_t)D * (4 * (size_t)c->n_layers + 1) +
			 (size_t)c->n_layers * (size_t)(Q + 2 * KV + 2 * c->head_dim) +
			 3 * (size_t)c->rope_dim;
	m->owned = malloc(n_owned * sizeof(float));
	m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
	if (!m->owned || !m->layers)
		return err_set("%s: cannot allocate the model's vectors", ld->file);
	ld->owned_next = m->owned;
	if (take_matrix(ld, "token_embd.weight", c->vocab_size, D,
			&m->tok_embd, true) < 0 ||
	    take_vector(ld, "output_norm.weight", D, &m->output_norm, true) < 0)
		return -1;
	int rc = take_matrix(ld, "output.weight", c->vocab_size, D, &m->output,
			     false);
	if (rc < 0)
		return -1;
	if (rc == 0) /* tied: the classifier is the embedding */
		m->output = m->tok_embd;
	/* RoPE factors: llama3's rope_freqs, phi3's short / long pair (both
	 * or neither) */
	int64_t nf = c->rope_dim / 2;
	if (take_vector(ld, "rope_freqs.weight", nf, &m->rope_freqs, false) < 0 ||
	    take_vector(ld, "rope_factors_short.weight", nf, &m->rope_short, false) < 0 ||
	    take_vector(ld, "rope_factors_long.weight", nf, &m->rope_long, false) < 0)
		return -1;
	if (!m->rope_short != !m->rope_long)
		return err_set("%s: required tensor '%s' is missing (the other RoPE factor "
			       "tensor is present)", ld->file,
			       m->rope_short ? "rope_factors_long.weight"
					     : "rope_factors_short.weight");
	const float *ffs[3] = {m->rope_freqs, m->rope_short, m->rope_long};
	for (int i = 0; i < 3; i++)
		for (int64_t j = 0; ffs[i] && j < nf; j++)
			if (!(ffs[i][j] > 0.0f && ffs[i][j] < 1e9f))
				return err_set("%s: RoPE factor %lld of %s is %g (not positive "
					       "and finite)", ld->file, (long long)j,
					       i == 0 ? "rope_freqs" : i == 1 ? "rope_factors_short"
									: "rope_factors_long",
					       ffs[i][j]);
	for (int l = 0; l < c->n_layers; l++)
		if (gguf_layer(ld, l, &m->layers[l]) < 0)
			return -1;
	return 0;
}

static model_t *load_gguf(const char *path, const char *tok_path)
{
	const char *file = base_name(path);
	gguf_t *g = gguf_open(path);
	if (!g)
		return NULL;
	model_t *m = calloc(1, sizeof *m);
	if (!m) {
		gguf_close(g);
		err_set("%s: cannot allocate the model", file);
		return NULL;
	}
	m->gguf = g;
	m->format = "gguf";
	m->file_size = gguf_file_size(g);
	gguf_loader_t ld = {.file = file, .g = g, .m = m};
	if (gguf_config(&ld) < 0 || gguf_weights(&ld) < 0)
		goto fail;
	m->tok = tok_path ? tokenizer_load_llama2c(tok_path, m->cfg.vocab_size)
			  : tokenizer_load_gguf(g);
	if (!m->tok) {
		err_wrap("%s", file);
		goto fail;
	}
	if (tokenizer_n_vocab(m->tok) > m->cfg.vocab_size) {
		err_set("%s: the tokenizer has %d tokens but the embedding only "
			"%d rows", file, tokenizer_n_vocab(m->tok),
			m->cfg.vocab_size);
		goto fail;
	}
	return m;
fail:
	model_free(m);
	return NULL;
}

/* ---- weights in huge pages ---- */

static model_weights_t g_weights_mode = MODEL_WEIGHTS_AUTO;

void model_set_weights(model_weights_t mode) { g_weights_mode = mode; }

static model_weights_t weights_mode(void)
{
	const char *e = getenv("EGANG_WEIGHTS");
	if (e && !strcmp(e, "map"))
		return MODEL_WEIGHTS_MAP;
	if (e && !strcmp(e, "huge"))
		return MODEL_WEIGHTS_HUGE;
	if (e && !strcmp(e, "auto"))
		return MODEL_WEIGHTS_AUTO;
	if (e && *e)
		log_error("EGANG_WEIGHTS=%s: not map, huge or auto; ignored", e);
	return g_weights_mode;
}

/* Transparent huge pages usable for madvise'd anonymous memory? */
static bool thp_usable(void)
{
	char *s = file_read_all("/sys/kernel/mm/transparent_hugepage/enabled", NULL);
	bool ok = s && !strstr(s, "[never]");
	free(s);
	return ok;
}

/* MemAvailable in bytes, or 0 when unknown. */
static uint64_t mem_available(void)
{
	char *s = file_read_all("/proc/meminfo", NULL);
	const char *p = s ? strstr(s, "MemAvailable:") : NULL;
	uint64_t kb = p ? strtoull(p + 13, NULL, 10) : 0;
	free(s);
	return kb << 10;
}

/* Every weight-matrix pointer of m, for the copy's span and the rebase;
 * norms and biases too (llama2.c files hold them between the matrices;
 * GGUF ones are owned f32 copies, outside the span, and left alone). */
static size_t weight_ptrs(model_t *m, const void ***out, size_t cap)
{
	size_t n = 0;
#define ADD(p)                                   	do {                                     		if (n < cap)                     			out[n] = (const void **)&(p); 		n++;                             	} while (0)
	ADD(m->tok_embd.data);
	ADD(m->output.data);
	ADD(m->output_norm);
	for (int l = 0; l < m->cfg.n_layers; l++) {
		layer_t *y = &m->layers[l];
		ADD(y->wq.data);
		ADD(y->wk.data);
		ADD(y->wv.data);
		ADD(y->wo.data);
		ADD(y->w_gate.data);
		ADD(y->w_down.data);
		ADD(y->w_up.data);
		ADD(y->attn_norm);
		ADD(y->ffn_norm);
	}
#undef ADD
	return n;
}

static uint64_t tensor_bytes(const tensor_t *t);

/* Copies the span of the weight matrices into anonymous memory advised for
 * huge pages and points the model at the copy. Returns 1 when copied, 0 when
 * the mapping is kept (the reason in *why), never fails the load. */
static int weights_to_huge(model_t *m, model_weights_t mode, const char **why)
{
	size_t np = weight_ptrs(m, NULL, 0);
	const void ***ptrs = malloc(np * sizeof *ptrs);
	weight_ptrs(m, ptrs, np);
	/* the span [lo, hi) of every matrix (the norms lie inside it or are
	 * owned copies elsewhere) */
	const tensor_t *mats[2] = {&m->tok_embd, &m->output};
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < 2; i++) {
		uintptr_t a = (uintptr_t)mats[i]->data;
		lo = a < lo ? a : lo;
		hi = a + tensor_bytes(mats[i]) > hi ? a + tensor_bytes(mats[i]) : hi;
	}
	for (int l = 0; l < m->cfg.n_layers; l++) {
		const layer_t *y = &m->layers[l];
		const tensor_t *t[7] = {&y->wq, &y->wk, &y->wv, &y->wo,
					&y->w_gate, &y->w_down, &y->w_up};
		for (int i = 0; i < 7; i++) {
			uintptr_t a = (uintptr_t)t[i]->data;
			lo = a < lo ? a : lo;
			hi = a + tensor_bytes(t[i]) > hi ? a + tensor_bytes(t[i]) : hi;
		}
	}
	size_t bytes = hi - lo;
	int rc = 0;
	const size_t huge = 2u << 20;
	uint64_t avail = mem_available();
	if (mode == MODEL_WEIGHTS_AUTO && bytes < (16u << 20)) {
		*why = "small enough for 4 KiB pages";
	} else if (!thp_usable()) {
		*why = "transparent huge pages are off";
	} else if (avail && bytes + (1ull << 30) > avail) {
		*why = "not enough available memory for a copy";
	} else {
		/* The copy keeps the span's offset within a 2 MiB page, so
		 * every tensor keeps its alignment. */
		size_t skew = lo & (huge - 1);
		size_t len = skew + bytes + 2 * huge;
		void *map = mmap(NULL, len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (map == MAP_FAILED) {
			*why = "mmap of the copy failed";
			goto out;
		}
		uint8_t *base = (uint8_t *)(((uintptr_t)map + huge - 1) & ~(uintptr_t)(huge - 1));
		if (madvise(base, skew + bytes, MADV_HUGEPAGE) < 0) {
			munmap(map, len);
			*why = "madvise(MADV_HUGEPAGE) refused";
			goto out;
		}
		uint8_t *dst = base + skew;
		const uint8_t *src = (const uint8_t *)lo;
		bool show = !log_quiet && bytes >= (256u << 20) && isatty(2);
		uint64_t t0 = time_now_ns(), last = t0;
		const size_t step = 64u << 20;
		long pg = sysconf(_SC_PAGESIZE);
		for (size_t off = 0; off < bytes; off += step) {
			size_t k = bytes - off < step ? bytes - off : step;
			memcpy(dst + off, src + off, k);
			/* drop the file pages from this process once copied
			 * (the page cache keeps them; RSS counts the copy once) */
			uintptr_t a = ((uintptr_t)src + off + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
			uintptr_t b = ((uintptr_t)src + off + k) & ~((uintptr_t)pg - 1);
			if (b > a)
				(void)madvise((void *)a, b - a, MADV_DONTNEED);
			uint64_t now = time_now_ns();
			if (show && (now - last > 100000000ull || off + k == bytes)) {
				fprintf(stderr, "\rloading weights into huge pages: %5.1f%%  %.2f / %.2f GB",
					100.0 * (double)(off + k) / (double)bytes,
					(double)(off + k) / 1e9, (double)bytes / 1e9);
				last = now;
			}
		}
		if (show)
			fputc('\n', stderr);
		for (size_t i = 0; i < np; i++) {
			uintptr_t p = (uintptr_t)*ptrs[i];
			if (p >= lo && p < hi)
				*ptrs[i] = dst + (p - lo);
		}
		m->wmem = map;
		m->wmem_len = len;
		m->weights_copied = true;
		m->weights_bytes = bytes;
		m->weights_load_s = (double)(time_now_ns() - t0) / 1e9;
		rc = 1;
	}
out:
	free(ptrs);
	return rc;
}

/* The matrices the decode matvec reads that the level in use can read
 * packed (pack16): each layer's seven and the classifier. */
static size_t pack_targets(model_t *m, tensor_t **out, size_t cap)
{
	size_t n = 0;
	tensor_t *t = &m->output;
	if (pack16_used(t->type, t->cols) && pack16_bytes(t->type, t->rows, t->cols) && n < cap)
		out[n++] = t;
	for (int l = 0; l < m->cfg.n_layers; l++) {
		layer_t *y = &m->layers[l];
		tensor_t *ts[7] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->w_gate, &y->w_down, &y->w_up};
		for (int i = 0; i < 7; i++)
			if (pack16_used(ts[i]->type, ts[i]->cols) &&
			    pack16_bytes(ts[i]->type, ts[i]->rows, ts[i]->cols) && n < cap)
				out[n++] = ts[i];
	}
	return n;
}

/* Packs the matrices in row groups for the AVX-512 decode matvec and
 * prefill gemm (kernels.h, "weights packed in row groups": 16 rows of
 * Q8_0 / Q4_0 / Q5_0, of Q4_1 / Q5_1, of Q4_K / Q5_K / Q6_K, 4 of F32 /
 * F16 / BF16): one more copy of them in
 * anonymous memory (huge pages where allowed), next to the rows as stored,
 * which the embedding lookup, a matrix's rows past its last whole group
 * and the other levels keep reading. Measured in doc/measurements.md
 * ("Speed"). Skipped, with a log line when the copy does not fit in MemAvailable with 1 GiB to spare,
 * or silently when EGANG_PACK=0 or nothing is packable (no AVX-512, rows
 * not a multiple of 32 elements). Never fails the load. */
static bool pack_wanted(void)
{
	const char *e = getenv("EGANG_PACK");
	return !(e && !strcmp(e, "0"));
}

/* Every matrix the decode matvec and the prefill gemm read has a packed
 * copy that covers it (all packable, rows a multiple of the group)? */
static bool pack_covers_all(model_t *m)
{
	if (!pack_wanted())
		return false;
	size_t cap = 1 + 7 * (size_t)m->cfg.n_layers;
	tensor_t **ts = malloc(cap * sizeof *ts);
	size_t nt = ts ? pack_targets(m, ts, cap) : 0;
	bool all = nt == cap;
	for (size_t i = 0; all && i < nt; i++)
		all = ts[i]->rows % pack16_group_rows(ts[i]->type) == 0;
	free(ts);
	return all;
}

static void weights_pack(model_t *m, const char *path)
{
	if (!pack_wanted())
		return;
	size_t cap = 1 + 7 * (size_t)m->cfg.n_layers;
	tensor_t **ts = malloc(cap * sizeof *ts);
	size_t nt = ts ? pack_targets(m, ts, cap) : 0, bytes = 0;
	/* Q5_0 is packed as the Q8_0 blocks it equals (the same bits, the
	 * VNNI kernels; kernels_impl.h q8_form): 34/22 of its file bytes */
	for (size_t i = 0; i < nt; i++)
		bytes += pack16_bytes(ts[i]->type, ts[i]->rows, ts[i]->cols);
	uint64_t avail = mem_available();
	if (!nt) {
		free(ts);
		return;
	}
	if (avail && bytes + (1ull << 30) > avail) {
		log_info("%s: %.1f MB of packed weights would not fit in available memory; "
			 "decode reads the rows as stored", base_name(path), (double)bytes / 1e6);
		free(ts);
		return;
	}
	const size_t huge = 2u << 20;
	size_t len = bytes + huge;
	void *map = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (map == MAP_FAILED) {
		log_info("%s: mmap of %.1f MB for packed weights failed; decode reads the rows as stored",
			 base_name(path), (double)bytes / 1e6);
		free(ts);
		return;
	}
	uint8_t *base = (uint8_t *)(((uintptr_t)map + huge - 1) & ~(uintptr_t)(huge - 1));
	if (thp_usable())
		(void)madvise(base, bytes, MADV_HUGEPAGE);
	bool show = !log_quiet && bytes >= (256u << 20) && isatty(2);
	uint64_t t0 = time_now_ns(), last = t0;
	size_t off = 0;
	for (size_t i = 0; i < nt; i++) {
		tensor_t *t = ts[i];
		pack16(t->type, t->data, t->rows, t->cols, base + off);
		t->packed = base + off;
		if (!m->weights_copied) {
			/* rows read through the file mapping: drop them from
			 * this process (the page cache keeps them; a later read
			 * faults them back in) so RSS counts the packed copy */
			long pg = sysconf(_SC_PAGESIZE);
			uintptr_t a = ((uintptr_t)t->data + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
			uintptr_t e = ((uintptr_t)t->data + (uintptr_t)tensor_bytes(t)) &
				      ~((uintptr_t)pg - 1);
			if (e > a)
				(void)madvise((void *)a, e - a, MADV_DONTNEED);
		}
		off += pack16_bytes(t->type, t->rows, t->cols);
		uint64_t now = time_now_ns();
		if (show && (now - last > 100000000ull || i + 1 == nt)) {
			fprintf(stderr, "\rpacking weights: %5.1f%%",
				100.0 * (double)off / (double)bytes);
			last = now;
		}
	}
	if (show)
		fputc('\n', stderr);
	m->pmem = map;
	m->pmem_len = len;
	m->packed_bytes = bytes;
	m->pack_s = (double)(time_now_ns() - t0) / 1e9;
	free(ts);
}

model_t *model_load(const char *path, const char *tok_path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err_set("%s: %s", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	char magic[4] = {0};
	if (fstat(fd, &st) < 0) {
		err_sys("fstat");
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		err_set("%s: not a regular file", path);
		close(fd);
		return NULL;
	}
	ssize_t k = pread(fd, magic, 4, 0);
	model_t *m;
	if (k == 4 && memcmp(magic, "GGUF", 4) == 0) {
		close(fd);
		m = load_gguf(path, tok_path);
	} else {
		m = load_llama2c(path, tok_path, fd, (size_t)st.st_size);
		close(fd);
	}
	if (m) {
		kernels_init();
		model_weights_t mode = weights_mode();
		const char *why = "";
		/* When every matrix decode and prefill read gets a packed copy
		 * (which is in huge pages itself), a huge-page copy of the rows
		 * as stored would only double the memory: AUTO leaves them in
		 * the file mapping. */
		if (mode == MODEL_WEIGHTS_AUTO && pack_covers_all(m))
			mode = MODEL_WEIGHTS_MAP;
		if (mode != MODEL_WEIGHTS_MAP && !weights_to_huge(m, mode, &why) &&
		    mode == MODEL_WEIGHTS_HUGE)
			log_info("%s: weights stay in the file mapping: %s",
				 base_name(path), why);
		else if (mode == MODEL_WEIGHTS_HUGE) /* asked for: say it */
			log_info("%s: %.1f MB of weights copied into huge pages in %.2f s",
				 base_name(path), (double)m->weights_bytes / 1e6,
				 m->weights_load_s);
		weights_pack(m, path);
	}
	return m;
}

static uint64_t tensor_bytes(const tensor_t *t)
{
	return (uint64_t)t->rows * dtype_row_bytes(t->type, t->cols);
}

uint64_t tensor_stream_bytes(const tensor_t *t)
{
	if (!t->packed)
		return tensor_bytes(t);
	int64_t g = pack16_group_rows(t->type);
	return (uint64_t)pack16_bytes(t->type, t->rows, t->cols) +
	       (uint64_t)(t->rows % g) * dtype_row_bytes(t->type, t->cols);
}

uint64_t model_bytes_per_token(const model_t *m)
{
	const model_config_t *c = &m->cfg;
	uint64_t b = tensor_stream_bytes(&m->output) +
		     dtype_row_bytes(m->tok_embd.type, c->dim);
	for (int l = 0; l < c->n_layers; l++) {
		const layer_t *y = &m->layers[l];
		b += tensor_stream_bytes(&y->wq) + tensor_stream_bytes(&y->wk) +
		     tensor_stream_bytes(&y->wv) + tensor_stream_bytes(&y->wo) +
		     tensor_stream_bytes(&y->w_gate) + tensor_stream_bytes(&y->w_down) +
		     tensor_stream_bytes(&y->w_up) + 8ull * (uint64_t)c->dim;
	}
	return b;
}

uint64_t model_n_params(const model_t *m)
{
	const model_config_t *c = &m->cfg;
	uint64_t D = (uint64_t)c->dim, H = (uint64_t)c->hidden_dim,
		 Q = (uint64_t)c->n_heads * (uint64_t)c->head_dim,
		 KV = (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim;
	uint64_t per = 2 * D * Q + 2 * D * KV + 3 * D * H + 2 * D;
	uint64_t n = (uint64_t)c->vocab_size * D * (m->output.data == m->tok_embd.data ? 1 : 2);
	return n + per * (uint64_t)c->n_layers + D;
}
