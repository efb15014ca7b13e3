/* agent/node_records.c: the node agent's side of its dialogue with
 * hvdrun (node.h): hvdrun's records (the environment, each rank of this
 * node, its start), a rank's start, and the lines the agent answers in
 * (hello, output, exits, the port found for rank 0). */
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
#include "util/family.h"
#include "util/proc.h"
#include "agent/records.h"

static void say(char *line, size_t len)
{
	line[len] = HL_LINE_END;
	line[len + 1] = '\n';
	(void)hl_write_all(1, line, len + 2);
}

void hl_node_sayf(const char *fmt, ...)
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

void hl_node_say_answer(int rank, char type, uint32_t taken)
{
	if (type == 'c')
		hl_node_sayf("c %d %u", rank, (unsigned)taken);
	else
		hl_node_sayf("n %d", rank);
}

/* Data of rank's stream k as 'o'/'e' lines. */
void hl_node_say_data(int rank, int k, const char *data, size_t n)
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
		hl_node_say_data(rank, 1, text, strlen(text));
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
	hl_relay_init(&r->in, rank, hl_node_say_answer);
	return r;
}

/* Rank r could not start: why on its stderr, and its status. */
static void fail_rank(struct nrank *r, int code, const char *why)
{
	say_stderr(r->rank, why ? why : "out of memory");
	r->status = W_EXITCODE(code, 0);
	r->reaped = true;
}

/* Rank r could not start (errno says why). Out of open files, the limit
 * is named: hvdrun checks it for the first step's workers only, not for
 * those an elastic job starts later. */
static void start_failed(struct nrank *r)
{
	int e = errno;
	char *msg =
		hl_asprintf("cannot start it: %s%s", strerror(e),
			    e == EMFILE ? " (this node's hard limit on open "
					  "files, which slurmd sets: raise "
					  "LimitNOFILE in slurmd's service, "
					  "or start fewer workers here)"
					: "");

	fail_rank(r, 125, msg);
	free(msg);
}

/* Rank r's environment: the node's own (hl_env_node_base), then the
 * common entries, then its own. */
static int rank_env(struct node *nd, struct nrank *r)
{
	struct hl_strvec env;
	size_t i;
	int rc = hl_env_node_base(environ, &env);

	if (rc != HL_OK)
		return rc;
	for (i = 0; i < nd->common.n && rc == HL_OK; i++)
		rc = hl_env_put(&env, nd->common.v[i]);
	for (i = 0; i < r->env.n && rc == HL_OK; i++)
		rc = hl_env_put(&env, r->env.v[i]);
	if (rc != HL_OK) {
		hl_strvec_close(&env);
		return rc;
	}
	hl_strvec_close(&r->env);
	r->env = env;
	return HL_OK;
}

/* Start rank r: its environment is the node's, the common entries, then
 * its own. An exec failure becomes its stderr and status 127 or 126, as
 * over SSH. */
static void start_rank(struct node *nd, struct nrank *r)
{
	char *path = NULL, *cause = NULL;
	int out[2] = {-1, -1}, err[2], rc;

	if (rank_env(nd, r) != HL_OK) {
		fail_rank(r, 125, "out of memory");
		return;
	}
	/* The folder first: a relative command is found from it. */
	rc = hl_agent_prepare(r->cwd, &r->argv, &r->env, &path, &cause);
	if (rc != 0) {
		fail_rank(r, rc, cause ? cause : "out of memory");
		free(cause);
		return;
	}
	if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
	    (r->input && hl_relay_open(&r->in, false) != HL_OK)) {
		if (out[0] >= 0) {
			close(out[0]);
			close(out[1]);
		}
		start_failed(r);
		free(path);
		return;
	}
	r->pid = hl_agent_exec(path, r->argv.v, r->env.v, r->in.in[0], out[1],
			       err[1], &rc);
	hl_relay_started(&r->in);
	close(out[1]);
	close(err[1]);
	free(path);
	if (r->pid < 0) {
		start_failed(r);
		close(out[0]);
		close(err[0]);
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
	hl_node_sayf("p %d %s", port, addr[0] ? addr : "-");
}

/* Act on one record. HL_EPROTO for a malformed one. */
int hl_node_on_record(struct node *nd, char type, const char *data, size_t len)
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
	case 'W':
		if (nd->job != NULL)
			nd->job->input = true;
		return HL_OK;
	case 'I':
	case 'F':
		r = find(nd, (int)q.num);
		if (r != NULL && r->input)
			hl_relay_input(&r->in, type, q.text, q.len);
		return HL_OK;
	case 'G':
		if (nd->job != NULL && !nd->stopping)
			start_rank(nd, nd->job);
		nd->job = NULL;
		return HL_OK;
	case 'K':
		r = find(nd, (int)q.num);
		if (r != NULL && r->pid > 0 && !r->reaped)
			hl_signal_worker(r->pid, q.sig);
		return HL_OK;
	case 'Z':
		nd->all_sent = true;
		return HL_OK;
	default:
		return HL_OK; /* a newer hvdrun's record: not for us */
	}
}
