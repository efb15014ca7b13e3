/* env.c: the worker environment contract (DESIGN.md): Horovod's rank
 * variables, torchrun's names for the same facts, and the tuning knobs. */
#include "job/env.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/ifaces.h"
#include "proto/worker_env.h"
#include "job/slurm.h"

int hl_envspec_init(struct hl_envspec *es, const struct hl_opts *o,
		    struct hl_strvec *warnings, char **cause)
{
	size_t i;
	int rc = HL_OK;

	hl_strvec_init(&es->set);
	hl_strvec_init(&es->forward);
	es->master_addr = NULL;
	es->master_port = 0;
	/* The allocation's facts first: -x and [env] (later) win. */
	rc = hl_slurm_export(&es->set);
	/* --tcp, as horovodrun's: NCCL keeps off InfiniBand too. */
	if (rc == HL_OK && o->v[HL_K_TCP].b)
		rc = hl_strvec_push(&es->set, "NCCL_IB_DISABLE=1");
	for (i = 0; i < o->nenv && rc == HL_OK; i++) {
		const struct hl_envitem *it = &o->env[i];

		if (it->value != NULL) {
			rc = hl_strvec_pushf(&es->set, "%s=%s", it->name,
					     it->value);
			continue;
		}
		rc = hl_strvec_push(&es->forward, it->name);
		if (rc == HL_OK && getenv(it->name) == NULL)
			rc = hl_strvec_pushf(
				warnings,
				"-x %s: not set in hvdrun's environment; not forwarded",
				it->name);
	}
	if (rc == HL_OK)
		rc = hl_opts_export(o, &es->set);
	if (rc != HL_OK) {
		hl_envspec_close(es);
		return hl_fail(cause, rc, "out of memory");
	}
	return HL_OK;
}

int hl_envspec_check_inherited(const struct hl_envspec *es, char **cause)
{
	char want[160];
	double d;
	size_t w;

	for (w = 0; w < WENV_COUNT; w++) {
		const char *name = wenv_vars[w].name;
		const char *text = getenv(name);

		if (wenv_vars[w].per_worker || text == NULL ||
		    text[0] == '\0' || hl_envspec_sets(es, name) ||
		    wenv_parse((enum wenv_id)w, text, &d))
			continue;
		wenv_describe((enum wenv_id)w, want, sizeof(want));
		return hl_fail(cause, HL_EINVAL,
			       "%s in the environment: bad value '%s' (want "
			       "%s)",
			       name, text, want);
	}
	return HL_OK;
}

/* Horovod's variables that libhvd does not read (Horovod's knobs for its
 * own engines, its GPU operations, its Gloo rendezvous), and the starts
 * of its build's and integrations' names: never taken for a typo. */
static const char *const horovod_only[] = {
	"HOROVOD_MPI_THREADS_DISABLE",
	"HOROVOD_CCL_CACHE",
	"HOROVOD_CCL_BGT_AFFINITY",
	"HOROVOD_GLOO_IFACE",
	"HOROVOD_GLOO_RENDEZVOUS_ADDR",
	"HOROVOD_GLOO_RENDEZVOUS_PORT",
	"HOROVOD_ADASUM_MPI_CHUNK_SIZE",
	"HOROVOD_DISABLE_GROUP_FUSION",
	"HOROVOD_DISABLE_NVTX_RANGES",
	"HOROVOD_ENABLE_ASYNC_COMPLETION",
	"HOROVOD_ENABLE_XLA_OPS",
	"HOROVOD_ELASTIC",
	"HOROVOD_SECRET_KEY",
	"HOROVOD_GPU_OPERATIONS",
	"HOROVOD_GPU_ALLREDUCE",
	"HOROVOD_GPU_ALLGATHER",
	"HOROVOD_GPU_BROADCAST",
	"HOROVOD_GPU_ALLTOALL",
	"HOROVOD_GPU_REDUCESCATTER",
};
static const char *const horovod_only_prefix[] = {
	"HOROVOD_WITH_", "HOROVOD_WITHOUT_", "HOROVOD_BUILD_", "HOROVOD_CUDA_",
	"HOROVOD_NCCL_", "HOROVOD_ROCM_",    "HOROVOD_CMAKE",  "HOROVOD_SPARK_",
	"HOROVOD_RAY_",	 "HOROVOD_CCL_",
};
/* What hvdrun itself reads of Horovod's (horovodrun's). */
static const char *const hvdrun_reads[] = {"HOROVOD_START_TIMEOUT",
					   "HOROVOD_ELASTIC_TIMEOUT"};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* The variable of libhvd's or hvdrun's that name (HOROVOD_...) looks
 * like a typo of, or NULL: one that neither reads, nor Horovod. */
static const char *typo_of(const char *name)
{
	struct hl_suggest sg;
	size_t i;

	if (strncmp(name, "HOROVOD_", 8) != 0 || wenv_find(name) >= 0)
		return NULL;
	for (i = 0; i < NELEM(hvdrun_reads); i++)
		if (strcmp(name, hvdrun_reads[i]) == 0)
			return NULL;
	for (i = 0; i < NELEM(horovod_only); i++)
		if (strcmp(name, horovod_only[i]) == 0)
			return NULL;
	for (i = 0; i < NELEM(horovod_only_prefix); i++)
		if (strncmp(name, horovod_only_prefix[i],
			    strlen(horovod_only_prefix[i])) == 0)
			return NULL;
	hl_suggest_init(&sg, name);
	for (i = 0; i < WENV_COUNT; i++)
		hl_suggest_try(&sg, wenv_vars[i].name);
	for (i = 0; i < NELEM(hvdrun_reads); i++)
		hl_suggest_try(&sg, hvdrun_reads[i]);
	return sg.best;
}

static int typos_in(char *const *v, size_t n, const char *where,
		    struct hl_strvec *warnings)
{
	size_t i;
	int rc = HL_OK;

	for (i = 0; rc == HL_OK && i < n; i++) {
		size_t len = strcspn(v[i], "=");
		char *name = hl_strndup(v[i], len);
		const char *near = name ? typo_of(name) : NULL;

		if (name == NULL)
			rc = HL_ENOMEM;
		else if (near != NULL)
			rc = hl_strvec_pushf(
				warnings,
				"%s %s is no variable of libhvd's or hvdrun's: "
				"did you mean %s?",
				where, name, near);
		free(name);
	}
	return rc;
}

int hl_env_typos(char *const *base, const struct hl_envspec *es,
		 struct hl_strvec *warnings)
{
	int rc = typos_in(es->set.v, es->set.n, "-x or [env]:", warnings);
	size_t n = 0;

	while (base[n] != NULL)
		n++;
	return rc == HL_OK
		       ? typos_in(base, n, "hvdrun's environment:", warnings)
		       : rc;
}

void hl_envspec_close(struct hl_envspec *es)
{
	hl_strvec_close(&es->set);
	hl_strvec_close(&es->forward);
	free(es->master_addr);
	es->master_addr = NULL;
}

/* Whether entry ("NAME=VALUE") is name's, name n bytes long. */
static bool named(const char *entry, const char *name, size_t n)
{
	return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

static int env_put(struct hl_strvec *env, char *entry)
{
	const char *eq;
	size_t i, n;

	if (entry == NULL)
		return HL_ENOMEM;
	eq = strchr(entry, '=');
	n = eq ? (size_t)(eq - entry) : strlen(entry);
	for (i = 0; i < env->n; i++) {
		if (named(env->v[i], entry, n)) {
			free(env->v[i]);
			env->v[i] = entry;
			return HL_OK;
		}
	}
	return hl_strvec_push_owned(env, entry);
}

int hl_env_set(struct hl_strvec *env, const char *name, const char *value)
{
	return env_put(env, hl_asprintf("%s=%s", name, value));
}

/* Whether -x or [env] sets or forwards name. */
bool hl_envspec_sets(const struct hl_envspec *es, const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < es->set.n; i++)
		if (named(es->set.v[i], name, n))
			return true;
	for (i = 0; i < es->forward.n; i++)
		if (!strcmp(es->forward.v[i], name))
			return true;
	return false;
}

const char *hl_envspec_value(const struct hl_envspec *es, const char *name)
{
	size_t i = es->set.n, n = strlen(name);

	while (i-- > 0)
		if (named(es->set.v[i], name, n))
			return es->set.v[i] + n + 1;
	return getenv(name);
}

void hl_place_of(struct hl_place *p, const struct hl_plan *plan,
		 const struct hl_hostlist *hosts, int rank)
{
	p->r = plan->ranks[rank];
	p->size = plan->size;
	p->host = hosts->v[p->r.host].name;
	p->worker_id = rank;
	p->hosts = (int)plan->nhosts_used;
}

int hl_env_rank_vars(const struct hl_place *p, const struct hl_envspec *es,
		     struct hl_strvec *out)
{
	const struct hl_rank *r = &p->r;
	const char *ifs = es->host_ifaces != NULL && r->host < es->nhost_ifaces
				  ? es->host_ifaces[r->host]
				  : NULL;
	int rc = HL_OK;

#define PUT(...)                                                               \
	do {                                                                   \
		if (rc == HL_OK)                                               \
			rc = env_put(out, hl_asprintf(__VA_ARGS__));           \
	} while (0)
#define PUT_INT(v, x) PUT("%s=%d", wenv_vars[v].name, (x))
#define PUT_STR(v, x) PUT("%s=%s", wenv_vars[v].name, (x))
	PUT_INT(WENV_RANK, r->rank);
	PUT_INT(WENV_SIZE, p->size);
	PUT_INT(WENV_LOCAL_RANK, r->local_rank);
	PUT_INT(WENV_LOCAL_SIZE, r->local_size);
	PUT_INT(WENV_CROSS_RANK, r->cross_rank);
	PUT_INT(WENV_CROSS_SIZE, r->cross_size);
	PUT_STR(WENV_HOSTNAME, p->host);
	PUT_INT(WENV_TORCH_RANK, r->rank);
	PUT_INT(WENV_TORCH_WORLD_SIZE, p->size);
	PUT_INT(WENV_TORCH_LOCAL_RANK, r->local_rank);
	PUT_INT(WENV_TORCH_LOCAL_WORLD_SIZE, r->local_size);
	PUT_STR(WENV_TORCH_MASTER_ADDR,
		es->master_addr ? es->master_addr : p->host);
	PUT_INT(WENV_TORCH_MASTER_PORT, es->master_port);
	PUT_INT(WENV_TORCH_GROUP_RANK, r->host_rank);
	PUT_INT(WENV_TORCH_GROUP_WORLD_SIZE, p->hosts);
	PUT_INT(WENV_TORCH_ROLE_RANK, r->rank);
	PUT_INT(WENV_TORCH_ROLE_WORLD_SIZE, p->size);
	if (es->elastic)
		PUT_INT(WENV_WORKER_ID, p->worker_id);
	if (ifs != NULL) {
		PUT_STR(WENV_NETWORK_INTERFACES, ifs);
		/* NCCL's and torch's gloo: the same interfaces. */
		if (!hl_envspec_sets(es, "NCCL_SOCKET_IFNAME"))
			PUT("NCCL_SOCKET_IFNAME=%s", ifs);
		if (!hl_envspec_sets(es, "GLOO_SOCKET_IFNAME"))
			PUT("GLOO_SOCKET_IFNAME=%s", ifs);
	}
#undef PUT_STR
#undef PUT_INT
#undef PUT
	return rc;
}

/* Whether -x forwards entry's variable by name. */
static bool forwarded(const char *entry, const struct hl_envspec *es)
{
	size_t i, n = strcspn(entry, "=");

	for (i = 0; i < es->forward.n; i++)
		if (strlen(es->forward.v[i]) == n &&
		    strncmp(entry, es->forward.v[i], n) == 0)
			return true;
	return false;
}

/* A Slurm task's variable (SLURM_PROCID, ...; not one of the
 * allocation's, hl_slurm_shared). */
static bool slurm_task(const char *entry)
{
	return strncmp(entry, "SLURM_", 6) == 0 && !hl_slurm_shared(entry);
}

/* A Slurm task's variable in the launcher's environment, which no worker
 * inherits unless -x forwards it by name. */
static bool task_level(const char *entry, const struct hl_envspec *es)
{
	return slurm_task(entry) && !forwarded(entry, es);
}

/* A variable of hvdrun's own host or login session, which no worker on
 * another host gets from it: horovodrun's BASH_FUNC_* and OLDPWD, and
 * the like (the host's name, the working directory's path, which of its
 * GPUs to use, Slurm's node daemon's, the SSH session's, the
 * desktop's). */
static bool host_bound(const char *entry)
{
	static const char *const names[] = {"OLDPWD",
					    "PWD",
					    "HOSTNAME",
					    "CUDA_VISIBLE_DEVICES",
					    "GPU_DEVICE_ORDINAL",
					    "ROCR_VISIBLE_DEVICES",
					    "HIP_VISIBLE_DEVICES",
					    "SHLVL",
					    "_",
					    "DISPLAY",
					    "XAUTHORITY",
					    "XDG_RUNTIME_DIR",
					    "XDG_SEAT",
					    "XDG_VTNR",
					    "DBUS_SESSION_BUS_ADDRESS",
					    "TMUX",
					    "TMUX_PANE",
					    "STY",
					    "WINDOW",
					    "MAIL"};
	static const char *const prefixes[] = {"BASH_FUNC_", "SSH_",
					       "XDG_SESSION_", "SLURMD_"};
	size_t i, n = strcspn(entry, "=");

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == n && strncmp(entry, names[i], n) == 0)
			return true;
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(entry, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

/* The entries of base ("NAME=VALUE") that keep takes, onto out. */
static int kept(char *const *base, const struct hl_envspec *es,
		bool (*keep)(const char *entry, const struct hl_envspec *es),
		struct hl_strvec *out)
{
	size_t i;
	int rc = HL_OK;

	hl_strvec_init(out);
	for (i = 0; base != NULL && base[i] != NULL && rc == HL_OK; i++)
		if (strchr(base[i], '=') != NULL && keep(base[i], es))
			rc = hl_strvec_push(out, base[i]);
	if (rc != HL_OK)
		hl_strvec_close(out);
	return rc;
}

static bool exported(const char *entry, const struct hl_envspec *es)
{
	return (!host_bound(entry) && !task_level(entry, es)) ||
	       forwarded(entry, es);
}

static bool on_node(const char *entry, const struct hl_envspec *es)
{
	(void)es;
	return !slurm_task(entry);
}

int hl_env_exported(char *const *base, const struct hl_envspec *es,
		    struct hl_strvec *out)
{
	return kept(base, es, exported, out);
}

int hl_env_node_base(char *const *base, struct hl_strvec *out)
{
	return kept(base, NULL, on_node, out);
}

int hl_env_put(struct hl_strvec *env, const char *entry)
{
	return env_put(env, hl_strdup(entry));
}

int hl_env_build(char *const *base, const struct hl_envspec *es,
		 const struct hl_place *p, struct hl_strvec *out)
{
	size_t i;
	int rc = HL_OK;

	hl_strvec_init(out);
	for (i = 0; base != NULL && base[i] != NULL && rc == HL_OK; i++)
		if (strchr(base[i], '=') != NULL && !task_level(base[i], es))
			rc = env_put(out, hl_strdup(base[i]));
	for (i = 0; i < es->set.n && rc == HL_OK; i++)
		rc = env_put(out, hl_strdup(es->set.v[i]));
	if (rc == HL_OK && hl_env_unbuffered(out, es))
		rc = env_put(out, hl_strdup(HL_ENV_UNBUFFERED));
	if (rc == HL_OK)
		rc = hl_env_rank_vars(p, es, out);
	if (rc != HL_OK)
		hl_strvec_close(out);
	return rc;
}

bool hl_env_unbuffered(const struct hl_strvec *env, const struct hl_envspec *es)
{
	return hl_strvec_value(env, HL_ENV_UNBUFFERED_VAR) == NULL &&
	       !hl_envspec_sets(es, HL_ENV_UNBUFFERED_VAR);
}

int hl_free_port(int *port, char **cause)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd, rc = HL_OK;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hl_fail(cause, HL_ESYS, "socket: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
		rc = hl_fail(cause, HL_ESYS, "cannot find a free port: %s",
			     strerror(errno));
	else
		*port = ntohs(sa.sin_port);
	close(fd);
	return rc;
}

int hl_master_local(struct hl_envspec *es, size_t host, char **cause)
{
	char addr[INET_ADDRSTRLEN];
	int rc = hl_free_port(&es->master_port, cause);

	if (rc == HL_OK && es->host_ifaces != NULL && host < es->nhost_ifaces &&
	    es->host_ifaces[host] != NULL &&
	    ifaces_ipv4(es->host_ifaces[host], addr, sizeof(addr)) == HL_OK)
		rc = hl_master_addr(es, addr, cause);
	return rc;
}

int hl_master_addr(struct hl_envspec *es, const char *addr, char **cause)
{
	char *a = hl_strdup(addr);

	if (a == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	free(es->master_addr);
	es->master_addr = a;
	return HL_OK;
}
