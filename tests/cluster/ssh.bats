#!/usr/bin/env bats
# hvdrun over SSH against real sshd servers on loopback addresses (rig.bash):
# plan, hostnames and environment per rank, failures, signals, hvdrun
# killed, hosts down or frozen, keys, users, folders, awkward values.
bats_require_minimum_version 1.5.0
load ../cli/helper
load rig

setup_file() {
	[ "$(id -u)" -eq 0 ] || skip "the rig needs root (unshare, sshd)"
	rig_up 3
	export RIG RIG_PORT
}

teardown_file() {
	rig_down
}

setup() {
	rig_test_setup RIG
}

# Every test ends with no agent left on any host (within 5 s).
teardown() {
	rig_wait_gone "^$HVDRUN --agent" 50 && return 0
	echo "agents left behind"
	kill $RIG_LEFT
	return 1
}

wait_gone() {
	local i
	for i in $(seq 1 60); do
		assert_no_leftovers >/dev/null && return 0
		sleep 0.1
	done
	assert_no_leftovers
}

@test "ranks, hostnames and environment per rank across hosts" {
	run "$HVDRUN" "${SSH[@]}" -H node1:2,node2:2,node3:1 sh -c \
		'echo "$(hostname) $HOROVOD_RANK/$HOROVOD_SIZE $HOROVOD_HOSTNAME l=$HOROVOD_LOCAL_RANK/$HOROVOD_LOCAL_SIZE c=$HOROVOD_CROSS_RANK/$HOROVOD_CROSS_SIZE $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR $(pwd) g=$GROUP_RANK/$GROUP_WORLD_SIZE $ROLE_RANK/$ROLE_WORLD_SIZE"'
	assert_success
	assert_line "[0]<stdout>:node1 0/5 node1 l=0/2 c=0/3 0 5 0 2 node1 $PWD g=0/3 0/5"
	assert_line "[1]<stdout>:node1 1/5 node1 l=1/2 c=0/2 1 5 1 2 node1 $PWD g=0/3 1/5"
	assert_line "[3]<stdout>:node2 3/5 node2 l=1/2 c=1/2 3 5 1 2 node1 $PWD g=1/3 3/5"
	assert_line "[4]<stdout>:node3 4/5 node3 l=0/1 c=2/3 4 5 0 1 node1 $PWD g=2/3 4/5"
	# The host keys were recorded (accept-new).
	[ "$(grep -c . "$RIG/known_hosts")" -ge 3 ]
}

@test "MASTER_PORT is one port for the job, found on rank 0's host" {
	run "$HVDRUN" "${SSH[@]}" -H node2:1,node1:2 sh -c 'echo $MASTER_ADDR:$MASTER_PORT'
	assert_success
	[ "$(printf '%s\n' "${lines[@]}" | sed 's/^.*://' | sort -u | wc -l)" -eq 1 ]
	assert_line --regexp '^\[0\]<stdout>:node2:[0-9]+$'
}

@test "-x values and the tuning options reach remote workers" {
	run env -u PYTHONUNBUFFERED "$HVDRUN" "${SSH[@]}" -H node1 -x FOO=bar --cycle-time-ms 3 \
		"$WORKERS/env.sh" FOO HOROVOD_CYCLE_TIME PYTHONUNBUFFERED
	assert_success
	assert_line "[0]<stdout>:FOO=bar"
	assert_line "[0]<stdout>:HOROVOD_CYCLE_TIME=3"
	assert_line "[0]<stdout>:PYTHONUNBUFFERED=1"
}

@test "an environment value with every awkward byte arrives byte for byte and in no command line" {
	local value
	value=$(printf 'sp ace\t"dq" %s $HOME `id` $(id) \\ ; | & * ? [x] ~ #\nline2 \001\177\377 end' "'sq'")
	printf '%s' "$value" >"$BATS_TEST_TMPDIR/expected"
	printf 'line2 \001\177' >"$BATS_TEST_TMPDIR/needle"
	export AWKWARD=$value
	"$HVDRUN" "${SSH[@]}" -H node1:1,node2:1 -x AWKWARD -x "SECOND=$value" sh -c \
		'printf "%s" "$AWKWARD" >"$PIDDIR/got$HOROVOD_RANK"; printf "%s" "$SECOND" >"$PIDDIR/second$HOROVOD_RANK"; echo $$ >"$PIDDIR/rank$HOROVOD_RANK"; sleep 1' &
	local pid=$!
	wait_pids 6
	# No process on any host shows the value in its command line.
	local f c
	for f in $(grep -lF -f "$BATS_TEST_TMPDIR/needle" /proc/[0-9]*/cmdline); do
		# Read once: a process found may have ended since, or have
		# been a fork of hvdrun (its command line) that has run
		# another program since; what it runs now is what counts.
		c=$(tr '\0' ' ' <"$f" 2>/dev/null) || continue
		grep -qF -f "$BATS_TEST_TMPDIR/needle" <<<"$c" || continue
		# hvdrun's own -x argument, typed by the user, is fine.
		[[ $c != "$HVDRUN "* ]] || continue
		echo "in a command line: $(head -c 200 <<<"$c")"
		return 1
	done
	wait $pid
	cmp "$BATS_TEST_TMPDIR/expected" "$PIDDIR/got0"
	cmp "$BATS_TEST_TMPDIR/expected" "$PIDDIR/got1"
	cmp "$BATS_TEST_TMPDIR/expected" "$PIDDIR/second1"
	rm "$PIDDIR"/got* "$PIDDIR"/second*
}

@test "a worker failing on a remote host ends the job with its code" {
	SECONDS=0
	run "$HVDRUN" "${SSH[@]}" -H node1:2,node2:2 "$WORKERS/fail.sh" 3 7
	assert_failure 7
	assert_line "hvdrun: rank 3 on node2 exited with code 7; stopping the job"
	[ "$SECONDS" -lt 8 ]
	wait_gone
}

@test "a remote worker killed by a signal: 128+N" {
	run "$HVDRUN" "${SSH[@]}" -H node1:1,node3:1 "$WORKERS/fail.sh" 1 -KILL
	assert_failure 137
	assert_line "hvdrun: rank 1 on node3 was killed by signal 9 (Killed); stopping the job"
	wait_gone
}

@test "Ctrl-C ends every worker on every host, children included" {
	env --default-signal=INT "$HVDRUN" "${SSH[@]}" -H node1:2,node2:1,node3:1 \
		"$WORKERS/family.sh" >"$BATS_TEST_TMPDIR/out" 2>&1 &
	local pid=$! status=0
	wait_pids 12
	SECONDS=0
	kill -INT $pid
	wait $pid || status=$?
	[ "$status" -eq 130 ]
	[ "$SECONDS" -lt 6 ]
	wait_gone
}

@test "SIGTERM is forwarded to remote workers" {
	env --default-signal=TERM "$HVDRUN" "${SSH[@]}" -H node2:2 \
		"$WORKERS/family.sh" >"$BATS_TEST_TMPDIR/out" 2>&1 &
	local pid=$! status=0
	wait_pids 6
	kill -TERM $pid
	wait $pid || status=$?
	[ "$status" -eq 143 ]
	run cat "$BATS_TEST_TMPDIR/out"
	assert_line "[1]<stdout>:rank 1 got TERM"
	wait_gone
}

@test "SIGUSR1 reaches every remote worker, not its children, and the job goes on" {
	local out=$BATS_TEST_TMPDIR/out i status=0
	"$HVDRUN" "${SSH[@]}" -H node1:1,node2:2 "$WORKERS/usr1.sh" >"$out" 2>&1 &
	local pid=$!
	for i in $(seq 1 100); do
		[ "$(grep -c '<stdout>:ready' "$out")" -eq 3 ] && break
		sleep 0.1
	done
	kill -USR1 $pid
	wait $pid || status=$?
	[ "$status" -eq 0 ]
	run cat "$out"
	assert_line "[0]<stdout>:USR1 yes, child alive"
	assert_line "[1]<stdout>:USR1 yes, child alive"
	assert_line "[2]<stdout>:USR1 yes, child alive"
	wait_gone
}

@test "SIGKILL of hvdrun: remote workers and their children end within 5 s" {
	"$HVDRUN" "${SSH[@]}" -H node1:1,node2:2 "$WORKERS/family.sh" >/dev/null 2>&1 &
	local pid=$!
	wait_pids 9
	kill -KILL $pid
	wait $pid || true
	SECONDS=0
	wait_gone
	[ "$SECONDS" -le 5 ]
}

@test "a host whose sshd is down: one line naming it, nothing started" {
	local p
	p=$(rig_sshd_pid 3)
	kill "$p"
	wait "$p" 2>/dev/null || true
	run "$HVDRUN" "${SSH[@]}" -H node1:1,node2:1,node3:1 \
		sh -c 'echo $$ >"$PIDDIR/rank$HOROVOD_RANK"; sleep 5'
	rig_start_sshd 3
	rig_wait_port 127.0.0.4
	assert_failure 125
	assert_output --regexp "^hvdrun: cannot connect to host 'node3': .*(refused|Connection)"
	[ "${#lines[@]}" -eq 1 ]
	[ -z "$(ls "$PIDDIR")" ]
}

@test "a frozen sshd (SIGSTOP) mid-start: the start timeout names it" {
	local p
	p=$(rig_sshd_pid 2)
	kill -STOP "$p"
	SECONDS=0
	run "$HVDRUN" "${SSH[@]}" --start-timeout 2 -H node1:1,node2:1 \
		sh -c 'echo $$ >"$PIDDIR/rank$HOROVOD_RANK"; sleep 5'
	kill -CONT "$p"
	assert_failure 125
	assert_output --partial "node2"
	[ "${#lines[@]}" -eq 1 ]
	[ "$SECONDS" -lt 6 ]
	[ -z "$(ls "$PIDDIR")" ]
}

@test "a wrong key is refused with the host and user named" {
	grep -v IdentityFile "$RIG/ssh_config" >"$BATS_TEST_TMPDIR/ssh_config"
	run "$HVDRUN" --ssh-config "$BATS_TEST_TMPDIR/ssh_config" -i "$RIG/wrong_key" -H node1 true
	assert_failure 125
	assert_output "hvdrun: cannot log in to host 'node1' as 'root': no key was accepted (tried the ssh agent, the identity file and the default keys)"
	# The right one, given with -i, works.
	run "$HVDRUN" --ssh-config "$BATS_TEST_TMPDIR/ssh_config" -i "$RIG/id_ed25519" -H node1 hostname
	assert_success
	assert_output "[0]<stdout>:node1"
}

@test "-p, a hostfile's port= and user@ win over the SSH config" {
	run "$HVDRUN" "${SSH[@]}" -p 9 -H node1 true
	assert_failure 125
	assert_output --regexp "cannot connect to host 'node1': .*(refused|Connection)"
	printf 'node1 port=9\n' >"$BATS_TEST_TMPDIR/hosts"
	run "$HVDRUN" "${SSH[@]}" --hostfile "$BATS_TEST_TMPDIR/hosts" true
	assert_failure 125
	assert_output --partial "cannot connect to host 'node1'"
	# The hostfile's port wins over -p.
	printf 'node1 port=%s\n' "$RIG_PORT" >"$BATS_TEST_TMPDIR/hosts"
	run "$HVDRUN" "${SSH[@]}" -p 9 --hostfile "$BATS_TEST_TMPDIR/hosts" hostname
	assert_success
	assert_output "[0]<stdout>:node1"
}

@test "an unknown user is refused" {
	run "$HVDRUN" "${SSH[@]}" -H nosuchuser@node2 true
	assert_failure 125
	assert_output --partial "cannot log in to host 'node2' as 'nosuchuser'"
}

@test "a changed host key is refused, naming the host and the new fingerprint" {
	cp "$RIG/known_hosts" "$BATS_TEST_TMPDIR/saved"
	# Record another key for node1's address.
	printf '[127.0.0.2]:%s %s\n' "$RIG_PORT" "$(cut -d' ' -f1,2 "$RIG/wrong_key.pub")" >"$RIG/known_hosts"
	run "$HVDRUN" "${SSH[@]}" -H node1 true
	cp "$BATS_TEST_TMPDIR/saved" "$RIG/known_hosts"
	assert_failure 125
	assert_output --regexp "^hvdrun: host 'node1': the host key has changed \(now SHA256:[A-Za-z0-9+/]+\); refusing to connect"
}

@test "--ssh-host-key-checking yes refuses an unknown host; no skips the check" {
	: >"$BATS_TEST_TMPDIR/empty_known"
	sed "s|$RIG/known_hosts|$BATS_TEST_TMPDIR/empty_known|" "$RIG/ssh_config" >"$BATS_TEST_TMPDIR/ssh_config"
	run "$HVDRUN" --ssh-config "$BATS_TEST_TMPDIR/ssh_config" --ssh-host-key-checking yes -H node3 true
	assert_failure 125
	assert_output --regexp "host 'node3' is not in .*empty_known \(key SHA256:"
	run "$HVDRUN" --ssh-config "$BATS_TEST_TMPDIR/ssh_config" --ssh-host-key-checking no -H node3 true
	assert_success
	[ ! -s "$BATS_TEST_TMPDIR/empty_known" ]
}

@test "a working directory missing on the remote host is an error naming both" {
	mkdir -p "$RIG/hidden/job"
	cd "$RIG/hidden/job"
	run "$HVDRUN" "${SSH[@]}" -H node2 true
	assert_failure 125
	assert_line "[0]<stderr>:hvdrun: on node2: cannot use the working directory '$RIG/hidden/job': No such file or directory"
	assert_line "hvdrun: rank 0 on node2 exited with code 125; stopping the job"
}

@test "--wdir: remote workers start there (a relative command found from there), where hvdrun's own folder is not; one missing on a host is named" {
	local wd=$BATS_TEST_TMPDIR/wd
	mkdir -p "$wd" "$RIG/hidden/here"
	printf '#!/bin/sh\necho "$(hostname) $(pwd) $PWD"\n' >"$wd/show.sh"
	chmod +x "$wd/show.sh"
	# hvdrun's folder exists on this machine only ($RIG/hidden is each
	# host's own).
	cd "$RIG/hidden/here"
	run "$HVDRUN" "${SSH[@]}" -H node1:1,node2:1 --wdir "$wd" ./show.sh
	assert_success
	assert_line "[0]<stdout>:node1 $wd $wd"
	assert_line "[1]<stdout>:node2 $wd $wd"
	run "$HVDRUN" "${SSH[@]}" -H node2 --wdir "$RIG/hidden/here" true
	assert_failure 125
	assert_line "[0]<stderr>:hvdrun: on node2: cannot use the working directory '$RIG/hidden/here': No such file or directory"
}

@test "a command missing on the remote host: 127, named" {
	run -127 "$HVDRUN" "${SSH[@]}" -H node1 no-such-command-xyz
	assert_failure 127
	assert_line "[0]<stderr>:hvdrun: on node1: command not found: 'no-such-command-xyz'"
}

@test "--force-ssh starts even this machine's workers over SSH" {
	# libssh matches later Host lines against the HostName set so far:
	# the alias's HostName comes last, as in the rig's own config.
	{ sed 's/^Host node\*$/Host node* localhost/' "$RIG/ssh_config"
	  echo "Host localhost"; echo "  HostName 127.0.0.3"; } >"$BATS_TEST_TMPDIR/ssh_config"
	run "$HVDRUN" --ssh-config "$BATS_TEST_TMPDIR/ssh_config" --force-ssh -H localhost:2 hostname
	assert_success
	assert_line "[0]<stdout>:node2"
	assert_line "[1]<stdout>:node2"
	run "$HVDRUN" --ssh-config "$BATS_TEST_TMPDIR/ssh_config" -H localhost:1 hostname
	assert_line "[0]<stdout>:$(hostname)"
}

@test "more ranks on a host than sshd's MaxSessions (10): more sessions" {
	run "$HVDRUN" "${SSH[@]}" -H node1:23,node2:1 sh -c 'echo "$(hostname) $HOROVOD_LOCAL_RANK"'
	assert_success
	[ "${#lines[@]}" -eq 24 ]
	assert_line "[22]<stdout>:node1 22"
	assert_line "[23]<stdout>:node2 0"
	# One session that asks for more channels than sshd allows fails,
	# naming the host.
	run "$HVDRUN" "${SSH[@]}" --ssh-channels-per-session 12 -H node1:12 true
	assert_failure 125
	assert_output --partial "host 'node1'"
}

@test "libhvd across hosts: collectives and the Iris example over SSH" {
	run "$HVDRUN" "${SSH[@]}" -H node1:2,node2:1,localhost:1 "$SELFTEST" all
	assert_success
	assert_line "[2]<stdout>:rank 2: ok"
	assert_line "[3]<stdout>:rank 3: ok"
	run "$HVDRUN" "${SSH[@]}" -H node1:2,node3:2 "$ROOT/build/examples/iris_mlp" \
		"$ROOT/examples/data/iris.csv" --epochs 50
	assert_success
	assert_line --regexp '^\[0\]<stdout>:epoch  50  loss .* \(4 ranks\)$'
}

@test "hvdrun's environment reaches remote workers over their host's own, as horovodrun's; its host's and session's variables stay, unless -x names one" {
	# Before, remote workers got only what -x gave them: no PATH, no
	# PYTHONPATH, no HOME, where horovodrun's get its whole environment.
	run env FOO_ENV=from-hvdrun HOSTNAME=launcher SSH_CONNECTION="1 2 3 4" \
		PATH="$PATH:/extra" "$HVDRUN" "${SSH[@]}" -H node1 "$WORKERS/env.sh" \
		FOO_ENV HOSTNAME SSH_CONNECTION PWD PATH HOME
	assert_success
	assert_line "[0]<stdout>:FOO_ENV=from-hvdrun"
	assert_line "[0]<stdout>:HOSTNAME=<unset>"
	assert_line "[0]<stdout>:PWD=$PWD"
	assert_line "[0]<stdout>:PATH=$PATH:/extra"
	assert_line "[0]<stdout>:HOME=$HOME"
	# sshd's own, of the session on node1.
	assert_line --regexp '^\[0\]<stdout>:SSH_CONNECTION=[0-9.]+ [0-9]+ [0-9.]+ [0-9]+$'
	run env HOSTNAME=launcher "$HVDRUN" "${SSH[@]}" -H node1 -x HOSTNAME \
		"$WORKERS/env.sh" HOSTNAME
	assert_line "[0]<stdout>:HOSTNAME=launcher"
	# A horovodrun user's job: PYTHONPATH exported, no -x.
	/usr/bin/python3 -c 'import torch' 2>/dev/null || return 0
	run env PYTHONPATH="$ROOT/python" "$HVDRUN" "${SSH[@]}" -H localhost:1,node1:1 \
		/usr/bin/python3 -c 'import torch, hvd.torch as hvd; hvd.init(); print("rank", hvd.rank(), hvd.allreduce(torch.ones(1), op=hvd.Sum).item())'
	assert_success
	assert_line "[1]<stdout>:rank 1 2.0"
}

@test "settings exported in hvdrun's shell reach every host's workers; where one host's differ, its ranks run on rank 0's, its first and rank 0 saying so" {
	local r v
	run env HOROVOD_FUSION_THRESHOLD=0 HOROVOD_CACHE_CAPACITY=0 HVD_SEGMENT_BYTES=4096 \
		"$HVDRUN" "${SSH[@]}" -H localhost:2,node1:2 "$SELFTEST" fusion
	assert_success
	for r in 0 1 2 3; do
		assert_line "[$r]<stdout>:rank $r: ok"
	done
	refute_output --partial "libhvd warning"
	# node1's workers without them (a profile there, say). Before,
	# those ranks fused, cached and cut ring segments their own way and
	# every collective failed after the transport timeout.
	run env HOROVOD_FUSION_THRESHOLD=0 HOROVOD_CACHE_CAPACITY=0 HVD_SEGMENT_BYTES=4096 \
		"$HVDRUN" "${SSH[@]}" -H localhost:2,node1:2 sh -c \
		'[ "$HOROVOD_HOSTNAME" = node1 ] && unset HOROVOD_FUSION_THRESHOLD HOROVOD_CACHE_CAPACITY HVD_SEGMENT_BYTES; exec "$0" fusion' \
		"$SELFTEST"
	assert_success
	for r in 0 1 2 3; do
		assert_line "[$r]<stdout>:rank $r: ok"
	done
	for v in HOROVOD_FUSION_THRESHOLD=0 HOROVOD_CACHE_CAPACITY=0 HVD_SEGMENT_BYTES=4096; do
		assert_line "[2]<stderr>:libhvd warning: agree_setting: ${v%%=*} is unset on this rank (2) but '${v#*=}' on rank 0: every rank runs on rank 0's"
		assert_line "[0]<stderr>:libhvd warning: agree_setting: ${v%%=*} differs from rank 0's ('${v#*=}') on 2 of 4 ranks: 2-3 (rank 2 says its own); every rank runs on rank 0's"
	done
	refute_line --regexp '^\[[13]\]<stderr>:libhvd warning'
}

@test "re-initialisation over SSH: 100 times hvd_shutdown() then hvd_init() at np 3, same ranks, nothing leaked" {
	local kib=2048 r
	[ -z "${HVD_SANITIZER_RUN-}" ] || kib=0
	run "$HVDRUN" "${SSH[@]}" -H node1:1,node2:2 "$ROOT/build/tests/hvd_selftest" resets 100 "$kib"
	assert_success
	refute_output --partial FAIL
	for r in 0 1 2; do
		assert_line "[$r]<stdout>:rank $r: ok"
	done
}

@test "hvd.torch across hosts: the PyTorch Iris example and the optimizer tests over SSH" {
	/usr/bin/python3 -c 'import torch, pytest' 2>/dev/null || skip "/usr/bin/python3 lacks torch or pytest (make deps)"
	# Only hvdrun and its agents are sanitized, not the Python workers'
	# libhvd; they start them over SSH as the C workers of the test before.
	plain_run_only "the sanitized hvdrun starts workers across hosts in the test before"
	run "$HVDRUN" "${SSH[@]}" -H node1:1,node2:2 /usr/bin/python3 \
		"$ROOT/examples/torch_iris.py" "$ROOT/examples/data/iris.csv" --epochs 50
	assert_success
	assert_line --regexp '^\[0\]<stdout>:epoch  50  loss .* accuracy .* \(3 ranks\)$'
	run "$HVDRUN" "${SSH[@]}" -x PYTHONDONTWRITEBYTECODE=1 -H node1:1,node3:1 \
		/usr/bin/python3 -m pytest -q -p no:cacheprovider "$ROOT/tests/python/test_optimizer.py"
	assert_success
	assert_line --regexp '^\[1\]<stdout>:[0-9]+ passed'
	refute_output --partial "failed"
}

@test "LogLevel ERROR in the SSH config quiets libssh too; its lines are hvdrun's own at --log-level debug" {
	{ echo "Host *"; echo "  LogLevel ERROR"; cat "$RIG/ssh_config"; } >"$BATS_TEST_TMPDIR/ssh_config"
	run "$HVDRUN" --ssh-config "$BATS_TEST_TMPDIR/ssh_config" -x PIDDIR -H node1:2,node2:2 hostname
	assert_success
	assert_equal "${#lines[@]}" 4
	refute_output --partial "socket_callback"
	refute_output --partial "known_hosts"
	run "$HVDRUN" --ssh-config "$BATS_TEST_TMPDIR/ssh_config" -x PIDDIR --log-level debug -H node1:1 hostname
	assert_success
	assert_line "[0]<stdout>:node1"
	assert_line --regexp "^hvdrun: ssh: "
	# Only hvdrun's own lines: libssh writes nothing itself.
	refute_output --regexp "^\[[0-9]{4}/"
}

@test "local and remote workers in one job" {
	run "$HVDRUN" "${SSH[@]}" -H localhost:1,node1:1 hostname
	assert_success
	assert_line "[0]<stdout>:$(hostname)"
	assert_line "[1]<stdout>:node1"
}

@test "standard input reaches the rank that reads it on another host: rank 0 there by default, --stdin 1, --stdin none" {
	run timeout 20 "$HVDRUN" "${SSH[@]}" -H node1:1,node2:1 --verbose sh -c 'echo "$(hostname) read $(wc -l)"' <<<$'one\ntwo'
	assert_success
	assert_line "[0]<stdout>:node1 read 2"
	assert_line "[1]<stdout>:node2 read 0"
	assert_line "hvdrun: rank 0 reads standard input"
	run timeout 20 "$HVDRUN" "${SSH[@]}" -H localhost:1,node1:1 --stdin 1 sh -c 'echo "$(hostname) read $(wc -l)"' <<<$'one\ntwo\nthree'
	assert_success
	assert_line "[0]<stdout>:$(hostname) read 0"
	assert_line "[1]<stdout>:node1 read 3"
	run timeout 20 "$HVDRUN" "${SSH[@]}" -H node1:2 --stdin none sh -c 'echo "$(hostname) read $(wc -l)"' <<<$'one\ntwo'
	assert_success
	assert_line "[0]<stdout>:node1 read 0"
	assert_line "[1]<stdout>:node1 read 0"
	# An input that ends at once, and an empty one.
	run timeout 20 "$HVDRUN" "${SSH[@]}" -H node1:1 sh -c 'echo "read $(wc -c)"' </dev/null
	assert_success
	assert_line "[0]<stdout>:read 0"
}

@test "standard input to a remote rank: 4 MiB through a pipe, byte for byte, to a rank that starts reading late, with its output whole around it" {
	head -c 4194304 /dev/urandom >"$BATS_TEST_TMPDIR/in"
	local want
	want=$(md5sum <"$BATS_TEST_TMPDIR/in" | cut -d' ' -f1)
	run timeout 60 bash -c "cat '$BATS_TEST_TMPDIR/in' | '$HVDRUN' ${SSH[*]} -H node1:1,node2:1 sh -c 'printf \"no newline \"; sleep 1; echo \"\$(hostname) \$(md5sum | cut -d\" \" -f1)\"; printf last'"
	assert_success
	assert_line "[0]<stdout>:no newline node1 $want"
	assert_line "[0]<stdout>:last"
	assert_line "[1]<stdout>:no newline node2 $(md5sum </dev/null | cut -d' ' -f1)"
}

@test "a remote rank that reads none of an endless input: the agent holds a bounded buffer, the job ends as it should, and Ctrl-C still ends it at once" {
	# The rank never reads: hvdrun sends no more than the agent's window.
	run timeout 30 bash -c "yes | '$HVDRUN' ${SSH[*]} -H node1:1 sh -c 'sleep 2; grep VmRSS /proc/\$PPID/status; echo done'"
	assert_success
	assert_line "[0]<stdout>:done"
	assert_rank0_agent_rss_under 20000
	# A rank that reads a line and closes its input: hvdrun stops reading.
	run timeout 30 bash -c "yes | '$HVDRUN' ${SSH[*]} -H node1:1 sh -c 'read x; echo got \$x; exec <&-; sleep 1; echo done'"
	assert_success
	assert_line "[0]<stdout>:got y"
	assert_line "[0]<stdout>:done"
	# SIGINT while input waits behind the window: the signal passes it.
	yes | env --default-signal=INT "$HVDRUN" "${SSH[@]}" -H node1:1 sh -c 'echo $$ >"$PIDDIR/w"; exec sleep 60' &
	local pid=$!
	wait_pids 1
	sleep 0.5
	local t0=$SECONDS status=0
	kill -INT "$pid"
	wait "$pid" || status=$?
	[ "$status" -eq 130 ]
	[ $((SECONDS - t0)) -lt 3 ]
}

@test "a remote rank reads a terminal through hvdrun, a line at a time" {
	run timeout 30 script -qec "'$HVDRUN' ${SSH[*]} -H node1:1,node2:1 sh -c 'read x; echo \"\$(hostname) got:\$x\"; echo \"rest: \$(wc -l)\"'" /dev/null <<<$'hello\nmore\nlast'
	assert_success
	assert_line --partial "[0]<stdout>:node1 got:hello"
	assert_line --partial "[1]<stdout>:node2 got:"
	assert_line --partial "[0]<stdout>:rest: 2"
	assert_line --partial "[1]<stdout>:rest: 0"
}

@test "output of remote workers: whole prefixed lines, last line kept" {
	run --separate-stderr "$HVDRUN" "${SSH[@]}" -H node1:2,node2:2 "$WORKERS/chatter.sh"
	assert_success
	[ "${#lines[@]}" -eq 24 ]
	assert_line "[3]<stdout>:rank3-line5-end"
	assert_line "[2]<stdout>:no newline at the end"
	[ "$(grep -c '^\[[0-3]\]<stderr>:err[1-5]$' <<<"$stderr")" -eq 20 ]
}

@test "a host whose clocks differ (monotonic a day ahead, wall clock 3 h): jobs, libhvd and timestamps are unaffected" {
	local now skewed up uptime out1 out2 st1 st2
	unshare --time true 2>/dev/null || skip "this kernel has no time namespaces"
	dpkg -L libfaketime >/dev/null 2>&1 || skip "libfaketime is not installed (make deps)"
	rig_stop_sshd 3
	rig_start_sshd 3 skew
	rig_wait_port 127.0.0.4
	now=$(date +%s)
	uptime=$(cut -d. -f1 /proc/uptime)
	st1=0 st2=0
	out1=$("$HVDRUN" "${SSH[@]}" -H node3:1 sh -c 'echo $(date +%s) $(cut -d. -f1 /proc/uptime)' 2>&1) || st1=$?
	out2=$("$HVDRUN" "${SSH[@]}" --prefix-output-with-timestamp -H node1:1,node3:2 \
		"$SELFTEST" all 2>&1) || st2=$?
	# Back to a host like the others before anything is judged.
	rig_stop_sshd 3
	rig_start_sshd 3
	rig_wait_port 127.0.0.4
	[ "$st1" -eq 0 ] && [ "$st2" -eq 0 ]
	# The skew is real on node3.
	read -r skewed up <<<"${out1#\[0\]<stdout>:}"
	[ $((skewed - now)) -gt 10000 ] && [ $((up - uptime)) -gt 86000 ]
	grep -qx '[^ ]*\[1\]<stdout>:rank 1: ok' <<<"$out2"
	grep -qx '[^ ]*\[2\]<stdout>:rank 2: ok' <<<"$out2"
	# Every line is stamped by hvdrun's clock, not the host's.
	[ -z "$(grep -v "^$(date -u +%Y-%m-%dT%H)" <<<"$out2" | grep -v "^$(date -u -d '-1 hour' +%Y-%m-%dT%H)")" ]
}

@test "a remote worker SIGSTOPped is named by its host's agent; Ctrl-C ends the job at once" {
	env --default-signal=INT "$HVDRUN" "${SSH[@]}" -H node1:1,node2:1 sh -c \
		'echo $$ >"$PIDDIR/rank$HOROVOD_RANK"; exec sleep 60' >"$BATS_TEST_TMPDIR/out" 2>&1 &
	wait_pids 2
	stop_rank_then_ctrl_c $! "$BATS_TEST_TMPDIR/out" "$PIDDIR/rank1" \
		"[1]<stderr>:hvdrun: on node2: this rank was stopped (SIGSTOP); every rank waits for it (libhvd's ranks for their peer timeout, --gloo-timeout-seconds): SIGCONT resumes it, Ctrl-C ends the job"
	wait_gone
}

@test "a remote worker's 100 MiB line with no newline: 64 KiB lines, every byte, hvdrun's memory bounded" {
	assert_long_line_bounded "${SSH[@]}" -H node1:1
}

@test "hvdrun --mpi across the rig: mpirun over the same SSH config; a rank's code passes through" {
	export ASAN_OPTIONS=detect_leaks=0
	run timeout 120 "$HVDRUN" --mpi "${SSH[@]}" -H node1:2,node2:1 "$SELFTEST" all
	assert_success
	assert_line "[1,0]<stdout>:rank 0: ok"
	assert_line "[1,2]<stdout>:rank 2: ok"
	run timeout 120 "$HVDRUN" --mpi "${SSH[@]}" -H node1:1,node2:1 sh -c '[ "$(hostname)" = node2 ] && exit 5; sleep 20'
	assert_failure 5
}
