/* proto.h: the one definition of what hvdrun sends the agent that starts a
 * remote worker (`hvdrun --agent`, over the SSH channel's stdin): records
 * of a type byte, a 4-byte big-endian length and the payload. Environment
 * values travel here, never on a command line.
 *
 *   'D' path    the working directory
 *   'E' N=V     one environment entry
 *   'A' arg     one argument of the command, in order
 *   'G'         start the worker
 *   'S' sig     (4 bytes) signal the worker's process group
 *
 * The network check's probe (`hvdrun --probe`, probe.h) speaks the same
 * records, text fields separated by tabs. The probe first describes its
 * host on stdout:
 *
 *   'N' hostname
 *   'M' machine    boot id and network namespace: equal on one machine
 *   'K' token      32 hex digits its listener sends to whoever connects
 *   'P' port       its listener's TCP port (every address)
 *   'I' ifname TAB address TAB L|-   an interface address that is up (L:
 *                  loopback)
 *   'U' key TAB value...             a GPU fact (gpucheck.h)
 *   'R'            end of the description
 *
 * hvdrun then sends on stdin the addresses to try and the go:
 *
 *   'T' id TAB address TAB port TAB token
 *   'G' timeout    milliseconds per connection
 *
 * and the probe answers one 'C' id TAB 1|0 TAB microseconds TAB error per
 * 'T', then 'F'. It keeps its listener open until its stdin closes.
 */
#ifndef HL_PROTO_H
#define HL_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define HL_PROTO_MAX_RECORD (1u << 20)

struct hl_buf {
	char *p;
	size_t len, cap;
};

void hl_buf_init(struct hl_buf *b);
void hl_buf_close(struct hl_buf *b);
int hl_buf_append(struct hl_buf *b, const void *data, size_t n);

/* Append one record to b. */
int hl_proto_put(struct hl_buf *b, char type, const void *data, size_t len);
int hl_proto_put_signal(struct hl_buf *b, int sig);

/* Take the first complete record of b: 1 with *type, *data (pointing into
 * b, valid until the next call) and *len; 0 if b holds no complete record
 * yet; HL_EINVAL for a record over HL_PROTO_MAX_RECORD. */
int hl_proto_next(struct hl_buf *b, size_t *consumed, char *type,
		  const char **data, size_t *len);
/* Drop what hl_proto_next consumed. */
void hl_buf_consume(struct hl_buf *b, size_t n);
int hl_proto_signal_of(const char *data, size_t len);

#endif
