/* grammar: GBNF parsing, the matcher and the token mask (see grammar.h).
 * A placeholder until the implementation lands: every grammar is refused. */
#include "model/grammar.h"

#include <math.h>
#include <stdlib.h>

#include "base/base.h"

grammar_t *grammar_parse(const char *text)
{
	(void)text;
	err_set("grammar: not implemented yet");
	return NULL;
}

grammar_t *grammar_load(const char *path)
{
	err_set("grammar %s: not implemented yet", path);
	return NULL;
}

void grammar_free(grammar_t *g) { (void)g; }
int32_t grammar_n_rules(const grammar_t *g) { (void)g; return 0; }

grammar_vocab_t *grammar_vocab_new(const tokenizer_t *tok, int32_t n_logits)
{
	(void)tok;
	(void)n_logits;
	err_set("grammar: not implemented yet");
	return NULL;
}

void grammar_vocab_free(grammar_vocab_t *v) { (void)v; }
int64_t grammar_vocab_n_nodes(const grammar_vocab_t *v) { (void)v; return 0; }

grammar_state_t *grammar_state_new(const grammar_t *g, const grammar_vocab_t *v)
{
	(void)g;
	(void)v;
	err_set("grammar: not implemented yet");
	return NULL;
}

void grammar_state_free(grammar_state_t *s) { (void)s; }
void grammar_state_set_control_ends(grammar_state_t *s, bool on) { (void)s; (void)on; }
int32_t grammar_mask(grammar_state_t *s, float *logits) { (void)s; (void)logits; return 0; }
bool grammar_allows(grammar_state_t *s, int32_t id) { (void)s; (void)id; return false; }
int grammar_accept(grammar_state_t *s, int32_t id) { (void)s; (void)id; return -1; }
bool grammar_done(const grammar_state_t *s) { (void)s; return false; }
bool grammar_is_end(const grammar_state_t *s, int32_t id) { (void)s; (void)id; return false; }
bool grammar_allows_bytes(grammar_state_t *s, const char *b, size_t n)
{
	(void)s; (void)b; (void)n;
	return false;
}
int grammar_accept_bytes(grammar_state_t *s, const char *b, size_t n)
{
	(void)s; (void)b; (void)n;
	return -1;
}
