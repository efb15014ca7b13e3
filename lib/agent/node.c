/* agent/node.c: `hvdrun --node-agent`, one a node in the srun step that
 * hvdrun starts (slurm/spawn.c). It reads the records that srun gives every
 * node (records.h), starts the ranks addressed to its task, and answers in
 * lines: its hello, each rank's output, each rank's status. When its
 * standard input ends (hvdrun or srun gone) or the step is signalled, it
 * ends every worker and their children, TERM then KILL. */
#include "agent/agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/ifaces.h"
#include "job/bind.h"
#include "job/env.h"
#include "launch/proc.h"
#include "agent/records.h"

#define NODE_GRACE_MS 2000

struct nrank {
	int rank;
	char *cwd;
	struct hl_strvec env, argv;
	pid_t pid; /* leader of its process group; 0 before it starts */
	int fd[2]; /* its stdout and stderr, -1 at end of file */
	bool reaped, reported;
	int status;
	long long ended_ms; /* when it was reaped: its group gets a grace */
};

struct node {
	long task; /* this agent's task in the step */
	struct hl_strvec common;
	struct nrank *r;
	size_t n, cap;
	long cur_task;	       /* the task the records now address */
	struct nrank *job;     /* the job being read, NULL if none */
	bool all_sent;	       /* 'Z' seen */
	bool stopping;	       /* stdin ended or the step was signalled */
	long long kill_at;     /* stopping: SIGKILL everything then */
	struct hl_pids termed; /* processes (-group) sent SIGTERM */
};

/* line[0..len) as one line on stdout, in one write(2), ended by
 * HL_LINE_END and '\n' (line has room for both). */
static void say(char *line, size_t len)
{
	line[len] = HL_LINE_END;
	line[len + 1] = '\n';
	(void)hl_write_all(1, line, len + 2);
}

static void sayf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void sayf(const char *fmt, ...)
{
	char line[HL_LINE_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 2, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 3)
		n = (int)sizeof(line) - 3;
	say(line, (size_t)n);
}

/* Data of rank's stream k as 'o'/'e' lines. */
static void say_data(int rank, int k, const char *data, size_t n)
{
	char line[HL_LINE_MAX];

	while (n > 0) {
		int head =
			snprintf(line, sizeof(line), "%c %d ", "oe"[k], rank);
		size_t out, took;

		took = hl_line_escape(data, n, line + head,
				      sizeof(line) - (size_t)head - 2, &out);
		say(line, (size_t)head + out);
		data += took;
		n -= took;
	}
}

static void say_stderr(int rank, const char *msg)
{
	char host[256] = "?", *text;

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	text = hl_asprintf("hvdrun: on %s: %s\n", host, msg);
	if (text != NULL)
		say_data(rank, 1, text, strlen(text));
	free(text);
}

static struct nrank *find(struct node *nd, int rank)
{
	size_t i;

	for (i = 0; i < nd->n; i++)
		if (nd->r[i].rank == rank)
			return &nd->r[i];
	return NULL;
}

static struct nrank *add_rank(struct node *nd, int rank)
{
	struct nrank *r;

	if (nd->n == nd->cap) {
		size_t cap = nd->cap ? 2 * nd->cap : 8;
		struct nrank *v = realloc(nd->r, cap * sizeof(*v));

		if (v == NULL)
			return NULL;
		nd->r = v;
		nd->cap = cap;
	}
	r = &nd->r[nd->n++];
	memset(r, 0, sizeof(*r));
	r->rank = rank;
	r->fd[0] = r->fd[1] = -1;
	hl_strvec_init(&r->env);
	hl_strvec_init(&r->argv);
	return r;
}

/* Rank r could not start: why on its stderr, and its status. */
static void fail_rank(struct nrank *r, int code, const char *why)
{
	say_stderr(r->rank, why ? why : "out of memory");
	r->status = W_EXITCODE(code, 0);
	r->reaped = true;
}

/* Start rank r: its environment is the common entries, then its own. An
 * exec failure becomes its stderr and status 127 or 126, as over SSH. */
static void start_rank(struct node *nd, struct nrank *r)
{
	char *path = NULL, *cause = NULL;
	int out[2], err[2], rc;
	size_t i;

	for (i = 0; i < nd->common.n; i++)
		hl_strvec_push(&r->env, nd->common.v[i]);
	/* The folder first: a relative command is found from it. */
	if (r->cwd != NULL && chdir(r->cwd) != 0) {
		cause = hl_asprintf("cannot use the working directory '%s': %s",
				    r->cwd, strerror(errno));
		fail_rank(r, 125, cause);
		free(cause);
		return;
	}
	if (r->argv.n == 0) {
		rc = HL_EINVAL;
		cause = hl_strdup("incomplete start request from hvdrun");
	} else {
		rc = hl_resolve_command(r->argv.v[0],
					hl_strvec_value(&r->env, "PATH"), &path,
					&cause);
	}
	if (rc != HL_OK) {
		fail_rank(r, rc == HL_ENOENT ? 127 : 126, cause);
		free(cause);
		return;
	}
	if (pipe2(out, O_CLOEXEC) != 0) {
		fail_rank(r, 125, "out of file descriptors");
		free(path);
		return;
	}
	if (pipe2(err, O_CLOEXEC) != 0) {
		close(out[0]);
		close(out[1]);
		fail_rank(r, 125, "out of file descriptors");
		free(path);
		return;
	}
	r->pid = hl_agent_exec(path, r->argv.v, r->env.v, out[1], err[1], &rc);
	close(out[1]);
	close(err[1]);
	free(path);
	if (r->pid < 0) {
		close(out[0]);
		close(err[0]);
		fail_rank(r, 125, "fork failed");
		return;
	}
	r->fd[0] = out[0];
	r->fd[1] = err[0];
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(err[0], F_SETFL, O_NONBLOCK);
	if (rc != 0) {
		char *msg = hl_asprintf("cannot execute '%s': %s", r->argv.v[0],
					strerror(rc));

		say_stderr(r->rank, msg ? msg : "cannot execute");
		free(msg);
	}
}

/* Whether the records now address this agent. */
static bool mine(const struct node *nd)
{
	return nd->cur_task == nd->task;
}

static void answer_port(const char *ifs)
{
	char addr[INET_ADDRSTRLEN] = "", *cause = NULL;
	int port = 0;

	if (hl_free_port(&port, &cause) != HL_OK)
		port = 0;
	free(cause);
	if (ifs != NULL && *ifs != '\0' &&
	    ifaces_ipv4(ifs, addr, sizeof(addr)) != HL_OK)
		addr[0] = '\0';
	sayf("p %d %s", port, addr[0] ? addr : "-");
}

/* Act on one record. HL_EPROTO for a malformed one. */
static int on_record(struct node *nd, char type, const char *data, size_t len)
{
	struct hl_node_req q;
	struct nrank *r;
	char *s;

	if (hl_node_req_decode(type, data, len, &q) != HL_OK)
		return HL_EPROTO;
	switch (type) {
	case 'C':
		return hl_strvec_push_owned(&nd->common,
					    hl_strndup(q.text, q.len));
	case 'T':
		nd->cur_task = (long)q.num;
		nd->job = NULL;
		return HL_OK;
	case 'P':
		if (mine(nd)) {
			s = hl_strndup(q.text, q.len);
			answer_port(s);
			free(s);
		}
		return HL_OK;
	case 'R':
		if (mine(nd)) {
			nd->job = find(nd, (int)q.num)
					  ? NULL
					  : add_rank(nd, (int)q.num);
			if (nd->job == NULL)
				return HL_EPROTO;
		}
		return HL_OK;
	case 'E':
	case 'A':
	case 'D':
		if (nd->job == NULL)
			return HL_OK;
		s = hl_strndup(q.text, q.len);
		if (type == 'D') {
			free(nd->job->cwd);
			nd->job->cwd = s;
			return s ? HL_OK : HL_ENOMEM;
		}
		return hl_strvec_push_owned(
			type == 'E' ? &nd->job->env : &nd->job->argv, s);
	case 'G':
		if (nd->job != NULL && !nd->stopping)
			start_rank(nd, nd->job);
		nd->job = NULL;
		return HL_OK;
	case 'K':
		r = find(nd, (int)q.num);
		if (r != NULL && r->pid > 0 && !r->reaped)
			kill(-r->pid, q.sig);
		return HL_OK;
	case 'Z':
		nd->all_sent = true;
		return HL_OK;
	default:
		return HL_OK; /* a newer hvdrun's record: not for us */
	}
}

/* Every worker's group and every child: TERM once each, KILL at kill_at.
 * Called again while stopping, so that a worker's child that outlives
 * it (re-parented to this subreaper) gets its TERM at once, not only
 * when Slurm ends the step. */
static void stop_all(struct node *nd, int sig)
{
	pid_t *kids;
	size_t i, n;

	for (i = 0; i < nd->n; i++)
		if (nd->r[i].pid > 0 &&
		    (sig != SIGTERM || hl_pids_add(&nd->termed, -nd->r[i].pid)))
			kill(-nd->r[i].pid, sig);
	if (hl_children(&kids, &n) == HL_OK) {
		for (i = 0; i < n; i++)
			if (sig != SIGTERM || hl_pids_add(&nd->termed, kids[i]))
				kill(kids[i], sig);
		free(kids);
	}
}

static void reap(struct node *nd)
{
	int status;
	pid_t pid;
	size_t i;

	while ((pid = waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0)
		for (i = 0; i < nd->n; i++)
			if (nd->r[i].pid == pid && WIFSTOPPED(status)) {
				char *text =
					hl_agent_stopped_text(WSTOPSIG(status));

				if (text != NULL)
					say_data(nd->r[i].rank, 1, text,
						 strlen(text));
				free(text);
			} else if (nd->r[i].pid == pid && !nd->r[i].reaped) {
				nd->r[i].reaped = true;
				nd->r[i].status = status;
				nd->r[i].ended_ms = hl_now_ms();
				/* What it left in its group ends too. */
				kill(-pid, SIGTERM);
			}
}

/* Read what a rank's stream has; close it at end of file. */
static void pump(struct nrank *r, int k)
{
	char buf[4096];
	ssize_t n = read(r->fd[k], buf, sizeof(buf));

	if (n > 0) {
		say_data(r->rank, k, buf, (size_t)n);
	} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		close(r->fd[k]);
		r->fd[k] = -1;
	}
}

/* Report ranks whose output has ended and who are reaped; a group that
 * keeps a stream open past the grace is killed, then its streams closed. */
static void report(struct node *nd)
{
	long long now = hl_now_ms();
	size_t i;
	int k;

	for (i = 0; i < nd->n; i++) {
		struct nrank *r = &nd->r[i];

		if (!r->reaped || r->reported)
			continue;
		if ((r->fd[0] >= 0 || r->fd[1] >= 0) && r->pid > 0 &&
		    now - r->ended_ms > NODE_GRACE_MS)
			kill(-r->pid, SIGKILL);
		if ((r->fd[0] >= 0 || r->fd[1] >= 0) &&
		    now - r->ended_ms > 2 * NODE_GRACE_MS)
			for (k = 0; k < 2; k++)
				if (r->fd[k] >= 0) {
					close(r->fd[k]);
					r->fd[k] = -1;
				}
		if (r->fd[0] < 0 && r->fd[1] < 0) {
			sayf("x %d %d", r->rank, r->status);
			r->reported = true;
		}
	}
}

static bool all_reported(const struct node *nd)
{
	size_t i;

	for (i = 0; i < nd->n; i++)
		if (!nd->r[i].reported)
			return false;
	return true;
}

static void node_close(struct node *nd)
{
	size_t i;

	for (i = 0; i < nd->n; i++) {
		free(nd->r[i].cwd);
		hl_strvec_close(&nd->r[i].env);
		hl_strvec_close(&nd->r[i].argv);
		if (nd->r[i].fd[0] >= 0)
			close(nd->r[i].fd[0]);
		if (nd->r[i].fd[1] >= 0)
			close(nd->r[i].fd[1]);
	}
	free(nd->r);
	free(nd->termed.v);
	hl_strvec_close(&nd->common);
}

int hl_node_agent_run(char **cause)
{
	const char *task = getenv("SLURM_PROCID"), *name;
	struct node nd = {.cur_task = -1};
	struct pollfd *pf = NULL;
	struct nrank **who = NULL;
	int *whichk = NULL;
	size_t pcap = 0;
	struct hl_buf b;
	sigset_t mask;
	char host[256] = "?";
	int sfd, code = 0;
	bool in_open = true;

	if (task == NULL || !hl_parse_long(task, 0, 1 << 30, &nd.task)) {
		hl_fail(cause, HL_EINVAL,
			"--node-agent runs as a task of the srun step that "
			"hvdrun starts (SLURM_PROCID is not set)");
		return 125;
	}
	name = getenv("SLURMD_NODENAME");
	if (name == NULL) {
		gethostname(host, sizeof(host) - 1);
		host[sizeof(host) - 1] = '\0';
		name = host;
	}
	hl_strvec_init(&nd.common);
	hl_buf_init(&b);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	signal(SIGPIPE, SIG_IGN);
	sayf("h %s", name);
	for (;;) {
		size_t i, np = 0;
		int k;

		if (nd.stopping) {
			pid_t *kids;
			size_t nk = 0;

			reap(&nd);
			if (hl_children(&kids, &nk) == HL_OK)
				free(kids);
			if (nk == 0)
				break;
			if (hl_now_ms() >= nd.kill_at) {
				stop_all(&nd, SIGKILL);
				nd.kill_at = hl_now_ms() + NODE_GRACE_MS;
			} else {
				stop_all(&nd, SIGTERM);
			}
			poll(NULL, 0, 10);
			continue;
		}
		report(&nd);
		if (nd.all_sent && all_reported(&nd))
			break;
		if (2 + 2 * nd.n > pcap) {
			size_t cap = 2 + 2 * nd.n;
			struct pollfd *p2 = realloc(pf, cap * sizeof(*pf));
			struct nrank **w2 =
				p2 ? realloc(who, cap * sizeof(struct nrank *))
				   : NULL;
			int *k2 = w2 ? realloc(whichk, cap * sizeof(*whichk))
				     : NULL;

			pf = p2 ? p2 : pf;
			who = w2 ? w2 : who;
			whichk = k2 ? k2 : whichk;
			if (k2 == NULL) {
				code = 125;
				break;
			}
			pcap = cap;
		}
		pf[np] = (struct pollfd){.fd = sfd, .events = POLLIN};
		who[np++] = NULL;
		if (in_open) {
			pf[np] = (struct pollfd){.fd = 0, .events = POLLIN};
			who[np++] = NULL;
		}
		for (i = 0; i < nd.n; i++)
			for (k = 0; k < 2; k++)
				if (nd.r[i].fd[k] >= 0) {
					pf[np] = (struct pollfd){
						.fd = nd.r[i].fd[k],
						.events = POLLIN};
					whichk[np] = k;
					who[np++] = &nd.r[i];
				}
		if (poll(pf, (nfds_t)np, 200) < 0 && errno != EINTR)
			break;
		if (pf[0].revents) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) ==
			       (ssize_t)sizeof(si))
				if (si.ssi_signo != SIGCHLD && !nd.stopping) {
					/* The step is being cancelled. */
					nd.stopping = true;
					stop_all(&nd, SIGTERM);
					nd.kill_at =
						hl_now_ms() + NODE_GRACE_MS;
				}
			reap(&nd);
		}
		for (i = in_open ? 2 : 1; i < np; i++)
			if (pf[i].revents)
				pump(who[i], whichk[i]);
		if (in_open && pf[1].revents) {
			char chunk[65536];
			ssize_t n = read(0, chunk, sizeof(chunk));

			if (n > 0 && hl_buf_append(&b, chunk, (size_t)n) == 0) {
				const char *data;
				size_t len, used;
				char type;
				int r;

				while ((r = hl_proto_next(&b, &used, &type,
							  &data, &len)) == 1) {
					if (on_record(&nd, type, data, len) !=
					    HL_OK)
						code = 125;
					hl_buf_consume(&b, used);
				}
				if (r < 0)
					code = 125;
			} else if (n == 0 || errno != EINTR) {
				/* hvdrun is gone: nobody waits for a status. */
				in_open = false;
				nd.stopping = true;
				stop_all(&nd, SIGTERM);
				nd.kill_at = hl_now_ms() + NODE_GRACE_MS;
			}
			if (code != 0 && !nd.stopping) {
				hl_fail(cause, HL_EPROTO,
					"malformed request from hvdrun");
				nd.stopping = true;
				stop_all(&nd, SIGTERM);
				nd.kill_at = hl_now_ms() + NODE_GRACE_MS;
			}
		}
	}
	free(pf);
	free(who);
	free(whichk);
	close(sfd);
	hl_buf_close(&b);
	node_close(&nd);
	return code;
}
