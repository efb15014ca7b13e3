/* config/rules.c: the rules between a job's options that no single
 * option's check can see (an elastic job's options, horovodrun's settings
 * that hvdrun takes only in part, the launcher and the discovery script),
 * each refused with the options named. */
#include "config/rules.h"

#include <string.h>

#include "util/util.h"

int hl_rules_elastic_only(const struct hl_opts *o, enum hl_key k, char **cause)
{
	/* A file's line, fixed in the file. */
	if (o->v[k].in_file)
		return hl_fail(cause, HL_EINVAL,
			       "%s is for an elastic job: set min_np in "
			       "[elastic]",
			       hl_opt_said(o, k));
	return hl_fail(cause, HL_EINVAL,
		       "--%s is for an elastic job: add --min-np",
		       hl_keys[k].longopt);
}

/* --min-np and --reset-limit: an elastic job, on hvdrun's transport. */
static int check_elastic(const struct hl_opts *o, int np, char **cause)
{
	static const enum hl_key only_elastic[] = {
		HL_K_RESET_LIMIT, HL_K_MAX_NP,	       HL_K_COOLDOWN,
		HL_K_DISCOVERY,	  HL_K_SLOTS_PER_HOST, HL_K_ELASTIC_TIMEOUT};
	size_t i;

	if (!o->v[HL_K_MIN_NP].set) {
		for (i = 0; i < sizeof(only_elastic) / sizeof(*only_elastic);
		     i++)
			if (o->v[only_elastic[i]].set)
				return hl_rules_elastic_only(o, only_elastic[i],
							     cause);
		return HL_OK;
	}
	if (o->v[HL_K_SLOTS_PER_HOST].set && !o->v[HL_K_DISCOVERY].set)
		return hl_fail(cause, HL_EINVAL,
			       "%s is for the bare names a "
			       "--host-discovery-script prints",
			       hl_opt_said(o, HL_K_SLOTS_PER_HOST));
	if (o->v[HL_K_MAX_NP].set && o->v[HL_K_MAX_NP].i < np)
		return hl_fail(cause, HL_EINVAL,
			       "%s is less than the %d workers the job "
			       "starts with",
			       hl_opt_said(o, HL_K_MAX_NP), np);
	if (o->v[HL_K_MIN_NP].i > np)
		return hl_fail(cause, HL_EINVAL,
			       "%s is more than the %d workers the job "
			       "starts with",
			       hl_opt_said(o, HL_K_MIN_NP), np);
	if (o->v[HL_K_MPI].b)
		return hl_fail(cause, HL_EINVAL,
			       "%s: an elastic job runs on hvdrun's own "
			       "rendezvous, not %s",
			       hl_opt_said(o, HL_K_MIN_NP),
			       hl_opt_said(o, HL_K_MPI));
	return HL_OK;
}

/* horovodrun's settings that hvdrun takes only in part. */
static int check_horovod(const struct hl_opts *o, char **cause)
{
	char choices[128];

	if (o->v[HL_K_NUM_NCCL_STREAMS].set &&
	    o->v[HL_K_NUM_NCCL_STREAMS].i != 1)
		return hl_fail(
			cause, HL_EINVAL,
			"%s: libhvd runs NCCL on one stream per GPU; leave it "
			"out (1 is the only value)",
			hl_opt_said(o, HL_K_NUM_NCCL_STREAMS));
	/* horovodrun's: MPI initialised without threads, which applies
	 * only under MPI; libhvd's own engine uses none. */
	if (o->v[HL_K_MPI_THREADS_DISABLE].b && o->v[HL_K_MPI].b)
		return hl_fail(cause, HL_EINVAL,
			       "%s with %s: libhvd's background thread calls "
			       "MPI, which needs MPI_THREAD_SERIALIZED; leave "
			       "it out",
			       hl_opt_said(o, HL_K_MPI_THREADS_DISABLE),
			       hl_opt_said(o, HL_K_MPI));
	if (o->v[HL_K_MPI].b && o->v[HL_K_BIND_TO].set &&
	    strcmp(hl_key_choices(HL_K_BIND_TO)[o->v[HL_K_BIND_TO].i], "gpu") ==
		    0)
		return hl_fail(cause, HL_EINVAL,
			       "%s with %s: mpirun has no binding by GPU; "
			       "give it --bind-to socket or numa",
			       hl_opt_said(o, HL_K_BIND_TO),
			       hl_opt_said(o, HL_K_MPI));
	if (o->v[HL_K_BINDING_ARGS].set && o->v[HL_K_BIND_TO].set)
		return hl_fail(cause, HL_EINVAL,
			       "%s and %s both bind mpirun's workers: give one",
			       hl_opt_said(o, HL_K_BIND_TO),
			       hl_opt_said(o, HL_K_BINDING_ARGS));
	if (o->v[HL_K_BINDING_ARGS].set && !o->v[HL_K_MPI].b)
		return hl_fail(
			cause, HL_EINVAL,
			"--binding-args is for mpirun (--mpi); hvdrun's "
			"own workers are bound with --bind-to %s",
			hl_key_arg(HL_K_BIND_TO, choices, sizeof(choices)));
	return HL_OK;
}

/* --stdin: a rank of the job, or none (-1). */
static int check_stdin(const struct hl_opts *o, int np, char **cause)
{
	if (o->v[HL_K_STDIN].i < np)
		return HL_OK;
	return hl_fail(cause, HL_EINVAL,
		       "%s: the job's ranks are 0 to %d; name one of them, "
		       "or none",
		       hl_opt_said(o, HL_K_STDIN), np - 1);
}

int hl_rules_check(const struct hl_opts *o, int np, char **cause)
{
	int rc = check_elastic(o, np, cause);

	if (rc == HL_OK)
		rc = check_stdin(o, np, cause);
	return rc == HL_OK ? check_horovod(o, cause) : rc;
}

int hl_rules_check_launcher(const struct hl_opts *o, bool srun, char **cause)
{
	if (srun && o->v[HL_K_DISCOVERY].set)
		return hl_fail(
			cause, HL_EINVAL,
			"--host-discovery-script: srun reaches only the "
			"allocation's nodes, not the hosts a script finds; "
			"use --launcher ssh");
	return HL_OK;
}
