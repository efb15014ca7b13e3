/* ncclrun.c: `hvdrun check --nccl`'s job (ncclcheck.h): the launcher in
 * a child process, its output read line by line, bounded in time. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check/ncclcheck.h"

/* After the child has gone: how long its output may still come (from a
 * process it left, such as its watchdog) before the reading stops. */
#define DRAIN_MS 2000

struct reader {
	struct hl_ncclcheck *k;
	char buf[HL_NCC_LINE_MAX + 1];
	size_t len;
	bool skip; /* the rest of a line too long to take */
};

/* Each line to hl_ncc_take_line; of a longer line than HL_NCC_LINE_MAX,
 * its start only. */
static void take(struct reader *rd, const char *data, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char c = data[i];

		if (c != '\n' && rd->skip)
			continue;
		if (c != '\n' && rd->len < HL_NCC_LINE_MAX) {
			rd->buf[rd->len++] = c == '\0' ? ' ' : c;
			continue;
		}
		if (!rd->skip) {
			rd->buf[rd->len] = '\0';
			hl_ncc_take_line(rd->k, rd->buf);
		}
		rd->len = 0;
		rd->skip = c != '\n';
	}
}

static void child(int fd, int (*launch)(void *), void *arg, pid_t parent)
{
	int rc;

	/* If the check dies, its job hears of it and ends its workers. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
		_exit(127);
	close(fd);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	rc = launch(arg);
	fflush(stdout);
	fflush(stderr);
	_exit(rc & 0xff);
}

/* Read until the output ends or the child and its drain are done; end
 * the child at the bound. */
static void watch(struct hl_ncclcheck *k, pid_t pid, int fd, int grace_ms,
		  int *wstatus)
{
	struct reader rd = {.k = k};
	long long start = hl_now_ms(), now, end = start + k->timeout_ms;
	long long kill_at = -1, stop_at = -1;
	bool exited = false;
	char buf[4096];

	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		long long until = exited	 ? stop_at
				  : kill_at >= 0 ? kill_at
						 : end;
		ssize_t n;

		now = hl_now_ms();
		if (!exited && waitpid(pid, wstatus, WNOHANG) == pid) {
			exited = true;
			stop_at = now + DRAIN_MS;
			continue;
		}
		if (now >= until) {
			if (exited)
				break;
			if (kill_at < 0) {
				k->timed_out = true;
				kill(pid, SIGTERM);
				kill_at = now + grace_ms;
			} else {
				kill(pid, SIGKILL);
				waitpid(pid, wstatus, 0);
				exited = true;
				stop_at = hl_now_ms() + DRAIN_MS;
			}
			continue;
		}
		/* Wake at least every 100 ms to see the child's exit. */
		if (poll(&p, 1, until - now < 100 ? (int)(until - now) : 100) <=
		    0)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			if (!exited)
				waitpid(pid, wstatus, 0);
			break;
		}
		take(&rd, buf, (size_t)n);
	}
	if (rd.len > 0)
		take(&rd, "\n", 1);
	k->seconds = (hl_now_ms() - start) / 1000.0;
}

int hl_ncc_run(struct hl_ncclcheck *k, int (*launch)(void *), void *arg,
	       int grace_ms, char **cause)
{
	int fds[2], ws = 0;
	pid_t pid, self = getpid();

	if (pipe2(fds, O_CLOEXEC) != 0)
		return hl_fail(cause, HL_ESYS, "pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return hl_fail(cause, HL_ESYS, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		close(fds[0]);
		child(fds[1], launch, arg, self);
	}
	close(fds[1]);
	k->ran = true;
	watch(k, pid, fds[0], grace_ms, &ws);
	close(fds[0]);
	k->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
	return HL_OK;
}
