/* launch/sup.h: the supervisor's state (struct sup), shared by its loop
 * (launch.c), its hands (sup.c) and an elastic job's policy
 * (elastic/supervise.c, through the hooks of launch.h). Nothing else
 * includes it. */
#ifndef HL_SUP_H
#define HL_SUP_H

#include <stdbool.h>
#include <stddef.h>

#include "launch/launch.h"
#include "util/family.h"
#include "util/proc.h"
#include "launch/watchdog.h"
#include "spawn/spawn.h"

enum phase {
	PH_RUNNING,	/* all is well */
	PH_TERMINATING, /* SIGTERM sent; SIGKILL at the deadline */
	PH_KILLED,	/* SIGKILL sent; give up waiting at the deadline */
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
	struct hl_family fam; /* what hvdrun started, ended as one */
	int exit_code;
	bool failed; /* a worker failed: exit_code is its code */
	/* A job that is not elastic: a worker that exited with a code, told
	 * only at fail_at (ms), unless a worker killed by a signal or lost
	 * comes first (launch.c: the cause, not its peers' reaction). */
	struct hl_worker *held;
	int held_status;
	long long fail_at;
	int signal; /* a signal hvdrun received, 0 if none */
	/* A worker has ended its work (exit 0): the job is finishing. */
	bool finishing;
	/* What the job's hooks keep (l->hooks: an elastic job's, whose
	 * state is elastic/supervise.c's own), else NULL. */
	struct hl_elastic *el;
};

/* ---- sup.c ---- */

/* Signal every direct child that is not a live worker: a worker's
 * children that were re-parented to us. SIGTERM reaches each one once.
 * Returns how many were found. */
int hl_sup_signal_orphans(struct sup *s, int sig);
void hl_sup_signal_all(struct sup *s, int sig);
void hl_sup_terminate(struct sup *s, int sig);
void hl_sup_kill_now(struct sup *s);
void hl_sup_describe_status(int status, char *buf, size_t len);

/* ---- streams.c ---- */

void hl_sup_close_stream(struct hl_worker *w, int j);
/* Read what is there; close the stream at end of file. */
void hl_sup_drain(struct hl_worker *w, int j);
bool hl_sup_any_stream_open(const struct sup *s);
/* hvdrun's own stdout or stderr cannot be written (hvdrun | head, a
 * full disk): the job's output is being lost, so the job ends, as a
 * program writing to a closed pipe ends by SIGPIPE (exit 128+SIGPIPE). */
void hl_sup_output_lost(struct sup *s);
void hl_sup_workers_close(struct hl_worker *w, int n);

#endif
