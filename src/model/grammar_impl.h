/* grammar_impl: the parsed form of a GBNF grammar, shared by the parser
 * (grammar_parse.c) and the matcher (grammar.c). Private to model/.
 *
 * A grammar is llama.cpp's element array: every rule is its alternatives,
 * each a sequence of elements, separated by GE_ALT and closed by GE_END;
 * all rules are concatenated in el, rule r starting at el[rule_at[r]].
 * A character set is one GE_CHAR (or GE_CHAR_NOT for [^...]) element
 * followed by GE_RNG_UPPER (the upper bound of a range whose lower bound
 * is the element before) and GE_CHAR_ALT elements (more characters of the
 * same set); GE_ANY is `.`. Repetitions and groups were rewritten into
 * generated rules by the parser (llama.cpp's rewriting), so the matcher
 * sees only sequences, alternatives and references. */
#ifndef EGANG_GRAMMAR_IMPL_H
#define EGANG_GRAMMAR_IMPL_H

#include <stdint.h>

#include "model/grammar.h"

enum {
	GE_END,       /* end of a rule */
	GE_ALT,       /* end of an alternative, another follows */
	GE_REF,       /* value: the rule referenced */
	GE_CHAR,      /* value: a code point; starts a positive set */
	GE_CHAR_NOT,  /* value: a code point; starts a negated set */
	GE_RNG_UPPER, /* value: upper bound of the range started before */
	GE_CHAR_ALT,  /* value: one more code point of the same set */
	GE_ANY,       /* any code point */
	GE_COUNT
};

typedef struct gelem {
	uint32_t type;  /* GE_* */
	uint32_t value;
} gelem_t;

struct grammar {
	gelem_t *el;       /* (n_el) all rules, each closed by GE_END */
	uint32_t n_el;
	uint32_t *rule_at; /* (n_rules) where each rule starts in el */
	int32_t n_rules;
	uint32_t root;     /* the rule "root" */
};

#endif
