#!/usr/bin/env bats
# hvdrun across the rig's namespace hosts (rig.bash, rig_ns_up): real
# network namespaces on a bridge, reached from the client namespace.
bats_require_minimum_version 1.5.0
load ../cli/helper
load rig

setup_file() {
	[ "$(id -u)" -eq 0 ] || skip "the rig needs root (ip netns, unshare, sshd)"
	rig_up 1
	rig_ns_up 3
	export RIG RIG_PORT RIG_NS
}

teardown_file() {
	rig_down
}

setup() {
	rig_test_setup RIG_NS
}

@test "the rig: eth1 of ns1 and ns2 routes to no other host" {
	run ip netns exec "${RIG_NS}3" timeout 3 bash -c "exec 3<>/dev/tcp/10.252.1.1/$RIG_PORT"
	assert_failure
	run ip netns exec "${RIG_NS}2" timeout 3 bash -c "exec 3<>/dev/tcp/10.252.1.1/$RIG_PORT"
	assert_failure
	run ip netns exec "${RIG_NS}3" timeout 3 bash -c "exec 3<>/dev/tcp/10.251.0.11/$RIG_PORT"
	assert_success
}

@test "a job across namespace hosts, from the client namespace" {
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" -H ns1:2,ns2:2,ns3:1 sh -c \
		'echo "$(hostname) $HOROVOD_RANK $HOROVOD_LOCAL_RANK $HOROVOD_CROSS_RANK/$HOROVOD_CROSS_SIZE $MASTER_ADDR"'
	assert_success
	assert_line "[0]<stdout>:ns1 0 0 0/3 ns1"
	assert_line "[3]<stdout>:ns2 3 1 1/2 ns1"
	assert_line "[4]<stdout>:ns3 4 0 2/3 ns1"
}

@test "a failure on a namespace host ends the job; nothing is left" {
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" -H ns1:1,ns2:1,ns3:1 "$WORKERS/fail.sh" 2 4
	assert_failure 4
	assert_line "hvdrun: rank 2 on ns3 exited with code 4; stopping the job"
	assert_no_leftovers
}

@test "hvdrun killed in the client namespace: the workers end" {
	# ip netns exec execs: $! is hvdrun itself.
	ip netns exec "${RIG_NS}c" "$HVDRUN" "${SSH[@]}" -H ns1:1,ns2:1,ns3:1 \
		"$WORKERS/family.sh" >/dev/null 2>&1 &
	local pid=$!
	wait_pids 9
	kill -KILL $pid
	wait $pid || true
	wait_no_leftovers
}

@test "libhvd across namespace hosts: peers meet on the routed interface" {
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" -H ns1:1,ns2:1,ns3:1 "$SELFTEST" all
	assert_success
	assert_line "[0]<stdout>:rank 0: ok"
	assert_line "[2]<stdout>:rank 2: ok"
}

@test "libhvd on 2 namespace hosts x 2 ranks: hierarchical allreduce, and the same results over TCP alone" {
	local r
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" -H ns1:2,ns2:2 -x HOROVOD_LOG_LEVEL=debug "$SELFTEST" all
	assert_success
	for r in 0 1 2 3; do
		assert_line --regexp "^\[$r\]<stderr>:libhvd debug: hvd__hier_start: shared memory: [0-9]+ bytes for 2 local ranks \(hierarchical collectives\), 2 hosts$"
		assert_line "[$r]<stdout>:rank $r: ok"
	done
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" -H ns1:2,ns2:2 --no-shared-memory "$SELFTEST" more
	assert_success
	refute_output --partial FAIL
	assert_line "[3]<stdout>:rank 3: ok"
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" -H ns1:2,ns2:2 "$SELFTEST" more
	assert_success
	refute_output --partial FAIL
	assert_line "[3]<stdout>:rank 3: ok"
}

@test "a link that goes down mid-job: every rank gets an error within seconds" {
	ip netns exec "${RIG_NS}c" "$HVDRUN" "${SSH[@]}" -H ns1:1,ns2:1,ns3:1 \
		"$SELFTEST" drop >"$BATS_TEST_TMPDIR/out" 2>&1 &
	local pid=$! i job_status=0
	for i in $(seq 1 100); do
		[ "$(ls "$PIDDIR" | grep -c looping)" -ge 3 ] && break
		sleep 0.05
	done
	[ "$(ls "$PIDDIR" | grep -c looping)" -ge 3 ]
	# ns2 drops off the network: no FIN, no RST, only silence.
	ip -n "${RIG_NS}2" link set "v${RIG_NS}2" down 2>/dev/null ||
		ip -n "${RIG_NS}2" link set eth0 down
	for i in $(seq 1 100); do
		grep -q "rank 0: error" "$BATS_TEST_TMPDIR/out" &&
			grep -q "rank 2: error" "$BATS_TEST_TMPDIR/out" && break
		sleep 0.1
	done
	ip -n "${RIG_NS}2" link set eth0 up
	wait $pid || job_status=$?
	local r ms
	for r in 0 2; do
		ms=$(sed -n "s/^\[$r\]<stdout>:rank $r: error \([0-9]*\) ms after the last success: .*/\1/p" "$BATS_TEST_TMPDIR/out")
		echo "rank $r: $ms ms"
		[ -n "$ms" ] && [ "$ms" -lt 4000 ]
	done
	[ "$job_status" -eq 3 ]
}

# Elastic jobs across namespace hosts (examples/elastic.c: its weights
# after N steps are those of a job of one, whatever the resets).
ELASTIC=${HVD_ELASTIC_BIN:-$ROOT/build/examples/elastic}
KILL=$WORKERS/elastic_kill.sh

elastic_weights() {
	"$ELASTIC" "$1" 5 0 | sed -n 's/.*weights \(.*\)/\1/p'
}

@test "elastic: a namespace host's workers SIGKILLed: the others go on, the host returns over SSH after its cool-down and the job grows back" {
	local want w
	want=$(elastic_weights 600)
	ELASTIC_KILL="3:1" run rig_ns_exec "$HVDRUN" "${SSH[@]}" -x ELASTIC_KILL -H ns1:2,ns2:2 \
		--min-np 2 --blacklist-cooldown-range 1 1 "$KILL" "$ELASTIC" 600 5 10
	assert_success
	assert_line "hvdrun: worker 3 on ns2 was killed by signal 9 (Killed); its host leaves the job and 2 workers go on (generation 2); the host may return in 1 s"
	assert_line "hvdrun: host ns2 is back after its cool-down: 2 workers start there"
	for w in 0 1 2 3; do
		assert_line --regexp "^\[$w\]<stdout>:rank $w of 4: 600 steps, generation 3, [0-9]+ resets, weights $want$"
	done
	wait_no_leftovers
}

@test "elastic: a namespace host's link goes down mid-training: found silent within seconds, the others go on; nothing is left once it is back" {
	local want pid i job_status=0 t0 t1
	want=$(elastic_weights 800)
	ip netns exec "${RIG_NS}c" "$HVDRUN" "${SSH[@]}" -H ns1:2,ns2:2 --min-np 2 \
		"$KILL" "$ELASTIC" 800 5 10 >"$BATS_TEST_TMPDIR/out" 2>&1 &
	pid=$!
	wait_pids 4
	sleep 1
	# ns2 drops off the network: no FIN, no RST, only silence.
	t0=$(date +%s%N)
	ip -n "${RIG_NS}2" link set eth0 down
	for i in $(seq 1 150); do
		grep -q "on ns2 stopped answering" "$BATS_TEST_TMPDIR/out" && break
		sleep 0.1
	done
	t1=$(date +%s%N)
	ip -n "${RIG_NS}2" link set eth0 up
	wait $pid || job_status=$?
	cat "$BATS_TEST_TMPDIR/out"
	echo "found silent after $(((t1 - t0) / 1000000)) ms"
	[ "$job_status" -eq 0 ]
	grep -Eq "^hvdrun: worker [23] on ns2 stopped answering: its host is unreachable; its host leaves the job and 2 workers go on \(generation 2\)$" "$BATS_TEST_TMPDIR/out"
	grep -Eq "^\[0\]<stdout>:rank 0 of 2: 800 steps, generation 2, 1 resets, weights $want$" "$BATS_TEST_TMPDIR/out"
	grep -Eq "^\[1\]<stdout>:rank 1 of 2: 800 steps, generation 2, 1 resets, weights $want$" "$BATS_TEST_TMPDIR/out"
	# Back on the network, ns2's sshd hears that the sessions ended.
	wait_no_leftovers 300
}

@test "elastic: a returning namespace host whose sshd is down fails again and leaves the growth only; once sshd is back the job grows to it" {
	local want pid i job_status=0 w
	want=$(elastic_weights 1500)
	ip netns exec "${RIG_NS}c" "$HVDRUN" "${SSH[@]}" -H ns1:2,ns2:2 --min-np 2 \
		--blacklist-cooldown-range 1 1 "$KILL" "$ELASTIC" 1500 5 10 >"$BATS_TEST_TMPDIR/out" 2>&1 &
	pid=$!
	wait_pids 4
	# ns2's sshd and its sessions end: ns2's workers are lost with them.
	rig_stop_sshd ns2
	for i in $(seq 1 100); do
		grep -q "before it joined" "$BATS_TEST_TMPDIR/out" && break
		sleep 0.1
	done
	rig_start_ns_sshd 2
	rig_ns_wait_port 10.251.0.12
	wait $pid || job_status=$?
	cat "$BATS_TEST_TMPDIR/out"
	[ "$job_status" -eq 0 ]
	grep -Eq "^hvdrun: worker [23] on ns2 .*; its host leaves the job and 2 workers go on \(generation 2\); the host may return in 1 s$" "$BATS_TEST_TMPDIR/out"
	grep -Eq "^\[[23]\]<stderr>:hvdrun: .*ns2.*" "$BATS_TEST_TMPDIR/out"
	grep -Eq "^hvdrun: worker [23] on ns2 lost its connection to the host before it joined; its host leaves again and 2 workers form generation [0-9]+; the host may return in 1 s$" "$BATS_TEST_TMPDIR/out"
	for w in 0 1 2 3; do
		grep -Eq "^\[$w\]<stdout>:rank $w of 4: 1500 steps, generation [0-9]+, [0-9]+ resets, weights $want$" "$BATS_TEST_TMPDIR/out"
	done
	wait_no_leftovers
}

@test "elastic: a namespace host's link goes down as the job resets after another host's failure (during the reset or just after): one more generation, the last host goes on" {
	local want pid job_status=0 out=$BATS_TEST_TMPDIR/out
	want=$(elastic_weights 600)
	ip netns exec "${RIG_NS}c" env ELASTIC_KILL=5:1 "$HVDRUN" "${SSH[@]}" -x ELASTIC_KILL \
		-H ns1:2,ns2:2,ns3:2 --min-np 2 "$KILL" "$ELASTIC" 600 5 10 >"$out" 2>&1 &
	pid=$!
	wait_line "$out" "hvdrun: worker 5 on ns3 was killed by signal 9 (Killed)"
	# ns2 drops off the network while the others form generation 2.
	ip -n "${RIG_NS}2" link set eth0 down
	wait_line "$out" "on ns2 stopped answering"
	ip -n "${RIG_NS}2" link set eth0 up
	wait "$pid" || job_status=$?
	cat "$out"
	[ "$job_status" -eq 0 ]
	grep -q "^hvdrun: worker 5 on ns3 was killed by signal 9 (Killed); its host leaves the job and 4 workers go on (generation 2)$" "$out"
	grep -Eq "^hvdrun: worker [23] on ns2 stopped answering: its host is unreachable; its host leaves the job and 2 workers go on \(generation 3\)$" "$out"
	grep -Eq "^\[0\]<stdout>:rank 0 of 2: 600 steps, generation 3, [12] resets, weights $want$" "$out"
	grep -Eq "^\[1\]<stdout>:rank 1 of 2: 600 steps, generation 3, [12] resets, weights $want$" "$out"
	wait_no_leftovers 300
}

# A PyTorch job of hvd.elastic.run and TorchState across namespace hosts
# (tests/python/workers/elastic_train.py: 6 epochs of 96 samples, a
# commit every 3 batches), the hosts listed by a discovery script. ns2 is
# lost mid-epoch (MODE kill: its worker 3 SIGKILLs itself; raise: it raises
# a Python exception, and its exit runs hvd.shutdown(), which the others
# must take as a reset; link: its link goes down), and the cluster's
# discovery drops it; the job goes on at 2.
# Then ns2 is listed again and the job grows back to 4: all end at the
# last epoch with the same weights, every epoch having seen every sample,
# and nothing is left on any host.
TRAIN=$ROOT/tests/python/workers/elastic_train.py

# What the discovery script prints from now on: "$@", one a line (a
# rename, so that it never reads half a file).
list() {
	printf '%s\n' "$@" >"$BATS_TEST_TMPDIR/hosts.new"
	mv "$BATS_TEST_TMPDIR/hosts.new" "$BATS_TEST_TMPDIR/hosts"
}

torch_elastic_ns() {
	local mode=$1 out=$BATS_TEST_TMPDIR/out
	local pid job_status=0 kill= raise=
	/usr/bin/python3 -c 'import torch' 2>/dev/null || skip "/usr/bin/python3 lacks torch (make deps)"
	discovery_script
	list ns1:2 ns2:2
	[ "$mode" = kill ] && kill=3:8
	[ "$mode" = raise ] && raise=3:8
	ip netns exec "${RIG_NS}c" "$HVDRUN" "${SSH[@]}" --host-discovery-script "$BATS_TEST_TMPDIR/discover" \
		--min-np 2 --max-np 4 --blacklist-cooldown-range 2 2 \
		"$KILL" env KILL=$kill RAISE=$raise STEP_MS=100 EPOCHS=6 /usr/bin/python3 "$TRAIN" >"$out" 2>&1 &
	pid=$!
	wait_line "$out" "<stdout>:batch 0 " 10
	if [ "$mode" = link ]; then
		ip -n "${RIG_NS}2" link set eth0 down
		wait_line "$out" "on ns2 stopped answering"
	elif [ "$mode" = raise ]; then
		wait_line "$out" "hvdrun: worker 3 on ns2 exited with code 1"
	else
		wait_line "$out" "hvdrun: worker 3 on ns2 was killed by signal 9 (Killed)"
	fi
	list ns1:2
	[ "$mode" != link ] || ip -n "${RIG_NS}2" link set eth0 up
	wait_line "$out" "worker 1: reset: rank 1 of 2 (generation 2)"
	# A few steps at 2, then ns2 is listed again.
	wait_line "$out" "[1]<stdout>:batch" "$(($(grep -cF "[1]<stdout>:batch" "$out") + 3))"
	list ns1:2 ns2:2
	wait "$pid" || job_status=$?
	cat "$out"
	[ "$job_status" -eq 0 ]
	if [ "$mode" = link ]; then
		grep -Eq "^hvdrun: worker [23] on ns2 stopped answering: its host is unreachable; its host leaves the job and 2 workers go on \(generation 2\); the host may return in 2 s$" "$out"
	elif [ "$mode" = raise ]; then
		grep -q "RuntimeError: worker 3 fails at step 8" "$out"
		grep -q "^hvdrun: worker 3 on ns2 exited with code 1; its host leaves the job and 2 workers go on (generation 2); the host may return in 2 s$" "$out"
	else
		grep -q "^hvdrun: worker 3 on ns2 was killed by signal 9 (Killed); its host leaves the job and 2 workers go on (generation 2); the host may return in 2 s$" "$out"
	fi
	grep -q "^hvdrun: host ns2 is back after its cool-down: 2 workers start there$" "$out"
	grep -q "^\[0\]<stdout>:worker 0: reset: rank 0 of 4 (generation 3)$" "$out"
	# Workers 0 and 1 and the two started on ns2 again end together.
	[ "$(grep -Ec "^\[[0-9]\]<stdout>:worker [0-9]: done: rank [0-3] of 4, generation 3, epoch 6, " "$out")" -eq 4 ]
	[ "$(sed -n 's/.*: done: .*, weights \(.*\)/\1/p' "$out" | sort -u | wc -l)" -eq 1 ]
	grep -q "^\[0\]<stdout>:worker 0: done: rank 0 of 4" "$out"
	grep -q "^\[1\]<stdout>:worker 1: done: rank 1 of 4" "$out"
	awk -F'[ ,]' '/^\[[0-9]+\]<stdout>:batch / { for (i = 3; i <= NF; i++) seen[$2 " " $i] = 1 }
		END { for (e = 0; e < 6; e++) { n = 0; for (i = 0; i < 96; i++) n += (e " " i) in seen
			if (n != 96) { print "epoch " e " saw " n " of 96 samples"; bad = 1 } } exit bad }' "$out"
	wait_no_leftovers 300
}

# Under the sanitizers only hvdrun and its agents are sanitized, not the
# Python workers' libhvd: their part in a lost host is the same as in the
# elastic tests above (a worker killed, a link down), so the sanitized run
# trains through one of the three, the Python exception.
torch_plain_run_only() {
	plain_run_only "the sanitized hvdrun loses a host this way in the elastic tests above"
}

@test "elastic PyTorch: ns2's worker SIGKILLed mid-epoch and dropped by the discovery script: training goes on at 2 from the last commit; listed again, the job grows back to 4" {
	torch_plain_run_only
	torch_elastic_ns kill
}

@test "elastic PyTorch: ns2's worker raises a Python exception mid-epoch (its exit shuts libhvd down): the others reset and go on at 2; listed again, the job grows back to 4" {
	torch_elastic_ns raise
}

@test "elastic PyTorch: ns2's link down mid-epoch and dropped by the discovery script: training goes on at 2 from the last commit; listed again, the job grows back to 4" {
	torch_plain_run_only
	torch_elastic_ns link
}
