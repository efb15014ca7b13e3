/* build.c: -cb, --check-build: what this build of hvdrun and libhvd has,
 * in horovodrun's format, so that scripts that read horovodrun's answer
 * read this one. Frameworks are looked for in the Python that hvd.torch
 * uses (Debian's python3); the engines are this build's. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hvdrun.h"

/* Set by the Makefile: whether libhvd was built with its GPU engine. */
#ifndef HVD_NCCL_BUILT
#define HVD_NCCL_BUILT 0
#endif

/* Whether python imports module (quietly, within its own time). */
static bool python_has(const char *python, const char *module)
{
	char code[128];
	pid_t pid;
	int status;

	snprintf(code, sizeof(code), "import %s", module);
	fflush(stdout); /* the child's copy of the buffer is not printed */
	pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		if (freopen("/dev/null", "w", stdout) == NULL ||
		    freopen("/dev/null", "w", stderr) == NULL)
			_exit(1);
		execl(python, python, "-c", code, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void mark(const char *name, bool on)
{
	printf("    [%c] %s\n", on ? 'X' : ' ', name);
}

void cmd_check_build(void)
{
	const char *python = access("/usr/bin/python3", X_OK) == 0
				     ? "/usr/bin/python3"
				     : "python3";

	printf("hvdrun v%s:\n\n", HVD_VERSION);
	printf("Available Frameworks:\n");
	mark("TensorFlow", false);
	mark("PyTorch", python_has(python, "torch"));
	mark("MXNet", false);
	printf("\nAvailable Controllers:\n");
	mark("MPI", true);
	mark("Gloo", true); /* hvdrun's own engine stands where Gloo is */
	printf("\nAvailable Tensor Operations:\n");
	mark("NCCL", HVD_NCCL_BUILT);
	mark("DDL", false);
	mark("CCL", false);
	mark("MPI", true);
	mark("Gloo", true);
	printf("\n(Gloo: hvdrun's own TCP and shared-memory engine, which --gloo "
	       "selects.)\n");
}
