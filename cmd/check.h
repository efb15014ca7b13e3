/* check.h: what check.c (the command and its table) and check_json.c
 * (its JSON) share. */
#ifndef CMD_CHECK_H
#define CMD_CHECK_H

#include <jansson.h>
#include <stdbool.h>
#include <string.h>

#include "check/ncclcheck.h"
#include "check/netplan.h"
#include "config/hosts.h"

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

/* The report as a table on stdout (check_table.c); k: --nccl's, or
 * NULL. */
void check_print_table(const struct hl_netcheck *nc,
		       const struct hl_ncclcheck *k);
/* Its --bandwidth sections and its findings (check_links.c); many: more
 * than MATRIX_HOSTS probed hosts. */
void check_print_links(const struct hl_netcheck *nc, bool many);
void check_print_findings(const struct hl_netcheck *nc, bool many);
/* The report as one JSON object on stdout (jansson); k: --nccl's, or
 * NULL. HL_ENOMEM. */
int check_print_json(const struct hl_netcheck *nc, const struct hl_ncclcheck *k,
		     bool fail_on_slow);
/* A JSON string of s (NULL: NULL, which json_pack's "o?" makes null):
 * valid UTF-8 as it is, each other byte as \xHH. */
json_t *check_jtext(const char *s);
/* Append v to array a; false when v is NULL (no memory). */
bool check_jpush(json_t *a, json_t *v);
/* An array of v's strings, each through check_jtext. */
json_t *check_jstrings(const struct hl_strvec *v);

/* --nccl (check_nccl.c): run the NCCL job on the hosts of nc that can,
 * into k (hl_ncc_close it), and add its findings to nc. An error only
 * when the check itself could not run. */
int check_nccl(struct hl_netcheck *nc, struct hl_ncclcheck *k, char **cause);
/* Its section of the table, and its JSON object. */
void check_print_nccl(const struct hl_netcheck *nc,
		      const struct hl_ncclcheck *k);
json_t *check_nccl_json(const struct hl_netcheck *nc,
			const struct hl_ncclcheck *k);

#endif
