/* hostfile: a --hostfile's text (hl_hosts_parse_file). */
#include <stdlib.h>

#include "fuzz.h"
#include "config/hosts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hl_hostlist hl;
	char *cause = NULL;

	hl_hostlist_init(&hl);
	if (hl_hosts_parse_file(fuzz_file(data, size), &hl, &cause) == 0)
		(void)hl_hosts_total_slots(&hl);
	hl_hostlist_close(&hl);
	free(cause);
	return 0;
}
