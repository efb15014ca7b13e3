/* bind.c: see bind.h. */
#include "job/bind.h"

#include <sched.h>
#include <string.h>

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

void hl_bind_worker(char *const *envp)
{
	const char *policy = policy_of(envp);
	bool overload = strcmp(policy, "core:overload-allowed") == 0;
	long lr = number(env_get(envp, "HOROVOD_LOCAL_RANK"));
	long ls = number(env_get(envp, "HOROVOD_LOCAL_SIZE"));
	int cpus[CPU_SETSIZE], n = 0, i, per;
	cpu_set_t allowed, mine;

	if (strcmp(policy, "none") == 0 || lr < 0 || ls <= 0 || lr >= ls)
		return;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return;
	for (i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &allowed))
			cpus[n++] = i;
	if (n == 0 || (ls > n && !overload))
		return;
	CPU_ZERO(&mine);
	if (ls > n) { /* local rank r on CPU r mod n, as mpirun's map by core */
		CPU_SET(cpus[lr % n], &mine);
	} else {
		per = n / (int)ls;
		for (i = (int)lr * per; i < ((int)lr + 1) * per; i++)
			CPU_SET(cpus[i], &mine);
	}
	sched_setaffinity(0, sizeof(mine), &mine);
}
