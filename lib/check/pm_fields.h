/* pm_fields.h: the fields of the probe's messages (probe_msg.h), for the
 * files that encode and decode them (probe_msg.c, probe_msg_gpu.c): text
 * fields joined by tabs in one record. */
#ifndef HL_PM_FIELDS_H
#define HL_PM_FIELDS_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/records.h"

/* A record of type `type` of the nf fields joined by tabs; HL_EINVAL for
 * a field that holds a tab or a newline. */
int hl_pmf_put(struct hl_buf *b, char type, const char *const *f, int nf);
/* Split the payload d (n bytes) into exactly nf fields, in *buf (the
 * caller frees it): the last field keeps any tabs. */
bool hl_pmf_split(const char *d, size_t n, char **buf, char **f, int nf);
/* s into dst when it fits. */
bool hl_pmf_copy(char *dst, size_t cap, const char *s);
/* An IPv4 or IPv6 address; a probe's token (HL_PM_TOKEN hex digits). */
bool hl_pmf_is_addr(const char *s);
bool hl_pmf_is_token(const char *s);

#endif
