/* policy: requested masks per token, and the online knee (policy.h). */
#include "policy/policy.h"

#include <string.h>

#define KNEE_EXPLORE_EVERY 16
#define KNEE_ALPHA 0.2
#define KNEE_TOLERANCE 0.95

static uint32_t first_slots(int w)
{
	return w >= 32 ? 0xffffffffu : (1u << w) - 1;
}

void knee_init(knee_state_t *k, int n_slots)
{
	memset(k, 0, sizeof *k);
	k->knee = n_slots;
	k->rng = 0x9e3779b97f4a7c15ull;
}

int knee_estimate(const knee_state_t *k, int n_slots)
{
	double best = 0;
	for (int w = 1; w <= n_slots; w++)
		if (k->seen[w] && 1e9 / k->ns[w] > best)
			best = 1e9 / k->ns[w];
	for (int w = 1; w <= n_slots; w++)
		if (k->seen[w] && 1e9 / k->ns[w] >= KNEE_TOLERANCE * best)
			return w;
	return n_slots;
}

uint32_t policy_next_mask(const policy_t *p, knee_state_t *k, int n_slots)
{
	uint32_t all = first_slots(n_slots) & ~p->reserved_mask;
	switch (p->width) {
	case WIDTH_STATIC:
		return (p->static_mask & all) | 1u;
	case WIDTH_KNEE: {
		/* first visit every width once (widest first), then explore one
		 * random width every KNEE_EXPLORE_EVERY tokens */
		int w = k->knee;
		k->exploring = 0;
		for (int v = n_slots; v >= 1; v--)
			if (!k->seen[v]) {
				k->exploring = v;
				break;
			}
		if (!k->exploring && k->tokens % KNEE_EXPLORE_EVERY == KNEE_EXPLORE_EVERY - 1) {
			k->rng ^= k->rng << 13;
			k->rng ^= k->rng >> 7;
			k->rng ^= k->rng << 17;
			k->exploring = 1 + (int)(k->rng % (uint64_t)n_slots);
		}
		if (k->exploring)
			w = k->exploring;
		return (first_slots(w) & all) | 1u;
	}
	default:
		return all | 1u;
	}
}

void policy_observe(const policy_t *p, knee_state_t *k, uint32_t mask,
		    uint64_t token_ns)
{
	if (p->width != WIDTH_KNEE)
		return;
	int w = __builtin_popcount(mask);
	/* a token whose latch had fewer members than requested (a worker was
	 * still waking) measures the width it ran at */
	if (k->seen[w])
		k->ns[w] = (1 - KNEE_ALPHA) * k->ns[w] + KNEE_ALPHA * (double)token_ns;
	else
		k->ns[w] = (double)token_ns;
	k->seen[w]++;
	k->tokens++;
	k->knee = knee_estimate(k, GANG_MAX_SLOTS);
}
