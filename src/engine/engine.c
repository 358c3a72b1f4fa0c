/* engine: the generation loop (see engine.h). */
#include "engine/engine.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/base.h"
#include "model/grammar.h"
#include "model/utf8.h"

const char *engine_stop_name(engine_stop_t s)
{
	static const char *names[STOP_COUNT] = {"length", "eos", "context",
						"cancel", "stop"};
	return s < STOP_COUNT ? names[s] : "?";
}

void engine_result_free(engine_result_t *r)
{
	free(r->ids);
	r->ids = NULL;
}

double engine_result_decode_tps(const engine_result_t *r)
{
	return r->decode_s > 0 ? (double)r->decode_steps / r->decode_s : 0.0;
}

/* Runs position pos with token `tok`; returns the logits. */
static float *step(forward_t *f, gang_t *g, int32_t tok, int32_t pos)
{
	if (forward_set_input(f, tok, pos) < 0)
		return NULL;
	if (g)
		gang_run_token(g, forward_plan(f));
	else
		wave_plan_run_serial(forward_plan(f));
	return forward_logits(f);
}

/* Tokens in the first prefill batch of a generation on a gang with workers
 * (engine_generate). */
#define FIRST_BATCH 4

/* Runs the prompt's positions pos..pos+n-1 as one prefill batch (logits of
 * the last one when asked); 0 or -1. */
static int prefill_batch(forward_t *f, gang_t *g, const int32_t *toks,
			 int32_t n, int32_t pos, bool logits)
{
	if (forward_set_batch(f, toks, n, pos, logits) < 0)
		return -1;
	if (g)
		gang_run_token(g, forward_batch_plan(f));
	else
		wave_plan_run_serial(forward_batch_plan(f));
	return forward_batch_status(f);
}

/* A control byte that is not whitespace is dropped from the text, as
 * llama2.c's safe_printf does; bytes >= 0x80 (UTF-8) are kept. */
static size_t text_clean(char *s, size_t n)
{
	if (n != 1)
		return n;
	unsigned char c = (unsigned char)s[0];
	bool ctl = (c < 0x20 && c != '\n' && c != '\t' && c != '\r' &&
		    c != '\v' && c != '\f') || c == 0x7f;
	return ctl ? 0 : n;
}

/* Generated text on its way to on_text, in three steps:
 *  1. a single control byte that is not whitespace is dropped (text_clean);
 *  2. the bytes go through the UTF-8 policy (model/utf8.h): an incomplete
 *     character waits for the next piece, invalid bytes become U+FFFD;
 *  3. with stop strings, the decoded text is searched for them: the text
 *     before the first one is handed out and the generation stops; the
 *     longest tail that may still begin one is held back, so a stop string
 *     that spans tokens is found before any of it is emitted (OpenAI
 *     semantics). Everything else is handed out at once.
 * So on_text sees whole characters only, and `generate` and `serve` print
 * the same text for the same tokens. */
typedef struct text_out {
	utf8_stream_t u8;
	char *buf;       /* decoded text: held back, then the new piece */
	size_t len, cap;
	bool generated;  /* the text after the prompt (stop strings apply) */
} text_out_t;

/* Hands n bytes to on_text; nonzero if the callback cancels. */
static int text_emit(const engine_params_t *p, const char *s, size_t n)
{
	return n && p->on_text && p->on_text(p->user, s, n);
}

static bool char_start(const char *s, size_t i)
{
	return ((unsigned char)s[i] & 0xC0) != 0x80;
}

/* The first stop string in s[0..n) that begins a character: its offset, n
 * if none. */
static size_t stop_find(const engine_params_t *p, const char *s, size_t n)
{
	size_t cut = n;
	for (int i = 0; i < p->n_stop; i++) {
		size_t sl = strlen(p->stop[i]);
		size_t from = 0;
		const char *hit;
		while (sl && from < cut &&
		       (hit = memmem(s + from, n - from, p->stop[i], sl))) {
			size_t at = (size_t)(hit - s);
			if (at < cut && char_start(s, at)) {
				cut = at;
				break;
			}
			from = at + 1;
		}
	}
	return cut;
}

/* The longest tail of s[0..n) that is a proper prefix of a stop string. */
static size_t stop_hold(const engine_params_t *p, const char *s, size_t n)
{
	size_t hold = 0;
	for (int i = 0; i < p->n_stop; i++) {
		size_t sl = strlen(p->stop[i]);
		for (size_t k = sl ? sl - 1 : 0; k > hold; k--)
			if (k <= n && !memcmp(s + n - k, p->stop[i], k)) {
				hold = k;
				break;
			}
	}
	return hold;
}

/* text_decoded's return when the held-back text cannot grow */
#define TEXT_NO_MEMORY (-2)

/* Decoded text d[0..n): emitted, or searched and partly held back.
 * Returns STOP_STRING, STOP_CANCEL, -1 (go on) or TEXT_NO_MEMORY (err_sys
 * set). */
static int text_decoded(text_out_t *o, const engine_params_t *p, const char *d,
			size_t n, bool last)
{
	if (!o->generated || !p->n_stop)
		return text_emit(p, d, n) ? STOP_CANCEL : -1;
	if (o->len + n >= o->cap) { /* never NULL once here, even for n = 0 */
		size_t cap = (o->len + n) * 2 + 64;
		char *grown = eg_realloc(o->buf, cap);
		if (!grown) {
			err_sys("cannot allocate the held-back text of stop strings");
			return TEXT_NO_MEMORY;
		}
		o->buf = grown;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, d, n);
	o->len += n;
	size_t cut = stop_find(p, o->buf, o->len);
	if (cut < o->len) {
		int c = text_emit(p, o->buf, cut);
		o->len = 0;
		return c ? STOP_CANCEL : STOP_STRING;
	}
	size_t out = last ? o->len : o->len - stop_hold(p, o->buf, o->len);
	while (out > 0 && out < o->len && !char_start(o->buf, out))
		out--; /* whole characters only (a stop that is not UTF-8) */
	int c = text_emit(p, o->buf, out);
	memmove(o->buf, o->buf + out, o->len - out);
	o->len -= out;
	return c ? STOP_CANCEL : -1;
}

/* One token's piece; returns STOP_STRING, STOP_CANCEL or -1 (go on). */
static int text_add(text_out_t *o, const engine_params_t *p, const char *s,
		    size_t n)
{
	char d[UTF8_STREAM_OUT_MAX(512)];
	if (n > 512)
		n = 512; /* tokenizer_decode's pieces fit in 512 */
	return text_decoded(o, p, d, utf8_stream_feed(&o->u8, s, n, d), false);
}

/* The end of the text: the incomplete character as U+FFFD (which a stop
 * string may still match), then everything held back. */
static int text_end(text_out_t *o, const engine_params_t *p)
{
	char d[4];
	return text_decoded(o, p, d, utf8_stream_flush(&o->u8, d), true);
}

/* The prompt's ids (malloc'd, room for the context + 1 in *out): given,
 * or encoded with BOS; checked against the context and the vocabulary.
 * Returns their count, -1 (bad prompt) or ENGINE_FAIL + err_get(). */
static int64_t prompt_load(const model_t *m, const engine_params_t *p,
			   int32_t ctx, int32_t **out)
{
	int64_t cap = (int64_t)ctx + 1;
	int32_t *ids = eg_malloc((size_t)cap * sizeof *ids);
	if (!ids) {
		err_sys("cannot allocate the token ids");
		return ENGINE_FAIL;
	}
	int64_t n_prompt;
	if (p->prompt_ids) {
		n_prompt = p->n_prompt_ids;
		if (n_prompt > cap)
			n_prompt = cap;
		memcpy(ids, p->prompt_ids, (size_t)n_prompt * sizeof *ids);
	} else {
		const char *text = p->prompt ? p->prompt : "";
		n_prompt = tokenizer_encode(m->tok, text, strlen(text), true, ids, cap);
	}
	if (n_prompt == 0) /* a vocabulary without BOS and no prompt */
		err_set("the prompt is empty and the vocabulary has no "
			"BOS token to start from");
	else if (n_prompt >= ctx)
		err_set("the prompt has %lld tokens; the context holds %d (--ctx)",
			(long long)(p->prompt_ids ? p->n_prompt_ids : n_prompt), ctx);
	for (int64_t i = 0; i < n_prompt && n_prompt < ctx; i++)
		if (ids[i] < 0 || ids[i] >= m->cfg.vocab_size) {
			err_set("prompt token %lld has id %d outside the "
				"vocabulary", (long long)i, ids[i]);
			n_prompt = -1;
		}
	if (n_prompt <= 0 || n_prompt >= ctx) {
		free(ids);
		return -1;
	}
	*out = ids;
	return n_prompt;
}

/* One generation in progress (engine_generate and its helpers). */
typedef struct gen {
	const model_t *m;
	forward_t *f;
	gang_t *g;
	const engine_params_t *p;
	engine_result_t *r;
	int32_t *ids;      /* (ctx + 1) the prompt, then the generated tokens */
	int64_t n_prompt;
	text_out_t out;
	char piece[512];
	uint64_t t0, t_prefill;
	int32_t pos;       /* the position the token loop goes on from */
	float *logits;     /* of position pos, when the prompt left them */
	grammar_state_t *gs; /* with p->grammar, else NULL */
	bool stopped;
	int rc;
} gen_t;

/* Hands the text of token `next` after position pos to on_text (through
 * the stop strings once generated). false: go on; true: the generation
 * ends here, with s->rc or r->stop set. */
static bool gen_emit(gen_t *s, int32_t pos, int32_t next)
{
	int k = tokenizer_decode(s->m->tok, s->ids[pos], next, s->piece,
				 sizeof s->piece);
	size_t len = k > 0 ? text_clean(s->piece, (size_t)k) : 0;
	s->out.generated = pos + 1 >= s->n_prompt;
	int why = text_add(&s->out, s->p, s->piece, len);
	if (why == TEXT_NO_MEMORY)
		s->rc = ENGINE_FAIL;
	else if (why >= 0)
		s->r->stop = (engine_stop_t)why;
	return why != -1;
}

/* The prompt. Positions 0..n_prompt-1 (all but the last when nothing is to
 * be generated, as the token loop would) go through prefill batches of up
 * to forward_batch_max tokens, one gang token (one latch, one before_token
 * call) per batch; only the last batch computes logits. The batches give
 * the same KV cache and logits, bit for bit, as the token loop (forward.h),
 * which runs the prompt instead when batching is off. */
static void gen_prefill(gen_t *s, int32_t bmax)
{
	const engine_params_t *p = s->p;
	int32_t n_prompt = (int32_t)s->n_prompt;
	int32_t end = p->n_predict > 0 ? n_prompt : n_prompt - 1;
	/* The first batch is small when workers are requested: gang_begin
	 * has only just woken them, and a worker joins at the first token
	 * after its ack (gang.h, I4), so a full first batch ran on the leader
	 * alone (perf record showed the worker absent for most of a 256-token
	 * prompt). A batch of FIRST_BATCH tokens outlasts the worker's wake-up
	 * (~0.1 ms) even on stories260K; figures: doc/measurements.md. One
	 * core: no change (no worker to wait for). */
	int32_t first = s->g && (gang_requested(s->g) & ~1u) && FIRST_BATCH < bmax
				? FIRST_BATCH
				: bmax;
	int32_t pos = s->pos; /* n_cached */
	while (pos < end && !s->stopped) {
		int32_t most = pos == s->pos ? first : bmax;
		int32_t nb = end - pos < most ? end - pos : most;
		bool last = pos + nb == n_prompt;
		if (p->before_token)
			p->before_token(p->user, (uint64_t)pos);
		if (prefill_batch(s->f, s->g, s->ids + pos, nb, pos, last) < 0) {
			s->rc = ENGINE_FAIL;
			s->stopped = true;
			break;
		}
		if (last) {
			s->logits = forward_logits(s->f);
			s->t_prefill = time_now_ns();
		}
		/* echo the batch's prompt text (the last prompt token's text
		 * follows the first sampled token, as in the token loop) */
		for (int32_t q = pos; q < pos + nb && p->echo_prompt; q++) {
			if (q + 1 >= n_prompt)
				break;
			if (gen_emit(s, q, s->ids[q + 1])) {
				s->stopped = true;
				break;
			}
		}
		pos += nb;
	}
	s->pos = s->logits ? n_prompt - 1 : pos;
}

/* The logits of sampled position pos, checked before the sampler sees
 * them: a NaN or an infinity (corrupt weights, an overflow in the forward
 * pass) ends the generation with an error that names the position, rather
 * than a token drawn from garbage. One pass (sampler_find_nonfinite); the
 * count and the message only when one is there. 0 or ENGINE_FAIL +
 * err_get(). */
static int logits_check(const float *logits, int32_t vocab, int32_t pos)
{
	int32_t bad = sampler_find_nonfinite(logits, vocab);
	if (bad < 0)
		return 0;
	int32_t count = 0;
	for (int32_t i = bad; i < vocab; i++)
		count += !isfinite(logits[i]);
	float v = logits[bad];
	err_set("position %d: the model produced non-finite logits (%s at id %d; "
		"%d of %d not finite): its weights may be corrupt", pos,
		isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf", bad, count, vocab);
	return ENGINE_FAIL;
}

/* The matcher of p->grammar (NULL without one, or with *rc = ENGINE_FAIL
 * + err_get() when memory ran out): on the model's vocabulary trie, with
 * the control tokens as end tokens where they end the generation. */
static grammar_state_t *grammar_start(const model_t *m, const engine_params_t *p,
				      int *rc)
{
	if (!p->grammar)
		return NULL;
	const grammar_vocab_t *v = model_grammar_vocab(m);
	grammar_state_t *gs = v ? grammar_state_new(p->grammar, v) : NULL;
	if (!gs) {
		*rc = ENGINE_FAIL;
		return NULL;
	}
	grammar_state_set_control_ends(gs, p->stop_at_control);
	return gs;
}

/* The token after position pos from logits (finite, vocab), under the
 * grammar when gs is not NULL: the logits of the tokens it refuses become
 * -inf before the sampler's chain (bias, penalties, temperature...), and
 * the matcher takes the token. When the sampler is a plain argmax
 * (sampler_is_argmax), the argmax is checked first and the whole mask is
 * computed only when the grammar refuses it: the same token, since the
 * lowest-id largest logit that the grammar allows is then that one.
 * ENGINE_FAIL + err_get() when no token is allowed (a stuck grammar) or
 * memory ran out. */
static int32_t sample_constrained(grammar_state_t *gs, sampler_t *smp,
				  float *logits, int32_t vocab, int32_t pos)
{
	if (!gs)
		return sampler_sample(smp, logits);
	int32_t next = -1;
	if (sampler_is_argmax(smp)) {
		next = sampler_argmax(logits, vocab);
		if (!grammar_allows(gs, next))
			next = -1;
	}
	if (next < 0) {
		int32_t allowed = grammar_mask(gs, logits);
		if (allowed < 0)
			return ENGINE_FAIL;
		if (allowed == 0) {
			err_set("grammar: no token of the vocabulary can continue the "
				"text at position %d (the grammar is stuck)", pos + 1);
			return ENGINE_FAIL;
		}
		next = sampler_sample(smp, logits);
	}
	if (grammar_accept(gs, next) < 0) { /* a forced logit bias on a refused token */
		err_wrap("position %d", pos + 1);
		return ENGINE_FAIL;
	}
	return next;
}

/* Samples the token after position pos from logits (hash line first);
 * ENGINE_FAIL + err_get() when they are not finite (logits_check). */
static int32_t gen_sample(gen_t *s, sampler_t *smp, float *logits,
			  int32_t pos)
{
	const engine_params_t *p = s->p;
	uint64_t h = p->logits_hash
			     ? hash64(logits, (size_t)s->m->cfg.vocab_size * sizeof(float),
				      HASH64_INIT)
			     : 0;
	if (p->logits_dump)
		fwrite(logits, sizeof(float), (size_t)s->m->cfg.vocab_size,
		       p->logits_dump);
	if (logits_check(logits, s->m->cfg.vocab_size, pos) < 0)
		return ENGINE_FAIL;
	int32_t next = sample_constrained(s->gs, smp, logits, s->m->cfg.vocab_size, pos);
	if (next < 0)
		return ENGINE_FAIL;
	if (p->logits_hash)
		fprintf(p->logits_hash, "%d %d %016llx\n", pos, next,
			(unsigned long long)h);
	return next;
}

/* Hands token id, sampled after prev by smp, to p->on_token. */
static void token_report(const engine_params_t *p, const sampler_t *smp,
			 int32_t prev, int32_t id)
{
	if (!p->on_token)
		return;
	engine_token_t t = {.id = id, .prev = prev};
	sampler_logprobs(smp, id, &t.lp); /* leaves lp 0 without logprobs */
	p->on_token(p->user, &t);
}

/* After the token loop (n tokens in s->ids): the held-back text, the
 * times and counts into r; s->rc set when memory ran out. */
static void gen_finish(gen_t *s, int64_t n)
{
	engine_result_t *r = s->r;
	if (s->rc == 0 && r->stop != STOP_STRING && r->stop != STOP_CANCEL) {
		s->out.generated = true; /* even when nothing was generated */
		int why = text_end(&s->out, s->p); /* the held-back tail */
		if (why == TEXT_NO_MEMORY)
			s->rc = ENGINE_FAIL;
		else if (why >= 0)
			r->stop = (engine_stop_t)why;
	}
	uint64_t t1 = time_now_ns();
	if (s->t_prefill == s->t0)
		s->t_prefill = t1;
	r->prefill_s = (double)(s->t_prefill - s->t0) / 1e9;
	r->decode_s = (double)(t1 - s->t_prefill) / 1e9;
	r->n_gen = n - s->n_prompt;
	r->ids = s->ids;
	if (s->rc < 0) { /* callers free nothing after -1 (engine.h) */
		free(s->ids);
		r->ids = NULL;
	}
	free(s->out.buf);
}

/* Whether the sampled token id ends the generation (STOP_EOS, the token
 * not kept): end of sequence, BOS (as llama2.c stops), or with
 * p->stop_at_control any control token. engine_generate and
 * engine_seq_accept both stop here. */
static bool gen_is_end(const model_t *m, const engine_params_t *p, int32_t id)
{
	const tokenizer_t *tok = m->tok;
	return id == tokenizer_eos(tok) || id == tokenizer_bos(tok) ||
	       (p->stop_at_control &&
		tokenizer_type(tok, id) == TOKENIZER_TYPE_CONTROL);
}

int engine_generate(const model_t *m, forward_t *f, gang_t *g,
		    const engine_params_t *p, engine_result_t *r)
{
	memset(r, 0, sizeof *r);
	int32_t ctx = forward_ctx(f);
	gen_t s = {.m = m, .f = f, .g = g, .p = p, .r = r};
	s.n_prompt = prompt_load(m, p, ctx, &s.ids);
	if (s.n_prompt < 0)
		return (int)s.n_prompt;
	sampler_t *smp = sampler_new(m->cfg.vocab_size, &p->sampler);
	if (!smp) { /* its parameters are out of range (or memory ran out) */
		free(s.ids);
		return -1;
	}
	int grc = 0;
	s.gs = grammar_start(m, p, &grc);
	if (grc < 0) {
		sampler_free(smp);
		free(s.ids);
		return grc;
	}
	for (int64_t i = 0; i < s.n_prompt; i++) /* the penalties' window */
		sampler_accept(smp, s.ids[i], false);
	int64_t n_prompt = s.n_prompt, n = n_prompt;
	r->n_prompt = n_prompt;
	r->stop = STOP_LENGTH;
	s.t0 = s.t_prefill = time_now_ns();
	s.pos = p->n_cached > 0 && p->n_cached < n_prompt ? (int32_t)p->n_cached : 0;
	if (g)
		gang_begin(g);
	int32_t bmax = forward_batch_max(f);
	if (bmax > 0)
		gen_prefill(&s, bmax);
	float *logits = s.logits;
	for (int32_t pos = s.pos; !s.stopped; pos++) {
		if (n - n_prompt >= p->n_predict && pos >= n_prompt - 1) {
			r->stop = STOP_LENGTH;
			break;
		}
		if (pos + 1 >= ctx) {
			r->stop = STOP_CONTEXT;
			break;
		}
		if (!logits) { /* the last batch's logits serve position n_prompt-1 */
			if (p->before_token)
				p->before_token(p->user, (uint64_t)pos);
			logits = step(f, g, s.ids[pos], pos);
			if (pos >= n_prompt)
				r->decode_steps++;
			if (!logits) {
				s.rc = ENGINE_FAIL;
				break;
			}
		}
		int32_t next;
		if (pos + 1 < n_prompt) {
			next = s.ids[pos + 1];
		} else {
			if (pos + 1 == n_prompt && bmax == 0)
				s.t_prefill = time_now_ns();
			next = gen_sample(&s, smp, logits, pos);
			if (next < 0) {
				s.rc = ENGINE_FAIL;
				break;
			}
			sampler_accept(smp, next, true);
			s.ids[n++] = next;
			if (n - n_prompt == 1)
				r->first_token_s = (double)(time_now_ns() - s.t0) / 1e9;
			if (gen_is_end(m, p, next)) {
				r->stop = STOP_EOS;
				n--; /* the end marker is not part of the text */
				break;
			}
			token_report(p, smp, s.ids[pos], next);
		}
		logits = NULL;
		if ((pos + 1 >= n_prompt || p->echo_prompt) && gen_emit(&s, pos, next))
			break;
	}
	if (g)
		gang_end(g);
	gen_finish(&s, n);
	sampler_free(smp);
	grammar_state_free(s.gs);
	return s.rc;
}

struct engine_seq {
	const model_t *m;
	engine_params_t p;
	int32_t ctx, *ids;
	int64_t n_prompt, n;
	sampler_t *smp;
	grammar_state_t *gs; /* with p->grammar, else NULL */
	text_out_t out;
	char piece[512];
	engine_stop_t stop;
	bool done;
};

engine_seq_t *engine_seq_new(const model_t *m, int32_t ctx, const engine_params_t *p,
			     int *rc)
{
	engine_seq_t *s = eg_calloc(1, sizeof *s);
	if (!s) {
		*rc = ENGINE_FAIL;
		err_sys("cannot allocate a sequence");
		return NULL;
	}
	s->m = m;
	s->p = *p;
	s->ctx = ctx;
	s->n_prompt = prompt_load(m, p, ctx, &s->ids);
	if (s->n_prompt < 0) {
		*rc = (int)s->n_prompt;
		free(s);
		return NULL;
	}
	s->smp = sampler_new(m->cfg.vocab_size, &p->sampler);
	int grc = 0;
	if (s->smp)
		s->gs = grammar_start(m, p, &grc);
	if (!s->smp || grc < 0) {
		*rc = s->smp ? grc : -1;
		sampler_free(s->smp);
		free(s->ids);
		free(s);
		return NULL;
	}
	for (int64_t i = 0; i < s->n_prompt; i++) /* the penalties' window */
		sampler_accept(s->smp, s->ids[i], false);
	s->n = s->n_prompt;
	s->stop = STOP_LENGTH;
	s->out.generated = true;
	/* the checks engine_generate makes before the first sampled position */
	s->done = p->n_predict <= 0;
	return s;
}

const int32_t *engine_seq_ids(const engine_seq_t *s, int64_t *n)
{
	*n = s->n;
	return s->ids;
}

int64_t engine_seq_n_prompt(const engine_seq_t *s) { return s->n_prompt; }

int engine_seq_accept(engine_seq_t *s, float *logits)
{
	if (s->done)
		return 1;
	const engine_params_t *p = &s->p;
	int32_t pos = (int32_t)s->n - 1;
	uint64_t h = p->logits_hash ? hash64(logits, (size_t)s->m->cfg.vocab_size *
							     sizeof(float), HASH64_INIT)
				    : 0;
	if (logits_check(logits, s->m->cfg.vocab_size, pos) < 0) {
		s->done = true; /* the caller fails the sequence */
		return ENGINE_FAIL;
	}
	int32_t next = sample_constrained(s->gs, s->smp, logits,
					  s->m->cfg.vocab_size, pos);
	if (next < 0) {
		s->done = true; /* the caller fails the sequence */
		return ENGINE_FAIL;
	}
	sampler_accept(s->smp, next, true);
	if (p->logits_hash)
		fprintf(p->logits_hash, "%d %d %016llx\n", pos, next, (unsigned long long)h);
	if (gen_is_end(s->m, p, next)) {
		s->stop = STOP_EOS;
		s->done = true;
		return 1;
	}
	s->ids[s->n++] = next;
	token_report(p, s->smp, s->ids[pos], next);
	int k = tokenizer_decode(s->m->tok, s->ids[pos], next, s->piece, sizeof s->piece);
	size_t len = k > 0 ? text_clean(s->piece, (size_t)k) : 0;
	int why = text_add(&s->out, p, s->piece, len);
	if (why == TEXT_NO_MEMORY)
		return ENGINE_FAIL;
	if (why >= 0) {
		s->stop = (engine_stop_t)why;
		s->done = true;
		return 1;
	}
	/* the checks at the next position, as engine_generate's loop */
	if (s->n - s->n_prompt >= p->n_predict) {
		s->stop = STOP_LENGTH;
		s->done = true;
	} else if (pos + 2 >= s->ctx) {
		s->stop = STOP_CONTEXT;
		s->done = true;
	}
	return s->done;
}

bool engine_seq_done(const engine_seq_t *s) { return s->done; }

void engine_seq_cancel(engine_seq_t *s)
{
	if (!s->done)
		s->stop = STOP_CANCEL;
	s->done = true;
}

int engine_seq_finish(engine_seq_t *s, engine_result_t *r)
{
	memset(r, 0, sizeof *r);
	int rc = 0;
	if (s->stop != STOP_STRING && s->stop != STOP_CANCEL) {
		int why = text_end(&s->out, &s->p);
		if (why == TEXT_NO_MEMORY)
			rc = ENGINE_FAIL;
		else if (why >= 0)
			s->stop = (engine_stop_t)why;
	}
	r->n_prompt = s->n_prompt;
	r->n_gen = s->n - s->n_prompt;
	r->stop = s->stop;
	r->ids = s->ids;
	s->ids = NULL;
	return rc;
}

void engine_seq_free(engine_seq_t *s)
{
	if (!s)
		return;
	free(s->ids);
	free(s->out.buf);
	sampler_free(s->smp);
	grammar_state_free(s->gs);
	free(s);
}

int engine_write_ids(const char *path, const engine_result_t *r)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return err_set("--ids %s: %s", path, strerror(errno));
	fputs("prompt_ids:", f);
	for (int64_t i = 0; i < r->n_prompt; i++)
		fprintf(f, " %d", r->ids[i]);
	fputs("\nsequence_ids:", f);
	for (int64_t i = 0; i < r->n_prompt + r->n_gen; i++)
		fprintf(f, " %d", r->ids[i]);
	fputc('\n', f);
	if (fclose(f) != 0)
		return err_set("--ids %s: write failed", path);
	return 0;
}
