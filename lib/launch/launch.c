/* launch.c: starts the workers and watches them until the job ends.
 * One poll loop over a signalfd (SIGCHLD and the signals hvdrun forwards)
 * and every worker's output. The first worker to fail decides the exit
 * status; the others get SIGTERM, then SIGKILL after a grace period.
 * hvdrun is a child subreaper, so a worker's children that outlive it
 * become hvdrun's and are ended too: nothing of the job outlives hvdrun. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elastic/discovery.h"
#include "launch/launch.h"
#include "launch/proc.h"
#include "rdv/server.h"
#include "spawn/spawn.h"
#include "launch/watchdog.h"

enum phase {
	PH_RUNNING,	/* all is well */
	PH_TERMINATING, /* SIGTERM sent; SIGKILL at the deadline */
	PH_KILLED,	/* SIGKILL sent; give up waiting at the deadline */
};

/* Elastic, per host: 0 while it may run workers, else when it may return
 * (LLONG_MAX: never); whether the discovery script's last good list has
 * it (without a script every host is listed); whether hvdrun said that
 * its workers stay although it is no longer listed. */
struct host_state {
	long long back;
	bool listed;
	bool kept;
};

struct sup {
	const struct hl_launch *l;
	const struct hl_spawner_ops *ops[2]; /* local, ssh */
	void *ctx[2];
	int notify[2]; /* remote workers' notes (notes.c) */
	char *notes;   /* what was read of them, a partial note last */
	size_t nnotes;
	struct hl_worker *w;
	int n;
	int sfd;
	enum phase phase;
	long long deadline;
	struct hl_watchdog wd;
	struct hl_pids termed; /* orphans already sent SIGTERM */
	int exit_code;
	bool failed; /* a worker failed: exit_code is its code */
	int signal;  /* a signal hvdrun received, 0 if none */
	/* Elastic (l->rdv): resets so far; per host, its state; when the workers
	 * ended with their host get SIGKILL (0: none due); whether a worker
	 * has ended its work (exit 0: the job is finishing, nothing grows). */
	int resets;
	struct host_state *hs;
	long long removal_deadline;
	bool removal_killed; /* SIGKILL sent: the deadline gives up on them */
	bool finishing;
	int finished_by; /* the first worker whose work was done */
	/* Elastic, below --min-np, waiting for hosts (--elastic-timeout):
	 * until when, and the failure that brought it there (0: not
	 * waiting). */
	long long below_until;
	int below_code;
	char below_why[512];
	struct hl_worker **again; /* room for the workers regrow starts */
	char *disc_error; /* the discovery script's last failure, told */
	/* A worker ended, or the discovery script's list came: regrow
	 * looks at the hosts again (else only when a cool-down ends). */
	bool pool_changed;
};

static bool host_out(const struct sup *s, size_t h)
{
	return s->hs[h].back != 0;
}

/* Signal every direct child that is not a live worker: a worker's
 * children that were re-parented to us. SIGTERM reaches each one once.
 * Returns how many were found. */
static int signal_orphans(struct sup *s, int sig)
{
	pid_t *kids;
	size_t nkids, k;
	int found = 0, i;

	if (hl_children(&kids, &nkids) != HL_OK)
		return 0;
	for (k = 0; k < nkids; k++) {
		/* The watchdog, and a spawner's own process (srun), which
		 * its spawner ends, but for a SIGKILL. */
		bool worker = kids[k] == s->wd.pid ||
			      (s->l->discovery != NULL &&
			       kids[k] == s->l->discovery->pid) ||
			      (sig != SIGKILL && s->ctx[1] != NULL &&
			       s->ops[1]->helper != NULL &&
			       s->ops[1]->helper(s->ctx[1], kids[k]));

		for (i = 0; i < s->n && !worker; i++)
			worker = !s->w[i].remote && s->w[i].pid == kids[k] &&
				 !s->w[i].exited;
		if (worker)
			continue;
		found++;
		if (sig == SIGTERM && !hl_pids_add(&s->termed, kids[k]))
			continue;
		kill(kids[k], sig);
	}
	free(kids);
	return found;
}

static void signal_all(struct sup *s, int sig)
{
	int i;

	for (i = 0; i < s->n; i++) {
		struct hl_worker *w = &s->w[i];

		/* A local group may outlive its leader; a remote worker
		 * that has exited has taken its group along. */
		if (s->ctx[w->remote] != NULL && (!w->remote || !w->exited))
			s->ops[w->remote]->signal(s->ctx[w->remote], w, sig);
	}
	signal_orphans(s, sig);
}

static void terminate(struct sup *s, int sig)
{
	if (s->phase != PH_RUNNING)
		return;
	signal_all(s, sig);
	/* A stopped worker (SIGSTOP, a debugger's) acts on it only once
	 * continued; left stopped, it would wait out the grace period. */
	signal_all(s, SIGCONT);
	s->phase = PH_TERMINATING;
	s->deadline = hl_now_ms() + s->l->grace_ms;
}

static void kill_now(struct sup *s)
{
	signal_all(s, SIGKILL);
	s->phase = PH_KILLED;
	s->deadline = hl_now_ms() + 2000;
}

static void describe_status(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by signal %d (%s)",
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "exited with code %d", WEXITSTATUS(status));
}

/* Elastic: set the next generation, of every worker that is neither
 * exited nor out with its host, in rank order: at once (a reset), or
 * once the running workers come back (grow: new workers started). */
static bool member(const struct sup *s, const struct hl_worker *w)
{
	return !w->exited && !w->removed && !host_out(s, w->host);
}

/* Elastic: the members of the next generation, every worker that is
 * neither exited nor out with its host: their ids in rank order (hosts in
 * the list's order, a host's workers by id) into ids (room for s->n), and
 * their places into plan. Returns how many, or HL_ENOMEM. */
static int plan_members(const struct sup *s, int *ids, struct hl_plan *plan)
{
	size_t nh = s->l->hosts->n, h;
	size_t *at = calloc(nh + 1, sizeof(*at));
	int *count = calloc(nh, sizeof(*count));
	int i, n = 0, rc = HL_ENOMEM;

	if (at != NULL && count != NULL) {
		for (i = 0; i < s->n; i++)
			if (member(s, &s->w[i])) {
				count[s->w[i].host]++;
				n++;
			}
		for (h = 0; h < nh; h++)
			at[h + 1] = at[h] + (size_t)count[h];
		for (i = 0; i < s->n; i++)
			if (member(s, &s->w[i]))
				ids[at[s->w[i].host]++] = i;
		rc = hl_plan_counts(plan, count, nh, NULL) == HL_OK ? n
								    : HL_ENOMEM;
	}
	free(at);
	free(count);
	return rc;
}

/* Elastic: the places of the n workers w about to start (members
 * already): their rank variables, as the next generation will have them. */
static int place_starting(struct sup *s, struct hl_worker *const *w, int n)
{
	int *ids = calloc((size_t)s->n, sizeof(*ids));
	struct hl_plan plan = {0};
	int k, i, m = ids != NULL ? plan_members(s, ids, &plan) : HL_ENOMEM;

	for (k = 0; k < m; k++)
		for (i = 0; i < n; i++)
			if (ids[k] == w[i]->rank)
				w[i]->place = (struct hl_place){
					plan.ranks[k], m,
					s->l->hosts->v[w[i]->host].name,
					w[i]->rank};
	hl_plan_close(&plan);
	free(ids);
	return m < 0 ? m : HL_OK;
}

/* How the next generation comes: at once (a reset), or at the running
 * workers' next commit because hosts were added or removed. */
enum gen_how { GEN_RESET, GEN_ADDED, GEN_REMOVED };

static int plan_generation(struct sup *s, int *n, enum gen_how how)
{
	int *ids = calloc((size_t)s->n, sizeof(*ids));
	struct hl_plan plan = {0};
	int gen = HL_ENOMEM;

	*n = ids != NULL ? plan_members(s, ids, &plan) : HL_ENOMEM;
	if (*n >= 0)
		gen = how == GEN_RESET
			      ? hl_rdv_generation(s->l->rdv, ids, plan.ranks,
						  *n)
			      : hl_rdv_at_commit(s->l->rdv, ids, plan.ranks, *n,
						 how == GEN_REMOVED);
	hl_plan_close(&plan);
	free(ids);
	return gen;
}

/* Elastic: hvdrun ends worker o (its host left, or it can no longer
 * join); its end is no failure, and SIGKILL follows after the grace
 * period (removals_due). */
static void remove_worker(struct sup *s, struct hl_worker *o)
{
	o->removed = true;
	s->ops[o->remote]->signal(s->ctx[o->remote], o, SIGTERM);
	s->ops[o->remote]->signal(s->ctx[o->remote], o, SIGCONT);
	s->removal_deadline = hl_now_ms() + s->l->grace_ms;
	s->removal_killed = false;
}

static void clear_fresh(struct sup *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		s->w[i].fresh = false;
}

/* Elastic: host leaves the job, its workers ended, for its cool-down
 * (returned, in seconds) or for good (-1). */
static int host_leaves(struct sup *s, size_t host)
{
	const struct hl_launch *l = s->l;
	int i, wait_s = -1;

	s->hs[host].back = LLONG_MAX;
	hl_rdv_hosts_removed(l->rdv);
	if (l->cooldown) {
		int span = l->cooldown_max_s - l->cooldown_min_s + 1;

		wait_s = l->cooldown_min_s + (int)(random() % span);
		s->hs[host].back = hl_now_ms() + wait_s * 1000LL;
	}
	for (i = 0; i < s->n; i++) {
		struct hl_worker *o = &s->w[i];

		if (!o->exited && o->host == host)
			remove_worker(s, o);
	}
	return wait_s;
}

/* Elastic: whether one more generation (hosts added or removed; every
 * generation after the first counts, as horovodrun counts them) would
 * pass --reset-limit: then the job stops, with status 1, saying why
 * (host: the host whose change it was, what: what happened to it). */
static bool past_reset_limit(struct sup *s, const char *what, size_t host)
{
	const struct hl_launch *l = s->l;
	struct hl_event ev = {HL_EV_NOT_READY, -1, NULL, NULL, 0};
	char text[384];

	if (l->reset_limit <= 0 || s->resets < l->reset_limit)
		return false;
	snprintf(
		text, sizeof(text),
		"host %s %s, but the job has changed %d times already (--reset-limit %d)",
		l->hosts->v[host].name, what, s->resets, l->reset_limit);
	ev.text = text;
	hl_spawn_event(l, &ev);
	s->failed = true;
	s->exit_code = 1;
	terminate(s, SIGTERM);
	return true;
}

/* Elastic: worker w failed (how) and fewer than --min-np would go on,
 * but hosts may return: its host leaves, and the others wait, in
 * hvd_init(), up to --elastic-timeout for enough hosts (regrow, then
 * below_due), as horovodrun's workers do. */
static void wait_below(struct sup *s, const struct hl_worker *w, size_t host,
		       int left, const char *how)
{
	const struct hl_launch *l = s->l;
	struct hl_event ev = {HL_EV_RESET, w->rank, l->hosts->v[host].name,
			      NULL, 0};
	char text[512];

	host_leaves(s, host);
	if (s->below_until == 0) {
		s->below_until = hl_now_ms() + l->elastic_timeout_s * 1000LL;
		s->below_code = WIFSIGNALED(w->status)
					? 128 + WTERMSIG(w->status)
					: WEXITSTATUS(w->status);
		if (s->below_code == 0)
			s->below_code = 1;
		snprintf(s->below_why, sizeof(s->below_why),
			 "worker %d on %.200s %.256s", w->rank,
			 l->hosts->v[host].name, how);
	}
	snprintf(
		text, sizeof(text),
		"%s; %d workers remain, fewer than --min-np %d: they wait up to %d s (--elastic-timeout) for hosts",
		how, left, l->min_np, l->elastic_timeout_s);
	ev.text = text;
	hl_spawn_event(l, &ev);
}

/* Elastic: below --min-np for --elastic-timeout: the job ends with the
 * code of the failure that brought it there. */
static void below_due(struct sup *s)
{
	const struct hl_launch *l = s->l;
	struct hl_event ev = {HL_EV_NOT_READY, -1, NULL, NULL, 0};
	char text[640];

	if (s->below_until == 0 || hl_now_ms() < s->below_until || s->failed ||
	    s->signal != 0)
		return;
	snprintf(
		text, sizeof(text),
		"fewer than --min-np %d workers for %d s (--elastic-timeout) since %s",
		l->min_np, l->elastic_timeout_s, s->below_why);
	ev.text = text;
	hl_spawn_event(l, &ev);
	s->below_until = 0;
	s->failed = true;
	s->exit_code = s->below_code;
	terminate(s, SIGTERM);
}

/* Elastic: worker w failed (how). Its host leaves the job (the host's
 * other workers are ended) and the rest reset without it; a worker
 * started again that fails before its generation formed only takes its
 * host out of the growth. Returns false when the job cannot go on: the
 * reset limit is reached, or fewer than --min-np workers would remain. */
static bool shrink(struct sup *s, struct hl_worker *w, char *how, size_t howlen)
{
	const struct hl_launch *l = s->l;
	size_t host = w->host;
	struct hl_event ev = {HL_EV_RESET, w->rank, l->hosts->v[host].name,
			      NULL, 0};
	char text[384];
	int i, left = 0, gen, wait_s;
	size_t at = strlen(how);
	bool growth = w->fresh && hl_rdv_growing(l->rdv);

	if (!growth && l->reset_limit > 0 && s->resets >= l->reset_limit) {
		snprintf(how + at, howlen - at,
			 " after %d resets (--reset-limit)", s->resets);
		return false;
	}
	for (i = 0; i < s->n; i++)
		left += member(s, &s->w[i]) && s->w[i].host != host;
	if (!growth && left < l->min_np && left > 0 &&
	    l->elastic_timeout_s > 0 && (l->cooldown || l->discovery)) {
		wait_below(s, w, host, left, how);
		return true;
	}
	if (!growth && left < l->min_np) {
		snprintf(how + at, howlen - at,
			 "; %d workers would go on, fewer than --min-np %d",
			 left, l->min_np);
		return false;
	}
	wait_s = host_leaves(s, host);
	gen = plan_generation(s, &left, growth ? GEN_ADDED : GEN_RESET);
	if (gen < 0)
		return false;
	if (!growth) {
		clear_fresh(s); /* workers started again are members now */
		s->resets++;
	}
	at = (size_t)snprintf(
		text, sizeof(text),
		growth ? "%s before it joined; its host leaves again and %d workers form generation %d"
		       : "%s; its host leaves the job and %d workers go on (generation %d)",
		how, left, gen);
	if (wait_s >= 0 && at < sizeof(text))
		snprintf(text + at, sizeof(text) - at,
			 "; the host may return in %d s", wait_s);
	ev.text = text;
	hl_spawn_event(l, &ev);
	return true;
}

/* Elastic: when the first host waiting for the end of its cool-down
 * may return; LLONG_MAX when none waits. */
static long long next_return(const struct sup *s)
{
	long long next = LLONG_MAX;
	size_t h;

	for (h = 0; s->l->rdv != NULL && h < s->l->hosts->n; h++)
		if (s->hs[h].back != 0 && s->hs[h].back < next)
			next = s->hs[h].back;
	return next;
}

/* Elastic: up to want records for workers on host h, into s->again: its
 * own earlier ones first (a host that returns keeps its ids), then any
 * free one (the first pass took every free one of h's, or enough). */
static int pick_records(struct sup *s, size_t h, int want)
{
	int i, n = 0, pass;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < s->n && n < want; i++)
			if (s->w[i].exited &&
			    (s->w[i].host == h) == (pass == 0))
				s->again[n++] = &s->w[i];
	return n;
}

/* Elastic: start the n workers of s->again on host h. Returns how many
 * started; on a failure the host waits again. */
static int start_on(struct sup *s, size_t h, int n, char *text, size_t len)
{
	const struct hl_launch *l = s->l;
	struct hl_worker **again = s->again;
	bool remote = hl_worker_remote(l, h);
	struct hl_event ev = {HL_EV_GROW, -1, l->hosts->v[h].name, text, 0};
	char *cause = NULL;
	int i, started = 0, rc = HL_OK;

	for (i = 0; i < n; i++) {
		struct hl_worker *w = again[i];

		w->exited = w->removed = false;
		w->status = 0;
		w->pid = 0;
		w->fresh = true;
		w->host = h;
		w->remote = remote;
		if (rc == HL_OK && l->output_dir != NULL &&
		    w->out[0].tee_fd < 0)
			rc = hl_out_open_files(w->out, l->output_dir, w->rank,
					       &cause);
	}
	if (rc == HL_OK)
		rc = place_starting(s, again, n);
	if (rc == HL_OK)
		rc = s->ops[remote]->restart(s->ctx[remote], again, n, &cause);
	if (rc != HL_OK) {
		/* Those not started: the host waits again. */
		for (i = 0; i < n; i++)
			if (again[i]->remote || again[i]->pid <= 0)
				again[i]->exited = true;
		snprintf(text, len, "could not start workers: %s",
			 cause ? cause : "out of memory");
		free(cause);
		hl_spawn_event(l, &ev);
		s->hs[h].back =
			hl_now_ms() +
			(l->cooldown_min_s > 0 ? l->cooldown_min_s : 1) *
				1000LL;
	}
	for (i = 0; i < n; i++) {
		if (again[i]->exited)
			continue;
		if (!again[i]->remote)
			hl_watchdog_add(&s->wd, again[i]->pid);
		started++;
	}
	return started;
}

/* Elastic: while fewer than --max-np run, hosts with free slots start
 * workers: one whose cool-down is over once its last workers have ended,
 * one the discovery script lists anew, one with slots the job does not
 * use. The running workers are told, and the next generation includes
 * the new ones. Not once the job is finishing, nor where the spawner
 * cannot start one more. */
/* Elastic: how many workers host h may start now, with live workers
 * running: its free slots, while fewer than --max-np run; 0 while it
 * is unlisted, in its cool-down, or its last workers still end. */
static int room_on(const struct sup *s, size_t h, long long now, int live)
{
	const struct hl_launch *l = s->l;
	int i, here = 0, want;

	if (!s->hs[h].listed || s->hs[h].back > now)
		return 0;
	for (i = 0; i < s->n; i++)
		here += s->w[i].host == h && !s->w[i].exited;
	if (s->hs[h].back != 0 && here > 0)
		return 0; /* its last workers are still ending */
	want = l->hosts->v[h].slots - here;
	if (want > l->max_np - live)
		want = l->max_np - live;
	return want > 0 ? want : 0;
}

/* Elastic: hosts with room start workers. Normally the running ones
 * take them in at their next commit; below --min-np (waiting for hosts)
 * they start only once enough can, and the waiting workers and they form
 * the next generation at once. */
static void regrow(struct sup *s)
{
	const struct hl_launch *l = s->l;
	long long now = hl_now_ms();
	bool below = s->below_until != 0;
	size_t h;
	int i, live = 0, started = 0, gen, could;
	char text[256];

	if (s->finishing || s->failed || s->signal != 0 ||
	    (!s->pool_changed && next_return(s) > now))
		return;
	s->pool_changed = false;
	if (!hl_rdv_growing(l->rdv))
		clear_fresh(s); /* earlier growth has formed */
	for (i = 0; i < s->n; i++)
		live += !s->w[i].exited;
	for (h = 0, could = live; below && h < l->hosts->n; h++)
		could += room_on(s, h, now, could);
	if (below && could < l->min_np)
		return; /* not yet enough: wait on */
	for (h = 0; h < l->hosts->n && live < l->max_np; h++) {
		struct hl_event ev = {HL_EV_GROW, -1, l->hosts->v[h].name, text,
				      0};
		bool back = s->hs[h].back != 0;
		int n, want = room_on(s, h, now, live);

		if (want == 0)
			continue;
		if (started == 0 &&
		    past_reset_limit(s,
				     back ? "is back after its cool-down"
					  : "has free slots",
				     h))
			return;
		s->hs[h].back = 0;
		n = start_on(s, h, pick_records(s, h, want), text,
			     sizeof(text));
		live += n;
		started += n;
		if (n == 0)
			continue;
		snprintf(text, sizeof(text), "%s: %d workers start there",
			 back ? "is back after its cool-down"
			      : "has free slots",
			 n);
		hl_spawn_event(l, &ev);
	}
	if (started == 0)
		return;
	gen = plan_generation(s, &live, below ? GEN_RESET : GEN_ADDED);
	if (gen > 0 && (below || hl_rdv_growing(l->rdv)))
		s->resets++; /* a generation after the first formed */
	if (gen > 0) {
		struct hl_event ev = {HL_EV_GROW, -1, NULL, text, 0};

		if (below) {
			s->below_until = 0;
			clear_fresh(s);
		}
		snprintf(
			text, sizeof(text),
			below ? "%d workers form generation %d, --min-np met again"
			      : "%d workers form generation %d once the running ones reach their next commit",
			live, gen);
		hl_spawn_event(l, &ev);
	}
}

/* Elastic: the index of host f (found by the discovery script) in the
 * host list, its slots updated; a new host is moved there from f. Returns
 * SIZE_MAX when out of memory. */
static size_t pool_host(struct sup *s, struct hl_host *f)
{
	struct hl_hostlist *hl = s->l->hosts;
	struct host_state *hs;
	struct hl_host *v;
	size_t h;

	for (h = 0; h < hl->n; h++)
		if (strcmp(hl->v[h].name, f->name) == 0) {
			hl->v[h].slots = f->slots;
			return h;
		}
	v = realloc(hl->v, (hl->n + 1) * sizeof(*v));
	if (v == NULL)
		return SIZE_MAX;
	hl->v = v;
	hs = realloc(s->hs, (hl->n + 1) * sizeof(*hs));
	if (hs == NULL)
		return SIZE_MAX;
	s->hs = hs;
	hs[hl->n] = (struct host_state){0, false, false};
	v[hl->n] = *f;
	memset(f, 0, sizeof(*f));
	return hl->n++;
}

/* Elastic: the discovery script no longer lists host h. Its workers end
 * and the others reset without them, unless fewer than --min-np would
 * remain: then they stay (said once). */
static void unlisted(struct sup *s, size_t h)
{
	const struct hl_launch *l = s->l;
	struct hl_event ev = {HL_EV_HOSTS, -1, l->hosts->v[h].name, NULL, 0};
	char text[256];
	int i, on = 0, left = 0, gen;

	for (i = 0; i < s->n; i++)
		if (member(s, &s->w[i])) {
			on += s->w[i].host == h;
			left += s->w[i].host != h;
		}
	if (on == 0)
		return;
	ev.text = text;
	if (left < l->min_np) {
		if (!s->hs[h].kept) {
			snprintf(
				text, sizeof(text),
				"is no longer listed by the discovery script, but without it %d workers would go on, fewer than --min-np %d: its workers stay",
				left, l->min_np);
			hl_spawn_event(l, &ev);
		}
		s->hs[h].kept = true;
		return;
	}
	s->hs[h].kept = false;
	if (past_reset_limit(s, "is no longer listed by the discovery script",
			     h))
		return;
	/* As horovodrun: the others re-join without it at their next
	 * commit, losing no step; its workers end when they come back for
	 * a generation that no longer has them (on_idle), or, if one ends
	 * first, the others reset without them (worker_exited). */
	for (i = 0; i < s->n; i++)
		if (!s->w[i].exited && s->w[i].host == h)
			s->w[i].removed = s->w[i].leaving = true;
	gen = plan_generation(s, &left, GEN_REMOVED);
	if (gen < 0)
		return;
	if (hl_rdv_growing(l->rdv))
		s->resets++; /* a generation after the first formed */
	snprintf(
		text, sizeof(text),
		"is no longer listed by the discovery script: %d workers go on without it from their next commit (generation %d)",
		left, gen);
	hl_spawn_event(l, &ev);
}

/* Elastic: a run of the discovery script has ended: its list is the
 * pool now, or its failure is told (once while it stays the same) and
 * the last good list kept. */
static void discovered(struct sup *s)
{
	const struct hl_launch *l = s->l;
	struct hl_event ev = {HL_EV_HOSTS, -1, NULL, NULL, 0};
	struct hl_hostlist found;
	char *why = NULL, text[1024];
	size_t f, h;
	int rc;

	hl_hostlist_init(&found);
	if (!hl_discovery_done(l->discovery, &found, &rc, &why)) {
		hl_hostlist_close(&found);
		return;
	}
	ev.text = text;
	if (rc != HL_OK) {
		if (s->disc_error == NULL || strcmp(s->disc_error, why) != 0) {
			snprintf(
				text, sizeof(text),
				"host discovery script '%s' %s; the last good list stays",
				l->discovery->script, why);
			hl_spawn_event(l, &ev);
			free(s->disc_error);
			s->disc_error = why;
			why = NULL;
		}
		free(why);
		hl_hostlist_close(&found);
		return;
	}
	if (s->disc_error != NULL) {
		snprintf(text, sizeof(text),
			 "host discovery script '%s' works again",
			 l->discovery->script);
		hl_spawn_event(l, &ev);
		free(s->disc_error);
		s->disc_error = NULL;
	}
	for (h = 0; h < l->hosts->n; h++)
		s->hs[h].listed = false;
	for (f = 0; f < found.n; f++) {
		h = pool_host(s, &found.v[f]);
		if (h == SIZE_MAX) { /* out of memory: change nothing */
			for (h = 0; h < l->hosts->n; h++)
				s->hs[h].listed = true;
			break;
		}
		s->hs[h].listed = true;
		s->hs[h].kept = false;
	}
	hl_hostlist_close(&found);
	for (h = 0; h < l->hosts->n; h++)
		if (!s->hs[h].listed)
			unlisted(s, h);
	s->pool_changed = true;
}

/* Elastic: workers ended with their host that outlive the grace period
 * get SIGKILL; remote ones still not heard of 2 s later are given up
 * (their host is unreachable: nothing more will come from it). */
static void removals_due(struct sup *s)
{
	int i;

	if (s->removal_deadline == 0 || hl_now_ms() < s->removal_deadline)
		return;
	if (!s->removal_killed) {
		s->removal_killed = true;
		s->removal_deadline = hl_now_ms() + 2000;
		for (i = 0; i < s->n; i++)
			if (s->w[i].removed && !s->w[i].exited)
				s->ops[s->w[i].remote]->signal(
					s->ctx[s->w[i].remote], &s->w[i],
					SIGKILL);
		return;
	}
	s->removal_deadline = 0;
	s->removal_killed = false;
	for (i = 0; i < s->n; i++)
		if (s->w[i].removed && !s->w[i].exited && s->w[i].remote) {
			s->w[i].exited = true;
			s->w[i].status = 255 << 8;
			s->pool_changed = true;
		}
}

/* Elastic: the job is finishing (a worker's work is done). Workers
 * started again that still wait for the larger generation will never
 * get it: they end quietly. Once it has formed they are its members. */
static void end_fresh(struct sup *s)
{
	bool waiting = hl_rdv_growing(s->l->rdv);
	int i;

	for (i = 0; i < s->n; i++) {
		struct hl_worker *o = &s->w[i];

		if (o->fresh && waiting && !o->exited)
			remove_worker(s, o);
		o->fresh = false;
	}
}

/* Elastic: worker w, of a host the discovery script dropped, ended before
 * the others re-joined without it: the generation that waited for it
 * never forms, so the others reset without it now (and its host's other
 * workers end). */
static void left_early(struct sup *s, struct hl_worker *w)
{
	const struct hl_launch *l = s->l;
	struct hl_event ev = {HL_EV_RESET, w->rank, l->hosts->v[w->host].name,
			      NULL, 0};
	char text[256];
	int i, left, gen;

	w->leaving = false;
	if (!hl_rdv_growing(l->rdv))
		return; /* the others re-joined already */
	for (i = 0; i < s->n; i++)
		if (s->w[i].leaving && !s->w[i].exited) {
			s->w[i].leaving = false;
			remove_worker(s, &s->w[i]);
		}
	gen = plan_generation(s, &left, GEN_RESET);
	if (gen < 0)
		return;
	snprintf(
		text, sizeof(text),
		"ended before the others' next commit; %d workers go on without its host (generation %d)",
		left, gen);
	ev.text = text;
	hl_spawn_event(l, &ev);
}

/* How a worker's end is known: its exit status, its SSH session lost, or
 * its host silent to the rendezvous' keepalive (elastic). */
enum { EXITED, LOST_SESSION, LOST_SILENT };

static void worker_exited(struct sup *s, struct hl_worker *w, int status,
			  int lost)
{
	const struct hl_launch *l = s->l;
	struct hl_event ev = {HL_EV_FAILED, w->rank, l->hosts->v[w->host].name,
			      NULL, 0};
	char how[256];

	s->pool_changed = true;
	w->exited = true;
	w->status = status;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		if (!s->finishing && l->rdv != NULL) {
			end_fresh(s);
			/* As horovodrun: a worker's success ends the job; the
			 * others finish, and those that wait for a world that
			 * will never form are stopped (on_report). */
			s->finished_by = w->rank;
			hl_rdv_finish(l->rdv);
		}
		s->finishing = true;
		return;
	}
	if (w->leaving && !s->failed && s->signal == 0)
		left_early(s, w);
	if (s->failed || s->signal != 0 || w->removed)
		return; /* ended by us, or after the job had already failed */
	if (lost == LOST_SESSION)
		snprintf(how, sizeof(how), "lost its connection to the host");
	else if (lost == LOST_SILENT)
		snprintf(how, sizeof(how),
			 "stopped answering: its host is unreachable");
	else
		describe_status(status, how, sizeof(how));
	if (l->rdv != NULL && !s->finishing && shrink(s, w, how, sizeof(how)))
		return;
	s->failed = true;
	s->exit_code = WIFSIGNALED(status) ? 128 + WTERMSIG(status)
					   : WEXITSTATUS(status);
	ev.text = how;
	hl_spawn_event(l, &ev);
	terminate(s, SIGTERM);
}

static void reap(struct sup *s)
{
	int status, i;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0) {
		if (s->l->discovery != NULL &&
		    hl_discovery_reaped(s->l->discovery, pid, status))
			continue;
		for (i = 0; i < s->n; i++) {
			struct hl_worker *w = &s->w[i];

			if (w->remote || w->pid != pid || w->exited)
				continue;
			if (WIFSTOPPED(status)) {
				/* It holds up every other rank: say so. */
				struct hl_event ev = {
					HL_EV_STOPPED, w->rank,
					s->l->hosts->v[w->host].name, NULL,
					WSTOPSIG(status)};

				hl_spawn_event(s->l, &ev);
			} else {
				worker_exited(s, w, status, EXITED);
			}
			break;
		}
	}
}

static void on_signal(struct sup *s)
{
	struct signalfd_siginfo si;

	while (read(s->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		int sig = (int)si.ssi_signo;

		if (sig == SIGCHLD) {
			reap(s);
			continue;
		}
		if (s->signal == 0 && !s->failed) {
			struct hl_event ev = {HL_EV_SIGNAL, -1, NULL, NULL,
					      sig};

			s->signal = sig;
			hl_spawn_event(s->l, &ev);
			terminate(s, sig);
			continue;
		}
		if (s->signal == 0)
			s->signal = sig;
		/* A second signal: no more waiting. */
		kill_now(s);
	}
}

/* Elastic: the rendezvous left worker w out of the generation that
 * formed (its host was dropped: it ends now), or w waits for a generation
 * that will never form (the job is finishing). Either end is no failure. */
static void on_idle(struct sup *s, struct hl_worker *w)
{
	const struct hl_launch *l = s->l;
	struct hl_event ev = {HL_EV_RESET, w->rank, l->hosts->v[w->host].name,
			      NULL, 0};
	char text[160];

	if (w->exited || s->failed || s->signal != 0)
		return;
	if (w->leaving) {
		w->leaving = false;
		remove_worker(s, w);
		return;
	}
	if (!s->finishing || w->removed)
		return;
	snprintf(
		text, sizeof(text),
		"waits for a new generation, but worker %d finished its work: the job is done, so it is stopped",
		s->finished_by);
	ev.text = text;
	hl_spawn_event(l, &ev);
	remove_worker(s, w);
}

/* Reports of the rendezvous (rdv/server.h), NUL-terminated: a failure
 * ends the job (it could not start); an empty one says that workers'
 * hosts stopped answering (elastic), and each such worker is lost. */
static void on_report(struct sup *s)
{
	char msg[1024];
	ssize_t n = read(s->l->report_fd, msg, sizeof(msg) - 1);
	size_t at = 0;

	if (n <= 0)
		return;
	msg[n] = '\0';
	while (at < (size_t)n) {
		const char *text = msg + at;
		struct hl_event ev = {HL_EV_NOT_READY, -1, NULL, text, 0};
		int ids[16];
		size_t k, got;

		at += strlen(text) + 1;
		if (text[0] != '\0') {
			if (s->failed || s->signal != 0)
				continue;
			hl_spawn_event(s->l, &ev);
			s->failed = true;
			s->exit_code = 125;
			terminate(s, SIGTERM);
			continue;
		}
		while (s->l->rdv != NULL &&
		       (got = hl_rdv_take_lost(s->l->rdv, ids, 16)) > 0)
			for (k = 0; k < got; k++)
				if (ids[k] >= 0 && ids[k] < s->n &&
				    !s->w[ids[k]].exited)
					worker_exited(s, &s->w[ids[k]],
						      255 << 8, LOST_SILENT);
		while (s->l->rdv != NULL &&
		       (got = hl_rdv_take_idle(s->l->rdv, ids, 16)) > 0)
			for (k = 0; k < got; k++)
				if (ids[k] >= 0 && ids[k] < s->n)
					on_idle(s, &s->w[ids[k]]);
	}
}

/* Output and exits of remote workers, from the SSH and srun spawners. A
 * bounded number of reads a call, so that a flood of output cannot keep
 * signals and local workers waiting. */
#define NOTES_CAP (64 * 1024)

static void on_notes(struct sup *s)
{
	int rounds;

	for (rounds = 0; rounds < 16; rounds++) {
		ssize_t n = read(s->notify[0], s->notes + s->nnotes,
				 NOTES_CAP - s->nnotes);
		struct hl_note note;
		size_t at = 0;
		int used;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		s->nnotes += (size_t)n;
		while ((used = hl_note_next(s->notes + at, s->nnotes - at,
					    &note)) > 0) {
			struct hl_worker *w;

			at += (size_t)used;
			if (note.rank < 0 || note.rank >= s->n)
				continue;
			w = &s->w[note.rank];
			if (note.kind == 'o' || note.kind == 'e') {
				hl_out_feed(&w->out[note.kind == 'e'],
					    note.data, note.len);
			} else if (!w->exited) {
				/* Its output came first: end its last line. */
				hl_out_flush(&w->out[0]);
				hl_out_flush(&w->out[1]);
				worker_exited(s, w, note.status,
					      note.kind == 'l'	 ? LOST_SESSION
					      : note.kind == 's' ? LOST_SILENT
								 : EXITED);
			}
		}
		/* Only our own threads write here: a bad note is a bug. */
		if (used < 0)
			at = s->nnotes;
		memmove(s->notes, s->notes + at, s->nnotes - at);
		s->nnotes -= at;
	}
}

static void close_stream(struct hl_worker *w, int j)
{
	hl_out_flush(&w->out[j]);
	close(w->fd[j]);
	w->fd[j] = -1;
}

/* Read what is there; close the stream at end of file. */
static void drain(struct hl_worker *w, int j)
{
	char buf[65536];
	int rounds;

	for (rounds = 0; rounds < 64 && w->fd[j] >= 0; rounds++) {
		ssize_t n = read(w->fd[j], buf, sizeof(buf));

		if (n > 0) {
			hl_out_feed(&w->out[j], buf, (size_t)n);
			continue;
		}
		if (n < 0 && (errno == EINTR))
			continue;
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			close_stream(w, j);
		break;
	}
}

static bool all_exited(const struct sup *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (!s->w[i].exited)
			return false;
	return true;
}

static bool any_stream_open(const struct sup *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->w[i].fd[0] >= 0 || s->w[i].fd[1] >= 0)
			return true;
	return false;
}

/* hvdrun's own stdout or stderr cannot be written (hvdrun | head, a
 * full disk): the job's output is being lost, so the job ends, as a
 * program writing to a closed pipe ends by SIGPIPE (exit 128+SIGPIPE). */
static void output_lost(struct sup *s)
{
	int which, err;

	if (!hl_out_lost(&which, &err) || s->failed || s->signal != 0)
		return;
	{
		char text[160];
		struct hl_event ev = {HL_EV_OUTPUT_LOST, -1, NULL, text, 0};

		snprintf(text, sizeof(text),
			 "cannot write its standard %s (%s)",
			 which == 1 ? "output" : "error", strerror(err));
		hl_spawn_event(s->l, &ev);
	}
	s->signal = SIGPIPE;
	terminate(s, SIGTERM);
}

static void supervise(struct sup *s)
{
	struct pollfd *pf = calloc((size_t)s->n * 2 + 5, sizeof(*pf));
	struct hl_discovery *disc = s->l->discovery;
	int i, j, ndisc = 0;

	if (pf == NULL) {
		kill_now(s);
		return;
	}
	for (;;) {
		long long now = hl_now_ms();
		int nfds = 0, timeout = -1;

		if (all_exited(s)) {
			/* A worker's last writes are in its pipes before it
			 * exits: read them now. A stream still open after
			 * that is held by a child of the worker. */
			for (i = 0; i < s->n; i++)
				for (j = 0; j < 2; j++)
					if (s->w[i].fd[j] >= 0)
						drain(&s->w[i], j);
			/* Children not yet reaped count too: they are gone
			 * only once reap() has collected them. */
			if (!any_stream_open(s) && signal_orphans(s, 0) == 0)
				break;
			terminate(s, SIGTERM);
		}
		if (s->phase == PH_TERMINATING && now >= s->deadline)
			kill_now(s);
		else if (s->phase == PH_KILLED && now >= s->deadline)
			break;
		/* Children adopted since the last look: a worker that died
		 * after the first signal leaves its children to us. */
		if (s->phase == PH_TERMINATING)
			signal_orphans(s, SIGTERM);
		else if (s->phase == PH_KILLED)
			signal_orphans(s, SIGKILL);
		if (s->phase != PH_RUNNING)
			timeout = (int)(s->deadline > now ? s->deadline - now
							  : 0);
		if ((all_exited(s) || s->phase != PH_RUNNING ||
		     s->removal_deadline != 0) &&
		    (timeout < 0 || timeout > 50))
			timeout = 50; /* look for adopted children */
		/* The discovery script runs while the job does. */
		if (disc != NULL && (s->phase != PH_RUNNING || s->finishing ||
				     s->failed || s->signal != 0)) {
			hl_discovery_close(disc);
			disc = NULL;
		}
		if (disc != NULL) {
			long long due = hl_discovery_tick(disc, now);

			if (timeout < 0 || due < timeout)
				timeout = (int)due;
		}
		if (s->below_until != 0) {
			long long left = s->below_until - now;

			if (left < 0)
				left = 0;
			if (timeout < 0 || left < timeout)
				timeout =
					(int)(left < INT_MAX ? left : INT_MAX);
		}
		if (next_return(s) != LLONG_MAX) {
			long long back = next_return(s) - now;

			if (back < 0)
				back = 0;
			if (timeout < 0 || back < timeout)
				timeout =
					(int)(back < INT_MAX ? back : INT_MAX);
		}
		pf[nfds].fd = s->sfd;
		pf[nfds++].events = POLLIN;
		pf[nfds].fd = s->notify[0];
		pf[nfds++].events = POLLIN;
		pf[nfds].fd = s->l->report_fd;
		pf[nfds++].events = POLLIN;
		if (disc != NULL) {
			for (j = 0, ndisc = 0; j < 2; j++, ndisc++) {
				pf[nfds].fd = disc->fd[j];
				pf[nfds++].events = POLLIN;
			}
		}
		for (i = 0; i < s->n; i++)
			for (j = 0; j < 2; j++)
				if (s->w[i].fd[j] >= 0) {
					pf[nfds].fd = s->w[i].fd[j];
					pf[nfds++].events = POLLIN;
				}
		if (poll(pf, (nfds_t)nfds, timeout) < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			on_signal(s);
		if (pf[1].revents)
			on_notes(s);
		if (pf[2].revents)
			on_report(s);
		if (disc != NULL && ndisc > 0 &&
		    (pf[3].revents || pf[4].revents))
			hl_discovery_read(disc);
		for (i = 0; i < s->n; i++)
			for (j = 0; j < 2; j++)
				if (s->w[i].fd[j] >= 0)
					drain(&s->w[i], j);
		output_lost(s);
		reap(s);
		removals_due(s);
		below_due(s);
		if (disc != NULL)
			discovered(s);
		if (s->l->rdv != NULL)
			regrow(s);
	}
	free(pf);
}

static void workers_close(struct hl_worker *w, int n)
{
	int i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < 2; j++) {
			if (w[i].fd[j] >= 0)
				close(w[i].fd[j]);
			if (w[i].out[j].tee_fd >= 0)
				close(w[i].out[j].tee_fd);
			hl_out_close(&w[i].out[j]);
		}
	free(w);
}

int hl_launch_run(const struct hl_launch *l, int *exit_code, char **cause)
{
	struct sup s;
	sigset_t mask, old;
	int i, j, rc = HL_OK;

	memset(&s, 0, sizeof(s));
	s.l = l;
	if (l->cooldown) /* hosts that fail together return apart */
		srandom((unsigned)hl_now_ms() ^ (unsigned)getpid());
	/* Elastic: room for --max-np workers; those beyond the plan start
	 * later, on hosts with free slots. */
	s.n = l->plan->size;
	if (l->rdv != NULL && l->max_np > s.n)
		s.n = l->max_np;
	s.w = calloc((size_t)s.n, sizeof(*s.w));
	s.hs = calloc(l->hosts->n, sizeof(*s.hs));
	s.again = calloc((size_t)s.n, sizeof(struct hl_worker *));
	if (s.w == NULL || s.hs == NULL || s.again == NULL) {
		free(s.w);
		free(s.hs);
		free(s.again);
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	}
	for (i = 0; (size_t)i < l->hosts->n; i++)
		s.hs[i].listed = true;
	s.pool_changed = true; /* slots the plan left free */
	for (i = 0; i < s.n; i++) {
		s.w[i].rank = i;
		s.w[i].exited = i >= l->plan->size; /* not started yet */
		s.w[i].host = i < l->plan->size ? l->plan->ranks[i].host : 0;
		if (i < l->plan->size)
			hl_place_of(&s.w[i].place, l->plan, l->hosts, i);
		for (j = 0; j < 2; j++) {
			s.w[i].fd[j] = -1;
			hl_out_init(&s.w[i].out[j], i, j + 1, j + 1,
				    l->timestamps);
		}
	}
	/* Per-rank files first: a bad directory starts nothing. */
	for (i = 0; i < l->plan->size && l->output_dir != NULL && rc == HL_OK;
	     i++)
		rc = hl_out_open_files(s.w[i].out, l->output_dir, i, cause);
	/* MASTER_ADDR: rank 0's host, unless an address was found. */
	if (rc == HL_OK && l->env->master_addr == NULL)
		rc = hl_master_addr(l->env, s.w[0].place.host, cause);
	/* Elastic: the first generation is the plan. */
	if (rc == HL_OK && l->rdv != NULL &&
	    plan_generation(&s, &i, GEN_RESET) < 0)
		rc = hl_fail(cause, HL_ENOMEM, "out of memory");
	if (rc != HL_OK)
		goto out_free;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	for (i = 0; i < 3; i++) {
		static const int fwd[3] = {SIGINT, SIGTERM, SIGHUP};
		struct sigaction sa;

		/* A signal ignored when hvdrun started (nohup, a background
		 * job of a script) stays ignored, for hvdrun and workers. */
		if (sigaction(fwd[i], NULL, &sa) == 0 &&
		    sa.sa_handler != SIG_IGN)
			sigaddset(&mask, fwd[i]);
	}
	sigprocmask(SIG_BLOCK, &mask, &old);
	s.sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (s.sfd < 0) {
		rc = hl_fail(cause, HL_ESYS, "signalfd: %s", strerror(errno));
		goto out_mask;
	}
	rc = hl_watchdog_start(&s.wd, l->grace_ms, cause);
	if (rc != HL_OK)
		goto out_sfd;
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	signal(SIGPIPE, SIG_IGN);
	/* The spawners' threads block on a full pipe (their output waits
	 * for us); a large one lets them run ahead. */
	s.notes = malloc(NOTES_CAP);
	if (s.notes == NULL || pipe2(s.notify, O_CLOEXEC) != 0) {
		rc = hl_fail(cause, HL_ESYS, "pipe: %s", strerror(errno));
		goto out_watchdog;
	}
	fcntl(s.notify[0], F_SETFL, O_NONBLOCK);
	(void)fcntl(s.notify[0], F_SETPIPE_SZ, 1 << 20);
	for (i = 0; i < l->plan->size; i++)
		s.w[i].remote = hl_worker_remote(l, s.w[i].host);

	/* Connect to every remote host before anything starts: a host that
	 * cannot be reached starts nothing anywhere. */
	s.ops[0] = &hl_spawn_local;
	s.ops[1] = l->ssh->srun ? &hl_spawn_srun : &hl_spawn_ssh;
	for (j = 0; j < 2 && rc == HL_OK; j++) {
		/* Elastic: either may start workers later. */
		bool later = l->rdv != NULL;

		for (i = 0; i < l->plan->size && s.w[i].remote != j; i++)
			;
		if (i < l->plan->size || later)
			rc = s.ops[j]->open(&s.ctx[j], l, s.w, s.n, s.notify[1],
					    cause);
	}
	for (j = 0; j < 2 && rc == HL_OK; j++)
		if (s.ctx[j] != NULL)
			rc = s.ops[j]->start(s.ctx[j], cause);
	for (i = 0; i < s.n; i++)
		if (!s.w[i].remote && s.w[i].pid > 0)
			hl_watchdog_add(&s.wd, s.w[i].pid);
	if (rc != HL_OK) {
		/* Take down what was started; report the start failure. */
		s.failed = true;
		kill_now(&s);
		for (i = 0; i < s.n; i++)
			if (s.w[i].remote)
				s.w[i].exited = true;
	}
	for (i = 0; i < s.n; i++)
		if (!s.w[i].remote && s.w[i].pid <= 0)
			s.w[i].exited = true; /* never started */
	supervise(&s);
	*exit_code = s.failed ? s.exit_code : s.signal ? 128 + s.signal : 0;
	/* Nobody reads the output any more: a pump blocked on a full pipe
	 * must see EPIPE, not wait for us. */
	for (i = 0; i < s.n; i++)
		for (j = 0; j < 2; j++)
			if (s.w[i].fd[j] >= 0)
				close_stream(&s.w[i], j);
	close(s.notify[0]);
	for (j = 0; j < 2; j++)
		if (s.ctx[j] != NULL)
			s.ops[j]->close(s.ctx[j]);
	close(s.notify[1]);
out_watchdog:
	hl_watchdog_done(&s.wd);
out_sfd:
	close(s.sfd);
out_mask:
	sigprocmask(SIG_SETMASK, &old, NULL);
out_free:
	free(s.notes);
	free(s.termed.v);
	free(s.hs);
	free(s.again);
	free(s.disc_error);
	if (l->discovery != NULL)
		hl_discovery_close(l->discovery);
	workers_close(s.w, s.n);
	return rc;
}
