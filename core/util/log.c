/* log.c: libhvd's one logging module. To stderr only (a library must not
 * write a program's stdout), level from HOROVOD_LOG_LEVEL, read once; the
 * time first when HOROVOD_LOG_HIDE_TIME is 0 (hvdrun
 * --log-with-timestamp). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/internal.h"

static const char *const level_names[] = {"trace",   "debug", "info",
					  "warning", "error", "fatal"};

static pthread_once_t level_once = PTHREAD_ONCE_INIT;
static enum hvd__log_level level_min = HVD__LOG_WARNING;
static bool with_time; /* set once, with level_min */

/* The level's names are the contract's choices (proto/worker_env.h), in
 * the order of enum hvd__log_level. A bad value cannot fail anything
 * here: it is said once, and the level stays warning. */
static void read_level(void)
{
	const char *v = getenv(wenv_vars[WENV_LOG_LEVEL].name);
	char want[160];
	double i, hide;

	if (wenv_parse(WENV_LOG_HIDE_TIME,
		       getenv(wenv_vars[WENV_LOG_HIDE_TIME].name), &hide))
		with_time = hide == 0;
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

bool hvd__log_on(enum hvd__log_level level)
{
	pthread_once(&level_once, read_level);
	return level >= level_min;
}

void hvd__log(enum hvd__log_level level, const char *func, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!hvd__log_on(level))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One fprintf: stdio locks the stream, so lines do not mix. */
	if (with_time) {
		struct timespec ts;
		struct tm tm;
		char when[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		fprintf(stderr, "[%s.%06ld] libhvd %s: %s: %s\n", when,
			ts.tv_nsec / 1000, level_names[level], func, msg);
		return;
	}
	fprintf(stderr, "libhvd %s: %s: %s\n", level_names[level], func, msg);
}
