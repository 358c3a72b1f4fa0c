/* engine: the generation loop (see engine.h). */
#include "server/engine.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/base.h"

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

/* Generated text on its way to on_text. With stop strings, the last
 * (longest stop - 1) bytes are held back, so a stop string that spans
 * tokens is found before any of it is emitted, and the text handed out
 * never contains it (OpenAI semantics). */
typedef struct text_out {
	char *pending;
	size_t len, cap;
	size_t hold; /* longest stop string - 1 */
} text_out_t;

/* Hands n bytes to on_text; nonzero if the callback cancels. */
static int text_emit(const engine_params_t *p, const char *s, size_t n)
{
	return n && p->on_text && p->on_text(p->user, s, n);
}

/* text_add's return when the held-back text cannot grow */
#define TEXT_NO_MEMORY (-2)

/* Adds generated text; returns STOP_STRING, STOP_CANCEL, -1 (go on) or
 * TEXT_NO_MEMORY (err_sys set). */
static int text_add(text_out_t *o, const engine_params_t *p, const char *s,
		    size_t n)
{
	if (!p->n_stop)
		return text_emit(p, s, n) ? STOP_CANCEL : -1;
	if (o->len + n + 1 > o->cap) {
		size_t cap = (o->len + n + 1) * 2;
		char *grown = eg_realloc(o->pending, cap);
		if (!grown) {
			err_sys("cannot allocate the held-back text of stop strings");
			return TEXT_NO_MEMORY;
		}
		o->pending = grown;
		o->cap = cap;
	}
	memcpy(o->pending + o->len, s, n);
	o->len += n;
	o->pending[o->len] = '\0';
	size_t cut = o->len; /* earliest stop string start */
	for (int i = 0; i < p->n_stop; i++) {
		const char *hit = p->stop[i][0] ? strstr(o->pending, p->stop[i]) : NULL;
		if (hit && (size_t)(hit - o->pending) < cut)
			cut = (size_t)(hit - o->pending);
	}
	if (cut < o->len) {
		int c = text_emit(p, o->pending, cut);
		o->len = 0;
		return c ? STOP_CANCEL : STOP_STRING;
	}
	size_t out = o->len > o->hold ? o->len - o->hold : 0;
	int c = text_emit(p, o->pending, out);
	memmove(o->pending, o->pending + out, o->len - out + 1);
	o->len -= out;
	return c ? STOP_CANCEL : -1;
}

int engine_generate(const model_t *m, forward_t *f, gang_t *g,
		    const engine_params_t *p, engine_result_t *r)
{
	memset(r, 0, sizeof *r);
	const tokenizer_t *tok = m->tok;
	int32_t ctx = forward_ctx(f);
	int64_t cap = (int64_t)ctx + 1;
	int32_t *ids = eg_malloc((size_t)cap * sizeof *ids);
	if (!ids)
		return err_sys("cannot allocate the token ids");
	int64_t n_prompt;
	if (p->prompt_ids) {
		n_prompt = p->n_prompt_ids;
		if (n_prompt > cap)
			n_prompt = cap;
		memcpy(ids, p->prompt_ids, (size_t)n_prompt * sizeof *ids);
	} else {
		const char *text = p->prompt ? p->prompt : "";
		n_prompt = tokenizer_encode(tok, text, strlen(text), true, ids, cap);
	}
	if (n_prompt < 0) {
		free(ids);
		return -1;
	}
	if (n_prompt == 0) { /* a vocabulary without BOS and no prompt */
		free(ids);
		return err_set("the prompt is empty and the vocabulary has no "
			       "BOS token to start from");
	}
	if (n_prompt >= ctx) {
		free(ids);
		return err_set("the prompt has %lld tokens; the context holds "
			       "%d (--ctx)", (long long)n_prompt, ctx);
	}
	for (int64_t i = 0; i < n_prompt; i++)
		if (ids[i] < 0 || ids[i] >= m->cfg.vocab_size) {
			err_set("prompt token %lld has id %d outside the "
				"vocabulary", (long long)i, ids[i]);
			free(ids);
			return -1;
		}
	sampler_t *smp = sampler_new(m->cfg.vocab_size, &p->sampler);
	if (!smp) {
		free(ids);
		return -1;
	}
	int32_t bos = tokenizer_bos(tok), eos = tokenizer_eos(tok);
	text_out_t out = {0};
	for (int i = 0; i < p->n_stop; i++) {
		size_t l = strlen(p->stop[i]);
		if (l > out.hold + 1)
			out.hold = l - 1;
	}
	r->n_prompt = n_prompt;
	r->stop = STOP_LENGTH;
	uint64_t t0 = time_now_ns(), t_prefill = t0;
	if (g)
		gang_begin(g);
	int64_t n = n_prompt;
	char piece[512];
	int rc = 0;
	/* The prompt. Positions 0..n_prompt-1 (all but the last when nothing
	 * is to be generated, as the token loop below would) go through
	 * prefill batches of up to forward_batch_max tokens, one gang token
	 * (one latch, one before_token call) per batch; only the last batch
	 * computes logits. The batches give the same KV cache and logits, bit
	 * for bit, as the token loop (forward.h), which runs the prompt instead
	 * when batching is off. */
	int32_t bmax = forward_batch_max(f);
	int32_t pos = 0;
	float *logits = NULL;
	bool stopped = false;
	if (bmax > 0) {
		int32_t end = p->n_predict > 0 ? (int32_t)n_prompt : (int32_t)n_prompt - 1;
		/* The first batch is small when workers are requested:
		 * gang_begin has only just woken them, and a worker joins at
		 * the first token after its ack (gang.h, I4), so a full first
		 * batch ran on the leader alone (perf record showed the
		 * worker absent for most of a 256-token prompt). A batch of
		 * FIRST_BATCH tokens outlasts the worker's wake-up (~0.1 ms)
		 * even on stories260K; figures: doc/measurements.md. One
		 * core: no change (no worker to wait for). */
		int32_t first = g && (gang_requested(g) & ~1u) && FIRST_BATCH < bmax
					? FIRST_BATCH
					: bmax;
		while (pos < end && !stopped) {
			int32_t most = pos == 0 ? first : bmax;
			int32_t nb = end - pos < most ? end - pos : most;
			bool last = pos + nb == (int32_t)n_prompt;
			if (p->before_token)
				p->before_token(p->user, (uint64_t)pos);
			if (prefill_batch(f, g, ids + pos, nb, pos, last) < 0) {
				rc = -1;
				stopped = true;
				break;
			}
			if (last) {
				logits = forward_logits(f);
				t_prefill = time_now_ns();
			}
			/* echo the batch's prompt text (the last prompt token's
			 * text follows the first sampled token, as below) */
			for (int32_t q = pos; q < pos + nb && p->echo_prompt; q++) {
				if (q + 1 >= n_prompt)
					break;
				int k = tokenizer_decode(tok, ids[q], ids[q + 1], piece, sizeof piece);
				size_t len = k > 0 ? text_clean(piece, (size_t)k) : 0;
				if (text_emit(p, piece, len)) {
					r->stop = STOP_CANCEL;
					stopped = true;
					break;
				}
			}
			pos += nb;
		}
		pos = logits ? (int32_t)n_prompt - 1 : pos;
	}
	for (; !stopped; pos++) {
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
			logits = step(f, g, ids[pos], pos);
			if (pos >= n_prompt)
				r->decode_steps++;
			if (!logits) {
				rc = -1;
				break;
			}
		}
		int32_t next;
		if (pos + 1 < n_prompt) {
			next = ids[pos + 1];
		} else {
			if (pos + 1 == n_prompt && bmax == 0)
				t_prefill = time_now_ns();
			uint64_t h = p->logits_hash
					     ? hash64(logits, (size_t)m->cfg.vocab_size *
							      sizeof(float), HASH64_INIT)
					     : 0;
			next = sampler_sample(smp, logits);
			if (p->logits_hash)
				fprintf(p->logits_hash, "%d %d %016llx\n", pos,
					next, (unsigned long long)h);
			ids[n++] = next;
			if (n - n_prompt == 1)
				r->first_token_s = (double)(time_now_ns() - t0) / 1e9;
			if (next == eos || next == bos) {
				r->stop = STOP_EOS;
				n--; /* the end marker is not part of the text */
				break;
			}
		}
		logits = NULL;
		if (pos + 1 >= n_prompt || p->echo_prompt) {
			int k = tokenizer_decode(tok, ids[pos], next, piece, sizeof piece);
			size_t len = k > 0 ? text_clean(piece, (size_t)k) : 0;
			int why = pos + 1 < n_prompt
					  ? (text_emit(p, piece, len) ? STOP_CANCEL : -1)
					  : text_add(&out, p, piece, len);
			if (why == TEXT_NO_MEMORY) {
				rc = -1;
				break;
			}
			if (why >= 0) {
				r->stop = (engine_stop_t)why;
				break;
			}
		}
	}
	if (g)
		gang_end(g);
	if (r->stop != STOP_STRING && r->stop != STOP_CANCEL &&
	    text_emit(p, out.pending, out.len))
		r->stop = STOP_CANCEL; /* the held-back tail */
	uint64_t t1 = time_now_ns();
	if (t_prefill == t0)
		t_prefill = t1;
	r->prefill_s = (double)(t_prefill - t0) / 1e9;
	r->decode_s = (double)(t1 - t_prefill) / 1e9;
	r->n_gen = n - n_prompt;
	r->ids = ids;
	if (rc < 0) { /* callers free nothing after -1 (engine.h) */
		free(ids);
		r->ids = NULL;
	}
	free(out.pending);
	sampler_free(smp);
	return rc;
}
