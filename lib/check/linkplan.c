/* linkplan.c: see linkplan.h. */
#include "check/linkplan.h"

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

int hl_nc_mark_slow(struct hl_netcheck *nc)
{
	struct hl_strvec names;
	double med, rtt;
	size_t i, k;
	int rc;

	for (i = 0; i < nc->nlinks; i++) {
		struct hl_nc_link *l = &nc->links[i];

		l->gbps = l->ok ? rate_of(l->bytes, l->seconds) : 0;
		l->median_gbps = 0;
		l->slow = false;
	}
	hl_strvec_init(&names);
	rc = hl_nc_link_ifnames(nc, &names);
	for (k = 0; rc == HL_OK && k < names.n; k++) {
		if (!hl_nc_link_medians(nc, names.v[k], &med, &rtt))
			continue;
		for (i = 0; i < nc->nlinks; i++) {
			struct hl_nc_link *l = &nc->links[i];

			if (strcmp(hl_nc_link_ifname(nc, l), names.v[k]) != 0)
				continue;
			l->median_gbps = med;
			l->slow = l->ok && l->gbps * 2 < med;
		}
	}
	hl_strvec_close(&names);
	return rc;
}

int hl_nc_plan_retries(struct hl_netcheck *nc)
{
	size_t *idx = malloc((nc->nrounds + 1) * sizeof(*idx)), i, r;
	int rc = idx == NULL ? HL_ENOMEM : hl_nc_mark_slow(nc);

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
