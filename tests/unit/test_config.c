/* test_config.c: the option table and the INI config file: values,
 * ranges, precedence, and every malformed form with its file:line. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "job/env.h"
#include "tap.h"

static void test_set_values(void)
{
	struct hl_opts o;
	char *cause = NULL;

	hl_opts_init(&o);
	CHECK(hl_opts_set(&o, HL_K_NP, "8", "", NULL, &cause) == HL_OK);
	CHECK(o.v[HL_K_NP].i == 8);
	CHECK(hl_opts_set(&o, HL_K_NP, "16", "", NULL, &cause) == HL_OK);
	CHECK(o.v[HL_K_NP].i == 8); /* the first source wins */
	CHECK(hl_opts_set(&o, HL_K_CYCLE_TIME_MS, "2.5", "", NULL, &cause) ==
	      HL_OK);
	CHECK(o.v[HL_K_CYCLE_TIME_MS].d == 2.5);
	CHECK(hl_opts_set(&o, HL_K_LOG_LEVEL, "debug", "", NULL, &cause) ==
	      HL_OK);
	CHECK(hl_opts_set(&o, HL_K_STALL_CHECK, "off", "", NULL, &cause) ==
	      HL_OK);
	CHECK(!o.v[HL_K_STALL_CHECK].b);
	/* A range: two words, or two values with a comma. */
	CHECK(hl_opts_set(&o, HL_K_COOLDOWN, "10, 100", "", NULL, &cause) ==
	      HL_OK);
	CHECK(o.v[HL_K_COOLDOWN].i == 10 && o.v[HL_K_COOLDOWN].d == 100);
	/* How each was given, for messages. */
	CHECK_STR(hl_opt_said(&o, HL_K_NP), "--num-proc 8");
	CHECK(hl_opts_said_as(&o, HL_K_NP, "-n", "8") == HL_OK);
	CHECK_STR(hl_opt_said(&o, HL_K_NP), "-n 8");
	CHECK(hl_opts_said_as(&o, HL_K_STALL_CHECK, "--no-stall-check", NULL) ==
	      HL_OK);
	CHECK_STR(hl_opt_said(&o, HL_K_STALL_CHECK), "--no-stall-check");
	CHECK(hl_opts_set(&o, HL_K_MIN_NP, "2", "job.ini:7: ", NULL, &cause) ==
	      HL_OK);
	CHECK_STR(hl_opt_said(&o, HL_K_MIN_NP), "min_np = 2 (job.ini:7)");
	/* A name of several sections says its own. */
	CHECK(hl_opts_set(&o, HL_K_MPI, "yes", "job.ini:9: ", NULL, &cause) ==
	      HL_OK);
	CHECK_STR(hl_opt_said(&o, HL_K_MPI),
		  "enabled = yes in [mpi] (job.ini:9)");
	CHECK_STR(hl_opt_said(&o, HL_K_MAX_NP), "--max-np");
	{
		/* Two named in one message: each its own. */
		char two[128];

		snprintf(two, sizeof(two), "%s %s",
			 hl_opt_said(&o, HL_K_MAX_NP),
			 hl_opt_said(&o, HL_K_CYCLE_TIME_MS));
		CHECK_STR(two, "--max-np --cycle-time-ms 2.5");
	}
	CHECK(hl_opts_finish(&o, &cause) == HL_OK);
	CHECK(o.v[HL_K_START_TIMEOUT].i == 30 && !o.v[HL_K_START_TIMEOUT].set);
	CHECK(o.v[HL_K_FUSION_THRESHOLD_MB].i == 128);
	hl_opts_close(&o);
	free(cause);
}

static void test_bad_values(void)
{
	static const struct {
		enum hl_key k;
		const char *v, *expect;
	} bad[] = {
		{HL_K_NP, "0",
		 "bad value '0' for --num-proc (want an integer from 1"},
		{HL_K_NP, "-3", "'-3'"},
		{HL_K_NP, "4x", "'4x'"},
		{HL_K_NP, " 4", "' 4'"},
		{HL_K_NP, "", "''"},
		{HL_K_NP, "99999999999999999999", "'99999999999999999999'"},
		{HL_K_CYCLE_TIME_MS, "nan", "want a number from 0 to 10000"},
		{HL_K_CYCLE_TIME_MS, "-1", "'-1'"},
		{HL_K_CACHE_CAPACITY, "lots", "--cache-capacity"},
		{HL_K_LOG_LEVEL, "loud",
		 "want one of trace, debug, info, warning, error, fatal"},
		{HL_K_PREFIX_TIMESTAMP, "maybe", "want true or false"},
		{HL_K_HOSTS, "a,,b", "empty entry in host list 'a,,b'"},
		{HL_K_SSH_PORT, "65536", "--ssh-port"},
		{HL_K_SSH_USER, "a b", "bad value 'a b'"},
		{HL_K_SSH_HOST_KEY_CHECKING, "ask",
		 "one of yes, accept-new, no"},
		{HL_K_TIMELINE_FILENAME, "", "bad value ''"},
		{HL_K_COOLDOWN, "9 5",
		 "want two integers MIN MAX, 0 <= MIN <= MAX <= 86400"},
		{HL_K_COOLDOWN, "5", "bad value '5'"},
		{HL_K_COOLDOWN, "1 2 3", "bad value '1 2 3'"},
		{HL_K_COOLDOWN, "-1 2", "bad value '-1 2'"},
		{HL_K_COOLDOWN, "1 99999", "bad value '1 99999'"},
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hl_opts o;
		char *cause = NULL;

		hl_opts_init(&o);
		CHECK(hl_opts_set(&o, bad[i].k, bad[i].v, "", NULL, &cause) ==
		      HL_EINVAL);
		CHECK_HAS(cause, bad[i].expect);
		CHECK(!o.v[bad[i].k].set);
		hl_opts_close(&o);
		free(cause);
	}
}

static void test_env_specs(void)
{
	struct hl_opts o;
	char *cause = NULL;

	hl_opts_init(&o);
	CHECK(hl_opts_add_env(&o, "FOO=a=b c", "", &cause) == HL_OK);
	CHECK(hl_opts_add_env(&o, "BAR", "", &cause) == HL_OK);
	CHECK(hl_opts_add_env(&o, "EMPTY=", "", &cause) == HL_OK);
	CHECK(hl_opts_add_env(&o, "FOO=later", "", &cause) == HL_OK);
	CHECK(o.nenv == 3);
	CHECK_STR(o.env[0].value, "a=b c");
	CHECK(o.env[1].value == NULL);
	CHECK_STR(o.env[2].value, "");
	CHECK(hl_opts_add_env(&o, "1X=2", "", &cause) == HL_EINVAL);
	CHECK_HAS(cause, "'-x 1X=2'");
	CHECK(hl_opts_add_env(&o, "=2", "", &cause) == HL_EINVAL);
	CHECK(hl_opts_add_env(&o, "A-B", "", &cause) == HL_EINVAL);
	CHECK_HAS(cause, "'A-B'");
	CHECK(hl_opts_add_env(&o, "HOROVOD_RANK=3", "", &cause) == HL_EINVAL);
	CHECK_HAS(cause, "HOROVOD_RANK is set by hvdrun");
	CHECK(hl_opts_add_env(&o, "MASTER_PORT", "", &cause) == HL_EINVAL);
	hl_opts_close(&o);
	free(cause);
}

static void test_export(void)
{
	struct hl_opts o;
	struct hl_strvec env;
	char *cause = NULL;

	hl_opts_init(&o);
	hl_strvec_init(&env);
	CHECK(hl_opts_set(&o, HL_K_FUSION_THRESHOLD_MB, "64", "", NULL,
			  &cause) == HL_OK);
	CHECK(hl_opts_set(&o, HL_K_CYCLE_TIME_MS, "0.5", "", NULL, &cause) ==
	      HL_OK);
	CHECK(hl_opts_set(&o, HL_K_STALL_CHECK, "false", "", NULL, &cause) ==
	      HL_OK);
	CHECK(hl_opts_set(&o, HL_K_TIMELINE_MARK_CYCLES, "true", "", NULL,
			  &cause) == HL_OK);
	CHECK(hl_opts_set(&o, HL_K_LOG_LEVEL, "info", "", NULL, &cause) ==
	      HL_OK);
	CHECK(hl_opts_finish(&o, &cause) == HL_OK);
	CHECK(hl_opts_export(&o, &env) == HL_OK);
	/* Only what was set is exported: defaults stay libhvd's. */
	CHECK(env.n == 5);
	CHECK_STR(env.v[0], "HOROVOD_FUSION_THRESHOLD=67108864");
	CHECK_STR(env.v[1], "HOROVOD_CYCLE_TIME=0.5");
	CHECK_STR(env.v[2], "HOROVOD_TIMELINE_MARK_CYCLES=1");
	CHECK_STR(env.v[3], "HOROVOD_STALL_CHECK_DISABLE=1");
	CHECK_STR(env.v[4], "HOROVOD_LOG_LEVEL=info");
	hl_strvec_close(&env);
	hl_opts_close(&o);
	free(cause);
}

static void test_config_valid(void)
{
	char *path = tap_write_tmp(
		"; hvdrun config\n"
		"[job]\n"
		"np = 4\n"
		"  hostfile = hosts.txt   ; relative to this file\n"
		"verbose = yes\n"
		"[env]\n"
		"NCCL_DEBUG = INFO\n"
		"EMPTY =\n"
		"[tuning]\n"
		"fusion_threshold_mb=32\n"
		"cycle_time_ms : 2\n"
		"[stall_check]\n"
		"enabled = false\n"
		"[ssh]\n"
		"port = 2222\n"
		"host_key_checking = no\n"
		"[job]\n"
		"start_timeout = 10\n");
	struct hl_opts o;
	char *cause = NULL;

	hl_opts_init(&o);
	/* The command line was read first: its -np stays. */
	CHECK(hl_opts_set(&o, HL_K_NP, "2", "", NULL, &cause) == HL_OK);
	CHECK(hl_config_load(path, &o, &cause) == HL_OK);
	CHECK(o.v[HL_K_NP].i == 2);
	CHECK_STR(o.v[HL_K_HOSTFILE].s, "/tmp/hosts.txt");
	CHECK(o.v[HL_K_VERBOSE].b);
	CHECK(o.v[HL_K_FUSION_THRESHOLD_MB].i == 32);
	CHECK(o.v[HL_K_CYCLE_TIME_MS].d == 2.0);
	CHECK(!o.v[HL_K_STALL_CHECK].b);
	CHECK(o.v[HL_K_SSH_PORT].i == 2222);
	CHECK(o.v[HL_K_START_TIMEOUT].i == 10);
	CHECK(o.nenv == 2);
	CHECK_STR(o.env[0].name, "NCCL_DEBUG");
	CHECK_STR(o.env[0].value, "INFO");
	CHECK_STR(o.env[1].value, "");
	hl_opts_close(&o);
	unlink(path);
	free(path);
	free(cause);
}

static int load_config(const char *path, char **cause)
{
	struct hl_opts o;
	int rc;

	hl_opts_init(&o);
	rc = hl_config_load(path, &o, cause);
	hl_opts_close(&o);
	return rc;
}

static void test_config_malformed(void)
{
	char longline[400];
	static const struct tap_bad_file bad[] = {
		{"[job]\nnp = many\n",
		 ":2: bad value 'many' for 'np' in [job]"},
		{"[job]\nnp = 0\n", ":2: bad value '0'"},
		{"[jobs]\nnp = 2\n",
		 ":1: unknown section '[jobs]' (want job, elastic, "},
		{"[netwrk]\n", "(want job, elastic, env, ssh, network, mpi, "},
		{"[job]\n[empty_unknown]\n",
		 ":2: unknown section '[empty_unknown]'"},
		{"[job]\nnpp = 2\n", ":2: unknown key 'npp' in [job]"},
		{"np = 2\n", ":1: 'np' is outside any [section]"},
		{"[job]\nnp 2\n", ":2: syntax error: 'np 2'"},
		{"[job\nnp = 2\n", ":1: syntax error: '[job'"},
		{"[job]\nnp = 2\nnp = 3\n",
		 ":3: 'np' in [job] is set twice (first at line 2)"},
		{"[job]\nhosts = a:2,,b\n",
		 ":2: empty entry in host list 'a:2,,b'"},
		{"[tuning]\ncycle_time_ms = fast\n",
		 ":2: bad value 'fast' for 'cycle_time_ms' in [tuning]"},
		{"[logging]\nlevel = loud\n",
		 ":2: bad value 'loud' for 'level' in [logging]"},
		{"[ssh]\nport = 0\n", ":2: bad value '0' for 'port' in [ssh]"},
		{"[ssh]\nhost_key_checking = maybe\n", ":2: bad value 'maybe'"},
		{"[env]\n1BAD = x\n",
		 ":2: bad environment variable name '1BAD'"},
		{"[env]\nHOROVOD_SIZE = 3\n",
		 ":2: HOROVOD_SIZE is set by hvdrun"},
		{"[env]\nA = 1\nA = 2\n", ":3: 'A' in [env] is set twice"},
	};
	tap_bad_files(bad, sizeof(bad) / sizeof(bad[0]), load_config,
		      HL_EINVAL);
	/* A line longer than inih's buffer is refused, not split. */
	memset(longline, 'a', sizeof(longline));
	memcpy(longline, "[job]\nhosts = ", 14);
	longline[sizeof(longline) - 2] = '\n';
	longline[sizeof(longline) - 1] = '\0';
	{
		char *path = tap_write_tmp(longline);
		struct hl_opts o;
		char *cause = NULL;

		hl_opts_init(&o);
		CHECK(hl_config_load(path, &o, &cause) == HL_EINVAL);
		CHECK_HAS(cause, ":2: line too long (392 characters, at most");
		CHECK_HAS(cause, "'hosts = aaaa");
		hl_opts_close(&o);
		unlink(path);
		free(path);
		free(cause);
	}
}

static void test_config_missing(void)
{
	struct hl_opts o;
	char *cause = NULL;

	hl_opts_init(&o);
	CHECK(hl_config_load("/nonexistent.ini", &o, &cause) == HL_EINVAL);
	CHECK_HAS(cause, "cannot read config file '/nonexistent.ini'");
	free(cause);
	cause = NULL;
	/* A directory opens; only its read fails: named as such. */
	CHECK(hl_config_load("/", &o, &cause) == HL_EINVAL);
	CHECK_HAS(cause, "cannot read config file '/': Is a directory");
	free(cause);
	cause = NULL;
	CHECK(hl_config_load("/tmp/.", &o, &cause) == HL_EINVAL);
	CHECK_HAS(cause, "cannot read config file '/tmp/.': Is a directory");
	hl_opts_close(&o);
	free(cause);
}

/* config/hvdrun.ini documents every key with its default: uncomment every
 * ";key = value" line, load it, and compare with the option table. */
static void test_shipped_example(void)
{
	FILE *in = fopen("config/hvdrun.ini", "r");
	char path[] = "/tmp/hvdrun-ini-XXXXXX";
	char line[256];
	struct hl_opts o;
	char *cause = NULL;
	size_t k;
	FILE *out;
	int fd = mkstemp(path);

	CHECK(in != NULL && fd >= 0);
	if (in == NULL || fd < 0)
		return;
	out = fdopen(fd, "w");
	while (fgets(line, sizeof(line), in) != NULL) {
		if (line[0] == ';' && line[1] != ' ' && line[1] != '\n' &&
		    strstr(line, " = ") != NULL)
			fputs(line + 1, out);
		else
			fputs(line, out);
	}
	fclose(in);
	fclose(out);
	hl_opts_init(&o);
	CHECK(hl_config_load(path, &o, &cause) == HL_OK);
	if (cause)
		printf("# %s\n", cause);
	for (k = 0; k < HL_K_COUNT; k++) {
		const struct hl_keyinfo *ki = &hl_keys[k];
		char buf[64];
		const char *def =
			hl_key_default((enum hl_key)k, buf, sizeof(buf));
		struct hl_opts d;

		if (!o.v[k].set)
			printf("# not documented: [%s] %s\n", ki->section,
			       ki->name);
		CHECK(o.v[k].set);
		if (def == NULL || !o.v[k].set)
			continue;
		/* The documented value is the default. */
		hl_opts_init(&d);
		CHECK(hl_opts_finish(&d, NULL) == HL_OK);
		if (ki->type == HL_T_STRING || ki->type == HL_T_PATH)
			CHECK_STR(o.v[k].s, d.v[k].s);
		else if (o.v[k].d != d.v[k].d || o.v[k].b != d.v[k].b ||
			 o.v[k].i != d.v[k].i) {
			printf("# [%s] %s: documented '%s', default '%s'\n",
			       ki->section, ki->name, o.v[k].s, def);
			CHECK(0);
		}
		hl_opts_close(&d);
	}
	CHECK(o.nenv == 1);
	hl_opts_close(&o);
	unlink(path);
	free(cause);
}

/* Every key of the table is defined: a hole would be a zeroed entry. */
static void test_table_complete(void)
{
	size_t k;

	for (k = 0; k < HL_K_COUNT; k++) {
		const struct hl_keyinfo *ki = &hl_keys[k];
		double min, max;

		CHECK(ki->section != NULL && ki->name != NULL &&
		      ki->help != NULL);
		hl_key_range((enum hl_key)k, &min, &max);
		if (ki->type == HL_T_INT || ki->type == HL_T_DOUBLE)
			CHECK(max > min);
		if (ki->type == HL_T_ENUM)
			CHECK(hl_key_choices((enum hl_key)k) != NULL);
		if (ki->export != HL_X_NONE)
			CHECK(ki->envvar != NULL);
		/* Every key's section is one --help shows and files take. */
		CHECK(hl_opts_section_known(ki->section));
		CHECK_HAS(hl_opts_section_list(), ki->section);
	}
	CHECK_STR(hl_opts_section_list(),
		  "job, elastic, env, ssh, network, mpi, tuning, autotune, "
		  "timeline, stall_check or logging");
}

/* "did you mean": the nearest name within a typo's reach, or none. */
static const char *suggest(const char *word)
{
	static const char *const names[] = {
		"np",	  "hostfile", "hosts",	      "fusion-threshold-mb",
		"min-np", "max-np",   "cycle-time-ms"};
	struct hl_suggest s;
	size_t i;

	hl_suggest_init(&s, word);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		hl_suggest_try(&s, names[i]);
	return s.best != NULL ? s.best : "";
}

static void test_suggestions(void)
{
	CHECK(strcmp(suggest("hostfiel"), "hostfile") == 0); /* swapped */
	CHECK(strcmp(suggest("fusion-treshold-mb"), "fusion-threshold-mb") ==
	      0); /* dropped */
	CHECK(strcmp(suggest("fusion-thresholds-mb"), "fusion-threshold-mb") ==
	      0);					 /* added */
	CHECK(strcmp(suggest("min-mp"), "min-np") == 0); /* wrong */
	CHECK(strcmp(suggest("hots"), "hosts") == 0);
	CHECK(strcmp(suggest("nq"), "") == 0);	       /* too short to tell */
	CHECK(strcmp(suggest("frobnicate"), "") == 0); /* nothing near */
	CHECK(strcmp(suggest("min-nq-x"), "") == 0);   /* 3 away */
	CHECK(strcmp(suggest("hostfile"), "") == 0);   /* no typo */
	CHECK(strcmp(suggest("cycle-time-msxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
		     "") == 0); /* past the longest compared */
}

/* A word of a printed command line, as a shell reads it back. */
static void check_word(const char *s, const char *want)
{
	char *w = hl_shell_word(s);

	CHECK(w != NULL && strcmp(w, want) == 0);
	free(w);
}

static void test_shell_words(void)
{
	check_word("--mca", "--mca");
	check_word("localhost:2,node1:4", "localhost:2,node1:4");
	check_word("HOROVOD_FUSION_THRESHOLD=8388608",
		   "HOROVOD_FUSION_THRESHOLD=8388608");
	check_word("-o StrictHostKeyChecking=accept-new",
		   "'-o StrictHostKeyChecking=accept-new'");
	check_word("", "''");
	check_word("echo \"$HOME\"", "'echo \"$HOME\"'");
	check_word("it's", "'it'\\''s'");
	check_word("~/train", "'~/train'");
	check_word("a*b", "'a*b'");
}

/* Paths from a folder (a config file's, --wdir's) and folders a worker
 * may start in. */
static void test_paths_and_folders(void)
{
	char *file = tap_write_tmp("not a folder\n"), *p;

	p = hl_path_from("/etc", "hosts");
	CHECK_STR(p, "/etc/hosts");
	free(p);
	p = hl_path_from("/etc", "/abs/x");
	CHECK_STR(p, "/abs/x");
	free(p);
	p = hl_path_from("/etc", "~/x");
	CHECK_STR(p, "~/x");
	free(p);
	p = hl_path_from(NULL, "rel");
	CHECK_STR(p, "rel");
	free(p);
	CHECK(hl_folder_refused("/") == NULL);
	CHECK_STR(hl_folder_refused(file), "not a folder");
	CHECK_STR(hl_folder_refused("/no/such/folder"), strerror(ENOENT));
	unlink(file);
	free(file);
}

int main(void)
{
	RUN(test_table_complete);
	RUN(test_set_values);
	RUN(test_bad_values);
	RUN(test_env_specs);
	RUN(test_export);
	RUN(test_config_valid);
	RUN(test_config_malformed);
	RUN(test_config_missing);
	RUN(test_shipped_example);
	RUN(test_suggestions);
	RUN(test_shell_words);
	RUN(test_paths_and_folders);
	return tap_done();
}
