/* gpucheck.h: what this host has for GPU work, found at run time with
 * dlopen so that hvdrun runs where none of it is installed: the NVIDIA
 * driver (NVML: driver version, GPUs, names, memory), the CUDA runtime
 * (its version, the driver's CUDA version, and the device count with the
 * runtime's own error code: "no driver" is a return code, not a count of
 * 0), and NCCL's version. */
#ifndef HL_GPUCHECK_H
#define HL_GPUCHECK_H

#include "util/util.h"

struct hl_gpu {
	char *name;
	unsigned long long mem_bytes;
	/* Its PCIe link now and at most (0: unknown), and its NVLinks that
	 * are up (-1: unknown, or none there). */
	int pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
	int nvlinks;
};

/* How two GPUs of the host connect, as `nvidia-smi topo -m` shows it. */
struct hl_gpu_pair {
	int a, b;   /* NVML indices, a < b */
	int level;  /* their closest common PCIe ancestor, NVML's
		       nvmlGpuTopologyLevel_t (10 one switch, 20 several
		       switches, 30 host bridge, 40 across host bridges of
		       one CPU, 50 across the CPU interconnect); -1: unknown */
	int nvlink; /* NVML says NVLink joins them: 1, 0; -1 unknown */
	int peer;   /* cudaDeviceCanAccessPeer both ways: 1, 0; -1 unknown */
};

struct hl_gpuinfo {
	char *driver; /* NVIDIA driver version, NULL: none */
	int ngpus;    /* GPUs NVML sees */
	struct hl_gpu *gpus;
	int cuda_runtime; /* e.g. 13000 for 13.0; 0: no CUDA runtime */
	int cuda_driver;  /* the CUDA version the driver supports; 0: none */
	int cuda_devices; /* cudaGetDeviceCount, -1 when it failed */
	char *cuda_error; /* why it failed, NULL otherwise */
	int nccl;	  /* ncclGetVersion, 0: no NCCL */
	struct hl_gpu_pair *pairs; /* every pair of GPUs, npairs */
	int npairs;
	struct hl_strvec notes; /* what was not found, one line each */
};

void hl_gpu_probe(struct hl_gpuinfo *g);
void hl_gpu_close(struct hl_gpuinfo *g);
/* What a pair's level means, in nvidia-smi's words ("PIX: one PCIe
 * switch"), or NULL. */
const char *hl_gpu_level_text(int level);
/* "13.0" from 13000; "2.27.7" from NCCL's 22707. */
void hl_gpu_cuda_version(int v, char *buf, size_t len);
void hl_gpu_nccl_version(int v, char *buf, size_t len);
/* A probe's version fact ("12040") as people write it, in buf; the fact
 * itself when it is not a number. Returns buf. */
const char *hl_gpu_version_text(const char *fact, bool nccl, char *buf,
				size_t len);

#endif
