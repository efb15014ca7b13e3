/* hosts.c: parsers for -H host lists and hostfiles, and the "is this host
 * this machine" test that decides between a local and a remote start. The
 * grammar is documented in hosts.h. */
#include "config/hosts.h"

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

static bool user_valid(const char *s, size_t len)
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
static int parse_entry(const char *s, size_t len, struct hl_host *h,
		       bool *counted, const char *where, const char *what,
		       char **cause)
{
	const char *at = memchr(s, '@', len);
	const char *host = s, *end = s + len, *colon = NULL;
	const char *problem = NULL;
	size_t hlen;
	long v;

	if (at != NULL) {
		if (!user_valid(s, (size_t)(at - s)))
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

static int hostlist_append(struct hl_hostlist *hl, struct hl_host *h,
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

static void host_free_fields(struct hl_host *h)
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
		bool counted;

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
		rc = parse_entry(p, len, &h, &counted, "", what, cause);
		free(what);
		if (rc == HL_OK)
			rc = hostlist_append(out, &h, "", cause);
		host_free_fields(&h);
		if (rc != HL_OK || comma == NULL)
			break;
		p = comma + 1;
	}
	return rc;
}

/* One key=value token of a hostfile line whose host is host (as written,
 * quoted; counted: with its slots, 'a:2', as MPICH's machinefiles give
 * them). */
static int hostfile_key(const char *tok, struct hl_host *h, const char *host,
			bool counted, const char *path, int lineno,
			struct hl_hostlist *out, char **cause)
{
	const char *eq = strchr(tok, '=');
	long v;

	if (eq == NULL)
		return hl_fail(cause, HL_EINVAL,
			       "%s:%d: expected KEY=VALUE, got '%s'", path,
			       lineno, tok);
	if (strncmp(tok, "slots=", 6) == 0) {
		if (counted)
			return hl_fail(
				cause, HL_EINVAL,
				"%s:%d: %s and '%s' both give the slots: give one",
				path, lineno, host, tok);
		if (!hl_parse_long(eq + 1, 1, HL_MAX_SLOTS, &v))
			return hl_fail(
				cause, HL_EINVAL,
				"%s:%d: bad slot count '%s' (want 1..%d)", path,
				lineno, tok, HL_MAX_SLOTS);
		h->slots = (int)v;
	} else if (strncmp(tok, "max_slots=", 10) == 0) {
		if (!hl_parse_long(eq + 1, 1, HL_MAX_SLOTS, &v))
			return hl_fail(cause, HL_EINVAL,
				       "%s:%d: bad value '%s' (want 1..%d)",
				       path, lineno, tok, HL_MAX_SLOTS);
		if (hl_strvec_pushf(
			    &out->warnings,
			    "%s:%d: '%s' is ignored (hvdrun starts one worker per slot)",
			    path, lineno, tok) != HL_OK)
			return hl_fail(cause, HL_ENOMEM, "out of memory");
	} else if (strncmp(tok, "port=", 5) == 0) {
		if (!hl_parse_long(eq + 1, 1, 65535, &v))
			return hl_fail(cause, HL_EINVAL,
				       "%s:%d: bad port '%s' (want 1..65535)",
				       path, lineno, tok);
		h->port = (int)v;
	} else if (strncmp(tok, "user=", 5) == 0) {
		if (!user_valid(eq + 1, strlen(eq + 1)))
			return hl_fail(cause, HL_EINVAL,
				       "%s:%d: bad user name '%s'", path,
				       lineno, tok);
		free(h->user);
		h->user = hl_strdup(eq + 1);
	} else {
		return hl_fail(
			cause, HL_EINVAL,
			"%s:%d: unknown key '%.*s' (want slots, max_slots, port or user)",
			path, lineno, (int)(eq - tok), tok);
	}
	return HL_OK;
}

/* A hostfile line's bare count after its host, *tok: its slots, as LSF's
 * host files (`host N`) and Grid Engine's $PE_HOSTFILE (`host N
 * queue@host processors`, whose last two words say nothing hvdrun
 * uses) give them. *tok is left at the next word to read as KEY=VALUE. */
static int hostfile_count(char **tok, char **save, struct hl_host *h,
			  char **host, bool *counted, const char *path,
			  int lineno, char **cause)
{
	char *was = *host;
	long v;

	if (was == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	if (*counted)
		return hl_fail(
			cause, HL_EINVAL,
			"%s:%d: %s and '%s' both give the slots: give one",
			path, lineno, *host, *tok);
	if (!hl_parse_long(*tok, 1, HL_MAX_SLOTS, &v))
		return hl_fail(cause, HL_EINVAL,
			       "%s:%d: bad slot count '%s' (want 1..%d)", path,
			       lineno, *tok, HL_MAX_SLOTS);
	h->slots = (int)v;
	*counted = true;
	/* 'a 4' for a later slots=, as 'a:4' is named. */
	*host = hl_asprintf("'%.*s %s'", (int)strlen(was) - 2, was + 1, *tok);
	free(was);
	if (*host == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	*tok = strtok_r(NULL, " \t\r\n", save);
	if (*tok != NULL && strchr(*tok, '=') == NULL &&
	    strchr(*tok, '@') != NULL) {
		*tok = strtok_r(NULL, " \t\r\n", save);
		if (*tok != NULL && strchr(*tok, '=') == NULL)
			*tok = strtok_r(NULL, " \t\r\n", save);
	}
	return HL_OK;
}

static int hostfile_line(char *line, const char *path, int lineno,
			 struct hl_hostlist *out, char **cause)
{
	struct hl_host h = {0};
	char *save = NULL, *tok, *hash, *what, *where;
	bool counted = false;
	int rc;

	hash = strchr(line, '#');
	if (hash != NULL)
		*hash = '\0';
	tok = strtok_r(line, " \t\r\n", &save);
	if (tok == NULL)
		return HL_OK;
	what = hl_asprintf("'%s'", tok);
	where = hl_asprintf("%s:%d: ", path, lineno);
	rc = what && where ? parse_entry(tok, strlen(tok), &h, &counted, where,
					 what, cause)
			   : hl_fail(cause, HL_ENOMEM, "out of memory");
	h.line = lineno;
	tok = strtok_r(NULL, " \t\r\n", &save);
	if (rc == HL_OK && tok != NULL &&
	    tok[strspn(tok, "0123456789")] == '\0')
		rc = hostfile_count(&tok, &save, &h, &what, &counted, path,
				    lineno, cause);
	for (; rc == HL_OK && tok != NULL;
	     tok = strtok_r(NULL, " \t\r\n", &save))
		rc = hostfile_key(tok, &h, what, counted, path, lineno, out,
				  cause);
	free(what);
	if (rc == HL_OK)
		rc = hostlist_append(out, &h, where, cause);
	free(where);
	host_free_fields(&h);
	return rc;
}

int hl_hosts_parse_file(const char *path, struct hl_hostlist *out, char **cause)
{
	FILE *f = hl_fopen_text(path);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int lineno = 0, rc = HL_OK;

	if (f == NULL)
		return hl_fail(cause, HL_EINVAL,
			       "cannot read hostfile '%s': %s", path,
			       strerror(errno));
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (memchr(line, '\0', (size_t)len) != NULL) {
			rc = hl_fail(cause, HL_EINVAL,
				     "%s:%d: NUL byte in line", path, lineno);
			break;
		}
		/* A byte-order mark, as an editor may start the file. */
		rc = hostfile_line(
			lineno == 1 && !strncmp(line, "\xef\xbb\xbf", 3)
				? line + 3
				: line,
			path, lineno, out, cause);
		if (rc != HL_OK)
			break;
	}
	if (rc == HL_OK && ferror(f))
		rc = hl_fail(cause, HL_EINVAL, "cannot read hostfile '%s': %s",
			     path, strerror(errno));
	if (rc == HL_OK && out->n == 0)
		rc = hl_fail(cause, HL_EINVAL, "%s: no hosts in hostfile",
			     path);
	free(line);
	fclose(f);
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
