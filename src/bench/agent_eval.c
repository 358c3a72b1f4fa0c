/* bench agent (agent_eval.h). */
#include "bench/agent_eval.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/stats.h"

const char *const agent_regime_names[REGIME_COUNT] = {
	"idle", "steady", "burst", "saturation", "antagonist"};

agent_regime_t agent_regime_of(int i)
{
	return (agent_regime_t)(i % REGIME_COUNT);
}

/* x scaled by a factor in [0.8, 1.2) */
static double jitter(uint64_t *rng, double x)
{
	*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
	double u = (double)(*rng >> 11) / (double)(1ull << 53);
	return x * (0.8 + 0.4 * u);
}

void agent_regime_snap(agent_regime_t r, uint64_t *rng, uint32_t n_slots,
		       controller_snap_t *s)
{
	/* ttft p50, p99 (ms), queue, decode tok/s, tenant cores */
	static const double t[REGIME_COUNT][5] = {
		[REGIME_IDLE] = {15, 25, 0, 900, 0},
		[REGIME_STEADY] = {60, 150, 3, 700, 1},
		[REGIME_BURST] = {400, 2500, 60, 500, 1},
		[REGIME_SATURATION] = {3000, 12000, 400, 450, 1},
		[REGIME_ANTAGONIST] = {90, 250, 1, 300, 3},
	};
	memset(s, 0, sizeof *s);
	s->ttft_p50_us = (uint64_t)(jitter(rng, t[r][0]) * 1e3);
	s->ttft_p99_us = (uint64_t)(jitter(rng, t[r][1]) * 1e3);
	if (s->ttft_p99_us < s->ttft_p50_us)
		s->ttft_p99_us = s->ttft_p50_us;
	s->queue_depth = (uint32_t)jitter(rng, t[r][2]);
	s->decode_mtok_s = (uint64_t)(jitter(rng, t[r][3]) * 1e3);
	uint32_t tw = (uint32_t)t[r][4];
	s->tenant_width = tw < n_slots ? tw : n_slots - 1;
	s->n_slots = n_slots;
	s->generations = 100;
}

int agent_regime_best(agent_regime_t r, bool two_choice)
{
	static const int full[REGIME_COUNT] = {0, 1, 2, 2, 3};
	static const int two[REGIME_COUNT] = {1, 1, 0, 0, 1};
	return two_choice ? two[r] : full[r];
}

void agent_eval_lib(policy_lib_t *lib, int n_slots, bool two_choice)
{
	policy_lib_builtin(lib, n_slots);
	if (!two_choice)
		return;
	/* {latency, throughput}, in that order */
	policy_t lat = lib->rec[2], thr = lib->rec[3];
	lib->rec[0] = lat;
	lib->rec[1] = thr;
	lib->n = lib->n_builtin = 2;
}

int agent_eval_run(controller_t *c, int decisions, bool two_choice,
		   uint64_t seed, agent_eval_t *out)
{
	memset(out, 0, sizeof *out);
	int choices = c->cfg.n_arms < 10 ? c->cfg.n_arms : 10;
	double *ms = calloc((size_t)decisions, sizeof *ms);
	if (!ms)
		return err_sys("bench agent: calloc");
	uint64_t rng = seed * 2654435761u + 1;
	uint32_t n_slots = (uint32_t)c->cfg.lib->n_slots;
	for (int i = 0; i < decisions; i++) {
		agent_regime_t r = agent_regime_of(i);
		controller_snap_t s;
		agent_regime_snap(r, &rng, n_slots, &s);
		s.n_policies = (uint32_t)c->cfg.n_arms;
		s.index = (uint32_t)(c->last >= 0 ? c->last : 0);
		controller_decision_t d;
		uint64_t t0 = time_now_ns();
		if (controller_step(c, &s, (double)i, t0, &d) < 0) {
			free(ms);
			return -1;
		}
		ms[i] = (double)(time_now_ns() - t0) / 1e6;
		int a = (int)d.index;
		if (a >= 0 && a < 10)
			out->answers[a]++;
		out->valid += !d.raw_invalid;
		out->answers_valid += a >= 0 && a < c->cfg.n_arms;
		bool ok = a == agent_regime_best(r, two_choice);
		out->correct += ok;
		out->per_correct[r] += ok;
		out->per_n[r]++;
	}
	out->decisions = decisions;
	out->choices = choices;
	out->chance = 1.0 / choices;
	/* the best constant answer: how often each index is the best */
	int best_count[10] = {0};
	for (int i = 0; i < decisions; i++)
		best_count[agent_regime_best(agent_regime_of(i), two_choice)]++;
	int maj = 0, nonzero = 0;
	for (int k = 0; k < 10; k++) {
		if (best_count[k] > maj)
			maj = best_count[k];
		nonzero += out->answers[k] > 0;
	}
	out->majority = (double)maj / decisions;
	out->constant = nonzero == 1;
	out->p50_ms = stats_quantile(ms, (size_t)decisions, 0.5);
	out->p99_ms = stats_quantile(ms, (size_t)decisions, 0.99);
	free(ms);
	return 0;
}
