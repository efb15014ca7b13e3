/* proc.h: the direct children of this process, read from /proc. The
 * supervisor and the agent are child subreapers: a worker's children that
 * outlive it become theirs, and are found here. */
#ifndef HL_PROC_H
#define HL_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* Fill *out (malloc'ed) with the pids whose parent is this process. */
int hl_children(pid_t **out, size_t *n);

#endif
