/* negotiate.c: each cycle, the ranks agree on which tensors to run, in
 * which order, Horovod's way:
 *
 * 1. one small allreduce (MIN over bytes) tells every rank whether some
 *    rank wants to shut down, whether some rank has requests the
 *    coordinator has not seen, and, for each entry of the response cache,
 *    whether it is ready on every rank (the bit-vector fast path: a
 *    tensor negotiated once needs no coordinator again);
 * 2. if some rank has new requests, every rank sends them to rank 0, the
 *    coordinator, which counts submissions per name, checks that the
 *    ranks agree (type, dtype, op, count, root), and answers with the
 *    tensors every rank has submitted, in order, with cache entries.
 *
 * Rank 0 also reports stalls: tensors some ranks submitted and others
 * not, named with the missing ranks, failed after the shutdown time. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "reduce.h"
#include "ring.h"

const char *const hvd__req_names[] = {
	[HVD__REQ_ALLREDUCE] = "allreduce",
	[HVD__REQ_BROADCAST] = "broadcast",
	[HVD__REQ_ALLGATHER] = "allgather",
	[HVD__REQ_BARRIER] = "barrier",
};

/* What the coordinator knows of one name. */
struct hvd__pending {
	char *name;
	struct hvd__meta m;
	uint8_t *submitted; /* per rank */
	int nsubmitted;
	char *error; /* first disagreement, or NULL */
	long long first_us;
	bool warned;
	struct hvd__pending *next;
};

/* A growing list of responses. */
struct resps {
	struct hvd__resp *v;
	size_t n;
	bool bad; /* a response was lost: out of memory */
};

/* Append one response; it takes name and error. */
static void resps_add(struct resps *out, char *name, const struct hvd__meta *m,
		      int32_t cache, char *error)
{
	struct hvd__resp *v =
		name != NULL ? realloc(out->v, (out->n + 1) * sizeof(*v))
			     : NULL;

	if (v == NULL) {
		out->bad = true;
		free(name);
		free(error);
		return;
	}
	out->v = v;
	v[out->n] = (struct hvd__resp){name, *m, cache, error};
	out->n++;
}

bool hvd__meta_equal(const struct hvd__meta *a, const struct hvd__meta *b)
{
	return a->type == b->type && a->dtype == b->dtype && a->op == b->op &&
	       a->gpu == b->gpu && a->root == b->root && a->count == b->count;
}

void hvd__meta_describe(const struct hvd__meta *m, char *buf, size_t len)
{
	static const char *const ops[] = {"sum", "average", "min", "max",
					  "product"};
	size_t n;

	snprintf(buf, len, "%s of %" PRIu64 " %s", hvd__req_names[m->type],
		 m->count, hvd__dtype_name((enum hvd_dtype)m->dtype));
	n = strlen(buf);
	if (m->type == HVD__REQ_ALLREDUCE && m->op < 5)
		snprintf(buf + n, len - n, " op %s", ops[m->op]);
	n = strlen(buf);
	if (m->type == HVD__REQ_BROADCAST)
		snprintf(buf + n, len - n, " from root %d", m->root);
	n = strlen(buf);
	if (m->gpu)
		snprintf(buf + n, len - n, " in GPU memory");
}

static void pending_free(struct hvd__pending *p)
{
	free(p->name);
	free(p->error);
	free(p->submitted);
	free(p);
}

/* Unlink p from the coordinator's list and free it. */
static void pending_drop(struct hvd__engine *e, struct hvd__pending *p)
{
	struct hvd__pending **pp;

	for (pp = &e->coord; *pp != p; pp = &(*pp)->next)
		;
	*pp = p->next;
	pending_free(p);
}

struct submit_ctx {
	struct hvd__engine *e;
	struct resps *out;
};

/* One rank's request for name reaches the coordinator. */
static void coord_submit(void *arg, const char *name, const struct hvd__meta *m,
			 int rank)
{
	struct submit_ctx *ctx = arg;
	struct hvd__engine *e = ctx->e;
	struct hvd__pending *p;

	for (p = e->coord; p != NULL; p = p->next)
		if (strcmp(p->name, name) == 0)
			break;
	if (p == NULL) {
		p = calloc(1, sizeof(*p));
		if (p == NULL)
			return;
		p->name = strdup(name);
		p->m = *m;
		p->submitted = calloc((size_t)e->comm.size, 1);
		p->first_us = hvd__now_us();
		p->next = e->coord;
		e->coord = p;
		if (p->name == NULL || p->submitted == NULL) {
			pending_drop(e, p);
			return;
		}
	}
	if (rank < 0 || rank >= e->comm.size || p->submitted[rank])
		return; /* a stall re-send */
	p->submitted[rank] = 1;
	p->nsubmitted++;
	if (!hvd__meta_equal(&p->m, m) && p->error == NULL) {
		char a[128], b[128], msg[1024];
		int first;

		for (first = 0; first < e->comm.size; first++)
			if (p->submitted[first] && first != rank)
				break;
		hvd__meta_describe(&p->m, a, sizeof(a));
		hvd__meta_describe(m, b, sizeof(b));
		snprintf(
			msg, sizeof(msg),
			"ranks disagree on tensor '%s': rank %d asked for %s, rank %d for %s",
			name, first, a, rank, b);
		p->error = strdup(msg);
	}
	if (p->nsubmitted < e->comm.size)
		return;
	/* Every rank has it: respond, and forget it. For an error, the
	 * entry field carries its code. */
	resps_add(ctx->out, p->name, &p->m, p->error ? HVD_EMISMATCH : -1,
		  p->error);
	p->name = NULL;
	p->error = NULL;
	pending_drop(e, p);
}

/* Stalls: warn once after the warning time; fail after the shutdown
 * time, if set. */
static void coord_stalls(struct hvd__engine *e, struct resps *out)
{
	long long now = hvd__now_us();
	struct hvd__pending *p, *next;

	for (p = e->coord; p != NULL; p = next) {
		long long waited_s = (now - p->first_us) / 1000000;
		char missing[256] = "", msg[512];
		size_t off = 0;
		int r;

		next = p->next;
		for (r = 0; r < e->comm.size && off < sizeof(missing) - 12; r++)
			if (!p->submitted[r])
				off += (size_t)snprintf(
					missing + off, sizeof(missing) - off,
					"%s%d", off ? ", " : "", r);
		if (!p->warned && waited_s >= e->k.stall_warn_s) {
			hvd__warn(
				"stall: tensor '%s' was submitted by %d of %d ranks %lld s ago; missing: ranks %s",
				p->name, p->nsubmitted, e->comm.size, waited_s,
				missing);
			p->warned = true;
		}
		if (e->k.stall_shutdown_s <= 0 ||
		    waited_s < e->k.stall_shutdown_s)
			continue;
		snprintf(msg, sizeof(msg),
			 "stalled: tensor '%s' was never submitted by ranks %s",
			 p->name, missing);
		resps_add(out, p->name, &p->m, HVD_ESTALL, strdup(msg));
		p->name = NULL;
		pending_drop(e, p);
	}
}

/* The coordinator round: requests go to rank 0, responses come back. */
static int coordinate(struct hvd__engine *e, struct resps *out)
{
	struct submit_ctx ctx = {e, out};
	int rc = HVD_OK, r;

	if (e->comm.rank != 0) {
		rc = hvd__ctl_send_requests(e, 0);
		if (rc == HVD_OK)
			rc = hvd__ctl_recv_responses(e, 0, &out->v, &out->n);
		return rc;
	}
	hvd__ctl_local_requests(e, coord_submit, &ctx);
	for (r = 1; r < e->comm.size && rc == HVD_OK; r++)
		rc = hvd__ctl_recv_requests(e, r, coord_submit, &ctx);
	if (e->k.stall_check)
		coord_stalls(e, out);
	if (rc != HVD_OK)
		return rc;
	hvd__cache_assign(e, out->v, out->n);
	for (r = 1; r < e->comm.size && rc == HVD_OK; r++)
		rc = hvd__ctl_send_responses(e, r, out->v, out->n);
	return rc;
}

/* Mark this rank's requests in the bit vector: vec[2 + entry] for those
 * the cache knows; true if some others are new to the coordinator. */
static bool mark_ready(struct hvd__engine *e, uint8_t *vec)
{
	long long now = hvd__now_us();
	struct hvd__req *r;
	bool news = false;

	for (r = e->pending_local; r != NULL; r = r->next) {
		if (r->cache < 0)
			r->cache = hvd__cache_find(e, r->name, &r->m);
		/* A cached request waiting long goes to the coordinator,
		 * so that rank 0 can name the missing ranks. */
		if (r->cache >= 0 && !r->reported &&
		    (now - r->enqueued_us) / 1000000 >= e->k.stall_warn_s)
			r->cache = -1;
		if (r->cache >= 0)
			vec[2 + r->cache] = 1;
		else if (!r->reported)
			news = true;
	}
	/* Rank 0 asks for a coordinator round about once a second while
	 * tensors wait there, so that stalls are seen without new work. */
	if (e->comm.rank == 0 && e->coord != NULL && e->k.stall_check &&
	    now - e->last_stall_us >= 1000000) {
		news = true;
		e->last_stall_us = now;
	}
	return news;
}

int hvd__negotiate(struct hvd__engine *e, bool shutdown_local,
		   struct hvd__resp **v, size_t *n)
{
	size_t vlen = 2 + (size_t)e->k.cache_cap, i;
	uint8_t *vec = calloc(vlen, 1);
	struct resps out = {NULL, 0, false}, news = {NULL, 0, false};
	int rc;

	*v = NULL;
	*n = 0;
	if (vec == NULL)
		return HVD_ENOMEM;
	vec[1] = !mark_ready(e, vec);
	vec[0] = !shutdown_local;
	/* MIN over bytes: AND of the ready bits, OR of the flags. */
	rc = hvd__ring_allreduce(&e->comm, vec, vlen, HVD_UINT8, HVD_MIN);
	if (rc == HVD_OK && vec[0] == 0)
		rc = HVD_ESHUTDOWN;
	/* The cached tensors ready everywhere, in entry order. */
	for (i = 0; rc == HVD_OK && i < (size_t)e->k.cache_cap; i++)
		if (vec[2 + i])
			resps_add(&out, strdup(e->cache[i].name),
				  &e->cache[i].m, (int32_t)i, NULL);
	if (rc == HVD_OK && vec[1] == 0) {
		rc = coordinate(e, &news);
		if (rc == HVD_OK)
			hvd__cache_record(e, news.v, news.n);
		for (i = 0; i < news.n; i++)
			resps_add(&out, news.v[i].name, &news.v[i].m,
				  news.v[i].cache, news.v[i].error);
		free(news.v);
	}
	free(vec);
	if (rc == HVD_OK && (out.bad || news.bad))
		rc = HVD_ENOMEM;
	if (rc != HVD_OK) {
		hvd__resps_free(out.v, out.n);
		return rc;
	}
	*v = out.v;
	*n = out.n;
	return HVD_OK;
}

void hvd__negotiate_free(struct hvd__engine *e)
{
	while (e->coord != NULL) {
		struct hvd__pending *p = e->coord;

		e->coord = p->next;
		pending_free(p);
	}
}
