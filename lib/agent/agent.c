/* agent.c: see agent.h. */
#include "agent/agent.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "job/bind.h"
#include "job/env.h"
#include "util/family.h"
#include "util/proc.h"
#include "agent/records.h"
#include "agent/relay.h"

#define AGENT_GRACE_MS 2000

struct job {
	char *cwd;
	struct hl_strvec env;
	struct hl_strvec argv;
	bool input;	  /* 'W': it reads hvdrun's standard input (relay.h) */
	uint32_t proto;	  /* 'V': the launching hvdrun's; 0: not said */
	char version[64]; /* and its version */
};

/* Read records until 'G'. Records after it stay in b. */
static int read_job(struct hl_buf *b, struct job *j)
{
	char chunk[4096];

	for (;;) {
		const char *data;
		size_t len, used;
		char type;
		int r = hl_rec_next(b, &used, &type, &data, &len);

		if (r < 0)
			return HL_EINVAL;
		if (r == 0) {
			ssize_t n = read(0, chunk, sizeof(chunk));

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 || hl_buf_append(b, chunk, (size_t)n) != 0)
				return HL_EINVAL;
			continue;
		}
		if (type == 'D') {
			free(j->cwd);
			j->cwd = hl_strndup(data, len);
		} else if (type == 'E') {
			hl_strvec_push_owned(&j->env, hl_strndup(data, len));
		} else if (type == 'A') {
			hl_strvec_push_owned(&j->argv, hl_strndup(data, len));
		} else if (type == 'W') {
			j->input = true;
		} else if (type == 'V' &&
			   hl_rec_version_of(data, len, &j->proto, j->version,
					     sizeof(j->version)) != HL_OK) {
			return HL_EINVAL;
		}
		hl_buf_consume(b, used);
		if (type == 'G')
			return j->argv.n > 0 ? HL_OK : HL_EINVAL;
	}
}

char *hl_stopped_text(const char *who, int sig)
{
	const char *name = sigabbrev_np(sig);

	return hl_asprintf("hvdrun: %s was stopped (SIG%s); every rank waits "
			   "for it (libhvd's ranks for their peer timeout, "
			   "--gloo-timeout-seconds): SIGCONT resumes it, "
			   "Ctrl-C ends the job\n",
			   who, name ? name : "?");
}

char *hl_agent_stopped_text(int sig)
{
	char host[256] = "?", who[300];

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	snprintf(who, sizeof(who), "on %s: this rank", host);
	return hl_stopped_text(who, sig);
}

int hl_agent_prepare(const char *cwd, const struct hl_strvec *argv,
		     const struct hl_strvec *env, char **path, char **cause)
{
	int rc;

	*path = NULL;
	if (cwd != NULL && chdir(cwd) != 0) {
		hl_fail(cause, HL_ESYS,
			"cannot use the working directory '%s': %s", cwd,
			strerror(errno));
		return 125;
	}
	if (argv->n == 0) {
		hl_fail(cause, HL_EPROTO,
			"incomplete start request from hvdrun");
		return 125;
	}
	rc = hl_resolve_command(argv->v[0], hl_strvec_value(env, "PATH"), path,
				cause);
	if (rc == HL_OK)
		return 0;
	return rc == HL_ENOENT ? 127 : 126;
}

pid_t hl_agent_exec(const char *path, char **argv, char **env, int in, int out,
		    int err, int *exec_errno)
{
	int ep[2];
	pid_t pid;

	*exec_errno = 0;
	if (pipe2(ep, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		sigset_t none;
		int in_fd = in >= 0 ? in : open("/dev/null", O_RDONLY);

		setpgid(0, 0);
		if (in_fd >= 0)
			dup2(in_fd, 0);
		if (out >= 0)
			dup2(out, 1);
		if (err >= 0)
			dup2(err, 2);
		close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
		/* The limit on open files the agent was started with (the
		 * node agent raises its own). */
		hl_nofile_restore();
		signal(SIGPIPE, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		hl_bind_worker(env);
		execve(path, argv, env);
		hl_exec_failed(ep[1]);
	}
	close(ep[1]);
	if (pid > 0) {
		setpgid(pid, pid);
		*exec_errno = hl_exec_result(ep[0]);
	}
	close(ep[0]);
	return pid;
}

/* The worker's environment: this host's own (what sshd gave the agent),
 * then hvdrun's records over it, as a remote shell's environment lies
 * beneath horovodrun's variables; PWD the working directory. */
static int host_env(struct job *j, struct hl_strvec *out)
{
	size_t i;
	int rc = HL_OK;

	hl_strvec_init(out);
	for (i = 0; environ[i] != NULL && rc == HL_OK; i++)
		if (strchr(environ[i], '=') != NULL)
			rc = hl_env_put(out, environ[i]);
	for (i = 0; i < j->env.n && rc == HL_OK; i++)
		rc = hl_env_put(out, j->env.v[i]);
	if (rc == HL_OK && j->cwd != NULL)
		rc = hl_env_set(out, "PWD", j->cwd);
	return rc;
}

/* Exit as the worker did: its code, or its signal. */
static int exit_like(int status)
{
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		sigset_t one;

		signal(sig, SIG_DFL);
		sigemptyset(&one);
		sigaddset(&one, sig);
		sigprocmask(SIG_UNBLOCK, &one, NULL);
		raise(sig);
		return 128 + sig;
	}
	return WEXITSTATUS(status);
}

/* Forward sig to the worker's group (pgid) and what the agent adopted of
 * it: the one family the agent ends (fam). */
static void signal_family(struct hl_family *fam, pid_t pgid, int sig)
{
	if (hl_signal_leader_only(sig)) {
		hl_signal_worker(pgid, sig);
		return;
	}
	hl_family_signal_group(fam, pgid, sig);
	hl_family_signal_children(fam, sig, NULL, NULL);
}

static int supervise_worker(struct hl_family *fam, pid_t pid, struct hl_buf *b,
			    int sfd, struct hl_relay *rl)
{
	struct pollfd pf[4] = {{.fd = 0, .events = POLLIN},
			       {.fd = sfd, .events = POLLIN}};
	char chunk[4096];
	int status = 0;

	for (;;) {
		struct signalfd_siginfo si;
		int nrl;
		pid_t r;

		/* Records already read with the job come first. */
		for (;;) {
			const char *data;
			size_t len, used;
			char type;

			if (hl_rec_next(b, &used, &type, &data, &len) != 1)
				break;
			if (type == 'S') {
				int sig = hl_rec_signal_of(data, len);

				if (sig > 0 && sig < NSIG)
					signal_family(fam, pid, sig);
			} else if (type == 'I' || type == 'F') {
				hl_relay_input(rl, type, data, len);
			}
			hl_buf_consume(b, used);
		}
		nrl = hl_relay_fds(rl, pf + 2);
		if (poll(pf, 2 + (nfds_t)nrl, -1) < 0 && errno != EINTR)
			break;
		hl_relay_polled(rl, pf + 2, nrl);
		if (pf[0].fd >= 0 && pf[0].revents) {
			ssize_t n = read(0, chunk, sizeof(chunk));

			if (n > 0) {
				hl_buf_append(b, chunk, (size_t)n);
			} else if (n == 0 || errno != EINTR) {
				/* hvdrun is gone: end the worker and its
				 * children, and go; nobody waits for a status. */
				hl_family_end(fam, &pid, 1, SIGTERM);
				return W_EXITCODE(125, 0);
			}
		}
		if (pf[1].revents)
			while (read(sfd, &si, sizeof(si)) > 0)
				;
		while ((r = waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0) {
			if (r == pid && WIFSTOPPED(status)) {
				char *text =
					hl_agent_stopped_text(WSTOPSIG(status));

				if (text != NULL)
					(void)hl_write_all(2, text,
							   strlen(text));
				free(text);
			} else if (r == pid) {
				hl_relay_flush(rl);
				hl_family_end(fam, &pid, 1, SIGTERM);
				return status;
			}
		}
	}
	hl_family_end(fam, &pid, 1, SIGKILL);
	return status;
}

int hl_agent_run(char **cause)
{
	struct job j = {0};
	struct hl_family fam = {0};
	struct hl_strvec env;
	struct hl_buf b;
	struct hl_relay rl;
	sigset_t mask;
	char *path = NULL;
	pid_t pid;
	int sfd = -1, code, exec_errno;

	hl_buf_init(&b);
	hl_relay_init(&rl, -1, NULL);
	hl_strvec_init(&env);
	hl_strvec_init(&j.env);
	hl_strvec_init(&j.argv);
	if (read_job(&b, &j) != HL_OK) {
		hl_fail(cause, HL_EPROTO,
			"incomplete start request from hvdrun");
		code = 125;
		goto out;
	}
	if (j.proto != 0 && j.proto != HL_AGENT_PROTO) {
		hl_fail(cause, HL_EPROTO,
			"this host's hvdrun (%s, agent protocol %d) cannot start ranks for the hvdrun that launched the job (%s, agent protocol %u): install the same hvdrun on every host",
			HVD_VERSION, HL_AGENT_PROTO, j.version, j.proto);
		code = 125;
		goto out;
	}
	if (host_env(&j, &env) != HL_OK) {
		hl_fail(cause, HL_ENOMEM, "out of memory");
		code = 125;
		goto out;
	}
	code = hl_agent_prepare(j.cwd, &j.argv, &env, &path, cause);
	if (code != 0)
		goto out;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sfd = hl_family_open(&fam, AGENT_GRACE_MS, &mask, NULL);
	/* sshd may close the channel under us: never die of SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	if (j.input && hl_relay_open(&rl, true) != HL_OK) {
		hl_fail(cause, HL_ESYS, "pipe: %s", strerror(errno));
		code = 125;
		goto out;
	}
	pid = hl_agent_exec(path, j.argv.v, env.v, rl.in[0], rl.out[1], -1,
			    &exec_errno);
	hl_relay_started(&rl);
	if (pid < 0) {
		hl_fail(cause, HL_ESYS, "fork: %s", strerror(errno));
		code = 125;
		goto out;
	}
	if (exec_errno != 0) {
		hl_fail(cause, HL_ENOEXEC, "cannot execute '%s': %s",
			j.argv.v[0], strerror(exec_errno));
		waitpid(pid, NULL, 0);
		code = exec_errno == ENOENT ? 127 : 126;
		goto out;
	}
	code = exit_like(supervise_worker(&fam, pid, &b, sfd, &rl));
out:
	hl_relay_close(&rl);
	if (sfd >= 0)
		close(sfd);
	hl_family_close(&fam);
	free(path);
	free(j.cwd);
	hl_strvec_close(&env);
	hl_strvec_close(&j.env);
	hl_strvec_close(&j.argv);
	hl_buf_close(&b);
	return code;
}
