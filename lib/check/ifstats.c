/* ifstats.c: see ifstats.h. */
#include "check/ifstats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/probe_msg.h"
#include "proto/ifaces.h"

/* A count from /sys/class/net/IFNAME/FILE; -1 when unreadable. */
static long long sys_number(const char *ifname, const char *file)
{
	char path[256], line[64];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/%s", ifname, file);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	if (fgets(line, sizeof(line), f) != NULL) {
		char *end;

		errno = 0;
		v = strtoll(line, &end, 10);
		if (end == line || (*end != '\n' && *end != '\0') || errno != 0)
			v = -1;
	}
	fclose(f);
	return v;
}

static unsigned long long counter(const char *ifname, const char *name)
{
	long long v = sys_number(ifname, name);

	return v < 0 ? 0 : (unsigned long long)v;
}

/* Each interface that is up: its negotiated speed and its error and drop
 * counters ('L'). */
void hl_ifstats_put(struct hl_buf *b)
{
	struct iface *v;
	size_t n, k, j;

	if (ifaces_list(&v, &n) != HL_OK)
		return;
	for (k = 0; k < n; k++) {
		struct hl_pm_link l = {0};
		bool seen = false;

		for (j = 0; j < k; j++)
			seen |= strcmp(v[j].name, v[k].name) == 0;
		if (seen || !v[k].up || !v[k].running ||
		    strpbrk(v[k].name, "/\t\n") != NULL)
			continue;
		snprintf(l.ifname, sizeof(l.ifname), "%s", v[k].name);
		/* Virtual links have none (EINVAL): -1. */
		l.speed_mbps = sys_number(v[k].name, "speed");
		if (l.speed_mbps < 0)
			l.speed_mbps = -1;
		l.rx_errors = counter(v[k].name, "statistics/rx_errors");
		l.tx_errors = counter(v[k].name, "statistics/tx_errors");
		l.rx_dropped = counter(v[k].name, "statistics/rx_dropped");
		l.tx_dropped = counter(v[k].name, "statistics/tx_dropped");
		hl_pm_put_link(b, &l);
	}
	free(v);
}
