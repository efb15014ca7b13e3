/* ncclcheck.c: the pure steps of `hvdrun check --nccl` (ncclcheck.h):
 * the plan, the job's lines, the judgement. ncclrun.c runs the job. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/linkplan.h"
#include "check/ncclcheck.h"
#include "check/probe_msg.h"

/* The worker's own lines start with this (cmd/ncclcheck/). */
#define WORKER "hvd-ncclcheck: "

static const char *const stages[] = {"none", "init",	"gpu",
				     "nccl", "measure", "done"};

const char *hl_ncc_stage_name(int stage)
{
	return stage >= 0 && stage <= HL_NCC_DONE ? stages[stage] : "?";
}

const char *hl_ncc_stage_text(int stage)
{
	switch (stage) {
	case HL_NCC_NONE:
		return "its start (nothing heard from it)";
	case HL_NCC_INIT:
		return "hvd_init (the job's connections)";
	case HL_NCC_GPU:
		return "its GPU's start (the CUDA context)";
	case HL_NCC_NCCL:
		return "NCCL's start (ncclCommInitRank and the first allreduce)";
	case HL_NCC_MEASURE:
		return "the timed allreduces";
	default:
		return "its end";
	}
}

/* Why host h of nc runs no rank, or NULL when it runs *n (its CUDA
 * devices). */
static char *why_not(const struct hl_nc_host *h, int *n)
{
	const char *dev = hl_pm_gpu_fact(&h->gpu, "cuda_devices");
	const char *err = hl_pm_gpu_fact(&h->gpu, "cuda_error");
	const char *nccl = hl_pm_gpu_fact(&h->gpu, "nccl");
	const char *note = hl_pm_gpu_fact(&h->gpu, "note");
	long devices, version;

	*n = 0;
	if (!h->usable)
		return hl_strdup("not usable (see above)");
	if (dev == NULL || !hl_parse_long(dev, 1, INT_MAX, &devices)) {
		if (err != NULL)
			return hl_asprintf("no GPU: CUDA: %s", err);
		return hl_asprintf("no GPU%s%s", note ? ": " : "",
				   note ? note : "");
	}
	if (nccl == NULL || !hl_parse_long(nccl, 1, LONG_MAX, &version))
		return hl_strdup("no NCCL library (libnccl.so.2 not found)");
	*n = (int)devices;
	return NULL;
}

int hl_ncc_plan(struct hl_ncclcheck *k, const struct hl_netcheck *nc,
		int timeout_ms)
{
	size_t i;
	int n;

	memset(k, 0, sizeof(*k));
	k->timeout_ms = timeout_ms;
	k->algbw_gbs = k->busbw_gbs = -1;
	hl_strvec_init(&k->launcher);
	k->h = calloc(nc->n ? nc->n : 1, sizeof(*k->h));
	if (k->h == NULL)
		return HL_ENOMEM;
	k->nhosts = nc->n;
	for (i = 0; i < nc->n; i++) {
		struct hl_ncc_host *h = &k->h[i];

		hl_strvec_init(&h->within);
		hl_strvec_init(&h->between);
		hl_strvec_init(&h->network);
		h->reason = why_not(&nc->h[i], &n);
		if (n > INT_MAX - k->nranks)
			n = 0;
		h->first_rank = k->nranks;
		h->nranks = n;
		k->nranks += n;
	}
	if (k->nranks == 0)
		k->not_run = hl_strdup("no usable host has a GPU with NCCL");
	k->r = calloc(k->nranks ? (size_t)k->nranks : 1, sizeof(*k->r));
	if (k->r == NULL)
		return HL_ENOMEM;
	for (i = 0; i < nc->n; i++)
		for (n = 0; n < k->h[i].nranks; n++)
			k->r[k->h[i].first_rank + n].host = i;
	return HL_OK;
}

/* The decimal number at s (at most INT_MAX) and where it ends; false
 * when there is none. */
static bool number(const char *s, int *out, const char **end)
{
	char *e;
	long v;

	if (*s < '0' || *s > '9')
		return false;
	v = strtol(s, &e, 10);
	if (v > INT_MAX)
		return false;
	*out = (int)v;
	*end = e;
	return true;
}

/* "NET/IB/0/GDRDMA" -> "NET/IB (GPUDirect RDMA)", "P2P/CUMEM/read" ->
 * "P2P/CUMEM", "SHM/direct/direct" -> "SHM". */
static char *transport(const char *via)
{
	size_t n = strcspn(via, " \t\r");
	const char *slash = memchr(via, '/', n);
	size_t two = n;

	if (slash != NULL && strncmp(via, "SHM", 3) != 0) {
		const char *second =
			memchr(slash + 1, '/', n - (size_t)(slash + 1 - via));

		two = second ? (size_t)(second - via) : n;
	} else if (slash != NULL) {
		two = (size_t)(slash - via);
	}
	/* P2P's "direct pointer" has a space in it. */
	if (strncmp(via, "P2P/direct pointer", 18) == 0)
		two = 18;
	if (strncmp(via, "NET/", 4) == 0 && strstr(via, "/GDRDMA") != NULL)
		return hl_asprintf("%.*s (GPUDirect RDMA)", (int)two, via);
	return hl_strndup(via, two);
}

/* "Channel 00/0 : 0[0] -> 1[1] [send] via NET/Socket/0": the two ranks
 * and what is after "via ". */
static bool channel(const char *text, int *a, int *b, const char **via)
{
	const char *colon, *arrow, *end;

	if (strncmp(text, "Channel ", 8) != 0)
		return false;
	colon = strstr(text, " : ");
	arrow = colon ? strstr(colon, " -> ") : NULL;
	*via = arrow ? strstr(arrow, " via ") : NULL;
	if (*via == NULL || !number(colon + 3, a, &end) ||
	    !number(arrow + 4, b, &end))
		return false;
	*via += 5;
	return true;
}

/* "NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>": each
 * device as "mlx5_0:1 (RoCE)"; a socket's "eth0:10.0.0.1". */
static void take_devices(struct hl_ncc_host *h, const char *text)
{
	const char *p = strstr(text, " : Using ");
	const char *end, *close;

	if (p == NULL)
		return;
	p += 9;
	end = p + strcspn(p, ";");
	while (p < end) {
		size_t n;

		p += strspn(p, " ");
		n = strcspn(p, " ;");
		close = p[0] == '[' ? memchr(p, ']', n) : NULL;
		if (close != NULL && close + 1 < p + n) {
			const char *dev = close + 1;
			size_t len = (size_t)(p + n - dev);
			const char *lt = memchr(dev, '<', len);
			const char *slash = memchr(dev, '/', len);
			char *s;

			if (lt != NULL)
				len = (size_t)(lt - dev);
			if (slash != NULL && slash < dev + len)
				s = hl_asprintf("%.*s (%.*s)",
						(int)(slash - dev), dev,
						(int)(dev + len - slash - 1),
						slash + 1);
			else
				s = hl_strndup(dev, len);
			if (s != NULL)
				hl_strvec_push_once(&h->network, s);
			free(s);
		}
		p += n ? n : 1;
	}
}

static void take_nccl(struct hl_ncclcheck *k, int rank, const char *text,
		      bool warn)
{
	struct hl_ncc_rank *r = &k->r[rank];
	struct hl_ncc_host *h = &k->h[r->host];
	const char *via;
	char *t;
	int a, b;

	if (warn) {
		if (r->warn == NULL)
			r->warn = hl_strdup(text);
		return;
	}
	if (strncmp(text, "Using network ", 14) == 0) {
		t = hl_asprintf("network %s", text + 14);
		if (t != NULL)
			hl_strvec_push_once(&h->network, t);
		free(t);
	} else if (strncmp(text, "NET/", 4) == 0) {
		take_devices(h, text);
	} else if (channel(text, &a, &b, &via) && a < k->nranks &&
		   b < k->nranks) {
		t = transport(via);
		if (t != NULL)
			hl_strvec_push_once(k->r[a].host == k->r[b].host
						    ? &h->within
						    : &h->between,
					    t);
		free(t);
	}
}

/* KEY=NUMBER among text's words: the number, >= 0. */
static bool field(const char *text, const char *key, double *out)
{
	size_t n = strlen(key);
	const char *p;
	char *end;

	for (p = strstr(text, key); p != NULL; p = strstr(p + 1, key))
		if (p[n] == '=' && (p == text || p[-1] == ' ')) {
			*out = strtod(p + n + 1, &end);
			return end != p + n + 1 && *out >= 0 && *out < 1e18;
		}
	return false;
}

static void take_worker(struct hl_ncclcheck *k, int rank, const char *text)
{
	struct hl_ncc_rank *r = &k->r[rank];
	size_t i;
	double bytes, iters, alg, bus;

	if (strncmp(text, "stage ", 6) == 0) {
		for (i = 0; i < sizeof(stages) / sizeof(*stages); i++)
			if (strcmp(text + 6, stages[i]) == 0 &&
			    (int)i > r->stage)
				r->stage = (int)i;
	} else if (strcmp(text, "small ok") == 0) {
		r->small_ok = true;
	} else if (strncmp(text, "fail ", 5) == 0) {
		if (r->fail == NULL)
			r->fail = hl_strdup(text + 5);
	} else if (strncmp(text, "device ", 7) == 0) {
		free(r->device);
		r->device = hl_strdup(text + 7);
	} else if (rank == 0 && strncmp(text, "result ", 7) == 0 &&
		   field(text, "bytes", &bytes) &&
		   field(text, "iters", &iters) && field(text, "algbw", &alg) &&
		   field(text, "busbw", &bus)) {
		k->bytes = (long long)bytes;
		k->iters = (int)iters;
		k->algbw_gbs = alg;
		k->busbw_gbs = bus;
	}
}

void hl_ncc_take_line(struct hl_ncclcheck *k, const char *line)
{
	const char *text = NULL, *p;
	int rank;

	/* "[R]<stdout>:" or "[R]<stderr>:" (launch/output.h). */
	if (line[0] == '[' && number(line + 1, &rank, &p) &&
	    (strncmp(p, "]<stdout>:", 10) == 0 ||
	     strncmp(p, "]<stderr>:", 10) == 0))
		text = p + 10;
	if (text == NULL) {
		if (*line != '\0' && k->launcher.n < 64)
			hl_strvec_push(&k->launcher, line);
		return;
	}
	if (rank >= k->nranks)
		return;
	if (strncmp(text, WORKER, strlen(WORKER)) == 0)
		take_worker(k, rank, text + strlen(WORKER));
	else if ((p = strstr(text, "NCCL INFO ")) != NULL)
		take_nccl(k, rank, p + 10, false);
	else if ((p = strstr(text, "NCCL WARN ")) != NULL)
		take_nccl(k, rank, p + 10, true);
}

/* The launcher's line about rank r ("... rank 3 on host exited ..."). */
static const char *launcher_about(const struct hl_ncclcheck *k, int r)
{
	char key[32];
	size_t i;

	snprintf(key, sizeof(key), "rank %d on ", r);
	for (i = 0; i < k->launcher.n; i++)
		if (strstr(k->launcher.v[i], key) != NULL)
			return k->launcher.v[i];
	return NULL;
}

/* Why host h did not join, from its own ranks' lines only, or NULL. */
static char *own_reason(const struct hl_ncclcheck *k,
			const struct hl_ncc_host *h)
{
	int i;

	for (i = h->first_rank; i < h->first_rank + h->nranks; i++) {
		const struct hl_ncc_rank *r = &k->r[i];

		if (r->fail != NULL)
			return hl_asprintf("rank %d: %s%s%s", i, r->fail,
					   r->warn ? "; NCCL: " : "",
					   r->warn ? r->warn : "");
		if (r->warn != NULL && r->stage < HL_NCC_DONE)
			return hl_asprintf("rank %d: NCCL: %s", i, r->warn);
		if (r->stage == HL_NCC_DONE && !r->small_ok)
			return hl_asprintf("rank %d: its allreduce gave a "
					   "wrong sum",
					   i);
	}
	for (i = h->first_rank; i < h->first_rank + h->nranks; i++) {
		const struct hl_ncc_rank *r = &k->r[i];

		if (r->stage >= HL_NCC_DONE)
			continue;
		if (k->timed_out)
			return hl_asprintf("rank %d had not finished after "
					   "%.0f s: in %s",
					   i, k->timeout_ms / 1000.0,
					   hl_ncc_stage_text(r->stage));
		if (launcher_about(k, i) != NULL)
			return hl_asprintf("rank %d ended in %s: %s", i,
					   hl_ncc_stage_text(r->stage),
					   launcher_about(k, i));
	}
	return NULL;
}

int hl_ncc_judge(struct hl_ncclcheck *k, struct hl_netcheck *nc)
{
	size_t i, culprits = 0;
	int j, rc = HL_OK;

	for (i = 0; i < k->nhosts; i++) {
		struct hl_ncc_host *h = &k->h[i];

		if (h->nranks == 0 || h->reason != NULL)
			continue;
		h->joined = k->not_run == NULL;
		for (j = h->first_rank; j < h->first_rank + h->nranks; j++)
			h->joined &= k->r[j].stage == HL_NCC_DONE &&
				     k->r[j].small_ok && k->r[j].fail == NULL;
		if (!h->joined && k->not_run == NULL) {
			h->reason = own_reason(k, h);
			culprits += h->reason != NULL;
		}
	}
	/* The others stopped because the job did: say so, and make a
	 * finding of them only when no host had a reason of its own. */
	for (i = 0; i < k->nhosts && rc == HL_OK; i++) {
		struct hl_ncc_host *h = &k->h[i];
		bool own = h->reason != NULL;

		if (h->joined)
			continue;
		if (!own && h->nranks > 0)
			h->reason = hl_strdup(
				k->not_run ? k->not_run
				: culprits ? "stopped with the job"
					   : "did not finish (the job ended "
					     "without saying why)");
		if (nc->h[i].usable && (own || culprits == 0))
			rc = hl_nc_add_finding(
				nc, HL_NCF_NCCL, i, SIZE_MAX, NULL,
				hl_asprintf("%s: %s", nc->h[i].host->name,
					    h->reason));
	}
	return rc;
}

void hl_ncc_close(struct hl_ncclcheck *k)
{
	size_t i;
	int j;

	for (i = 0; i < k->nhosts; i++) {
		free(k->h[i].reason);
		hl_strvec_close(&k->h[i].within);
		hl_strvec_close(&k->h[i].between);
		hl_strvec_close(&k->h[i].network);
	}
	for (j = 0; k->r != NULL && j < k->nranks; j++) {
		free(k->r[j].fail);
		free(k->r[j].warn);
		free(k->r[j].device);
	}
	free(k->h);
	free(k->r);
	free(k->not_run);
	hl_strvec_close(&k->launcher);
	memset(k, 0, sizeof(*k));
}
