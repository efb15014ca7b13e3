/* netcheck.c: see netcheck.h. One thread per host owns its channel to
 * the probe (rchan.h: an SSH session and one exec channel, or a child
 * process for this machine) and walks it through the probe's dialogue
 * (probe_msg.h); the calling thread moves every host from one stage to
 * the next together: describe, test, end, and runs the pure steps
 * between them (netplan.h). Every wait is bounded. */
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

enum { ST_DESCRIBE, ST_TEST, ST_LINKS, ST_END };
enum { PH_STARTING, PH_DESCRIBED, PH_TESTED, PH_FAILED };

struct nc_group;

struct nc_thread {
	struct nc_group *g;
	struct hl_nc_host *h;
	pthread_t th;
	bool started;
	int phase;
	ssh_session s;	   /* remote hosts */
	struct hl_rchan c; /* to the probe */
	bool open;
	struct hl_buf in;
	struct hl_buf out; /* the targets and the go */
	size_t ntargets;
	size_t rounds_done; /* of the bandwidth stage */
	bool links_done;
};

struct nc_group {
	struct hl_netcheck *nc;
	const struct hl_ssh_opts *so;
	struct nc_thread *t;
	size_t n;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stage;
	size_t round;		  /* the bandwidth stage's, now */
	long long round_deadline; /* ms */
};

static void set_phase(struct nc_thread *t, int phase, char *error)
{
	pthread_mutex_lock(&t->g->lock);
	t->phase = phase;
	if (error != NULL && t->h->error == NULL)
		t->h->error = error;
	else
		free(error);
	pthread_cond_broadcast(&t->g->cond);
	pthread_mutex_unlock(&t->g->lock);
}

/* Wait for the group's stage to reach at least `stage`. */
static int wait_stage(struct nc_thread *t, int stage)
{
	int st;

	pthread_mutex_lock(&t->g->lock);
	while (t->g->stage < stage)
		pthread_cond_wait(&t->g->cond, &t->g->lock);
	st = t->g->stage;
	pthread_mutex_unlock(&t->g->lock);
	return st;
}

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

/* Read more of the probe's output. 1: got some; 0: deadline; HL_EPROTO:
 * the end of the output (or no memory for it). */
static int fill(struct nc_thread *t, long long deadline)
{
	char chunk[8192];
	long long left = deadline - hl_now_ms();
	int n;

	if (left <= 0)
		return 0;
	n = hl_rchan_read(&t->c, chunk, sizeof(chunk),
			  left < 200 ? (int)left : 200);
	if (n < 0)
		return HL_EPROTO;
	if (n > 0 && hl_buf_append(&t->in, chunk, (size_t)n) != HL_OK)
		return HL_EPROTO;
	return n > 0 ? 1 : 0;
}

/* The next record (1), or 0 at the deadline, HL_EPROTO at the end of the
 * output or a malformed record. */
static int next(struct nc_thread *t, long long deadline, size_t *used,
		char *type, const char **data, size_t *len)
{
	for (;;) {
		int r = hl_rec_next(&t->in, used, type, data, len);

		if (r != 0)
			return r;
		do {
			r = fill(t, deadline);
			if (r < 0)
				return HL_EPROTO;
		} while (r == 0 && hl_now_ms() < deadline);
		if (r == 0)
			return 0;
	}
}

/* Why the probe gave up: its first line on stderr (SSH), or its status. */
static char *probe_failure(struct nc_thread *t, int r)
{
	const char *name = t->h->host->name, *err = hl_rchan_error(&t->c);

	if (r == 0)
		return hl_asprintf(
			"host '%s': the probe did not answer in time", name);
	if (err != NULL)
		return hl_asprintf("host '%s': %s", name, err);
	return hl_asprintf("host '%s': the probe ended without answering",
			   name);
}

/* Send one record to the probe and read until a record of type `until`,
 * handing each other record of type `each` to take (under the group's
 * lock). False: the probe went away or did not answer by the deadline
 * (the host has failed). */
static bool exchange(struct nc_thread *t, const struct hl_buf *req,
		     long long deadline, char each, char until,
		     void (*take)(struct nc_thread *, const char *, size_t))
{
	const char *data;
	size_t len, used;
	char type;
	int r;

	if (hl_rchan_write(&t->c, req->p, req->len) != HL_OK) {
		set_phase(t, PH_FAILED,
			  hl_asprintf("host '%s': the probe went away",
				      t->h->host->name));
		return false;
	}
	while ((r = next(t, deadline, &used, &type, &data, &len)) == 1) {
		if (type == each) {
			pthread_mutex_lock(&t->g->lock);
			take(t, data, len);
			pthread_mutex_unlock(&t->g->lock);
		}
		hl_buf_consume(&t->in, used);
		if (type == until)
			return true;
	}
	set_phase(t, PH_FAILED,
		  r == 0 ? hl_asprintf("host '%s': the probe stopped answering "
				       "while measuring the links",
				       t->h->host->name)
			 : probe_failure(t, r));
	return false;
}

static void take_trips(struct nc_thread *t, const char *data, size_t len)
{
	hl_nc_take_rate(t->g->nc, true, data, len);
}

static void take_rate(struct nc_thread *t, const char *data, size_t len)
{
	hl_nc_take_rate(t->g->nc, false, data, len);
}

static void take_stats(struct nc_thread *t, const char *data, size_t len)
{
	hl_nc_take_stats(t->h, 1, data, len);
}

/* This host's transfer of round r, or NULL (none, or that link failed
 * already); one whose destination has no sink or has failed is failed
 * here. Under the lock. */
static struct hl_nc_link *transfer_of(struct nc_thread *t, size_t r)
{
	struct hl_netcheck *nc = t->g->nc;
	size_t self = (size_t)(t->h - nc->h), i;

	for (i = 0; i < nc->nlinks; i++) {
		struct hl_nc_link *l = &nc->links[i];
		char *why;

		if (l->from != self || l->round != r || l->done)
			continue;
		if (t->g->t[l->to].phase == PH_FAILED)
			why = hl_asprintf("not measured: host '%s' stopped "
					  "answering",
					  nc->h[l->to].host->name);
		else if (nc->h[l->to].sink_port == 0)
			why = hl_asprintf("not measured: the hvdrun on '%s' "
					  "measures no bandwidth",
					  nc->h[l->to].host->name);
		else
			return l;
		hl_nc_link_fail(l, why ? why : "not measured");
		free(why);
	}
	return NULL;
}

/* The bandwidth stage: this host's transfer of each round as the group's
 * round comes (the round trips' rounds, then the data's), then its links'
 * counters again. */
static void links(struct nc_thread *t)
{
	struct nc_group *g = t->g;
	struct hl_netcheck *nc = g->nc;
	size_t r, total = 2 * nc->nrounds;
	struct hl_buf req;

	hl_buf_init(&req);
	for (r = 0; r < total; r++) {
		bool trips = r < nc->nrounds, on;
		struct hl_nc_link *l = NULL;
		long long deadline;

		pthread_mutex_lock(&g->lock);
		while (g->round < r && g->stage == ST_LINKS)
			pthread_cond_wait(&g->cond, &g->lock);
		deadline = g->round_deadline;
		on = g->stage == ST_LINKS;
		if (on)
			l = transfer_of(t, trips ? r : r - nc->nrounds);
		pthread_mutex_unlock(&g->lock);
		if (!on)
			break;
		if (l != NULL) {
			const struct hl_nc_host *to = &nc->h[l->to];
			struct hl_pm_transfer x = {
				.id = (long)(l - nc->links),
				.port = to->sink_port,
				.max_ms = trips ? nc->timeout_ms : nc->bw_ms,
				.max_bytes = trips ? 0 : nc->bw_bytes,
				.timeout_ms = nc->timeout_ms};

			snprintf(x.addr, sizeof(x.addr), "%s",
				 to->addrs[l->addr].addr);
			snprintf(x.token, sizeof(x.token), "%s", to->token);
			req.len = 0;
			if (hl_pm_put_transfer(&req, &x) != HL_OK ||
			    !exchange(t, &req, deadline, 'Y', 'Y',
				      trips ? take_trips : take_rate))
				break;
		}
		pthread_mutex_lock(&g->lock);
		t->rounds_done = r + 1;
		pthread_cond_broadcast(&g->cond);
		pthread_mutex_unlock(&g->lock);
	}
	req.len = 0;
	if (r == total && hl_pm_put_text(&req, 'S', NULL) == HL_OK &&
	    exchange(t, &req, hl_now_ms() + 5000 + nc->timeout_ms, 'L', 'E',
		     take_stats)) {
		pthread_mutex_lock(&g->lock);
		t->links_done = true;
		pthread_cond_broadcast(&g->cond);
		pthread_mutex_unlock(&g->lock);
	}
	hl_buf_close(&req);
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
		set_phase(t, PH_FAILED, err);
		return NULL;
	}
	deadline = hl_now_ms() + 10000;
	while ((r = next(t, deadline, &used, &type, &data, &len)) == 1) {
		if (type == 'R')
			break;
		hl_nc_take_description(h, type, data, len);
		hl_buf_consume(&t->in, used);
	}
	if (r != 1 || h->port == 0 || strlen(h->token) != 32) {
		set_phase(t, PH_FAILED, probe_failure(t, r));
		return NULL;
	}
	hl_buf_consume(&t->in, used);
	set_phase(t, PH_DESCRIBED, NULL);
	if (wait_stage(t, ST_TEST) != ST_TEST)
		return NULL;
	if (hl_rchan_write(&t->c, t->out.p, t->out.len) != HL_OK) {
		set_phase(t, PH_FAILED,
			  hl_asprintf("host '%s': the probe went away",
				      h->host->name));
		return NULL;
	}
	/* Every test ends by its timeout; 256 run at once. */
	deadline = hl_now_ms() + 5000 +
		   (long long)t->g->nc->timeout_ms *
			   (long long)(1 + t->ntargets / 256);
	while ((r = next(t, deadline, &used, &type, &data, &len)) == 1) {
		if (type == 'F')
			break;
		if (type == 'C') {
			pthread_mutex_lock(&t->g->lock);
			hl_nc_take_result(t->g->nc, data, len);
			pthread_mutex_unlock(&t->g->lock);
		}
		hl_buf_consume(&t->in, used);
	}
	if (r != 1) {
		set_phase(t, PH_FAILED, probe_failure(t, r));
		return NULL;
	}
	set_phase(t, PH_TESTED, NULL);
	if (wait_stage(t, ST_LINKS) == ST_LINKS)
		links(t);
	/* The listener stays up until every host is done. */
	wait_stage(t, ST_END);
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

static void set_stage(struct nc_group *g, int stage)
{
	pthread_mutex_lock(&g->lock);
	g->stage = stage;
	pthread_cond_broadcast(&g->cond);
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
	for (i = 0; i < g->n; i++)
		if (hl_pm_put_go(&g->t[i].out, nc->timeout_ms) != HL_OK)
			return HL_ENOMEM;
	return HL_OK;
}

/* Before the bandwidth stage: the hosts that failed or did not finish
 * their tests are out, and the others select their interfaces (under the
 * lock: a host still testing may yet take results). */
static void select_early(struct nc_group *g)
{
	size_t i;

	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->n; i++) {
		struct hl_nc_host *h = g->t[i].h;

		if (g->t[i].phase == PH_TESTED)
			continue;
		h->probed = false;
		if (h->error == NULL && g->t[i].phase != PH_FAILED)
			h->error = hl_asprintf("host '%s' did not answer in time",
					       h->host->name);
	}
	hl_nc_select(g->nc);
	pthread_mutex_unlock(&g->lock);
}

/* Whether every host that measures has finished round r (the last: its
 * counters too). Under the lock. */
static bool round_over(const struct nc_group *g, size_t r)
{
	size_t i;

	for (i = 0; i < g->n; i++) {
		const struct nc_thread *t = &g->t[i];

		if (!t->h->usable || t->phase == PH_FAILED)
			continue;
		if (r < 2 * g->nc->nrounds ? t->rounds_done <= r
					   : !t->links_done)
			return false;
	}
	return true;
}

/* The bandwidth stage's rounds, each bounded: a transfer's waits and its
 * time, and a margin for SSH. */
static void measure_links(struct nc_group *g, hl_nc_progress_fn progress,
			  void *arg)
{
	struct hl_netcheck *nc = g->nc;
	long long bound = nc->bw_ms + 3LL * nc->timeout_ms + 3000;
	size_t r, total = 2 * nc->nrounds;

	for (r = 0; r <= total; r++) {
		if (progress != NULL && r < total)
			progress(arg, "measuring links", "rounds", r, total);
		pthread_mutex_lock(&g->lock);
		g->round = r;
		g->round_deadline = hl_now_ms() + bound;
		/* The stage begins with round 0's deadline set. */
		g->stage = ST_LINKS;
		pthread_cond_broadcast(&g->cond);
		while (!round_over(g, r) && hl_now_ms() < g->round_deadline)
			hl_cond_wait_ms(&g->cond, &g->lock, 100);
		pthread_mutex_unlock(&g->lock);
	}
	if (progress != NULL)
		progress(arg, "measuring links", "rounds", total, total);
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
	if (nc->h == NULL || g.t == NULL) {
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
			set_phase(&g.t[i], PH_FAILED,
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
		set_stage(&g, ST_END);
	} else {
		set_stage(&g, ST_TEST);
		wait_phase(&g, PH_DESCRIBED,
			   hl_now_ms() + 10000 +
				   (long long)timeout_ms *
					   (long long)(1 + nc->npairs / 256),
			   "testing", progress, arg);
		if (nc->bandwidth) {
			select_early(&g);
			early = true;
			rc = hl_nc_plan_links(nc);
			if (rc == HL_OK)
				measure_links(&g, progress, arg);
		}
		set_stage(&g, ST_END);
	}
	for (i = 0; i < g.n; i++) {
		if (g.t[i].started)
			pthread_join(g.t[i].th, NULL);
		if (g.t[i].phase == PH_STARTING || g.t[i].phase == PH_DESCRIBED)
			set_phase(
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
