/* records.h: the one definition of what hvdrun sends the agent that starts
 * a remote worker (`hvdrun --agent`, over the SSH channel's stdin): records
 * of a type byte, a 4-byte big-endian length and the payload. Environment
 * values travel here, never on a command line.
 *
 *   'V' proto version  first: the launching hvdrun's agent protocol
 *               (u32, HL_AGENT_PROTO) and its version (the rest); an
 *               agent of another protocol starts nothing and names
 *               both hvdruns (an agent older than 'V' ignored it)
 *   'D' path    the working directory
 *   'E' N=V     one environment entry
 *   'A' arg     one argument of the command, in order
 *   'W'         the worker reads hvdrun's standard input (--stdin):
 *               it comes in 'I' records, and the agent's stdout carries
 *               records too (below)
 *   'G'         start the worker
 *   'S' sig     (4 bytes) signal the worker's process group
 *   'I' bytes   a piece of the worker's standard input (after 'W')
 *   'F'         the end of its standard input
 *
 * After 'W', hvdrun sends at most HL_INPUT_WINDOW bytes of input that
 * the agent has not yet said the worker's pipe took, so that an agent
 * whose worker reads nothing holds a bounded buffer and still reads the
 * signals behind it. The agent answers on its stdout, in records:
 *
 *   'o' bytes   a piece of the worker's stdout
 *   'c' u32     the worker's pipe took that many more bytes of input
 *   'n'         the worker reads no more input (it closed its end):
 *               hvdrun stops sending
 *
 * The network check's probe (`hvdrun --probe`) speaks the same records;
 * its messages are defined in probe_msg.h.
 *
 * Through srun (slurm/spawn.c), one `hvdrun --node-agent` a node reads
 * what hvdrun writes to srun's standard input, which srun gives every
 * node (--input=all); each takes what is addressed to it:
 *
 *   'C' N=V     an environment entry of every rank (before any 'T')
 *   'T' u32     the records up to the next 'T' are for step task N
 *   'P' ifaces  find a free TCP port there (answered by a 'p' line)
 *   'R' u32     rank N's job follows: 'E' (its own entries), 'D', 'A',
 *               'W' where it reads hvdrun's standard input, then 'G'
 *               starts it
 *   'K' u32 i32 signal rank N's process group
 *   'I' u32 bytes  a piece of rank N's standard input
 *   'F' u32     the end of rank N's standard input
 *   'Z'         every job has been sent
 *
 * and answers in text lines, since srun's --label keeps only whole lines
 * of a task together (and only lines shorter than about 1 KiB): each
 * line is one write(2) of at most HL_LINE_MAX bytes, after srun's "N: ",
 * and ends with HL_LINE_END before its newline. When a task's output
 * ends, slurmstepd sends what it still holds in raw 1 KiB pieces, and
 * srun ends each piece with a newline and labels the next: a line
 * without HL_LINE_END is such a piece, and the reader joins it to what
 * follows from the same task.
 *
 *   h NODE FILES PROTO VERSION  the agent runs on node NODE (its
 *               hello), may open FILES descriptors (its hard limit),
 *               speaks HL_AGENT_PROTO (an older one says no PROTO: 1) and
 *               is hvdrun VERSION (an older one says none); hvdrun serves
 *               an agent of its protocol or an older one, and refuses a
 *               newer one
 *   p PORT ADDR the answer to 'P' ("-" for no address)
 *   o RANK DATA a piece of rank's stdout, escaped (hl_line_escape)
 *   e RANK DATA the same of its stderr
 *   x RANK ST   rank's wait(2) status, after all its output
 *   c RANK N    rank's input pipe took N more bytes (as 'c' above)
 *   n RANK      rank reads no more input (as 'n' above)
 */
#ifndef HL_RECORDS_H
#define HL_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#define HL_REC_MAX (1u << 20)
#define HL_REC_HEAD 5 /* type, length */
#define HL_INPUT_WINDOW (256u << 10)
#define HL_INPUT_CHUNK (32u << 10) /* the most hvdrun reads at once */
/* The agents' protocol, which hvdrun says to an SSH agent ('V') and a
 * node agent says to hvdrun ('h'): 2 reads a rank's standard input ('W',
 * 'I', 'F'; 'c' and 'n'), 1 did not. A change of what either side sends
 * takes the next number. The tests build an hvdrun of another
 * (-DHL_AGENT_PROTO, the Makefile's build/tests/other/hvdrun). */
#ifndef HL_AGENT_PROTO
#define HL_AGENT_PROTO 2
#endif

/* A byte buffer: len bytes at p, which lies off bytes into an allocation
 * of cap; hl_buf_consume takes from the front without moving the rest. */
struct hl_buf {
	char *p;
	size_t len, cap;
	size_t off;
};

void hl_buf_init(struct hl_buf *b);
void hl_buf_close(struct hl_buf *b);
int hl_buf_append(struct hl_buf *b, const void *data, size_t n);

/* A record's head (HL_REC_HEAD bytes at head): its type and length. */
void hl_rec_head(void *head, char type, uint32_t len);
/* Append one record to b. */
int hl_rec_put(struct hl_buf *b, char type, const void *data, size_t len);
int hl_rec_put_signal(struct hl_buf *b, int sig);

/* Take the first complete record of b: 1 with *type, *data (pointing into
 * b, valid until the next call) and *len; 0 if b holds no complete record
 * yet; HL_EINVAL for a record over HL_REC_MAX. */
int hl_rec_next(struct hl_buf *b, size_t *consumed, char *type,
		const char **data, size_t *len);
/* Drop what hl_rec_next consumed. */
void hl_buf_consume(struct hl_buf *b, size_t n);
/* The signal of an 'S' record, or HL_EPROTO. */
int hl_rec_signal_of(const char *data, size_t len);
/* A record of one u32 ('c'); its value: HL_OK, or HL_EPROTO. */
int hl_rec_put_u32(struct hl_buf *b, char type, uint32_t v);
int hl_rec_u32_of(const char *data, size_t len, uint32_t *v);
/* The 'V' record of this hvdrun (HL_AGENT_PROTO, HVD_VERSION); read
 * back: HL_OK with *proto and its version in version (cap bytes, cut to
 * fit, a control byte as '?'), or HL_EPROTO with *proto 0. */
int hl_rec_put_version(struct hl_buf *b);
int hl_rec_version_of(const char *data, size_t len, uint32_t *proto,
		      char *version, size_t cap);

/* The srun agent's lines (above). hl_line_escape escapes up to n bytes
 * of data into out (at most cap bytes, no NUL): printable ASCII but '\\'
 * as is, '\\' doubled, every other byte as \xHH. Returns how many
 * bytes of data it took. hl_line_unescape undoes it in place: the length
 * of the bytes, or HL_EPROTO for a malformed escape. */
#define HL_LINE_MAX 900
#define HL_LINE_END '\x1e' /* never in an escaped line: it is escaped */
size_t hl_line_escape(const char *data, size_t n, char *out, size_t cap,
		      size_t *outlen);
int hl_line_unescape(char *s, size_t len);

/* The answer of `hvdrun --free-port [NAMES]`, one text line: "PORT\n" or
 * "PORT ADDR\n", ADDR the IPv4 address of the first named interface that
 * has one. Format it into buf (at least HL_FREE_PORT_LEN bytes); parse
 * the first line of data: HL_OK with *port, and addr (INET_ADDRSTRLEN
 * bytes, "" when none), or HL_EPROTO. */
/* A record hvdrun wrote to the node agents (above), decoded: num is the
 * task of 'T' and the rank of 'R', 'K', 'I' and 'F', sig the signal of
 * 'K'; text and len the bytes of 'I' and the payload of every other type
 * (none is known to be bad). HL_OK, or HL_EPROTO for a 'T', 'R', 'K',
 * 'I' or 'F' of the wrong size or a 'K' with no signal. */
struct hl_node_req {
	char type;
	uint32_t num;
	int sig;
	const char *text;
	size_t len;
};
int hl_node_req_decode(char type, const char *data, size_t len,
		       struct hl_node_req *q);
/* Append a 'T' or 'R' record (num), or a 'K' (num and sig). */
int hl_node_req_put(struct hl_buf *b, char type, uint32_t num, int sig);
/* Append rank's input: an 'I' record of the n bytes of data, or an 'F'
 * where n is 0. */
int hl_node_input_put(struct hl_buf *b, uint32_t rank, const char *data,
		      size_t n);
/* One line of srun's output (srun's "TASK: " label, then a node agent's
 * line or a piece of one): 1 with *task and the agent's whole line,
 * without its HL_LINE_END, at *out and *outlen, valid until the next
 * call for the same task ((*out)[*outlen] may be overwritten); 0 for a
 * piece, kept in parts[task] (ntasks buffers) until its line's end
 * comes, or a line that is not an agent's (srun's own words). */
int hl_srun_line(char *line, size_t len, struct hl_buf *parts, size_t ntasks,
		 long *task, char **out, size_t *outlen);
/* A node agent's whole line (above), parsed in place (line[len] is
 * overwritten): kind is 'h', 'p', 'o', 'e', 'x', 'c' or 'n'; num the
 * port of 'p' (0 when it is none), the open files of 'h' (0 when not
 * said) and the rank of the others; status the wait(2) status of 'x' and
 * the protocol of 'h' (1 when not said);
 * text the node of 'h', the address of 'p' (NULL for "-"), the unescaped
 * bytes of 'o' and 'e', with their count in len; len the bytes of 'c';
 * version the hvdrun version of 'h' ("" when not said).
 * HL_OK, or HL_EPROTO for any other line. */
struct hl_agent_line {
	char kind;
	long num;
	int status;
	char *text;
	size_t len;
	const char *version;
};
int hl_agent_line_parse(char *line, size_t len, struct hl_agent_line *m);

/* The descriptors a node agent holds: HL_NODE_FDS_BASE (its standard
 * streams, signalfd, and what a worker's start holds for a moment: three
 * pipes, /proc), and two pipes a worker it runs. */
#define HL_NODE_FDS_BASE 16
#define HL_NODE_FDS_RANK 2

#define HL_FREE_PORT_LEN 32
void hl_free_port_format(char *buf, size_t len, int port, const char *addr);
int hl_free_port_parse(const char *data, size_t len, int *port, char *addr);

#endif
