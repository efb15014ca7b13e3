/* launch/streams.c: the workers' output in the supervisor (sup.h): a
 * local worker's pipes read into its prefixed lines (output.h) and
 * closed, and the job ended when hvdrun's own output is lost. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch/sup.h"

void hl_sup_close_stream(struct hl_worker *w, int j)
{
	hl_out_flush(&w->out[j]);
	close(w->fd[j]);
	w->fd[j] = -1;
}

/* Read what is there; close the stream at end of file. */
void hl_sup_drain(struct hl_worker *w, int j)
{
	char buf[65536];
	int rounds;

	for (rounds = 0; rounds < 64 && w->fd[j] >= 0; rounds++) {
		ssize_t n = read(w->fd[j], buf, sizeof(buf));

		if (n > 0) {
			hl_out_feed(&w->out[j], buf, (size_t)n);
			continue;
		}
		if (n < 0 && (errno == EINTR))
			continue;
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			hl_sup_close_stream(w, j);
		break;
	}
}

bool hl_sup_any_stream_open(const struct sup *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->w[i].fd[0] >= 0 || s->w[i].fd[1] >= 0)
			return true;
	return false;
}

/* hvdrun's own stdout or stderr cannot be written (hvdrun | head, a
 * full disk): the job's output is being lost, so the job ends, as a
 * program writing to a closed pipe ends by SIGPIPE (exit 128+SIGPIPE). */
void hl_sup_output_lost(struct sup *s)
{
	int which, err;

	if (!hl_out_lost(&which, &err) || s->failed || s->signal != 0)
		return;
	{
		char text[160];
		struct hl_event ev = {HL_EV_OUTPUT_LOST, -1, NULL, text, 0};

		snprintf(text, sizeof(text),
			 "cannot write its standard %s (%s)",
			 which == 1 ? "output" : "error", strerror(err));
		hl_spawn_event(s->l, &ev);
	}
	s->signal = SIGPIPE;
	hl_sup_terminate(s, SIGTERM);
}

void hl_sup_workers_close(struct hl_worker *w, int n)
{
	int i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < 2; j++) {
			if (w[i].fd[j] >= 0)
				close(w[i].fd[j]);
			if (w[i].out[j].tee_fd >= 0)
				close(w[i].out[j].tee_fd);
			hl_out_close(&w[i].out[j]);
		}
	free(w);
}
