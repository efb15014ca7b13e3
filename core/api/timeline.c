/* api/timeline.c: starting and stopping the timeline (HOROVOD_TIMELINE's
 * trace) from the program; the background thread writes it. */
#include <errno.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/runtime.h"

HVD_EXPORT int hvd_start_timeline(const char *path, int mark_cycles)
{
	int rc;

	if (!hvd__g.initialized)
		return HVD_ENOTINIT;
	if (hvd__fork_of >= 0)
		return hvd__fork_refuse();
	if (path == NULL || *path == '\0') {
		hvd__set_error("a timeline needs a file name");
		return HVD_EINVAL;
	}
	rc = hvd__runtime_timeline(path, mark_cycles != 0);
	if (rc == HVD_ENOMEM)
		hvd__set_error("out of memory");
	else if (rc == HVD_ESYS)
		hvd__set_error("cannot write the timeline to %s: %s", path,
			       strerror(errno));
	else if (rc != HVD_OK)
		hvd__set_error("cannot write the timeline to %s", path);
	return rc;
}

HVD_EXPORT int hvd_stop_timeline(void)
{
	if (!hvd__g.initialized)
		return HVD_ENOTINIT;
	if (hvd__fork_of >= 0)
		return hvd__fork_refuse();
	return hvd__runtime_timeline(NULL, false);
}
