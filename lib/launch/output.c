/* output.c: output multiplexing. hvdrun is the only writer of its stdout
 * and stderr and writes each prefixed line with one write(), so lines from
 * different workers never mix, whatever the workers' own buffering. */
#include "launch/output.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

void hl_out_init(struct hl_outstream *os, int rank, int which, int sink_fd,
		 bool timestamps)
{
	os->rank = rank;
	os->which = which;
	os->sink_fd = sink_fd;
	os->tee_fd = -1;
	os->tee_path = NULL;
	os->timestamps = timestamps;
	os->buf = NULL;
	os->len = 0;
}

static size_t format_prefix(const struct hl_outstream *os, char *p, size_t cap)
{
	size_t n = 0;

	if (os->timestamps) {
		struct timeval tv;
		struct tm tm;

		gettimeofday(&tv, NULL);
		gmtime_r(&tv.tv_sec, &tm);
		n = strftime(p, cap, "%Y-%m-%dT%H:%M:%S", &tm);
		n += (size_t)snprintf(p + n, cap - n, ".%03ldZ",
				      (long)tv.tv_usec / 1000);
	}
	n += (size_t)snprintf(p + n, cap - n, "[%d]<%s>:", os->rank,
			      os->which == 1 ? "stdout" : "stderr");
	return n;
}

/* The first error writing hvdrun's stdout (1) or stderr (2). */
static int sink_err[3];
static bool sink_told;

/* All of buf to hvdrun's own output, waiting when it is a non-blocking
 * fd that is full; a failure is remembered and ends that sink. */
static void write_sink(int fd, const char *buf, size_t len)
{
	bool ours = fd == 1 || fd == 2;

	if (ours && sink_err[fd] != 0)
		return;
	while (len > 0) {
		ssize_t w = write(fd, buf, len);

		if (w > 0) {
			buf += w;
			len -= (size_t)w;
		} else if (w < 0 && errno == EINTR) {
			continue;
		} else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pf = {fd, POLLOUT, 0};

			(void)poll(&pf, 1, -1);
		} else {
			if (ours)
				sink_err[fd] = w < 0 ? errno : EIO;
			return;
		}
	}
}

bool hl_out_lost(int *which, int *err)
{
	int fd;

	for (fd = 1; fd <= 2 && !sink_told; fd++)
		if (sink_err[fd] != 0) {
			sink_told = true;
			*which = fd;
			*err = sink_err[fd];
			return true;
		}
	return false;
}

/* Write prefix + line + '\n' in one write. */
static void emit(const struct hl_outstream *os, const char *line, size_t n)
{
	char prefix[96];
	size_t plen = format_prefix(os, prefix, sizeof(prefix));
	char *out = malloc(plen + n + 1);

	if (out == NULL)
		return;
	memcpy(out, prefix, plen);
	memcpy(out + plen, line, n);
	out[plen + n] = '\n';
	write_sink(os->sink_fd, out, plen + n + 1);
	free(out);
}

void hl_out_feed(struct hl_outstream *os, const char *data, size_t n)
{
	size_t start = 0, i;

	if (os->tee_fd >= 0 && hl_write_all(os->tee_fd, data, n) != HL_OK) {
		int e = errno;
		char *msg = hl_asprintf(
			"hvdrun: cannot write '%s': %s; rank %d's %s goes on "
			"to hvdrun's own %s only\n",
			os->tee_path ? os->tee_path : "?", strerror(e),
			os->rank, os->which == 1 ? "stdout" : "stderr",
			os->which == 1 ? "stdout" : "stderr");

		if (msg != NULL)
			write_sink(2, msg, strlen(msg));
		free(msg);
		close(os->tee_fd);
		os->tee_fd = -1;
	}
	/* Lines complete within data need no copy unless a part is buffered. */
	for (i = 0; i < n; i++) {
		if (data[i] != '\n')
			continue;
		if (os->len > 0) {
			char *b = realloc(os->buf, os->len + (i - start));

			if (b != NULL) {
				memcpy(b + os->len, data + start, i - start);
				emit(os, b, os->len + (i - start));
				os->buf = b;
			}
			os->len = 0;
		} else {
			emit(os, data + start, i - start);
		}
		start = i + 1;
	}
	while (start < n) {
		size_t take = n - start;
		char *b;

		if (os->len + take > HL_OUT_LINE_MAX)
			take = HL_OUT_LINE_MAX - os->len;
		b = realloc(os->buf, os->len + take);
		if (b == NULL)
			return;
		os->buf = b;
		memcpy(os->buf + os->len, data + start, take);
		os->len += take;
		start += take;
		if (os->len == HL_OUT_LINE_MAX) {
			emit(os, os->buf, os->len);
			os->len = 0;
		}
	}
}

void hl_out_flush(struct hl_outstream *os)
{
	if (os->len > 0)
		emit(os, os->buf, os->len);
	os->len = 0;
}

void hl_out_close(struct hl_outstream *os)
{
	hl_out_flush(os);
	free(os->buf);
	os->buf = NULL;
	free(os->tee_path);
	os->tee_path = NULL;
}

int hl_out_open_files(struct hl_outstream os[2], const char *dir, int rank,
		      int size, char **cause)
{
	static const char *const names[2] = {"stdout", "stderr"};
	int width = snprintf(NULL, 0, "%d", size > 1 ? size - 1 : 0);
	char *sub = hl_asprintf("%s/rank.%0*d", dir, width, rank);
	int j, rc = HL_OK;

	if (sub == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	if (mkdir(dir, 0777) != 0 && errno != EEXIST)
		rc = hl_fail(cause, HL_EINVAL, "cannot create '%s': %s", dir,
			     strerror(errno));
	else if (mkdir(sub, 0777) != 0 && errno != EEXIST)
		rc = hl_fail(cause, HL_EINVAL, "cannot create '%s': %s", sub,
			     strerror(errno));
	for (j = 0; j < 2 && rc == HL_OK; j++) {
		char *file = hl_asprintf("%s/%s", sub, names[j]);

		if (file == NULL) {
			rc = hl_fail(cause, HL_ENOMEM, "out of memory");
			break;
		}
		os[j].tee_fd = open(
			file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		if (os[j].tee_fd < 0) {
			rc = hl_fail(cause, HL_EINVAL, "cannot create '%s': %s",
				     file, strerror(errno));
			free(file);
		} else {
			os[j].tee_path = file;
		}
	}
	free(sub);
	return rc;
}
