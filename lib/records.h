/* records.h: the one definition of what hvdrun sends the agent that starts
 * a remote worker (`hvdrun --agent`, over the SSH channel's stdin): records
 * of a type byte, a 4-byte big-endian length and the payload. Environment
 * values travel here, never on a command line.
 *
 *   'D' path    the working directory
 *   'E' N=V     one environment entry
 *   'A' arg     one argument of the command, in order
 *   'G'         start the worker
 *   'S' sig     (4 bytes) signal the worker's process group
 *
 * The network check's probe (`hvdrun --probe`) speaks the same records;
 * its messages are defined in probe_msg.h.
 */
#ifndef HL_RECORDS_H
#define HL_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#define HL_PROTO_MAX_RECORD (1u << 20)
#define HL_PROTO_HEAD 5 /* type, length */

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
/* The signal of an 'S' record, or HL_EPROTO. */
int hl_proto_signal_of(const char *data, size_t len);

/* The answer of `hvdrun --free-port [NAMES]`, one text line: "PORT\n" or
 * "PORT ADDR\n", ADDR the IPv4 address of the first named interface that
 * has one. Format it into buf (at least HL_FREE_PORT_LEN bytes); parse
 * the first line of data: HL_OK with *port, and addr (INET_ADDRSTRLEN
 * bytes, "" when none), or HL_EPROTO. */
#define HL_FREE_PORT_LEN 32
void hl_free_port_format(char *buf, size_t len, int port, const char *addr);
int hl_free_port_parse(const char *data, size_t len, int *port, char *addr);

#endif
