/* util/fds.c: a process's room for open files (internal.h). */
#include <dirent.h>
#include <sys/resource.h>

#include "util/internal.h"

/* The descriptors this process holds now (the entries of /proc/self/fd,
 * less ".", ".." and the one that reads them), or 64 where that cannot
 * be read. */
static long fds_open(void)
{
	DIR *d = opendir("/proc/self/fd");
	long n = 0;

	if (d == NULL)
		return 64;
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n > 3 ? n - 3 : 0;
}

/* Room for a connection to every other rank of a job of size: the soft
 * limit on open files raised, as far as the hard one allows, to what
 * this process holds and the mesh needs (and as much again for what
 * comes after: a process per local peer, the shared segment's); never
 * lowered. HVD_ESYS, said, where the hard limit leaves no room for the
 * mesh itself. */
int hvd__fd_room(int rank, int size)
{
	long held = fds_open();
	rlim_t need = (rlim_t)held + (rlim_t)size + 16;
	rlim_t want = need + (rlim_t)size + 48;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
		return HVD_OK;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
		hvd__error(
			"rank %d: a job of %d ranks needs about %llu open files here (a connection to every other rank, %ld held already); this process may open %llu (its hard limit, ulimit -Hn): raise it",
			rank, size, (unsigned long long)need, held,
			(unsigned long long)rl.rlim_max);
		return HVD_ESYS;
	}
	rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want
			      ? rl.rlim_max
			      : want;
	if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
		hvd__debug(
			"rank %d: the soft limit on open files raised to %llu for the job's %d connections",
			rank, (unsigned long long)rl.rlim_cur, size - 1);
	return HVD_OK;
}
