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

rig_up() {
	local n=$1 i
	RIG=$(mktemp -d /tmp/hvdrun-rig.XXXXXX)
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

rig_start_sshd() {
	local i=$1 addr=127.0.0.$(($1 + 1))
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
	MaxSessions 200
	UseDNS no
	LogLevel ERROR
	CFG
	# The host's own hostname, and a tmpfs over $RIG/hidden: a folder made
	# there on this machine does not exist on the host.
	unshare --uts --mount --propagation private sh -c \
		"hostname node$i && mount -t tmpfs none '$RIG/hidden' && exec /usr/sbin/sshd -D -e -f '$RIG/sshd_config$i'" \
		2>>"$RIG/sshd$i.log" &
	echo "$i $!" >>"$RIG/sshd.pids"
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

rig_down() {
	local i pid
	[ -n "${RIG-}" ] && [ -d "$RIG" ] || return 0
	while read -r i pid; do
		kill -CONT "$pid" 2>/dev/null
		kill "$pid" 2>/dev/null
	done <"$RIG/sshd.pids"
	while read -r i pid; do
		wait "$pid" 2>/dev/null
	done <"$RIG/sshd.pids"
	umount "$RIG/hidden" 2>/dev/null
	rm -rf "$RIG"
}
