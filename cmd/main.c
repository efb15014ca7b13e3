/* main.c: hvdrun's main: one table of commands. The commands live one
 * per file: run.c, check.c, and the hidden modes hvdrun runs on a host
 * itself (agent.c, free_port.c, probe.c); options.c reads the options
 * every job command reads. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "hvdrun.h"

struct command {
	const char *name; /* argv[1] */
	int (*main)(int argc, char **argv);
};

/* Anything else is `hvdrun [options] command`: run.c. */
static const struct command commands[] = {
	{"check", cmd_check_main},
	/* Not for people: hvdrun starts these on a host. */
	{"--agent", cmd_agent_main},
	{"--node-agent", cmd_node_agent_main},
	{"--free-port", cmd_free_port_main},
	{"--probe", cmd_probe_main},
};

/* Standard input, output and error that hvdrun was started without
 * (`hvdrun ... <&-`) become /dev/null before anything else opens a
 * descriptor: else the first would take the number, and rank 0 would read
 * it as its input (--stdin), or the job's output go to it. */
static void std_fds_open(void)
{
	int fd;

	for (fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF &&
		    open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd)
			_exit(EXIT_START);
}

int main(int argc, char **argv)
{
	size_t i;

	std_fds_open();
	for (i = 0; argc >= 2 && i < sizeof(commands) / sizeof(*commands); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].main(argc - 1, argv + 1);
	return cmd_run_main(argc, argv);
}
