/* control: libhvd's coordinator messages as every rank decodes them:
 * a rank's requests (read by rank 0) and rank 0's responses (read by
 * every rank); the input's first byte picks which (core/engine/control.c). */
#include "engine/engine.h"
#include "fuzz.h"

static void submit(void *arg, const char *name, const struct hvd__meta *m,
		   int rank)
{
	size_t *n = arg;

	(void)name;
	(void)m;
	(void)rank;
	(*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hvd__resp *v = NULL;
	size_t n = 0;

	if (size == 0)
		return 0;
	if (data[0] & 1) {
		(void)hvd__ctl_decode_requests(data + 1, size - 1, 1, submit,
					       &n);
	} else if (hvd__ctl_decode_responses(data + 1, size - 1, &v, &n) ==
		   HVD_OK) {
		hvd__resps_free(v, n);
	}
	return 0;
}
