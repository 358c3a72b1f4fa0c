/* libFuzzer harness for the GGUF reader: any input must either open, with
 * every accessor then staying inside the buffer, or be refused with a
 * non-empty one-line message. Never a crash, a hang or an over-read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "model/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

/* Exercises every accessor on key i. */
static void poke_kv(const gguf_t *g, int64_t i)
{
	char key[256];
	gguf_str_t k = gguf_key(g, i), s;
	const void *raw;
	size_t n;
	int64_t v;
	double d;
	bool b;
	gguf_type_t elem;
	uint64_t cnt;
	gguf_kv_raw(g, i, &raw, &n);
	sink += hash64(raw, n, HASH64_INIT) + gguf_kv_type(g, i);
	/* keys with a NUL inside, or long ones, cannot be named in C */
	if (k.n >= sizeof key || memchr(k.s, 0, k.n))
		return;
	memcpy(key, k.s, k.n);
	key[k.n] = '\0';
	if (gguf_find_key(g, key) != i)
		__builtin_trap();
	if (!gguf_get_int(g, key, &v))
		sink += (uint64_t)v;
	if (!gguf_get_float(g, key, &d))
		sink += (uint64_t)(d == d);
	if (!gguf_get_bool(g, key, &b))
		sink += b;
	if (!gguf_get_str(g, key, &s))
		sink += hash64(s.s, s.n, HASH64_INIT);
	if (gguf_get_arr(g, key, &elem, &cnt))
		return;
	for (uint64_t j = 0; j < cnt && j < 64; j++)
		if (!gguf_arr_str(g, key, j, &s))
			sink += hash64(s.s, s.n, HASH64_INIT);
	if (cnt && !gguf_arr_str(g, key, cnt - 1, &s))
		sink += hash64(s.s, s.n, HASH64_INIT);
	if (gguf_arr_str(g, key, cnt, &s) == 0)
		__builtin_trap(); /* one past the end */
	const uint8_t *p = gguf_arr_data(g, key);
	if (p && cnt)
		sink += p[0] + p[cnt - 1]; /* first, and last element's byte */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gguf_t *g = gguf_open_buffer(data, size, "fuzz.gguf");
	if (!g) {
		const char *m = err_get();
		if (!m[0] || strchr(m, '\n'))
			__builtin_trap();
		return 0;
	}
	if (gguf_data_offset(g) % gguf_alignment(g))
		__builtin_trap();
	for (int64_t i = 0; i < gguf_n_kv(g); i++)
		poke_kv(g, i);
	for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
		const gguf_tensor_t *t = gguf_tensor(g, i);
		const uint8_t *p = t->data;
		char name[256];
		if (p < data || t->nbytes > size ||
		    (size_t)(p - data) > size - t->nbytes || t->nbytes == 0)
			__builtin_trap();
		sink += p[0] + p[t->nbytes - 1];
		if (t->name.n < sizeof name && !memchr(t->name.s, 0, t->name.n)) {
			memcpy(name, t->name.s, t->name.n);
			name[t->name.n] = '\0';
			if (gguf_find_tensor(g, name) != t)
				__builtin_trap();
		}
	}
	gguf_close(g);
	return 0;
}
