/* agent: the srun launcher's protocol on both sides (records.h): the
 * records a node agent reads from srun's standard input, decoded as
 * hl_node_req_decode decodes them, and the lines hvdrun reads back from
 * srun, labelled, maybe cut into pieces, joined by hl_srun_line and
 * parsed by hl_agent_line_parse. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "agent/records.h"

#define NTASKS 4

static void node_agent_side(const uint8_t *data, size_t size)
{
	struct hl_node_req q;
	struct hl_buf b;
	const char *d;
	size_t len, used;
	char type;

	hl_buf_init(&b);
	if (hl_buf_append(&b, data, size) == 0)
		while (hl_rec_next(&b, &used, &type, &d, &len) == 1) {
			(void)hl_node_req_decode(type, d, len, &q);
			hl_buf_consume(&b, used);
		}
	hl_buf_close(&b);
}

static void hvdrun_side(const uint8_t *data, size_t size)
{
	struct hl_buf parts[NTASKS], b;
	struct hl_agent_line m;
	char *nl, *line;
	size_t n, i;
	long task;

	memset(parts, 0, sizeof(parts));
	hl_buf_init(&b);
	if (hl_buf_append(&b, data, size) == 0)
		while (b.len > 0 && (nl = memchr(b.p, '\n', b.len)) != NULL) {
			size_t len = (size_t)(nl - b.p);

			if (hl_srun_line(b.p, len, parts, NTASKS, &task, &line,
					 &n) == 1)
				(void)hl_agent_line_parse(line, n, &m);
			hl_buf_consume(&b, len + 1);
		}
	for (i = 0; i < NTASKS; i++)
		hl_buf_close(&parts[i]);
	hl_buf_close(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	node_agent_side(data, size);
	hvdrun_side(data, size);
	return 0;
}
