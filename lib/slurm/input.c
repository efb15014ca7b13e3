/* slurm/input.c: what hvdrun writes to a step's srun, which srun gives
 * every node's agent (records.h): each record whole, from any thread; and
 * among them hvdrun's standard input to a rank that srun started
 * (--stdin), as 'I' records addressed to it. The rank's agent fills the
 * rank's pipe and answers what it took in 'c' lines, which the step's
 * reader passes here. A thread of the step reads hvdrun's descriptor, no
 * further than HL_INPUT_WINDOW ahead of those answers: an agent whose
 * rank reads nothing holds a bounded buffer, and srun's stdin, whose pipe
 * holds far more than the window, never blocks the supervisor's
 * signals. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/records.h"
#include "slurm/srun.h"

int hl_srun_send_buf(struct step *st, struct hl_buf *b)
{
	int rc;

	pthread_mutex_lock(&st->send);
	rc = st->in_fd >= 0 && hl_write_all(st->in_fd, b->p, b->len) == 0
		     ? HL_OK
		     : HL_ESYS;
	pthread_mutex_unlock(&st->send);
	b->len = 0;
	return rc;
}

void hl_srun_input_take(struct step *st, struct hl_worker *w)
{
	if (w->in_fd < 0 || st->in_rank >= 0)
		return;
	st->in_rank = w->rank;
	st->in_src = w->in_fd;
	st->in_credit = HL_INPUT_WINDOW;
	w->in_fd = -1;
}

void hl_srun_input_answer(struct step *st, char kind, size_t taken)
{
	if (kind == 'c')
		st->in_credit += taken;
	else
		st->in_quit = true;
	pthread_cond_broadcast(&st->s->cond);
}

/* How much may be read now (0: stop), waiting for room. */
static size_t room(struct step *st)
{
	struct srun *s = st->s;
	size_t n;

	pthread_mutex_lock(&s->lock);
	while (!st->in_quit && st->in_credit == 0)
		pthread_cond_wait(&s->cond, &s->lock);
	n = st->in_quit ? 0 : st->in_credit;
	pthread_mutex_unlock(&s->lock);
	return n < HL_INPUT_CHUNK ? n : HL_INPUT_CHUNK;
}

static bool quitting(struct step *st)
{
	bool q;

	pthread_mutex_lock(&st->s->lock);
	q = st->in_quit;
	pthread_mutex_unlock(&st->s->lock);
	return q;
}

static void *input_main(void *arg)
{
	struct step *st = arg;
	char buf[HL_INPUT_CHUNK];
	struct hl_buf b;
	size_t want;

	hl_buf_init(&b);
	while ((want = room(st)) > 0) {
		struct pollfd pf = {.fd = st->in_src, .events = POLLIN};
		bool end;
		ssize_t n;

		/* Look again now and then: the step may end meanwhile. */
		if (poll(&pf, 1, 100) <= 0) {
			if (quitting(st))
				break;
			continue;
		}
		n = read(st->in_src, buf, want);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		end = n <= 0; /* its end, or it cannot be read */
		if (n > 0) {
			pthread_mutex_lock(&st->s->lock);
			st->in_credit -= (size_t)n;
			pthread_mutex_unlock(&st->s->lock);
		}
		if (hl_node_input_put(&b, (uint32_t)st->in_rank, buf,
				      end ? 0 : (size_t)n) != HL_OK)
			break;
		if (hl_srun_send_buf(st, &b) != HL_OK || end)
			break;
	}
	hl_buf_close(&b);
	return NULL;
}

void hl_srun_input_check(struct step *st)
{
	const struct srun *s = st->s;
	size_t host;

	if (st->in_rank < 0)
		return;
	host = s->l->plan->ranks[st->in_rank].host;
	if (st->proto[host] >= HL_AGENT_PROTO)
		return;
	hl_note_no_input(s->notify_fd, st->in_rank, s->l->hosts->v[host].name);
	if (st->in_src > 0)
		close(st->in_src);
	st->in_src = st->in_rank = -1;
}

int hl_srun_input_start(struct step *st, char **cause)
{
	if (st->in_rank < 0)
		return HL_OK;
	if (hl_thread_create(&st->in_thread, input_main, st) != HL_OK)
		return hl_fail(cause, HL_ESYS, "cannot start a thread");
	st->in_thread_started = true;
	return HL_OK;
}

void hl_srun_input_stop(struct step *st)
{
	pthread_mutex_lock(&st->s->lock);
	st->in_quit = true;
	pthread_cond_broadcast(&st->s->cond);
	pthread_mutex_unlock(&st->s->lock);
	if (st->in_thread_started)
		pthread_join(st->in_thread, NULL);
	st->in_thread_started = false;
	if (st->in_src > 0) /* never hvdrun's descriptor 0 */
		close(st->in_src);
	st->in_src = -1;
}
