/* options: hvdrun's command line (cmd_parse_args, then the defaults as
 * hvdrun fills them in). The input is argv after "hvdrun", its arguments
 * separated by NUL bytes; the first byte's low bit picks `hvdrun check`,
 * whose options differ. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "hvdrun.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[MAX_ARGS + 2], **c, *copy, *p, *cause = NULL;
	int argc = 0;
	size_t at;

	if (size == 0)
		return 0;
	copy = fuzz_string(data + 1, size - 1);
	if (copy == NULL)
		return 0;
	memset(&cmd_args, 0, sizeof(cmd_args));
	cmd_args.check = data[0] & 1;
	argv[argc++] = "hvdrun";
	for (p = copy, at = 0; at < size - 1 && argc <= MAX_ARGS;
	     at += strlen(p) + 1, p = copy + at)
		argv[argc++] = p;
	argv[argc] = NULL;
	if (cmd_parse_args(argc, argv, &cause) == 0 &&
	    hl_opts_finish(&cmd_args.opts, &cause) == 0)
		for (c = cmd_args.command; *c != NULL; c++)
			(void)strlen(*c); /* within argv */
	hl_opts_close(&cmd_args.opts);
	free(cause);
	free(copy);
	return 0;
}
