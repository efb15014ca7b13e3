/* records: what hvdrun's agents read (records.h: typed records, a
 * signal's record, hvdrun's version) and what hvdrun reads back from them (the srun
 * agents' escaped lines, the free-port answer). */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "agent/records.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hl_buf b;
	char type, *copy, addr[64], version[64];
	uint32_t proto;
	const char *d;
	size_t len, used;
	int port;

	hl_buf_init(&b);
	if (hl_buf_append(&b, data, size) == 0)
		while (hl_rec_next(&b, &used, &type, &d, &len) == 1) {
			if (type == 'S')
				(void)hl_rec_signal_of(d, len);
			else if (type == 'V')
				(void)hl_rec_version_of(d, len, &proto, version,
							sizeof(version));
			hl_buf_consume(&b, used);
		}
	hl_buf_close(&b);
	copy = malloc(size + 1);
	if (copy != NULL) {
		memcpy(copy, data, size);
		(void)hl_line_unescape(copy, size);
		free(copy);
	}
	(void)hl_free_port_parse((const char *)data, size, &port, addr);
	return 0;
}
