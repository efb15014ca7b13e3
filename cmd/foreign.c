/* foreign.c: options of mpirun and torchrun that hvdrun does not take,
 * each with what does the same here. An unknown option that is one of
 * them is refused with it (args.c), where it would only be unknown: a
 * user of those launchers types them from habit. */
#include <stddef.h>
#include <string.h>

#include "hvdrun.h"

static const char placement[] =
	"hvdrun places ranks as Horovod does, filling each host's slots in "
	"the host list's order: give each host the workers it runs "
	"(-H a:4,b:4)";
static const char rendezvous[] =
	"hvdrun runs the job's rendezvous itself and sets MASTER_ADDR and "
	"MASTER_PORT for every worker: leave it out";

static const struct {
	const char *launcher, *name, *instead;
} foreign[] = {
	{"mpirun", "oversubscribe",
	 "hvdrun starts one worker a slot: give the hosts the slots they "
	 "have (-H localhost:8, or 'host slots=8' in a hostfile)"},
	{"mpirun", "map-by", placement},
	{"mpirun", "rank-by", placement},
	{"mpirun", "npernode", placement},
	{"mpirun", "N", placement}, /* -N: --npernode */
	{"mpirun", "mca",
	 "an Open MPI setting: with --mpi, give it in --mpi-args "
	 "\"--mca NAME VALUE\" (hvdrun's own workers do not use Open MPI)"},
	{"mpirun", "tag-output",
	 "hvdrun tags every line with its rank already ([R]<stdout>:)"},
	{"mpirun", "timestamp-output",
	 "its name here is "
	 "--prefix-output-with-timestamp"},
	{"mpirun", "merge-stderr-to-stdout",
	 "hvdrun keeps each worker's standard error on its own "
	 "([R]<stderr>:): merge hvdrun's (2>&1)"},
	{"mpirun", "display-map",
	 "--dry-run prints the rank plan (--verbose, before the job)"},
	{"mpirun", "allow-run-as-root",
	 "hvdrun runs as root without it: leave it out"},
	{"torchrun", "nproc-per-node",
	 "-np N for this machine alone; on several hosts, -H a:4,b:4 (or "
	 "--hostfile) gives each host its workers"},
	{"torchrun", "nnodes",
	 "the hosts are -H or --hostfile (or the batch job's), and -np "
	 "the workers"},
	{"torchrun", "node-rank",
	 "hvdrun gives each host its rank (GROUP_RANK): leave it out"},
	{"torchrun", "master-addr", rendezvous},
	{"torchrun", "master-port", rendezvous},
	{"torchrun", "rdzv-endpoint", rendezvous},
	{"torchrun", "rdzv-backend", rendezvous},
	{"torchrun", "rdzv-id", rendezvous},
	{"torchrun", "standalone",
	 "a job on this machine alone needs only -np N: leave it out"},
	{"torchrun", "max-restarts",
	 "an elastic job goes on after a failure: --min-np and --reset-limit "
	 "(hvdrun(1), ELASTIC JOBS)"},
};

const char *cmd_foreign_option(const char *name, const char **launcher)
{
	char word[64];
	size_t i, n = strcspn(name, "=");

	/* torchrun takes --nproc_per_node as --nproc-per-node. */
	if (n >= sizeof(word))
		return NULL;
	memcpy(word, name, n);
	word[n] = '\0';
	for (i = 0; i < n; i++)
		if (word[i] == '_')
			word[i] = '-';
	for (i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++)
		if (strcmp(foreign[i].name, word) == 0) {
			*launcher = foreign[i].launcher;
			return foreign[i].instead;
		}
	return NULL;
}
