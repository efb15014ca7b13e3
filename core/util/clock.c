/* clock.c: libhvd's one clock, monotonic, for deadlines and timings. */
#include <time.h>

#include "util/internal.h"

long long hvd__now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

long long hvd__now_ms(void)
{
	return hvd__now_us() / 1000;
}
