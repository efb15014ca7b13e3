/* iface_policy.c: see iface_policy.h. */
#include "check/iface_policy.h"

#include <stdlib.h>
#include <string.h>

#include "check/netcheck.h"

static char *mpi_interfaces(const struct hl_netcheck *nc, char **v,
			    const struct hl_hostlist *hosts)
{
	const char *first = NULL;
	bool same = true;
	char *s = NULL, *j;
	size_t i, a, k;

	for (i = 0; i < nc->n; i++) {
		const char *x = v[nc->h[i].host - hosts->v];

		if (x == NULL)
			continue;
		if (first != NULL && strcmp(first, x) != 0)
			same = false;
		if (first == NULL)
			first = x;
	}
	if (first == NULL || same)
		return first ? hl_strdup(first) : NULL;
	for (i = 0; i < nc->n; i++)
		for (a = 0; a < nc->h[i].naddrs; a++)
			for (k = 0; k < nc->h[i].selected.n; k++) {
				const struct hl_nc_addr *ad =
					&nc->h[i].addrs[a];

				if (strcmp(ad->ifname,
					   nc->h[i].selected.v[k]) != 0 ||
				    strchr(ad->addr, ':') != NULL)
					continue;
				j = hl_asprintf("%s%s%s/32", s ? s : "",
						s ? "," : "", ad->addr);
				free(s);
				s = j;
			}
	return s;
}

/* Run the check on the plan's hosts; each usable host's selection. */
static int from_check(struct hl_iface_choice *c, const struct hl_opts *o,
		      const struct hl_hostlist *hosts,
		      const struct hl_plan *plan, const struct hl_ssh_opts *so,
		      char **cause)
{
	struct hl_netcheck nc;
	struct hl_nc_opts no = {
		.timeout_ms = (int)(o->v[HL_K_NETWORK_TIMEOUT].d * 1000)};
	bool *use = calloc(hosts->n, sizeof(*use));
	size_t i;
	int r, rc;

	if (use == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	for (r = 0; r < plan->size; r++)
		use[plan->ranks[r].host] = true;
	rc = hl_netcheck_run(&nc, hosts, use, so, &no, NULL, NULL, cause);
	free(use);
	if (rc != HL_OK)
		return rc;
	c->checked = true;
	c->check_seconds = nc.seconds;
	for (i = 0; i < nc.n && rc == HL_OK; i++)
		if (!nc.h[i].usable)
			rc = hl_fail(
				cause, HL_ESTART,
				"network check: %s (see 'hvdrun check' with the same hosts)",
				nc.h[i].error ? nc.h[i].error : "failed");
	for (i = 0; i < nc.n && rc == HL_OK; i++) {
		const struct hl_strvec *sel = &nc.h[i].selected;
		size_t h = (size_t)(nc.h[i].host - hosts->v);

		/* Nothing selected on a single host: no constraint. */
		if (sel->n > 0 &&
		    (c->host[h] = hl_strvec_join(sel, ",")) == NULL)
			rc = hl_fail(cause, HL_ENOMEM, "out of memory");
	}
	if (rc == HL_OK)
		c->mpi = mpi_interfaces(&nc, c->host, hosts);
	hl_netcheck_close(&nc);
	return rc;
}

int hl_iface_choose(struct hl_iface_choice *c, const struct hl_opts *o,
		    const struct hl_hostlist *hosts, const struct hl_plan *plan,
		    const struct hl_ssh_opts *so, char **cause)
{
	const struct hl_value *names = &o->v[HL_K_NETWORK_INTERFACES];
	int r, rc = HL_OK;

	memset(c, 0, sizeof(*c));
	if (!names->set && !o->v[HL_K_NETWORK_CHECK].b)
		return HL_OK;
	c->nhosts = hosts->n;
	c->host = calloc(hosts->n, sizeof(*c->host));
	if (c->host == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	if (!names->set)
		rc = from_check(c, o, hosts, plan, so, cause);
	else if ((c->mpi = hl_strdup(names->s)) == NULL)
		rc = hl_fail(cause, HL_ENOMEM, "out of memory");
	for (r = 0; names->set && r < plan->size && rc == HL_OK; r++) {
		char **h = &c->host[plan->ranks[r].host];

		if (*h == NULL && (*h = hl_strdup(names->s)) == NULL)
			rc = hl_fail(cause, HL_ENOMEM, "out of memory");
	}
	if (rc != HL_OK)
		hl_iface_choice_close(c);
	return rc;
}

void hl_iface_choice_close(struct hl_iface_choice *c)
{
	size_t i;

	for (i = 0; c->host != NULL && i < c->nhosts; i++)
		free(c->host[i]);
	free(c->host);
	free(c->mpi);
	memset(c, 0, sizeof(*c));
}
