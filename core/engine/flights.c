/* engine/flights.c: the GPU allreduces' overlap with the computation
 * that feeds them (gpu/gpu.h runs them):
 *
 * - held: a GPU allreduce waits here, unannounced, until the work queued
 *   before its submission has run on the GPU (hvd__gpu_ready). Autograd
 *   submits a gradient when its kernels are queued, not when they have
 *   run: announced at once, a whole backward pass would fuse into one
 *   batch that waits on the GPU for its last gradient. Held, a batch
 *   holds what the GPU has computed, and reduces it while the rest of
 *   backward runs. While a batch is in flight, the computed ones wait
 *   for it to end, unless they are all there is or fill a batch: each
 *   batch then holds what was computed during the last, so batches are
 *   as many as the collectives' time allows, not one a cycle (on one
 *   GPU that ranks share, a collective takes milliseconds whatever its
 *   size). (A group's members are announced at once: they run together
 *   whatever their readiness.)
 * - flights: a launched batch is not waited for. Its requests are told
 *   it was launched (hvd_wait_stream can then make the caller's stream
 *   wait for it), and complete when its last copy has run, polled in
 *   launch order while the next cycles run. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"
#include "util/wait.h"

struct hvd__flight {
	struct hvd__gpu_flight *f;
	struct hvd__req **reqs;
	size_t n;
	struct hvd__flight *next;
};

bool hvd__gpu_holds(const struct hvd__req *r)
{
	return r->m.gpu && r->ready != NULL &&
	       r->m.type == HVD__REQ_ALLREDUCE && r->m.group_n == 0;
}

bool hvd__gpu_busy(const struct hvd__engine *e)
{
	return e->held != NULL || e->flights != NULL;
}

/* The first n held requests, to pending_local. */
static void release(struct hvd__engine *e, size_t n)
{
	struct hvd__req **tail = &e->pending_local, *r;
	long long now = hvd__now_us();

	while (*tail != NULL)
		tail = &(*tail)->next;
	while (n-- > 0 && (r = e->held) != NULL) {
		e->held = r->next;
		r->next = NULL;
		*tail = r;
		tail = &r->next;
		/* Horovod's name for the wait on the tensor's own data. */
		if (e->tl != NULL)
			hvd__timeline_span(e->tl, r->name, "WAIT_FOR_DATA",
					   r->enqueued_us,
					   r->computed_us - r->enqueued_us);
		r->enqueued_us = now; /* negotiation (and stalls) from here */
	}
}

/* The pause that ends a burst of requests: longer than a submission of a
 * GPU tensor takes (three CUDA calls), short against a batch's NCCL call. */
#define BURST_US 100

bool hvd__gpu_burst(struct hvd__engine *e, const struct hvd__req *in,
		    long long now)
{
	size_t len;

	if (in->next != NULL || e->held != NULL || e->pending_local != NULL ||
	    e->flights != NULL) {
		/* A burst soon after a GPU allreduce that came alone: that one
		 * was the burst's head (a step's first gradient, taken before
		 * the rest of the step came). */
		if (e->lone[0] != '\0' &&
		    (double)(now - e->lone_us) <= e->k.cycle_ms * 1000)
			memcpy(e->head, e->lone, sizeof(e->head));
		e->lone[0] = '\0';
		e->head_alone = false;
		return true;
	}
	if (!hvd__gpu_holds(in) || in->name == NULL)
		return false;
	/* The head again: the step's rest is on its way. */
	if (e->head[0] != '\0' && strcmp(in->name, e->head) == 0) {
		e->lone[0] = '\0';
		e->head_alone = true;
		return true;
	}
	len = strlen(in->name);
	e->lone[0] = '\0';
	if (len < sizeof(e->lone)) {
		memcpy(e->lone, in->name, len + 1);
		e->lone_us = now;
	}
	return false;
}

bool hvd__gpu_gathers(const struct hvd__engine *e, size_t bytes, bool all,
		      long long now)
{
	/* While the rank submits in a burst (a step's tensors at once, the
	 * gradients of a backward pass), what the GPU computes gathers into
	 * one batch, for up to the cycle time from the first one computed
	 * or up to a full batch; it goes sooner once the GPU has computed
	 * all that came and the burst has paused for BURST_US. */
	return e->burst && bytes < (size_t)e->k.fusion_threshold &&
	       (double)(now - e->held->computed_us) < e->k.cycle_ms * 1000 &&
	       !(all && now - e->came_us >= BURST_US);
}

bool hvd__gpu_release_held(struct hvd__engine *e)
{
	struct hvd__req *r;
	size_t n = 0, bytes = 0;
	bool all = true;

	/* The computed ones, in submission order (the order of the stream
	 * that computes them), each event asked until it has run. */
	for (r = e->held; r != NULL; r = r->next) {
		if (r->computed_us == 0 && !hvd__gpu_ready(r->ready)) {
			all = false;
			break;
		}
		if (r->computed_us == 0)
			r->computed_us = hvd__now_us();
		n++;
		bytes += hvd__meta_bytes(&r->m);
	}
	/* While a batch runs, the next one gathers what the GPU computes
	 * meanwhile: a batch a collective's time, whatever the link's
	 * latency (one GPU that ranks share: milliseconds); the last of a
	 * backward pass, or a full batch, goes at once, behind it. */
	if (n == 0 || (e->flights != NULL && !all &&
		       bytes < (size_t)e->k.fusion_threshold))
		return false;
	if (hvd__gpu_gathers(e, bytes, all, hvd__now_us()))
		return false;
	/* The head came alone and nothing followed it: it is no head. */
	if (e->head_alone)
		e->head[0] = '\0';
	e->head_alone = false;
	release(e, n);
	return true;
}

int hvd__gpu_launched(struct hvd__engine *e, struct hvd__req **batch, size_t n)
{
	struct hvd__gpu_flight *f = e->launched;
	struct hvd__flight *fl = NULL, **pp;
	size_t i;

	e->launched = NULL;
	/* A process set's batch, which the owner's turns do not poll: the
	 * stream is waited for, and the batch completes at once (as it does
	 * without the memory to follow it). */
	if (e->set == 0 && (fl = calloc(1, sizeof(*fl))) != NULL)
		fl->reqs = calloc(n, sizeof(struct hvd__req *));
	if (fl == NULL || fl->reqs == NULL) {
		free(fl);
		hvd__gpu_flight_free(e->gpu, f);
		return hvd__gpu_wait_stream(e->gpu, e->gpu_why,
					    sizeof(e->gpu_why));
	}
	fl->f = f;
	fl->n = n;
	for (i = 0; i < n; i++) {
		fl->reqs[i] = batch[i];
		hvd__req_launched(batch[i], hvd__gpu_flight_event(f));
	}
	for (pp = &e->flights; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = fl;
	return HVD__LAUNCHED;
}

/* The GPU time of each part, laid out back from now, when it ended. */
static void flight_timeline(struct hvd__engine *e, const struct hvd__flight *fl,
			    const struct hvd__gpu_times *t)
{
	long long at =
		hvd__now_us() - t->copy_in_us - t->reduce_us - t->copy_out_us;
	bool fused = t->fused_bytes > 0;
	size_t i;

	if (!t->timed) /* launched before the timeline started */
		return;

	for (i = 0; e->tl != NULL && i < fl->n; i++) {
		const char *name = fl->reqs[i]->name;

		if (fused)
			hvd__timeline_span(e->tl, name,
					   "MEMCPY_IN_FUSION_BUFFER", at,
					   t->copy_in_us);
		hvd__timeline_span(e->tl, name, "NCCL_ALLREDUCE",
				   at + t->copy_in_us, t->reduce_us);
		if (fused)
			hvd__timeline_span(e->tl, name,
					   "MEMCPY_OUT_FUSION_BUFFER",
					   at + t->copy_in_us + t->reduce_us,
					   t->copy_out_us);
	}
}

static void flight_end(struct hvd__engine *e, struct hvd__flight *fl,
		       int status)
{
	size_t i;

	for (i = 0; i < fl->n; i++) {
		hvd__timeline_op(e, fl->reqs[i]);
		hvd__req_complete(fl->reqs[i], status,
				  status != HVD_OK ? e->gpu_why : NULL);
	}
	if (e->gpu != NULL)
		hvd__gpu_flight_free(e->gpu, fl->f);
	free(fl->reqs);
	free(fl);
}

int hvd__gpu_progress(struct hvd__engine *e, bool drain)
{
	struct hvd__flight *fl;
	struct hvd__gpu_times t;
	int rc = HVD_OK;

	while ((fl = e->flights) != NULL) {
		int s = hvd__gpu_flight_poll(e->gpu, fl->f, &t, e->gpu_why,
					     sizeof(e->gpu_why));

		if (s == 0 && drain) {
			struct timespec ts = {0, 50000};

			nanosleep(&ts, NULL);
			continue;
		}
		if (s == 0)
			break;
		e->flights = fl->next;
		if (s == 1) {
			flight_timeline(e, fl, &t);
			flight_end(e, fl, HVD_OK);
			continue;
		}
		hvd__error("%s", e->gpu_why);
		flight_end(e, fl, s);
		rc = s;
		hvd__gpu_flights_fail(e, s);
	}
	return rc;
}

void hvd__gpu_flights_fail(struct hvd__engine *e, int status)
{
	struct hvd__flight *fl;

	while ((fl = e->flights) != NULL) {
		e->flights = fl->next;
		flight_end(e, fl, status);
	}
}

/* The event the background thread waits on between cycles: the first
 * flight's end, else the first held request's data not computed yet. */
static void *watched(const struct hvd__engine *e)
{
	const struct hvd__req *r;

	if (e->flights != NULL)
		return hvd__gpu_flight_event(e->flights->f);
	for (r = e->held; r != NULL; r = r->next)
		if (r->computed_us == 0)
			return r->ready;
	return NULL;
}

void hvd__gpu_wait(struct hvd__engine *e, double ms)
{
	struct hvd__wait w;
	void *ev = watched(e);
	bool got;

	if (ev == NULL) {
		hvd__queue_wait(ms, true, ms <= e->k.cycle_ms, &e->wait_bell);
		return;
	}
	if (ms <= 0) /* a cycle is due now */
		return;
	/* A batch ends, or a tensor's data is computed, in microseconds to
	 * milliseconds: spin on its event while spinning pays (wait.h), as
	 * a wait for the stream would. */
	hvd__wait_begin(&w, HVD__WAIT_GPU);
	while (!(got = hvd__queue_work() || hvd__gpu_ready(ev)) &&
	       hvd__wait_spin(&w))
		;
	if (!got)
		hvd__queue_nap(ms);
	hvd__wait_end(&w);
}
