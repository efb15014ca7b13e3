/* ring.c: the ring algorithms, explained in ring.h. */
#include "algo/ring.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/internal.h"
#include "util/reduce.h"

#define BCAST_SEGMENT (256 * 1024)
/* Allreduces of at most this many bytes run by recursive doubling. */
#define SMALL_ALLREDUCE (64 * 1024)

void hvd__ring_chunk(size_t count, size_t block, int n, int i, size_t *start,
		     size_t *len)
{
	size_t rows = block ? count / block : 0, ui = (size_t)i;
	size_t base = rows / (size_t)n, extra = rows % (size_t)n;

	*start = (ui * base + (ui < extra ? ui : extra)) * block;
	*len = (base + (ui < extra ? 1 : 0)) * block;
}

/* Chunk i of count elements split in n: sizes differ by at most one. */
static void chunk(size_t count, int n, int i, size_t *start, size_t *len)
{
	hvd__ring_chunk(count, 1, n, i, start, len);
}

/* The bytes [off, off + len) of the pieces laid end to end, as pieces
 * (none empty): how many were written to out. */
static int slice(const struct iovec *v, int n, size_t off, size_t len,
		 struct iovec *out)
{
	int i, k = 0;

	for (i = 0; i < n && len > 0; i++) {
		size_t l = v[i].iov_len, take;

		if (off >= l) {
			off -= l;
			continue;
		}
		take = l - off < len ? l - off : len;
		out[k++] = (struct iovec){(char *)v[i].iov_base + off, take};
		len -= take;
		off = 0;
	}
	return k;
}

struct reduce_arg {
	const struct iovec *dst; /* where received elements are reduced */
	int ndst;
	int di;		 /* the piece of dst that byte `done` falls in, */
	size_t doff;	 /* and where in it */
	const char *src; /* the receive buffer */
	size_t esize;
	size_t done; /* bytes already reduced */
	enum hvd_dtype t;
	enum hvd_op op;
};

/* Reduce every whole element that has arrived. */
static void reduce_progress(void *arg, size_t received)
{
	struct reduce_arg *a = arg;
	size_t upto = received - received % a->esize;

	while (a->done < upto && a->di < a->ndst) {
		const struct iovec *d = &a->dst[a->di];
		size_t take = d->iov_len - a->doff;

		if (take > upto - a->done)
			take = upto - a->done;
		hvd__reduce((char *)d->iov_base + a->doff, a->src + a->done,
			    take / a->esize, a->t, a->op);
		a->done += take;
		a->doff += take;
		if (a->doff == d->iov_len) {
			a->di++;
			a->doff = 0;
		}
	}
}

/* sendrecv of pieces: the transport's own scatter-gather when it has
 * one; else each side must be one piece at most. */
static int xchg(const struct hvd__comm *c, int to, const struct iovec *s,
		int sn, int from, const struct iovec *r, int rn,
		hvd__recv_progress progress, void *arg)
{
	if (c->ops->sendrecv_v != NULL)
		return c->ops->sendrecv_v(c->t, to, s, sn, from, r, rn,
					  progress, arg);
	if (sn > 1 || rn > 1)
		return HVD_ENOTSUP;
	return c->ops->sendrecv(
		c->t, to, sn ? s->iov_base : NULL, sn ? s->iov_len : 0, from,
		rn ? r->iov_base : NULL, rn ? r->iov_len : 0, progress, arg);
}

static int mod(int a, int n)
{
	return ((a % n) + n) % n;
}

int hvd__ring_allreduce(const struct hvd__comm *c, void *buf, size_t count,
			enum hvd_dtype t, enum hvd_op op)
{
	return hvd__ring_allreduce_timed(c, buf, count, t, op, NULL);
}

int hvd__ring_allreduce_timed(const struct hvd__comm *c, void *buf,
			      size_t count, enum hvd_dtype t, enum hvd_op op,
			      struct hvd__ring_times *times)
{
	struct iovec v = {buf, count * hvd__dtype_size(t)};

	return hvd__ring_allreduce_v(c, &v, 1, t, op, times);
}

/* Recursive doubling: in log2(P) steps, where P is the largest power of
 * two not above N, each rank swaps its whole buffer with the rank whose
 * number differs in one bit, and both reduce. For small buffers the
 * ring's 2(N-1) steps are all latency. Ranks P and above first hand their
 * buffer to rank - P and get the result back at the end. Every rank ends
 * with the same bits: each step reduces the same two values, and the
 * reductions commute. */
static int allreduce_small(const struct hvd__comm *c, const struct iovec *v,
			   int nv, size_t bytes, enum hvd_dtype t,
			   enum hvd_op op)
{
	int n = c->size, r = c->rank, p = 1, mask, i, rc = HVD_OK;
	size_t esize = hvd__dtype_size(t);
	char *tmp = malloc(bytes + 1);
	struct iovec tv = {tmp, bytes};

	if (tmp == NULL)
		return HVD_ENOMEM;
	while (p * 2 <= n)
		p *= 2;
	if (r >= p) {
		rc = xchg(c, r - p, v, nv, 0, NULL, 0, NULL, NULL);
		if (rc == HVD_OK)
			rc = xchg(c, 0, NULL, 0, r - p, v, nv, NULL, NULL);
		free(tmp);
		return rc;
	}
	if (r + p < n) { /* take in rank r + P's buffer */
		struct reduce_arg a = {v, nv, 0, 0, tmp, esize, 0, t, op};

		rc = xchg(c, 0, NULL, 0, r + p, &tv, 1, reduce_progress, &a);
	}
	for (mask = 1; mask < p && rc == HVD_OK; mask <<= 1) {
		struct reduce_arg a = {v, nv, 0, 0, tmp, esize, 0, t, op};

		rc = xchg(c, r ^ mask, v, nv, r ^ mask, &tv, 1, reduce_progress,
			  &a);
	}
	for (i = 0; rc == HVD_OK && op == HVD_AVERAGE && i < nv; i++)
		hvd__divide(v[i].iov_base, v[i].iov_len / esize, t, n);
	if (rc == HVD_OK && r + p < n)
		rc = xchg(c, r + p, v, nv, 0, NULL, 0, NULL, NULL);
	free(tmp);
	return rc;
}

static void add_source(int *out, int *k, int r)
{
	int i;

	for (i = 0; i < *k; i++)
		if (out[i] == r)
			return;
	out[(*k)++] = r;
}

/* As allreduce_small's steps and the ring's left neighbour. */
int hvd__ring_sources(int rank, int size, int *out)
{
	int p = 1, mask, k = 0;

	if (size < 2)
		return 0;
	while (p * 2 <= size)
		p *= 2;
	add_source(out, &k, mod(rank - 1, size));
	if (rank >= p) {
		add_source(out, &k, rank - p);
		return k;
	}
	if (rank + p < size)
		add_source(out, &k, rank + p);
	for (mask = 1; mask < p; mask <<= 1)
		add_source(out, &k, rank ^ mask);
	return k;
}

/* The ring's reduce-scatter over the pieces v (count elements in rows of
 * block, split by hvd__ring_chunk): in step s each rank sends the chunk
 * it completed in step s-1 (its own, at first) to the right and reduces
 * the chunk coming from the left into its copy as it arrives. After n-1
 * steps rank r holds the complete chunk (r + own) mod n. sv holds 2*nv
 * pieces; tmp the largest chunk. */
static int reduce_scatter(const struct hvd__comm *c, const struct iovec *v,
			  int nv, size_t count, size_t block, int own,
			  enum hvd_dtype t, enum hvd_op op, struct iovec *sv,
			  char *tmp)
{
	size_t esize = hvd__dtype_size(t), st, ln, sst, sln;
	int n = c->size, right = mod(c->rank + 1, n),
	    left = mod(c->rank - 1, n);
	struct iovec *rv = sv + nv, tv;
	int s, ns, nr, rc = HVD_OK;

	for (s = 0; s < n - 1 && rc == HVD_OK; s++) {
		struct reduce_arg a = {0};

		hvd__ring_chunk(count, block, n, mod(c->rank + own - 1 - s, n),
				&sst, &sln);
		hvd__ring_chunk(count, block, n, mod(c->rank + own - 2 - s, n),
				&st, &ln);
		ns = slice(v, nv, sst * esize, sln * esize, sv);
		nr = slice(v, nv, st * esize, ln * esize, rv);
		a.dst = rv;
		a.ndst = nr;
		a.src = tmp;
		a.esize = esize;
		a.t = t;
		a.op = op;
		tv = (struct iovec){tmp, ln * esize};
		rc = xchg(c, right, sv, ns, left, &tv, 1, reduce_progress, &a);
	}
	return rc;
}

int hvd__ring_reducescatter(const struct hvd__comm *c, void *buf, size_t count,
			    size_t block, enum hvd_dtype t, enum hvd_op op)
{
	size_t esize = hvd__dtype_size(t), st, maxlen;
	struct iovec v = {buf, count * esize}, *sv;
	char *tmp;
	int rc;

	if (c->size == 1 || count == 0)
		return HVD_OK;
	hvd__ring_chunk(count, block, c->size, 0, &st, &maxlen);
	tmp = malloc(maxlen * esize + 1);
	sv = malloc(2 * sizeof(*sv));
	rc = tmp != NULL && sv != NULL
		     ? reduce_scatter(c, &v, 1, count, block, 0, t, op, sv, tmp)
		     : HVD_ENOMEM;
	free(tmp);
	free(sv);
	return rc;
}

int hvd__ring_allreduce_v(const struct hvd__comm *c, const struct iovec *v,
			  int nv, enum hvd_dtype t, enum hvd_op op,
			  struct hvd__ring_times *times)
{
	long long t0 = times ? hvd__now_us() : 0;
	size_t esize = hvd__dtype_size(t), count = 0, maxlen, st, ln, sst, sln;
	int n = c->size, right = mod(c->rank + 1, n),
	    left = mod(c->rank - 1, n);
	struct iovec *sv, *rv;
	char *tmp;
	int s, i, ns, nr, rc = HVD_OK;

	for (i = 0; i < nv; i++)
		count += v[i].iov_len / esize;
	if (n == 1 || count == 0)
		return HVD_OK;
	if (count * esize <= SMALL_ALLREDUCE) {
		rc = allreduce_small(c, v, nv, count * esize, t, op);
		if (times != NULL)
			times->reduce_scatter_us += hvd__now_us() - t0;
		return rc;
	}
	chunk(count, n, 0, &st, &maxlen);
	tmp = malloc(maxlen * esize + 1);
	sv = malloc(2 * (size_t)nv * sizeof(*sv));
	if (tmp == NULL || sv == NULL) {
		free(tmp);
		free(sv);
		return HVD_ENOMEM;
	}
	rv = sv + nv;
	rc = reduce_scatter(c, v, nv, count, 1, 1, t, op, sv, tmp);
	if (times != NULL) {
		long long t1 = hvd__now_us();

		times->reduce_scatter_us += t1 - t0;
		t0 = t1;
	}
	/* This rank's complete chunk: average it once, then pass it on. */
	chunk(count, n, mod(c->rank + 1, n), &st, &ln);
	nr = slice(v, nv, st * esize, ln * esize, rv);
	for (i = 0; rc == HVD_OK && op == HVD_AVERAGE && i < nr; i++)
		hvd__divide(rv[i].iov_base, rv[i].iov_len / esize, t, n);
	for (s = 0; s < n - 1 && rc == HVD_OK; s++) {
		chunk(count, n, mod(c->rank + 1 - s, n), &sst, &sln);
		chunk(count, n, mod(c->rank - s, n), &st, &ln);
		ns = slice(v, nv, sst * esize, sln * esize, sv);
		nr = slice(v, nv, st * esize, ln * esize, rv);
		rc = xchg(c, right, sv, ns, left, rv, nr, NULL, NULL);
	}
	if (times != NULL)
		times->allgather_us += hvd__now_us() - t0;
	free(sv);
	free(tmp);
	return rc;
}

int hvd__ring_broadcast(const struct hvd__comm *c, void *buf, size_t len,
			int root)
{
	int n = c->size, pos = mod(c->rank - root, n);
	int next = mod(c->rank + 1, n), prev = mod(c->rank - 1, n);
	size_t nseg = (len + BCAST_SEGMENT - 1) / BCAST_SEGMENT, k;
	char *b = buf;
	int rc = HVD_OK;

	if (n == 1 || len == 0)
		return HVD_OK;
	/* Step k: receive segment k, forward segment k-1 (chain: the last
	 * rank forwards nothing, the root receives nothing). */
	for (k = 0; k <= nseg && rc == HVD_OK; k++) {
		size_t soff = (k - 1) * BCAST_SEGMENT, roff = k * BCAST_SEGMENT;
		size_t slen = 0, rlen = 0;

		if (k >= 1 && pos != n - 1)
			slen = len - soff < BCAST_SEGMENT ? len - soff
							  : BCAST_SEGMENT;
		if (k < nseg && pos != 0)
			rlen = len - roff < BCAST_SEGMENT ? len - roff
							  : BCAST_SEGMENT;
		if (slen == 0 && rlen == 0)
			continue;
		rc = c->ops->sendrecv(c->t, next, b + (slen ? soff : 0), slen,
				      prev, b + (rlen ? roff : 0), rlen, NULL,
				      NULL);
	}
	return rc;
}

int hvd__ring_allgatherv(const struct hvd__comm *c, void *out,
			 const size_t *len)
{
	int n = c->size, right = mod(c->rank + 1, n),
	    left = mod(c->rank - 1, n);
	size_t *off;
	char *o = out;
	int s, r, rc = HVD_OK;

	if (n == 1)
		return HVD_OK;
	off = malloc((size_t)n * sizeof(*off));
	if (off == NULL)
		return HVD_ENOMEM;
	off[0] = 0;
	for (r = 1; r < n; r++)
		off[r] = off[r - 1] + len[r - 1];
	for (s = 0; s < n - 1 && rc == HVD_OK; s++) {
		int sb = mod(c->rank - s, n), rb = mod(c->rank - s - 1, n);

		rc = c->ops->sendrecv(c->t, right, o + off[sb], len[sb], left,
				      o + off[rb], len[rb], NULL, NULL);
	}
	free(off);
	return rc;
}
