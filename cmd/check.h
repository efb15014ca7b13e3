/* check.h: what check.c (the command and its table) and check_json.c
 * (its JSON) share. */
#ifndef CMD_CHECK_H
#define CMD_CHECK_H

#include <stdbool.h>
#include <string.h>

#include "check/netplan.h"

/* The table shows every host and the matrices up to this many probed
 * hosts; above, each section's summary and only what is wrong. */
#define MATRIX_HOSTS 16
/* At most this many names in a summary's list. */
#define LIST_NAMES 8

/* Host i's name as the host list gives it. */
static inline const char *check_name(const struct hl_netcheck *nc, size_t i)
{
	return nc->h[i].host->name;
}

/* The width of the table's host column. */
static inline int check_width(const struct hl_netcheck *nc)
{
	size_t i;
	int w = 4;

	for (i = 0; i < nc->n; i++)
		if ((int)strlen(check_name(nc, i)) > w)
			w = (int)strlen(check_name(nc, i));
	return w;
}

/* The report as a table on stdout (check_table.c). */
void check_print_table(const struct hl_netcheck *nc);
/* Its --bandwidth sections and its findings (check_links.c); many: more
 * than MATRIX_HOSTS probed hosts. */
void check_print_links(const struct hl_netcheck *nc, bool many);
void check_print_findings(const struct hl_netcheck *nc, bool many);
/* The report as one JSON object on stdout (jansson). HL_ENOMEM. */
int check_print_json(const struct hl_netcheck *nc, bool fail_on_slow);

#endif
