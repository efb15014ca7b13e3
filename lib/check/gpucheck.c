/* gpucheck.c: see gpucheck.h. The few entry points used are declared
 * here with the ABI of their libraries (all C, all stable); nothing of
 * CUDA's headers is needed to build hvdrun. */
#include "check/gpucheck.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*nvml_void_fn)(void);
typedef int (*nvml_str_fn)(char *, unsigned int);
typedef int (*nvml_count_fn)(unsigned int *);
typedef int (*nvml_handle_fn)(unsigned int, void **);
typedef int (*nvml_name_fn)(void *, char *, unsigned int);
/* NVML's nvmlMemory_t, as the library fills it in. */
struct nvml_memory {
	/* cppcheck-suppress unusedStructMember */
	unsigned long long total, free, used;
};
typedef int (*nvml_mem_fn)(void *, struct nvml_memory *);
typedef const char *(*nvml_errstr_fn)(int);
typedef int (*int_out_fn)(int *);
typedef const char *(*cuda_errstr_fn)(int);
typedef int (*nvml_uint_fn)(void *, unsigned int *);
typedef int (*nvml_link_fn)(void *, unsigned int, unsigned int *);
typedef int (*nvml_pair_fn)(void *, void *, int *);
typedef int (*nvml_p2p_fn)(void *, void *, int, int *);
typedef int (*cuda_peer_fn)(int *, int, int);

/* NVML's nvmlGpuP2PCapsIndex_t NVML_P2P_CAPS_INDEX_NVLINK, and
 * NVML_NVLINK_MAX_LINKS of recent drivers (older GPUs answer an error
 * past their own count). */
#define NVML_P2P_NVLINK 2
#define NVML_MAX_LINKS 18

/* Try each name in turn; NULL when none loads. */
static void *open_first(const char *const *names, const char *home_fmt)
{
	const char *home = getenv("CUDA_HOME");
	char path[4096];
	void *h;
	size_t i;

	for (i = 0; names[i] != NULL; i++)
		if ((h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)) != NULL)
			return h;
	if (home_fmt == NULL)
		return NULL;
	snprintf(path, sizeof(path), home_fmt, home ? home : "/usr/local/cuda");
	return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

/* A GPU's PCIe link and its NVLinks that are up; what NVML does not
 * answer stays unknown. */
static void probe_links(void *lib, void *dev, struct hl_gpu *gpu)
{
	static const char *const pcie[] = {
		"nvmlDeviceGetCurrPcieLinkGeneration",
		"nvmlDeviceGetMaxPcieLinkGeneration",
		"nvmlDeviceGetCurrPcieLinkWidth",
		"nvmlDeviceGetMaxPcieLinkWidth"};
	int *out[] = {&gpu->pcie_gen, &gpu->pcie_gen_max, &gpu->pcie_width,
		      &gpu->pcie_width_max};
	nvml_link_fn state =
		(nvml_link_fn)dlsym(lib, "nvmlDeviceGetNvLinkState");
	unsigned int v, k;

	for (k = 0; k < 4; k++) {
		nvml_uint_fn f = (nvml_uint_fn)dlsym(lib, pcie[k]);

		v = 0;
		if (f != NULL && f(dev, &v) == 0 && v < 1024)
			*out[k] = (int)v;
	}
	gpu->nvlinks = -1;
	for (k = 0; state != NULL && k < NVML_MAX_LINKS; k++) {
		v = 0;
		if (state(dev, k, &v) != 0)
			break;
		gpu->nvlinks = (gpu->nvlinks < 0 ? 0 : gpu->nvlinks) + (v == 1);
	}
}

/* Every pair of GPUs: the PCIe path and NVLink (NVML); peer access is
 * CUDA's, filled in by probe_peers. */
static void probe_pairs(void *lib, nvml_handle_fn handle, struct hl_gpuinfo *g)
{
	nvml_pair_fn common =
		(nvml_pair_fn)dlsym(lib, "nvmlDeviceGetTopologyCommonAncestor");
	nvml_p2p_fn p2p = (nvml_p2p_fn)dlsym(lib, "nvmlDeviceGetP2PStatus");
	int a, b, n = g->ngpus;

	if (n < 2)
		return;
	g->pairs = calloc((size_t)(n * (n - 1) / 2), sizeof(*g->pairs));
	for (a = 0; g->pairs != NULL && a < n; a++)
		for (b = a + 1; b < n; b++) {
			struct hl_gpu_pair *p = &g->pairs[g->npairs++];
			void *da = NULL, *db = NULL;
			int v = -1;

			*p = (struct hl_gpu_pair){a, b, -1, -1, -1};
			if (handle((unsigned int)a, &da) != 0 ||
			    handle((unsigned int)b, &db) != 0)
				continue;
			if (common != NULL && common(da, db, &v) == 0)
				p->level = v;
			if (p2p != NULL &&
			    p2p(da, db, NVML_P2P_NVLINK, &v) == 0)
				p->nvlink = v == 0;
		}
}

static void probe_nvml(struct hl_gpuinfo *g)
{
	static const char *const names[] = {"libnvidia-ml.so.1", NULL};
	void *lib = open_first(names, NULL);
	nvml_void_fn init, shutdown;
	nvml_str_fn driver;
	nvml_count_fn count;
	nvml_handle_fn handle;
	nvml_name_fn name;
	nvml_mem_fn mem;
	nvml_errstr_fn errstr;
	unsigned int n = 0, i;
	char buf[96];
	int rc;

	if (lib == NULL) {
		hl_strvec_push(
			&g->notes,
			"no NVIDIA driver (libnvidia-ml.so.1 not found)");
		return;
	}
	init = (nvml_void_fn)dlsym(lib, "nvmlInit_v2");
	shutdown = (nvml_void_fn)dlsym(lib, "nvmlShutdown");
	driver = (nvml_str_fn)dlsym(lib, "nvmlSystemGetDriverVersion");
	count = (nvml_count_fn)dlsym(lib, "nvmlDeviceGetCount_v2");
	handle = (nvml_handle_fn)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
	name = (nvml_name_fn)dlsym(lib, "nvmlDeviceGetName");
	mem = (nvml_mem_fn)dlsym(lib, "nvmlDeviceGetMemoryInfo");
	errstr = (nvml_errstr_fn)dlsym(lib, "nvmlErrorString");
	if (!init || !shutdown || !driver || !count || !handle || !name ||
	    !mem || !errstr) {
		hl_strvec_push(&g->notes,
			       "libnvidia-ml.so.1 lacks the NVML calls needed");
		dlclose(lib);
		return;
	}
	rc = init();
	if (rc != 0) {
		hl_strvec_pushf(&g->notes, "NVML cannot start: %s", errstr(rc));
		dlclose(lib);
		return;
	}
	if (driver(buf, sizeof(buf)) == 0)
		g->driver = hl_strdup(buf);
	if (count(&n) == 0 && n > 0) {
		g->gpus = calloc(n, sizeof(*g->gpus));
		for (i = 0; g->gpus != NULL && i < n; i++) {
			void *dev = NULL;
			struct nvml_memory m = {0};

			if (handle(i, &dev) != 0)
				continue;
			if (name(dev, buf, sizeof(buf)) == 0)
				g->gpus[i].name = hl_strdup(buf);
			if (mem(dev, &m) == 0)
				g->gpus[i].mem_bytes = m.total;
			probe_links(lib, dev, &g->gpus[i]);
		}
		g->ngpus = g->gpus ? (int)n : 0;
		probe_pairs(lib, handle, g);
	}
	shutdown();
	dlclose(lib);
}

/* Whether each GPU of each pair can access the other's memory. */
static void probe_peers(void *lib, struct hl_gpuinfo *g)
{
	cuda_peer_fn can = (cuda_peer_fn)dlsym(lib, "cudaDeviceCanAccessPeer");
	int i;

	for (i = 0; can != NULL && i < g->npairs; i++) {
		struct hl_gpu_pair *p = &g->pairs[i];
		int ab = 0, ba = 0;

		if (p->b < g->cuda_devices && can(&ab, p->a, p->b) == 0 &&
		    can(&ba, p->b, p->a) == 0)
			p->peer = ab && ba;
	}
}

static void probe_cuda(struct hl_gpuinfo *g)
{
	static const char *const names[] = {"libcudart.so", "libcudart.so.13",
					    "libcudart.so.12", NULL};
	void *lib = open_first(names, "%s/lib64/libcudart.so");
	int_out_fn rt, drv, count;
	cuda_errstr_fn errstr;
	int v = 0, rc;

	g->cuda_devices = -1;
	/* CUDA numbers the devices as NVML does (PCI bus order), so that a
	 * pair means the same two GPUs to both. */
	setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
	if (lib == NULL) {
		hl_strvec_push(&g->notes,
			       "no CUDA runtime (libcudart.so not found)");
		return;
	}
	rt = (int_out_fn)dlsym(lib, "cudaRuntimeGetVersion");
	drv = (int_out_fn)dlsym(lib, "cudaDriverGetVersion");
	count = (int_out_fn)dlsym(lib, "cudaGetDeviceCount");
	errstr = (cuda_errstr_fn)dlsym(lib, "cudaGetErrorString");
	if (rt && rt(&v) == 0)
		g->cuda_runtime = v;
	v = 0;
	if (drv && drv(&v) == 0)
		g->cuda_driver = v;
	/* The count alone says 0 both for "no GPU" and "no driver": the
	 * return code tells which. */
	if (count != NULL) {
		v = 0;
		rc = count(&v);
		if (rc == 0)
			g->cuda_devices = v;
		else
			g->cuda_error = hl_asprintf(
				"%s (cudaGetDeviceCount returned %d)",
				errstr ? errstr(rc) : "error", rc);
	}
	if (g->cuda_devices > 1)
		probe_peers(lib, g);
	/* The runtime stays loaded: unloading it while its threads run is
	 * not safe, and the probe exits soon. */
}

static void probe_nccl(struct hl_gpuinfo *g)
{
	static const char *const names[] = {"libnccl.so.2", "libnccl.so", NULL};
	void *lib = open_first(names, "%s/lib64/libnccl.so.2");
	int_out_fn ver;
	int v = 0;

	if (lib == NULL) {
		hl_strvec_push(&g->notes, "no NCCL (libnccl.so.2 not found)");
		return;
	}
	ver = (int_out_fn)dlsym(lib, "ncclGetVersion");
	if (ver && ver(&v) == 0)
		g->nccl = v;
}

void hl_gpu_probe(struct hl_gpuinfo *g)
{
	memset(g, 0, sizeof(*g));
	hl_strvec_init(&g->notes);
	probe_nvml(g);
	probe_cuda(g);
	probe_nccl(g);
}

void hl_gpu_close(struct hl_gpuinfo *g)
{
	int i;

	for (i = 0; i < g->ngpus; i++)
		free(g->gpus[i].name);
	free(g->gpus);
	free(g->pairs);
	free(g->driver);
	free(g->cuda_error);
	hl_strvec_close(&g->notes);
	memset(g, 0, sizeof(*g));
}

void hl_gpu_cuda_version(int v, char *buf, size_t len)
{
	snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

void hl_gpu_nccl_version(int v, char *buf, size_t len)
{
	/* 2.9 and later: major*10000 + minor*100 + patch; before: *1000. */
	if (v >= 20900)
		snprintf(buf, len, "%d.%d.%d", v / 10000, (v % 10000) / 100,
			 v % 100);
	else
		snprintf(buf, len, "%d.%d.%d", v / 1000, (v % 1000) / 100,
			 v % 100);
}

const char *hl_gpu_version_text(const char *fact, bool nccl, char *buf,
				size_t len)
{
	long n;

	if (!hl_parse_long(fact, 0, INT_MAX, &n))
		snprintf(buf, len, "%s", fact);
	else if (nccl)
		hl_gpu_nccl_version((int)n, buf, len);
	else
		hl_gpu_cuda_version((int)n, buf, len);
	return buf;
}

const char *hl_gpu_level_text(int level)
{
	switch (level) {
	case 0:
		return "the same board";
	case 10:
		return "PIX: one PCIe switch";
	case 20:
		return "PXB: several PCIe switches";
	case 30:
		return "PHB: a PCIe host bridge";
	case 40:
		return "NODE: across host bridges of one CPU";
	case 50:
		return "SYS: across the CPUs' interconnect";
	default:
		return NULL;
	}
}
