/* The contract between the model and whoever runs it (serial loop or gang).
 *
 * A token's forward pass is a fixed list of waves. Wave w has n_chunks
 * independent chunks (read only while the plan runs: the model may set a
 * wave's count between runs, as its batch plan does per batch): chunk(ctx, w, i) computes whole output elements, each
 * with a fixed reduction order, so its result does not depend on which thread
 * runs it or in which order the chunks run. After every chunk of wave w has
 * finished, finish(ctx, w) (may be NULL) runs exactly once, on one thread,
 * before any chunk of wave w+1 starts: it does the small cross-chunk work
 * (norms, quantizing the next input, RoPE) in a fixed order. */
#ifndef EGANG_WAVE_H
#define EGANG_WAVE_H

#include <stdint.h>

typedef struct wave {
	uint32_t n_chunks;
	void (*chunk)(void *ctx, uint32_t wave, uint32_t chunk);
	void (*finish)(void *ctx, uint32_t wave);
} wave_t;

typedef struct wave_plan {
	void *ctx;
	uint32_t n_waves;
	const wave_t *waves; /* (n_waves) */
} wave_plan_t;

/* Runs every wave of the plan on the calling thread, in order. */
static inline void wave_plan_run_serial(const wave_plan_t *p)
{
	for (uint32_t w = 0; w < p->n_waves; w++) {
		const wave_t *wv = &p->waves[w];
		for (uint32_t i = 0; i < wv->n_chunks; i++)
			wv->chunk(p->ctx, w, i);
		if (wv->finish)
			wv->finish(p->ctx, w);
	}
}

#endif
