/* ref_reduce.h: the reference of a reduction across n ranks, one element,
 * in double: what the unit tests (test_ring.c) and the self-test under
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

#endif
