/* launch/input.c: hvdrun's standard input to the worker that reads it
 * (--stdin, rank 0 by default, as mpirun's), the others reading
 * /dev/null. A file or a pipe a local worker takes as it is, so that it
 * reads at its own pace and sees the end where hvdrun's input ends; a
 * worker on another host gets what its spawner reads of it (ssh/input.c,
 * slurm/input.c). A terminal neither does: the worker runs in a process
 * group of its own, which reading the terminal would stop (SIGTTIN), and
 * a terminal's Ctrl-C is hvdrun's to pass on. hvdrun reads the terminal, a line at a
 * time as it comes, while it is in the foreground, and writes it into a
 * pipe the worker reads: a worker that reads nothing holds one buffer,
 * and hvdrun reads no more meanwhile. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "launch/sup.h"
#include "util/util.h"

static void input_end(struct sup_input *in)
{
	if (in->to >= 0)
		close(in->to);
	in->to = in->from = -1;
	in->len = in->off = 0;
}

int hl_sup_input_open(struct sup *s, char **cause)
{
	struct sup_input *in = &s->in;
	int r = s->l->stdin_rank, p[2];
	struct hl_worker *w;

	in->rank = in->from = in->to = -1;
	in->tty = false;
	/* Descriptor 0 is open: hvdrun's main opens /dev/null where it
	 * was started without one. */
	if (r < 0 || r >= s->n)
		return HL_OK; /* none */
	w = &s->w[r];
	in->rank = r;
	if (!isatty(0)) {
		w->in_fd = 0;
		return HL_OK;
	}
	if (pipe2(p, O_CLOEXEC) != 0)
		return hl_fail(cause, HL_ESYS, "pipe: %s", strerror(errno));
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	w->in_fd = p[0];
	in->to = p[1];
	in->from = 0;
	in->tty = true;
	/* A read in the background then fails (EIO), not stops hvdrun. */
	sigaction(SIGTTIN, &(struct sigaction){.sa_handler = SIG_IGN},
		  &in->old_ttin);
	return HL_OK;
}

/* Whether hvdrun may read the terminal now: it is in the terminal's
 * foreground, or the terminal is not its own. */
static bool foreground(int fd)
{
	pid_t pg = tcgetpgrp(fd);

	return pg < 0 || pg == getpgrp();
}

int hl_sup_input_fds(struct sup *s, struct pollfd *pf, int *timeout)
{
	struct sup_input *in = &s->in;

	if (in->to < 0)
		return 0;
	if (s->w[in->rank].exited) { /* nobody reads the pipe any more */
		input_end(in);
		return 0;
	}
	if (in->off < in->len) {
		*pf = (struct pollfd){.fd = in->to, .events = POLLOUT};
		return 1;
	}
	if (in->from >= 0 && foreground(in->from)) {
		*pf = (struct pollfd){.fd = in->from, .events = POLLIN};
		return 1;
	}
	if (in->from >= 0 && (*timeout < 0 || *timeout > 500))
		*timeout = 500; /* in the background: look again */
	return 0;
}

void hl_sup_input_polled(struct sup *s, const struct pollfd *pf)
{
	struct sup_input *in = &s->in;
	ssize_t n;

	if (pf->revents == 0 || in->to < 0)
		return;
	if (in->off < in->len) {
		n = write(in->to, in->buf + in->off, in->len - in->off);
		if (n > 0)
			in->off += (size_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			input_end(in); /* the worker closed it (EPIPE) */
		if (in->off == in->len)
			in->len = in->off = 0;
		return;
	}
	n = read(in->from, in->buf, sizeof(in->buf));
	if (n > 0) {
		in->len = (size_t)n;
		in->off = 0;
	} else if (n == 0 || (errno != EAGAIN && errno != EINTR &&
			      (errno != EIO || foreground(in->from)))) {
		input_end(in); /* its end (Ctrl-D): the worker sees it */
	}
	/* EIO in the background: hvdrun went there meanwhile; it waits. */
}

void hl_sup_input_close(struct sup *s)
{
	struct sup_input *in = &s->in;
	int i;

	if (in->tty)
		sigaction(SIGTTIN, &in->old_ttin, NULL);
	in->tty = false;
	input_end(in);
	for (i = 0; i < s->n; i++) {
		if (s->w[i].in_fd > 0) /* a pipe never given to a worker */
			close(s->w[i].in_fd);
		s->w[i].in_fd = -1;
	}
}
