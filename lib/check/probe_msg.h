/* probe_msg.h: the messages of the network check's probe (`hvdrun
 * --probe`, probe.h), the one place their fields are written and read.
 * records.h frames them (a type byte, a length); inside, fields are text
 * separated by tabs, and the encoders refuse a field that holds a tab or
 * a newline. The probe describes its host:
 *
 *   'N' hostname   'M' machine   'K' token (TOKEN hex digits)   'P' port
 *   'V' proto version                     its hvdrun's agent protocol and
 *                                         version (records.h's 'V')
 *   'I' ifname TAB address TAB L|-        an address that is up (L:
 *                                         loopback)
 *   'U' key TAB value...                  a GPU fact (gpucheck.h):
 *       driver V, gpu INDEX TAB NAME TAB BYTES, cuda_runtime V,
 *       cuda_driver V, cuda_devices N, cuda_error TEXT, nccl V, note TEXT,
 *       pcie INDEX TAB GEN TAB MAXGEN TAB WIDTH TAB MAXWIDTH TAB NVLINKS,
 *       pair A TAB B TAB LEVEL TAB NVLINK TAB PEER
 *   'Q' port                              the bandwidth sink's port
 *                                         (linkrate.h)
 *   'H' cpus TAB packages TAB cores TAB numa_nodes
 *                                         the CPUs a worker may use there,
 *                                         and their packages, cores and
 *                                         NUMA nodes (util/topology.h)
 *   'L' ifname TAB speed TAB rx_errors TAB tx_errors TAB rx_dropped
 *       TAB tx_dropped                    an interface's negotiated
 *                                         speed (Mb/s, -1: unknown) and
 *                                         counters, from /sys/class/net
 *   'R'                                   end of the description
 *
 * hvdrun sends the targets and the go:
 *
 *   'T' id TAB address TAB port TAB token
 *   'G' timeout (milliseconds per connection)
 *
 * and the probe answers 'C' id TAB 1|0 TAB microseconds TAB error for
 * each target, then 'F'. After that, for `hvdrun check --bandwidth`,
 * any number of
 *
 *   'X' id TAB address TAB port TAB token TAB ms TAB bytes TAB timeout
 *       one transfer to a sink (linkrate.h): at most ms milliseconds or
 *       bytes bytes (0: round trips only), every wait bounded by timeout
 *       milliseconds
 *       -> 'Y' id TAB 1|0 TAB bytes TAB microseconds TAB rtt TAB error
 *   'S' -> the 'L' records again, then 'E'
 *
 * Each decoder takes a record's payload and its length and returns HL_OK
 * or HL_EPROTO. */
#ifndef HL_PROBE_MSG_H
#define HL_PROBE_MSG_H

#include <netinet/in.h>
#include <stdbool.h>

#include "check/gpucheck.h"
#include "agent/records.h"

#define HL_PM_TOKEN 32		 /* hex digits of a probe's token */
#define HL_PM_MAX_TIMEOUT 600000 /* ms */

struct hl_pm_iface {
	char ifname[64];
	char addr[INET6_ADDRSTRLEN];
	bool loopback;
};

struct hl_pm_target {
	long id;
	char addr[INET6_ADDRSTRLEN];
	int port;
	char token[HL_PM_TOKEN + 1];
};

struct hl_pm_result {
	long id;
	bool ok;
	double us;
	char error[256]; /* "" when ok */
};

struct hl_pm_gpu {
	int index;
	char name[128];
	unsigned long long mem_bytes;
};

/* An interface's link ('L'). */
struct hl_pm_link {
	char ifname[64];
	long long speed_mbps; /* -1: unknown */
	unsigned long long rx_errors, tx_errors, rx_dropped, tx_dropped;
};

/* The CPUs of a host ('H'): how many a worker may use, and in how many
 * packages, cores and NUMA nodes. */
struct hl_pm_cpus {
	long cpus, packages, cores, nodes;
};

/* A transfer to run ('X'). */
struct hl_pm_transfer {
	long id;
	char addr[INET6_ADDRSTRLEN];
	int port;
	char token[HL_PM_TOKEN + 1];
	int max_ms;
	long long max_bytes; /* 0: the round trips only */
	int timeout_ms;
};

/* What it measured ('Y'). */
struct hl_pm_rate {
	long id;
	bool ok;
	long long bytes;
	double us;     /* how long the data took */
	double rtt_us; /* the median round trip (of a max_bytes 0 transfer) */
	char error[256];
};

/* A "pcie" fact: a GPU's PCIe link and NVLinks (hl_gpu's fields). */
struct hl_pm_pcie {
	int index, gen, gen_max, width, width_max, nvlinks;
};

/* 'N', 'M', 'K', 'R', 'F', 'S', 'E': one field (NULL: none). */
int hl_pm_put_text(struct hl_buf *b, char type, const char *s);
int hl_pm_put_port(struct hl_buf *b, int port);
/* 'Q': the sink's port ('P' and 'Q' decode with hl_pm_port). */
int hl_pm_put_sink_port(struct hl_buf *b, int port);
int hl_pm_port(const char *d, size_t n, int *port);
int hl_pm_token(const char *d, size_t n, char *token);
int hl_pm_put_iface(struct hl_buf *b, const struct hl_pm_iface *i);
int hl_pm_iface(const char *d, size_t n, struct hl_pm_iface *i);
/* Every fact of g, one 'U' record each. */
int hl_pm_put_gpuinfo(struct hl_buf *b, const struct hl_gpuinfo *g);
/* The value of the fact key among a host's 'U' payloads, or NULL. */
const char *hl_pm_gpu_fact(const struct hl_strvec *facts, const char *key);
/* How many "gpu" facts (the driver's GPUs) are among a host's. */
int hl_pm_gpu_count(const struct hl_strvec *facts);
/* A "gpu" fact's value (INDEX TAB NAME TAB BYTES). */
int hl_pm_gpu(const char *value, struct hl_pm_gpu *g);
/* A "pcie" fact's value, and a "pair" fact's. */
int hl_pm_gpu_pcie(const char *value, struct hl_pm_pcie *p);
int hl_pm_gpu_pair(const char *value, struct hl_gpu_pair *p);
int hl_pm_put_target(struct hl_buf *b, const struct hl_pm_target *t);
int hl_pm_target(const char *d, size_t n, struct hl_pm_target *t);
int hl_pm_put_go(struct hl_buf *b, int timeout_ms);
int hl_pm_go(const char *d, size_t n, int *timeout_ms);
int hl_pm_put_result(struct hl_buf *b, const struct hl_pm_result *r);
int hl_pm_result(const char *d, size_t n, struct hl_pm_result *r);
int hl_pm_put_link(struct hl_buf *b, const struct hl_pm_link *l);
int hl_pm_link(const char *d, size_t n, struct hl_pm_link *l);
int hl_pm_put_cpus(struct hl_buf *b, const struct hl_pm_cpus *c);
int hl_pm_cpus(const char *d, size_t n, struct hl_pm_cpus *c);
int hl_pm_put_transfer(struct hl_buf *b, const struct hl_pm_transfer *t);
int hl_pm_transfer(const char *d, size_t n, struct hl_pm_transfer *t);
int hl_pm_put_rate(struct hl_buf *b, const struct hl_pm_rate *r);
int hl_pm_rate(const char *d, size_t n, struct hl_pm_rate *r);

#endif
