/* nchost.c: see nchost.h. */
#include "check/nchost.h"

#include <stdio.h>
#include <stdlib.h>

#include "agent/records.h"

void hl_nch_phase(struct nc_thread *t, int phase, char *error)
{
	pthread_mutex_lock(&t->g->lock);
	t->phase = phase;
	if (error != NULL && t->h->error == NULL)
		t->h->error = error;
	else
		free(error);
	pthread_cond_broadcast(&t->g->cond);
	pthread_mutex_unlock(&t->g->lock);
}

/* Wait for the group's stage to reach at least `stage`. */
int hl_nch_wait_stage(struct nc_thread *t, int stage)
{
	int st;

	pthread_mutex_lock(&t->g->lock);
	while (t->g->stage < stage)
		pthread_cond_wait(&t->g->cond, &t->g->lock);
	st = t->g->stage;
	pthread_mutex_unlock(&t->g->lock);
	return st;
}

/* Read more of the probe's output. 1: got some; 0: deadline; HL_EPROTO:
 * the end of the output (or no memory for it). */
static int fill(struct nc_thread *t, long long deadline)
{
	char chunk[8192];
	long long left = deadline - hl_now_ms();
	int n;

	if (left <= 0)
		return 0;
	n = hl_rchan_read(&t->c, chunk, sizeof(chunk),
			  left < 200 ? (int)left : 200);
	if (n < 0)
		return HL_EPROTO;
	if (n > 0 && hl_buf_append(&t->in, chunk, (size_t)n) != HL_OK)
		return HL_EPROTO;
	return n > 0 ? 1 : 0;
}

/* The next record (1), or 0 at the deadline, HL_EPROTO at the end of the
 * output or a malformed record. */
int hl_nch_next(struct nc_thread *t, long long deadline, size_t *used,
		char *type, const char **data, size_t *len)
{
	for (;;) {
		int r = hl_rec_next(&t->in, used, type, data, len);

		if (r != 0)
			return r;
		do {
			r = fill(t, deadline);
			if (r < 0)
				return HL_EPROTO;
		} while (r == 0 && hl_now_ms() < deadline);
		if (r == 0)
			return 0;
	}
}

/* Why the probe gave up: its first line on stderr (SSH), or its status. */
char *hl_nch_failure(struct nc_thread *t, int r)
{
	const char *name = t->h->host->name, *err = hl_rchan_error(&t->c);

	if (r == 0)
		return hl_asprintf(
			"host '%s': the probe did not answer in time", name);
	if (err != NULL)
		return hl_asprintf("host '%s': %s", name, err);
	return hl_asprintf("host '%s': the probe ended without answering",
			   name);
}

/* Send one record to the probe and read until a record of type `until`,
 * handing each other record of type `each` to take (under the group's
 * lock). False: the probe went away or did not answer by the deadline
 * (the host has failed). */
bool hl_nch_exchange(struct nc_thread *t, const struct hl_buf *req,
		     long long deadline, char each, char until,
		     void (*take)(struct nc_thread *, const char *, size_t))
{
	const char *data;
	size_t len, used;
	char type;
	int r;

	if (hl_rchan_write(&t->c, req->p, req->len) != HL_OK) {
		hl_nch_phase(t, PH_FAILED,
			     hl_asprintf("host '%s': the probe went away",
					 t->h->host->name));
		return false;
	}
	while ((r = hl_nch_next(t, deadline, &used, &type, &data, &len)) == 1) {
		if (type == each) {
			pthread_mutex_lock(&t->g->lock);
			take(t, data, len);
			pthread_mutex_unlock(&t->g->lock);
		}
		hl_buf_consume(&t->in, used);
		if (type == until)
			return true;
	}
	hl_nch_phase(
		t, PH_FAILED,
		r == 0 ? hl_asprintf("host '%s': the probe stopped answering "
				     "while measuring the links",
				     t->h->host->name)
		       : hl_nch_failure(t, r));
	return false;
}

void hl_nch_stage(struct nc_group *g, int stage)
{
	pthread_mutex_lock(&g->lock);
	g->stage = stage;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}
