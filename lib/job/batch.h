/* batch.h: the allocation of a batch system other than Slurm (slurm.h)
 * that hvdrun runs inside, as mpirun finds it: PBS (OpenPBS, PBS Pro,
 * Torque: PBS_JOBID, its hosts in the file PBS_NODEFILE, a line a slot),
 * Grid Engine (JOB_ID with PE_HOSTFILE, a file of `host N queue
 * processors` lines) and LSF (LSB_JOBID, its hosts in LSB_MCPU_HOSTS,
 * `host N host N ...`, else in the file LSB_DJOB_HOSTFILE, a line a
 * slot). Its hosts are the job's when none are given; workers on other
 * hosts start over SSH. */
#ifndef HL_BATCH_H
#define HL_BATCH_H

#include "config/hosts.h"

struct hl_batch_system;

struct hl_batch {
	const struct hl_batch_system *system; /* NULL: none */
	const char *job;		      /* its job id */
	const char *var;   /* the variable that gives the hosts; NULL: none
			      is set */
	const char *value; /* its value */
	bool file;	   /* value names a file */
};

/* The batch system's name: "PBS", "Grid Engine", "LSF". */
const char *hl_batch_name(const struct hl_batch *b);

/* The batch job hvdrun runs inside, from the environment: whether there
 * is one (b->system). */
bool hl_batch_find(struct hl_batch *b);
/* Its hosts, appended to hosts; errors name the variable. */
int hl_batch_hosts(const struct hl_batch *b, struct hl_hostlist *hosts,
		   char **cause);

#endif
