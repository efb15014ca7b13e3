/* util/env.c: the one reader of the worker environment: every variable
 * through its contract in proto/worker_env.h (Horovod's names, units and
 * defaults, and libhvd's own HVD_*). */
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "util/internal.h"

/* Rank 0's text of a job-wide setting once the ranks agreed on it
 * (hvd__knobs_agree): set, text NULL where rank 0 has none. */
static struct {
	bool set;
	char *text;
} agreed[WENV_COUNT];

const char *hvd__env_text(enum wenv_id v)
{
	const char *text =
		agreed[v].set ? agreed[v].text : getenv(wenv_vars[v].name);

	return text != NULL && *text != '\0' ? text : NULL;
}

int hvd__env_agree(enum wenv_id v, const char *text)
{
	char *copy = text != NULL ? strdup(text) : NULL;

	if (text != NULL && copy == NULL)
		return HVD_ENOMEM;
	free(agreed[v].text);
	agreed[v].set = true;
	agreed[v].text = copy;
	return HVD_OK;
}

/* hvd__transport_timeout_ms's value, read once a runtime (every cycle
 * and collective asks for it); 0: read at the next call. */
static _Atomic int timeout_ms;

void hvd__env_agree_clear(void)
{
	int v;

	atomic_store(&timeout_ms, 0);
	for (v = 0; v < WENV_COUNT; v++) {
		free(agreed[v].text);
		agreed[v].set = false;
		agreed[v].text = NULL;
	}
}

int hvd__env(enum wenv_id v, double *out)
{
	const char *text = hvd__env_text(v);
	char want[160];

	if (text == NULL) {
		*out = wenv_vars[v].def;
		return HVD_OK;
	}
	if (wenv_parse(v, text, out))
		return HVD_OK;
	wenv_describe(v, want, sizeof(want));
	hvd__error("%s='%s' is not %s", wenv_vars[v].name, text, want);
	return HVD_EINVAL;
}

int hvd__env_long(enum wenv_id v, long *out)
{
	double d;
	int rc = hvd__env(v, &d);

	if (rc == HVD_OK)
		*out = (long)d;
	return rc;
}

int hvd__transport_timeout_ms(void)
{
	int got = atomic_load(&timeout_ms);
	long ms, s;

	if (got > 0)
		return got;
	/* horovodrun's variable where libhvd's own is unset (a script that
	 * sets it before hvd_init, or -x). */
	if (hvd__env_text(WENV_TRANSPORT_TIMEOUT_MS) == NULL &&
	    hvd__env_text(WENV_GLOO_TIMEOUT_SECONDS) != NULL &&
	    hvd__env_long(WENV_GLOO_TIMEOUT_SECONDS, &s) == HVD_OK)
		ms = s * 1000;
	else if (hvd__env_long(WENV_TRANSPORT_TIMEOUT_MS, &ms) != HVD_OK)
		ms = (long)wenv_vars[WENV_TRANSPORT_TIMEOUT_MS].def;
	atomic_store(&timeout_ms, (int)ms);
	return (int)ms;
}

int hvd__start_timeout_ms(void)
{
	long s;

	if (hvd__env_long(WENV_START_TIMEOUT, &s) != HVD_OK)
		s = (long)wenv_vars[WENV_START_TIMEOUT].def;
	return s > INT_MAX / 1000 ? INT_MAX : (int)(s * 1000);
}
