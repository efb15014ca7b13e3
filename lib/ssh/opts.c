/* ssh/opts.c: see ssh/opts.h. */
#include "ssh/opts.h"

#include <errno.h>
#include <libssh/libssh.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/proc.h"

/* "~/x" is "$HOME/x", as ssh -F takes it. */
static char *expand_home(const char *path)
{
	const char *home = getenv("HOME");

	if (path[0] == '~' && path[1] == '/' && home != NULL)
		return hl_asprintf("%s%s", home, path + 1);
	return hl_strdup(path);
}

/* A file the SSH options name (the config, the identity), readable, or
 * one line naming it: a typo is bad usage before anything starts, where
 * libssh would go on without it (the default keys tried instead). A
 * path with libssh's own escapes (%d) is left to libssh. */
static int readable(const char *what, const char *opt, const char *path,
		    char **cause)
{
	char *full;
	FILE *f;

	if (strchr(path, '%') != NULL)
		return HL_OK;
	full = expand_home(path);
	if (full == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	f = hl_fopen_text(full);
	free(full);
	if (f == NULL)
		return hl_fail(cause, HL_EINVAL, "cannot read %s '%s' (%s): %s",
			       what, path, opt, strerror(errno));
	fclose(f);
	return HL_OK;
}

int hl_ssh_opts_from(struct hl_ssh_opts *so, const struct hl_opts *o,
		     char **cause)
{
	const struct hl_value *v = o->v;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	memset(so, 0, sizeof(*so));
	if (v[HL_K_SSH_CONFIG].set &&
	    readable("the SSH config file", "--ssh-config, [ssh] config_file",
		     v[HL_K_SSH_CONFIG].s, cause) != HL_OK)
		return HL_EINVAL;
	if (v[HL_K_SSH_IDENTITY].set &&
	    readable("the SSH identity file", "-i, [ssh] identity_file",
		     v[HL_K_SSH_IDENTITY].s, cause) != HL_OK)
		return HL_EINVAL;
	if (n < 0)
		return hl_fail(cause, HL_ESYS, "cannot find hvdrun's own path");
	self[n] = '\0';
	so->agent_path = hl_strdup(self);
	so->cwd = getcwd(NULL, 0);
	/* --wdir: relative to this folder, ~ to this machine's home. */
	so->wdir = v[HL_K_WDIR].set;
	if (so->wdir && so->cwd != NULL) {
		char *home = expand_home(v[HL_K_WDIR].s), *here = so->cwd;
		size_t end;

		so->cwd = home ? hl_path_from(here, home) : NULL;
		free(home);
		free(here);
		for (end = so->cwd ? strlen(so->cwd) : 0;
		     end > 1 && so->cwd[end - 1] == '/'; end--)
			so->cwd[end - 1] = '\0';
	}
	if (so->cwd == NULL) {
		hl_ssh_opts_close(so);
		return hl_fail(cause, HL_ESYS,
			       "cannot find the current folder");
	}
	if (v[HL_K_SSH_CONFIG].set)
		so->config_file = expand_home(v[HL_K_SSH_CONFIG].s);
	if (so->agent_path == NULL ||
	    (v[HL_K_SSH_CONFIG].set && so->config_file == NULL)) {
		hl_ssh_opts_close(so);
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	}
	so->identity = v[HL_K_SSH_IDENTITY].set ? v[HL_K_SSH_IDENTITY].s : NULL;
	so->user = v[HL_K_SSH_USER].set ? v[HL_K_SSH_USER].s : NULL;
	so->port = v[HL_K_SSH_PORT].set ? (int)v[HL_K_SSH_PORT].i : 0;
	so->host_key_checking =
		(enum hl_host_key_policy)v[HL_K_SSH_HOST_KEY_CHECKING].i;
	so->start_timeout_s = (int)v[HL_K_START_TIMEOUT].i;
	/* Connecting is part of starting: never longer than the start. */
	so->connect_timeout_s = so->start_timeout_s;
	if (v[HL_K_SSH_CONNECT_TIMEOUT].set &&
	    v[HL_K_SSH_CONNECT_TIMEOUT].i < so->start_timeout_s)
		so->connect_timeout_s = v[HL_K_SSH_CONNECT_TIMEOUT].i;
	so->concurrency = (int)v[HL_K_SSH_CONCURRENCY].i;
	so->channels_per_session = (int)v[HL_K_SSH_CHANNELS].i;
	so->force = v[HL_K_SSH_FORCE].b;
	so->launcher = (enum hl_launcher)v[HL_K_LAUNCHER].i;
	so->log_level = hl_ssh_log_level(o);
	return HL_OK;
}

int hl_ssh_log_level(const struct hl_opts *o)
{
	/* --log-level's choices: trace, debug, info, warning, ... */
	long level = o->v[HL_K_LOG_LEVEL].i;

	if (level == 0)
		return SSH_LOG_TRACE;
	if (level == 1)
		return SSH_LOG_DEBUG;
	return o->v[HL_K_VERBOSE].b ? SSH_LOG_INFO : SSH_LOG_NONE;
}

int hl_ssh_opts_launcher(struct hl_ssh_opts *so, bool slurm, char **cause)
{
	char *path = NULL, *why = NULL;
	bool found;

	so->srun = false;
	if (so->launcher == HL_LAUNCH_SSH)
		return HL_OK;
	found = hl_resolve_command("srun", getenv("PATH"), &path, &why) ==
		HL_OK;
	free(path);
	free(why);
	if (so->launcher == HL_LAUNCH_AUTO) {
		so->srun = slurm && found;
		return HL_OK;
	}
	if (getenv("SLURM_JOB_ID") == NULL)
		return hl_fail(cause, HL_EINVAL,
			       "--launcher srun: not inside a Slurm allocation "
			       "(SLURM_JOB_ID is not set); run hvdrun under "
			       "salloc or sbatch, or use --launcher ssh");
	if (!found)
		return hl_fail(cause, HL_ENOENT,
			       "--launcher srun: srun is not on the PATH (add "
			       "Slurm's client to the PATH, or use --launcher "
			       "ssh)");
	so->srun = true;
	return HL_OK;
}

void hl_ssh_opts_close(struct hl_ssh_opts *so)
{
	free(so->config_file);
	free(so->agent_path);
	free(so->cwd);
	memset(so, 0, sizeof(*so));
}
