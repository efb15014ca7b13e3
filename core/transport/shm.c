/* shm.c: see shm.h. */
#include "transport/shm.h"

#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/internal.h"
#include "util/reduce.h"
#include "util/wait.h"

#define SPINS 64	   /* checks before a wait (wait.h) begins */
#define SLEEP_NS 20000000L /* one futex sleep: 20 ms, then a liveness check */
/* An allreduce on one host up to this size takes one barrier, not two:
 * every rank reduces all of it (reading it from every slot costs less
 * than a barrier's wait). */
#define SMALL_BYTES (16u << 10)
#define DIRECT_BLOCK (32u << 10) /* reduce_into's, from the cache */

/* The first cache line: set once a rank has failed, so that no local
 * peer waits for it. */
struct head {
	_Atomic uint32_t broken;
	char pad[64 - sizeof(uint32_t)];
};

/* One cache line per rank: what its peers wait on. */
struct line {
	_Atomic uint32_t arrive;   /* rounds this rank has reached */
	_Atomic uint32_t sleepers; /* peers asleep on arrive */
	int32_t pid;
	char pad[64 - 3 * sizeof(uint32_t)];
};

/* One cache line per rank: its bell (shm.h), apart from the lines that
 * the exchanges spin on. */
struct bell {
	_Atomic uint32_t rung;	   /* rings so far */
	_Atomic uint32_t sleepers; /* this rank's threads asleep on it */
	_Atomic uint32_t polls;	   /* they sleep in poll() on its socket */
	char pad[64 - 3 * sizeof(uint32_t)];
};

struct hvd__shm {
	int lrank, lsize;
	size_t slot;
	unsigned char *base;
	size_t len;
	struct head *head;
	struct line *lines;
	struct bell *bells;
	unsigned char *slots;
	int *pidfd;
	const unsigned char **view; /* lsize slots: the last exchange's */
	uint32_t seq;
	unsigned set;	/* the slot set of the next chunk */
	char name[112]; /* the segment's abstract socket name */
	int bell_fd;	/* this rank's bell socket (hvd__shm_bell_socket) */
};

/* What local rank 0 sends each peer with the segment's fd. */
struct offer {
	uint32_t lsize;
	uint64_t slot;
};

static size_t header_bytes(int lsize)
{
	size_t h = sizeof(struct head) +
		   (size_t)lsize * (sizeof(struct line) + sizeof(struct bell));

	return (h + 4095) & ~(size_t)4095;
}

static unsigned char *slot_of(const struct hvd__shm *s, unsigned set, int r)
{
	return s->slots +
	       ((size_t)set * (size_t)s->lsize + (size_t)r) * s->slot;
}

static socklen_t abstract_addr(struct sockaddr_un *a, const char *name)
{
	size_t n = strlen(name);

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (n > sizeof(a->sun_path) - 1)
		n = sizeof(a->sun_path) - 1;
	memcpy(a->sun_path + 1, name, n); /* sun_path[0] = 0: abstract */
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static int send_fd(int sock, int fd, const struct offer *o)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {(void *)o, sizeof(*o)};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = ctl,
			   .msg_controllen = sizeof(ctl)};
	struct cmsghdr *c;

	memset(ctl, 0, sizeof(ctl));
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &m, MSG_NOSIGNAL) == (ssize_t)sizeof(*o)
		       ? HVD_OK
		       : HVD_ECONN;
}

static int recv_fd(int sock, int *fd, struct offer *o, long long deadline)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {o, sizeof(*o)};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = ctl,
			   .msg_controllen = sizeof(ctl)};
	struct pollfd pf = {sock, POLLIN, 0};
	struct cmsghdr *c;
	long long left = deadline - hvd__now_ms();

	if (left <= 0 || poll(&pf, 1, (int)left) != 1)
		return HVD_ETIMEDOUT;
	if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof(*o))
		return HVD_ECONN;
	c = CMSG_FIRSTHDR(&m);
	if (c == NULL || c->cmsg_type != SCM_RIGHTS)
		return HVD_EPROTO;
	memcpy(fd, CMSG_DATA(c), sizeof(int));
	return HVD_OK;
}

/* Local rank 0: create the segment and hand it to every peer. */
static int create(const char *name, int lsize, size_t len, size_t slot,
		  long long deadline, int *out)
{
	struct offer o = {(uint32_t)lsize, slot};
	struct sockaddr_un a;
	socklen_t al = abstract_addr(&a, name);
	int fd = (int)syscall(SYS_memfd_create, "hvd-shm", MFD_CLOEXEC);
	int ls = -1, rc = HVD_OK, given = 0;
	struct ucred cred;
	socklen_t cl = sizeof(cred);

	if (fd < 0 || ftruncate(fd, (off_t)len) != 0)
		rc = HVD_ESYS;
	if (rc == HVD_OK && lsize > 1) {
		ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (ls < 0 || bind(ls, (struct sockaddr *)&a, al) != 0 ||
		    listen(ls, lsize) != 0)
			rc = HVD_ESYS;
	}
	while (rc == HVD_OK && given < lsize - 1) {
		struct pollfd pf = {ls, POLLIN, 0};
		long long left = deadline - hvd__now_ms();
		int c;

		if (left <= 0 || poll(&pf, 1, (int)left) != 1) {
			rc = HVD_ETIMEDOUT;
			break;
		}
		c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		/* Only this user's processes get the segment. */
		if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 ||
		    cred.uid != getuid()) {
			close(c);
			continue;
		}
		rc = send_fd(c, fd, &o);
		close(c);
		given++;
	}
	if (ls >= 0)
		close(ls);
	if (rc != HVD_OK && fd >= 0)
		close(fd);
	*out = rc == HVD_OK ? fd : -1;
	return rc;
}

/* A peer: take the segment from local rank 0. */
static int join(const char *name, int lsize, size_t slot, long long deadline,
		int *out)
{
	struct sockaddr_un a;
	socklen_t al = abstract_addr(&a, name);
	struct offer o;
	int rc = HVD_ETIMEDOUT;

	*out = -1;
	while (hvd__now_ms() < deadline) {
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (c < 0)
			return HVD_ESYS;
		if (connect(c, (struct sockaddr *)&a, al) == 0) {
			rc = recv_fd(c, out, &o, deadline);
			close(c);
			if (rc == HVD_OK &&
			    (o.lsize != (uint32_t)lsize || o.slot != slot)) {
				close(*out);
				*out = -1;
				rc = HVD_EMISMATCH;
			}
			return rc;
		}
		close(c);
		poll(NULL, 0, 5); /* local rank 0 is not listening yet */
	}
	return rc;
}

static long futex(_Atomic uint32_t *w, int op, uint32_t v,
		  const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)w, op, v, ts, NULL, 0);
}

/* Rank p's bell socket's name. */
static socklen_t bell_addr(const struct hvd__shm *s, int p,
			   struct sockaddr_un *a)
{
	char n[sizeof(s->name) + 16];

	snprintf(n, sizeof(n), "%s-bell%d", s->name, p);
	return abstract_addr(a, n);
}

/* Ring rank p's bell: wake it where it sleeps, on the futex or (polls) on
 * its socket. */
static void ring(const struct hvd__shm *s, int p)
{
	struct bell *b = &s->bells[p];
	struct sockaddr_un a;
	socklen_t al;

	atomic_fetch_add(&b->rung, 1);
	if (atomic_load(&b->sleepers) == 0)
		return;
	if (!atomic_load(&b->polls) || s->bell_fd < 0) {
		futex(&b->rung, FUTEX_WAKE, INT32_MAX, NULL);
		return;
	}
	al = bell_addr(s, p, &a);
	/* A full socket has a ring waiting already. */
	(void)sendto(s->bell_fd, "", 1, MSG_DONTWAIT, (struct sockaddr *)&a,
		     al);
}

static int peer_dead(const struct hvd__shm *s, int p)
{
	struct pollfd pf = {s->pidfd[p], POLLIN, 0};

	return s->pidfd[p] >= 0 && poll(&pf, 1, 0) == 1;
}

/* Wait until peer p has reached round seq: spin while spinning pays
 * (wait.h), then sleep on the peer's line in short steps, checking
 * between them that the peer lives. */
static int wait_peer(struct hvd__shm *s, int p, uint32_t seq,
		     long long deadline)
{
	struct line *l = &s->lines[p];
	struct timespec ts = {0, SLEEP_NS};
	struct hvd__wait w;
	uint32_t v;
	int i;

	for (i = 0; i < SPINS; i++)
		if ((int32_t)(atomic_load(&l->arrive) - seq) >= 0)
			return HVD_OK;
	hvd__wait_begin(&w, HVD__WAIT_SHM);
	while (hvd__wait_spin(&w)) {
		if ((int32_t)(atomic_load(&l->arrive) - seq) >= 0) {
			hvd__wait_end(&w);
			return HVD_OK;
		}
		if (atomic_load(&s->head->broken))
			return HVD_ECONN;
	}
	for (;;) {
		atomic_fetch_add(&l->sleepers, 1);
		v = atomic_load(&l->arrive);
		if ((int32_t)(v - seq) < 0 && !atomic_load(&s->head->broken))
			futex(&l->arrive, FUTEX_WAIT, v, &ts);
		atomic_fetch_sub(&l->sleepers, 1);
		if ((int32_t)(atomic_load(&l->arrive) - seq) >= 0) {
			hvd__wait_end(&w);
			return HVD_OK;
		}
		if (atomic_load(&s->head->broken) || peer_dead(s, p))
			return HVD_ECONN;
		if (hvd__now_ms() >= deadline)
			return HVD_ETIMEDOUT;
	}
}

void hvd__shm_abort(struct hvd__shm *s)
{
	int p;

	if (s == NULL || s->base == NULL)
		return;
	atomic_store(&s->head->broken, 1);
	for (p = 0; p < s->lsize; p++) {
		if (atomic_load(&s->lines[p].sleepers) > 0)
			futex(&s->lines[p].arrive, FUTEX_WAKE, INT32_MAX, NULL);
		ring(s, p);
	}
}

bool hvd__shm_bell_called(const struct hvd__shm *s)
{
	/* This rank's last round (its line, not s->seq: a thread that no
	 * longer runs the engine may ask). */
	uint32_t mine = atomic_load(&s->lines[s->lrank].arrive);
	int p;

	for (p = 0; p < s->lsize; p++)
		if (p != s->lrank &&
		    (int32_t)(atomic_load(&s->lines[p].arrive) - mine) > 0)
			return true;
	return false;
}

int hvd__shm_bell_socket(struct hvd__shm *s)
{
	struct sockaddr_un a;
	socklen_t al = bell_addr(s, s->lrank, &a);
	int fd;

	if (s->bell_fd >= 0)
		return s->bell_fd;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, al) != 0) {
		close(fd);
		return -1;
	}
	s->bell_fd = fd;
	atomic_store(&s->bells[s->lrank].polls, 1);
	return fd;
}

void hvd__shm_bell_sleep(struct hvd__shm *s, double ms, bool (*woken)(void),
			 struct pollfd *fds, int nfds)
{
	struct bell *b = &s->bells[s->lrank];
	long long ns = (long long)(ms * 1e6);
	struct timespec ts = {ns / 1000000000, ns % 1000000000};
	uint32_t seen;
	char c[16];

	if (ns <= 0)
		return;
	/* A ringer checks sleepers after it made its event (a round
	 * arrived at, work queued); this checks the events after it counted
	 * itself in: one of the two sees the other. A ring on the socket
	 * from before (drained) came with an event that this sees. */
	atomic_fetch_add(&b->sleepers, 1);
	while (nfds > 0 && s->bell_fd >= 0 &&
	       recv(s->bell_fd, c, sizeof(c), MSG_DONTWAIT) >= 0)
		;
	seen = atomic_load(&b->rung);
	if (!woken() && !hvd__shm_bell_called(s) &&
	    !atomic_load(&s->head->broken)) {
		if (nfds > 0)
			ppoll(fds, (nfds_t)nfds, &ts, NULL);
		else
			futex(&b->rung, FUTEX_WAIT, seen, &ts);
	}
	atomic_fetch_sub(&b->sleepers, 1);
}

void hvd__shm_bell_ring(struct hvd__shm *s)
{
	if (atomic_load(&s->bells[s->lrank].sleepers) > 0)
		ring(s, s->lrank);
}

int hvd__shm_barrier(struct hvd__shm *s, int timeout_ms)
{
	long long deadline = hvd__now_ms() + timeout_ms;
	struct line *me = &s->lines[s->lrank];
	uint32_t seq = ++s->seq;
	int p, rc = HVD_OK;

	atomic_store(&me->arrive, seq);
	if (atomic_load(&me->sleepers) > 0)
		futex(&me->arrive, FUTEX_WAKE, INT32_MAX, NULL);
	/* A peer asleep on its bell, not yet at this round, waits for it (a
	 * late rank's next agreement): it comes now. */
	for (p = 0; p < s->lsize; p++)
		if (p != s->lrank && atomic_load(&s->bells[p].sleepers) > 0 &&
		    (int32_t)(seq - atomic_load(&s->lines[p].arrive)) > 0)
			ring(s, p);
	for (p = 0; p < s->lsize && rc == HVD_OK; p++)
		if (p != s->lrank)
			rc = wait_peer(s, p, seq, deadline);
	return rc;
}

int hvd__shm_open(struct hvd__shm **out, int lrank, int lsize, const char *name,
		  size_t slot, int timeout_ms)
{
	long long deadline = hvd__now_ms() + timeout_ms;
	struct hvd__shm *s;
	int fd = -1, p, rc;

	*out = NULL;
	if (lsize < 1 || lrank < 0 || lrank >= lsize || slot == 0)
		return HVD_EINVAL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return HVD_ENOMEM;
	s->lrank = lrank;
	s->lsize = lsize;
	s->slot = (slot + 63) & ~(size_t)63;
	s->len = header_bytes(lsize) + 2 * (size_t)lsize * s->slot;
	s->pidfd = malloc((size_t)lsize * sizeof(int));
	s->view = malloc((size_t)lsize * sizeof(*s->view));
	if (s->pidfd == NULL || s->view == NULL) {
		free(s->pidfd);
		free(s->view);
		free(s);
		return HVD_ENOMEM;
	}
	for (p = 0; p < lsize; p++)
		s->pidfd[p] = -1;
	s->bell_fd = -1;
	snprintf(s->name, sizeof(s->name), "%s", name);
	rc = lrank == 0 ? create(name, lsize, s->len, s->slot, deadline, &fd)
			: join(name, lsize, s->slot, deadline, &fd);
	if (rc == HVD_OK) {
		s->base = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED,
			       fd, 0);
		if (s->base == MAP_FAILED) {
			s->base = NULL;
			rc = HVD_ESYS;
		}
		close(fd);
	}
	if (rc != HVD_OK) {
		hvd__shm_close(s);
		return rc;
	}
	s->head = (struct head *)(void *)s->base;
	s->lines = (struct line *)(void *)(s->base + sizeof(struct head));
	s->bells = (struct bell *)(void *)(s->lines + lsize);
	s->slots = s->base + header_bytes(lsize);
	s->lines[lrank].pid = (int32_t)getpid();
	/* Every pid is written once every rank has arrived. */
	rc = hvd__shm_barrier(s, (int)(deadline - hvd__now_ms()));
	for (p = 0; p < lsize && rc == HVD_OK; p++)
		if (p != lrank)
			s->pidfd[p] = (int)syscall(SYS_pidfd_open,
						   s->lines[p].pid, 0);
	if (rc != HVD_OK) {
		hvd__shm_close(s);
		return rc;
	}
	*out = s;
	return HVD_OK;
}

/* Copy bytes [off, off + len) of the pieces into dst (gather) or from
 * src into them (scatter). */
static void pieces_copy(const struct iovec *v, int k, size_t off, size_t len,
			void *dst, const void *src)
{
	size_t at = 0, done = 0;
	int j;

	for (j = 0; j < k && done < len; j++) {
		size_t b = v[j].iov_len, lo, n;

		if (at + b <= off) {
			at += b;
			continue;
		}
		lo = off + done - at;
		n = b - lo < len - done ? b - lo : len - done;
		if (dst != NULL)
			memcpy((char *)dst + done, (char *)v[j].iov_base + lo,
			       n);
		else if (src != NULL)
			memcpy((char *)v[j].iov_base + lo,
			       (const char *)src + done, n);
		done += n;
		at += b;
	}
}

/* This rank's slice [lo, hi) of the chunk in set, reduced across the
 * local slots and then, with across, across hosts: an average sums, and
 * divides once by every rank's count. */
static int reduce_slice(struct hvd__shm *s, const struct hvd__across *across,
			unsigned set, size_t lo, size_t hi, enum hvd_dtype t,
			enum hvd_op op)
{
	size_t es = hvd__dtype_size(t);
	unsigned char *mine = slot_of(s, set, s->lrank) + lo * es;
	enum hvd_op sum = op == HVD_AVERAGE ? HVD_SUM : op;
	int p, rc = HVD_OK;
	int hosts = across != NULL && across->hosts > 1 ? across->hosts : 1;

	if (hi <= lo)
		return HVD_OK;
	for (p = 0; p < s->lsize; p++)
		if (p != s->lrank)
			hvd__reduce(mine, slot_of(s, set, p) + lo * es, hi - lo,
				    t, sum);
	if (hosts > 1)
		rc = across->allreduce(across->arg, mine, hi - lo, t, sum);
	if (rc == HVD_OK && op == HVD_AVERAGE)
		hvd__divide(mine, hi - lo, t, s->lsize * hosts);
	return rc;
}

/* reduce_slice on one host, in the pieces: the peers' slots reduced into
 * this rank's bytes [from, to) of the chunk at off (the same bits), a
 * block at a time, each copied on from the cache to the slot for them. */
static void reduce_into(struct hvd__shm *s, unsigned set, const struct iovec *v,
			int k, size_t off, size_t from, size_t to,
			enum hvd_dtype t, enum hvd_op op)
{
	size_t es = hvd__dtype_size(t), at = 0, x, n, end;
	enum hvd_op sum = op == HVD_AVERAGE ? HVD_SUM : op;
	int j, p;

	for (j = 0; j < k && at < to; at += v[j].iov_len, j++) {
		end = at + v[j].iov_len < to ? at + v[j].iov_len : to;
		for (x = at > from ? at : from; x < end; x += n) {
			unsigned char *d = (unsigned char *)v[j].iov_base;

			d += x - at;
			n = end - x < DIRECT_BLOCK ? end - x : DIRECT_BLOCK;
			for (p = 0; p < s->lsize; p++)
				if (p != s->lrank)
					hvd__reduce(
						d, slot_of(s, set, p) + x - off,
						n / es, t, sum);
			if (op == HVD_AVERAGE)
				hvd__divide(d, n / es, t, s->lsize);
			memcpy(slot_of(s, set, s->lrank) + x - off, d, n);
		}
	}
}

size_t hvd__shm_slot_bytes(const struct hvd__shm *s)
{
	return s->slot;
}

/* The set is written again two exchanges later, after a barrier that no
 * peer reaches before it has read it. */
int hvd__shm_exchange(struct hvd__shm *s, const struct iovec *v, int k,
		      const unsigned char *const **slots, int timeout_ms)
{
	unsigned set = s->set;
	size_t total = 0;
	int j, p, rc;

	for (j = 0; j < k; j++)
		total += v[j].iov_len;
	if (total > s->slot)
		return HVD_EINVAL;
	s->set ^= 1;
	pieces_copy(v, k, 0, total, slot_of(s, set, s->lrank), NULL);
	rc = hvd__shm_barrier(s, timeout_ms);
	for (p = 0; p < s->lsize; p++)
		s->view[p] = slot_of(s, set, p);
	*slots = s->view;
	return rc;
}

void hvd__shm_reduce_slots(const struct hvd__shm *s,
			   const unsigned char *const *slots, size_t off,
			   void *dst, size_t count, enum hvd_dtype t,
			   enum hvd_op op)
{
	enum hvd_op sum = op == HVD_AVERAGE ? HVD_SUM : op;
	int p;

	if (count == 0) /* dst may then be NULL */
		return;
	memcpy(dst, slots[0] + off, count * hvd__dtype_size(t));
	for (p = 1; p < s->lsize; p++)
		hvd__reduce(dst, slots[p] + off, count, t, sum);
	if (op == HVD_AVERAGE)
		hvd__divide(dst, count, t, s->lsize);
}

/* allreduce_keep of at most one slot on one host, in one exchange: every
 * rank reduces the bytes it keeps from every slot, in the same order, so
 * every rank has the same bits. */
static int allreduce_small(struct hvd__shm *s, const struct iovec *v, int k,
			   enum hvd_dtype t, enum hvd_op op, int timeout_ms,
			   size_t keep_lo, size_t keep_hi)
{
	size_t es = hvd__dtype_size(t), at = 0;
	const unsigned char *const *slots;
	int j, rc;

	rc = hvd__shm_exchange(s, v, k, &slots, timeout_ms);
	for (j = 0; j < k && rc == HVD_OK; at += v[j].iov_len, j++) {
		size_t lo = at > keep_lo ? at : keep_lo;
		size_t hi = at + v[j].iov_len < keep_hi ? at + v[j].iov_len
							: keep_hi;
		unsigned char *dst = (unsigned char *)v[j].iov_base + (lo - at);

		if (hi <= lo)
			continue;
		hvd__shm_reduce_slots(s, slots, lo, dst, (hi - lo) / es, t, op);
	}
	return rc;
}

/* The allreduce of the pieces, every rank copying out only the bytes of
 * [keep_lo, keep_hi) of the result. */
static int allreduce_keep(struct hvd__shm *s, const struct hvd__across *across,
			  const struct iovec *v, int k, enum hvd_dtype t,
			  enum hvd_op op, int timeout_ms, size_t keep_lo,
			  size_t keep_hi)
{
	size_t es = hvd__dtype_size(t), total = 0, chunk, off;
	int j, p, rc = HVD_OK;

	for (j = 0; j < k; j++)
		total += v[j].iov_len;
	if (total <= SMALL_BYTES && total <= s->slot &&
	    (across == NULL || across->hosts <= 1))
		return allreduce_small(s, v, k, t, op, timeout_ms, keep_lo,
				       keep_hi);
	chunk = s->slot - s->slot % es;
	for (off = 0; off < total && rc == HVD_OK; off += chunk) {
		size_t len = total - off < chunk ? total - off : chunk;
		size_t ne = len / es;
		size_t mlo = ne * (size_t)s->lrank / (size_t)s->lsize;
		size_t mhi = ne * (size_t)(s->lrank + 1) / (size_t)s->lsize;
		unsigned set = s->set;
		unsigned char *slot = slot_of(s, set, s->lrank);
		/* reduce_into where the slice's result is kept (one host). */
		bool direct = (across == NULL || across->hosts <= 1) &&
			      mhi > mlo && off + mlo * es >= keep_lo &&
			      off + mhi * es <= keep_hi;

		s->set ^= 1;
		if (direct) { /* the peers' slices only */
			pieces_copy(v, k, off, mlo * es, slot, NULL);
			pieces_copy(v, k, off + mhi * es, len - mhi * es,
				    slot + mhi * es, NULL);
		} else {
			pieces_copy(v, k, off, len, slot, NULL);
		}
		rc = hvd__shm_barrier(s, timeout_ms);
		if (rc == HVD_OK && direct)
			reduce_into(s, set, v, k, off, off + mlo * es,
				    off + mhi * es, t, op);
		else if (rc == HVD_OK)
			rc = reduce_slice(s, across, set, mlo, mhi, t, op);
		if (rc == HVD_OK)
			rc = hvd__shm_barrier(s, timeout_ms);
		for (p = 0; p < s->lsize && rc == HVD_OK; p++) {
			size_t lo =
				off + ne * (size_t)p / (size_t)s->lsize * es;
			size_t hi = off + ne * (size_t)(p + 1) /
						  (size_t)s->lsize * es;

			lo = lo > keep_lo ? lo : keep_lo;
			hi = hi < keep_hi ? hi : keep_hi;
			if (hi > lo && !(direct && p == s->lrank))
				pieces_copy(v, k, lo, hi - lo, NULL,
					    slot_of(s, set, p) + (lo - off));
		}
	}
	return rc;
}

int hvd__shm_allreduce_v(struct hvd__shm *s, const struct hvd__across *across,
			 const struct iovec *v, int k, enum hvd_dtype t,
			 enum hvd_op op, int timeout_ms)
{
	return allreduce_keep(s, across, v, k, t, op, timeout_ms, 0, SIZE_MAX);
}

int hvd__shm_reduce_keep(struct hvd__shm *s, const struct hvd__across *across,
			 void *buf, size_t len, size_t keep_lo, size_t keep_hi,
			 enum hvd_dtype t, enum hvd_op op, int timeout_ms)
{
	struct iovec one = {buf, len};

	return allreduce_keep(s, across, &one, 1, t, op, timeout_ms, keep_lo,
			      keep_hi);
}

int hvd__shm_broadcast(struct hvd__shm *s, void *buf, size_t len, int root,
		       int timeout_ms)
{
	size_t chunk = (size_t)s->lsize * s->slot, off;
	int rc = HVD_OK;

	/* The slots of a set lie end to end: a chunk fills one set. */
	for (off = 0; off < len && rc == HVD_OK; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;
		unsigned char *set = slot_of(s, s->set, 0);

		s->set ^= 1;
		if (s->lrank == root)
			memcpy(set, (char *)buf + off, n);
		rc = hvd__shm_barrier(s, timeout_ms);
		if (rc == HVD_OK && s->lrank != root)
			memcpy((char *)buf + off, set, n);
	}
	return rc;
}

int hvd__shm_allgatherv(struct hvd__shm *s, void *out, const size_t *len,
			int timeout_ms)
{
	size_t most = 0, mine = 0, off, at;
	int p, rc = HVD_OK;

	for (p = 0; p < s->lsize; p++) {
		if (len[p] > most)
			most = len[p];
		if (p < s->lrank)
			mine += len[p];
	}
	/* Round by round, every rank's next slot-full of its block. */
	for (off = 0; off < most && rc == HVD_OK; off += s->slot) {
		unsigned set = s->set;

		s->set ^= 1;
		if (len[s->lrank] > off)
			memcpy(slot_of(s, set, s->lrank),
			       (char *)out + mine + off,
			       len[s->lrank] - off < s->slot
				       ? len[s->lrank] - off
				       : s->slot);
		rc = hvd__shm_barrier(s, timeout_ms);
		for (p = 0, at = 0; p < s->lsize && rc == HVD_OK;
		     at += len[p], p++)
			if (p != s->lrank && len[p] > off)
				memcpy((char *)out + at + off,
				       slot_of(s, set, p),
				       len[p] - off < s->slot ? len[p] - off
							      : s->slot);
	}
	return rc;
}

int hvd__shm_alltoallv(struct hvd__shm *s, const void *send, const size_t *sb,
		       const size_t *soff, void *out, const size_t *rb,
		       const size_t *roff, int timeout_ms)
{
	/* Each slot holds one part per destination. */
	size_t part = s->slot / (size_t)s->lsize / 64 * 64, off;
	int64_t most = 0;
	struct iovec one = {&most, sizeof(most)};
	int p, me = s->lrank, rc;

	for (p = 0; p < s->lsize; p++)
		if (p != me && (int64_t)sb[p] > most)
			most = (int64_t)sb[p];
	/* The rounds: as many as the largest block of any rank needs. */
	rc = hvd__shm_allreduce_v(s, NULL, &one, 1, HVD_INT64, HVD_MAX,
				  timeout_ms);
	for (off = 0; rc == HVD_OK && off < (size_t)most; off += part) {
		unsigned set = s->set;

		s->set ^= 1;
		for (p = 0; p < s->lsize; p++)
			if (p != me && sb[p] > off)
				memcpy(slot_of(s, set, me) + (size_t)p * part,
				       (const char *)send + soff[p] + off,
				       sb[p] - off < part ? sb[p] - off : part);
		rc = hvd__shm_barrier(s, timeout_ms);
		for (p = 0; p < s->lsize && rc == HVD_OK; p++)
			if (p != me && rb[p] > off)
				memcpy((char *)out + roff[p] + off,
				       slot_of(s, set, p) + (size_t)me * part,
				       rb[p] - off < part ? rb[p] - off : part);
	}
	return rc;
}

size_t hvd__shm_bytes(const struct hvd__shm *s)
{
	return s->len;
}

void hvd__shm_close(struct hvd__shm *s)
{
	int p;

	if (s == NULL)
		return;
	if (s->base != NULL)
		munmap(s->base, s->len);
	for (p = 0; p < s->lsize; p++)
		if (s->pidfd[p] >= 0)
			close(s->pidfd[p]);
	if (s->bell_fd >= 0)
		close(s->bell_fd);
	free(s->pidfd);
	free(s->view);
	free(s);
}
