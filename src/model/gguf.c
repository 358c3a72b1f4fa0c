/* GGUF reader (memory-mapped, validated) and writer (version 3).
 *
 * The reader makes one pass over the header. Every count and length is
 * checked against the bytes that are left BEFORE anything is allocated or
 * indexed, and tables grow with the entries actually read, so the work and
 * the memory of an open are linear in the header's size whatever the
 * counts say:
 *  - n_kv and n_tensors must fit the bytes left at their minimum encoded
 *    sizes (KV_MIN, TENSOR_MIN);
 *  - a string of length n needs n bytes left; an array of n elements of at
 *    least s bytes each needs n <= left / s;
 *  - arrays may nest at most GGUF_MAX_NEST deep (no stack bomb);
 *  - dimensions are >= 1 (a dimension of 0 is refused: no empty tensors),
 *    their product fits int64 and the byte size fits size_t;
 *  - tensor data lies inside the file, at an offset that is a multiple of
 *    general.alignment (a uint32, a nonzero power of two, default 32);
 *  - the tensors' data tile the data section (rd_layout): no two share a
 *    byte and no byte between them, or after the last one's padding,
 *    belongs to none.
 * Keys must be non-empty and unique; tensor names likewise (checked by
 * sorting, which also serves lookups by binary search). Strings may hold
 * any bytes; messages escape control bytes so they stay on one line.
 *
 * The writer keeps every value in its encoded form (the bytes after the
 * type field), so copying the metadata of an open file is a byte copy. */
#include "model/gguf.h"

#include "base/base.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the GGUF reader assumes a little-endian host");

#define GGUF_MAGIC "GGUF"
#define GGUF_MAX_NEST 8 /* arrays of arrays deeper than this are refused */
#define KV_MIN 14     /* key len 8 + key >= 1 + type 4 + value >= 1 */
#define TENSOR_MIN 33 /* name len 8 + name >= 1 + n_dims 4 + ne 8 + type 4 +
			 offset 8 */
#define ARRAY_MIN 12  /* elem type 4 + n 8 */

/* ---- value types ---- */

static const struct {
	const char *name;
	uint8_t size; /* bytes of a scalar; 0 for string and array */
} type_tab[GGUF_TYPE_COUNT] = {
	[GGUF_TYPE_UINT8] = { "uint8", 1 },
	[GGUF_TYPE_INT8] = { "int8", 1 },
	[GGUF_TYPE_UINT16] = { "uint16", 2 },
	[GGUF_TYPE_INT16] = { "int16", 2 },
	[GGUF_TYPE_UINT32] = { "uint32", 4 },
	[GGUF_TYPE_INT32] = { "int32", 4 },
	[GGUF_TYPE_FLOAT32] = { "float32", 4 },
	[GGUF_TYPE_BOOL] = { "bool", 1 },
	[GGUF_TYPE_STRING] = { "string", 0 },
	[GGUF_TYPE_ARRAY] = { "array", 0 },
	[GGUF_TYPE_UINT64] = { "uint64", 8 },
	[GGUF_TYPE_INT64] = { "int64", 8 },
	[GGUF_TYPE_FLOAT64] = { "float64", 8 },
};

const char *gguf_type_name(gguf_type_t t)
{
	if ((unsigned)t >= GGUF_TYPE_COUNT)
		return "unknown";
	return type_tab[t].name;
}

/* Minimum encoded size of one value of type t (t < GGUF_TYPE_COUNT). */
static size_t type_min_size(uint32_t t)
{
	if (t == GGUF_TYPE_STRING)
		return 8;
	if (t == GGUF_TYPE_ARRAY)
		return ARRAY_MIN;
	return type_tab[t].size;
}

/* Names of ggml tensor types, only to say which one a file uses when egang
 * cannot load it. */
static const char *const ggml_type_names[] = {
	[0] = "f32",      [1] = "f16",      [2] = "q4_0",    [3] = "q4_1",
	[6] = "q5_0",     [7] = "q5_1",     [8] = "q8_0",    [9] = "q8_1",
	[10] = "q2_k",    [11] = "q3_k",    [12] = "q4_k",   [13] = "q5_k",
	[14] = "q6_k",    [15] = "q8_k",    [16] = "iq2_xxs", [17] = "iq2_xs",
	[18] = "iq3_xxs", [19] = "iq1_s",   [20] = "iq4_nl", [21] = "iq3_s",
	[22] = "iq2_s",   [23] = "iq4_xs",  [24] = "i8",     [25] = "i16",
	[26] = "i32",     [27] = "i64",     [28] = "f64",    [29] = "iq1_m",
	[30] = "bf16",    [34] = "tq1_0",   [35] = "tq2_0",  [39] = "mxfp4",
};

/* Writes s (n bytes, any content) into dst for a one-line message: control
 * bytes, quote and backslash escaped as \xNN, cut with "..." to fit cap. */
static const char *str_escape(char *dst, size_t cap, const void *s, size_t n)
{
	const unsigned char *p = s;
	size_t o = 0, lim = cap - 16; /* room for one escape, "..." and NUL */
	assert(cap >= 32);
	for (size_t i = 0; i < n; i++) {
		if (o >= lim) {
			memcpy(dst + o, "...", 3);
			o += 3;
			break;
		}
		unsigned c = p[i];
		if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\')
			o += (size_t)snprintf(dst + o, cap - o, "\\x%02x", c);
		else
			dst[o++] = (char)c;
	}
	dst[o] = '\0';
	return dst;
}

/* Byte size of a tensor of type t and shape ne[0..n_dims-1], or -1 with the
 * problem written to why. Shared by the reader and the writer. */
static int shape_nbytes(dtype_t t, uint32_t n_dims, const int64_t *ne,
			size_t *nbytes, char *why, size_t cap)
{
	const dtype_info_t *di = &dtype_info[t];
	int64_t nel = 1;
	if (n_dims < 1 || n_dims > GGUF_MAX_DIMS) {
		snprintf(why, cap, "n_dims %u is outside 1..%d", n_dims,
			 GGUF_MAX_DIMS);
		return -1;
	}
	for (uint32_t d = 0; d < n_dims; d++) {
		if (ne[d] < 1) {
			snprintf(why, cap, "ne[%u] = %lld (every dimension "
				 "must be >= 1)", d, (long long)ne[d]);
			return -1;
		}
		if (__builtin_mul_overflow(nel, ne[d], &nel)) {
			snprintf(why, cap, "the product of the dimensions "
				 "overflows int64");
			return -1;
		}
	}
	if (ne[0] % di->block) {
		snprintf(why, cap, "ne[0] = %lld is not a multiple of the %s "
			 "block size %u", (long long)ne[0], di->name, di->block);
		return -1;
	}
	if (__builtin_mul_overflow((uint64_t)(nel / di->block),
				   (uint64_t)di->block_bytes, nbytes)) {
		snprintf(why, cap, "the byte size (%lld blocks of %u bytes) "
			 "overflows size_t", (long long)(nel / di->block),
			 di->block_bytes);
		return -1;
	}
	return 0;
}

/* ---- name index ----
 * Names sorted once, then binary search: lookups and the duplicate check
 * cost O(n log n) whatever the names are (a hash table could be fed
 * colliding names and go quadratic). */

struct ent {
	gguf_str_t name;
	int64_t i; /* index in the file's order */
};

struct index {
	struct ent *e; /* sorted by name, then i */
	int64_t n;
};

static int name_cmp(const void *a, size_t an, const void *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	return c ? c : (an > bn) - (an < bn);
}

static int ent_cmp(const void *pa, const void *pb)
{
	const struct ent *a = pa, *b = pb;
	int c = name_cmp(a->name.s, a->name.n, b->name.s, b->name.n);
	return c ? c : (a->i > b->i) - (a->i < b->i);
}

/* Sorts ix->e[0..n-1] (filled by the caller). Returns the file index of
 * the first name (in file order) that repeats an earlier one and sets
 * *first to that earlier one's index; -1 if the names are unique. */
static int64_t index_sort(struct index *ix, int64_t *first)
{
	int64_t dup = -1, g = 0;
	qsort(ix->e, (size_t)ix->n, sizeof *ix->e, ent_cmp);
	for (int64_t k = 1; k < ix->n; k++) {
		const struct ent *a = &ix->e[k - 1], *b = &ix->e[k];
		if (name_cmp(a->name.s, a->name.n, b->name.s, b->name.n)) {
			g = k; /* a new group of equal names starts */
			continue;
		}
		if (dup < 0 || b->i < dup) {
			dup = b->i;
			*first = ix->e[g].i;
		}
	}
	return dup;
}

/* Index of the entry named s (n bytes); -1 if absent. */
static int64_t index_find(const struct index *ix, const void *s, size_t n)
{
	int64_t lo = 0, hi = ix->n; /* first entry >= s is in [lo, hi] */
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		const gguf_str_t *m = &ix->e[mid].name;
		if (name_cmp(m->s, m->n, s, n) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ix->n && !name_cmp(ix->e[lo].name.s, ix->e[lo].name.n, s, n))
		return ix->e[lo].i;
	return -1;
}

/* ---- reader ---- */

struct kv {
	gguf_str_t key;
	gguf_type_t type;
	const uint8_t *val; /* encoding after the type field */
	size_t val_n;
	gguf_type_t elem;     /* arrays: element type */
	uint64_t n;           /* arrays: element count */
	const uint8_t *elems; /* arrays: first element */
	const uint8_t **strs; /* string arrays: each element's length field */
};

struct gguf {
	const uint8_t *base;
	size_t size;
	void *map; /* mmap'd by gguf_open, NULL over a caller's buffer */
	uint32_t version;
	size_t alignment;
	size_t data_offset;
	int64_t n_kv;
	struct kv *kv;
	struct index kv_idx;
	int64_t n_tensors;
	gguf_tensor_t *t;
	struct index t_idx;
};

/* A cursor over the file with the context of the field being read. */
struct rd {
	const uint8_t *p;
	size_t size;
	size_t pos;
	char name[512]; /* file name, escaped */
	char ctx[160]; /* "kv 3 'general.name' value" */
};

/* Records "<file>: <ctx> at offset <off>: <problem>"; returns -1. */
static int rd_fail(struct rd *r, size_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int rd_fail(struct rd *r, size_t off, const char *fmt, ...)
{
	char problem[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(problem, sizeof problem, fmt, ap);
	va_end(ap);
	return err_set("%s: %s at offset %zu: %s", r->name, r->ctx, off,
		       problem);
}

static void rd_ctx(struct rd *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void rd_ctx(struct rd *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->ctx, sizeof r->ctx, fmt, ap);
	va_end(ap);
}

static size_t rd_left(const struct rd *r) { return r->size - r->pos; }

static int rd_need(struct rd *r, size_t n)
{
	if (n > rd_left(r))
		return rd_fail(r, r->pos, "truncated: needs %zu bytes, %zu "
			       "left", n, rd_left(r));
	return 0;
}

static int rd_u32(struct rd *r, uint32_t *v)
{
	if (rd_need(r, 4))
		return -1;
	memcpy(v, r->p + r->pos, 4);
	r->pos += 4;
	return 0;
}

static int rd_u64(struct rd *r, uint64_t *v)
{
	if (rd_need(r, 8))
		return -1;
	memcpy(v, r->p + r->pos, 8);
	r->pos += 8;
	return 0;
}

static int rd_str(struct rd *r, gguf_str_t *s)
{
	size_t off = r->pos;
	uint64_t n;
	if (rd_u64(r, &n))
		return -1;
	if (n > rd_left(r))
		return rd_fail(r, off, "string length %llu exceeds the %zu "
			       "bytes left", (unsigned long long)n,
			       rd_left(r));
	s->s = (const char *)r->p + r->pos;
	s->n = n;
	r->pos += n;
	return 0;
}

static int rd_array(struct rd *r, int depth, struct kv *kv);

/* Skips over one value of type t, checking it. */
static int rd_value(struct rd *r, uint32_t t, int depth)
{
	gguf_str_t s;
	switch (t) {
	case GGUF_TYPE_STRING:
		return rd_str(r, &s);
	case GGUF_TYPE_ARRAY:
		return rd_array(r, depth + 1, NULL);
	case GGUF_TYPE_BOOL:
		if (rd_need(r, 1))
			return -1;
		if (r->p[r->pos] > 1)
			return rd_fail(r, r->pos, "bool value %u is not 0 or 1",
				       r->p[r->pos]);
		r->pos++;
		return 0;
	default:
		if (t >= GGUF_TYPE_COUNT)
			return rd_fail(r, r->pos, "unknown value type %u", t);
		if (rd_need(r, type_tab[t].size))
			return -1;
		r->pos += type_tab[t].size;
		return 0;
	}
}

/* Reads an array (element type, count, elements) at nesting level depth
 * (1 for a top-level value); fills kv's array fields when kv is given. */
static int rd_array(struct rd *r, int depth, struct kv *kv)
{
	size_t off = r->pos;
	uint32_t elem;
	uint64_t n;
	if (depth > GGUF_MAX_NEST)
		return rd_fail(r, off, "arrays nested deeper than %d",
			       GGUF_MAX_NEST);
	if (rd_u32(r, &elem))
		return -1;
	if (elem >= GGUF_TYPE_COUNT)
		return rd_fail(r, off, "unknown array element type %u", elem);
	off = r->pos;
	if (rd_u64(r, &n))
		return -1;
	size_t min = type_min_size(elem);
	if (n > rd_left(r) / min)
		return rd_fail(r, off, "array length %llu exceeds the %zu "
			       "bytes left (%zu per %s element at least)",
			       (unsigned long long)n, rd_left(r), min,
			       type_tab[elem].name);
	if (kv) {
		kv->elem = (gguf_type_t)elem;
		kv->n = n;
		kv->elems = r->p + r->pos;
	}
	if (type_tab[elem].size && elem != GGUF_TYPE_BOOL) {
		r->pos += n * min; /* checked above */
		return 0;
	}
	if (kv && elem == GGUF_TYPE_STRING) {
		/* n <= left / 8: bounded by the file size */
		kv->strs = malloc(n ? n * sizeof *kv->strs : 1);
		if (!kv->strs)
			return rd_fail(r, off, "out of memory for %llu "
				       "strings", (unsigned long long)n);
	}
	for (uint64_t i = 0; i < n; i++) {
		if (kv && kv->strs)
			kv->strs[i] = r->p + r->pos;
		if (rd_value(r, elem, depth))
			return -1;
	}
	return 0;
}

static int rd_header(struct rd *r, gguf_t *g)
{
	uint64_t n_tensors, n_kv;
	rd_ctx(r, "magic");
	if (rd_need(r, 4))
		return -1;
	if (memcmp(r->p, GGUF_MAGIC, 4)) {
		char esc[80];
		return rd_fail(r, 0, "bad magic '%s' (not a GGUF file)",
			       str_escape(esc, sizeof esc, r->p, 4));
	}
	r->pos = 4;
	rd_ctx(r, "version");
	if (rd_u32(r, &g->version))
		return -1;
	if (g->version == 1)
		return rd_fail(r, 4, "version 1 is not supported (egang "
			       "reads versions 2 and 3)");
	if (g->version != 2 && g->version != 3)
		return rd_fail(r, 4, "unknown version %u%s (egang reads "
			       "versions 2 and 3)", g->version,
			       g->version && (g->version & 0xffff) == 0 ?
				       ", a big-endian file?" : "");
	rd_ctx(r, "n_tensors");
	if (rd_u64(r, &n_tensors))
		return -1;
	rd_ctx(r, "n_kv");
	if (rd_u64(r, &n_kv))
		return -1;
	/* Both tables must fit the bytes left at their minimum sizes. */
	size_t left = rd_left(r);
	if (n_kv > left / KV_MIN)
		return rd_fail(r, 16, "n_kv = %llu key-values cannot fit the "
			       "%zu bytes left", (unsigned long long)n_kv,
			       left);
	left -= n_kv * KV_MIN;
	rd_ctx(r, "n_tensors");
	if (n_tensors > left / TENSOR_MIN)
		return rd_fail(r, 8, "n_tensors = %llu tensor infos cannot "
			       "fit the %zu bytes left", (unsigned long long)
			       n_tensors, left);
	g->n_kv = (int64_t)n_kv;
	g->n_tensors = (int64_t)n_tensors;
	return 0;
}

/* Makes room for entry i in *p (capacity *cap, elem bytes each, zeroed),
 * doubling: memory follows the entries actually read, not the count the
 * header claims. */
static int grow(void *p, size_t *cap, int64_t i, size_t elem)
{
	void **pp = p;
	if ((size_t)i < *cap)
		return 0;
	size_t ncap = *cap ? 2 * *cap : 64;
	void *np = realloc(*pp, ncap * elem);
	if (!np)
		return -1;
	memset((char *)np + *cap * elem, 0, (ncap - *cap) * elem);
	*pp = np;
	*cap = ncap;
	return 0;
}

static int rd_kvs(struct rd *r, gguf_t *g)
{
	char esc[80];
	size_t cap = 0;
	int64_t n = g->n_kv;
	g->n_kv = 0; /* entries read so far, for gguf_close */
	for (int64_t i = 0; i < n; i++) {
		size_t off = r->pos;
		uint32_t type;
		rd_ctx(r, "kv %lld key", (long long)i);
		if (grow(&g->kv, &cap, i, sizeof *g->kv))
			return rd_fail(r, off, "out of memory");
		struct kv *kv = &g->kv[i];
		g->n_kv = i + 1;
		if (rd_str(r, &kv->key))
			return -1;
		if (kv->key.n == 0)
			return rd_fail(r, off, "empty key");
		rd_ctx(r, "kv %lld '%s'", (long long)i,
		       str_escape(esc, sizeof esc, kv->key.s, kv->key.n));
		off = r->pos;
		if (rd_u32(r, &type))
			return -1;
		if (type >= GGUF_TYPE_COUNT)
			return rd_fail(r, off, "unknown value type %u", type);
		kv->type = (gguf_type_t)type;
		kv->val = r->p + r->pos;
		if (type == GGUF_TYPE_ARRAY) {
			if (rd_array(r, 1, kv))
				return -1;
		} else if (rd_value(r, type, 0)) {
			return -1;
		}
		kv->val_n = (size_t)(r->p + r->pos - kv->val);
	}
	g->kv_idx.e = malloc((n ? (size_t)n : 1) * sizeof *g->kv_idx.e);
	if (!g->kv_idx.e)
		return rd_fail(r, r->pos, "out of memory");
	for (int64_t i = 0; i < n; i++)
		g->kv_idx.e[i] = (struct ent){ g->kv[i].key, i };
	g->kv_idx.n = n;
	int64_t first, dup = index_sort(&g->kv_idx, &first);
	if (dup >= 0) {
		const struct kv *kv = &g->kv[dup];
		rd_ctx(r, "kv %lld '%s'", (long long)dup,
		       str_escape(esc, sizeof esc, kv->key.s, kv->key.n));
		return rd_fail(r, (size_t)((const uint8_t *)kv->key.s - 8 -
					   r->p),
			       "duplicate key (first at kv %lld)",
			       (long long)first);
	}
	return 0;
}

static int rd_alignment(struct rd *r, gguf_t *g)
{
	int64_t i = gguf_find_key(g, "general.alignment");
	uint32_t a;
	g->alignment = GGUF_DEFAULT_ALIGNMENT;
	if (i < 0)
		return 0;
	const struct kv *kv = &g->kv[i];
	size_t off = (size_t)(kv->val - r->p);
	rd_ctx(r, "general.alignment");
	if (kv->type != GGUF_TYPE_UINT32)
		return rd_fail(r, off, "type is %s, must be uint32",
			       gguf_type_name(kv->type));
	memcpy(&a, kv->val, 4);
	if (a == 0 || (a & (a - 1)))
		return rd_fail(r, off, "%u is not a nonzero power of two", a);
	g->alignment = a;
	return 0;
}

static int rd_tensors(struct rd *r, gguf_t *g)
{
	char esc[80], why[160];
	size_t cap = 0;
	int64_t n = g->n_tensors;
	g->n_tensors = 0; /* entries read so far */
	for (int64_t i = 0; i < n; i++) {
		size_t off = r->pos;
		uint32_t gtype;
		rd_ctx(r, "tensor %lld name", (long long)i);
		if (grow(&g->t, &cap, i, sizeof *g->t))
			return rd_fail(r, off, "out of memory");
		gguf_tensor_t *t = &g->t[i];
		g->n_tensors = i + 1;
		if (rd_str(r, &t->name))
			return -1;
		if (t->name.n == 0)
			return rd_fail(r, off, "empty name");
		rd_ctx(r, "tensor %lld '%s'", (long long)i,
		       str_escape(esc, sizeof esc, t->name.s, t->name.n));
		size_t shape_off = r->pos;
		if (rd_u32(r, &t->n_dims))
			return -1;
		if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
			return rd_fail(r, shape_off, "n_dims %u is outside "
				       "1..%d", t->n_dims, GGUF_MAX_DIMS);
		for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
			uint64_t ne = 1;
			if (d < t->n_dims && rd_u64(r, &ne))
				return -1;
			t->ne[d] = (int64_t)ne;
		}
		off = r->pos;
		if (rd_u32(r, &gtype))
			return -1;
		int dt = dtype_from_ggml(gtype);
		if (dt < 0) {
			const char *nm = gtype < EG_ARRAY_LEN(ggml_type_names) ?
					 ggml_type_names[gtype] : NULL;
			if (nm)
				return rd_fail(r, off, "unsupported tensor "
					       "type %u (%s)", gtype, nm);
			return rd_fail(r, off, "unknown tensor type %u",
				       gtype);
		}
		t->type = (dtype_t)dt;
		if (shape_nbytes(t->type, t->n_dims, t->ne, &t->nbytes, why,
				 sizeof why))
			return rd_fail(r, shape_off, "%s", why);
		if (rd_u64(r, &t->offset))
			return -1;
	}
	g->t_idx.e = malloc((n ? (size_t)n : 1) * sizeof *g->t_idx.e);
	if (!g->t_idx.e)
		return rd_fail(r, r->pos, "out of memory");
	for (int64_t i = 0; i < n; i++)
		g->t_idx.e[i] = (struct ent){ g->t[i].name, i };
	g->t_idx.n = n;
	int64_t first, dup = index_sort(&g->t_idx, &first);
	if (dup >= 0) {
		const gguf_tensor_t *t = &g->t[dup];
		rd_ctx(r, "tensor %lld '%s'", (long long)dup,
		       str_escape(esc, sizeof esc, t->name.s, t->name.n));
		return rd_fail(r, (size_t)((const uint8_t *)t->name.s - 8 -
					   r->p),
			       "duplicate tensor name (first at tensor %lld)",
			       (long long)first);
	}
	return 0;
}

/* Places the data section after the header and checks every tensor's data
 * against it. */
static int rd_data(struct rd *r, gguf_t *g)
{
	size_t a = g->alignment, end = r->pos;
	char esc[80];
	if (__builtin_add_overflow(end, a - 1, &g->data_offset))
		g->data_offset = SIZE_MAX;
	g->data_offset &= ~(a - 1);
	if (g->n_tensors == 0)
		return 0;
	rd_ctx(r, "data section");
	if (g->data_offset > r->size)
		return rd_fail(r, end, "starts at %zu (header end aligned to "
			       "%zu), past the end of the file (%zu bytes)",
			       g->data_offset, a, r->size);
	size_t avail = r->size - g->data_offset;
	for (int64_t i = 0; i < g->n_tensors; i++) {
		gguf_tensor_t *t = &g->t[i];
		rd_ctx(r, "tensor '%s' data",
		       str_escape(esc, sizeof esc, t->name.s, t->name.n));
		if (t->offset % a)
			return err_set("%s: %s at offset %zu+%llu: offset "
				       "%llu is not a multiple of the "
				       "alignment %zu", r->name, r->ctx,
				       g->data_offset,
				       (unsigned long long)t->offset,
				       (unsigned long long)t->offset, a);
		if (t->offset > avail || t->nbytes > avail - t->offset)
			return err_set("%s: %s at offset %zu+%llu: %zu bytes "
				       "exceed file size %zu", r->name,
				       r->ctx, g->data_offset,
				       (unsigned long long)t->offset,
				       t->nbytes, r->size);
		t->data = r->p + g->data_offset + t->offset;
	}
	return 0;
}

/* A tensor's data span, for the layout check. */
struct span {
	uint64_t off; /* in the data section */
	int64_t i;    /* the tensor's index */
};

static int span_cmp(const void *pa, const void *pb)
{
	const struct span *a = pa, *b = pb;
	if (a->off != b->off)
		return a->off < b->off ? -1 : 1;
	return (a->i > b->i) - (a->i < b->i);
}

/* Checks that the tensors' data tile the data section as writers lay it
 * out (ggml's reader requires the same, in file order; egang accepts any
 * order): sorted by offset, the first at 0, each where the one before
 * ends padded to the alignment, and the file ending within the last one's
 * padding. Two tensors that share bytes (equal or overlapping offsets), or
 * bytes that belong to no tensor (a type or shape changed in a tensor
 * info, so that its size disagrees with the layout) are refused: the data
 * would be read as something it is not. */
static int rd_layout(struct rd *r, gguf_t *g)
{
	size_t a = g->alignment, d = g->data_offset;
	char esc[80], esc2[80];
	struct span *sp = malloc((size_t)g->n_tensors * sizeof *sp);
	if (!sp)
		return rd_fail(r, d, "out of memory");
	for (int64_t i = 0; i < g->n_tensors; i++)
		sp[i] = (struct span){ g->t[i].offset, i };
	qsort(sp, (size_t)g->n_tensors, sizeof *sp, span_cmp);
	uint64_t next = 0; /* where the next tensor must start */
	const gguf_tensor_t *prev = NULL;
	int rc = 0;
	for (int64_t k = 0; k < g->n_tensors && !rc; k++) {
		const gguf_tensor_t *t = &g->t[sp[k].i];
		str_escape(esc, sizeof esc, t->name.s, t->name.n);
		if (prev)
			str_escape(esc2, sizeof esc2, prev->name.s, prev->name.n);
		if (!prev && t->offset != 0)
			rc = err_set("%s: tensor '%s' data at offset %zu+%llu: the data "
				     "section's first %llu bytes belong to no tensor",
				     r->name, esc, d, (unsigned long long)t->offset,
				     (unsigned long long)t->offset);
		else if (prev && t->offset < next)
			rc = err_set("%s: tensor '%s' data at offset %zu+%llu: overlaps "
				     "tensor '%s' (%zu bytes at +%llu)", r->name, esc, d,
				     (unsigned long long)t->offset, esc2, prev->nbytes,
				     (unsigned long long)prev->offset);
		else if (prev && t->offset > next)
			rc = err_set("%s: tensor '%s' data at offset %zu+%llu: %zu bytes "
				     "of %s end at +%llu, but the next tensor '%s' starts "
				     "at +%llu (a type or shape that disagrees with the "
				     "data layout)", r->name, esc2, d,
				     (unsigned long long)prev->offset, prev->nbytes,
				     dtype_info[prev->type].name,
				     (unsigned long long)(prev->offset + prev->nbytes), esc,
				     (unsigned long long)t->offset);
		/* inside the file (rd_data): the padded end cannot overflow */
		next = (t->offset + t->nbytes + a - 1) & ~(uint64_t)(a - 1);
		prev = t;
	}
	free(sp);
	if (rc)
		return rc;
	uint64_t end = prev->offset + prev->nbytes, have = r->size - d;
	if (have > next) {
		str_escape(esc, sizeof esc, prev->name.s, prev->name.n);
		return err_set("%s: tensor '%s' data at offset %zu+%llu: %zu bytes of "
			       "%s end at +%llu, but the file goes on to +%llu (a "
			       "type or shape that disagrees with the data layout)",
			       r->name, esc, d, (unsigned long long)prev->offset,
			       prev->nbytes, dtype_info[prev->type].name,
			       (unsigned long long)end, (unsigned long long)have);
	}
	return 0;
}

gguf_t *gguf_open_buffer(const void *buf, size_t len, const char *name)
{
	static const uint8_t empty[1];
	struct rd r = { .p = buf ? buf : empty, .size = buf ? len : 0 };
	gguf_t *g = calloc(1, sizeof *g);
	str_escape(r.name, sizeof r.name, name ? name : "(buffer)",
		   strlen(name ? name : "(buffer)"));
	if (!g) {
		err_set("%s: out of memory", r.name);
		return NULL;
	}
	g->base = r.p;
	g->size = r.size;
	if (rd_header(&r, g) || rd_kvs(&r, g) || rd_alignment(&r, g) ||
	    rd_tensors(&r, g) || rd_data(&r, g) ||
	    (g->n_tensors > 0 && rd_layout(&r, g))) {
		gguf_close(g);
		return NULL;
	}
	return g;
}

gguf_t *gguf_open(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	void *map = NULL;
	if (fd < 0) {
		err_set("%s: open: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		err_set("%s: fstat: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		err_set("%s: not a regular file", path);
		close(fd);
		return NULL;
	}
	size_t size = (size_t)st.st_size;
	if (size > 0) {
		map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			err_set("%s: mmap: %s", path, strerror(errno));
			close(fd);
			return NULL;
		}
	}
	close(fd);
	gguf_t *g = gguf_open_buffer(map, size, path);
	if (!g) {
		if (map)
			munmap(map, size);
		return NULL;
	}
	g->map = map;
	return g;
}

void gguf_close(gguf_t *g)
{
	if (!g)
		return;
	if (g->kv)
		for (int64_t i = 0; i < g->n_kv; i++)
			free(g->kv[i].strs);
	free(g->kv);
	free(g->kv_idx.e);
	free(g->t);
	free(g->t_idx.e);
	if (g->map)
		munmap(g->map, g->size);
	free(g);
}

uint32_t gguf_version(const gguf_t *g) { return g->version; }
size_t gguf_alignment(const gguf_t *g) { return g->alignment; }
size_t gguf_file_size(const gguf_t *g) { return g->size; }
size_t gguf_data_offset(const gguf_t *g) { return g->data_offset; }

/* ---- metadata accessors ---- */

int64_t gguf_n_kv(const gguf_t *g) { return g->n_kv; }

int64_t gguf_find_key(const gguf_t *g, const char *key)
{
	return index_find(&g->kv_idx, key, strlen(key));
}

static const struct kv *kv_at(const gguf_t *g, int64_t i)
{
	assert(i >= 0 && i < g->n_kv);
	return &g->kv[i];
}

static const struct kv *kv_find(const gguf_t *g, const char *key)
{
	int64_t i = gguf_find_key(g, key);
	return i < 0 ? NULL : &g->kv[i];
}

gguf_str_t gguf_key(const gguf_t *g, int64_t i) { return kv_at(g, i)->key; }

gguf_type_t gguf_kv_type(const gguf_t *g, int64_t i)
{
	return kv_at(g, i)->type;
}

/* Value of an integer scalar; -1 if kv is not one or does not fit int64. */
static int kv_int(const struct kv *kv, int64_t *out)
{
	const uint8_t *p = kv->val;
	union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16;
		uint32_t u32; int32_t i32; uint64_t u64; int64_t i64; } v;
	memcpy(&v, p, type_tab[kv->type].size); /* 0 for string, array */
	switch (kv->type) {
	case GGUF_TYPE_UINT8: *out = v.u8; return 0;
	case GGUF_TYPE_INT8: *out = v.i8; return 0;
	case GGUF_TYPE_UINT16: *out = v.u16; return 0;
	case GGUF_TYPE_INT16: *out = v.i16; return 0;
	case GGUF_TYPE_UINT32: *out = v.u32; return 0;
	case GGUF_TYPE_INT32: *out = v.i32; return 0;
	case GGUF_TYPE_INT64: *out = v.i64; return 0;
	case GGUF_TYPE_UINT64:
		if (v.u64 > INT64_MAX)
			return -1;
		*out = (int64_t)v.u64;
		return 0;
	default:
		return -1;
	}
}

int gguf_get_int(const gguf_t *g, const char *key, int64_t *out)
{
	const struct kv *kv = kv_find(g, key);
	return kv ? kv_int(kv, out) : -1;
}

int gguf_get_float(const gguf_t *g, const char *key, double *out)
{
	const struct kv *kv = kv_find(g, key);
	int64_t i;
	if (!kv)
		return -1;
	if (kv->type == GGUF_TYPE_FLOAT32) {
		float f;
		memcpy(&f, kv->val, 4);
		*out = f;
		return 0;
	}
	if (kv->type == GGUF_TYPE_FLOAT64) {
		memcpy(out, kv->val, 8);
		return 0;
	}
	/* integers convert exactly up to 2^53 */
	if (kv_int(kv, &i) || i > (1ll << 53) || i < -(1ll << 53))
		return -1;
	*out = (double)i;
	return 0;
}

int gguf_get_bool(const gguf_t *g, const char *key, bool *out)
{
	const struct kv *kv = kv_find(g, key);
	if (!kv || kv->type != GGUF_TYPE_BOOL)
		return -1;
	*out = kv->val[0] != 0;
	return 0;
}

int gguf_get_str(const gguf_t *g, const char *key, gguf_str_t *out)
{
	const struct kv *kv = kv_find(g, key);
	uint64_t n;
	if (!kv || kv->type != GGUF_TYPE_STRING)
		return -1;
	memcpy(&n, kv->val, 8);
	out->s = (const char *)kv->val + 8;
	out->n = n;
	return 0;
}

int gguf_get_arr(const gguf_t *g, const char *key, gguf_type_t *elem,
		 uint64_t *n)
{
	const struct kv *kv = kv_find(g, key);
	if (!kv || kv->type != GGUF_TYPE_ARRAY)
		return -1;
	*elem = kv->elem;
	*n = kv->n;
	return 0;
}

int gguf_arr_str(const gguf_t *g, const char *key, uint64_t i, gguf_str_t *out)
{
	const struct kv *kv = kv_find(g, key);
	uint64_t n;
	if (!kv || kv->type != GGUF_TYPE_ARRAY || kv->elem != GGUF_TYPE_STRING
	    || i >= kv->n)
		return -1;
	memcpy(&n, kv->strs[i], 8);
	out->s = (const char *)kv->strs[i] + 8;
	out->n = n;
	return 0;
}

const void *gguf_arr_data(const gguf_t *g, const char *key)
{
	const struct kv *kv = kv_find(g, key);
	if (!kv || kv->type != GGUF_TYPE_ARRAY || !type_tab[kv->elem].size)
		return NULL;
	return kv->elems;
}

void gguf_kv_raw(const gguf_t *g, int64_t i, const void **p, size_t *n)
{
	const struct kv *kv = kv_at(g, i);
	*p = kv->val;
	*n = kv->val_n;
}

size_t gguf_kv_offset(const gguf_t *g, int64_t i)
{
	return (size_t)(kv_at(g, i)->val - g->base);
}

/* ---- tensors ---- */

int64_t gguf_n_tensors(const gguf_t *g) { return g->n_tensors; }

const gguf_tensor_t *gguf_tensor(const gguf_t *g, int64_t i)
{
	assert(i >= 0 && i < g->n_tensors);
	return &g->t[i];
}

const gguf_tensor_t *gguf_find_tensor(const gguf_t *g, const char *name)
{
	int64_t i = index_find(&g->t_idx, name, strlen(name));
	return i < 0 ? NULL : &g->t[i];
}

/* ---- writer ---- */

struct wkv {
	char *key; /* key_n bytes (+ NUL) */
	size_t key_n;
	gguf_type_t type;
	uint8_t *val; /* encoding after the type field */
	size_t val_n;
};

struct wtensor {
	char *name;
	dtype_t type;
	uint32_t n_dims;
	int64_t ne[GGUF_MAX_DIMS];
	const void *data; /* NULL: from the fill callback */
	size_t nbytes;
	uint64_t offset; /* in the data section, set by write */
};

struct gguf_writer {
	struct wkv *kv;
	size_t n_kv, cap_kv;
	struct wtensor *t;
	size_t n_t, cap_t;
	gguf_fill_fn fill;
	void *fill_user;
	gguf_progress_fn progress;
	void *progress_user;
	char err[512]; /* first error of a setter (they return void), or "" */
};

static void writer_fail(gguf_writer_t *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void writer_fail(gguf_writer_t *w, const char *fmt, ...)
{
	va_list ap;
	if (w->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(w->err, sizeof w->err, fmt, ap);
	va_end(ap);
}

gguf_writer_t *gguf_writer_new(void)
{
	return calloc(1, sizeof(gguf_writer_t));
}

void gguf_writer_free(gguf_writer_t *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n_kv; i++) {
		free(w->kv[i].key);
		free(w->kv[i].val);
	}
	for (size_t i = 0; i < w->n_t; i++)
		free(w->t[i].name);
	free(w->kv);
	free(w->t);
	free(w);
}

/* Sets key (key_n bytes) to an encoded value; takes ownership of val
 * (NULL: the caller ran out of memory). */
static void writer_put(gguf_writer_t *w, const char *key, size_t key_n,
		       gguf_type_t type, uint8_t *val, size_t val_n)
{
	struct wkv *kv = NULL;
	char esc[80];
	if (!val) {
		writer_fail(w, "out of memory for key '%s'",
			    str_escape(esc, sizeof esc, key, key_n));
		return;
	}
	if (key_n == 0) {
		writer_fail(w, "empty key");
		free(val);
		return;
	}
	for (size_t i = 0; i < w->n_kv; i++)
		if (w->kv[i].key_n == key_n && !memcmp(w->kv[i].key, key, key_n))
			kv = &w->kv[i];
	if (kv) {
		free(kv->val);
	} else {
		if (w->n_kv == w->cap_kv) {
			size_t cap = w->cap_kv ? 2 * w->cap_kv : 16;
			struct wkv *p = realloc(w->kv, cap * sizeof *p);
			if (!p) {
				free(val);
				writer_fail(w, "out of memory for key '%s'",
					    str_escape(esc, sizeof esc, key,
						       key_n));
				return;
			}
			w->kv = p;
			w->cap_kv = cap;
		}
		char *k = malloc(key_n + 1);
		if (!k) {
			free(val);
			writer_fail(w, "out of memory for key '%s'",
				    str_escape(esc, sizeof esc, key, key_n));
			return;
		}
		memcpy(k, key, key_n);
		k[key_n] = '\0';
		kv = &w->kv[w->n_kv++];
		kv->key = k;
		kv->key_n = key_n;
	}
	kv->type = type;
	kv->val = val;
	kv->val_n = val_n;
}

/* Sets a scalar of n bytes. */
static void writer_scalar(gguf_writer_t *w, const char *key, gguf_type_t type,
			  const void *v, size_t n)
{
	uint8_t *val = malloc(n);
	if (val)
		memcpy(val, v, n);
	writer_put(w, key, strlen(key), type, val, n);
}

void gguf_writer_set_scalar(gguf_writer_t *w, const char *key,
			    gguf_type_t type, const void *v)
{
	if ((unsigned)type >= GGUF_TYPE_COUNT || !type_tab[type].size) {
		writer_fail(w, "key '%s': set_scalar needs a numeric or bool "
			    "type, not %s", key, gguf_type_name(type));
		return;
	}
	if (type == GGUF_TYPE_BOOL && *(const uint8_t *)v > 1) {
		writer_fail(w, "key '%s': bool value %u is not 0 or 1", key,
			    *(const uint8_t *)v);
		return;
	}
	writer_scalar(w, key, type, v, type_tab[type].size);
}

void gguf_writer_set_u32(gguf_writer_t *w, const char *key, uint32_t v)
{
	writer_scalar(w, key, GGUF_TYPE_UINT32, &v, sizeof v);
}

void gguf_writer_set_i32(gguf_writer_t *w, const char *key, int32_t v)
{
	writer_scalar(w, key, GGUF_TYPE_INT32, &v, sizeof v);
}

void gguf_writer_set_u64(gguf_writer_t *w, const char *key, uint64_t v)
{
	writer_scalar(w, key, GGUF_TYPE_UINT64, &v, sizeof v);
}

void gguf_writer_set_f32(gguf_writer_t *w, const char *key, float v)
{
	writer_scalar(w, key, GGUF_TYPE_FLOAT32, &v, sizeof v);
}

void gguf_writer_set_bool(gguf_writer_t *w, const char *key, bool v)
{
	uint8_t b = v ? 1 : 0;
	writer_scalar(w, key, GGUF_TYPE_BOOL, &b, 1);
}

void gguf_writer_set_str(gguf_writer_t *w, const char *key, const char *v)
{
	uint64_t n = strlen(v);
	uint8_t *val = malloc(8 + n);
	if (val) {
		memcpy(val, &n, 8);
		memcpy(val + 8, v, n);
	}
	writer_put(w, key, strlen(key), GGUF_TYPE_STRING, val, 8 + n);
}

void gguf_writer_set_arr(gguf_writer_t *w, const char *key, gguf_type_t elem,
			 const void *data, uint64_t n)
{
	uint32_t e = elem;
	size_t bytes;
	if ((unsigned)elem >= GGUF_TYPE_COUNT || !type_tab[elem].size) {
		writer_fail(w, "key '%s': set_arr needs a numeric element "
			    "type, not %s", key, gguf_type_name(elem));
		return;
	}
	if (elem == GGUF_TYPE_BOOL)
		for (uint64_t i = 0; i < n; i++)
			if (((const uint8_t *)data)[i] > 1) {
				writer_fail(w, "key '%s': bool element %llu "
					    "is not 0 or 1", key,
					    (unsigned long long)i);
				return;
			}
	if (__builtin_mul_overflow(n, (uint64_t)type_tab[elem].size, &bytes) ||
	    bytes > SIZE_MAX - ARRAY_MIN) {
		writer_fail(w, "key '%s': array of %llu elements is too "
			    "large", key, (unsigned long long)n);
		return;
	}
	uint8_t *val = malloc(ARRAY_MIN + bytes);
	if (val) {
		memcpy(val, &e, 4);
		memcpy(val + 4, &n, 8);
		if (bytes)
			memcpy(val + ARRAY_MIN, data, bytes);
	}
	writer_put(w, key, strlen(key), GGUF_TYPE_ARRAY, val, ARRAY_MIN + bytes);
}

void gguf_writer_set_arr_str(gguf_writer_t *w, const char *key,
			     const char *const *v, uint64_t n)
{
	uint32_t e = GGUF_TYPE_STRING;
	size_t bytes = ARRAY_MIN;
	for (uint64_t i = 0; i < n; i++)
		bytes += 8 + strlen(v[i]);
	uint8_t *val = malloc(bytes), *p = val;
	if (val) {
		memcpy(p, &e, 4);
		memcpy(p + 4, &n, 8);
		p += ARRAY_MIN;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t len = strlen(v[i]);
			memcpy(p, &len, 8);
			memcpy(p + 8, v[i], len);
			p += 8 + len;
		}
	}
	writer_put(w, key, strlen(key), GGUF_TYPE_ARRAY, val, bytes);
}

void gguf_writer_copy_kv(gguf_writer_t *w, const gguf_t *g)
{
	for (int64_t i = 0; i < g->n_kv; i++) {
		const struct kv *kv = &g->kv[i];
		uint8_t *val = malloc(kv->val_n ? kv->val_n : 1);
		if (val)
			memcpy(val, kv->val, kv->val_n);
		writer_put(w, kv->key.s, kv->key.n, kv->type, val, kv->val_n);
	}
}

int gguf_writer_add_tensor(gguf_writer_t *w, const char *name, dtype_t type,
			   uint32_t n_dims, const int64_t *ne, const void *data)
{
	struct wtensor t = { .type = type, .n_dims = n_dims, .data = data };
	char why[160];
	if (!name || !*name)
		return err_set("gguf writer: tensor %zu: empty name", w->n_t);
	if ((unsigned)type >= DTYPE_COUNT)
		return err_set("gguf writer: tensor '%s': bad type %d", name,
			       (int)type);
	for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++)
		t.ne[d] = d < n_dims ? ne[d] : 1;
	if (shape_nbytes(type, n_dims, t.ne, &t.nbytes, why, sizeof why))
		return err_set("gguf writer: tensor '%s': %s", name, why);
	for (size_t i = 0; i < w->n_t; i++)
		if (!strcmp(w->t[i].name, name))
			return err_set("gguf writer: tensor '%s' added twice",
				       name);
	if (w->n_t == w->cap_t) {
		size_t cap = w->cap_t ? 2 * w->cap_t : 64;
		struct wtensor *p = realloc(w->t, cap * sizeof *p);
		if (!p)
			return err_set("gguf writer: out of memory");
		w->t = p;
		w->cap_t = cap;
	}
	t.name = strdup(name);
	if (!t.name)
		return err_set("gguf writer: out of memory");
	w->t[w->n_t++] = t;
	return 0;
}

void gguf_writer_set_fill(gguf_writer_t *w, gguf_fill_fn fn, void *user)
{
	w->fill = fn;
	w->fill_user = user;
}

void gguf_writer_set_progress(gguf_writer_t *w, gguf_progress_fn fn,
			      void *user)
{
	w->progress = fn;
	w->progress_user = user;
}

/* A buffered output file that tracks its position; the first failure
 * sticks in err and later writes do nothing. */
struct wr {
	FILE *f;
	uint64_t pos;
	int err; /* errno of the first failed write, or 0 */
};

static void wr_bytes(struct wr *o, const void *p, size_t n)
{
	if (o->err || n == 0)
		return;
	if (fwrite(p, 1, n, o->f) != n)
		o->err = errno ? errno : EIO;
	o->pos += n;
}

static void wr_u32(struct wr *o, uint32_t v) { wr_bytes(o, &v, 4); }
static void wr_u64(struct wr *o, uint64_t v) { wr_bytes(o, &v, 8); }

/* Writes zeros up to file position to. */
static void wr_pad(struct wr *o, uint64_t to)
{
	static const uint8_t zero[256];
	while (o->pos < to && !o->err) {
		uint64_t n = to - o->pos;
		wr_bytes(o, zero, n < sizeof zero ? (size_t)n : sizeof zero);
	}
}

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

/* The alignment the file will use; -1 if general.alignment is bad. */
static int writer_alignment(const gguf_writer_t *w, const char *path,
			    size_t *align)
{
	uint32_t a;
	*align = GGUF_DEFAULT_ALIGNMENT;
	for (size_t i = 0; i < w->n_kv; i++) {
		const struct wkv *kv = &w->kv[i];
		if (strcmp(kv->key, "general.alignment") || kv->key_n != 17)
			continue;
		if (kv->type != GGUF_TYPE_UINT32)
			return err_set("%s: general.alignment must be a "
				       "uint32, not %s", path,
				       gguf_type_name(kv->type));
		memcpy(&a, kv->val, 4);
		if (a == 0 || (a & (a - 1)))
			return err_set("%s: general.alignment %u is not a "
				       "nonzero power of two", path, a);
		*align = a;
	}
	return 0;
}

/* Writes header, metadata, tensor infos and data to o. */
static int writer_emit(gguf_writer_t *w, struct wr *o, size_t align,
		       const char *path)
{
	uint64_t hdr = 4 + 4 + 8 + 8, data = 0, total = 0, done = 0;
	for (size_t i = 0; i < w->n_kv; i++)
		hdr += 8 + w->kv[i].key_n + 4 + w->kv[i].val_n;
	for (size_t i = 0; i < w->n_t; i++) {
		struct wtensor *t = &w->t[i];
		hdr += 8 + strlen(t->name) + 4 + 8 * t->n_dims + 4 + 8;
		t->offset = data;
		data = align_up(data + t->nbytes, align);
		total += t->nbytes;
	}
	uint64_t data_off = align_up(hdr, align);

	wr_bytes(o, GGUF_MAGIC, 4);
	wr_u32(o, 3);
	wr_u64(o, w->n_t);
	wr_u64(o, w->n_kv);
	for (size_t i = 0; i < w->n_kv; i++) {
		const struct wkv *kv = &w->kv[i];
		wr_u64(o, kv->key_n);
		wr_bytes(o, kv->key, kv->key_n);
		wr_u32(o, kv->type);
		wr_bytes(o, kv->val, kv->val_n);
	}
	for (size_t i = 0; i < w->n_t; i++) {
		const struct wtensor *t = &w->t[i];
		size_t n = strlen(t->name);
		wr_u64(o, n);
		wr_bytes(o, t->name, n);
		wr_u32(o, t->n_dims);
		for (uint32_t d = 0; d < t->n_dims; d++)
			wr_u64(o, (uint64_t)t->ne[d]);
		wr_u32(o, dtype_info[t->type].ggml_id);
		wr_u64(o, t->offset);
	}
	assert(o->err || o->pos == hdr);
	wr_pad(o, data_off);
	for (size_t i = 0; i < w->n_t && !o->err; i++) {
		const struct wtensor *t = &w->t[i];
		wr_pad(o, data_off + t->offset);
		if (t->data) {
			wr_bytes(o, t->data, t->nbytes);
		} else if (!w->fill) {
			return err_set("%s: tensor '%s' has no data and the "
				       "writer no fill callback", path,
				       t->name);
		} else {
			char why[512];
			void *buf = malloc(t->nbytes);
			if (!buf)
				return err_set("%s: tensor '%s': out of "
					       "memory for %zu bytes", path,
					       t->name, t->nbytes);
			err_set("%s", "");
			int rc = w->fill(w->fill_user, (int64_t)i, buf,
					 t->nbytes);
			if (rc) {
				snprintf(why, sizeof why, "%s", err_get());
				free(buf);
				return err_set("%s: tensor '%s': fill "
					       "callback failed%s%s", path,
					       t->name, why[0] ? ": " : "",
					       why);
			}
			wr_bytes(o, buf, t->nbytes);
			free(buf);
		}
		done += t->nbytes;
		if (w->progress)
			w->progress(w->progress_user, done, total);
	}
	wr_pad(o, data_off + data);
	if (o->err)
		return err_set("%s: write: %s", path, strerror(o->err));
	return 0;
}

int gguf_writer_write(gguf_writer_t *w, const char *path)
{
	static unsigned counter;
	char tmp[4096];
	size_t align;
	if (w->err[0])
		return err_set("%s: %s", path, w->err);
	if (writer_alignment(w, path, &align))
		return -1;
	int fd = -1;
	for (int tries = 0; fd < 0 && tries < 100; tries++) {
		unsigned c = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
		if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path,
			     (long)getpid(), c) >= (int)sizeof tmp)
			return err_set("%s: path too long", path);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		return err_set("%s: open: %s", tmp, strerror(errno));
	FILE *f = fdopen(fd, "wb");
	if (!f) {
		err_set("%s: fdopen: %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		return -1;
	}
	struct wr o = { .f = f };
	int rc = writer_emit(w, &o, align, path);
	if (rc == 0 && fflush(f) != 0)
		rc = err_set("%s: write: %s", path, strerror(errno));
	if (rc == 0 && fsync(fileno(f)) != 0)
		rc = err_set("%s: fsync: %s", path, strerror(errno));
	if (fclose(f) != 0 && rc == 0)
		rc = err_set("%s: close: %s", path, strerror(errno));
	if (rc == 0 && rename(tmp, path) != 0)
		rc = err_set("%s: rename from %s: %s", path, tmp,
			     strerror(errno));
	if (rc != 0)
		unlink(tmp);
	return rc;
}
