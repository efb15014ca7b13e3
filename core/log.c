/* log.c: libhvd's one logging module. To stderr only (a library must not
 * write a program's stdout), level from HOROVOD_LOG_LEVEL, read once. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

static const char *const level_names[] = {"trace",   "debug", "info",
					  "warning", "error", "fatal"};

static pthread_once_t level_once = PTHREAD_ONCE_INIT;
static enum hvd__log_level level_min = HVD__LOG_WARNING;

static void read_level(void)
{
	const char *v = getenv("HOROVOD_LOG_LEVEL");
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcasecmp(v, level_names[i]) == 0)
			level_min = (enum hvd__log_level)i;
}

void hvd__log(enum hvd__log_level level, const char *func, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	pthread_once(&level_once, read_level);
	if (level < level_min)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One fprintf: stdio locks the stream, so lines do not mix. */
	fprintf(stderr, "libhvd %s: %s: %s\n", level_names[level], func, msg);
}
