/* stats: the one percentile definition every report uses.
 *
 * Percentiles are nearest rank: the q-quantile of n sorted values is the
 * smallest value with at least ceil(q * n) values at or below it, i.e.
 * v[ceil(q * n) - 1] (q = 0 gives the minimum, q = 1 the maximum). It is
 * always one of the measured values, never an interpolation, so "p99 of
 * 100 samples" is the 99th smallest sample, and "p50" of an even count is
 * the lower middle value. The median printed as "median" is p50. */
#ifndef EGANG_STATS_H
#define EGANG_STATS_H

#include <stddef.h>
#include <stdint.h>

/* qsort comparators, ascending. A NaN (a rate over a zero time, say)
 * sorts after +inf, all NaNs equal, so the order stays total: it shows up
 * as the maximum instead of scrambling the sort. */
int stats_cmp_double(const void *a, const void *b);
int stats_cmp_u64(const void *a, const void *b);

/* Sorts v[0..n) ascending in place. */
void stats_sort(double *v, size_t n);
void stats_sort_u64(uint64_t *v, size_t n);

/* The nearest-rank index of the q-quantile in n sorted values (q in [0,1]);
 * 0 when n is 0. */
size_t stats_rank(size_t n, double q);

/* The q-quantile of v[0..n), which must already be sorted; 0 when n is 0. */
double stats_quantile_sorted(const double *v, size_t n, double q);
/* Sorts v[0..n) in place, then returns its q-quantile; 0 when n is 0. */
double stats_quantile(double *v, size_t n, double q);
uint64_t stats_quantile_u64(uint64_t *v, size_t n, double q);

/* min / p50 / p99 / max / mean of a sample (v sorted in place). */
typedef struct stats_summary {
	double min, p50, p99, max, mean;
	size_t n;
} stats_summary_t;
stats_summary_t stats_summarize(double *v, size_t n);

#endif
