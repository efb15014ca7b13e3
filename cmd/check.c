/* check.c: `hvdrun check`, the preflight of a cluster (lib/check/netcheck.h),
 * and its report: a table for people (here), JSON for programs
 * (check_json.c). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "check/gpucheck.h"
#include "check/linkplan.h"
#include "job/host_source.h"
#include "config/hosts.h"
#include "hvdrun.h"
#include "check/netcheck.h"
#include "check/probe_msg.h"

struct progress {
	bool tty;
	bool shown;
};

static void on_progress(void *arg, const char *phase, const char *unit,
			size_t done, size_t total)
{
	struct progress *p = arg;

	if (!p->tty)
		return;
	fprintf(stderr, "\r\033[Khvdrun check: %s: %zu of %zu %s", phase, done,
		total, unit);
	fflush(stderr);
	p->shown = true;
}

static int print_report(const struct hl_netcheck *nc,
			const struct hl_ncclcheck *k, bool json,
			bool fail_on_slow)
{
	int rc = HL_OK;

	if (json)
		rc = check_print_json(nc, k, fail_on_slow);
	else
		check_print_table(nc, k);
	fflush(stdout);
	return rc;
}

static int check(int *code, char **cause)
{
	struct hl_opts *o = &cmd_args.opts;
	struct hl_hostlist hosts;
	struct hl_ssh_opts so = {0};
	struct hl_netcheck nc;
	struct hl_ncclcheck k = {0};
	bool nccl = o->v[HL_K_CHECK_NCCL].b;
	struct hl_nc_opts no = {
		.timeout_ms = (int)(o->v[HL_K_NETWORK_TIMEOUT].d * 1000),
		.bandwidth = o->v[HL_K_CHECK_BANDWIDTH].b,
		.bw_ms = (int)(o->v[HL_K_BANDWIDTH_TIME].d * 1000),
		.bw_bytes = (long long)o->v[HL_K_BANDWIDTH_SIZE].i << 20};
	bool slow = o->v[HL_K_FAIL_ON_SLOW].b;
	struct progress pr = {.tty = isatty(2) && !cmd_args.json};
	int rc;

	hl_hostlist_init(&hosts);
	/* Without hosts: this machine. */
	rc = hl_hosts_for_job(o, cmd_args.from_cli, cmd_args.config_file,
			      "localhost", NULL, &hosts, cause);
	if (rc == HL_OK) {
		cmd_warnings(&hosts.warnings);
		rc = hl_ssh_opts_from(&so, o, cause);
		so.log = cmd_log_ssh;
	}
	if (rc == HL_OK)
		rc = hl_netcheck_run(&nc, &hosts, NULL, &so, &no, on_progress,
				     &pr, cause);
	if (pr.shown)
		fputs("\r\033[K", stderr);
	if (rc == HL_OK) {
		if (nccl)
			rc = check_nccl(&nc, &k, cause);
		if (rc == HL_OK) {
			rc = print_report(&nc, nccl ? &k : NULL, cmd_args.json,
					  slow);
			if (rc != HL_OK)
				hl_fail(cause, rc, "out of memory");
		}
		*code = hl_nc_status(&nc, slow);
		hl_ncc_close(&k);
		hl_netcheck_close(&nc);
	}
	hl_ssh_opts_close(&so);
	hl_hostlist_close(&hosts);
	return rc;
}

int cmd_check_main(int argc, char **argv)
{
	char *cause = NULL;
	int code = 0, rc;

	if (!cmd_options(argc, argv, true, &code))
		return code;
	rc = check(&code, &cause);
	return cmd_finish(rc, cause, code);
}
