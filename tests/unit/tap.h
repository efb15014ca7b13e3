/* tap.h: unit tests speak TAP, like the bats suites, so tests/run can
 * count every suite the same way. CHECK records a failure and goes on. */
#ifndef TAP_H
#define TAP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int tap_n, tap_failed, tap_case_failed;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("#   %s:%d: CHECK(%s) failed\n", __FILE__,      \
			       __LINE__, #cond);                               \
			tap_case_failed = 1;                                   \
		}                                                              \
	} while (0)

#define CHECK_STR(a, b)                                                        \
	do {                                                                   \
		const char *a_ = (a), *b_ = (b);                               \
		if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) {         \
			printf("#   %s:%d: '%s' != '%s'\n", __FILE__,          \
			       __LINE__, a_ ? a_ : "(null)",                   \
			       b_ ? b_ : "(null)");                            \
			tap_case_failed = 1;                                   \
		}                                                              \
	} while (0)

/* The cause contains the text: errors must name what was wrong. */
#define CHECK_HAS(hay, needle)                                                 \
	do {                                                                   \
		const char *h_ = (hay);                                        \
		if (h_ == NULL || strstr(h_, (needle)) == NULL) {              \
			printf("#   %s:%d: '%s' does not contain '%s'\n",      \
			       __FILE__, __LINE__, h_ ? h_ : "(null)",         \
			       (needle));                                      \
			tap_case_failed = 1;                                   \
		}                                                              \
	} while (0)

static inline void tap_run(const char *name, void (*fn)(void))
{
	tap_case_failed = 0;
	fn();
	tap_n++;
	if (tap_case_failed)
		tap_failed++;
	printf("%s %d - %s\n", tap_case_failed ? "not ok" : "ok", tap_n, name);
	fflush(stdout);
}

#define RUN(fn) tap_run(#fn, fn)

/* A temporary file holding text; the caller unlinks and frees it. */
static inline char *tap_write_tmp(const char *text)
{
	char *path = strdup("/tmp/hvdrun-test-XXXXXX");
	int fd = path ? mkstemp(path) : -1;
	size_t len = strlen(text);

	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(write(fd, text, len) == (ssize_t)len);
		close(fd);
	}
	return path;
}

/* Bad files: each text, written to a file and given to load, must fail
 * with code, the cause naming the file and holding expect. */
struct tap_bad_file {
	const char *text, *expect;
};

static inline void tap_bad_files(const struct tap_bad_file *bad, size_t n,
				 int (*load)(const char *path, char **cause),
				 int code)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char *path = tap_write_tmp(bad[i].text);
		char *cause = NULL;

		CHECK(load(path, &cause) == code);
		CHECK_HAS(cause, path);
		CHECK_HAS(cause, bad[i].expect);
		unlink(path);
		free(path);
		free(cause);
	}
}

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
