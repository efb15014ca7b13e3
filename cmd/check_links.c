/* check_links.c: the table's sections of --bandwidth: each interface's
 * medians and its Gb/s matrix, each host's links, and the findings (with
 * many hosts, summaries: check_table.c says when). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check/linkplan.h"

/* The link from i to j into interface ifn, or NULL. */
static const struct hl_nc_link *link_of(const struct hl_netcheck *nc, size_t i,
					size_t j, const char *ifn)
{
	size_t k;

	for (k = 0; k < nc->nlinks; k++) {
		const struct hl_nc_link *l = &nc->links[k];

		if (l->from == i && l->to == j &&
		    strcmp(hl_nc_link_ifname(nc, l), ifn) == 0)
			return l;
	}
	return NULL;
}

/* One interface's links: Gb/s / round trip µs, row to column. */
static void print_matrix(const struct hl_netcheck *nc, const char *ifn, int w)
{
	size_t i, j;
	int cw = w > 16 ? w : 16;

	printf("  %-*s", w, "");
	for (j = 0; j < nc->n; j++)
		if (nc->h[j].usable)
			printf("  %-*s", cw, check_name(nc, j));
	putchar('\n');
	for (i = 0; i < nc->n; i++) {
		if (!nc->h[i].usable)
			continue;
		printf("  %-*s", w, check_name(nc, i));
		for (j = 0; j < nc->n; j++) {
			const struct hl_nc_link *l = link_of(nc, i, j, ifn);
			char cell[64];

			if (!nc->h[j].usable)
				continue;
			if (i == j)
				snprintf(cell, sizeof(cell), "-");
			else if (l == NULL)
				snprintf(cell, sizeof(cell), "?");
			else if (!l->ok)
				snprintf(cell, sizeof(cell), "failed");
			else
				snprintf(cell, sizeof(cell), "%.2f/%.0f%s",
					 l->gbps, l->rtt_us,
					 l->slow ? " slow" : "");
			printf("  %-*s", cw, cell);
		}
		putchar('\n');
	}
}

/* How much a counter grew (0 when it went back: the interface was made
 * again). */
static unsigned long long grew(unsigned long long a, unsigned long long b)
{
	return b > a ? b - a : 0;
}

void check_print_links(const struct hl_netcheck *nc, bool many)
{
	struct hl_strvec names;
	size_t i, k;
	int w = check_width(nc);

	printf("\nBANDWIDTH (Gb/s/round trip in us, row to column; each "
	       "link at most %.2g s or %lld MiB, %zu round%s)\n",
	       nc->bw_ms / 1000.0, nc->bw_bytes >> 20, nc->nrounds,
	       nc->nrounds == 1 ? "" : "s");
	hl_strvec_init(&names);
	if (hl_nc_link_ifnames(nc, &names) != HL_OK)
		printf("  out of memory\n");
	if (nc->nlinks == 0)
		printf("  no link to measure\n");
	for (k = 0; k < names.n; k++) {
		double g, r;
		size_t n = 0, slow = 0, failed = 0;

		for (i = 0; i < nc->nlinks; i++)
			if (!strcmp(hl_nc_link_ifname(nc, &nc->links[i]),
				    names.v[k])) {
				n++;
				slow += nc->links[i].slow;
				failed += !nc->links[i].ok;
			}
		printf("  %s: ", names.v[k]);
		if (hl_nc_link_medians(nc, names.v[k], &g, &r))
			printf("median %.2f Gb/s, %.0f us; ", g, r);
		printf("%zu link%s, %zu slow, %zu failed\n", n,
		       n == 1 ? "" : "s", slow, failed);
		if (!many)
			print_matrix(nc, names.v[k], w);
	}
	hl_strvec_close(&names);
	if (many)
		return;
	printf("\nLINKS (negotiated speed; counters that grew during the "
	       "check)\n");
	for (i = 0; i < nc->n; i++) {
		const struct hl_nc_host *h = &nc->h[i];

		for (k = 0; h->usable && k < h->selected.n; k++) {
			const struct hl_nc_ifstat *a = NULL, *b = NULL;
			size_t x;

			for (x = 0; x < h->nstats[0]; x++)
				if (!strcmp(h->stats[0][x].ifname,
					    h->selected.v[k]))
					a = &h->stats[0][x];
			for (x = 0; x < h->nstats[1]; x++)
				if (!strcmp(h->stats[1][x].ifname,
					    h->selected.v[k]))
					b = &h->stats[1][x];
			printf("  %-*s  %-10s ", w, k ? "" : check_name(nc, i),
			       h->selected.v[k]);
			if (a == NULL) {
				printf("no counters\n");
				continue;
			}
			if (a->speed_mbps > 0)
				printf("%lld Mb/s", a->speed_mbps);
			else
				printf("speed unknown");
			if (b != NULL)
				printf(", +%llu errors, +%llu dropped",
				       grew(a->rx_errors + a->tx_errors,
					    b->rx_errors + b->tx_errors),
				       grew(a->rx_dropped + a->tx_dropped,
					    b->rx_dropped + b->tx_dropped));
			putchar('\n');
		}
	}
}

/* With many hosts: at most this many findings are listed. */
#define LIST_FINDINGS 20

/* The hosts most often at one end of a slow or failed link: a host whose
 * own link is at fault is at one end of most of its. */
static void print_link_hosts(const struct hl_netcheck *nc)
{
	size_t *bad = calloc(nc->n, sizeof(*bad)),
	       *all = calloc(nc->n, sizeof(*all));
	size_t i, shown;

	for (i = 0; bad != NULL && all != NULL && i < nc->nlinks; i++) {
		const struct hl_nc_link *l = &nc->links[i];
		bool b = l->slow || !l->ok;

		all[l->from]++;
		all[l->to]++;
		bad[l->from] += b;
		bad[l->to] += b;
	}
	for (shown = 0; bad != NULL && all != NULL && shown < LIST_NAMES;
	     shown++) {
		size_t top = SIZE_MAX;

		for (i = 0; i < nc->n; i++)
			if (bad[i] > 0 &&
			    (top == SIZE_MAX || bad[i] > bad[top]))
				top = i;
		if (top == SIZE_MAX)
			break;
		printf("  %s: at one end of %zu of its %zu links that are "
		       "slow or failed\n",
		       check_name(nc, top), bad[top], all[top]);
		bad[top] = 0;
	}
	free(bad);
	free(all);
}

void check_print_findings(const struct hl_netcheck *nc, bool many)
{
	static const char *const what[] = {
		[HL_NCF_SLOW_LINK] = "slow link",
		[HL_NCF_FAILED_LINK] = "failed link",
		[HL_NCF_LOW_SPEED] = "low speed",
		[HL_NCF_ERRORS] = "errors",
		[HL_NCF_DROPS] = "drops",
		[HL_NCF_PCIE] = "GPU PCIe link",
		[HL_NCF_NO_PEER] = "GPU peer access",
		[HL_NCF_GPU_SLOTS] = "GPU slots",
		[HL_NCF_NCCL] = "NCCL",
		[HL_NCF_FOLDER] = "workers' folder",
		[HL_NCF_CPU_SLOTS] = "CPU slots",
	};
	size_t i;

	if (nc->nfindings == 0)
		return;
	printf("\nFINDINGS\n");
	if (many && nc->nfindings > LIST_FINDINGS)
		print_link_hosts(nc);
	for (i = 0; i < nc->nfindings; i++) {
		if (many && i == LIST_FINDINGS) {
			printf("  and %zu more (--json lists them all)\n",
			       nc->nfindings - i);
			break;
		}
		printf("  %s: %s\n", what[nc->findings[i].kind],
		       nc->findings[i].text);
	}
}
