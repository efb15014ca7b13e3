/* resnet50.h: what both benchmark programs share: the warm-up, the
 * median of timings, and the sizes of ResNet-50's 161 gradient tensors
 * (25,557,032 float32 parameters), from its architecture: a 7x7 stem,
 * bottleneck blocks [3, 4, 6, 3] of widths [64, 128, 256, 512]
 * (expansion 4, a projection on each stage's first block), batch norm
 * scale and shift after every convolution, and a 1000-way classifier. */
#ifndef BENCH_RESNET50_H
#define BENCH_RESNET50_H

#include <stddef.h>
#include <stdlib.h>

/* Calls to warm up before the first size is timed (two before each
 * later one). The first milliseconds after start-up are slower: libhvd's
 * 4 KiB allreduce over shared memory took 6 to 15 us for its first 40 to
 * 80 calls and 2.4 us after, so that two warm-up calls left the 4 KiB row
 * timing the start-up (3 to 14 us from run to run). Both benches warm up
 * alike. */
#define BENCH_WARM_FIRST 200

static inline int bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of n timings (sorts them). */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define RESNET50_TENSORS 161

static inline size_t resnet50_sizes(size_t *out)
{
	static const int blocks[4] = {3, 4, 6, 3}, width[4] = {64, 128, 256, 512};
	size_t n = 0, in = 64;
	int s, b;

	out[n++] = 64 * 3 * 7 * 7;
	out[n++] = 64;
	out[n++] = 64;
	for (s = 0; s < 4; s++) {
		size_t w = (size_t)width[s];

		for (b = 0; b < blocks[s]; b++) {
			out[n++] = w * in;        /* 1x1 */
			out[n++] = w;
			out[n++] = w;
			out[n++] = w * w * 9;     /* 3x3 */
			out[n++] = w;
			out[n++] = w;
			out[n++] = 4 * w * w;     /* 1x1, expand */
			out[n++] = 4 * w;
			out[n++] = 4 * w;
			if (b == 0) {             /* projection */
				out[n++] = 4 * w * in;
				out[n++] = 4 * w;
				out[n++] = 4 * w;
			}
			in = 4 * w;
		}
	}
	out[n++] = 1000 * 2048;
	out[n++] = 1000;
	return n;
}

#endif
