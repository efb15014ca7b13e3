/* ssh/conn.h: one authenticated libssh session to a host of the list, as
 * every SSH user of hvdrun opens it (the job's spawner, the network
 * check): the host's name first, then ~/.ssh/config (or --ssh-config),
 * then what the user set explicitly; the host key checked by the job's
 * policy; public key authentication (agent, identity file, default keys). */
#ifndef HL_SSHCONN_H
#define HL_SSHCONN_H

#include <libssh/libssh.h>

#include "config/hosts.h"
#include "ssh/opts.h"

/* Connect and authenticate. On failure: HL_ESTART (HL_ENOMEM), *session
 * NULL, and *error a one-line message that names the host. */
int hl_ssh_connect(const struct hl_host *host, const struct hl_ssh_opts *o,
		   ssh_session *session, char **error);

/* The remote command that runs hvdrun (the same binary at the same path)
 * in mode ("--agent", "--probe", "--free-port") with arg (NULL: none),
 * quoted for the shell; it exits 127 with a message naming the path on a
 * host that does not have it. */
char *hl_ssh_self_command(const char *agent_path, const char *mode,
			  const char *arg);

#endif
