/* relay.c: see relay.h. The agent writes its records to its stdout as
 * the worker's own output went there before: in whole writes, blocking
 * while sshd's channel is full. */
#include "agent/relay.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "util/util.h"

#define RELAY_CHUNK 32768

void hl_relay_init(struct hl_relay *r, int rank, hl_relay_answer answer)
{
	r->in[0] = r->in[1] = r->out[0] = r->out[1] = -1;
	hl_buf_init(&r->pending);
	r->end = false;
	r->rank = rank;
	r->answer = answer;
}

int hl_relay_open(struct hl_relay *r, bool out)
{
	if (pipe2(r->in, O_CLOEXEC) != 0 ||
	    (out && pipe2(r->out, O_CLOEXEC) != 0))
		return HL_ESYS;
	fcntl(r->in[1], F_SETFL, O_NONBLOCK);
	if (out)
		fcntl(r->out[0], F_SETFL, O_NONBLOCK);
	return HL_OK;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void hl_relay_started(struct hl_relay *r)
{
	close_fd(&r->in[0]);
	close_fd(&r->out[1]);
}

/* An answer to hvdrun: 'c' with the bytes the pipe took, or 'n'. */
static void answer(const struct hl_relay *r, char type, uint32_t taken)
{
	struct hl_buf b;
	int rc;

	if (r->answer != NULL) {
		r->answer(r->rank, type, taken);
		return;
	}
	hl_buf_init(&b);
	rc = type == 'c' ? hl_rec_put_u32(&b, type, taken)
			 : hl_rec_put(&b, type, NULL, 0);
	if (rc == HL_OK)
		(void)hl_write_all(1, b.p, b.len);
	hl_buf_close(&b);
}

/* Put what is pending into the worker's pipe, as much as it takes. */
static void push(struct hl_relay *r)
{
	uint32_t taken = 0;

	while (r->in[1] >= 0 && r->pending.len > 0) {
		ssize_t n = write(r->in[1], r->pending.p, r->pending.len);

		if (n > 0) {
			hl_buf_consume(&r->pending, (size_t)n);
			taken += (uint32_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && errno == EAGAIN) {
			break;
		} else { /* the worker closed its end (EPIPE) */
			close_fd(&r->in[1]);
			hl_buf_close(&r->pending);
			answer(r, 'n', 0);
		}
	}
	if (taken > 0)
		answer(r, 'c', taken);
	if (r->end && r->pending.len == 0)
		close_fd(&r->in[1]); /* the worker reads the end */
}

/* One read of the worker's stdout, sent as an 'o' record: false once
 * nothing more is there now. */
static bool pass_output(struct hl_relay *r)
{
	static char buf[HL_REC_HEAD + RELAY_CHUNK];
	ssize_t n;

	if (r->out[0] < 0)
		return false;
	n = read(r->out[0], buf + HL_REC_HEAD, RELAY_CHUNK);
	if (n > 0) {
		hl_rec_head(buf, 'o', (uint32_t)n);
		(void)hl_write_all(1, buf, HL_REC_HEAD + (size_t)n);
		return true;
	}
	if (n == 0 || (errno != EAGAIN && errno != EINTR))
		close_fd(&r->out[0]); /* its end */
	return n < 0 && errno == EINTR;
}

int hl_relay_fds(const struct hl_relay *r, struct pollfd *pf)
{
	int n = 0;

	if (r->out[0] >= 0)
		pf[n++] = (struct pollfd){.fd = r->out[0], .events = POLLIN};
	if (r->in[1] >= 0 && r->pending.len > 0)
		pf[n++] = (struct pollfd){.fd = r->in[1], .events = POLLOUT};
	return n;
}

void hl_relay_polled(struct hl_relay *r, const struct pollfd *pf, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (pf[i].revents == 0)
			continue;
		if (pf[i].fd == r->out[0])
			(void)pass_output(r);
		else if (pf[i].fd == r->in[1])
			push(r);
	}
}

void hl_relay_input(struct hl_relay *r, char type, const char *data, size_t len)
{
	if (type == 'F')
		r->end = true;
	else if (r->in[1] >= 0 && hl_buf_append(&r->pending, data, len) != 0)
		hl_buf_close(&r->pending); /* out of memory: it is lost */
	push(r);
}

void hl_relay_flush(struct hl_relay *r)
{
	while (pass_output(r))
		;
}

void hl_relay_close(struct hl_relay *r)
{
	close_fd(&r->in[0]);
	close_fd(&r->in[1]);
	close_fd(&r->out[0]);
	close_fd(&r->out[1]);
	hl_buf_close(&r->pending);
}
