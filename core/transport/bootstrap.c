/* transport/bootstrap.c: see transport/bootstrap.h. The worker tries each address hvdrun announced, in
 * order; an address that is not hvdrun's (another machine's loopback, a
 * stale port) fails the proof of the secret and the next one is tried. The
 * worker announces the address it reached hvdrun from: that interface
 * routes towards the job. */
#include "transport/bootstrap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/ifaces.h"
#include "proto/rendezvous.h"
#include "util/internal.h"
#include "transport/tcp.h"

static int read_full(int fd, void *buf, size_t len, long long deadline)
{
	char *p = buf;

	while (len > 0) {
		struct pollfd pf = {fd, POLLIN, 0};
		long long left = deadline - hvd__now_ms();
		ssize_t n;

		if (left <= 0)
			return HVD_ETIMEDOUT;
		if (poll(&pf, 1, left > 60000 ? 60000 : (int)left) <= 0)
			continue;
		n = recv(fd, p, len, 0);
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			return HVD_ECONN;
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		}
	}
	return HVD_OK;
}

/* A connected socket, or HVD_EINVAL (a bad address), HVD_ESYS, or
 * HVD_ECONN (nothing answered in time). */
static int connect_addr(const char *addr, int timeout_ms)
{
	struct sockaddr_in sa;
	struct pollfd pf;
	int fd, err = 0;
	socklen_t el = sizeof(err);

	if (hvd__parse_addr(addr, &sa) != HVD_OK)
		return HVD_EINVAL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return HVD_ESYS;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 &&
	    errno != EINPROGRESS)
		goto fail;
	pf.fd = fd;
	pf.events = POLLOUT;
	if (poll(&pf, 1, timeout_ms) != 1 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err != 0)
		goto fail;
	return fd;
fail:
	close(fd);
	return HVD_ECONN;
}

/* Register at one address; on success *fd stays open for PEERS.
 * HVD_ETIMEDOUT where nothing answered there (worth another try),
 * HVD_EPROTO (said) where an hvdrun of another build answered, else
 * HVD_ECONN. */
static int try_register(const char *addr, const char *bind_ip, int rank,
			int size, int port, const uint8_t *secret,
			struct rdv_register *reg, long long deadline,
			int *fd_out)
{
	uint8_t hello[RDV_HELLO_LEN], snonce[RDV_NONCE_LEN], mac[RDV_MAC_LEN],
		want[RDV_MAC_LEN];
	uint8_t *msg = malloc(rdv_register_max());
	struct sockaddr_in me;
	socklen_t ml = sizeof(me);
	char ip[INET_ADDRSTRLEN];
	size_t len;
	int fd, rc = HVD_ETIMEDOUT, got;

	if (msg == NULL)
		return HVD_ENOMEM;
	fd = connect_addr(addr, 2000);
	if (fd < 0)
		goto out;
	got = read_full(fd, hello, sizeof(hello), hvd__now_ms() + 3000);
	if (got == HVD_OK)
		got = rdv_hello_decode(hello, snonce);
	if (got >= 0 && got != RDV_VERSION) {
		hvd__error(
			"rank %d: hvdrun's rendezvous at %s speaks protocol %d, this libhvd (%s) speaks %d: the worker's libhvd and hvdrun come from different builds (give the workers the libhvd installed with this hvdrun)",
			rank, addr, got, HVD_VERSION, RDV_VERSION);
		rc = HVD_EPROTO;
		goto out_close;
	}
	if (got != RDV_VERSION) {
		if (got != HVD_ETIMEDOUT)
			rc = HVD_ECONN;
		goto out_close;
	}
	rc = HVD_ECONN; /* it answered: a failure from here is final */
	/* Peers reach us on the chosen interface, or else on the one that
	 * reached hvdrun. */
	getsockname(fd, (struct sockaddr *)&me, &ml);
	inet_ntop(AF_INET, &me.sin_addr, ip, sizeof(ip));
	if (bind_ip != NULL)
		snprintf(ip, sizeof(ip), "%s", bind_ip);
	reg->rank = (uint32_t)rank;
	reg->size = (uint32_t)size;
	snprintf(reg->addr, sizeof(reg->addr), "%s:%d", ip, port);
	if (rdv_random(reg->nonce, sizeof(reg->nonce)) != RDV_OK)
		goto out_close;
	len = rdv_register_encode(reg, secret, snonce, msg);
	if (send(fd, msg, len, MSG_NOSIGNAL) != (ssize_t)len)
		goto out_close;
	/* hvdrun proves it knows the secret too. */
	if (read_full(fd, mac, sizeof(mac), deadline) != HVD_OK)
		goto out_close;
	rdv_welcome_mac(secret, reg->nonce, (uint32_t)rank, want);
	if (!rdv_mac_equal(mac, want)) {
		hvd__warn("%s answered, but not as this job's hvdrun", addr);
		goto out_close;
	}
	*fd_out = fd;
	rc = HVD_OK;
	goto out;
out_close:
	close(fd);
out:
	free(msg);
	return rc;
}

/* Read from fd into a growing buffer until try (given what was read)
 * returns non-zero: its result, or HVD_ETIMEDOUT at the deadline, or
 * HVD_ECONN when hvdrun closes the connection (it gave up on the job, and
 * said why). *buf and *len: what was read (the caller frees *buf). */
static int read_until(int fd, long long deadline,
		      int (*try)(void *arg, const uint8_t *in, size_t len),
		      void *arg, uint8_t **buf, size_t *len)
{
	size_t cap = 4096;
	int rc = HVD_ETIMEDOUT;

	*len = 0;
	*buf = malloc(cap);
	if (*buf == NULL)
		return HVD_ENOMEM;
	for (;;) {
		struct pollfd pf = {fd, POLLIN, 0};
		long long left = deadline - hvd__now_ms();
		int d = try(arg, *buf, *len);
		ssize_t n;

		if (d != 0)
			return d;
		if (left <= 0)
			break;
		if (*len == cap) {
			uint8_t *nb = realloc(*buf, cap * 2);

			if (nb == NULL)
				return HVD_ENOMEM;
			*buf = nb;
			cap *= 2;
		}
		if (poll(&pf, 1, left > 60000 ? 60000 : (int)left) <= 0)
			continue;
		n = recv(fd, *buf + *len, cap - *len, 0);
		if (n == 0) {
			rc = HVD_ECONN;
			break;
		}
		if (n > 0)
			*len += (size_t)n;
	}
	return rc;
}

struct peers_arg {
	int size;
	const uint8_t *secret, *nonce;
	uint32_t round;
	char *addrs;
};

static int try_peers(void *arg, const uint8_t *in, size_t len)
{
	struct peers_arg *a = arg;
	int d = rdv_peers_decode(in, len, a->secret, a->nonce,
				 (uint32_t)a->size, &a->round, a->addrs);

	return d == 0 ? 0 : d == 1 ? 1 : HVD_EPROTO;
}

struct world_arg {
	const uint8_t *secret, *nonce;
	struct rdv_world w;
	char *addrs;
	size_t used; /* WORLD's length */
};

/* WORLD, after any notice meant for the generation the worker left. */
static int try_world(void *arg, const uint8_t *in, size_t len)
{
	struct world_arg *a = arg;
	size_t at = 0;

	for (;;) {
		char type, what;
		long n = rdv_elastic_decode(in + at, len - at, a->secret,
					    a->nonce, &type, &what, &a->w,
					    &a->addrs);

		if (n == 0)
			return 0;
		if (n < 0)
			return HVD_EPROTO;
		at += (size_t)n;
		if (type == 'W') {
			a->used = at;
			return 1;
		}
	}
}

/* What came on an elastic worker's rendezvous connection while its mesh
 * connects, after the WORLD: hosts notices are kept (the watcher takes
 * them once the mesh is up; a removal's reset comes on its own);
 * anything else calls the connects off. */
struct after_world {
	int fd;
	const uint8_t *secret, *nonce;
	uint8_t *buf; /* malloc'ed */
	size_t len;
};

static bool reset_came(void *arg)
{
	struct after_world *a = arg;
	uint8_t in[256], *nb;
	size_t at = 0;
	ssize_t n = recv(a->fd, in, sizeof(in), MSG_DONTWAIT);

	if (n == 0)
		return true; /* hvdrun closed it: out of this generation */
	if (n < 0)
		return errno != EAGAIN && errno != EINTR;
	nb = realloc(a->buf, a->len + (size_t)n);
	if (nb == NULL)
		return true;
	a->buf = nb;
	memcpy(a->buf + a->len, in, (size_t)n);
	a->len += (size_t)n;
	for (;;) {
		struct rdv_world w;
		char *addrs = NULL, type, what;
		long m = rdv_elastic_decode(a->buf + at, a->len - at, a->secret,
					    a->nonce, &type, &what, &w, &addrs);

		free(addrs);
		if (m == 0)
			break;
		if (m < 0 || type != 'N' ||
		    (what != RDV_NOTICE_HOSTS && what != RDV_NOTICE_REMOVED))
			return true;
		at += (size_t)m;
	}
	return false;
}

/* One join. Static: as rank of size. Elastic (link not NULL): as worker
 * id after generation last_gen; the WORLD gives rank and size (*w), and
 * the rendezvous connection stays open in *link. */
struct join_as {
	int rank, size;
	struct hvd__rdv_link *link;
	struct rdv_world w;
	uint32_t key_gen; /* the generation or round joined */
};

static int join_mesh(struct join_as *j, struct hvd__tcp **out)
{
	const char *ifaces = getenv("HVD_NETWORK_INTERFACES");
	char bind_ip[INET_ADDRSTRLEN];
	const char *list = getenv("HVD_RENDEZVOUS");
	uint8_t secret[RDV_SECRET_LEN], key[RDV_SECRET_LEN],
		token[RDV_SECRET_LEN];
	char self[64], *copy = NULL, *save = NULL, *a, *addrs = NULL;
	char **addrv = NULL;
	struct rdv_register reg;
	struct hvd__tcp *t = NULL;
	struct after_world aw;
	uint8_t *buf = NULL;
	size_t len = 0;
	long timeout_s;
	long long deadline;
	int fd = -1, rc, r, port, rank = j->rank;

	*out = NULL;
	if (list == NULL ||
	    !rdv_secret_from_hex(getenv("HVD_SECRET"), secret)) {
		hvd__error(
			"HVD_RENDEZVOUS and HVD_SECRET are not set: start the job with hvdrun");
		return HVD_EINVAL;
	}
	rc = hvd__env_long(WENV_START_TIMEOUT, &timeout_s);
	if (rc != HVD_OK)
		return rc;
	deadline = hvd__now_ms() + timeout_s * 1000 + 5000;
	if (ifaces != NULL && *ifaces != '\0') {
		rc = ifaces_ipv4(ifaces, bind_ip, sizeof(bind_ip));
		if (rc == IFACES_ENOMEM || rc == IFACES_ESYS)
			return rc == IFACES_ENOMEM ? HVD_ENOMEM : HVD_ESYS;
		if (rc != IFACES_OK) {
			hvd__error(
				"rank %d: no interface of HVD_NETWORK_INTERFACES=%s has an IPv4 address here",
				rank, ifaces);
			return HVD_EINVAL;
		}
	}
	rc = hvd__tcp_new(&t, ifaces && *ifaces ? bind_ip : NULL, self,
			  sizeof(self));
	if (rc != HVD_OK)
		return rc;
	port = (int)strtol(strrchr(self, ':') + 1, NULL, 10); /* ours */
	/* Every worker connects at once: one that found hvdrun's accept
	 * queue full tries again after a second or more, past the connect's
	 * wait. The list again every 100 ms, until the deadline. */
	do {
		if (copy != NULL) /* a pass failed */
			poll(NULL, 0, 100);
		free(copy);
		copy = strdup(list);
		rc = HVD_ETIMEDOUT;
		for (a = copy ? strtok_r(copy, ",", &save) : NULL; a != NULL;
		     a = strtok_r(NULL, ",", &save)) {
			rc = try_register(a, ifaces && *ifaces ? bind_ip : NULL,
					  rank, j->size, port, secret, &reg,
					  deadline, &fd);
			if (rc == HVD_OK || rc == HVD_EPROTO) /* final */
				break;
		}
	} while (rc == HVD_ETIMEDOUT && copy != NULL &&
		 hvd__now_ms() + 2000 < deadline);
	if (rc == HVD_ETIMEDOUT)
		rc = HVD_ECONN;
	if (rc != HVD_OK) {
		if (rc != HVD_EPROTO)
			hvd__error(
				"rank %d cannot reach hvdrun's rendezvous at %s",
				rank, list);
		goto out;
	}
	if (j->link != NULL) {
		struct world_arg wa = {secret, reg.nonce, {0}, NULL, 0};

		/* Elastic: hvdrun sends the world when its generation forms,
		 * which for a worker started on a new host waits for the
		 * running workers' next commit; hvdrun closes the connection
		 * if it gives up. The mesh then has the start timeout. */
		rc = read_until(fd, LLONG_MAX / 2, try_world, &wa, &buf, &len);
		deadline = hvd__now_ms() + timeout_s * 1000 + 5000;
		addrs = wa.addrs;
		j->w = wa.w;
		if (rc == 1) {
			j->rank = rank = (int)wa.w.rank;
			j->size = (int)wa.w.size;
			memmove(buf, buf + wa.used, len - wa.used);
			len -= wa.used;
		}
	} else {
		struct peers_arg pa = {j->size, secret, reg.nonce, 0, NULL};

		addrs = pa.addrs = malloc((size_t)j->size * (RDV_ADDR_MAX + 1));
		rc = addrs == NULL ? HVD_ENOMEM
				   : read_until(fd, deadline, try_peers, &pa,
						&buf, &len);
		j->key_gen = pa.round;
	}
	if (rc != 1) {
		if (j->link != NULL && rc == HVD_ECONN)
			hvd__warn(
				"worker %d: hvdrun left it out of the job's next generation (its host left the job)",
				j->rank);
		else
			hvd__error(
				"rank %d: the job did not start: not every rank joined (%s)",
				rank, hvd_strerror(rc));
		goto out;
	}
	addrv = malloc((size_t)j->size * sizeof(*addrv));
	if (addrv == NULL) {
		rc = HVD_ENOMEM;
		goto out;
	}
	for (r = 0; r < j->size; r++)
		addrv[r] = addrs + (size_t)r * (RDV_ADDR_MAX + 1);
	if (j->link != NULL)
		j->key_gen = j->w.gen;
	rdv_generation_key(secret, j->key_gen, key);
	rdv_mesh_token(key, token);
	/* Elastic: a reset notice calls the connects off. */
	aw = (struct after_world){fd, secret, reg.nonce, buf, len};
	buf = NULL;
	if (j->link != NULL)
		hvd__tcp_set_cancel(t, fd, reset_came, &aw);
	rc = hvd__tcp_connect(t, rank, j->size, addrv, token,
			      (int)(deadline - hvd__now_ms()));
	if (rc == HVD_OK && j->link != NULL) {
		j->link->fd = fd;
		fd = -1;
		memcpy(j->link->secret, secret, sizeof(secret));
		memcpy(j->link->nonce, reg.nonce, sizeof(reg.nonce));
		j->link->rest = aw.buf;
		j->link->nrest = aw.len;
		aw.buf = NULL;
	}
	free(aw.buf);
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	free(copy);
	free(addrs);
	free(addrv);
	if (rc != HVD_OK) {
		hvd__tcp_free(t);
		t = NULL;
	}
	*out = t;
	return rc;
}

int hvd__join(struct hvd__state *st, bool mesh, struct hvd__comm *comm)
{
	int rank = st->rank, size = st->size;
	struct join_as j = {rank, size, NULL, {0}, 0};
	struct hvd__tcp *t = NULL;
	int rc = mesh ? join_mesh(&j, &t) : HVD_OK;

	st->key_gen = j.key_gen;
	comm->rank = rank;
	comm->size = size;
	comm->ops = &hvd__tcp_ops;
	comm->t = t;
	return rc;
}

int hvd__join_elastic(struct hvd__state *st, uint32_t id, uint32_t last_gen,
		      struct hvd__comm *comm, struct hvd__rdv_link *link)
{
	struct join_as j = {(int)id, (int)last_gen, link, {0}, 0};
	struct hvd__tcp *t = NULL;
	int rc = join_mesh(&j, &t);

	if (rc == HVD_OK) {
		st->rank = (int)j.w.rank;
		st->size = (int)j.w.size;
		st->local_rank = (int)j.w.local_rank;
		st->local_size = (int)j.w.local_size;
		st->cross_rank = (int)j.w.cross_rank;
		st->cross_size = (int)j.w.cross_size;
	}
	/* Its world came: the generation is this worker's, whether or not
	 * its mesh formed (hvd_init then fails with HVD_ERESET). */
	st->generation = (int)j.w.gen;
	st->key_gen = j.w.gen;
	comm->rank = st->rank;
	comm->size = st->size;
	comm->ops = &hvd__tcp_ops;
	comm->t = t;
	return rc;
}
