# rig.bash: several SSH hosts on one machine, for the cluster tests.
#
# rig_up N: N loopback hosts node1..nodeN on 127.0.0.2.., one sshd each,
# each in a UTS namespace of its own (it reports its own hostname) and a
# mount namespace of its own (so a test can hide a folder from one host).
# A fresh host key per host, one user key, an authorized_keys entry whose
# environment="HOME=..." keeps logins from reading the machine's own shell
# start-up files, known hosts and an ssh config (Host nodeN) in $RIG.
# rig_down ends every sshd it started, by pid, and removes $RIG.
#
# Requires root (unshare, sshd). Everything listens on 127.0.0.0/8.

# Each test of a rig file: skip without the rig (var: RIG, or RIG_NS for
# the namespace hosts); a folder for pid files (PIDDIR); only the rig's
# keys (no agent, no keys of the machine's own user); and SSH, the options
# every hvdrun of the test passes, remote workers getting PIDDIR.
rig_test_setup() {
	[ -n "${!1-}" ] || skip "no rig"
	export PIDDIR=$BATS_TEST_TMPDIR/pids
	mkdir -p "$PIDDIR"
	unset SSH_AUTH_SOCK
	export HOME=$BATS_TEST_TMPDIR
	SSH=(--ssh-config "$RIG/ssh_config" -x PIDDIR)
}

# Rank 0 printed its agent's resident size (`grep VmRSS /proc/$PPID/status`
# in its command): $output has that line, under $1 kB.
assert_rank0_agent_rss_under() {
	local rss
	rss=$(sed -n 's/^\[0\]<stdout>:VmRSS:[[:space:]]*\([0-9]*\) kB$/\1/p' <<<"$output")
	[ -n "$rss" ] && [ "$rss" -lt "$1" ] && return 0
	[ -n "$rss" ] && echo "rank 0's agent: VmRSS $rss kB, over $1 kB" ||
		echo "rank 0 printed no VmRSS line of its agent"
	return 1
}

rig_up() {
	local n=$1 i
	RIG=$(mktemp -d "${TMPDIR:-/tmp}/hvdrun-rig.XXXXXX")
	RIG_PORT=$((20000 + RANDOM % 20000))
	export RIG RIG_PORT
	mkdir -p "$RIG/home" "$RIG/hidden" /run/sshd
	ssh-keygen -q -t ed25519 -N '' -f "$RIG/id_ed25519" -C rig </dev/null
	ssh-keygen -q -t ed25519 -N '' -f "$RIG/wrong_key" -C wrong </dev/null
	printf 'environment="HOME=%s" %s\n' "$RIG/home" "$(cat "$RIG/id_ed25519.pub")" \
		>"$RIG/authorized_keys"
	: >"$RIG/known_hosts"
	: >"$RIG/sshd.pids"
	{
		echo "Host node*"
		echo "  Port $RIG_PORT"
		echo "  User root"
		echo "  IdentityFile $RIG/id_ed25519"
		echo "  UserKnownHostsFile $RIG/known_hosts"
		for i in $(seq 1 "$n"); do
			echo "Host node$i"
			echo "  HostName 127.0.0.$((i + 1))"
		done
	} >"$RIG/ssh_config"
	for i in $(seq 1 "$n"); do
		rig_start_sshd "$i"
	done
	for i in $(seq 1 "$n"); do
		rig_wait_port "127.0.0.$((i + 1))" || return 1
	done
}

# rig_start_sshd I [skew]: with skew, the clocks of host I's sessions
# differ from this machine's: monotonic and boot clocks a day ahead (a
# time namespace, which sshd's children enter), the wall clock three
# hours ahead (libfaketime, through sshd's SetEnv).
rig_start_sshd() {
	local i=$1 addr=127.0.0.$(($1 + 1)) clock=()
	[ -f "$RIG/host_key$i" ] ||
		ssh-keygen -q -t ed25519 -N '' -f "$RIG/host_key$i" -C "node$i" </dev/null
	cat >"$RIG/sshd_config$i" <<-CFG
	ListenAddress $addr:$RIG_PORT
	HostKey $RIG/host_key$i
	PidFile none
	AuthorizedKeysFile $RIG/authorized_keys
	StrictModes no
	PermitRootLogin prohibit-password
	PasswordAuthentication no
	KbdInteractiveAuthentication no
	UsePAM no
	PermitUserEnvironment yes
	MaxStartups 200
	UseDNS no
	LogLevel ERROR
	CFG
	if [ "${2-}" = skew ]; then
		clock=(--time --monotonic 86400 --boottime 86400)
		# libfaketime leaves its segment in /dev/shm behind every
		# process that execs (sh -c): rig_faketime_clean removes those
		# made since, once their process is gone.
		[ -f "$RIG/shm.before" ] || ls /dev/shm >"$RIG/shm.before"
		# An agent built with AddressSanitizer must let the library in.
		echo "SetEnv LD_PRELOAD=$(dpkg -L libfaketime | grep '/libfaketimeMT\.so\.1$') FAKETIME=+3h ASAN_OPTIONS=verify_asan_link_order=0" \
			>>"$RIG/sshd_config$i"
	fi
	# The host's own hostname, and a tmpfs over $RIG/hidden: a folder made
	# there on this machine does not exist on the host.
	unshare "${clock[@]}" --uts --mount --propagation private sh -c \
		"hostname node$i && mount -t tmpfs none '$RIG/hidden' && exec /usr/sbin/sshd -D -e -f '$RIG/sshd_config$i'" \
		2>>"$RIG/sshd$i.log" &
	echo "$i $!" >>"$RIG/sshd.pids"
}

# Stop host ID's sshd (1, 2.. or nsK) and its sessions; forget its pid.
rig_stop_sshd() {
	local id=$1 pid
	pid=$(rig_sshd_pid "$id")
	[ -n "$pid" ] || return 0
	pkill -KILL -P "$pid" 2>/dev/null || true
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	local t
	for t in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	awk -v i="$id" '$1 != i' "$RIG/sshd.pids" >"$RIG/sshd.pids.new"
	mv "$RIG/sshd.pids.new" "$RIG/sshd.pids"
	rig_faketime_clean
}

# The segments libfaketime left in /dev/shm (faketime_shm_PID and its
# semaphore) since a skewed host started, whose process has ended.
rig_faketime_clean() {
	local f name pid
	[ -f "$RIG/shm.before" ] || return 0
	for f in /dev/shm/faketime_shm_* /dev/shm/sem.faketime_sem_*; do
		[ -e "$f" ] || continue
		name=${f##*/}
		grep -qxF "$name" "$RIG/shm.before" && continue
		pid=${name##*_}
		kill -0 "$pid" 2>/dev/null && continue
		rm -f "$f"
	done
}

rig_sshd_pid() {
	awk -v i="$1" '$1 == i { p = $2 } END { print p }' "$RIG/sshd.pids"
}

# Wait (at most 5 s) until addr accepts connections on the rig's port.
rig_wait_port() {
	local addr=$1 t
	for t in $(seq 1 100); do
		if (exec 3<>"/dev/tcp/$addr/$RIG_PORT") 2>/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	echo "sshd on $addr:$RIG_PORT did not come up" >&2
	cat "$RIG"/sshd*.log >&2
	return 1
}

# Wait at most TENTHS tenths of a second until no process's command line
# matches PATTERN (pgrep -f, on every host: the rig's hosts share this pid
# space); else print those left, their ids in RIG_LEFT, and fail.
rig_wait_gone() {
	local pattern=$1 tenths=$2 i
	for i in $(seq 1 "$tenths"); do
		pgrep -f -- "$pattern" >/dev/null || return 0
		sleep 0.1
	done
	pgrep -af -- "$pattern"
	RIG_LEFT=$(pgrep -f -- "$pattern" || true)
	return 1
}

# Every step may find its part gone already: none fails the caller (a
# script under set -e that calls this from its EXIT trap).
rig_down() {
	local i pid
	[ -n "${RIG-}" ] && [ -d "$RIG" ] || return 0
	# A Slurm cluster on the rig (slurm.bash) first.
	if declare -F slurm_down >/dev/null; then
		slurm_down
	fi
	while read -r i pid; do
		kill -CONT "$pid" 2>/dev/null || true
		# Its sessions first: an orphaned session waiting on a dead
		# peer would outlive the rig.
		pkill -KILL -P "$pid" 2>/dev/null || true
		kill "$pid" 2>/dev/null || true
	done <"$RIG/sshd.pids"
	while read -r i pid; do
		wait "$pid" 2>/dev/null || true
	done <"$RIG/sshd.pids"
	rig_faketime_clean
	# The tmpfs is mounted inside the sshds' namespaces only.
	umount "$RIG/hidden" 2>/dev/null || true
	if [ -f "$RIG/netns.tag" ]; then
		local tag ns
		tag=$(cat "$RIG/netns.tag")
		# Deleting a namespace deletes its end of every veth pair.
		for ns in $(ip netns list | awk '{print $1}' | grep "^$tag" || true); do
			# Whatever still runs in it (a session cut off by a
			# test) would keep the namespace alive.
			ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
			ip netns del "$ns" || true
		done
	fi
	# Open MPI's shared-memory segments of ranks on the rig's hosts (named
	# after the host: node1, ns1, ...), which killed ranks (a job
	# interrupted) leave behind; not one that a process still has open.
	for i in /dev/shm/vader_segment.node[0-9]*.* \
		/dev/shm/vader_segment.ns[0-9]*.*; do
		[ -e "$i" ] && ! fuser -s "$i" 2>/dev/null && rm -f "$i" || true
	done
	# Their session folders, which killed daemons leave: a job's on the
	# rig's hosts (/tmp/ompi.ns1.0/jf.N) when no process has a file of it
	# open, and mpirun's own (ompi.HOST.UID/pid.N) when process N is gone.
	for i in /tmp/ompi.node[0-9]*.*/jf.* /tmp/ompi.ns[0-9]*.*/jf.*; do
		[ -d "$i" ] && ! find "$i" -type f -print0 |
			xargs -0 -r fuser -s 2>/dev/null && rm -rf "$i" || true
	done
	for i in "${TMPDIR:-/tmp}"/ompi.*/pid.*; do
		[ -d "$i" ] && ! kill -0 "${i##*/pid.}" 2>/dev/null &&
			rm -rf "$i" || true
	done
	rmdir /tmp/ompi.node[0-9]*.* /tmp/ompi.ns[0-9]*.* 2>/dev/null || true
	rm -rf "$RIG"
	return 0
}

# rig_ns_up N [D]: N namespace hosts ns1..nsN, each a network namespace
# with eth0 (10.251.0.(10+k)/24) joined by veth to a bridge that lives in
# a namespace of its own, and a client namespace (10.251.0.2) to run
# hvdrun from: `rig_ns_exec CMD...`. The first D hosts (default 2) also
# have eth1 (10.252.k.1/24), a veth into a namespace of its own: it routes
# to none of the other hosts. ns1 and ns2 also have docker0, a bridge
# with the same address on both (172.17.0.1/16), as docker's bridge has on
# every host (not with RIG_NS_DOCKER=0). With RIG_NS_SILENT=1, every host routes
# 10.252.0.0/16 through a gateway on the bridge that drops what it gets
# without a word, so a connection to another host's eth1 waits for its
# timeout instead of failing at once. Each host runs an sshd in its own UTS namespace; "Host
# nsK" entries are added to $RIG/ssh_config. These addresses exist only
# inside the namespaces: talk to them from inside one. Call after rig_up;
# rig_down tears everything down.
rig_ns_up() {
	local n=$1 deadend=${2:-2} k tag
	tag=$(basename "$RIG" | tr -cd 'A-Za-z0-9' | tail -c 6)
	RIG_NS=hvd$tag
	export RIG_NS
	echo "$RIG_NS" >"$RIG/netns.tag"
	ip netns add "${RIG_NS}br"
	ip -n "${RIG_NS}br" link add br0 type bridge
	ip -n "${RIG_NS}br" link set br0 up
	# The gateway of RIG_NS_SILENT: it answers ARP but forwards nothing
	# (a new namespace does not forward) and sends no ICMP back.
	ip -n "${RIG_NS}br" addr add 10.251.0.254/24 dev br0
	for k in c $(seq 1 "$n"); do
		local ns=$RIG_NS$k addr
		[ "$k" = c ] && addr=10.251.0.2 || addr=10.251.0.$((10 + k))
		ip netns add "$ns"
		ip -n "$ns" link set lo up
		ip link add "v${RIG_NS}$k" type veth peer name "b${RIG_NS}$k"
		ip link set "v${RIG_NS}$k" netns "$ns"
		ip link set "b${RIG_NS}$k" netns "${RIG_NS}br"
		ip -n "$ns" link set "v${RIG_NS}$k" name eth0
		ip -n "$ns" addr add "$addr/24" dev eth0
		ip -n "$ns" link set eth0 up
		ip -n "${RIG_NS}br" link set "b${RIG_NS}$k" master br0
		ip -n "${RIG_NS}br" link set "b${RIG_NS}$k" up
		if [ "$k" != c ] && [ "$k" -le "$deadend" ]; then
			# eth1 leads to a namespace of its own, and no further.
			ip netns add "${RIG_NS}x$k"
			ip link add "x${RIG_NS}$k" type veth peer name "y${RIG_NS}$k"
			ip link set "x${RIG_NS}$k" netns "$ns"
			ip link set "y${RIG_NS}$k" netns "${RIG_NS}x$k"
			ip -n "$ns" link set "x${RIG_NS}$k" name eth1
			ip -n "$ns" addr add "10.252.$k.1/24" dev eth1
			ip -n "$ns" link set eth1 up
			ip -n "${RIG_NS}x$k" addr add "10.252.$k.2/24" dev "y${RIG_NS}$k"
			ip -n "${RIG_NS}x$k" link set "y${RIG_NS}$k" up
		fi
		if { [ "$k" = 1 ] || [ "$k" = 2 ]; } && [ "${RIG_NS_DOCKER-1}" = 1 ]; then
			# A bridge with one container's veth in it, so that
			# it has a carrier, as docker's has.
			ip -n "$ns" link add docker0 type bridge forward_delay 0
			ip -n "$ns" link add vethc0 type veth peer name vethc1
			ip -n "$ns" link set vethc0 master docker0
			ip -n "$ns" addr add 172.17.0.1/16 dev docker0
			ip -n "$ns" link set vethc0 up
			ip -n "$ns" link set vethc1 up
			ip -n "$ns" link set docker0 up
		fi
		if [ "$k" != c ] && [ "${RIG_NS_SILENT-}" = 1 ]; then
			ip -n "$ns" route add 10.252.0.0/16 via 10.251.0.254
		fi
	done
	{
		echo "Host ns*"
		echo "  Port $RIG_PORT"
		echo "  User root"
		echo "  IdentityFile $RIG/id_ed25519"
		echo "  UserKnownHostsFile $RIG/known_hosts"
		for k in $(seq 1 "$n"); do
			echo "Host ns$k"
			echo "  HostName 10.251.0.$((10 + k))"
		done
	} >>"$RIG/ssh_config"
	for k in $(seq 1 "$n"); do
		rig_start_ns_sshd "$k"
	done
	# docker0 has a carrier once its port forwards.
	for k in 1 2; do
		[ "$k" -le "$n" ] && [ "${RIG_NS_DOCKER-1}" = 1 ] || continue
		local t
		for t in $(seq 1 100); do
			ip -n "$RIG_NS$k" link show docker0 | grep -q LOWER_UP && break
			sleep 0.05
		done
	done
	for k in $(seq 1 "$n"); do
		rig_ns_wait_port "10.251.0.$((10 + k))" || return 1
	done
}

rig_start_ns_sshd() {
	local k=$1
	[ -f "$RIG/ns_host_key$k" ] ||
		ssh-keygen -q -t ed25519 -N '' -f "$RIG/ns_host_key$k" -C "ns$k" </dev/null
	sed -e "s|^ListenAddress .*|ListenAddress 0.0.0.0:$RIG_PORT|" \
		-e "s|^HostKey .*|HostKey $RIG/ns_host_key$k|" \
		"$RIG/sshd_config1" >"$RIG/ns_sshd_config$k"
	ip netns exec "$RIG_NS$k" unshare --uts --mount --propagation private sh -c \
		"hostname ns$k && mount -t tmpfs none '$RIG/hidden' && exec /usr/sbin/sshd -D -e -f '$RIG/ns_sshd_config$k'" \
		2>>"$RIG/ns_sshd$k.log" &
	echo "ns$k $!" >>"$RIG/sshd.pids"
}

# rig_other_hvdrun: OTHER, an hvdrun of another agent protocol and
# version (make test builds it; the test is skipped without it), and this
# hvdrun's VERSION and agent PROTO (hvdrun_says, ../cli/helper.bash).
rig_other_hvdrun() {
	OTHER=$ROOT/build/tests/other/hvdrun
	[ -x "$OTHER" ] || skip "no $OTHER (make build/tests/other/hvdrun)"
	VERSION=$(hvdrun_says version)
	PROTO=$(hvdrun_says agent)
}

rig_ns_exec() {
	ip netns exec "${RIG_NS}c" "$@"
}

rig_ns_wait_port() {
	local t
	for t in $(seq 1 100); do
		if rig_ns_exec bash -c "exec 3<>/dev/tcp/$1/$RIG_PORT" 2>/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	echo "sshd on $1:$RIG_PORT did not come up" >&2
	cat "$RIG"/ns_sshd*.log >&2
	return 1
}
