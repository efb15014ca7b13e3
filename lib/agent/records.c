/* records.c: the records of the agent and probe protocols (records.h),
 * framed with proto/wire.h. */
#include "agent/records.h"

#include <arpa/inet.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"
#include "util/util.h"

void hl_buf_init(struct hl_buf *b)
{
	b->p = NULL;
	b->len = b->cap = b->off = 0;
}

/* The allocation: off bytes before the data. */
static char *buf_base(const struct hl_buf *b)
{
	return b->off > 0 ? b->p - b->off : b->p;
}

void hl_buf_close(struct hl_buf *b)
{
	free(buf_base(b));
	hl_buf_init(b);
}

int hl_buf_append(struct hl_buf *b, const void *data, size_t n)
{
	if (n == 0) /* an empty buffer has no memory to add nothing to */
		return HL_OK;
	/* What was consumed makes room first: one move for many takes. */
	if (b->off + b->len + n > b->cap && b->off > 0) {
		char *base = buf_base(b);

		memmove(base, b->p, b->len);
		b->p = base;
		b->off = 0;
	}
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

void hl_rec_head(void *head, char type, uint32_t len)
{
	struct wire_w w;

	wire_w_fixed(&w, head, HL_REC_HEAD);
	wire_put_u8(&w, (uint8_t)type);
	wire_put_u32(&w, len);
}

int hl_rec_put(struct hl_buf *b, char type, const void *data, size_t len)
{
	uint8_t hdr[HL_REC_HEAD];
	int rc;

	if (len > HL_REC_MAX)
		return HL_EINVAL;
	hl_rec_head(hdr, type, (uint32_t)len);
	rc = hl_buf_append(b, hdr, sizeof(hdr));
	if (rc == HL_OK && len > 0)
		rc = hl_buf_append(b, data, len);
	return rc;
}

int hl_rec_put_signal(struct hl_buf *b, int sig)
{
	uint8_t v[4];
	struct wire_w w;

	wire_w_fixed(&w, v, sizeof(v));
	wire_put_i32(&w, sig);
	return hl_rec_put(b, 'S', v, sizeof(v));
}

int hl_rec_signal_of(const char *data, size_t len)
{
	struct wire_r r;
	int32_t sig;

	wire_r_init(&r, data, len);
	sig = wire_get_i32(&r);
	return wire_r_done(&r) && sig > 0 ? sig : HL_EPROTO;
}

int hl_rec_put_u32(struct hl_buf *b, char type, uint32_t v)
{
	uint8_t p[4];
	struct wire_w w;

	wire_w_fixed(&w, p, sizeof(p));
	wire_put_u32(&w, v);
	return hl_rec_put(b, type, p, sizeof(p));
}

int hl_rec_u32_of(const char *data, size_t len, uint32_t *v)
{
	struct wire_r r;

	wire_r_init(&r, data, len);
	*v = wire_get_u32(&r);
	return wire_r_done(&r) ? HL_OK : HL_EPROTO;
}

int hl_rec_put_version(struct hl_buf *b)
{
	uint8_t p[4 + sizeof(HVD_VERSION) - 1];
	struct wire_w w;

	wire_w_fixed(&w, p, sizeof(p));
	wire_put_u32(&w, HL_AGENT_PROTO);
	wire_put(&w, HVD_VERSION, sizeof(HVD_VERSION) - 1);
	return hl_rec_put(b, 'V', p, sizeof(p));
}

int hl_rec_version_of(const char *data, size_t len, uint32_t *proto,
		      char *version, size_t cap)
{
	struct wire_r r;
	size_t i, n;

	wire_r_init(&r, data, len);
	*proto = wire_get_u32(&r);
	if (r.bad || cap == 0) {
		*proto = 0;
		return HL_EPROTO;
	}
	n = len - 4 < cap - 1 ? len - 4 : cap - 1;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)data[4 + i];

		version[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	version[n] = '\0';
	return HL_OK;
}

int hl_rec_next(struct hl_buf *b, size_t *consumed, char *type,
		const char **data, size_t *len)
{
	struct wire_r r;
	uint8_t t;
	uint32_t n;

	wire_r_init(&r, b->p, b->len);
	t = wire_get_u8(&r);
	n = wire_get_u32(&r);
	if (r.bad)
		return 0;
	if (n > HL_REC_MAX)
		return HL_EINVAL;
	if (wire_left(&r) < n)
		return 0;
	*type = (char)t;
	*data = b->p + HL_REC_HEAD;
	*len = n;
	*consumed = HL_REC_HEAD + n;
	return 1;
}

void hl_buf_consume(struct hl_buf *b, size_t n)
{
	if (n == 0)
		return;
	/* No move here: a reader that takes many small records from one
	 * large read would move the rest once for each. */
	b->len -= n;
	if (b->len == 0) {
		b->p = buf_base(b);
		b->off = 0;
	} else {
		b->p += n;
		b->off += n;
	}
}

size_t hl_line_escape(const char *data, size_t n, char *out, size_t cap,
		      size_t *outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)data[i];

		if (c == '\\') {
			if (o + 2 > cap)
				break;
			out[o++] = '\\';
			out[o++] = '\\';
		} else if (c >= 0x20 && c < 0x7f) {
			if (o + 1 > cap)
				break;
			out[o++] = (char)c;
		} else {
			if (o + 4 > cap)
				break;
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	*outlen = o;
	return i;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

int hl_line_unescape(char *s, size_t len)
{
	size_t i = 0, o = 0;

	while (i < len) {
		if (s[i] != '\\') {
			s[o++] = s[i++];
		} else if (i + 1 < len && s[i + 1] == '\\') {
			s[o++] = '\\';
			i += 2;
		} else if (i + 3 < len && s[i + 1] == 'x' &&
			   hexval(s[i + 2]) >= 0 && hexval(s[i + 3]) >= 0) {
			s[o++] = (char)(hexval(s[i + 2]) * 16 +
					hexval(s[i + 3]));
			i += 4;
		} else {
			return HL_EPROTO;
		}
	}
	return (int)o;
}

int hl_node_req_decode(char type, const char *data, size_t len,
		       struct hl_node_req *q)
{
	struct wire_r r;

	memset(q, 0, sizeof(*q));
	q->type = type;
	q->text = data;
	q->len = len;
	wire_r_init(&r, data, len);
	switch (type) {
	case 'T':
	case 'R':
	case 'F':
		q->num = wire_get_u32(&r);
		break;
	case 'I': /* the rank, then its bytes */
		q->num = wire_get_u32(&r);
		if (r.bad)
			return HL_EPROTO;
		q->text = data + 4;
		q->len = len - 4;
		return HL_OK;
	case 'K':
		q->num = wire_get_u32(&r);
		q->sig = wire_get_i32(&r);
		if (q->sig <= 0 || q->sig >= NSIG)
			return HL_EPROTO;
		break;
	default:
		return HL_OK;
	}
	return wire_r_done(&r) ? HL_OK : HL_EPROTO;
}

int hl_node_req_put(struct hl_buf *b, char type, uint32_t num, int sig)
{
	uint8_t v[8];
	struct wire_w w;

	if (type != 'K')
		return hl_rec_put_u32(b, type, num);
	wire_w_fixed(&w, v, sizeof(v));
	wire_put_u32(&w, num);
	wire_put_i32(&w, sig);
	return hl_rec_put(b, type, v, sizeof(v));
}

int hl_node_input_put(struct hl_buf *b, uint32_t rank, const char *data,
		      size_t n)
{
	uint8_t head[HL_REC_HEAD + 4];
	struct wire_w w;
	int rc;

	if (n == 0)
		return hl_rec_put_u32(b, 'F', rank);
	if (n > HL_REC_MAX - 4)
		return HL_EINVAL;
	hl_rec_head(head, 'I', (uint32_t)(4 + n));
	wire_w_fixed(&w, head + HL_REC_HEAD, 4);
	wire_put_u32(&w, rank);
	rc = hl_buf_append(b, head, sizeof(head));
	return rc == HL_OK ? hl_buf_append(b, data, n) : rc;
}

int hl_srun_line(char *line, size_t len, struct hl_buf *parts, size_t ntasks,
		 long *task, char **out, size_t *outlen)
{
	char *p = line, *end = line + len, *rest;
	struct hl_buf *part;
	size_t n;
	bool whole;

	while (p < end && *p == ' ')
		p++;
	/* Digits within the line only: the line ends in no NUL. */
	for (*task = 0, rest = p; rest < end && *rest >= '0' && *rest <= '9' &&
				  (size_t)*task < ntasks;
	     rest++)
		*task = *task * 10 + (*rest - '0');
	if (rest == p || rest + 2 > end || rest[0] != ':' || rest[1] != ' ' ||
	    (size_t)*task >= ntasks)
		return 0;
	p = rest + 2;
	n = (size_t)(end - p);
	whole = n > 0 && p[n - 1] == HL_LINE_END;
	part = &parts[*task];
	if (!whole || part->len > 0) {
		/* A piece: kept until its line's end comes; past two
		 * lines' worth it is no line of an agent. */
		if (part->len + n > 2 * HL_LINE_MAX ||
		    hl_buf_append(part, p, n) != 0) {
			part->len = 0;
			return 0;
		}
		if (!whole)
			return 0;
		p = part->p;
		n = part->len;
		part->len = 0; /* its bytes stay until the next append */
	}
	*out = p;
	*outlen = n - 1;
	return 1;
}

int hl_agent_line_parse(char *line, size_t len, struct hl_agent_line *m)
{
	char *end = line + len, *rest;
	long v;
	int n;

	memset(m, 0, sizeof(*m));
	if (len < 2 || line[1] != ' ')
		return HL_EPROTO;
	line[len] = '\0';
	m->kind = line[0];
	switch (line[0]) {
	case 'h':
		m->text = line + 2;
		m->status = 1;
		m->version = "";
		rest = strchr(m->text, ' ');
		if (rest != NULL) {
			*rest = '\0';
			v = strtol(rest + 1, &rest, 10);
			m->num = v > 0 ? v : 0;
			v = *rest == ' ' ? strtol(rest + 1, &rest, 10) : 1;
			m->status = v > 1 && v < 1000 ? (int)v : 1;
			if (*rest == ' ')
				m->version = rest + 1;
		}
		m->len = strlen(m->text);
		return HL_OK;
	case 'p':
		v = strtol(line + 2, &rest, 10);
		m->num = v > 0 && v < 65536 ? v : 0;
		if (*rest == ' ' && strcmp(rest + 1, "-") != 0) {
			m->text = rest + 1;
			m->len = (size_t)(end - rest - 1);
		}
		return HL_OK;
	case 'n':
		m->num = strtol(line + 2, &rest, 10);
		return rest == line + 2 || *rest != '\0' ? HL_EPROTO : HL_OK;
	case 'o':
	case 'e':
	case 'x':
	case 'c':
		m->num = strtol(line + 2, &rest, 10);
		if (rest == line + 2 || *rest != ' ')
			return HL_EPROTO;
		if (line[0] == 'x') {
			m->status = (int)strtol(rest + 1, NULL, 10);
			return HL_OK;
		}
		if (line[0] == 'c') {
			v = strtol(rest + 1, &rest, 10);
			if (v <= 0 || v > (1L << 30) || *rest != '\0')
				return HL_EPROTO;
			m->len = (size_t)v;
			return HL_OK;
		}
		n = hl_line_unescape(rest + 1, (size_t)(end - rest - 1));
		if (n < 0)
			return HL_EPROTO;
		m->text = rest + 1;
		m->len = (size_t)n;
		return HL_OK;
	default:
		return HL_EPROTO;
	}
}

void hl_free_port_format(char *buf, size_t len, int port, const char *addr)
{
	snprintf(buf, len, "%d%s%s\n", port, addr && *addr ? " " : "",
		 addr && *addr ? addr : "");
}

int hl_free_port_parse(const char *data, size_t len, int *port, char *addr)
{
	char line[HL_FREE_PORT_LEN], *sp;
	const char *nl = memchr(data, '\n', len);
	size_t n = nl ? (size_t)(nl - data) : len;
	struct in_addr a;
	long p;

	addr[0] = '\0';
	if (n >= sizeof(line))
		return HL_EPROTO;
	memcpy(line, data, n);
	line[n] = '\0';
	sp = strchr(line, ' ');
	if (sp != NULL)
		*sp++ = '\0';
	if (!hl_parse_long(line, 1, 65535, &p) ||
	    (sp != NULL && inet_pton(AF_INET, sp, &a) != 1))
		return HL_EPROTO;
	*port = (int)p;
	if (sp != NULL)
		snprintf(addr, INET_ADDRSTRLEN, "%s", sp);
	return HL_OK;
}
