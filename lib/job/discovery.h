/* discovery.h: an elastic job's host discovery script (horovodrun's
 * --host-discovery-script): an executable that prints the hosts that may
 * run workers now, one `[user@]host[:slots]` a line (hosts.h's entry; a
 * bare name has the slots of --slots-per-host, else 1). Blank lines and
 * lines starting with '#' are skipped.
 *
 * hvdrun runs it once before the start (hl_discovery_run), then again
 * HL_DISCOVERY_EVERY_MS after each run ends, from the supervisor's poll
 * loop (the other calls). A run is killed, with its process group, once
 * it takes HL_DISCOVERY_TIMEOUT_MS. A run that fails, hangs, prints
 * nothing or prints garbage gives an error; the caller keeps the last good
 * list. */
#ifndef HL_DISCOVERY_H
#define HL_DISCOVERY_H

#include <stdbool.h>
#include <sys/types.h>

#include "config/hosts.h"

#define HL_DISCOVERY_EVERY_MS 1000
#define HL_DISCOVERY_TIMEOUT_MS 5000
#define HL_DISCOVERY_MAX_OUTPUT (256 * 1024)

struct hl_discovery {
	const char *script;
	int slots_per_host; /* a bare name's slots; 0: 1 */
	pid_t pid;	    /* the run in progress (its group), 0: none */
	int fd[2];	    /* its stdout and stderr, -1 once at their end */
	char *text[2];	    /* what they printed, NUL-terminated */
	size_t len[2];
	bool reaped;
	int status; /* wait(2) status, once reaped */
	bool timed_out;
	long long started, next; /* ms (hl_now_ms) */
};

/* script must be an executable file: else HL_EINVAL naming it. */
int hl_discovery_init(struct hl_discovery *d, const char *script,
		      int slots_per_host, char **cause);
/* Kill a run in progress (its process group) and release everything. */
void hl_discovery_close(struct hl_discovery *d);

/* Run the script to its end, now: its hosts, or the error. */
int hl_discovery_run(struct hl_discovery *d, struct hl_hostlist *hosts,
		     char **cause);

/* From a poll loop: start a run when one is due, kill one past its time.
 * Returns how many ms until the next call is due. */
long long hl_discovery_tick(struct hl_discovery *d, long long now);
/* Read what the run printed (poll d->fd for input; -1: at its end). */
void hl_discovery_read(struct hl_discovery *d);
/* pid, reaped with status by the caller's waitpid(-1): whether it was
 * the script's run. */
bool hl_discovery_reaped(struct hl_discovery *d, pid_t pid, int status);
/* Whether a run has ended: then HL_OK with its hosts in *hosts (an empty
 * list initialised by the caller), or an error with *cause; the next run
 * is due HL_DISCOVERY_EVERY_MS later. */
bool hl_discovery_done(struct hl_discovery *d, struct hl_hostlist *hosts,
		       int *rc, char **cause);

/* The hosts of text, the output of script (for messages). */
int hl_discovery_parse(const char *text, const char *script, int slots_per_host,
		       struct hl_hostlist *hosts, char **cause);

#endif
