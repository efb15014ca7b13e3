/* reduce.h: element-wise reduction kernels for every dtype and op, and
 * the data path's copy.
 * float16 and bfloat16 are reduced in float32 and rounded back (to
 * nearest, ties to even). AVERAGE reduces as SUM; the caller divides
 * once at the end with hvd__divide(). ADASUM is no element-wise op:
 * algo/adasum.c runs it, with the two kernels below. */
#ifndef HVD_REDUCE_H
#define HVD_REDUCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hvd.h"

size_t hvd__dtype_size(enum hvd_dtype t);
bool hvd__dtype_valid(int t);
bool hvd__op_valid(int op);
const char *hvd__dtype_name(enum hvd_dtype t);
/* float16, bfloat16, float32 or float64. */
bool hvd__dtype_float(enum hvd_dtype t);

/* memcpy of n bytes, at vector speed whatever the two addresses'
 * alignment (reduce.c says why); the data path's copies go through it. */
void hvd__copy(void *dst, const void *src, size_t n);

/* The op that reduces t as its plain bytes or numbers do, for engines
 * with no bool (MPI, NCCL: they take a bool as uint8): a bool's sum (or)
 * is its max, its product (and) its min; any other pair is itself. */
enum hvd_op hvd__op_as(enum hvd_dtype t, enum hvd_op op);

/* dst[i] = op(dst[i], src[i]) for i < n. */
void hvd__reduce(void *dst, const void *src, size_t n, enum hvd_dtype t,
		 enum hvd_op op);
/* buf[i] /= divisor (integers: truncating division; floats: times
 * 1/divisor). */
void hvd__divide(void *buf, size_t n, enum hvd_dtype t, int divisor);
/* buf[i] *= factor: float16 and bfloat16 through float32; integers in
 * float64, truncated back (saturating), as Horovod scales them. */
void hvd__scale(void *buf, size_t n, enum hvd_dtype t, double factor);
/* A reduction's end: an average's division (divisor > 1), then the
 * postscale factor. */
void hvd__divide_scale(void *buf, size_t n, enum hvd_dtype t, int divisor,
		       double factor);

/* Adasum's kernels (algo/adasum.c), for the four float dtypes, in
 * float64: out[0] += a.b, out[1] += a.a, out[2] += b.b over n elements;
 * and x[i] = cx * x[i] + cy * y[i], rounded back to the dtype. */
void hvd__dots(const void *a, const void *b, size_t n, enum hvd_dtype t,
	       double out[3]);
void hvd__axpby(void *x, const void *y, size_t n, enum hvd_dtype t, double cx,
		double cy);

float hvd__half_to_float(uint16_t h);
uint16_t hvd__float_to_half(float f);
float hvd__bf16_to_float(uint16_t b);
uint16_t hvd__float_to_bf16(float f);

#endif
