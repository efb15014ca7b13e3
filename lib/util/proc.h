/* proc.h: processes. The direct children of this process, read from
 * /proc: the supervisor and the agent are child subreapers, and a worker's
 * children that outlive it become theirs and are found here. And the
 * command a worker runs, found as execvp would. */
#ifndef HL_PROC_H
#define HL_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Fill *out (malloc'ed) with the pids whose parent is this process. */
int hl_children(pid_t **out, size_t *n);

/* One word on an internal pipe (the exec-failure pipe of a forked child,
 * the watchdog's): 4 bytes, big-endian, written with one write(2) and
 * async-signal-safe. hl_word_read: HL_OK with *v, HL_EAGAIN when
 * interrupted or nothing is there yet, HL_EPROTO at the end of the pipe
 * or on a short read. */
int hl_word_write(int fd, int32_t v);
int hl_word_read(int fd, int32_t *v);
/* In a forked child whose exec failed: report errno on the close-on-exec
 * pipe fd and exit (127 for ENOENT, else 126). */
void hl_exec_failed(int fd) __attribute__((noreturn));
/* ... or whose chdir failed: report -errno and exit 125. */
void hl_chdir_failed(int fd) __attribute__((noreturn));
/* In the parent: 0 once the child's exec succeeded (fd closed empty), or
 * the errno its exec failed with (negated: its chdir). */
int hl_exec_result(int fd);

/* A set of pids (a process, or -group), for a signal sent once to each:
 * hl_pids_add is true when pid was not in it yet (and now is). Free v. */
struct hl_pids {
	pid_t *v;
	size_t n;
};
bool hl_pids_add(struct hl_pids *set, pid_t pid);

/* A job of thousands of ranks holds several descriptors a rank in hvdrun
 * (output pipes, rendezvous connections): hl_nofile_raise lifts the soft
 * limit on open files to the hard one, and hl_nofile_restore, in a
 * forked child before exec, gives a worker the limit hvdrun started with. */
void hl_nofile_raise(void);
void hl_nofile_restore(void);
/* The files this process may open now (its soft limit); LONG_MAX when
 * unlimited. */
long hl_nofile_limit(void);

/* Find cmd like execvp would, in path (a PATH value). HL_ENOENT when it is
 * not found, HL_ENOEXEC when it is found but cannot be executed. */
int hl_resolve_command(const char *cmd, const char *path, char **resolved,
		       char **cause);

#endif
