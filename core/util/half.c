/* half.c: 16-bit floats: float16 (IEEE 754 binary16) and bfloat16 to
 * and from float32, and float16's kernels through x86's F16C (half.h). */
#include "util/half.h"

#include <string.h>

#include "util/reduce.h"

/* IEEE 754 binary16 <-> binary32, round to nearest even. */
float hvd__half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	float f;

	if (exp == 0x1f) {
		bits = sign | 0x7f800000 | (man << 13); /* inf, nan */
	} else if (exp != 0) {
		bits = sign | ((exp + 112) << 23) | (man << 13);
	} else if (man == 0) {
		bits = sign;
	} else {
		/* Subnormal: value = man * 2^-24. */
		f = (float)man * 0x1p-24f;
		memcpy(&bits, &f, sizeof(bits));
		bits |= sign;
	}
	memcpy(&f, &bits, sizeof(f));
	return f;
}

uint16_t hvd__float_to_half(float f)
{
	uint32_t bits, sign, man;
	int exp;

	memcpy(&bits, &f, sizeof(bits));
	sign = (bits >> 16) & 0x8000;
	exp = (int)((bits >> 23) & 0xff);
	man = bits & 0x7fffff;
	if (exp == 0xff) /* inf stays inf; nan stays a quiet nan */
		return (uint16_t)(sign | 0x7c00 |
				  (man ? 0x200 | (man >> 13) : 0));
	exp -= 112;
	if (exp >= 0x1f)
		return (uint16_t)(sign | 0x7c00); /* overflow: inf */
	if (exp <= 0) {
		/* Subnormal or zero in half: shift in the implicit bit. */
		uint32_t full, shift, half, rem, mid;

		if (exp < -10)
			return (uint16_t)sign;
		full = man | 0x800000;
		shift = (uint32_t)(14 - exp);
		half = full >> shift;
		rem = full & ((1u << shift) - 1);
		mid = 1u << (shift - 1);
		if (rem > mid || (rem == mid && (half & 1)))
			half++;
		return (uint16_t)(sign | half);
	}
	{
		uint32_t half = ((uint32_t)exp << 10) | (man >> 13);
		uint32_t rem = man & 0x1fff;

		if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
			half++; /* may carry into the exponent: still right */
		return (uint16_t)(sign | half);
	}
}

float hvd__bf16_to_float(uint16_t b)
{
	uint32_t bits = (uint32_t)b << 16;
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

uint16_t hvd__float_to_bf16(float f)
{
	uint32_t bits;

	memcpy(&bits, &f, sizeof(bits));
	if ((bits & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((bits >> 16) | 0x40); /* quiet nan */
	bits += 0x7fff + ((bits >> 16) & 1);
	return (uint16_t)(bits >> 16);
}

/* The CPU's own conversions: round to nearest even, as
 * hvd__float_to_half; the op in float32, rounded once, as reduce.c's
 * KERNEL16. min and max keep its order of operands, for NaNs (MIN(a, b)
 * is b < a ? b : a, as minps(b, a)). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

#define F16C_TARGET __attribute__((target("avx,f16c")))
#define F16C_LOAD(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define F16C_STORE(p, v)                                                       \
	_mm_storeu_si128((__m128i *)(p),                                       \
			 _mm256_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT |      \
						      _MM_FROUND_NO_EXC))

/* Found once, as the library loads: AVX (with the system's support of
 * its registers, which __builtin_cpu_supports checks) and F16C (cpuid's
 * bit, which not every compiler's builtin knows). */
static bool f16c_found;

__attribute__((constructor)) static void find_f16c(void)
{
	unsigned int a, b, c, d;

	__builtin_cpu_init(); /* constructors may run before libgcc's */
	f16c_found = __builtin_cpu_supports("avx") &&
		     __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

bool hvd__f16c(void)
{
	return f16c_found;
}

#define REDUCE_F16C(name, OP)                                                  \
	F16C_TARGET static size_t name(uint16_t *d, const uint16_t *s,         \
				       size_t n)                               \
	{                                                                      \
		size_t i;                                                      \
                                                                               \
		for (i = 0; i + 8 <= n; i += 8) {                              \
			__m256 a = F16C_LOAD(d + i), b = F16C_LOAD(s + i);     \
                                                                               \
			F16C_STORE(d + i, OP);                                 \
		}                                                              \
		return i;                                                      \
	}

REDUCE_F16C(sum_f16c, _mm256_add_ps(a, b))
REDUCE_F16C(prod_f16c, _mm256_mul_ps(a, b))
REDUCE_F16C(min_f16c, _mm256_min_ps(b, a))
REDUCE_F16C(max_f16c, _mm256_max_ps(b, a))

size_t hvd__f16c_reduce(uint16_t *d, const uint16_t *s, size_t n,
			enum hvd_op op)
{
	return op == HVD_PRODUCT ? prod_f16c(d, s, n)
	       : op == HVD_MIN	 ? min_f16c(d, s, n)
	       : op == HVD_MAX	 ? max_f16c(d, s, n)
				 : sum_f16c(d, s, n);
}

F16C_TARGET size_t hvd__f16c_scale(uint16_t *p, size_t n, float f)
{
	__m256 k = _mm256_set1_ps(f);
	size_t i;

	for (i = 0; i + 8 <= n; i += 8)
		F16C_STORE(p + i, _mm256_mul_ps(F16C_LOAD(p + i), k));
	return i;
}

/* Half h (0: the low four) of eight floats, as doubles. */
#define HALF4_PD(v8, h)                                                        \
	_mm256_cvtps_pd((h) ? _mm256_extractf128_ps((v8), 1)                   \
			    : _mm256_castps256_ps128(v8))

/* x = cx x + cy y in double, multiplications and additions apart (no
 * fused ones, as the scalar loops under -std=c11), rounded to float and
 * then to float16, as reduce.c's D_HALF. */
F16C_TARGET size_t hvd__f16c_axpby(uint16_t *x, const uint16_t *y, size_t n,
				   double cx, double cy)
{
	__m256d kx = _mm256_set1_pd(cx), ky = _mm256_set1_pd(cy);
	size_t i;
	int h;

	for (i = 0; i + 8 <= n; i += 8) {
		__m256 x8 = F16C_LOAD(x + i), y8 = F16C_LOAD(y + i);
		__m128 r[2];

		for (h = 0; h < 2; h++)
			r[h] = _mm256_cvtpd_ps(_mm256_add_pd(
				_mm256_mul_pd(kx, HALF4_PD(x8, h)),
				_mm256_mul_pd(ky, HALF4_PD(y8, h))));
		F16C_STORE(x + i, _mm256_set_m128(r[1], r[0]));
	}
	return i;
}
#else
#define F16C_TARGET

bool hvd__f16c(void)
{
	return false;
}

size_t hvd__f16c_reduce(uint16_t *d, const uint16_t *s, size_t n,
			enum hvd_op op)
{
	(void)d;
	(void)s;
	(void)n;
	(void)op;
	return 0;
}

size_t hvd__f16c_scale(uint16_t *p, size_t n, float f)
{
	(void)p;
	(void)n;
	(void)f;
	return 0;
}

size_t hvd__f16c_axpby(uint16_t *x, const uint16_t *y, size_t n, double cx,
		       double cy)
{
	(void)x;
	(void)y;
	(void)n;
	(void)cx;
	(void)cy;
	return 0;
}
#endif

/* As reduce.c's DOTS: element i in lane i % 4 of each sum, added in the
 * same order (two blocks of 4 a step), multiplications and additions
 * apart; the lanes into out at the end. */
F16C_TARGET void hvd__f16c_dots(const uint16_t *a, const uint16_t *b, size_t n,
				double out[3])
{
	double ab[4] = {0}, aa[4] = {0}, bb[4] = {0};
	size_t i = 0;
	int k;

#if defined(__x86_64__) && defined(__GNUC__)
	__m256d vab = _mm256_setzero_pd(), vaa = vab, vbb = vab;
	int h;

	for (; i + 8 <= n; i += 8) {
		__m256 x8 = F16C_LOAD(a + i), y8 = F16C_LOAD(b + i);

		for (h = 0; h < 2; h++) {
			__m256d x = HALF4_PD(x8, h), y = HALF4_PD(y8, h);

			vab = _mm256_add_pd(vab, _mm256_mul_pd(x, y));
			vaa = _mm256_add_pd(vaa, _mm256_mul_pd(x, x));
			vbb = _mm256_add_pd(vbb, _mm256_mul_pd(y, y));
		}
	}
	_mm256_storeu_pd(ab, vab);
	_mm256_storeu_pd(aa, vaa);
	_mm256_storeu_pd(bb, vbb);
#endif
	for (k = 0; i < n; i++, k = (k + 1) % 4) {
		double x = hvd__half_to_float(a[i]),
		       y = hvd__half_to_float(b[i]);

		ab[k] += x * y;
		aa[k] += x * x;
		bb[k] += y * y;
	}
	for (k = 0; k < 4; k++) {
		out[0] += ab[k];
		out[1] += aa[k];
		out[2] += bb[k];
	}
}
