/* check_nccl.c: `hvdrun check --nccl` (lib/check/ncclcheck.h): the job
 * of hvd-ncclcheck, one rank a GPU on the hosts that have them, run as
 * hvdrun runs any job (in a child process, bounded in time), and its
 * report. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "hvdrun.h"
#include "launch/launch.h"

#define WORKER_DIR "/../libexec/hvdrun/hvd-ncclcheck"

/* hvd-ncclcheck beside this hvdrun: BINDIR/../libexec/hvdrun/. */
static char *worker_path(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0)
		return hl_strdup("hvd-ncclcheck");
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash != NULL)
		*slash = '\0';
	return hl_asprintf("%s%s", self, WORKER_DIR);
}

struct job {
	struct hl_hostlist hosts;
	char *argv[2];
	struct hl_strvec env;
};

/* In the child: the job as `hvdrun -H ... hvd-ncclcheck` would run it,
 * whatever the check's own options say of -np, --mpi or an elastic job.
 * Its exit status. */
static int launch(void *arg)
{
	struct job *j = arg;
	struct hl_opts *o = &cmd_args.opts;
	char *cause = NULL;
	int code = 0, rc;

	o->v[HL_K_NP].set = false;
	o->v[HL_K_MIN_NP].set = false;
	o->v[HL_K_DISCOVERY].set = false;
	o->v[HL_K_MPI].b = false;
	o->v[HL_K_PREFIX_TIMESTAMP].b = false;
	o->v[HL_K_OUTPUT_FILENAME].s = NULL;
	rc = cmd_run_job(&j->hosts, j->argv, &j->env, &code, &cause);
	return cmd_finish(rc, cause, code);
}

/* The hosts that run ranks, each with as many slots as it runs. */
static int job_hosts(const struct hl_netcheck *nc, const struct hl_ncclcheck *k,
		     struct hl_hostlist *out)
{
	size_t i, m = 0;

	out->v = calloc(nc->n ? nc->n : 1, sizeof(*out->v));
	if (out->v == NULL)
		return HL_ENOMEM;
	for (i = 0; i < nc->n; i++) {
		struct hl_host *h = &out->v[m];

		if (k->h[i].nranks == 0 || k->h[i].reason != NULL)
			continue;
		*h = *nc->h[i].host;
		h->slots = k->h[i].nranks;
		h->name = hl_strdup(h->name);
		h->user = h->user ? hl_strdup(h->user) : NULL;
		out->n = ++m;
		if (h->name == NULL)
			return HL_ENOMEM;
	}
	return HL_OK;
}

int check_nccl(struct hl_netcheck *nc, struct hl_ncclcheck *k, char **cause)
{
	const struct hl_opts *o = &cmd_args.opts;
	struct job j;
	int rc;

	memset(&j, 0, sizeof(j));
	rc = hl_ncc_plan(k, nc, (int)(o->v[HL_K_NCCL_TIMEOUT].d * 1000));
	hl_hostlist_init(&j.hosts);
	hl_strvec_init(&j.env);
	if (rc == HL_OK && k->not_run == NULL) {
		j.argv[0] = worker_path();
		if (j.argv[0] == NULL)
			rc = HL_ENOMEM;
		else if (access(j.argv[0], X_OK) != 0)
			k->not_run = hl_asprintf(
				"%s: %s (it is built with libhvd's GPU "
				"engine: `make` where CUDA and NCCL are "
				"installed, then `make install`)",
				j.argv[0], strerror(errno));
	}
	if (rc == HL_OK && k->not_run == NULL) {
		rc = job_hosts(nc, k, &j.hosts);
		if (rc == HL_OK &&
		    (hl_strvec_push(&j.env, "NCCL_DEBUG=INFO") != HL_OK ||
		     hl_strvec_push(&j.env, "NCCL_DEBUG_SUBSYS=INIT,NET") !=
			     HL_OK))
			rc = HL_ENOMEM;
		if (rc == HL_OK && isatty(2) && !cmd_args.json)
			fprintf(stderr,
				"hvdrun check: NCCL: %d ranks on %zu hosts "
				"(at most %.0f s)",
				k->nranks, j.hosts.n, k->timeout_ms / 1000.0);
		if (rc == HL_OK)
			rc = hl_ncc_run(k, launch, &j, HL_GRACE_MS + 1000,
					cause);
		if (isatty(2) && !cmd_args.json)
			fputs("\r\033[K", stderr);
	}
	if (rc == HL_OK)
		rc = hl_ncc_judge(k, nc);
	if (rc == HL_ENOMEM)
		rc = hl_fail(cause, HL_ENOMEM, "out of memory");
	free(j.argv[0]);
	hl_hostlist_close(&j.hosts);
	hl_strvec_close(&j.env);
	return rc;
}

static void print_host(const struct hl_netcheck *nc,
		       const struct hl_ncclcheck *k, size_t i, int w)
{
	const struct hl_ncc_host *h = &k->h[i];
	char *a, *b, *c;

	if (!h->joined) {
		printf("  %-*s  %s\n", w, check_name(nc, i),
		       h->reason ? h->reason : "did not join");
		return;
	}
	a = hl_strvec_join(&h->within, ", ");
	b = hl_strvec_join(&h->between, ", ");
	c = hl_strvec_join(&h->network, ", ");
	printf("  %-*s  joined, %d rank%s; within the host: %s; to other "
	       "hosts: %s; network: %s\n",
	       w, check_name(nc, i), h->nranks, h->nranks == 1 ? "" : "s",
	       a && *a ? a : "-", b && *b ? b : "-", c && *c ? c : "-");
	free(a);
	free(b);
	free(c);
}

void check_print_nccl(const struct hl_netcheck *nc,
		      const struct hl_ncclcheck *k)
{
	int w = check_width(nc);
	size_t i, joined = 0, shown = 0;
	bool many = nc->n > MATRIX_HOSTS;

	for (i = 0; i < k->nhosts; i++)
		joined += k->h[i].joined;
	printf("\nNCCL (--nccl)\n");
	if (k->not_run != NULL && joined == 0)
		printf("  not run: %s\n", k->not_run);
	else
		printf("  %d ranks on the hosts with GPUs, %zu of %zu hosts "
		       "joined, %.2f s%s\n",
		       k->nranks, joined, k->nhosts, k->seconds,
		       k->timed_out ? " (ended at --nccl-timeout)" : "");
	for (i = 0; i < k->nhosts; i++) {
		/* Many hosts: only those that did not join. */
		if (many && (k->h[i].joined || ++shown > 20))
			continue;
		print_host(nc, k, i, w);
	}
	if (many && joined > 0)
		printf("  %zu hosts joined (--json lists each host's "
		       "transports)\n",
		       joined);
	if (k->busbw_gbs >= 0)
		printf("  allreduce of %lld MiB: bus %.2f GB/s, algorithm "
		       "%.2f GB/s (median of %d)\n",
		       k->bytes >> 20, k->busbw_gbs, k->algbw_gbs, k->iters);
}

static json_t *ranks(const struct hl_netcheck *nc, const struct hl_ncclcheck *k)
{
	json_t *a = json_array();
	int j;

	for (j = 0; a != NULL && j < k->nranks; j++) {
		const struct hl_ncc_rank *r = &k->r[j];

		if (!check_jpush(a,
				 json_pack("{s:i,s:o,s:s,s:o?,s:b,s:o?,s:o?}",
					   "rank", j, "host",
					   check_jtext(check_name(nc, r->host)),
					   "stage", hl_ncc_stage_name(r->stage),
					   "device", check_jtext(r->device),
					   "small_ok", r->small_ok, "error",
					   check_jtext(r->fail), "nccl_warning",
					   check_jtext(r->warn)))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

json_t *check_nccl_json(const struct hl_netcheck *nc,
			const struct hl_ncclcheck *k)
{
	json_t *hosts = json_array();
	size_t i;

	for (i = 0; hosts != NULL && i < k->nhosts; i++) {
		const struct hl_ncc_host *h = &k->h[i];

		if (!check_jpush(
			    hosts,
			    json_pack("{s:o,s:i,s:b,s:o?,s:o,s:o,s:o}", "host",
				      check_jtext(check_name(nc, i)), "ranks",
				      h->nranks, "joined", h->joined, "reason",
				      check_jtext(h->reason), "within",
				      check_jstrings(&h->within), "between",
				      check_jstrings(&h->between), "network",
				      check_jstrings(&h->network)))) {
			json_decref(hosts);
			hosts = NULL;
		}
	}
	return json_pack(
		"{s:o?,s:f,s:f,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "not_run",
		check_jtext(k->not_run), "seconds", k->seconds,
		"timeout_seconds", k->timeout_ms / 1000.0, "timed_out",
		k->timed_out, "status",
		k->ran ? json_integer(k->status) : json_null(), "bytes",
		k->bytes > 0 ? json_integer(k->bytes) : json_null(),
		"algbw_gbs",
		k->algbw_gbs >= 0 ? json_real(k->algbw_gbs) : json_null(),
		"busbw_gbs",
		k->busbw_gbs >= 0 ? json_real(k->busbw_gbs) : json_null(),
		"hosts", hosts, "ranks", ranks(nc, k), "launcher",
		check_jstrings(&k->launcher));
}
