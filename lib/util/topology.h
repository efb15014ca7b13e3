/* util/topology.h: this host's CPU topology as sysfs gives it, read
 * without allocating (between fork and exec: job/bind.c's binding) and
 * so also by the network check's probe: each CPU's package
 * (/sys/devices/system/cpu/cpuN/topology/physical_package_id), core (the
 * first of its topology/thread_siblings_list) and NUMA node
 * (/sys/devices/system/node/nodeK/cpulist). root names the folder read for
 * /sys (NULL or "": /sys), as hwloc's HWLOC_FSROOT. A CPU whose topology
 * cannot be read is a core of its own, in package 0, in its package's
 * NUMA node. */
#ifndef HL_TOPOLOGY_H
#define HL_TOPOLOGY_H

#include <sched.h>
#include <stdbool.h>

/* One CPU: its number, package, core (the lowest CPU of the core's
 * hardware threads) and NUMA node (CPU_SETSIZE + package where it has
 * none). */
struct hl_cpu {
	int cpu, pkg, core, node;
};

/* The CPUs this process may run on, ascending, into c (CPU_SETSIZE of
 * them), each a core of its own in package 0; their count, or -1. */
int hl_cpus_allowed(struct hl_cpu *c);
/* The packages of c[0..n), their cores (cores) and NUMA nodes (nodes),
 * from sysfs under root. */
void hl_topology_read(const char *root, struct hl_cpu *c, int n, bool cores,
		      bool nodes);

/* The NVIDIA GPUs (PCI vendor 0x10de, a display class) under
 * root/bus/pci/devices, their PCI addresses ("0000:3b:00.0") in bus order
 * (nvidia-smi's order, and CUDA's with CUDA_DEVICE_ORDER=PCI_BUS_ID), at
 * most max into addr; their count. */
#define HL_PCI_ADDR 32
int hl_gpus_pci(const char *root, char (*addr)[HL_PCI_ADDR], int max);
/* The CPUs near GPU addr (its local_cpulist) into *set; false if none
 * are said. */
bool hl_gpu_cpus(const char *root, const char *addr, cpu_set_t *set);

/* How many packages, cores and NUMA nodes c[0..n) are in. */
void hl_topology_count(const struct hl_cpu *c, int n, long *packages,
		       long *cores, long *nodes);

/* Append s (without its NUL), or the decimal v, to p; the end. For lines
 * written between fork and exec. */
char *hl_put_text(char *p, const char *s);
char *hl_put_number(char *p, long v);

#endif
