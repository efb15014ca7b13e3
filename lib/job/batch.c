/* batch.c: see batch.h. */
#include "job/batch.h"

#include <stdlib.h>
#include <string.h>

/* The batch systems hvdrun finds, in the order it looks: the variable
 * that names the job, one that must be set beside it (NULL: none), and
 * the variables that give the hosts, first found first (file: a file of
 * hosts, else a "host N host N ..." list). */
static const struct hl_batch_system {
	const char *name, *job, *also;
	struct {
		const char *var;
		bool file;
	} hosts[2];
} systems[] = {
	{"PBS", "PBS_JOBID", NULL, {{"PBS_NODEFILE", true}}},
	/* JOB_ID alone is too common a name to mean Grid Engine. */
	{"Grid Engine", "JOB_ID", "PE_HOSTFILE", {{"PE_HOSTFILE", true}}},
	{"LSF",
	 "LSB_JOBID",
	 NULL,
	 {{"LSB_MCPU_HOSTS", false}, {"LSB_DJOB_HOSTFILE", true}}},
};

bool hl_batch_find(struct hl_batch *b)
{
	size_t i, k;

	memset(b, 0, sizeof(*b));
	for (i = 0; i < sizeof(systems) / sizeof(systems[0]); i++) {
		const struct hl_batch_system *s = &systems[i];

		if ((b->job = hl_env(s->job)) == NULL ||
		    (s->also != NULL && hl_env(s->also) == NULL))
			continue;
		b->system = s;
		for (k = 0; k < 2 && s->hosts[k].var != NULL; k++)
			if ((b->value = hl_env(s->hosts[k].var)) != NULL) {
				b->var = s->hosts[k].var;
				b->file = s->hosts[k].file;
				break;
			}
		return true;
	}
	b->job = NULL;
	return false;
}

/* LSB_MCPU_HOSTS, "hostA 4 hostB 2", as the host list "hostA:4,hostB:2". */
static int mcpu_hosts(const char *var, const char *value,
		      struct hl_hostlist *hosts, char **cause)
{
	struct hl_strvec list;
	char *copy = hl_strdup(value), *save = NULL, *name, *count, *joined;
	long v;
	int rc = copy != NULL ? HL_OK
			      : hl_fail(cause, HL_ENOMEM, "out of memory");

	hl_strvec_init(&list);
	for (name = copy ? strtok_r(copy, " \t\n", &save) : NULL;
	     rc == HL_OK && name != NULL;
	     name = strtok_r(NULL, " \t\n", &save)) {
		count = strtok_r(NULL, " \t\n", &save);
		if (count == NULL)
			rc = hl_fail(
				cause, HL_EINVAL,
				"%s '%s': host '%s' without its slot count",
				var, value, name);
		else if (!hl_parse_long(count, 1, HL_MAX_SLOTS, &v))
			rc = hl_fail(
				cause, HL_EINVAL,
				"%s '%s': bad slot count '%s' of host '%s' (want 1..%d)",
				var, value, count, name, HL_MAX_SLOTS);
		else if (strpbrk(name, ",:[]@") != NULL)
			rc = hl_fail(cause, HL_EINVAL,
				     "%s '%s': bad host name '%s'", var, value,
				     name);
		else
			rc = hl_strvec_pushf(&list, "%s:%ld", name, v);
	}
	if (rc == HL_OK && list.n == 0)
		rc = hl_fail(cause, HL_EINVAL, "%s '%s' names no host", var,
			     value);
	joined = rc == HL_OK ? hl_strvec_join(&list, ",") : NULL;
	if (rc == HL_OK && joined == NULL)
		rc = hl_fail(cause, HL_ENOMEM, "out of memory");
	if (rc == HL_OK)
		rc = hl_hosts_parse_list(joined, hosts, cause);
	free(joined);
	free(copy);
	hl_strvec_close(&list);
	return rc;
}

int hl_batch_hosts(const struct hl_batch *b, struct hl_hostlist *hosts,
		   char **cause)
{
	const struct hl_batch_system *s = b->system;
	char *why;
	int rc;

	if (b->var == NULL)
		return hl_fail(
			cause, HL_EINVAL,
			"inside %s job %s, but %s%s%s%s is not set: give hosts with -H or --hostfile",
			s->name, b->job, s->hosts[0].var,
			s->hosts[1].var != NULL ? " (or " : "",
			s->hosts[1].var != NULL ? s->hosts[1].var : "",
			s->hosts[1].var != NULL ? ")" : "");
	rc = b->file ? hl_hosts_parse_file(b->value, hosts, cause)
		     : mcpu_hosts(b->var, b->value, hosts, cause);
	/* Which job's variable, and the way around it. */
	if (rc != HL_OK && rc != HL_ENOMEM && cause != NULL && *cause != NULL) {
		why = *cause;
		*cause = NULL;
		rc = hl_fail(cause, rc,
			     "inside %s job %s, %s%s%s (or give hosts with -H "
			     "or --hostfile)",
			     s->name, b->job, b->file ? b->var : "",
			     b->file ? ": " : "", why);
		free(why);
	}
	return rc;
}

const char *hl_batch_name(const struct hl_batch *b)
{
	return b->system != NULL ? b->system->name : NULL;
}
