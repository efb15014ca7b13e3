/* bind.h: CPU binding of the workers, as mpirun's --bind-to core: each
 * local rank of a host gets an equal, contiguous share of the CPUs that
 * its launcher may use, so that the ranks of a host do not share cores
 * and the scheduler does not pile communicating ranks onto one core.
 * Nothing is bound when a host has more local ranks than CPUs (as Open
 * MPI, oversubscribed), unless HVD_BIND_TO=core:overload-allowed (as
 * mpirun's qualifier): then local rank r gets CPU r mod the CPUs, one
 * each in turn; nor with HVD_BIND_TO=none (hvdrun --bind-to none). */
#ifndef HL_BIND_H
#define HL_BIND_H

/* In the child between fork and exec: reads HVD_BIND_TO,
 * HOROVOD_LOCAL_RANK and HOROVOD_LOCAL_SIZE from the worker's environment
 * array and binds the calling process. Allocates nothing; errors leave the
 * process unbound. */
void hl_bind_worker(char *const *envp);

#endif
