/* config/hosts_internal.h: what hosts.c (the -H grammar, the host list,
 * "is this machine") shares with hostfile.c (the hostfile grammar). */
#ifndef HL_HOSTS_INTERNAL_H
#define HL_HOSTS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "config/hosts.h"

/* Whether s[0..len) is a user name. */
bool hl__user_valid(const char *s, size_t len);
/* Split "[user@]host[:slots]" (with "[v6]" allowed), s[0..len), into *h.
 * Errors read "<where><problem> in <what>", e.g. "bad slot count in host
 * list entry 'a:x'" or "hosts:3: bad host name in 'a/b'". *counted:
 * whether it gave slots. */
int hl__host_entry(const char *s, size_t len, struct hl_host *h, bool *counted,
		   const char *where, const char *what, char **cause);
/* Append *h to hl (taking its fields): a hostfile's host again adds its
 * slots; a -H host again is refused. where: the "FILE:LINE: " of
 * errors. */
int hl__host_append(struct hl_hostlist *hl, struct hl_host *h,
		    const char *where, char **cause);
/* Free h's fields and clear it. */
void hl__host_free(struct hl_host *h);

#endif
