/* ssh/host.c: one host's thread of the SSH spawner. It owns the host's
 * session: connects, authenticates and checks the host key (ssh/conn.h),
 * finds MASTER_PORT there when rank 0 is there, starts its ranks (one
 * `hvdrun --agent` per rank over rchan.h, the job in records.h), then
 * pumps the channels' output into per-rank pipes that the supervisor reads
 * like a local worker's, forwards the supervisor's signals from its
 * control pipe, and reports each exit on the notify pipe. Both pipes'
 * messages are defined here, encoder beside decoder. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/wire.h"
#include "ssh/rchan.h"
#include "agent/records.h"
#include "ssh/host.h"
#include "ssh/conn.h"

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
	return &h->host;
}

/* Run `hvdrun --free-port` there: MASTER_PORT must be free on rank 0's
 * host, not here, and MASTER_ADDR is that host's address on the
 * interfaces chosen for it, when some were. */
static void find_port(struct ssh_host *h)
{
	char **ifs = h->g->l->env->host_ifaces;
	char buf[HL_FREE_PORT_LEN];
	struct hl_rchan c;
	size_t n;

	if (hl_rchan_ssh(&c, h->s, host_of(h)->name, h->g->l->ssh->agent_path,
			 "--free-port", ifs ? ifs[h->index] : NULL, NULL,
			 NULL) != HL_OK)
		return;
	n = hl_rchan_read_all(&c, buf, sizeof(buf),
			      hl_now_ms() +
				      h->g->l->ssh->start_timeout_s * 1000LL);
	if (hl_free_port_parse(buf, n, &h->port, h->addr) != HL_OK)
		h->port = 0;
	hl_rchan_close(&c);
}

static int connect_host(struct ssh_host *h)
{
	char *err = NULL;

	if (hl_ssh_connect(host_of(h), h->g->l->ssh, &h->s, &err) != HL_OK) {
		host_fail(h, "%s", err ? err : "out of memory");
		free(err);
		return HL_ESTART;
	}
	/* Elastic: a host that falls silent (its link down, the machine
	 * off) ends its session within about 5 s, even while none of its
	 * workers holds a rendezvous connection that the rendezvous watches
	 * (about 2 s), as in the moment of a reset. */
	if (h->g->l->rdv != NULL)
		hl_watch_silence(ssh_get_fd(h->s), 2, 5000);
	if (h->want_port)
		find_port(h);
	return HL_OK;
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
	struct hl_strvec env = r->env;
	size_t i;
	int rc = HL_OK;

	/* Sessions of the start build it here, once MASTER_PORT is known;
	 * late ones got theirs when added. */
	if (!h->late)
		rc = hl_spawn_remote_env(l, r->w, &env);
	if (rc != HL_OK)
		return rc;
	rc = hl_rec_put_version(b);
	if (rc == HL_OK)
		rc = hl_rec_put(b, 'D', l->ssh->cwd, strlen(l->ssh->cwd));
	for (i = 0; i < env.n && rc == HL_OK; i++)
		rc = hl_rec_put(b, 'E', env.v[i], strlen(env.v[i]));
	for (i = 0; l->argv[i] != NULL && rc == HL_OK; i++)
		rc = hl_rec_put(b, 'A', l->argv[i], strlen(l->argv[i]));
	if (rc == HL_OK)
		rc = hl_ssh_input_records(r, b);
	if (rc == HL_OK)
		rc = hl_rec_put(b, 'G', NULL, 0);
	if (!h->late)
		hl_strvec_close(&env);
	return rc;
}

static int start_rank(struct ssh_host *h, struct rank_ch *r)
{
	const char *name = host_of(h)->name;
	struct hl_rchan c;
	struct hl_buf b;
	char *err = NULL;
	int rc = -1;

	hl_buf_init(&b);
	ssh_callbacks_init(&r->cb);
	r->cb.userdata = r;
	r->cb.channel_exit_status_function = on_exit_status;
	r->cb.channel_exit_signal_function = on_exit_signal;
	if (hl_rchan_ssh(&c, h->s, name, h->g->l->ssh->agent_path, "--agent",
			 NULL, &r->cb, &err) != HL_OK) {
		host_fail(h, "%s (rank %d)", err ? err : "out of memory",
			  r->w->rank);
		goto out;
	}
	r->ch = c.ch; /* pumped and closed with the host's other ranks */
	if (job_records(h, r, &b) != HL_OK ||
	    hl_rchan_write(&c, b.p, b.len) != HL_OK) {
		host_fail(h, "host '%s': cannot send rank %d its job: %s", name,
			  r->w->rank, ssh_get_error(h->s));
		goto out;
	}
	rc = 0;
out:
	hl_buf_close(&b);
	free(err);
	return rc;
}

/* kind: 'x' (exited), 'l' (session lost), 's' (host silent): notes.c. */
static void notify(struct ssh_host *h, struct rank_ch *r, char kind)
{
	r->done = true;
	if (!atomic_load(&r->superseded))
		hl_note_write(h->g->notify_fd, r->w->rank, r->status, kind);
}

/* How the session was lost: 's' when its socket timed out (keepalive or
 * unacknowledged data: connect_host) or the host became unreachable;
 * libssh words a socket's error "Socket error: " and its strerror. */
static char loss_kind(struct ssh_host *h)
{
	const char *e = ssh_get_error(h->s);

	return e != NULL && (strstr(e, strerror(ETIMEDOUT)) != NULL ||
			     strstr(e, strerror(EHOSTUNREACH)) != NULL)
		       ? 's'
		       : 'l';
}

/* Move what the channel has to the supervisor (its stdout through
 * input.c). HL_ESTART: the session is lost. */
static int pump_rank(const struct ssh_host *h, struct rank_ch *r)
{
	char buf[32768];
	int j, n;

	for (j = 0; j < 2; j++) {
		while ((n = ssh_channel_read_nonblocking(r->ch, buf,
							 sizeof(buf), j)) > 0)
			if (atomic_load(&r->superseded))
				continue;
			else if (j == 0)
				hl_ssh_output(h, r, buf, (size_t)n);
			else
				hl_note_output(h->g->notify_fd, r->w->rank, j,
					       buf, (size_t)n);
		if (n == SSH_ERROR)
			return HL_ESTART;
	}
	return HL_OK;
}

/* A signal for one rank, from the supervisor on the host's control
 * pipe: rank and signal, big-endian. */
#define CTL_LEN 8

void hl_ssh_host_signal(struct ssh_host *h, int rank, int sig)
{
	unsigned char msg[CTL_LEN];
	struct wire_w w;

	wire_w_fixed(&w, msg, sizeof(msg));
	wire_put_u32(&w, (uint32_t)rank);
	wire_put_u32(&w, (uint32_t)sig);
	(void)hl_write_all(h->ctl[1], msg, w.len);
}

static void forward_signals(struct ssh_host *h, bool *quit)
{
	unsigned char msg[CTL_LEN];
	struct wire_r rd;
	ssize_t n;
	size_t i;

	while ((n = read(h->ctl[0], msg, sizeof(msg))) ==
	       (ssize_t)sizeof(msg)) {
		int rank, sig;

		wire_r_init(&rd, msg, sizeof(msg));
		rank = (int)wire_get_u32(&rd);
		sig = (int)wire_get_u32(&rd);
		for (i = 0; i < h->nranks; i++) {
			struct rank_ch *r = &h->ranks[i];
			struct hl_buf b;

			if (r->w->rank != rank || r->done)
				continue;
			hl_buf_init(&b);
			if (hl_rec_put_signal(&b, sig) == HL_OK)
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
		bool lost;

		hl_ssh_input_poll(h, ev);
		lost = ssh_event_dopoll(ev, 100) == SSH_ERROR ||
		       !ssh_is_connected(h->s);
		if (!lost)
			hl_ssh_input_send(h, ev);
		if (ctl_ready) {
			ctl_ready = false;
			forward_signals(h, &quit);
		}
		for (i = 0; i < h->nranks && !lost; i++) {
			struct rank_ch *r = &h->ranks[i];

			if (r->done)
				continue;
			if (pump_rank(h, r) != HL_OK) {
				lost = true;
				break;
			}
			if (ssh_channel_is_eof(r->ch) &&
			    (r->got_exit || ssh_channel_is_closed(r->ch))) {
				if (!r->got_exit)
					r->status = 255 << 8;
				notify(h, r, 'x');
				left--;
			}
		}
		if (lost) {
			char kind = loss_kind(h);

			for (i = 0; i < h->nranks; i++)
				if (!h->ranks[i].done) {
					h->ranks[i].status = 255 << 8;
					notify(h, &h->ranks[i], kind);
				}
			break;
		}
	}
	for (i = 0; i < h->nranks; i++)
		hl_ssh_input_end(&h->ranks[i], ev);
	if (ev != NULL) {
		ssh_event_remove_fd(ev, h->ctl[0]);
		ssh_event_remove_session(ev, h->s);
		ssh_event_free(ev);
	}
}

/* Elastic: a session started again that could not start its workers
 * (the host is still unreachable): they are lost, as they would be with
 * a host lost later, and the reason is the first one's last line. The
 * channels already open close: their agents end their workers. */
static void late_failed(struct ssh_host *h)
{
	size_t i;
	bool abort;

	pthread_mutex_lock(&h->g->lock);
	abort = h->g->abort;
	pthread_mutex_unlock(&h->g->lock);
	if (!h->late || abort)
		return;
	for (i = 0; i < h->nranks; i++) {
		struct rank_ch *r = &h->ranks[i];

		if (r->ch != NULL) {
			ssh_channel_close(r->ch);
			ssh_channel_free(r->ch);
			r->ch = NULL;
		}
		if (i == 0 && h->error != NULL) {
			char *line = hl_asprintf("hvdrun: %s\n", h->error);

			if (line != NULL)
				hl_note_output(h->g->notify_fd, r->w->rank, 1,
					       line, strlen(line));
			free(line);
		}
		r->status = 255 << 8;
		notify(h, r, 'l');
	}
}

static void host_main(struct ssh_host *h)
{
	struct ssh_group *g = h->g;
	size_t i;
	bool go;

	sem_wait(&g->slots);
	pthread_mutex_lock(&g->lock);
	go = !g->abort;
	pthread_mutex_unlock(&g->lock);
	if (go && connect_host(h) == HL_OK) {
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
	if (!go) {
		late_failed(h);
		return;
	}
	for (i = 0; i < h->nranks; i++)
		if (start_rank(h, &h->ranks[i]) != 0) {
			late_failed(h);
			return;
		}
	pthread_mutex_lock(&g->lock);
	h->started = true;
	g->nstarted++;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	pump(h);
}

void *hl_ssh_host_main(void *arg)
{
	struct ssh_host *h = arg;

	host_main(h);
	atomic_store(&h->finished, true);
	return NULL;
}
