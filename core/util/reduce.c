/* reduce.c: the reduction kernels. Loops over plain arrays that the
 * compiler vectorises; one function per (dtype, op) pair through a macro
 * that expands the loop only (float16's on F16C, and the 16-bit floats'
 * conversions: half.c). Last, the data path's copy (hvd__copy). */
#include "util/reduce.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "util/half.h"

size_t hvd__dtype_size(enum hvd_dtype t)
{
	static const size_t sizes[] = {
		[HVD_UINT8] = 1,   [HVD_INT8] = 1,    [HVD_INT32] = 4,
		[HVD_INT64] = 8,   [HVD_FLOAT16] = 2, [HVD_BFLOAT16] = 2,
		[HVD_FLOAT32] = 4, [HVD_FLOAT64] = 8, [HVD_INT16] = 2,
		[HVD_BOOL] = 1,
	};

	return hvd__dtype_valid((int)t) ? sizes[t] : 0;
}

bool hvd__dtype_valid(int t)
{
	return t >= HVD_UINT8 && t <= HVD_BOOL;
}

bool hvd__op_valid(int op)
{
	return op >= HVD_SUM && op <= HVD_ADASUM;
}

const char *hvd__dtype_name(enum hvd_dtype t)
{
	static const char *const names[] = {
		"uint8",    "int8",    "int32",	  "int64", "float16",
		"bfloat16", "float32", "float64", "int16", "bool",
	};

	return hvd__dtype_valid((int)t) ? names[t] : "?";
}

/* The loops are built for the baseline, AVX2 and AVX-512, and the best the
 * CPU has is picked when the library loads (GCC's function clones). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CLONES __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define CLONES
#endif

#define SUM(a, b) ((a) + (b))
#define PROD(a, b) ((a) * (b))
#define MIN(a, b) ((b) < (a) ? (b) : (a))
#define MAX(a, b) ((b) > (a) ? (b) : (a))

/* In the macros below T names a type, which takes no parentheses.
 * NOLINTBEGIN(bugprone-macro-parentheses) */
#define KERNEL(name, T, F)                                                     \
	CLONES static void name(void *dst, const void *src, size_t n)          \
	{                                                                      \
		T *restrict d = dst;                                           \
		const T *restrict s = src;                                     \
		size_t i;                                                      \
                                                                               \
		for (i = 0; i < n; i++)                                        \
			d[i] = (T)F(d[i], s[i]);                               \
	}

#define KERNELS(T, tag)                                                        \
	KERNEL(sum_##tag, T, SUM)                                              \
	KERNEL(prod_##tag, T, PROD)                                            \
	KERNEL(min_##tag, T, MIN)                                              \
	KERNEL(max_##tag, T, MAX)

KERNELS(uint8_t, u8)
KERNELS(int8_t, i8)
KERNELS(int16_t, i16)
KERNELS(int32_t, i32)
KERNELS(int64_t, i64)
KERNELS(float, f32)
KERNELS(double, f64)

/* 16-bit floats: widen, reduce in float32, round back. */
#define KERNEL16(name, F, TOF, FROMF)                                          \
	CLONES static void name(void *dst, const void *src, size_t n)          \
	{                                                                      \
		uint16_t *restrict d = dst;                                    \
		const uint16_t *restrict s = src;                              \
		size_t i;                                                      \
                                                                               \
		for (i = 0; i < n; i++)                                        \
			d[i] = FROMF(F(TOF(d[i]), TOF(s[i])));                 \
	}

#define KERNELS16(tag, TOF, FROMF)                                             \
	KERNEL16(sum_##tag, SUM, TOF, FROMF)                                   \
	KERNEL16(prod_##tag, PROD, TOF, FROMF)                                 \
	KERNEL16(min_##tag, MIN, TOF, FROMF)                                   \
	KERNEL16(max_##tag, MAX, TOF, FROMF)

KERNELS16(f16, hvd__half_to_float, hvd__float_to_half)
KERNELS16(bf16, hvd__bf16_to_float, hvd__float_to_bf16)

/* Adasum's kernels, in float64 whatever the dtype. */
#define DOTS(name, T, TOD)                                                       \
	CLONES static void name(const void *pa, const void *pb, size_t n,        \
				double out[3])                                   \
	{                                                                        \
		const T *restrict a = pa;                                        \
		const T *restrict b = pb;                                        \
		double ab[4] = {0}, aa[4] = {0}, bb[4] = {0};                    \
		size_t i;                                                        \
		int k;                                                           \
                                                                                 \
		/* Four sums of each, a lane each: they vectorize, where one   \
		 * would wait on its own last addition. */ \
		for (i = 0; i + 4 <= n; i += 4)                                  \
			for (k = 0; k < 4; k++) {                                \
				double x = TOD(a[i + k]), y = TOD(b[i + k]);     \
                                                                                 \
				ab[k] += x * y;                                  \
				aa[k] += x * x;                                  \
				bb[k] += y * y;                                  \
			}                                                        \
		for (k = 0; i < n; i++, k++) {                                   \
			double x = TOD(a[i]), y = TOD(b[i]);                     \
                                                                                 \
			ab[k] += x * y;                                          \
			aa[k] += x * x;                                          \
			bb[k] += y * y;                                          \
		}                                                                \
		for (k = 0; k < 4; k++) {                                        \
			out[0] += ab[k];                                         \
			out[1] += aa[k];                                         \
			out[2] += bb[k];                                         \
		}                                                                \
	}

#define AXPBY(name, T, TOD, FROMD)                                             \
	CLONES static void name(void *px, const void *py, size_t n, double cx, \
				double cy)                                     \
	{                                                                      \
		T *restrict x = px;                                            \
		const T *restrict y = py;                                      \
		size_t i;                                                      \
                                                                               \
		for (i = 0; i < n; i++)                                        \
			x[i] = FROMD(cx * TOD(x[i]) + cy * TOD(y[i]));         \
	}

#define AS_DOUBLE(v) ((double)(v))
#define TO_FLOAT(v) ((float)(v))
#define HALF_D(v) ((double)hvd__half_to_float(v))
#define BF16_D(v) ((double)hvd__bf16_to_float(v))
#define D_HALF(v) hvd__float_to_half((float)(v))
#define D_BF16(v) hvd__float_to_bf16((float)(v))

DOTS(dots_f16, uint16_t, HALF_D)
DOTS(dots_bf16, uint16_t, BF16_D)
DOTS(dots_f32, float, AS_DOUBLE)
DOTS(dots_f64, double, AS_DOUBLE)
AXPBY(axpby_f16, uint16_t, HALF_D, D_HALF)
AXPBY(axpby_bf16, uint16_t, BF16_D, D_BF16)
AXPBY(axpby_f32, float, AS_DOUBLE, TO_FLOAT)
AXPBY(axpby_f64, double, AS_DOUBLE, AS_DOUBLE)

void hvd__dots(const void *a, const void *b, size_t n, enum hvd_dtype t,
	       double out[3])
{
	if (t == HVD_FLOAT32)
		dots_f32(a, b, n, out);
	else if (t == HVD_FLOAT64)
		dots_f64(a, b, n, out);
	else if (t == HVD_FLOAT16 && hvd__f16c())
		hvd__f16c_dots(a, b, n, out);
	else if (t == HVD_FLOAT16)
		dots_f16(a, b, n, out);
	else if (t == HVD_BFLOAT16)
		dots_bf16(a, b, n, out);
}

void hvd__axpby(void *x, const void *y, size_t n, enum hvd_dtype t, double cx,
		double cy)
{
	if (t == HVD_FLOAT32)
		axpby_f32(x, y, n, cx, cy);
	else if (t == HVD_FLOAT64)
		axpby_f64(x, y, n, cx, cy);
	else if (t == HVD_FLOAT16) {
		size_t done =
			hvd__f16c() ? hvd__f16c_axpby(x, y, n, cx, cy) : 0;

		axpby_f16((uint16_t *)x + done, (const uint16_t *)y + done,
			  n - done, cx, cy);
	} else if (t == HVD_BFLOAT16)
		axpby_bf16(x, y, n, cx, cy);
}

typedef void (*kernel_fn)(void *, const void *, size_t);

/* [dtype][sum, prod, min, max] */
static const kernel_fn kernels[][4] = {
	[HVD_UINT8] = {sum_u8, prod_u8, min_u8, max_u8},
	[HVD_INT8] = {sum_i8, prod_i8, min_i8, max_i8},
	[HVD_INT32] = {sum_i32, prod_i32, min_i32, max_i32},
	[HVD_INT64] = {sum_i64, prod_i64, min_i64, max_i64},
	[HVD_FLOAT16] = {sum_f16, prod_f16, min_f16, max_f16},
	[HVD_BFLOAT16] = {sum_bf16, prod_bf16, min_bf16, max_bf16},
	[HVD_FLOAT32] = {sum_f32, prod_f32, min_f32, max_f32},
	[HVD_FLOAT64] = {sum_f64, prod_f64, min_f64, max_f64},
	[HVD_INT16] = {sum_i16, prod_i16, min_i16, max_i16},
	/* or, and, and, or */
	[HVD_BOOL] = {max_u8, min_u8, min_u8, max_u8},
};

enum hvd_op hvd__op_as(enum hvd_dtype t, enum hvd_op op)
{
	if (t != HVD_BOOL)
		return op;
	return op == HVD_SUM ? HVD_MAX : op == HVD_PRODUCT ? HVD_MIN : op;
}

void hvd__reduce(void *dst, const void *src, size_t n, enum hvd_dtype t,
		 enum hvd_op op)
{
	static const int col[] = {[HVD_SUM] = 0,
				  [HVD_AVERAGE] = 0,
				  [HVD_PRODUCT] = 1,
				  [HVD_MIN] = 2,
				  [HVD_MAX] = 3,
				  /* never asked: algo/adasum.c runs it */
				  [HVD_ADASUM] = 0};

	if (t == HVD_FLOAT16 && hvd__f16c()) { /* half.h: blocks of 8 */
		size_t done = hvd__f16c_reduce(dst, src, n, op);

		dst = (uint16_t *)dst + done;
		src = (const uint16_t *)src + done;
		n -= done;
	}
	kernels[t][col[op]](dst, src, n);
}

/* Floats are multiplied by the factor as Horovod's scaling does:
 * float32 in float64, rounded once (a float factor rounds twice). */
#define SCALE(name, T)                                                         \
	CLONES static void name(T *p, size_t n, double f)                      \
	{                                                                      \
		size_t i;                                                      \
                                                                               \
		for (i = 0; i < n; i++)                                        \
			p[i] = (T)((double)p[i] * f);                          \
	}

SCALE(scale_f32, float)
SCALE(scale_f64, double)

/* bfloat16 in float32, rounded once: a loop of its own, which the
 * compiler vectorizes (bfloat16's conversions are shifts), where the
 * float16/bfloat16 choice a value kept it scalar. */
CLONES static void scale_bf16(uint16_t *restrict p, size_t n, float f)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t in = (uint32_t)p[i] << 16, bits;
		float v;

		memcpy(&v, &in, sizeof(v));
		v *= f;
		memcpy(&bits, &v, sizeof(bits));
		/* hvd__float_to_bf16, without its branch. */
		p[i] = (uint16_t)((bits & 0x7fffffff) > 0x7f800000
					  ? (bits >> 16) | 0x40
					  : (bits + 0x7fff +
					     ((bits >> 16) & 1)) >>
						    16);
	}
}

/* An average's division: the quotient rounded once, as Horovod's postscale
 * of 1/divisor in float64 gives it (42 / 7 is 6, where 42 times a float
 * 1/7 is the float above), at the speed of a vector division. */
#define DIVIDE(name, T)                                                        \
	CLONES static void name(T *p, size_t n, T d)                           \
	{                                                                      \
		size_t i;                                                      \
                                                                               \
		for (i = 0; i < n; i++)                                        \
			p[i] /= d;                                             \
	}

DIVIDE(divide_f32, float)
DIVIDE(divide_f64, double)

/* An integer average's division, truncated toward zero as C's, at a
 * vector division's speed: no CPU divides integer vectors, and a loop of
 * integer divisions ran at a sixth of the sum's speed. Through float
 * (up to 16 bits) or double (32): for |p| < 2^24 (2^53), the rounded
 * quotient is within |p|/d * 2^-24 (2^-53) of p/d, less than the 1/d
 * that separates a quotient that is no integer from the next one, so it
 * truncates to the same integer. int64's stay integer divisions. */
#define DIVIDE_INT(name, T, W)                                                 \
	CLONES static void name(T *p, size_t n, int divisor)                   \
	{                                                                      \
		W d = (W)divisor;                                              \
		size_t i;                                                      \
                                                                               \
		for (i = 0; i < n; i++)                                        \
			p[i] = (T)((W)p[i] / d);                               \
	}

DIVIDE_INT(divide_u8, uint8_t, float)
DIVIDE_INT(divide_i8, int8_t, float)
DIVIDE_INT(divide_i16, int16_t, float)
DIVIDE_INT(divide_i32, int32_t, double)

/* NOLINTEND(bugprone-macro-parentheses) */

void hvd__divide(void *buf, size_t n, enum hvd_dtype t, int divisor)
{
	int64_t *p64 = buf;
	size_t i;

	switch (t) {
	case HVD_UINT8:
		divide_u8(buf, n, divisor);
		break;
	case HVD_INT8:
		divide_i8(buf, n, divisor);
		break;
	case HVD_INT16:
		divide_i16(buf, n, divisor);
		break;
	case HVD_INT32:
		divide_i32(buf, n, divisor);
		break;
	case HVD_INT64:
		for (i = 0; i < n; i++)
			p64[i] /= divisor;
		break;
	case HVD_FLOAT32:
		divide_f32(buf, n, (float)divisor);
		break;
	case HVD_FLOAT64:
		divide_f64(buf, n, (double)divisor);
		break;
	default: /* 16-bit floats multiply in float32, as Horovod's do */
		hvd__scale(buf, n, t, 1.0 / (double)divisor);
		break;
	}
}

/* Integers scale as Horovod scales them: in float64, then back to the
 * integer, truncated toward zero; a product out of the type's range
 * saturates (NaN gives 0), where a plain cast would be undefined. T is a
 * type name, which parentheses would break:
 * NOLINTBEGIN(bugprone-macro-parentheses) */
#define SCALE_INT(name, T, LO, HI)                                             \
	static void name(T *p, size_t n, double f)                             \
	{                                                                      \
		size_t i;                                                      \
                                                                               \
		for (i = 0; i < n; i++) {                                      \
			double v = trunc((double)p[i] * f);                    \
                                                                               \
			p[i] = isnan(v)		   ? 0                         \
			       : v <= (double)(LO) ? (LO)                      \
			       : v >= (double)(HI) ? (HI)                      \
						   : (T)v;                     \
		}                                                              \
	}

SCALE_INT(scale_u8, uint8_t, 0, UINT8_MAX)
SCALE_INT(scale_i8, int8_t, INT8_MIN, INT8_MAX)
SCALE_INT(scale_i16, int16_t, INT16_MIN, INT16_MAX)
SCALE_INT(scale_i32, int32_t, INT32_MIN, INT32_MAX)
SCALE_INT(scale_i64, int64_t, INT64_MIN, INT64_MAX)
/* NOLINTEND(bugprone-macro-parentheses) */

bool hvd__dtype_float(enum hvd_dtype t)
{
	return t == HVD_FLOAT16 || t == HVD_BFLOAT16 || t == HVD_FLOAT32 ||
	       t == HVD_FLOAT64;
}

void hvd__divide_scale(void *buf, size_t n, enum hvd_dtype t, int divisor,
		       double factor)
{
	if (divisor > 1)
		hvd__divide(buf, n, t, divisor);
	hvd__scale(buf, n, t, factor);
}

void hvd__scale(void *buf, size_t n, enum hvd_dtype t, double factor)
{
	size_t i;

	if (factor == 1.0)
		return;
	switch (t) {
	case HVD_FLOAT32:
		scale_f32(buf, n, factor);
		break;
	case HVD_FLOAT64:
		scale_f64(buf, n, factor);
		break;
	case HVD_BFLOAT16:
		scale_bf16(buf, n, (float)factor);
		break;
	case HVD_FLOAT16: {
		uint16_t *p = buf;
		float f = (float)factor;

		i = hvd__f16c() ? hvd__f16c_scale(p, n, f) : 0;
		for (; i < n; i++)
			p[i] = hvd__float_to_half(hvd__half_to_float(p[i]) * f);
		break;
	}
	case HVD_UINT8:
		scale_u8(buf, n, factor);
		break;
	case HVD_INT8:
		scale_i8(buf, n, factor);
		break;
	case HVD_INT16:
		scale_i16(buf, n, factor);
		break;
	case HVD_INT32:
		scale_i32(buf, n, factor);
		break;
	case HVD_INT64:
		scale_i64(buf, n, factor);
		break;
	case HVD_BOOL: /* takes no factor (api/ refuses one) */
		break;
	}
}

/* hvd__copy: the data path's copy, for the transports', the fusion
 * buffers' and the collectives' copies of tensor bytes.
 *
 * glibc's memcpy copies from about 2 KiB up to a cache's size with `rep
 * movsb` where the CPU says it is fast (ERMS, FSRM). On AMD's Zen 3
 * (EPYC 7003) that runs at 1.5 to 2 GB/s, against 25 to 45 GB/s, when the
 * destination is not aligned as the source is: a tensor of malloc's
 * (16 bytes past a page) copied into a segment's slot, or out of it.
 * Through libhvd's shared segment that made the allreduce of 256 KiB to
 * 16 MiB run at 0.6 to 0.75 of Open MPI's on such a host. Here the bytes
 * go in 64-byte blocks of vector loads and stores (CLONES, as the
 * reductions), the destination aligned first: 22 to 36 GB/s there
 * whatever the alignment, and as fast as memcpy from a cache's size up.
 * Below COPY_SMALL, memcpy's own small copies (no `rep movsb`). */
#define COPY_SMALL 1024

CLONES static void copy_blocks(unsigned char *d, const unsigned char *s,
			       size_t n)
{
	while (n-- > 0) {
		__builtin_memcpy(d, s, 64);
		/* d is opaque to the compiler here, so that it does not make
		 * the loop one call of memcpy again. */
		__asm__("" : "+r"(d));
		d += 64;
		s += 64;
	}
}

void hvd__copy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	size_t head;

	if (n < COPY_SMALL) {
		if (n > 0)
			memcpy(d, s, n);
		return;
	}
	head = (size_t)(-(uintptr_t)d & 63);
	memcpy(d, s, head);
	d += head;
	s += head;
	n -= head;
	copy_blocks(d, s, n / 64);
	memcpy(d + (n & ~(size_t)63), s + (n & ~(size_t)63), n & 63);
}
