/* policy: how the gang takes and returns cores (DESIGN.md section 4).
 *
 * A policy is a record, not code: the leader asks it for the requested slot
 * mask before every token (policy_next_mask) and tells it how long the token
 * took (policy_observe). This records: elastic (every allowed core
 * while a generation runs), static:K (a fixed set of K slots), and knee
 * (elastic capped at the width past which tok/s stops growing, measured
 * online). */
#ifndef EGANG_POLICY_H
#define EGANG_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "gang/gang.h"

typedef enum policy_width {
	WIDTH_ALL,    /* every slot not reserved */
	WIDTH_STATIC, /* exactly static_mask */
	WIDTH_KNEE,   /* the online knee */
	WIDTH_COUNT
} policy_width_t;

typedef struct policy {
	char name[32];
	policy_width_t width;
	uint32_t static_mask;   /* WIDTH_STATIC: the slots used */
	uint32_t reserved_mask; /* slots never requested (for tenants) */
	gang_acquire_t acquire;
} policy_t;

/* Online knee measurement: an exponentially weighted mean of the token time
 * at each width, an exploration step every `explore_every` tokens. */
typedef struct knee_state {
	double ns[GANG_MAX_SLOTS + 1]; /* EWMA token time per width */
	uint32_t seen[GANG_MAX_SLOTS + 1];
	uint64_t tokens;
	int knee;      /* current cap */
	int exploring; /* width being tried this token, 0 if none */
	uint64_t rng;
} knee_state_t;

void knee_init(knee_state_t *k, int n_slots);
/* The knee: the smallest width whose rate is within 5% of the best seen. */
int knee_estimate(const knee_state_t *k, int n_slots);

/* The mask to request for the next token (slot 0 always in). */
uint32_t policy_next_mask(const policy_t *p, knee_state_t *k, int n_slots);
/* Reports the last token: its participant mask and its time. */
void policy_observe(const policy_t *p, knee_state_t *k, uint32_t mask,
		    uint64_t token_ns);

#endif
