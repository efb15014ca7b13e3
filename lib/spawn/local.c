/* spawn/local.c: starts a worker on this machine with fork and execve, in
 * a process group of its own, with its output on two pipes. An exec
 * failure is reported back through a close-on-exec pipe, so the launcher
 * knows at once whether the worker really started. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "job/bind.h"
#include "launch/launch.h"
#include "util/family.h"
#include "util/proc.h"
#include "spawn/spawn.h"

/* In the child, between fork and exec: only async-signal-safe calls. */
static void child(const struct hl_launch *l, int in, int out_w, int err_w,
		  int errp, pid_t parent, char **envp)
{
	sigset_t none;

	setpgid(0, 0);
	/* If hvdrun dies, the worker hears of it at once; the watchdog then
	 * ends the worker's whole group. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(127);
	if (in < 0)
		in = open("/dev/null", O_RDONLY);
	if (in < 0 || (in != 0 && dup2(in, 0) < 0) || dup2(out_w, 1) < 0 ||
	    dup2(err_w, 2) < 0)
		goto fail;
	/* The worker gets stdin, stdout and stderr, none of hvdrun's
	 * other descriptors (its caller's pipes, sockets, the watchdog);
	 * the exec-error pipe moves to 3 and closes on exec. */
	if (errp != 3) {
		if (dup3(errp, 3, O_CLOEXEC) < 0)
			goto fail;
		errp = 3;
	}
	close_range(4, ~0U, 0);
	/* The caller's own limit on open files, now that the worker holds
	 * four: before, this child could hold more than it allows, and the
	 * exec's own open of the program would fail. */
	hl_nofile_restore();
	signal(SIGPIPE, SIG_DFL);
	signal(SIGTTIN, SIG_DFL); /* hvdrun's, while it reads a terminal */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	hl_bind_worker(envp);
	if (l->ssh->wdir && chdir(l->ssh->cwd) != 0)
		hl_chdir_failed(errp);
	execve(l->exec_path != NULL ? l->exec_path : l->argv[0], l->argv, envp);
fail:
	hl_exec_failed(errp);
}

static int start_one(const struct hl_launch *l, struct hl_worker *w,
		     char **cause)
{
	struct hl_strvec envp;
	int out[2] = {-1, -1}, err[2] = {-1, -1}, ep[2] = {-1, -1};
	int rc, e = 0, n;
	pid_t pid, self = getpid();

	rc = hl_env_build(environ, l->env, &w->place, &envp);
	if (rc == HL_OK && l->ssh->wdir) /* as a remote worker's */
		rc = hl_env_set(&envp, "PWD", l->ssh->cwd);
	if (rc != HL_OK)
		return hl_fail(cause, rc, "out of memory");
	if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
	    pipe2(ep, O_CLOEXEC) != 0) {
		rc = hl_fail(cause, HL_ESYS, "pipe: %s", strerror(errno));
		goto out_close;
	}
	pid = fork();
	if (pid < 0) {
		e = errno;
		rc = hl_fail(cause, HL_ESYS, "fork: %s%s", strerror(e),
			     e == EAGAIN ? " (a limit on processes: raise "
					   "ulimit -u, or start fewer workers)"
					 : "");
		goto out_close;
	}
	if (pid == 0)
		child(l, w->in_fd, out[1], err[1], ep[1], self, envp.v);
	setpgid(pid, pid); /* also here: no race with a signal to the group */
	w->pid = pid;
	/* Its standard input is its own now: a start again reads
	 * /dev/null. */
	if (w->in_fd > 0)
		close(w->in_fd);
	w->in_fd = -1;
	close(ep[1]);
	ep[1] = -1;
	e = hl_exec_result(ep[0]);
	if (e != 0) {
		/* It never ran: no worker to watch or count (an elastic
		 * host's start says why, not a worker's exit code). */
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		w->pid = 0;
	}
	if (e < 0) { /* as a remote worker's (agent.c) */
		rc = hl_fail(cause, HL_ESYS,
			     "cannot use the working directory '%s': %s",
			     l->ssh->cwd, strerror(-e));
		goto out_close;
	}
	if (e != 0) {
		rc = hl_fail(cause, e == ENOENT ? HL_ENOENT : HL_ENOEXEC,
			     "cannot execute '%s': %s", l->argv[0],
			     strerror(e));
		goto out_close;
	}
	w->fd[0] = out[0];
	w->fd[1] = err[0];
	out[0] = err[0] = -1;
	fcntl(w->fd[0], F_SETFL, O_NONBLOCK);
	fcntl(w->fd[1], F_SETFL, O_NONBLOCK);
out_close:
	for (n = 0; n < 2; n++) {
		if (out[n] >= 0)
			close(out[n]);
		if (err[n] >= 0)
			close(err[n]);
		if (ep[n] >= 0)
			close(ep[n]);
	}
	hl_strvec_close(&envp);
	return rc;
}

struct local_ctx {
	const struct hl_launch *l;
	struct hl_worker *w;
};

static int local_open(void **ctx, const struct hl_launch *l,
		      struct hl_worker *w, int n, int notify_fd, char **cause)
{
	struct local_ctx *c = malloc(sizeof(*c));

	(void)n;
	(void)notify_fd;
	*ctx = c;
	if (c == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	c->l = l;
	c->w = w;
	return HL_OK;
}

/* Workers w, each announced (the caller's --verbose line), then
 * started. */
static int local_restart(void *ctx, struct hl_worker *const *w, int n,
			 char **cause)
{
	struct local_ctx *c = ctx;
	int i, rc = HL_OK;

	for (i = 0; i < n && rc == HL_OK; i++) {
		struct hl_event ev = {HL_EV_STARTING, w[i]->rank,
				      w[i]->place.host, NULL, 0};

		hl_spawn_event(c->l, &ev);
		rc = start_one(c->l, w[i], cause);
	}
	return rc;
}

/* A worker that cannot start (fork or a pipe refused: a limit on
 * processes or memory) is named; those started before it are ended with
 * the job. */
static int local_start(void *ctx, char **cause)
{
	struct local_ctx *c = ctx;
	char *why = NULL;
	int r, rc = HL_OK;

	for (r = 0; r < c->l->plan->size; r++) {
		struct hl_worker *w = &c->w[r];

		if (w->remote)
			continue;
		rc = local_restart(ctx, &w, 1, &why);
		if (rc != HL_OK) {
			hl_fail(cause, rc, "rank %d on %s: %s", r,
				w->place.host, why ? why : "out of memory");
			break;
		}
	}
	free(why);
	return rc;
}

static int local_signal(void *ctx, struct hl_worker *w, int sig)
{
	(void)ctx;
	if (w->pid <= 0)
		return HL_OK;
	/* The group outlives its leader while the worker's children run. */
	if (hl_signal_worker(w->pid, sig) != 0 && errno != ESRCH)
		return HL_ESYS;
	return HL_OK;
}

static void local_close(void *ctx)
{
	free(ctx);
}

bool hl_worker_remote(const struct hl_launch *l, size_t hi)
{
	return l->ssh->force || !l->hosts->v[hi].local;
}

int hl_local_command(const struct hl_launch *l, char **path, char **cause)
{
	const struct hl_plan *plan = l->plan;
	const struct hl_envspec *es = l->env;
	const char *search = getenv("PATH"), *cmd = l->argv[0], *refused;
	char *from_wdir = NULL, *why = NULL;
	size_t i;
	int r, rc = HL_OK;

	*path = NULL;
	for (r = 0; r < plan->size; r++)
		if (!hl_worker_remote(l, plan->ranks[r].host))
			break;
	if (r == plan->size && l->discovery == NULL)
		return HL_OK;
	refused = r < plan->size && l->ssh->wdir
			  ? hl_folder_refused(l->ssh->cwd)
			  : NULL;
	if (refused != NULL)
		return hl_fail(cause, HL_EINVAL,
			       "--wdir '%s': workers cannot start there on "
			       "this machine (%s)",
			       l->ssh->cwd, refused);
	for (i = 0; i < es->set.n; i++)
		if (strncmp(es->set.v[i], "PATH=", 5) == 0)
			search = es->set.v[i] + 5;
	if (l->ssh->wdir && cmd[0] != '/' && strchr(cmd, '/') != NULL) {
		while (cmd[0] == '.' && cmd[1] == '/')
			cmd += 2 + strspn(cmd + 2, "/");
		from_wdir = hl_path_from(l->ssh->cwd, cmd);
		if (from_wdir == NULL)
			return hl_fail(cause, HL_ENOMEM, "out of memory");
		cmd = from_wdir;
	}
	if (r < plan->size) {
		rc = hl_resolve_command(cmd, search, path, cause);
	} else if (hl_resolve_command(cmd, search, path, &why) != HL_OK) {
		/* Only a host found later may start one here: try. */
		*path = NULL;
	}
	free(why);
	free(from_wdir);
	return r < plan->size ? rc : HL_OK;
}

int hl_worker_fds(const struct hl_launch *l, size_t hi)
{
	int own = !hl_worker_remote(l, hi) ? 3 : l->ssh->srun ? 1 : 2;

	return own + (l->output_dir != NULL ? 2 : 0);
}

const struct hl_spawner_ops hl_spawn_local = {
	.name = "local",
	.open = local_open,
	.start = local_start,
	.restart = local_restart,
	.signal = local_signal,
	.close = local_close,
};
