/* stats: nearest-rank percentiles (stats.h says why that definition). */
#include "base/stats.h"

#include <math.h>
#include <stdlib.h>

int stats_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	if (isnan(x) || isnan(y))
		return (isnan(x) != 0) - (isnan(y) != 0);
	return (x > y) - (x < y);
}

int stats_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

void stats_sort(double *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof *v, stats_cmp_double);
}

void stats_sort_u64(uint64_t *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof *v, stats_cmp_u64);
}

size_t stats_rank(size_t n, double q)
{
	if (n == 0)
		return 0;
	if (!(q > 0)) /* q <= 0 or NaN: the minimum */
		return 0;
	if (q >= 1)
		return n - 1;
	/* ceil(q n) - 1; the small slack keeps 0.99 * 100 (98.99999...) at
	 * rank 99 instead of rounding a representation error up to 100 */
	double r = ceil(q * (double)n - 1e-9);
	size_t i = r < 1 ? 0 : (size_t)r - 1;
	return i < n ? i : n - 1;
}

double stats_quantile_sorted(const double *v, size_t n, double q)
{
	return n ? v[stats_rank(n, q)] : 0;
}

double stats_quantile(double *v, size_t n, double q)
{
	stats_sort(v, n);
	return stats_quantile_sorted(v, n, q);
}

uint64_t stats_quantile_u64(uint64_t *v, size_t n, double q)
{
	stats_sort_u64(v, n);
	return n ? v[stats_rank(n, q)] : 0;
}

stats_summary_t stats_summarize(double *v, size_t n)
{
	stats_summary_t s = {0};
	if (!n)
		return s;
	stats_sort(v, n);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	s.min = v[0];
	s.p50 = stats_quantile_sorted(v, n, 0.5);
	s.p99 = stats_quantile_sorted(v, n, 0.99);
	s.max = v[n - 1];
	s.mean = sum / (double)n;
	s.n = n;
	return s;
}
