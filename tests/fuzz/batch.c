/* batch: LSF's LSB_MCPU_HOSTS ("host N host N ...") as hvdrun reads it
 * inside an LSF job (hl_batch_find, hl_batch_hosts); the input is the
 * variable's value. PBS's and Grid Engine's files are hostfiles (the
 * hostfile target). */
#include <stdlib.h>

#include "fuzz.h"
#include "job/batch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size), *cause = NULL;
	struct hl_batch b;
	struct hl_hostlist hosts;

	if (s == NULL)
		return 0;
	setenv("LSB_JOBID", "1", 1);
	setenv("LSB_MCPU_HOSTS", s, 1);
	hl_hostlist_init(&hosts);
	if (hl_batch_find(&b))
		hl_batch_hosts(&b, &hosts, &cause);
	hl_hostlist_close(&hosts);
	free(cause);
	free(s);
	return 0;
}
