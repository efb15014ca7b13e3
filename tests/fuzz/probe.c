/* probe: the messages of `hvdrun check`'s probes as each side decodes
 * them (probe_msg.h); the input's first byte picks the decoder. */
#include <stdlib.h>

#include "fuzz.h"
#include "check/probe_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *d = (const char *)data + 1;
	size_t n = size - 1;
	char token[HL_PM_TOKEN + 1], *s;
	struct hl_pm_iface i;
	struct hl_pm_target t;
	struct hl_pm_result r;
	struct hl_pm_gpu g;
	struct hl_pm_link l;
	struct hl_pm_cpus cpus;
	struct hl_pm_pcie pcie;
	struct hl_gpu_pair pair;
	struct hl_pm_transfer x;
	struct hl_pm_rate rate;
	int v;

	if (size == 0)
		return 0;
	switch (data[0] % 8) {
	case 0:
		(void)hl_pm_port(d, n, &v);
		break;
	case 1:
		(void)hl_pm_token(d, n, token);
		break;
	case 2:
		(void)hl_pm_iface(d, n, &i);
		break;
	case 3:
		(void)hl_pm_target(d, n, &t);
		break;
	case 4:
		(void)hl_pm_go(d, n, &v);
		(void)hl_pm_result(d, n, &r);
		break;
	case 5:
		s = fuzz_string(data + 1, n);
		if (s != NULL) {
			(void)hl_pm_gpu(s, &g);
			(void)hl_pm_gpu_pcie(s, &pcie);
			(void)hl_pm_gpu_pair(s, &pair);
		}
		free(s);
		break;
	case 6:
		(void)hl_pm_link(d, n, &l);
		(void)hl_pm_cpus(d, n, &cpus);
		break;
	default:
		(void)hl_pm_transfer(d, n, &x);
		(void)hl_pm_rate(d, n, &rate);
	}
	return 0;
}
