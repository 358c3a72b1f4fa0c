/* membership: scripted changes of the gang's requested cores, for the
 * experiments and tests that show bit-exactness under any membership.
 *
 *   random:SEED  a random requested mask before every token
 *   file:PATH    one mask per token (hex or decimal, one a line), the last
 *                repeated
 *   flip:MS      a thread of its own toggles one random slot every MS ms,
 *                asynchronously to tokens
 *
 * Masks are cut to the gang's slots; the leader (slot 0) is always in the
 * latch whatever the mask says (gang.h). */
#ifndef EGANG_MEMBERSHIP_H
#define EGANG_MEMBERSHIP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "gang/gang.h"

typedef enum membership_kind {
	MEMBERSHIP_FIXED,  /* no changes */
	MEMBERSHIP_RANDOM,
	MEMBERSHIP_FILE,
	MEMBERSHIP_FLIP,
	MEMBERSHIP_COUNT
} membership_kind_t;

typedef struct membership {
	membership_kind_t kind;
	gang_t *g;
	rng_t rng;
	uint32_t *masks; /* file: */
	size_t n_masks;
	uint32_t flip_ms;
	_Atomic bool flip_stop; /* relaxed: a stop flag polled every MS ms */
	pthread_t flipper;
	bool flipping;
} membership_t;

/* Parses SPEC (NULL: fixed); -1 + err_get() naming the spec or file line. */
int membership_parse(membership_t *ms, const char *spec);
/* Before token `index` of a generation: random: and file: request a mask. */
void membership_before_token(membership_t *ms, uint64_t index);
/* flip: starts / stops the flipping thread (others: nothing to do).
 * start returns -1 + err_get() when the thread cannot start. */
int membership_start(membership_t *ms, gang_t *g);
void membership_stop(membership_t *ms);
/* Frees the masks (after stop). */
void membership_free(membership_t *ms);

#endif
