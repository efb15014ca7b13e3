/* probe_msg.c: encoders and decoders of the probe's messages
 * (probe_msg.h). */
#include "check/probe_msg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/pm_fields.h"
#include "util/util.h"

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
	return s ? hl_pmf_put(b, type, &s, 1) : hl_rec_put(b, type, NULL, 0);
}

/* A record whose payload is the number v. */
static int put_number(struct hl_buf *b, char type, int v)
{
	char t[16];
	const char *f[] = {t};

	snprintf(t, sizeof(t), "%d", v);
	return hl_pmf_put(b, type, f, 1);
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
	return hl_pmf_is_token(token) ? HL_OK : HL_EPROTO;
}

int hl_pm_put_iface(struct hl_buf *b, const struct hl_pm_iface *i)
{
	const char *f[] = {i->ifname, i->addr, i->loopback ? "L" : "-"};

	return hl_pmf_put(b, 'I', f, 3);
}

int hl_pm_iface(const char *d, size_t n, struct hl_pm_iface *i)
{
	char *buf, *f[3];
	int rc = HL_EPROTO;

	if (hl_pmf_split(d, n, &buf, f, 3) && *f[0] != '\0' &&
	    hl_pmf_copy(i->ifname, sizeof(i->ifname), f[0]) &&
	    hl_pmf_is_addr(f[1]) &&
	    hl_pmf_copy(i->addr, sizeof(i->addr), f[1]) &&
	    (strcmp(f[2], "L") == 0 || strcmp(f[2], "-") == 0)) {
		i->loopback = f[2][0] == 'L';
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
	return hl_pmf_put(b, 'T', f, 4);
}

int hl_pm_target(const char *d, size_t n, struct hl_pm_target *t)
{
	char *buf, *f[4];
	long port;
	int rc = HL_EPROTO;

	if (hl_pmf_split(d, n, &buf, f, 4) &&
	    hl_parse_long(f[0], 0, 1L << 30, &t->id) && hl_pmf_is_addr(f[1]) &&
	    hl_pmf_copy(t->addr, sizeof(t->addr), f[1]) &&
	    hl_parse_long(f[2], 1, 65535, &port) && hl_pmf_is_token(f[3])) {
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
	return hl_pmf_put(b, 'C', f, 4);
}

int hl_pm_result(const char *d, size_t n, struct hl_pm_result *r)
{
	char *buf, *f[4];
	int rc = HL_EPROTO;

	if (hl_pmf_split(d, n, &buf, f, 4) &&
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
	return hl_pmf_put(b, 'L', f, 6);
}

int hl_pm_link(const char *d, size_t n, struct hl_pm_link *l)
{
	char *buf, *f[6];
	long speed;
	int rc = HL_EPROTO;

	if (hl_pmf_split(d, n, &buf, f, 6) && *f[0] != '\0' &&
	    hl_pmf_copy(l->ifname, sizeof(l->ifname), f[0]) &&
	    hl_parse_long(f[1], -1, 1L << 40, &speed) &&
	    count(f[2], &l->rx_errors) && count(f[3], &l->tx_errors) &&
	    count(f[4], &l->rx_dropped) && count(f[5], &l->tx_dropped)) {
		l->speed_mbps = speed;
		rc = HL_OK;
	}
	free(buf);
	return rc;
}

int hl_pm_put_cpus(struct hl_buf *b, const struct hl_pm_cpus *c)
{
	char v[4][24];
	const char *f[] = {v[0], v[1], v[2], v[3]};

	snprintf(v[0], sizeof(v[0]), "%ld", c->cpus);
	snprintf(v[1], sizeof(v[1]), "%ld", c->packages);
	snprintf(v[2], sizeof(v[2]), "%ld", c->cores);
	snprintf(v[3], sizeof(v[3]), "%ld", c->nodes);
	return hl_pmf_put(b, 'H', f, 4);
}

int hl_pm_cpus(const char *d, size_t n, struct hl_pm_cpus *c)
{
	char *buf, *f[4];
	int rc = HL_EPROTO;

	/* Each at least one, none more than the CPUs, a kernel's most. */
	if (hl_pmf_split(d, n, &buf, f, 4) &&
	    hl_parse_long(f[0], 1, 1L << 20, &c->cpus) &&
	    hl_parse_long(f[1], 1, c->cpus, &c->packages) &&
	    hl_parse_long(f[2], c->packages, c->cpus, &c->cores) &&
	    hl_parse_long(f[3], 1, c->cpus, &c->nodes))
		rc = HL_OK;
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
	return hl_pmf_put(b, 'X', f, 7);
}

int hl_pm_transfer(const char *d, size_t n, struct hl_pm_transfer *t)
{
	char *buf, *f[7];
	long port, ms, to, bytes;
	int rc = HL_EPROTO;

	if (hl_pmf_split(d, n, &buf, f, 7) &&
	    hl_parse_long(f[0], 0, 1L << 30, &t->id) && hl_pmf_is_addr(f[1]) &&
	    hl_pmf_copy(t->addr, sizeof(t->addr), f[1]) &&
	    hl_parse_long(f[2], 1, 65535, &port) && hl_pmf_is_token(f[3]) &&
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
	return hl_pmf_put(b, 'Y', f, 6);
}

int hl_pm_rate(const char *d, size_t n, struct hl_pm_rate *r)
{
	char *buf, *f[6];
	unsigned long long bytes;
	int rc = HL_EPROTO;

	if (hl_pmf_split(d, n, &buf, f, 6) &&
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
