/* netcheck.c: see netcheck.h. One thread per host owns its connection
 * (an SSH session and one exec channel, or a child process on a socket
 * pair for this machine) and walks it through the probe's dialogue
 * (records.h); the calling thread moves every host from one stage to the
 * next together: describe, test, end. Every wait is bounded. */
#include "netcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <libssh/libssh.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "probe_msg.h"
#include "records.h"
#include "sshconn.h"

enum { ST_DESCRIBE, ST_TEST, ST_END };
enum { PH_STARTING, PH_DESCRIBED, PH_TESTED, PH_FAILED };

struct nc_group;

struct nc_thread {
	struct nc_group *g;
	struct hl_nc_host *h;
	pthread_t th;
	bool started;
	int phase;
	ssh_session s;
	ssh_channel ch;
	pid_t pid;
	int fd;
	struct hl_buf in;
	char err[512]; /* the start of the probe's stderr (SSH) */
	size_t errlen;
	struct hl_buf out; /* the targets and the go */
	size_t ntargets;
};

struct nc_group {
	struct hl_netcheck *nc;
	const struct hl_ssh_opts *so;
	struct nc_thread *t;
	size_t n;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stage;
};

static void set_phase(struct nc_thread *t, int phase, char *error)
{
	pthread_mutex_lock(&t->g->lock);
	t->phase = phase;
	if (error != NULL && t->h->error == NULL)
		t->h->error = error;
	else
		free(error);
	pthread_cond_broadcast(&t->g->cond);
	pthread_mutex_unlock(&t->g->lock);
}

/* Wait for the group's stage to reach at least `stage`. */
static int wait_stage(struct nc_thread *t, int stage)
{
	int st;

	pthread_mutex_lock(&t->g->lock);
	while (t->g->stage < stage)
		pthread_cond_wait(&t->g->cond, &t->g->lock);
	st = t->g->stage;
	pthread_mutex_unlock(&t->g->lock);
	return st;
}

static int start_local(struct nc_thread *t)
{
	const char *self = t->g->so->agent_path;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	t->pid = fork();
	if (t->pid == 0) {
		sigset_t none;

		dup2(sv[1], 0);
		dup2(sv[1], 1);
		close_range(3, ~0U, 0);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execl(self, self, "--probe", (char *)NULL);
		fprintf(stderr, "hvdrun: cannot execute %s: %s\n", self,
			strerror(errno));
		_exit(127);
	}
	close(sv[1]);
	if (t->pid < 0) {
		close(sv[0]);
		return -1;
	}
	t->fd = sv[0];
	return 0;
}

static char *start_remote(struct nc_thread *t)
{
	const struct hl_host *host = t->h->host;
	long long t0 = hl_now_ms();
	char *err = NULL, *cmd;

	if (hl_ssh_connect(host, t->g->so, &t->s, &err) != 0)
		return err ? err : hl_strdup("out of memory");
	t->h->ssh_ok = true;
	t->h->ssh_ms = (double)(hl_now_ms() - t0);
	cmd = hl_ssh_self_command(t->g->so->agent_path, "--probe");
	t->ch = ssh_channel_new(t->s);
	if (cmd == NULL || t->ch == NULL ||
	    ssh_channel_open_session(t->ch) != SSH_OK ||
	    ssh_channel_request_exec(t->ch, cmd) != SSH_OK)
		err = hl_asprintf("host '%s': cannot start the probe: %s",
				  host->name, ssh_get_error(t->s));
	free(cmd);
	return err;
}

/* Read more of the probe's output. 1: got some; 0: deadline; -1: end. */
static int fill(struct nc_thread *t, long long deadline)
{
	char chunk[8192];
	long long left = deadline - hl_now_ms();
	int n;

	if (left <= 0)
		return 0;
	if (t->ch != NULL) {
		n = ssh_channel_read_timeout(t->ch, chunk, sizeof(chunk), 0,
					     left < 200 ? (int)left : 200);
		/* The channel is at its end only once stderr is read too. */
		while (n == 0 && ssh_channel_poll(t->ch, 1) > 0) {
			int e = ssh_channel_read_nonblocking(t->ch, chunk,
							     sizeof(chunk), 1);

			if (e <= 0)
				break;
			if (t->errlen < sizeof(t->err) - 1) {
				size_t k = sizeof(t->err) - 1 - t->errlen;

				k = (size_t)e < k ? (size_t)e : k;
				memcpy(t->err + t->errlen, chunk, k);
				t->errlen += k;
			}
		}
		if (n == 0 && ssh_channel_is_eof(t->ch))
			return -1;
	} else {
		struct pollfd pf = {t->fd, POLLIN, 0};

		if (poll(&pf, 1, left < 200 ? (int)left : 200) <= 0)
			return 0;
		n = (int)read(t->fd, chunk, sizeof(chunk));
		if (n == 0)
			return -1;
	}
	if (n < 0)
		return (t->ch == NULL && errno == EINTR) ? 0 : -1;
	if (n > 0 && hl_buf_append(&t->in, chunk, (size_t)n) != HL_OK)
		return -1;
	return n > 0 ? 1 : 0;
}

/* The next record, or 0 at the deadline, -1 at the end of the output. */
static int next(struct nc_thread *t, long long deadline, size_t *used,
		char *type, const char **data, size_t *len)
{
	for (;;) {
		int r = hl_proto_next(&t->in, used, type, data, len);

		if (r != 0)
			return r;
		do {
			r = fill(t, deadline);
			if (r < 0)
				return -1;
		} while (r == 0 && hl_now_ms() < deadline);
		if (r == 0)
			return 0;
	}
}

/* Why the probe gave up: its first line on stderr (SSH), or its status. */
static char *probe_failure(struct nc_thread *t, int r)
{
	const char *name = t->h->host->name;
	char *err = t->err;

	if (r == 0)
		return hl_asprintf(
			"host '%s': the probe did not answer in time", name);
	if (t->errlen > 0) {
		err[t->errlen] = '\0';
		err[strcspn(err, "\n")] = '\0';
		if (strncmp(err, "hvdrun: ", 8) == 0)
			err += 8;
		return hl_asprintf("host '%s': %s", name, err);
	}
	return hl_asprintf("host '%s': the probe ended without answering",
			   name);
}

static void take_description(struct hl_nc_host *h, char type, const char *data,
			     size_t len)
{
	struct hl_pm_iface i;
	struct hl_nc_addr *a;
	char *s;

	switch (type) {
	case 'N':
	case 'M':
		s = hl_strndup(data, len);
		if (s == NULL)
			return;
		free(type == 'N' ? h->hostname : h->machine);
		*(type == 'N' ? &h->hostname : &h->machine) = s;
		return;
	case 'K':
		if (hl_pm_token(data, len, h->token) != HL_OK)
			h->token[0] = '\0';
		return;
	case 'P':
		if (hl_pm_port(data, len, &h->port) != HL_OK)
			h->port = 0;
		return;
	case 'I':
		if (hl_pm_iface(data, len, &i) != HL_OK)
			return;
		a = realloc(h->addrs, (h->naddrs + 1) * sizeof(*a));
		if (a == NULL)
			return;
		h->addrs = a;
		a = &h->addrs[h->naddrs++];
		a->ifname = hl_strdup(i.ifname);
		a->addr = hl_strdup(i.addr);
		a->loopback = i.loopback;
		a->candidate = false;
		return;
	case 'U':
		s = hl_strndup(data, len);
		if (s != NULL)
			hl_strvec_push_owned(&h->gpu, s);
		return;
	default:
		return;
	}
}

static void take_result(struct hl_netcheck *nc, const char *data, size_t len)
{
	struct hl_pm_result r;

	if (hl_pm_result(data, len, &r) == HL_OK && r.id < (long)nc->npairs) {
		struct hl_nc_pair *p = &nc->pairs[r.id];

		p->done = true;
		p->ok = r.ok;
		p->ms = r.us / 1000.0;
		free(p->error);
		p->error = p->ok ? NULL : hl_strdup(r.error);
	}
}

static void *host_main(void *arg)
{
	struct nc_thread *t = arg;
	struct hl_nc_host *h = t->h;
	long long deadline;
	const char *data;
	size_t len, used;
	char type;
	char *err = NULL;
	int r;

	if (h->remote) {
		err = start_remote(t);
	} else if (start_local(t) != 0) {
		err = hl_asprintf("host '%s': cannot start the probe: %s",
				  h->host->name, strerror(errno));
	}
	if (err != NULL) {
		set_phase(t, PH_FAILED, err);
		return NULL;
	}
	deadline = hl_now_ms() + 10000;
	while ((r = next(t, deadline, &used, &type, &data, &len)) == 1) {
		if (type == 'R')
			break;
		take_description(h, type, data, len);
		hl_buf_consume(&t->in, used);
	}
	if (r != 1 || h->port == 0 || strlen(h->token) != 32) {
		set_phase(t, PH_FAILED, probe_failure(t, r));
		return NULL;
	}
	hl_buf_consume(&t->in, used);
	set_phase(t, PH_DESCRIBED, NULL);
	if (wait_stage(t, ST_TEST) != ST_TEST)
		return NULL;
	r = t->ch != NULL ? (ssh_channel_write(t->ch, t->out.p,
					       (uint32_t)t->out.len) ==
			     (int)t->out.len)
			  : hl_write_all(t->fd, t->out.p, t->out.len) == 0;
	if (!r) {
		set_phase(t, PH_FAILED,
			  hl_asprintf("host '%s': the probe went away",
				      h->host->name));
		return NULL;
	}
	/* Every test ends by its timeout; 256 run at once. */
	deadline = hl_now_ms() + 5000 +
		   (long long)t->g->nc->timeout_ms *
			   (long long)(1 + t->ntargets / 256);
	while ((r = next(t, deadline, &used, &type, &data, &len)) == 1) {
		if (type == 'F')
			break;
		if (type == 'C') {
			pthread_mutex_lock(&t->g->lock);
			take_result(t->g->nc, data, len);
			pthread_mutex_unlock(&t->g->lock);
		}
		hl_buf_consume(&t->in, used);
	}
	if (r != 1) {
		set_phase(t, PH_FAILED, probe_failure(t, r));
		return NULL;
	}
	set_phase(t, PH_TESTED, NULL);
	/* The listener stays up until every host is done. */
	wait_stage(t, ST_END);
	return NULL;
}

static void thread_close(struct nc_thread *t)
{
	int status, i;

	if (t->ch != NULL) {
		ssh_channel_send_eof(t->ch);
		ssh_channel_close(t->ch);
		ssh_channel_free(t->ch);
	}
	if (t->s != NULL) {
		ssh_disconnect(t->s);
		ssh_free(t->s);
	}
	if (t->fd >= 0) {
		shutdown(t->fd, SHUT_WR);
		close(t->fd);
	}
	if (t->pid > 0) {
		/* EOF ends the probe at once; a stuck one gets a KILL. */
		for (i = 0; i < 100; i++) {
			if (waitpid(t->pid, &status, WNOHANG) != 0)
				break;
			poll(NULL, 0, 10);
		}
		if (i == 100) {
			kill(t->pid, SIGKILL);
			waitpid(t->pid, &status, 0);
		}
	}
	hl_buf_close(&t->in);
	hl_buf_close(&t->out);
}

/* Wait until every thread has left `phase` (or the deadline passes). */
static void wait_phase(struct nc_group *g, int phase, long long deadline,
		       const char *what, hl_nc_progress_fn progress, void *arg)
{
	size_t i, left, total = 0;

	for (i = 0; i < g->n; i++)
		total += g->t[i].phase == phase;
	pthread_mutex_lock(&g->lock);
	for (;;) {
		for (left = 0, i = 0; i < g->n; i++)
			left += g->t[i].phase == phase;
		if (progress != NULL) {
			pthread_mutex_unlock(&g->lock);
			progress(arg, what, total - left, total);
			pthread_mutex_lock(&g->lock);
		}
		if (left == 0 || hl_now_ms() >= deadline)
			break;
		hl_cond_wait_ms(&g->cond, &g->lock, 100);
	}
	pthread_mutex_unlock(&g->lock);
}

static void set_stage(struct nc_group *g, int stage)
{
	pthread_mutex_lock(&g->lock);
	g->stage = stage;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

/* Candidates, and each host's list of tests with its go. */
static int plan_tests(struct nc_group *g)
{
	struct hl_netcheck *nc = g->nc;
	char own[160];
	size_t i, j, a, np = 0, cap = 0;

	hl_machine_id(own, sizeof(own));
	nc->loopback = true;
	for (i = 0; i < nc->n; i++)
		if (nc->h[i].probed &&
		    (nc->h[i].machine == NULL || strcmp(nc->h[i].machine, own)))
			nc->loopback = false;
	for (i = 0; i < nc->n; i++) {
		struct hl_nc_host *h = &nc->h[i];

		for (a = 0; a < h->naddrs; a++) {
			struct hl_nc_addr *ad = &h->addrs[a];
			size_t k;
			bool seen = false;

			ad->candidate = nc->loopback || !ad->loopback;
			if (!ad->candidate)
				continue;
			for (k = 0; k < h->ifaces.n; k++)
				seen |= strcmp(h->ifaces.v[k], ad->ifname) == 0;
			if (!seen && hl_strvec_push(&h->ifaces, ad->ifname))
				return HL_ENOMEM;
		}
	}
	for (i = 0; i < nc->n; i++)
		for (j = 0; j < nc->n; j++)
			for (a = 0; i != j && nc->h[i].probed &&
				    nc->h[j].probed && a < nc->h[j].naddrs;
			     a++) {
				struct hl_nc_pair *p;

				if (!nc->h[j].addrs[a].candidate)
					continue;
				if (np == cap) {
					cap = cap ? cap * 2 : 64;
					p = realloc(nc->pairs,
						    cap * sizeof(*p));
					if (p == NULL)
						return HL_ENOMEM;
					nc->pairs = p;
				}
				p = &nc->pairs[np];
				memset(p, 0, sizeof(*p));
				p->from = i;
				p->to = j;
				p->addr = a;
				nc->npairs = ++np;
			}
	for (i = 0; i < nc->npairs; i++) {
		struct hl_nc_pair *p = &nc->pairs[i];
		struct hl_nc_host *to = &nc->h[p->to];
		struct hl_pm_target t = {.id = (long)i, .port = to->port};

		snprintf(t.addr, sizeof(t.addr), "%s", to->addrs[p->addr].addr);
		snprintf(t.token, sizeof(t.token), "%s", to->token);
		if (hl_pm_put_target(&g->t[p->from].out, &t) != HL_OK)
			return HL_ENOMEM;
		g->t[p->from].ntargets++;
	}
	for (i = 0; i < g->n; i++)
		if (hl_pm_put_go(&g->t[i].out, nc->timeout_ms) != HL_OK)
			return HL_ENOMEM;
	return HL_OK;
}

/* An interface of host j is selected when every other probed host
 * reached one of its addresses. */
static void select_interfaces(struct hl_netcheck *nc)
{
	size_t i, j, k, p, nprobed = 0;

	for (i = 0; i < nc->n; i++)
		nprobed += nc->h[i].probed;
	for (j = 0; j < nc->n; j++) {
		struct hl_nc_host *h = &nc->h[j];

		if (!h->probed)
			continue;
		for (k = 0; k < h->ifaces.n; k++) {
			bool all = true;

			for (i = 0; i < nc->n && all; i++) {
				bool reached = false;

				if (i == j || !nc->h[i].probed)
					continue;
				for (p = 0; p < nc->npairs; p++) {
					struct hl_nc_pair *q = &nc->pairs[p];

					if (q->from == i && q->to == j &&
					    q->ok &&
					    !strcmp(h->addrs[q->addr].ifname,
						    h->ifaces.v[k]))
						reached = true;
				}
				all = reached;
			}
			if (all)
				hl_strvec_push(&h->selected, h->ifaces.v[k]);
		}
		/* The selected interfaces first, each group in the host's
		 * order. */
		for (k = 0, p = 0; k < h->ifaces.n; k++) {
			bool sel = false;
			size_t q;

			for (q = 0; q < h->selected.n; q++)
				sel |= !strcmp(h->selected.v[q],
					       h->ifaces.v[k]);
			if (sel) {
				char *tmp = h->ifaces.v[k];

				memmove(&h->ifaces.v[p + 1], &h->ifaces.v[p],
					(k - p) * sizeof(char *));
				h->ifaces.v[p++] = tmp;
			}
		}
		h->usable = h->selected.n > 0 || (nprobed == 1 && nc->n == 1);
		if (!h->usable && h->error == NULL)
			h->error = hl_asprintf(
				"host '%s': no interface is reached by every other host",
				h->host->name);
	}
}

int hl_netcheck_run(struct hl_netcheck *nc, const struct hl_hostlist *hosts,
		    const bool *use, const struct hl_ssh_opts *so,
		    int timeout_ms, hl_nc_progress_fn progress, void *arg,
		    char **cause)
{
	struct nc_group g = {0};
	long long t0 = hl_now_ms();
	size_t i, n = 0;
	int rc = HL_OK;

	memset(nc, 0, sizeof(*nc));
	nc->timeout_ms = timeout_ms;
	for (i = 0; i < hosts->n; i++)
		n += use == NULL || use[i];
	nc->h = calloc(n ? n : 1, sizeof(*nc->h));
	g.t = calloc(n ? n : 1, sizeof(*g.t));
	if (nc->h == NULL || g.t == NULL) {
		free(g.t);
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	}
	for (i = 0; i < hosts->n; i++) {
		struct hl_nc_host *h;

		if (use != NULL && !use[i])
			continue;
		h = &nc->h[nc->n];
		h->host = &hosts->v[i];
		h->remote = so->force || !hosts->v[i].local;
		hl_strvec_init(&h->gpu);
		hl_strvec_init(&h->ifaces);
		hl_strvec_init(&h->selected);
		g.t[nc->n].g = &g;
		g.t[nc->n].h = h;
		g.t[nc->n].fd = -1;
		hl_buf_init(&g.t[nc->n].in);
		hl_buf_init(&g.t[nc->n].out);
		nc->n++;
	}
	g.nc = nc;
	g.so = so;
	g.n = nc->n;
	pthread_mutex_init(&g.lock, NULL);
	pthread_cond_init(&g.cond, NULL);
	for (i = 0; i < g.n; i++) {
		if (hl_thread_create(&g.t[i].th, host_main, &g.t[i]) != HL_OK) {
			set_phase(&g.t[i], PH_FAILED,
				  hl_strdup("cannot start a thread"));
			continue;
		}
		g.t[i].started = true;
	}
	/* SSH's own timeout bounds the connections; the probe's 10 s its
	 * description. */
	wait_phase(&g, PH_STARTING, t0 + so->connect_timeout_s * 1000 + 12000,
		   "connecting", progress, arg);
	pthread_mutex_lock(&g.lock);
	for (i = 0; i < g.n; i++)
		g.t[i].h->probed = g.t[i].phase == PH_DESCRIBED;
	pthread_mutex_unlock(&g.lock);
	rc = plan_tests(&g);
	if (rc != HL_OK) {
		set_stage(&g, ST_END);
	} else {
		set_stage(&g, ST_TEST);
		wait_phase(&g, PH_DESCRIBED,
			   hl_now_ms() + 10000 +
				   (long long)timeout_ms *
					   (long long)(1 + nc->npairs / 256),
			   "testing", progress, arg);
		set_stage(&g, ST_END);
	}
	for (i = 0; i < g.n; i++) {
		if (g.t[i].started)
			pthread_join(g.t[i].th, NULL);
		if (g.t[i].phase == PH_STARTING || g.t[i].phase == PH_DESCRIBED)
			set_phase(
				&g.t[i], PH_FAILED,
				hl_asprintf("host '%s' did not answer in time",
					    g.t[i].h->host->name));
		if (g.t[i].phase == PH_FAILED)
			g.t[i].h->probed = false;
		thread_close(&g.t[i]);
	}
	if (rc == HL_OK)
		select_interfaces(nc);
	for (i = 0; i < nc->n; i++)
		nc->nusable += nc->h[i].usable;
	nc->seconds = (double)(hl_now_ms() - t0) / 1000.0;
	pthread_cond_destroy(&g.cond);
	pthread_mutex_destroy(&g.lock);
	free(g.t);
	if (rc != HL_OK)
		return hl_fail(cause, rc, "out of memory");
	return HL_OK;
}

void hl_netcheck_close(struct hl_netcheck *nc)
{
	size_t i, a;

	for (i = 0; i < nc->n; i++) {
		struct hl_nc_host *h = &nc->h[i];

		for (a = 0; a < h->naddrs; a++) {
			free(h->addrs[a].ifname);
			free(h->addrs[a].addr);
		}
		free(h->addrs);
		free(h->error);
		free(h->hostname);
		free(h->machine);
		hl_strvec_close(&h->gpu);
		hl_strvec_close(&h->ifaces);
		hl_strvec_close(&h->selected);
	}
	for (i = 0; i < nc->npairs; i++)
		free(nc->pairs[i].error);
	free(nc->pairs);
	free(nc->h);
	memset(nc, 0, sizeof(*nc));
}

const char *hl_nc_pair_ifname(const struct hl_netcheck *nc,
			      const struct hl_nc_pair *p)
{
	return nc->h[p->to].addrs[p->addr].ifname;
}

const char *hl_nc_gpu_fact(const struct hl_nc_host *h, const char *key)
{
	return hl_pm_gpu_fact(&h->gpu, key);
}
