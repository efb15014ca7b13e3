/* config/said.c: how an option is named in messages: as the user gave it
 * (typed, or a file's line), or by its flag or config key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/opts.h"
#include "util/util.h"

const char *hl_opts_display(enum hl_key k, bool cli, char *buf, size_t len)
{
	const struct hl_keyinfo *ki = &hl_keys[k];

	if (cli && ki->longopt != NULL)
		snprintf(buf, len, "--%s", ki->longopt);
	else
		snprintf(buf, len, "'%s' in [%s]", ki->name, ki->section);
	return buf;
}

int hl_opts_said_as(struct hl_opts *o, enum hl_key k, const char *spelling,
		    const char *value)
{
	char *said = value != NULL ? hl_asprintf("%s %s", spelling, value)
				   : hl_strdup(spelling);

	if (said == NULL)
		return HL_ENOMEM;
	free(o->v[k].said);
	o->v[k].said = said;
	return HL_OK;
}

const char *hl_opt_said(const struct hl_opts *o, enum hl_key k)
{
	/* Two, for two options named in one message. */
	static char flags[2][320];
	static int turn;
	const struct hl_keyinfo *ki = &hl_keys[k];
	bool valued = o->v[k].set && o->v[k].s != NULL && ki->type != HL_T_BOOL;
	char *flag = flags[turn ^= 1];

	if (o->v[k].said != NULL)
		return o->v[k].said;
	snprintf(flag, sizeof(flags[0]), "--%s%s%.256s",
		 ki->longopt != NULL ? ki->longopt : ki->name,
		 valued ? " " : "", valued ? o->v[k].s : "");
	return flag;
}

/* Whether another key of another section has key k's name. */
static bool name_shared(enum hl_key k)
{
	int j;

	for (j = 0; j < HL_K_COUNT; j++)
		if (j != (int)k && hl_keys[j].name != NULL &&
		    strcmp(hl_keys[j].name, hl_keys[k].name) == 0)
			return true;
	return false;
}

char *hl_said_in_file(enum hl_key k, const char *text, const char *where)
{
	const struct hl_keyinfo *ki = &hl_keys[k];
	bool shared = name_shared(k);

	/* where: "FILE:LINE: ", less its ": ". */
	return hl_asprintf("%s = %s%s%s%s (%.*s)", ki->name, text,
			   shared ? " in [" : "", shared ? ki->section : "",
			   shared ? "]" : "", (int)strlen(where) - 2, where);
}
