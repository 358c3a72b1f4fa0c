/* GGUF reader and writer: round trips, a real model, and a generated corpus
 * of malformed files, each of which must be refused with a one-line message
 * that names the problem. */
#include "testutil.h"

#include <errno.h>
#include <dirent.h>
#include <sys/stat.h>

#include "base/base.h"
#include "model/gguf.h"

/* ---- helpers ---- */

static bool str_eq(gguf_str_t s, const char *c)
{
	return s.n == strlen(c) && memcmp(s.s, c, s.n) == 0;
}

static char *tmp_path(const char *file)
{
	static char buf[8][512];
	static int k;
	char *p = buf[k++ % 8];
	snprintf(p, sizeof buf[0], "%s/%s", test_tmpdir(), file);
	return p;
}

static void fill_random(void *dst, size_t n, uint64_t seed)
{
	rng_t r;
	uint8_t *p = dst;
	rng_seed(&r, seed);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rng_next(&r);
}

/* The message of a refused open: non-empty, one line, "<name>: ... at
 * offset N: ..." and contains keyword. */
static void check_refusal(const char *what, const char *name, const char *kw)
{
	const char *m = err_get();
	if (getenv("GGUF_TEST_VERBOSE"))
		print_message("%-18s %s\n", what, m);
	if (!m[0] || strchr(m, '\n') || strncmp(m, name, strlen(name)) ||
	    !strstr(m, " at offset ") || (kw && !strstr(m, kw)))
		fail_msg("%s: bad message (want '%s'): \"%s\"", what,
			 kw ? kw : "", m);
}

/* Opens exact-size heap copies (so a sanitizer catches any over-read). */
static gguf_t *open_copy(const uint8_t *b, size_t n, const char *name)
{
	void *c = malloc(n ? n : 1);
	assert_non_null(c);
	memcpy(c, b, n);
	gguf_t *g = gguf_open_buffer(c, n, name);
	if (g) {
		gguf_close(g); /* the buffer must outlive g: reopen over b */
		g = gguf_open_buffer(b, n, name);
	}
	free(c);
	return g;
}

/* ---- 1. writer -> reader round trip ---- */

struct rt_fill {
	int calls;
	uint64_t last_done, total;
	int progress_calls;
	int fail_at; /* index whose fill fails, or -1 */
};

static int rt_fill_fn(void *user, int64_t index, void *dst, size_t nbytes)
{
	struct rt_fill *f = user;
	f->calls++;
	if (index == f->fail_at)
		return err_set("no data for %lld", (long long)index);
	fill_random(dst, nbytes, 1000 + (uint64_t)index);
	return 0;
}

static void rt_progress_fn(void *user, uint64_t done, uint64_t total)
{
	struct rt_fill *f = user;
	assert_true(done >= f->last_done);
	assert_true(done <= total);
	f->last_done = done;
	f->total = total;
	f->progress_calls++;
}

#define RT_NT 7
static const struct {
	const char *name;
	dtype_t type;
	uint32_t n_dims;
	int64_t ne[4];
	bool fill; /* from the fill callback rather than a buffer */
} rt_tensors[RT_NT] = {
	{ "t.f32", DTYPE_F32, 2, { 5, 3 }, false },
	{ "t.f16", DTYPE_F16, 1, { 7 }, false },
	{ "t.bf16", DTYPE_BF16, 3, { 3, 2, 2 }, true },
	{ "t.q8_0", DTYPE_Q8_0, 2, { 64, 3 }, false },
	{ "t.q4_0", DTYPE_Q4_0, 4, { 32, 2, 1, 2 }, true },
	{ "blk.0.attn_q.weight", DTYPE_F32, 1, { 1 }, false },
	{ "t.q8_0.big", DTYPE_Q8_0, 1, { 32 * 40 }, true },
};

static size_t rt_nbytes(int i)
{
	int64_t n = 1;
	for (uint32_t d = 0; d < rt_tensors[i].n_dims; d++)
		n *= rt_tensors[i].ne[d];
	return dtype_row_bytes(rt_tensors[i].type, n);
}

static const char *const rt_strs[] = { "", "hello", "line\nbreak",
				       "\xe2\x96\x81the", "<0x0A>" };
static const uint8_t rt_u8[] = { 0, 1, 255 };
static const int8_t rt_i8[] = { -128, 0, 127 };
static const uint16_t rt_u16[] = { 0, 65535, 1234 };
static const int16_t rt_i16[] = { -32768, 32767 };
static const uint32_t rt_u32[] = { 0, 4000000000u };
static const int32_t rt_i32[] = { -2000000000, 7, 2000000000 };
static const float rt_f32[] = { 1.5f, -0.0f, 3.25e-20f };
static const uint64_t rt_u64[] = { 0, UINT64_MAX };
static const int64_t rt_i64[] = { INT64_MIN, -1, INT64_MAX };
static const double rt_f64[] = { 3.141592653589793, -1e300 };
static const uint8_t rt_bools[] = { 1, 0, 0, 1 };

static const struct {
	const char *key;
	gguf_type_t elem;
	const void *data;
	uint64_t n;
	size_t size;
} rt_arrs[] = {
	{ "arr.u8", GGUF_TYPE_UINT8, rt_u8, 3, 1 },
	{ "arr.i8", GGUF_TYPE_INT8, rt_i8, 3, 1 },
	{ "arr.u16", GGUF_TYPE_UINT16, rt_u16, 3, 2 },
	{ "arr.i16", GGUF_TYPE_INT16, rt_i16, 2, 2 },
	{ "arr.u32", GGUF_TYPE_UINT32, rt_u32, 2, 4 },
	{ "arr.i32", GGUF_TYPE_INT32, rt_i32, 3, 4 },
	{ "arr.f32", GGUF_TYPE_FLOAT32, rt_f32, 3, 4 },
	{ "arr.u64", GGUF_TYPE_UINT64, rt_u64, 2, 8 },
	{ "arr.i64", GGUF_TYPE_INT64, rt_i64, 3, 8 },
	{ "arr.f64", GGUF_TYPE_FLOAT64, rt_f64, 2, 8 },
	{ "arr.bool", GGUF_TYPE_BOOL, rt_bools, 4, 1 },
	{ "arr.empty", GGUF_TYPE_UINT32, rt_u32, 0, 4 },
};

/* Writes the round-trip file; tensor data of buffer tensors in bufs. */
static void rt_write(const char *path, uint32_t align, uint8_t **bufs,
		     struct rt_fill *f)
{
	gguf_writer_t *w = gguf_writer_new();
	assert_non_null(w);
	uint8_t u8 = 200, b = 1;
	int8_t i8 = -100;
	uint16_t u16 = 60000;
	int16_t i16 = -30000;
	int64_t i64 = INT64_MIN + 5;
	double f64 = 2.718281828459045;
	gguf_writer_set_str(w, "general.architecture", "llama");
	gguf_writer_set_str(w, "general.name", "will be replaced");
	if (align)
		gguf_writer_set_u32(w, "general.alignment", align);
	gguf_writer_set_scalar(w, "s.u8", GGUF_TYPE_UINT8, &u8);
	gguf_writer_set_scalar(w, "s.i8", GGUF_TYPE_INT8, &i8);
	gguf_writer_set_scalar(w, "s.u16", GGUF_TYPE_UINT16, &u16);
	gguf_writer_set_scalar(w, "s.i16", GGUF_TYPE_INT16, &i16);
	gguf_writer_set_u32(w, "s.u32", 4000000000u);
	gguf_writer_set_i32(w, "s.i32", -123456789);
	gguf_writer_set_f32(w, "s.f32", 0.1f);
	gguf_writer_set_bool(w, "s.bool", true);
	gguf_writer_set_scalar(w, "s.bool2", GGUF_TYPE_BOOL, &b);
	gguf_writer_set_u64(w, "s.u64", UINT64_MAX);
	gguf_writer_set_scalar(w, "s.i64", GGUF_TYPE_INT64, &i64);
	gguf_writer_set_scalar(w, "s.f64", GGUF_TYPE_FLOAT64, &f64);
	gguf_writer_set_str(w, "s.empty", "");
	gguf_writer_set_arr_str(w, "arr.str", rt_strs, EG_ARRAY_LEN(rt_strs));
	for (size_t i = 0; i < EG_ARRAY_LEN(rt_arrs); i++)
		gguf_writer_set_arr(w, rt_arrs[i].key, rt_arrs[i].elem,
				    rt_arrs[i].data, rt_arrs[i].n);
	gguf_writer_set_str(w, "general.name", "round trip");
	for (int i = 0; i < RT_NT; i++) {
		bufs[i] = NULL;
		if (!rt_tensors[i].fill) {
			bufs[i] = malloc(rt_nbytes(i));
			fill_random(bufs[i], rt_nbytes(i), 1000 + (uint64_t)i);
		}
		assert_int_equal(gguf_writer_add_tensor(w, rt_tensors[i].name,
				 rt_tensors[i].type, rt_tensors[i].n_dims,
				 rt_tensors[i].ne, bufs[i]), 0);
	}
	gguf_writer_set_fill(w, rt_fill_fn, f);
	gguf_writer_set_progress(w, rt_progress_fn, f);
	if (gguf_writer_write(w, path))
		fail_msg("write: %s", err_get());
	gguf_writer_free(w);
}

static void rt_check(const char *path, uint32_t align)
{
	gguf_t *g = gguf_open(path);
	int64_t v;
	double d;
	bool b;
	gguf_str_t s;
	gguf_type_t elem;
	uint64_t n;
	if (!g)
		fail_msg("open: %s", err_get());
	assert_int_equal(gguf_version(g), 3);
	assert_int_equal(gguf_alignment(g), align ? align : 32);
	assert_int_equal(gguf_data_offset(g) % gguf_alignment(g), 0);
	/* keys in insertion order; a replaced key keeps its place */
	int64_t n_kv = 16 + (align ? 1 : 0) + (int64_t)EG_ARRAY_LEN(rt_arrs);
	assert_int_equal(gguf_n_kv(g), n_kv);
	assert_true(str_eq(gguf_key(g, 0), "general.architecture"));
	assert_true(str_eq(gguf_key(g, 1), "general.name"));
	assert_int_equal(gguf_get_str(g, "general.name", &s), 0);
	assert_true(str_eq(s, "round trip"));
	assert_int_equal(gguf_get_str(g, "general.architecture", &s), 0);
	assert_true(str_eq(s, "llama"));
	assert_int_equal(gguf_get_str(g, "s.empty", &s), 0);
	assert_int_equal(s.n, 0);

	assert_int_equal(gguf_get_int(g, "s.u8", &v), 0);
	assert_int_equal(v, 200);
	assert_int_equal(gguf_kv_type(g, gguf_find_key(g, "s.u8")),
			 GGUF_TYPE_UINT8);
	assert_int_equal(gguf_get_int(g, "s.i8", &v), 0);
	assert_int_equal(v, -100);
	assert_int_equal(gguf_get_int(g, "s.u16", &v), 0);
	assert_int_equal(v, 60000);
	assert_int_equal(gguf_get_int(g, "s.i16", &v), 0);
	assert_int_equal(v, -30000);
	assert_int_equal(gguf_get_int(g, "s.u32", &v), 0);
	assert_int_equal(v, 4000000000ll);
	assert_int_equal(gguf_get_int(g, "s.i32", &v), 0);
	assert_int_equal(v, -123456789);
	assert_int_equal(gguf_get_int(g, "s.i64", &v), 0);
	assert_true(v == INT64_MIN + 5);
	/* UINT64_MAX does not fit int64: refused, not wrapped */
	assert_int_equal(gguf_get_int(g, "s.u64", &v), -1);
	assert_int_equal(gguf_kv_type(g, gguf_find_key(g, "s.u64")),
			 GGUF_TYPE_UINT64);
	assert_int_equal(gguf_get_float(g, "s.f32", &d), 0);
	assert_true(d == (double)0.1f);
	assert_int_equal(gguf_get_float(g, "s.f64", &d), 0);
	assert_true(d == 2.718281828459045);
	assert_int_equal(gguf_get_float(g, "s.i32", &d), 0);
	assert_true(d == -123456789.0);
	assert_int_equal(gguf_get_bool(g, "s.bool", &b), 0);
	assert_true(b);
	assert_int_equal(gguf_get_bool(g, "s.bool2", &b), 0);
	assert_true(b);
	/* wrong kinds */
	assert_int_equal(gguf_get_int(g, "s.f32", &v), -1);
	assert_int_equal(gguf_get_int(g, "general.name", &v), -1);
	assert_int_equal(gguf_get_str(g, "s.u32", &s), -1);
	assert_int_equal(gguf_get_bool(g, "s.u8", &b), -1);
	assert_int_equal(gguf_get_arr(g, "s.u8", &elem, &n), -1);
	assert_int_equal(gguf_get_int(g, "no.such.key", &v), -1);
	assert_int_equal(gguf_find_key(g, "no.such.key"), -1);
	assert_null(gguf_arr_data(g, "arr.str"));
	assert_null(gguf_arr_data(g, "s.u8"));

	assert_int_equal(gguf_get_arr(g, "arr.str", &elem, &n), 0);
	assert_int_equal(elem, GGUF_TYPE_STRING);
	assert_int_equal(n, EG_ARRAY_LEN(rt_strs));
	for (uint64_t i = 0; i < n; i++) {
		assert_int_equal(gguf_arr_str(g, "arr.str", i, &s), 0);
		assert_true(str_eq(s, rt_strs[i]));
	}
	assert_int_equal(gguf_arr_str(g, "arr.str", n, &s), -1);
	assert_int_equal(gguf_arr_str(g, "arr.u8", 0, &s), -1);
	for (size_t i = 0; i < EG_ARRAY_LEN(rt_arrs); i++) {
		assert_int_equal(gguf_get_arr(g, rt_arrs[i].key, &elem, &n), 0);
		assert_int_equal(elem, rt_arrs[i].elem);
		assert_int_equal(n, rt_arrs[i].n);
		const void *p = gguf_arr_data(g, rt_arrs[i].key);
		assert_non_null(p);
		assert_memory_equal(p, rt_arrs[i].data,
				    rt_arrs[i].n * rt_arrs[i].size);
	}

	assert_int_equal(gguf_n_tensors(g), RT_NT);
	for (int i = 0; i < RT_NT; i++) {
		const gguf_tensor_t *t = gguf_tensor(g, i);
		size_t nb = rt_nbytes(i);
		assert_ptr_equal(gguf_find_tensor(g, rt_tensors[i].name), t);
		assert_true(str_eq(t->name, rt_tensors[i].name));
		assert_int_equal(t->type, rt_tensors[i].type);
		assert_int_equal(t->n_dims, rt_tensors[i].n_dims);
		for (uint32_t dd = 0; dd < 4; dd++)
			assert_int_equal(t->ne[dd], dd < t->n_dims ?
					 rt_tensors[i].ne[dd] : 1);
		assert_int_equal(t->nbytes, nb);
		assert_int_equal(t->offset % gguf_alignment(g), 0);
		assert_int_equal((gguf_data_offset(g) + t->offset) %
				 gguf_alignment(g), 0);
		uint8_t *want = malloc(nb);
		fill_random(want, nb, 1000 + (uint64_t)i);
		assert_memory_equal(t->data, want, nb);
		free(want);
	}
	assert_null(gguf_find_tensor(g, "t.f3"));
	gguf_close(g);
}

static void test_roundtrip(void **state)
{
	(void)state;
	for (int k = 0; k < 3; k++) {
		static const uint32_t aligns[] = { 0, 64, 1 };
		uint8_t *bufs[RT_NT];
		struct rt_fill f = { .fail_at = -1 };
		const char *path = tmp_path("rt.gguf");
		rt_write(path, aligns[k], bufs, &f);
		assert_int_equal(f.calls, 3);
		assert_int_equal(f.progress_calls, RT_NT);
		assert_int_equal(f.last_done, f.total);
		size_t total = 0;
		for (int i = 0; i < RT_NT; i++)
			total += rt_nbytes(i);
		assert_int_equal(f.total, total);
		rt_check(path, aligns[k]);
		for (int i = 0; i < RT_NT; i++)
			free(bufs[i]);
	}
}

/* Every kv of a and b: same keys, types and raw encodings, same order. */
static void kv_equal(const gguf_t *a, const gguf_t *b)
{
	assert_int_equal(gguf_n_kv(a), gguf_n_kv(b));
	for (int64_t i = 0; i < gguf_n_kv(a); i++) {
		gguf_str_t ka = gguf_key(a, i), kb = gguf_key(b, i);
		const void *pa, *pb;
		size_t na, nb;
		assert_int_equal(ka.n, kb.n);
		assert_memory_equal(ka.s, kb.s, ka.n);
		assert_int_equal(gguf_kv_type(a, i), gguf_kv_type(b, i));
		gguf_kv_raw(a, i, &pa, &na);
		gguf_kv_raw(b, i, &pb, &nb);
		assert_int_equal(na, nb);
		assert_memory_equal(pa, pb, na);
	}
}

/* gguf_writer_copy_kv of g written to a file in the test directory and
 * read back: the same keys and values. */
static void copy_kv_round_trip(gguf_t *g, const char *name)
{
	gguf_writer_t *w = gguf_writer_new();
	gguf_writer_copy_kv(w, g);
	const char *out = tmp_path(name);
	assert_int_equal(gguf_writer_write(w, out), 0);
	gguf_writer_free(w);
	gguf_t *c = gguf_open(out);
	assert_non_null(c);
	kv_equal(g, c);
	gguf_close(c);
}

static void test_copy_kv(void **state)
{
	(void)state;
	uint8_t *bufs[RT_NT];
	struct rt_fill f = { .fail_at = -1 };
	const char *pa = tmp_path("copy_a.gguf"), *pb = tmp_path("copy_b.gguf");
	rt_write(pa, 64, bufs, &f);
	gguf_t *a = gguf_open(pa);
	assert_non_null(a);
	gguf_writer_t *w = gguf_writer_new();
	gguf_writer_copy_kv(w, a);
	const gguf_tensor_t *t = gguf_tensor(a, 0);
	assert_int_equal(gguf_writer_add_tensor(w, "copied", t->type, t->n_dims,
						t->ne, t->data), 0);
	if (gguf_writer_write(w, pb))
		fail_msg("write: %s", err_get());
	gguf_writer_free(w);
	gguf_t *b = gguf_open(pb);
	assert_non_null(b);
	kv_equal(a, b);
	assert_int_equal(gguf_alignment(b), 64);
	assert_int_equal(gguf_n_tensors(b), 1);
	assert_memory_equal(gguf_tensor(b, 0)->data, t->data, t->nbytes);
	gguf_close(b);
	gguf_close(a);
	for (int i = 0; i < RT_NT; i++)
		free(bufs[i]);
}

/* No file named prefix* other than keep is left in the temp dir. */
static void check_no_temp(const char *prefix)
{
	DIR *d = opendir(test_tmpdir());
	struct dirent *e;
	assert_non_null(d);
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, prefix, strlen(prefix)))
			fail_msg("left behind: %s", e->d_name);
	closedir(d);
}

static void test_writer_errors(void **state)
{
	(void)state;
	int64_t ne[4] = { 33, 2, 1, 1 };
	gguf_writer_t *w = gguf_writer_new();
	const char *path = tmp_path("werr.gguf");
	/* bad shapes */
	assert_int_equal(gguf_writer_add_tensor(w, "q", DTYPE_Q8_0, 2, ne,
						NULL), -1);
	assert_non_null(strstr(err_get(), "block size"));
	ne[0] = 0;
	assert_int_equal(gguf_writer_add_tensor(w, "z", DTYPE_F32, 1, ne,
						NULL), -1);
	ne[0] = 4;
	assert_int_equal(gguf_writer_add_tensor(w, "d", DTYPE_F32, 5, ne,
						NULL), -1);
	assert_int_equal(gguf_writer_add_tensor(w, "", DTYPE_F32, 1, ne,
						NULL), -1);
	assert_int_equal(gguf_writer_add_tensor(w, "a", DTYPE_F32, 1, ne,
						NULL), 0);
	assert_int_equal(gguf_writer_add_tensor(w, "a", DTYPE_F32, 1, ne,
						NULL), -1);
	assert_non_null(strstr(err_get(), "twice"));
	/* a failing fill callback: no file, no temp file */
	struct rt_fill f = { .fail_at = 0 };
	gguf_writer_set_fill(w, rt_fill_fn, &f);
	assert_int_equal(gguf_writer_write(w, path), -1);
	assert_non_null(strstr(err_get(), "no data for 0"));
	assert_int_equal(access(path, F_OK), -1);
	check_no_temp("werr.gguf");
	/* no callback at all */
	gguf_writer_set_fill(w, NULL, NULL);
	assert_int_equal(gguf_writer_write(w, path), -1);
	assert_non_null(strstr(err_get(), "fill"));
	/* a bad alignment */
	f.fail_at = -1;
	gguf_writer_set_fill(w, rt_fill_fn, &f);
	gguf_writer_set_u32(w, "general.alignment", 48);
	assert_int_equal(gguf_writer_write(w, path), -1);
	assert_non_null(strstr(err_get(), "power of two"));
	gguf_writer_set_u32(w, "general.alignment", 16);
	assert_int_equal(gguf_writer_write(w, path), 0);
	gguf_t *g = gguf_open(path);
	assert_non_null(g);
	assert_int_equal(gguf_alignment(g), 16);
	gguf_close(g);
	/* a directory that does not exist */
	assert_int_equal(gguf_writer_write(w, "/nonexistent-dir/x.gguf"), -1);
	assert_non_null(strstr(err_get(), "open"));
	/* a bad setter poisons the writer */
	uint8_t two = 2;
	gguf_writer_set_scalar(w, "b", GGUF_TYPE_BOOL, &two);
	assert_int_equal(gguf_writer_write(w, path), -1);
	assert_non_null(strstr(err_get(), "bool"));
	gguf_writer_free(w);
	check_no_temp("werr.gguf.tmp");
}

/* Many keys and tensors: every one found by name, in any order. */
static int many_fill(void *user, int64_t index, void *dst, size_t nbytes)
{
	float v = (float)index;
	(void)user;
	assert_int_equal(nbytes, 4);
	memcpy(dst, &v, 4);
	return 0;
}

static void test_many(void **state)
{
	(void)state;
	enum { NK = 3000, NT = 1500 };
	char name[32];
	int64_t ne[1] = { 1 };
	int64_t v;
	gguf_writer_t *w = gguf_writer_new();
	const char *path = tmp_path("many.gguf");
	for (int i = NK - 1; i >= 0; i--) {
		snprintf(name, sizeof name, "k.%d", i * 7919 % NK);
		gguf_writer_set_u32(w, name, (uint32_t)(i * 7919 % NK));
	}
	for (int i = 0; i < NT; i++) {
		snprintf(name, sizeof name, "t.%d", i);
		assert_int_equal(gguf_writer_add_tensor(w, name, DTYPE_F32, 1,
							ne, NULL), 0);
	}
	gguf_writer_set_fill(w, many_fill, NULL);
	assert_int_equal(gguf_writer_write(w, path), 0);
	gguf_writer_free(w);
	gguf_t *g = gguf_open(path);
	if (!g)
		fail_msg("%s", err_get());
	assert_int_equal(gguf_n_kv(g), NK);
	for (int i = 0; i < NK; i++) {
		snprintf(name, sizeof name, "k.%d", i);
		assert_int_equal(gguf_get_int(g, name, &v), 0);
		assert_int_equal(v, i);
	}
	for (int i = 0; i < NT; i++) {
		float f;
		snprintf(name, sizeof name, "t.%d", i);
		const gguf_tensor_t *t = gguf_find_tensor(g, name);
		assert_non_null(t);
		memcpy(&f, t->data, 4);
		assert_true(f == (float)i);
	}
	assert_int_equal(gguf_find_key(g, "k."), -1);
	assert_int_equal(gguf_find_key(g, "k.30000"), -1);
	assert_int_equal(gguf_find_key(g, ""), -1);
	assert_null(gguf_find_tensor(g, "t.1500"));
	assert_null(gguf_find_tensor(g, "a"));
	assert_null(gguf_find_tensor(g, "z"));
	gguf_close(g);
}

/* ---- 2. a real model ---- */

static void test_stories260k(void **state)
{
	(void)state;
	SKIP_WITHOUT_MODEL(path, "stories260K.gguf");
	gguf_t *g = gguf_open(path);
	gguf_str_t s;
	if (!g)
		fail_msg("%s", err_get());
	assert_int_equal(gguf_version(g), 3);
	assert_int_equal(gguf_n_kv(g), 19);
	assert_int_equal(gguf_n_tensors(g), 48);
	assert_int_equal(gguf_data_offset(g), 14176);
	assert_int_equal(gguf_alignment(g), 32);
	for (int64_t i = 0; i < 48; i++)
		assert_int_equal(gguf_tensor(g, i)->type, DTYPE_F32);
	const gguf_tensor_t *t = gguf_find_tensor(g, "token_embd.weight");
	assert_non_null(t);
	assert_int_equal(t->n_dims, 2);
	assert_int_equal(t->ne[0], 64);
	assert_int_equal(t->ne[1], 512);
	assert_int_equal(t->nbytes, 64 * 512 * 4);
	assert_int_equal(gguf_get_str(g, "general.architecture", &s), 0);
	assert_true(str_eq(s, "llama"));
	gguf_type_t elem;
	uint64_t n;
	assert_int_equal(gguf_get_arr(g, "tokenizer.ggml.tokens", &elem, &n),
			 0);
	assert_int_equal(elem, GGUF_TYPE_STRING);
	assert_int_equal(n, 512);
	assert_int_equal(gguf_arr_str(g, "tokenizer.ggml.tokens", 0, &s), 0);
	assert_true(str_eq(s, "<unk>"));
	/* copy_kv of a real file */
	copy_kv_round_trip(g, "stories_kv.gguf");
	gguf_close(g);
}

/* ---- 3. malformed files ---- */

/* Byte offsets of the fields of a valid file, found by a small walker that
 * trusts its input (only ever run on the writer's output). */
struct layout {
	int n_kv, n_t;
	struct {
		char key[64];
		size_t off, type_off, val_off;
	} kv[32];
	struct {
		char name[64];
		size_t off, ndims_off, ne_off, type_off, offset_off;
		uint64_t offset;
		size_t nbytes;
	} t[8];
	size_t hdr_end, data_off, data_end, size;
};

static uint32_t rd32(const uint8_t *b, size_t o)
{
	uint32_t v;
	memcpy(&v, b + o, 4);
	return v;
}

static uint64_t rd64(const uint8_t *b, size_t o)
{
	uint64_t v;
	memcpy(&v, b + o, 8);
	return v;
}

static size_t walk_value(const uint8_t *b, size_t o, uint32_t type)
{
	static const size_t sz[] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
	if (type == GGUF_TYPE_STRING)
		return o + 8 + rd64(b, o);
	if (type == GGUF_TYPE_ARRAY) {
		uint32_t e = rd32(b, o);
		uint64_t n = rd64(b, o + 4);
		o += 12;
		for (uint64_t i = 0; i < n; i++)
			o = walk_value(b, o, e);
		return o;
	}
	return o + sz[type];
}

static void layout_walk(const uint8_t *b, size_t size, struct layout *L)
{
	size_t o = 24;
	memset(L, 0, sizeof *L);
	L->n_t = (int)rd64(b, 8);
	L->n_kv = (int)rd64(b, 16);
	assert_true(L->n_kv <= 32 && L->n_t <= 8);
	for (int i = 0; i < L->n_kv; i++) {
		uint64_t n = rd64(b, o);
		L->kv[i].off = o;
		snprintf(L->kv[i].key, sizeof L->kv[i].key, "%.*s", (int)n,
			 (const char *)b + o + 8);
		o += 8 + n;
		L->kv[i].type_off = o;
		L->kv[i].val_off = o + 4;
		o = walk_value(b, o + 4, rd32(b, o));
	}
	for (int i = 0; i < L->n_t; i++) {
		uint64_t n = rd64(b, o);
		L->t[i].off = o;
		snprintf(L->t[i].name, sizeof L->t[i].name, "%.*s", (int)n,
			 (const char *)b + o + 8);
		o += 8 + n;
		L->t[i].ndims_off = o;
		L->t[i].ne_off = o + 4;
		o += 4 + 8 * rd32(b, o);
		L->t[i].type_off = o;
		L->t[i].offset_off = o + 4;
		L->t[i].offset = rd64(b, o + 4);
		o += 12;
	}
	L->hdr_end = o;
	L->size = size;
	/* data layout from the library (checked by the round trip) */
	gguf_t *g = gguf_open_buffer(b, size, "base");
	assert_non_null(g);
	L->data_off = gguf_data_offset(g);
	for (int i = 0; i < L->n_t; i++) {
		const gguf_tensor_t *t = gguf_tensor(g, i);
		L->t[i].nbytes = t->nbytes;
		if (L->data_off + t->offset + t->nbytes > L->data_end)
			L->data_end = L->data_off + t->offset + t->nbytes;
	}
	gguf_close(g);
}

/* The valid base: a few keys of each kind, general.alignment, three
 * tensors (F32 2-D, Q8_0, F16). */
static uint8_t *base_make(size_t *len, struct layout *L)
{
	const char *path = tmp_path("base.gguf");
	static const char *const toks[] = { "a", "bc", "def" };
	static const float fs[] = { 1, 2, 3, 4 };
	static const uint8_t bools[] = { 0, 1 };
	int64_t ne_a[] = { 8, 2 }, ne_b[] = { 64 }, ne_c[] = { 4 };
	uint8_t data[256];
	gguf_writer_t *w = gguf_writer_new();
	gguf_writer_set_str(w, "general.architecture", "llama");
	gguf_writer_set_u32(w, "general.alignment", 32);
	gguf_writer_set_u32(w, "test.u32", 7);
	gguf_writer_set_i32(w, "test.i32", -7);
	gguf_writer_set_bool(w, "test.bool", true);
	gguf_writer_set_arr_str(w, "test.tokens", toks, 3);
	gguf_writer_set_arr(w, "test.f32s", GGUF_TYPE_FLOAT32, fs, 4);
	gguf_writer_set_arr(w, "test.bools", GGUF_TYPE_BOOL, bools, 2);
	fill_random(data, sizeof data, 7);
	assert_int_equal(gguf_writer_add_tensor(w, "a", DTYPE_F32, 2, ne_a,
						data), 0);
	assert_int_equal(gguf_writer_add_tensor(w, "b", DTYPE_Q8_0, 1, ne_b,
						data), 0);
	assert_int_equal(gguf_writer_add_tensor(w, "c", DTYPE_F16, 1, ne_c,
						data), 0);
	assert_int_equal(gguf_writer_write(w, path), 0);
	gguf_writer_free(w);
	uint8_t *b = (uint8_t *)file_read_all(path, len);
	assert_non_null(b);
	layout_walk(b, *len, L);
	return b;
}

/* A file being mutated: bytes plus the base's layout. */
struct mfile {
	uint8_t *b;
	size_t n;
	const struct layout *L;
};

static size_t kv_off(const struct layout *L, const char *key)
{
	for (int i = 0; i < L->n_kv; i++)
		if (!strcmp(L->kv[i].key, key))
			return (size_t)i;
	fail_msg("no key %s in the base", key);
	return 0;
}

static void put32(struct mfile *m, size_t o, uint32_t v)
{
	memcpy(m->b + o, &v, 4);
}

static void put64(struct mfile *m, size_t o, uint64_t v)
{
	memcpy(m->b + o, &v, 8);
}

/* Replaces del bytes at o by the n bytes of ins (the file may grow). */
static void splice(struct mfile *m, size_t o, size_t del, const void *ins,
		   size_t n)
{
	uint8_t *b = malloc(m->n - del + n);
	assert_non_null(b);
	memcpy(b, m->b, o);
	memcpy(b + o, ins, n);
	memcpy(b + o + n, m->b + o + del, m->n - o - del);
	free(m->b);
	m->b = b;
	m->n = m->n - del + n;
}

#define KV(key) (m->L->kv[kv_off(m->L, key)])
#define T(i) (m->L->t[i])
#define MUT(fn) static void fn(struct mfile *m)

MUT(m_magic) { memcpy(m->b, "GGML", 4); }
MUT(m_version1) { put32(m, 4, 1); }
MUT(m_version4) { put32(m, 4, 4); }
MUT(m_version_be) { put32(m, 4, 3u << 24); }
MUT(m_n_kv_huge) { put64(m, 16, 1ull << 62); }
MUT(m_n_kv_max) { put64(m, 16, UINT64_MAX); }
MUT(m_n_kv_over) { put64(m, 16, (uint64_t)m->L->n_kv + 1); }
MUT(m_n_tensors_huge) { put64(m, 8, UINT64_MAX / 33 + 1); }
MUT(m_n_tensors_over) { put64(m, 8, (uint64_t)m->L->n_t + 40); }
MUT(m_key_len_eof) { put64(m, KV("test.u32").off, m->n); }
MUT(m_key_len_huge) { put64(m, KV("test.u32").off, 1ull << 63); }
MUT(m_key_empty) { put64(m, KV("test.u32").off, 0); }
MUT(m_str_len_eof)
{
	put64(m, KV("general.architecture").val_off, m->n - 20);
}
MUT(m_str_len_huge)
{
	put64(m, KV("general.architecture").val_off, 1ull << 63);
}
MUT(m_arr_str_len_huge)
{
	/* the second token's length */
	put64(m, KV("test.tokens").val_off + 12 + 8 + 1, UINT64_MAX);
}
MUT(m_arr_len_eof) { put64(m, KV("test.f32s").val_off + 4, m->n / 4); }
MUT(m_arr_len_huge) { put64(m, KV("test.tokens").val_off + 4, 1ull << 61); }
MUT(m_arr_elem_type) { put32(m, KV("test.f32s").val_off, 13); }
MUT(m_kv_type13) { put32(m, KV("test.u32").type_off, 13); }
MUT(m_kv_type_max) { put32(m, KV("test.u32").type_off, UINT32_MAX); }
MUT(m_bool2) { m->b[KV("test.bool").val_off] = 2; }
MUT(m_bool_arr2) { m->b[KV("test.bools").val_off + 12 + 1] = 0xff; }
MUT(m_dup_key) { memcpy(m->b + KV("test.i32").off + 8, "test.u32", 8); }
MUT(m_align0) { put32(m, KV("general.alignment").val_off, 0); }
MUT(m_align3) { put32(m, KV("general.alignment").val_off, 3); }
MUT(m_align_type)
{
	/* uint32 -> int32: same size, wrong type */
	put32(m, KV("general.alignment").type_off, GGUF_TYPE_INT32);
}
/* an array nested 1000 deep, in place of test.u32's value */
MUT(m_nest_bomb)
{
	uint8_t ins[12 * 1000 + 4 + 8], *p = ins;
	size_t o = KV("test.u32").type_off;
	uint32_t arr = GGUF_TYPE_ARRAY;
	uint64_t one = 1;
	memcpy(p, &arr, 4);
	p += 4;
	for (int i = 0; i < 999; i++, p += 12) {
		memcpy(p, &arr, 4);
		memcpy(p + 4, &one, 8);
	}
	memset(p, 0, 12); /* innermost: uint8[0] */
	splice(m, o, 8, ins, sizeof ins - 8);
}
/* an array of 2^40 empty arrays */
MUT(m_wide_bomb)
{
	uint32_t arr = GGUF_TYPE_ARRAY;
	uint8_t ins[16];
	uint64_t n = 1ull << 40;
	memcpy(ins, &arr, 4);
	memcpy(ins + 4, &arr, 4);
	memcpy(ins + 8, &n, 8);
	splice(m, KV("test.u32").type_off, 8, ins, sizeof ins);
}
MUT(m_name_empty) { put64(m, T(1).off, 0); }
MUT(m_name_len_huge) { put64(m, T(1).off, 1ull << 63); }
MUT(m_dup_name) { m->b[T(1).off + 8] = 'a'; }
MUT(m_ndims0) { put32(m, T(0).ndims_off, 0); }
MUT(m_ndims5) { put32(m, T(0).ndims_off, 5); }
MUT(m_ne_zero) { put64(m, T(0).ne_off, 0); }
MUT(m_ne_neg) { put64(m, T(0).ne_off + 8, (uint64_t)-5); }
MUT(m_ne_ovf_int64)
{
	put64(m, T(0).ne_off, 1ull << 32);
	put64(m, T(0).ne_off + 8, 1ull << 32);
}
MUT(m_ne_ovf_size)
{
	/* 2^62 f32 elements: fits int64, 2^64 bytes does not fit size_t */
	put64(m, T(0).ne_off, 1ull << 31);
	put64(m, T(0).ne_off + 8, 1ull << 31);
}
MUT(m_ne_big) { put64(m, T(0).ne_off + 8, 1ull << 40); }
MUT(m_type99) { put32(m, T(0).type_off, 99); }
MUT(m_type_iq2_xxs) { put32(m, T(0).type_off, 16); }
MUT(m_q8_ne48) { put64(m, T(1).ne_off, 48); }
/* a q4_K tensor whose rows (64) are not whole super-blocks */
MUT(m_q4k_ne256) { put32(m, T(1).type_off, 12); }
MUT(m_offset_far) { put64(m, T(2).offset_off, 1ull << 40); }
MUT(m_offset_max) { put64(m, T(2).offset_off, UINT64_MAX & ~31ull); }
MUT(m_offset_end)
{
	/* aligned, starts inside the file, ends past it */
	put64(m, T(2).offset_off, (m->n - m->L->data_off) & ~31ull);
}
MUT(m_offset_misaligned) { put64(m, T(2).offset_off, T(2).offset + 1); }
/* the data layout: tensors sharing bytes, bytes of no tensor */
MUT(m_offsets_zero)
{
	for (int i = 0; i < m->L->n_t; i++)
		put64(m, T(i).offset_off, 0);
}
MUT(m_offset_overlap) { put64(m, T(2).offset_off, T(1).offset); }
MUT(m_offset_first) { put64(m, T(0).offset_off, 32); }
/* a's F32 [8, 2] retagged F16: half its bytes, a gap before b */
MUT(m_retype_smaller) { put32(m, T(0).type_off, 1); }
MUT(m_trailing)
{
	static const uint8_t pad[64];
	splice(m, m->n, 0, pad, sizeof pad);
}
MUT(m_empty) { m->n = 0; }
MUT(m_data_cut) { m->n = m->L->data_off + T(2).offset + 1; }

static const struct mcase {
	const char *name;
	void (*mutate)(struct mfile *m);
	const char *keyword; /* the message must contain it */
} mcases[] = {
	{ "empty", m_empty, "truncated" },
	{ "magic", m_magic, "magic" },
	{ "version1", m_version1, "version 1 is not supported" },
	{ "version4", m_version4, "unknown version 4" },
	{ "version_be", m_version_be, "big-endian" },
	{ "n_kv_huge", m_n_kv_huge, "n_kv" },
	{ "n_kv_max", m_n_kv_max, "n_kv" },
	{ "n_kv_over", m_n_kv_over, "" },
	{ "n_tensors_huge", m_n_tensors_huge, "n_tensors" },
	{ "n_tensors_over", m_n_tensors_over, "" },
	{ "key_len_eof", m_key_len_eof, "string length" },
	{ "key_len_huge", m_key_len_huge, "string length 9223372036854775808" },
	{ "key_empty", m_key_empty, "empty key" },
	{ "str_len_eof", m_str_len_eof, "string length" },
	{ "str_len_huge", m_str_len_huge, "string length" },
	{ "arr_str_len_huge", m_arr_str_len_huge, "string length" },
	{ "arr_len_eof", m_arr_len_eof, "array length" },
	{ "arr_len_huge", m_arr_len_huge, "array length" },
	{ "arr_elem_type", m_arr_elem_type, "unknown array element type 13" },
	{ "kv_type13", m_kv_type13, "unknown value type 13" },
	{ "kv_type_max", m_kv_type_max, "unknown value type" },
	{ "bool2", m_bool2, "bool" },
	{ "bool_arr", m_bool_arr2, "bool" },
	{ "dup_key", m_dup_key, "duplicate key" },
	{ "align0", m_align0, "power of two" },
	{ "align3", m_align3, "power of two" },
	{ "align_type", m_align_type, "uint32" },
	{ "nest_bomb", m_nest_bomb, "nested" },
	{ "wide_bomb", m_wide_bomb, "array length" },
	{ "name_empty", m_name_empty, "empty name" },
	{ "name_len_huge", m_name_len_huge, "string length" },
	{ "dup_name", m_dup_name, "duplicate tensor name" },
	{ "ndims0", m_ndims0, "n_dims 0" },
	{ "ndims5", m_ndims5, "n_dims 5" },
	{ "ne_zero", m_ne_zero, "ne[0] = 0" },
	{ "ne_neg", m_ne_neg, "ne[1] = -5" },
	{ "ne_ovf_int64", m_ne_ovf_int64, "overflows int64" },
	{ "ne_ovf_size", m_ne_ovf_size, "overflows size_t" },
	{ "ne_big", m_ne_big, "exceed file size" },
	{ "type99", m_type99, "unknown tensor type 99" },
	{ "type_iq2_xxs", m_type_iq2_xxs, "unsupported tensor type 16 (iq2_xxs)" },
	{ "q4k_ne256", m_q4k_ne256, "q4_k block size 256" },
	{ "q8_ne48", m_q8_ne48, "block size" },
	{ "offset_far", m_offset_far, "exceed file size" },
	{ "offset_max", m_offset_max, "exceed file size" },
	{ "offset_end", m_offset_end, "exceed file size" },
	{ "offset_misaligned", m_offset_misaligned, "alignment" },
	{ "data_cut", m_data_cut, "exceed file size" },
	{ "offsets_zero", m_offsets_zero, "overlaps tensor 'a'" },
	{ "offset_overlap", m_offset_overlap, "overlaps tensor 'b'" },
	{ "offset_first", m_offset_first, "first 32 bytes belong to no tensor" },
	{ "retype_smaller", m_retype_smaller, "the next tensor 'b' starts" },
	{ "trailing", m_trailing, "disagrees with the data layout" },
};

/* Saves a malformed file for the CLI tests as <dir>/<name>.gguf, where dir
 * is $GGUF_MALFORMED_DIR or else <tmpdir>/malformed. */
static const char *save_case(const char *name, const uint8_t *b, size_t n)
{
	static char dir[512], path[1024];
	if (!dir[0]) {
		const char *env = getenv("GGUF_MALFORMED_DIR");
		if (env)
			snprintf(dir, sizeof dir, "%s", env);
		else
			snprintf(dir, sizeof dir, "%s/malformed",
				 test_tmpdir());
		if (mkdir(dir, 0777) < 0 && errno != EEXIST)
			fail_msg("mkdir %s: %s", dir, strerror(errno));
	}
	snprintf(path, sizeof path, "%s/%s.gguf", dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* b must be refused both from a file (mmap) and from a buffer. */
static void expect_refused(const char *name, const uint8_t *b, size_t n,
			   const char *kw, bool save)
{
	char label[128];
	snprintf(label, sizeof label, "%s.gguf", name);
	gguf_t *g = open_copy(b, n, label);
	if (g)
		fail_msg("%s: accepted", name);
	check_refusal(name, label, kw);
	if (save) {
		const char *path = save_case(name, b, n);
		assert_null(gguf_open(path));
		check_refusal(name, path, kw);
	}
}

static void test_malformed(void **state)
{
	(void)state;
	struct layout L;
	size_t n;
	uint8_t *base = base_make(&n, &L);
	assert_int_equal(L.hdr_end <= L.data_off, 1);
	for (size_t i = 0; i < EG_ARRAY_LEN(mcases); i++) {
		struct mfile m = { .b = malloc(n), .n = n, .L = &L };
		memcpy(m.b, base, n);
		mcases[i].mutate(&m);
		expect_refused(mcases[i].name, m.b, m.n, mcases[i].keyword,
			       true);
		free(m.b);
	}
	free(base);
}

/* Every truncation of the header and a sample of the data is refused;
 * cutting only the padding after the last tensor is not. */
static void test_truncated(void **state)
{
	(void)state;
	struct layout L;
	size_t n;
	char name[64];
	uint8_t *base = base_make(&n, &L);
	assert_true(L.data_end <= n);
	for (size_t len = 0; len < n; len++) {
		bool header = len <= L.data_off;
		if (!header && len < L.data_end && len % 7 && len + 3 <
		    L.data_end)
			continue;
		snprintf(name, sizeof name, "trunc-%zu", len);
		if (len < L.data_end) {
			expect_refused(name, base, len, NULL,
				       len % 50 == 0 || len == L.data_off);
		} else {
			gguf_t *g = open_copy(base, len, name);
			if (!g)
				fail_msg("%s: %s", name, err_get());
			gguf_close(g);
		}
	}
	free(base);
}

/* A valid file whose key "nest" is an array of two uint16 arrays, {1, 2}
 * and {} (the writer cannot make one: the bytes are appended by hand). */
static uint8_t *nested_make(size_t *len)
{
	gguf_writer_t *w = gguf_writer_new();
	const char *pa = tmp_path("nest_a.gguf");
	gguf_writer_set_u32(w, "x", 1);
	assert_int_equal(gguf_writer_write(w, pa), 0);
	gguf_writer_free(w);
	size_t n;
	uint8_t *b = (uint8_t *)file_read_all(pa, &n);
	assert_non_null(b);
	struct mfile m = { .b = b, .n = n };
	uint8_t kv[8 + 4 + 4 + 4 + 8 + (4 + 8 + 4) + (4 + 8)], *p = kv;
	uint64_t u;
	uint32_t v;
	uint16_t e[2] = { 1, 2 };
	u = 4, memcpy(p, &u, 8), memcpy(p + 8, "nest", 4), p += 12;
	v = GGUF_TYPE_ARRAY, memcpy(p, &v, 4), memcpy(p + 4, &v, 4), p += 8;
	u = 2, memcpy(p, &u, 8), p += 8;
	v = GGUF_TYPE_UINT16, memcpy(p, &v, 4), p += 4;
	u = 2, memcpy(p, &u, 8), memcpy(p + 8, e, 4), p += 12;
	v = GGUF_TYPE_UINT16, memcpy(p, &v, 4), p += 4;
	u = 0, memcpy(p, &u, 8), p += 8;
	assert_int_equal(p - kv, sizeof kv);
	/* after the header and kv "x" (the writer pads after it) */
	splice(&m, 24 + 8 + 1 + 4 + 4, 0, kv, sizeof kv);
	put64(&m, 16, 2); /* n_kv */
	*len = m.n;
	return m.b;
}

/* A valid nested array: read, and copied raw by copy_kv. */
static void test_nested_ok(void **state)
{
	(void)state;
	size_t n;
	uint64_t u;
	gguf_type_t elem;
	uint8_t *b = nested_make(&n);
	gguf_t *g = gguf_open_buffer(b, n, "nest");
	if (!g)
		fail_msg("%s", err_get());
	assert_int_equal(gguf_get_arr(g, "nest", &elem, &u), 0);
	assert_int_equal(elem, GGUF_TYPE_ARRAY);
	assert_int_equal(u, 2);
	assert_null(gguf_arr_data(g, "nest"));
	copy_kv_round_trip(g, "nest_b.gguf");
	gguf_close(g);
	free(b);
}

static void write_file(const char *dir, const char *name, const void *b,
		       size_t n)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* Run instead of the suite when GGUF_SEED_DIR=dir is set: writes the seed
 * files of fuzz/corpus/gguf (the valid base, the round-trip file, the
 * nested-array file and a few malformed ones). */
static void test_write_seeds(void **state)
{
	(void)state;
	const char *dir = getenv("GGUF_SEED_DIR");
	char path[512];
	struct layout L;
	size_t n;
	uint8_t *b = base_make(&n, &L);
	write_file(dir, "base.gguf", b, n);
	for (size_t i = 0; i < EG_ARRAY_LEN(mcases); i++) {
		static const char *const keep[] = { "nest_bomb", "align3",
			"dup_name", "type_iq2_xxs", "q4k_ne256", "offset_misaligned" };
		for (size_t k = 0; k < EG_ARRAY_LEN(keep); k++) {
			if (strcmp(keep[k], mcases[i].name))
				continue;
			struct mfile m = { .b = malloc(n), .n = n, .L = &L };
			memcpy(m.b, b, n);
			mcases[i].mutate(&m);
			snprintf(path, sizeof path, "bad_%s.gguf", keep[k]);
			write_file(dir, path, m.b, m.n);
			free(m.b);
		}
	}
	free(b);
	b = nested_make(&n);
	write_file(dir, "nested.gguf", b, n);
	free(b);
	uint8_t *bufs[RT_NT];
	struct rt_fill fl = { .fail_at = -1 };
	snprintf(path, sizeof path, "%s/roundtrip.gguf", dir);
	rt_write(path, 64, bufs, &fl);
	for (int i = 0; i < RT_NT; i++)
		free(bufs[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_copy_kv),
		cmocka_unit_test(test_writer_errors),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_stories260k),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_nested_ok),
	};
	const struct CMUnitTest seeds[] = {
		cmocka_unit_test(test_write_seeds),
	};
	if (getenv("GGUF_SEED_DIR"))
		return cmocka_run_group_tests(seeds, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
