/* algo/adasum.c: Adasum by vector halving and distance doubling
 * (adasum.h explains). */
#include <stdlib.h>
#include <string.h>

#include "algo/adasum.h"
#include "util/internal.h"
#include "util/reduce.h"

/* Levels at most: 2^31 ranks. */
#define LEVELS 31

bool hvd__adasum_size_ok(int size)
{
	return size > 0 && (size & (size - 1)) == 0;
}

/* One exchange with rank p: slen bytes out, rlen in. */
static int swap(const struct hvd__comm *c, int p, const void *s, size_t slen,
		void *r, size_t rlen)
{
	return c->ops->sendrecv(c->t, p, s, slen, p, r, rlen, NULL, NULL);
}

/* Where tensor i's elements [off, off + count) meet [lo, lo + len):
 * *from and the number of elements. */
static size_t overlap(size_t off, size_t count, size_t lo, size_t len,
		      size_t *from)
{
	size_t a = off > lo ? off : lo;
	size_t b = off + count < lo + len ? off + count : lo + len;

	*from = a;
	return b > a ? b - a : 0;
}

/* Each tensor's a.b, a.a and b.b over [lo, lo + len), part of the range
 * this rank keeps from keep (mine in buf; the partner's copy in theirs,
 * from keep on), added into v. upper: this rank's data is the block's
 * b. */
static void dots(const char *buf, const char *theirs, size_t keep, size_t lo,
		 size_t len, const size_t *counts, size_t n, enum hvd_dtype t,
		 bool upper, double *v)
{
	size_t es = hvd__dtype_size(t), off, i, from, m;

	for (i = 0, off = 0; i < n && off < lo + len; off += counts[i++]) {
		m = overlap(off, counts[i], lo, len, &from);
		if (m > 0) {
			const char *mine = buf + from * es,
				   *other = theirs + (from - keep) * es;

			hvd__dots(upper ? other : mine, upper ? mine : other, m,
				  t, v + 3 * i);
		}
	}
}

/* The partner's half as it arrives: the dot products of what has come,
 * taken while it is in cache and the rest is still on its way. */
struct arrival {
	const char *buf, *theirs;
	size_t keep; /* where the kept range starts */
	const size_t *counts;
	size_t n;
	enum hvd_dtype t;
	bool upper;
	double *v;
	size_t seen; /* elements whose share is in v */
};

static void arrived(void *arg, size_t done)
{
	struct arrival *a = arg;
	size_t upto = done / hvd__dtype_size(a->t);

	if (upto > a->seen)
		dots(a->buf, a->theirs, a->keep, a->keep + a->seen,
		     upto - a->seen, a->counts, a->n, a->t, a->upper, a->v);
	a->seen = upto > a->seen ? upto : a->seen;
}

/* Level k: this rank keeps one half of [*lo, *lo + *len), which becomes
 * its range, and gives the other; the dot products as the partner's half
 * arrives, then the sums over the block of 2^(k+1) ranks, and each
 * tensor's combination. v holds 6 doubles a tensor. */
static int level(const struct hvd__comm *c, char *buf, char *theirs, size_t *lo,
		 size_t *len, const size_t *counts, size_t n, enum hvd_dtype t,
		 int k, double *v)
{
	size_t es = hvd__dtype_size(t), off, i, from, m;
	bool upper = (c->rank >> k) & 1;
	size_t first = *len / 2, keep = upper ? *len - first : first;
	size_t keep_lo = upper ? *lo + first : *lo;
	size_t give_lo = upper ? *lo : *lo + first, give = *len - keep;
	struct arrival a = {buf, theirs, keep_lo, counts, n, t, upper, v, 0};
	int p = c->rank ^ (1 << k), j, rc;
	double *in = v + 3 * n;

	memset(v, 0, 3 * n * sizeof(*v));
	*lo = keep_lo;
	*len = keep;
	rc = c->ops->sendrecv(c->t, p, buf + give_lo * es, give * es, p, theirs,
			      keep * es, arrived, &a);
	if (rc == HVD_OK)
		arrived(&a, keep * es); /* what no progress report covered */
	for (j = 0; j <= k && rc == HVD_OK; j++) {
		rc = swap(c, c->rank ^ (1 << j), v, 3 * n * sizeof(*v), in,
			  3 * n * sizeof(*v));
		for (i = 0; rc == HVD_OK && i < 3 * n; i++)
			v[i] += in[i];
	}
	for (i = 0, off = 0; rc == HVD_OK && i < n; off += counts[i++]) {
		double ab = v[3 * i], aa = v[3 * i + 1], bb = v[3 * i + 2];
		double ca = aa > 0 ? 1 - ab / (2 * aa) : 1;
		double cb = bb > 0 ? 1 - ab / (2 * bb) : 1;

		m = overlap(off, counts[i], keep_lo, keep, &from);
		if (m > 0)
			hvd__axpby(buf + from * es,
				   theirs + (from - keep_lo) * es, m, t,
				   upper ? cb : ca, upper ? ca : cb);
	}
	return rc;
}

int hvd__adasum(const struct hvd__comm *c, void *buf, void *scratch,
		const size_t *counts, size_t n, enum hvd_dtype t,
		struct hvd__ring_times *times)
{
	size_t es = hvd__dtype_size(t), lo = 0, len = 0, i;
	size_t was_lo[LEVELS], was_len[LEVELS];
	char *b = buf;
	double *v;
	long long t0 = hvd__now_us(), t1;
	int k, rc = HVD_OK;

	if (c->size == 1 || n == 0)
		return HVD_OK;
	if (!hvd__adasum_size_ok(c->size))
		return HVD_ENOTSUP;
	v = malloc(6 * n * sizeof(*v));
	if (v == NULL)
		return HVD_ENOMEM;
	for (i = 0; i < n; i++)
		len += counts[i];
	for (k = 0; (1 << k) < c->size && rc == HVD_OK; k++) {
		was_lo[k] = lo;
		was_len[k] = len;
		rc = level(c, b, scratch, &lo, &len, counts, n, t, k, v);
	}
	free(v);
	t1 = hvd__now_us();
	while (--k >= 0 && rc == HVD_OK) {
		bool upper = (c->rank >> k) & 1;
		size_t other_lo = upper ? was_lo[k] : lo + len;

		rc = swap(c, c->rank ^ (1 << k), b + lo * es, len * es,
			  b + other_lo * es, (was_len[k] - len) * es);
		lo = was_lo[k];
		len = was_len[k];
	}
	if (times != NULL) {
		times->reduce_scatter_us += t1 - t0;
		times->allgather_us += hvd__now_us() - t1;
	}
	return rc;
}
