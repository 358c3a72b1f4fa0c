/* json_regex: a JSON schema "pattern" (an ECMA-262 regular expression)
 * translated to a GBNF expression that matches the JSON-encoded text of the
 * strings the pattern matches (the part between the quotes).
 *
 * Supported: the pattern anchored as ^...$; literals (UTF-8), escapes
 * (\. \\ \/ \n \t \r \f \v \xHH \uHHHH and any escaped punctuation), \d \w
 * \s and their negations, '.', classes with ranges and negation, groups
 * (plain and (?:...)), alternation, and the quantifiers * + ? {m} {m,}
 * {m,n} (lazy forms match the same strings). Refused, with what was found:
 * an unanchored pattern, anchors inside, lookaround, named groups,
 * backreferences, \b \B, Unicode property escapes.
 *
 * The text matched is how a JSON encoder writes the string: '"' and '\' as
 * \" and \\, control characters as \b \f \n \r \t or \u00XX (lowercase
 * hex), everything else as its UTF-8 bytes (so a "\u00e9" written by a
 * model for an 'é' the pattern admits is not matched). */
#ifndef EGANG_JSON_REGEX_H
#define EGANG_JSON_REGEX_H

#include <stddef.h>

/* The GBNF expression (malloc'd) for pattern re; NULL with why (a short
 * phrase naming what is unsupported or malformed, and where) on refusal.
 * Counts in quantifiers above max_repeat are refused. */
char *json_regex_to_gbnf(const char *re, long max_repeat, char *why, size_t why_len);

#endif
