/* tcp.c: see tcp.h. */
#include "transport/tcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "proto/rendezvous.h"
#include "transport/link.h"
#include "util/internal.h"
#include "util/wait.h"

_Static_assert(HVD__TOKEN_LEN == RDV_MAC_LEN, "the mesh token is a MAC");

#define PROGRESS_STEP (64 * 1024) /* report received bytes this often */

struct hvd__tcp {
	int listen_fd;
	bool bound;		/* connect from src too */
	struct sockaddr_in src; /* the listener's address, port 0 */
	int rank, size;
	int *fd; /* fd[r]: the connection to rank r, -1 for self */
	int timeout_ms;
	int cancel_fd; /* readable: hvd__tcp_connect asks, or -1 */
	bool (*called_off)(void *arg);
	void *called_off_arg;
	bool off; /* called off: hvd__tcp_connect gives up */
};

/* Whether the connect was called off (hvd__tcp_connect); waits up to ms
 * for it. */
static bool cancelled(struct hvd__tcp *t, int ms)
{
	struct pollfd pf = {t->cancel_fd, POLLIN, 0};

	if (t->off)
		return true;
	if (t->cancel_fd < 0) {
		poll(NULL, 0, ms);
		return false;
	}
	if (poll(&pf, 1, ms) > 0)
		t->off = t->called_off(t->called_off_arg);
	return t->off;
}

/* The listen backlog: connections may come before this rank accepts, and
 * one that finds the accept queue full is dropped and tries again a second
 * later (of 1,500 at once, 1,025 got in with a backlog of 1,024). The
 * kernel holds it to net.core.somaxconn (4,096 by default), and keeps no
 * memory for the room. */
#define BACKLOG 65535

int hvd__tcp_new(struct hvd__tcp **out, const char *bind_addr, char *addr_out,
		 size_t addr_len)
{
	struct hvd__tcp *t = calloc(1, sizeof(*t));
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	char ip[INET_ADDRSTRLEN];

	*out = NULL;
	if (t == NULL)
		return HVD_ENOMEM;
	t->cancel_fd = -1;
	t->timeout_ms = 30000;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	if (bind_addr == NULL)
		sa.sin_addr.s_addr = htonl(INADDR_ANY);
	else if (inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1) {
		free(t);
		return HVD_EINVAL;
	}
	t->listen_fd =
		socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (t->listen_fd < 0 ||
	    bind(t->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(t->listen_fd, BACKLOG) != 0 ||
	    getsockname(t->listen_fd, (struct sockaddr *)&sa, &sl) != 0) {
		hvd__error("cannot listen: %s", strerror(errno));
		if (t->listen_fd >= 0)
			close(t->listen_fd);
		free(t);
		return HVD_ESYS;
	}
	inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
	snprintf(addr_out, addr_len, "%s:%d", ip, ntohs(sa.sin_port));
	if (bind_addr != NULL) {
		t->bound = true;
		t->src = sa;
		t->src.sin_port = 0;
	}
	*out = t;
	return HVD_OK;
}

void hvd__tcp_set_timeout(struct hvd__tcp *t, int timeout_ms)
{
	t->timeout_ms = timeout_ms;
}

/* Blocking-style full transfer on a non-blocking fd, until deadline. */
static int xfer(int fd, void *buf, size_t len, bool sending, long long deadline)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = sending ? send(fd, p, len, MSG_NOSIGNAL)
				    : recv(fd, p, len, 0);
		struct pollfd pf = {fd, sending ? POLLOUT : POLLIN, 0};
		long long left;

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return HVD_ECONN;
		if (errno != EAGAIN && errno != EINTR)
			return hvd__link_failed(fd, errno);
		left = deadline - hvd__now_ms();
		if (left <= 0)
			return HVD_ETIMEDOUT;
		poll(&pf, 1, (int)left);
	}
	return HVD_OK;
}

int hvd__parse_addr(const char *addr, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(addr, ':');
	char *end;
	long port;

	if (colon == NULL || (size_t)(colon - addr) >= sizeof(host))
		return HVD_EINVAL;
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || port < 1 || port > 65535)
		return HVD_EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? HVD_OK
							    : HVD_EINVAL;
}

/* A connection accepted on the listening port that has not yet said
 * its MESH hello. */
struct pending {
	long long deadline;
	size_t got;
	int fd;
	uint8_t hello[RDV_MESH_HELLO_LEN];
};

/* At most this many at once, each for at most PENDING_MS: anyone can
 * connect to this port, and connections that never say a valid hello
 * must neither hold up the peers' nor grow the worker. Past the cap a
 * new one takes the place of the oldest; a peer says its hello as soon
 * as it has connected. */
#define PENDING_MAX 64
#define PENDING_MS 2000

/* Take pending connection i out of the list; close it unless kept. */
static void pending_remove(struct pending *p, int *n, int i, bool keep)
{
	if (!keep)
		close(p[i].fd);
	memmove(&p[i], &p[i + 1], (size_t)(*n - i - 1) * sizeof(*p));
	(*n)--;
}

/* Read what pending connection i has sent; once its hello is whole, take
 * it as its rank's connection (counted in *accepted) or close it. */
static void pending_read(struct hvd__tcp *t, const uint8_t *token,
			 struct pending *p, int *n, int i, int *accepted)
{
	struct pending *c = &p[i];
	ssize_t got =
		recv(c->fd, c->hello + c->got, sizeof(c->hello) - c->got, 0);
	long from;

	if (got < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (got <= 0) {
		pending_remove(p, n, i, false);
		return;
	}
	c->got += (size_t)got;
	if (c->got < sizeof(c->hello))
		return;
	from = rdv_mesh_hello_decode(c->hello, token);
	/* NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult): rank < from < size, and t->fd has size entries */
	if (from <= t->rank || from >= t->size || t->fd[from] >= 0) {
		pending_remove(p, n, i, false);
		return;
	}
	t->fd[from] = c->fd;
	(*accepted)++;
	pending_remove(p, n, i, true);
}

/* The connections of the ranks above this one, as they come: those
 * accepted that have not said their hello yet, and how many are taken
 * of the want expected. */
struct taking {
	struct pending p[PENDING_MAX];
	int n, accepted, want;
	int out;       /* a connect in progress (-1: none), and whether */
	bool out_done; /* it has ended */
};

/* Wait up to wait ms for connections and hellos, and take what came;
 * a connection without the job's token is closed. HVD_ERESET when the
 * connect was called off. */
static int take(struct hvd__tcp *t, const uint8_t *token, struct taking *k,
		long long wait)
{
	struct pending *p = k->p;
	struct pollfd pf[PENDING_MAX + 3];
	long long now = hvd__now_ms();
	int i;

	for (i = 0; i < k->n; i++)
		if (now >= p[i].deadline)
			pending_remove(p, &k->n, i--, false);
	pf[0] = (struct pollfd){t->listen_fd, POLLIN, 0};
	for (i = 0; i < k->n; i++) {
		pf[i + 1] = (struct pollfd){p[i].fd, POLLIN, 0};
		if (p[i].deadline - now < wait)
			wait = p[i].deadline - now;
	}
	pf[k->n + 1] = (struct pollfd){t->cancel_fd, POLLIN, 0};
	pf[k->n + 2] = (struct pollfd){k->out, POLLOUT, 0};
	if (poll(pf, (nfds_t)k->n + 3, (int)wait) <= 0)
		return HVD_OK;
	if (pf[k->n + 1].revents && cancelled(t, 0))
		return HVD_ERESET;
	k->out_done = pf[k->n + 2].revents != 0;
	/* Back to front: a connection taken or dropped moves only the ones
	 * after it. */
	for (i = k->n - 1; i >= 0; i--)
		if (pf[i + 1].revents)
			pending_read(t, token, p, &k->n, i, &k->accepted);
	/* A peer's hello is usually there by the time it is accepted: read
	 * it at once, before newer connections could push it out. At most
	 * PENDING_MAX a wake. */
	for (i = 0; pf[0].revents && k->accepted < k->want && i < PENDING_MAX;
	     i++) {
		int fd = accept4(t->listen_fd, NULL, NULL,
				 SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0)
			break;
		hvd__link_tune(fd);
		if (k->n == PENDING_MAX)
			pending_remove(p, &k->n, 0, false);
		p[k->n++] = (struct pending){
			.fd = fd, .deadline = hvd__now_ms() + PENDING_MS};
		pending_read(t, token, p, &k->n, k->n - 1, &k->accepted);
	}
	return HVD_OK;
}

/* The rest of the ranks above this one, by the deadline. */
static int accept_up(struct hvd__tcp *t, const uint8_t *token, struct taking *k,
		     long long deadline)
{
	int rc = HVD_OK;

	while (rc == HVD_OK && k->accepted < k->want) {
		long long wait = deadline - hvd__now_ms();

		if (wait <= 0) {
			hvd__error("%d of %d peers never connected",
				   k->want - k->accepted, k->want);
			return HVD_ETIMEDOUT;
		}
		rc = take(t, token, k, wait);
	}
	return rc;
}

/* A socket connected to addr, taking this rank's own connections while
 * it waits (a rank that only waited could leave its peers' connections to
 * the kernel's queue, and past it); HVD_EINVAL, HVD_ESYS, HVD_ERESET, or
 * HVD_ECONN when the peer did not answer by the deadline. */
static int connect_taking(struct hvd__tcp *t, const char *addr,
			  const uint8_t *token, struct taking *k,
			  long long deadline)
{
	struct sockaddr_in sa;
	int rc = HVD_OK;

	if (hvd__parse_addr(addr, &sa) != HVD_OK)
		return HVD_EINVAL;
	/* The peer may not listen yet: again every 20 ms until the
	 * deadline. */
	while (rc == HVD_OK && hvd__now_ms() < deadline) {
		int fd = socket(AF_INET,
				SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0),
		    err = 0;
		socklen_t el = sizeof(err);

		if (fd < 0)
			return HVD_ESYS;
		/* Leave by the chosen interface, not by the routing table's. */
		if (t->bound && bind(fd, (const struct sockaddr *)&t->src,
				     sizeof(t->src)) != 0) {
			close(fd);
			return HVD_ESYS;
		}
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		k->out = errno == EINPROGRESS ? fd : -1;
		k->out_done = false;
		while (rc == HVD_OK && k->out >= 0 && !k->out_done &&
		       hvd__now_ms() < deadline)
			rc = take(t, token, k, deadline - hvd__now_ms());
		k->out = -1;
		if (rc == HVD_OK && k->out_done &&
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 &&
		    err == 0)
			return fd;
		close(fd);
		if (rc == HVD_OK)
			rc = take(t, token, k, 20);
	}
	return rc != HVD_OK ? rc : HVD_ECONN;
}

int hvd__tcp_connect(struct hvd__tcp *t, int rank, int size, char *const *addrs,
		     const uint8_t token[HVD__TOKEN_LEN], int timeout_ms)
{
	long long deadline = hvd__now_ms() + timeout_ms;
	uint8_t hello[RDV_MESH_HELLO_LEN];
	struct taking k = {.want = size - 1 - rank, .out = -1};
	int r, rc = hvd__fd_room(rank, size);

	if (rc != HVD_OK)
		return rc;
	t->rank = rank;
	t->size = size;
	t->fd = malloc((size_t)size * sizeof(*t->fd));
	if (t->fd == NULL)
		return HVD_ENOMEM;
	for (r = 0; r < size; r++)
		t->fd[r] = -1;
	/* Connect down, nearest first, taking what comes between: each
	 * rank's port gets about one connection a step, where in the order
	 * of ranks every rank came to rank 0 at once, past what the kernel
	 * queues (net.core.somaxconn) in jobs larger than that. */
	for (r = rank - 1; r >= 0 && rc == HVD_OK; r--) {
		int fd = connect_taking(t, addrs[r], token, &k, deadline);

		if (fd == HVD_ERESET) {
			rc = fd;
			break;
		}
		if (fd < 0) { /* a socket not made says why */
			hvd__error("cannot connect to rank %d at %s%s%s", r,
				   addrs[r], fd == HVD_ESYS ? ": " : "",
				   fd == HVD_ESYS ? strerror(errno) : "");
			rc = fd == HVD_ESYS ? fd : HVD_ECONN;
			break;
		}
		hvd__link_tune(fd);
		rdv_mesh_hello_encode((uint32_t)rank, token, hello);
		rc = xfer(fd, hello, sizeof(hello), true, deadline);
		t->fd[r] = fd;
		if (rc == HVD_OK)
			rc = take(t, token, &k, 0);
	}
	if (rc == HVD_OK)
		rc = accept_up(t, token, &k, deadline);
	for (r = 0; r < k.n; r++)
		close(k.p[r].fd);
	return rc;
}

void hvd__tcp_set_cancel(struct hvd__tcp *t, int fd,
			 bool (*called_off)(void *arg), void *arg)
{
	t->cancel_fd = fd;
	t->called_off = called_off;
	t->called_off_arg = arg;
	t->off = false;
}

void hvd__tcp_abort(struct hvd__tcp *t)
{
	int r;

	for (r = 0; t->fd != NULL && r < t->size; r++)
		if (t->fd[r] >= 0)
			shutdown(t->fd[r], SHUT_RDWR);
}

void hvd__tcp_free(struct hvd__tcp *t)
{
	int r;

	if (t == NULL)
		return;
	for (r = 0; t->fd != NULL && r < t->size; r++)
		if (t->fd[r] >= 0)
			close(t->fd[r]);
	if (t->listen_fd >= 0)
		close(t->listen_fd);
	free(t->fd);
	free(t);
}

/* Where a transfer over a list of pieces has got to: piece i, offset off
 * in it. */
struct cursor {
	const struct iovec *v;
	int n, i;
	size_t off;
};

#define WINDOW 64 /* pieces handed to one sendmsg or recvmsg */

/* One non-blocking sendmsg or recvmsg of the next pieces: bytes moved, 0
 * if it would block, or a negative error. */
static ssize_t try_io(int fd, const struct cursor *c, bool sending)
{
	struct iovec w[WINDOW];
	struct msghdr m = {.msg_iov = w};
	size_t off = c->off;
	int i;
	ssize_t n;

	for (i = c->i; i < c->n && m.msg_iovlen < WINDOW; i++, off = 0)
		if (c->v[i].iov_len > off)
			w[m.msg_iovlen++] =
				(struct iovec){(char *)c->v[i].iov_base + off,
					       c->v[i].iov_len - off};
	n = sending ? sendmsg(fd, &m, MSG_NOSIGNAL) : recvmsg(fd, &m, 0);
	if (n > 0)
		return n;
	if (n == 0)
		return sending ? 0 : HVD_ECONN;
	return errno == EAGAIN || errno == EINTR ? 0
						 : hvd__link_failed(fd, errno);
}

static void advance(struct cursor *c, size_t n)
{
	while (n > 0 && c->i < c->n) {
		size_t left = c->v[c->i].iov_len - c->off;

		if (n < left) {
			c->off += n;
			return;
		}
		n -= left;
		c->i++;
		c->off = 0;
	}
}

static size_t total(const struct iovec *v, int n)
{
	size_t sum = 0;
	int i;

	for (i = 0; i < n; i++)
		sum += v[i].iov_len;
	return sum;
}

/* A transfer that waits LINK_LOOK_MS without progress watches the
 * connections it then waits on (link.h), until it ends; from
 * HVD__LINK_LOST_MS on, it looks at them every LINK_LOOK_MS. */
#define LINK_LOOK_MS 250

struct watched {
	int fd[2];
	int n;
};

/* Watch fd (-1: none), once. */
static void watch(struct watched *w, int fd)
{
	int i;

	for (i = 0; i < w->n; i++)
		if (w->fd[i] == fd)
			return;
	if (fd < 0 || w->n == 2)
		return;
	hvd__link_watch(fd, true);
	w->fd[w->n++] = fd;
}

/* Both directions of a transfer would block (sfd, rfd: the connections
 * it still sends on and receives from, or -1; since: its last progress):
 * watch what it waits on, fail a lost link or the timeout, else sleep in
 * poll() until one is ready or the next look is due. */
static int sleep_on(int sfd, int rfd, long long since, long long deadline,
		    struct watched *wd)
{
	struct pollfd pf[2];
	int n = 0, i;
	long long now = hvd__now_ms(), left = deadline - now,
		  quiet = now - since, next = LINK_LOOK_MS;

	if (left <= 0)
		return HVD_ETIMEDOUT;
	if (quiet >= LINK_LOOK_MS) {
		watch(wd, sfd);
		watch(wd, rfd);
	}
	if (quiet >= HVD__LINK_LOST_MS &&
	    (hvd__link_lost(sfd) || hvd__link_lost(rfd)))
		return HVD_ETIMEDOUT;
	if (quiet < LINK_LOOK_MS)
		next = LINK_LOOK_MS - quiet;
	else if (quiet < HVD__LINK_LOST_MS)
		next = HVD__LINK_LOST_MS - quiet;
	if (left > next)
		left = next;
	if (sfd >= 0)
		pf[n++] = (struct pollfd){sfd, POLLOUT, 0};
	if (rfd >= 0) {
		if (n == 1 && pf[0].fd == rfd)
			pf[0].events |= POLLIN;
		else
			pf[n++] = (struct pollfd){rfd, POLLIN, 0};
	}
	if (poll(pf, (nfds_t)n, (int)left) < 0 && errno != EINTR)
		return HVD_ESYS;
	for (i = 0; i < n; i++)
		if (pf[i].revents & (POLLERR | POLLNVAL))
			return hvd__link_failed(pf[i].fd, 0);
	return HVD_OK;
}

/* Send and receive at once. The syscalls come first. When both directions
 * would block, retry while spinning pays (wait.h) before sleeping in
 * poll(): the peer is usually microseconds away, and a sleeping CPU (a
 * halted virtual CPU above all) takes far longer than that to wake. */
static int tcp_sendrecv_v(void *tp, int to, const struct iovec *sv, int sn,
			  int from, const struct iovec *rv, int rn,
			  hvd__recv_progress progress, void *arg)
{
	struct hvd__tcp *t = tp;
	struct cursor sc = {sv, sn, 0, 0}, rc = {rv, rn, 0, 0};
	size_t slen = total(sv, sn), rlen = total(rv, rn);
	size_t sent = 0, got = 0, reported = 0;
	int sfd = slen ? t->fd[to] : -1, rfd = rlen ? t->fd[from] : -1;
	long long since = hvd__now_ms(), deadline = since + t->timeout_ms;
	struct watched wd = {{-1, -1}, 0};
	struct hvd__wait w;
	bool waiting = false;
	int ret = HVD_OK, i;

	if ((slen && sfd < 0) || (rlen && rfd < 0))
		return HVD_ECONN;
	while (ret == HVD_OK && (sent < slen || got < rlen)) {
		bool moved = false;

		if (sent < slen) {
			ssize_t n = try_io(sfd, &sc, true);

			if (n < 0) {
				ret = (int)n;
				break;
			}
			advance(&sc, (size_t)n);
			sent += (size_t)n;
			moved |= n > 0;
		}
		if (got < rlen) {
			ssize_t n = try_io(rfd, &rc, false);

			if (n < 0) {
				ret = (int)n;
				break;
			}
			advance(&rc, (size_t)n);
			got += (size_t)n;
			moved |= n > 0;
		}
		if (progress != NULL && got > reported &&
		    (got - reported >= PROGRESS_STEP || got == rlen)) {
			progress(arg, got);
			reported = got;
		}
		if (moved) {
			/* Progress resets the clock: only silence times out. */
			since = hvd__now_ms();
			deadline = since + t->timeout_ms;
			if (waiting)
				hvd__wait_end(&w);
			waiting = false;
			continue;
		}
		if (!waiting)
			hvd__wait_begin(&w, HVD__WAIT_NET);
		waiting = true;
		if (!hvd__wait_spin(&w))
			ret = sleep_on(sent < slen ? sfd : -1,
				       got < rlen ? rfd : -1, since, deadline,
				       &wd);
	}
	for (i = 0; i < wd.n; i++)
		hvd__link_watch(wd.fd[i], false);
	return ret;
}

static int tcp_sendrecv(void *tp, int to, const void *sbuf, size_t slen,
			int from, void *rbuf, size_t rlen,
			hvd__recv_progress progress, void *arg)
{
	struct iovec s = {(void *)sbuf, slen}, r = {rbuf, rlen};

	return tcp_sendrecv_v(tp, to, &s, 1, from, &r, 1, progress, arg);
}

/* A peer's connection that is readable at end of file (or in error) is
 * closed. Readable with data is a peer already in its next cycle. */
static int tcp_check(void *tp)
{
	struct hvd__tcp *t = tp;
	int r;

	for (r = 0; t->fd != NULL && r < t->size; r++) {
		struct pollfd pf = {t->fd[r], POLLIN, 0};
		char c;

		if (t->fd[r] < 0 || poll(&pf, 1, 0) <= 0)
			continue;
		if (pf.revents & (POLLERR | POLLHUP | POLLNVAL))
			return hvd__link_failed(t->fd[r], 0);
		if (recv(t->fd[r], &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
			return HVD_ECONN;
	}
	return HVD_OK;
}

static int tcp_watch(void *tp, struct pollfd *fds, int max)
{
	struct hvd__tcp *t = tp;
	int n = 0;

	for (; t != NULL && t->fd != NULL && n < t->size && n < max; n++)
		fds[n] = (struct pollfd){t->fd[n], POLLIN, 0};
	return n;
}

static void tcp_tune(void *t, int timeout_ms)
{
	if (t != NULL)
		hvd__tcp_set_timeout(t, timeout_ms);
}

static void tcp_abort(void *t)
{
	if (t != NULL)
		hvd__tcp_abort(t);
}

static void tcp_close(void *t)
{
	hvd__tcp_free(t);
}

const struct hvd__transport_ops hvd__tcp_ops = {
	.name = "tcp",
	.sendrecv = tcp_sendrecv,
	.sendrecv_v = tcp_sendrecv_v,
	.check = tcp_check,
	.watch = tcp_watch,
	.tune = tcp_tune,
	.abort = tcp_abort,
	.close = tcp_close,
};
