/* check_json.c: `hvdrun check --json`, written through jansson. Every
 * text from a host (host names, interface names, errors, GPU names) goes
 * through check_jtext (check_jtext.c), so that the output is always valid
 * JSON and nothing is dropped. */
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check/gpucheck.h"
#include "check/linkplan.h"
#include "check/probe_msg.h"
#include "hvdrun.h"

/* A number that is 0 or -1 when unknown: null then. */
static json_t *known(int v, int unknown)
{
	return v == unknown || v < 0 ? json_null() : json_integer(v);
}

static json_t *tristate(int v)
{
	return v < 0 ? json_null() : json_boolean(v);
}

/* GPU index's PCIe link and NVLinks, or null. */
static json_t *pcie(const struct hl_nc_host *h, int index)
{
	size_t i;

	for (i = 0; i < h->gpu.n; i++) {
		struct hl_pm_pcie p;

		if (strncmp(h->gpu.v[i], "pcie\t", 5) == 0 &&
		    hl_pm_gpu_pcie(h->gpu.v[i] + 5, &p) == HL_OK &&
		    p.index == index)
			return json_pack("{s:o,s:o,s:o,s:o,s:o}", "gen",
					 known(p.gen, 0), "gen_max",
					 known(p.gen_max, 0), "width",
					 known(p.width, 0), "width_max",
					 known(p.width_max, 0), "nvlinks_up",
					 known(p.nvlinks, -1));
	}
	return json_null();
}

/* Every pair of the host's GPUs: the PCIe path, NVLink, peer access. */
static json_t *gpu_pairs(const struct hl_nc_host *h)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a != NULL && i < h->gpu.n; i++) {
		struct hl_gpu_pair q;
		const char *path;

		if (strncmp(h->gpu.v[i], "pair\t", 5) != 0 ||
		    hl_pm_gpu_pair(h->gpu.v[i] + 5, &q) != HL_OK)
			continue;
		path = hl_gpu_level_text(q.level);
		if (!check_jpush(
			    a, json_pack("{s:i,s:i,s:o,s:o,s:o,s:o}", "a", q.a,
					 "b", q.b, "level", known(q.level, -1),
					 "path",
					 path ? json_string(path) : json_null(),
					 "nvlink", tristate(q.nvlink),
					 "peer_access", tristate(q.peer)))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *gpus(const struct hl_nc_host *h)
{
	static const char *const keys[] = {"driver",	  "cuda_runtime",
					   "cuda_driver", "cuda_devices",
					   "cuda_error",  "nccl"};
	json_t *o = json_object(), *dev = json_array(), *notes = json_array();
	size_t i, k;
	int count = 0;
	char v[32];
	long n;

	if (o == NULL || dev == NULL || notes == NULL)
		goto fail;
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *f = hl_pm_gpu_fact(&h->gpu, keys[k]);
		json_t *val;

		if (f == NULL)
			val = json_null();
		else if (k == 1 || k == 2 || k == 5)
			val = check_jtext(
				hl_gpu_version_text(f, k == 5, v, sizeof(v)));
		else if (k == 3 && hl_parse_long(f, 0, INT_MAX, &n))
			val = json_integer(n);
		else
			val = check_jtext(f);
		if (json_object_set_new(o, keys[k], val) != 0)
			goto fail;
	}
	for (i = 0; i < h->gpu.n; i++) {
		struct hl_pm_gpu g;

		if (strncmp(h->gpu.v[i], "note\t", 5) == 0 &&
		    !check_jpush(notes, check_jtext(h->gpu.v[i] + 5)))
			goto fail;
		if (strncmp(h->gpu.v[i], "gpu\t", 4) != 0 ||
		    hl_pm_gpu(h->gpu.v[i] + 4, &g) != HL_OK)
			continue;
		count++;
		if (!check_jpush(dev,
				 json_pack("{s:i,s:o,s:I,s:o}", "index",
					   g.index, "name", check_jtext(g.name),
					   "memory_bytes",
					   (json_int_t)g.mem_bytes, "pcie",
					   pcie(h, g.index))))
			goto fail;
	}
	if (json_object_set_new(o, "pairs", gpu_pairs(h)) != 0)
		goto fail;
	if (json_object_set_new(o, "count", json_integer(count)) == 0 &&
	    json_object_set_new(o, "devices", dev) == 0 &&
	    json_object_set_new(o, "notes", notes) == 0)
		return o;
	dev = notes = NULL;
fail:
	json_decref(o);
	json_decref(dev);
	json_decref(notes);
	return NULL;
}

static json_t *stat_obj(const struct hl_nc_ifstat *s)
{
	return json_pack("{s:o,s:o,s:I,s:I,s:I,s:I}", "name",
			 check_jtext(s->ifname), "speed_mbps",
			 s->speed_mbps > 0 ? json_integer(s->speed_mbps)
					   : json_null(),
			 "rx_errors", (json_int_t)s->rx_errors, "tx_errors",
			 (json_int_t)s->tx_errors, "rx_dropped",
			 (json_int_t)s->rx_dropped, "tx_dropped",
			 (json_int_t)s->tx_dropped);
}

/* Each link of the host as described, with its counters after the
 * transfers ("after": null without --bandwidth). */
static json_t *host_links(const struct hl_nc_host *h)
{
	json_t *a = json_array();
	size_t k, j;

	for (k = 0; a != NULL && k < h->nstats[0]; k++) {
		json_t *o = stat_obj(&h->stats[0][k]), *after = NULL;

		for (j = 0; j < h->nstats[1]; j++)
			if (!strcmp(h->stats[1][j].ifname,
				    h->stats[0][k].ifname))
				after = stat_obj(&h->stats[1][j]);
		if (o == NULL ||
		    json_object_set_new(o, "after",
					after ? after : json_null()) != 0 ||
		    !check_jpush(a, o)) {
			json_decref(o);
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *interfaces(const struct hl_netcheck *nc, size_t i)
{
	const struct hl_nc_host *h = &nc->h[i];
	json_t *a = json_array();
	size_t k, x;

	for (k = 0; a != NULL && k < h->ifaces.n; k++) {
		const char *ifn = h->ifaces.v[k];
		json_t *addrs = json_array(), *by = json_array();
		bool sel = false;

		for (x = 0; x < h->selected.n; x++)
			sel |= strcmp(h->selected.v[x], ifn) == 0;
		for (x = 0; addrs != NULL && x < h->naddrs; x++)
			if (h->addrs[x].candidate &&
			    !strcmp(h->addrs[x].ifname, ifn))
				check_jpush(addrs,
					    check_jtext(h->addrs[x].addr));
		for (x = 0; by != NULL && x < nc->n; x++)
			if (x != i && hl_nc_reached(nc, x, i, ifn))
				check_jpush(by, check_jtext(check_name(nc, x)));
		if (!check_jpush(a, json_pack("{s:o,s:b,s:o,s:o}", "name",
					      check_jtext(ifn), "selected", sel,
					      "addresses", addrs, "reached_by",
					      by))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* A host's CPUs ('H'), or null where its probe did not say. */
static json_t *cpus(const struct hl_nc_host *h)
{
	const struct hl_pm_cpus *c = &h->cpus;

	if (!h->probed || c->cpus == 0)
		return json_null();
	return json_pack("{s:I,s:I,s:I,s:I}", "cpus", (json_int_t)c->cpus,
			 "packages", (json_int_t)c->packages, "cores",
			 (json_int_t)c->cores, "numa_nodes",
			 (json_int_t)c->nodes);
}

static json_t *hosts(const struct hl_netcheck *nc)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a != NULL && i < nc->n; i++) {
		const struct hl_nc_host *h = &nc->h[i];

		if (!check_jpush(
			    a,
			    json_pack("{s:o,s:i,s:b,s:o?,s:{s:b,s:b,s:f},s:o?,"
				      "s:o?,s:o?,s:o,s:o,s:o,s:o,s:o,s:o}",
				      "host", check_jtext(h->host->name),
				      "slots", h->host->slots, "usable",
				      h->usable, "error", check_jtext(h->error),
				      "ssh", "used", h->remote, "ok",
				      (!h->remote || h->ssh_ok) &&
					      (h->probed || h->ssh_ok),
				      "ms", h->ssh_ms, "hostname",
				      check_jtext(h->hostname), "hvdrun",
				      check_jtext(h->version), "agent_protocol",
				      h->agent_proto
					      ? json_integer(h->agent_proto)
					      : NULL,
				      "interfaces", interfaces(nc, i),
				      "selected", check_jstrings(&h->selected),
				      "links", host_links(h), "gpus",
				      h->probed ? gpus(h) : json_null(), "cpus",
				      cpus(h), "workers_folder_ok",
				      h->folder ? json_boolean(h->folder[0] ==
							       '\0')
						: json_null()))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *pairs(const struct hl_netcheck *nc)
{
	json_t *a = json_array();
	size_t p;

	for (p = 0; a != NULL && p < nc->npairs; p++) {
		const struct hl_nc_pair *q = &nc->pairs[p];

		if (!check_jpush(
			    a,
			    json_pack("{s:o,s:o,s:o,s:o,s:b,s:f,s:o?}", "from",
				      check_jtext(check_name(nc, q->from)),
				      "to", check_jtext(check_name(nc, q->to)),
				      "interface",
				      check_jtext(hl_nc_pair_ifname(nc, q)),
				      "address",
				      check_jtext(
					      nc->h[q->to].addrs[q->addr].addr),
				      "ok", q->ok, "ms", q->ms, "error",
				      check_jtext(q->done ? q->error
							  : "no result")))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *bandwidth(const struct hl_netcheck *nc)
{
	json_t *ifs = json_array(), *links = json_array();
	struct hl_strvec names;
	size_t i, k;

	hl_strvec_init(&names);
	if (ifs == NULL || links == NULL ||
	    hl_nc_link_ifnames(nc, &names) != HL_OK)
		goto fail;
	for (k = 0; k < names.n; k++) {
		double g = 0, r = 0;
		bool any = hl_nc_link_medians(nc, names.v[k], &g, &r);
		int n = 0, slow = 0, failed = 0;

		for (i = 0; i < nc->nlinks; i++) {
			const struct hl_nc_link *l = &nc->links[i];

			if (strcmp(hl_nc_link_ifname(nc, l), names.v[k]) != 0)
				continue;
			n++;
			slow += l->slow;
			failed += !l->ok;
		}
		if (!check_jpush(
			    ifs,
			    json_pack("{s:o,s:o,s:o,s:i,s:i,s:i}", "name",
				      check_jtext(names.v[k]), "median_gbps",
				      any ? json_real(g) : json_null(),
				      "median_rtt_us",
				      any ? json_real(r) : json_null(), "links",
				      n, "slow", slow, "failed", failed)))
			goto fail;
	}
	for (i = 0; i < nc->nlinks; i++) {
		const struct hl_nc_link *l = &nc->links[i];

		if (!check_jpush(
			    links,
			    json_pack(
				    "{s:o,s:o,s:o,s:o,s:i,s:b,s:b,s:o,s:o,s:o,"
				    "s:I,s:f,s:o?}",
				    "from",
				    check_jtext(check_name(nc, l->from)), "to",
				    check_jtext(check_name(nc, l->to)),
				    "interface",
				    check_jtext(hl_nc_link_ifname(nc, l)),
				    "address",
				    check_jtext(
					    nc->h[l->to].addrs[l->addr].addr),
				    "round", (int)l->round, "ok", l->ok, "slow",
				    l->slow, "gbps",
				    l->ok ? json_real(l->gbps) : json_null(),
				    "first_gbps",
				    l->twice ? json_real(l->first_gbps)
					     : json_null(),
				    "rtt_us",
				    l->ok ? json_real(l->rtt_us) : json_null(),
				    "bytes", (json_int_t)l->bytes, "seconds",
				    l->seconds, "error",
				    check_jtext(l->error))))
			goto fail;
	}
	hl_strvec_close(&names);
	return json_pack("{s:f,s:I,s:i,s:i,s:o,s:o}", "seconds_per_link",
			 nc->bw_ms / 1000.0, "bytes_per_link",
			 (json_int_t)nc->bw_bytes, "rounds", (int)nc->nrounds,
			 "retry_rounds", (int)nc->nretries, "interfaces", ifs,
			 "links", links);
fail:
	hl_strvec_close(&names);
	json_decref(ifs);
	json_decref(links);
	return NULL;
}

static const char *kind_name(enum hl_nc_finding_kind k)
{
	switch (k) {
	case HL_NCF_SLOW_LINK:
		return "slow_link";
	case HL_NCF_FAILED_LINK:
		return "failed_link";
	case HL_NCF_LOW_SPEED:
		return "low_speed";
	case HL_NCF_ERRORS:
		return "errors";
	case HL_NCF_DROPS:
		return "drops";
	case HL_NCF_PCIE:
		return "gpu_pcie";
	case HL_NCF_NCCL:
		return "nccl";
	case HL_NCF_GPU_SLOTS:
		return "gpu_slots";
	case HL_NCF_FOLDER:
		return "workers_folder";
	case HL_NCF_CPU_SLOTS:
		return "cpu_slots";
	case HL_NCF_NO_PEER:
	default:
		return "gpu_no_peer";
	}
}

static json_t *findings(const struct hl_netcheck *nc)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a != NULL && i < nc->nfindings; i++) {
		const struct hl_nc_finding *f = &nc->findings[i];
		const struct hl_nc_link *l =
			f->link < nc->nlinks ? &nc->links[f->link] : NULL;

		if (!check_jpush(
			    a, json_pack("{s:s,s:o,s:o?,s:o?,s:o}", "kind",
					 kind_name(f->kind), "host",
					 check_jtext(check_name(nc, f->host)),
					 "to",
					 l ? check_jtext(check_name(nc, l->to))
					   : NULL,
					 "interface", check_jtext(f->ifname),
					 "text", check_jtext(f->text)))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

int check_print_json(const struct hl_netcheck *nc, const struct hl_ncclcheck *k,
		     bool fail_on_slow)
{
	json_t *root = json_pack(
		"{s:b,s:f,s:f,s:b,s:o,s:o,s:o,s:o,s:o,s:o}", "ok",
		hl_nc_status(nc, fail_on_slow) == 0, "seconds", nc->seconds,
		"timeout_seconds", nc->timeout_ms / 1000.0, "loopback",
		nc->loopback, "hosts", hosts(nc), "pairs", pairs(nc),
		"bandwidth", nc->bandwidth ? bandwidth(nc) : json_null(),
		"nccl", k ? check_nccl_json(nc, k) : json_null(), "findings",
		findings(nc), "workers_folder", check_jtext(nc->folder));
	int rc;

	if (root == NULL)
		return HL_ENOMEM;
	rc = json_dumpf(root, stdout, JSON_COMPACT | JSON_REAL_PRECISION(6));
	json_decref(root);
	putchar('\n');
	return rc == 0 ? HL_OK : HL_ENOMEM;
}
