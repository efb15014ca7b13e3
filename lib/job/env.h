/* env.h: builds each worker's environment: the launcher's own (for local
 * workers), then -x and [env] entries, then the tuning variables, then the
 * rank variables, each layer replacing what came before. */
#ifndef HL_ENV_H
#define HL_ENV_H

#include "config/opts.h"
#include "job/plan.h"

struct hl_envspec {
	struct hl_strvec set;	  /* "NAME=VALUE" applied to every worker */
	struct hl_strvec forward; /* names forwarded from the launcher */
	char *master_addr;
	int master_port;
	/* Per host of the list: the network interfaces its workers use
	 * ("eth0,eth2"; from --network-interface or the network check), or
	 * NULL. Exported as HVD_NETWORK_INTERFACES (libhvd's transport) and
	 * NCCL_SOCKET_IFNAME, unless -x or [env] sets the latter. */
	char **host_ifaces;
	size_t nhost_ifaces; /* hosts beyond (discovered later): none */
	/* An elastic job: each worker gets HVD_WORKER_ID, its rank at the
	 * start (proto/rendezvous.h). */
	bool elastic;
};

/* Collect the shared layers from the options. Names forwarded with -x but
 * unset in the launcher are appended to warnings. */
int hl_envspec_init(struct hl_envspec *es, const struct hl_opts *o,
		    struct hl_strvec *warnings, char **cause);
/* A setting of libhvd's in hvdrun's own environment (an export in the
 * user's shell) that every worker would inherit, unless -x, [env] or an
 * option sets it: checked as -x's value is, so that a bad one stops the
 * job before any worker starts (HL_EINVAL, naming it). */
int hl_envspec_check_inherited(const struct hl_envspec *es, char **cause);
/* A HOROVOD_ variable given (-x, [env]) or in base (hvdrun's environ)
 * that neither libhvd, hvdrun nor Horovod reads, but that is a typo away
 * from one they do (HOROVOD_FUSION_TRESHOLD): a warning naming both. */
int hl_env_typos(char *const *base, const struct hl_envspec *es,
		 struct hl_strvec *warnings);
/* The value of name that the workers of this machine get: the last one
 * -x, [env] or an option sets, else hvdrun's own (forwarded or inherited),
 * or NULL. */
const char *hl_envspec_value(const struct hl_envspec *es, const char *name);
void hl_envspec_close(struct hl_envspec *es);
/* Whether the user sets or forwards NAME (-x, [env]). */
bool hl_envspec_sets(const struct hl_envspec *es, const char *name);

/* Set NAME=VALUE in an envp vector, replacing an existing NAME. */
int hl_env_set(struct hl_strvec *env, const char *name, const char *value);
/* Where one worker starts: its place in a world of size workers (r.host
 * indexes the host list, whose entry is named host), and its id in an
 * elastic job. */
struct hl_place {
	struct hl_rank r;
	int size;
	const char *host;
	int worker_id;
	int hosts; /* hosts with a worker */
};

/* The place of rank in plan, over hosts. */
void hl_place_of(struct hl_place *p, const struct hl_plan *plan,
		 const struct hl_hostlist *hosts, int rank);
/* The rank variables of one worker, as "NAME=VALUE" entries. MASTER_ADDR
 * is es->master_addr, else the worker's own host. */
int hl_env_rank_vars(const struct hl_place *p, const struct hl_envspec *es,
		     struct hl_strvec *out);
/* What of base (hvdrun's environ) a worker on another host gets, as
 * horovodrun's do: every variable but those of hvdrun's own host or
 * login session (OLDPWD, PWD, HOSTNAME, CUDA_VISIBLE_DEVICES, SLURMD_*,
 * SSH_*, DISPLAY, XDG_RUNTIME_DIR, BASH_FUNC_*, ...) and a Slurm task's,
 * unless -x forwards one by name. Another host's own variables lie
 * beneath them (agent/agent.c, agent/node_records.c). */
int hl_env_exported(char *const *base, const struct hl_envspec *es,
		    struct hl_strvec *out);
/* A node's own environment for the workers an agent starts there under
 * srun (what the step's task got: srun hands on hvdrun's, and Slurm
 * adds the node's), but a Slurm task's variables (SLURM_PROCID, ...). */
int hl_env_node_base(char *const *base, struct hl_strvec *out);
/* Set entry ("NAME=VALUE") in env, replacing an existing NAME. */
int hl_env_put(struct hl_strvec *env, const char *entry);
/* The whole environment of a local worker: base (the launcher's environ),
 * then the shared layers, then the rank variables; and HL_ENV_UNBUFFERED
 * where neither base nor -x or [env] names its variable. */
int hl_env_build(char *const *base, const struct hl_envspec *es,
		 const struct hl_place *p, struct hl_strvec *out);
/* A worker's Python writes its output as it comes (python -u), not a
 * buffer-full at a time into hvdrun's pipe: a job's progress shows while
 * it runs. An empty PYTHONUNBUFFERED (-x PYTHONUNBUFFERED=) buffers. */
#define HL_ENV_UNBUFFERED_VAR "PYTHONUNBUFFERED"
#define HL_ENV_UNBUFFERED HL_ENV_UNBUFFERED_VAR "=1"
/* Whether a worker whose launcher's environment is env gets
 * HL_ENV_UNBUFFERED. */
bool hl_env_unbuffered(const struct hl_strvec *env,
		       const struct hl_envspec *es);

/* A TCP port that is free on this machine now. */
int hl_free_port(int *port, char **cause);
/* Rank 0 runs on this machine (host is its index in the host list):
 * MASTER_PORT free here, and MASTER_ADDR this machine's IPv4 address on
 * the interfaces chosen for that host, when some were (else the host's
 * name stays). */
int hl_master_local(struct hl_envspec *es, size_t host, char **cause);
/* MASTER_ADDR, instead of rank 0's host name. */
int hl_master_addr(struct hl_envspec *es, const char *addr, char **cause);

#endif
