/* check_jtext.c: how `hvdrun check --json` writes a host's text
 * (check.h): valid UTF-8 as it is, each byte that is not as the four
 * characters \xHH, so that the output is always valid JSON and nothing
 * is dropped. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* The length of the valid UTF-8 sequence at s (n bytes there), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned long cp;
	size_t k, len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (k = 1; k < len; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[k] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

json_t *check_jtext(const char *s)
{
	size_t n, i = 0, k;
	char *out, *o;
	json_t *j;

	if (s == NULL)
		return NULL;
	n = strlen(s);
	out = malloc(n * 4 + 1);
	if (out == NULL)
		return NULL;
	for (o = out; i < n; i += k) {
		k = utf8_len((const unsigned char *)s + i, n - i);
		if (k == 0) {
			o += sprintf(o, "\\x%02x", (unsigned char)s[i]);
			k = 1;
			continue;
		}
		memcpy(o, s + i, k);
		o += k;
	}
	*o = '\0';
	j = json_string(out);
	free(out);
	return j;
}

bool check_jpush(json_t *a, json_t *v)
{
	return v != NULL && json_array_append_new(a, v) == 0;
}

json_t *check_jstrings(const struct hl_strvec *v)
{
	json_t *a = json_array();
	size_t k;

	for (k = 0; a != NULL && k < v->n; k++)
		if (!check_jpush(a, check_jtext(v->v[k]))) {
			json_decref(a);
			return NULL;
		}
	return a;
}
