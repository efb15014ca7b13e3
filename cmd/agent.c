/* agent.c: `hvdrun --agent`, the remote end of an SSH start, and `hvdrun
 * --node-agent`, a node's end of an srun start (lib/agent/agent.h). Their own
 * failures go to stderr, which the channel or srun carries back to the
 * hvdrun that started them, naming this host. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent/agent.h"
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

/* Run one of the agents: no arguments, its own failure on stderr. */
static int agent_main(int argc, const char *name, int (*run)(char **cause))
{
	char *cause = NULL;
	int code;

	if (argc != 1) {
		fprintf(stderr, "hvdrun: %s takes no arguments\n", name);
		return EXIT_USAGE;
	}
	code = run(&cause);
	if (cause != NULL)
		cmd_remote_error(cause);
	free(cause);
	return code;
}

int cmd_agent_main(int argc, char **argv)
{
	(void)argv;
	return agent_main(argc, "--agent", hl_agent_run);
}

int cmd_node_agent_main(int argc, char **argv)
{
	(void)argv;
	return agent_main(argc, "--node-agent", hl_node_agent_run);
}
