/* group.c: see group.h. */
#include "algo/group.h"

#include <stdlib.h>
#include <string.h>

struct group {
	struct hvd__comm parent;
	int *members;
	int n;
};

static int group_sendrecv(void *gp, int to, const void *sbuf, size_t slen,
			  int from, void *rbuf, size_t rlen,
			  hvd__recv_progress progress, void *arg)
{
	struct group *g = gp;

	return g->parent.ops->sendrecv(g->parent.t, g->members[to], sbuf, slen,
				       g->members[from], rbuf, rlen, progress,
				       arg);
}

static int group_sendrecv_v(void *gp, int to, const struct iovec *sv, int sn,
			    int from, const struct iovec *rv, int rn,
			    hvd__recv_progress progress, void *arg)
{
	struct group *g = gp;

	return g->parent.ops->sendrecv_v(g->parent.t, g->members[to], sv, sn,
					 g->members[from], rv, rn, progress,
					 arg);
}

static int group_check(void *gp)
{
	struct group *g = gp;

	return g->parent.ops->check != NULL ? g->parent.ops->check(g->parent.t)
					    : HVD_OK;
}

/* The parent's descriptor of each member (a bell's poll wakes only for
 * the group's peers: algo/group.h). */
static int group_watch(void *gp, struct pollfd *fds, int max)
{
	struct group *g = gp;
	struct pollfd *all;
	int got, i;

	if (g->parent.ops->watch == NULL ||
	    (all = calloc((size_t)g->parent.size, sizeof(*all))) == NULL)
		return 0;
	got = g->parent.ops->watch(g->parent.t, all, g->parent.size);
	for (i = 0; i < g->n && i < max; i++)
		fds[i] = g->members[i] < got ? all[g->members[i]]
					     : (struct pollfd){-1, POLLIN, 0};
	free(all);
	return i;
}

static void group_close(void *gp)
{
	struct group *g = gp;

	if (g != NULL)
		free(g->members);
	free(g);
}

/* The ops of groups over a parent with and without gather/scatter. */
static const struct hvd__transport_ops ops_v = {
	.name = "group",
	.sendrecv = group_sendrecv,
	.sendrecv_v = group_sendrecv_v,
	.check = group_check,
	.watch = group_watch,
	.close = group_close,
};
static const struct hvd__transport_ops ops_flat = {
	.name = "group",
	.sendrecv = group_sendrecv,
	.check = group_check,
	.watch = group_watch,
	.close = group_close,
};

int hvd__group_new(const struct hvd__comm *parent, const int *members, int n,
		   int me, struct hvd__comm *out)
{
	struct group *g;

	memset(out, 0, sizeof(*out));
	if (n < 1 || me < 0 || me >= n)
		return HVD_EINVAL;
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return HVD_ENOMEM;
	g->members = malloc((size_t)n * sizeof(int));
	if (g->members == NULL) {
		free(g);
		return HVD_ENOMEM;
	}
	memcpy(g->members, members, (size_t)n * sizeof(int));
	g->n = n;
	g->parent = *parent;
	out->rank = me;
	out->size = n;
	out->ops = parent->ops->sendrecv_v != NULL ? &ops_v : &ops_flat;
	out->t = g;
	return HVD_OK;
}
