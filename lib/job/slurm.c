/* slurm.c: see slurm.h. */
#include "job/slurm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/hosts.h"

/* Fail: what (e.g. SLURM_JOB_NODELIST), the list, and why. */
static int bad(char **cause, const char *what, const char *list,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int bad(char **cause, const char *what, const char *list,
	       const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return hl_fail(cause, HL_EINVAL, "%s '%s': %s", what, list, why);
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

/* The digits s[0..len), at most 9 of them, as a number. */
static bool digits(const char *s, size_t len, unsigned long *v)
{
	size_t i;

	if (len == 0 || len > 9)
		return false;
	*v = 0;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*v = *v * 10 + (unsigned long)(s[i] - '0');
	}
	return true;
}

struct expand {
	const char *what, *list;
	struct hl_strvec *names;
	char **cause;
	char buf[HL_MAX_HOSTNAME + 1];
};

/* Expand s[0..len), an item's text from its next bracket group on, behind
 * the name built so far, buf[0..at). Each call deeper adds a number to the
 * name, which HL_MAX_HOSTNAME bounds, and so bounds the recursion. */
/* NOLINTNEXTLINE(misc-no-recursion) */
static int expand(struct expand *x, const char *s, size_t len, size_t at)
{
	const char *open = memchr(s, '[', len), *close, *r;
	size_t plain = open != NULL ? (size_t)(open - s) : len, i;
	int rc = HL_OK;

	for (i = 0; i < plain; i++)
		if (!name_char(s[i]))
			return bad(x->cause, x->what, x->list,
				   "'%c' cannot be in a node name", s[i]);
	if (at + plain > HL_MAX_HOSTNAME)
		return bad(x->cause, x->what, x->list,
			   "a node name longer than %d characters",
			   HL_MAX_HOSTNAME);
	memcpy(x->buf + at, s, plain);
	at += plain;
	if (open == NULL) {
		x->buf[at] = '\0';
		if (at == 0)
			return bad(x->cause, x->what, x->list,
				   "an empty node name");
		if (x->names->n >= HL_SLURM_MAX_NODES)
			return bad(x->cause, x->what, x->list,
				   "more than %d nodes", HL_SLURM_MAX_NODES);
		if (hl_strvec_push(x->names, x->buf) != HL_OK)
			return hl_fail(x->cause, HL_ENOMEM, "out of memory");
		return HL_OK;
	}
	close = memchr(open, ']', len - plain);
	if (close == NULL || memchr(open + 1, '[', (size_t)(close - open)))
		return bad(x->cause, x->what, x->list, "a '[' without its ']'");
	for (r = open + 1; r <= close && rc == HL_OK;) {
		const char *end = memchr(r, ',', (size_t)(close - r)), *dash;
		unsigned long lo, hi, v;
		size_t width;

		if (end == NULL)
			end = close;
		dash = memchr(r, '-', (size_t)(end - r));
		width = (size_t)((dash != NULL ? dash : end) - r);
		if (!digits(r, width, &lo) ||
		    (dash != NULL &&
		     !digits(dash + 1, (size_t)(end - dash - 1), &hi)))
			return bad(x->cause, x->what, x->list,
				   "bad range '%.*s' (want N or N-M)",
				   (int)(end - r), r);
		if (dash == NULL)
			hi = lo;
		if (hi < lo)
			return bad(x->cause, x->what, x->list,
				   "range '%.*s' runs backwards",
				   (int)(end - r), r);
		if (hi - lo >= HL_SLURM_MAX_NODES)
			return bad(x->cause, x->what, x->list,
				   "more than %d nodes", HL_SLURM_MAX_NODES);
		for (v = lo; v <= hi && rc == HL_OK; v++) {
			int n = snprintf(x->buf + at, sizeof(x->buf) - at,
					 "%0*lu", (int)width, v);

			if (n < 0 || at + (size_t)n > HL_MAX_HOSTNAME)
				return bad(x->cause, x->what, x->list,
					   "a node name longer than %d "
					   "characters",
					   HL_MAX_HOSTNAME);
			rc = expand(x, close + 1, len - (size_t)(close + 1 - s),
				    at + (size_t)n);
		}
		r = end + 1;
	}
	return rc;
}

int hl_slurm_nodes(const char *list, const char *what, struct hl_strvec *names,
		   char **cause)
{
	struct expand x = {
		.what = what, .list = list, .names = names, .cause = cause};
	const char *p = list;
	int rc = HL_OK;

	if (*list == '\0')
		return hl_fail(cause, HL_EINVAL, "%s is empty", what);
	while (rc == HL_OK) {
		const char *q = p;
		int depth = 0;

		/* The item ends at a comma outside brackets. */
		for (; *q != '\0' && (*q != ',' || depth > 0) && depth >= 0;
		     q++)
			depth += *q == '[' ? 1 : *q == ']' ? -1 : 0;
		if (depth != 0 || q == p)
			return bad(cause, what, list, "%s",
				   depth > 0   ? "a '[' without its ']'"
				   : depth < 0 ? "a ']' without its '['"
					       : "an empty node name");
		rc = expand(&x, p, (size_t)(q - p), 0);
		if (*q == '\0')
			break;
		p = q + 1;
	}
	return rc;
}

int hl_slurm_tasks(const char *spec, const char *what, size_t n, int *slots,
		   char **cause)
{
	const char *p = spec;
	size_t at = 0;

	for (;;) {
		char *end;
		long count = strtol(p, &end, 10), repeat = 1;

		if (end == p || *p < '0' || *p > '9' || count < 1 ||
		    count > HL_MAX_SLOTS)
			return bad(cause, what, spec,
				   "bad task count at '%s' (want 1..%d, or "
				   "N(xM))",
				   p, HL_MAX_SLOTS);
		p = end;
		if (strncmp(p, "(x", 2) == 0) {
			repeat = strtol(p + 2, &end, 10);
			if (end == p + 2 || *end != ')' || repeat < 1 ||
			    (size_t)repeat > n)
				return bad(cause, what, spec,
					   "bad repetition at '%s'", p);
			p = end + 1;
		}
		if ((size_t)repeat > n - at)
			return bad(cause, what, spec,
				   "more counts than the %zu nodes", n);
		while (repeat-- > 0)
			slots[at++] = (int)count;
		if (*p == '\0')
			break;
		if (*p != ',')
			return bad(cause, what, spec, "unexpected '%s'", p);
		p++;
	}
	if (at != n)
		return bad(cause, what, spec, "counts for %zu of the %zu nodes",
			   at, n);
	return HL_OK;
}

int hl_slurm_hosts(const char *nodelist, const char *tasks, char **hosts,
		   char **cause)
{
	struct hl_strvec names, entries;
	int *slots = NULL;
	size_t i;
	int rc;

	*hosts = NULL;
	hl_strvec_init(&names);
	hl_strvec_init(&entries);
	rc = hl_slurm_nodes(nodelist, "SLURM_JOB_NODELIST", &names, cause);
	if (rc == HL_OK &&
	    (slots = calloc(names.n > 0 ? names.n : 1, sizeof(int))) == NULL)
		rc = hl_fail(cause, HL_ENOMEM, "out of memory");
	if (rc == HL_OK)
		rc = hl_slurm_tasks(tasks, "SLURM_TASKS_PER_NODE", names.n,
				    slots, cause);
	for (i = 0; rc == HL_OK && slots != NULL && i < names.n; i++)
		if (hl_strvec_pushf(&entries, "%s:%d", names.v[i], slots[i]) !=
		    HL_OK)
			rc = hl_fail(cause, HL_ENOMEM, "out of memory");
	if (rc == HL_OK && (*hosts = hl_strvec_join(&entries, ",")) == NULL)
		rc = hl_fail(cause, HL_ENOMEM, "out of memory");
	free(slots);
	hl_strvec_close(&names);
	hl_strvec_close(&entries);
	return rc;
}

bool hl_slurm_shared(const char *entry)
{
	static const char *const shared[] = {
		"SLURM_JOB_ID",
		"SLURM_JOBID",
		"SLURM_JOB_NAME",
		"SLURM_JOB_NODELIST",
		"SLURM_NODELIST",
		"SLURM_JOB_NUM_NODES",
		"SLURM_NNODES",
		"SLURM_CLUSTER_NAME",
		"SLURM_JOB_PARTITION",
		"SLURM_JOB_ACCOUNT",
		"SLURM_JOB_QOS",
		"SLURM_JOB_USER",
		"SLURM_JOB_UID",
		"SLURM_JOB_GID",
		"SLURM_JOB_CPUS_PER_NODE",
		"SLURM_SUBMIT_DIR",
		"SLURM_SUBMIT_HOST",
		"SLURM_CONF",
		"SLURM_JOB_START_TIME",
		"SLURM_JOB_END_TIME",
	};
	size_t i, n = strcspn(entry, "=");

	for (i = 0; i < sizeof(shared) / sizeof(*shared); i++)
		if (strlen(shared[i]) == n && strncmp(entry, shared[i], n) == 0)
			return true;
	return false;
}

int hl_slurm_export(struct hl_strvec *set)
{
	extern char **environ;
	size_t i;
	int rc = HL_OK;

	for (i = 0; environ[i] != NULL && rc == HL_OK; i++)
		if (strncmp(environ[i], "SLURM_", 6) == 0 &&
		    strchr(environ[i], '=') != NULL &&
		    hl_slurm_shared(environ[i]))
			rc = hl_strvec_push(set, environ[i]);
	return rc;
}
