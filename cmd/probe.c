/* probe.c: `hvdrun --probe`, the remote side of `hvdrun check`
 * (lib/check/probe.h), run by hvdrun on each host. */
#include <stdio.h>
#include <stdlib.h>

#include "hvdrun.h"
#include "check/probe.h"

int cmd_probe_main(int argc, char **argv)
{
	char *cause = NULL;
	int rc;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "hvdrun: --probe takes no arguments\n");
		return EXIT_USAGE;
	}
	rc = hl_probe_run(&cause);
	if (rc != HL_OK)
		cmd_remote_error(cause);
	free(cause);
	return rc == HL_OK ? 0 : 1;
}
