/* config: an INI config file through hvdrun's own handler
 * (hl_config_load: inih and the option table). */
#include <stdlib.h>

#include "config/config.h"
#include "fuzz.h"
#include "config/opts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hl_opts o;
	char *cause = NULL;

	hl_opts_init(&o);
	(void)hl_config_load(fuzz_file(data, size), &o, &cause);
	hl_opts_close(&o);
	free(cause);
	return 0;
}
