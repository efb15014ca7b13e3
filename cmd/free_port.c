/* free_port.c: `hvdrun --free-port [NAME[,NAME...]]`, run by hvdrun over
 * SSH on rank 0's host: prints a TCP port free there, and after a space
 * the IPv4 address of the first named interface that has one (MASTER_ADDR
 * for torch), if any. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>

#include "proto/ifaces.h"
#include "job/env.h"
#include "hvdrun.h"
#include "agent/records.h"

int cmd_free_port_main(int argc, char **argv)
{
	char *cause = NULL, addr[INET_ADDRSTRLEN] = "", line[HL_FREE_PORT_LEN];
	int port;

	if (argc > 2) {
		fprintf(stderr, "hvdrun: --free-port takes at most one list "
				"of interfaces\n");
		return EXIT_USAGE;
	}
	if (hl_free_port(&port, &cause) != HL_OK) {
		cmd_remote_error(cause);
		free(cause);
		return EXIT_START;
	}
	if (argc == 2 && ifaces_ipv4(argv[1], addr, sizeof(addr)) != HL_OK)
		addr[0] = '\0';
	hl_free_port_format(line, sizeof(line), port, addr);
	fputs(line, stdout);
	return 0;
}
