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
		q.nvlink == 1 && path ? "; PCIe "
		: path		      ? "PCIe "
				      : "",
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
	int n = hl_pm_gpu_count(&h->gpu);

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
		fprintf(o, "; NCCL %s",
			hl_gpu_version_text(nccl, true, v, sizeof(v)));
	fputc('\n', o);
	for (i = 0; i < h->gpu.n; i++) {
		const char *f = h->gpu.v[i];

		struct hl_pm_gpu g;

		if (strncmp(f, "gpu\t", 4) == 0) {
			if (hl_pm_gpu(f + 4, &g) == HL_OK) {
				fprintf(o, "  %-*s    GPU %d: %s, %llu MiB", w,
					"", g.index, g.name, g.mem_bytes >> 20);
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
}

/* "a, b, c and 5 more" of the hosts that pick marks. */
static void print_names(const struct hl_netcheck *nc, const bool *pick)
{
	size_t i, n = 0, shown = 0;

	for (i = 0; i < nc->n; i++)
		n += pick[i];
	for (i = 0; i < nc->n && shown < LIST_NAMES; i++)
		if (pick[i])
			printf("%s%s", shown++ ? ", " : "", check_name(nc, i));
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
		printf("  %-*s  ", w, check_name(nc, i));
		if (!h->remote)
			printf("this machine (no SSH)");
		else if (h->ssh_ok)
			printf("ok, %.0f ms", h->ssh_ms);
		else
			printf("failed");
		if (h->probed && h->hostname != NULL)
			printf(", hostname %s", h->hostname);
		if (h->probed && h->version != NULL)
			printf(", hvdrun %s", h->version);
		if (h->error != NULL && !h->probed)
			printf(": %s", h->error);
		putchar('\n');
	}
	if (many)
		printf("  %zu of %zu hosts connected and probed\n", ok, nc->n);
}

/* Whether h selected ifn: every other probed host reached it. */
static bool selected(const struct hl_nc_host *h, const char *ifn)
{
	size_t j;

	for (j = 0; j < h->selected.n; j++)
		if (strcmp(h->selected.v[j], ifn) == 0)
			return true;
	return false;
}

/* Interface k of host i: its addresses and who reached it. */
static void print_iface(const struct hl_netcheck *nc, size_t i, size_t k,
			const char *label, int w)
{
	const struct hl_nc_host *h = &nc->h[i];
	const char *ifn = h->ifaces.v[k];
	size_t j, a, nby = 0, nother = 0;
	char by[512] = "";

	for (j = 0; j < nc->n; j++) {
		if (j == i || !nc->h[j].probed)
			continue;
		nother++;
		if (hl_nc_reached(nc, j, i, ifn)) {
			size_t off = strlen(by);

			snprintf(by + off, sizeof(by) - off, "%s%s",
				 nby ? ", " : "", check_name(nc, j));
			nby++;
		}
	}
	printf("  %-*s  %c %-10s", w, label, selected(h, ifn) ? '*' : ' ', ifn);
	for (a = 0; a < h->naddrs; a++)
		if (h->addrs[a].candidate &&
		    strcmp(h->addrs[a].ifname, ifn) == 0)
			printf(" %s", h->addrs[a].addr);
	if (nother > 0 && nby == 0)
		printf("   reached by no other host");
	else if (nby < nother)
		printf("   reached only by %s", by);
	putchar('\n');
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
				n += !strcmp(nc->h[i].selected.v[k],
					     names.v[j]);
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
			if (many && selected(h, h->ifaces.v[k]))
				continue;
			print_iface(nc, i, k, first ? check_name(nc, i) : "",
				    w);
			first = false;
		}
		if (h->ifaces.n == 0)
			printf("  %-*s    (no candidate interface)\n", w,
			       check_name(nc, i));
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
				printf("  %-*s", w, check_name(nc, j));
		putchar('\n');
	}
	for (i = 0; i < nc->n; i++) {
		if (!nc->h[i].probed)
			continue;
		if (!many)
			printf("  %-*s", w, check_name(nc, i));
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
				printf("  %s -> %s: %s\n", check_name(nc, i),
				       check_name(nc, j), cell);
			}
		}
		if (!many)
			putchar('\n');
	}
	if (many)
		printf("  %zu ordered pairs reached nothing%s\n", none,
		       none > 20 ? " (20 shown)" : "");
}

/* A host's CPUs: how many its workers may use, in how many packages,
 * cores and NUMA nodes. */
static void print_cpus(FILE *o, const struct hl_nc_host *h, const char *label,
		       int w)
{
	const struct hl_pm_cpus *c = &h->cpus;

	fprintf(o, "  %-*s  ", w, label);
	if (c->cpus == 0) {
		fprintf(o, "not said (an older hvdrun there)\n");
		return;
	}
	fprintf(o, "%ld CPU%s: %ld package%s, %ld core%s", c->cpus,
		c->cpus == 1 ? "" : "s", c->packages,
		c->packages == 1 ? "" : "s", c->cores,
		c->cores == 1 ? "" : "s");
	if (c->cpus > c->cores)
		fprintf(o, " (%ld threads a core)",
			(c->cpus + c->cores - 1) / c->cores);
	fprintf(o, ", %ld NUMA node%s\n", c->nodes, c->nodes == 1 ? "" : "s");
}

/* With many hosts, hosts whose lines are the same are shown once. */
static void print_section(const struct hl_netcheck *nc, bool many, int w,
			  const char *title,
			  void (*print)(FILE *o, const struct hl_nc_host *h,
					const char *label, int w))
{
	char **text = calloc(nc->n ? nc->n : 1, sizeof(*text));
	bool *pick = calloc(nc->n ? nc->n : 1, sizeof(*pick));
	size_t i, j, len;

	printf("\n%s\n", title);
	for (i = 0; text != NULL && pick != NULL && i < nc->n; i++) {
		FILE *o;

		if (!nc->h[i].probed)
			continue;
		if (!many) {
			print(stdout, &nc->h[i], check_name(nc, i), w);
			continue;
		}
		o = open_memstream(&text[i], &len);
		if (o == NULL)
			continue;
		print(o, &nc->h[i], "", 0);
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

void check_print_table(const struct hl_netcheck *nc,
		       const struct hl_ncclcheck *k)
{
	size_t i, probed = 0;
	int w = check_width(nc);
	bool many;

	for (i = 0; i < nc->n; i++)
		probed += nc->h[i].probed;
	many = probed > MATRIX_HOSTS;
	print_ssh(nc, many, w);
	print_interfaces(nc, many, w);
	print_reachability(nc, many, w);
	print_section(nc, many, w, "GPUS", print_gpus);
	print_section(nc, many, w, "CPUS", print_cpus);
	putchar('\n');
	for (i = 0; i < nc->n; i++)
		if (nc->h[i].error != NULL && nc->h[i].probed)
			printf("%s\n", nc->h[i].error);
	if (nc->bandwidth)
		check_print_links(nc, many);
	if (k != NULL)
		check_print_nccl(nc, k);
	check_print_findings(nc, many);
	printf("%zu of %zu host%s usable (%.2f s)", nc->nusable, nc->n,
	       nc->n == 1 ? "" : "s", nc->seconds);
	if (nc->bandwidth)
		printf("; %zu slow link%s, %zu failed",
		       hl_nc_count(nc, HL_NCF_SLOW_LINK),
		       hl_nc_count(nc, HL_NCF_SLOW_LINK) == 1 ? "" : "s",
		       hl_nc_count(nc, HL_NCF_FAILED_LINK));
	if (k != NULL)
		printf("; NCCL: %s",
		       hl_nc_count(nc, HL_NCF_NCCL) ? "failed" : "works");
	putchar('\n');
}
