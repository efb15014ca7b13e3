/* config.h: hvdrun's INI config file (man hvdrun.ini(5)), read with inih
 * into the same option table as the command line. */
#ifndef HL_CONFIG_H
#define HL_CONFIG_H

#include "opts.h"

/* Load path into o. Keys already set (by the command line) keep their
 * values. On error *cause is "FILE:LINE: ..." naming the bad text. */
int hl_config_load(const char *path, struct hl_opts *o, char **cause);

#endif
