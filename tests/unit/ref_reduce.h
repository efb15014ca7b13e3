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

/* Adasum's tree (adasum.h) over n ranks' vectors of m elements, in
 * double: blocks of 2, 4, ... ranks, each the lower half's result
 * combined with the upper half's. v holds rank r's vector at v + r * m;
 * the result ends in its first m elements. */
static inline void ref_adasum(int n, size_t m, double *v)
{
	int w, b;
	size_t i;

	for (w = 1; w < n; w *= 2)
		for (b = 0; b < n; b += 2 * w) {
			double *x = v + (size_t)b * m, *y = x + (size_t)w * m;
			double xy = 0, xx = 0, yy = 0, cx, cy;

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
}

#endif
