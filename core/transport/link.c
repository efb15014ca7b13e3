/* link.c: see link.h. */
#include "transport/link.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "hvd.h"

/* The quiet pace: a probe after QUIET_IDLE_S without a word, then every
 * QUIET_INTVL_S; QUIET_COUNT unanswered, and the kernel ends the
 * connection (ETIMEDOUT): a quiet peer's host gone is seen within 30 s,
 * the transport's default timeout. */
#define QUIET_IDLE_S 10
#define QUIET_INTVL_S 5
#define QUIET_COUNT 4
#define WATCH_S 1 /* the pace while a transfer waits */

static void pace(int fd, int idle, int intvl)
{
	/* The interval first: a new idle time starts the timer anew,
	 * counted from the last word received. */
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
}

void hvd__link_tune(int fd)
{
	int one = 1, count = QUIET_COUNT;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
	pace(fd, QUIET_IDLE_S, QUIET_INTVL_S);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

void hvd__link_watch(int fd, bool on)
{
	if (fd >= 0)
		pace(fd, on ? WATCH_S : QUIET_IDLE_S,
		     on ? WATCH_S : QUIET_INTVL_S);
}

bool hvd__link_lost(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
		return false;
	return ti.tcpi_last_ack_recv >= HVD__LINK_LOST_MS &&
	       (ti.tcpi_probes >= 2 || ti.tcpi_retransmits >= 1);
}

int hvd__link_failed(int fd, int err)
{
	socklen_t len = sizeof(err);

	if (err == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		err = 0;
	return err == ETIMEDOUT || err == EHOSTUNREACH ? HVD_ETIMEDOUT
						       : HVD_ECONN;
}
