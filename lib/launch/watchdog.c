/* watchdog.c: see watchdog.h. The watchdog runs in a session of its own
 * with its stdio on /dev/null, so that it holds none of the job's pipes or
 * terminal and no group signal meant for hvdrun reaches it. */
#include "launch/watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/proc.h"
#include "util/util.h"

#define WD_DONE 0 /* the word that means "ended cleanly" */

static bool any_alive(const pid_t *g, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (kill(-g[i], 0) == 0)
			return true;
	return false;
}

static void signal_groups(const pid_t *g, size_t n, int sig)
{
	size_t i;

	for (i = 0; i < n; i++)
		kill(-g[i], sig);
}

static void watchdog_main(int rfd, int grace_ms)
{
	size_t n = 0, cap = 256;
	pid_t *g = malloc(cap * sizeof(*g));
	int32_t word;
	long long end;
	int nullfd;

	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	nullfd = open("/dev/null", O_RDWR);
	if (nullfd >= 0) {
		dup2(nullfd, 0);
		dup2(nullfd, 1);
		dup2(nullfd, 2);
	}
	for (;;) {
		int r = hl_word_read(rfd, &word);

		if (r == HL_EAGAIN)
			continue;
		if (r != HL_OK)
			break; /* hvdrun is gone */
		if (word == WD_DONE)
			_exit(0);
		if (n == cap) {
			pid_t *ng = realloc(g, cap * 2 * sizeof(*g));

			if (ng == NULL)
				continue;
			g = ng;
			cap *= 2;
		}
		if (g != NULL)
			g[n++] = (pid_t)word;
	}
	if (g == NULL)
		_exit(1);
	signal_groups(g, n, SIGTERM);
	end = hl_now_ms() + grace_ms;
	while (any_alive(g, n) && hl_now_ms() < end) {
		struct timespec ts = {0, 50 * 1000 * 1000};

		nanosleep(&ts, NULL);
	}
	signal_groups(g, n, SIGKILL);
	_exit(0);
}

int hl_watchdog_start(struct hl_watchdog *wd, int grace_ms, char **cause)
{
	int p[2];
	pid_t pid;

	wd->fd = -1;
	wd->pid = -1;
	if (pipe2(p, O_CLOEXEC) != 0)
		return hl_fail(cause, HL_ESYS, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return hl_fail(cause, HL_ESYS, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setsid();
		if (dup3(p[0], 3, O_CLOEXEC) < 0)
			_exit(1);
		/* Only our end of the pipe stays open. */
		close_range(4, ~0U, 0);
		watchdog_main(3, grace_ms);
	}
	close(p[0]);
	wd->fd = p[1];
	wd->pid = pid;
	return HL_OK;
}

void hl_watchdog_add(struct hl_watchdog *wd, pid_t pgid)
{
	if (wd->fd >= 0)
		(void)hl_word_write(wd->fd, (int32_t)pgid);
}

void hl_watchdog_done(struct hl_watchdog *wd)
{
	if (wd->fd < 0)
		return;
	(void)hl_word_write(wd->fd, WD_DONE);
	close(wd->fd);
	wd->fd = -1;
	while (waitpid(wd->pid, NULL, 0) < 0 && errno == EINTR)
		;
	wd->pid = -1;
}
