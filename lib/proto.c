/* proto.c: encoder and decoder of the agent protocol (proto.h). */
#include "proto.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void hl_buf_init(struct hl_buf *b)
{
	b->p = NULL;
	b->len = b->cap = 0;
}

void hl_buf_close(struct hl_buf *b)
{
	free(b->p);
	hl_buf_init(b);
}

int hl_buf_append(struct hl_buf *b, const void *data, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (p == NULL)
			return HL_ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	return HL_OK;
}

int hl_proto_put(struct hl_buf *b, char type, const void *data, size_t len)
{
	unsigned char hdr[5];
	int rc;

	if (len > HL_PROTO_MAX_RECORD)
		return HL_EINVAL;
	hdr[0] = (unsigned char)type;
	hdr[1] = (unsigned char)(len >> 24);
	hdr[2] = (unsigned char)(len >> 16);
	hdr[3] = (unsigned char)(len >> 8);
	hdr[4] = (unsigned char)len;
	rc = hl_buf_append(b, hdr, sizeof(hdr));
	if (rc == HL_OK && len > 0)
		rc = hl_buf_append(b, data, len);
	return rc;
}

int hl_proto_put_signal(struct hl_buf *b, int sig)
{
	unsigned char v[4] = {(unsigned char)(sig >> 24),
			      (unsigned char)(sig >> 16),
			      (unsigned char)(sig >> 8), (unsigned char)sig};

	return hl_proto_put(b, 'S', v, sizeof(v));
}

int hl_proto_signal_of(const char *data, size_t len)
{
	const unsigned char *v = (const unsigned char *)data;

	if (len != 4)
		return -1;
	return (int)((uint32_t)v[0] << 24 | (uint32_t)v[1] << 16 |
		     (uint32_t)v[2] << 8 | v[3]);
}

int hl_proto_next(struct hl_buf *b, size_t *consumed, char *type,
		  const char **data, size_t *len)
{
	const unsigned char *h = (const unsigned char *)b->p;
	size_t n;

	if (b->len < 5)
		return 0;
	n = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
	if (n > HL_PROTO_MAX_RECORD)
		return HL_EINVAL;
	if (b->len < 5 + n)
		return 0;
	*type = (char)h[0];
	*data = b->p + 5;
	*len = n;
	*consumed = 5 + n;
	return 1;
}

void hl_buf_consume(struct hl_buf *b, size_t n)
{
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
}
