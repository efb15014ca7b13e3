/* algo/adasum.c: Adasum by vector halving and distance doubling
 * (adasum.h explains). */
#include <stdlib.h>
#include <string.h>

#include "algo/adasum.h"
#include "util/internal.h"
#include "util/reduce.h"

/* Levels at most: 2^31 ranks. */
#define LEVELS 31

/* The largest power of two not above n (n > 0): the ranks that halve;
 * the others fold into them first (adasum.h). */
static int halving_size(int n)
{
	int p = 1;

	while (p <= n / 2)
		p *= 2;
	return p;
}

bool hvd__adasum_hosts_first(int L, int H)
{
	return L == 1 || H == 1 || (L * H & (L * H - 1)) == 0;
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

/* Each tensor's a.b, a.a and b.b over elements [x0, x1) of the tensors
 * laid end to end, added into v (3 doubles a tensor): element x of a at
 * a + (x - a_at) * es, of b at b + (x - b_at) * es. */
static void tensor_dots(const char *a, size_t a_at, const char *b, size_t b_at,
			size_t x0, size_t x1, const size_t *counts, size_t n,
			enum hvd_dtype t, double *v)
{
	size_t es = hvd__dtype_size(t), off, i, from, m;

	for (i = 0, off = 0; i < n && off < x1; off += counts[i++]) {
		m = overlap(off, counts[i], x0, x1 - x0, &from);
		if (m > 0)
			hvd__dots(a + (from - a_at) * es,
				  b + (from - b_at) * es, m, t, v + 3 * i);
	}
}

/* Each tensor over elements [x0, x1) combined on its sums in v (a.b,
 * a.a, b.b): x becomes ca x + cb y, x being a (upper: b, and y a), where
 * a zero vector's coefficient is 1. Element addressing as tensor_dots'. */
static void combine(char *x, size_t x_at, const char *y, size_t y_at,
		    bool upper, size_t x0, size_t x1, const size_t *counts,
		    size_t n, enum hvd_dtype t, const double *v)
{
	size_t es = hvd__dtype_size(t), off, i, from, m;

	for (i = 0, off = 0; i < n && off < x1; off += counts[i++]) {
		const double *d = v + 3 * i;
		double ca = d[1] > 0 ? 1 - d[0] / (2 * d[1]) : 1;
		double cb = d[2] > 0 ? 1 - d[0] / (2 * d[2]) : 1;

		m = overlap(off, counts[i], x0, x1 - x0, &from);
		if (m > 0)
			hvd__axpby(x + (from - x_at) * es,
				   y + (from - y_at) * es, m, t,
				   upper ? cb : ca, upper ? ca : cb);
	}
}

/* v (count doubles) summed over the host's ranks: the segment's own
 * allreduce, whose every rank gets the same bits. */
static int shm_sum(struct hvd__shm *s, double *v, size_t count, int timeout_ms)
{
	struct iovec io = {v, count * sizeof(*v)};

	return hvd__shm_allreduce_v(s, NULL, &io, 1, HVD_FLOAT64, HVD_SUM,
				    timeout_ms);
}

/* v summed over the ranks of h's host, the same bits on each. */
static int host_sum(const struct hvd__adasum_host *h, double *v, size_t count)
{
	if (h->shm != NULL)
		return shm_sum(h->shm, v, count, h->timeout_ms);
	return h->sum != NULL ? h->sum(h->arg, v, count) : HVD_EINVAL;
}

/* The partner's half as it arrives: the dot products of what has come,
 * taken while it is in cache and the rest is still on its way. */
struct arrival {
	const char *buf, *theirs; /* mine (from 0), the partner's (from keep) */
	size_t keep;		  /* where the kept range starts */
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

	if (upto > a->seen && a->upper)
		tensor_dots(a->theirs, a->keep, a->buf, 0, a->keep + a->seen,
			    a->keep + upto, a->counts, a->n, a->t, a->v);
	else if (upto > a->seen)
		tensor_dots(a->buf, 0, a->theirs, a->keep, a->keep + a->seen,
			    a->keep + upto, a->counts, a->n, a->t, a->v);
	a->seen = upto > a->seen ? upto : a->seen;
}

/* One halving over c: each tensor's dot products at each level summed
 * over the block's ranks, and first, with host (hierarchical: this rank
 * holds a slice of its host's buffer, the other slices held by its host's
 * ranks), over the host's ranks. */
struct halving {
	const struct hvd__comm *c;
	const struct hvd__adasum_host *host; /* or NULL */
	const size_t *counts;
	size_t n;
	enum hvd_dtype t;
	double *v; /* 6 doubles a tensor */
};

/* Level k with partner p (rank ^ 2^k; k < 0: the fold, p the rank it
 * pairs with): this rank keeps one half of [*lo, *lo + *len), which
 * becomes its range, and gives the other; the dot products as the
 * partner's half arrives, then the sums over the block of 2^(k+1) ranks
 * (the fold: over the pair), and each tensor's combination. The lower
 * rank of the two holds a, the upper b. */
static int level(const struct halving *h, char *buf, char *theirs, size_t *lo,
		 size_t *len, int p, int k)
{
	const struct hvd__comm *c = h->c;
	const size_t *counts = h->counts;
	size_t n = h->n;
	enum hvd_dtype t = h->t;
	double *v = h->v;
	size_t es = hvd__dtype_size(t), i;
	bool upper = p < c->rank;
	size_t first = *len / 2, keep = upper ? *len - first : first;
	size_t keep_lo = upper ? *lo + first : *lo;
	size_t give_lo = upper ? *lo : *lo + first, give = *len - keep;
	struct arrival a = {buf, theirs, keep_lo, counts, n, t, upper, v, 0};
	int j, rc;
	double *in = v + 3 * n;

	memset(v, 0, 3 * n * sizeof(*v));
	*lo = keep_lo;
	*len = keep;
	rc = c->ops->sendrecv(c->t, p, buf + give_lo * es, give * es, p, theirs,
			      keep * es, arrived, &a);
	if (rc == HVD_OK)
		arrived(&a, keep * es); /* what no progress report covered */
	if (rc == HVD_OK && h->host != NULL)
		rc = host_sum(h->host, v, 3 * n);
	for (j = k < 0 ? -1 : 0; j <= k && rc == HVD_OK; j++) {
		rc = swap(c, j < 0 ? p : c->rank ^ (1 << j), v,
			  3 * n * sizeof(*v), in, 3 * n * sizeof(*v));
		for (i = 0; rc == HVD_OK && i < 3 * n; i++)
			v[i] += in[i];
	}
	if (rc == HVD_OK)
		combine(buf, 0, theirs, keep_lo, upper, keep_lo, keep_lo + keep,
			counts, n, t, v);
	return rc;
}

/* The fold (adasum.h): this rank and p, one of them a rank past the
 * halving's, combine their buffers of *len elements as a level of two;
 * then the upper one's half goes to the lower, which holds the pair's
 * whole combination ([0, *len) again). */
static int fold(const struct halving *h, char *b, char *scratch, size_t *lo,
		size_t *len, int p)
{
	const struct hvd__comm *c = h->c;
	size_t es = hvd__dtype_size(h->t), total = *len;
	int rc = level(h, b, scratch, lo, len, p, -1);

	if (rc != HVD_OK)
		return rc;
	if (p < c->rank) /* the upper one: its half to the lower */
		return c->ops->sendrecv(c->t, p, b + *lo * es, *len * es, p,
					NULL, 0, NULL, NULL);
	rc = c->ops->sendrecv(c->t, p, NULL, 0, p, b + *len * es,
			      (total - *len) * es, NULL, NULL);
	*len = total;
	return rc;
}

/* The halving over h->c of buf (the tensors end to end), the gathering
 * back; scratch holds half of buf's elements, rounded up. Over a number
 * of ranks that is not a power of two, the ranks past the largest power
 * of two below it fold in first, and get the result whole at the end. */
static int halve(struct halving *h, char *b, char *scratch,
		 struct hvd__ring_times *times)
{
	const struct hvd__comm *c = h->c;
	size_t es = hvd__dtype_size(h->t), lo = 0, len = 0, total, i;
	size_t was_lo[LEVELS], was_len[LEVELS];
	long long t0 = hvd__now_us(), t1;
	int P = halving_size(c->size), k = 0, rc = HVD_OK;
	int pair = c->rank >= P		   ? c->rank - P
		   : c->rank + P < c->size ? c->rank + P
					   : -1;

	h->v = malloc(6 * (h->n > 0 ? h->n : 1) * sizeof(*h->v));
	if (h->v == NULL)
		return HVD_ENOMEM;
	for (i = 0; i < h->n; i++)
		len += h->counts[i];
	total = len;
	if (pair >= 0)
		rc = fold(h, b, scratch, &lo, &len, pair);
	for (; c->rank < P && (1 << k) < P && rc == HVD_OK; k++) {
		was_lo[k] = lo;
		was_len[k] = len;
		rc = level(h, b, scratch, &lo, &len, c->rank ^ (1 << k), k);
	}
	free(h->v);
	t1 = hvd__now_us();
	while (--k >= 0 && rc == HVD_OK) {
		bool upper = (c->rank >> k) & 1;
		size_t other_lo = upper ? was_lo[k] : lo + len;

		rc = swap(c, c->rank ^ (1 << k), b + lo * es, len * es,
			  b + other_lo * es, (was_len[k] - len) * es);
		lo = was_lo[k];
		len = was_len[k];
	}
	/* The ranks that folded in get the result from their pair. */
	if (rc == HVD_OK && pair >= 0)
		rc = c->rank < P ? c->ops->sendrecv(c->t, pair, b, total * es,
						    pair, NULL, 0, NULL, NULL)
				 : c->ops->sendrecv(c->t, pair, NULL, 0, pair,
						    b, total * es, NULL, NULL);
	if (times != NULL) {
		times->reduce_scatter_us += t1 - t0;
		times->allgather_us += hvd__now_us() - t1;
	}
	return rc;
}

int hvd__adasum(const struct hvd__comm *c, void *buf, void *scratch,
		const size_t *counts, size_t n, enum hvd_dtype t,
		struct hvd__ring_times *times)
{
	struct halving h = {c, NULL, counts, n, t, NULL};

	if (c->size == 1 || n == 0)
		return HVD_OK;
	return halve(&h, buf, scratch, times);
}

/* Rank r's slice of total elements on L ranks: [cut(r), cut(r + 1)). */
static size_t cut(size_t total, int r, int L)
{
	return total / (size_t)L * (size_t)r +
	       total % (size_t)L * (size_t)r / (size_t)L;
}

/* The tree through a segment of L ranks, P of them halving (the rest
 * fold in first): this rank's slice of rank p's buffer at row[p]. */
struct tree {
	char *const *row;
	int me, L, P;
};

/* Where this rank keeps its slice of the combination of the buffers of
 * ranks [base, base + w) of the P (a rank folded in standing with its
 * pair, p - P): in its own buffer's row (row[me]) when it is one of them,
 * else in the first one's. */
static char *held(const struct tree *r, int base, int w)
{
	int v = r->me >= r->P ? r->me - r->P : r->me;

	return r->row[v >= base && v < base + w ? r->me : base];
}

/* Level w's blocks: w = 0 the fold (L - P pairs of ranks q and P + q),
 * else P / 2w blocks of 2w ranks. */
static size_t blocks_of(const struct tree *r, int w)
{
	return w == 0 ? (size_t)(r->L - r->P) : (size_t)(r->P / (2 * w));
}

/* Where this rank keeps its slice of block q's a and b at level w. */
static void block(const struct tree *r, int w, size_t q, char **a, char **b)
{
	int base = 2 * w * (int)q;

	*a = w == 0 ? r->row[q] : held(r, base, w);
	*b = w == 0 ? r->row[r->P + (int)q] : held(r, base + w, w);
}

/* Level w's dot products and norms of each block's two halves (see
 * shm_level), over elements [x0, x1) of this rank's slice [lo, hi),
 * added into v. */
static void block_dots(const struct tree *r, int w, size_t lo, size_t x0,
		       size_t x1, const size_t *counts, size_t n,
		       enum hvd_dtype t, double *v)
{
	size_t q, blocks = blocks_of(r, w);
	char *a, *b;

	for (q = 0; q < blocks; q++) {
		block(r, w, q, &a, &b);
		tensor_dots(a, lo, b, lo, x0, x1, counts, n, t, v + 3 * q * n);
	}
}

/* The first level's (w) dot products taken as the slices arrive (the
 * alltoall's rounds), while they are in cache. */
struct first {
	const struct tree *r;
	int w;
	size_t lo, hi; /* this rank's slice, in elements */
	const size_t *counts;
	size_t n;
	enum hvd_dtype t;
	double *v;
};

static void first_got(void *arg, size_t off, size_t len)
{
	const struct first *f = arg;
	size_t es = hvd__dtype_size(f->t), x0 = f->lo + off / es;
	size_t x1 = f->lo + (off + len) / es;

	if (x1 > f->hi)
		x1 = f->hi;
	if (x1 > x0)
		block_dots(f->r, f->w, f->lo, x0, x1, f->counts, f->n, f->t,
			   f->v);
}

/* Level w (0: the fold; 1, 2, 4, ...) of the tree on this rank's slice
 * [lo, hi) of every rank's buffer: in every block, the combination of
 * its a with its b, each tensor on its dot product and norms over the
 * whole tensor (the ranks' sums of their slices'; this rank's already in
 * v where dotted), into a's row or, where this rank's own row holds b,
 * into b's. v: 3 doubles a tensor a block. */
static int shm_level(struct hvd__shm *s, const struct tree *r, size_t lo,
		     size_t hi, const size_t *counts, size_t n,
		     enum hvd_dtype t, int w, bool dotted, double *v,
		     int timeout_ms)
{
	size_t blocks = blocks_of(r, w), q;
	int rc;

	if (!dotted) {
		memset(v, 0, 3 * n * blocks * sizeof(*v));
		block_dots(r, w, lo, lo, hi, counts, n, t, v);
	}
	rc = shm_sum(s, v, 3 * n * blocks, timeout_ms);
	for (q = 0; rc == HVD_OK && q < blocks; q++) {
		char *a, *b;
		bool upper;

		block(r, w, q, &a, &b);
		upper = b == r->row[r->me];
		combine(upper ? b : a, lo, upper ? a : b, lo, upper, lo, hi,
			counts, n, t, v + 3 * q * n);
	}
	return rc;
}

size_t hvd__adasum_shm_scratch(const struct hvd__shm *s, size_t total)
{
	size_t L = (size_t)hvd__shm_size(s);

	return (L > 1 ? L - 1 : 1) * ((total + L - 1) / L);
}

/* The slices: this rank's [lo, hi), rank p's length in bytes into len,
 * and where each rank's slice of this rank's buffer lies into off; row[p]
 * where this rank keeps its slice of rank p's buffer (its own in place,
 * the others' in scratch, stride elements apart). */
static void slices(size_t total, int L, int me, size_t es, char *buf,
		   char *scratch, size_t *len, size_t *off, char **row)
{
	size_t stride = (total + (size_t)L - 1) / (size_t)L;
	int p;

	for (p = 0; p < L; p++) {
		off[p] = cut(total, p, L) * es;
		len[p] = cut(total, p + 1, L) * es - off[p];
		row[p] = p == me ? buf + off[p]
				 : scratch +
					   (size_t)(p - (p > me)) * stride * es;
	}
}

/* Each level's sums also over the host's ranks (their slices, together
 * the whole range), the tensors' counts clipped to this rank's slice. */
int hvd__adasum_hosts(const struct hvd__adasum_host *host,
		      const struct hvd__comm *cross, void *slice, void *scratch,
		      size_t lo, size_t count, const size_t *counts, size_t n,
		      enum hvd_dtype t, struct hvd__ring_times *times)
{
	size_t *clip, i, off, from;
	struct halving h = {cross, host, NULL, n, t, NULL};
	int rc;

	clip = malloc((n > 0 ? n : 1) * sizeof(*clip));
	if (clip == NULL)
		return HVD_ENOMEM;
	h.counts = clip;
	for (i = 0, off = 0; i < n; off += counts[i++])
		clip[i] = overlap(off, counts[i], lo, count, &from);
	rc = halve(&h, slice, scratch, times);
	free(clip);
	return rc;
}

int hvd__adasum_shm(struct hvd__shm *s, const struct hvd__comm *cross,
		    void *buf, void *scratch, const size_t *counts, size_t n,
		    enum hvd_dtype t, int timeout_ms,
		    struct hvd__ring_times *times)
{
	int L = hvd__shm_size(s), me = hvd__shm_rank(s), w, rc;
	int H = cross != NULL ? cross->size : 1;
	size_t es = hvd__dtype_size(t), total = 0, i, *len, *off, *rb, *roff;
	char **row;
	double *v;
	struct tree tree = {.me = me, .L = L, .P = halving_size(L)};
	int w0 = tree.P < L ? 0 : 1; /* the first level: the fold, if any */
	struct first first;
	struct hvd__adasum_host host = {.shm = s, .timeout_ms = timeout_ms};
	long long t0 = hvd__now_us(), t1;

	for (i = 0; i < n; i++)
		total += counts[i];
	if (L * H == 1 || total == 0)
		return HVD_OK;
	len = malloc(4 * (size_t)L * sizeof(*len));
	row = calloc((size_t)L, sizeof(*row));
	v = malloc((3 * n * (size_t)(L / 2) + 1) * sizeof(*v));
	if (len == NULL || row == NULL || v == NULL) {
		free(len);
		free(row);
		free(v);
		return HVD_ENOMEM;
	}
	off = len + L;
	rb = off + L;
	roff = rb + L;
	slices(total, L, me, es, buf, scratch, len, off, row);
	/* Rank p's slice of every buffer to rank p: row q from rank q. */
	for (w = 0; w < L; w++) {
		rb[w] = len[me];
		roff[w] = w == me ? 0 : (size_t)(row[w] - (char *)scratch);
	}
	tree.row = row;
	first = (struct first){.r = &tree,
			       .w = w0,
			       .lo = off[me] / es,
			       .hi = (off[me] + len[me]) / es,
			       .counts = counts,
			       .n = n,
			       .t = t,
			       .v = v};
	if (L > 1)
		memset(v, 0, 3 * n * (size_t)(L / 2) * sizeof(*v));
	rc = L > 1 ? hvd__shm_alltoallv_got(s, buf, len, off, scratch, rb, roff,
					    timeout_ms, first_got, &first)
		   : HVD_OK;
	for (w = w0; w < tree.P && rc == HVD_OK; w = w > 0 ? 2 * w : 1)
		rc = shm_level(s, &tree, off[me] / es, (off[me] + len[me]) / es,
			       counts, n, t, w, w == w0, v, timeout_ms);
	if (rc == HVD_OK && H > 1)
		rc = hvd__adasum_hosts(&host, cross, row[me], scratch,
				       off[me] / es, len[me] / es, counts, n, t,
				       NULL);
	t1 = hvd__now_us();
	/* This rank's own row holds its slice of the result (held()):
	 * every rank's, in rank order. */
	if (rc == HVD_OK && L > 1)
		rc = hvd__shm_allgatherv(s, buf, len, timeout_ms);
	if (times != NULL) {
		times->reduce_scatter_us += t1 - t0;
		times->allgather_us += hvd__now_us() - t1;
	}
	free(len);
	free(row);
	free(v);
	return rc;
}
