/* mpirun.c: see mpirun.h. */
#include "launch/mpirun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wordexp.h>

/* One user and one port for every host: mpirun's ssh takes one of each. */
static int common(const struct hl_hostlist *hosts, const struct hl_plan *plan,
		  const char **user, int *port, char **cause)
{
	int r;

	*user = NULL;
	*port = 0;
	for (r = 0; r < plan->size; r++) {
		const struct hl_host *h = &hosts->v[plan->ranks[r].host];

		if (h->user != NULL) {
			if (*user != NULL && strcmp(*user, h->user) != 0)
				return hl_fail(
					cause, HL_EINVAL,
					"--mpi: hosts with different users ('%s', '%s'): set them in the SSH config instead",
					*user, h->user);
			*user = h->user;
		}
		if (h->port != 0) {
			if (*port != 0 && *port != h->port)
				return hl_fail(
					cause, HL_EINVAL,
					"--mpi: hosts with different SSH ports (%d, %d): set them in the SSH config instead",
					*port, h->port);
			*port = h->port;
		}
	}
	return HL_OK;
}

static int push2(struct hl_strvec *v, const char *a, const char *b)
{
	int rc = hl_strvec_push(v, a);

	return rc == HL_OK ? hl_strvec_push(v, b) : rc;
}

static int mca(struct hl_strvec *v, const char *name, const char *value)
{
	int rc = hl_strvec_push(v, "--mca");

	return rc == HL_OK ? push2(v, name, value) : rc;
}

/* "-x NAME" for each variable of hvdrun's that workers on other hosts
 * get (env.h), but those -x or [env] give already. */
static int exported(struct hl_strvec *out, const struct hl_envspec *es)
{
	struct hl_strvec env;
	size_t i;
	int rc = hl_env_exported(environ, es, &env);

	if (rc != HL_OK)
		return rc;
	for (i = 0; rc == HL_OK && i < env.n; i++) {
		char *name = hl_strndup(env.v[i], strcspn(env.v[i], "="));

		rc = name == NULL		 ? HL_ENOMEM
		     : hl_envspec_sets(es, name) ? HL_OK
						 : push2(out, "-x", name);
		free(name);
	}
	if (rc == HL_OK && hl_env_unbuffered(&env, es))
		rc = push2(out, "-x", HL_ENV_UNBUFFERED);
	hl_strvec_close(&env);
	return rc;
}

/* Words of text (--mpi-args, --binding-args: what), split as a shell
 * would, onto out. */
static int words(struct hl_strvec *out, const char *what, const char *text,
		 char **cause)
{
	wordexp_t we;
	size_t i;
	int rc = HL_OK;

	if (wordexp(text, &we, WRDE_NOCMD) != 0)
		return hl_fail(
			cause, HL_EINVAL,
			"--%s: cannot split '%s' into words (unbalanced quotes, or $(...))",
			what, text);
	for (i = 0; i < we.we_wordc && rc == HL_OK; i++)
		rc = hl_strvec_push(out, we.we_wordv[i]);
	wordfree(&we);
	return rc;
}

int hl_mpirun_argv(const struct hl_hostlist *hosts, const struct hl_plan *plan,
		   const struct hl_envspec *es, const struct hl_ssh_opts *so,
		   const char *if_include, const struct hl_opts *o,
		   char *const *command, struct hl_strvec *out, char **cause)
{
	struct hl_strvec hl, rsh;
	const char *user;
	char np[16], port_s[16], *s = NULL;
	size_t i, hi;
	int rc, port, r;
	bool *used;

	hl_strvec_init(out);
	rc = common(hosts, plan, &user, &port, cause);
	if (rc != HL_OK)
		return rc;
	if (so->user != NULL && user == NULL)
		user = so->user;
	if (port == 0)
		port = so->port;
	hl_strvec_init(&hl);
	hl_strvec_init(&rsh);
	used = calloc(hosts->n ? hosts->n : 1, sizeof(*used));
	if (used == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	for (r = 0; r < plan->size; r++)
		used[plan->ranks[r].host] = true;
	rc = hl_strvec_push(out, "mpirun");
	if (rc == HL_OK && geteuid() == 0)
		rc = hl_strvec_push(out, "--allow-run-as-root");
	/* Output as horovodrun's --mpi gives it: each line tagged with its
	 * rank ("[1,R]<stdout>:"), timestamped with
	 * --prefix-output-with-timestamp, and copied under
	 * --output-filename's folder by mpirun itself. */
	if (rc == HL_OK)
		rc = hl_strvec_push(out, "--tag-output");
	if (rc == HL_OK && o->v[HL_K_PREFIX_TIMESTAMP].b)
		rc = hl_strvec_push(out, "--timestamp-output");
	if (rc == HL_OK && o->v[HL_K_OUTPUT_FILENAME].set)
		rc = push2(out, "--output-filename",
			   o->v[HL_K_OUTPUT_FILENAME].s);
	/* mpirun's --stdin is hvdrun's: rank 0 by default. As hvdrun read
	 * it ("NONE" and "01" are hvdrun's none and 1, not mpirun's). */
	if (rc == HL_OK && o->v[HL_K_STDIN].set) {
		char rank[24] = "none";

		if (o->v[HL_K_STDIN].i >= 0)
			snprintf(rank, sizeof(rank), "%ld", o->v[HL_K_STDIN].i);
		rc = push2(out, "--stdin", rank);
	}
	/* --timeout: mpirun's own (its exit status is its own). */
	if (rc == HL_OK && o->v[HL_K_TIMEOUT].i > 0) {
		char secs[24];

		snprintf(secs, sizeof(secs), "%ld", o->v[HL_K_TIMEOUT].i);
		rc = push2(out, "--timeout", secs);
	}
	/* --wdir: mpirun's own, the same absolute folder. */
	if (rc == HL_OK && so->wdir)
		rc = push2(out, "-wdir", so->cwd);
	snprintf(np, sizeof(np), "%d", plan->size);
	if (rc == HL_OK)
		rc = push2(out, "-np", np);
	/* The hosts in the plan's order, with their slots: mpirun fills them
	 * in order, as the plan does. */
	for (hi = 0; hi < hosts->n && rc == HL_OK; hi++)
		if (used[hi])
			rc = hl_strvec_pushf(
				&hl, "%s%s%s:%d",
				strchr(hosts->v[hi].name, ':') ? "[" : "",
				hosts->v[hi].name,
				strchr(hosts->v[hi].name, ':') ? "]" : "",
				hosts->v[hi].slots);
	/* Inside a Slurm allocation, mpirun reads it itself and starts its
	 * daemons through srun. */
	if (rc == HL_OK && hl.n > 0 && !hosts->slurm)
		rc = (s = hl_strvec_join(&hl, ",")) ? push2(out, "-H", s)
						    : HL_ENOMEM;
	free(s);
	s = NULL;
	/* ssh's options, as mpirun passes them to ssh. */
	if (rc == HL_OK && port != 0) {
		snprintf(port_s, sizeof(port_s), "%d", port);
		rc = push2(&rsh, "-p", port_s);
	}
	if (rc == HL_OK && so->identity != NULL)
		rc = push2(&rsh, "-i", so->identity);
	if (rc == HL_OK && so->config_file != NULL)
		rc = push2(&rsh, "-F", so->config_file);
	if (rc == HL_OK && user != NULL)
		rc = push2(&rsh, "-l", user);
	if (rc == HL_OK && so->host_key_checking != HL_HOSTKEY_YES)
		rc = push2(&rsh, "-o",
			   so->host_key_checking == HL_HOSTKEY_NO
				   ? "StrictHostKeyChecking=no"
				   : "StrictHostKeyChecking=accept-new");
	if (rc == HL_OK && rsh.n > 0)
		rc = (s = hl_strvec_join(&rsh, " "))
			     ? mca(out, "plm_rsh_args", s)
			     : HL_ENOMEM;
	free(s);
	if (rc == HL_OK && if_include != NULL) {
		rc = mca(out, "btl_tcp_if_include", if_include);
		if (rc == HL_OK)
			rc = mca(out, "oob_tcp_if_include", if_include);
	}
	/* NCCL's and torch's gloo: the same interfaces, as for hvdrun's own
	 * workers, where every host's have the same names (not addresses). */
	for (i = 0; i < 2 && rc == HL_OK && if_include != NULL &&
		    strchr(if_include, '/') == NULL;
	     i++) {
		static const char *const vars[2] = {"NCCL_SOCKET_IFNAME",
						    "GLOO_SOCKET_IFNAME"};
		char *x;

		if (hl_envspec_sets(es, vars[i]))
			continue;
		x = hl_asprintf("%s=%s", vars[i], if_include);
		rc = x != NULL ? push2(out, "-x", x) : HL_ENOMEM;
		free(x);
	}
	for (i = 0; i < es->set.n && rc == HL_OK; i++)
		rc = push2(out, "-x", es->set.v[i]);
	for (i = 0; i < es->forward.n && rc == HL_OK; i++)
		rc = push2(out, "-x", es->forward.v[i]);
	/* hvdrun's environment, by name, as horovodrun --mpi passes it (its
	 * host's and session's own stay: hl_env_exported). */
	if (rc == HL_OK)
		rc = exported(out, es);
	/* --tcp: horovodrun's meaning for mpirun, TCP between every pair of
	 * ranks, on one host too. */
	if (rc == HL_OK && o->v[HL_K_TCP].b) {
		rc = mca(out, "btl", "tcp,self");
		if (rc == HL_OK)
			rc = mca(out, "pml", "ob1");
	}
	if (rc == HL_OK && o->v[HL_K_BINDING_ARGS].set)
		rc = words(out, "binding-args", o->v[HL_K_BINDING_ARGS].s,
			   cause);
	/* hvdrun's binding options, in mpirun's words: under mpirun they
	 * bind nothing of hvdrun's (rules.c refuses them beside
	 * --binding-args). */
	if (rc == HL_OK && o->v[HL_K_BIND_TO].set)
		rc = push2(out, "--bind-to",
			   hl_key_choices(HL_K_BIND_TO)[o->v[HL_K_BIND_TO].i]);
	if (rc == HL_OK && o->v[HL_K_REPORT_BINDINGS].b)
		rc = hl_strvec_push(out, "--report-bindings");
	if (rc == HL_OK && o->v[HL_K_MPI_ARGS].set)
		rc = words(out, "mpi-args", o->v[HL_K_MPI_ARGS].s, cause);
	for (i = 0; command[i] != NULL && rc == HL_OK; i++)
		rc = hl_strvec_push(out, command[i]);
	free(used);
	hl_strvec_close(&hl);
	hl_strvec_close(&rsh);
	if (rc == HL_ENOMEM)
		rc = hl_fail(cause, rc, "out of memory");
	if (rc != HL_OK)
		hl_strvec_close(out);
	return rc;
}
