#!/bin/bash
# keepalive.sh HVDRUN SELFTEST, run in a network namespace of its own
# (unshare -n), where the kernel's TCP counters count this job alone: the
# keepalive probes libhvd's connections send in a job of 3 ranks on two
# hosts (localhost and 127.0.0.1) quiet for 4 s, and in one whose rank 2
# is stopped for 3 s mid-allreduce. Prints "quiet: N probes" and
# "stopped: N probes".
set -eu
hvdrun=$1 selftest=$2
export PIDDIR=${PIDDIR:-$(mktemp -d)}
probes() {
	awk '/^TcpExt:/ {
		if (!h) { split($0, name); h = 1; next }
		for (i = 2; i <= NF; i++) if (name[i] == "TCPKeepAlive") print $i
	}' /proc/net/netstat
}
ip link set lo up
a=$(probes)
"$hvdrun" -H localhost:2,127.0.0.1:1 "$selftest" quiet 4
echo "quiet: $(($(probes) - a)) probes"
# shellcheck disable=SC2016 # expanded by the rank's shell
"$hvdrun" -H localhost:2,127.0.0.1:1 -x PIDDIR sh -c \
	'echo $$ >"$PIDDIR/rank$HOROVOD_RANK"; exec "$0" drop 4194304' "$selftest" &
job=$!
# A rank left stopped would hold the job: it goes on whatever happens.
trap 'kill -CONT "$(cat "$PIDDIR/rank2" 2>/dev/null)" 2>/dev/null || true' EXIT
for _ in $(seq 1 200); do
	[ -e "$PIDDIR/looping2" ] && [ -s "$PIDDIR/rank2" ] && break
	sleep 0.05
done
a=$(probes)
kill -STOP "$(cat "$PIDDIR/rank2")"
sleep 3
b=$(probes)
kill -CONT "$(cat "$PIDDIR/rank2")"
touch "$PIDDIR/stop"
wait "$job"
echo "stopped: $((b - a)) probes"
