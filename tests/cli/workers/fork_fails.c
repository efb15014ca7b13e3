/* fork_fails.c: a library that tests/cli/supervise.bats preloads into
 * hvdrun (LD_PRELOAD) to start a job partly: the process may fork
 * HVD_TEST_FORKS times, then fork fails with EAGAIN, as at a limit on
 * processes. Each child it forked is recorded, its pid in a file of
 * HVD_TEST_FORK_PIDS (the tests' PIDDIR), so that the test can see that
 * none is left. It leaves the environment at once: the workers do not
 * load it. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long forks_left = -1; /* -1: no limit */
static char pid_dir[512];

__attribute__((constructor)) static void fork_fails_init(void)
{
	const char *n = getenv("HVD_TEST_FORKS");
	const char *d = getenv("HVD_TEST_FORK_PIDS");

	if (n != NULL)
		forks_left = strtol(n, NULL, 10);
	if (d != NULL)
		snprintf(pid_dir, sizeof(pid_dir), "%s", d);
	unsetenv("LD_PRELOAD");
	unsetenv("HVD_TEST_FORKS");
	unsetenv("HVD_TEST_FORK_PIDS");
}

static void record(pid_t pid)
{
	char path[600], text[24];
	int fd, n;

	if (pid_dir[0] == '\0')
		return;
	snprintf(path, sizeof(path), "%s/forked.%d", pid_dir, (int)pid);
	n = snprintf(text, sizeof(text), "%d", (int)pid);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, text, (size_t)n) != n)
			unlink(path);
		close(fd);
	}
}

pid_t fork(void)
{
	static pid_t (*real_fork)(void);
	pid_t pid;

	if (real_fork == NULL)
		*(void **)&real_fork = dlsym(RTLD_NEXT, "fork");
	if (forks_left == 0) {
		errno = EAGAIN;
		return -1;
	}
	if (forks_left > 0)
		forks_left--;
	pid = real_fork();
	if (pid > 0)
		record(pid);
	return pid;
}
