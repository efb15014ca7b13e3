/* gpu/fail.c: how the NCCL engine fails and waits: CUDA's and NCCL's
 * errors as messages, communicators aborted (never left hanging) when
 * NCCL reports an error or the control plane sees a peer die, the wait
 * for the engine's stream (util/wait.h), and its events' times and
 * ends. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/internal.h"
#include "proto/wire.h"
#include "util/reduce.h"
#include "algo/ring.h"
#include "util/wait.h"

int hvd__gpu_cuda_fail(cudaError_t e, const char *what, char *why, size_t len)
{
	snprintf(why, len, "%s: %s (%s)", what, cudaGetErrorName(e),
		 cudaGetErrorString(e));
	cudaGetLastError(); /* clear it, so later calls do not report it */
	return HVD_ESYS;
}

void hvd__gpu_abort_comms(struct hvd__gpu *g)
{
	if (g == NULL || g->aborted)
		return;
	g->aborted = true;
	if (g->cross != NULL)
		ncclCommAbort(g->cross);
	if (g->local != NULL)
		ncclCommAbort(g->local);
	if (g->world != NULL)
		ncclCommAbort(g->world);
	g->cross = g->local = g->world = NULL;
}

void hvd__gpu_drain_broken(struct hvd__gpu *g)
{
	hvd__gpu_abort_comms(g);
	if (g->stream != NULL)
		cudaStreamSynchronize(g->stream);
}

static int nccl_fail(struct hvd__gpu *g, ncclComm_t c, ncclResult_t r,
		     const char *what, char *why, size_t len)
{
	const char *last = ncclGetLastError(c);

	snprintf(why, len, "%s: %s%s%s", what, ncclGetErrorString(r),
		 last != NULL && *last ? ": " : "", last != NULL ? last : "");
	hvd__gpu_abort_comms(g);
	return r == ncclRemoteError || r == ncclSystemError ? HVD_ECONN
							    : HVD_ESYS;
}

static void pause_us(long us)
{
	struct timespec ts = {0, us * 1000};

	nanosleep(&ts, NULL);
}

/* A peer that died shows on the control plane. A job of one rank has
 * no peer, and no transport to ask. */
static int peers_alive(struct hvd__gpu *g, const char *what, char *why,
		       size_t len)
{
	const struct hvd__comm *c = g->ctrl;

	if (c->size <= 1 || c->t == NULL || c->ops->check == NULL ||
	    c->ops->check(c->t) == HVD_OK)
		return HVD_OK;
	snprintf(why, len, "%s: a peer closed its connection", what);
	hvd__gpu_abort_comms(g);
	return HVD_ECONN;
}

/* The communicators are non-blocking: a call may return ncclInProgress,
 * and then the communicator is polled until it is done, while the
 * control plane is watched for a peer that died. */
int hvd__gpu_settle(struct hvd__gpu *g, ncclComm_t c, ncclResult_t r,
		    const char *what, char *why, size_t len)
{
	long long checked = hvd__now_us();

	while (r == ncclInProgress) {
		if (hvd__now_us() - checked > 10000) {
			int rc = peers_alive(g, what, why, len);

			if (rc != HVD_OK)
				return rc;
			checked = hvd__now_us();
		}
		pause_us(50);
		if (ncclCommGetAsyncError(c, &r) != ncclSuccess)
			r = ncclInternalError;
	}
	return r == ncclSuccess ? HVD_OK : nccl_fail(g, c, r, what, why, len);
}

/* A communicator just made (init or split): poll it until it is ready.
 * A non-blocking split may hand its child over only when the parent's
 * part is done (NCCL 2.28 does): then the parent is polled first. */
int hvd__gpu_settle_new(struct hvd__gpu *g, ncclComm_t parent, ncclComm_t *cp,
			ncclResult_t r, const char *what, char *why, size_t len)
{
	ncclComm_t c = __atomic_load_n(cp, __ATOMIC_ACQUIRE);

	if (r != ncclSuccess && r != ncclInProgress)
		return nccl_fail(g, c, r, what, why, len);
	if (c == NULL && parent != NULL) {
		int rc = hvd__gpu_settle(g, parent, ncclInProgress, what, why,
					 len);

		if (rc != HVD_OK)
			return rc;
		c = __atomic_load_n(cp, __ATOMIC_ACQUIRE);
	}
	if (c == NULL) {
		snprintf(why, len, "%s gave no communicator", what);
		return HVD_ESYS;
	}
	return hvd__gpu_settle(g, c, ncclInProgress, what, why, len);
}

int hvd__gpu_poll_event(struct hvd__gpu *g, cudaEvent_t ev, long long *checked,
			char *why, size_t len)
{
	ncclComm_t comms[3] = {g->world, g->local, g->cross};
	cudaError_t e = cudaEventQuery(ev);
	long long now;
	int i;

	if (e == cudaSuccess)
		return 1;
	if (e != cudaErrorNotReady)
		return hvd__gpu_cuda_fail(e, "waiting for the GPU", why, len);
	for (i = 0; i < 3; i++) {
		ncclResult_t r = ncclSuccess;

		if (comms[i] != NULL &&
		    ncclCommGetAsyncError(comms[i], &r) == ncclSuccess &&
		    r != ncclSuccess && r != ncclInProgress)
			return nccl_fail(g, comms[i], r, "NCCL", why, len);
	}
	now = hvd__now_us();
	if (now - *checked > 10000) {
		int rc = peers_alive(g, "a NCCL collective", why, len);

		if (rc != HVD_OK)
			return rc;
		*checked = now;
	}
	return 0;
}

int hvd__gpu_wait_stream(struct hvd__gpu *g, char *why, size_t len)
{
	long long checked = hvd__now_us();
	cudaError_t e = cudaEventRecord(g->done, g->stream);
	struct hvd__wait w;
	int rc;

	if (e != cudaSuccess)
		return hvd__gpu_cuda_fail(e, "cudaEventRecord", why, len);
	hvd__wait_begin(&w, HVD__WAIT_GPU);
	while ((rc = hvd__gpu_poll_event(g, g->done, &checked, why, len)) == 0)
		if (!hvd__wait_spin(&w))
			pause_us(50);
	if (rc == 1)
		hvd__wait_end(&w);
	return rc == 1 ? HVD_OK : rc;
}

long long hvd__gpu_elapsed_us(cudaEvent_t a, cudaEvent_t b)
{
	float ms = 0;

	return cudaEventElapsedTime(&ms, a, b) == cudaSuccess
		       ? (long long)(ms * 1000.0f)
		       : 0;
}

void hvd__gpu_flight_destroy(struct hvd__gpu_flight *f)
{
	int i;

	for (i = 0; i < EV_N; i++)
		if (f->ev[i] != NULL)
			cudaEventDestroy(f->ev[i]);
	free(f);
}
