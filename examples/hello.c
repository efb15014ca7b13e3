/* hello.c: the smallest libhvd program. Each rank prints what it sees: its
 * ranks from libhvd and the launcher's environment under torchrun's names.
 * `make demo` runs it under `hvdrun -np 4 -H localhost:4`. */
#include <hvd.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);

	return v ? v : def;
}

int main(void)
{
	char host[256] = "?";
	int rc = hvd_init();

	if (rc != 0) {
		fprintf(stderr, "hvd_init: %s\n", hvd_strerror(rc));
		return 1;
	}
	gethostname(host, sizeof(host));
	printf("rank %d of %d on %s (pid %d): local %d of %d, cross %d of %d, "
	       "master %s:%s, libhvd %s\n",
	       hvd_rank(), hvd_size(), env_or("HOROVOD_HOSTNAME", host),
	       (int)getpid(), hvd_local_rank(), hvd_local_size(),
	       hvd_cross_rank(), hvd_cross_size(), env_or("MASTER_ADDR", "-"),
	       env_or("MASTER_PORT", "-"), hvd_version());
	hvd_shutdown();
	return 0;
}
