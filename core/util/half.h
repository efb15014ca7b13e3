/* half.h: float16's kernels through x86's F16C conversions, 8 values at a
 * time, for reduce.c where the CPU has them (hvd__f16c): the scalar
 * conversions (half.c too) are a branch a value, which no compiler
 * vectorizes, so that a float16 allreduce ran at a fifth of a float32
 * one's speed with half the bytes. Each gives reduce.c's scalar kernels'
 * bits. reduce, scale and axpby do the whole blocks of 8 and return how
 * many values they did, the caller's scalar kernel the rest; dots does
 * it all, its lanes' sums being one. Elsewhere than x86 they do nothing
 * (dots: all of it in scalar code), and hvd__f16c is false. */
#ifndef HVD_HALF_H
#define HVD_HALF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hvd.h"

bool hvd__f16c(void);
/* d[i] = op(d[i], s[i]): SUM (AVERAGE), PRODUCT, MIN or MAX. */
size_t hvd__f16c_reduce(uint16_t *d, const uint16_t *s, size_t n,
			enum hvd_op op);
size_t hvd__f16c_scale(uint16_t *p, size_t n, float f);
/* Adasum's (reduce.h's hvd__dots and hvd__axpby). */
void hvd__f16c_dots(const uint16_t *a, const uint16_t *b, size_t n,
		    double out[3]);
size_t hvd__f16c_axpby(uint16_t *x, const uint16_t *y, size_t n, double cx,
		       double cy);

#endif
