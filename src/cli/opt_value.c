/* cli values: the strict parsers behind cli_parse and the flags parsed
 * outside it. The whole string must be a number inside the range (or a
 * list of them); anything else is one line naming the flag. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int cli_int(const char *flag, const char *s, int64_t min, int64_t max,
	    int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (!*s || *end || errno) {
		log_error("%s: '%s' is not an integer", flag, s);
		return -1;
	}
	if (v < min || v > max) {
		log_error("%s: %lld is out of range [%lld, %lld]", flag, v,
			  (long long)min, (long long)max);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_float(const char *flag, const char *s, double min, double max,
	      double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v)) {
		log_error("%s: '%s' is not a number", flag, s);
		return -1;
	}
	if (v < min || v > max) {
		log_error("%s: %g is out of range [%g, %g]", flag, v, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

int32_t *cli_int_list(const char *flag, const char *s, int32_t max, int *count)
{
	int cap = 1;
	for (const char *c = s; *c; c++)
		cap += *c == ',';
	int32_t *out = malloc((size_t)cap * sizeof *out);
	if (!out) {
		log_error("%s: out of memory for %d integers", flag, cap);
		return NULL;
	}
	const char *q = s;
	char *end;
	for (int n = 0; n < cap; n++, q = end + 1) {
		errno = 0;
		long long v = strtoll(q, &end, 10);
		if (end == q || errno || v < 0 || v > max || (*end && *end != ',')) {
			int len = (int)strcspn(q, ",");
			log_error("%s: item %d, '%.*s%s', is not an integer in [0, %d]", flag,
				  n + 1, len > 24 ? 24 : len, q, len > 24 ? "..." : "", (int)max);
			free(out);
			return NULL;
		}
		out[n] = (int32_t)v;
	}
	*count = cap;
	return out;
}

int cli_int_rising(const char *flag, const char *s, int64_t min, int64_t max,
		   int *out, int cap, const char *what)
{
	int n = 0;
	char *copy = strdup(s), *save = NULL;
	bool bad = !copy || !*s || *s == ',' || s[strlen(s) - 1] == ',' || strstr(s, ",,");
	for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t && !bad;
	     t = strtok_r(NULL, ",", &save)) {
		int64_t v;
		if (n == cap) {
			log_error("%s: at most %d values", flag, cap);
			free(copy);
			return -1;
		}
		if (cli_int(flag, t, min, max, &v) < 0) {
			free(copy);
			return -1;
		}
		for (int i = 0; i < n; i++)
			bad |= out[i] >= v;
		out[n++] = (int)v;
	}
	free(copy);
	if (bad || !n) {
		log_error("%s: '%s' is not a list of increasing %s", flag, s, what);
		return -1;
	}
	return n;
}
