/* rdv_server.c: see rdv_server.h. One thread, one poll loop over the
 * listening socket and every connection; no connection can hold up
 * another. */
#include "rdv_server.h"

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

#include "../proto/rendezvous.h"
#include "../proto/ifaces.h"
#include "../proto/worker_env.h"
#include "util.h"

#define REGISTER_WINDOW_MS 10000 /* a connection must register by then */
/* Connections not yet registered held at once beyond the job's ranks:
 * past that, a new one takes the place of the oldest. Any machine can
 * reach this port; connections that never register cost hvdrun at most
 * this many descriptors and buffers, and a worker's REGISTER, which
 * follows its connect at once, gets in. */
#define PENDING_SPARE 256
#define ACCEPTS_PER_WAKE 64

struct conn {
	int fd;
	bool registered;
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
	long long deadline; /* 0 until the first rank registers */
};

static void report(struct hl_rdv *r, const char *msg)
{
	(void)hl_write_all(r->report_fd, msg, strlen(msg) + 1);
}

static void drop(struct hl_rdv *r, size_t i)
{
	if (r->conns[i].registered &&
	    r->by_rank[r->conns[i].reg.rank] == (int)i) {
		r->by_rank[r->conns[i].reg.rank] = -1;
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
			if (r->conns[k].registered)
				r->by_rank[r->conns[k].reg.rank] = (int)k;
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
	c = &r->conns[r->nconns];
	memset(c, 0, sizeof(*c));
	c->fd = fd;
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

/* Read what the connection sent; admit it once its REGISTER verifies. */
static void serve(struct hl_rdv *r, size_t i)
{
	struct conn *c = &r->conns[i];
	uint8_t mac[RDV_MAC_LEN];
	ssize_t n;
	long used;

	n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
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
	/* Malformed, a wrong secret, a rank out of range or taken: out. */
	if (used <= 0 || !rdv_register_verify(&c->reg, r->secret, c->nonce) ||
	    c->reg.size != (uint32_t)r->size ||
	    c->reg.rank >= (uint32_t)r->size || r->by_rank[c->reg.rank] >= 0) {
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
	r->by_rank[c->reg.rank] = (int)i;
	if (r->nregistered++ == 0)
		r->deadline = hl_now_ms() + r->timeout_s * 1000LL;
}

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
		uint8_t *msg = rdv_peers_encode(addrs, (uint32_t)r->size,
						r->secret, c->reg.nonce, &len);

		if (msg != NULL) {
			fcntl(c->fd, F_SETFL,
			      fcntl(c->fd, F_GETFL) & ~O_NONBLOCK);
			(void)hl_write_all(c->fd, msg, len);
			free(msg);
		}
	}
	free(addrs);
}

static void report_missing(struct hl_rdv *r)
{
	char msg[512];
	size_t off;
	int rank, shown = 0;

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

static void *rdv_main(void *arg)
{
	struct hl_rdv *r = arg;
	struct pollfd *pf = NULL;
	size_t i;

	for (;;) {
		long long now = hl_now_ms();
		int timeout = 1000, n = 0;
		struct pollfd *npf;

		if (r->nregistered == r->size) {
			send_peers(r);
			break;
		}
		if (r->deadline != 0 && now >= r->deadline) {
			report_missing(r);
			break;
		}
		if (r->deadline != 0 && r->deadline - now < timeout)
			timeout = (int)(r->deadline - now);
		compact(r);
		npf = realloc(pf, (r->nconns + 2) * sizeof(*pf));
		if (npf == NULL)
			break;
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
		if (poll(pf, (nfds_t)n, timeout) < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			break;
		for (i = 0; i < r->nconns; i++)
			if (r->conns[i].fd >= 0 && pf[i + 2].revents)
				serve(r, i);
		for (i = 0; pf[1].revents && i < ACCEPTS_PER_WAKE; i++)
			if (accept_one(r) != HL_OK)
				break;
	}
	free(pf);
	for (i = 0; i < r->nconns; i++)
		if (r->conns[i].fd >= 0)
			close(r->conns[i].fd);
	r->nconns = 0;
	return NULL;
}

int hl_rdv_start(struct hl_rdv **out, int size, int timeout_s, int report_fd,
		 char **cause)
{
	struct hl_rdv *r = calloc(1, sizeof(*r));
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int i;

	*out = NULL;
	if (r == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	r->size = size;
	r->timeout_s = timeout_s;
	r->report_fd = report_fd;
	r->stop[0] = r->stop[1] = -1;
	r->by_rank = malloc((size_t)size * sizeof(*r->by_rank));
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
	    pipe2(r->stop, O_CLOEXEC) != 0) {
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
	free(r);
}
