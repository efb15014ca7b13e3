/* rdv/conns.c: the rendezvous server's connections (internal.h): taking
 * them in, a bounded number not yet registered, dropping and compacting
 * them, seating a registered one, and sending each member its world. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdv/internal.h"

void hl_rdv__report(struct hl_rdv *r, const char *msg)
{
	(void)hl_write_all(r->report_fd, msg, strlen(msg) + 1);
}

void hl_rdv__drop(struct hl_rdv *r, size_t i)
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
		hl_rdv__drop(r, oldest);
}

/* Close up the places of dropped connections. */
void hl_rdv__compact(struct hl_rdv *r)
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
int hl_rdv__accept_one(struct hl_rdv *r)
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
void hl_rdv__take_slot(struct hl_rdv *r, size_t i, int slot)
{
	r->conns[i].slot = slot;
	r->by_rank[slot] = (int)i;
	if (r->nregistered++ == 0)
		r->deadline = hl_now_ms() + r->timeout_s * 1000LL;
}

/* Add id to a list of ids, grown by doubling; false when out of memory
 * (the list is as it was). */
bool hl_rdv__push(int **v, size_t *n, size_t *cap, uint32_t id)
{
	if (*n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 16;
		int *nv = realloc(*v, ncap * sizeof(*nv));

		if (nv == NULL)
			return false;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = (int)id;
	return true;
}

/* Add id to a list of ids for the supervisor, and tell it (an empty
 * report). */
void hl_rdv__tell(struct hl_rdv *r, int **v, size_t *n, size_t *cap,
		  uint32_t id)
{
	if (hl_rdv__push(v, n, cap, id))
		hl_rdv__report(r, "");
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
void hl_rdv__send_peers(struct hl_rdv *r)
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
