/* ssh/input.c: hvdrun's standard input to a rank on another host
 * (--stdin), as its agent's 'I' records (records.h). The host's thread
 * reads the descriptor the supervisor gave the rank (hvdrun's standard
 * input, or the pipe it fills from a terminal: launch/input.c) only
 * while the agent may take more: HL_INPUT_WINDOW ahead of the bytes the
 * worker's pipe took ('c'), so that the agent's buffer stays bounded and
 * a signal record never waits behind input. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ssh/host.h"

void hl_ssh_input_init(struct rank_ch *r, int fd)
{
	r->relay = fd >= 0;
	r->in_fd = fd;
	r->in_credit = HL_INPUT_WINDOW;
	r->in_polled = r->in_ready = r->in_quit = false;
	hl_buf_init(&r->in_out);
}

int hl_ssh_input_records(const struct rank_ch *r, struct hl_buf *b)
{
	return r->relay ? hl_rec_put(b, 'W', NULL, 0) : HL_OK;
}

/* The rank's agent sent its output as it is, not in records: an older
 * hvdrun there, which ignored 'W'. Its output is passed on as it came,
 * and the rank reads no input; its stderr says so, once. */
static void older_agent(const struct ssh_host *h, struct rank_ch *r)
{
	hl_note_no_input(h->g->notify_fd, r->w->rank, h->host.name);
	r->relay = false;
	r->in_quit = true;
	hl_note_output(h->g->notify_fd, r->w->rank, 0, r->in_out.p,
		       r->in_out.len);
	hl_buf_close(&r->in_out);
}

void hl_ssh_output(const struct ssh_host *h, struct rank_ch *r,
		   const char *data, size_t n)
{
	const char *rec;
	size_t len, used;
	char type;
	uint32_t taken;
	int rc;

	if (!r->relay) {
		hl_note_output(h->g->notify_fd, r->w->rank, 0, data, n);
		return;
	}
	if (hl_buf_append(&r->in_out, data, n) != HL_OK)
		return;
	while ((rc = hl_rec_next(&r->in_out, &used, &type, &rec, &len)) == 1) {
		if (type == 'o')
			hl_note_output(h->g->notify_fd, r->w->rank, 0, rec,
				       len);
		else if (type == 'c' &&
			 hl_rec_u32_of(rec, len, &taken) == HL_OK)
			r->in_credit += taken;
		else if (type == 'n')
			r->in_quit = true;
		hl_buf_consume(&r->in_out, used);
	}
	/* Text is never a record's head: its length would be far over
	 * HL_REC_MAX. */
	if (rc < 0)
		older_agent(h, r);
}

static int on_input(socket_t fd, int revents, void *userdata)
{
	struct rank_ch *r = userdata;

	(void)fd;
	(void)revents;
	r->in_ready = true;
	return 0;
}

void hl_ssh_input_end(struct rank_ch *r, ssh_event ev)
{
	if (r->in_polled && ev != NULL)
		ssh_event_remove_fd(ev, r->in_fd);
	r->in_polled = r->in_ready = false;
	if (r->in_fd > 0)
		close(r->in_fd);
	r->in_fd = -1;
}

void hl_ssh_input_poll(struct ssh_host *h, ssh_event ev)
{
	size_t i;

	for (i = 0; i < h->nranks; i++) {
		struct rank_ch *r = &h->ranks[i];
		bool want = r->in_credit > 0;

		if (r->in_fd < 0)
			continue;
		if (r->done || r->in_quit || atomic_load(&r->superseded)) {
			hl_ssh_input_end(r, ev);
			continue;
		}
		if (want && !r->in_polled)
			r->in_polled = ssh_event_add_fd(ev, r->in_fd, POLLIN,
							on_input, r) == SSH_OK;
		else if (!want && r->in_polled &&
			 ssh_event_remove_fd(ev, r->in_fd) == SSH_OK)
			r->in_polled = false;
	}
}

/* One read of r's input into an 'I' record, or its end as 'F'. */
static void send_one(struct rank_ch *r, ssh_event ev)
{
	char buf[HL_INPUT_CHUNK];
	size_t want =
		r->in_credit < HL_INPUT_CHUNK ? r->in_credit : HL_INPUT_CHUNK;
	struct hl_buf b;
	ssize_t n;
	bool end = false;

	n = read(r->in_fd, buf, want);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	hl_buf_init(&b);
	if (n > 0) {
		r->in_credit -= (size_t)n;
		end = hl_rec_put(&b, 'I', buf, (size_t)n) != HL_OK;
	} else { /* its end, or it cannot be read: the worker sees an end */
		end = true;
		(void)hl_rec_put(&b, 'F', NULL, 0);
	}
	if (b.len > 0 &&
	    ssh_channel_write(r->ch, b.p, (uint32_t)b.len) != (int)b.len)
		end = true;
	hl_buf_close(&b);
	if (end)
		hl_ssh_input_end(r, ev);
}

void hl_ssh_input_send(struct ssh_host *h, ssh_event ev)
{
	size_t i;

	for (i = 0; i < h->nranks; i++) {
		struct rank_ch *r = &h->ranks[i];

		/* Found ready, it may be, before the agent's window closed:
		 * a read of nothing would be taken for the input's end. */
		if (r->in_fd >= 0 && r->in_ready && r->in_credit > 0)
			send_one(r, ev);
		r->in_ready = false;
	}
}
