/* netplan.c: see netplan.h. */
#include "check/netplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/probe_msg.h"

void hl_nc_host_init(struct hl_nc_host *h, const struct hl_host *host,
		     bool remote)
{
	memset(h, 0, sizeof(*h));
	h->host = host;
	h->remote = remote;
	hl_strvec_init(&h->gpu);
	hl_strvec_init(&h->ifaces);
	hl_strvec_init(&h->selected);
}

void hl_nc_take_description(struct hl_nc_host *h, char type, const char *data,
			    size_t len)
{
	struct hl_pm_iface i;
	struct hl_nc_addr *a;
	char ver[64], *s;

	switch (type) {
	case 'N':
	case 'M':
		s = hl_strndup(data, len);
		if (s == NULL)
			return;
		free(type == 'N' ? h->hostname : h->machine);
		*(type == 'N' ? &h->hostname : &h->machine) = s;
		return;
	case 'V':
		free(h->version);
		h->version = NULL;
		if (hl_rec_version_of(data, len, &h->agent_proto, ver,
				      sizeof(ver)) == HL_OK)
			h->version = hl_strdup(ver);
		return;
	case 'K':
		if (hl_pm_token(data, len, h->token) != HL_OK)
			h->token[0] = '\0';
		return;
	case 'P':
		if (hl_pm_port(data, len, &h->port) != HL_OK)
			h->port = 0;
		return;
	case 'Q':
		if (hl_pm_port(data, len, &h->sink_port) != HL_OK)
			h->sink_port = 0;
		return;
	case 'L':
		hl_nc_take_stats(h, 0, data, len);
		return;
	case 'I':
		if (hl_pm_iface(data, len, &i) != HL_OK)
			return;
		a = realloc(h->addrs, (h->naddrs + 1) * sizeof(*a));
		if (a == NULL)
			return;
		h->addrs = a;
		a = &h->addrs[h->naddrs++];
		a->ifname = hl_strdup(i.ifname);
		a->addr = hl_strdup(i.addr);
		a->loopback = i.loopback;
		a->candidate = false;
		return;
	case 'H':
		if (hl_pm_cpus(data, len, &h->cpus) != HL_OK)
			memset(&h->cpus, 0, sizeof(h->cpus));
		return;
	case 'U':
		s = hl_strndup(data, len);
		if (s != NULL)
			hl_strvec_push_owned(&h->gpu, s);
		return;
	default:
		return;
	}
}

void hl_nc_take_stats(struct hl_nc_host *h, int when, const char *data,
		      size_t len)
{
	struct hl_pm_link l;
	struct hl_nc_ifstat *v;

	if (hl_pm_link(data, len, &l) != HL_OK)
		return;
	v = realloc(h->stats[when], (h->nstats[when] + 1) * sizeof(*v));
	if (v == NULL)
		return;
	h->stats[when] = v;
	v = &v[h->nstats[when]];
	v->ifname = hl_strdup(l.ifname);
	if (v->ifname == NULL)
		return;
	v->speed_mbps = l.speed_mbps;
	v->rx_errors = l.rx_errors;
	v->tx_errors = l.tx_errors;
	v->rx_dropped = l.rx_dropped;
	v->tx_dropped = l.tx_dropped;
	h->nstats[when]++;
}

void hl_nc_take_result(struct hl_netcheck *nc, const char *data, size_t len)
{
	struct hl_pm_result r;

	if (hl_pm_result(data, len, &r) == HL_OK && r.id < (long)nc->npairs) {
		struct hl_nc_pair *p = &nc->pairs[r.id];

		p->done = true;
		p->ok = r.ok;
		p->ms = r.us / 1000.0;
		free(p->error);
		p->error = p->ok ? NULL : hl_strdup(r.error);
	}
}

int hl_nc_plan(struct hl_netcheck *nc, const char *own)
{
	size_t i, j, a, np = 0, cap = 0;

	nc->loopback = true;
	for (i = 0; i < nc->n; i++)
		if (nc->h[i].probed && (nc->h[i].machine == NULL ||
					strcmp(nc->h[i].machine, own) != 0))
			nc->loopback = false;
	for (i = 0; i < nc->n; i++) {
		struct hl_nc_host *h = &nc->h[i];

		for (a = 0; a < h->naddrs; a++) {
			struct hl_nc_addr *ad = &h->addrs[a];
			size_t k;
			bool seen = false;

			ad->candidate = nc->loopback || !ad->loopback;
			if (!ad->candidate)
				continue;
			for (k = 0; k < h->ifaces.n; k++)
				seen |= strcmp(h->ifaces.v[k], ad->ifname) == 0;
			if (!seen && hl_strvec_push(&h->ifaces, ad->ifname))
				return HL_ENOMEM;
		}
	}
	for (i = 0; i < nc->n; i++)
		for (j = 0; j < nc->n; j++)
			for (a = 0; i != j && nc->h[i].probed &&
				    nc->h[j].probed && a < nc->h[j].naddrs;
			     a++) {
				struct hl_nc_pair *p;

				if (!nc->h[j].addrs[a].candidate)
					continue;
				if (np == cap) {
					cap = cap ? cap * 2 : 64;
					p = realloc(nc->pairs,
						    cap * sizeof(*p));
					if (p == NULL)
						return HL_ENOMEM;
					nc->pairs = p;
				}
				p = &nc->pairs[np];
				memset(p, 0, sizeof(*p));
				p->from = i;
				p->to = j;
				p->addr = a;
				nc->npairs = ++np;
			}
	return HL_OK;
}

bool hl_nc_reached(const struct hl_netcheck *nc, size_t i, size_t j,
		   const char *ifname)
{
	size_t p;

	for (p = 0; p < nc->npairs; p++) {
		const struct hl_nc_pair *q = &nc->pairs[p];

		if (q->from == i && q->to == j && q->ok &&
		    strcmp(hl_nc_pair_ifname(nc, q), ifname) == 0)
			return true;
	}
	return false;
}

bool hl_nc_tested(const struct hl_netcheck *nc, size_t i, size_t j)
{
	size_t p;

	for (p = 0; p < nc->npairs; p++)
		if (nc->pairs[p].from == i && nc->pairs[p].to == j)
			return true;
	return false;
}

/* An interface of host j is selected when every other probed host
 * reached one of its addresses. */
void hl_nc_select(struct hl_netcheck *nc)
{
	size_t i, j, k, p, nprobed = 0;

	for (i = 0; i < nc->n; i++)
		nprobed += nc->h[i].probed;
	for (j = 0; j < nc->n; j++) {
		struct hl_nc_host *h = &nc->h[j];

		if (!h->probed)
			continue;
		for (k = 0; k < h->ifaces.n; k++) {
			bool all = true;

			for (i = 0; i < nc->n && all; i++)
				if (i != j && nc->h[i].probed)
					all = hl_nc_reached(nc, i, j,
							    h->ifaces.v[k]);
			if (all)
				hl_strvec_push(&h->selected, h->ifaces.v[k]);
		}
		/* The selected interfaces first, each group in the host's
		 * order. */
		for (k = 0, p = 0; k < h->ifaces.n; k++) {
			bool sel = false;
			size_t q;

			for (q = 0; q < h->selected.n; q++)
				sel |= !strcmp(h->selected.v[q],
					       h->ifaces.v[k]);
			if (sel) {
				char *tmp = h->ifaces.v[k];

				memmove(&h->ifaces.v[p + 1], &h->ifaces.v[p],
					(k - p) * sizeof(char *));
				h->ifaces.v[p++] = tmp;
			}
		}
		h->usable = h->selected.n > 0 || (nprobed == 1 && nc->n == 1);
		if (h->agent_proto != 0 && h->agent_proto != HL_AGENT_PROTO) {
			h->usable = false;
			if (h->error == NULL)
				h->error = hl_asprintf(
					"host '%s': its hvdrun (%s, agent protocol %u) cannot start ranks for this one (%s, agent protocol %d): install the same hvdrun on every host",
					h->host->name,
					h->version ? h->version : "?",
					h->agent_proto, HVD_VERSION,
					HL_AGENT_PROTO);
		}
		if (!h->usable && h->error == NULL)
			h->error = hl_asprintf(
				"host '%s': no interface is reached by every other host",
				h->host->name);
	}
}

void hl_netcheck_close(struct hl_netcheck *nc)
{
	size_t i, a;

	for (i = 0; i < nc->n; i++) {
		struct hl_nc_host *h = &nc->h[i];

		for (a = 0; a < h->naddrs; a++) {
			free(h->addrs[a].ifname);
			free(h->addrs[a].addr);
		}
		free(h->addrs);
		free(h->error);
		free(h->hostname);
		free(h->machine);
		free(h->version);
		free(h->folder);
		hl_strvec_close(&h->gpu);
		hl_strvec_close(&h->ifaces);
		hl_strvec_close(&h->selected);
		for (a = 0; a < 2; a++) {
			size_t k;

			for (k = 0; k < h->nstats[a]; k++)
				free(h->stats[a][k].ifname);
			free(h->stats[a]);
		}
	}
	for (i = 0; i < nc->nlinks; i++)
		free(nc->links[i].error);
	free(nc->links);
	for (i = 0; i < nc->nfindings; i++) {
		free(nc->findings[i].ifname);
		free(nc->findings[i].text);
	}
	free(nc->findings);
	for (i = 0; i < nc->npairs; i++)
		free(nc->pairs[i].error);
	free(nc->pairs);
	free(nc->h);
	free(nc->folder);
	memset(nc, 0, sizeof(*nc));
}

const char *hl_nc_pair_ifname(const struct hl_netcheck *nc,
			      const struct hl_nc_pair *p)
{
	return nc->h[p->to].addrs[p->addr].ifname;
}
