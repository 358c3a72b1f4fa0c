/* grammar: constrained decoding with llama.cpp's GBNF (its
 * grammars/README.md is the specification).
 *
 * Syntax: rules `name ::= body`; a body is alternatives separated by `|`,
 * each a sequence of string literals "..." (escapes \n \t \r \\ \" \[ \]
 * \xHH \uHHHH \UHHHHHHHH), character classes [a-z0-9_] and [^...], `.`
 * (any character), rule references, and groups ( ... ); any of these may
 * be followed by `*`, `+`, `?`, {m}, {m,}, {m,n}. `#` starts a comment to
 * the end of the line; newlines end a rule except inside parentheses or
 * after `|` / `::=`. The start rule is `root`. Refused, with the line and
 * column: empty input, an undefined rule, a missing root, left recursion
 * (as llama.cpp refuses it), and a rule that no finite text matches.
 *
 * Meaning: the text generated is matched as Unicode code points (UTF-8);
 * a token that ends inside a multibyte character leaves a partial one that
 * the next token must complete. Bytes that are not UTF-8 are refused.
 *
 * Matching: a matcher state is a set of stacks of grammar positions (as
 * llama.cpp's), each stack interned as a persistent list, each set
 * interned, and each (set, character) transition remembered, so a state
 * seen before costs one table look-up per character. The allowed tokens
 * of a state are found by one walk of a trie of the vocabulary's token
 * bytes, pruned where no stack survives; the result is cached per state.
 *
 * Threads: a grammar_t and a grammar_vocab_t are immutable once made and
 * may be shared by any number of threads; a grammar_state_t belongs to one
 * sequence (one thread at a time). */
#ifndef EGANG_GRAMMAR_H
#define EGANG_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/tokenizer.h"

typedef struct grammar grammar_t;             /* parsed, immutable, shared */
typedef struct grammar_vocab grammar_vocab_t; /* token bytes as a trie, immutable */
typedef struct grammar_state grammar_state_t; /* one sequence's matcher */

/* Parses GBNF text whose start rule is "root"; NULL + err_get()
 * "grammar: line L, column C: <what>" (undefined rule, unterminated
 * string, bad escape, empty input, left recursion, ...). */
grammar_t *grammar_parse(const char *text);
/* grammar_parse of a file's text; NULL + err_get() naming the file. */
grammar_t *grammar_load(const char *path);
void grammar_free(grammar_t *g);
/* The number of rules (generated ones for repetitions included). */
int32_t grammar_n_rules(const grammar_t *g);

/* The vocabulary as byte strings (tokenizer_decode's bytes of each id
 * after a non-BOS token), for logits of n_logits entries (ids from the
 * tokenizer's size up to n_logits are never allowed). Never allowed
 * either: control tokens, empty tokens, and a single control byte that is
 * not whitespace (the engine drops those from the text). The end tokens
 * (EOS, and with grammar_state_set_control_ends every control token) are
 * allowed only where the grammar can end. NULL + err_get(). */
grammar_vocab_t *grammar_vocab_new(const tokenizer_t *tok, int32_t n_logits);
void grammar_vocab_free(grammar_vocab_t *v);
/* Trie nodes (for benches and tests). */
int64_t grammar_vocab_n_nodes(const grammar_vocab_t *v);

/* A matcher at the grammar's start; NULL + err_get(). g and v must outlive
 * it; v may be NULL (then only the *_bytes calls and grammar_done). */
grammar_state_t *grammar_state_new(const grammar_t *g, const grammar_vocab_t *v);
void grammar_state_free(grammar_state_t *s);
/* Every control token (not only EOS) counts as an end token (the engine's
 * stop_at_control: chat end-of-turn tokens). Off by default. */
void grammar_state_set_control_ends(grammar_state_t *s, bool on);

/* Sets to -INFINITY the logits (n_logits) of the tokens the grammar does
 * not allow next (the end tokens only where the grammar can end); returns
 * how many stay allowed: 0 means the grammar is stuck (the caller ends the
 * request with an error naming it, never hangs); -1 + err_get() when
 * memory ran out. */
int32_t grammar_mask(grammar_state_t *s, float *logits);
/* Whether token id may come next (what grammar_mask would leave), without
 * computing the whole mask: greedy decoding checks the argmax first. */
bool grammar_allows(grammar_state_t *s, int32_t id);
/* Whether the text after token id would be a complete match of root (id
 * allowed, an end token never counts); does not change s. A one-token
 * answer picks among the tokens that complete (the agent controller). */
bool grammar_completes(grammar_state_t *s, int32_t id);
/* Advances the matcher by token id; 0, or -1 + err_get() when id was not
 * allowed (the state is then unchanged). An end token is allowed only
 * where the grammar can end, and leaves the state as it was. */
int grammar_accept(grammar_state_t *s, int32_t id);
/* True when the text so far is a complete match of root (no partial
 * character pending). */
bool grammar_done(const grammar_state_t *s);
/* True when token id is an end token of the state (EOS, or a control
 * token with grammar_state_set_control_ends). */
bool grammar_is_end(const grammar_state_t *s, int32_t id);

/* One token's check without a vocabulary (tests, the brute-force
 * reference): whether bytes b[0..n) may come next; does not change s. */
bool grammar_allows_bytes(grammar_state_t *s, const char *b, size_t n);
/* Advances s by bytes b[0..n); 0, or -1 + err_get() (s unchanged) when
 * they may not come next. */
int grammar_accept_bytes(grammar_state_t *s, const char *b, size_t n);

#endif
