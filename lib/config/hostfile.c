/* config/hostfile.c: the hostfile grammar (hosts.h): a host a line, its
 * slots as slots=N, HOST:N or HOST N, Grid Engine's lines, keys for SSH. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/hosts.h"
#include "config/hosts_internal.h"

/* The slots of h, the number num of word tok, given once on a line:
 * *counted, whether the line gave them already (host: the host as
 * written, with them, for the message). */
static int take_slots(const char *num, const char *tok, struct hl_host *h,
		      bool *counted, const char *host, const char *path,
		      int lineno, char **cause)
{
	long v;

	if (*counted)
		return hl_fail(
			cause, HL_EINVAL,
			"%s:%d: %s and '%s' both give the slots: give one",
			path, lineno, host, tok);
	if (!hl_parse_long(num, 1, HL_MAX_SLOTS, &v))
		return hl_fail(cause, HL_EINVAL,
			       "%s:%d: bad slot count '%s' (want 1..%d)", path,
			       lineno, tok, HL_MAX_SLOTS);
	h->slots = (int)v;
	*counted = true;
	return HL_OK;
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
		/* A later slots= wins over an earlier one, as before. */
		bool given = counted;

		return take_slots(eq + 1, tok, h, &given, host, path, lineno,
				  cause);
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
		if (!hl__user_valid(eq + 1, strlen(eq + 1)))
			return hl_fail(cause, HL_EINVAL,
				       "%s:%d: bad user name '%s'", path,
				       lineno, tok);
		free(h->user);
		h->user = hl_strdup(eq + 1);
	} else {
		static const char *const keys[] = {"slots", "max_slots", "port",
						   "user"};
		char name[64];
		struct hl_suggest sg;
		size_t i;

		snprintf(name, sizeof(name), "%.*s", (int)(eq - tok), tok);
		hl_suggest_init(&sg, name);
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			hl_suggest_try(&sg, keys[i]);
		return hl_fail(cause, HL_EINVAL,
			       "%s:%d: unknown key '%s' (%s%s%s)", path, lineno,
			       name,
			       sg.best ? "did you mean '"
				       : "want slots, max_slots, port or user",
			       sg.best ? sg.best : "", sg.best ? "'?" : "");
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
	int rc;

	if (was == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	rc = take_slots(*tok, *tok, h, counted, was, path, lineno, cause);
	if (rc != HL_OK)
		return rc;
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
	rc = what && where ? hl__host_entry(tok, strlen(tok), &h, &counted,
					    where, what, cause)
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
		rc = hl__host_append(out, &h, where, cause);
	free(where);
	hl__host_free(&h);
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
