/* test_hosts.c: the -H and hostfile parsers, well-formed and malformed;
 * the discovery script's output and runs (discovery.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job/discovery.h"
#include "config/hosts.h"
#include "tap.h"

static int parse(const char *list, struct hl_hostlist *hl, char **cause)
{
	hl_hostlist_init(hl);
	return hl_hosts_parse_list(list, hl, cause);
}

static void test_list_valid(void)
{
	struct hl_hostlist hl;
	char *cause = NULL;

	CHECK(parse("server1:4,server2:2,server3", &hl, &cause) == HL_OK);
	CHECK(hl.n == 3);
	CHECK_STR(hl.v[0].name, "server1");
	CHECK(hl.v[0].slots == 4);
	CHECK(hl.v[1].slots == 2);
	CHECK(hl.v[2].slots == 1);
	CHECK(hl_hosts_total_slots(&hl) == 7);
	CHECK(!hl.v[0].local);
	hl_hostlist_close(&hl);

	CHECK(parse("alice@node-1.example.com:8,[::1]:2,[fe80::1],10.0.0.1:3",
		    &hl, &cause) == HL_OK);
	CHECK(hl.n == 4);
	CHECK_STR(hl.v[0].user, "alice");
	CHECK_STR(hl.v[0].name, "node-1.example.com");
	CHECK(hl.v[0].slots == 8);
	CHECK_STR(hl.v[1].name, "::1");
	CHECK(hl.v[1].slots == 2);
	CHECK(hl.v[1].local);
	CHECK_STR(hl.v[2].name, "fe80::1");
	CHECK(hl.v[2].slots == 1);
	CHECK(hl.v[3].slots == 3);
	hl_hostlist_close(&hl);
	free(cause);
}

static void test_list_local(void)
{
	struct hl_hostlist hl;
	char self[256];

	CHECK(parse("localhost:2,127.0.0.1", &hl, NULL) == HL_OK);
	CHECK(hl.v[0].local && hl.v[1].local);
	hl_hostlist_close(&hl);
	CHECK(gethostname(self, sizeof(self)) == 0);
	CHECK(hl_host_is_local(self));
	if (strchr(self, '.') == NULL) { /* a short name: any domain's */
		char fq[300], other[300];

		snprintf(fq, sizeof(fq), "%s.cluster.example", self);
		snprintf(other, sizeof(other), "%sx.cluster.example", self);
		CHECK(hl_host_is_local(fq));
		CHECK(!hl_host_is_local(other));
	}
	CHECK(!hl_host_is_local("no-such-host.invalid"));
	CHECK(!hl_host_is_local("127.0.0.2"));
}

static void test_list_malformed(void)
{
	static const struct {
		const char *list, *expect;
	} bad[] = {
		{"", "empty host list"},
		{",", "empty entry"},
		{"a,,b", "empty entry in host list 'a,,b'"},
		{"a,", "empty entry"},
		{",a", "empty entry"},
		{"a:0",
		 "bad slot count (want 1..4096) in host list entry 'a:0'"},
		{"a:-1", "bad slot count"},
		{"a:", "in host list entry 'a:'"},
		{"a:x", "'a:x'"},
		{"a:2x", "'a:2x'"},
		{"a: 2", "'a: 2'"},
		{"a:99999", "bad slot count (want 1..4096)"},
		{"a:4096000000000000000000", "bad slot count"},
		{":4", "missing host name in host list entry ':4'"},
		{"a b:2", "bad host name in host list entry 'a b:2'"},
		{"-a:2", "bad host name"},
		{".a", "bad host name"},
		{"a/b", "bad host name"},
		{"a::2", "bad host name"},
		{"fe80::1:2",
		 "write IPv6 addresses as [addr]:slots) in host list entry 'fe80::1:2'"},
		{"[::1", "bad IPv6 address in host list entry '[::1'"},
		{"[zz]:2", "bad IPv6 address"},
		{"[::1]x", "unexpected text after ']'"},
		{"[::1]:0", "bad slot count"},
		{"@a", "bad user name in host list entry '@a'"},
		{"a@", "missing host name"},
		{"-u@a", "bad user name"},
		{"a:2,b:1,a:3",
		 "host 'a' is listed twice (give it once, with all its slots: 'a:5')"},
		{"a,a",
		 "host 'a' is listed twice (give it once, with all its slots: 'a:2')"},
		{"[::1],[::1]:3",
		 "(give it once, with all its slots: '[::1]:4')"},
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hl_hostlist hl;
		char *cause = NULL;

		CHECK(parse(bad[i].list, &hl, &cause) == HL_EINVAL);
		CHECK_HAS(cause, bad[i].expect);
		hl_hostlist_close(&hl);
		free(cause);
	}
}

static void test_hostfile_valid(void)
{
	char *path = tap_write_tmp("\xef\xbb\xbf# the cluster\n"
				   "\n"
				   "server1 slots=4   # four GPUs\n"
				   "  server2\tslots=2 max_slots=8\r\n"
				   "bob@server3 slots=1 port=2222\n"
				   "server4 user=carol\n"
				   /* MPICH's machinefile lines */
				   "server5:3\n"
				   "[::1]:2 port=2200\n");
	struct hl_hostlist hl;
	char *cause = NULL;

	hl_hostlist_init(&hl);
	CHECK(hl_hosts_parse_file(path, &hl, &cause) == HL_OK);
	CHECK(hl.n == 6);
	CHECK(hl.v[0].slots == 4 && hl.v[0].line == 3);
	CHECK(hl.v[1].slots == 2);
	CHECK_STR(hl.v[2].user, "bob");
	CHECK(hl.v[2].port == 2222);
	CHECK_STR(hl.v[3].user, "carol");
	CHECK(hl.v[3].slots == 1);
	CHECK_STR(hl.v[4].name, "server5");
	CHECK(hl.v[4].slots == 3 && hl.v[4].line == 7);
	CHECK_STR(hl.v[5].name, "::1");
	CHECK(hl.v[5].slots == 2 && hl.v[5].port == 2200);
	CHECK(hl.warnings.n == 1);
	CHECK_HAS(hl.warnings.v[0], ":4: 'max_slots=8' is ignored");
	hl_hostlist_close(&hl);
	unlink(path);
	free(path);
	free(cause);
}

/* A host on several lines (a batch system's node file lists it once a
 * slot): one host, with the slots of all its lines, where it first
 * stands. */
static void test_hostfile_repeated(void)
{
	char *path = tap_write_tmp("n1\nn1\nn2\nn1\nn2 slots=3\n"
				   "bob@n3:2 port=22\nn3 user=bob port=22\n");
	struct hl_hostlist hl;
	char *cause = NULL;

	hl_hostlist_init(&hl);
	CHECK(hl_hosts_parse_file(path, &hl, &cause) == HL_OK);
	CHECK(hl.n == 3);
	CHECK_STR(hl.v[0].name, "n1");
	CHECK(hl.v[0].slots == 3 && hl.v[0].line == 1);
	CHECK_STR(hl.v[1].name, "n2");
	CHECK(hl.v[1].slots == 4 && hl.v[1].line == 3);
	CHECK(hl.v[2].slots == 3 && hl.v[2].port == 22);
	CHECK_STR(hl.v[2].user, "bob");
	hl_hostlist_close(&hl);
	unlink(path);
	free(path);
	free(cause);
}

/* A bare count after the host: LSF's host files (`host N`) and Grid
 * Engine's $PE_HOSTFILE (`host N queue@host processors`). */
static void test_hostfile_counted(void)
{
	char *path = tap_write_tmp("n1 4\n"
				   "n2 2 all.q@n2 UNDEFINED\n"
				   "n3 1 gpu.q@n3 0,1:0,2\n"
				   "n2 1 all.q@n2 UNDEFINED\n"
				   "n4 3 port=2222 user=bob\n"
				   "n5 2 all.q@n5\n");
	struct hl_hostlist hl;
	char *cause = NULL;

	hl_hostlist_init(&hl);
	CHECK(hl_hosts_parse_file(path, &hl, &cause) == HL_OK);
	CHECK(hl.n == 5);
	CHECK_STR(hl.v[0].name, "n1");
	CHECK(hl.v[0].slots == 4);
	CHECK_STR(hl.v[1].name, "n2");
	CHECK(hl.v[1].slots == 3 && hl.v[1].line == 2);
	CHECK_STR(hl.v[2].name, "n3");
	CHECK(hl.v[2].slots == 1);
	CHECK(hl.v[3].slots == 3 && hl.v[3].port == 2222);
	CHECK_STR(hl.v[3].user, "bob");
	CHECK(hl.v[4].slots == 2);
	CHECK(hl.warnings.n == 0);
	hl_hostlist_close(&hl);
	unlink(path);
	free(path);
	free(cause);
}

static int load_hostfile(const char *path, char **cause)
{
	struct hl_hostlist hl;
	int rc;

	hl_hostlist_init(&hl);
	rc = hl_hosts_parse_file(path, &hl, cause);
	hl_hostlist_close(&hl);
	return rc;
}

static void test_hostfile_malformed(void)
{
	static const struct tap_bad_file bad[] = {
		{"a slots=x\n", ":1: bad slot count 'slots=x'"},
		{"a slots=0\n", ":1: bad slot count 'slots=0'"},
		{"a\nb slots=\n", ":2: bad slot count 'slots='"},
		{"a slots=2 gpus=4\n",
		 ":1: unknown key 'gpus' (want slots, max_slots, port or user)"},
		{"a slot=2\n",
		 ":1: unknown key 'slot' (did you mean 'slots'?)"},
		{"a 4x\n", ":1: expected KEY=VALUE, got '4x'"},
		{"a 0\n", ":1: bad slot count '0' (want 1..4096)"},
		{"a 4097\n", ":1: bad slot count '4097' (want 1..4096)"},
		{"a:4 2\n", ":1: 'a:4' and '2' both give the slots: give one"},
		{"a 4 slots=2\n",
		 ":1: 'a 4' and 'slots=2' both give the slots: give one"},
		{"a 4 fast\n", ":1: expected KEY=VALUE, got 'fast'"},
		{"a 4 all.q@a 0-3 more\n",
		 ":1: expected KEY=VALUE, got 'more'"},
		{"a 4 2\n", ":1: expected KEY=VALUE, got '2'"},
		{"a:4 slots=2\n",
		 ":1: 'a:4' and 'slots=2' both give the slots: give one"},
		{"a:0\n", ":1: bad slot count (want 1..4096) in 'a:0'"},
		{"a:\n", ":1: bad slot count (want 1..4096) in 'a:'"},
		{"fe80::1\n", ":1: bad host name (write IPv6 addresses as "
			      "[addr]:slots) in 'fe80::1'"},
		{"a port=70000\n", ":1: bad port 'port=70000'"},
		{"a user=-x\n", ":1: bad user name 'user=-x'"},
		{"a max_slots=no\n", ":1: bad value 'max_slots=no'"},
		{"a\n# c\nb\na port=2222\n",
		 ":4: host 'a' again, with another port than at line 1"},
		{"bob@a\na user=carol\n",
		 ":2: host 'a' again, with another user than at line 1"},
		{"a slots=4000\nb\na slots=97\n",
		 ":3: host 'a' has more than 4096 slots with those of line 1"},
		{"bad/host slots=1\n", ":1: bad host name in 'bad/host'"},
		/* A byte-order mark opens the file only. */
		{"a\n\xef\xbb\xbf"
		 "b\n",
		 ":2: bad host name in '\xef\xbb\xbf"
		 "b'"},
		{"# only comments\n\n", "no hosts in hostfile"},
		{"", "no hosts in hostfile"},
	};
	tap_bad_files(bad, sizeof(bad) / sizeof(bad[0]), load_hostfile,
		      HL_EINVAL);
}

static void test_hostfile_missing(void)
{
	struct hl_hostlist hl;
	char *cause = NULL;

	hl_hostlist_init(&hl);
	CHECK(hl_hosts_parse_file("/nonexistent/hosts", &hl, &cause) ==
	      HL_EINVAL);
	CHECK_HAS(cause, "cannot read hostfile '/nonexistent/hosts'");
	hl_hostlist_close(&hl);
	free(cause);
}

static void test_hostfile_nul(void)
{
	char path[] = "/tmp/hvdrun-test-XXXXXX";
	int fd = mkstemp(path);
	struct hl_hostlist hl;
	char *cause = NULL;

	CHECK(write(fd, "a\nb\0c\n", 6) == 6);
	close(fd);
	hl_hostlist_init(&hl);
	CHECK(hl_hosts_parse_file(path, &hl, &cause) == HL_EINVAL);
	CHECK_HAS(cause, ":2: NUL byte");
	hl_hostlist_close(&hl);
	unlink(path);
	free(cause);
}

static void test_discovery_parse(void)
{
	struct hl_hostlist hl;
	char *cause = NULL;

	hl_hostlist_init(&hl);
	CHECK(hl_discovery_parse(
		      "# now\n\nnode1:4\r\n  node2  \n[::1]\nu@node3:2\n",
		      "d.sh", 3, &hl, &cause) == HL_OK);
	CHECK(hl.n == 4);
	CHECK(hl.v[0].slots == 4);	  /* given: --slots-per-host ignored */
	CHECK_STR(hl.v[1].name, "node2"); /* bare: --slots-per-host */
	CHECK(hl.v[1].slots == 3);
	CHECK(hl.v[2].slots == 3 && hl.v[2].local);
	CHECK_STR(hl.v[3].user, "u");
	CHECK(hl.v[3].slots == 2);
	hl_hostlist_close(&hl);

	hl_hostlist_init(&hl);
	CHECK(hl_discovery_parse("node1\n", "d.sh", 0, &hl, NULL) == HL_OK);
	CHECK(hl.v[0].slots == 1);
	hl_hostlist_close(&hl);

	hl_hostlist_init(&hl);
	CHECK(hl_discovery_parse("node1:2\nnode2:x\n", "d.sh", 0, &hl,
				 &cause) == HL_EINVAL);
	CHECK(strstr(cause, "host discovery script 'd.sh' line 2: ") == cause);
	CHECK(strstr(cause, "'node2:x'") != NULL);
	hl_hostlist_close(&hl);
	free(cause);
	cause = NULL;

	hl_hostlist_init(&hl);
	CHECK(hl_discovery_parse("node1:2\nnode1:3\n", "d.sh", 0, &hl,
				 &cause) == HL_EINVAL);
	CHECK(strstr(cause, "line 2: host 'node1' is listed twice") != NULL);
	hl_hostlist_close(&hl);
	free(cause);
	cause = NULL;

	hl_hostlist_init(&hl);
	CHECK(hl_discovery_parse("a b\n", "d.sh", 0, &hl, &cause) == HL_EINVAL);
	CHECK(strstr(cause, "line 1: one host a line, got 'a b'") != NULL);
	hl_hostlist_close(&hl);
	free(cause);
	cause = NULL;

	hl_hostlist_init(&hl);
	CHECK(hl_discovery_parse("# none\n\n", "d.sh", 0, &hl, &cause) ==
	      HL_EINVAL);
	CHECK_STR(cause, "host discovery script 'd.sh' printed no hosts");
	hl_hostlist_close(&hl);
	free(cause);
}

/* A script with body, run once: its hosts or its error. */
static int discover(const char *body, struct hl_hostlist *hl, char **cause)
{
	char path[] = "/tmp/hvd_test_discoveryXXXXXX";
	struct hl_discovery d;
	int fd = mkstemp(path), rc;
	FILE *f = fdopen(fd, "w");

	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	chmod(path, 0700);
	hl_hostlist_init(hl);
	rc = hl_discovery_init(&d, path, 0, cause);
	if (rc == HL_OK)
		rc = hl_discovery_run(&d, hl, cause);
	hl_discovery_close(&d);
	unlink(path);
	return rc;
}

static void test_discovery_run(void)
{
	struct hl_hostlist hl;
	char *cause = NULL;

	CHECK(discover("echo node1:2; echo node2", &hl, NULL) == HL_OK);
	CHECK(hl.n == 2 && hl.v[0].slots == 2);
	hl_hostlist_close(&hl);

	CHECK(discover("echo node1:2; echo broken >&2; exit 3", &hl, &cause) ==
	      HL_ESTART);
	CHECK(strstr(cause, "exited with code 3: broken") != NULL);
	hl_hostlist_close(&hl);
	free(cause);
	cause = NULL;

	/* It hangs, its child holding the pipe: killed at the timeout. */
	CHECK(discover("sleep 60 & echo node1; sleep 60", &hl, &cause) ==
	      HL_ESTART);
	CHECK(strstr(cause, "did not finish within 5 s") != NULL);
	hl_hostlist_close(&hl);
	free(cause);
	cause = NULL;

	{
		char path[] = "/tmp/hvd_test_discoveryXXXXXX";
		struct hl_discovery d;
		int fd = mkstemp(path); /* mode 0600: not executable */

		close(fd);
		CHECK(hl_discovery_init(&d, path, 0, &cause) == HL_EINVAL);
		CHECK(cause != NULL &&
		      strstr(cause, "not an executable file") != NULL);
		unlink(path);
		free(cause);
	}
}

int main(void)
{
	RUN(test_list_valid);
	RUN(test_list_local);
	RUN(test_list_malformed);
	RUN(test_hostfile_valid);
	RUN(test_hostfile_repeated);
	RUN(test_hostfile_counted);
	RUN(test_hostfile_malformed);
	RUN(test_hostfile_missing);
	RUN(test_hostfile_nul);
	RUN(test_discovery_parse);
	RUN(test_discovery_run);
	return tap_done();
}
