/* config.h: hvdrun's INI config file (man hvdrun.ini(5)), read with inih
 * into the same option table as the command line; and horovodrun's YAML
 * config file (config/yaml.c), read with libyaml. */
#ifndef HL_CONFIG_H
#define HL_CONFIG_H

#include "config/opts.h"

/* Load path into o: a .yaml or .yml file as horovodrun's config, any
 * other as hvdrun's INI file. Keys already set (by the command line) keep
 * their values. On error *cause is "FILE:LINE: ..." naming the bad
 * text. */
int hl_config_load(const char *path, struct hl_opts *o, char **cause);
/* horovodrun's YAML config file (config/yaml.c), whatever its name. */
int hl_config_load_yaml(const char *path, struct hl_opts *o, char **cause);

#endif
