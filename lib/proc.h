/* proc.h: processes. The direct children of this process, read from
 * /proc: the supervisor and the agent are child subreapers, and a worker's
 * children that outlive it become theirs and are found here. And the
 * command a worker runs, found as execvp would. */
#ifndef HL_PROC_H
#define HL_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* Fill *out (malloc'ed) with the pids whose parent is this process. */
int hl_children(pid_t **out, size_t *n);

/* Find cmd like execvp would, in path (a PATH value). HL_ENOENT when it is
 * not found, HL_ENOEXEC when it is found but cannot be executed. */
int hl_resolve_command(const char *cmd, const char *path, char **resolved,
		       char **cause);

#endif
