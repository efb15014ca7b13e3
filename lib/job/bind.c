/* bind.c: see bind.h. */
#include "job/bind.h"

#include <fcntl.h>
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

/* HVD_BIND_TO as hvdrun's choices spell it (hvdrun exports it as typed,
 * in any case); unset or none of them: the default, core. */
static const char *policy_of(char *const *envp)
{
	const struct wenv_var *w = &wenv_vars[WENV_BIND_TO];
	double i;

	if (!wenv_parse(WENV_BIND_TO, env_get(envp, w->name), &i))
		i = w->def;
	return w->choices[(size_t)i];
}

/* Append the decimal v to p; the end. */
static char *put_number(char *p, long v)
{
	char digits[24];
	int n = 0;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	while (n > 0)
		*p++ = digits[--n];
	return p;
}

/* The first number in sysfs file ROOT/devices/system/cpu/cpuN/topology/
 * leaf (a list's first, "0,48" or "0-1": 0), or -1. No allocation: this
 * runs between fork and exec. */
static long topology_number(const char *root, int cpu, const char *leaf)
{
	static const char mid[] = "/devices/system/cpu/cpu";
	char path[512], buf[64], *p = path;
	size_t rl = strlen(root), ll = strlen(leaf);
	ssize_t got;
	long v = 0;
	int fd, i;

	if (rl + sizeof(mid) + 24 + sizeof("/topology/") + ll >= sizeof(path))
		return -1;
	memcpy(p, root, rl);
	p += rl;
	memcpy(p, mid, sizeof(mid) - 1);
	p = put_number(p + sizeof(mid) - 1, cpu);
	memcpy(p, "/topology/", 10);
	memcpy(p + 10, leaf, ll + 1);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (got <= 0 || buf[0] < '0' || buf[0] > '9')
		return -1;
	for (i = 0; i < got && buf[i] >= '0' && buf[i] <= '9'; i++)
		if ((v = v * 10 + (buf[i] - '0')) > 1L << 30)
			return -1;
	return v;
}

/* Whether CPU a of the pair comes before b: package, core, CPU. */
static bool before(const int *pkg, const int *core, const int *cpus, int a,
		   int b)
{
	if (pkg[a] != pkg[b])
		return pkg[a] < pkg[b];
	if (core[a] != core[b])
		return core[a] < core[b];
	return cpus[a] < cpus[b];
}

bool hl_bind_share(int n, const int *cpus, const int *pkg, const int *core,
		   long lr, long ls, bool overload, cpu_set_t *mine)
{
	int order[CPU_SETSIZE], i, j, x, cores = 0, per, at;

	CPU_ZERO(mine);
	if (n <= 0 || n > CPU_SETSIZE || lr < 0 || ls <= 0 || lr >= ls ||
	    (ls > n && !overload))
		return false;
	if (ls > n) { /* local rank r on CPU r mod n, as mpirun's map by core */
		CPU_SET(cpus[lr % n], mine);
		return true;
	}
	for (i = 0; i < n; i++) { /* by package, core, CPU */
		x = i;
		for (j = i; j > 0 && before(pkg, core, cpus, x, order[j - 1]);
		     j--)
			order[j] = order[j - 1];
		order[j] = x;
	}
	for (i = 0; i < n; i++)
		if (i == 0 || pkg[order[i]] != pkg[order[i - 1]] ||
		    core[order[i]] != core[order[i - 1]])
			cores++;
	if (ls > cores) { /* a share of the hardware threads */
		per = n / (int)ls;
		for (i = (int)lr * per; i < ((int)lr + 1) * per; i++)
			CPU_SET(cpus[order[i]], mine);
		return true;
	}
	per = cores / (int)ls; /* whole cores: [lr * per, (lr + 1) * per) */
	for (i = 0, at = -1; i < n; i++) {
		if (i == 0 || pkg[order[i]] != pkg[order[i - 1]] ||
		    core[order[i]] != core[order[i - 1]])
			at++;
		if (at >= (int)lr * per && at < ((int)lr + 1) * per)
			CPU_SET(cpus[order[i]], mine);
	}
	return true;
}

void hl_bind_worker(char *const *envp)
{
	const char *policy = policy_of(envp);
	const char *root = env_get(envp, "HVD_SYSFS_ROOT");
	bool overload = strcmp(policy, "core:overload-allowed") == 0;
	long lr = number(env_get(envp, "HOROVOD_LOCAL_RANK"));
	long ls = number(env_get(envp, "HOROVOD_LOCAL_SIZE"));
	int cpus[CPU_SETSIZE], pkg[CPU_SETSIZE], core[CPU_SETSIZE], n = 0, i;
	long v;
	cpu_set_t allowed, mine;

	if (strcmp(policy, "none") == 0 || lr < 0 || ls <= 0 || lr >= ls)
		return;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return;
	if (root == NULL || root[0] == '\0')
		root = "/sys";
	for (i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &allowed))
			cpus[n++] = i;
	/* Only where ranks are shared out: not past overloading. */
	for (i = 0; i < n && ls <= n; i++) {
		v = topology_number(root, cpus[i], "physical_package_id");
		pkg[i] = v >= 0 ? (int)v : 0;
		v = topology_number(root, cpus[i], "thread_siblings_list");
		core[i] = v >= 0 ? (int)v : cpus[i];
	}
	if (hl_bind_share(n, cpus, pkg, core, lr, ls, overload, &mine))
		sched_setaffinity(0, sizeof(mine), &mine);
}
