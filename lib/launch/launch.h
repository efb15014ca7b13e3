/* launch.h: one job's launch (launch.c): what to start where, through the
 * spawners (spawn.h), and the supervisor that multiplexes output and ends
 * the whole job when one worker fails. What happens on the way is told to
 * the caller through events; lib/ prints nothing of its own. */
#ifndef HL_LAUNCH_H
#define HL_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "job/env.h"
#include "config/hosts.h"
#include "job/plan.h"
#include "ssh/opts.h"

struct hl_worker;
struct hl_discovery;

enum hl_event_kind {
	HL_EV_STARTING,	 /* rank is being started on host */
	HL_EV_FAILED,	 /* rank on host failed (text: how); the job stops */
	HL_EV_NOT_READY, /* the rendezvous failed (text: why); the job stops */
	HL_EV_SIGNAL,	 /* hvdrun got signal sig; every worker gets it */
	HL_EV_STOPPED,	 /* rank on host was stopped by signal sig */
	HL_EV_OUTPUT_LOST, /* hvdrun's own output failed (text); job stops */
	HL_EV_RESET,	   /* elastic: rank on host failed (text: how and what
			goes on); the rest of the job resets without it */
	HL_EV_GROW,	   /* elastic: host is back (text: what starts there) */
	HL_EV_HOSTS,   /* elastic: the discovery script's hosts changed, or it
			failed (host, or NULL, and text) */
	HL_EV_TIMEOUT, /* the job ran past its deadline (--timeout) with
			  sig of its workers still running; the job stops */
};

struct hl_event {
	enum hl_event_kind kind;
	int rank;
	const char *host;
	const char *text;
	int sig;
};

/* How long the workers have between SIGTERM and SIGKILL at the job's
 * end, as horovodrun's. */
#define HL_GRACE_MS 3000
/* A job ended at its --timeout exits with this status, as timeout(1)'s
 * command. */
#define HL_TIMEOUT_EXIT 124

struct sup;
struct pollfd;

/* Hooks of the supervisor's loop (launch.c), for a kind of job that
 * adds to it (an elastic job: elastic/supervise.c). Each works on the
 * supervisor's state (launch/sup.h), where it keeps its own (sup.el). */
struct hl_sup_hooks {
	/* After the workers' records are made, before anything starts;
	 * close is called whatever open returned. */
	int (*open)(struct sup *s, char **cause);
	void (*close)(struct sup *s);
	/* Worker w has ended: its work done (success: exit 0), or not. */
	void (*ended)(struct sup *s, struct hl_worker *w, bool success);
	/* w failed (how, which it may add to): true when the job goes on
	 * without it, false when the failure ends the job. */
	bool (*failed)(struct sup *s, struct hl_worker *w, char *how,
		       size_t howlen);
	/* The rendezvous told of changes (an empty report); lost is how
	 * the loop ends a worker whose host stopped answering. */
	void (*report)(struct sup *s,
		       void (*lost)(struct sup *s, struct hl_worker *w));
	/* Whether pid, a child of hvdrun, is the hooks' own (no orphan of
	 * a worker); when one is reaped, reaped says true. */
	bool (*child)(const struct sup *s, pid_t pid);
	bool (*reaped)(struct sup *s, pid_t pid, int status);
	/* Before each poll: how long the loop may sleep (ms, -1: no bound),
	 * and up to HL_SUP_HOOK_FDS descriptors to watch (into pf; returns
	 * how many); after it, those with their events. */
	int (*timeout)(struct sup *s, long long now);
	int (*fds)(struct sup *s, struct pollfd *pf);
	void (*polled)(struct sup *s, const struct pollfd *pf, int n);
	/* After each turn's exits were reaped. */
	void (*tick)(struct sup *s);
};
#define HL_SUP_HOOK_FDS 2

struct hl_launch {
	struct hl_hostlist *hosts; /* elastic: hosts found later join it */
	const struct hl_plan *plan;
	char *const *argv;	/* the command and its arguments */
	char *exec_path;	/* argv[0] resolved for local starts */
	struct hl_envspec *env; /* MASTER_PORT may be set at start */
	const struct hl_ssh_opts *ssh;
	const char *output_dir; /* NULL: no per-rank files */
	bool timestamps;
	/* The worker that reads hvdrun's standard input (--stdin), at its
	 * first start, here or on another host; -1: none (every worker
	 * reads /dev/null). */
	int stdin_rank;
	int grace_ms; /* SIGTERM to SIGKILL: HL_GRACE_MS */
	/* --timeout: when the job is ended (hl_now_ms's clock), its exit
	 * status HL_TIMEOUT_EXIT; 0: never. */
	long long deadline_ms;
	int report_fd; /* failures of the rendezvous, or -1 */
	/* An elastic job (min_np > 0): the rendezvous, whose generations
	 * the supervisor sets; a failed worker's host leaves the job and
	 * the others go on while min_np remain, at most reset_limit times
	 * (0: no limit). */
	struct hl_rdv *rdv;
	int min_np;
	int reset_limit;
	/* Below min_np, while hosts may still return (a cool-down or a
	 * discovery script), the others wait this long for them before the
	 * job ends (horovodrun's --elastic-timeout; 0: it ends at once). */
	int elastic_timeout_s;
	/* A host that failed may return after a cool-down drawn from
	 * [cooldown_min_s, cooldown_max_s] (cooldown false: never); its
	 * workers start again while fewer than max_np run. */
	bool cooldown;
	int cooldown_min_s, cooldown_max_s;
	int max_np;
	/* Elastic: the hosts now usable, from a script (NULL: the host list
	 * is the pool); hosts it finds are added to hosts. */
	struct hl_discovery *discovery;
	/* What a kind of job adds to the supervisor: an elastic job's
	 * policy (elastic/supervise.h's hl_elastic_hooks); NULL for a
	 * static job. */
	const struct hl_sup_hooks *hooks;
	/* Called from the launching thread; NULL: events are dropped. */
	void (*on_event)(void *arg, const struct hl_event *ev);
	void *event_arg;
};

/* Start every worker and supervise the job until it ends. *exit_code is
 * hvdrun's exit status: 0, the first failing worker's code, 128+N for a
 * signal N. Returns an error only if the job could not be started; then
 * nothing is left running. */
int hl_launch_run(const struct hl_launch *l, int *exit_code, char **cause);

#endif
