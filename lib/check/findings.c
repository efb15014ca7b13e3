/* findings.c: the findings of `hvdrun check` (linkplan.h's hl_nc_judge):
 * failed and slow links, interface speeds and counters, GPUs. */
#include "check/linkplan.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/probe_msg.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
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

static int judge_links(struct hl_netcheck *nc)
{
	size_t i;
	int rc = hl_nc_mark_slow(nc);

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
				    ifn, l->median_gbps));
	}
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
	/* More workers than CPUs there: --bind-to core binds none. */
	for (i = 0; i < nc->n && rc == HL_OK; i++)
		if (nc->h[i].probed && nc->h[i].cpus.cpus > 0 &&
		    nc->h[i].host->slots > nc->h[i].cpus.cpus)
			rc = hl_nc_add_finding(
				nc, HL_NCF_CPU_SLOTS, i, SIZE_MAX, NULL,
				hl_asprintf(
					"%s: %d slots but %ld CPU%s that its "
					"workers may use: --bind-to core binds "
					"none of them, and they share the CPUs; "
					"give it at most %ld slot%s",
					name(nc, i), nc->h[i].host->slots,
					nc->h[i].cpus.cpus,
					nc->h[i].cpus.cpus == 1 ? "" : "s",
					nc->h[i].cpus.cpus,
					nc->h[i].cpus.cpus == 1 ? "" : "s"));
	/* A job's workers would fail to start there. */
	for (i = 0; i < nc->n && rc == HL_OK; i++)
		if (nc->h[i].folder != NULL && nc->h[i].folder[0] != '\0')
			rc = hl_nc_add_finding(
				nc, HL_NCF_FOLDER, i, SIZE_MAX, NULL,
				hl_asprintf(
					"host '%s': workers cannot start in "
					"'%s' there (%s)",
					name(nc, i), nc->folder,
					nc->h[i].folder));

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
	    hl_nc_count(nc, HL_NCF_NCCL) > 0 ||
	    hl_nc_count(nc, HL_NCF_FOLDER) > 0)
		return 1;
	return fail_on_slow && hl_nc_count(nc, HL_NCF_SLOW_LINK) > 0;
}
