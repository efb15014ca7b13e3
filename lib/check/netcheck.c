/* netcheck.c: see netcheck.h. One thread per host (nchost.h) owns its
 * channel to the probe (rchan.h: an SSH session and one exec channel, or
 * a child process for this machine) and walks it through the probe's
 * dialogue (probe_msg.h); the calling thread moves every host from one
 * stage to the next together: describe, test, measure the links
 * (netlinks.c, with --bandwidth), end, and runs the pure steps between
 * them (netplan.h, linkplan.h). Every wait is bounded. */
#include "check/netcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <libssh/libssh.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check/linkplan.h"
#include "check/probe.h"
#include "check/probe_msg.h"
#include "ssh/rchan.h"
#include "agent/records.h"
#include "ssh/conn.h"

#include "check/netlinks.h"

/* Start the probe on the host: a child here, over SSH elsewhere. */
static char *start_probe(struct nc_thread *t)
{
	const struct hl_host *host = t->h->host;
	const char *self = t->g->so->agent_path;
	long long t0 = hl_now_ms();
	char *err = NULL;

	if (!t->h->remote) {
		t->open = hl_rchan_local(&t->c, host->name, self, "--probe",
					 &err) == HL_OK;
		return err;
	}
	if (hl_ssh_connect(host, t->g->so, &t->s, &err) != HL_OK)
		return err ? err : hl_strdup("out of memory");
	t->h->ssh_ok = true;
	t->h->ssh_ms = (double)(hl_now_ms() - t0);
	t->open = hl_rchan_ssh(&t->c, t->s, host->name, self, "--probe", NULL,
			       NULL, &err) == HL_OK;
	return err;
}

static void *host_main(void *arg)
{
	struct nc_thread *t = arg;
	struct hl_nc_host *h = t->h;
	long long deadline;
	const char *data;
	size_t len, used;
	char type;
	char *err = NULL;
	int r;

	err = start_probe(t);
	if (err != NULL) {
		hl_nch_phase(t, PH_FAILED, err);
		return NULL;
	}
	deadline = hl_now_ms() + 10000;
	while ((r = hl_nch_next(t, deadline, &used, &type, &data, &len)) == 1) {
		if (type == 'R')
			break;
		hl_nc_take_description(h, type, data, len);
		hl_buf_consume(&t->in, used);
	}
	if (r != 1 || h->port == 0 || strlen(h->token) != 32) {
		hl_nch_phase(t, PH_FAILED, hl_nch_failure(t, r));
		return NULL;
	}
	hl_buf_consume(&t->in, used);
	hl_nch_phase(t, PH_DESCRIBED, NULL);
	if (hl_nch_wait_stage(t, ST_TEST) != ST_TEST)
		return NULL;
	if (hl_rchan_write(&t->c, t->out.p, t->out.len) != HL_OK) {
		hl_nch_phase(t, PH_FAILED,
			     hl_asprintf("host '%s': the probe went away",
					 h->host->name));
		return NULL;
	}
	/* Every test ends by its timeout; 256 run at once. */
	deadline = hl_now_ms() + 5000 +
		   (long long)t->g->nc->timeout_ms *
			   (long long)(1 + t->ntargets / 256);
	while ((r = hl_nch_next(t, deadline, &used, &type, &data, &len)) == 1) {
		if (type == 'F')
			break;
		if (type == 'C') {
			pthread_mutex_lock(&t->g->lock);
			hl_nc_take_result(t->g->nc, data, len);
			pthread_mutex_unlock(&t->g->lock);
		} else if (type == 'W' && h->folder == NULL) {
			h->folder = hl_strndup(data, len);
		}
		hl_buf_consume(&t->in, used);
	}
	if (r != 1) {
		hl_nch_phase(t, PH_FAILED, hl_nch_failure(t, r));
		return NULL;
	}
	hl_nch_phase(t, PH_TESTED, NULL);
	if (hl_nch_wait_stage(t, ST_LINKS) == ST_LINKS)
		hl_nch_links(t);
	/* The listener stays up until every host is done. */
	hl_nch_wait_stage(t, ST_END);
	return NULL;
}

static void thread_close(struct nc_thread *t)
{
	if (t->open)
		hl_rchan_close(&t->c);
	if (t->s != NULL) {
		ssh_disconnect(t->s);
		ssh_free(t->s);
	}
	hl_buf_close(&t->in);
	hl_buf_close(&t->out);
}

/* Wait until every thread has left `phase` (or the deadline passes). */
static void wait_phase(struct nc_group *g, int phase, long long deadline,
		       const char *what, hl_nc_progress_fn progress, void *arg)
{
	size_t i, left, total = 0;

	for (i = 0; i < g->n; i++)
		total += g->t[i].phase == phase;
	pthread_mutex_lock(&g->lock);
	for (;;) {
		for (left = 0, i = 0; i < g->n; i++)
			left += g->t[i].phase == phase;
		if (progress != NULL) {
			pthread_mutex_unlock(&g->lock);
			progress(arg, what, "hosts", total - left, total);
			pthread_mutex_lock(&g->lock);
		}
		if (left == 0 || hl_now_ms() >= deadline)
			break;
		hl_cond_wait_ms(&g->cond, &g->lock, 100);
	}
	pthread_mutex_unlock(&g->lock);
}

/* The plan (netplan.h), then each host's list of tests with its go. */
static int plan_tests(struct nc_group *g)
{
	struct hl_netcheck *nc = g->nc;
	char own[160];
	size_t i;
	int rc;

	hl_machine_id(own, sizeof(own));
	rc = hl_nc_plan(nc, own);
	if (rc != HL_OK)
		return rc;
	for (i = 0; i < nc->npairs; i++) {
		struct hl_nc_pair *p = &nc->pairs[i];
		struct hl_nc_host *to = &nc->h[p->to];
		struct hl_pm_target t = {.id = (long)i, .port = to->port};

		snprintf(t.addr, sizeof(t.addr), "%s", to->addrs[p->addr].addr);
		snprintf(t.token, sizeof(t.token), "%s", to->token);
		if (hl_pm_put_target(&g->t[p->from].out, &t) != HL_OK)
			return HL_ENOMEM;
		g->t[p->from].ntargets++;
	}
	/* Each probe looks for the folder the job's workers start in, then
	 * tests its links. */
	for (i = 0; i < g->n; i++)
		if (hl_pm_put_text(&g->t[i].out, 'W', g->so->cwd) != HL_OK ||
		    hl_pm_put_go(&g->t[i].out, nc->timeout_ms) != HL_OK)
			return HL_ENOMEM;
	return HL_OK;
}

int hl_netcheck_run(struct hl_netcheck *nc, const struct hl_hostlist *hosts,
		    const bool *use, const struct hl_ssh_opts *so,
		    const struct hl_nc_opts *opts, hl_nc_progress_fn progress,
		    void *arg, char **cause)
{
	int timeout_ms = opts->timeout_ms;
	bool early = false;
	struct nc_group g = {0};
	long long t0 = hl_now_ms();
	size_t i, n = 0;
	int rc = HL_OK;

	memset(nc, 0, sizeof(*nc));
	nc->timeout_ms = timeout_ms;
	nc->bandwidth = opts->bandwidth;
	nc->bw_ms = opts->bw_ms;
	nc->bw_bytes = opts->bw_bytes;
	for (i = 0; i < hosts->n; i++)
		n += use == NULL || use[i];
	nc->h = calloc(n ? n : 1, sizeof(*nc->h));
	g.t = calloc(n ? n : 1, sizeof(*g.t));
	nc->folder = hl_strdup(so->cwd);
	if (nc->h == NULL || g.t == NULL || nc->folder == NULL) {
		free(g.t);
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	}
	for (i = 0; i < hosts->n; i++) {
		struct hl_nc_host *h;

		if (use != NULL && !use[i])
			continue;
		h = &nc->h[nc->n];
		hl_nc_host_init(h, &hosts->v[i],
				so->force || !hosts->v[i].local);
		g.t[nc->n].g = &g;
		g.t[nc->n].h = h;
		hl_buf_init(&g.t[nc->n].in);
		hl_buf_init(&g.t[nc->n].out);
		nc->n++;
	}
	g.nc = nc;
	g.so = so;
	g.n = nc->n;
	pthread_mutex_init(&g.lock, NULL);
	pthread_cond_init(&g.cond, NULL);
	for (i = 0; i < g.n; i++) {
		if (hl_thread_create(&g.t[i].th, host_main, &g.t[i]) != HL_OK) {
			hl_nch_phase(&g.t[i], PH_FAILED,
				     hl_strdup("cannot start a thread"));
			continue;
		}
		g.t[i].started = true;
	}
	/* SSH's own timeout bounds the connections; the probe's 10 s its
	 * description. */
	wait_phase(&g, PH_STARTING, t0 + so->connect_timeout_s * 1000 + 12000,
		   "connecting", progress, arg);
	pthread_mutex_lock(&g.lock);
	for (i = 0; i < g.n; i++)
		g.t[i].h->probed = g.t[i].phase == PH_DESCRIBED;
	pthread_mutex_unlock(&g.lock);
	rc = plan_tests(&g);
	if (rc != HL_OK) {
		hl_nch_stage(&g, ST_END);
	} else {
		hl_nch_stage(&g, ST_TEST);
		wait_phase(&g, PH_DESCRIBED,
			   hl_now_ms() + 10000 +
				   (long long)timeout_ms *
					   (long long)(1 + nc->npairs / 256),
			   "testing", progress, arg);
		if (nc->bandwidth) {
			hl_nch_select_early(&g);
			early = true;
			rc = hl_nc_plan_links(nc);
			if (rc == HL_OK)
				rc = hl_nch_measure_links(&g, progress, arg);
		}
		hl_nch_stage(&g, ST_END);
	}
	for (i = 0; i < g.n; i++) {
		if (g.t[i].started)
			pthread_join(g.t[i].th, NULL);
		if (g.t[i].phase == PH_STARTING || g.t[i].phase == PH_DESCRIBED)
			hl_nch_phase(
				&g.t[i], PH_FAILED,
				hl_asprintf("host '%s' did not answer in time",
					    g.t[i].h->host->name));
		if (g.t[i].phase == PH_FAILED)
			g.t[i].h->probed = false;
		thread_close(&g.t[i]);
	}
	if (rc == HL_OK && !early)
		hl_nc_select(nc);
	for (i = 0; early && i < nc->n; i++)
		if (!nc->h[i].probed)
			nc->h[i].usable = false;
	for (i = 0; rc == HL_OK && i < nc->nlinks; i++)
		hl_nc_link_fail(&nc->links[i],
				nc->h[nc->links[i].from].probed
					? "no result in time"
					: "not measured: the source host "
					  "stopped answering");
	if (rc == HL_OK)
		rc = hl_nc_judge(nc);
	for (i = 0; i < nc->n; i++)
		nc->nusable += nc->h[i].usable;
	nc->seconds = (double)(hl_now_ms() - t0) / 1000.0;
	pthread_cond_destroy(&g.cond);
	pthread_mutex_destroy(&g.lock);
	free(g.t);
	if (rc != HL_OK)
		return hl_fail(cause, rc, "out of memory");
	return HL_OK;
}
