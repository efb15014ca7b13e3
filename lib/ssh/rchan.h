/* rchan.h: a byte channel to a hidden mode of hvdrun (`--agent`, `--probe`,
 * `--free-port`) running on a host, as pdsh's rcmd modules: an SSH exec
 * channel on a session the caller opened (ssh/conn.h), or a child process
 * of this hvdrun on a socket pair when the host is this machine. The SSH
 * spawner and the network check both reach their remote ends through it;
 * what they say on it is theirs (records.h, probe_msg.h). */
#ifndef HL_RCHAN_H
#define HL_RCHAN_H

#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct hl_rchan {
	ssh_session s;	/* the caller's; NULL for a local child */
	ssh_channel ch; /* SSH */
	pid_t pid;	/* local child */
	int fd;		/* local child's stdin and stdout, or -1 */
	char err[512];	/* the start of the remote end's stderr (SSH) */
	size_t errlen;
};

/* Run `AGENT MODE [ARG]` over a new exec channel of session s; ARG goes
 * through the shell quoted. cb, if not NULL, is set on the channel before
 * the command starts (exit status and signal callbacks). On failure
 * HL_ESTART and *error names the host and what failed. */
int hl_rchan_ssh(struct hl_rchan *c, ssh_session s, const char *host,
		 const char *agent, const char *mode, const char *arg,
		 struct ssh_channel_callbacks_struct *cb, char **error);
/* Run `AGENT MODE` as a child of this process (this machine). */
int hl_rchan_local(struct hl_rchan *c, const char *host, const char *agent,
		   const char *mode, char **error);
/* Write all of data: HL_OK, or HL_ESYS when the other end is gone. */
int hl_rchan_write(struct hl_rchan *c, const void *data, size_t len);
/* Read what is there within timeout_ms: the byte count, 0 when nothing
 * came in time, HL_EPROTO at the end of the output. Over SSH, stderr is
 * kept in c->err as it comes. */
int hl_rchan_read(struct hl_rchan *c, void *buf, size_t len, int timeout_ms);
/* Read until the end of the output or the deadline (hl_now_ms()), at most
 * len - 1 bytes, NUL-terminated: the byte count. */
size_t hl_rchan_read_all(struct hl_rchan *c, char *buf, size_t len,
			 long long deadline);
/* The first line of the remote end's stderr, without "hvdrun: ", or
 * NULL when it wrote none. */
const char *hl_rchan_error(struct hl_rchan *c);
/* End the channel: EOF to the other end, then close; a local child is
 * reaped, and killed if it does not end within a second. The SSH session
 * stays the caller's. */
void hl_rchan_close(struct hl_rchan *c);

#endif
