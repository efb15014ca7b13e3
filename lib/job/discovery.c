/* discovery.c: see discovery.h. */
#include "job/discovery.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int hl_discovery_init(struct hl_discovery *d, const char *script,
		      int slots_per_host, char **cause)
{
	struct stat st;

	memset(d, 0, sizeof(*d));
	d->fd[0] = d->fd[1] = -1;
	d->script = script;
	d->slots_per_host = slots_per_host;
	if (stat(script, &st) != 0)
		return hl_fail(cause, HL_EINVAL,
			       "--host-discovery-script '%s': %s", script,
			       strerror(errno));
	if (!S_ISREG(st.st_mode) || access(script, X_OK) != 0)
		return hl_fail(
			cause, HL_EINVAL,
			"--host-discovery-script '%s': not an executable file",
			script);
	return HL_OK;
}

static void close_fds(struct hl_discovery *d)
{
	int j;

	for (j = 0; j < 2; j++)
		if (d->fd[j] >= 0) {
			close(d->fd[j]);
			d->fd[j] = -1;
		}
}

static void forget_run(struct hl_discovery *d)
{
	int j;

	close_fds(d);
	for (j = 0; j < 2; j++) {
		free(d->text[j]);
		d->text[j] = NULL;
		d->len[j] = 0;
	}
	d->pid = 0;
	d->reaped = d->timed_out = false;
	d->status = 0;
}

void hl_discovery_close(struct hl_discovery *d)
{
	if (d->pid > 0 && !d->reaped) {
		kill(-d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
	}
	forget_run(d);
}

/* Fork and exec the script in its own process group, its output on two
 * pipes. In the child only async-signal-safe calls: hvdrun has threads. */
static int start_run(struct hl_discovery *d, long long now)
{
	int p[2][2] = {{-1, -1}, {-1, -1}}, j, devnull;
	sigset_t none;
	pid_t pid;

	d->started = now;
	for (j = 0; j < 2; j++)
		if (pipe2(p[j], O_CLOEXEC) != 0)
			goto fail;
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	sigemptyset(&none);
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(p[0][1], 1);
		dup2(p[1][1], 2);
		execl(d->script, d->script, (char *)NULL);
		if (errno == ENOENT) {
			static const char why[] =
				"cannot execute it: its interpreter (#! line) was not found\n";

			(void)!write(2, why, sizeof(why) - 1);
			_exit(127);
		}
		{
			static const char why[] =
				"cannot execute it (is its #! line right?)\n";

			(void)!write(2, why, sizeof(why) - 1);
		}
		_exit(126);
	}
	if (devnull >= 0)
		close(devnull);
	if (pid < 0)
		goto fail;
	setpgid(pid, pid); /* also here: no race with a kill of the group */
	d->pid = pid;
	for (j = 0; j < 2; j++) {
		close(p[j][1]);
		d->fd[j] = p[j][0];
		fcntl(d->fd[j], F_SETFL, O_NONBLOCK);
		d->text[j] = calloc(1, 1);
	}
	return HL_OK;
fail:
	for (j = 0; j < 2; j++) {
		if (p[j][0] >= 0)
			close(p[j][0]);
		if (p[j][1] >= 0)
			close(p[j][1]);
	}
	return HL_ESYS;
}

void hl_discovery_read(struct hl_discovery *d)
{
	char buf[4096];
	int j, rounds;

	for (j = 0; j < 2; j++)
		for (rounds = 0; d->fd[j] >= 0 && rounds < 64; rounds++) {
			ssize_t n = read(d->fd[j], buf, sizeof(buf));
			char *t;

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				break;
			if (n <= 0) {
				close(d->fd[j]);
				d->fd[j] = -1;
				break;
			}
			/* Past the limit: drained, not kept (len says so). */
			if (d->len[j] > HL_DISCOVERY_MAX_OUTPUT ||
			    d->text[j] == NULL) {
				d->len[j] += (size_t)n;
				continue;
			}
			t = realloc(d->text[j], d->len[j] + (size_t)n + 1);
			if (t == NULL)
				continue;
			memcpy(t + d->len[j], buf, (size_t)n);
			d->len[j] += (size_t)n;
			t[d->len[j]] = '\0';
			d->text[j] = t;
		}
}

bool hl_discovery_reaped(struct hl_discovery *d, pid_t pid, int status)
{
	if (d->pid <= 0 || pid != d->pid || d->reaped)
		return false;
	if (WIFSTOPPED(status) || WIFCONTINUED(status))
		return true; /* not its end: the timeout ends a stopped one */
	d->reaped = true;
	d->status = status;
	return true;
}

long long hl_discovery_tick(struct hl_discovery *d, long long now)
{
	if (d->pid == 0) {
		if (now < d->next)
			return d->next - now;
		if (start_run(d, now) != HL_OK) {
			d->next = now + HL_DISCOVERY_EVERY_MS;
			return HL_DISCOVERY_EVERY_MS;
		}
	}
	if (!d->reaped && !d->timed_out &&
	    now - d->started >= HL_DISCOVERY_TIMEOUT_MS) {
		/* Its children may hold the pipes: no wait for their end. */
		kill(-d->pid, SIGKILL);
		d->timed_out = true;
		close_fds(d);
	}
	if (d->reaped || d->timed_out)
		return 50; /* the end is near: reaped soon */
	return d->started + HL_DISCOVERY_TIMEOUT_MS - now;
}

/* The last line of the script's stderr that says something. */
static const char *last_words(char *err)
{
	char *end, *start;

	if (err == NULL)
		return NULL;
	end = err + strlen(err);
	while (end > err && (end[-1] == '\n' || end[-1] == '\r' ||
			     end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	if (end == err)
		return NULL;
	start = strrchr(err, '\n');
	return start != NULL ? start + 1 : err;
}

bool hl_discovery_done(struct hl_discovery *d, struct hl_hostlist *hosts,
		       int *rc, char **cause)
{
	const char *why;

	if (d->pid == 0 || !d->reaped)
		return false;
	/* What it wrote before it ended is in the pipes; a child of its
	 * that still holds them is killed with its group. */
	hl_discovery_read(d);
	kill(-d->pid, SIGKILL);
	why = last_words(d->text[1]);
	if (d->timed_out)
		*rc = hl_fail(cause, HL_EINVAL,
			      "did not finish within %d s and was killed",
			      HL_DISCOVERY_TIMEOUT_MS / 1000);
	else if (WIFSIGNALED(d->status))
		*rc = hl_fail(cause, HL_EINVAL, "was killed by signal %d%s%s",
			      WTERMSIG(d->status), why ? ": " : "",
			      why ? why : "");
	else if (WEXITSTATUS(d->status) != 0)
		*rc = hl_fail(cause, HL_EINVAL, "exited with code %d%s%s",
			      WEXITSTATUS(d->status), why ? ": " : "",
			      why ? why : "");
	else if (d->len[0] > HL_DISCOVERY_MAX_OUTPUT || d->text[0] == NULL)
		*rc = hl_fail(cause, HL_EINVAL, "printed more than %d KiB",
			      HL_DISCOVERY_MAX_OUTPUT / 1024);
	else
		*rc = hl_discovery_parse(d->text[0], NULL, d->slots_per_host,
					 hosts, cause);
	d->next = hl_now_ms() + HL_DISCOVERY_EVERY_MS;
	forget_run(d);
	return true;
}

int hl_discovery_run(struct hl_discovery *d, struct hl_hostlist *hosts,
		     char **cause)
{
	int rc = HL_OK;
	char *why = NULL;

	d->next = 0;
	for (;;) {
		long long wait = hl_discovery_tick(d, hl_now_ms());
		struct pollfd pf[2];
		int j, status;

		if (d->pid == 0) {
			rc = hl_fail(
				cause, HL_ESYS,
				"cannot run the host discovery script '%s': %s",
				d->script, strerror(errno));
			break;
		}
		for (j = 0; j < 2; j++) {
			pf[j].fd = d->fd[j];
			pf[j].events = POLLIN;
		}
		if (d->fd[0] >= 0 || d->fd[1] >= 0)
			(void)poll(pf, 2, (int)(wait < 50 ? wait : 50));
		else
			usleep(10000);
		hl_discovery_read(d);
		if (waitpid(d->pid, &status, WNOHANG) == d->pid)
			hl_discovery_reaped(d, d->pid, status);
		if (hl_discovery_done(d, hosts, &rc, &why))
			break;
	}
	if (why != NULL) {
		/* Its failure, whatever it was, keeps the job from starting. */
		rc = hl_fail(cause, rc == HL_ENOMEM ? rc : HL_ESTART,
			     "host discovery script '%s' %s", d->script, why);
		free(why);
	}
	return rc;
}

/* Whether entry (one host) gives its slots: a ':' after the name, which
 * may be a bracketed IPv6 address. */
static bool slots_given(const char *entry)
{
	const char *close = strrchr(entry, ']');

	return strchr(close != NULL ? close : entry, ':') != NULL;
}

int hl_discovery_parse(const char *text, const char *script, int slots_per_host,
		       struct hl_hostlist *hosts, char **cause)
{
	char *copy = hl_strdup(text), *line, *next, *why = NULL;
	int lineno = 0, rc = HL_OK;

	if (copy == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	for (line = copy; line != NULL && rc == HL_OK; line = next) {
		size_t before = hosts->n, len;

		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		lineno++;
		while (*line == ' ' || *line == '\t')
			line++;
		len = strlen(line);
		while (len > 0 &&
		       (line[len - 1] == ' ' || line[len - 1] == '\t' ||
			line[len - 1] == '\r'))
			line[--len] = '\0';
		if (len == 0 || line[0] == '#')
			continue;
		if (strchr(line, ',') != NULL || strchr(line, ' ') != NULL)
			rc = hl_fail(&why, HL_EINVAL,
				     "one host a line, got '%s'", line);
		else
			rc = hl_hosts_parse_list(line, hosts, &why);
		if (rc == HL_OK && slots_per_host > 0 && !slots_given(line))
			hosts->v[before].slots = slots_per_host;
	}
	free(copy);
	if (rc == HL_OK && hosts->n == 0)
		rc = hl_fail(&why, HL_EINVAL, "printed no hosts");
	else if (rc != HL_OK && why != NULL) {
		char *at = hl_asprintf("line %d: %s", lineno, why);

		free(why);
		why = at;
	}
	if (rc != HL_OK) {
		if (script != NULL)
			rc = hl_fail(cause, rc, "host discovery script '%s' %s",
				     script, why ? why : "out of memory");
		else
			rc = hl_fail(cause, rc, "%s",
				     why ? why : "out of memory");
	}
	free(why);
	return rc;
}
