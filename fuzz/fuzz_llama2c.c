/* libFuzzer harness for the llama2.c checkpoint reader and the llama2.c
 * tokenizer reader: the input is split at its first 4 bytes: a little-endian
 * length L, then L bytes of checkpoint, the rest a tokenizer.bin. Both go
 * through the real file path (a memfd) as a user's files would. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/model.h"

static int memfd_with(const char *name, const uint8_t *p, size_t n, char *path,
		      size_t cap)
{
	int fd = memfd_create(name, 0);
	if (fd < 0)
		return -1;
	if (n && write(fd, p, n) != (ssize_t)n) {
		close(fd);
		return -1;
	}
	snprintf(path, cap, "/proc/self/fd/%d", fd);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	uint32_t l;
	memcpy(&l, data, 4);
	data += 4;
	size -= 4;
	if (l > size)
		l = (uint32_t)size;
	char mp[64], tp[64];
	int mfd = memfd_with("model", data, l, mp, sizeof mp);
	int tfd = memfd_with("tok", data + l, size - l, tp, sizeof tp);
	if (mfd >= 0 && tfd >= 0) {
		model_t *m = model_load(mp, tp);
		model_free(m);
		tokenizer_t *t = tokenizer_load_llama2c(tp, 64);
		tokenizer_free(t);
	}
	if (mfd >= 0)
		close(mfd);
	if (tfd >= 0)
		close(tfd);
	return 0;
}
