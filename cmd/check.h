/* check.h: what check.c (the command and its table) and check_json.c
 * (its JSON) share. */
#ifndef CMD_CHECK_H
#define CMD_CHECK_H

#include <stdbool.h>

#include "check/netplan.h"

/* The report as a table on stdout (check_table.c). */
void check_print_table(const struct hl_netcheck *nc);
/* The report as one JSON object on stdout (jansson). HL_ENOMEM. */
int check_print_json(const struct hl_netcheck *nc, bool fail_on_slow);

#endif
