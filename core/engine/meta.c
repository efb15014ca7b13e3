/* engine/meta.c: what every rank must agree on for one tensor (struct
 * hvd__meta): its size, whether two agree, and how messages describe it.
 * Used by the queue, the negotiation, the cache and the collectives. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "engine/engine.h"
#include "util/reduce.h"

const char *const hvd__req_names[] = {
	[HVD__REQ_ALLREDUCE] = "allreduce",
	[HVD__REQ_BROADCAST] = "broadcast",
	[HVD__REQ_ALLGATHER] = "allgather",
	[HVD__REQ_BARRIER] = "barrier",
	[HVD__REQ_ALLTOALL] = "alltoall",
	[HVD__REQ_REDUCESCATTER] = "reducescatter",
	[HVD__REQ_JOIN] = "join",
	[HVD__REQ_PROCESS_SET] = "process set change",
};

const char *hvd__meta_activity(const struct hvd__meta *m)
{
	static const char *const names[] = {
		[HVD__REQ_ALLREDUCE] = "ALLREDUCE",
		[HVD__REQ_BROADCAST] = "BROADCAST",
		[HVD__REQ_ALLGATHER] = "ALLGATHER",
		[HVD__REQ_BARRIER] = "BARRIER",
		[HVD__REQ_ALLTOALL] = "ALLTOALL",
		[HVD__REQ_REDUCESCATTER] = "REDUCESCATTER",
		[HVD__REQ_JOIN] = "JOIN",
		[HVD__REQ_PROCESS_SET] = "PROCESS_SET",
	};

	if (m->type == HVD__REQ_ALLREDUCE && m->op == HVD_ADASUM)
		return "ADASUM";
	return m->type < sizeof(names) / sizeof(names[0]) ? names[m->type]
							  : "UNKNOWN";
}

void hvd__timeline_op(const struct hvd__engine *e, const struct hvd__req *r)
{
	const struct hvd__meta *m = &r->m;
	bool counts_differ =
		m->type == HVD__REQ_ALLGATHER || m->type == HVD__REQ_ALLTOALL;
	char args[320];
	size_t n;
	uint32_t i;

	if (e->tl == NULL || r->decided_us <= 0)
		return;
	n = (size_t)snprintf(args, sizeof(args), "{\"dtype\":\"%s\"",
			     hvd__dtype_name((enum hvd_dtype)m->dtype));
	if (m->ndim > 0) { /* an allgather's first dimension: -1, differs */
		n += (size_t)snprintf(args + n, sizeof(args) - n,
				      ",\"shape\":[");
		for (i = 0; i < m->ndim && n < sizeof(args); i++)
			n += (size_t)snprintf(args + n, sizeof(args) - n,
					      "%s%" PRId64, i ? "," : "",
					      m->dims[i]);
		if (n < sizeof(args))
			snprintf(args + n, sizeof(args) - n, "]}");
	} else {
		snprintf(args + n, sizeof(args) - n, ",\"count\":%" PRIu64 "}",
			 counts_differ ? r->local_count : m->count);
	}
	hvd__timeline_span_args(e->tl, r->name, hvd__meta_activity(m),
				r->decided_us, hvd__now_us() - r->decided_us,
				m->type == HVD__REQ_BARRIER ? NULL : args);
}

size_t hvd__meta_bytes(const struct hvd__meta *m)
{
	return (size_t)m->count * hvd__dtype_size((enum hvd_dtype)m->dtype);
}

bool hvd__meta_equal(const struct hvd__meta *a, const struct hvd__meta *b)
{
	return a->type == b->type && a->dtype == b->dtype && a->op == b->op &&
	       a->gpu == b->gpu && a->root == b->root && a->count == b->count &&
	       a->block == b->block && a->prescale == b->prescale &&
	       a->postscale == b->postscale && a->group == b->group &&
	       a->group_n == b->group_n && a->ndim == b->ndim &&
	       memcmp(a->dims, b->dims, a->ndim * sizeof(a->dims[0])) == 0;
}

/* " of shape [2, 3]" ("*" for a first dimension that may differ). */
static void describe_shape(const struct hvd__meta *m, char *buf, size_t len)
{
	size_t n;
	uint32_t d;

	snprintf(buf, len, " of shape [");
	for (d = 0; d < m->ndim && d < HVD__SHAPE_MAX; d++) {
		n = strlen(buf);
		if (m->dims[d] < 0)
			snprintf(buf + n, len - n, "%s*", d ? ", " : "");
		else
			snprintf(buf + n, len - n, "%s%" PRId64, d ? ", " : "",
				 m->dims[d]);
	}
	n = strlen(buf);
	snprintf(buf + n, len - n, "]");
}

void hvd__meta_describe(const struct hvd__meta *m, char *buf, size_t len)
{
	static const char *const ops[] = {"sum", "average", "min",
					  "max", "product", "adasum"};
	size_t n;

	bool reduces = m->type == HVD__REQ_ALLREDUCE ||
		       m->type == HVD__REQ_REDUCESCATTER;

	if (m->type == HVD__REQ_PROCESS_SET) {
		if (m->op == 0) /* HVD__SET_ADD (sets.h) */
			snprintf(buf, len,
				 "adding a process set of %" PRIu64
				 " ranks (ranks hash %016" PRIx64 ")",
				 m->count, m->block);
		else
			snprintf(buf, len, "removing process set %d",
				 (int)m->root);
		return;
	}
	if (m->type == HVD__REQ_ALLGATHER || m->type == HVD__REQ_ALLTOALL)
		snprintf(buf, len, "%s of %s", hvd__req_names[m->type],
			 hvd__dtype_name((enum hvd_dtype)m->dtype));
	else
		snprintf(buf, len, "%s of %" PRIu64 " %s",
			 hvd__req_names[m->type], m->count,
			 hvd__dtype_name((enum hvd_dtype)m->dtype));
	n = strlen(buf);
	if (m->ndim > 0)
		describe_shape(m, buf + n, len - n);
	else if (m->block > 1)
		snprintf(buf + n, len - n, " in rows of %" PRIu64, m->block);
	n = strlen(buf);
	if (reduces && m->op < sizeof(ops) / sizeof(ops[0]))
		snprintf(buf + n, len - n, " op %s", ops[m->op]);
	n = strlen(buf);
	if (reduces && (m->prescale != 1 || m->postscale != 1))
		snprintf(buf + n, len - n, " scaled by %g and %g", m->prescale,
			 m->postscale);
	n = strlen(buf);
	if (m->group_n > 0)
		snprintf(buf + n, len - n, " in a group of %u (%016" PRIx64 ")",
			 m->group_n, m->group);
	n = strlen(buf);
	if (m->type == HVD__REQ_BROADCAST)
		snprintf(buf + n, len - n, " from root %d", m->root);
	n = strlen(buf);
	if (m->gpu)
		snprintf(buf + n, len - n, " in GPU memory");
}
