/* timeline.h: HOROVOD_TIMELINE, a Chrome trace-event JSON file (Perfetto
 * and chrome://tracing open it), written by rank 0's background thread.
 * The file is valid JSON after every event: each event is written before
 * a closing "]" that the next event overwrites. */
#ifndef HVD_TIMELINE_H
#define HVD_TIMELINE_H

#include <stdbool.h>

struct hvd__timeline;

struct hvd__timeline *hvd__timeline_open(const char *path, int rank);
/* A complete event: activity of tensor `name` from start_us for dur_us. */
void hvd__timeline_span(struct hvd__timeline *tl, const char *name,
			const char *activity, long long start_us,
			long long dur_us);
/* The same with args, a JSON object's text (NULL: none). */
void hvd__timeline_span_args(struct hvd__timeline *tl, const char *name,
			     const char *activity, long long start_us,
			     long long dur_us, const char *args);
/* The coordinator's tick in tensor `name`'s row: rank `rank`'s request
 * reached it at ts_us (Horovod's: a zero-length event named by the rank,
 * under the tensor's negotiation). */
void hvd__timeline_tick(struct hvd__timeline *tl, const char *name, int rank,
			long long ts_us);
/* An instant marker (a cycle start). */
void hvd__timeline_mark(struct hvd__timeline *tl, const char *what,
			long long ts_us);
void hvd__timeline_close(struct hvd__timeline *tl);

#endif
