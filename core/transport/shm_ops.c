/* shm_ops.c: the collectives over the host's shared segment (shm.h):
 * allreduce, reduce-scatter, exchange, broadcast, allgather and
 * alltoall, each in slot-sized chunks between barriers. */
#include <stdlib.h>
#include <string.h>

#include "transport/shm.h"
#include "transport/shm_seg.h"
#include "util/internal.h"
#include "util/reduce.h"

/* An allreduce on one host up to this size takes one barrier, not two:
 * every rank reduces all of it (reading it from every slot costs less
 * than a barrier's wait). */
#define SMALL_BYTES (16u << 10)
#define DIRECT_BLOCK (32u << 10) /* reduce_into's, from the cache */

/* Copy bytes [off, off + len) of the pieces into dst (gather) or from
 * src into them (scatter). */
static void pieces_copy(const struct iovec *v, int k, size_t off, size_t len,
			void *dst, const void *src)
{
	size_t at = 0, done = 0;
	int j;

	for (j = 0; j < k && done < len; j++) {
		size_t b = v[j].iov_len, lo, n;

		if (at + b <= off) {
			at += b;
			continue;
		}
		lo = off + done - at;
		n = b - lo < len - done ? b - lo : len - done;
		if (dst != NULL)
			hvd__copy((char *)dst + done,
				  (char *)v[j].iov_base + lo, n);
		else if (src != NULL)
			hvd__copy((char *)v[j].iov_base + lo,
				  (const char *)src + done, n);
		done += n;
		at += b;
	}
}

/* This rank's slice [lo, hi) of the chunk in set, reduced across the
 * local slots and then, with across, across hosts: an average sums, and
 * divides once by every rank's count. */
static int reduce_slice(struct hvd__shm *s, const struct hvd__across *across,
			unsigned set, size_t lo, size_t hi, enum hvd_dtype t,
			enum hvd_op op)
{
	size_t es = hvd__dtype_size(t);
	unsigned char *mine = slot_of(s, set, s->lrank) + lo * es;
	enum hvd_op sum = op == HVD_AVERAGE ? HVD_SUM : op;
	int p, rc = HVD_OK;
	int hosts = across != NULL && across->hosts > 1 ? across->hosts : 1;

	if (hi <= lo)
		return HVD_OK;
	for (p = 0; p < s->lsize; p++)
		if (p != s->lrank)
			hvd__reduce(mine, slot_of(s, set, p) + lo * es, hi - lo,
				    t, sum);
	if (hosts > 1)
		rc = across->allreduce(across->arg, mine, hi - lo, t, sum);
	if (rc == HVD_OK && op == HVD_AVERAGE)
		hvd__divide(mine, hi - lo, t, s->lsize * hosts);
	return rc;
}

/* reduce_slice on one host, in the pieces: the peers' slots reduced into
 * this rank's bytes [from, to) of the chunk at off (the same bits), a
 * block at a time, each copied on from the cache to the slot for them. */
static void reduce_into(struct hvd__shm *s, unsigned set, const struct iovec *v,
			int k, size_t off, size_t from, size_t to,
			enum hvd_dtype t, enum hvd_op op)
{
	size_t es = hvd__dtype_size(t), at = 0, x, n, end;
	enum hvd_op sum = op == HVD_AVERAGE ? HVD_SUM : op;
	int j, p;

	for (j = 0; j < k && at < to; at += v[j].iov_len, j++) {
		end = at + v[j].iov_len < to ? at + v[j].iov_len : to;
		for (x = at > from ? at : from; x < end; x += n) {
			unsigned char *d = (unsigned char *)v[j].iov_base;

			d += x - at;
			n = end - x < DIRECT_BLOCK ? end - x : DIRECT_BLOCK;
			for (p = 0; p < s->lsize; p++)
				if (p != s->lrank)
					hvd__reduce(
						d, slot_of(s, set, p) + x - off,
						n / es, t, sum);
			if (op == HVD_AVERAGE)
				hvd__divide(d, n / es, t, s->lsize);
			hvd__copy(slot_of(s, set, s->lrank) + x - off, d, n);
		}
	}
}

size_t hvd__shm_slot_bytes(const struct hvd__shm *s)
{
	return s->slot;
}

int hvd__shm_rank(const struct hvd__shm *s)
{
	return s->lrank;
}

int hvd__shm_size(const struct hvd__shm *s)
{
	return s->lsize;
}

/* The set is written again two exchanges later, after a barrier that no
 * peer reaches before it has read it. */
int hvd__shm_exchange(struct hvd__shm *s, const struct iovec *v, int k,
		      const unsigned char *const **slots, int timeout_ms)
{
	unsigned set = s->set;
	size_t total = 0;
	int j, p, rc;

	for (j = 0; j < k; j++)
		total += v[j].iov_len;
	if (total > s->slot)
		return HVD_EINVAL;
	s->set ^= 1;
	pieces_copy(v, k, 0, total, slot_of(s, set, s->lrank), NULL);
	rc = hvd__shm_barrier(s, timeout_ms);
	for (p = 0; p < s->lsize; p++)
		s->view[p] = slot_of(s, set, p);
	*slots = s->view;
	return rc;
}

void hvd__shm_reduce_slots(const struct hvd__shm *s,
			   const unsigned char *const *slots, size_t off,
			   void *dst, size_t count, enum hvd_dtype t,
			   enum hvd_op op)
{
	enum hvd_op sum = op == HVD_AVERAGE ? HVD_SUM : op;
	int p;

	if (count == 0) /* dst may then be NULL */
		return;
	hvd__copy(dst, slots[0] + off, count * hvd__dtype_size(t));
	for (p = 1; p < s->lsize; p++)
		hvd__reduce(dst, slots[p] + off, count, t, sum);
	if (op == HVD_AVERAGE)
		hvd__divide(dst, count, t, s->lsize);
}

/* allreduce_keep of at most one slot on one host, in one exchange: every
 * rank reduces the bytes it keeps from every slot, in the same order, so
 * every rank has the same bits. */
static int allreduce_small(struct hvd__shm *s, const struct iovec *v, int k,
			   enum hvd_dtype t, enum hvd_op op, int timeout_ms,
			   size_t keep_lo, size_t keep_hi)
{
	size_t es = hvd__dtype_size(t), at = 0;
	const unsigned char *const *slots;
	int j, rc;

	rc = hvd__shm_exchange(s, v, k, &slots, timeout_ms);
	for (j = 0; j < k && rc == HVD_OK; at += v[j].iov_len, j++) {
		size_t lo = at > keep_lo ? at : keep_lo;
		size_t hi = at + v[j].iov_len < keep_hi ? at + v[j].iov_len
							: keep_hi;
		unsigned char *dst = (unsigned char *)v[j].iov_base + (lo - at);

		if (hi <= lo)
			continue;
		hvd__shm_reduce_slots(s, slots, lo, dst, (hi - lo) / es, t, op);
	}
	return rc;
}

/* The allreduce of the pieces, every rank copying out only the bytes of
 * [keep_lo, keep_hi) of the result. */
static int allreduce_keep(struct hvd__shm *s, const struct hvd__across *across,
			  const struct iovec *v, int k, enum hvd_dtype t,
			  enum hvd_op op, int timeout_ms, size_t keep_lo,
			  size_t keep_hi)
{
	size_t es = hvd__dtype_size(t), total = 0, chunk, off;
	int j, p, rc = HVD_OK;

	for (j = 0; j < k; j++)
		total += v[j].iov_len;
	if (total <= SMALL_BYTES && total <= s->slot &&
	    (across == NULL || across->hosts <= 1))
		return allreduce_small(s, v, k, t, op, timeout_ms, keep_lo,
				       keep_hi);
	chunk = s->slot - s->slot % es;
	for (off = 0; off < total && rc == HVD_OK; off += chunk) {
		size_t len = total - off < chunk ? total - off : chunk;
		size_t ne = len / es;
		size_t mlo = ne * (size_t)s->lrank / (size_t)s->lsize;
		size_t mhi = ne * (size_t)(s->lrank + 1) / (size_t)s->lsize;
		unsigned set = s->set;
		unsigned char *slot = slot_of(s, set, s->lrank);
		/* reduce_into where the slice's result is kept (one host). */
		bool direct = (across == NULL || across->hosts <= 1) &&
			      mhi > mlo && off + mlo * es >= keep_lo &&
			      off + mhi * es <= keep_hi;

		s->set ^= 1;
		if (direct) { /* the peers' slices only */
			pieces_copy(v, k, off, mlo * es, slot, NULL);
			pieces_copy(v, k, off + mhi * es, len - mhi * es,
				    slot + mhi * es, NULL);
		} else {
			pieces_copy(v, k, off, len, slot, NULL);
		}
		rc = hvd__shm_barrier(s, timeout_ms);
		if (rc == HVD_OK && direct)
			reduce_into(s, set, v, k, off, off + mlo * es,
				    off + mhi * es, t, op);
		else if (rc == HVD_OK)
			rc = reduce_slice(s, across, set, mlo, mhi, t, op);
		if (rc == HVD_OK)
			rc = hvd__shm_barrier(s, timeout_ms);
		for (p = 0; p < s->lsize && rc == HVD_OK; p++) {
			size_t lo =
				off + ne * (size_t)p / (size_t)s->lsize * es;
			size_t hi = off + ne * (size_t)(p + 1) /
						  (size_t)s->lsize * es;

			lo = lo > keep_lo ? lo : keep_lo;
			hi = hi < keep_hi ? hi : keep_hi;
			if (hi > lo && !(direct && p == s->lrank))
				pieces_copy(v, k, lo, hi - lo, NULL,
					    slot_of(s, set, p) + (lo - off));
		}
	}
	return rc;
}

int hvd__shm_allreduce_v(struct hvd__shm *s, const struct hvd__across *across,
			 const struct iovec *v, int k, enum hvd_dtype t,
			 enum hvd_op op, int timeout_ms)
{
	return allreduce_keep(s, across, v, k, t, op, timeout_ms, 0, SIZE_MAX);
}

int hvd__shm_reduce_keep(struct hvd__shm *s, const struct hvd__across *across,
			 void *buf, size_t len, size_t keep_lo, size_t keep_hi,
			 enum hvd_dtype t, enum hvd_op op, int timeout_ms)
{
	struct iovec one = {buf, len};

	return allreduce_keep(s, across, &one, 1, t, op, timeout_ms, keep_lo,
			      keep_hi);
}

int hvd__shm_broadcast(struct hvd__shm *s, void *buf, size_t len, int root,
		       int timeout_ms)
{
	size_t chunk = (size_t)s->lsize * s->slot, off;
	int rc = HVD_OK;

	/* The slots of a set lie end to end: a chunk fills one set. */
	for (off = 0; off < len && rc == HVD_OK; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;
		unsigned char *set = slot_of(s, s->set, 0);

		s->set ^= 1;
		if (s->lrank == root)
			hvd__copy(set, (char *)buf + off, n);
		rc = hvd__shm_barrier(s, timeout_ms);
		if (rc == HVD_OK && s->lrank != root)
			hvd__copy((char *)buf + off, set, n);
	}
	return rc;
}

int hvd__shm_allgatherv(struct hvd__shm *s, void *out, const size_t *len,
			int timeout_ms)
{
	size_t most = 0, mine = 0, off, at;
	int p, rc = HVD_OK;

	for (p = 0; p < s->lsize; p++) {
		if (len[p] > most)
			most = len[p];
		if (p < s->lrank)
			mine += len[p];
	}
	/* Round by round, every rank's next slot-full of its block. */
	for (off = 0; off < most && rc == HVD_OK; off += s->slot) {
		unsigned set = s->set;

		s->set ^= 1;
		if (len[s->lrank] > off)
			hvd__copy(slot_of(s, set, s->lrank),
				  (char *)out + mine + off,
				  len[s->lrank] - off < s->slot
					  ? len[s->lrank] - off
					  : s->slot);
		rc = hvd__shm_barrier(s, timeout_ms);
		for (p = 0, at = 0; p < s->lsize && rc == HVD_OK;
		     at += len[p], p++)
			if (p != s->lrank && len[p] > off)
				hvd__copy((char *)out + at + off,
					  slot_of(s, set, p),
					  len[p] - off < s->slot ? len[p] - off
								 : s->slot);
	}
	return rc;
}

int hvd__shm_alltoallv(struct hvd__shm *s, const void *send, const size_t *sb,
		       const size_t *soff, void *out, const size_t *rb,
		       const size_t *roff, int timeout_ms)
{
	return hvd__shm_alltoallv_got(s, send, sb, soff, out, rb, roff,
				      timeout_ms, NULL, NULL);
}

int hvd__shm_alltoallv_got(struct hvd__shm *s, const void *send,
			   const size_t *sb, const size_t *soff, void *out,
			   const size_t *rb, const size_t *roff, int timeout_ms,
			   void (*got)(void *arg, size_t off, size_t len),
			   void *arg)
{
	/* Each slot holds one part per destination. */
	size_t part = s->slot / (size_t)s->lsize / 64 * 64, off;
	int64_t most = 0;
	struct iovec one = {&most, sizeof(most)};
	int p, me = s->lrank, rc;

	if (part == 0) /* slots under 64 bytes a rank: no round moves a byte */
		return HVD_EINVAL;
	for (p = 0; p < s->lsize; p++)
		if (p != me && (int64_t)sb[p] > most)
			most = (int64_t)sb[p];
	/* The rounds: as many as the largest block of any rank needs. */
	rc = hvd__shm_allreduce_v(s, NULL, &one, 1, HVD_INT64, HVD_MAX,
				  timeout_ms);
	for (off = 0; rc == HVD_OK && off < (size_t)most; off += part) {
		unsigned set = s->set;

		s->set ^= 1;
		for (p = 0; p < s->lsize; p++)
			if (p != me && sb[p] > off)
				hvd__copy(slot_of(s, set, me) +
						  (size_t)p * part,
					  (const char *)send + soff[p] + off,
					  sb[p] - off < part ? sb[p] - off
							     : part);
		rc = hvd__shm_barrier(s, timeout_ms);
		for (p = 0; p < s->lsize && rc == HVD_OK; p++)
			if (p != me && rb[p] > off)
				hvd__copy((char *)out + roff[p] + off,
					  slot_of(s, set, p) +
						  (size_t)me * part,
					  rb[p] - off < part ? rb[p] - off
							     : part);
		if (rc == HVD_OK && got != NULL)
			got(arg, off, part);
	}
	return rc;
}
