/* negotiate.c: each cycle, the ranks agree on which tensors to run, in
 * which order, Horovod's way:
 *
 * 1. one small allreduce (MIN over bytes) tells every rank whether some
 *    rank wants to shut down, how busy the busiest rank is in its process
 *    sets (engine.h's sets_busy), whether some rank has requests the
 *    coordinator has not seen, and, for each entry of the response cache,
 *    whether it is ready on every rank (the bit-vector fast path: a
 *    tensor negotiated once needs no coordinator again);
 * 2. if some rank has new requests, every rank sends them to rank 0, the
 *    coordinator, which counts submissions per name, checks that the
 *    ranks agree (type, dtype, op, count, root), and answers with the
 *    tensors every rank has submitted, in order, with cache entries.
 *
 * Rank 0 also fails stalls (stall.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/autotune.h"
#include "engine/coord.h"
#include "engine/engine.h"
#include "util/reduce.h"
#include "algo/ring.h"

/* A growing list of responses. bad: something of this round was lost
 * for want of memory (a response, a request, a disagreement): the round
 * fails with HVD_ENOMEM, and with it the job on every rank, rather than
 * leave a tensor unanswered or answered wrong. */
struct resps {
	struct hvd__resp *v;
	size_t n;
	bool bad;
};

/* Append one response; it takes name (NULL: lost) and copies error.
 * first_us: hvd__resp's. */
static void resps_add(struct resps *out, char *name, const struct hvd__meta *m,
		      int32_t cache, const char *error, long long first_us)
{
	char *err = error != NULL ? strdup(error) : NULL;
	struct hvd__resp *v =
		name != NULL && (error == NULL || err != NULL)
			? realloc(out->v, (out->n + 1) * sizeof(*v))
			: NULL;

	if (v == NULL) {
		out->bad = true;
		free(name);
		free(err);
		return;
	}
	out->v = v;
	v[out->n] = (struct hvd__resp){name, *m, cache, err, false, first_us};
	out->n++;
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

	for (pp = &e->coord; *pp != NULL && *pp != p; pp = &(*pp)->next)
		;
	if (*pp != NULL)
		*pp = p->next;
	pending_free(p);
}

struct submit_ctx {
	struct hvd__engine *e;
	struct resps *out;
};

/* Whether every rank has submitted p, or joined. */
static bool pending_full(const struct hvd__engine *e,
			 const struct hvd__pending *p)
{
	int r;

	/* Each rank's submission arrives once: without joins, a count. */
	if (e->coord_njoined == 0)
		return p->nsubmitted >= e->comm.size;
	for (r = 0; r < e->comm.size; r++)
		if (!p->submitted[r] && !e->coord_joined[r])
			return false;
	return true;
}

static struct hvd__pending *group_member(const struct hvd__engine *e,
					 uint64_t group, bool ready_only)
{
	struct hvd__pending *p;

	for (p = e->coord; p != NULL; p = p->next)
		if (p->m.group == group && (p->ready || !ready_only))
			return p;
	return NULL;
}

/* Fail group at the end of this coordinator round, with error. */
static void group_failed(struct submit_ctx *ctx, uint64_t group,
			 const char *error, int code)
{
	struct hvd__engine *e = ctx->e;
	struct hvd__failed_group *f;
	char *copy;
	size_t i;

	for (i = 0; i < e->nfailed; i++)
		if (e->failed[i].group == group)
			return;
	f = realloc(e->failed, (e->nfailed + 1) * sizeof(*f));
	if (f != NULL)
		e->failed = f;
	copy = strdup(error);
	if (f == NULL || copy == NULL) {
		free(copy);
		ctx->out->bad = true;
		return;
	}
	f[e->nfailed++] = (struct hvd__failed_group){group, copy, code};
}

static void failed_free(struct hvd__engine *e)
{
	size_t i;

	for (i = 0; i < e->nfailed; i++)
		free(e->failed[i].error);
	free(e->failed);
	e->failed = NULL;
	e->nfailed = 0;
}

/* Respond to the members of a group: with error (and code), every member
 * the coordinator knows, ready or not (the ranks that submitted one fail
 * it); without, the ready ones, once all group_n are. */
static void group_emit(struct submit_ctx *ctx, uint64_t group, uint32_t n,
		       const char *error, int code)
{
	struct hvd__engine *e = ctx->e;
	struct hvd__pending *p;
	uint32_t nready = 0;

	for (p = e->coord; error == NULL && p != NULL; p = p->next)
		nready += p->m.group == group && p->ready;
	if (error == NULL && nready < n)
		return;
	while ((p = group_member(e, group, error == NULL)) != NULL) {
		const char *why = p->error != NULL ? p->error : error;

		resps_add(ctx->out, p->name, &p->m,
			  why != NULL ? (p->error ? p->code : code) : -1, why,
			  p->first_us);
		p->name = NULL;
		pending_drop(e, p);
	}
}

/* The disagreement of p, the lower rank first. */
static void mismatch(struct submit_ctx *ctx, struct hvd__pending *p)
{
	const struct hvd__meta *m[2] = {&p->m, &p->diff_m};
	int r[2] = {p->base_rank, p->diff_rank}, lo = r[1] < r[0];
	char a[256], b[256], msg[1024], where[40] = "";
	const struct hvd__engine *e = ctx->e;

	hvd__meta_describe(m[lo], a, sizeof(a));
	hvd__meta_describe(m[!lo], b, sizeof(b));
	if (e->set != 0)
		snprintf(where, sizeof(where), " in process set %d", e->set);
	snprintf(
		msg, sizeof(msg),
		"ranks disagree on tensor '%s'%s: rank %d asked for %s, rank %d for %s",
		p->name, where, hvd__job_rank(e, r[lo]), a,
		hvd__job_rank(e, r[!lo]), b);
	p->error = strdup(msg);
	p->code = HVD_EMISMATCH;
	if (p->error == NULL)
		ctx->out->bad = true;
}

/* p may now have every rank: respond (or hold it for its group). now:
 * p failed in a way that waits for no other rank (a stall). */
static void settle(struct submit_ctx *ctx, struct hvd__pending *p, bool now)
{
	struct hvd__engine *e = ctx->e;
	uint64_t groups[2] = {p->m.group, p->other_group};
	uint32_t n = p->m.group_n;
	char *error;
	int code, i;

	if (!now && !pending_full(e, p))
		return;
	if (p->differs && p->error == NULL)
		mismatch(ctx, p);
	code = p->code;
	if (p->error == NULL && n > 1) {
		p->ready = true;
		group_emit(ctx, groups[0], n, NULL, 0);
		return;
	}
	/* Alone, or failed: respond now. A failure fails its groups. For an
	 * error, the entry field carries its code. */
	error = p->error;
	p->error = NULL;
	resps_add(ctx->out, p->name, &p->m, error ? code : -1, error,
		  p->first_us);
	p->name = NULL;
	pending_drop(e, p);
	for (i = 0; error != NULL && i < 2; i++)
		if (groups[i] != 0)
			group_failed(ctx, groups[i], error, code);
	free(error);
}

/* Rank `rank` joined: tell every rank, then answer what waited on it. */
static void coord_join(struct submit_ctx *ctx, const struct hvd__meta *m,
		       int rank)
{
	struct hvd__engine *e = ctx->e;
	struct hvd__meta jm = *m;
	struct hvd__pending *p;
	bool again = true;

	if (e->coord_joined[rank])
		return;
	e->coord_joined[rank] = 1;
	e->coord_njoined++;
	jm.root = rank;
	resps_add(ctx->out, strdup("hvd.join"), &jm, -1, NULL, 0);
	while (again) {
		again = false;
		for (p = e->coord; p != NULL && !again; p = p->next)
			if (!p->ready && pending_full(e, p)) {
				settle(ctx, p, false);
				again = true;
			}
	}
	if (e->coord_njoined == e->comm.size) {
		memset(e->coord_joined, 0, (size_t)e->comm.size);
		e->coord_njoined = 0;
	}
}

/* One rank's request for name reaches the coordinator. */
static void coord_submit(void *arg, const char *name, const struct hvd__meta *m,
			 int rank)
{
	struct submit_ctx *ctx = arg;
	struct hvd__engine *e = ctx->e;
	struct hvd__pending *p;

	if (rank < 0 || rank >= e->comm.size)
		return;
	if (m->type == HVD__REQ_JOIN) {
		coord_join(ctx, m, rank);
		return;
	}
	for (p = e->coord; p != NULL; p = p->next)
		if (strcmp(p->name, name) == 0)
			break;
	if (p == NULL) {
		p = calloc(1, sizeof(*p));
		if (p == NULL) {
			ctx->out->bad = true;
			return;
		}
		p->name = strdup(name);
		p->m = *m;
		p->submitted = calloc((size_t)e->comm.size, 1);
		p->first_us = hvd__now_us();
		p->base_rank = rank;
		p->next = e->coord;
		e->coord = p;
		if (p->name == NULL || p->submitted == NULL) {
			pending_drop(e, p);
			ctx->out->bad = true;
			return;
		}
	}
	if (p->submitted[rank])
		return; /* a stall re-send */
	p->submitted[rank] = 1;
	/* Horovod's tick: which ranks came early, which late. */
	if (e->tl != NULL)
		hvd__timeline_tick(e->tl, name, hvd__job_rank(e, rank),
				   hvd__now_us());
	p->nsubmitted++;
	if (hvd__meta_equal(&p->m, m)) {
		if (rank < p->base_rank)
			p->base_rank = rank;
	} else if (!p->differs || rank < p->diff_rank) {
		p->differs = true;
		p->diff_rank = rank;
		p->diff_m = *m;
		p->other_group = m->group;
	}
	settle(ctx, p, false);
}

/* Stalls (stall.c): fail each tensor past the shutdown time (a grouped
 * tensor fails its whole group). */
static void coord_stalls(struct submit_ctx *ctx)
{
	struct hvd__pending *p;
	char msg[512];

	/* settle may free p: stall.c looks at the list afresh each time. */
	while ((p = hvd__stall_due(ctx->e, hvd__now_us(), msg, sizeof(msg))) !=
	       NULL) {
		free(p->error);
		p->error = strdup(msg);
		p->code = HVD_ESTALL;
		if (p->error == NULL) {
			ctx->out->bad = true;
			return;
		}
		settle(ctx, p, true);
	}
}

/* The coordinator round: requests go to rank 0, responses come back. */
static int coordinate(struct hvd__engine *e, struct resps *out)
{
	struct submit_ctx ctx = {e, out};
	int rc = HVD_OK, r;
	size_t i;

	if (e->comm.rank != 0) {
		rc = hvd__ctl_send_requests(e, 0);
		if (rc == HVD_OK)
			rc = hvd__ctl_recv_responses(e, 0, &out->v, &out->n);
		return rc;
	}
	rc = hvd__ctl_local_requests(e, coord_submit, &ctx);
	for (r = 1; r < e->comm.size && rc == HVD_OK; r++)
		rc = hvd__ctl_recv_requests(e, r, coord_submit, &ctx);
	if (e->k.stall_check)
		coord_stalls(&ctx);
	/* A rank submits a whole group in one message: by now every member
	 * of a failed group has been seen, and a later group of the same
	 * names is a new try. */
	for (i = 0; i < e->nfailed; i++)
		group_emit(&ctx, e->failed[i].group, 0, e->failed[i].error,
			   e->failed[i].code);
	failed_free(e);
	if (rc != HVD_OK)
		return rc;
	hvd__cache_assign(e, out->v, out->n);
	for (r = 1; r < e->comm.size && rc == HVD_OK; r++)
		rc = hvd__ctl_send_responses(e, r, out->v, out->n);
	return rc;
}

/* A grouped request goes by the cache only if every member of its group
 * does: otherwise all of them go to the coordinator. */
static void group_cache(struct hvd__engine *e)
{
	struct hvd__req *r, *q;

	for (r = e->pending_local; r != NULL; r = r->next) {
		uint32_t n = 0;
		bool all = true;

		if (r->m.group_n < 2 || r->cache < 0)
			continue;
		for (q = e->pending_local; q != NULL; q = q->next)
			if (q->m.group == r->m.group) {
				n++;
				all = all && q->cache >= 0;
			}
		if (all && n == r->m.group_n)
			continue;
		for (q = e->pending_local; q != NULL; q = q->next)
			if (q->m.group == r->m.group)
				q->cache = -1;
	}
}

/* Mark this rank's requests in the bit vector: vec[2 + entry] for those
 * the cache knows; true if some others are new to the coordinator. A
 * joined rank is ready for every entry. */
static bool mark_ready(struct hvd__engine *e, uint8_t *vec)
{
	long long now = hvd__now_us();
	struct hvd__req *r;
	bool news = false;
	long i;

	for (r = e->pending_local; r != NULL; r = r->next) {
		if (r->cache < 0 && r->m.type != HVD__REQ_JOIN)
			r->cache = hvd__cache_find(e, r->name, &r->m);
		if (hvd__stall_uncache(e, r, now))
			r->cache = -1;
	}
	group_cache(e);
	for (r = e->pending_local; r != NULL; r = r->next)
		if (r->cache >= 0)
			vec[2 + r->cache] = 1;
		else if (!r->reported)
			news = true;
	for (i = 0; e->joined[e->comm.rank] && i < e->cache_used; i++)
		vec[2 + i] = 1;
	/* Rank 0's round about once a second (stall.c), also with news. */
	return hvd__stall_round_due(e, now) || news;
}

/* The members of a group next to each other (the cached responses come
 * in entry order), so that they run, and fuse, together. */
static void group_adjacent(struct hvd__resp *v, size_t n)
{
	size_t i, j, k;

	for (i = 0; i < n; i++) {
		if (v[i].m.group_n < 2)
			continue;
		for (j = i + 1, k = i + 1; j < n; j++)
			if (v[j].m.group == v[i].m.group) {
				struct hvd__resp t = v[j];

				memmove(&v[k + 1], &v[k], (j - k) * sizeof(*v));
				v[k++] = t;
			}
		i = k - 1;
	}
}

/* What goes by the cache this cycle is decided: it does not go to the
 * coordinator as well (a second response would run it twice), and rank 0
 * forgets what it holds of it from earlier rounds (requests that some
 * ranks reported there before every rank had them). */
static void cache_settled(struct hvd__engine *e, const uint8_t *vec)
{
	struct hvd__pending *p, *next;
	struct hvd__req *r;

	for (r = e->pending_local; r != NULL; r = r->next)
		if (r->cache >= 0 && vec[2 + r->cache])
			r->reported = true;
	for (p = e->coord; p != NULL; p = next) {
		int i = hvd__cache_find(e, p->name, NULL);

		next = p->next;
		if (i >= 0 && vec[2 + i])
			pending_drop(e, p);
	}
}

/* On one host, the data of one small allreduce rides with the agreement
 * through the segment: one exchange where there would be two. Each rank
 * offers its ready cached allreduce of the lowest entry that fits; when
 * every rank offered the same entry, every rank has it ready, and every
 * rank reduces it from the slots at once, in local rank order, as the
 * segment's own small allreduce would (the same bits). */
#define RIDE_MAX (16u << 10)

static const struct hvd__req *ride_pick(const struct hvd__engine *e,
					size_t room)
{
	const struct hvd__req *r, *best = NULL;

	for (r = e->pending_local; r != NULL; r = r->next) {
		size_t bytes = hvd__meta_bytes(&r->m);

		if (r->cache < 0 || r->m.type != HVD__REQ_ALLREDUCE ||
		    r->m.op == HVD_ADASUM || r->m.gpu || r->m.prescale != 1 ||
		    r->m.postscale != 1 || r->m.group_n > 0 || bytes > room ||
		    bytes > RIDE_MAX)
			continue;
		if (best == NULL || r->cache < best->cache)
			best = r;
	}
	return best;
}

/* The agreement (MIN over vec's bytes) among the ranks of one host, and
 * a ride: *rode is the entry every rank reduced, or -1. */
static int agree_on_host(struct hvd__engine *e, uint8_t *vec, size_t vlen,
			 int32_t *rode)
{
	static const char zeros[64];
	size_t head = (sizeof(int32_t) + vlen + 63) & ~(size_t)63, i;
	size_t slot = hvd__shm_slot_bytes(e->hier.shm);
	const struct hvd__req *r =
		slot > head ? ride_pick(e, slot - head) : NULL;
	int32_t entry = r != NULL ? r->cache : -1;
	size_t bytes = r != NULL ? hvd__meta_bytes(&r->m) : 0;
	struct iovec v[4] = {{&entry, sizeof(entry)},
			     {vec, vlen},
			     {(void *)zeros, head - sizeof(entry) - vlen},
			     {(void *)(r != NULL ? r->sendbuf : zeros), bytes}};
	int size = e->comm.size, p, rc;
	const unsigned char *const *slots;
	bool same = entry >= 0;

	*rode = -1;
	rc = hvd__shm_exchange(e->hier.shm, v, 4, &slots,
			       hvd__transport_timeout_ms());
	for (i = 0; rc == HVD_OK && i < vlen; i++)
		for (p = 0; p < size; p++)
			if (slots[p][sizeof(entry) + i] < vec[i])
				vec[i] = slots[p][sizeof(entry) + i];
	for (p = 0; rc == HVD_OK && p < size && same; p++) {
		int32_t theirs;

		memcpy(&theirs, slots[p], sizeof(theirs));
		same = theirs == entry;
	}
	if (rc == HVD_OK && same && vec[0] != 0) {
		hvd__shm_reduce_slots(e->hier.shm, slots, head, r->recvbuf,
				      (size_t)r->m.count,
				      (enum hvd_dtype)r->m.dtype,
				      (enum hvd_op)r->m.op);
		*rode = entry;
	}
	return rc;
}

/* The autotuner's setting agreed this cycle, in force from now on every
 * rank (before anything of the cycle runs). */
static void apply_setting(struct hvd__engine *e, const struct hvd__setting *s)
{
	e->k.fusion_threshold = (long)s->fusion_kib << 10;
	e->buf.limit = (size_t)e->k.fusion_threshold;
	e->k.cycle_ms = s->cycle_us / 1000.0;
	e->k.shm_allreduce = s->shm_allreduce != 0;
	e->k.hier_allgather = s->hier_allgather != 0;
	e->k.hier_allreduce = s->gpu_hier != 0;
	e->k.cache_off = s->cache == 0; /* emptied at the next cycle */
	/* The tuner kept the flat GPU allreduce: the communicators it had
	 * split by host for its trial go (their GPU memory with them). */
	if (!s->tuning && !s->gpu_hier && e->tune->tune_gpu_hier &&
	    hvd__gpu_unsplit(e->gpu, e->gpu_why, sizeof(e->gpu_why)) != HVD_OK)
		hvd__warn("%s", e->gpu_why);
}

int hvd__negotiate(struct hvd__engine *e, bool shutdown_local,
		   struct hvd__resp **v, size_t *n)
{
	/* Only the entries given out so far: the same on every rank; then,
	 * autotuning, rank 0's setting (autotune.h). */
	bool tune = e->tune != NULL && e->tune->on;
	size_t bits, vlen, i;
	uint8_t *vec;
	struct resps out = {NULL, 0, false}, news = {NULL, 0, false};
	int32_t rode = -1;
	int rc;

	*v = NULL;
	*n = 0;
	hvd__cache_settle_off(e);
	bits = 2 + (size_t)e->cache_used;
	vlen = bits + (tune ? HVD__SETTING_BYTES : 0);
	vec = calloc(vlen, 1);
	if (vec == NULL)
		return HVD_ENOMEM;
	vec[1] = !mark_ready(e, vec);
	if (tune)
		hvd__autotune_put(e->tune, vec + bits);
	/* 0: shutting down; else 3 less how busy in its process sets. */
	vec[0] = (uint8_t)(shutdown_local ? 0 : 3 - e->sets_busy);
	/* MIN over bytes: AND of the ready bits, OR of the flags; through
	 * the host's shared segment when every rank shares it. */
	if (e->hier.shm != NULL && e->hier.nhosts <= 1) {
		rc = agree_on_host(e, vec, vlen, &rode);
	} else if (e->hier.shm != NULL) {
		struct iovec one = {vec, vlen};

		rc = hvd__shm_allreduce_v(e->hier.shm, &e->hier.across, &one, 1,
					  HVD_UINT8, HVD_MIN,
					  hvd__transport_timeout_ms());
	} else {
		rc = hvd__ring_allreduce(&e->comm, vec, vlen, HVD_UINT8,
					 HVD_MIN);
	}
	if (rc == HVD_OK && vec[0] == 0)
		rc = HVD_ESHUTDOWN;
	e->peers_busy = rc == HVD_OK ? 3 - vec[0] : HVD__SETS_IDLE;
	if (rc == HVD_OK && tune && hvd__autotune_take(e->tune, vec + bits))
		apply_setting(e, &e->tune->now);
	/* The cached tensors ready everywhere, in entry order. */
	for (i = 0; rc == HVD_OK && i < (size_t)e->cache_used; i++)
		if (vec[2 + i] && e->cache[i].name != NULL) {
			resps_add(&out, strdup(e->cache[i].name),
				  &e->cache[i].m, (int32_t)i, NULL, 0);
			if ((int32_t)i == rode && !out.bad)
				out.v[out.n - 1].done = true;
		}
	group_adjacent(out.v, out.n);
	if (rc == HVD_OK)
		cache_settled(e, vec);
	if (rc == HVD_OK && vec[1] == 0) {
		rc = coordinate(e, &news);
		if (rc == HVD_OK)
			hvd__cache_record(e, news.v, news.n);
		for (i = 0; i < news.n; i++) {
			resps_add(&out, news.v[i].name, &news.v[i].m,
				  news.v[i].cache, news.v[i].error,
				  news.v[i].first_us);
			free(news.v[i].error);
		}
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
	failed_free(e);
	while (e->coord != NULL) {
		struct hvd__pending *p = e->coord;

		e->coord = p->next;
		pending_free(p);
	}
}
