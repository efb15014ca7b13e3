/* usage.c: `hvdrun --help`. Short; man hvdrun(1) has the rest. */
#include <stdio.h>

#include "hvdrun.h"

void cmd_usage(void)
{
	fputs("Usage: hvdrun [options] command [args...]\n"
	      "Run command as a data-parallel job, one worker per slot.\n"
	      "\n"
	      "Hosts:\n"
	      "  -np, --num-proc N          workers to start (default: all slots)\n"
	      "  -H, --hosts LIST           host[:slots],... (default: localhost:N)\n"
	      "  --hostfile FILE            lines of 'host slots=N'\n"
	      "  --config-file FILE         read options from an INI file (hvdrun.ini(5))\n"
	      "  -x VAR[=VALUE]             set or forward an environment variable\n"
	      "SSH (hosts that are not this machine):\n"
	      "  -p, --ssh-port PORT  -i, --ssh-identity-file FILE\n"
	      "  --ssh-config FILE          like ssh -F (default ~/.ssh/config)\n"
	      "  --ssh-host-key-checking yes|accept-new|no  (default accept-new)\n"
	      "  --force-ssh                SSH even to this machine\n"
	      "  --ssh-concurrency N        connections opened at once (default 64)\n"
	      "  --ssh-channels-per-session N  ranks per session (default 10)\n"
	      "Output:\n"
	      "  --output-filename DIR      also write DIR/rank.N/stdout and stderr\n"
	      "  --prefix-output-with-timestamp\n"
	      "  --verbose                  say what hvdrun does\n"
	      "  --dry-run                  print the rank plan, start nothing\n"
	      "Tuning (passed to libhvd):\n"
	      "  --fusion-threshold-mb N  --cycle-time-ms MS  --cache-capacity N\n"
	      "  --timeline-filename FILE  --timeline-mark-cycles\n"
	      "  --no-stall-check  --stall-check-warning-time-seconds S\n"
	      "  --stall-check-shutdown-time-seconds S\n"
	      "  --log-level trace|debug|info|warning|error|fatal\n"
	      "  --start-timeout S          seconds to start every worker (default 30)\n"
	      "\n"
	      "  -h, --help  --version\n"
	      "\n"
	      "Exit status: the first failing worker's code (128+N for signal N),\n"
	      "2 for bad usage, 125 if the job could not start (a host down, a key\n"
	      "refused), 126/127 if the command cannot be executed / was not\n"
	      "found. See hvdrun(1).\n",
	      stdout);
}
