/* test_slurm.c: Slurm's node lists and tasks per node, well-formed and
 * malformed, and the allocation as a host list. */
#include <stdlib.h>
#include <string.h>

#include "job/slurm.h"
#include "tap.h"

/* The expansion of list, joined with spaces ("" on error). */
static char *nodes(const char *list, char **cause)
{
	struct hl_strvec v;
	char *s;

	hl_strvec_init(&v);
	s = hl_slurm_nodes(list, "SLURM_JOB_NODELIST", &v, cause) == HL_OK
		    ? hl_strvec_join(&v, " ")
		    : strdup("");
	hl_strvec_close(&v);
	return s;
}

static void test_nodes(void)
{
	static const struct {
		const char *list, *expect;
	} ok[] = {
		{"node1", "node1"},
		{"node[01-04,07]", "node01 node02 node03 node04 node07"},
		{"n[8-10]", "n8 n9 n10"},
		{"n[08-10]", "n08 n09 n10"},
		{"n[001-002]", "n001 n002"},
		{"a[1-2],b3", "a1 a2 b3"},
		{"login,gpu[1-2],cpu[3]", "login gpu1 gpu2 cpu3"},
		{"rack[1-2]-n[1-2]", "rack1-n1 rack1-n2 rack2-n1 rack2-n2"},
		{"x[1-2]y", "x1y x2y"},
		{"[1-2]", "1 2"},
		{"node-1.example.com", "node-1.example.com"},
	};
	char *cause = NULL, *s;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		s = nodes(ok[i].list, &cause);
		CHECK_STR(s, ok[i].expect);
		free(s);
	}
	free(cause);
}

static void test_nodes_malformed(void)
{
	static const struct {
		const char *list, *expect;
	} bad[] = {
		{"", "SLURM_JOB_NODELIST is empty"},
		{"a,,b", "SLURM_JOB_NODELIST 'a,,b': an empty node name"},
		{"a,", "an empty node name"},
		{"node[1-",
		 "SLURM_JOB_NODELIST 'node[1-': a '[' without its ']'"},
		{"node1-2]", "a ']' without its '['"},
		{"node[1]]", "a ']' without its '['"},
		{"node[1]x]", "a ']' without its '['"},
		{"node[2-1]", "range '2-1' runs backwards"},
		{"node[a-b]", "bad range 'a-b' (want N or N-M)"},
		{"node[]", "bad range '' (want N or N-M)"},
		{"node[1,,2]", "bad range ''"},
		{"node[[1]]", "a '[' without its ']'"},
		{"node[1-9999999999]", "bad range"},
		{"n[0-99999]", "more than 65536 nodes"},
		{"a b", "' ' cannot be in a node name"},
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *cause = NULL, *s = nodes(bad[i].list, &cause);

		CHECK_STR(s, "");
		CHECK_HAS(cause, bad[i].expect);
		free(s);
		free(cause);
	}
}

static void test_tasks(void)
{
	static const struct {
		const char *spec;
		size_t n;
		const char *expect; /* the slots, or the error */
	} cases[] = {
		{"4", 1, "4"},
		{"4,1(x2)", 3, "4 1 1"},
		{"2(x3)", 3, "2 2 2"},
		{"8(x2),4,1(x1)", 4, "8 8 4 1"},
		{"2", 2, "counts for 1 of the 2 nodes"},
		{"2(x3)", 2, "bad repetition at '(x3)'"},
		{"2,2,2", 2, "more counts than the 2 nodes"},
		{"0", 1, "bad task count at '0'"},
		{"x", 1, "bad task count at 'x'"},
		{"2(x0)", 1, "bad repetition"},
		{"2(x1", 1, "bad repetition"},
		{"2;3", 2, "unexpected ';3'"},
		{"2,", 2, "bad task count at ''"},
		{"-1", 1, "bad task count"},
		{"99999", 1, "want 1..4096"},
	};
	size_t i, k;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int slots[8];
		char *cause = NULL, got[64] = "";
		int rc = hl_slurm_tasks(cases[i].spec, "SLURM_TASKS_PER_NODE",
					cases[i].n, slots, &cause);

		for (k = 0; rc == HL_OK && k < cases[i].n; k++)
			snprintf(got + strlen(got), sizeof(got) - strlen(got),
				 k > 0 ? " %d" : "%d", slots[k]);
		if (rc == HL_OK)
			CHECK_STR(got, cases[i].expect);
		else
			CHECK_HAS(cause, cases[i].expect);
		free(cause);
	}
}

static void test_hosts(void)
{
	char *cause = NULL, *hosts = NULL;

	CHECK(hl_slurm_hosts("node[01-02],gpu7", "4,1(x2)", &hosts, &cause) ==
	      HL_OK);
	CHECK_STR(hosts, "node01:4,node02:1,gpu7:1");
	free(hosts);
	CHECK(hl_slurm_hosts("node[01-02]", "4", &hosts, &cause) == HL_EINVAL);
	CHECK(hosts == NULL);
	CHECK_HAS(cause,
		  "SLURM_TASKS_PER_NODE '4': counts for 1 of the 2 nodes");
	free(cause);
}

int main(void)
{
	RUN(test_nodes);
	RUN(test_nodes_malformed);
	RUN(test_tasks);
	RUN(test_hosts);
	return tap_done();
}
