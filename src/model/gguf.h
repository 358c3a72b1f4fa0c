/* GGUF reader (memory-mapped) and writer, versions 2 and 3.
 *
 * File layout (little endian):
 *  1. magic "GGUF" (4 bytes)
 *  2. uint32 version (2 or 3; version 1 is refused)
 *  3. uint64 n_tensors, uint64 n_kv
 *  4. n_kv times: string key, uint32 value type, value
 *       string = uint64 len, len bytes (no NUL)
 *       value  = scalar | string | array (uint32 elem type, uint64 n, n elems;
 *                arrays may nest)
 *  5. n_tensors times: string name, uint32 n_dims (1..4), uint64 ne[n_dims]
 *     (ne[0] fastest), uint32 ggml type, uint64 offset (relative to the data
 *     section, a multiple of the alignment)
 *  6. padding to general.alignment (default 32), then the data section.
 * egang's reader also requires: keys and tensor names non-empty and unique,
 * bool values 0 or 1, arrays nested at most 8 deep, every ne[d] >= 1 (a
 * zero-size tensor is refused), ne[0] a multiple of the type's block size,
 * general.alignment a uint32 that is a nonzero power of two, every
 * tensor's data inside the file, and the tensors' data tiling the data
 * section as writers lay it out: sorted by offset, the first at 0, each
 * at the end of the one before padded to the alignment, the file ending
 * within the last one's padding (no shared and no unclaimed bytes).
 * A 2-D weight has ne = {in, out}: row r (an output) is ne[0] contiguous
 * elements. */
#ifndef EGANG_GGUF_H
#define EGANG_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

typedef enum gguf_type {
	GGUF_TYPE_UINT8 = 0,
	GGUF_TYPE_INT8 = 1,
	GGUF_TYPE_UINT16 = 2,
	GGUF_TYPE_INT16 = 3,
	GGUF_TYPE_UINT32 = 4,
	GGUF_TYPE_INT32 = 5,
	GGUF_TYPE_FLOAT32 = 6,
	GGUF_TYPE_BOOL = 7,
	GGUF_TYPE_STRING = 8,
	GGUF_TYPE_ARRAY = 9,
	GGUF_TYPE_UINT64 = 10,
	GGUF_TYPE_INT64 = 11,
	GGUF_TYPE_FLOAT64 = 12,
	GGUF_TYPE_COUNT
} gguf_type_t;

#define GGUF_MAX_DIMS 4
#define GGUF_DEFAULT_ALIGNMENT 32

typedef struct gguf gguf_t; /* opaque */

typedef struct gguf_str {
	const char *s; /* points into the mapping: NOT NUL-terminated */
	uint64_t n;
} gguf_str_t;

typedef struct gguf_tensor {
	gguf_str_t name;
	dtype_t type;
	uint32_t n_dims;
	int64_t ne[GGUF_MAX_DIMS]; /* unused dims are 1 */
	uint64_t offset;           /* in the data section */
	const void *data;          /* into the mapping */
	size_t nbytes;
} gguf_tensor_t;

/* Opens and validates a file: every count, length, dimension, type and
 * offset is checked against the file size before use. NULL + err_get()
 * ("file: field at offset N: problem") on any malformed input. */
gguf_t *gguf_open(const char *path);
/* Same, over a caller-owned buffer that must outlive the gguf_t (fuzzing). */
gguf_t *gguf_open_buffer(const void *buf, size_t len, const char *name);
void gguf_close(gguf_t *g);

uint32_t gguf_version(const gguf_t *g);
size_t gguf_alignment(const gguf_t *g);
size_t gguf_file_size(const gguf_t *g);
size_t gguf_data_offset(const gguf_t *g); /* file offset of the data section */

/* Metadata, by index 0..n_kv-1. */
int64_t gguf_n_kv(const gguf_t *g);
int64_t gguf_find_key(const gguf_t *g, const char *key); /* -1 if absent */
gguf_str_t gguf_key(const gguf_t *g, int64_t i);
gguf_type_t gguf_kv_type(const gguf_t *g, int64_t i);
/* Scalar accessors: -1 if the key is absent or not convertible without loss
 * (any integer type for get_int, any float or integer for get_float). */
int gguf_get_int(const gguf_t *g, const char *key, int64_t *out);
int gguf_get_float(const gguf_t *g, const char *key, double *out);
int gguf_get_bool(const gguf_t *g, const char *key, bool *out);
int gguf_get_str(const gguf_t *g, const char *key, gguf_str_t *out);
/* Arrays: element type and count; -1 if absent or not an array. */
int gguf_get_arr(const gguf_t *g, const char *key, gguf_type_t *elem,
		 uint64_t *n);
/* Element i of a string array (bounds-checked); -1 on error. */
int gguf_arr_str(const gguf_t *g, const char *key, uint64_t i, gguf_str_t *out);
/* Raw data of a numeric or bool array (elements packed, little endian, not
 * necessarily aligned: memcpy them): NULL if not such an array. */
const void *gguf_arr_data(const gguf_t *g, const char *key);
/* Raw bytes of value i as stored in the file (type + payload), for round
 * trips: *p and *n describe the value's encoding after the type field. */
void gguf_kv_raw(const gguf_t *g, int64_t i, const void **p, size_t *n);
/* File offset of value i (after its type field), for messages. */
size_t gguf_kv_offset(const gguf_t *g, int64_t i);

/* Tensors, by index 0..n_tensors-1. */
int64_t gguf_n_tensors(const gguf_t *g);
const gguf_tensor_t *gguf_tensor(const gguf_t *g, int64_t i);
const gguf_tensor_t *gguf_find_tensor(const gguf_t *g, const char *name);

/* Name of a value type ("uint32"). */
const char *gguf_type_name(gguf_type_t t);

/* ---- writer ---- */
typedef struct gguf_writer gguf_writer_t; /* opaque */

/* Fills dst (nbytes) with the data of tensor `index` (in add order). */
typedef int (*gguf_fill_fn)(void *user, int64_t index, void *dst,
			    size_t nbytes);
/* Called after each tensor is written: done and total bytes of data. */
typedef void (*gguf_progress_fn)(void *user, uint64_t done, uint64_t total);

gguf_writer_t *gguf_writer_new(void);
void gguf_writer_free(gguf_writer_t *w);
/* Setting a key twice replaces the value. Strings are copied. */
void gguf_writer_set_u32(gguf_writer_t *w, const char *key, uint32_t v);
void gguf_writer_set_i32(gguf_writer_t *w, const char *key, int32_t v);
void gguf_writer_set_u64(gguf_writer_t *w, const char *key, uint64_t v);
void gguf_writer_set_f32(gguf_writer_t *w, const char *key, float v);
void gguf_writer_set_bool(gguf_writer_t *w, const char *key, bool v);
void gguf_writer_set_str(gguf_writer_t *w, const char *key, const char *v);
/* Scalar of any numeric or bool type; v points to one value of that type
 * (e.g. a uint16_t for GGUF_TYPE_UINT16). */
void gguf_writer_set_scalar(gguf_writer_t *w, const char *key,
			    gguf_type_t type, const void *v);
/* Numeric (or bool) array of elem type (copied, n elements). Setters that
 * fail (bad type, bool not 0/1, no memory) make gguf_writer_write fail. */
void gguf_writer_set_arr(gguf_writer_t *w, const char *key, gguf_type_t elem,
			 const void *data, uint64_t n);
/* String array (copied). */
void gguf_writer_set_arr_str(gguf_writer_t *w, const char *key,
			     const char *const *v, uint64_t n);
/* Copies every key-value of g (raw), e.g. to convert or rewrite a file. */
void gguf_writer_copy_kv(gguf_writer_t *w, const gguf_t *g);
/* Adds a tensor; data is copied at write time from `data`, or produced by
 * the writer's fill callback when data is NULL. ne[0] must be a multiple of
 * the type's block size. -1 on a bad shape. */
int gguf_writer_add_tensor(gguf_writer_t *w, const char *name, dtype_t type,
			   uint32_t n_dims, const int64_t *ne, const void *data);
void gguf_writer_set_fill(gguf_writer_t *w, gguf_fill_fn fn, void *user);
void gguf_writer_set_progress(gguf_writer_t *w, gguf_progress_fn fn,
			      void *user);
/* Writes version 3 to path (via a temporary file renamed on success, so a
 * failed write never leaves a partial model); -1 with a message. */
int gguf_writer_write(gguf_writer_t *w, const char *path);

#endif
