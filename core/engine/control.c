/* control.c: the coordinator's messages between workers, the one encoder
 * and decoder of them (proto/wire.h: big-endian, sticky errors). A
 * message is a u64 length, then its bytes:
 *
 *   requests   u32 n, then n times: str name, meta
 *   responses  u32 n, then n times: str name, meta, i32 cache, str error
 *   meta       u8 type, dtype, op, gpu; i32 root; u64 count, block;
 *              f64 prescale, postscale; u64 group; u32 group_n;
 *              u8 ndim, then ndim times: i64 dim
 *
 * where str is a u32 length (WIRE_NONE: none) and its bytes. */
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"
#include "engine/engine.h"

/* The most a control message may be (a sender's and a receiver's cap). */
#define CTL_MAX ((size_t)1 << 32)
/* The fewest bytes one request and one response take. */
#define META_LEN (4 + 4 + 8 * 5 + 4 + 1)
#define REQ_MIN (4 + META_LEN)
#define RESP_MIN (4 + META_LEN + 4 + 4)

static void put_meta(struct wire_w *w, const struct hvd__meta *m)
{
	uint32_t d;

	wire_put_u8(w, m->type);
	wire_put_u8(w, m->dtype);
	wire_put_u8(w, m->op);
	wire_put_u8(w, m->gpu);
	wire_put_i32(w, m->root);
	wire_put_u64(w, m->count);
	wire_put_u64(w, m->block);
	wire_put_f64(w, m->prescale);
	wire_put_f64(w, m->postscale);
	wire_put_u64(w, m->group);
	wire_put_u32(w, m->group_n);
	wire_put_u8(w, (uint8_t)m->ndim);
	for (d = 0; d < m->ndim; d++)
		wire_put_u64(w, (uint64_t)m->dims[d]);
}

static void get_meta(struct wire_r *r, struct hvd__meta *m)
{
	uint32_t d;

	memset(m, 0, sizeof(*m));
	m->type = wire_get_u8(r);
	m->dtype = wire_get_u8(r);
	m->op = wire_get_u8(r);
	m->gpu = wire_get_u8(r);
	m->root = wire_get_i32(r);
	m->count = wire_get_u64(r);
	m->block = wire_get_u64(r);
	m->prescale = wire_get_f64(r);
	m->postscale = wire_get_f64(r);
	m->group = wire_get_u64(r);
	m->group_n = wire_get_u32(r);
	m->ndim = wire_get_u8(r);
	/* Values that index tables stay in range, whoever sent them. */
	if (m->type > HVD__REQ_PROCESS_SET || m->dtype > HVD_BOOL ||
	    m->op > HVD_ADASUM || m->gpu > 1 || m->ndim > HVD__SHAPE_MAX) {
		r->bad = true;
		m->ndim = 0;
	}
	for (d = 0; d < m->ndim; d++)
		m->dims[d] = (int64_t)wire_get_u64(r);
}

static int send_msg(const struct hvd__comm *c, int to, const struct wire_w *b)
{
	uint8_t head[8];
	struct wire_w h;
	int rc;

	if (b->bad)
		return HVD_ENOMEM;
	wire_w_fixed(&h, head, sizeof(head));
	wire_put_u64(&h, b->len);
	rc = c->ops->sendrecv(c->t, to, head, sizeof(head), 0, NULL, 0, NULL,
			      NULL);
	if (rc == HVD_OK && b->len > 0)
		rc = c->ops->sendrecv(c->t, to, b->p, b->len, 0, NULL, 0, NULL,
				      NULL);
	return rc;
}

/* A message from rank from, in *p (the caller frees it) of *len bytes. */
static int recv_msg(const struct hvd__comm *c, int from, uint8_t **p,
		    size_t *len)
{
	uint8_t head[8];
	struct wire_r h;
	uint64_t n;
	int rc = c->ops->sendrecv(c->t, 0, NULL, 0, from, head, sizeof(head),
				  NULL, NULL);

	*p = NULL;
	*len = 0;
	if (rc != HVD_OK)
		return rc;
	wire_r_init(&h, head, sizeof(head));
	n = wire_get_u64(&h);
	if (n > CTL_MAX)
		return HVD_EPROTO;
	*p = malloc(n ? (size_t)n : 1);
	if (*p == NULL)
		return HVD_ENOMEM;
	if (n > 0)
		rc = c->ops->sendrecv(c->t, 0, NULL, 0, from, *p, (size_t)n,
				      NULL, NULL);
	if (rc != HVD_OK) {
		free(*p);
		*p = NULL;
		return rc;
	}
	*len = (size_t)n;
	return HVD_OK;
}

void hvd__ctl_encode_requests(struct wire_w *b, struct hvd__req *pending)
{
	struct hvd__req *r;
	uint32_t n = 0;

	wire_w_init(b, CTL_MAX);
	wire_put_u32(b, 0);
	for (r = pending; r != NULL; r = r->next) {
		if (r->reported)
			continue;
		wire_put_str(b, r->name);
		put_meta(b, &r->m);
		r->reported = true;
		n++;
	}
	wire_patch_u32(b, 0, n);
}

int hvd__ctl_decode_requests(const void *buf, size_t len, int rank,
			     hvd__ctl_submit submit, void *arg)
{
	struct wire_r r;
	uint32_t n, i;

	wire_r_init(&r, buf, len);
	n = wire_get_count(&r, REQ_MIN);
	for (i = 0; i < n && !r.bad; i++) {
		char *name = wire_get_str(&r, HVD__NAME_MAX);
		struct hvd__meta m;

		get_meta(&r, &m);
		if (name == NULL)
			r.bad = true;
		else if (!r.bad)
			submit(arg, name, &m, rank);
		free(name);
	}
	return wire_r_done(&r) ? HVD_OK : HVD_EPROTO;
}

int hvd__ctl_send_requests(struct hvd__engine *e, int to)
{
	struct wire_w b;
	int rc;

	hvd__ctl_encode_requests(&b, e->pending_local);
	rc = send_msg(&e->comm, to, &b);
	wire_w_free(&b);
	return rc;
}

int hvd__ctl_local_requests(struct hvd__engine *e, hvd__ctl_submit submit,
			    void *arg)
{
	struct wire_w b;
	int rc;

	hvd__ctl_encode_requests(&b, e->pending_local);
	rc = b.bad ? HVD_ENOMEM
		   : hvd__ctl_decode_requests(b.p, b.len, e->comm.rank, submit,
					      arg);
	wire_w_free(&b);
	return rc;
}

int hvd__ctl_recv_requests(struct hvd__engine *e, int from,
			   hvd__ctl_submit submit, void *arg)
{
	uint8_t *p;
	size_t len;
	int rc = recv_msg(&e->comm, from, &p, &len);

	if (rc == HVD_OK)
		rc = hvd__ctl_decode_requests(p, len, from, submit, arg);
	free(p);
	return rc;
}

void hvd__ctl_encode_responses(struct wire_w *b, const struct hvd__resp *v,
			       size_t n)
{
	size_t i;

	wire_w_init(b, CTL_MAX);
	wire_put_u32(b, (uint32_t)n);
	for (i = 0; i < n; i++) {
		wire_put_str(b, v[i].name);
		put_meta(b, &v[i].m);
		wire_put_i32(b, v[i].cache);
		wire_put_str(b, v[i].error);
	}
	if (n > UINT32_MAX)
		b->bad = true;
}

int hvd__ctl_send_responses(struct hvd__engine *e, int to,
			    const struct hvd__resp *v, size_t n)
{
	struct wire_w b;
	int rc;

	hvd__ctl_encode_responses(&b, v, n);
	rc = send_msg(&e->comm, to, &b);
	wire_w_free(&b);
	return rc;
}

int hvd__ctl_decode_responses(const void *buf, size_t len, struct hvd__resp **v,
			      size_t *n)
{
	struct wire_r r;
	uint32_t count, i;

	*v = NULL;
	*n = 0;
	wire_r_init(&r, buf, len);
	count = wire_get_count(&r, RESP_MIN);
	if (r.bad)
		return HVD_EPROTO;
	*v = calloc((size_t)count + 1, sizeof(**v));
	if (*v == NULL)
		return HVD_ENOMEM;
	for (i = 0; i < count && !r.bad; i++) {
		struct hvd__resp *x = &(*v)[i];

		x->name = wire_get_str(&r, HVD__NAME_MAX);
		get_meta(&r, &x->m);
		x->cache = wire_get_i32(&r);
		x->error = wire_get_str(&r, HVD__NAME_MAX * 4);
		if (x->name == NULL)
			r.bad = true;
		(*n)++;
	}
	if (wire_r_done(&r))
		return HVD_OK;
	hvd__resps_free(*v, *n);
	*v = NULL;
	*n = 0;
	return HVD_EPROTO;
}

int hvd__ctl_recv_responses(struct hvd__engine *e, int from,
			    struct hvd__resp **v, size_t *n)
{
	uint8_t *p;
	size_t len;
	int rc = recv_msg(&e->comm, from, &p, &len);

	*v = NULL;
	*n = 0;
	if (rc == HVD_OK)
		rc = hvd__ctl_decode_responses(p, len, v, n);
	free(p);
	return rc;
}

void hvd__resps_free(struct hvd__resp *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].error);
	}
	free(v);
}
