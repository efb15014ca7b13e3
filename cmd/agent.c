/* agent.c: `hvdrun --agent`, the remote end of an SSH start (lib/agent.h).
 * Its own failures go to stderr, which the channel carries back to the
 * hvdrun that started it, naming this host. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent.h"
#include "hvdrun.h"

/* "hvdrun: on HOST: cause", as hvdrun shows a remote host's error. */
void cmd_remote_error(const char *cause)
{
	char host[256] = "?";

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	fprintf(stderr, "hvdrun: on %s: %s\n", host,
		cause ? cause : "out of memory");
}

int cmd_agent_main(int argc, char **argv)
{
	char *cause = NULL;
	int code;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "hvdrun: --agent takes no arguments\n");
		return EXIT_USAGE;
	}
	code = hl_agent_run(&cause);
	if (cause != NULL)
		cmd_remote_error(cause);
	free(cause);
	return code;
}
