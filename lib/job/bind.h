/* bind.h: CPU binding of the workers, as mpirun's --bind-to core: each
 * local rank of a host gets an equal share of the cores that its launcher
 * may use, each core with all its hardware threads, the cores taken in
 * order of package (socket) and then core, so that the ranks of a host
 * share no core, a rank's share stays within one package where the
 * shares allow, and the scheduler does not pile communicating ranks onto
 * one core. The topology is read from sysfs (/sys/devices/system/cpu/
 * cpuN/topology: physical_package_id, thread_siblings_list; where
 * HVD_SYSFS_ROOT in the worker's environment names another folder for
 * /sys, as hwloc's HWLOC_FSROOT, from there); a CPU whose topology cannot
 * be read is a core of its own in package 0. A host with more local ranks
 * than cores, but not more than CPUs, gives each rank an equal share of
 * the hardware threads, a core's threads side by side. Nothing is bound
 * when a host has more local ranks than CPUs (as Open MPI, oversubscribed),
 * unless HVD_BIND_TO=core:overload-allowed (as mpirun's qualifier): then
 * local rank r gets CPU r mod the CPUs, one each in turn; nor with
 * HVD_BIND_TO=none (hvdrun --bind-to none). */
#ifndef HL_BIND_H
#define HL_BIND_H

#include <sched.h>
#include <stdbool.h>

/* In the child between fork and exec: reads HVD_BIND_TO,
 * HOROVOD_LOCAL_RANK and HOROVOD_LOCAL_SIZE from the worker's environment
 * array and binds the calling process. Allocates nothing; errors leave the
 * process unbound. */
void hl_bind_worker(char *const *envp);

/* The share of local rank lr of ls: cpus[0..n) the CPUs allowed, in
 * ascending order, pkg[i] and core[i] the package of cpus[i] and its core
 * (the lowest CPU of the core's hardware threads); overload: as
 * core:overload-allowed. Into *mine; false: bind nothing. */
bool hl_bind_share(int n, const int *cpus, const int *pkg, const int *core,
		   long lr, long ls, bool overload, cpu_set_t *mine);

#endif
