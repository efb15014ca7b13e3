/* check_json.c: `hvdrun check --json`, written through jansson. Every
 * text from a host (host names, interface names, errors, GPU names) goes
 * through jtext: valid UTF-8 as it is, each byte that is not as the four
 * characters \xHH, so that the output is always valid JSON and nothing
 * is dropped. */
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

/* The length of the valid UTF-8 sequence at s (n bytes there), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned long cp;
	size_t k, len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (k = 1; k < len; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[k] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/* A JSON string of s (NULL: NULL, which json_pack's "o?" makes null). */
static json_t *jtext(const char *s)
{
	size_t n, i = 0, k;
	char *out, *o;
	json_t *j;

	if (s == NULL)
		return NULL;
	n = strlen(s);
	out = malloc(n * 4 + 1);
	if (out == NULL)
		return NULL;
	for (o = out; i < n; i += k) {
		k = utf8_len((const unsigned char *)s + i, n - i);
		if (k == 0) {
			o += sprintf(o, "\\x%02x", (unsigned char)s[i]);
			k = 1;
			continue;
		}
		memcpy(o, s + i, k);
		o += k;
	}
	*o = '\0';
	j = json_string(out);
	free(out);
	return j;
}

/* Append v to array a; false when v is NULL (no memory). */
static bool push(json_t *a, json_t *v)
{
	return v != NULL && json_array_append_new(a, v) == 0;
}

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
		if (!push(a, json_pack("{s:i,s:i,s:o,s:o,s:o,s:o}", "a", q.a,
				       "b", q.b, "level", known(q.level, -1),
				       "path", path ? json_string(path)
						    : json_null(),
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
	static const char *const keys[] = {"driver",	   "cuda_runtime",
					   "cuda_driver",  "cuda_devices",
					   "cuda_error",   "nccl"};
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
			val = jtext(hl_gpu_version_text(f, k == 5, v, sizeof(v)));
		else if (k == 3 && hl_parse_long(f, 0, INT_MAX, &n))
			val = json_integer(n);
		else
			val = jtext(f);
		if (json_object_set_new(o, keys[k], val) != 0)
			goto fail;
	}
	for (i = 0; i < h->gpu.n; i++) {
		struct hl_pm_gpu g;

		if (strncmp(h->gpu.v[i], "note\t", 5) == 0 &&
		    !push(notes, jtext(h->gpu.v[i] + 5)))
			goto fail;
		if (strncmp(h->gpu.v[i], "gpu\t", 4) != 0 ||
		    hl_pm_gpu(h->gpu.v[i] + 4, &g) != HL_OK)
			continue;
		count++;
		if (!push(dev, json_pack("{s:i,s:o,s:I,s:o}", "index", g.index,
					 "name", jtext(g.name), "memory_bytes",
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
	return json_pack("{s:o,s:o,s:I,s:I,s:I,s:I}", "name", jtext(s->ifname),
			 "speed_mbps",
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
		    !push(a, o)) {
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
				push(addrs, jtext(h->addrs[x].addr));
		for (x = 0; by != NULL && x < nc->n; x++)
			if (x != i && hl_nc_reached(nc, x, i, ifn))
				push(by, jtext(check_name(nc, x)));
		if (!push(a, json_pack("{s:o,s:b,s:o,s:o}", "name", jtext(ifn),
				       "selected", sel, "addresses", addrs,
				       "reached_by", by))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *strings(const struct hl_strvec *v)
{
	json_t *a = json_array();
	size_t k;

	for (k = 0; a != NULL && k < v->n; k++)
		if (!push(a, jtext(v->v[k]))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *hosts(const struct hl_netcheck *nc)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a != NULL && i < nc->n; i++) {
		const struct hl_nc_host *h = &nc->h[i];

		if (!push(a,
			  json_pack("{s:o,s:i,s:b,s:o?,s:{s:b,s:b,s:f},s:o?,"
				    "s:o,s:o,s:o,s:o}",
				    "host", jtext(h->host->name), "slots",
				    h->host->slots, "usable", h->usable,
				    "error", jtext(h->error), "ssh", "used",
				    h->remote, "ok",
				    (!h->remote || h->ssh_ok) &&
					    (h->probed || h->ssh_ok),
				    "ms", h->ssh_ms, "hostname",
				    jtext(h->hostname), "interfaces",
				    interfaces(nc, i), "selected",
				    strings(&h->selected), "links",
				    host_links(h), "gpus",
				    h->probed ? gpus(h) : json_null()))) {
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

		if (!push(a, json_pack("{s:o,s:o,s:o,s:o,s:b,s:f,s:o?}",
				       "from", jtext(check_name(nc, q->from)),
				       "to", jtext(check_name(nc, q->to)),
				       "interface",
				       jtext(hl_nc_pair_ifname(nc, q)),
				       "address",
				       jtext(nc->h[q->to].addrs[q->addr].addr),
				       "ok", q->ok, "ms", q->ms, "error",
				       jtext(q->done ? q->error
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
		if (!push(ifs, json_pack("{s:o,s:o,s:o,s:i,s:i,s:i}", "name",
					 jtext(names.v[k]), "median_gbps",
					 any ? json_real(g) : json_null(),
					 "median_rtt_us",
					 any ? json_real(r) : json_null(),
					 "links", n, "slow", slow, "failed",
					 failed)))
			goto fail;
	}
	for (i = 0; i < nc->nlinks; i++) {
		const struct hl_nc_link *l = &nc->links[i];

		if (!push(links,
			  json_pack("{s:o,s:o,s:o,s:o,s:i,s:b,s:b,s:o,s:o,s:I,"
				    "s:f,s:o?}",
				    "from", jtext(check_name(nc, l->from)), "to",
				    jtext(check_name(nc, l->to)), "interface",
				    jtext(hl_nc_link_ifname(nc, l)),
				    "address",
				    jtext(nc->h[l->to].addrs[l->addr].addr),
				    "round", (int)l->round, "ok", l->ok,
				    "slow", l->slow, "gbps",
				    l->ok ? json_real(l->gbps) : json_null(),
				    "rtt_us",
				    l->ok ? json_real(l->rtt_us) : json_null(),
				    "bytes", (json_int_t)l->bytes, "seconds",
				    l->seconds, "error", jtext(l->error))))
			goto fail;
	}
	hl_strvec_close(&names);
	return json_pack("{s:f,s:I,s:i,s:o,s:o}", "seconds_per_link",
			 nc->bw_ms / 1000.0, "bytes_per_link",
			 (json_int_t)nc->bw_bytes, "rounds", (int)nc->nrounds,
			 "interfaces", ifs, "links", links);
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

		if (!push(a, json_pack("{s:s,s:o,s:o?,s:o?,s:o}", "kind",
				       kind_name(f->kind), "host",
				       jtext(check_name(nc, f->host)), "to",
				       l ? jtext(check_name(nc, l->to)) : NULL,
				       "interface", jtext(f->ifname), "text",
				       jtext(f->text)))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

int check_print_json(const struct hl_netcheck *nc, bool fail_on_slow)
{
	json_t *root = json_pack(
		"{s:b,s:f,s:f,s:b,s:o,s:o,s:o,s:o}", "ok",
		hl_nc_status(nc, fail_on_slow) == 0, "seconds", nc->seconds,
		"timeout_seconds", nc->timeout_ms / 1000.0, "loopback",
		nc->loopback, "hosts", hosts(nc), "pairs", pairs(nc),
		"bandwidth", nc->bandwidth ? bandwidth(nc) : json_null(),
		"findings", findings(nc));
	int rc;

	if (root == NULL)
		return HL_ENOMEM;
	rc = json_dumpf(root, stdout, JSON_COMPACT | JSON_REAL_PRECISION(6));
	json_decref(root);
	putchar('\n');
	return rc == 0 ? HL_OK : HL_ENOMEM;
}
