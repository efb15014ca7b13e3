/* mpirun.h: `hvdrun --mpi`: the job run by Open MPI's mpirun instead of
 * hvdrun's own launcher, from the same options: the host list (the slots
 * of the hosts the plan uses), -np, every -x and [env] variable and the
 * tuning variables (as mpirun -x), the SSH port, identity, user and config
 * (as plm_rsh_args), the network interfaces (btl_tcp_if_include and
 * oob_tcp_if_include), --tcp (the tcp and self transports only, ob1), and
 * --binding-args and --mpi-args, split like a shell's words. */
#ifndef HL_MPIRUN_H
#define HL_MPIRUN_H

#include "job/env.h"
#include "config/hosts.h"
#include "config/opts.h"
#include "ssh/opts.h"
#include "job/plan.h"

/* mpirun's argv into out. if_include: interface names or CIDR blocks
 * ("eth0" or "10.0.0.1/32,10.0.0.2/32"), or NULL; o: the job's options
 * (--tcp, --binding-args, --mpi-args). */
int hl_mpirun_argv(const struct hl_hostlist *hosts, const struct hl_plan *plan,
		   const struct hl_envspec *es, const struct hl_ssh_opts *so,
		   const char *if_include, const struct hl_opts *o,
		   char *const *command, struct hl_strvec *out, char **cause);

#endif
