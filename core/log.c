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

/* The level's names are the contract's choices (proto/worker_env.h), in
 * the order of enum hvd__log_level. A bad value cannot fail anything
 * here: it is said once, and the level stays warning. */
static void read_level(void)
{
	const char *v = getenv(wenv_vars[WENV_LOG_LEVEL].name);
	char want[160];
	double i;

	if (v == NULL || *v == '\0')
		return;
	if (wenv_parse(WENV_LOG_LEVEL, v, &i)) {
		level_min = (enum hvd__log_level)i;
		return;
	}
	wenv_describe(WENV_LOG_LEVEL, want, sizeof(want));
	fprintf(stderr, "libhvd warning: %s='%s' is not %s; using warning\n",
		wenv_vars[WENV_LOG_LEVEL].name, v, want);
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
