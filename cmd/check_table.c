/* check_table.c: `hvdrun check`'s report for people: a table of each
 * section. Up to MATRIX_HOSTS probed hosts, every host and the matrices;
 * above, each section's summary and only what is wrong, so that the
 * report stays readable at 64 hosts and more. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check/gpucheck.h"
#include "check/linkplan.h"
#include "check/probe_msg.h"

/* Matrices for up to this many hosts; above, summaries and findings. */
#define MATRIX_HOSTS 16
/* At most this many names in a summary's list. */
#define LIST_NAMES 8

static const char *name_of(const struct hl_netcheck *nc, size_t i)
{
	return nc->h[i].host->name;
}

static int width(const struct hl_netcheck *nc)
{
	size_t i;
	int w = 4;

	for (i = 0; i < nc->n; i++)
		if ((int)strlen(name_of(nc, i)) > w)
			w = (int)strlen(name_of(nc, i));
	return w;
}

static int gpu_count(const struct hl_nc_host *h)
{
	size_t i;
	int n = 0;

	for (i = 0; i < h->gpu.n; i++)
		n += strncmp(h->gpu.v[i], "gpu\t", 4) == 0;
	return n;
}

/* The rest of GPU index's line: its PCIe link and NVLinks. */
static void print_pcie(FILE *o, const struct hl_nc_host *h, int index)
{
	size_t i;

	for (i = 0; i < h->gpu.n; i++) {
		struct hl_pm_pcie p;

		if (strncmp(h->gpu.v[i], "pcie\t", 5) != 0 ||
		    hl_pm_gpu_pcie(h->gpu.v[i] + 5, &p) != HL_OK ||
		    p.index != index)
			continue;
		if (p.gen > 0 && p.width > 0)
			fprintf(o, ", PCIe gen %d x%d (at most gen %d x%d)",
				p.gen, p.width, p.gen_max, p.width_max);
		if (p.nvlinks > 0)
			fprintf(o, ", %d NVLink%s up", p.nvlinks,
				p.nvlinks == 1 ? "" : "s");
	}
	fputc('\n', o);
}

/* How a pair of GPUs connects, and whether they reach each other's
 * memory. */
static void print_pair(FILE *o, const char *fact, int w)
{
	struct hl_gpu_pair q;
	const char *path;

	if (hl_pm_gpu_pair(fact, &q) != HL_OK)
		return;
	path = hl_gpu_level_text(q.level);
	fprintf(o, "  %-*s    GPUs %d-%d: %s%s%s", w, "", q.a, q.b,
		q.nvlink == 1 ? "NVLink" : "",
		q.nvlink == 1 && path ? "; PCIe " : path ? "PCIe " : "",
		path ? path : (q.nvlink == 1 ? "" : "path unknown"));
	if (q.peer >= 0)
		fprintf(o, "; %s", q.peer ? "peer access" : "NO peer access");
	fputc('\n', o);
}

/* A host's GPU facts: its first line after label, then the details. */
static void print_gpus(FILE *o, const struct hl_nc_host *h, const char *label,
		       int w)
{
	const char *drv = hl_pm_gpu_fact(&h->gpu, "driver"),
		   *rt = hl_pm_gpu_fact(&h->gpu, "cuda_runtime"),
		   *cd = hl_pm_gpu_fact(&h->gpu, "cuda_driver"),
		   *ce = hl_pm_gpu_fact(&h->gpu, "cuda_error"),
		   *nccl = hl_pm_gpu_fact(&h->gpu, "nccl");
	char v[32];
	size_t i;
	int n = gpu_count(h);

	fprintf(o, "  %-*s  ", w, label);
	if (drv != NULL)
		fprintf(o, "driver %s, %d GPU%s", drv, n, n == 1 ? "" : "s");
	else
		fprintf(o, "no GPU");
	if (rt != NULL) {
		fprintf(o, "; CUDA runtime %s",
		       hl_gpu_version_text(rt, false, v, sizeof(v)));
		if (cd != NULL)
			fprintf(o, " (driver's CUDA %s)",
			       hl_gpu_version_text(cd, false, v, sizeof(v)));
	}
	if (nccl != NULL)
		fprintf(o, "; NCCL %s", hl_gpu_version_text(nccl, true, v, sizeof(v)));
	fputc('\n', o);
	for (i = 0; i < h->gpu.n; i++) {
		const char *f = h->gpu.v[i];

		struct hl_pm_gpu g;

		if (strncmp(f, "gpu\t", 4) == 0) {
			if (hl_pm_gpu(f + 4, &g) == HL_OK) {
				fprintf(o, "  %-*s    GPU %d: %s, %llu MiB", w,
					"", g.index, g.name,
					g.mem_bytes >> 20);
				print_pcie(o, h, g.index);
			}
		} else if (strncmp(f, "pair\t", 5) == 0) {
			print_pair(o, f + 5, w);
		} else if (strncmp(f, "note\t", 5) == 0) {
			fprintf(o, "  %-*s    %s\n", w, "", f + 5);
		}
	}
	if (ce != NULL && drv != NULL)
		fprintf(o, "  %-*s    CUDA: %s\n", w, "", ce);
	if (n > 0 && h->host->slots > n)
		fprintf(o, "  %-*s    warning: %d slots but %d GPU%s\n", w, "",
		       h->host->slots, n, n == 1 ? "" : "s");
}

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
			printf("  %-*s", cw, name_of(nc, j));
	putchar('\n');
	for (i = 0; i < nc->n; i++) {
		if (!nc->h[i].usable)
			continue;
		printf("  %-*s", w, name_of(nc, i));
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

static void print_bandwidth(const struct hl_netcheck *nc)
{
	struct hl_strvec names;
	size_t i, k, usable = 0;
	int w = width(nc);

	for (i = 0; i < nc->n; i++)
		usable += nc->h[i].usable;
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
		if (usable <= MATRIX_HOSTS)
			print_matrix(nc, names.v[k], w);
	}
	hl_strvec_close(&names);
	if (usable > MATRIX_HOSTS)
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
			printf("  %-*s  %-10s ", w, k ? "" : name_of(nc, i),
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
	size_t *bad = calloc(nc->n, sizeof(*bad)), *all = calloc(nc->n, sizeof(*all));
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
			if (bad[i] > 0 && (top == SIZE_MAX || bad[i] > bad[top]))
				top = i;
		if (top == SIZE_MAX)
			break;
		printf("  %s: at one end of %zu of its %zu links that are "
		       "slow or failed\n",
		       name_of(nc, top), bad[top], all[top]);
		bad[top] = 0;
	}
	free(bad);
	free(all);
}

static void print_findings(const struct hl_netcheck *nc, bool many)
{
	static const char *const what[] = {
		[HL_NCF_SLOW_LINK] = "slow link",
		[HL_NCF_FAILED_LINK] = "failed link",
		[HL_NCF_LOW_SPEED] = "low speed",
		[HL_NCF_ERRORS] = "errors",
		[HL_NCF_DROPS] = "drops",
		[HL_NCF_PCIE] = "GPU PCIe link",
		[HL_NCF_NO_PEER] = "GPU peer access",
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

/* "a, b, c and 5 more" of the hosts that pick marks. */
static void print_names(const struct hl_netcheck *nc, const bool *pick)
{
	size_t i, n = 0, shown = 0;

	for (i = 0; i < nc->n; i++)
		n += pick[i];
	for (i = 0; i < nc->n && shown < LIST_NAMES; i++)
		if (pick[i])
			printf("%s%s", shown++ ? ", " : "", name_of(nc, i));
	if (n > shown)
		printf(" and %zu more", n - shown);
}

static void print_ssh(const struct hl_netcheck *nc, bool many, int w)
{
	size_t i, ok = 0;

	printf("SSH\n");
	for (i = 0; i < nc->n; i++) {
		const struct hl_nc_host *h = &nc->h[i];

		ok += h->probed;
		if (many && h->probed)
			continue;
		printf("  %-*s  ", w, name_of(nc, i));
		if (!h->remote)
			printf("this machine (no SSH)");
		else if (h->ssh_ok)
			printf("ok, %.0f ms", h->ssh_ms);
		else
			printf("failed");
		if (h->probed && h->hostname != NULL)
			printf(", hostname %s", h->hostname);
		if (h->error != NULL && !h->probed)
			printf(": %s", h->error);
		putchar('\n');
	}
	if (many)
		printf("  %zu of %zu hosts connected and probed\n", ok, nc->n);
}

/* Interface k of host i: its addresses and who reached it. Returns
 * whether every other probed host did. */
static bool print_iface(const struct hl_netcheck *nc, size_t i, size_t k,
			const char *label, int w)
{
	const struct hl_nc_host *h = &nc->h[i];
	const char *ifn = h->ifaces.v[k];
	bool sel = false;
	size_t j, a, nby = 0, nother = 0;
	char by[512] = "";

	for (j = 0; j < h->selected.n; j++)
		sel |= strcmp(h->selected.v[j], ifn) == 0;
	for (j = 0; j < nc->n; j++) {
		if (j == i || !nc->h[j].probed)
			continue;
		nother++;
		if (hl_nc_reached(nc, j, i, ifn)) {
			size_t off = strlen(by);

			snprintf(by + off, sizeof(by) - off, "%s%s",
				 nby ? ", " : "", name_of(nc, j));
			nby++;
		}
	}
	if (label == NULL)
		return nby == nother;
	printf("  %-*s  %c %-10s", w, label, sel ? '*' : ' ', ifn);
	for (a = 0; a < h->naddrs; a++)
		if (h->addrs[a].candidate && strcmp(h->addrs[a].ifname, ifn) == 0)
			printf(" %s", h->addrs[a].addr);
	if (nother > 0 && nby == 0)
		printf("   reached by no other host");
	else if (nby < nother)
		printf("   reached only by %s", by);
	putchar('\n');
	return nby == nother;
}

/* With many hosts: how many selected each interface name, then only the
 * interfaces that some host did not reach. */
static void print_interfaces(const struct hl_netcheck *nc, bool many, int w)
{
	struct hl_strvec names;
	size_t i, j, k;

	printf("\nINTERFACES (* selected: reached from every other host)\n");
	hl_strvec_init(&names);
	for (i = 0; many && i < nc->n; i++)
		for (k = 0; k < nc->h[i].selected.n; k++) {
			bool seen = false;

			for (j = 0; j < names.n; j++)
				seen |= !strcmp(names.v[j],
						nc->h[i].selected.v[k]);
			if (!seen)
				hl_strvec_push(&names, nc->h[i].selected.v[k]);
		}
	for (j = 0; j < names.n; j++) {
		size_t n = 0;

		for (i = 0; i < nc->n; i++)
			for (k = 0; k < nc->h[i].selected.n; k++)
				n += !strcmp(nc->h[i].selected.v[k], names.v[j]);
		printf("  * %s selected on %zu host%s\n", names.v[j], n,
		       n == 1 ? "" : "s");
	}
	hl_strvec_close(&names);
	for (i = 0; i < nc->n; i++) {
		const struct hl_nc_host *h = &nc->h[i];
		bool first = true;

		if (!h->probed)
			continue;
		for (k = 0; k < h->ifaces.n; k++) {
			if (many && print_iface(nc, i, k, NULL, w))
				continue;
			print_iface(nc, i, k, first ? name_of(nc, i) : "", w);
			first = false;
		}
		if (h->ifaces.n == 0)
			printf("  %-*s    (no candidate interface)\n", w,
			       name_of(nc, i));
	}
}

/* Row to column: the interfaces reached. With many hosts, only the pairs
 * that reached nothing. */
static void print_reachability(const struct hl_netcheck *nc, bool many, int w)
{
	size_t i, j, k, none = 0;

	if (nc->npairs == 0)
		return;
	printf("\nREACHABILITY (row to column: the interfaces reached)\n");
	if (!many) {
		printf("  %-*s", w, "");
		for (j = 0; j < nc->n; j++)
			if (nc->h[j].probed)
				printf("  %-*s", w, name_of(nc, j));
		putchar('\n');
	}
	for (i = 0; i < nc->n; i++) {
		if (!nc->h[i].probed)
			continue;
		if (!many)
			printf("  %-*s", w, name_of(nc, i));
		for (j = 0; j < nc->n; j++) {
			char cell[256] = "";
			size_t off = 0;

			if (!nc->h[j].probed)
				continue;
			for (k = 0; i != j && k < nc->h[j].ifaces.n; k++)
				if (hl_nc_reached(nc, i, j,
						  nc->h[j].ifaces.v[k]))
					off += (size_t)snprintf(
						cell + off, sizeof(cell) - off,
						"%s%s", off ? "," : "",
						nc->h[j].ifaces.v[k]);
			if (i == j)
				snprintf(cell, sizeof(cell), "-");
			else if (off == 0)
				snprintf(cell, sizeof(cell), "%s",
					 hl_nc_tested(nc, i, j) ? "NONE" : "?");
			if (!many) {
				printf("  %-*s", w, cell);
			} else if (i != j && off == 0 && none++ < 20) {
				printf("  %s -> %s: %s\n", name_of(nc, i),
				       name_of(nc, j), cell);
			}
		}
		if (!many)
			putchar('\n');
	}
	if (many)
		printf("  %zu ordered pairs reached nothing%s\n", none,
		       none > 20 ? " (20 shown)" : "");
}

/* With many hosts, hosts whose GPU lines are the same are shown once. */
static void print_gpu_section(const struct hl_netcheck *nc, bool many, int w)
{
	char **text = calloc(nc->n ? nc->n : 1, sizeof(*text));
	bool *pick = calloc(nc->n ? nc->n : 1, sizeof(*pick));
	size_t i, j, len;

	printf("\nGPUS\n");
	for (i = 0; text != NULL && pick != NULL && i < nc->n; i++) {
		FILE *o;

		if (!nc->h[i].probed)
			continue;
		if (!many) {
			print_gpus(stdout, &nc->h[i], name_of(nc, i), w);
			continue;
		}
		o = open_memstream(&text[i], &len);
		if (o == NULL)
			continue;
		print_gpus(o, &nc->h[i], "", 0);
		fclose(o);
	}
	for (i = 0; many && text != NULL && pick != NULL && i < nc->n; i++) {
		if (text[i] == NULL)
			continue;
		for (j = 0; j < nc->n; j++)
			pick[j] = text[j] != NULL && !strcmp(text[j], text[i]);
		printf("  ");
		print_names(nc, pick);
		printf(":\n%s", text[i]);
		for (j = nc->n; j-- > i;)
			if (pick[j]) {
				free(text[j]);
				text[j] = NULL;
			}
	}
	for (i = 0; text != NULL && i < nc->n; i++)
		free(text[i]);
	free(text);
	free(pick);
}

void check_print_table(const struct hl_netcheck *nc)
{
	size_t i, probed = 0;
	int w = width(nc);
	bool many;

	for (i = 0; i < nc->n; i++)
		probed += nc->h[i].probed;
	many = probed > MATRIX_HOSTS;
	print_ssh(nc, many, w);
	print_interfaces(nc, many, w);
	print_reachability(nc, many, w);
	print_gpu_section(nc, many, w);
	putchar('\n');
	for (i = 0; i < nc->n; i++)
		if (nc->h[i].error != NULL && nc->h[i].probed)
			printf("%s\n", nc->h[i].error);
	if (nc->bandwidth)
		print_bandwidth(nc);
	print_findings(nc, many);
	printf("%zu of %zu host%s usable (%.2f s)", nc->nusable, nc->n,
	       nc->n == 1 ? "" : "s", nc->seconds);
	if (nc->bandwidth)
		printf("; %zu slow link%s, %zu failed",
		       hl_nc_count(nc, HL_NCF_SLOW_LINK),
		       hl_nc_count(nc, HL_NCF_SLOW_LINK) == 1 ? "" : "s",
		       hl_nc_count(nc, HL_NCF_FAILED_LINK));
	putchar('\n');
}
