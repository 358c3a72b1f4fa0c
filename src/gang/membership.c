/* membership: scripted requested-core changes (membership.h). */
#include "gang/membership.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One mask per line of PATH. */
static int load_masks(membership_t *ms, const char *path)
{
	size_t len;
	char *text = file_read_all(path, &len);
	if (!text)
		return err_wrap("--membership file");
	size_t cap = 0, line = 0;
	for (char *save = NULL, *tok = strtok_r(text, "\n", &save); tok;
	     tok = strtok_r(NULL, "\n", &save)) {
		line++;
		char *end;
		errno = 0;
		unsigned long v = strtoul(tok, &end, 0);
		while (*end == ' ' || *end == '\r' || *end == '\t')
			end++;
		if (end == tok || *end || errno || v > 0xffffffffu) {
			err_set("--membership file %s: line %zu: '%.40s' is not a "
				"mask", path, line, tok); /* tok is in text */
			free(text);
			return -1;
		}
		if (ms->n_masks == cap) {
			cap = cap ? 2 * cap : 64;
			uint32_t *m = realloc(ms->masks, cap * sizeof *m);
			if (!m) {
				free(text);
				return err_sys("--membership file: realloc");
			}
			ms->masks = m;
		}
		ms->masks[ms->n_masks++] = (uint32_t)v;
	}
	free(text);
	if (!ms->n_masks)
		return err_set("--membership file %s: no masks", path);
	return 0;
}

/* A whole decimal number in [min, max] after a spec's prefix. */
static int spec_number(const char *what, const char *s, uint64_t min,
		       uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || errno || *s == '-' || v < min || v > max)
		return err_set("--membership %s'%s': not a number in [%llu, %llu]",
			       what, s, (unsigned long long)min,
			       (unsigned long long)max);
	*out = v;
	return 0;
}

int membership_parse(membership_t *ms, const char *spec)
{
	memset(ms, 0, sizeof *ms);
	uint64_t v;
	if (!spec)
		return 0;
	if (!strncmp(spec, "random:", 7)) {
		if (spec_number("random:", spec + 7, 0, UINT64_MAX, &v) < 0)
			return -1;
		ms->kind = MEMBERSHIP_RANDOM;
		rng_seed(&ms->rng, v);
		return 0;
	}
	if (!strncmp(spec, "flip:", 5)) {
		if (spec_number("flip:", spec + 5, 1, 60000, &v) < 0)
			return -1;
		ms->kind = MEMBERSHIP_FLIP;
		ms->flip_ms = (uint32_t)v;
		rng_seed(&ms->rng, 1);
		return 0;
	}
	if (!strncmp(spec, "file:", 5)) {
		ms->kind = MEMBERSHIP_FILE;
		if (load_masks(ms, spec + 5) < 0) {
			membership_free(ms); /* the masks read before the bad line */
			return -1;
		}
		return 0;
	}
	return err_set("--membership: '%s' is not random:SEED, file:PATH or "
		       "flip:MS", spec);
}

void membership_before_token(membership_t *ms, uint64_t index)
{
	if (!ms->g)
		return;
	uint32_t all = gang_all(ms->g);
	switch (ms->kind) {
	case MEMBERSHIP_RANDOM:
		gang_request(ms->g, (uint32_t)rng_next(&ms->rng) & all);
		break;
	case MEMBERSHIP_FILE: {
		size_t i = index < ms->n_masks ? index : ms->n_masks - 1;
		gang_request(ms->g, ms->masks[i] & all);
		break;
	}
	default:
		break;
	}
}

static void *flip_main(void *arg)
{
	membership_t *ms = arg;
	uint32_t all = gang_all(ms->g);
	while (!atomic_load_explicit(&ms->flip_stop, memory_order_relaxed)) {
		usleep(ms->flip_ms * 1000u);
		uint32_t bit = 1u << (rng_next(&ms->rng) % (uint64_t)gang_n_slots(ms->g));
		gang_request(ms->g, (gang_requested(ms->g) ^ bit) & all);
	}
	return NULL;
}

int membership_start(membership_t *ms, gang_t *g)
{
	ms->g = g;
	if (ms->kind != MEMBERSHIP_FLIP || !g)
		return 0;
	atomic_store_explicit(&ms->flip_stop, false, memory_order_relaxed);
	int e = pthread_create(&ms->flipper, NULL, flip_main, ms);
	if (e) {
		errno = e;
		return err_sys("--membership flip: pthread_create");
	}
	ms->flipping = true;
	return 0;
}

void membership_stop(membership_t *ms)
{
	if (!ms->flipping)
		return;
	atomic_store_explicit(&ms->flip_stop, true, memory_order_relaxed);
	pthread_join(ms->flipper, NULL);
	ms->flipping = false;
}

void membership_free(membership_t *ms)
{
	free(ms->masks);
	ms->masks = NULL;
	ms->n_masks = 0;
}
