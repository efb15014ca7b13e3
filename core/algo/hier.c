/* hier.c: see hier.h. */
#include "algo/hier.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/rendezvous.h"
#include "proto/wire.h"
#include "algo/group.h"
#include "algo/ring.h"
#include "util/internal.h"
#include "util/reduce.h"

/* Bytes of one rank's slot in the shared segment, per slot set: a set
 * of SHM_SET_BYTES split among the host's ranks, within [SHM_SLOT_MIN,
 * SHM_SLOT_MAX] (the segment holds two sets). A collective moves a set's
 * worth between two barriers, and each barrier waits for the last of the
 * host's ranks: with more ranks than cores, for that rank to be given a
 * core again. With 256 KiB slots (the old fixed size), a 64 MiB allreduce
 * at np 4 on 2 cores took 512 barriers and 57 ms (median of 7); with 2
 * MiB slots, 37 ms. */
#define SHM_SET_BYTES (8u << 20)
#define SHM_SLOT_MIN (256u << 10)
#define SHM_SLOT_MAX (4u << 20)

/* lsize: 2 or more (a host of one rank has no segment). */
static size_t shm_slot(int lsize)
{
	size_t slot = SHM_SET_BYTES / (size_t)lsize;

	if (slot < SHM_SLOT_MIN)
		return SHM_SLOT_MIN;
	return slot > SHM_SLOT_MAX ? SHM_SLOT_MAX : slot;
}

/* What each rank tells the others: four u32. */
#define PLACE_LEN 16
struct place {
	uint32_t wish, lrank, lsize, host;
};

/* Every rank's place, in rank order. */
static int gather(const struct hvd__comm *comm, bool want, struct place *all)
{
	size_t n = (size_t)comm->size, *len = malloc(n * sizeof(*len)), i;
	uint8_t *buf = calloc(n, PLACE_LEN);
	struct wire_w w;
	struct wire_r r;
	int rc;

	if (len == NULL || buf == NULL) {
		free(len);
		free(buf);
		return HVD_ENOMEM;
	}
	for (i = 0; i < n; i++)
		len[i] = PLACE_LEN;
	wire_w_fixed(&w, buf + PLACE_LEN * (size_t)comm->rank, PLACE_LEN);
	wire_put_u32(&w, want ? 1 : 0);
	wire_put_u32(&w, (uint32_t)hvd__g.local_rank);
	wire_put_u32(&w, (uint32_t)hvd__g.local_size);
	wire_put_u32(&w, (uint32_t)hvd__g.cross_rank);
	rc = hvd__ring_allgatherv(comm, buf, len);
	wire_r_init(&r, buf, PLACE_LEN * n);
	for (i = 0; rc == HVD_OK && i < n; i++) {
		all[i].wish = wire_get_u32(&r);
		all[i].lrank = wire_get_u32(&r);
		all[i].lsize = wire_get_u32(&r);
		all[i].host = wire_get_u32(&r);
	}
	free(len);
	free(buf);
	return rc;
}

/* The ranks per host when every host runs the same number (then host h's
 * local rank l is rank at[h * L + l]), else 0, with why. */
static int uniform(const struct place *all, int size, int *at, const char **why)
{
	int L = (int)all[0].lsize, i;

	*why = NULL;
	for (i = 0; i < size; i++)
		if (!all[i].wish) {
			*why = "a rank has HVD_SHM=0";
			return 0;
		}
	for (i = 0; i < size; i++)
		if ((int)all[i].lsize != L) {
			*why = "the hosts run different numbers of ranks";
			return 0;
		}
	if (L < 1 || size % L != 0)
		return 0;
	for (i = 0; i < size; i++)
		at[i] = -1;
	for (i = 0; i < size; i++) {
		size_t k = (size_t)all[i].host * (size_t)L + all[i].lrank;

		if (all[i].lrank >= (uint32_t)L || k >= (size_t)size ||
		    at[k] >= 0) {
			*why = "the ranks' local and cross ranks do not tile the hosts";
			return 0;
		}
		at[k] = i;
	}
	return L;
}

/* This host's segment: the job's name, and the host's index, since two
 * hosts of a job may be one machine (-H localhost:2,127.0.0.1:2). */
static int open_segment(struct hvd__hier *h, int host, int lsize, int set)
{
	uint8_t secret[RDV_SECRET_LEN], key[RDV_SECRET_LEN];
	char base[RDV_SHM_NAME_LEN], name[RDV_SHM_NAME_LEN + 32];

	if (!rdv_secret_from_hex(getenv(wenv_vars[WENV_SECRET].name), secret))
		return HVD_EINVAL;
	/* An elastic generation's own (its key): the last one's may be in
	 * use yet by a rank that has not left it. */
	rdv_generation_key(secret, hvd__g.key_gen, key);
	rdv_shm_name(key, base);
	if (set == 0)
		snprintf(name, sizeof(name), "%s-%d", base, host);
	else /* a process set's own */
		snprintf(name, sizeof(name), "%s-%d-s%d", base, host, set);
	return hvd__shm_open(&h->shm, h->lrank, lsize, name, shm_slot(lsize),
			     hvd__start_timeout_ms());
}

/* The ring across hosts over the group (struct hvd__across). */
static int across_ring(void *arg, void *buf, size_t count, enum hvd_dtype t,
		       enum hvd_op op)
{
	return hvd__ring_allreduce(arg, buf, count, t, op);
}

/* Into *cross, local rank l's group across the H hosts (L ranks each,
 * host h's local rank l being comm's rank at[h * L + l]), this rank being
 * its member host; none where H is 1. */
static int cross_group(const struct hvd__comm *comm, const int *at, int L,
		       int H, int l, int host, struct hvd__comm *cross)
{
	int *members, h, rc;

	if (H < 2)
		return HVD_OK;
	members = calloc((size_t)H, sizeof(int));
	if (members == NULL)
		return HVD_ENOMEM;
	for (h = 0; h < H; h++)
		members[h] = at[h * L + l];
	rc = hvd__group_new(comm, members, H, host, cross);
	free(members);
	return rc;
}

/* With hi->lrank and hi->host set: the group across hosts of this local
 * rank, the segment of this host's ranks (named for its host in the job,
 * and its set, 0: the job), and hi's layout. H hosts of L ranks each, host
 * h's local rank l is comm's rank (*at)[h * L + l]: hi takes *at. */
static int share(struct hvd__hier *hi, const struct hvd__comm *comm, int **at,
		 int L, int H, int host, int set)
{
	int h, rc = cross_group(comm, *at, L, H, hi->lrank, hi->host,
				&hi->cross);

	if (rc == HVD_OK)
		rc = open_segment(hi, host, L, set);
	if (rc != HVD_OK)
		return rc;
	hi->in_order = true;
	for (h = 0; hi->in_order && h < L * H; h++)
		hi->in_order = (*at)[h] == h;
	hi->job = H == 1 && hi->in_order;
	hi->host_at = *at;
	*at = NULL;
	hi->lsize = L;
	hi->nhosts = H;
	hi->across = (struct hvd__across){
		.hosts = H, .allreduce = across_ring, .arg = &hi->cross};
	return HVD_OK;
}

int hvd__hier_start(struct hvd__hier *hi, const struct hvd__comm *comm,
		    bool want)
{
	int size = comm->size, L, H, i, rc;
	struct place *all = calloc((size_t)size, sizeof(*all));
	int *at = calloc((size_t)size, sizeof(int));
	const char *why;

	memset(hi, 0, sizeof(*hi));
	if (all == NULL || at == NULL) {
		rc = HVD_ENOMEM;
		goto out;
	}
	rc = gather(comm, want, all);
	if (rc != HVD_OK)
		goto out;
	for (i = 0, hi->one_a_host = hi->even = true; i < size; i++) {
		hi->one_a_host = hi->one_a_host && all[i].lsize == 1;
		hi->even = hi->even && all[i].lsize == all[0].lsize;
	}
	L = uniform(all, size, at, &why);
	if (L < 2) {
		if (why != NULL && comm->rank == 0 && hvd__g.local_size > 1)
			hvd__debug("no shared memory: %s", why);
		goto out;
	}
	H = size / L;
	hi->lrank = (int)all[comm->rank].lrank;
	hi->host = (int)all[comm->rank].host;
	rc = share(hi, comm, &at, L, H, hi->host, 0);
	if (rc == HVD_OK)
		hvd__debug(
			"shared memory: %zu bytes for %d local ranks%s, %d host%s",
			hvd__shm_bytes(hi->shm), L,
			H > 1 ? " (hierarchical collectives)" : "", H,
			H > 1 ? "s" : "");
	else if (!hvd__world_over()) /* a reset: the next world is joined */
		hvd__error(
			"rank %d: cannot share memory with the ranks of this host (%s); hvdrun --no-shared-memory (HVD_SHM=0) runs without it",
			comm->rank, hvd_strerror(rc));
out:
	free(all);
	free(at);
	return rc;
}

int hvd__hier_cross(const struct hvd__comm *comm, struct hvd__comm *cross,
		    int *L, int *H)
{
	int size = comm->size, rc;
	struct place *all = calloc((size_t)size, sizeof(*all));
	int *at = calloc((size_t)size, sizeof(int));
	const char *why;

	*L = 0;
	*H = 0;
	memset(cross, 0, sizeof(*cross));
	rc = all == NULL || at == NULL ? HVD_ENOMEM : gather(comm, true, all);
	if (rc == HVD_OK)
		*L = uniform(all, size, at, &why);
	if (rc == HVD_OK && *L > 1) {
		*H = size / *L;
		rc = cross_group(comm, at, *L, *H, (int)all[comm->rank].lrank,
				 (int)all[comm->rank].host, cross);
	}
	free(all);
	free(at);
	return rc;
}

int hvd__hier_subset(struct hvd__hier *hi, const struct hvd__hier *job,
		     const struct hvd__comm *comm, const int *ranks, int set)
{
	int L = job->lsize, H = job->nhosts, n = comm->size;
	int *cnt = calloc((size_t)H, sizeof(int));
	int *at = calloc((size_t)n, sizeof(int));
	int h, l, i, Ls = 0, Hs = 0, myhost = -1, rc = HVD_ENOMEM;

	memset(hi, 0, sizeof(*hi));
	if (cnt == NULL || at == NULL)
		goto out;
	/* The set's ranks on each host, in local rank order: what every
	 * rank knows alike from the job's layout, so all decide alike. */
	for (h = 0, i = 0; h < H; h++)
		for (l = 0; l < L; l++) {
			int r = job->host_at[h * L + l], k;

			for (k = 0; k < n && ranks[k] != r; k++)
				;
			if (k == n)
				continue;
			if (cnt[h] == 0)
				Hs++;
			if (k == comm->rank) {
				hi->lrank = cnt[h];
				hi->host = Hs - 1;
				myhost = h;
			}
			cnt[h]++;
			at[i++] = k;
		}
	for (h = 0; h < H; h++)
		if (cnt[h] > 0 && Ls == 0)
			Ls = cnt[h];
		else if (cnt[h] > 0 && cnt[h] != Ls)
			Ls = -1;
	rc = HVD_OK;
	if (Ls < 2) { /* the set's collectives run over TCP */
		memset(hi, 0, sizeof(*hi));
		goto out;
	}
	rc = share(hi, comm, &at, Ls, Hs, myhost, set);
	if (rc == HVD_OK)
		hvd__debug("process set %d: shared memory for %d local ranks, "
			   "%d host%s",
			   set, Ls, Hs, Hs > 1 ? "s" : "");
out:
	free(cnt);
	free(at);
	return rc;
}

void hvd__hier_stop(struct hvd__hier *h)
{
	hvd__shm_close(h->shm);
	free(h->host_at);
	if (h->cross.ops != NULL)
		h->cross.ops->close(h->cross.t);
	memset(h, 0, sizeof(*h));
}

/* Bytes [*off, *off + *len) of len bytes: local rank l's slice of L, cut
 * at cache lines. */
static void slice(size_t len, int L, int l, size_t *off, size_t *n)
{
	size_t step = (len / (size_t)L + 63) / 64 * 64;
	size_t lo = step * (size_t)l, hi = lo + step;

	lo = lo < len ? lo : len;
	hi = hi < len ? hi : len;
	*off = lo;
	*n = hi - lo;
}

int hvd__hier_broadcast(struct hvd__hier *hi, void *buf, size_t len, int root)
{
	int L = hi->lsize, at = 0, rh, rl;
	int me = hi->lrank, host = hi->host, l, rc = HVD_OK;
	int ms = hvd__transport_timeout_ms();
	size_t *part = calloc((size_t)L, sizeof(*part)), off = 0, mine = 0;

	if (part == NULL)
		return HVD_ENOMEM;
	while (hi->host_at[at] != root)
		at++;
	rh = at / L; /* the root's host and local rank */
	rl = at % L;
	for (l = 0; l < L; l++) {
		slice(len, L, l, &off, &part[l]);
		if (l == me)
			mine = off;
	}
	/* The root's host: the whole buffer through its segment. */
	if (host == rh)
		rc = hvd__shm_broadcast(hi->shm, buf, len, rl, ms);
	/* Local rank l carries slice l to the other hosts... */
	if (rc == HVD_OK && hi->nhosts > 1)
		rc = hvd__ring_broadcast(&hi->cross, (char *)buf + mine,
					 part[me], rh);
	/* ...where the local ranks gather the slices. */
	if (rc == HVD_OK && host != rh)
		rc = hvd__shm_allgatherv(hi->shm, buf, part, ms);
	free(part);
	return rc;
}

int hvd__hier_allgatherv(struct hvd__hier *hi, struct hvd__buffers *b, int rank,
			 int size, void *out, const size_t *len)
{
	int L = hi->lsize, H = hi->nhosts, me = hi->lrank;
	int host = hi->host, l, h, rc = HVD_ENOMEM;
	size_t *at = calloc((size_t)size, sizeof(*at)), total = 0, mine = 0;
	size_t *per = calloc((size_t)L, sizeof(*per));
	size_t *cl = calloc((size_t)H, sizeof(*cl)), pos, i;
	char *big = NULL;
	bool own = false;

	if (at == NULL || per == NULL || cl == NULL)
		goto out;
	for (i = 0; i < (size_t)size; i++) {
		at[i] = total; /* rank i's block in out */
		total += len[i];
	}
	for (h = 0; h < H; h++)
		cl[h] = len[hi->host_at[h * L + me]];
	for (l = 0; l < L; l++)
		for (h = 0; h < H; h++)
			per[l] += len[hi->host_at[h * L + l]];
	/* big: local rank l's part (the blocks of local rank l on every
	 * host, in host order), for every l. */
	if ((big = hvd__scratch(b, total, &own)) == NULL)
		goto out;
	for (l = 0; l < me; l++)
		mine += per[l];
	for (h = 0, pos = mine; h < host; h++)
		pos += cl[h];
	hvd__copy(big + pos, (char *)out + at[rank], cl[host]);
	/* Across hosts, the ranks of this local rank; then within the host. */
	rc = H > 1 ? hvd__ring_allgatherv(&hi->cross, big + mine, cl) : HVD_OK;
	if (rc == HVD_OK)
		rc = hvd__shm_allgatherv(hi->shm, big, per,
					 hvd__transport_timeout_ms());
	for (l = 0, pos = 0; rc == HVD_OK && l < L; l++)
		for (h = 0; h < H; h++) {
			int r = hi->host_at[h * L + l];

			hvd__copy((char *)out + at[r], big + pos, len[r]);
			pos += len[r];
		}
out:
	if (own)
		free(big);
	free(at);
	free(per);
	free(cl);
	return rc;
}
