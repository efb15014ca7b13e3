# slurm.bash: a real Slurm cluster on the rig's namespace hosts, for the
# Slurm tests (load after rig.bash; call after rig_up and rig_ns_up).
#
# slurm_up: the namespace hosts ns1..nsN are Slurm's nodes (slurmd, each
# in its host's network namespace and a UTS namespace named after it), and
# the client namespace, where the tests run hvdrun, is the login node that
# also runs slurmctld (host name "login"). One munged runs in the root
# namespace with a key of its own; Slurm finds it by its socket path
# (AuthInfo=socket=). Every path (state, spool, pid and log files) lies
# under $RIG/slurm. Each node declares 4 CPUs (more than the machine has:
# SlurmdParameters=config_overrides). Processes are tracked by parentage
# and not confined (proctrack/linuxproc, task/none), no accounting.
#
# slurm_wait_idle SECONDS: waits until every node is idle.
# slurm_exec CMD...: CMD in the login namespace with SLURM_CONF set (never
# run a Slurm client without it: it would look the controller up in DNS).
# slurm_down (rig_down calls it) ends the daemons it started, by pid:
# SIGTERM, and SIGKILL to whatever is left after a grace of 2 s (slurmctld
# may hang saving its state). A step's slurmstepd, which ignores SIGTERM,
# and its tasks end with the namespaces (rig_down: SIGKILL to every
# process still in one).

slurm_up() {
	local n k t
	n=$(grep -c '^Host ns[0-9]' "$RIG/ssh_config")
	RIG_SLURM=$RIG/slurm
	export RIG_SLURM
	mkdir -p "$RIG_SLURM/state"
	for k in $(seq 1 "$n"); do
		mkdir -p "$RIG_SLURM/spool/ns$k"
	done
	chmod 755 "$RIG_SLURM"
	head -c 1024 /dev/urandom >"$RIG_SLURM/munge.key"
	chmod 400 "$RIG_SLURM/munge.key"
	/usr/sbin/munged --foreground --force \
		--socket="$RIG_SLURM/munge.sock" \
		--key-file="$RIG_SLURM/munge.key" \
		--pid-file="$RIG_SLURM/munged.pid" \
		--seed-file="$RIG_SLURM/munge.seed" \
		--log-file="$RIG_SLURM/munged.log" >>"$RIG_SLURM/munged.log" 2>&1 &
	echo $! >>"$RIG_SLURM/pids"
	cat >"$RIG_SLURM/slurm.conf" <<CONF
ClusterName=hvdrig
SlurmctldHost=login(10.251.0.2)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$RIG_SLURM/munge.sock
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$RIG_SLURM/state
SlurmdSpoolDir=$RIG_SLURM/spool/%n
SlurmctldPidFile=$RIG_SLURM/slurmctld.pid
SlurmdPidFile=$RIG_SLURM/slurmd.%n.pid
SlurmctldLogFile=$RIG_SLURM/slurmctld.log
SlurmdLogFile=$RIG_SLURM/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
SlurmdTimeout=30
KillWait=2
MessageTimeout=5
NodeName=ns[1-$n] NodeAddr=10.251.0.[11-$((10 + n))] CPUs=4 State=UNKNOWN
PartitionName=rig Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
	for t in $(seq 1 100); do
		[ -S "$RIG_SLURM/munge.sock" ] && break
		sleep 0.05
	done
	nsenter --net="/run/netns/${RIG_NS}c" unshare --uts sh -c \
		"hostname login && exec /usr/sbin/slurmctld -D -f '$RIG_SLURM/slurm.conf'" \
		>>"$RIG_SLURM/slurmctld.err" 2>&1 &
	echo $! >>"$RIG_SLURM/pids"
	for k in $(seq 1 "$n"); do
		slurm_slurmd_start "$k"
	done
	slurm_wait_idle 10 && return 0
	echo "the Slurm cluster did not come up:" >&2
	slurm_exec timeout 2 sinfo -N >&2 || true
	tail -n 20 "$RIG_SLURM"/*.log "$RIG_SLURM"/*.err >&2
	return 1
}

# slurm_slurmd_start K [CMD...]: node nsK's slurmd, started through CMD
# (prlimit with its options, say), which execs it.
slurm_slurmd_start() {
	local k=$1
	shift
	# Not `ip netns exec`: it remounts /sys, and slurmd then cannot set
	# up its cgroup plugin.
	"$@" nsenter --net="/run/netns/$RIG_NS$k" unshare --uts sh -c \
		"hostname ns$k && exec /usr/sbin/slurmd -D -N ns$k -f '$RIG_SLURM/slurm.conf'" \
		>>"$RIG_SLURM/slurmd.ns$k.err" 2>&1 &
	echo $! >>"$RIG_SLURM/pids"
}

# slurm_slurmd_restart K [CMD...]: node nsK's slurmd ended (SIGTERM, by
# its pid, and out of the pids that slurm_down ends) and started again
# through CMD; true once every node is idle again.
slurm_slurmd_restart() {
	local k=$1 pid t
	shift
	pid=$(pgrep -f "slurmd -D -N ns$k -f $RIG_SLURM/slurm.conf")
	[ -n "$pid" ] || return 1
	kill "$pid"
	for t in $(seq 1 50); do
		# A zombie has ended (its parent reaps it in its own time).
		[ -d "/proc/$pid" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$pid/stat" 2>/dev/null ||
			break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	sed -i "/^$pid\$/d" "$RIG_SLURM/pids"
	slurm_slurmd_start "$k" "$@"
	slurm_wait_idle 30
}

# slurm_wait_idle SECONDS: true once every node is idle (no job, none
# still completing), false after SECONDS.
slurm_wait_idle() {
	local n t
	n=$(grep -c '^Host ns[0-9]' "$RIG/ssh_config")
	for t in $(seq 1 $(($1 * 10))); do
		[ "$(slurm_exec timeout 2 sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)" -eq "$n" ] &&
			return 0
		sleep 0.1
	done
	return 1
}

slurm_exec() {
	rig_ns_exec env SLURM_CONF="$RIG_SLURM/slurm.conf" "$@"
}

slurm_down() {
	local pid t k left
	[ -n "${RIG_SLURM-}" ] && [ -f "$RIG_SLURM/pids" ] || return 0
	while read -r pid; do
		kill "$pid" 2>/dev/null || true
	done <"$RIG_SLURM/pids"
	for t in $(seq 1 20); do
		left=0
		while read -r pid; do
			# A zombie has ended (PID 1 reaps it in its own time).
			[ -d "/proc/$pid" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$pid/stat" 2>/dev/null &&
				left=1
		done <"$RIG_SLURM/pids"
		[ "$left" = 0 ] && break
		sleep 0.1
	done
	while read -r pid; do
		kill -KILL "$pid" 2>/dev/null || true
	done <"$RIG_SLURM/pids"
	rm -f "$RIG_SLURM/pids"
}
