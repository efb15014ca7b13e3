/* config.c: reads the INI config file with inih. Our own line reader in
 * front of inih counts lines (for "file:line" errors), refuses lines longer
 * than inih's buffer instead of letting inih split them, checks section
 * names, and strips leading blanks so that indented keys are keys rather
 * than inih's continuation lines. */
#include "config/config.h"

#include <errno.h>
#include <ini.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cfg_ctx {
	const char *path;
	char *dir;
	FILE *f;
	struct hl_opts *opts;
	int lineno;
	int first_line[HL_K_COUNT]; /* where each key was set in this file */
	struct hl_strvec env_names; /* [env] names seen, for duplicates */
	char *cause;
	int rc;
	int err_line; /* the line of the first error */
	char *where;  /* "FILE:LINE: " of the line being read */
	char *buf;
	size_t cap;
};

static int cfg_error(struct cfg_ctx *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int cfg_error(struct cfg_ctx *c, int code, const char *fmt, ...)
{
	va_list ap;

	if (c->rc != HL_OK)
		return 0; /* keep the first error */
	va_start(ap, fmt);
	c->cause = hl_vasprintf(fmt, ap);
	va_end(ap);
	c->rc = code;
	c->err_line = c->lineno;
	return 0;
}

/* An inih handler's answer for a setter's result (its cause is set). */
static int cfg_result(struct cfg_ctx *c, int rc)
{
	if (rc == HL_OK)
		return 1;
	c->rc = rc;
	c->err_line = c->lineno;
	return 0;
}

static void rstrip(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' ||
			 s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
}

/* Check a "[section]" line before inih sees it. */
static void check_section(struct cfg_ctx *c, const char *line)
{
	const char *rb = strchr(line, ']');
	char name[64];
	size_t n;

	if (rb == NULL)
		return; /* inih reports the syntax error */
	n = (size_t)(rb - line - 1);
	if (n >= sizeof(name)) {
		cfg_error(c, HL_EINVAL, "%s:%d: unknown section '%.*s'",
			  c->path, c->lineno, (int)(rb - line + 1), line);
		return;
	}
	memcpy(name, line + 1, n);
	name[n] = '\0';
	if (!hl_opts_section_known(name))
		cfg_error(c, HL_EINVAL,
			  "%s:%d: unknown section '[%s]' (want %s)", c->path,
			  c->lineno, name, hl_opts_section_list());
}

static char *cfg_reader(char *str, int num, void *stream)
{
	struct cfg_ctx *c = stream;
	ssize_t len;
	char *p;
	size_t plen;

	if (c->rc != HL_OK)
		return NULL;
	len = getline(&c->buf, &c->cap, c->f);
	if (len < 0)
		return NULL;
	c->lineno++;
	free(c->where);
	c->where = hl_asprintf("%s:%d: ", c->path, c->lineno);
	if (c->where == NULL) {
		cfg_error(c, HL_ENOMEM, "out of memory");
		return NULL;
	}
	if (memchr(c->buf, '\0', (size_t)len) != NULL) {
		cfg_error(c, HL_EINVAL, "%s:%d: NUL byte in line", c->path,
			  c->lineno);
		return NULL;
	}
	p = c->buf;
	while (*p == ' ' || *p == '\t')
		p++;
	plen = strlen(p);
	/* inih needs room for the text, "\r\n" and the NUL. */
	if (num < 4 || plen + 3 > (size_t)num) {
		rstrip(p);
		cfg_error(
			c, HL_EINVAL,
			"%s:%d: line too long (%zu characters, at most %d): '%.40s...'",
			c->path, c->lineno, strlen(p), num - 3, p);
		return NULL;
	}
	if (*p == '[')
		check_section(c, p);
	memcpy(str, p, plen + 1);
	return str;
}

static int handle_env(struct cfg_ctx *c, const char *name, const char *value)
{
	size_t i;

	for (i = 0; i < c->env_names.n; i++)
		if (strcmp(c->env_names.v[i], name) == 0)
			return cfg_error(c, HL_EINVAL,
					 "%s:%d: '%s' in [env] is set twice",
					 c->path, c->lineno, name);
	if (hl_strvec_push(&c->env_names, name) != HL_OK)
		return cfg_error(c, HL_ENOMEM, "out of memory");
	return cfg_result(c, hl_opts_add_env_pair(c->opts, name, value,
						  c->where, &c->cause));
}

/* A key that [section] does not have: named, with the key it looks like
 * a typo of, or the section that has it. */
static int unknown_key(struct cfg_ctx *c, const char *section, const char *name)
{
	struct hl_suggest s;
	size_t k;

	hl_suggest_init(&s, name);
	for (k = 0; k < HL_K_COUNT; k++) {
		if (strcmp(hl_keys[k].name, name) == 0 &&
		    strcmp(hl_keys[k].section, section) != 0)
			return cfg_error(
				c, HL_EINVAL,
				"%s:%d: unknown key '%s' in [%s] ('%s' is a key of [%s])",
				c->path, c->lineno, name, section, name,
				hl_keys[k].section);
		if (strcmp(hl_keys[k].section, section) == 0)
			hl_suggest_try(&s, hl_keys[k].name);
	}
	if (s.best != NULL)
		return cfg_error(
			c, HL_EINVAL,
			"%s:%d: unknown key '%s' in [%s] (did you mean '%s'?)",
			c->path, c->lineno, name, section, s.best);
	return cfg_error(c, HL_EINVAL, "%s:%d: unknown key '%s' in [%s]",
			 c->path, c->lineno, name, section);
}

static int cfg_handler(void *user, const char *section, const char *name,
		       const char *value)
{
	struct cfg_ctx *c = user;
	int k;

	if (c->rc != HL_OK)
		return 0;
	if (section[0] == '\0')
		return cfg_error(c, HL_EINVAL,
				 "%s:%d: '%s' is outside any [section]",
				 c->path, c->lineno, name);
	if (strcmp(section, "env") == 0)
		return handle_env(c, name, value);
	k = hl_opts_find(section, name);
	if (k < 0)
		return unknown_key(c, section, name);
	if (c->first_line[k] != 0)
		return cfg_error(
			c, HL_EINVAL,
			"%s:%d: '%s' in [%s] is set twice (first at line %d)",
			c->path, c->lineno, name, section, c->first_line[k]);
	c->first_line[k] = c->lineno;
	return cfg_result(c, hl_opts_set(c->opts, (enum hl_key)k, value,
					 c->where, c->dir, &c->cause));
}

/* The text of line n, for inih's syntax errors. */
static char *line_text(const char *path, int n)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0;
	int i;

	if (f == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		if (getline(&buf, &cap, f) < 0) {
			free(buf);
			buf = NULL;
			break;
		}
	fclose(f);
	if (buf != NULL)
		rstrip(buf);
	return buf;
}

static bool ends_with(const char *s, const char *end)
{
	size_t n = strlen(s), m = strlen(end);

	return n > m && strcmp(s + n - m, end) == 0;
}

int hl_config_load(const char *path, struct hl_opts *o, char **cause)
{
	struct cfg_ctx c;
	char *tmp;
	int ret;

	if (ends_with(path, ".yaml") || ends_with(path, ".yml"))
		return hl_config_load_yaml(path, o, cause);
	memset(&c, 0, sizeof(c));
	c.path = path;
	c.opts = o;
	hl_strvec_init(&c.env_names);
	c.f = hl_fopen_text(path);
	if (c.f == NULL)
		return hl_fail(cause, HL_EINVAL,
			       "cannot read config file '%s': %s", path,
			       strerror(errno));
	tmp = hl_strdup(path);
	c.dir = tmp ? hl_strdup(dirname(tmp)) : NULL;
	free(tmp);
	if (c.dir == NULL) {
		ret = hl_fail(cause, HL_ENOMEM, "out of memory");
		goto out_close;
	}
	ret = ini_parse_stream(cfg_reader, &c, cfg_handler, &c);
	/* inih goes on after a syntax error: report whichever came first. */
	if (c.rc != HL_OK && !(ret > 0 && ret < c.err_line)) {
		free(*cause);
		*cause = c.cause ? c.cause : hl_strdup("out of memory");
		c.cause = NULL;
		ret = c.rc;
	} else if (ret > 0) {
		char *text = line_text(path, ret);

		ret = hl_fail(
			cause, HL_EINVAL,
			"%s:%d: syntax error: '%s' (want [section] or key = value)",
			path, ret, text ? text : "");
		free(text);
	} else if (ret != 0 || ferror(c.f)) {
		ret = hl_fail(cause, HL_EINVAL, "cannot read config file '%s'",
			      path);
	}
out_close:
	free(c.where);
	free(c.cause);
	free(c.buf);
	free(c.dir);
	hl_strvec_close(&c.env_names);
	fclose(c.f);
	return ret;
}
