/* linkplan.c: see linkplan.h. */
#include "check/linkplan.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/probe_msg.h"

/* The first address of host j on interface ifname that host i reached. */
static bool reached_addr(const struct hl_netcheck *nc, size_t i, size_t j,
			 const char *ifname, size_t *addr)
{
	size_t p;

	for (p = 0; p < nc->npairs; p++) {
		const struct hl_nc_pair *q = &nc->pairs[p];

		if (q->from == i && q->to == j && q->ok &&
		    strcmp(hl_nc_pair_ifname(nc, q), ifname) == 0) {
			*addr = q->addr;
			return true;
		}
	}
	return false;
}

static int push_link(struct hl_netcheck *nc, size_t *cap,
		     const struct hl_nc_link *l)
{
	if (nc->nlinks == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct hl_nc_link *v = realloc(nc->links, c * sizeof(*v));

		if (v == NULL)
			return HL_ENOMEM;
		nc->links = v;
		*cap = c;
	}
	nc->links[nc->nlinks++] = *l;
	return HL_OK;
}

int hl_nc_plan_links(struct hl_netcheck *nc)
{
	size_t *u = calloc(nc->n ? nc->n : 1, sizeof(*u));
	size_t m = 0, i, j, k, maxk = 0, cap = 0;
	int rc = HL_OK;

	if (u == NULL)
		return HL_ENOMEM;
	for (i = 0; i < nc->n; i++)
		if (nc->h[i].usable)
			u[m++] = i;
	for (j = 0; j < m && m > 1; j++) {
		const struct hl_nc_host *to = &nc->h[u[j]];

		if (to->selected.n > maxk)
			maxk = to->selected.n;
		for (k = 0; k < to->selected.n; k++)
			for (i = 0; i < m && rc == HL_OK; i++) {
				struct hl_nc_link l = {.from = u[i],
						       .to = u[j]};

				if (i == j)
					continue;
				l.round = k * (m - 1) + (j + m - i) % m - 1;
				if (!reached_addr(nc, u[i], u[j],
						  to->selected.v[k], &l.addr))
					continue;
				rc = push_link(nc, &cap, &l);
			}
	}
	nc->nrounds = m > 1 ? maxk * (m - 1) : 0;
	free(u);
	return rc;
}

/* Gb/s of bytes in seconds. */
static double rate_of(long long bytes, double seconds)
{
	return seconds > 0 ? (double)bytes * 8 / seconds / 1e9 : 0;
}

void hl_nc_take_rate(struct hl_netcheck *nc, enum hl_nc_take what,
		     const char *data, size_t len)
{
	struct hl_pm_rate r;
	struct hl_nc_link *l;

	if (hl_pm_rate(data, len, &r) != HL_OK || r.id < 0 ||
	    (size_t)r.id >= nc->nlinks)
		return;
	l = &nc->links[r.id];
	if (what == HL_NC_RETRY) {
		if (!l->retried || !l->ok)
			return;
		if (!r.ok) {
			l->ok = false;
			free(l->error);
			l->error = hl_asprintf("measured again: %s", r.error);
			return;
		}
		l->twice = true;
		if (rate_of(r.bytes, r.us / 1e6) >
		    rate_of(l->bytes, l->seconds)) {
			l->bytes = r.bytes;
			l->seconds = r.us / 1e6;
		}
		return;
	}
	if (!r.ok) {
		hl_nc_link_fail(l, r.error);
		return;
	}
	if (what == HL_NC_TRIPS) {
		l->rtt_us = r.rtt_us;
		return;
	}
	l->done = true;
	l->ok = true;
	l->bytes = r.bytes;
	l->seconds = r.us / 1e6;
}

void hl_nc_link_fail(struct hl_nc_link *l, const char *why)
{
	if (l->done)
		return;
	l->done = true;
	l->ok = false;
	free(l->error);
	l->error = hl_strdup(why);
}

const char *hl_nc_link_ifname(const struct hl_netcheck *nc,
			      const struct hl_nc_link *l)
{
	return nc->h[l->to].addrs[l->addr].ifname;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

bool hl_nc_link_medians(const struct hl_netcheck *nc, const char *ifname,
			double *gbps, double *rtt_us)
{
	double *g = malloc((nc->nlinks + 1) * sizeof(*g)),
	       *r = malloc((nc->nlinks + 1) * sizeof(*r));
	size_t i, n = 0;

	for (i = 0; g != NULL && r != NULL && i < nc->nlinks; i++) {
		const struct hl_nc_link *l = &nc->links[i];

		if (l->ok && strcmp(hl_nc_link_ifname(nc, l), ifname) == 0) {
			g[n] = l->gbps;
			r[n++] = l->rtt_us;
		}
	}
	if (n > 0) {
		*gbps = hl_median(g, n);
		*rtt_us = hl_median(r, n);
	}
	free(g);
	free(r);
	return n > 0;
}

int hl_nc_link_ifnames(const struct hl_netcheck *nc, struct hl_strvec *v)
{
	size_t i;

	for (i = 0; i < nc->nlinks; i++)
		if (hl_strvec_push_once(
			    v, hl_nc_link_ifname(nc, &nc->links[i])) != HL_OK)
			return HL_ENOMEM;
	return HL_OK;
}

int hl_nc_add_finding(struct hl_netcheck *nc, enum hl_nc_finding_kind kind,
		      size_t host, size_t link, const char *ifname, char *text)
{
	struct hl_nc_finding *v;

	if (text == NULL)
		return HL_ENOMEM;
	v = realloc(nc->findings, (nc->nfindings + 1) * sizeof(*v));
	if (v == NULL) {
		free(text);
		return HL_ENOMEM;
	}
	nc->findings = v;
	v[nc->nfindings] = (struct hl_nc_finding){
		kind, host, link, ifname ? hl_strdup(ifname) : NULL, text};
	nc->nfindings++;
	return HL_OK;
}

static const char *name(const struct hl_netcheck *nc, size_t i)
{
	return nc->h[i].host->name;
}

/* The index of ifname in names (names->n: none). */
static size_t name_index(const struct hl_strvec *names, const char *ifname)
{
	size_t k;

	for (k = 0; k < names->n && strcmp(names->v[k], ifname) != 0; k++)
		;
	return k;
}

/* Each link's Gb/s, and whether it is slow: under half the median of the
 * links into the same interface name. The names links go into, and each
 * one's median Gb/s (*med, 0 where none), are the caller's to free (also
 * on failure: names initialised by the caller). HL_ENOMEM. */
static int mark_slow(struct hl_netcheck *nc, struct hl_strvec *names,
		     double **med)
{
	double rtt;
	size_t i, k;
	int rc;

	for (i = 0; i < nc->nlinks; i++) {
		struct hl_nc_link *l = &nc->links[i];

		l->gbps = l->ok ? rate_of(l->bytes, l->seconds) : 0;
		l->slow = false;
	}
	rc = hl_nc_link_ifnames(nc, names);
	if (rc == HL_OK && (*med = calloc(names->n + 1, sizeof(**med))) == NULL)
		rc = HL_ENOMEM;
	for (k = 0; rc == HL_OK && k < names->n; k++)
		if (!hl_nc_link_medians(nc, names->v[k], &(*med)[k], &rtt))
			(*med)[k] = 0;
	for (i = 0; rc == HL_OK && i < nc->nlinks; i++) {
		struct hl_nc_link *l = &nc->links[i];

		k = name_index(names, hl_nc_link_ifname(nc, l));
		l->slow = l->ok && k < names->n && l->gbps * 2 < (*med)[k];
	}
	return rc;
}

int hl_nc_plan_retries(struct hl_netcheck *nc)
{
	size_t *idx = malloc((nc->nrounds + 1) * sizeof(*idx)), i, r;
	struct hl_strvec names;
	double *med = NULL;
	int rc;

	hl_strvec_init(&names);
	rc = idx == NULL ? HL_ENOMEM : mark_slow(nc, &names, &med);
	free(med);
	hl_strvec_close(&names);
	nc->nretries = 0;
	if (rc == HL_OK) {
		/* The rounds that have a slow link, in order, numbered. */
		for (r = 0; r < nc->nrounds; r++)
			idx[r] = SIZE_MAX;
		for (i = 0; i < nc->nlinks; i++)
			if (nc->links[i].slow)
				idx[nc->links[i].round] = 0;
		for (r = 0; r < nc->nrounds; r++)
			if (idx[r] != SIZE_MAX)
				idx[r] = nc->nretries++;
		for (i = 0; i < nc->nlinks; i++) {
			struct hl_nc_link *l = &nc->links[i];

			l->retried = l->slow;
			if (l->retried) {
				l->retry = idx[l->round];
				l->first_gbps = l->gbps;
			}
		}
	}
	free(idx);
	return rc;
}

static int judge_links(struct hl_netcheck *nc)
{
	struct hl_strvec names;
	double *med = NULL;
	size_t i;
	int rc;

	hl_strvec_init(&names);
	rc = mark_slow(nc, &names, &med);
	for (i = 0; i < nc->nlinks && rc == HL_OK; i++) {
		struct hl_nc_link *l = &nc->links[i];
		const char *ifn = hl_nc_link_ifname(nc, l);

		if (!l->ok) {
			rc = hl_nc_add_finding(
				nc, HL_NCF_FAILED_LINK, l->from, i, ifn,
				hl_asprintf("%s -> %s on %s: %s",
					    name(nc, l->from), name(nc, l->to),
					    ifn,
					    l->error ? l->error : "no result"));
			continue;
		}
		if (!l->slow)
			continue;
		rc = hl_nc_add_finding(
			nc, HL_NCF_SLOW_LINK, l->from, i, ifn,
			hl_asprintf("%s -> %s on %s: %.2f Gb/s%s, under half "
				    "the median of %s (%.2f Gb/s)",
				    name(nc, l->from), name(nc, l->to), ifn,
				    l->gbps,
				    l->twice ? " (the better of two transfers)"
					     : "",
				    ifn, med[name_index(&names, ifn)]));
	}
	free(med);
	hl_strvec_close(&names);
	return rc;
}

static const struct hl_nc_ifstat *stat_of(const struct hl_nc_host *h, int when,
					  const char *ifname)
{
	size_t k;

	for (k = 0; k < h->nstats[when]; k++)
		if (strcmp(h->stats[when][k].ifname, ifname) == 0)
			return &h->stats[when][k];
	return NULL;
}

/* A selected interface's speed under the upper median of the same
 * interface's on the usable hosts that know theirs. */
static int judge_speed(struct hl_netcheck *nc, size_t i, const char *ifn)
{
	const struct hl_nc_ifstat *s = stat_of(&nc->h[i], 0, ifn);
	double *v, top;
	size_t j, n = 0;

	if (s == NULL || s->speed_mbps <= 0)
		return HL_OK;
	v = malloc(nc->n * sizeof(*v));
	if (v == NULL)
		return HL_ENOMEM;
	for (j = 0; j < nc->n; j++) {
		const struct hl_nc_ifstat *o;

		if (!nc->h[j].usable)
			continue;
		o = stat_of(&nc->h[j], 0, ifn);
		if (o != NULL && o->speed_mbps > 0)
			v[n++] = (double)o->speed_mbps;
	}
	qsort(v, n, sizeof(*v), cmp_double);
	top = v[n / 2];
	free(v);
	if ((double)s->speed_mbps >= top)
		return HL_OK;
	return hl_nc_add_finding(
		nc, HL_NCF_LOW_SPEED, i, SIZE_MAX, ifn,
		hl_asprintf("%s %s: negotiated %lld Mb/s, the other hosts' "
			    "%s %.0f Mb/s",
			    name(nc, i), ifn, s->speed_mbps, ifn, top));
}

/* Counters of a selected interface that grew between the two reads. */
static int judge_counters(struct hl_netcheck *nc, size_t i, const char *ifn)
{
	const struct hl_nc_ifstat *a = stat_of(&nc->h[i], 0, ifn),
				  *b = stat_of(&nc->h[i], 1, ifn);
	unsigned long long rxe, txe, rxd, txd;
	int rc = HL_OK;

	if (a == NULL || b == NULL)
		return HL_OK;
	rxe = b->rx_errors > a->rx_errors ? b->rx_errors - a->rx_errors : 0;
	txe = b->tx_errors > a->tx_errors ? b->tx_errors - a->tx_errors : 0;
	rxd = b->rx_dropped > a->rx_dropped ? b->rx_dropped - a->rx_dropped : 0;
	txd = b->tx_dropped > a->tx_dropped ? b->tx_dropped - a->tx_dropped : 0;
	if (rxe + txe > 0)
		rc = hl_nc_add_finding(
			nc, HL_NCF_ERRORS, i, SIZE_MAX, ifn,
			hl_asprintf("%s %s: %llu receive and %llu transmit "
				    "errors during the check",
				    name(nc, i), ifn, rxe, txe));
	if (rc == HL_OK && rxd + txd > 0)
		rc = hl_nc_add_finding(
			nc, HL_NCF_DROPS, i, SIZE_MAX, ifn,
			hl_asprintf("%s %s: %llu received and %llu sent "
				    "packets dropped during the check",
				    name(nc, i), ifn, rxd, txd));
	return rc;
}

/* The GPUs a job on h can use: CUDA's device count (which
 * CUDA_VISIBLE_DEVICES limits), else the driver's GPUs; 0: none. */
static long job_gpus(const struct hl_nc_host *h)
{
	const char *dev = hl_pm_gpu_fact(&h->gpu, "cuda_devices");
	long n;

	if (dev != NULL && hl_parse_long(dev, 0, INT_MAX, &n))
		return n;
	return hl_pm_gpu_count(&h->gpu);
}

/* The GPU facts of a probed host (probe_msg.h's "pcie" and "pair"), and
 * its slots against its GPUs: a GPU job runs one rank a GPU (libhvd
 * gives local rank r GPU r; NCCL refuses two ranks on one GPU). */
static int judge_gpus(struct hl_netcheck *nc, size_t i)
{
	const struct hl_nc_host *h = &nc->h[i];
	long gpus = job_gpus(h);
	size_t k;
	int rc = HL_OK;

	if (gpus > 0 && h->host->slots > gpus) {
		bool many = h->host->slots - 1 > gpus;
		char who[64];

		if (many)
			snprintf(who, sizeof(who), "local ranks %ld %s %d",
				 gpus, h->host->slots - 2 > gpus ? "to" : "and",
				 h->host->slots - 1);
		else
			snprintf(who, sizeof(who), "local rank %ld", gpus);
		rc = hl_nc_add_finding(
			nc, HL_NCF_GPU_SLOTS, i, SIZE_MAX, NULL,
			hl_asprintf("%s: %d slots but %ld GPU%s: %s of a GPU "
				    "job %s no GPU of %s own (NCCL takes one "
				    "rank a GPU); give it at most %ld slot%s "
				    "for GPU jobs",
				    name(nc, i), h->host->slots, gpus,
				    gpus == 1 ? "" : "s", who,
				    many ? "have" : "has",
				    many ? "their" : "its", gpus,
				    gpus == 1 ? "" : "s"));
	}
	for (k = 0; k < h->gpu.n && rc == HL_OK; k++) {
		const char *f = h->gpu.v[k];
		struct hl_pm_pcie p;
		struct hl_gpu_pair q;

		if (strncmp(f, "pcie\t", 5) == 0 &&
		    hl_pm_gpu_pcie(f + 5, &p) == HL_OK && p.width > 0 &&
		    p.width < p.width_max)
			rc = hl_nc_add_finding(
				nc, HL_NCF_PCIE, i, SIZE_MAX, NULL,
				hl_asprintf("%s GPU %d: PCIe x%d, where it "
					    "takes x%d",
					    name(nc, i), p.index, p.width,
					    p.width_max));
		if (strncmp(f, "pair\t", 5) == 0 &&
		    hl_pm_gpu_pair(f + 5, &q) == HL_OK && q.peer == 0)
			rc = hl_nc_add_finding(
				nc, HL_NCF_NO_PEER, i, SIZE_MAX, NULL,
				hl_asprintf("%s GPUs %d and %d: no peer "
					    "access (their traffic goes "
					    "through host memory)",
					    name(nc, i), q.a, q.b));
	}
	return rc;
}

int hl_nc_judge(struct hl_netcheck *nc)
{
	size_t i, k;
	int rc = judge_links(nc);

	for (i = 0; i < nc->n && rc == HL_OK; i++)
		if (nc->h[i].probed)
			rc = judge_gpus(nc, i);

	for (i = 0; i < nc->n && rc == HL_OK; i++) {
		const struct hl_nc_host *h = &nc->h[i];

		if (!h->usable)
			continue;
		for (k = 0; k < h->selected.n && rc == HL_OK; k++) {
			rc = judge_speed(nc, i, h->selected.v[k]);
			if (rc == HL_OK)
				rc = judge_counters(nc, i, h->selected.v[k]);
		}
	}
	return rc;
}

size_t hl_nc_count(const struct hl_netcheck *nc, enum hl_nc_finding_kind k)
{
	size_t i, n = 0;

	for (i = 0; i < nc->nfindings; i++)
		n += nc->findings[i].kind == k;
	return n;
}

int hl_nc_status(const struct hl_netcheck *nc, bool fail_on_slow)
{
	if (nc->nusable < nc->n || hl_nc_count(nc, HL_NCF_FAILED_LINK) > 0 ||
	    hl_nc_count(nc, HL_NCF_NCCL) > 0)
		return 1;
	return fail_on_slow && hl_nc_count(nc, HL_NCF_SLOW_LINK) > 0;
}
