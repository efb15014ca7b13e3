/* linkrate.c: see linkrate.h. */
#include "check/linkrate.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

#define MAX_SINKS 16
#define SINK_IDLE_S 5
#define CHUNK (256 * 1024)

/* Connections the sinks of this process serve now. */
static atomic_int active;

struct hl_lr_sink {
	int fd;
	char token[HL_PM_TOKEN + 1];
	atomic_bool stop;
	pthread_t th;
};

struct conn {
	int fd;
	char token[HL_PM_TOKEN + 1];
};

int hl_lr_listen(int *family)
{
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6,
				  .sin6_addr = IN6ADDR_ANY_INIT};
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	int fd, zero = 0;

	/* One dual-stack socket where the kernel has IPv6; IPv4 otherwise. */
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0 &&
	    (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) ||
	     bind(fd, (struct sockaddr *)&s6, sizeof(s6)) != 0)) {
		close(fd);
		fd = -1;
	}
	*family = AF_INET6;
	if (fd < 0) {
		*family = AF_INET;
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    0);
		if (fd >= 0 &&
		    bind(fd, (struct sockaddr *)&s4, sizeof(s4)) != 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0 && listen(fd, 1024) != 0) {
		close(fd);
		fd = -1;
	}
	return fd < 0 ? HL_ESYS : fd;
}

int hl_lr_port(int fd)
{
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} a;
	socklen_t sl = sizeof(a);

	memset(&a, 0, sizeof(a));
	if (getsockname(fd, &a.sa, &sl) != 0)
		return HL_ESYS;
	return ntohs(a.sa.sa_family == AF_INET6 ? a.in6.sin6_port
						: a.in.sin_port);
}

bool hl_lr_sockaddr(const char *addr, int port, struct sockaddr_storage *sa,
		    socklen_t *len)
{
	struct sockaddr_in *in = (struct sockaddr_in *)sa;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;

	memset(sa, 0, sizeof(*sa));
	if (inet_pton(AF_INET, addr, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		*len = sizeof(*in);
		return true;
	}
	if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
		return true;
	}
	return false;
}

/* Exactly n bytes; SO_RCVTIMEO bounds each read. */
static bool read_full(int fd, char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = recv(fd, p, n, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		p += k;
		n -= (size_t)k;
	}
	return true;
}

static void *serve(void *arg)
{
	struct conn *c = arg;
	struct timeval tv = {.tv_sec = SINK_IDLE_S};
	char line[HL_PM_TOKEN + 1], cmd, *buf = NULL;
	int one = 1;

	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!read_full(c->fd, line, sizeof(line)) ||
	    line[HL_PM_TOKEN] != '\n' ||
	    memcmp(line, c->token, HL_PM_TOKEN) != 0)
		goto out;
	while (read_full(c->fd, &cmd, 1)) {
		ssize_t k;

		if (cmd == 'p' && send(c->fd, "p", 1, MSG_NOSIGNAL) == 1)
			continue;
		if (cmd != 'd' || (buf = malloc(CHUNK)) == NULL)
			break;
		/* The data, until the source resets the connection (or
		 * sends nothing for SINK_IDLE_S). */
		while ((k = recv(c->fd, buf, CHUNK, 0)) > 0 ||
		       (k < 0 && errno == EINTR))
			;
		break;
	}
out:
	free(buf);
	close(c->fd);
	free(c);
	atomic_fetch_sub(&active, 1);
	return NULL;
}

static void *accept_main(void *arg)
{
	struct hl_lr_sink *s = arg;

	while (!atomic_load(&s->stop)) {
		struct pollfd pf = {.fd = s->fd, .events = POLLIN};
		struct conn *c = NULL;
		pthread_t th;
		int fd;

		if (poll(&pf, 1, 200) <= 0)
			continue;
		fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (atomic_fetch_add(&active, 1) < MAX_SINKS)
			c = malloc(sizeof(*c));
		if (c != NULL) {
			c->fd = fd;
			memcpy(c->token, s->token, sizeof(c->token));
			if (hl_thread_create(&th, serve, c) == HL_OK) {
				pthread_detach(th);
				continue;
			}
		}
		free(c);
		close(fd);
		atomic_fetch_sub(&active, 1);
	}
	return NULL;
}

int hl_lr_sink_start(struct hl_lr_sink **out, const char *token, int *port)
{
	struct hl_lr_sink *s = calloc(1, sizeof(*s));
	int family;

	*out = NULL;
	if (s == NULL)
		return HL_ENOMEM;
	snprintf(s->token, sizeof(s->token), "%s", token);
	s->fd = hl_lr_listen(&family);
	if (s->fd < 0 || (*port = hl_lr_port(s->fd)) < 0 ||
	    hl_thread_create(&s->th, accept_main, s) != HL_OK) {
		if (s->fd >= 0)
			close(s->fd);
		free(s);
		return HL_ESYS;
	}
	*out = s;
	return HL_OK;
}

void hl_lr_sink_stop(struct hl_lr_sink *s)
{
	if (s == NULL)
		return;
	atomic_store(&s->stop, true);
	pthread_join(s->th, NULL);
	close(s->fd);
	free(s);
}

/* Wait for events on fd until deadline (µs): true when they came. */
static bool wait_for(int fd, short events, long long deadline)
{
	for (;;) {
		struct pollfd pf = {.fd = fd, .events = events};
		long long left = deadline - hl_now_us();
		int r;

		if (left <= 0)
			return false;
		r = poll(&pf, 1, (int)((left + 999) / 1000));
		if (r > 0)
			return true;
		if (r < 0 && errno != EINTR)
			return false;
	}
}

static void fail(struct hl_pm_rate *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(struct hl_pm_rate *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	r->ok = false;
}

/* Connect, and show the sink its token. */
static int open_to(const struct hl_pm_transfer *t, struct hl_pm_rate *r)
{
	struct sockaddr_storage sa;
	socklen_t sl;
	long long deadline = hl_now_us() + (long long)t->timeout_ms * 1000;
	char line[HL_PM_TOKEN + 1];
	int fd, err = 0, one = 1;
	socklen_t el = sizeof(err);

	if (!hl_lr_sockaddr(t->addr, t->port, &sa, &sl)) {
		fail(r, "bad address %s", t->addr);
		return -1;
	}
	fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0) {
		fail(r, "%s", strerror(errno));
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sa, sl) != 0 &&
	    errno != EINPROGRESS) {
		fail(r, "cannot connect: %s", strerror(errno));
		close(fd);
		return -1;
	}
	if (!wait_for(fd, POLLOUT, deadline)) {
		fail(r, "no answer within %.1f s", t->timeout_ms / 1000.0);
		close(fd);
		return -1;
	}
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
	if (err != 0) {
		fail(r, "cannot connect: %s", strerror(err));
		close(fd);
		return -1;
	}
	memcpy(line, t->token, HL_PM_TOKEN);
	line[HL_PM_TOKEN] = '\n';
	if (send(fd, line, sizeof(line), MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(line)) {
		fail(r, "cannot send: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* n round trips (at most HL_LR_PINGS), all within the timeout; their
 * median. */
static bool pings(int fd, const struct hl_pm_transfer *t, int n,
		  struct hl_pm_rate *r)
{
	long long deadline = hl_now_us() + (long long)t->timeout_ms * 1000;
	double us[HL_LR_PINGS] = {0};
	int i;

	for (i = 0; i < n; i++) {
		long long t0 = hl_now_us();
		char c;
		ssize_t k = -1;

		if (send(fd, "p", 1, MSG_NOSIGNAL) != 1) {
			fail(r, "cannot send: %s", strerror(errno));
			return false;
		}
		while (wait_for(fd, POLLIN, deadline) &&
		       (k = recv(fd, &c, 1, 0)) < 0 && errno == EAGAIN)
			;
		if (k == 0) {
			fail(r, "closed by the other side: not that host's "
				"probe (the address is another host's)");
			return false;
		}
		if (k < 0) {
			fail(r, "no answer within %.1f s",
			     t->timeout_ms / 1000.0);
			return false;
		}
		us[i] = (double)(hl_now_us() - t0);
	}
	r->rtt_us = hl_median(us, (size_t)n);
	return true;
}

/* Data for t->max_ms or t->max_bytes, whichever ends first; what the
 * sink acknowledged in that time. */
static bool data(int fd, const struct hl_pm_transfer *t, struct hl_pm_rate *r)
{
	long long t0, now, end, last, stall = (long long)t->timeout_ms * 1000;
	long long sent = 0, acked = 0;
	char *buf = calloc(1, CHUNK);
	bool ok = false;

	if (buf == NULL || send(fd, "d", 1, MSG_NOSIGNAL) != 1) {
		fail(r, "cannot send: %s", buf ? strerror(errno) : "no memory");
		free(buf);
		return false;
	}
	t0 = last = hl_now_us();
	end = t0 + (long long)t->max_ms * 1000;
	for (;;) {
		int queued = 0;

		now = hl_now_us();
		if (ioctl(fd, SIOCOUTQ, &queued) == 0 &&
		    sent - queued > acked) {
			acked = sent - queued;
			last = now;
		}
		if (sent >= t->max_bytes && queued == 0) {
			ok = true;
			break;
		}
		if (now >= end && acked > 0) {
			ok = true;
			break;
		}
		if (now - last >= stall) {
			if (acked > 0)
				fail(r,
				     "stopped answering after %.1f MiB "
				     "(nothing for %.1f s)",
				     (double)acked / (1 << 20), stall / 1e6);
			else
				fail(r, "took no data within %.1f s",
				     stall / 1e6);
			break;
		}
		if (sent < t->max_bytes) {
			long long n = t->max_bytes - sent;
			ssize_t k;

			if (!wait_for(fd, POLLOUT, now + 10000))
				continue;
			k = send(fd, buf, n < CHUNK ? (size_t)n : CHUNK,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (k > 0)
				sent += k;
			else if (k < 0 && errno != EAGAIN && errno != EINTR) {
				fail(r,
				     "the connection broke after %.1f MiB: %s",
				     (double)acked / (1 << 20),
				     strerror(errno));
				break;
			}
		} else {
			/* All sent: wait for the acknowledgements. */
			struct timespec ts = {0, 200000};

			nanosleep(&ts, NULL);
		}
	}
	r->bytes = acked;
	r->us = (double)(hl_now_us() - t0);
	free(buf);
	return ok;
}

void hl_lr_measure(const struct hl_pm_transfer *t, struct hl_pm_rate *r)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	int fd;

	memset(r, 0, sizeof(*r));
	r->id = t->id;
	fd = open_to(t, r);
	if (fd < 0)
		return;
	if (t->max_bytes == 0)
		r->ok = pings(fd, t, HL_LR_PINGS, r);
	else if (pings(fd, t, 1, r) && data(fd, t, r))
		r->ok = true;
	if (t->max_bytes > 0)
		r->rtt_us = 0;
	/* A reset: what is still queued goes nowhere. */
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}
