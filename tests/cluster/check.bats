#!/usr/bin/env bats
# `hvdrun check` and --network-check across the rig's namespace hosts
# (rig.bash): ns1 and ns2 have eth1, which routes nowhere (silently: the
# rig's gateway for it never answers), and docker0, whose address is the
# same on both; every host has eth0 on the shared bridge.
bats_require_minimum_version 1.5.0
load ../cli/helper
load rig

setup_file() {
	[ "$(id -u)" -eq 0 ] || skip "the rig needs root (ip netns, unshare, sshd)"
	rig_up 2
	RIG_NS_SILENT=1 rig_ns_up 3
	export RIG RIG_PORT RIG_NS
}

teardown_file() {
	rig_down
}

setup() {
	rig_test_setup RIG_NS
}

# No probe outlives the check, on any host.
assert_no_probe() {
	rig_wait_gone "$HVDRUN --probe" 20
}

@test "check: eth0 selected everywhere; eth1 and docker0 reach no other host" {
	run rig_ns_exec "$HVDRUN" check "${SSH[@]}" -H ns1:2,ns2:2,ns3:1 \
		--network-check-timeout 0.5
	assert_success
	assert_line --regexp '^  ns1 +ok, [0-9]+ ms, hostname ns1, hvdrun [0-9]+\.[0-9]+\.[0-9]+$'
	assert_line --regexp '^  ns1 +\* eth0 +10\.251\.0\.11$'
	assert_line --regexp '^ +eth1 +10\.252\.1\.1 +reached by no other host$'
	assert_line --regexp '^ +docker0 +172\.17\.0\.1 +reached by no other host$'
	assert_line --regexp '^  ns3 +\* eth0 +10\.251\.0\.13$'
	assert_line --regexp '^  ns2 +eth0 +- +eth0$'
	assert_line "3 of 3 hosts usable ($(echo "$output" | sed -n 's/.*usable (\(.*\))$/\1/p'))"
	refute_output --partial "127.0.0.1"
	assert_no_probe
}

@test "check --json: the pair matrix, the selection, the unreachable interfaces" {
	run --separate-stderr rig_ns_exec "$HVDRUN" check "${SSH[@]}" -H ns1,ns2,ns3 \
		--json --network-check-timeout 0.5
	assert_success
	echo "$output" | jq -e '.ok == true and (.hosts | length) == 3'
	echo "$output" | jq -e '[.hosts[].selected] == [["eth0"],["eth0"],["eth0"]]'
	echo "$output" | jq -e '.hosts[0].interfaces[] | select(.name == "eth1") | .selected == false and .reached_by == []'
	echo "$output" | jq -e '.hosts[2].interfaces[] | select(.name == "eth0") | .reached_by == ["ns1","ns2"]'
	# 3 hosts: eth0 of every other host, eth1 and docker0 of ns1 and ns2.
	echo "$output" | jq -e '(.pairs | length) == 14'
	echo "$output" | jq -e '[.pairs[] | select(.interface == "eth1") | .ok] | all(. == false)'
	echo "$output" | jq -e '[.pairs[] | select(.interface == "eth1") | .error] | all(. == "no answer within 0.5 s")'
	echo "$output" | jq -e '[.pairs[] | select(.interface == "eth0") | .ok] | all'
	# docker0 of ns2 from ns1 is ns1's own docker0: not ns2's listener.
	echo "$output" | jq -e '[.pairs[] | select(.interface == "docker0") | .ok] | all(. == false)'
	echo "$output" | jq -e '.hosts[0].ssh.ok == true and .hosts[0].ssh.ms > 0'
	# Each host's CPUs, as its probe (over SSH) found them: this
	# machine's, which the rig's hosts share.
	echo "$output" | jq -e --argjson n "$(nproc)" '[.hosts[].cpus.cpus] == [$n, $n, $n] and ([.hosts[].cpus.cores] | all(. >= 1))'
}

@test "check: each host is asked for the folder a job's workers start in (hvdrun's own, or --wdir's); one without it is a finding, exit 1" {
	# hvdrun's own folder: every host has it (the rig's hosts share
	# this machine's files).
	run --separate-stderr rig_ns_exec "$HVDRUN" check "${SSH[@]}" -H ns1,ns2 \
		--network-check-timeout 0.5 --json
	assert_success
	echo "$output" | jq -e --arg d "$PWD" '.workers_folder == $d and ([.hosts[].workers_folder_ok] | all)'
	# $RIG/hidden is each host's own: what is made there here is on no
	# other host.
	mkdir -p "$RIG/hidden/job"
	run rig_ns_exec "$HVDRUN" check "${SSH[@]}" -H ns1,ns2 --network-check-timeout 0.5 \
		--wdir "$RIG/hidden/job"
	assert_failure 1
	assert_line "  workers' folder: host 'ns1': workers cannot start in '$RIG/hidden/job' there (No such file or directory)"
	assert_line "  workers' folder: host 'ns2': workers cannot start in '$RIG/hidden/job' there (No such file or directory)"
	assert_line --regexp '^2 of 2 hosts usable'
	run --separate-stderr rig_ns_exec "$HVDRUN" check "${SSH[@]}" -H ns1,ns2 \
		--network-check-timeout 0.5 --wdir "$RIG/hidden/job" --json
	assert_failure 1
	echo "$output" | jq -e '.ok == false and [.hosts[].workers_folder_ok] == [false, false]'
	echo "$output" | jq -e '[.findings[].kind] == ["workers_folder", "workers_folder"]'
	assert_no_probe
}

@test "check: no GPU is reported as such and fails nothing" {
	run --separate-stderr rig_ns_exec "$HVDRUN" check "${SSH[@]}" -H ns1,ns3 --json
	assert_success
	if echo "$output" | jq -e '.hosts[0].gpus.driver != null' >/dev/null; then
		skip "this machine has an NVIDIA driver"
	fi
	echo "$output" | jq -e '.hosts[0].gpus.count == 0'
	echo "$output" | jq -e '.hosts[0].gpus.notes | index("no NVIDIA driver (libnvidia-ml.so.1 not found)") != null'
	run rig_ns_exec "$HVDRUN" check "${SSH[@]}" -H ns1,ns3
	assert_success
	assert_line --regexp '^  ns1 +no GPU'
}

# The hosts' probes see 2 CUDA devices each (a stand-in runtime,
# tests/cli/workers/fake_cudart.c, on the library path of the sessions
# made with a key of this test's own); the NCCL job really starts over SSH,
# a rank a device, and each rank fails at its GPU with libhvd's reason.
@test "check --nccl across hosts: the job starts over SSH, its ranks host by host; failures are named, nothing is left" {
	local fake=$ROOT/build/tests/fake worker=$ROOT/build/libexec/hvdrun/hvd-ncclcheck
	local key=$BATS_TEST_TMPDIR/gpu_key cfg=$BATS_TEST_TMPDIR/ssh_config
	[ -x "$worker" ] || skip "libhvd built without its GPU engine (no $worker)"
	[ -e "$fake/libcudart.so" ] || skip "no $fake/libcudart.so (make test builds it)"
	if nvidia-smi -L >/dev/null 2>&1; then
		skip "this machine has a GPU: tests/cli/gpu.bats runs the check for real"
	fi
	ssh-keygen -q -t ed25519 -N '' -f "$key" -C "gpu$BATS_TEST_NUMBER" </dev/null
	printf 'environment="HOME=%s",environment="LD_LIBRARY_PATH=%s" %s\n' \
		"$RIG/home" "$fake" "$(cat "$key.pub")" >>"$RIG/authorized_keys"
	sed "s|IdentityFile .*|IdentityFile $key|" "$RIG/ssh_config" >"$cfg"
	run --separate-stderr rig_ns_exec "$HVDRUN" check --ssh-config "$cfg" -x PIDDIR \
		-H ns1,ns2 --nccl --json --network-check-timeout 0.5
	sed -i "/ gpu$BATS_TEST_NUMBER\$/d" "$RIG/authorized_keys"
	assert_failure 1
	echo "$output" | jq -e '.nccl.not_run == null and .nccl.status != 0 and (.nccl.timed_out | not)'
	echo "$output" | jq -e '[.nccl.hosts[] | select(.ranks == 2 and (.joined | not))] | length == 2'
	echo "$output" | jq -e '[.nccl.ranks[].host] == ["ns1", "ns1", "ns2", "ns2"]'
	echo "$output" | jq -e '[.nccl.ranks[] | select(.error != null) | .error | startswith("no GPU for this rank")] | all and length >= 1'
	echo "$output" | jq -e '[.nccl.hosts[].reason | startswith("rank ")] | any'
	echo "$output" | jq -e '[.findings[] | select(.kind == "nccl")] | length >= 1'
	rig_wait_gone "$worker" 20
	assert_no_probe
}

@test "check: the default timeout is 2 s, and the check ends within it" {
	local t0=$SECONDS
	run --separate-stderr rig_ns_exec "$HVDRUN" check "${SSH[@]}" -H ns1,ns2 --json
	assert_success
	echo "$output" | jq -e '.timeout_seconds == 2'
	echo "$output" | jq -e '[.pairs[] | select(.interface == "eth1") | .error] | all(. == "no answer within 2.0 s")'
	[ $((SECONDS - t0)) -lt 8 ]
}

@test "check: a host whose sshd is stopped fails alone; the others are checked" {
	rig_stop_sshd ns3
	run rig_ns_exec "$HVDRUN" check "${SSH[@]}" -H ns1,ns2,ns3 --network-check-timeout 0.5
	rig_start_ns_sshd 3
	rig_ns_wait_port 10.251.0.13
	assert_failure 1
	assert_line --regexp "^  ns3 +failed: cannot connect to host 'ns3': .*"
	assert_line --regexp '^  ns1 +\* eth0 +10\.251\.0\.11$'
	assert_line --regexp '^2 of 3 hosts usable'
	assert_no_probe
}

@test "check: a host without hvdrun is named, with the path" {
	cp "$HVDRUN" "$RIG/hidden/hvdrun"
	run rig_ns_exec "$RIG/hidden/hvdrun" check "${SSH[@]}" -H ns1,ns2
	rm -f "$RIG/hidden/hvdrun"
	assert_failure 1
	assert_line --partial "ns1 "
	assert_line --partial "host 'ns1': '$RIG/hidden/hvdrun' is not installed on this host"
	assert_line --regexp '^0 of 2 hosts usable'
}

@test "check: hosts that are all this machine select loopback" {
	run "$HVDRUN" check "${SSH[@]}" -H node1,node2,localhost --json
	assert_success
	echo "$output" | jq -e '.loopback == true'
	echo "$output" | jq -e '.hosts[0].selected | index("lo") != null'
	echo "$output" | jq -e '.hosts[2].ssh.used == false'
}

@test "--network-check: the job's workers get the routed interface" {
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" --network-check --network-check-timeout 0.5 \
		-H ns1:1,ns2:1 sh -c 'echo "$(hostname) $HVD_NETWORK_INTERFACES $NCCL_SOCKET_IFNAME $MASTER_ADDR"'
	assert_success
	# MASTER_ADDR (torch's store): rank 0's address there, found on ns1.
	assert_line "[0]<stdout>:ns1 eth0 eth0 10.251.0.11"
	assert_line "[1]<stdout>:ns2 eth0 eth0 10.251.0.11"
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" --network-interface eth1 \
		-H ns2:1,ns1:1 sh -c 'echo "$(hostname) $MASTER_ADDR"'
	assert_success
	assert_line "[0]<stdout>:ns2 10.252.2.1"
	assert_line "[1]<stdout>:ns1 10.252.2.1"
	assert_no_probe
}

@test "--network-check: libhvd meets on eth0 where eth1 would not connect" {
	# On eth1 the ranks cannot reach each other: the job fails at the
	# start timeout instead of running.
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" --network-interface eth1 --start-timeout 2 \
		-H ns1:1,ns2:1 "$SELFTEST" all
	assert_failure
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" --network-check --network-check-timeout 0.5 \
		-x NCCL_SOCKET_IFNAME=keep -H ns1:1,ns2:1,ns3:1 \
		"$SELFTEST" all
	assert_success
	assert_line "[0]<stdout>:rank 0: ok"
	assert_line "[2]<stdout>:rank 2: ok"
}

@test "--network-check: an unusable host stops the job before anything starts" {
	rig_stop_sshd ns2
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" --network-check -H ns1:1,ns2:1 \
		-x PIDDIR sh -c 'touch "$PIDDIR/started.$HOROVOD_RANK"'
	rig_start_ns_sshd 2
	rig_ns_wait_port 10.251.0.12
	assert_failure 125
	assert_line --regexp "^hvdrun: network check: cannot connect to host 'ns2': .* \(see 'hvdrun check' with the same hosts\)$"
	[ -z "$(ls "$PIDDIR")" ]
}

@test "hvdrun --mpi --network-check: mpirun is held to the routed interface" {
	export ASAN_OPTIONS=detect_leaks=0
	run rig_ns_exec timeout 120 "$HVDRUN" "${SSH[@]}" --mpi --verbose --network-check \
		--network-check-timeout 0.5 -H ns1:1,ns2:1,ns3:1 "$SELFTEST" all
	assert_success
	assert_line --partial " --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 "
	assert_line "[1,0]<stdout>:rank 0: ok"
	assert_line "[1,2]<stdout>:rank 2: ok"
}

# Rename host K's eth0 (its address and routes come back with it).
rename_eth0() {
	local ns=$RIG_NS$1 from=$2 to=$3
	ip -n "$ns" link set "$from" down
	ip -n "$ns" link set "$from" name "$to"
	ip -n "$ns" link set "$to" up
	ip -n "$ns" route replace 10.252.0.0/16 via 10.251.0.254
}

@test "check: interface names may differ between hosts" {
	rename_eth0 3 eth0 ens5
	run --separate-stderr rig_ns_exec "$HVDRUN" check "${SSH[@]}" -H ns1,ns3 --json \
		--network-check-timeout 0.5
	local out=$output st=$status
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" --network-check --network-check-timeout 0.5 \
		-H ns1:1,ns3:1 sh -c 'echo "$(hostname) $HVD_NETWORK_INTERFACES"'
	rename_eth0 3 ens5 eth0
	[ "$st" -eq 0 ]
	echo "$out" | jq -e '[.hosts[].selected] == [["eth0"],["ens5"]]'
	assert_success
	assert_line "[0]<stdout>:ns1 eth0"
	assert_line "[1]<stdout>:ns3 ens5"
}

@test "a host whose hvdrun speaks another agent protocol: check finds it unusable, and a job there starts nothing on it" {
	# At one path on every host, $RIG/hidden/hvdrun (each host's own
	# tmpfs): this hvdrun here and on ns2, one of another agent
	# protocol and version on ns1.
	local OTHER VERSION PROTO
	rig_other_hvdrun
	cp "$HVDRUN" "$RIG/hidden/hvdrun"
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" -np 2 -H ns1:1,ns2:1 sh -c \
		'cp "$([ "$HOROVOD_RANK" = 0 ] && echo "$1" || echo "$2")" "$3/hvdrun"' \
		sh "$OTHER" "$HVDRUN" "$RIG/hidden"
	assert_success
	run rig_ns_exec "$RIG/hidden/hvdrun" check "${SSH[@]}" -H ns1,ns2
	assert_failure 1
	assert_line --regexp "^  ns1 +ok, [0-9]+ ms, hostname ns1, hvdrun $VERSION-other\$"
	assert_line --regexp "^  ns2 +ok, [0-9]+ ms, hostname ns2, hvdrun $VERSION\$"
	assert_line "host 'ns1': its hvdrun ($VERSION-other, agent protocol 999) cannot start ranks for this one ($VERSION, agent protocol $PROTO): install the same hvdrun on every host"
	assert_line --regexp '^1 of 2 hosts usable'
	assert_no_probe
	# A job: ns1's agent refuses its rank before anything starts there;
	# the job ends, with the agent's line and its 125.
	run rig_ns_exec "$RIG/hidden/hvdrun" "${SSH[@]}" -np 2 -H ns1:1,ns2:1 \
		sh -c 'touch "$0/ran.$HOROVOD_RANK"; sleep 30' "$RIG/hidden"
	assert_failure 125
	assert_output --partial "hvdrun: on ns1: this host's hvdrun ($VERSION-other, agent protocol 999) cannot start ranks for the hvdrun that launched the job ($VERSION, agent protocol $PROTO): install the same hvdrun on every host"
	assert_output --partial "rank 0 on ns1 exited with code 125"
	run rig_ns_exec "$HVDRUN" "${SSH[@]}" -np 2 -H ns1:1,ns2:1 sh -c \
		'ls "$0"; rm -f "$0/hvdrun" "$0"/ran.*' "$RIG/hidden"
	rm -f "$RIG/hidden/hvdrun"
	assert_success
	refute_output --partial "ran.0"
	rig_wait_gone "$RIG/hidden/hvdrun --agent" 20
}
