/* hosts.c: parsers for -H host lists and hostfiles, and the "is this host
 * this machine" test that decides between a local and a remote start. The
 * grammar is documented in hosts.h. */
#include "config/hosts.h"
#include "config/hosts_internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "proto/ifaces.h"

void hl_hostlist_init(struct hl_hostlist *hl)
{
	hl->v = NULL;
	hl->n = 0;
	hl_strvec_init(&hl->warnings);
	hl->origin = NULL;
	hl->np = 0;
	hl->slurm = false;
}

void hl_hostlist_close(struct hl_hostlist *hl)
{
	size_t i;

	for (i = 0; i < hl->n; i++) {
		free(hl->v[i].name);
		free(hl->v[i].user);
	}
	free(hl->v);
	hl_strvec_close(&hl->warnings);
	free(hl->origin);
	hl->origin = NULL;
	hl->v = NULL;
	hl->n = 0;
}

long hl_hosts_total_slots(const struct hl_hostlist *hl)
{
	long total = 0;
	size_t i;

	for (i = 0; i < hl->n; i++)
		total += hl->v[i].slots;
	return total;
}

static bool name_char(int c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_';
}

bool hl__user_valid(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > 32 || s[0] == '-')
		return false;
	for (i = 0; i < len; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' ||
		      s[i] == '-' || s[i] == '.'))
			return false;
	return true;
}

static bool hostname_valid(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > HL_MAX_HOSTNAME || s[0] == '-' || s[0] == '.')
		return false;
	for (i = 0; i < len; i++)
		if (!name_char((unsigned char)s[i]))
			return false;
	return true;
}

static bool ipv6_valid(const char *s, size_t len)
{
	char buf[INET6_ADDRSTRLEN + 1];
	struct in6_addr a;

	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return inet_pton(AF_INET6, buf, &a) == 1;
}

/* Split "[user@]host[:slots]" (with "[v6]" allowed) into its parts. The
 * text is one entry, not NUL-terminated. Errors read "<where><problem> in
 * <what>", e.g. "bad slot count in host list entry 'a:x'" or
 * "hosts:3: bad host name in 'a/b'". *counted: whether it gave slots. */
int hl__host_entry(const char *s, size_t len, struct hl_host *h, bool *counted,
		   const char *where, const char *what, char **cause)
{
	const char *at = memchr(s, '@', len);
	const char *host = s, *end = s + len, *colon = NULL;
	const char *problem = NULL;
	size_t hlen;
	long v;

	if (at != NULL) {
		if (!hl__user_valid(s, (size_t)(at - s)))
			return hl_fail(cause, HL_EINVAL,
				       "%sbad user name in %s", where, what);
		h->user = hl_strndup(s, (size_t)(at - s));
		host = at + 1;
	}
	if (host < end && *host == '[') {
		const char *rb = memchr(host, ']', (size_t)(end - host));

		if (rb == NULL ||
		    !ipv6_valid(host + 1, (size_t)(rb - host - 1)))
			problem = "bad IPv6 address";
		else if (rb + 1 < end && rb[1] != ':')
			problem = "unexpected text after ']'";
		else {
			h->name = hl_strndup(host + 1, (size_t)(rb - host - 1));
			colon = rb + 1 < end ? rb + 1 : NULL;
		}
	} else {
		colon = memchr(host, ':', (size_t)(end - host));
		hlen = (size_t)((colon ? colon : end) - host);
		if (colon && memchr(colon + 1, ':', (size_t)(end - colon - 1)))
			problem =
				"bad host name (write IPv6 addresses as [addr]:slots)";
		else if (hlen == 0)
			problem = "missing host name";
		else if (!hostname_valid(host, hlen))
			problem = "bad host name";
		else
			h->name = hl_strndup(host, hlen);
	}
	*counted = problem == NULL && colon != NULL;
	if (*counted) {
		char num[32];
		size_t nlen = (size_t)(end - colon - 1);

		if (nlen == 0 || nlen >= sizeof(num))
			problem = "bad slot count (want 1..4096)";
		else {
			memcpy(num, colon + 1, nlen);
			num[nlen] = '\0';
			if (!hl_parse_long(num, 1, HL_MAX_SLOTS, &v))
				problem = "bad slot count (want 1..4096)";
			else
				h->slots = (int)v;
		}
	} else if (problem == NULL) {
		h->slots = 1;
	}
	if (problem != NULL)
		return hl_fail(cause, HL_EINVAL, "%s%s in %s", where, problem,
			       what);
	if (h->name == NULL || (at != NULL && h->user == NULL))
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	return HL_OK;
}

/* A hostfile's host on a line of its own again (first, h): its slots add
 * up, as Open MPI and MPICH add them (a batch system's node file, as
 * PBS's, lists a host once a slot), while it is reached the same way. */
static int hostfile_again(struct hl_host *first, const struct hl_host *h,
			  const char *where, char **cause)
{
	bool same_user = (first->user == NULL) == (h->user == NULL) &&
			 (h->user == NULL || strcmp(first->user, h->user) == 0);

	if (!same_user || first->port != h->port)
		return hl_fail(cause, HL_EINVAL,
			       "%shost '%s' again, with another %s than at "
			       "line %d",
			       where, h->name, same_user ? "port" : "user",
			       first->line);
	if (first->slots + h->slots > HL_MAX_SLOTS)
		return hl_fail(cause, HL_EINVAL,
			       "%shost '%s' has more than %d slots with "
			       "those of line %d",
			       where, h->name, HL_MAX_SLOTS, first->line);
	first->slots += h->slots;
	return HL_OK;
}

int hl__host_append(struct hl_hostlist *hl, struct hl_host *h,
		    const char *where, char **cause)
{
	struct hl_host *v;
	size_t i;
	bool v6;

	if (h->name == NULL) /* its copy failed */
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	for (i = 0; i < hl->n; i++) {
		if (strcmp(hl->v[i].name, h->name) != 0)
			continue;
		if (hl->v[i].line > 0)
			return hostfile_again(&hl->v[i], h, where, cause);
		/* mpirun's --host counts a,a as two slots of a: here
		 * slots are given once (an IPv6 address in brackets). */
		v6 = strchr(h->name, ':') != NULL;
		return hl_fail(cause, HL_EINVAL,
			       "%shost '%s' is listed twice (give it once, "
			       "with all its slots: '%s%s%s:%d')",
			       where, h->name, v6 ? "[" : "", h->name,
			       v6 ? "]" : "", hl->v[i].slots + h->slots);
	}
	v = realloc(hl->v, (hl->n + 1) * sizeof(*v));
	if (v == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	hl->v = v;
	h->local = hl_host_is_local(h->name);
	hl->v[hl->n++] = *h;
	memset(h, 0, sizeof(*h));
	return HL_OK;
}

void hl__host_free(struct hl_host *h)
{
	free(h->name);
	free(h->user);
	memset(h, 0, sizeof(*h));
}

int hl_hosts_parse_list(const char *list, struct hl_hostlist *out, char **cause)
{
	const char *p = list;
	int rc = HL_OK;

	if (*list == '\0')
		return hl_fail(cause, HL_EINVAL, "empty host list");
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		struct hl_host h = {0};
		char *what;
		bool counted = false;

		if (len == 0) {
			rc = hl_fail(cause, HL_EINVAL,
				     "empty entry in host list '%s'", list);
			break;
		}
		what = hl_asprintf("host list entry '%.*s'", (int)len, p);
		if (what == NULL) {
			rc = hl_fail(cause, HL_ENOMEM, "out of memory");
			break;
		}
		rc = hl__host_entry(p, len, &h, &counted, "", what, cause);
		free(what);
		if (rc == HL_OK) {
			h.bare = !counted;
			rc = hl__host_append(out, &h, "", cause);
		}
		hl__host_free(&h);
		if (rc != HL_OK || comma == NULL)
			break;
		p = comma + 1;
	}
	return rc;
}

/* Compare name, as a numeric address, against every interface address. */
static bool is_interface_address(const char *name)
{
	char canon[INET6_ADDRSTRLEN];
	struct in6_addr a6;
	struct iface *v;
	bool found = false;
	size_t n, k;
	int fam = inet_pton(AF_INET, name, &a6) == 1	? AF_INET
		  : inet_pton(AF_INET6, name, &a6) == 1 ? AF_INET6
							: 0;

	/* inet_ntop's form, as the interface list writes it. */
	if (fam == 0 || inet_ntop(fam, &a6, canon, sizeof(canon)) == NULL ||
	    ifaces_list(&v, &n) != HL_OK)
		return false;
	for (k = 0; k < n && !found; k++)
		found = v[k].family == fam && strcmp(v[k].addr, canon) == 0;
	free(v);
	return found;
}

bool hl_host_is_local(const char *name)
{
	char self[HL_MAX_HOSTNAME + 2];
	size_t n;

	if (strcasecmp(name, "localhost") == 0 ||
	    strcasecmp(name, "localhost.localdomain") == 0 ||
	    strcmp(name, "127.0.0.1") == 0 || strcmp(name, "::1") == 0)
		return true;
	if (gethostname(self, sizeof(self)) == 0) {
		self[sizeof(self) - 1] = '\0';
		if (strcasecmp(name, self) == 0)
			return true;
		/* "node1" is this machine when the kernel's name is
		 * "node1.example", and "node1.example" (a batch system's
		 * node file) when it is "node1", as mpirun compares names. */
		n = strlen(name);
		if (strncasecmp(name, self, n) == 0 && self[n] == '.')
			return true;
		n = strlen(self);
		if (strncasecmp(name, self, n) == 0 && name[n] == '.' &&
		    strchr(self, '.') == NULL)
			return true;
	}
	return is_interface_address(name);
}
