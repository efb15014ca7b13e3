/* proc.c: see proc.h. */
#include "proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

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
		char *rp;
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
		if (rp == NULL || sscanf(rp + 1, " %*c %ld", &ppid) != 1 ||
		    ppid != self)
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
