/* spawn/sessions.c: see sessions.h. */
#include "spawn/sessions.h"

#include <stdlib.h>

#include "util/util.h"

int hl_sessions_init(struct hl_sessions *ss, size_t nw)
{
	*ss = (struct hl_sessions){0};
	ss->at = calloc(nw > 0 ? nw : 1, sizeof(*ss->at));
	ss->nw = nw;
	return ss->at != NULL ? HL_OK : HL_ENOMEM;
}

int hl_sessions_add(struct hl_sessions *ss, void *s)
{
	if (ss->n == ss->cap) {
		size_t cap = ss->cap ? 2 * ss->cap : 8;
		void **v = realloc(ss->v, cap * sizeof(*v));

		if (v == NULL)
			return HL_ENOMEM;
		ss->v = v;
		ss->cap = cap;
	}
	ss->v[ss->n++] = s;
	return HL_OK;
}

void hl_sessions_started(struct hl_sessions *ss, int id, void *s)
{
	if (id >= 0 && (size_t)id < ss->nw)
		ss->at[id] = s;
}

void hl_sessions_sweep(struct hl_sessions *ss, bool (*ended)(void *s),
		       void (*free_fn)(void *s))
{
	size_t i, w, k = 0;

	for (i = 0; i < ss->n; i++) {
		void *s = ss->v[i];

		if (!ended(s)) {
			ss->v[k++] = s;
			continue;
		}
		for (w = 0; w < ss->nw; w++)
			if (ss->at[w] == s)
				ss->at[w] = NULL;
		free_fn(s);
	}
	ss->n = k;
}

void hl_sessions_close(struct hl_sessions *ss, void (*free_fn)(void *s))
{
	size_t i;

	for (i = 0; i < ss->n; i++)
		free_fn(ss->v[i]);
	free(ss->v);
	free(ss->at);
	*ss = (struct hl_sessions){0};
}
