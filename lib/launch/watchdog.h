/* watchdog.h: a small process that outlives hvdrun to end the job's local
 * process groups if hvdrun dies without cleaning up (SIGKILL, a crash).
 * hvdrun tells it each worker's process group over a pipe; a pipe that
 * closes without the "done" word means hvdrun is gone. */
#ifndef HL_WATCHDOG_H
#define HL_WATCHDOG_H

#include <sys/types.h>

struct hl_watchdog {
	int fd;	   /* write end of the pipe, -1 when there is no watchdog */
	pid_t pid; /* hvdrun's child, in a session of its own */
};

/* Start it. */
int hl_watchdog_start(struct hl_watchdog *wd, int grace_ms, char **cause);
/* Watch one more process group. */
void hl_watchdog_add(struct hl_watchdog *wd, pid_t pgid);
/* The job has ended cleanly: the watchdog exits without acting, and is
 * reaped. */
void hl_watchdog_done(struct hl_watchdog *wd);

#endif
