/* output.c: output multiplexing. hvdrun is the only writer of its stdout
 * and stderr and writes each prefixed line with one write(), so lines from
 * different workers never mix, whatever the workers' own buffering. */
#include "output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "util.h"

void hl_out_init(struct hl_outstream *os, int rank, int which, int sink_fd,
		 bool timestamps)
{
	os->rank = rank;
	os->which = which;
	os->sink_fd = sink_fd;
	os->tee_fd = -1;
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
	/* A closed stdout (hvdrun | head) must not stop the job. */
	(void)hl_write_all(os->sink_fd, out, plen + n + 1);
	free(out);
}

void hl_out_feed(struct hl_outstream *os, const char *data, size_t n)
{
	size_t start = 0, i;

	if (os->tee_fd >= 0)
		(void)hl_write_all(os->tee_fd, data, n);
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
}
