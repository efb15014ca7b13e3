/* rchan.c: see rchan.h. */
#include "ssh/rchan.h"

#include <errno.h>
#include <libssh/callbacks.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ssh/conn.h"
#include "util/util.h"

static void rchan_init(struct hl_rchan *c)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

int hl_rchan_ssh(struct hl_rchan *c, ssh_session s, const char *host,
		 const char *agent, const char *mode, const char *arg,
		 struct ssh_channel_callbacks_struct *cb, char **error)
{
	char *cmd = hl_ssh_self_command(agent, mode, arg);
	int rc = HL_OK;

	rchan_init(c);
	c->s = s;
	c->ch = ssh_channel_new(s);
	if (cmd == NULL || c->ch == NULL ||
	    ssh_channel_open_session(c->ch) != SSH_OK) {
		rc = hl_fail(error, HL_ESTART,
			     "host '%s': cannot open a channel: %s", host,
			     ssh_get_error(s));
	} else {
		if (cb != NULL)
			ssh_set_channel_callbacks(c->ch, cb);
		if (ssh_channel_request_exec(c->ch, cmd) != SSH_OK)
			rc = hl_fail(error, HL_ESTART,
				     "host '%s': cannot run hvdrun %s: %s",
				     host, mode, ssh_get_error(s));
	}
	free(cmd);
	if (rc != HL_OK)
		hl_rchan_close(c);
	return rc;
}

int hl_rchan_local(struct hl_rchan *c, const char *host, const char *agent,
		   const char *mode, char **error)
{
	int sv[2];

	rchan_init(c);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return hl_fail(error, HL_ESTART, "host '%s': socketpair: %s",
			       host, strerror(errno));
	c->pid = fork();
	if (c->pid == 0) {
		sigset_t none;

		dup2(sv[1], 0);
		dup2(sv[1], 1);
		close_range(3, ~0U, 0);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execl(agent, agent, mode, (char *)NULL);
		_exit(127); /* the output ends: the caller sees the failure */
	}
	close(sv[1]);
	if (c->pid < 0) {
		close(sv[0]);
		return hl_fail(error, HL_ESTART, "host '%s': fork: %s", host,
			       strerror(errno));
	}
	c->fd = sv[0];
	return HL_OK;
}

int hl_rchan_write(struct hl_rchan *c, const void *data, size_t len)
{
	if (c->ch != NULL)
		return ssh_channel_write(c->ch, data, (uint32_t)len) == (int)len
			       ? HL_OK
			       : HL_ESYS;
	return hl_write_all(c->fd, data, len) == 0 ? HL_OK : HL_ESYS;
}

/* Keep what arrived on the channel's stderr. */
static void drain_stderr(struct hl_rchan *c)
{
	char chunk[1024];

	while (ssh_channel_poll(c->ch, 1) > 0) {
		int e = ssh_channel_read_nonblocking(c->ch, chunk,
						     sizeof(chunk), 1);
		size_t k = sizeof(c->err) - 1 - c->errlen;

		if (e <= 0)
			break;
		k = (size_t)e < k ? (size_t)e : k;
		memcpy(c->err + c->errlen, chunk, k);
		c->errlen += k;
	}
}

int hl_rchan_read(struct hl_rchan *c, void *buf, size_t len, int timeout_ms)
{
	struct pollfd pf = {c->fd, POLLIN, 0};
	int n;

	if (c->ch != NULL) {
		n = ssh_channel_read_timeout(c->ch, buf, (uint32_t)len, 0,
					     timeout_ms);
		/* The channel is at its end only once stderr is read too. */
		if (n == 0)
			drain_stderr(c);
		if (n == 0 && ssh_channel_is_eof(c->ch))
			return HL_EPROTO;
		return n < 0 ? HL_EPROTO : n;
	}
	if (poll(&pf, 1, timeout_ms) <= 0)
		return 0;
	n = (int)read(c->fd, buf, len);
	if (n < 0 && errno == EINTR)
		return 0;
	return n <= 0 ? HL_EPROTO : n;
}

size_t hl_rchan_read_all(struct hl_rchan *c, char *buf, size_t len,
			 long long deadline)
{
	size_t n = 0;

	while (n + 1 < len) {
		long long left = deadline - hl_now_ms();
		int r;

		if (left <= 0)
			break;
		r = hl_rchan_read(c, buf + n, len - 1 - n,
				  left < 200 ? (int)left : 200);
		if (r < 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	return n;
}

const char *hl_rchan_error(struct hl_rchan *c)
{
	char *e = c->err;

	if (c->errlen == 0)
		return NULL;
	e[c->errlen] = '\0';
	e[strcspn(e, "\n")] = '\0';
	return strncmp(e, "hvdrun: ", 8) == 0 ? e + 8 : e;
}

void hl_rchan_close(struct hl_rchan *c)
{
	int status, i;

	if (c->ch != NULL) {
		ssh_channel_send_eof(c->ch);
		ssh_channel_close(c->ch);
		ssh_channel_free(c->ch);
		c->ch = NULL;
	}
	if (c->fd >= 0) {
		shutdown(c->fd, SHUT_WR);
		close(c->fd);
		c->fd = -1;
	}
	if (c->pid > 0) {
		/* EOF ends the child at once; a stuck one gets a KILL. */
		for (i = 0; i < 100; i++) {
			if (waitpid(c->pid, &status, WNOHANG) != 0)
				break;
			poll(NULL, 0, 10);
		}
		if (i == 100) {
			kill(c->pid, SIGKILL);
			waitpid(c->pid, &status, 0);
		}
		c->pid = 0;
	}
}
