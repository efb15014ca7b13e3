/* output.h: turns a worker's byte stream into whole prefixed lines
 * ("[R]<stdout>:line") on hvdrun's own stdout or stderr, and optionally
 * copies the raw bytes to a per-rank file. */
#ifndef HL_OUTPUT_H
#define HL_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

/* A line longer than this is cut into pieces of this size, so that a
 * worker that never writes a newline cannot grow hvdrun without bound. */
#define HL_OUT_LINE_MAX (64 * 1024)

struct hl_outstream {
	int rank;
	int which;   /* 1: stdout, 2: stderr */
	int sink_fd; /* hvdrun's fd the lines go to */
	int tee_fd;  /* the per-rank file, or -1 */
	char *tee_path;
	bool timestamps;
	char *buf;
	size_t len;
};

void hl_out_init(struct hl_outstream *os, int rank, int which, int sink_fd,
		 bool timestamps);
/* Take n bytes from the worker; emit every complete line. */
void hl_out_feed(struct hl_outstream *os, const char *data, size_t n);
/* End of stream: emit a last partial line with a newline added. */
void hl_out_flush(struct hl_outstream *os);
void hl_out_close(struct hl_outstream *os);
/* --output-filename: open DIR/rank.N/stdout and stderr as the copies of
 * a rank's two streams, creating the folders; N has as many digits as the
 * job's last rank (size - 1), zero-padded as horovodrun's, so that the
 * folders sort in rank order. A copy that cannot be written (a full file
 * system) is given up with one line on stderr that names the file; the
 * lines go on to hvdrun's own output. */
int hl_out_open_files(struct hl_outstream os[2], const char *dir, int rank,
		      int size, char **cause);

/* When a line could not be written to hvdrun's own stdout (1) or stderr
 * (2), a closed pipe or a full disk: true, with which and its errno, the
 * first time. Lines for a sink that failed are dropped after that. */
bool hl_out_lost(int *which, int *err);

#endif
