/* ifaces.h: this machine's interface addresses (its network namespace's),
 * the one walk over getifaddrs in hvdrun and libhvd: the probe describes
 * them, the rendezvous offers them, the host list knows itself by them, a
 * job's MASTER_ADDR is taken from the chosen interface, and a worker binds
 * its connections there (HVD_NETWORK_INTERFACES): both sides agree on
 * what "the address of eth0" is because they ask the same code. */
#ifndef IFACES_H
#define IFACES_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>

enum {
	IFACES_OK = 0,
	IFACES_ENOMEM = -2,
	IFACES_ESYS = -3,
	IFACES_ENOENT = -4, /* no named interface has an IPv4 address */
};

struct iface {
	char name[IF_NAMESIZE];
	char addr[INET6_ADDRSTRLEN]; /* numeric */
	int family;		     /* AF_INET or AF_INET6 */
	bool up;		     /* IFF_UP: configured up */
	bool running;		     /* IFF_RUNNING: and its link too */
	bool loopback;
	bool link_local; /* IPv6 fe80::/10: needs a scope to be reached */
};

/* Every IPv4 and IPv6 address of every interface, in the kernel's order;
 * the caller frees *out. IFACES_OK, IFACES_ESYS or IFACES_ENOMEM. */
int ifaces_list(struct iface **out, size_t *n);
/* Into buf (INET_ADDRSTRLEN), the first IPv4 address of an up interface
 * named in names (NAME[,NAME...]), tried in that order; IFACES_ENOENT
 * when none of them has one. */
int ifaces_ipv4(const char *names, char *buf, size_t len);

#endif
