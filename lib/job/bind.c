/* bind.c: see bind.h. */
#include "job/bind.h"

#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "proto/worker_env.h"
#include "util/util.h"

static const char *env_get(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp != NULL && *envp != NULL; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/* A decimal number, or HL_EINVAL. */
static long number(const char *s)
{
	long v = 0;

	if (s == NULL || *s == '\0')
		return HL_EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > 1L << 30)
			return HL_EINVAL;
		v = v * 10 + (*s - '0');
	}
	return v;
}

/* HVD_BIND_TO, as hvdrun's choices spell it in any case; unset or none
 * of them: the default, core. *said: its name, as the choices spell it. */
static enum hl_bind_mode mode_of(char *const *envp, const char **said)
{
	const struct wenv_var *w = &wenv_vars[WENV_BIND_TO];
	double i;

	if (!wenv_parse(WENV_BIND_TO, env_get(envp, w->name), &i))
		i = w->def;
	*said = w->choices[(size_t)i];
	return (enum hl_bind_mode)i;
}

/* Whether c[a] comes before c[b] under mode m: by package and core, or by
 * package, or by NUMA node; then by number. */
static bool before(const struct hl_cpu *c, int a, int b, enum hl_bind_mode m)
{
	int ka = m == HL_BIND_NUMA ? c[a].node : c[a].pkg;
	int kb = m == HL_BIND_NUMA ? c[b].node : c[b].pkg;

	if (ka != kb)
		return ka < kb;
	if ((m == HL_BIND_CORE || m == HL_BIND_OVERLOAD) &&
	    c[a].core != c[b].core)
		return c[a].core < c[b].core;
	return c[a].cpu < c[b].cpu;
}

/* Whether c[a] and c[b] are in one unit of mode m: one core, or one
 * package, or one NUMA node. */
static bool together(const struct hl_cpu *c, int a, int b, enum hl_bind_mode m)
{
	if (m == HL_BIND_NUMA)
		return c[a].node == c[b].node;
	return c[a].pkg == c[b].pkg &&
	       (m == HL_BIND_SOCKET || c[a].core == c[b].core);
}

bool hl_bind_share(const struct hl_cpu *c, int n, long lr, long ls,
		   enum hl_bind_mode m, cpu_set_t *mine)
{
	int order[CPU_SETSIZE], unit[CPU_SETSIZE], i, j, units = 0;
	long lo, hi;

	CPU_ZERO(mine);
	if (m == HL_BIND_NONE || n <= 0 || n > CPU_SETSIZE || lr < 0 ||
	    ls <= 0 || lr >= ls || (ls > n && m == HL_BIND_CORE))
		return false;
	if (ls > n && m == HL_BIND_OVERLOAD) {
		/* local rank r on CPU r mod n, as mpirun's map by core */
		CPU_SET(c[lr % n].cpu, mine);
		return true;
	}
	for (i = 0; i < n; i++) {
		for (j = i; j > 0 && before(c, i, order[j - 1], m); j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (i = 0; i < n; i++) {
		if (i > 0 && !together(c, order[i], order[i - 1], m))
			units++;
		unit[i] = units;
	}
	units++;
	if (m == HL_BIND_SOCKET || m == HL_BIND_NUMA) {
		lo = lr * units / ls; /* one unit, consecutive ranks in it */
		hi = lo + 1;
	} else if (ls > units) { /* a share of the hardware threads */
		for (i = (int)(lr * (n / ls)); i < (int)((lr + 1) * (n / ls));
		     i++)
			CPU_SET(c[order[i]].cpu, mine);
		return true;
	} else { /* whole cores, an equal share */
		lo = lr * (units / ls);
		hi = lo + units / ls;
	}
	for (i = 0; i < n; i++)
		if (unit[i] >= lo && unit[i] < hi)
			CPU_SET(c[order[i]].cpu, mine);
	return true;
}

/* Append set's CPUs as a list, "0-23,48-71", to p (room for end - p
 * bytes); the end. */
static char *put_cpus(char *p, const char *end, const cpu_set_t *set)
{
	int i, lo = -1;
	bool first = true;

	for (i = 0; i <= CPU_SETSIZE && end - p > 32; i++) {
		bool in = i < CPU_SETSIZE && CPU_ISSET(i, set);

		if (in && lo < 0)
			lo = i;
		if (in || lo < 0)
			continue;
		if (!first)
			*p++ = ',';
		first = false;
		p = hl_put_number(p, lo);
		if (i - 1 > lo) {
			*p++ = '-';
			p = hl_put_number(p, i - 1);
		}
		lo = -1;
	}
	if (i <= CPU_SETSIZE)
		p = hl_put_text(p, ",...");
	return p;
}

/* --report-bindings: one line on standard error, "hvdrun: rank 3 on node1
 * (local rank 1 of 2): bound to CPUs 24-47,72-95 (core)", or "not bound,
 * CPUs ... (why)". write() alone: this runs between fork and exec. */
static void report(char *const *envp, const char *mode, const char *why)
{
	const char *host = env_get(envp, "HOROVOD_HOSTNAME");
	const char *rank = env_get(envp, "HOROVOD_RANK");
	const char *lr = env_get(envp, "HOROVOD_LOCAL_RANK");
	const char *ls = env_get(envp, "HOROVOD_LOCAL_SIZE");
	char line[8192], *p = line, *end = line + sizeof(line);
	cpu_set_t now;

	if (sched_getaffinity(0, sizeof(now), &now) != 0)
		CPU_ZERO(&now);
	if (host == NULL || strlen(host) > 256)
		host = "?";
	p = hl_put_text(p, "hvdrun: rank ");
	p = hl_put_text(p, rank != NULL && strlen(rank) < 16 ? rank : "?");
	p = hl_put_text(hl_put_text(p, " on "), host);
	p = hl_put_text(p, " (local rank ");
	p = hl_put_text(p, lr != NULL && strlen(lr) < 16 ? lr : "?");
	p = hl_put_text(p, " of ");
	p = hl_put_text(p, ls != NULL && strlen(ls) < 16 ? ls : "?");
	p = hl_put_text(p, why == NULL ? "): bound to CPUs "
				       : "): not bound, CPUs ");
	p = put_cpus(p, end - 64, &now);
	p = hl_put_text(hl_put_text(p, " ("), why == NULL ? mode : why);
	p = hl_put_text(p, ")\n");
	if (write(2, line, (size_t)(p - line)) < 0)
		return; /* nowhere to say it */
}

/* The index among the host's GPUs of visible GPU v: CUDA_VISIBLE_DEVICES'
 * v-th number where it is set; -1 where it names GPUs otherwise (UUIDs,
 * MIG) or has fewer. */
static long physical_gpu(const char *visible, long v)
{
	long i = 0, x = 0;
	bool digits = false;

	if (visible == NULL)
		return v;
	for (;; visible++) {
		if (*visible >= '0' && *visible <= '9' && x < 1 << 20) {
			x = x * 10 + (*visible - '0');
			digits = true;
		} else if ((*visible == ',' || *visible == '\0') && digits) {
			if (i++ == v)
				return x;
			if (*visible == '\0')
				return -1;
			x = 0;
			digits = false;
		} else {
			return -1;
		}
	}
}

/* --bind-to gpu: local rank lr's GPU's CPUs, where this process may run,
 * into *mine; NULL, or why not. */
static const char *near_gpu(char *const *envp, long lr, cpu_set_t *mine)
{
	const char *root = env_get(envp, "HVD_SYSFS_ROOT");
	char addr[64][HL_PCI_ADDR];
	int n = hl_gpus_pci(root, addr, 64);
	long g = physical_gpu(env_get(envp, "CUDA_VISIBLE_DEVICES"), lr);
	cpu_set_t near, allowed;

	if (n == 0)
		return "no NVIDIA GPU";
	if (g < 0 || g >= n)
		return "no GPU of its own known";
	if (!hl_gpu_cpus(root, addr[g], &near))
		return "its GPU's CPUs unknown";
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return "its CPUs unknown";
	CPU_AND(mine, &near, &allowed);
	return CPU_COUNT(mine) > 0 ? NULL : "its GPU's CPUs are not its own";
}

void hl_bind_worker(char *const *envp)
{
	const char *said;
	enum hl_bind_mode m = mode_of(envp, &said);
	long lr = number(env_get(envp, "HOROVOD_LOCAL_RANK"));
	long ls = number(env_get(envp, "HOROVOD_LOCAL_SIZE"));
	struct hl_cpu c[CPU_SETSIZE];
	cpu_set_t mine;
	const char *why = NULL;
	bool cores = m == HL_BIND_CORE || m == HL_BIND_OVERLOAD;
	double told;
	int n;

	if (m == HL_BIND_NONE)
		why = "--bind-to none";
	else if (lr < 0 || ls <= 0 || lr >= ls)
		why = "no local rank";
	else if (m == HL_BIND_GPU)
		why = near_gpu(envp, lr, &mine);
	else if ((n = hl_cpus_allowed(c)) < 0)
		why = "its CPUs unknown";
	else {
		/* Not read where nothing is shared out by it. */
		if (ls <= n || !cores)
			hl_topology_read(env_get(envp, "HVD_SYSFS_ROOT"), c, n,
					 cores, m == HL_BIND_NUMA);
		if (!hl_bind_share(c, n, lr, ls, m, &mine))
			why = "more local ranks than CPUs";
	}
	if (why == NULL && sched_setaffinity(0, sizeof(mine), &mine) != 0)
		why = "the kernel refused";
	if (wenv_parse(WENV_REPORT_BINDINGS,
		       env_get(envp, wenv_vars[WENV_REPORT_BINDINGS].name),
		       &told) &&
	    told == 1)
		report(envp, said, why);
}
