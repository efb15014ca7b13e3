/* notes.c: what the remote spawners (ssh/spawn.c, slurm/spawn.c) tell the
 * supervisor (launch.c) about their workers, on its one notify pipe: a
 * remote worker's output and its exit. A note is one write(2) of at most
 * PIPE_BUF bytes, so notes of several threads never interleave:
 *
 *   u32 rank, u8 kind, u32 value, then value bytes of data for 'o'/'e'
 *   'o' / 'e'  a piece of the worker's stdout / stderr
 *   'x'        it exited: value is its wait(2) status
 *   'l'        its host was lost: value is the status to report
 *   's'        its host fell silent (unreachable): the same
 *
 * One pipe for every remote rank keeps hvdrun's descriptors to a handful
 * whatever the size of the job, where a pipe a stream a rank would take
 * four a rank (32,000 at 1,000 nodes of 8 ranks). A worker's output
 * comes before its exit, as both come from the thread that reads it. */
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"
#include "spawn/spawn.h"
#include "util/util.h"

#define NOTE_HEAD 9
#define NOTE_DATA_MAX (PIPE_BUF - NOTE_HEAD)

static void note_put(int fd, int rank, char kind, uint32_t value,
		     const char *data, size_t len)
{
	unsigned char note[PIPE_BUF];
	struct wire_w n;

	wire_w_fixed(&n, note, sizeof(note));
	wire_put_u32(&n, (uint32_t)rank);
	wire_put_u8(&n, (uint8_t)kind);
	wire_put_u32(&n, value);
	if (len > 0)
		wire_put(&n, data, len);
	/* A reader gone (the job is over): EPIPE, and the note is dropped. */
	(void)hl_write_all(fd, note, n.len);
}

void hl_note_write(int fd, int rank, int status, char kind)
{
	note_put(fd, rank, kind, (uint32_t)status, NULL, 0);
}

void hl_note_output(int fd, int rank, int stream, const char *data, size_t n)
{
	while (n > 0) {
		size_t k = n < NOTE_DATA_MAX ? n : NOTE_DATA_MAX;

		note_put(fd, rank, stream ? 'e' : 'o', (uint32_t)k, data, k);
		data += k;
		n -= k;
	}
}

void hl_note_no_input(int fd, int rank, const char *host)
{
	char *line = hl_asprintf("hvdrun: the hvdrun on %s is older than this "
				 "one: rank %d reads no standard input "
				 "(--stdin)\n",
				 host, rank);

	if (line != NULL)
		hl_note_output(fd, rank, 1, line, strlen(line));
	free(line);
}

int hl_note_next(const char *p, size_t len, struct hl_note *note)
{
	struct wire_r r;
	uint32_t value;

	if (len < NOTE_HEAD)
		return 0;
	wire_r_init(&r, p, len);
	note->rank = (int)wire_get_u32(&r);
	note->kind = (char)wire_get_u8(&r);
	value = wire_get_u32(&r);
	note->data = NULL;
	note->len = 0;
	note->status = 0;
	switch (note->kind) {
	case 'x':
	case 'l':
	case 's':
		note->status = (int)value;
		return NOTE_HEAD;
	case 'o':
	case 'e':
		if (value > NOTE_DATA_MAX)
			return HL_EPROTO;
		if (len - NOTE_HEAD < value)
			return 0;
		note->data = p + NOTE_HEAD;
		note->len = value;
		return NOTE_HEAD + (int)value;
	default:
		return HL_EPROTO;
	}
}
