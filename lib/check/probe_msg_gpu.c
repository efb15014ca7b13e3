/* probe_msg_gpu.c: the probe's GPU facts ('U' records, probe_msg.h):
 * the driver, the GPUs, their PCIe links and pairs, CUDA and NCCL. */
#include "check/probe_msg.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/pm_fields.h"
#include "util/util.h"

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
	rc = hl_pmf_put(b, 'U', f, 2);
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
	return hl_pmf_put(b, 'U', f, n + 1);
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
		rc = hl_pmf_put(b, 'U', f, 4);
	}
	for (k = 0; rc == HL_OK && k < g->ngpus; k++) {
		const struct hl_gpu *u = &g->gpus[k];

		int v[] = {k,
			   u->pcie_gen,
			   u->pcie_gen_max,
			   u->pcie_width,
			   u->pcie_width_max,
			   u->nvlinks};

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
	return hl_strvec_field(facts, key, '\t');
}

int hl_pm_gpu_count(const struct hl_strvec *facts)
{
	size_t i;
	int n = 0;

	for (i = 0; i < facts->n; i++)
		n += strncmp(facts->v[i], "gpu\t", 4) == 0;
	return n;
}

/* n tab-separated numbers, each in [-1, 1 << 20]. */
static bool numbers(const char *value, int *out, int n)
{
	size_t len = strlen(value);
	char *buf, *f[8];
	long v;
	int i;
	bool ok;

	ok = hl_pmf_split(value, len, &buf, f, n);
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

	if (hl_pmf_split(value, n, &buf, f, 3) &&
	    hl_parse_long(f[0], 0, 1 << 16, &idx) &&
	    hl_pmf_copy(g->name, sizeof(g->name), f[1]) && *f[2] >= '0' &&
	    *f[2] <= '9') {
		g->index = (int)idx;
		g->mem_bytes = strtoull(f[2], &end, 10);
		if (*end == '\0')
			rc = HL_OK;
	}
	free(buf);
	return rc;
}
