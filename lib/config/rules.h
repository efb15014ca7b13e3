/* config/rules.h: the rules between a job's options (rules.c). Each
 * returns HL_OK, or HL_EINVAL with cause naming the options. */
#ifndef HL_RULES_H
#define HL_RULES_H

#include <stdbool.h>

#include "config/opts.h"

/* The job's finished options, for a job of np workers: --min-np and
 * what only an elastic job takes (--max-np, --reset-limit, ...), --stdin's
 * rank, and horovodrun's settings that hvdrun takes only in part. */
int hl_rules_check(const struct hl_opts *o, int np, char **cause);
/* Option k, set, is for an elastic job and --min-np is not: HL_EINVAL,
 * naming k as given and the fix where it was given (the command line or
 * a config file). */
int hl_rules_elastic_only(const struct hl_opts *o, enum hl_key k, char **cause);
/* The launcher chosen (srun: through srun) against the options. */
int hl_rules_check_launcher(const struct hl_opts *o, bool srun, char **cause);

#endif
