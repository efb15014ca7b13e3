/* queue.c: requests and handles, the one place where user threads and
 * the background thread meet. User threads queue named requests and wait
 * on handles; the background thread takes the queue each cycle and
 * completes handles. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"

/* lock protects every field, and every handle's done, status and msg. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* the background thread waits here */
	pthread_cond_t done; /* hvd_wait waits here */
	struct hvd__req *incoming;
	struct hvd__req **incoming_tail;
	bool shutdown_req;
	int broken;		   /* 0, or the error that stopped the engine */
	struct hvd__req *inflight; /* every request not yet completed, by
				      its inflight_next link */
} Q = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
	.incoming_tail = &Q.incoming,
};

static __thread char last_error[512];

void hvd__set_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
}

HVD_EXPORT const char *hvd_error_message(void)
{
	return last_error;
}

void hvd__queue_reset(void)
{
	pthread_mutex_lock(&Q.lock);
	Q.incoming = NULL;
	Q.incoming_tail = &Q.incoming;
	Q.shutdown_req = false;
	Q.broken = 0;
	Q.inflight = NULL;
	pthread_mutex_unlock(&Q.lock);
}

int hvd__enqueue(const char *name, const struct hvd__meta *m,
		 const void *sendbuf, void *recvbuf, void **gout,
		 size_t *gcount, uint64_t local_count, void *ready,
		 hvd_handle **out)
{
	struct hvd__req *r, *p;
	struct hvd_handle *h;
	int rc = HVD_OK;

	*out = NULL;
	if (!hvd__g.initialized) {
		hvd__gpu_release(ready);
		return HVD_ENOTINIT;
	}
	if (name == NULL || *name == '\0' || strlen(name) > HVD__NAME_MAX) {
		hvd__set_error("a tensor needs a name of 1 to %d bytes",
			       HVD__NAME_MAX);
		hvd__gpu_release(ready);
		return HVD_EINVAL;
	}
	r = calloc(1, sizeof(*r));
	h = calloc(1, sizeof(*h));
	if (r == NULL || h == NULL || (r->name = strdup(name)) == NULL) {
		free(r);
		free(h);
		hvd__gpu_release(ready);
		return HVD_ENOMEM;
	}
	r->ready = ready;
	r->m = *m;
	r->local_count = local_count;
	r->sendbuf = sendbuf;
	r->recvbuf = recvbuf;
	r->gather_out = gout;
	r->gather_count = gcount;
	r->h = h;
	r->cache = -1;
	r->enqueued_us = hvd__now_us();
	pthread_mutex_lock(&Q.lock);
	if (Q.broken != 0) {
		rc = Q.broken;
	} else if (Q.shutdown_req) {
		rc = HVD_ESHUTDOWN;
	} else {
		/* A name in flight on this rank cannot be used again yet. */
		for (p = Q.inflight; p != NULL; p = p->inflight_next)
			if (strcmp(p->name, name) == 0)
				rc = HVD_EINVAL;
		if (rc == HVD_OK) {
			r->inflight_next = Q.inflight;
			Q.inflight = r;
			*Q.incoming_tail = r;
			Q.incoming_tail = &r->next;
			pthread_cond_signal(&Q.wake);
		}
	}
	pthread_mutex_unlock(&Q.lock);
	if (rc != HVD_OK) {
		if (rc == HVD_EINVAL)
			hvd__set_error(
				"tensor '%s' is already in flight on this rank",
				name);
		hvd__gpu_release(r->ready);
		free(r->name);
		free(r);
		free(h);
		return rc;
	}
	*out = h;
	return HVD_OK;
}

struct hvd__req *hvd__queue_take(double cycle_ms, bool *shutdown)
{
	long long cycle_ns = (long long)(cycle_ms * 1e6);
	struct hvd__req *in;
	struct timespec ts;

	pthread_mutex_lock(&Q.lock);
	if (Q.incoming == NULL && !Q.shutdown_req && cycle_ns > 0) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += cycle_ns % 1000000000;
		ts.tv_sec += cycle_ns / 1000000000 + ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&Q.wake, &Q.lock, &ts);
	}
	in = Q.incoming;
	Q.incoming = NULL;
	Q.incoming_tail = &Q.incoming;
	*shutdown = Q.shutdown_req;
	pthread_mutex_unlock(&Q.lock);
	return in;
}

void hvd__queue_shutdown(void)
{
	pthread_mutex_lock(&Q.lock);
	Q.shutdown_req = true;
	pthread_cond_broadcast(&Q.wake);
	pthread_mutex_unlock(&Q.lock);
}

struct hvd__req *hvd__queue_break(int status)
{
	struct hvd__req *r;

	pthread_mutex_lock(&Q.lock);
	Q.broken = status;
	r = Q.incoming;
	Q.incoming = NULL;
	Q.incoming_tail = &Q.incoming;
	pthread_mutex_unlock(&Q.lock);
	return r;
}

int hvd__queue_broken(void)
{
	int b;

	pthread_mutex_lock(&Q.lock);
	b = Q.broken;
	pthread_mutex_unlock(&Q.lock);
	return b;
}

void hvd__req_finish(struct hvd__req *r, int status, const char *msg)
{
	struct hvd__req **pp;
	char *copy = msg ? strdup(msg) : NULL;

	pthread_mutex_lock(&Q.lock);
	for (pp = &Q.inflight; *pp != NULL; pp = &(*pp)->inflight_next)
		if (*pp == r) {
			*pp = r->inflight_next;
			break;
		}
	r->h->status = status;
	r->h->msg = copy;
	r->h->done = true;
	pthread_cond_broadcast(&Q.done);
	pthread_mutex_unlock(&Q.lock);
	hvd__gpu_release(r->ready);
	free(r->name);
	free(r);
}

void hvd__req_complete(struct hvd__req *r, int status, const char *why)
{
	char msg[768];

	if (status == HVD_OK) {
		hvd__req_finish(r, status, NULL);
		return;
	}
	snprintf(msg, sizeof(msg), "%s '%.200s' failed: %s",
		 hvd__req_names[r->m.type], r->name,
		 why != NULL ? why : hvd_strerror(status));
	hvd__req_finish(r, status, msg);
}

HVD_EXPORT int hvd_wait(hvd_handle *h)
{
	int status;

	if (h == NULL)
		return HVD_EINVAL;
	pthread_mutex_lock(&Q.lock);
	while (!h->done)
		pthread_cond_wait(&Q.done, &Q.lock);
	status = h->status;
	pthread_mutex_unlock(&Q.lock);
	if (h->msg != NULL)
		hvd__set_error("%s", h->msg);
	free(h->msg);
	free(h);
	return status;
}

HVD_EXPORT int hvd_poll(hvd_handle *h)
{
	int done;

	if (h == NULL)
		return HVD_EINVAL;
	pthread_mutex_lock(&Q.lock);
	done = h->done;
	pthread_mutex_unlock(&Q.lock);
	return done;
}
