/* proc.c: see proc.h. */
#include "util/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <unistd.h>

#include "proto/wire.h"
#include "util/util.h"

int hl_children(pid_t **out, size_t *n)
{
	char path[64], buf[512];
	struct dirent *de;
	pid_t self = getpid(), *v = NULL;
	size_t cnt = 0;
	DIR *d = opendir("/proc");

	*out = NULL;
	*n = 0;
	if (d == NULL)
		return HL_ESYS;
	while ((de = readdir(d)) != NULL) {
		long pid, ppid;
		char *rp, *end;
		ssize_t r;
		int fd;

		if (!hl_parse_long(de->d_name, 1, 1L << 30, &pid))
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		r = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (r <= 0)
			continue;
		buf[r] = '\0';
		/* "pid (comm) state ppid ...": comm may hold spaces. */
		rp = strrchr(buf, ')');
		if (rp == NULL || rp[1] != ' ' || rp[2] == '\0' || rp[3] != ' ')
			continue;
		ppid = strtol(rp + 4, &end, 10);
		if (end == rp + 4 || ppid != self)
			continue;
		if ((cnt & (cnt - 1)) == 0) {
			pid_t *nv =
				realloc(v, (cnt ? cnt * 2 : 8) * sizeof(*v));

			if (nv == NULL)
				break;
			v = nv;
		}
		v[cnt++] = (pid_t)pid;
	}
	closedir(d);
	*out = v;
	*n = cnt;
	return HL_OK;
}

static int check_exec(const char *file, char **cause, const char *cmd)
{
	struct stat st;

	if (stat(file, &st) != 0)
		return hl_fail(cause, HL_ENOENT, "command not found: '%s'",
			       cmd);
	if (S_ISDIR(st.st_mode))
		return hl_fail(cause, HL_ENOEXEC,
			       "cannot execute '%s': is a directory", cmd);
	if (access(file, X_OK) != 0)
		return hl_fail(cause, HL_ENOEXEC, "cannot execute '%s': %s",
			       cmd, strerror(errno));
	return HL_OK;
}

int hl_resolve_command(const char *cmd, const char *path, char **resolved,
		       char **cause)
{
	const char *p;
	int rc, first_noexec = HL_OK;

	*resolved = NULL;
	if (cmd[0] == '\0')
		return hl_fail(cause, HL_ENOENT, "command not found: ''");
	if (strchr(cmd, '/') != NULL) {
		rc = check_exec(cmd, cause, cmd);
		if (rc == HL_OK && (*resolved = hl_strdup(cmd)) == NULL)
			rc = hl_fail(cause, HL_ENOMEM, "out of memory");
		return rc;
	}
	if (path == NULL)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p++) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		char *file = n ? hl_asprintf("%.*s/%s", (int)n, p, cmd)
			       : hl_asprintf("./%s", cmd);

		if (file == NULL)
			return hl_fail(cause, HL_ENOMEM, "out of memory");
		rc = check_exec(file, NULL, cmd);
		if (rc == HL_OK) {
			*resolved = file;
			return HL_OK;
		}
		if (rc == HL_ENOEXEC && first_noexec == HL_OK)
			first_noexec = HL_ENOEXEC;
		free(file);
		if (colon == NULL)
			break;
		p = colon;
	}
	if (first_noexec != HL_OK)
		return hl_fail(cause, HL_ENOEXEC,
			       "cannot execute '%s': permission denied", cmd);
	return hl_fail(cause, HL_ENOENT, "command not found: '%s'", cmd);
}

int hl_word_write(int fd, int32_t v)
{
	unsigned char b[4];
	struct wire_w w;

	wire_w_fixed(&w, b, sizeof(b));
	wire_put_i32(&w, v);
	return write(fd, b, sizeof(b)) == (ssize_t)sizeof(b) ? HL_OK : HL_ESYS;
}

int hl_word_read(int fd, int32_t *v)
{
	unsigned char b[4];
	ssize_t n = read(fd, b, sizeof(b));
	struct wire_r r;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return HL_EAGAIN;
	if (n != (ssize_t)sizeof(b))
		return HL_EPROTO;
	wire_r_init(&r, b, sizeof(b));
	*v = wire_get_i32(&r);
	return HL_OK;
}

void hl_exec_failed(int fd)
{
	int e = errno;

	(void)hl_word_write(fd, e);
	_exit(e == ENOENT ? 127 : 126);
}

void hl_chdir_failed(int fd)
{
	(void)hl_word_write(fd, -errno);
	_exit(125);
}

int hl_exec_result(int fd)
{
	int32_t e = 0;
	int rc;

	while ((rc = hl_word_read(fd, &e)) == HL_EAGAIN)
		;
	return rc == HL_OK ? (int)e : 0;
}

static struct rlimit nofile_start;
static bool nofile_raised;

void hl_nofile_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	nofile_start = rl;
	rl.rlim_cur = rl.rlim_max;
	nofile_raised = setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

void hl_nofile_restore(void)
{
	if (nofile_raised)
		setrlimit(RLIMIT_NOFILE, &nofile_start);
}

long hl_nofile_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 ||
	    rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= (rlim_t)LONG_MAX)
		return LONG_MAX;
	return (long)rl.rlim_cur;
}

bool hl_pids_add(struct hl_pids *set, pid_t pid)
{
	pid_t *t;
	size_t i;

	for (i = 0; i < set->n; i++)
		if (set->v[i] == pid)
			return false;
	t = realloc(set->v, (set->n + 1) * sizeof(*t));
	if (t != NULL) {
		set->v = t;
		set->v[set->n++] = pid;
	}
	return true;
}
