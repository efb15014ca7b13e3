/* test_worker_env.c: the worker environment's contract
 * (proto/worker_env.h) holds on both sides: every value hvdrun accepts
 * for an option that becomes a worker variable, libhvd's own reader
 * accepts once exported, and one step outside hvdrun's range hvdrun
 * refuses; the man pages document the contract's names, ranges and
 * defaults. */
#include <ctype.h>

#include "proto/worker_env.h"
#include "util/internal.h"
#include "config/opts.h"
#include "tap.h"

/* Set k to text, export it, and read the variable back through libhvd's
 * reader (core/engine/knobs.c). True if both sides take it. */
static bool round_trip(enum hl_key k, const char *text)
{
	struct hl_opts o;
	struct hl_strvec env;
	char *cause = NULL;
	bool ok = false;
	double got;
	int v = wenv_find(hl_keys[k].envvar);

	hl_opts_init(&o);
	hl_strvec_init(&env);
	if (hl_opts_set(&o, k, text, "", NULL, &cause) != HL_OK) {
		printf("#   hvdrun refuses %s for %s: %s\n", text,
		       hl_keys[k].name, cause);
		goto out;
	}
	if (hl_keys[k].export == HL_X_NONE) {
		/* Set by hvdrun itself (HVD_START_TIMEOUT): the value as is. */
		ok = wenv_parse((enum wenv_id)v, text, &got);
		goto out;
	}
	CHECK(hl_opts_export(&o, &env) == HL_OK && env.n == 1);
	if (env.n != 1)
		goto out;
	CHECK(putenv(env.v[0]) == 0);
	ok = hvd__env((enum wenv_id)v, &got) == HVD_OK;
	if (!ok)
		printf("#   libhvd refuses %s (from %s = %s)\n", env.v[0],
		       hl_keys[k].name, text);
	unsetenv(hl_keys[k].envvar);
out:
	hl_strvec_close(&env);
	hl_opts_close(&o);
	free(cause);
	return ok;
}

static bool hvdrun_takes(enum hl_key k, const char *text)
{
	struct hl_opts o;
	char *cause = NULL;
	int rc;

	hl_opts_init(&o);
	rc = hl_opts_set(&o, k, text, "", NULL, &cause);
	hl_opts_close(&o);
	free(cause);
	return rc == HL_OK;
}

/* Every option that becomes a worker variable: its ends, its default,
 * and every choice go through to libhvd; one past either end does not
 * pass hvdrun. */
static void test_hvdrun_values_libhvd_takes(void)
{
	size_t k, i, n = 0;
	char a[64], b[64];

	for (k = 0; k < HL_K_COUNT; k++) {
		const struct hl_keyinfo *ki = &hl_keys[k];
		const char *const *choices;
		double min, max;

		if (ki->envvar == NULL)
			continue;
		n++;
		CHECK(wenv_find(ki->envvar) >= 0);
		if (wenv_find(ki->envvar) < 0) {
			printf("#   %s: not in the contract\n", ki->envvar);
			continue;
		}
		hl_key_range((enum hl_key)k, &min, &max);
		switch (ki->type) {
		case HL_T_INT:
		case HL_T_DOUBLE:
			CHECK(max > min);
			snprintf(a, sizeof(a), "%.15g", min);
			snprintf(b, sizeof(b), "%.15g", max);
			CHECK(round_trip((enum hl_key)k, a));
			CHECK(round_trip((enum hl_key)k, b));
			CHECK(round_trip(
				(enum hl_key)k,
				hl_key_default((enum hl_key)k, a, sizeof(a))));
			snprintf(a, sizeof(a), "%.15g",
				 ki->type == HL_T_INT ? min - 1 : min - 0.001);
			snprintf(b, sizeof(b), "%.15g",
				 ki->type == HL_T_INT ? max + 1 : max * 1.001);
			CHECK(!hvdrun_takes((enum hl_key)k, a));
			CHECK(!hvdrun_takes((enum hl_key)k, b));
			break;
		case HL_T_BOOL:
			CHECK(round_trip((enum hl_key)k, "true"));
			CHECK(round_trip((enum hl_key)k, "false"));
			break;
		case HL_T_ENUM:
			choices = hl_key_choices((enum hl_key)k);
			CHECK(choices != NULL);
			for (i = 0; choices && choices[i] != NULL; i++)
				CHECK(round_trip((enum hl_key)k, choices[i]));
			break;
		default:
			CHECK(round_trip((enum hl_key)k, "/tmp/x.json"));
			break;
		}
	}
	CHECK(n >= 12);
}

/* The variables hvdrun sets for each worker are the ones -x may not set,
 * and libhvd's reader takes the defaults the contract gives. */
static void test_reserved_and_defaults(void)
{
	int v;

	for (v = 0; v < WENV_COUNT; v++) {
		const struct wenv_var *w = &wenv_vars[v];
		double got = -2;

		CHECK(w->name != NULL && w->meaning != NULL);
		CHECK(hl_env_reserved(w->name) == w->per_worker);
		CHECK(wenv_find(w->name) == v);
		if (w->type == WENV_T_CHOICE)
			CHECK(w->choices != NULL && w->choices[0] != NULL);
		if (w->type == WENV_T_INT || w->type == WENV_T_NUMBER)
			CHECK(w->def == WENV_DYNAMIC ||
			      (w->def >= w->min && w->def <= w->max));
		unsetenv(w->name);
		CHECK(hvd__env((enum wenv_id)v, &got) == HVD_OK);
		CHECK(got == w->def);
	}
	CHECK(!hl_env_reserved("HOROVOD_FUSION_THRESHOLD"));
	CHECK(!hl_env_reserved("PATH"));
}

/* libhvd's reader refuses what the contract refuses, naming it. */
static void test_libhvd_refuses(void)
{
	static const struct {
		enum wenv_id v;
		const char *text;
	} bad[] = {
		{WENV_CACHE_CAPACITY, "2000000"},
		{WENV_CACHE_CAPACITY, "-1"},
		{WENV_CACHE_CAPACITY, "12x"},
		{WENV_CYCLE_TIME, "nan"},
		{WENV_CYCLE_TIME, "10001"},
		{WENV_CONTROLLER, "ucx"},
		{WENV_SPIN_US, "1e3"},
		{WENV_FUSION_THRESHOLD, " 1"},
	};
	size_t i;
	double got;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(!wenv_parse(bad[i].v, bad[i].text, &got));
		setenv(wenv_vars[bad[i].v].name, bad[i].text, 1);
		CHECK(hvd__env(bad[i].v, &got) == HVD_EINVAL);
		unsetenv(wenv_vars[bad[i].v].name);
	}
	CHECK(wenv_parse(WENV_CONTROLLER, "MPI", &got) && got == 0);
	CHECK(wenv_parse(WENV_CYCLE_TIME, "0.25", &got) && got == 0.25);
}

static bool word_in(const char *text, const char *word)
{
	size_t n = strlen(word);
	const char *p;

	for (p = strstr(text, word); p != NULL; p = strstr(p + 1, word)) {
		bool before = p > text &&
			      (isupper((unsigned char)p[-1]) || p[-1] == '_');
		bool after = isupper((unsigned char)p[n]) || p[n] == '_';

		if (!before && !after)
			return true;
	}
	return false;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* Every variable of the contract is documented, in hvd(3) (what libhvd
 * reads) or hvdrun(1) (what hvdrun sets). */
static void test_man_names_every_variable(void)
{
	char *lib = slurp("man/hvd.3"), *run = slurp("man/hvdrun.1");
	int v;

	CHECK(lib != NULL && run != NULL);
	for (v = 0; lib && run && v < WENV_COUNT; v++) {
		const char *name = wenv_vars[v].name;

		if (!word_in(lib, name) && !word_in(run, name)) {
			printf("#   %s: in neither hvd(3) nor hvdrun(1)\n",
			       name);
			CHECK(0);
		}
	}
	free(lib);
	free(run);
}

/* hvdrun.ini(5) gives each key of a worker variable as '.BR key "
 * (MIN..MAX, DEFAULT)"', '" (a, b or c; DEFAULT)"' or '" (boolean,
 * DEFAULT)"': the contract's range, choices and default. */
static void test_ini_page_ranges(void)
{
	char *page = slurp("man/hvdrun.ini.5");
	size_t k, i;

	CHECK(page != NULL);
	for (k = 0; page && k < HL_K_COUNT; k++) {
		const struct hl_keyinfo *ki = &hl_keys[k];
		char want[128], head[128], def[64], line[512];
		const char *d =
			hl_key_default((enum hl_key)k, def, sizeof(def));
		const char *const *ch = hl_key_choices((enum hl_key)k);
		const char *p;
		double min, max;

		if (ki->envvar == NULL || ki->type == HL_T_STRING ||
		    ki->type == HL_T_PATH)
			continue;
		snprintf(line, sizeof(line), ".SS [%s]", ki->section);
		snprintf(head, sizeof(head), ".BR %s \" (", ki->name);
		p = strstr(page, line);
		p = p ? strstr(p, head) : NULL;
		if (p == NULL) {
			printf("#   [%s] %s: no line in hvdrun.ini(5)\n",
			       ki->section, ki->name);
			CHECK(0);
			continue;
		}
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
		hl_key_range((enum hl_key)k, &min, &max);
		if (ki->type == HL_T_INT || ki->type == HL_T_DOUBLE)
			snprintf(want, sizeof(want), "%.15g..%.15g, %s)\"", min,
				 max, d);
		else if (ki->type == HL_T_ENUM)
			snprintf(want, sizeof(want), "; %s)\"", d);
		else
			snprintf(want, sizeof(want), "(boolean, %s)\"", d);
		if (strstr(line, want) == NULL) {
			printf("#   hvdrun.ini(5): '%s' lacks '%s'\n", line,
			       want);
			CHECK(0);
		}
		for (i = 0; ki->type == HL_T_ENUM && ch[i] != NULL; i++)
			if (!word_in(line, ch[i]) &&
			    strstr(line, ch[i]) == NULL) {
				printf("#   hvdrun.ini(5): '%s' lacks '%s'\n",
				       line, ch[i]);
				CHECK(0);
			}
	}
	free(page);
}

int main(void)
{
	RUN(test_hvdrun_values_libhvd_takes);
	RUN(test_reserved_and_defaults);
	RUN(test_libhvd_refuses);
	RUN(test_man_names_every_variable);
	RUN(test_ini_page_ranges);
	return tap_done();
}
