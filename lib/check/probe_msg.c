/* probe_msg.c: encoders and decoders of the probe's messages
 * (probe_msg.h). */
#include "check/probe_msg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* A record of the fields joined by tabs. */
static int put_fields(struct hl_buf *b, char type, const char *const *f, int nf)
{
	char *s = NULL;
	size_t len = 0, at = 0;
	int i, rc;

	for (i = 0; i < nf; i++) {
		if (strpbrk(f[i], "\t\n") != NULL)
			return HL_EINVAL;
		len += strlen(f[i]) + 1;
	}
	s = malloc(len ? len : 1);
	if (s == NULL)
		return HL_ENOMEM;
	for (i = 0; i < nf; i++) {
		size_t k = strlen(f[i]);

		memcpy(s + at, f[i], k);
		at += k;
		s[at++] = '\t';
	}
	rc = hl_rec_put(b, type, s, at ? at - 1 : 0);
	free(s);
	return rc;
}

/* Split the payload d (n bytes) into exactly nf fields, copied into buf
 * (n + 1 bytes): the last field keeps any tabs. */
static bool split(const char *d, size_t n, char *buf, char **f, int nf)
{
	int i;

	if (memchr(d, '\0', n) != NULL)
		return false;
	memcpy(buf, d, n);
	buf[n] = '\0';
	f[0] = buf;
	for (i = 1; i < nf; i++) {
		char *tab = strchr(f[i - 1], '\t');

		if (tab == NULL)
			return false;
		*tab = '\0';
		f[i] = tab + 1;
	}
	return true;
}

/* Split with a buffer of its own; the caller frees *buf. */
static bool fields(const char *d, size_t n, char **buf, char **f, int nf)
{
	*buf = malloc(n + 1);
	return *buf != NULL && split(d, n, *buf, f, nf);
}

static bool copy(char *dst, size_t cap, const char *s)
{
	size_t k = strlen(s);

	if (k >= cap)
		return false;
	memcpy(dst, s, k + 1);
	return true;
}

static bool is_addr(const char *s)
{
	struct in6_addr a;

	return inet_pton(AF_INET, s, &a) == 1 ||
	       inet_pton(AF_INET6, s, &a) == 1;
}

static bool is_token(const char *s)
{
	return strlen(s) == HL_PM_TOKEN &&
	       strspn(s, "0123456789abcdef") == HL_PM_TOKEN;
}

/* A whole payload that is a number in [1, max]. */
static int number(const char *d, size_t n, long max, int *out)
{
	char buf[16];
	long v;

	if (n >= sizeof(buf) || memchr(d, '\0', n) != NULL)
		return HL_EPROTO;
	memcpy(buf, d, n);
	buf[n] = '\0';
	if (!hl_parse_long(buf, 1, max, &v))
		return HL_EPROTO;
	*out = (int)v;
	return HL_OK;
}

int hl_pm_put_text(struct hl_buf *b, char type, const char *s)
{
	return s ? put_fields(b, type, &s, 1) : hl_rec_put(b, type, NULL, 0);
}

/* A record whose payload is the number v. */
static int put_number(struct hl_buf *b, char type, int v)
{
	char t[16];
	const char *f[] = {t};

	snprintf(t, sizeof(t), "%d", v);
	return put_fields(b, type, f, 1);
}

int hl_pm_put_port(struct hl_buf *b, int port)
{
	return put_number(b, 'P', port);
}

int hl_pm_put_sink_port(struct hl_buf *b, int port)
{
	return put_number(b, 'Q', port);
}

int hl_pm_port(const char *d, size_t n, int *port)
{
	return number(d, n, 65535, port);
}

int hl_pm_token(const char *d, size_t n, char *token)
{
	if (n != HL_PM_TOKEN)
		return HL_EPROTO;
	memcpy(token, d, n);
	token[n] = '\0';
	return is_token(token) ? HL_OK : HL_EPROTO;
}

int hl_pm_put_iface(struct hl_buf *b, const struct hl_pm_iface *i)
{
	const char *f[] = {i->ifname, i->addr, i->loopback ? "L" : "-"};

	return put_fields(b, 'I', f, 3);
}

int hl_pm_iface(const char *d, size_t n, struct hl_pm_iface *i)
{
	char *buf, *f[3];
	int rc = HL_EPROTO;

	if (fields(d, n, &buf, f, 3) && *f[0] != '\0' &&
	    copy(i->ifname, sizeof(i->ifname), f[0]) && is_addr(f[1]) &&
	    copy(i->addr, sizeof(i->addr), f[1]) &&
	    (strcmp(f[2], "L") == 0 || strcmp(f[2], "-") == 0)) {
		i->loopback = f[2][0] == 'L';
		rc = HL_OK;
	}
	free(buf);
	return rc;
}

static int put_fact(struct hl_buf *b, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int put_fact(struct hl_buf *b, const char *key, const char *fmt, ...)
{
	va_list ap;
	char *v;
	const char *f[2];
	int rc;

	va_start(ap, fmt);
	v = hl_vasprintf(fmt, ap);
	va_end(ap);
	if (v == NULL)
		return HL_ENOMEM;
	/* A driver's free text: a tab or newline becomes a space. */
	for (char *c = v; *c; c++)
		if (*c == '\t' || *c == '\n')
			*c = ' ';
	f[0] = key;
	f[1] = v;
	rc = put_fields(b, 'U', f, 2);
	free(v);
	return rc;
}

/* A 'U' fact of n numbers (at most 6). */
static int put_numbers(struct hl_buf *b, const char *key, const int *v, int n)
{
	char t[6][16];
	const char *f[7] = {key};
	int i;

	for (i = 0; i < n; i++) {
		snprintf(t[i], sizeof(t[i]), "%d", v[i]);
		f[i + 1] = t[i];
	}
	return put_fields(b, 'U', f, n + 1);
}

int hl_pm_put_gpuinfo(struct hl_buf *b, const struct hl_gpuinfo *g)
{
	int rc = HL_OK, k;
	size_t i;

	if (g->driver != NULL)
		rc = put_fact(b, "driver", "%s", g->driver);
	for (k = 0; rc == HL_OK && k < g->ngpus; k++) {
		char idx[16], name[128], mem[24];
		const char *f[] = {"gpu", idx, name, mem};

		snprintf(idx, sizeof(idx), "%d", k);
		snprintf(name, sizeof(name), "%s",
			 g->gpus[k].name ? g->gpus[k].name : "?");
		name[strcspn(name, "\t\n")] = '\0';
		snprintf(mem, sizeof(mem), "%llu", g->gpus[k].mem_bytes);
		rc = put_fields(b, 'U', f, 4);
	}
	for (k = 0; rc == HL_OK && k < g->ngpus; k++) {
		const struct hl_gpu *u = &g->gpus[k];

		int v[] = {k,		    u->pcie_gen,     u->pcie_gen_max,
			   u->pcie_width, u->pcie_width_max, u->nvlinks};

		rc = put_numbers(b, "pcie", v, 6);
	}
	for (k = 0; rc == HL_OK && k < g->npairs; k++) {
		const struct hl_gpu_pair *p = &g->pairs[k];

		int v[] = {p->a, p->b, p->level, p->nvlink, p->peer};

		rc = put_numbers(b, "pair", v, 5);
	}
	if (rc == HL_OK && g->cuda_runtime)
		rc = put_fact(b, "cuda_runtime", "%d", g->cuda_runtime);
	if (rc == HL_OK && g->cuda_driver)
		rc = put_fact(b, "cuda_driver", "%d", g->cuda_driver);
	if (rc == HL_OK && g->cuda_devices >= 0)
		rc = put_fact(b, "cuda_devices", "%d", g->cuda_devices);
	if (rc == HL_OK && g->cuda_error != NULL)
		rc = put_fact(b, "cuda_error", "%s", g->cuda_error);
	if (rc == HL_OK && g->nccl)
		rc = put_fact(b, "nccl", "%d", g->nccl);
	for (i = 0; rc == HL_OK && i < g->notes.n; i++)
		rc = put_fact(b, "note", "%s", g->notes.v[i]);
	return rc;
}

const char *hl_pm_gpu_fact(const struct hl_strvec *facts, const char *key)
{
	size_t i, n = strlen(key);

	for (i = 0; i < facts->n; i++)
		if (strncmp(facts->v[i], key, n) == 0 && facts->v[i][n] == '\t')
			return facts->v[i] + n + 1;
	return NULL;
}

/* n tab-separated numbers, each in [-1, 1 << 20]. */
static bool numbers(const char *value, int *out, int n)
{
	size_t len = strlen(value);
	char *buf, *f[8];
	long v;
	int i;
	bool ok;

	ok = fields(value, len, &buf, f, n);
	for (i = 0; ok && i < n; i++) {
		ok = hl_parse_long(f[i], -1, 1 << 20, &v);
		out[i] = (int)v;
	}
	free(buf);
	return ok;
}

int hl_pm_gpu_pcie(const char *value, struct hl_pm_pcie *p)
{
	int v[6];

	if (!numbers(value, v, 6) || v[0] < 0)
		return HL_EPROTO;
	*p = (struct hl_pm_pcie){v[0], v[1], v[2], v[3], v[4], v[5]};
	return HL_OK;
}

int hl_pm_gpu_pair(const char *value, struct hl_gpu_pair *p)
{
	int v[5];

	if (!numbers(value, v, 5) || v[0] < 0 || v[1] <= v[0])
		return HL_EPROTO;
	*p = (struct hl_gpu_pair){v[0], v[1], v[2], v[3], v[4]};
	return HL_OK;
}

int hl_pm_gpu(const char *value, struct hl_pm_gpu *g)
{
	size_t n = strlen(value);
	char *buf, *f[3], *end;
	long idx;
	int rc = HL_EPROTO;

	if (fields(value, n, &buf, f, 3) &&
	    hl_parse_long(f[0], 0, 1 << 16, &idx) &&
	    copy(g->name, sizeof(g->name), f[1]) && *f[2] >= '0' &&
	    *f[2] <= '9') {
		g->index = (int)idx;
		g->mem_bytes = strtoull(f[2], &end, 10);
		if (*end == '\0')
			rc = HL_OK;
	}
	free(buf);
	return rc;
}

int hl_pm_put_target(struct hl_buf *b, const struct hl_pm_target *t)
{
	char id[24], port[8];
	const char *f[] = {id, t->addr, port, t->token};

	snprintf(id, sizeof(id), "%ld", t->id);
	snprintf(port, sizeof(port), "%d", t->port);
	return put_fields(b, 'T', f, 4);
}

int hl_pm_target(const char *d, size_t n, struct hl_pm_target *t)
{
	char *buf, *f[4];
	long port;
	int rc = HL_EPROTO;

	if (fields(d, n, &buf, f, 4) &&
	    hl_parse_long(f[0], 0, 1L << 30, &t->id) && is_addr(f[1]) &&
	    copy(t->addr, sizeof(t->addr), f[1]) &&
	    hl_parse_long(f[2], 1, 65535, &port) && is_token(f[3])) {
		t->port = (int)port;
		memcpy(t->token, f[3], HL_PM_TOKEN + 1);
		rc = HL_OK;
	}
	free(buf);
	return rc;
}

int hl_pm_put_go(struct hl_buf *b, int timeout_ms)
{
	return put_number(b, 'G', timeout_ms);
}

int hl_pm_go(const char *d, size_t n, int *timeout_ms)
{
	return number(d, n, HL_PM_MAX_TIMEOUT, timeout_ms);
}

int hl_pm_put_result(struct hl_buf *b, const struct hl_pm_result *r)
{
	char id[24], us[32], err[sizeof(r->error)];
	const char *f[] = {id, r->ok ? "1" : "0", us, err};

	snprintf(id, sizeof(id), "%ld", r->id);
	snprintf(us, sizeof(us), "%.0f", r->us);
	snprintf(err, sizeof(err), "%s", r->error);
	err[strcspn(err, "\t\n")] = '\0';
	return put_fields(b, 'C', f, 4);
}

int hl_pm_result(const char *d, size_t n, struct hl_pm_result *r)
{
	char *buf, *f[4];
	int rc = HL_EPROTO;

	if (fields(d, n, &buf, f, 4) &&
	    hl_parse_long(f[0], 0, 1L << 30, &r->id) &&
	    (strcmp(f[1], "1") == 0 || strcmp(f[1], "0") == 0) &&
	    hl_parse_double(f[2], 0, 1e12, &r->us)) {
		r->ok = f[1][0] == '1';
		snprintf(r->error, sizeof(r->error), "%s",
			 r->ok ? "" : (*f[3] ? f[3] : "?"));
		rc = HL_OK;
	}
	free(buf);
	return rc;
}

/* A whole field that is a count in [0, 2^62). */
static bool count(const char *s, unsigned long long *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return *end == '\0' && errno == 0 && *v < (1ULL << 62);
}

int hl_pm_put_link(struct hl_buf *b, const struct hl_pm_link *l)
{
	char v[5][24];
	const char *f[] = {l->ifname, v[0], v[1], v[2], v[3], v[4]};

	snprintf(v[0], sizeof(v[0]), "%lld", l->speed_mbps);
	snprintf(v[1], sizeof(v[1]), "%llu", l->rx_errors);
	snprintf(v[2], sizeof(v[2]), "%llu", l->tx_errors);
	snprintf(v[3], sizeof(v[3]), "%llu", l->rx_dropped);
	snprintf(v[4], sizeof(v[4]), "%llu", l->tx_dropped);
	return put_fields(b, 'L', f, 6);
}

int hl_pm_link(const char *d, size_t n, struct hl_pm_link *l)
{
	char *buf, *f[6];
	long speed;
	int rc = HL_EPROTO;

	if (fields(d, n, &buf, f, 6) && *f[0] != '\0' &&
	    copy(l->ifname, sizeof(l->ifname), f[0]) &&
	    hl_parse_long(f[1], -1, 1L << 40, &speed) &&
	    count(f[2], &l->rx_errors) && count(f[3], &l->tx_errors) &&
	    count(f[4], &l->rx_dropped) && count(f[5], &l->tx_dropped)) {
		l->speed_mbps = speed;
		rc = HL_OK;
	}
	free(buf);
	return rc;
}

int hl_pm_put_transfer(struct hl_buf *b, const struct hl_pm_transfer *t)
{
	char id[24], port[8], ms[16], bytes[24], to[16];
	const char *f[] = {id, t->addr, port, t->token, ms, bytes, to};

	snprintf(id, sizeof(id), "%ld", t->id);
	snprintf(port, sizeof(port), "%d", t->port);
	snprintf(ms, sizeof(ms), "%d", t->max_ms);
	snprintf(bytes, sizeof(bytes), "%lld", t->max_bytes);
	snprintf(to, sizeof(to), "%d", t->timeout_ms);
	return put_fields(b, 'X', f, 7);
}

int hl_pm_transfer(const char *d, size_t n, struct hl_pm_transfer *t)
{
	char *buf, *f[7];
	long port, ms, to, bytes;
	int rc = HL_EPROTO;

	if (fields(d, n, &buf, f, 7) &&
	    hl_parse_long(f[0], 0, 1L << 30, &t->id) && is_addr(f[1]) &&
	    copy(t->addr, sizeof(t->addr), f[1]) &&
	    hl_parse_long(f[2], 1, 65535, &port) && is_token(f[3]) &&
	    hl_parse_long(f[4], 1, HL_PM_MAX_TIMEOUT, &ms) &&
	    hl_parse_long(f[5], 0, 1L << 40, &bytes) &&
	    hl_parse_long(f[6], 1, HL_PM_MAX_TIMEOUT, &to)) {
		t->port = (int)port;
		memcpy(t->token, f[3], HL_PM_TOKEN + 1);
		t->max_ms = (int)ms;
		t->max_bytes = bytes;
		t->timeout_ms = (int)to;
		rc = HL_OK;
	}
	free(buf);
	return rc;
}

int hl_pm_put_rate(struct hl_buf *b, const struct hl_pm_rate *r)
{
	char id[24], bytes[24], us[32], rtt[32], err[sizeof(r->error)];
	const char *f[] = {id, r->ok ? "1" : "0", bytes, us, rtt, err};

	snprintf(id, sizeof(id), "%ld", r->id);
	snprintf(bytes, sizeof(bytes), "%lld", r->bytes);
	snprintf(us, sizeof(us), "%.0f", r->us);
	snprintf(rtt, sizeof(rtt), "%.1f", r->rtt_us);
	snprintf(err, sizeof(err), "%s", r->error);
	err[strcspn(err, "\t\n")] = '\0';
	return put_fields(b, 'Y', f, 6);
}

int hl_pm_rate(const char *d, size_t n, struct hl_pm_rate *r)
{
	char *buf, *f[6];
	unsigned long long bytes;
	int rc = HL_EPROTO;

	if (fields(d, n, &buf, f, 6) &&
	    hl_parse_long(f[0], 0, 1L << 30, &r->id) &&
	    (strcmp(f[1], "1") == 0 || strcmp(f[1], "0") == 0) &&
	    count(f[2], &bytes) && hl_parse_double(f[3], 0, 1e12, &r->us) &&
	    hl_parse_double(f[4], 0, 1e12, &r->rtt_us)) {
		r->ok = f[1][0] == '1';
		r->bytes = (long long)bytes;
		snprintf(r->error, sizeof(r->error), "%s",
			 r->ok ? "" : (*f[5] ? f[5] : "?"));
		rc = HL_OK;
	}
	free(buf);
	return rc;
}
