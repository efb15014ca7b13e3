/* bind.h: CPU binding of the workers, as mpirun's --bind-to.
 *
 * core (the default): each local rank of a host gets an equal share of
 * the cores that its launcher may use, each core with all its hardware
 * threads, the cores taken in order of package (socket) and then core,
 * so that the ranks of a host share no core, a rank's share stays within
 * one package where the shares allow, and the scheduler does not pile
 * communicating ranks onto one core. A host with more local ranks than
 * cores, but not more than CPUs, gives each rank an equal share of the
 * hardware threads, a core's threads side by side. Nothing is bound when
 * a host has more local ranks than CPUs (as Open MPI, oversubscribed),
 * unless core:overload-allowed (as mpirun's qualifier): then local rank r
 * gets CPU r mod the CPUs, one each in turn.
 *
 * socket, numa: each local rank gets every CPU of one package, or of one
 * NUMA node: local rank r of n the (r * groups / n)-th, so that
 * consecutive local ranks (and, on a GPU host, the GPUs of the same
 * package, as local rank r takes GPU r) share one.
 *
 * gpu: each local rank gets the CPUs near its GPU (GPU r for local rank
 * r, through CUDA_VISIBLE_DEVICES where it lists numbers), as sysfs gives
 * them: the NVIDIA GPUs of /sys/bus/pci/devices in PCI bus order, and
 * each one's local_cpulist, where they are the rank's to use.
 *
 * none: nothing is bound.
 *
 * The topology is read from sysfs (/sys/devices/system/cpu/cpuN/topology:
 * physical_package_id, thread_siblings_list; /sys/devices/system/node/
 * nodeK/cpulist), or from the folder HVD_SYSFS_ROOT in the worker's
 * environment names for /sys, as hwloc's HWLOC_FSROOT. A CPU whose
 * topology cannot be read is a core of its own, in package 0, in the
 * NUMA node of its package. */
#ifndef HL_BIND_H
#define HL_BIND_H

#include <sched.h>
#include <stdbool.h>

#include "util/topology.h"

/* In the order of HVD_BIND_TO's choices (proto/worker_env.c): a mode is
 * its choice's index. */
enum hl_bind_mode {
	HL_BIND_CORE,
	HL_BIND_NONE,
	HL_BIND_OVERLOAD, /* core:overload-allowed */
	HL_BIND_SOCKET,
	HL_BIND_NUMA,
	HL_BIND_GPU, /* the CPUs near the local rank's GPU */
};

/* In the child between fork and exec: reads HVD_BIND_TO,
 * HOROVOD_LOCAL_RANK and HOROVOD_LOCAL_SIZE from the worker's environment
 * array and binds the calling process. Allocates nothing; errors leave the
 * process unbound. */
void hl_bind_worker(char *const *envp);

/* The CPUs of local rank lr of ls under mode m, from c[0..n), the CPUs
 * allowed in ascending order: into *mine; false: bind nothing. */
bool hl_bind_share(const struct hl_cpu *c, int n, long lr, long ls,
		   enum hl_bind_mode m, cpu_set_t *mine);

#endif
