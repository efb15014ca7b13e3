/* check.c: `hvdrun check`, the preflight of a cluster (lib/check/netcheck.h),
 * and its report: a table for people, JSON for programs. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/gpucheck.h"
#include "job/host_source.h"
#include "config/hosts.h"
#include "hvdrun.h"
#include "check/netcheck.h"
#include "check/probe_msg.h"

struct progress {
	bool tty;
	bool shown;
};

static void on_progress(void *arg, const char *phase, size_t done, size_t total)
{
	struct progress *p = arg;

	if (!p->tty)
		return;
	fprintf(stderr, "\r\033[Khvdrun check: %s: %zu of %zu hosts", phase,
		done, total);
	fflush(stderr);
	p->shown = true;
}

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

/* A version fact of a host's probe ("12040"), as people write it; the
 * text as it came when it is not a number. */
static const char *version_of(const char *fact, bool nccl, char *v, size_t len)
{
	long n;

	if (!hl_parse_long(fact, 0, INT_MAX, &n))
		snprintf(v, len, "%s", fact);
	else if (nccl)
		hl_gpu_nccl_version((int)n, v, len);
	else
		hl_gpu_cuda_version((int)n, v, len);
	return v;
}

static void print_gpus(const struct hl_nc_host *h, int w)
{
	const char *drv = hl_pm_gpu_fact(&h->gpu, "driver"),
		   *rt = hl_pm_gpu_fact(&h->gpu, "cuda_runtime"),
		   *cd = hl_pm_gpu_fact(&h->gpu, "cuda_driver"),
		   *ce = hl_pm_gpu_fact(&h->gpu, "cuda_error"),
		   *nccl = hl_pm_gpu_fact(&h->gpu, "nccl");
	char v[32];
	size_t i;
	int n = gpu_count(h);

	printf("  %-*s  ", w, h->host->name);
	if (drv != NULL)
		printf("driver %s, %d GPU%s", drv, n, n == 1 ? "" : "s");
	else
		printf("no GPU");
	if (rt != NULL) {
		printf("; CUDA runtime %s",
		       version_of(rt, false, v, sizeof(v)));
		if (cd != NULL)
			printf(" (driver's CUDA %s)",
			       version_of(cd, false, v, sizeof(v)));
	}
	if (nccl != NULL)
		printf("; NCCL %s", version_of(nccl, true, v, sizeof(v)));
	putchar('\n');
	for (i = 0; i < h->gpu.n; i++) {
		const char *f = h->gpu.v[i];

		struct hl_pm_gpu g;

		if (strncmp(f, "gpu\t", 4) == 0) {
			if (hl_pm_gpu(f + 4, &g) == HL_OK)
				printf("  %-*s    GPU %d: %s, %llu MiB\n", w,
				       "", g.index, g.name, g.mem_bytes >> 20);
		} else if (strncmp(f, "note\t", 5) == 0) {
			printf("  %-*s    %s\n", w, "", f + 5);
		}
	}
	if (ce != NULL && drv != NULL)
		printf("  %-*s    CUDA: %s\n", w, "", ce);
	if (n > 0 && h->host->slots > n)
		printf("  %-*s    warning: %d slots but %d GPU%s\n", w, "",
		       h->host->slots, n, n == 1 ? "" : "s");
}

static void print_table(const struct hl_netcheck *nc)
{
	int w = width(nc);
	size_t i, j, k, a;

	printf("SSH\n");
	for (i = 0; i < nc->n; i++) {
		const struct hl_nc_host *h = &nc->h[i];

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
	printf("\nINTERFACES (* selected: reached from every other host)\n");
	for (i = 0; i < nc->n; i++) {
		const struct hl_nc_host *h = &nc->h[i];
		bool first = true;

		if (!h->probed)
			continue;
		for (k = 0; k < h->ifaces.n; k++) {
			const char *ifn = h->ifaces.v[k];
			bool sel = false;
			size_t nby = 0, nother = 0;
			char by[512] = "";

			for (j = 0; j < h->selected.n; j++)
				sel |= strcmp(h->selected.v[j], ifn) == 0;
			for (j = 0; j < nc->n; j++) {
				if (j == i || !nc->h[j].probed)
					continue;
				nother++;
				if (hl_nc_reached(nc, j, i, ifn)) {
					size_t off = strlen(by);

					snprintf(by + off, sizeof(by) - off,
						 "%s%s", nby ? ", " : "",
						 name_of(nc, j));
					nby++;
				}
			}
			printf("  %-*s  %c %-10s", w,
			       first ? name_of(nc, i) : "", sel ? '*' : ' ',
			       ifn);
			first = false;
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
		if (h->ifaces.n == 0)
			printf("  %-*s    (no candidate interface)\n", w,
			       name_of(nc, i));
	}
	if (nc->npairs > 0) {
		printf("\nREACHABILITY (row to column: the interfaces reached)\n");
		printf("  %-*s", w, "");
		for (j = 0; j < nc->n; j++)
			if (nc->h[j].probed)
				printf("  %-*s", w, name_of(nc, j));
		putchar('\n');
		for (i = 0; i < nc->n; i++) {
			if (!nc->h[i].probed)
				continue;
			printf("  %-*s", w, name_of(nc, i));
			for (j = 0; j < nc->n; j++) {
				char cell[256] = "";
				size_t off = 0;

				if (!nc->h[j].probed)
					continue;
				if (i == j) {
					snprintf(cell, sizeof(cell), "-");
				} else {
					for (k = 0; k < nc->h[j].ifaces.n; k++)
						if (hl_nc_reached(
							    nc, i, j,
							    nc->h[j].ifaces
								    .v[k]))
							off += (size_t)snprintf(
								cell + off,
								sizeof(cell) -
									off,
								"%s%s",
								off ? "," : "",
								nc->h[j].ifaces
									.v[k]);
					if (off == 0)
						snprintf(cell, sizeof(cell),
							 hl_nc_tested(nc, i, j)
								 ? "NONE"
								 : "?");
				}
				printf("  %-*s", w, cell);
			}
			putchar('\n');
		}
	}
	printf("\nGPUS\n");
	for (i = 0; i < nc->n; i++)
		if (nc->h[i].probed)
			print_gpus(&nc->h[i], w);
	putchar('\n');
	for (i = 0; i < nc->n; i++)
		if (nc->h[i].error != NULL && nc->h[i].probed)
			printf("%s\n", nc->h[i].error);
	printf("%zu of %zu host%s usable (%.2f s)\n", nc->nusable, nc->n,
	       nc->n == 1 ? "" : "s", nc->seconds);
}

static void jstr(const char *s)
{
	if (s == NULL) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\t')
			fputs("\\t", stdout);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_gpus(const struct hl_nc_host *h)
{
	const char *keys[] = {"driver",	      "cuda_runtime", "cuda_driver",
			      "cuda_devices", "cuda_error",   "nccl"};
	size_t i, k;
	bool first = true;
	char v[32];
	long n;

	printf("{");
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *f = hl_pm_gpu_fact(&h->gpu, keys[k]);

		printf("\"%s\":", keys[k]);
		if (f != NULL && (!strcmp(keys[k], "cuda_runtime") ||
				  !strcmp(keys[k], "cuda_driver") ||
				  !strcmp(keys[k], "nccl"))) {
			jstr(version_of(f, !strcmp(keys[k], "nccl"), v,
					sizeof(v)));
		} else if (f != NULL && !strcmp(keys[k], "cuda_devices") &&
			   hl_parse_long(f, 0, INT_MAX, &n)) {
			printf("%ld", n);
		} else {
			jstr(f);
		}
		putchar(',');
	}
	printf("\"count\":%d,\"devices\":[", gpu_count(h));
	for (i = 0; i < h->gpu.n; i++) {
		struct hl_pm_gpu g;

		if (strncmp(h->gpu.v[i], "gpu\t", 4) != 0 ||
		    hl_pm_gpu(h->gpu.v[i] + 4, &g) != HL_OK)
			continue;
		printf("%s{\"index\":%d,\"name\":", first ? "" : ",", g.index);
		jstr(g.name);
		printf(",\"memory_bytes\":%llu}", g.mem_bytes);
		first = false;
	}
	printf("],\"notes\":[");
	first = true;
	for (i = 0; i < h->gpu.n; i++)
		if (strncmp(h->gpu.v[i], "note\t", 5) == 0) {
			printf("%s", first ? "" : ",");
			jstr(h->gpu.v[i] + 5);
			first = false;
		}
	printf("]}");
}

static void print_json(const struct hl_netcheck *nc)
{
	size_t i, k, a, p;

	printf("{\"ok\":%s,\"seconds\":%.3f,\"timeout_seconds\":%.3f,"
	       "\"loopback\":%s,\"hosts\":[",
	       nc->nusable == nc->n ? "true" : "false", nc->seconds,
	       nc->timeout_ms / 1000.0, nc->loopback ? "true" : "false");
	for (i = 0; i < nc->n; i++) {
		const struct hl_nc_host *h = &nc->h[i];

		printf("%s{\"host\":", i ? "," : "");
		jstr(h->host->name);
		printf(",\"slots\":%d,\"usable\":%s,\"error\":", h->host->slots,
		       h->usable ? "true" : "false");
		jstr(h->error);
		printf(",\"ssh\":{\"used\":%s,\"ok\":%s,\"ms\":%.1f},"
		       "\"hostname\":",
		       h->remote ? "true" : "false",
		       (!h->remote || h->ssh_ok) && (h->probed || h->ssh_ok)
			       ? "true"
			       : "false",
		       h->ssh_ms);
		jstr(h->hostname);
		printf(",\"interfaces\":[");
		for (k = 0; k < h->ifaces.n; k++) {
			bool sel = false, first = true;

			for (a = 0; a < h->selected.n; a++)
				sel |= strcmp(h->selected.v[a],
					      h->ifaces.v[k]) == 0;
			printf("%s{\"name\":", k ? "," : "");
			jstr(h->ifaces.v[k]);
			printf(",\"selected\":%s,\"addresses\":[",
			       sel ? "true" : "false");
			for (a = 0; a < h->naddrs; a++)
				if (h->addrs[a].candidate &&
				    !strcmp(h->addrs[a].ifname,
					    h->ifaces.v[k])) {
					printf("%s", first ? "" : ",");
					jstr(h->addrs[a].addr);
					first = false;
				}
			printf("],\"reached_by\":[");
			first = true;
			for (a = 0; a < nc->n; a++)
				if (a != i &&
				    hl_nc_reached(nc, a, i, h->ifaces.v[k])) {
					printf("%s", first ? "" : ",");
					jstr(name_of(nc, a));
					first = false;
				}
			printf("]}");
		}
		printf("],\"selected\":[");
		for (k = 0; k < h->selected.n; k++) {
			printf("%s", k ? "," : "");
			jstr(h->selected.v[k]);
		}
		printf("],\"gpus\":");
		if (h->probed)
			json_gpus(h);
		else
			printf("null");
		printf("}");
	}
	printf("],\"pairs\":[");
	for (p = 0; p < nc->npairs; p++) {
		const struct hl_nc_pair *q = &nc->pairs[p];

		printf("%s{\"from\":", p ? "," : "");
		jstr(name_of(nc, q->from));
		printf(",\"to\":");
		jstr(name_of(nc, q->to));
		printf(",\"interface\":");
		jstr(hl_nc_pair_ifname(nc, q));
		printf(",\"address\":");
		jstr(nc->h[q->to].addrs[q->addr].addr);
		printf(",\"ok\":%s,\"ms\":%.3f,\"error\":",
		       q->ok ? "true" : "false", q->ms);
		jstr(q->done ? q->error : "no result");
		printf("}");
	}
	printf("]}\n");
}

static void print_report(const struct hl_netcheck *nc, bool json)
{
	if (json)
		print_json(nc);
	else
		print_table(nc);
	fflush(stdout);
}

static int check(int *code, char **cause)
{
	struct hl_opts *o = &cmd_args.opts;
	struct hl_hostlist hosts;
	struct hl_ssh_opts so = {0};
	struct hl_netcheck nc;
	struct progress pr = {.tty = isatty(2) && !cmd_args.json};
	int rc;

	hl_hostlist_init(&hosts);
	/* Without hosts: this machine. */
	rc = hl_hosts_for_job(o, cmd_args.from_cli, cmd_args.config_file,
			      "localhost", NULL, &hosts, cause);
	if (rc == HL_OK) {
		cmd_warnings(&hosts.warnings);
		rc = hl_ssh_opts_from(&so, o, cause);
		so.log = cmd_log_ssh;
	}
	if (rc == HL_OK)
		rc = hl_netcheck_run(&nc, &hosts, NULL, &so,
				     (int)(o->v[HL_K_NETWORK_TIMEOUT].d * 1000),
				     on_progress, &pr, cause);
	if (pr.shown)
		fputs("\r\033[K", stderr);
	if (rc == HL_OK) {
		print_report(&nc, cmd_args.json);
		*code = nc.nusable == nc.n ? 0 : 1;
		hl_netcheck_close(&nc);
	}
	hl_ssh_opts_close(&so);
	hl_hostlist_close(&hosts);
	return rc;
}

int cmd_check_main(int argc, char **argv)
{
	char *cause = NULL;
	int code = 0, rc;

	if (!cmd_options(argc, argv, true, &code))
		return code;
	rc = check(&code, &cause);
	return cmd_finish(rc, cause, code);
}
