/* engine/fusion.c: the agreed responses, run in their order on every rank.
 * Consecutive allreduces of one dtype, op and memory (CPU or GPU) are
 * fused into one batch up to HOROVOD_FUSION_THRESHOLD bytes, and the
 * batch runs as one collective (ops/allreduce.c); every other response
 * runs alone (ops/). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/sets.h"
#include "util/reduce.h"

/* A timeline span of tensor name from t0 to now. */
static void span(const struct hvd__engine *e, const char *name,
		 const char *what, long long t0)
{
	if (e->tl != NULL)
		hvd__timeline_span(e->tl, name, what, t0, hvd__now_us() - t0);
}

/* Take the local request for a response out of the pending list. */
static struct hvd__req *take_local(struct hvd__engine *e, const char *name)
{
	struct hvd__req **pp, *r;

	for (pp = &e->pending_local; (r = *pp) != NULL; pp = &r->next)
		if (strcmp(r->name, name) == 0) {
			*pp = r->next;
			r->next = NULL;
			return r;
		}
	return NULL;
}

/* Whether an operation's failure stops the engine: every failure but a
 * GPU set-up that every rank agreed had failed (the CPU collectives go
 * on; a GPU collective that failed half-way leaves the peers waiting). */
static bool engine_error(int status)
{
	return status != HVD_OK && status != HVD_ENOTSUP;
}

/* Rank 0's timeline: the negotiation of response x, Horovod's
 * NEGOTIATE_ALLREDUCE, ...: from the first rank's request (the
 * coordinator's ticks lie in it) or this rank's own (r; NULL: none; a
 * joined rank's stand-in has none, and its negotiation is no time),
 * whichever came first, to the cycle that decided it. */
static void timeline_negotiated(struct hvd__engine *e, struct hvd__req *r,
				const struct hvd__resp *x)
{
	long long from = x->first_us; /* 0: not through the coordinator */
	char what[48];

	if (r != NULL) {
		r->decided_us = e->decided_us;
		if (r->enqueued_us > 0 && (from == 0 || r->enqueued_us < from))
			from = r->enqueued_us;
		else if (from == 0) /* a stand-in, through the cache */
			from = e->decided_us;
	}
	if (e->tl == NULL || from <= 0)
		return;
	snprintf(what, sizeof(what), "NEGOTIATE_%s", hvd__meta_activity(&x->m));
	hvd__timeline_span(e->tl, x->name, what, from, e->decided_us - from);
}

/* r runs now: in its operation's span, its wait behind those run
 * before it. */
static void queued(const struct hvd__engine *e, const struct hvd__req *r)
{
	if (e->tl != NULL)
		hvd__timeline_span(e->tl, r->name, "QUEUE", e->decided_us,
				   hvd__now_us() - e->decided_us);
}

static void complete(struct hvd__engine *e, struct hvd__req *r, int status)
{
	hvd__timeline_op(e, r);
	hvd__req_complete(r, status,
			  r->m.gpu && e->gpu_why[0] != '\0' ? e->gpu_why
							    : NULL);
}

/* Whether response x may join a batch that r started. */
static bool fuses_with(const struct hvd__resp *x, const struct hvd__req *r)
{
	return x->error == NULL && !x->done &&
	       x->m.type == HVD__REQ_ALLREDUCE && x->m.dtype == r->m.dtype &&
	       x->m.op == r->m.op && x->m.gpu == r->m.gpu &&
	       x->m.prescale == r->m.prescale &&
	       x->m.postscale == r->m.postscale;
}

/* A joined rank has no request of its own for x: it takes part with a
 * stand-in (zeros to reduce, nothing to gather, somewhere to receive).
 * A GPU stand-in's buffer is placed on the GPU when its batch runs
 * (gpu_stand_ins). */
static struct hvd__req *stand_in(const struct hvd__resp *x)
{
	size_t bytes = hvd__meta_bytes(&x->m);
	struct hvd__req *r = calloc(1, sizeof(*r));

	if (r == NULL || (r->name = strdup(x->name)) == NULL ||
	    (!x->m.gpu && (r->scratch = calloc(bytes + 1, 1)) == NULL)) {
		if (r != NULL)
			free(r->name);
		free(r);
		return NULL;
	}
	r->m = x->m;
	r->sendbuf = r->recvbuf = r->scratch;
	r->gather_out = &r->gathered;
	r->gather_count = &r->gathered_count;
	r->cache = -1;
	return r;
}

/* This rank's request for x, or a joined rank's stand-in. */
static struct hvd__req *take(struct hvd__engine *e, const struct hvd__resp *x)
{
	struct hvd__req *r = take_local(e, x->name);

	if (r == NULL && x->error == NULL && e->joined[e->comm.rank])
		r = stand_in(x);
	return r;
}

/* A GPU allreduce that cannot leave out the ranks that have joined:
 * Adasum across hosts (each host's average would count a joined rank's
 * zeros). NULL: it can. */
static const char *gpu_join_refuses(const struct hvd__engine *e,
				    const struct hvd__resp *x)
{
	if (!x->m.gpu || x->m.type != HVD__REQ_ALLREDUCE)
		return NULL;
	if (x->m.op == HVD_ADASUM &&
	    !(e->set == 0 && hvd__g.local_size == hvd__g.size))
		return "GPU Adasum across hosts cannot leave out the joined "
		       "ranks (each host's average would count their zeros); "
		       "run it before the first join or after the last, or "
		       "average instead";
	return NULL;
}

/* What cannot run while ranks have joined, the same on every rank (the
 * joined ranks are agreed): true, with why in msg, if x cannot. */
static bool join_refuses(const struct hvd__engine *e, const struct hvd__resp *x,
			 char *msg, size_t len)
{
	const char *what = hvd__req_names[x->m.type];
	bool data = x->m.type == HVD__REQ_ALLTOALL ||
		    x->m.type == HVD__REQ_REDUCESCATTER ||
		    x->m.type == HVD__REQ_PROCESS_SET;
	bool root = x->m.type == HVD__REQ_BROADCAST && x->m.root >= 0 &&
		    x->m.root < e->comm.size && e->joined[x->m.root];
	const char *gpu = e->njoined > 0 ? gpu_join_refuses(e, x) : NULL;
	int n;

	if (e->njoined == 0 || !(gpu != NULL || data || root))
		return false;
	n = snprintf(msg, len, "%s '%.200s' failed: ", what, x->name);
	if (gpu != NULL)
		snprintf(msg + n, len - (size_t)n,
			 "%d ranks have joined (hvd_join); %s", e->njoined,
			 gpu);
	else if (data)
		snprintf(msg + n, len - (size_t)n,
			 "%d ranks have joined (hvd_join): a %s needs every "
			 "rank's data; run it before the first join or after "
			 "the last",
			 e->njoined, what);
	else
		snprintf(msg + n, len - (size_t)n,
			 "its root, rank %d, has joined (hvd_join): broadcast "
			 "from a rank that has not",
			 x->m.root);
	return true;
}

#define ZEROS_ALIGN(b) (((b) + 255) & ~(size_t)255) /* NCCL's liking */

/* A joined rank's stand-ins in a GPU batch (those without a handle):
 * each its own place in the GPU engine's scratch buffer, zeroed on the
 * stream ahead of the batch. The engine starts here if it has not, as
 * it does on the other ranks when they run the batch. */
static int gpu_stand_ins(struct hvd__engine *e, struct hvd__req **batch,
			 size_t n)
{
	size_t total = 0, at = 0, stand = 0, i;
	char *zeros;
	int rc;

	if (!batch[0]->m.gpu || !e->joined[e->comm.rank])
		return HVD_OK;
	for (i = 0; i < n; i++)
		if (batch[i]->h == NULL) {
			stand++;
			total += ZEROS_ALIGN(hvd__meta_bytes(&batch[i]->m));
		}
	if (stand == 0)
		return HVD_OK;
	rc = hvd__gpu_engine(e);
	if (rc == HVD_OK)
		rc = hvd__gpu_scratch(e->gpu, total, true, (void **)&zeros,
				      e->gpu_why, sizeof(e->gpu_why));
	for (i = 0; rc == HVD_OK && i < n; i++)
		if (batch[i]->h == NULL) {
			batch[i]->sendbuf = batch[i]->recvbuf = zeros + at;
			at += ZEROS_ALIGN(hvd__meta_bytes(&batch[i]->m));
		}
	return rc;
}

/* The batch that r starts: the allreduces that follow it and fuse with
 * it, up to the threshold. Advances *i past them. */
static size_t plan_batch(struct hvd__engine *e, struct hvd__req *r,
			 struct hvd__resp *v, size_t n, size_t *i,
			 struct hvd__req **batch)
{
	size_t es = hvd__dtype_size((enum hvd_dtype)r->m.dtype);
	size_t bytes = (size_t)r->m.count * es, nb = 0;

	batch[nb++] = r;
	while (*i < n && fuses_with(&v[*i], r)) {
		size_t more = (size_t)v[*i].m.count * es;
		struct hvd__req *q;

		if (bytes + more > (size_t)e->k.fusion_threshold)
			break;
		q = take(e, &v[*i]);
		(*i)++;
		if (q == NULL)
			continue;
		timeline_negotiated(e, q, &v[*i - 1]);
		queued(e, q);
		batch[nb++] = q;
		bytes += more;
	}
	return nb;
}

/* The collectives that run alone, and the timeline activity of their
 * NCCL call inside the operation's span on the GPU (NULL: none). */
static const struct {
	int (*run)(struct hvd__engine *e, struct hvd__req *r);
	const char *nccl;
} ops[] = {
	[HVD__REQ_BROADCAST] = {hvd__op_broadcast, "NCCL_BROADCAST"},
	[HVD__REQ_ALLGATHER] = {hvd__op_allgather, "NCCL_ALLGATHER"},
	[HVD__REQ_BARRIER] = {hvd__op_barrier, NULL},
	[HVD__REQ_ALLTOALL] = {hvd__op_alltoall, "NCCL_ALLTOALL"},
	[HVD__REQ_REDUCESCATTER] = {hvd__op_reducescatter,
				    "NCCL_REDUCESCATTER"},
};

static int run_one(struct hvd__engine *e, struct hvd__req *r)
{
	long long t0 = hvd__now_us();
	const char *what;
	int rc;

	if (r->m.type >= sizeof(ops) / sizeof(ops[0]) ||
	    ops[r->m.type].run == NULL)
		return HVD_EPROTO;
	rc = ops[r->m.type].run(e, r);
	what = r->m.gpu ? ops[r->m.type].nccl : NULL;
	if (what != NULL)
		span(e, r->name, what, t0);
	return rc;
}

int hvd__execute(struct hvd__engine *e, struct hvd__resp *v, size_t n)
{
	struct hvd__req **batch = calloc(n + 1, sizeof(struct hvd__req *));
	size_t i = 0, nb, k;
	int rc = HVD_OK, s;

	if (batch == NULL)
		return HVD_ENOMEM;
	while (i < n) {
		char refused[512];
		bool refuse = join_refuses(e, &v[i], refused, sizeof(refused));
		struct hvd__req *r;

		if (v[i].error == NULL && v[i].m.type == HVD__REQ_JOIN) {
			r = hvd__op_join(e, &v[i]);
			if (r != NULL) /* the last to join, a rank of the job */
				hvd__req_complete(
					r, hvd__job_rank(e, v[i].m.root), NULL);
			i++;
			continue;
		}
		if (v[i].done) { /* reduced in the agreement (negotiate.c) */
			r = take_local(e, v[i].name);
			if (r != NULL) {
				timeline_negotiated(e, r, &v[i]);
				complete(e, r, HVD_OK);
			}
			i++;
			continue;
		}
		r = refuse ? take_local(e, v[i].name) : take(e, &v[i]);
		/* Its negotiation ended: it runs, is refused, or fails. */
		timeline_negotiated(e, r, &v[i]);
		if (r == NULL) { /* submitted by others only (an error) */
			i++;
			continue;
		}
		if (refuse) {
			hvd__req_finish(r, HVD_EINVAL, refused);
			i++;
			continue;
		}
		if (v[i].error != NULL) {
			hvd__error("%s", v[i].error);
			hvd__req_finish(
				r, v[i].cache < 0 ? v[i].cache : HVD_EMISMATCH,
				v[i].error);
			i++;
			continue;
		}
		if (r->m.type == HVD__REQ_PROCESS_SET) {
			s = hvd__sets_apply(e, r); /* it completes r */
			if (e->tl != NULL)
				hvd__timeline_span(e->tl, v[i].name,
						   "PROCESS_SET", e->decided_us,
						   hvd__now_us() -
							   e->decided_us);
			if (s != HVD_OK && rc == HVD_OK)
				rc = s;
			i++;
			continue;
		}
		queued(e, r);
		i++;
		if (r->m.type == HVD__REQ_ALLREDUCE) {
			nb = plan_batch(e, r, v, n, &i, batch);
			s = rc != HVD_OK ? rc : gpu_stand_ins(e, batch, nb);
			if (s == HVD_OK)
				s = hvd__op_allreduce(e, batch, nb);
			if (s == HVD__LAUNCHED)
				s = hvd__gpu_launched(e, batch, nb);
			if (s == HVD__LAUNCHED) /* its flight completes it */
				continue;
		} else {
			batch[0] = r;
			nb = 1;
			s = rc != HVD_OK ? rc : gpu_stand_ins(e, batch, 1);
			if (s == HVD_OK)
				s = run_one(e, r);
		}
		if (engine_error(s) && rc == HVD_OK)
			rc = s;
		for (k = 0; k < nb; k++)
			complete(e, batch[k], s);
	}
	free(batch);
	return rc;
}
