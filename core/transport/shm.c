/* shm.c: see shm.h. */
#include "transport/shm.h"
#include "transport/shm_seg.h"

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
#include "util/wait.h"

#define SPINS 64	   /* checks before a wait (wait.h) begins */
#define SLEEP_NS 20000000L /* one futex sleep: 20 ms, then a liveness check */
#define STEP_MS 20	   /* the opening's waits: a step, then a check */

/* The opening's waits on the host's other ranks, a step at a time: until
 * fd is ready (POLLIN), the deadline, or the world's end (an elastic
 * reset, which no transport abort reaches here: util/internal.h).
 * HVD_OK, HVD_ETIMEDOUT or HVD_ECONN. */
static int await(int fd, long long deadline)
{
	struct pollfd pf = {fd, POLLIN, 0};

	for (;;) {
		long long left = deadline - hvd__now_ms();

		if (hvd__world_over())
			return HVD_ECONN;
		if (left <= 0)
			return HVD_ETIMEDOUT;
		if (poll(&pf, 1, (int)(left < STEP_MS ? left : STEP_MS)) > 0)
			return HVD_OK;
	}
}

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
	struct cmsghdr *c;
	int rc = await(sock, deadline);

	if (rc != HVD_OK)
		return rc;
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
		int c;

		rc = await(ls, deadline);
		if (rc != HVD_OK)
			break;
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
	while (hvd__now_ms() < deadline && !hvd__world_over()) {
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
	return hvd__world_over() ? HVD_ECONN : rc;
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
 * between them that the peer lives and the world goes on (an elastic
 * reset: util/internal.h). */
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
		if ((int32_t)(v - seq) < 0 && !atomic_load(&s->head->broken) &&
		    !hvd__world_over())
			futex(&l->arrive, FUTEX_WAIT, v, &ts);
		atomic_fetch_sub(&l->sleepers, 1);
		if ((int32_t)(atomic_load(&l->arrive) - seq) >= 0) {
			hvd__wait_end(&w);
			return HVD_OK;
		}
		if (atomic_load(&s->head->broken) || peer_dead(s, p) ||
		    hvd__world_over())
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
	    !atomic_load(&s->head->broken) && !hvd__world_over()) {
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
