/* ref_reduce.h: the reference of a reduction across n ranks, one element,
 * and of Adasum, in double: what the unit tests (test_ring.c) and the self-test under
 * hvdrun (tests/cli/workers/hvd_selftest.c) hold libhvd's reductions to.
 * value(r, i, arg) is rank r's element i; an average of an integer type
 * truncates, as libhvd's does. */
#ifndef REF_REDUCE_H
#define REF_REDUCE_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include <hvd.h>

static inline double
ref_reduce(int n, size_t i, enum hvd_op op, bool integer,
	   double (*value)(int r, size_t i, const void *arg), const void *arg)
{
	double acc = value(0, i, arg);
	int r;

	for (r = 1; r < n; r++) {
		double v = value(r, i, arg);

		if (op == HVD_SUM || op == HVD_AVERAGE)
			acc += v;
		else if (op == HVD_PRODUCT)
			acc *= v;
		else if (op == HVD_MIN)
			acc = v < acc ? v : acc;
		else
			acc = v > acc ? v : acc;
	}
	if (op == HVD_AVERAGE)
		acc = integer ? trunc(acc / n) : acc / n;
	return acc;
}

/* Vector x becomes the Adasum of x and y (m elements each), in double. */
static inline void ref_adasum_pair(size_t m, double *x, const double *y)
{
	double xy = 0, xx = 0, yy = 0, cx, cy;
	size_t i;

	for (i = 0; i < m; i++) {
		xy += x[i] * y[i];
		xx += x[i] * x[i];
		yy += y[i] * y[i];
	}
	cx = xx > 0 ? 1 - xy / (2 * xx) : 1;
	cy = yy > 0 ? 1 - xy / (2 * yy) : 1;
	for (i = 0; i < m; i++)
		x[i] = cx * x[i] + cy * y[i];
}

/* Adasum's tree (adasum.h) over n ranks' vectors of m elements, in
 * double: P being the largest power of two not above n, rank P + q's
 * vector first combines into rank q's; then blocks of 2, 4, ... of the P,
 * each the lower half's result combined with the upper half's. v holds
 * rank r's vector at v + r * m; the result ends in its first m
 * elements. */
static inline void ref_adasum(int n, size_t m, double *v)
{
	int w, b, P = 1;

	while (P <= n / 2)
		P *= 2;
	for (b = 0; b + P < n; b++)
		ref_adasum_pair(m, v + (size_t)b * m, v + (size_t)(b + P) * m);
	for (w = 1; w < P; w *= 2)
		for (b = 0; b < P; b += 2 * w)
			ref_adasum_pair(m, v + (size_t)b * m,
					v + (size_t)(b + w) * m);
}

#endif
