/* hostlist: hvdrun's -H list (hl_hosts_parse_list). */
#include <stdlib.h>

#include "fuzz.h"
#include "config/hosts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size), *cause = NULL;
	struct hl_hostlist hl;

	if (s == NULL)
		return 0;
	hl_hostlist_init(&hl);
	if (hl_hosts_parse_list(s, &hl, &cause) == 0)
		(void)hl_hosts_total_slots(&hl);
	hl_hostlist_close(&hl);
	free(cause);
	free(s);
	return 0;
}
