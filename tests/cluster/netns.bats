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
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" -H ns1:1,ns2:1,ns3:1 "$ROOT/build/tests/hvd_selftest" all
	assert_success
	assert_line "[0]<stdout>:rank 0: ok"
	assert_line "[2]<stdout>:rank 2: ok"
}

@test "libhvd on 2 namespace hosts x 2 ranks: hierarchical allreduce, and the same results over TCP alone" {
	local r
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" -H ns1:2,ns2:2 -x HOROVOD_LOG_LEVEL=debug "$ROOT/build/tests/hvd_selftest" all
	assert_success
	for r in 0 1 2 3; do
		assert_line --regexp "^\[$r\]<stderr>:libhvd debug: hvd__hier_start: shared memory: [0-9]+ bytes for 2 local ranks \(hierarchical collectives\), 2 hosts$"
		assert_line "[$r]<stdout>:rank $r: ok"
	done
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" -H ns1:2,ns2:2 --no-shared-memory "$ROOT/build/tests/hvd_selftest" more
	assert_success
	refute_output --partial FAIL
	assert_line "[3]<stdout>:rank 3: ok"
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" -H ns1:2,ns2:2 "$ROOT/build/tests/hvd_selftest" more
	assert_success
	refute_output --partial FAIL
	assert_line "[3]<stdout>:rank 3: ok"
}

@test "a link that goes down mid-job: every rank gets an error within seconds" {
	ip netns exec "${RIG_NS}c" "$HVDRUN" "${SSH[@]}" -H ns1:1,ns2:1,ns3:1 \
		"$ROOT/build/tests/hvd_selftest" drop >"$BATS_TEST_TMPDIR/out" 2>&1 &
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
