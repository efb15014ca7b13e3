/* ifaces.c: see ifaces.h. */
#include "proto/ifaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ifaces_list(struct iface **out, size_t *n)
{
	struct ifaddrs *ifs, *ifa;
	struct iface *v = NULL;
	size_t k = 0, cap = 0;

	*out = NULL;
	*n = 0;
	if (getifaddrs(&ifs) != 0)
		return IFACES_ESYS;
	for (ifa = ifs; ifa != NULL; ifa = ifa->ifa_next) {
		int fam = ifa->ifa_addr ? ifa->ifa_addr->sa_family : -1;
		const void *a;
		struct iface *x;

		if (fam != AF_INET && fam != AF_INET6)
			continue;
		if (k == cap) {
			struct iface *nv;

			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (nv == NULL) {
				free(v);
				freeifaddrs(ifs);
				return IFACES_ENOMEM;
			}
			v = nv;
		}
		x = &v[k++];
		memset(x, 0, sizeof(*x));
		snprintf(x->name, sizeof(x->name), "%s", ifa->ifa_name);
		x->family = fam;
		x->up = (ifa->ifa_flags & IFF_UP) != 0;
		x->running = (ifa->ifa_flags & IFF_RUNNING) != 0;
		x->loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
		if (fam == AF_INET6) {
			const struct in6_addr *a6 =
				&((struct sockaddr_in6 *)(void *)ifa->ifa_addr)
					 ->sin6_addr;

			x->link_local = IN6_IS_ADDR_LINKLOCAL(a6);
			a = a6;
		} else {
			a = &((struct sockaddr_in *)(void *)ifa->ifa_addr)
				     ->sin_addr;
		}
		inet_ntop(fam, a, x->addr, sizeof(x->addr));
	}
	freeifaddrs(ifs);
	*out = v;
	*n = k;
	return IFACES_OK;
}

int ifaces_ipv4(const char *names, char *buf, size_t len)
{
	struct iface *v;
	size_t n, i;
	const char *p;
	int rc = ifaces_list(&v, &n);

	if (rc != IFACES_OK)
		return rc;
	rc = IFACES_ENOENT;
	for (p = names; *p != '\0' && rc != IFACES_OK;) {
		size_t k = strcspn(p, ",");

		for (i = 0; i < n && rc != IFACES_OK; i++)
			if (v[i].family == AF_INET && v[i].up &&
			    strlen(v[i].name) == k &&
			    strncmp(v[i].name, p, k) == 0) {
				snprintf(buf, len, "%s", v[i].addr);
				rc = IFACES_OK;
			}
		p += k;
		p += *p == ',';
	}
	free(v);
	return rc;
}
