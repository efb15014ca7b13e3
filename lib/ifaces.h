/* ifaces.h: this machine's interface addresses (its network namespace's),
 * the one walk over getifaddrs in hvdrun: the probe describes them, the
 * rendezvous offers them, the host list knows itself by them, and a job's
 * MASTER_ADDR is taken from the chosen interface. */
#ifndef HL_IFACES_H
#define HL_IFACES_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>

struct hl_iface {
	char name[IF_NAMESIZE];
	char addr[INET6_ADDRSTRLEN]; /* numeric */
	int family;		     /* AF_INET or AF_INET6 */
	bool up;		     /* IFF_UP: configured up */
	bool running;		     /* IFF_RUNNING: and its link too */
	bool loopback;
	bool link_local; /* IPv6 fe80::/10: needs a scope to be reached */
};

/* Every IPv4 and IPv6 address of every interface, in the kernel's order;
 * the caller frees *out. HL_OK or HL_ESYS/HL_ENOMEM. */
int hl_ifaces(struct hl_iface **out, size_t *n);
/* Into buf (INET_ADDRSTRLEN), the first IPv4 address of an up interface
 * named in names (NAME[,NAME...]), tried in that order; HL_ENOENT when
 * none of them has one. */
int hl_iface_ipv4(const char *names, char *buf, size_t len);

#endif
