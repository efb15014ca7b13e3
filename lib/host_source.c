/* host_source.c: see host_source.h. */
#include "host_source.h"

#include <stdio.h>

int hl_hosts_for_job(const struct hl_opts *o, const bool *from_cli,
		     const char *config_file, const char *fallback,
		     struct hl_hostlist *hosts, char **cause)
{
	bool cli = from_cli[HL_K_HOSTS] || from_cli[HL_K_HOSTFILE];
	bool use_list = o->v[HL_K_HOSTS].set && (!cli || from_cli[HL_K_HOSTS]);
	bool use_file =
		o->v[HL_K_HOSTFILE].set && (!cli || from_cli[HL_K_HOSTFILE]);
	char local[64];

	if (use_list && use_file)
		return hl_fail(cause, HL_EINVAL,
			       "%s: give hosts or hostfile in [job], not both",
			       config_file ? config_file : "config");
	if (use_list)
		return hl_hosts_parse_list(o->v[HL_K_HOSTS].s, hosts, cause);
	if (use_file)
		return hl_hosts_parse_file(o->v[HL_K_HOSTFILE].s, hosts, cause);
	if (!o->v[HL_K_NP].set && fallback != NULL)
		return hl_hosts_parse_list(fallback, hosts, cause);
	if (!o->v[HL_K_NP].set)
		return hl_fail(cause, HL_EINVAL,
			       "give -np N, or hosts with -H or --hostfile");
	snprintf(local, sizeof(local), "localhost:%ld", o->v[HL_K_NP].i);
	return hl_hosts_parse_list(local, hosts, cause);
}
