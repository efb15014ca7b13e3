/* host_source.c: see host_source.h. */
#include "job/host_source.h"

#include "job/batch.h"
#include "job/discovery.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/rules.h"
#include "job/slurm.h"

/* hosts, read from system's job (facts: the variables that gave them,
 * more: what else the origin says), are the job's: -np must fit them. */
static int allocation_taken(const struct hl_opts *o, const char *system,
			    const char *job, const char *facts,
			    const char *more, struct hl_hostlist *hosts,
			    char **cause)
{
	long total = hl_hosts_total_slots(hosts);

	if (o->v[HL_K_NP].set && o->v[HL_K_NP].i > total)
		return hl_fail(
			cause, HL_EINVAL,
			"%s is more than the %ld slots of %s job %s (%s)",
			hl_opt_said(o, HL_K_NP), total, system, job, facts);
	hosts->origin = hl_asprintf("the %s allocation of job %s (%s%s)",
				    system, job, facts, more);
	return hosts->origin != NULL
		       ? HL_OK
		       : hl_fail(cause, HL_ENOMEM, "out of memory");
}

/* The hosts of the Slurm allocation of job `job`. */
static int from_slurm(const struct hl_opts *o, const char *job,
		      struct hl_hostlist *hosts, char **cause)
{
	const char *nodes = hl_env("SLURM_JOB_NODELIST");
	const char *tasks = hl_env("SLURM_TASKS_PER_NODE");
	const char *step = hl_env("SLURM_STEP_ID");
	const char *ntasks = hl_env("SLURM_NTASKS");
	const char *step_tasks = hl_env("SLURM_STEP_NUM_TASKS");
	char *list = NULL, *facts, *more;
	long n, total;
	int rc;

	/* srun -n4 hvdrun ...: four hvdruns, each starting the job. */
	if (step != NULL && step_tasks != NULL &&
	    hl_parse_long(step_tasks, 2, LONG_MAX, &n))
		return hl_fail(
			cause, HL_EINVAL,
			"this hvdrun is one of the %ld tasks of Slurm step %s.%s, and each would start the whole job: start hvdrun once (in the salloc or sbatch script, or with srun -n1)",
			n, job, step);
	if (nodes == NULL || tasks == NULL)
		return hl_fail(
			cause, HL_EINVAL,
			"inside Slurm job %s, but %s is not set: give hosts with -H or --hostfile",
			job,
			nodes == NULL ? "SLURM_JOB_NODELIST"
				      : "SLURM_TASKS_PER_NODE");
	rc = hl_slurm_hosts(nodes, tasks, &list, cause);
	if (rc == HL_OK)
		rc = hl_hosts_parse_list(list, hosts, cause);
	free(list);
	if (rc == HL_EINVAL && step != NULL && cause != NULL) {
		/* srun -n1 hvdrun: the step's SLURM_TASKS_PER_NODE, the
		 * job's SLURM_JOB_NODELIST. */
		char *why = *cause;

		*cause = NULL;
		rc = hl_fail(
			cause, HL_EINVAL,
			"%s; inside Slurm step %s.%s these may describe the step, not the allocation: start hvdrun outside srun, or give hosts with -H",
			why, job, step);
		free(why);
	}
	if (rc != HL_OK)
		return rc;
	total = hl_hosts_total_slots(hosts);
	if (ntasks != NULL && hl_parse_long(ntasks, 1, total, &n))
		hosts->np = n;
	hosts->slurm = true;
	facts = hl_asprintf("SLURM_JOB_NODELIST=%s, SLURM_TASKS_PER_NODE=%s",
			    nodes, tasks);
	more = hl_asprintf("%s%s%s",
			   hosts->np > 0 ? ", -np from SLURM_NTASKS=" : "",
			   hosts->np > 0 ? ntasks : "",
			   step != NULL ? ", inside a step of one task" : "");
	rc = facts != NULL && more != NULL
		     ? allocation_taken(o, "Slurm", job, facts, more, hosts,
					cause)
		     : hl_fail(cause, HL_ENOMEM, "out of memory");
	free(facts);
	free(more);
	return rc;
}

/* The hosts of batch job b (not Slurm's). */
static int from_batch(const struct hl_opts *o, const struct hl_batch *b,
		      struct hl_hostlist *hosts, char **cause)
{
	char *facts;
	int rc = hl_batch_hosts(b, hosts, cause);

	if (rc != HL_OK)
		return rc;
	facts = hl_asprintf("%s=%s", b->var, b->value);
	rc = facts != NULL ? allocation_taken(o, hl_batch_name(b), b->job,
					      facts, "", hosts, cause)
			   : hl_fail(cause, HL_ENOMEM, "out of memory");
	free(facts);
	return rc;
}

/* Inside an allocation (system's job, NULL: none), say which hosts a job
 * uses instead of it. */
static int origin_beside(const char *system, const char *job, const char *what,
			 struct hl_hostlist *hosts, char **cause)
{
	if (job == NULL)
		return HL_OK;
	hosts->origin = hl_asprintf("%s, not the %s allocation of job %s", what,
				    system, job);
	return hosts->origin != NULL
		       ? HL_OK
		       : hl_fail(cause, HL_ENOMEM, "out of memory");
}

static int discover_hosts(const struct hl_opts *o, struct hl_discovery *d,
			  struct hl_hostlist *hosts, char **cause);

int hl_hosts_for_job(const struct hl_opts *o, const bool *from_cli,
		     const char *config_file, const char *fallback,
		     struct hl_discovery *disc, struct hl_hostlist *hosts,
		     char **cause)
{
	bool cli = from_cli[HL_K_HOSTS] || from_cli[HL_K_HOSTFILE];
	bool use_list = o->v[HL_K_HOSTS].set && (!cli || from_cli[HL_K_HOSTS]);
	bool use_file =
		o->v[HL_K_HOSTFILE].set && (!cli || from_cli[HL_K_HOSTFILE]);
	const char *job = hl_env("SLURM_JOB_ID");
	const char *system = "Slurm";
	struct hl_batch batch;
	char local[64];
	int rc;

	if (disc != NULL && o->v[HL_K_DISCOVERY].set)
		return discover_hosts(o, disc, hosts, cause);
	if (job == NULL && hl_batch_find(&batch)) {
		system = hl_batch_name(&batch);
		job = batch.job;
	}
	if (use_list && use_file)
		return hl_fail(cause, HL_EINVAL,
			       "%s: give hosts or hostfile in [job], not both",
			       config_file ? config_file : "config");
	if (use_list) {
		rc = hl_hosts_parse_list(o->v[HL_K_HOSTS].s, hosts, cause);
		return rc != HL_OK
			       ? rc
			       : origin_beside(
					 system, job,
					 from_cli[HL_K_HOSTS]
						 ? "the hosts of -H"
						 : "the hosts of the config file",
					 hosts, cause);
	}
	if (use_file) {
		rc = hl_hosts_parse_file(o->v[HL_K_HOSTFILE].s, hosts, cause);
		return rc != HL_OK ? rc
				   : origin_beside(system, job,
						   "the hosts of the hostfile",
						   hosts, cause);
	}
	if (job != NULL && strcmp(system, "Slurm") == 0)
		return from_slurm(o, job, hosts, cause);
	if (job != NULL)
		return from_batch(o, &batch, hosts, cause);
	if (!o->v[HL_K_NP].set && fallback != NULL)
		return hl_hosts_parse_list(fallback, hosts, cause);
	if (!o->v[HL_K_NP].set)
		return hl_fail(cause, HL_EINVAL,
			       "give -np N, or hosts with -H or --hostfile");
	snprintf(local, sizeof(local), "localhost:%ld", o->v[HL_K_NP].i);
	return hl_hosts_parse_list(local, hosts, cause);
}

/* --host-discovery-script: the hosts of its first run, -np (unless
 * given) every slot up to --max-np. */
static int discover_hosts(const struct hl_opts *o, struct hl_discovery *d,
			  struct hl_hostlist *hosts, char **cause)
{
	long total;
	int rc;

	if (!o->v[HL_K_MIN_NP].set)
		return hl_rules_elastic_only(o, HL_K_DISCOVERY, cause);
	if (o->v[HL_K_HOSTS].set || o->v[HL_K_HOSTFILE].set)
		return hl_fail(
			cause, HL_EINVAL, "%s gives the hosts: leave out %s",
			hl_opt_said(o, HL_K_DISCOVERY),
			hl_opt_said(o, o->v[HL_K_HOSTS].set ? HL_K_HOSTS
							    : HL_K_HOSTFILE));
	rc = hl_discovery_init(d, o->v[HL_K_DISCOVERY].s,
			       o->v[HL_K_SLOTS_PER_HOST].set
				       ? (int)o->v[HL_K_SLOTS_PER_HOST].i
				       : 0,
			       cause);
	if (rc == HL_OK)
		rc = hl_discovery_run(d, hosts, cause);
	if (rc != HL_OK)
		return rc;
	total = hl_hosts_total_slots(hosts);
	if (o->v[HL_K_MAX_NP].set && o->v[HL_K_MAX_NP].i < total)
		total = o->v[HL_K_MAX_NP].i;
	hosts->np = total;
	hosts->origin = hl_asprintf("the hosts of the discovery script '%s'",
				    d->script);
	return hosts->origin != NULL
		       ? HL_OK
		       : hl_fail(cause, HL_ENOMEM, "out of memory");
}

/* How many workers the job starts: -np, else the host source's count,
 * else every slot. An elastic job without --max-np starts on every slot
 * of its hosts whatever -np says, as horovodrun does (its code, not its
 * documentation): -np is then only a floor. */
long hl_job_size(const struct hl_opts *o, const struct hl_hostlist *hosts)
{
	long total = hl_hosts_total_slots(hosts);

	if (o->v[HL_K_MIN_NP].set && !o->v[HL_K_MAX_NP].set &&
	    !o->v[HL_K_DISCOVERY].set &&
	    (!o->v[HL_K_NP].set || o->v[HL_K_NP].i <= total))
		return total;
	if (o->v[HL_K_NP].set)
		return o->v[HL_K_NP].i;
	return hosts->np > 0 ? hosts->np : total;
}
