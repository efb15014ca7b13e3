/* rdv/server.c: see rdv/server.h. One thread, one poll loop over the
 * listening socket and every connection; no connection can hold up
 * another. */
#include "rdv/server.h"

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

#define REGISTER_WINDOW_MS 10000 /* a connection must register by then */
/* Connections not yet registered held at once beyond the job's ranks:
 * past that, a new one takes the place of the oldest. Any machine can
 * reach this port; connections that never register cost hvdrun at most
 * this many descriptors and buffers, and a worker's REGISTER, which
 * follows its connect at once, gets in. */
#define PENDING_SPARE 256
#define ACCEPTS_PER_WAKE 64
/* Elastic: a worker's connection idle this long gets TCP keepalive
 * probes; nothing back for LOST_MS with one unanswered and its host is
 * lost (its link down, the host off): about 2 s from the silence. */
#define LOST_IDLE_S 1
#define LOST_MS 2000

struct conn {
	int fd;
	bool registered;
	int slot;      /* its place in by_rank, -1: none */
	bool in_world; /* elastic: it was sent the running generation */
	long long deadline;
	uint8_t nonce[RDV_NONCE_LEN]; /* ours, sent in HELLO */
	struct rdv_register reg;
	uint8_t buf[512];
	size_t len;
};

struct hl_rdv {
	int size;
	int timeout_s;
	int report_fd;
	int listen_fd;
	int port;
	int stop[2]; /* wakes the thread to stop */
	uint8_t secret[RDV_SECRET_LEN];
	pthread_t thread;
	bool started;
	struct conn *conns;
	size_t nconns, cap;
	int *by_rank; /* conn index per rank, -1 */
	int nregistered;
	uint32_t round;	    /* static: the round of hvd_init() being formed */
	long long deadline; /* 0 until the first rank registers */
	/* Elastic: the generation being formed or running (0: none yet),
	 * its members (worker ids, in rank order) and their places; the
	 * supervisor sets them (hl_rdv_generation), under lock. */
	bool elastic;
	pthread_mutex_t lock;
	uint32_t gen;
	bool formed;	/* WORLD was sent to every member */
	bool finishing; /* hl_rdv_finish: no later generation forms */
	int *ids;
	struct rdv_world *places;
	/* Growth announced (hl_rdv_at_commit): the generation that the running
	 * one's workers form with the new ones once all have come back. */
	int *grow_ids;
	struct hl_rank *grow_places;
	int grow_n;
	/* Workers whose host stopped answering, for the supervisor
	 * (hl_rdv_take_lost). */
	int *lost;
	size_t nlost, caplost;
	/* Workers that wait for a generation that will not form (the job is
	 * finishing: hl_rdv_finish), or that a generation left out, for
	 * the supervisor (hl_rdv_take_idle). */
	int *idle;
	size_t nidle, capidle;
};

static void report(struct hl_rdv *r, const char *msg)
{
	(void)hl_write_all(r->report_fd, msg, strlen(msg) + 1);
}

static void drop(struct hl_rdv *r, size_t i)
{
	int slot = r->conns[i].slot;

	if (slot >= 0 && r->by_rank[slot] == (int)i) {
		r->by_rank[slot] = -1;
		r->nregistered--;
	}
	close(r->conns[i].fd);
	r->conns[i].fd = -1;
}

/* Make room for one more connection not yet registered: when the job's
 * ranks and PENDING_SPARE are all held, drop the oldest. */
static void make_room(struct hl_rdv *r)
{
	size_t i, pending = 0, oldest = SIZE_MAX;

	for (i = 0; i < r->nconns; i++) {
		if (r->conns[i].fd < 0 || r->conns[i].registered)
			continue;
		pending++;
		if (oldest == SIZE_MAX ||
		    r->conns[i].deadline < r->conns[oldest].deadline)
			oldest = i;
	}
	if (pending >= (size_t)r->size + PENDING_SPARE)
		drop(r, oldest);
}

/* Close up the places of dropped connections. */
static void compact(struct hl_rdv *r)
{
	size_t i, k = 0;

	for (i = 0; i < r->nconns; i++) {
		if (r->conns[i].fd < 0)
			continue;
		if (k != i) {
			r->conns[k] = r->conns[i];
			if (r->conns[k].slot >= 0 &&
			    r->by_rank[r->conns[k].slot] == (int)i)
				r->by_rank[r->conns[k].slot] = (int)k;
		}
		k++;
	}
	r->nconns = k;
}

/* HL_OK, or HL_EAGAIN when no connection is waiting. */
static int accept_one(struct hl_rdv *r)
{
	uint8_t hello[RDV_HELLO_LEN];
	struct conn *c;
	int fd =
		accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return errno == EINTR || errno == ECONNABORTED ? HL_OK
							       : HL_EAGAIN;
	make_room(r);
	if (r->nconns == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		struct conn *v = realloc(r->conns, cap * sizeof(*v));

		if (v == NULL) {
			close(fd);
			return HL_OK;
		}
		r->conns = v;
		r->cap = cap;
	}
	if (r->elastic)
		hl_watch_silence(fd, LOST_IDLE_S, LOST_MS);
	c = &r->conns[r->nconns];
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->slot = -1;
	c->deadline = hl_now_ms() + REGISTER_WINDOW_MS;
	if (rdv_random(c->nonce, sizeof(c->nonce)) != RDV_OK) {
		close(fd);
		return HL_OK;
	}
	rdv_hello_encode(c->nonce, hello);
	if (send(fd, hello, sizeof(hello), MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(hello)) {
		close(fd);
		return HL_OK;
	}
	r->nconns++;
	return HL_OK;
}

/* Connection i holds rank (static) or member (elastic) slot. */
static void take_slot(struct hl_rdv *r, size_t i, int slot)
{
	r->conns[i].slot = slot;
	r->by_rank[slot] = (int)i;
	if (r->nregistered++ == 0)
		r->deadline = hl_now_ms() + r->timeout_s * 1000LL;
}

/* Add id to a list of ids for the supervisor, and tell it (an empty
 * report). */
static void tell(struct hl_rdv *r, int **v, size_t *n, size_t *cap, uint32_t id)
{
	if (*n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 16;
		int *nv = realloc(*v, ncap * sizeof(*nv));

		if (nv == NULL)
			return;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = (int)id;
	report(r, "");
}

/* Elastic: worker id's host stopped answering (keepalive). */
static void host_lost(struct hl_rdv *r, uint32_t id)
{
	tell(r, &r->lost, &r->nlost, &r->caplost, id);
}

/* Elastic: worker id waits for a generation after the running one, which
 * a finishing job never forms. */
static void idle(struct hl_rdv *r, uint32_t id)
{
	tell(r, &r->idle, &r->nidle, &r->capidle, id);
}

/* Elastic: worker id registered on connection i; an earlier connection
 * of the same id is an incarnation that is gone (a worker started again
 * on a host that returned, while the old one's connection still waits
 * to be read closed), or the same process before its hvd_shutdown: the
 * newest speaks for the id, and the others go, before a generation
 * could seat one of them. */
static void supersede(struct hl_rdv *r, size_t i)
{
	size_t k;

	for (k = 0; k < r->nconns; k++)
		if (k != i && r->conns[k].fd >= 0 && r->conns[k].registered &&
		    r->conns[k].reg.rank == r->conns[i].reg.rank)
			drop(r, k);
}

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
		host_lost(r, c->reg.rank);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		drop(r, i);
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
		drop(r, i);
		return;
	}
	rdv_welcome_mac(r->secret, c->reg.nonce, c->reg.rank, mac);
	if (send(c->fd, mac, sizeof(mac), MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(mac)) {
		drop(r, i);
		return;
	}
	c->registered = true;
	if (!r->elastic)
		take_slot(r, i, (int)c->reg.rank);
	else
		supersede(r, i);
	if (r->elastic && r->finishing)
		idle(r, c->reg.rank);
}

/* Send len bytes on a connection that is otherwise non-blocking. */
static void send_blocking(int fd, const void *msg, size_t len)
{
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	(void)hl_write_all(fd, msg, len);
	fcntl(fd, F_SETFL, fl);
}

/* Every rank has registered: tell each where the others listen (PEERS),
 * or, elastic, its world (WORLD). */
static void send_peers(struct hl_rdv *r)
{
	char **addrs = calloc((size_t)r->size, sizeof(*addrs));
	int rank;

	if (addrs == NULL)
		return;
	for (rank = 0; rank < r->size; rank++)
		addrs[rank] = r->conns[r->by_rank[rank]].reg.addr;
	for (rank = 0; rank < r->size; rank++) {
		struct conn *c = &r->conns[r->by_rank[rank]];
		size_t len;
		uint8_t *msg =
			r->elastic ? rdv_world_encode(&r->places[rank], addrs,
						      r->secret, c->reg.nonce,
						      &len)
				   : rdv_peers_encode(addrs, (uint32_t)r->size,
						      r->round, r->secret,
						      c->reg.nonce, &len);

		if (msg != NULL) {
			send_blocking(c->fd, msg, len);
			free(msg);
		}
		c->in_world = r->elastic;
	}
	free(addrs);
	r->formed = true;
	r->deadline = 0;
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
			drop(r, i);
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
	report(r, msg);
}

/* Elastic: the member index of worker id in the generation, or -1. */
static int member(const struct hl_rdv *r, uint32_t id)
{
	int m;

	for (m = 0; m < r->size; m++)
		if (r->ids[m] == (int)id)
			return m;
	return -1;
}

/* Under lock. The running generation ends: its workers are told, their
 * connections closed, and nobody holds a place in the next (gen + 1). */
static void end_generation(struct hl_rdv *r)
{
	size_t i;

	r->gen++;
	for (i = 0; i < r->nconns; i++) {
		struct conn *c = &r->conns[i];

		if (c->fd >= 0 && c->in_world) {
			uint8_t msg[RDV_NOTICE_LEN];

			rdv_notice_encode(RDV_NOTICE_RESET, r->gen, r->secret,
					  c->reg.nonce, msg);
			(void)!send(c->fd, msg, sizeof(msg),
				    MSG_NOSIGNAL | MSG_DONTWAIT);
			drop(r, i);
		}
		c->slot = -1;
	}
	r->nregistered = 0;
	r->formed = false;
	r->deadline = 0;
}

/* Same members at the same places: the running generation's next. */
static void same_again(struct hl_rdv *r)
{
	int m;

	end_generation(r);
	for (m = 0; m < r->size; m++) {
		r->places[m].gen = r->gen;
		r->by_rank[m] = -1;
	}
}

static int next_generation(struct hl_rdv *r, const int *ids,
			   const struct hl_rank *places, int n);

/* Whether worker id is in the generation growth announced. */
static bool grow_member(const struct hl_rdv *r, uint32_t id)
{
	int m;

	for (m = 0; r->grow_ids != NULL && m < r->grow_n; m++)
		if (r->grow_ids[m] == (int)id)
			return true;
	return false;
}

static void forget_growth(struct hl_rdv *r)
{
	free(r->grow_ids);
	free(r->grow_places);
	r->grow_ids = NULL;
	r->grow_places = NULL;
	r->grow_n = 0;
}

/* Elastic: seat the workers waiting for a later generation than theirs,
 * turn away those it leaves out, and send the world once it is whole.
 * When every member of a running generation has come back on its own
 * (each called hvd_shutdown and hvd_init), the next one has the same
 * members. */
static void elastic_progress(struct hl_rdv *r)
{
	int pass;

	for (pass = 0; pass < 2; pass++) {
		size_t i;
		int back = 0;

		for (i = 0; i < r->nconns; i++) {
			struct conn *c = &r->conns[i];
			int m;

			if (c->fd < 0 || !c->registered || c->in_world ||
			    c->slot >= 0)
				continue;
			if (c->reg.size >= r->gen) {
				back += r->formed && c->reg.size == r->gen &&
					member(r, c->reg.rank) >= 0;
				continue; /* waits for the next generation */
			}
			m = member(r, c->reg.rank);
			if (m < 0 && grow_member(r, c->reg.rank))
				continue; /* a new worker: waits for growth */
			if (m < 0 || r->by_rank[m] >= 0) {
				/* Left out: hvd_init fails, and the
				 * supervisor ends a worker it let go. */
				if (m < 0)
					idle(r, c->reg.rank);
				drop(r, i);
			} else {
				take_slot(r, i, m);
			}
		}
		if (!r->formed || back != r->size || r->size == 0)
			break;
		/* Every member came back: with the new workers if growth
		 * was announced, else as they were; then seat them. */
		if (r->grow_ids != NULL)
			(void)next_generation(r, r->grow_ids, r->grow_places,
					      r->grow_n);
		else
			same_again(r);
	}
	if (!r->formed && r->size > 0 && r->nregistered == r->size)
		send_peers(r);
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
			elastic_progress(r);
		if (!r->elastic && r->nregistered == r->size) {
			send_peers(r);
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
		compact(r);
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
				drop(r, i);
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
			if (accept_one(r) != HL_OK)
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

/* Under lock. The world of ids (in rank order) at places replaces the
 * running one. Returns its number. */
static int next_generation(struct hl_rdv *r, const int *ids,
			   const struct hl_rank *places, int n)
{
	size_t len = (size_t)(n > 0 ? n : 1);
	int *nids = malloc(len * sizeof(*nids));
	int *nby = malloc(len * sizeof(*nby));
	struct rdv_world *np = calloc(len, sizeof(*np));
	int m;

	if (nids == NULL || nby == NULL || np == NULL) {
		free(nids);
		free(nby);
		free(np);
		return HL_ENOMEM;
	}
	end_generation(r);
	for (m = 0; m < n; m++) {
		nids[m] = ids[m];
		nby[m] = -1;
		np[m] = (struct rdv_world){r->gen,
					   (uint32_t)m,
					   (uint32_t)n,
					   (uint32_t)places[m].local_rank,
					   (uint32_t)places[m].local_size,
					   (uint32_t)places[m].cross_rank,
					   (uint32_t)places[m].cross_size};
	}
	free(r->ids);
	free(r->by_rank);
	free(r->places);
	forget_growth(r); /* ids may have been its own: copied above */
	r->ids = nids;
	r->by_rank = nby;
	r->places = np;
	r->size = n;
	return (int)r->gen;
}

int hl_rdv_generation(struct hl_rdv *r, const int *ids,
		      const struct hl_rank *places, int n)
{
	int gen;

	pthread_mutex_lock(&r->lock);
	gen = next_generation(r, ids, places, n);
	pthread_mutex_unlock(&r->lock);
	(void)!write(r->stop[1], "w", 1);
	return gen;
}

/* Under lock: tell every worker of the running generation what (a
 * hosts notice) about generation gen. */
static void notify(struct hl_rdv *r, char what, uint32_t gen)
{
	size_t i;

	for (i = 0; i < r->nconns; i++) {
		struct conn *c = &r->conns[i];
		uint8_t msg[RDV_NOTICE_LEN];

		if (c->fd < 0 || !c->in_world)
			continue;
		rdv_notice_encode(what, gen, r->secret, c->reg.nonce, msg);
		(void)!send(c->fd, msg, sizeof(msg),
			    MSG_NOSIGNAL | MSG_DONTWAIT);
	}
}

void hl_rdv_hosts_removed(struct hl_rdv *r)
{
	pthread_mutex_lock(&r->lock);
	notify(r, RDV_NOTICE_REMOVED, r->gen + 1);
	pthread_mutex_unlock(&r->lock);
}

int hl_rdv_at_commit(struct hl_rdv *r, const int *ids,
		     const struct hl_rank *places, int n, bool removed)
{
	int gen = HL_ENOMEM;

	pthread_mutex_lock(&r->lock);
	if (!r->formed) {
		/* Nothing runs yet: the forming generation gets them. */
		gen = next_generation(r, ids, places, n);
		goto out;
	}
	forget_growth(r);
	r->grow_ids = malloc((size_t)n * sizeof(*r->grow_ids));
	r->grow_places = malloc((size_t)n * sizeof(*r->grow_places));
	if (r->grow_ids == NULL || r->grow_places == NULL) {
		forget_growth(r);
		goto out;
	}
	memcpy(r->grow_ids, ids, (size_t)n * sizeof(*ids));
	memcpy(r->grow_places, places, (size_t)n * sizeof(*places));
	r->grow_n = n;
	gen = (int)r->gen + 1;
	notify(r, removed ? RDV_NOTICE_REMOVED : RDV_NOTICE_HOSTS,
	       (uint32_t)gen);
out:
	pthread_mutex_unlock(&r->lock);
	(void)!write(r->stop[1], "w", 1);
	return gen;
}

/* Under lock: take up to cap of the n ids at v. */
static size_t take(int *v, size_t *n, int *ids, size_t cap)
{
	size_t k = *n < cap ? *n : cap;

	if (k == 0)
		return 0; /* v may be NULL: nothing was ever told */
	memcpy(ids, v, k * sizeof(*ids));
	memmove(v, v + k, (*n - k) * sizeof(*ids));
	*n -= k;
	return k;
}

size_t hl_rdv_take_lost(struct hl_rdv *r, int *ids, size_t cap)
{
	size_t n;

	pthread_mutex_lock(&r->lock);
	n = take(r->lost, &r->nlost, ids, cap);
	pthread_mutex_unlock(&r->lock);
	return n;
}

void hl_rdv_finish(struct hl_rdv *r)
{
	size_t i;

	pthread_mutex_lock(&r->lock);
	if (!r->finishing) {
		r->finishing = true;
		for (i = 0; i < r->nconns; i++) {
			const struct conn *c = &r->conns[i];

			if (c->fd >= 0 && c->registered && !c->in_world)
				idle(r, c->reg.rank);
		}
	}
	pthread_mutex_unlock(&r->lock);
}

size_t hl_rdv_take_idle(struct hl_rdv *r, int *ids, size_t cap)
{
	size_t n;

	pthread_mutex_lock(&r->lock);
	n = take(r->idle, &r->nidle, ids, cap);
	pthread_mutex_unlock(&r->lock);
	return n;
}

bool hl_rdv_growing(struct hl_rdv *r)
{
	bool growing;

	pthread_mutex_lock(&r->lock);
	growing = r->grow_ids != NULL;
	pthread_mutex_unlock(&r->lock);
	return growing;
}

int hl_rdv_start(struct hl_rdv **out, int size, int timeout_s, int report_fd,
		 bool elastic, char **cause)
{
	struct hl_rdv *r = calloc(1, sizeof(*r));
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int i;

	*out = NULL;
	if (r == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	r->size = elastic ? 0 : size;
	r->elastic = elastic;
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
	    listen(r->listen_fd, 4096) != 0 ||
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
	forget_growth(r);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
