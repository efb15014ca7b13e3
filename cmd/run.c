/* run.c: `hvdrun [options] command`: the host list, the rank plan, the
 * workers' environment and interfaces, then the launch (or mpirun with
 * --mpi); what lib/ reports on the way is printed here. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "job/discovery.h"
#include "job/env.h"
#include "proto/worker_env.h"
#include "job/host_source.h"
#include "config/hosts.h"
#include "hvdrun.h"
#include "check/iface_policy.h"
#include "launch/launch.h"
#include "launch/mpirun.h"
#include "job/plan.h"
#include "util/proc.h"
#include "config/rules.h"
#include "elastic/supervise.h"
#include "rdv/server.h"
#include "spawn/spawn.h"

/* words (NULL-terminated) on stderr after what is already there, each as
 * the shell would need it, so that the line can be copied and run. */
static void put_words(char *const *words)
{
	for (; *words != NULL; words++) {
		char *w = hl_shell_word(*words);

		fprintf(stderr, " %s", w != NULL ? w : *words);
		free(w);
	}
	fputc('\n', stderr);
}

/* `hvdrun --mpi`: mpirun runs the job; hvdrun becomes mpirun, so that
 * its exit status and signals are the job's. Returns only on failure, or
 * with --dry-run once the line is shown. */
static int run_mpirun(const struct hl_hostlist *hosts,
		      const struct hl_plan *plan, const struct hl_envspec *es,
		      const struct hl_ssh_opts *so, const char *mpi_if,
		      char **command, char **cause)
{
	const struct hl_opts *o = &cmd_args.opts;
	struct hl_strvec argv;
	int rc;

	rc = hl_mpirun_argv(hosts, plan, es, so, mpi_if, o, command, &argv,
			    cause);
	if (rc == HL_OK && (o->v[HL_K_VERBOSE].b || cmd_args.dry_run)) {
		fflush(stdout); /* after the plan, with --dry-run */
		fputs("hvdrun:", stderr);
		put_words(argv.v);
	}
	if (rc != HL_OK || cmd_args.dry_run) {
		hl_strvec_close(&argv);
		return rc;
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

/* One line per rank, Horovod's names. */
static void print_plan(const struct hl_plan *plan,
		       const struct hl_hostlist *hosts, FILE *out)
{
	int r;

	for (r = 0; r < plan->size; r++) {
		const struct hl_rank *k = &plan->ranks[r];

		fprintf(out,
			"rank=%d host=%s local_rank=%d local_size=%d cross_rank=%d cross_size=%d\n",
			k->rank, hosts->v[k->host].name, k->local_rank,
			k->local_size, k->cross_rank, k->cross_size);
	}
}

/* --verbose: what the network check chose on each host it checked. */
static void print_choice(const struct hl_plan *plan,
			 const struct hl_hostlist *hosts,
			 const struct hl_iface_choice *ic)
{
	size_t h;
	int r;

	for (h = 0; h < ic->nhosts; h++) {
		for (r = 0; r < plan->size && plan->ranks[r].host != h; r++)
			;
		if (r < plan->size)
			fprintf(stderr,
				"hvdrun: network check: host '%s' uses %s\n",
				hosts->v[h].name,
				ic->host[h] ? ic->host[h] : "any");
	}
	fprintf(stderr, "hvdrun: network check took %.2f s\n",
		ic->check_seconds);
}

static void print_verbose(const struct hl_plan *plan,
			  const struct hl_hostlist *hosts, char **command)
{
	fprintf(stderr, "hvdrun: %d workers on %zu hosts:", plan->size,
		plan->nhosts_used);
	put_words(command);
	print_plan(plan, hosts, stderr);
}

/* What the launch reports, as hvdrun(1) shows it. */
static void on_event(void *arg, const struct hl_event *ev)
{
	bool verbose = cmd_args.opts.v[HL_K_VERBOSE].b;
	/* An elastic job's workers are known by id (their first rank): a
	 * rank changes with each generation. */
	const char *who = cmd_args.opts.v[HL_K_MIN_NP].set ? "worker" : "rank";

	(void)arg;
	switch (ev->kind) {
	case HL_EV_STARTING:
		if (verbose)
			fprintf(stderr, "hvdrun: starting rank %d on %s\n",
				ev->rank, ev->host);
		break;
	case HL_EV_FAILED:
		fprintf(stderr, "hvdrun: %s %d on %s %s; stopping the job\n",
			who, ev->rank, ev->host, ev->text);
		break;
	case HL_EV_RESET:
		fprintf(stderr, "hvdrun: %s %d on %s %s\n", who, ev->rank,
			ev->host, ev->text);
		break;
	case HL_EV_GROW:
	case HL_EV_HOSTS:
		if (ev->host != NULL)
			fprintf(stderr, "hvdrun: host %s %s\n", ev->host,
				ev->text);
		else
			fprintf(stderr, "hvdrun: %s\n", ev->text);
		break;
	case HL_EV_NOT_READY:
	case HL_EV_OUTPUT_LOST:
		fprintf(stderr, "hvdrun: %s; stopping the job\n", ev->text);
		break;
	case HL_EV_STOPPED: {
		char name[300], *text;

		snprintf(name, sizeof(name), "%s %d on %s", who, ev->rank,
			 ev->host);
		text = hl_stopped_text(name, ev->sig);
		if (text != NULL)
			fputs(text, stderr);
		free(text);
		break;
	}
	case HL_EV_TIMEOUT:
		fprintf(stderr,
			"hvdrun: %s: the job ran for %ld s, with %d %s%s still running; stopping it\n",
			hl_opt_said(&cmd_args.opts, HL_K_TIMEOUT),
			cmd_args.opts.v[HL_K_TIMEOUT].i, ev->sig, who,
			ev->sig == 1 ? "" : "s");
		break;
	case HL_EV_SIGNAL:
		if (verbose)
			fprintf(stderr,
				"hvdrun: received %s; forwarding it to every worker\n",
				strsignal(ev->sig));
		break;
	}
}

/* Room among hvdrun's open files for what it holds a worker
 * (hl_worker_fds): where even the hard limit leaves none, one line says
 * so before anything starts. */
static int nofile_room(const struct hl_launch *l, char **cause)
{
	long need = HL_FDS_BASE, limit = hl_nofile_limit(), here = 0;
	int i;

	for (i = 0; i < l->plan->size; i++) {
		need += hl_worker_fds(l, l->plan->ranks[i].host);
		here += !hl_worker_remote(l, l->plan->ranks[i].host);
	}
	if (need <= limit)
		return HL_OK;
	return hl_fail(
		cause, HL_ESYS,
		"%d workers need about %ld open files of hvdrun (%s%s%s%s); it may open %ld (its hard limit on open files, ulimit -Hn): raise it, or start fewer workers",
		l->plan->size, need,
		here > 0 ? "three a worker of this host" : "",
		here > 0 && here < l->plan->size ? ", " : "",
		here == l->plan->size ? ""
		: l->ssh->srun ? "one a worker of another node, through srun"
			       : "two a worker of another host",
		l->output_dir != NULL ? ", two more each for --output-filename"
				      : "",
		limit);
}

/* The files rank 0 writes (HOROVOD_TIMELINE, and HOROVOD_AUTOTUNE_LOG
 * when HOROVOD_AUTOTUNE is on: from their options, -x, [env] or hvdrun's
 * own environment), where rank 0 runs on this machine: one it could not
 * create is bad usage, before anything starts, where libhvd would find it
 * only in the job (a remote rank 0 says so there). A relative path is
 * rank 0's: from wdir (--wdir's folder, or NULL: here). */
static int rank0_files(const struct hl_opts *o, const struct hl_envspec *es,
		       const char *wdir, char **cause)
{
	static const enum hl_key keys[] = {HL_K_TIMELINE_FILENAME,
					   HL_K_AUTOTUNE_LOG};
	const char *on = hl_envspec_value(es, hl_keys[HL_K_AUTOTUNE].envvar);
	double tune = 0;
	size_t i;

	if (on != NULL && !wenv_parse(WENV_AUTOTUNE, on, &tune))
		tune = 0;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *var = hl_keys[keys[i]].envvar;
		const char *given = hl_envspec_value(es, var), *slash;
		char name[80], *path;
		struct stat st;
		char *dir;
		int err = 0;

		if (given == NULL || *given == '\0' ||
		    (keys[i] == HL_K_AUTOTUNE_LOG && tune == 0))
			continue;
		path = hl_path_from(wdir, given);
		if (path == NULL)
			return hl_fail(cause, HL_ENOMEM, "out of memory");
		slash = strrchr(path, '/');
		dir = slash == NULL
			      ? hl_strdup(".")
			      : hl_strndup(path,
					   slash == path
						   ? 1
						   : (size_t)(slash - path));
		if (dir == NULL)
			return hl_fail(cause, HL_ENOMEM, "out of memory");
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
			err = EISDIR;
		else if (access(dir, W_OK | X_OK) != 0)
			err = errno;
		free(dir);
		free(path);
		if (err != 0)
			return hl_fail(
				cause, HL_EINVAL,
				"%s '%s': rank 0 cannot write it (%s)",
				o->v[keys[i]].set
					? hl_opts_display(
						  keys[i],
						  cmd_args.from_cli[keys[i]],
						  name, sizeof(name))
					: var,
				given, strerror(err));
	}
	return HL_OK;
}

/* The launch of the workers under hvdrun's own supervisor, the
 * rendezvous running beside it. */
static int launch(struct hl_launch *l, int *code, char **cause)
{
	const struct hl_opts *o = &cmd_args.opts;
	const struct hl_plan *plan = l->plan;
	struct hl_rdv *rdv = NULL;
	int report[2] = {-1, -1};
	int rc;

	l->output_dir = o->v[HL_K_OUTPUT_FILENAME].s;
	hl_nofile_raise();
	rc = nofile_room(l, cause);
	if (rc == HL_OK)
		rc = hl_local_command(l, &l->exec_path, cause);
	/* A remote rank 0's port is found on its host, at connect time. */
	if (rc == HL_OK && !hl_worker_remote(l, plan->ranks[0].host))
		rc = hl_master_local(l->env, plan->ranks[0].host, cause);
	if (rc != HL_OK)
		return rc;
	/* The workers' rendezvous: libhvd finds its peers through it. */
	if (pipe2(report, O_CLOEXEC | O_NONBLOCK) != 0)
		return hl_fail(cause, HL_ESYS, "pipe: %s", strerror(errno));
	rc = hl_rdv_start(
		&rdv, plan->size, (int)o->v[HL_K_START_TIMEOUT].i, report[1],
		l->env->elastic ? &hl_elastic_generations : NULL, cause);
	if (rc == HL_OK)
		rc = hl_rdv_export(rdv, l->env);
	if (rc == HL_OK) {
		l->report_fd = report[0];
		l->timestamps = o->v[HL_K_PREFIX_TIMESTAMP].b;
		l->grace_ms = HL_GRACE_MS;
		l->on_event = on_event;
		if (l->env->elastic) {
			l->hooks = &hl_elastic_hooks;
			l->rdv = rdv;
			l->min_np = (int)o->v[HL_K_MIN_NP].i;
			l->reset_limit = o->v[HL_K_RESET_LIMIT].set
						 ? (int)o->v[HL_K_RESET_LIMIT].i
						 : 0;
			l->elastic_timeout_s =
				(int)o->v[HL_K_ELASTIC_TIMEOUT].i;
			l->max_np = o->v[HL_K_MAX_NP].set
					    ? (int)o->v[HL_K_MAX_NP].i
					    : plan->size;
			l->cooldown = o->v[HL_K_COOLDOWN].set;
			l->cooldown_min_s = (int)o->v[HL_K_COOLDOWN].i;
			l->cooldown_max_s = (int)o->v[HL_K_COOLDOWN].d;
		}
		fflush(stdout);
		fflush(stderr);
		rc = hl_launch_run(l, code, cause);
	}
	hl_rdv_stop(rdv);
	close(report[0]);
	close(report[1]);
	return rc;
}

/* The job of command on hosts (disc: an elastic job's discovery, or
 * NULL), its workers' environment with env's NAME=VALUE entries added. */
static int run_on(struct hl_hostlist *hosts, struct hl_discovery *disc,
		  char **command, const struct hl_strvec *env, int *code,
		  char **cause)
{
	struct hl_opts *o = &cmd_args.opts;
	struct hl_plan plan = {0};
	struct hl_envspec es;
	struct hl_strvec warnings;
	struct hl_launch l;
	struct hl_ssh_opts so = {0};
	struct hl_iface_choice ic = {0};
	long long started = hl_now_ms();
	size_t i;
	long np;
	int rc;

	hl_strvec_init(&warnings);
	memset(&es, 0, sizeof(es));
	memset(&l, 0, sizeof(l));
	l.argv = command;
	np = hl_job_size(o, hosts);
	rc = hl_plan_init(&plan, hosts, np,
			  o->v[HL_K_NP].set && np == o->v[HL_K_NP].i
				  ? hl_opt_said(o, HL_K_NP)
				  : NULL,
			  cause);
	if (rc != HL_OK)
		goto out;
	if (hosts->origin != NULL && (cmd_args.dry_run || o->v[HL_K_VERBOSE].b))
		fprintf(stderr, "hvdrun: hosts: %s\n", hosts->origin);
	if (command[0] == NULL && !cmd_args.dry_run) {
		rc = hl_fail(cause, HL_EINVAL, "no command to run");
		goto out;
	}
	rc = hl_envspec_init(&es, o, &warnings, cause);
	for (i = 0; env != NULL && rc == HL_OK && i < env->n; i++)
		rc = hl_strvec_push(&es.set, env->v[i]) == HL_OK
			     ? HL_OK
			     : hl_fail(cause, HL_ENOMEM, "out of memory");
	if (rc == HL_OK)
		rc = hl_envspec_check_inherited(&es, cause);
	if (rc == HL_OK)
		rc = hl_env_typos(environ, &es, &warnings) == HL_OK
			     ? HL_OK
			     : hl_fail(cause, HL_ENOMEM, "out of memory");
	if (rc == HL_OK)
		rc = hl_rules_check(o, plan.size, cause);
	if (rc != HL_OK)
		goto out;
	es.elastic = o->v[HL_K_MIN_NP].set;
	l.stdin_rank = (int)o->v[HL_K_STDIN].i;
	cmd_warnings(&warnings);
	rc = hl_ssh_opts_from(&so, o, cause);
	so.log = cmd_log_ssh;
	if (rc == HL_OK && !o->v[HL_K_MPI].b)
		rc = hl_ssh_opts_launcher(&so, hosts->slurm, cause);
	if (rc == HL_OK)
		rc = hl_rules_check_launcher(o, so.srun, cause);
	/* --dry-run: the options' checks and rules, then the plan. */
	if (rc == HL_OK && cmd_args.dry_run) {
		print_plan(&plan, hosts, stdout);
		/* --mpi: the mpirun line, with the interfaces given; the
		 * network check's would be found when the job starts. */
		if (o->v[HL_K_MPI].b && command[0] != NULL)
			rc = run_mpirun(
				hosts, &plan, &es, &so,
				o->v[HL_K_NETWORK_INTERFACES].set
					? o->v[HL_K_NETWORK_INTERFACES].s
					: NULL,
				command, cause);
		goto out;
	}
	/* Rank 0 here (mpirun's too, the plan's; over SSH with --force-ssh,
	 * the same files): its files, before any host is probed. */
	if (rc == HL_OK && hosts->v[plan.ranks[0].host].local)
		rc = rank0_files(o, &es, so.wdir ? so.cwd : NULL, cause);
	if (rc == HL_OK)
		rc = hl_iface_choose(&ic, o, hosts, &plan, &so, cause);
	if (rc != HL_OK)
		goto out;
	es.host_ifaces = ic.host;
	es.nhost_ifaces = hosts->n;
	if (o->v[HL_K_VERBOSE].b && ic.checked)
		print_choice(&plan, hosts, &ic);
	if (o->v[HL_K_MPI].b) {
		rc = run_mpirun(hosts, &plan, &es, &so, ic.mpi, command, cause);
		goto out;
	}
	if (o->v[HL_K_VERBOSE].b) {
		print_verbose(&plan, hosts, command);
		fprintf(stderr, "hvdrun: other hosts' workers start %s\n",
			so.srun ? "through srun (one step, an agent a node)"
				: "over SSH");
	}
	l.hosts = hosts;
	if (o->v[HL_K_TIMEOUT].i > 0)
		l.deadline_ms = started + o->v[HL_K_TIMEOUT].i * 1000;
	l.discovery = o->v[HL_K_DISCOVERY].set ? disc : NULL;
	l.plan = &plan;
	l.env = &es;
	l.ssh = &so;
	if (o->v[HL_K_VERBOSE].b && l.stdin_rank >= 0)
		fprintf(stderr, "hvdrun: rank %d reads standard input\n",
			l.stdin_rank);
	rc = launch(&l, code, cause);
out:
	free(l.exec_path);
	hl_iface_choice_close(&ic);
	hl_ssh_opts_close(&so);
	hl_envspec_close(&es);
	hl_plan_close(&plan);
	hl_strvec_close(&warnings);
	return rc;
}

int cmd_run_job(struct hl_hostlist *hosts, char **command,
		const struct hl_strvec *env, int *code, char **cause)
{
	return run_on(hosts, NULL, command, env, code, cause);
}

static int run(int *code, char **cause)
{
	struct hl_hostlist hosts;
	struct hl_discovery disc;
	int rc;

	hl_hostlist_init(&hosts);
	rc = hl_hosts_for_job(&cmd_args.opts, cmd_args.from_cli,
			      cmd_args.config_file, NULL, &disc, &hosts, cause);
	if (rc == HL_OK) {
		cmd_warnings(&hosts.warnings);
		rc = run_on(&hosts, &disc, cmd_args.command, NULL, code, cause);
	}
	/* A run of the script while the job ran ended with it (launch.c);
	 * the one before the start ended then. */
	hl_hostlist_close(&hosts);
	return rc;
}

int cmd_run_main(int argc, char **argv)
{
	char *cause = NULL;
	int code = 0, rc;

	if (!cmd_options(argc, argv, false, &code))
		return code;
	rc = run(&code, &cause);
	return cmd_finish(rc, cause, code);
}
