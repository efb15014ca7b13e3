/* spawn_ssh.c: starts remote workers over SSH with libssh. One session per
 * host (or per `channels_per_session` ranks of a host: sshd's MaxSessions
 * bounds the channels of one session), opened to every host in parallel (at
 * most `concurrency` at once), with TCP_NODELAY; one exec channel per rank, running `hvdrun
 * --agent` (agent.h), which receives the working directory, environment
 * and command on the channel's stdin. Each host has a thread that owns its
 * session: it connects, authenticates, checks the host key, starts its
 * ranks, then pumps the channels' output into per-rank pipes that the
 * supervisor reads like a local worker's, and reports exits on the notify
 * pipe. The supervisor reaches a rank through its host's control pipe. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch.h"
#include "records.h"
#include "sshconn.h"

struct rank_ch {
	struct hl_worker *w;
	ssh_channel ch;
	int out_w, err_w; /* write ends of the worker's output pipes */
	struct ssh_channel_callbacks_struct cb;
	bool got_exit;
	int status; /* wait(2)-style */
	bool done;
};

struct ssh_host {
	struct ssh_group *g;
	size_t index; /* in the host list */
	ssh_session s;
	pthread_t thread;
	bool thread_started;
	struct rank_ch *ranks;
	size_t nranks;
	int ctl[2]; /* control pipe: {rank, signal} from the supervisor */
	bool connected;
	bool started;
	bool failed;
	char *error;
	bool want_port; /* rank 0 is here: find MASTER_PORT */
	int port;
	char addr[INET_ADDRSTRLEN]; /* MASTER_ADDR, "" for the host's name */
};

struct ssh_group {
	const struct hl_launch *l;
	struct hl_worker *w;
	int notify_fd;
	struct ssh_host *hosts;
	size_t nhosts;
	sem_t slots;	      /* bounds connections in progress */
	pthread_mutex_t lock; /* protects the phase counters and go/abort */
	pthread_cond_t cond;
	size_t nconnected, nstarted, nfailed;
	bool go, abort;
};

/* One exit report to the supervisor. */
struct hl_exit_note {
	int rank;
	int status;
	int lost; /* 1: the connection to the host was lost */
};

static void host_fail(struct ssh_host *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void host_fail(struct ssh_host *h, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = hl_vasprintf(fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&h->g->lock);
	if (!h->failed) {
		h->failed = true;
		h->error = msg;
		msg = NULL;
		h->g->nfailed++;
	}
	pthread_cond_broadcast(&h->g->cond);
	pthread_mutex_unlock(&h->g->lock);
	free(msg);
}

static const struct hl_host *host_of(const struct ssh_host *h)
{
	return &h->g->l->hosts->v[h->index];
}

/* Names a shell takes as they are (interface names usually are). */
static bool shell_plain(const char *s)
{
	return s != NULL && *s != '\0' &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_.,@-") == strlen(s);
}

/* Run `hvdrun --free-port` there: MASTER_PORT must be free on rank 0's
 * host, not here, and MASTER_ADDR is that host's address on the
 * interfaces chosen for it, when some were. */
static void find_port(struct ssh_host *h)
{
	ssh_channel ch = ssh_channel_new(h->s);
	char buf[64] = "", *cmd, *line, *addr, *save = NULL;
	char **ifs = h->g->l->env->host_ifaces;
	const char *want = ifs ? ifs[h->index] : NULL;
	int n = 0, r;
	long port;

	cmd = hl_asprintf("exec '%s' --free-port%s%s", h->g->l->ssh->agent_path,
			  shell_plain(want) ? " " : "",
			  shell_plain(want) ? want : "");
	if (ch != NULL && cmd != NULL &&
	    ssh_channel_open_session(ch) == SSH_OK &&
	    ssh_channel_request_exec(ch, cmd) == SSH_OK)
		while (n < (int)sizeof(buf) - 1 &&
		       (r = ssh_channel_read(ch, buf + n,
					     sizeof(buf) - 1 - (size_t)n, 0)) >
			       0)
			n += r;
	buf[n] = '\0';
	line = strtok_r(buf, "\n", &save);
	line = line ? strtok_r(line, " ", &save) : NULL;
	addr = line ? strtok_r(NULL, " ", &save) : NULL;
	if (hl_parse_long(line, 1, 65535, &port)) {
		struct in_addr a;

		h->port = (int)port;
		if (addr != NULL && inet_pton(AF_INET, addr, &a) == 1)
			snprintf(h->addr, sizeof(h->addr), "%s", addr);
	}
	if (ch != NULL) {
		ssh_channel_close(ch);
		ssh_channel_free(ch);
	}
	free(cmd);
}

static int connect_host(struct ssh_host *h)
{
	char *err = NULL;

	if (hl_ssh_connect(host_of(h), h->g->l->ssh, &h->s, &err) != 0) {
		host_fail(h, "%s", err ? err : "out of memory");
		free(err);
		return -1;
	}
	if (h->want_port)
		find_port(h);
	return 0;
}

static void on_exit_status(ssh_session s, ssh_channel ch, int code, void *ud)
{
	struct rank_ch *r = ud;

	(void)s;
	(void)ch;
	r->got_exit = true;
	r->status = (code & 0xff) << 8;
}

static void on_exit_signal(ssh_session s, ssh_channel ch, const char *sig,
			   int core, const char *errmsg, const char *lang,
			   void *ud)
{
	struct rank_ch *r = ud;
	int n;

	(void)s;
	(void)ch;
	(void)core;
	(void)errmsg;
	(void)lang;
	r->got_exit = true;
	r->status = SIGKILL;
	for (n = 1; n < NSIG; n++) {
		const char *abbrev = sigabbrev_np(n);

		if (abbrev != NULL && strcmp(abbrev, sig) == 0) {
			r->status = n;
			break;
		}
	}
}

static int job_records(struct ssh_host *h, const struct rank_ch *r,
		       struct hl_buf *b)
{
	const struct hl_launch *l = h->g->l;
	struct hl_strvec fwd, env;
	size_t i;
	int rc = HL_OK;

	hl_strvec_init(&fwd);
	for (i = 0; i < l->env->forward.n && rc == HL_OK; i++) {
		const char *v = getenv(l->env->forward.v[i]);

		if (v != NULL)
			rc = hl_strvec_pushf(&fwd, "%s=%s",
					     l->env->forward.v[i], v);
	}
	if (rc == HL_OK)
		rc = hl_env_build(fwd.v, l->env, l->plan, l->hosts, r->w->rank,
				  &env);
	hl_strvec_close(&fwd);
	if (rc != HL_OK)
		return rc;
	rc = hl_proto_put(b, 'D', l->ssh->cwd, strlen(l->ssh->cwd));
	for (i = 0; i < env.n && rc == HL_OK; i++)
		rc = hl_proto_put(b, 'E', env.v[i], strlen(env.v[i]));
	for (i = 0; l->argv[i] != NULL && rc == HL_OK; i++)
		rc = hl_proto_put(b, 'A', l->argv[i], strlen(l->argv[i]));
	if (rc == HL_OK)
		rc = hl_proto_put(b, 'G', NULL, 0);
	hl_strvec_close(&env);
	return rc;
}

static int start_rank(struct ssh_host *h, struct rank_ch *r)
{
	const char *name = host_of(h)->name;
	char *cmd = hl_ssh_self_command(h->g->l->ssh->agent_path, "--agent");
	struct hl_buf b;
	int rc = -1;

	hl_buf_init(&b);
	r->ch = ssh_channel_new(h->s);
	if (r->ch == NULL || cmd == NULL ||
	    ssh_channel_open_session(r->ch) != SSH_OK) {
		host_fail(h, "host '%s': cannot open a channel for rank %d: %s",
			  name, r->w->rank, ssh_get_error(h->s));
		goto out;
	}
	ssh_callbacks_init(&r->cb);
	r->cb.userdata = r;
	r->cb.channel_exit_status_function = on_exit_status;
	r->cb.channel_exit_signal_function = on_exit_signal;
	ssh_set_channel_callbacks(r->ch, &r->cb);
	if (ssh_channel_request_exec(r->ch, cmd) != SSH_OK) {
		host_fail(h, "host '%s': cannot start rank %d: %s", name,
			  r->w->rank, ssh_get_error(h->s));
		goto out;
	}
	if (job_records(h, r, &b) != HL_OK ||
	    ssh_channel_write(r->ch, b.p, (uint32_t)b.len) != (int)b.len) {
		host_fail(h, "host '%s': cannot send rank %d its job: %s", name,
			  r->w->rank, ssh_get_error(h->s));
		goto out;
	}
	rc = 0;
out:
	hl_buf_close(&b);
	free(cmd);
	return rc;
}

static void notify(struct ssh_host *h, struct rank_ch *r, int lost)
{
	struct hl_exit_note n = {r->w->rank, r->status, lost};

	r->done = true;
	close(r->out_w);
	close(r->err_w);
	r->out_w = r->err_w = -1;
	(void)hl_write_all(h->g->notify_fd, &n, sizeof(n));
}

/* Move what the channel has into the worker's pipes. -1: session lost. */
static int pump_rank(struct rank_ch *r)
{
	char buf[32768];
	int j, n;

	for (j = 0; j < 2; j++) {
		while ((n = ssh_channel_read_nonblocking(r->ch, buf,
							 sizeof(buf), j)) > 0)
			(void)hl_write_all(j ? r->err_w : r->out_w, buf,
					   (size_t)n);
		if (n == SSH_ERROR)
			return -1;
	}
	return 0;
}

static void forward_signals(struct ssh_host *h, bool *quit)
{
	int msg[2];
	ssize_t n;
	size_t i;

	while ((n = read(h->ctl[0], msg, sizeof(msg))) ==
	       (ssize_t)sizeof(msg)) {
		for (i = 0; i < h->nranks; i++) {
			struct rank_ch *r = &h->ranks[i];
			struct hl_buf b;

			if (r->w->rank != msg[0] || r->done)
				continue;
			hl_buf_init(&b);
			if (hl_proto_put_signal(&b, msg[1]) == HL_OK)
				ssh_channel_write(r->ch, b.p, (uint32_t)b.len);
			hl_buf_close(&b);
		}
	}
	if (n == 0)
		*quit = true; /* the supervisor is done with us */
}

static int on_ctl(socket_t fd, int revents, void *userdata)
{
	bool *ready = userdata;

	(void)fd;
	(void)revents;
	*ready = true;
	return 0;
}

/* libssh's event loop processes every packet of the session; a plain
 * poll on its socket would not (after a channel's EOF, libssh reads no
 * more packets for it, and its exit status would never be seen). */
static void pump(struct ssh_host *h)
{
	ssh_event ev = ssh_event_new();
	size_t left = h->nranks, i;
	bool quit = false, ctl_ready = false;

	if (ev == NULL || ssh_event_add_session(ev, h->s) != SSH_OK ||
	    ssh_event_add_fd(ev, h->ctl[0], POLLIN, on_ctl, &ctl_ready) !=
		    SSH_OK)
		quit = true;
	while (left > 0 && !quit) {
		bool lost = ssh_event_dopoll(ev, 100) == SSH_ERROR ||
			    !ssh_is_connected(h->s);

		if (ctl_ready) {
			ctl_ready = false;
			forward_signals(h, &quit);
		}
		for (i = 0; i < h->nranks && !lost; i++) {
			struct rank_ch *r = &h->ranks[i];

			if (r->done)
				continue;
			if (pump_rank(r) != 0) {
				lost = true;
				break;
			}
			if (ssh_channel_is_eof(r->ch) &&
			    (r->got_exit || ssh_channel_is_closed(r->ch))) {
				if (!r->got_exit)
					r->status = 255 << 8;
				notify(h, r, 0);
				left--;
			}
		}
		if (lost) {
			for (i = 0; i < h->nranks; i++)
				if (!h->ranks[i].done) {
					h->ranks[i].status = 255 << 8;
					notify(h, &h->ranks[i], 1);
				}
			break;
		}
	}
	if (ev != NULL) {
		ssh_event_remove_fd(ev, h->ctl[0]);
		ssh_event_remove_session(ev, h->s);
		ssh_event_free(ev);
	}
}

static void *host_main(void *arg)
{
	struct ssh_host *h = arg;
	struct ssh_group *g = h->g;
	size_t i;
	bool go;

	sem_wait(&g->slots);
	pthread_mutex_lock(&g->lock);
	go = !g->abort;
	pthread_mutex_unlock(&g->lock);
	if (go && connect_host(h) == 0) {
		pthread_mutex_lock(&g->lock);
		h->connected = true;
		g->nconnected++;
		pthread_cond_broadcast(&g->cond);
		pthread_mutex_unlock(&g->lock);
	}
	sem_post(&g->slots);
	/* Wait for the supervisor's go (or abort). */
	pthread_mutex_lock(&g->lock);
	while (h->connected && !g->go && !g->abort)
		pthread_cond_wait(&g->cond, &g->lock);
	go = h->connected && g->go && !g->abort;
	pthread_mutex_unlock(&g->lock);
	if (!go)
		return NULL;
	for (i = 0; i < h->nranks; i++)
		if (start_rank(h, &h->ranks[i]) != 0)
			return NULL;
	pthread_mutex_lock(&g->lock);
	h->started = true;
	g->nstarted++;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	pump(h);
	return NULL;
}

/* Wait until pred holds or the deadline passes. */
static bool wait_until(struct ssh_group *g, size_t *counter, size_t want,
		       long long deadline_ms)
{
	bool ok;

	pthread_mutex_lock(&g->lock);
	while (*counter < want && g->nfailed == 0 && hl_now_ms() < deadline_ms)
		hl_cond_wait_ms(&g->cond, &g->lock, 50);
	ok = *counter >= want && g->nfailed == 0;
	pthread_mutex_unlock(&g->lock);
	return ok;
}

static int group_error(struct ssh_group *g, const char *phase, char **cause)
{
	size_t i;

	for (i = 0; i < g->nhosts; i++)
		if (g->hosts[i].failed)
			return hl_fail(cause, HL_ESTART, "%s",
				       g->hosts[i].error ? g->hosts[i].error
							 : "out of memory");
	for (i = 0; i < g->nhosts; i++) {
		struct ssh_host *h = &g->hosts[i];

		if ((!strcmp(phase, "connect") && !h->connected) ||
		    (!strcmp(phase, "start") && !h->started))
			return hl_fail(
				cause, HL_ESTART,
				"host '%s' did not answer within %d s (start timeout)",
				g->l->hosts->v[h->index].name,
				g->l->ssh->start_timeout_s);
	}
	return hl_fail(cause, HL_ESTART, "SSH start failed");
}

static int ssh_open(void **ctx, const struct hl_launch *l, struct hl_worker *w,
		    int notify_fd, char **cause)
{
	struct ssh_group *g = calloc(1, sizeof(*g));
	int cps = l->ssh->channels_per_session;
	size_t i, hi;
	int r;

	*ctx = g;
	if (g == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	g->l = l;
	g->w = w;
	g->notify_fd = notify_fd;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	sem_init(&g->slots, 0, (unsigned)l->ssh->concurrency);
	/* At most one session per rank: the upper bound. */
	g->hosts = calloc((size_t)l->plan->size, sizeof(*g->hosts));
	if (g->hosts == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	/* One session per remote host that has ranks; more where the host
	 * has more ranks than sshd lets one session hold (MaxSessions). */
	for (hi = 0; hi < l->hosts->n; hi++) {
		struct ssh_host *h = NULL;
		bool first = true;

		if (!hl_worker_remote(l, hi))
			continue;
		for (r = 0; r < l->plan->size; r++) {
			int p[2][2];

			if (l->plan->ranks[r].host != hi)
				continue;
			if (h == NULL || h->nranks == (size_t)cps) {
				h = &g->hosts[g->nhosts++];
				h->g = g;
				h->index = hi;
				h->ctl[0] = h->ctl[1] = -1;
				h->ranks =
					calloc((size_t)cps, sizeof(*h->ranks));
				if (h->ranks == NULL ||
				    pipe2(h->ctl, O_CLOEXEC) != 0)
					return hl_fail(cause, HL_ESYS,
						       "out of resources");
				fcntl(h->ctl[0], F_SETFL, O_NONBLOCK);
				h->want_port =
					first && l->plan->ranks[0].host == hi;
				first = false;
			}
			if (pipe2(p[0], O_CLOEXEC) != 0 ||
			    pipe2(p[1], O_CLOEXEC) != 0)
				return hl_fail(cause, HL_ESYS, "pipe: %s",
					       strerror(errno));
			h->ranks[h->nranks].w = &w[r];
			h->ranks[h->nranks].out_w = p[0][1];
			h->ranks[h->nranks].err_w = p[1][1];
			h->nranks++;
			w[r].fd[0] = p[0][0];
			w[r].fd[1] = p[1][0];
			fcntl(w[r].fd[0], F_SETFL, O_NONBLOCK);
			fcntl(w[r].fd[1], F_SETFL, O_NONBLOCK);
		}
	}
	for (i = 0; i < g->nhosts; i++) {
		if (hl_thread_create(&g->hosts[i].thread, host_main,
				     &g->hosts[i]) != HL_OK)
			return hl_fail(cause, HL_ESYS, "cannot start a thread");
		g->hosts[i].thread_started = true;
	}
	if (!wait_until(g, &g->nconnected, g->nhosts,
			hl_now_ms() + l->ssh->start_timeout_s * 1000LL))
		return group_error(g, "connect", cause);
	for (i = 0; i < g->nhosts; i++)
		if (g->hosts[i].want_port && g->hosts[i].port > 0) {
			l->env->master_port = g->hosts[i].port;
			if (g->hosts[i].addr[0] != '\0' &&
			    hl_master_addr(l->env, g->hosts[i].addr, cause) !=
				    HL_OK)
				return HL_ENOMEM;
		}
	return HL_OK;
}

static int ssh_start(void *ctx, char **cause)
{
	struct ssh_group *g = ctx;

	pthread_mutex_lock(&g->lock);
	g->go = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	if (!wait_until(g, &g->nstarted, g->nhosts,
			hl_now_ms() + g->l->ssh->start_timeout_s * 1000LL))
		return group_error(g, "start", cause);
	return HL_OK;
}

static int ssh_signal(void *ctx, struct hl_worker *w, int sig)
{
	struct ssh_group *g = ctx;
	int msg[2] = {w->rank, sig};
	size_t i;

	for (i = 0; i < g->nhosts; i++)
		if (g->l->plan->ranks[w->rank].host == g->hosts[i].index &&
		    g->hosts[i].ctl[1] >= 0)
			(void)!write(g->hosts[i].ctl[1], msg, sizeof(msg));
	return HL_OK;
}

static void ssh_close(void *ctx)
{
	struct ssh_group *g = ctx;
	size_t i, j;

	if (g == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	g->abort = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	for (i = 0; i < g->nhosts; i++) {
		struct ssh_host *h = &g->hosts[i];

		if (h->ctl[1] >= 0)
			close(h->ctl[1]); /* the pump's quit */
		if (h->thread_started)
			pthread_join(h->thread, NULL);
		for (j = 0; j < h->nranks; j++) {
			struct rank_ch *r = &h->ranks[j];

			if (r->ch != NULL) {
				/* The agent sees EOF and ends the worker. */
				ssh_channel_close(r->ch);
				ssh_channel_free(r->ch);
			}
			if (!r->done) {
				close(r->out_w);
				close(r->err_w);
			}
		}
		if (h->s != NULL) {
			ssh_disconnect(h->s);
			ssh_free(h->s);
		}
		if (h->ctl[0] >= 0)
			close(h->ctl[0]);
		free(h->ranks);
		free(h->error);
	}
	free(g->hosts);
	sem_destroy(&g->slots);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

int hl_ssh_read_note(int fd, int *rank, int *status, bool *lost)
{
	struct hl_exit_note n;
	ssize_t r = read(fd, &n, sizeof(n));

	if (r != (ssize_t)sizeof(n))
		return -1;
	*rank = n.rank;
	*status = n.status;
	*lost = n.lost != 0;
	return 0;
}

const struct hl_spawner_ops hl_spawn_ssh = {
	.name = "ssh",
	.open = ssh_open,
	.start = ssh_start,
	.signal = ssh_signal,
	.close = ssh_close,
};
