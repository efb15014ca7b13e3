/* engine/coord.h: the coordinator's record of each name some rank has
 * submitted (rank 0 only), shared by the negotiation (negotiate.c), which
 * keeps the records, and the stall check (stall.c), which reads them. */
#ifndef HVD_COORD_H
#define HVD_COORD_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"

/* What the coordinator knows of one name. */
struct hvd__pending {
	char *name;
	struct hvd__meta m;
	uint8_t *submitted; /* per rank */
	int nsubmitted;
	char *error;	      /* why it fails, or NULL */
	int code;	      /* its HVD_E* code */
	uint64_t other_group; /* a disagreeing rank's group, to fail too */
	/* Disagreement: the lowest rank that asked for m, and the lowest
	 * that asked for something else (diff_m); the error names the two
	 * once every rank has asked, whatever the order they came in. */
	int base_rank, diff_rank;
	bool differs;
	struct hvd__meta diff_m;
	long long first_us;
	bool warned;
	bool ready; /* every rank has it: held until its group is ready */
	struct hvd__pending *next;
};

/* ---- stall.c (background thread) ---- */

/* Whether this rank's cached request r has waited long enough (the stall
 * warning time) to go to the coordinator instead, so that rank 0 can name
 * the ranks missing. */
bool hvd__stall_uncache(const struct hvd__engine *e, const struct hvd__req *r,
			long long now);
/* Rank 0: whether to ask for a coordinator round, about once a second
 * while tensors wait there, so that stalls are seen without new work. */
bool hvd__stall_round_due(struct hvd__engine *e, long long now);
/* Rank 0: warn once of each tensor past the warning time; return the
 * first past the shutdown time (if set), with the error it fails with in
 * msg, else NULL. A tensor held for its group is no stall. */
struct hvd__pending *hvd__stall_due(const struct hvd__engine *e, long long now,
				    char *msg, size_t len);

#endif
