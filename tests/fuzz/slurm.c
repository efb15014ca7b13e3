/* slurm: Slurm's node list and tasks-per-node syntax as hvdrun reads
 * them (hl_slurm_hosts): the input's first line is SLURM_JOB_NODELIST,
 * the rest SLURM_TASKS_PER_NODE. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "job/slurm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size), *nl, *hosts = NULL, *cause = NULL;

	if (s == NULL)
		return 0;
	nl = strchr(s, '\n');
	if (nl != NULL)
		*nl = '\0';
	if (hl_slurm_hosts(s, nl != NULL ? nl + 1 : "1", &hosts, &cause) == 0)
		free(hosts);
	free(cause);
	free(s);
	return 0;
}
