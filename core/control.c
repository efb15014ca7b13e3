/* control.c: the coordinator's messages between workers, the one encoder
 * and decoder of them. A message is a 64-bit length, then its bytes:
 *
 *   requests   u32 n, then n times: str name, meta
 *   responses  u32 n, then n times: str name, meta, i32 cache, str error
 *
 * where str is a u32 length (UINT32_MAX: none) and its bytes. Host byte
 * order and struct layout: every rank of a job runs the same build on
 * the same machine type. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

struct wbuf {
	uint8_t *p;
	size_t len, cap;
	bool bad; /* out of memory */
};

static void wput(struct wbuf *b, const void *d, size_t n)
{
	if (b->bad)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		uint8_t *p;

		while (cap < b->len + n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (p == NULL) {
			b->bad = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void wput_u32(struct wbuf *b, uint32_t v)
{
	wput(b, &v, 4);
}

static void wput_str(struct wbuf *b, const char *s)
{
	uint32_t n = s ? (uint32_t)strlen(s) : UINT32_MAX;

	wput_u32(b, n);
	if (s)
		wput(b, s, n);
}

struct rbuf {
	const uint8_t *p;
	size_t len, off;
	bool bad;
};

static void rget(struct rbuf *r, void *d, size_t n)
{
	if (r->bad || r->len - r->off < n) {
		r->bad = true;
		memset(d, 0, n);
		return;
	}
	memcpy(d, r->p + r->off, n);
	r->off += n;
}

static uint32_t rget_u32(struct rbuf *r)
{
	uint32_t v;

	rget(r, &v, 4);
	return v;
}

static char *rget_str(struct rbuf *r)
{
	uint32_t n = rget_u32(r);
	char *s;

	if (n == UINT32_MAX || r->bad)
		return NULL;
	if (n > HVD__NAME_MAX * 4 || r->len - r->off < n) {
		r->bad = true;
		return NULL;
	}
	s = malloc(n + 1);
	if (s == NULL) {
		r->bad = true;
		return NULL;
	}
	memcpy(s, r->p + r->off, n);
	s[n] = '\0';
	r->off += n;
	return s;
}

static int send_msg(const struct hvd__comm *c, int to, const struct wbuf *b)
{
	uint64_t n = b->len;
	int rc;

	if (b->bad)
		return HVD_ENOMEM;
	rc = c->ops->sendrecv(c->t, to, &n, sizeof(n), 0, NULL, 0, NULL, NULL);
	if (rc == HVD_OK && n > 0)
		rc = c->ops->sendrecv(c->t, to, b->p, b->len, 0, NULL, 0, NULL,
				      NULL);
	return rc;
}

static int recv_msg(const struct hvd__comm *c, int from, struct rbuf *r)
{
	uint64_t n = 0;
	uint8_t *p;
	int rc = c->ops->sendrecv(c->t, 0, NULL, 0, from, &n, sizeof(n), NULL,
				  NULL);

	*r = (struct rbuf){NULL, 0, 0, false};
	if (rc != HVD_OK)
		return rc;
	if (n > (1ull << 32))
		return HVD_EPROTO;
	p = malloc(n + 1);
	if (p == NULL)
		return HVD_ENOMEM;
	if (n > 0)
		rc = c->ops->sendrecv(c->t, 0, NULL, 0, from, p, (size_t)n,
				      NULL, NULL);
	if (rc != HVD_OK) {
		free(p);
		return rc;
	}
	*r = (struct rbuf){p, (size_t)n, 0, false};
	return HVD_OK;
}

static void encode_requests(struct hvd__engine *e, struct wbuf *b)
{
	struct hvd__req *r;
	uint32_t n = 0;
	size_t at = b->len;

	wput_u32(b, 0);
	for (r = e->pending_local; r != NULL; r = r->next) {
		if (r->reported)
			continue;
		wput_str(b, r->name);
		wput(b, &r->m, sizeof(r->m));
		r->reported = true;
		n++;
	}
	if (!b->bad)
		memcpy(b->p + at, &n, 4);
}

static void decode_requests(struct rbuf *r, int rank, hvd__ctl_submit submit,
			    void *arg)
{
	uint32_t n = rget_u32(r), i;

	for (i = 0; i < n && !r->bad; i++) {
		char *name = rget_str(r);
		struct hvd__meta m;

		rget(r, &m, sizeof(m));
		if (name != NULL && !r->bad)
			submit(arg, name, &m, rank);
		free(name);
	}
}

int hvd__ctl_send_requests(struct hvd__engine *e, int to)
{
	struct wbuf b = {0};
	int rc;

	encode_requests(e, &b);
	rc = send_msg(&e->comm, to, &b);
	free(b.p);
	return rc;
}

void hvd__ctl_local_requests(struct hvd__engine *e, hvd__ctl_submit submit,
			     void *arg)
{
	struct wbuf b = {0};
	struct rbuf r;

	encode_requests(e, &b);
	r = (struct rbuf){b.p, b.len, 0, b.bad};
	decode_requests(&r, e->comm.rank, submit, arg);
	free(b.p);
}

int hvd__ctl_recv_requests(struct hvd__engine *e, int from,
			   hvd__ctl_submit submit, void *arg)
{
	struct rbuf r;
	int rc = recv_msg(&e->comm, from, &r);

	if (rc == HVD_OK)
		decode_requests(&r, from, submit, arg);
	free((void *)r.p);
	return rc;
}

int hvd__ctl_send_responses(struct hvd__engine *e, int to,
			    const struct hvd__resp *v, size_t n)
{
	struct wbuf b = {0};
	size_t i;
	int rc;

	wput_u32(&b, (uint32_t)n);
	for (i = 0; i < n; i++) {
		wput_str(&b, v[i].name);
		wput(&b, &v[i].m, sizeof(v[i].m));
		wput(&b, &v[i].cache, sizeof(v[i].cache));
		wput_str(&b, v[i].error);
	}
	rc = send_msg(&e->comm, to, &b);
	free(b.p);
	return rc;
}

int hvd__ctl_recv_responses(struct hvd__engine *e, int from,
			    struct hvd__resp **v, size_t *n)
{
	struct rbuf r;
	uint32_t count, i;
	int rc = recv_msg(&e->comm, from, &r);

	*v = NULL;
	*n = 0;
	if (rc != HVD_OK)
		return rc;
	count = rget_u32(&r);
	if (!r.bad && count > r.len / 8)
		r.bad = true; /* more than the message could hold */
	*v = r.bad ? NULL : calloc((size_t)count + 1, sizeof(**v));
	for (i = 0; *v != NULL && i < count && !r.bad; i++) {
		struct hvd__resp *x = &(*v)[i];

		x->name = rget_str(&r);
		rget(&r, &x->m, sizeof(x->m));
		rget(&r, &x->cache, sizeof(x->cache));
		x->error = rget_str(&r);
		if (x->name == NULL)
			r.bad = true;
		(*n)++;
	}
	if (r.bad || *v == NULL)
		rc = HVD_EPROTO;
	free((void *)r.p);
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
