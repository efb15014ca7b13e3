/* pm_fields.c: see pm_fields.h. */
#include "check/pm_fields.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "agent/records.h"
#include "check/probe_msg.h"
#include "util/util.h"

/* A record of the fields joined by tabs. */
int hl_pmf_put(struct hl_buf *b, char type, const char *const *f, int nf)
{
	char *s = NULL;
	size_t len = 0, at = 0;
	int i, rc;

	for (i = 0; i < nf; i++) {
		if (strpbrk(f[i], "\t\n") != NULL)
			return HL_EINVAL;
		len += strlen(f[i]) + 1;
	}
	s = malloc(len ? len : 1);
	if (s == NULL)
		return HL_ENOMEM;
	for (i = 0; i < nf; i++) {
		size_t k = strlen(f[i]);

		memcpy(s + at, f[i], k);
		at += k;
		s[at++] = '\t';
	}
	rc = hl_rec_put(b, type, s, at ? at - 1 : 0);
	free(s);
	return rc;
}

/* Split the payload d (n bytes) into exactly nf fields, copied into buf
 * (n + 1 bytes): the last field keeps any tabs. */
static bool split(const char *d, size_t n, char *buf, char **f, int nf)
{
	int i;

	if (memchr(d, '\0', n) != NULL)
		return false;
	memcpy(buf, d, n);
	buf[n] = '\0';
	f[0] = buf;
	for (i = 1; i < nf; i++) {
		char *tab = strchr(f[i - 1], '\t');

		if (tab == NULL)
			return false;
		*tab = '\0';
		f[i] = tab + 1;
	}
	return true;
}

/* Split with a buffer of its own; the caller frees *buf. */
bool hl_pmf_split(const char *d, size_t n, char **buf, char **f, int nf)
{
	*buf = malloc(n + 1);
	return *buf != NULL && split(d, n, *buf, f, nf);
}

bool hl_pmf_copy(char *dst, size_t cap, const char *s)
{
	size_t k = strlen(s);

	if (k >= cap)
		return false;
	memcpy(dst, s, k + 1);
	return true;
}

bool hl_pmf_is_addr(const char *s)
{
	struct in6_addr a;

	return inet_pton(AF_INET, s, &a) == 1 ||
	       inet_pton(AF_INET6, s, &a) == 1;
}

bool hl_pmf_is_token(const char *s)
{
	return strlen(s) == HL_PM_TOKEN &&
	       strspn(s, "0123456789abcdef") == HL_PM_TOKEN;
}
