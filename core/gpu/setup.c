/* gpu/setup.c: the NCCL engine's start at the first GPU collective
 * (every rank picks its GPU, the ranks agree, rank 0's ncclUniqueId goes
 * round the control plane; the hierarchical communicators) and its end. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/internal.h"
#include "util/reduce.h"
#include "algo/ring.h"
#include "util/wait.h"

/* Every rank learns which ranks could use a GPU; a rank that could not
 * fails the set-up on every rank, named. */
static int agree(const struct hvd__comm *c, uint8_t mine, const char *own,
		 char *why, size_t len)
{
	uint8_t *ok = calloc((size_t)c->size, 1);
	size_t *one = calloc((size_t)c->size, sizeof(*one));
	int r, rc = HVD_ENOMEM;

	if (ok != NULL && one != NULL) {
		for (r = 0; r < c->size; r++)
			one[r] = 1;
		ok[c->rank] = mine;
		rc = hvd__ring_allgatherv(c, ok, one);
	}
	if (rc == HVD_OK) {
		size_t off = 0;

		for (r = 0; r < c->size && off + 16 < len; r++)
			if (!ok[r]) {
				if (off == 0)
					off += (size_t)snprintf(
						why, len,
						"GPU set-up failed on rank");
				off += (size_t)snprintf(why + off, len - off,
							" %d", r);
				rc = HVD_ENOTSUP;
			}
		if (rc != HVD_OK && !mine && off < len)
			snprintf(why + off, len - off, " (here: %s)", own);
	}
	free(ok);
	free(one);
	return rc;
}

/* The world split into hosts (g->local) and across them (g->cross), each
 * host's ranks numbered by local rank: a collective call. */
static int split(struct hvd__gpu *g, char *why, size_t len)
{
	ncclResult_t r;
	int rc;

	g->local_rank = hvd__g.local_rank;
	g->local_size = hvd__g.local_size;
	r = ncclCommSplit(g->world, hvd__g.cross_rank, hvd__g.local_rank,
			  &g->local, NULL);
	rc = hvd__gpu_settle_new(g, g->world, &g->local, r,
				 "ncclCommSplit (the ranks of a host)", why,
				 len);
	if (rc == HVD_OK) {
		r = ncclCommSplit(g->world, hvd__g.local_rank,
				  hvd__g.cross_rank, &g->cross, NULL);
		rc = hvd__gpu_settle_new(g, g->world, &g->cross, r,
					 "ncclCommSplit (across hosts)", why,
					 len);
	}
	if (rc == HVD_OK)
		hvd__debug("NCCL split by host: %d ranks a host, %d hosts",
			   g->local_size, hvd__g.cross_size);
	return rc;
}

/* HOROVOD_HIERARCHICAL_ALLREDUCE=1 (rank 0's, on every rank: knobs.c), or
 * the autotuner's wish to try it (rank 0's setting, with several hosts of
 * several ranks), and every host with the same number of ranks (the job's
 * fact, hvd_is_homogeneous): split the world into hosts and across hosts.
 * Every rank decides alike, without a message. */
static int start_hierarchical(struct hvd__gpu *g, enum hvd__gpu_hier hier,
			      char *why, size_t len)
{
	bool want = hier == HVD__HIER_ASKED ||
		    (hier == HVD__HIER_TUNER && hvd__g.local_size > 1 &&
		     hvd__g.cross_size > 1);

	/* A process set's communicator stays flat (the hosts' split is the
	 * job's); every rank of the set sees the same size. */
	if (g->ctrl->size != hvd__g.size || !want)
		return HVD_OK;
	if (!hvd__g.homogeneous) {
		if (g->ctrl->rank == 0 && hier == HVD__HIER_ASKED)
			hvd__warn(
				"HOROVOD_HIERARCHICAL_ALLREDUCE: the hosts run different numbers of ranks; the allreduce stays flat");
		return HVD_OK;
	}
	return split(g, why, len);
}

int hvd__gpu_host_comm(struct hvd__gpu *g, ncclComm_t *c, int *rank, int *size,
		       char *why, size_t len)
{
	int rc = HVD_OK;

	if (g->ctrl->size != hvd__g.size || !hvd__g.homogeneous) {
		snprintf(
			why, len,
			"the GPU's communicator splits by host only in the job's process set, with hosts that run the same number of ranks");
		return HVD_ENOTSUP;
	}
	if (hvd__g.cross_size > 1 && g->local == NULL)
		rc = split(g, why, len);
	*c = hvd__g.cross_size > 1 ? g->local : g->world;
	*rank = hvd__g.local_rank;
	*size = hvd__g.local_size;
	return rc;
}

bool hvd__gpu_split(const struct hvd__gpu *g)
{
	return g != NULL && g->local != NULL;
}

int hvd__gpu_unsplit(struct hvd__gpu *g, char *why, size_t len)
{
	int rc;

	if (g == NULL || g->local == NULL)
		return HVD_OK;
	/* Flights launched on them may still run. */
	rc = hvd__gpu_wait_stream(g, why, len);
	if (rc != HVD_OK)
		return rc;
	if (g->cross != NULL)
		ncclCommDestroy(g->cross);
	ncclCommDestroy(g->local);
	g->cross = NULL;
	g->local = NULL;
	hvd__debug("hierarchical allreduce: the communicators of hosts and "
		   "across them ended");
	return HVD_OK;
}

int hvd__gpu_start(struct hvd__gpu **out, const struct hvd__comm *ctrl,
		   size_t fusion_limit, enum hvd__gpu_hier hier,
		   bool batch_copies, char *why, size_t len)
{
	struct hvd__gpu *g = calloc(1, sizeof(*g));
	struct {
		int32_t ok;
		ncclUniqueId id;
	} uid;
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	char own[256] = "out of memory";
	cudaError_t e = cudaSuccess;
	ncclResult_t r;
	long streams;
	int rc;

	*out = NULL;
	/* Horovod's knob, set by a user's environment (hvdrun refuses it). */
	if (hvd__env_long(WENV_NUM_NCCL_STREAMS, &streams) == HVD_OK &&
	    streams > 1)
		hvd__warn(
			"HOROVOD_NUM_NCCL_STREAMS=%ld: libhvd runs NCCL on one stream per GPU",
			streams);
	if (g != NULL) {
		int v = 0;

		g->ctrl = ctrl;
		g->checked_us = hvd__now_us();
		g->fusion_limit = fusion_limit;
		g->batch_copies = batch_copies;
		/* NVIDIA/nccl#1950, fixed in 2.29.7 (version code 22907). */
		g->one_rank_bug =
			ncclGetVersion(&v) != ncclSuccess || v < 22907;
		g->dev = hvd__gpu_device(own, sizeof(own));
		if (g->dev < 0)
			e = cudaErrorNoDevice;
		else
			e = cudaSetDevice(g->dev);
		if (e == cudaSuccess)
			e = cudaStreamCreateWithFlags(&g->stream,
						      cudaStreamNonBlocking);
		if (e == cudaSuccess)
			e = cudaEventCreateWithFlags(&g->done,
						     cudaEventDisableTiming);
		if (e != cudaSuccess && g->dev >= 0)
			hvd__gpu_cuda_fail(e, "CUDA set-up", own, sizeof(own));
	}
	rc = agree(ctrl, g != NULL && e == cudaSuccess, own, why, len);
	if (rc != HVD_OK || g == NULL) /* every rank agreed: g is set */
		goto fail;
	/* Rank 0's unique id, over the control plane. */
	memset(&uid, 0, sizeof(uid));
	if (ctrl->rank == 0)
		uid.ok = ncclGetUniqueId(&uid.id) == ncclSuccess;
	rc = hvd__ring_broadcast(ctrl, &uid, sizeof(uid), 0);
	if (rc == HVD_OK && !uid.ok) {
		snprintf(why, len, "ncclGetUniqueId failed on rank 0");
		rc = HVD_ESYS;
	}
	if (rc != HVD_OK)
		goto fail;
	/* Non-blocking: no NCCL call can hang libhvd's thread (settle). */
	config.blocking = 0;
	r = ncclCommInitRankConfig(&g->world, ctrl->size, uid.id, ctrl->rank,
				   &config);
	rc = hvd__gpu_settle_new(g, NULL, &g->world, r, "ncclCommInitRank", why,
				 len);
	if (rc == HVD_OK)
		rc = start_hierarchical(g, hier, why, len);
	if (rc != HVD_OK)
		goto fail;
	hvd__debug("NCCL on GPU %d, %d ranks", g->dev, ctrl->size);
	*out = g;
	return HVD_OK;
fail:
	hvd__gpu_free(g, true);
	return rc;
}

void hvd__gpu_free(struct hvd__gpu *g, bool broken)
{
	struct hvd__gpu_flight *f;
	int i, old = -1;

	if (g == NULL)
		return;
	/* hvd_shutdown() runs this in the user's thread: its device is
	 * put back after. */
	if (cudaGetDevice(&old) != cudaSuccess)
		old = -1;
	if (g->dev >= 0)
		cudaSetDevice(g->dev);
	if (broken) {
		/* Work queued on the stream may still use the fusion buffer
		 * (a copy out of it). */
		hvd__gpu_drain_broken(g);
	} else {
		if (g->cross != NULL)
			ncclCommDestroy(g->cross);
		if (g->local != NULL)
			ncclCommDestroy(g->local);
		if (g->world != NULL)
			ncclCommDestroy(g->world);
	}
	cudaFree(g->fusion);
	cudaFreeHost(g->stage);
	cudaFree(g->dots);
	cudaFree(g->scratch);
	if (g->done != NULL)
		cudaEventDestroy(g->done);
	for (i = 0; i < 2; i++)
		while ((f = g->spare[i]) != NULL) {
			g->spare[i] = f->next;
			hvd__gpu_flight_destroy(f);
		}
	if (g->stream != NULL)
		cudaStreamDestroy(g->stream);
	free(g->dsts);
	free(g->srcs);
	free(g->sizes);
	free(g);
	if (old >= 0)
		cudaSetDevice(old);
}

HVD_EXPORT int hvd_nccl_built(void)
{
	return NCCL_VERSION_CODE; /* as Horovod's: 22809 for 2.28.9 */
}
