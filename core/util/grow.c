/* util/grow.c: the one growth rule of libhvd's working buffers (the CPU
 * fusion buffer, engine/buffers.c; the GPU's, gpu/collectives.c). */
#include <stdint.h>

#include "util/internal.h"

size_t hvd__grow_size(size_t have, size_t want, size_t limit)
{
	size_t cap = have > 0 ? have : HVD__GROW_FIRST;

	if (want <= have)
		return have;
	while (cap < want && cap <= SIZE_MAX / 2)
		cap *= 2;
	if (cap < want)
		cap = want;
	/* Past the limit only for what one collective needs, exactly. */
	if (cap > limit)
		cap = want > limit ? want : limit;
	return cap;
}
