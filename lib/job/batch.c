/* batch.c: see batch.h. */
#include "job/batch.h"

#include <stdlib.h>
#include <string.h>

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? v : NULL;
}

/* The first of the variables names set, into b. */
static void first_set(struct hl_batch *b, const char *const *names, size_t n,
		      const bool *file)
{
	size_t i;

	for (i = 0; i < n; i++) {
		b->value = env(names[i]);
		if (b->value != NULL) {
			b->var = names[i];
			b->file = file[i];
			return;
		}
	}
	b->var = NULL;
}

bool hl_batch_find(struct hl_batch *b)
{
	static const char *const pbs[] = {"PBS_NODEFILE"};
	static const char *const sge[] = {"PE_HOSTFILE"};
	static const char *const lsf[] = {"LSB_MCPU_HOSTS",
					  "LSB_DJOB_HOSTFILE"};
	static const bool files[] = {true}, lsf_files[] = {false, true};

	memset(b, 0, sizeof(*b));
	if ((b->job = env("PBS_JOBID")) != NULL) {
		b->system = "PBS";
		b->wants = "PBS_NODEFILE";
		first_set(b, pbs, 1, files);
	} else if ((b->job = env("JOB_ID")) != NULL && env("PE_HOSTFILE")) {
		/* JOB_ID alone is too common a name to mean Grid Engine. */
		b->system = "Grid Engine";
		b->wants = "PE_HOSTFILE";
		first_set(b, sge, 1, files);
	} else if ((b->job = env("LSB_JOBID")) != NULL) {
		b->system = "LSF";
		b->wants = "LSB_MCPU_HOSTS (or LSB_DJOB_HOSTFILE)";
		first_set(b, lsf, 2, lsf_files);
	}
	return b->system != NULL;
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
	char *why;
	int rc;

	if (b->var == NULL)
		return hl_fail(
			cause, HL_EINVAL,
			"inside %s job %s, but %s is not set: give hosts with -H or --hostfile",
			b->system, b->job, b->wants);
	if (!b->file)
		return mcpu_hosts(b->var, b->value, hosts, cause);
	rc = hl_hosts_parse_file(b->value, hosts, cause);
	if (rc != HL_OK && cause != NULL && *cause != NULL) {
		why = *cause;
		*cause = NULL;
		rc = hl_fail(cause, rc, "%s: %s", b->var, why);
		free(why);
	}
	return rc;
}
