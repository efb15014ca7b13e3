/* host_source.h: which host list a job runs on. An elastic job's
 * --host-discovery-script gives its hosts (with -H or --hostfile it is
 * refused); else -H or --hostfile on the command line wins over the
 * config file's hosts or hostfile (a file that gives both is refused);
 * with neither, inside a Slurm allocation
 * (SLURM_JOB_ID set) its nodes and tasks per node (slurm.h), inside
 * another batch system's job its hosts (batch.h), else
 * localhost with one slot per worker (-np N), or without -np the caller's
 * default (`hvdrun check`: this machine). Inside an allocation,
 * hosts->origin says where the hosts came from. */
#ifndef HL_HOST_SOURCE_H
#define HL_HOST_SOURCE_H

#include <stdbool.h>

#include "config/hosts.h"
#include "config/opts.h"

/* o: the finished options; from_cli[k]: key k came from the command
 * line; config_file: the file read, for messages (NULL: none); fallback:
 * the host list when nothing gives hosts or -np (NULL: that is an error);
 * disc: where the discovery script is run, its first run giving the
 * hosts and -np every slot up to --max-np (NULL: the caller takes no
 * script). */
struct hl_discovery;
int hl_hosts_for_job(const struct hl_opts *o, const bool *from_cli,
		     const char *config_file, const char *fallback,
		     struct hl_discovery *disc, struct hl_hostlist *hosts,
		     char **cause);
/* How many workers the job starts (the default -np and its rules). */
long hl_job_size(const struct hl_opts *o, const struct hl_hostlist *hosts);

#endif
