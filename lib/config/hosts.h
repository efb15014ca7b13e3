/* hosts.h: the job's host list, from `-H host[:slots],...` or a hostfile.
 *
 * Host-list syntax (-H and the config key job.hosts):
 *   LIST  := ENTRY { "," ENTRY }
 *   ENTRY := [ USER "@" ] HOST [ ":" SLOTS ]      (no SLOTS means 1)
 *   HOST  := a name or address of letters, digits, '-', '.', '_'
 *          | "[" IPv6 address "]"
 * Hostfile syntax: one host per line, `HOST [slots=N] [max_slots=N] [port=N]
 * [user=U]`, '#' starts a comment, blank lines are skipped. The slots may
 * also be given as `HOST:N` (MPICH) or `HOST N` (LSF), and Grid Engine's
 * `HOST N QUEUE@HOST PROCESSORS` reads as `HOST N`. A host on several
 * lines has the slots of them all. */
#ifndef HL_HOSTS_H
#define HL_HOSTS_H

#include <stdbool.h>
#include <stddef.h>

#include "util/util.h"

#define HL_MAX_SLOTS 4096
#define HL_MAX_HOSTNAME 253

struct hl_host {
	char *name; /* as the user wrote it, without user@ and brackets */
	char *user; /* NULL: the default user */
	int port;   /* 0: the default SSH port */
	int slots;
	bool local; /* this machine: started without SSH */
	int line;   /* hostfile line, 0 for -H */
	bool bare;  /* -H gave it no slot count: one slot */
};

struct hl_hostlist {
	struct hl_host *v;
	size_t n;
	struct hl_strvec warnings; /* non-fatal remarks for cmd/ to print */
	char *origin; /* where the list came from, for --dry-run and
			 --verbose (host_source.c); NULL: nowhere to say */
	long np;      /* -np when none is given (0: every slot) */
	bool slurm;   /* the hosts are the Slurm allocation's */
};

void hl_hostlist_init(struct hl_hostlist *hl);
void hl_hostlist_close(struct hl_hostlist *hl);

/* Parse a -H list. On error, *cause names the bad entry. */
int hl_hosts_parse_list(const char *list, struct hl_hostlist *out,
			char **cause);
/* Parse a hostfile. On error, *cause is "FILE:LINE: ...". */
int hl_hosts_parse_file(const char *path, struct hl_hostlist *out,
			char **cause);
/* The total number of slots. */
long hl_hosts_total_slots(const struct hl_hostlist *hl);
/* Whether a host name or address is this machine. */
bool hl_host_is_local(const char *name);

#endif
