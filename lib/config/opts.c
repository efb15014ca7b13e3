/* opts.c: the one setter of a setting, shared by the command line and
 * the config file, its checks and messages, defaults and export; the
 * table itself is opts_table.c. */
#include "config/opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto/worker_env.h"
#include "config/hosts.h"

/* NAME[,NAME...], each a Linux interface name (at most 15 bytes, no '/',
 * no white space). */
static bool ifaces_valid(const char *s)
{
	size_t n = 0;

	for (;; s++) {
		if (*s == ',' || *s == '\0') {
			if (n == 0 || n > 15)
				return false;
			if (*s == '\0')
				return true;
			n = 0;
			continue;
		}
		if (*s == '/' || *s == ':' || (unsigned char)*s <= ' ' ||
		    (unsigned char)*s >= 127)
			return false;
		n++;
	}
}

/* The contract's variable behind k, or NULL. */
static const struct wenv_var *key_var(enum hl_key k)
{
	int v = hl_keys[k].envvar ? wenv_find(hl_keys[k].envvar) : -1;

	return v < 0 ? NULL : &wenv_vars[v];
}

/* A key's value in the variable's unit is this many of the key's. */
static double key_scale(enum hl_key k)
{
	return hl_keys[k].export == HL_X_MIB  ? 1048576.0
	       : hl_keys[k].export == HL_X_MS ? 1000.0
					      : 1.0;
}

void hl_key_range(enum hl_key k, double *min, double *max)
{
	const struct wenv_var *w = key_var(k);

	if (w != NULL && (w->type == WENV_T_INT || w->type == WENV_T_NUMBER)) {
		*min = w->min / key_scale(k);
		*max = w->max / key_scale(k);
	} else {
		*min = hl_keys[k].min;
		*max = hl_keys[k].max;
	}
}

const char *const *hl_key_choices(enum hl_key k)
{
	const struct wenv_var *w = key_var(k);

	return w != NULL && w->type == WENV_T_CHOICE ? w->choices
						     : hl_keys[k].choices;
}

const char *hl_key_default(enum hl_key k, char *buf, size_t len)
{
	const struct hl_keyinfo *ki = &hl_keys[k];
	const struct wenv_var *w = key_var(k);

	if (w == NULL || w->def == WENV_DYNAMIC || w->type == WENV_T_TEXT)
		return ki->def;
	switch (ki->type) {
	case HL_T_BOOL:
		return (w->def != 0) != (ki->export == HL_X_BOOL_NOT) ? "true"
								      : "false";
	case HL_T_ENUM:
		return w->choices[(size_t)w->def];
	default:
		snprintf(buf, len, "%.15g", w->def / key_scale(k));
		return buf;
	}
}

void hl_opts_init(struct hl_opts *o)
{
	memset(o, 0, sizeof(*o));
}

void hl_opts_close(struct hl_opts *o)
{
	size_t i;

	for (i = 0; i < HL_K_COUNT; i++) {
		free(o->v[i].s);
		free(o->v[i].said);
	}
	for (i = 0; i < o->nenv; i++) {
		free(o->env[i].name);
		free(o->env[i].value);
	}
	free(o->env);
	memset(o, 0, sizeof(*o));
}

static int bad_value(enum hl_key k, const char *text, const char *where,
		     char **cause)
{
	const struct hl_keyinfo *ki = &hl_keys[k];
	bool cli = where[0] == '\0';
	char name[96], want[256] = "";
	size_t i, off;

	const char *const *choices = hl_key_choices(k);
	double min, max;

	hl_key_range(k, &min, &max);
	switch (ki->type) {
	case HL_T_INT:
		snprintf(want, sizeof(want), "an integer from %.0f to %.0f",
			 min, max);
		break;
	case HL_T_DOUBLE:
		snprintf(want, sizeof(want), "a number from %g to %g", min,
			 max);
		break;
	case HL_T_BOOL:
		snprintf(want, sizeof(want), "true or false");
		break;
	case HL_T_ENUM:
		off = (size_t)snprintf(want, sizeof(want), "one of");
		for (i = 0; choices[i] != NULL && off < sizeof(want); i++)
			off += (size_t)snprintf(want + off, sizeof(want) - off,
						"%s %s", i ? "," : "",
						choices[i]);
		break;
	case HL_T_USER:
		snprintf(want, sizeof(want), "a user name");
		break;
	case HL_T_IFACES:
		snprintf(want, sizeof(want), "interface names, NAME[,NAME...]");
		break;
	case HL_T_RANGE:
		snprintf(want, sizeof(want),
			 "two integers MIN MAX, %.0f <= MIN <= MAX <= %.0f",
			 min, max);
		break;
	case HL_T_RANK:
		snprintf(want, sizeof(want), "a rank, 0 or more, or none");
		break;
	default:
		snprintf(want, sizeof(want), "a non-empty value");
		break;
	}
	return hl_fail(cause, HL_EINVAL, "%sbad value '%s' for %s (want %s)",
		       where, text, hl_opts_display(k, cli, name, sizeof(name)),
		       want);
}

int hl_opts_set(struct hl_opts *o, enum hl_key k, const char *text,
		const char *where, const char *base_dir, char **cause)
{
	const struct hl_keyinfo *ki = &hl_keys[k];
	const char *const *choices = hl_key_choices(k);
	struct hl_value nv = {0};
	double min, max;
	size_t i;

	hl_key_range(k, &min, &max);
	nv.set = true;
	switch (ki->type) {
	case HL_T_INT:
		if (!hl_parse_long(text, (long)min, (long)max, &nv.i))
			return bad_value(k, text, where, cause);
		nv.d = (double)nv.i;
		break;
	case HL_T_DOUBLE:
		if (!hl_parse_double(text, min, max, &nv.d))
			return bad_value(k, text, where, cause);
		break;
	case HL_T_BOOL:
		if (!hl_parse_bool(text, &nv.b))
			return bad_value(k, text, where, cause);
		break;
	case HL_T_ENUM:
		for (i = 0; choices[i] != NULL; i++)
			if (strcasecmp(text, choices[i]) == 0)
				break;
		if (choices[i] == NULL)
			return bad_value(k, text, where, cause);
		nv.i = (long)i;
		break;
	case HL_T_HOSTS: {
		struct hl_hostlist hl;
		char *why = NULL;
		int rc;

		hl_hostlist_init(&hl);
		rc = hl_hosts_parse_list(text, &hl, &why);
		hl_hostlist_close(&hl);
		if (rc != HL_OK) {
			rc = hl_fail(cause, rc, "%s%s", where,
				     why ? why : "out of memory");
			free(why);
			return rc;
		}
		break;
	}
	case HL_T_USER:
		if (text[0] == '\0' || text[0] == '-' ||
		    strpbrk(text, " \t@:/") != NULL)
			return bad_value(k, text, where, cause);
		break;
	case HL_T_IFACES:
		if (!ifaces_valid(text))
			return bad_value(k, text, where, cause);
		break;
	case HL_T_RANGE: {
		char lo[32], hi[32], extra;
		long b;

		if (sscanf(text, "%31[^ ,\t]%*[ ,\t]%31s %c", lo, hi, &extra) !=
			    2 ||
		    !hl_parse_long(lo, (long)min, (long)max, &nv.i) ||
		    !hl_parse_long(hi, nv.i, (long)max, &b))
			return bad_value(k, text, where, cause);
		nv.d = (double)b;
		break;
	}
	case HL_T_RANK:
		if (strcasecmp(text, "none") == 0)
			nv.i = -1;
		else if (!hl_parse_long(text, 0, 1L << 20, &nv.i))
			return bad_value(k, text, where, cause);
		break;
	case HL_T_STRING:
	case HL_T_PATH:
		if (text[0] == '\0')
			return bad_value(k, text, where, cause);
		break;
	}
	if (o->v[k].set)
		return HL_OK; /* the first source wins */
	nv.s = ki->type == HL_T_PATH ? hl_path_from(base_dir, text)
				     : hl_strdup(text);
	nv.said = where[0] != '\0' ? hl_said_in_file(k, text, where) : NULL;
	if (nv.s == NULL || (where[0] != '\0' && nv.said == NULL)) {
		free(nv.s);
		free(nv.said);
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	}
	nv.in_file = where[0] != '\0';
	o->v[k] = nv;
	return HL_OK;
}

bool hl_env_reserved(const char *name)
{
	int v = wenv_find(name);

	return v >= 0 && wenv_vars[v].per_worker;
}

int hl_opts_add_env_pair(struct hl_opts *o, const char *name, const char *value,
			 const char *where, char **cause)
{
	struct hl_envitem *v;
	size_t i;
	int w;

	if (!hl_env_name_valid(name, strlen(name)))
		return hl_fail(cause, HL_EINVAL,
			       "%sbad environment variable name '%s'", where,
			       name);
	if (hl_env_reserved(name))
		return hl_fail(
			cause, HL_EINVAL,
			"%s%s is set by hvdrun for each worker and cannot be overridden",
			where, name);
	for (i = 0; i < o->nenv; i++)
		if (strcmp(o->env[i].name, name) == 0)
			return HL_OK; /* the first source wins */
	/* A setting of libhvd's (proto/worker_env.h) is checked as its
	 * option is, by the parser every worker reads it with: a bad value
	 * stops the job here, naming the file and line, before any worker
	 * starts. HVD_BIND_TO is hvdrun's own: it binds the workers. */
	if ((w = wenv_find(name)) >= 0) {
		const char *text = value != NULL ? value : getenv(name);
		double d;
		char want[160];

		if (text != NULL && text[0] != '\0' &&
		    !wenv_parse((enum wenv_id)w, text, &d)) {
			wenv_describe((enum wenv_id)w, want, sizeof(want));
			return hl_fail(cause, HL_EINVAL,
				       "%sbad value '%s' for %s (want %s)",
				       where, text, name, want);
		}
	}
	v = realloc(o->env, (o->nenv + 1) * sizeof(*v));
	if (v == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	o->env = v;
	v[o->nenv].name = hl_strdup(name);
	v[o->nenv].value = value ? hl_strdup(value) : NULL;
	if (v[o->nenv].name == NULL || (value && v[o->nenv].value == NULL)) {
		free(v[o->nenv].name);
		free(v[o->nenv].value);
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	}
	o->nenv++;
	return HL_OK;
}

int hl_opts_add_env(struct hl_opts *o, const char *spec, const char *where,
		    char **cause)
{
	const char *eq = strchr(spec, '=');
	char *name;
	int rc;

	if (eq == NULL)
		return hl_opts_add_env_pair(o, spec, NULL, where, cause);
	name = hl_strndup(spec, (size_t)(eq - spec));
	if (name == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	if (!hl_env_name_valid(name, strlen(name)))
		rc = hl_fail(cause, HL_EINVAL,
			     "%sbad environment variable in '-x %s'", where,
			     spec);
	else
		rc = hl_opts_add_env_pair(o, name, eq + 1, where, cause);
	free(name);
	return rc;
}

int hl_opts_finish(struct hl_opts *o, char **cause)
{
	size_t k;
	int rc;

	/* --tcp (horovodrun's): TCP only, so no shared memory. */
	if (o->v[HL_K_TCP].set && o->v[HL_K_TCP].b) {
		o->v[HL_K_SHARED_MEMORY].set = true;
		o->v[HL_K_SHARED_MEMORY].b = false;
	}
	for (k = 0; k < HL_K_COUNT; k++) {
		char buf[64];
		const char *def =
			hl_key_default((enum hl_key)k, buf, sizeof(buf));

		if (o->v[k].set || def == NULL)
			continue;
		rc = hl_opts_set(o, (enum hl_key)k, def, "default: ", NULL,
				 cause);
		if (rc != HL_OK)
			return rc;
		o->v[k].set = false; /* a default is not exported */
	}
	return HL_OK;
}

int hl_opts_find(const char *section, const char *name)
{
	size_t k;

	for (k = 0; k < HL_K_COUNT; k++)
		if (strcmp(hl_keys[k].section, section) == 0 &&
		    strcmp(hl_keys[k].name, name) == 0)
			return (int)k;
	return -1;
}

bool hl_opts_section_known(const char *section)
{
	size_t i;

	for (i = 0; hl_sections[i].name != NULL; i++)
		if (strcmp(hl_sections[i].name, section) == 0)
			return true;
	return false;
}

const char *hl_opts_section_list(void)
{
	static char list[256];
	size_t i, off = 0;

	if (list[0] != '\0')
		return list;
	for (i = 0; hl_sections[i].name != NULL && off < sizeof(list); i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
					i == 0 ? ""
					: hl_sections[i + 1].name == NULL
						? " or "
						: ", ",
					hl_sections[i].name);
	return list;
}

const char *hl_key_arg(enum hl_key k, char *buf, size_t len)
{
	const struct hl_keyinfo *ki = &hl_keys[k];
	const char *const *c;
	size_t off = 0;

	if (ki->flag != NULL)
		return "";
	if (ki->arg != NULL)
		return ki->arg;
	switch (ki->type) {
	case HL_T_INT:
		return "N";
	case HL_T_DOUBLE:
		return "X";
	case HL_T_ENUM:
		buf[0] = '\0';
		for (c = hl_key_choices(k); *c != NULL && off < len; c++)
			off += (size_t)snprintf(buf + off, len - off, "%s%s",
						off ? "|" : "", *c);
		return buf;
	case HL_T_PATH:
		return "FILE";
	case HL_T_HOSTS:
		return "LIST";
	case HL_T_USER:
		return "USER";
	case HL_T_IFACES:
		return "NAME";
	case HL_T_RANK:
		return "RANK|none";
	default:
		return "TEXT";
	}
}

int hl_opts_export(const struct hl_opts *o, struct hl_strvec *env)
{
	size_t k;
	int rc = HL_OK;

	for (k = 0; k < HL_K_COUNT && rc == HL_OK; k++) {
		const struct hl_keyinfo *ki = &hl_keys[k];
		const struct hl_value *v = &o->v[k];

		if (!v->set || ki->export == HL_X_NONE)
			continue;
		switch (ki->export) {
		case HL_X_MIB:
			rc = hl_strvec_pushf(env, "%s=%lld", ki->envvar,
					     (long long)v->i * 1048576LL);
			break;
		case HL_X_MS:
			rc = hl_strvec_pushf(
				env, "%s=%lld", ki->envvar,
				ki->type == HL_T_DOUBLE
					? (long long)(v->d * 1000.0 + 0.5)
					: (long long)v->i * 1000LL);
			break;
		case HL_X_BOOL:
			rc = hl_strvec_pushf(env, "%s=%d", ki->envvar, v->b);
			break;
		case HL_X_BOOL_NOT:
			rc = hl_strvec_pushf(env, "%s=%d", ki->envvar, !v->b);
			break;
		case HL_X_VALUE:
			if (ki->type == HL_T_DOUBLE)
				rc = hl_strvec_pushf(env, "%s=%g", ki->envvar,
						     v->d);
			else if (ki->type == HL_T_INT)
				rc = hl_strvec_pushf(env, "%s=%ld", ki->envvar,
						     v->i);
			else
				rc = hl_strvec_pushf(env, "%s=%s", ki->envvar,
						     v->s);
			break;
		case HL_X_NONE:
			break;
		}
	}
	return rc;
}
