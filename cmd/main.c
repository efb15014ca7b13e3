/* main.c: hvdrun's main: options, then config file, then defaults; host
 * list; rank plan; environment; launch. The only place that prints errors
 * and chooses exit codes. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "config.h"
#include "env.h"
#include "hosts.h"
#include "hvdrun.h"
#include "launch.h"
#include "mpirun.h"
#include "netcheck.h"
#include "opts.h"
#include "plan.h"
#include "probe.h"
#include "rendezvous.h"

static int exit_for(int rc)
{
	switch (rc) {
	case HL_ENOENT:
		return EXIT_NOTFOUND;
	case HL_ENOEXEC:
		return EXIT_NOEXEC;
	case HL_EINVAL:
		return EXIT_USAGE;
	default:
		return EXIT_START;
	}
}

static int die(int rc, const char *cause)
{
	fprintf(stderr, "hvdrun: %s\n", cause ? cause : "out of memory");
	if (rc == HL_EINVAL)
		fprintf(stderr, "Try 'hvdrun --help' for more information.\n");
	return exit_for(rc);
}

static void print_warnings(const struct hl_strvec *w)
{
	size_t i;

	for (i = 0; i < w->n; i++)
		fprintf(stderr, "hvdrun: warning: %s\n", w->v[i]);
}

/* The host list: -H or --hostfile from the command line, else from the
 * config file, else localhost with one slot per worker. */
int cmd_load_hosts(struct hl_hostlist *hosts, char **cause)
{
	const struct hl_opts *o = &cmd_args.opts;
	bool cli = cmd_args.from_cli[HL_K_HOSTS] ||
		   cmd_args.from_cli[HL_K_HOSTFILE];
	bool use_list =
		o->v[HL_K_HOSTS].set && (!cli || cmd_args.from_cli[HL_K_HOSTS]);
	bool use_file = o->v[HL_K_HOSTFILE].set &&
			(!cli || cmd_args.from_cli[HL_K_HOSTFILE]);
	char local[64];

	if (use_list && use_file)
		return hl_fail(cause, HL_EINVAL,
			       "%s: give hosts or hostfile in [job], not both",
			       cmd_args.config_file);
	if (use_list)
		return hl_hosts_parse_list(o->v[HL_K_HOSTS].s, hosts, cause);
	if (use_file)
		return hl_hosts_parse_file(o->v[HL_K_HOSTFILE].s, hosts, cause);
	if (!o->v[HL_K_NP].set)
		return hl_fail(cause, HL_EINVAL,
			       "give -np N, or hosts with -H or --hostfile");
	snprintf(local, sizeof(local), "localhost:%ld", o->v[HL_K_NP].i);
	return hl_hosts_parse_list(local, hosts, cause);
}

/* Resolve the command where local workers will look for it. */
static int resolve(const struct hl_launch *l, char **path, char **cause)
{
	const struct hl_plan *plan = l->plan;
	const struct hl_envspec *es = l->env;
	const char *search = getenv("PATH");
	size_t i;
	int r;

	*path = NULL;
	for (r = 0; r < plan->size; r++)
		if (!hl_worker_remote(l, plan->ranks[r].host))
			break;
	if (r == plan->size)
		return HL_OK;
	for (i = 0; i < es->set.n; i++)
		if (strncmp(es->set.v[i], "PATH=", 5) == 0)
			search = es->set.v[i] + 5;
	return hl_resolve_command(cmd_args.command[0], search, path, cause);
}

/* "~/x" is "$HOME/x", as ssh -F takes it. */
static char *expand_home(const char *path)
{
	const char *home = getenv("HOME");

	if (path == NULL)
		return NULL;
	if (path[0] == '~' && path[1] == '/' && home != NULL)
		return hl_asprintf("%s%s", home, path + 1);
	return hl_strdup(path);
}

/* The SSH side of the options; the agent is this very binary. */
int cmd_ssh_opts(struct hl_ssh_opts *so, char **cause)
{
	const struct hl_opts *o = &cmd_args.opts;
	static char self[PATH_MAX], cwd[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0 || getcwd(cwd, sizeof(cwd)) == NULL)
		return hl_fail(cause, HL_ESYS,
			       "cannot find hvdrun's own path or folder");
	self[n] = '\0';
	memset(so, 0, sizeof(*so));
	so->config_file = expand_home(o->v[HL_K_SSH_CONFIG].s);
	so->identity =
		o->v[HL_K_SSH_IDENTITY].set ? o->v[HL_K_SSH_IDENTITY].s : NULL;
	so->user = o->v[HL_K_SSH_USER].set ? o->v[HL_K_SSH_USER].s : NULL;
	so->port = o->v[HL_K_SSH_PORT].set ? (int)o->v[HL_K_SSH_PORT].i : 0;
	so->host_key_checking =
		(enum hl_host_key_policy)o->v[HL_K_SSH_HOST_KEY_CHECKING].i;
	so->start_timeout_s = (int)o->v[HL_K_START_TIMEOUT].i;
	so->connect_timeout_s =
		o->v[HL_K_SSH_CONNECT_TIMEOUT].set &&
				o->v[HL_K_SSH_CONNECT_TIMEOUT].i <
					so->start_timeout_s
			? o->v[HL_K_SSH_CONNECT_TIMEOUT].i
			: so->start_timeout_s;
	so->concurrency = (int)o->v[HL_K_SSH_CONCURRENCY].i;
	so->channels_per_session = (int)o->v[HL_K_SSH_CHANNELS].i;
	so->force = o->v[HL_K_SSH_FORCE].b;
	so->agent_path = self;
	so->cwd = cwd;
	return HL_OK;
}

/* The interfaces each host's workers use: --network-interface for every
 * host, or what the network check selects on each (netcheck.h), or none
 * (*out NULL: libhvd uses the interface it reaches hvdrun from). */
/* For mpirun (one value for all hosts): the names when every host uses
 * the same, else each selected IPv4 address as a /32 block, which Open
 * MPI matches against each host's own interfaces. */
static char *mpi_interfaces(const struct hl_netcheck *nc, char **v,
			    const struct hl_hostlist *hosts)
{
	const char *first = NULL;
	bool same = true;
	char *s = NULL, *j;
	size_t i, a, k;

	for (i = 0; i < nc->n; i++) {
		const char *x = v[nc->h[i].host - hosts->v];

		if (x == NULL)
			continue;
		if (first != NULL && strcmp(first, x) != 0)
			same = false;
		if (first == NULL)
			first = x;
	}
	if (first == NULL || same)
		return first ? hl_strdup(first) : NULL;
	for (i = 0; i < nc->n; i++)
		for (a = 0; a < nc->h[i].naddrs; a++)
			for (k = 0; k < nc->h[i].selected.n; k++) {
				const struct hl_nc_addr *ad =
					&nc->h[i].addrs[a];

				if (strcmp(ad->ifname,
					   nc->h[i].selected.v[k]) ||
				    strchr(ad->addr, ':') != NULL)
					continue;
				j = hl_asprintf("%s%s%s/32", s ? s : "",
						s ? "," : "", ad->addr);
				free(s);
				s = j;
			}
	return s;
}

static int choose_interfaces(const struct hl_hostlist *hosts,
			     const struct hl_plan *plan,
			     const struct hl_ssh_opts *so, char ***out,
			     char **mpi_if, char **cause)
{
	const struct hl_opts *o = &cmd_args.opts;
	struct hl_netcheck nc;
	bool *use;
	char **v;
	size_t i, h;
	int r, rc;

	*out = NULL;
	if (!o->v[HL_K_NETWORK_INTERFACES].set && !o->v[HL_K_NETWORK_CHECK].b)
		return HL_OK;
	v = calloc(hosts->n, sizeof(*v));
	use = calloc(hosts->n, sizeof(*use));
	if (v == NULL || use == NULL) {
		free(v);
		free(use);
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	}
	*out = v;
	if (o->v[HL_K_NETWORK_INTERFACES].set) {
		*mpi_if = hl_strdup(o->v[HL_K_NETWORK_INTERFACES].s);
		for (r = 0; r < plan->size; r++)
			if (v[plan->ranks[r].host] == NULL)
				v[plan->ranks[r].host] = hl_strdup(
					o->v[HL_K_NETWORK_INTERFACES].s);
		free(use);
		return HL_OK;
	}
	for (r = 0; r < plan->size; r++)
		use[plan->ranks[r].host] = true;
	rc = hl_netcheck_run(&nc, hosts, use, so,
			     (int)(o->v[HL_K_NETWORK_TIMEOUT].d * 1000), NULL,
			     NULL, cause);
	free(use);
	if (rc != HL_OK)
		return rc;
	for (i = 0; i < nc.n && rc == HL_OK; i++)
		if (!nc.h[i].usable)
			rc = hl_fail(
				cause, HL_ESTART,
				"network check: %s (see 'hvdrun check' with the same hosts)",
				nc.h[i].error ? nc.h[i].error : "failed");
	for (i = 0; i < nc.n && rc == HL_OK; i++) {
		const struct hl_strvec *sel = &nc.h[i].selected;

		h = (size_t)(nc.h[i].host - hosts->v);
		/* Nothing selected on a single host: no constraint. */
		if (sel->n > 0 && (v[h] = hl_strvec_join(sel, ",")) == NULL)
			rc = hl_fail(cause, HL_ENOMEM, "out of memory");
		if (o->v[HL_K_VERBOSE].b)
			fprintf(stderr,
				"hvdrun: network check: host '%s' uses %s\n",
				nc.h[i].host->name, v[h] ? v[h] : "any");
	}
	if (o->v[HL_K_VERBOSE].b)
		fprintf(stderr, "hvdrun: network check took %.2f s\n",
			nc.seconds);
	if (rc == HL_OK)
		*mpi_if = mpi_interfaces(&nc, v, hosts);
	hl_netcheck_close(&nc);
	return rc;
}

/* `hvdrun --mpi`: mpirun runs the job; hvdrun becomes mpirun, so that
 * its exit status and signals are the job's. Returns only on failure. */
static int run_mpirun(const struct hl_hostlist *hosts,
		      const struct hl_plan *plan, const struct hl_envspec *es,
		      const struct hl_ssh_opts *so, const char *mpi_if,
		      char **cause)
{
	const struct hl_opts *o = &cmd_args.opts;
	struct hl_strvec argv;
	size_t i;
	int rc;

	rc = hl_mpirun_argv(hosts, plan, es, so, mpi_if,
			    o->v[HL_K_MPI_ARGS].set ? o->v[HL_K_MPI_ARGS].s
						    : NULL,
			    cmd_args.command, &argv, cause);
	if (rc != HL_OK)
		return rc;
	if (o->v[HL_K_VERBOSE].b) {
		fprintf(stderr, "hvdrun:");
		for (i = 0; i < argv.n; i++)
			fprintf(stderr, " %s", argv.v[i]);
		fputc('\n', stderr);
	}
	fflush(stdout);
	fflush(stderr);
	execvp(argv.v[0], argv.v);
	rc = hl_fail(cause, errno == ENOENT ? HL_ENOENT : HL_ENOEXEC,
		     "--mpi: cannot run mpirun: %s (install Open MPI)",
		     strerror(errno));
	hl_strvec_close(&argv);
	return rc;
}

static void print_verbose(const struct hl_plan *plan,
			  const struct hl_hostlist *hosts)
{
	char **a;

	fprintf(stderr, "hvdrun: %d workers on %zu hosts:", plan->size,
		plan->nhosts_used);
	for (a = cmd_args.command; *a != NULL; a++)
		fprintf(stderr, " %s", *a);
	fputc('\n', stderr);
	hl_plan_print(plan, hosts, stderr);
}

static int run(int *code, char **cause)
{
	struct hl_opts *o = &cmd_args.opts;
	struct hl_hostlist hosts;
	struct hl_plan plan = {0};
	struct hl_envspec es;
	struct hl_strvec warnings;
	struct hl_launch l;
	struct hl_ssh_opts so = {0};
	struct hl_rdv *rdv = NULL;
	int report[2] = {-1, -1};
	char **ifaces = NULL, *mpi_if = NULL;
	size_t i;
	int rc;
	long np;

	hl_hostlist_init(&hosts);
	hl_strvec_init(&warnings);
	memset(&es, 0, sizeof(es));
	memset(&l, 0, sizeof(l));
	rc = cmd_load_hosts(&hosts, cause);
	if (rc != HL_OK)
		goto out;
	print_warnings(&hosts.warnings);
	np = o->v[HL_K_NP].set ? o->v[HL_K_NP].i : hl_hosts_total_slots(&hosts);
	rc = hl_plan_init(&plan, &hosts, np, cause);
	if (rc != HL_OK)
		goto out;
	if (cmd_args.dry_run) {
		hl_plan_print(&plan, &hosts, stdout);
		goto out;
	}
	if (cmd_args.command[0] == NULL) {
		rc = hl_fail(cause, HL_EINVAL, "no command to run");
		goto out;
	}
	rc = hl_envspec_init(&es, o, &warnings, cause);
	if (rc != HL_OK)
		goto out;
	print_warnings(&warnings);
	rc = cmd_ssh_opts(&so, cause);
	if (rc != HL_OK)
		goto out;
	rc = choose_interfaces(&hosts, &plan, &so, &ifaces, &mpi_if, cause);
	if (rc != HL_OK)
		goto out;
	es.host_ifaces = ifaces;
	if (o->v[HL_K_MPI].b) {
		rc = run_mpirun(&hosts, &plan, &es, &so, mpi_if, cause);
		goto out;
	}
	l.hosts = &hosts;
	l.plan = &plan;
	l.env = &es;
	l.ssh = &so;
	rc = resolve(&l, &l.exec_path, cause);
	/* A remote rank 0's port is found on its host, at connect time. */
	if (rc == HL_OK && !hl_worker_remote(&l, plan.ranks[0].host))
		rc = hl_master_local(&es, plan.ranks[0].host, cause);
	if (rc != HL_OK)
		goto out;
	/* The workers' rendezvous: libhvd finds its peers through it. */
	if (pipe2(report, O_CLOEXEC | O_NONBLOCK) != 0) {
		rc = hl_fail(cause, HL_ESYS, "pipe: %s", strerror(errno));
		goto out;
	}
	rc = hl_rdv_start(&rdv, plan.size, (int)o->v[HL_K_START_TIMEOUT].i,
			  report[1], cause);
	if (rc == HL_OK)
		rc = hl_rdv_export(rdv, &es);
	if (rc != HL_OK)
		goto out;
	l.report_fd = report[0];
	if (o->v[HL_K_VERBOSE].b)
		print_verbose(&plan, &hosts);
	l.argv = cmd_args.command;
	l.output_dir = o->v[HL_K_OUTPUT_FILENAME].s;
	l.timestamps = o->v[HL_K_PREFIX_TIMESTAMP].b;
	l.verbose = o->v[HL_K_VERBOSE].b;
	l.grace_ms = 3000;
	fflush(stdout);
	fflush(stderr);
	rc = hl_launch_run(&l, code, cause);
out:
	hl_rdv_stop(rdv);
	if (report[0] >= 0) {
		close(report[0]);
		close(report[1]);
	}
	free((char *)so.config_file);
	free(l.exec_path);
	for (i = 0; ifaces != NULL && i < hosts.n; i++)
		free(ifaces[i]);
	free(ifaces);
	free(mpi_if);
	hl_envspec_close(&es);
	hl_plan_close(&plan);
	hl_hostlist_close(&hosts);
	hl_strvec_close(&warnings);
	return rc;
}

int main(int argc, char **argv)
{
	char *cause = NULL;
	int rc, code;

	/* The remote end of an SSH start (agent.h): not for people. */
	if (argc == 2 && strcmp(argv[1], "--agent") == 0)
		return hl_agent_main();
	if ((argc == 2 || argc == 3) && strcmp(argv[1], "--free-port") == 0)
		return hl_agent_free_port_main(argc == 3 ? argv[2] : NULL);
	if (argc == 2 && strcmp(argv[1], "--probe") == 0)
		return hl_probe_main();
	/* `hvdrun check [options]`: the preflight. */
	if (argc >= 2 && strcmp(argv[1], "check") == 0) {
		cmd_args.check = true;
		argc--;
		argv++;
	}
	rc = cmd_parse_args(argc, argv, &cause);
	if (rc == HL_OK && cmd_args.help) {
		cmd_usage();
		code = 0;
		goto out;
	}
	if (rc == HL_OK && cmd_args.version) {
		printf("hvdrun %s\n", HVD_VERSION);
		code = 0;
		goto out;
	}
	if (rc == HL_OK && cmd_args.config_file != NULL)
		rc = hl_config_load(cmd_args.config_file, &cmd_args.opts,
				    &cause);
	if (rc == HL_OK)
		rc = hl_opts_finish(&cmd_args.opts, &cause);
	if (rc != HL_OK) {
		code = die(rc, cause);
		goto out;
	}
	code = 0;
	rc = cmd_args.check ? cmd_check(&code, &cause) : run(&code, &cause);
	if (rc != HL_OK)
		code = die(rc, cause);
out:
	free(cause);
	hl_opts_close(&cmd_args.opts);
	return code;
}
