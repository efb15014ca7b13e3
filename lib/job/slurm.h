/* slurm.h: a Slurm allocation as hvdrun's host list. Inside an
 * allocation (SLURM_JOB_ID set), a job that names no hosts runs on the
 * allocation's nodes, SLURM_JOB_NODELIST, with SLURM_TASKS_PER_NODE slots
 * each, and -np defaults to SLURM_NTASKS.
 *
 * Node-list syntax (Slurm's):
 *   LIST  := ITEM { "," ITEM }
 *   ITEM  := NAME-PART { "[" RANGES "]" NAME-PART }
 *   RANGES := RANGE { "," RANGE }, RANGE := N | N "-" M   (N <= M)
 * A range keeps the width of its low bound (node[08-10]: node08, node09,
 * node10); several bracket groups in one item multiply, the last one
 * varying fastest. Tasks per node: COUNT { "," COUNT }, COUNT := N |
 * N "(x" REPEAT ")", one count per node in the list's order. */
#ifndef HL_SLURM_H
#define HL_SLURM_H

#include <stdbool.h>
#include <stddef.h>

#include "util/util.h"

/* At most this many nodes in one list. */
#define HL_SLURM_MAX_NODES 65536

/* Expand a node list into names, in Slurm's order. what names the list
 * in errors (e.g. "SLURM_JOB_NODELIST"); *cause quotes the bad text. */
int hl_slurm_nodes(const char *list, const char *what, struct hl_strvec *names,
		   char **cause);
/* Tasks per node for n nodes into slots[0..n). */
int hl_slurm_tasks(const char *spec, const char *what, size_t n, int *slots,
		   char **cause);
/* The allocation as a host list (name:slots,...), in *hosts (freed by the
 * caller). */
int hl_slurm_hosts(const char *nodelist, const char *tasks, char **hosts,
		   char **cause);
/* Whether the variable of entry ("NAME" or "NAME=VALUE") is one of the
 * allocation's facts that every worker gets, wherever it starts (job id,
 * name, node list and count, cluster, partition, account, user, submit
 * folder and host, Slurm's config), as a job step's tasks see them. The
 * other SLURM_* variables are a task's (SLURM_PROCID, SLURM_LOCALID,
 * SLURM_NTASKS, SLURM_STEP_*, ...): they would contradict Horovod's
 * ranks for libraries that read them, and no worker gets them from
 * hvdrun's environment. */
bool hl_slurm_shared(const char *entry);
/* Append the allocation's facts from this process's environment to set,
 * as NAME=VALUE (none outside an allocation). */
int hl_slurm_export(struct hl_strvec *set);

#endif
