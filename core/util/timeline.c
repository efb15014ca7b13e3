/* timeline.c: see timeline.h. Each tensor is a "thread" of the trace
 * (named by a metadata event the first time it appears), so a tensor's
 * negotiation, fusion copies and ring phases line up in one row. */
#include "util/timeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/internal.h"

struct hvd__timeline {
	FILE *f;
	int rank;
	long long t0;
	char **names; /* tid - 1 -> tensor name */
	size_t nnames;
};

/* Append one event and the closing bracket, then step back over it. */
static void emit(struct hvd__timeline *tl, const char *json)
{
	long pos = ftell(tl->f);

	fprintf(tl->f, "%s%s\n]\n", pos > 2 ? ",\n" : "", json);
	fflush(tl->f);
	fseek(tl->f, -3, SEEK_CUR);
}

/* JSON string body of s (names are the user's). */
static void quote(const char *s, char *out, size_t cap)
{
	size_t o = 0;

	for (; *s && o + 7 < cap; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c < 0x20) {
			o += (size_t)snprintf(out + o, cap - o, "\\u%04x", c);
		} else {
			out[o++] = (char)c;
		}
	}
	out[o] = '\0';
}

static size_t tid_of(struct hvd__timeline *tl, const char *name)
{
	char q[512], ev[700];
	char **v;
	size_t i;

	for (i = 0; i < tl->nnames; i++)
		if (strcmp(tl->names[i], name) == 0)
			return i + 1;
	v = realloc(tl->names, (tl->nnames + 1) * sizeof(*v));
	if (v == NULL)
		return 0;
	tl->names = v;
	tl->names[tl->nnames] = strdup(name);
	tl->nnames++;
	quote(name, q, sizeof(q));
	snprintf(
		ev, sizeof(ev),
		"{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%zu,\"args\":{\"name\":\"%s\"}}",
		tl->rank, tl->nnames, q);
	emit(tl, ev);
	return tl->nnames;
}

struct hvd__timeline *hvd__timeline_open(const char *path, int rank)
{
	struct hvd__timeline *tl = calloc(1, sizeof(*tl));

	if (tl == NULL)
		return NULL;
	tl->f = fopen(path, "w");
	if (tl->f == NULL) {
		int err = errno;

		hvd__error("cannot write the timeline '%s': %s", path,
			   strerror(err));
		free(tl);
		errno = err;
		return NULL;
	}
	tl->rank = rank;
	tl->t0 = hvd__now_us();
	fputs("[\n]\n", tl->f);
	fflush(tl->f);
	fseek(tl->f, 2, SEEK_SET);
	return tl;
}

void hvd__timeline_span_args(struct hvd__timeline *tl, const char *name,
			     const char *activity, long long start_us,
			     long long dur_us, const char *args)
{
	char ev[512];
	size_t tid;

	if (tl == NULL)
		return;
	tid = tid_of(tl, name);
	snprintf(
		ev, sizeof(ev),
		"{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%zu,\"ts\":%lld,\"dur\":%lld%s%s}",
		activity, tl->rank, tid, start_us - tl->t0,
		dur_us > 0 ? dur_us : 0, args != NULL ? ",\"args\":" : "",
		args != NULL ? args : "");
	emit(tl, ev);
}

void hvd__timeline_span(struct hvd__timeline *tl, const char *name,
			const char *activity, long long start_us,
			long long dur_us)
{
	hvd__timeline_span_args(tl, name, activity, start_us, dur_us, NULL);
}

void hvd__timeline_tick(struct hvd__timeline *tl, const char *name, int rank,
			long long ts_us)
{
	char what[16];

	if (tl == NULL)
		return;
	snprintf(what, sizeof(what), "%d", rank);
	hvd__timeline_span(tl, name, what, ts_us, 0);
}

void hvd__timeline_mark(struct hvd__timeline *tl, const char *what,
			long long ts_us)
{
	char ev[256];

	if (tl == NULL)
		return;
	snprintf(
		ev, sizeof(ev),
		"{\"name\":\"%s\",\"ph\":\"i\",\"s\":\"g\",\"pid\":%d,\"tid\":0,\"ts\":%lld}",
		what, tl->rank, ts_us - tl->t0);
	emit(tl, ev);
}

void hvd__timeline_close(struct hvd__timeline *tl)
{
	size_t i;

	if (tl == NULL)
		return;
	fclose(tl->f);
	for (i = 0; i < tl->nnames; i++)
		free(tl->names[i]);
	free(tl->names);
	free(tl);
}
