/* rdv/server.c: see rdv/server.h. One thread, one poll loop over the
 * listening socket and every connection; no connection can hold up
 * another. The connections are conns.c's, an elastic job's generations
 * elastic/generations.c's; here the static protocol, start and stop. */
#include "rdv/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/rendezvous.h"
#include "proto/ifaces.h"
#include "proto/worker_env.h"
#include "util/util.h"

/* Every worker connects at once as the job starts; one that finds the
 * accept queue full is dropped and tries again a second later. The
 * kernel holds the backlog to net.core.somaxconn (4,096 by default). */
#define BACKLOG 65535

/* Read what the connection sent; admit it once its REGISTER verifies. */
static void serve(struct hl_rdv *r, size_t i)
{
	struct conn *c = &r->conns[i];
	uint8_t mac[RDV_MAC_LEN];
	ssize_t n;
	long used;

	n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
	if (n < 0 && (errno == ETIMEDOUT || errno == EHOSTUNREACH) &&
	    r->elastic && c->registered)
		r->gens->host_lost(r, c->reg.rank);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		hl_rdv__drop(r, i);
		return;
	}
	if (n < 0 || c->registered)
		return; /* registered workers only wait for PEERS */
	c->len += (size_t)n;
	used = rdv_register_decode(c->buf, c->len, &c->reg);
	if (used == 0 && c->len < sizeof(c->buf))
		return;
	/* Malformed, a wrong secret, a rank out of range or taken: out.
	 * Elastic: rank is the worker's id, size its last generation. */
	if (used <= 0 || !rdv_register_verify(&c->reg, r->secret, c->nonce) ||
	    (r->elastic ? c->reg.size > r->gen
			: c->reg.size != (uint32_t)r->size ||
				  c->reg.rank >= (uint32_t)r->size ||
				  r->by_rank[c->reg.rank] >= 0)) {
		hl_rdv__drop(r, i);
		return;
	}
	rdv_welcome_mac(r->secret, c->reg.nonce, c->reg.rank, mac);
	if (send(c->fd, mac, sizeof(mac), MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(mac)) {
		hl_rdv__drop(r, i);
		return;
	}
	c->registered = true;
	if (!r->elastic)
		hl_rdv__take_slot(r, i, (int)c->reg.rank);
	else
		r->gens->supersede(r, i);
	if (r->elastic && r->finishing)
		r->gens->idle(r, c->reg.rank);
}

/* Static: the round's ranks were sent PEERS, or the round failed (their
 * hvd_init() fails): their connections close, and the next round, that
 * every rank's next hvd_init() forms, begins. */
static void next_round(struct hl_rdv *r)
{
	size_t i;
	int rank;

	for (i = 0; i < r->nconns; i++)
		if (r->conns[i].fd >= 0 && r->conns[i].registered)
			hl_rdv__drop(r, i);
	for (rank = 0; rank < r->size; rank++)
		r->by_rank[rank] = -1;
	r->nregistered = 0;
	r->formed = false;
	r->deadline = 0;
	r->round++;
}

static void report_missing(struct hl_rdv *r)
{
	char msg[512];
	size_t off;
	int rank, shown = 0;

	if (r->elastic)
		off = (size_t)snprintf(
			msg, sizeof(msg),
			"rendezvous: generation %u: %d of %d ranks never joined within %d s (start timeout):",
			r->gen, r->size - r->nregistered, r->size,
			r->timeout_s);
	else
		off = (size_t)snprintf(
			msg, sizeof(msg),
			"rendezvous: %d of %d ranks never joined within %d s (start timeout):",
			r->size - r->nregistered, r->size, r->timeout_s);
	for (rank = 0; rank < r->size && off < sizeof(msg) - 16; rank++) {
		if (r->by_rank[rank] >= 0)
			continue;
		if (shown++ == 16) {
			snprintf(msg + off, sizeof(msg) - off, " ...");
			break;
		}
		off += (size_t)snprintf(msg + off, sizeof(msg) - off, " %d",
					rank);
	}
	hl_rdv__report(r, msg);
}

static void *rdv_main(void *arg)
{
	struct hl_rdv *r = arg;
	struct pollfd *pf = NULL;
	size_t i;

	for (;;) {
		long long now = hl_now_ms();
		int timeout = 1000, n = 0;
		struct pollfd *npf;

		pthread_mutex_lock(&r->lock);
		if (r->elastic)
			r->gens->progress(r);
		if (!r->elastic && r->nregistered == r->size) {
			hl_rdv__send_peers(r);
			next_round(r);
		}
		if (r->deadline != 0 && now >= r->deadline) {
			report_missing(r);
			r->deadline = 0;
			if (!r->elastic)
				next_round(r);
		}
		if (r->deadline != 0 && r->deadline - now < timeout)
			timeout = (int)(r->deadline - now);
		hl_rdv__compact(r);
		npf = realloc(pf, (r->nconns + 2) * sizeof(*pf));
		if (npf == NULL) {
			pthread_mutex_unlock(&r->lock);
			break;
		}
		pf = npf;
		pf[n++] = (struct pollfd){r->stop[0], POLLIN, 0};
		pf[n++] = (struct pollfd){r->listen_fd, POLLIN, 0};
		for (i = 0; i < r->nconns; i++) {
			/* Unregistered connections get a window; then out. */
			if (r->conns[i].fd >= 0 && !r->conns[i].registered &&
			    now > r->conns[i].deadline)
				hl_rdv__drop(r, i);
			pf[n++] = (struct pollfd){r->conns[i].fd, POLLIN, 0};
		}
		pthread_mutex_unlock(&r->lock);
		if (poll(pf, (nfds_t)n, timeout) < 0 && errno != EINTR)
			break;
		if (pf[0].revents) {
			char b[64];
			ssize_t got = read(r->stop[0], b, sizeof(b));

			/* A wake from hl_rdv_generation, or the stop. */
			if (got > 0 && memchr(b, 'x', (size_t)got) == NULL)
				continue;
			break;
		}
		pthread_mutex_lock(&r->lock);
		for (i = 0; i < r->nconns; i++)
			if (r->conns[i].fd >= 0 && pf[i + 2].revents)
				serve(r, i);
		for (i = 0; pf[1].revents && i < ACCEPTS_PER_WAKE; i++)
			if (hl_rdv__accept_one(r) != HL_OK)
				break;
		pthread_mutex_unlock(&r->lock);
	}
	free(pf);
	for (i = 0; i < r->nconns; i++)
		if (r->conns[i].fd >= 0)
			close(r->conns[i].fd);
	r->nconns = 0;
	return NULL;
}

int hl_rdv_start(struct hl_rdv **out, int size, int timeout_s, int report_fd,
		 const struct hl_rdv_generations *gens, char **cause)
{
	struct hl_rdv *r = calloc(1, sizeof(*r));
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int i;

	*out = NULL;
	if (r == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	r->size = gens != NULL ? 0 : size;
	r->elastic = gens != NULL;
	r->gens = gens;
	pthread_mutex_init(&r->lock, NULL);
	r->timeout_s = timeout_s;
	r->report_fd = report_fd;
	r->stop[0] = r->stop[1] = -1;
	r->by_rank =
		malloc((size_t)(size > 0 ? size : 1) * sizeof(*r->by_rank));
	if (r->by_rank == NULL) {
		free(r);
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	}
	for (i = 0; i < size; i++)
		r->by_rank[i] = -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	r->listen_fd =
		socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (rdv_random(r->secret, sizeof(r->secret)) != RDV_OK ||
	    r->listen_fd < 0 ||
	    bind(r->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(r->listen_fd, BACKLOG) != 0 ||
	    getsockname(r->listen_fd, (struct sockaddr *)&sa, &sl) != 0 ||
	    pipe2(r->stop, O_CLOEXEC | O_NONBLOCK) != 0) {
		int e = errno;

		hl_rdv_stop(r);
		return hl_fail(cause, HL_ESTART,
			       "cannot start the rendezvous server: %s",
			       strerror(e));
	}
	r->port = ntohs(sa.sin_port);
	if (hl_thread_create(&r->thread, rdv_main, r) != HL_OK) {
		hl_rdv_stop(r);
		return hl_fail(cause, HL_ESTART, "cannot start a thread");
	}
	r->started = true;
	*out = r;
	return HL_OK;
}

/* Every IPv4 address of this machine: the ones of real interfaces first,
 * loopback last. Remote workers try them in order; a wrong one fails the
 * secret's proof and the next is tried. */
static char *addresses(int port)
{
	struct iface *v;
	char *list = NULL;
	size_t n, k;
	int pass;

	if (ifaces_list(&v, &n) != HL_OK)
		return hl_asprintf("127.0.0.1:%d", port);
	for (pass = 0; pass < 2; pass++)
		for (k = 0; k < n; k++) {
			char *nb;

			if (v[k].family != AF_INET || !v[k].up ||
			    v[k].loopback != (pass == 1))
				continue;
			nb = hl_asprintf("%s%s%s:%d", list ? list : "",
					 list ? "," : "", v[k].addr, port);
			free(list);
			list = nb;
			if (list == NULL)
				break;
		}
	free(v);
	return list ? list : hl_asprintf("127.0.0.1:%d", port);
}

int hl_rdv_export(const struct hl_rdv *r, struct hl_envspec *es)
{
	char hex[2 * RDV_SECRET_LEN + 1], *addrs = addresses(r->port);
	int rc;

	if (addrs == NULL)
		return HL_ENOMEM;
	rdv_secret_to_hex(r->secret, hex);
	rc = hl_strvec_pushf(&es->set, "%s=%s", wenv_vars[WENV_RENDEZVOUS].name,
			     addrs);
	if (rc == HL_OK)
		rc = hl_strvec_pushf(&es->set, "%s=%s",
				     wenv_vars[WENV_SECRET].name, hex);
	if (rc == HL_OK)
		rc = hl_strvec_pushf(&es->set, "%s=%d",
				     wenv_vars[WENV_START_TIMEOUT].name,
				     r->timeout_s);
	free(addrs);
	return rc;
}

void hl_rdv_stop(struct hl_rdv *r)
{
	if (r == NULL)
		return;
	if (r->started) {
		(void)!write(r->stop[1], "x", 1);
		pthread_join(r->thread, NULL);
	}
	if (r->stop[1] >= 0)
		close(r->stop[1]);
	if (r->stop[0] >= 0)
		close(r->stop[0]);
	if (r->listen_fd >= 0)
		close(r->listen_fd);
	free(r->conns);
	free(r->by_rank);
	free(r->ids);
	free(r->places);
	free(r->lost);
	free(r->idle);
	free(r->expect);
	if (r->gens != NULL)
		r->gens->forget_growth(r);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
