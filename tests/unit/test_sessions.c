/* test_sessions.c: the remote spawners' bookkeeping of what they opened
 * (lib/spawn/sessions.h): sessions in order, each worker's latest, and
 * the ended ones freed and forgotten. */
#include <stdbool.h>
#include <stdlib.h>

#include "spawn/sessions.h"
#include "tap.h"
#include "util/util.h"

struct fake {
	int id;
	bool ended;
};

static int freed[16], nfreed;

static bool fake_ended(void *s)
{
	return ((struct fake *)s)->ended;
}

static void fake_free(void *s)
{
	freed[nfreed++] = ((struct fake *)s)->id;
	free(s);
}

static struct fake *fake_new(int id)
{
	struct fake *f = calloc(1, sizeof(*f));

	if (f != NULL)
		f->id = id;
	return f;
}

static void test_sweep_keeps_order_and_forgets(void)
{
	struct hl_sessions ss;
	struct fake *a = fake_new(1), *b = fake_new(2), *c = fake_new(3);

	nfreed = 0;
	CHECK(hl_sessions_init(&ss, 4) == HL_OK);
	CHECK(hl_sessions_add(&ss, a) == HL_OK);
	CHECK(hl_sessions_add(&ss, b) == HL_OK);
	CHECK(hl_sessions_add(&ss, c) == HL_OK);
	hl_sessions_started(&ss, 0, a);
	hl_sessions_started(&ss, 1, b);
	hl_sessions_started(&ss, 2, b);
	hl_sessions_started(&ss, 3, c);
	hl_sessions_started(&ss, 9, c); /* out of range: ignored */
	b->ended = true;
	hl_sessions_sweep(&ss, fake_ended, fake_free);
	CHECK(nfreed == 1 && freed[0] == 2);
	CHECK(ss.n == 2 && ss.v[0] == a && ss.v[1] == c);
	CHECK(ss.at[0] == a && ss.at[1] == NULL && ss.at[2] == NULL &&
	      ss.at[3] == c);
	/* A worker started again in a later session is that one's. */
	hl_sessions_started(&ss, 0, c);
	a->ended = true;
	hl_sessions_sweep(&ss, fake_ended, fake_free);
	CHECK(nfreed == 2 && freed[1] == 1);
	CHECK(ss.n == 1 && ss.v[0] == c && ss.at[0] == c);
	hl_sessions_close(&ss, fake_free);
	CHECK(nfreed == 3 && freed[2] == 3);
	CHECK(ss.n == 0 && ss.v == NULL && ss.at == NULL);
}

static void test_grows(void)
{
	struct hl_sessions ss;
	int i, ok = 1;

	nfreed = 0;
	CHECK(hl_sessions_init(&ss, 0) == HL_OK);
	for (i = 0; i < 16; i++) {
		struct fake *f = fake_new(i);

		ok &= f != NULL && hl_sessions_add(&ss, f) == HL_OK;
	}
	CHECK(ok && ss.n == 16 && ss.cap >= 16);
	for (i = 0; i < 16; i++)
		ok &= ((struct fake *)ss.v[i])->id == i;
	CHECK(ok);
	hl_sessions_close(&ss, fake_free);
	CHECK(nfreed == 16);
}

int main(void)
{
	RUN(test_sweep_keeps_order_and_forgets);
	RUN(test_grows);
	return tap_done();
}
