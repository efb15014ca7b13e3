/* probe.c: see probe.h. One poll loop: stdin (hvdrun's records), the
 * listener (answer each connection with the token), and the outgoing
 * connections of the test, at most MAX_INFLIGHT at once, each bounded by
 * the timeout hvdrun gives. */
#include "check/probe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "proto/ifaces.h"
#include "check/gpucheck.h"
#include "util/topology.h"
#include "check/ifstats.h"
#include "check/linkrate.h"
#include "check/probe_msg.h"
#include "agent/records.h"
#include "util/util.h"

#define TOKEN_HEX HL_PM_TOKEN
#define MAX_TARGETS 65536
#define MAX_INFLIGHT 256
#define LIFETIME_MS (15 * 60 * 1000) /* a probe never outlives this */

enum tstate { T_QUEUED, T_CONNECTING, T_READING, T_DONE };

struct target {
	long id;
	struct sockaddr_storage sa;
	socklen_t salen;
	char token[TOKEN_HEX + 1];
	enum tstate state;
	int fd;
	long long start_us, end_us;
	char got[TOKEN_HEX + 2];
	size_t gotlen;
	bool ok;
	char *error;
};

struct probe {
	int listen_fd;
	int family; /* of the listener: AF_INET6 (dual stack) or AF_INET */
	char token[TOKEN_HEX + 1];
	struct target *t;
	size_t nt, cap, inflight, ndone, next;
	bool go, reported;
	int timeout_ms;
	struct hl_buf in, out;
	struct hl_buf cmds; /* 'X' and 'S' records after the go, in order */
	struct hl_lr_sink *sink;
};

void hl_machine_id(char *buf, size_t len)
{
	char boot[64] = "", net[64] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	ssize_t n;

	if (f != NULL) {
		if (fgets(boot, sizeof(boot), f) == NULL)
			boot[0] = '\0';
		boot[strcspn(boot, "\n")] = '\0';
		fclose(f);
	}
	n = readlink("/proc/self/ns/net", net, sizeof(net) - 1);
	net[n > 0 ? n : 0] = '\0';
	snprintf(buf, len, "%s/%s", boot, net);
}

static void describe_interfaces(struct probe *p, struct hl_buf *b)
{
	struct iface *v;
	size_t n, k;

	if (ifaces_list(&v, &n) != HL_OK)
		return;
	for (k = 0; k < n; k++) {
		struct hl_pm_iface i = {.loopback = v[k].loopback};

		/* Link-local addresses need a scope; the listener must be
		 * dual stack to be reached on IPv6. */
		if (!v[k].up || !v[k].running ||
		    (v[k].family == AF_INET6 &&
		     (v[k].link_local || p->family != AF_INET6)))
			continue;
		snprintf(i.ifname, sizeof(i.ifname), "%s", v[k].name);
		snprintf(i.addr, sizeof(i.addr), "%s", v[k].addr);
		hl_pm_put_iface(b, &i);
	}
	free(v);
}

static void describe_gpus(struct hl_buf *b)
{
	struct hl_gpuinfo g;

	hl_gpu_probe(&g);
	hl_pm_put_gpuinfo(b, &g);
	hl_gpu_close(&g);
}

/* The CPUs a worker may use here ('H'), where this probe may use them. */
static void describe_cpus(struct hl_buf *b)
{
	struct hl_cpu c[CPU_SETSIZE];
	struct hl_pm_cpus f;
	int n = hl_cpus_allowed(c);

	if (n <= 0)
		return;
	hl_topology_read(getenv("HVD_SYSFS_ROOT"), c, n, true, true);
	f.cpus = n;
	hl_topology_count(c, n, &f.packages, &f.cores, &f.nodes);
	hl_pm_put_cpus(b, &f);
}

static int flush_out(struct probe *p)
{
	int rc = hl_write_all(1, p->out.p, p->out.len);

	p->out.len = 0;
	return rc;
}

/* A 'T' record: one address to connect to. */
static int add_target(struct probe *p, const char *data, size_t len)
{
	struct hl_pm_target m;
	struct target *t;

	if (p->nt == MAX_TARGETS || hl_pm_target(data, len, &m) != HL_OK)
		return HL_EPROTO;
	if (p->nt == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		struct target *nt = realloc(p->t, cap * sizeof(*nt));

		if (nt == NULL)
			return HL_ENOMEM;
		p->t = nt;
		p->cap = cap;
	}
	t = &p->t[p->nt];
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	if (!hl_lr_sockaddr(m.addr, m.port, &t->sa, &t->salen))
		return HL_EPROTO;
	t->id = m.id;
	memcpy(t->token, m.token, TOKEN_HEX + 1);
	p->nt++;
	return HL_OK;
}

static void finish(struct probe *p, struct target *t, bool ok,
		   const char *error)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	t->state = T_DONE;
	t->ok = ok;
	t->end_us = hl_now_us();
	t->error = ok ? NULL : hl_strdup(error);
	p->inflight--;
	p->ndone++;
}

static void start_more(struct probe *p)
{
	while (p->inflight < MAX_INFLIGHT && p->next < p->nt) {
		struct target *t = &p->t[p->next++];

		t->start_us = hl_now_us();
		t->state = T_CONNECTING;
		p->inflight++;
		t->fd = socket(t->sa.ss_family,
			       SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (t->fd < 0) {
			finish(p, t, false, strerror(errno));
			continue;
		}
		if (connect(t->fd, (struct sockaddr *)&t->sa, t->salen) != 0 &&
		    errno != EINPROGRESS)
			finish(p, t, false, strerror(errno));
	}
}

static void progress(struct probe *p, struct target *t, short revents)
{
	if (t->state == T_CONNECTING) {
		int err = 0;
		socklen_t el = sizeof(err);

		if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
			return;
		getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &err, &el);
		if (err != 0) {
			finish(p, t, false, strerror(err));
			return;
		}
		t->state = T_READING;
		return;
	}
	if (t->state == T_READING && (revents & (POLLIN | POLLERR | POLLHUP))) {
		ssize_t n = recv(t->fd, t->got + t->gotlen,
				 sizeof(t->got) - 1 - t->gotlen, 0);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0) {
			finish(p, t, false, strerror(errno));
			return;
		}
		t->gotlen += (size_t)n;
		if (t->gotlen >= TOKEN_HEX + 1 || n == 0) {
			if (t->gotlen >= TOKEN_HEX &&
			    memcmp(t->got, t->token, TOKEN_HEX) == 0)
				finish(p, t, true, NULL);
			else if (t->gotlen == 0)
				finish(p, t, false, "closed without answering");
			else
				finish(p, t, false,
				       "answered, but by another host");
		}
	}
}

static void expire(struct probe *p)
{
	long long now = hl_now_us();
	size_t i;
	char msg[64];

	snprintf(msg, sizeof(msg), "no answer within %.1f s",
		 p->timeout_ms / 1000.0);
	for (i = 0; i < p->next; i++) {
		struct target *t = &p->t[i];

		if ((t->state == T_CONNECTING || t->state == T_READING) &&
		    now - t->start_us >= (long long)p->timeout_ms * 1000)
			finish(p, t, false, msg);
	}
}

/* Anyone may connect: each connection gets the token and is closed at
 * once, so none is held whatever it sends or does not send; at most 64 a
 * wake, so that a flood cannot keep the probe from its own work. */
static void answer(struct probe *p)
{
	char line[TOKEN_HEX + 1];
	int fd, n = 0;

	memcpy(line, p->token, TOKEN_HEX);
	line[TOKEN_HEX] = '\n';
	while (n++ < 64 && (fd = accept4(p->listen_fd, NULL, NULL,
					 SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		(void)!send(fd, line, sizeof(line), MSG_NOSIGNAL);
		close(fd);
	}
}

static void report(struct probe *p)
{
	size_t i;

	for (i = 0; i < p->nt; i++) {
		struct target *t = &p->t[i];
		struct hl_pm_result r = {t->id, t->ok,
					 (double)(t->end_us - t->start_us), ""};

		snprintf(r.error, sizeof(r.error), "%s",
			 t->error ? t->error : "");
		hl_pm_put_result(&p->out, &r);
	}
	hl_pm_put_text(&p->out, 'F', NULL);
	flush_out(p);
	p->reported = true;
}

/* The bandwidth stage's commands, in the order they came: each transfer
 * runs here, one at a time (hvdrun sends one a round); its sink answers
 * on threads of its own. */
static int run_commands(struct probe *p)
{
	const char *data;
	size_t len, used;
	char type;

	while (hl_rec_next(&p->cmds, &used, &type, &data, &len) == 1) {
		if (type == 'X') {
			struct hl_pm_transfer t;
			struct hl_pm_rate r;

			if (hl_pm_transfer(data, len, &t) != HL_OK)
				return HL_EPROTO;
			hl_lr_measure(&t, &r);
			hl_pm_put_rate(&p->out, &r);
		} else {
			hl_ifstats_put(&p->out);
			hl_pm_put_text(&p->out, 'E', NULL);
		}
		hl_buf_consume(&p->cmds, used);
		if (flush_out(p) != 0)
			return HL_EPROTO;
	}
	return HL_OK;
}

/* A 'W' record: the folder a job's workers would start in here. The
 * answer, 'W' too, empty where a worker could enter it, else why not,
 * goes with the tests' results (report). */
static void look_for_folder(struct probe *p, const char *data, size_t len)
{
	char *path = hl_strndup(data, len);
	const char *why = path ? hl_folder_refused(path) : "out of memory";

	free(path);
	hl_pm_put_text(&p->out, 'W', why ? why : "");
}

/* Records from hvdrun. HL_EPROTO: stdin is closed, unreadable or holds
 * what the dialogue does not allow. */
static int read_input(struct probe *p)
{
	char chunk[16384];
	ssize_t n = read(0, chunk, sizeof(chunk));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0 || hl_buf_append(&p->in, chunk, (size_t)n) != HL_OK)
		return HL_EPROTO;
	for (;;) {
		const char *data;
		size_t len, used;
		char type;
		int r = hl_rec_next(&p->in, &used, &type, &data, &len);

		if (r < 0)
			return HL_EPROTO;
		if (r == 0)
			return HL_OK;
		if (type == 'T' && !p->go && add_target(p, data, len) != HL_OK)
			return HL_EPROTO;
		if (type == 'W' && !p->go)
			look_for_folder(p, data, len);
		if (type == 'G' && !p->go) {
			if (hl_pm_go(data, len, &p->timeout_ms) != HL_OK)
				return HL_EPROTO;
			p->go = true;
		} else if ((type == 'X' || type == 'S') && p->go) {
			if (hl_rec_put(&p->cmds, type, data, len) != HL_OK)
				return HL_EPROTO;
		}
		hl_buf_consume(&p->in, used);
	}
}

static void loop(struct probe *p)
{
	long long end = hl_now_ms() + LIFETIME_MS;
	struct pollfd *pf = malloc((MAX_INFLIGHT + 2) * sizeof(*pf));
	struct target **who = malloc(MAX_INFLIGHT * sizeof(struct target *));
	bool in_open = true;

	if (pf == NULL || who == NULL)
		goto out;
	while (in_open && hl_now_ms() < end) {
		size_t n = 0, k, i;

		pf[n++] = (struct pollfd){.fd = 0, .events = POLLIN};
		pf[n++] = (struct pollfd){.fd = p->listen_fd, .events = POLLIN};
		for (i = 0; i < p->next && n < MAX_INFLIGHT + 2; i++) {
			struct target *t = &p->t[i];

			if (t->state != T_CONNECTING && t->state != T_READING)
				continue;
			who[n - 2] = t;
			pf[n++] = (struct pollfd){
				.fd = t->fd,
				.events = t->state == T_CONNECTING ? POLLOUT
								   : POLLIN};
		}
		if (poll(pf, n, 50) < 0 && errno != EINTR)
			break;
		if (pf[1].revents)
			answer(p);
		for (k = 2; k < n; k++)
			if (pf[k].revents)
				progress(p, who[k - 2], pf[k].revents);
		if (pf[0].revents && read_input(p) != 0)
			in_open = false;
		if (p->go) {
			expire(p);
			start_more(p);
			if (p->ndone == p->nt && !p->reported)
				report(p);
			if (p->reported && run_commands(p) != HL_OK)
				break;
		}
	}
out:
	free(pf);
	free(who);
}

int hl_probe_run(char **cause)
{
	struct probe p = {.listen_fd = -1};
	unsigned char raw[TOKEN_HEX / 2];
	char host[256] = "", machine[160];
	size_t i;
	int port, sink_port = 0;

	signal(SIGPIPE, SIG_IGN);
	hl_buf_init(&p.in);
	hl_buf_init(&p.out);
	hl_buf_init(&p.cmds);
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw) ||
	    (p.listen_fd = hl_lr_listen(&p.family)) < 0 ||
	    (port = hl_lr_port(p.listen_fd)) < 0) {
		return hl_fail(cause, HL_ESYS, "cannot listen: %s",
			       strerror(errno));
	}
	for (i = 0; i < sizeof(raw); i++)
		snprintf(p.token + 2 * i, 3, "%02x", raw[i]);
	/* Without a sink, the host has no bandwidth to measure; hvdrun says
	 * so. */
	if (hl_lr_sink_start(&p.sink, p.token, &sink_port) != HL_OK)
		sink_port = 0;
	gethostname(host, sizeof(host) - 1);
	hl_machine_id(machine, sizeof(machine));
	host[strcspn(host, "\t\n")] = '\0';
	hl_pm_put_text(&p.out, 'N', host);
	hl_pm_put_text(&p.out, 'M', machine);
	hl_rec_put_version(&p.out);
	hl_pm_put_text(&p.out, 'K', p.token);
	hl_pm_put_port(&p.out, port);
	if (sink_port > 0)
		hl_pm_put_sink_port(&p.out, sink_port);
	describe_interfaces(&p, &p.out);
	hl_ifstats_put(&p.out);
	describe_gpus(&p.out);
	describe_cpus(&p.out);
	hl_pm_put_text(&p.out, 'R', NULL);
	if (flush_out(&p) != 0)
		return hl_fail(cause, HL_ESYS, "cannot write to hvdrun: %s",
			       strerror(errno));
	fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
	loop(&p);
	for (i = 0; i < p.nt; i++) {
		if (p.t[i].fd >= 0)
			close(p.t[i].fd);
		free(p.t[i].error);
	}
	free(p.t);
	hl_lr_sink_stop(p.sink);
	close(p.listen_fd);
	hl_buf_close(&p.cmds);
	hl_buf_close(&p.in);
	hl_buf_close(&p.out);
	return HL_OK;
}
