/* agent/node.c: `hvdrun --node-agent`, one a node in the srun step that
 * hvdrun starts (slurm/spawn.c). It reads the records that srun gives every
 * node (records.h), starts the ranks addressed to its task, and answers in
 * lines: its hello, each rank's output, each rank's status. When its
 * standard input ends (hvdrun or srun gone) or the step is signalled, it
 * ends every worker and their children, TERM then KILL. */
#include "agent/agent.h"
#include "agent/node.h"

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
#include "util/proc.h"
#include "agent/records.h"

#define NODE_GRACE_MS 2000

/* Every worker's group and every child: sig, the end's (family.h), which
 * is SIGTERM, once each, until the grace period is over, then SIGKILL.
 * Called again while stopping, so that a worker's child that outlives
 * it (re-parented to this subreaper) gets its TERM at once, not only
 * when Slurm ends the step. */
static void stop_all(struct node *nd)
{
	int sig = hl_family_end_signal(&nd->fam, hl_now_ms());
	size_t i;

	nd->stopping = true;
	for (i = 0; i < nd->n; i++)
		hl_family_signal_group(&nd->fam, nd->r[i].pid, sig);
	hl_family_signal_children(&nd->fam, sig, NULL, NULL);
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
					hl_node_say_data(nd->r[i].rank, 1, text,
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
		hl_node_say_data(r->rank, k, buf, (size_t)n);
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
			hl_node_sayf("x %d %d", r->rank, r->status);
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
		hl_relay_close(&nd->r[i].in);
	}
	free(nd->r);
	hl_family_close(&nd->fam);
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
	sfd = hl_family_open(&nd.fam, NODE_GRACE_MS, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* Two pipes a worker: the soft limit srun handed on (hvdrun's
	 * caller's) may be short of them; the hard one is this node's.
	 * hvdrun learns it from the hello and refuses a node where it is
	 * too low before any worker starts (HL_NODE_FDS_*); each worker
	 * gets the limit back (hl_agent_exec). */
	hl_nofile_raise();
	hl_node_sayf("h %s %ld %d %s", name, hl_nofile_limit(), HL_AGENT_PROTO,
		     HVD_VERSION);
	for (;;) {
		size_t i, np = 0;
		int k;

		if (nd.stopping) {
			reap(&nd);
			if (hl_family_signal_children(&nd.fam, 0, NULL, NULL) ==
			    0)
				break;
			stop_all(&nd);
			poll(NULL, 0, 10);
			continue;
		}
		report(&nd);
		if (nd.all_sent && all_reported(&nd))
			break;
		if (pf == NULL || 2 + 3 * nd.n > pcap) {
			size_t cap = 2 + 3 * nd.n;
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
		for (i = 0; i < nd.n; i++) {
			for (k = 0; k < 2; k++)
				if (nd.r[i].fd[k] >= 0) {
					pf[np] = (struct pollfd){
						.fd = nd.r[i].fd[k],
						.events = POLLIN};
					whichk[np] = k;
					who[np++] = &nd.r[i];
				}
			/* Its input, while the pipe has not taken all. */
			if (hl_relay_fds(&nd.r[i].in, pf + np) == 1) {
				whichk[np] = 2;
				who[np++] = &nd.r[i];
			}
		}
		if (poll(pf, (nfds_t)np, 200) < 0 && errno != EINTR)
			break;
		if (pf[0].revents) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) ==
			       (ssize_t)sizeof(si))
				if (si.ssi_signo != SIGCHLD && !nd.stopping)
					stop_all(
						&nd); /* the step is cancelled */
			reap(&nd);
		}
		for (i = in_open ? 2 : 1; i < np; i++)
			if (pf[i].revents && whichk[i] == 2)
				hl_relay_polled(&who[i]->in, pf + i, 1);
			else if (pf[i].revents)
				pump(who[i], whichk[i]);
		if (in_open && pf[1].revents) {
			char chunk[65536];
			ssize_t n = read(0, chunk, sizeof(chunk));

			if (n > 0 && hl_buf_append(&b, chunk, (size_t)n) == 0) {
				const char *data;
				size_t len, used;
				char type;
				int r;

				while ((r = hl_rec_next(&b, &used, &type, &data,
							&len)) == 1) {
					if (hl_node_on_record(&nd, type, data,
							      len) != HL_OK)
						code = 125;
					hl_buf_consume(&b, used);
				}
				if (r < 0)
					code = 125;
			} else if (n == 0 || errno != EINTR) {
				/* hvdrun is gone: nobody waits for a status. */
				in_open = false;
				stop_all(&nd);
			}
			if (code != 0 && !nd.stopping) {
				hl_fail(cause, HL_EPROTO,
					"malformed request from hvdrun");
				stop_all(&nd);
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
