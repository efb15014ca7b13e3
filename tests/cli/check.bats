#!/usr/bin/env bats
# `hvdrun check` on this machine, and the interface options of a job.
# Across hosts: tests/cluster/check.bats.
bats_require_minimum_version 1.5.0
load helper

@test "check without hosts checks this machine; loopback counts" {
	run "$HVDRUN" check
	assert_success
	assert_line --regexp "^  localhost +this machine \(no SSH\), hostname .+, hvdrun $(hvdrun_says version)\$"
	assert_line --regexp '^  localhost +\* lo +127\.0\.0\.1'
	assert_line --regexp '^1 of 1 host usable \([0-9.]+ s\)$'
	assert_line --regexp '^  localhost +(no GPU|driver )'
}

@test "check: the folder a job's workers start in (--wdir's, else the check's own): a host without it is a finding, exit 1" {
	cd "$BATS_TEST_TMPDIR"
	run --separate-stderr "$HVDRUN" check --json
	assert_success
	echo "$output" | jq -e --arg d "$BATS_TEST_TMPDIR" '.workers_folder == $d and .hosts[0].workers_folder_ok == true'
	touch "$BATS_TEST_TMPDIR/file"
	run "$HVDRUN" check --wdir nowhere
	assert_failure 1
	assert_line "  workers' folder: host 'localhost': workers cannot start in '$BATS_TEST_TMPDIR/nowhere' there (No such file or directory)"
	assert_line --regexp '^1 of 1 host usable'
	run "$HVDRUN" check --wdir file
	assert_failure 1
	assert_line "  workers' folder: host 'localhost': workers cannot start in '$BATS_TEST_TMPDIR/file' there (not a folder)"
	run --separate-stderr "$HVDRUN" check --wdir nowhere --json
	assert_failure 1
	echo "$output" | jq -e '.ok == false and .hosts[0].workers_folder_ok == false and .findings[0].kind == "workers_folder"'
}

@test "check --json: one object, this machine's interfaces and GPUs" {
	run --separate-stderr "$HVDRUN" check -H localhost:2 --json
	assert_success
	echo "$output" | jq -e '.ok and .loopback and (.hosts | length) == 1'
	echo "$output" | jq -e '.hosts[0] | .host == "localhost" and .slots == 2 and .usable and .ssh.used == false'
	echo "$output" | jq -e --arg v "$(hvdrun_says version)" '.hosts[0] | .hvdrun == $v and (.agent_protocol | type) == "number"'
	echo "$output" | jq -e '.hosts[0].selected | index("lo") != null'
	echo "$output" | jq -e '.hosts[0].gpus | has("driver") and has("count") and has("nccl") and has("cuda_runtime")'
	echo "$output" | jq -e '.pairs == []'
}

@test "check: bad usage is refused with exit status 2" {
	run "$HVDRUN" check ./train
	assert_failure 2
	assert_line "hvdrun: 'hvdrun check' runs no command: './train'"
	run "$HVDRUN" --json -np 1 true
	assert_failure 2
	assert_line "hvdrun: --json is an option of 'hvdrun check'"
	run "$HVDRUN" check -H 'a:1,,b'
	assert_failure 2
	run "$HVDRUN" check --network-check-timeout 0
	assert_failure 2
	assert_line "hvdrun: bad value '0' for --network-check-timeout (want a number from 0.05 to 60)"
}

@test "--network-interface: every worker gets the names, also for NCCL and gloo" {
	run "$HVDRUN" --network-interface lo --network-interface eth9 -np 2 \
		sh -c 'echo "$HVD_NETWORK_INTERFACES $NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME"'
	assert_success
	assert_line "[0]<stdout>:lo,eth9 lo,eth9 lo,eth9"
	assert_line "[1]<stdout>:lo,eth9 lo,eth9 lo,eth9"
	run "$HVDRUN" --network-interface lo -x NCCL_SOCKET_IFNAME=ib0 \
		-x GLOO_SOCKET_IFNAME=ib1 -np 1 \
		sh -c 'echo "$HVD_NETWORK_INTERFACES $NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME"'
	assert_line "[0]<stdout>:lo ib0 ib1"
}

@test "--network-interface: a bad name is refused; the variable is hvdrun's" {
	run "$HVDRUN" --network-interface 'eth0/x' -np 1 true
	assert_failure 2
	assert_line "hvdrun: bad value 'eth0/x' for --network-interface (want interface names, NAME[,NAME...])"
	run "$HVDRUN" --network-interface averyveryverylongname -np 1 true
	assert_failure 2
	run "$HVDRUN" -x HVD_NETWORK_INTERFACES=lo -np 1 true
	assert_failure 2
	assert_line "hvdrun: HVD_NETWORK_INTERFACES is set by hvdrun for each worker and cannot be overridden"
}

@test "[network] in the config file; errors name file and line" {
	printf '[network]\ninterfaces = lo\n' >"$BATS_TEST_TMPDIR/a.ini"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/a.ini" -np 1 sh -c 'echo "$HVD_NETWORK_INTERFACES"'
	assert_success
	assert_line "[0]<stdout>:lo"
	printf '[network]\ncheck = true\ncheck_timeout = 99\n' >"$BATS_TEST_TMPDIR/b.ini"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/b.ini" -np 1 true
	assert_failure 2
	assert_line "hvdrun: $BATS_TEST_TMPDIR/b.ini:3: bad value '99' for 'check_timeout' in [network] (want a number from 0.05 to 60)"
}

@test "--network-check on this machine: libhvd runs on the selected interfaces" {
	run "$HVDRUN" --network-check --verbose -np 2 "$SELFTEST" all
	assert_success
	assert_line --regexp "^hvdrun: network check: host 'localhost' uses lo,"
	assert_line "[0]<stdout>:rank 0: ok"
	assert_line "[1]<stdout>:rank 1: ok"
}

@test "libhvd: an interface without an IPv4 address is a clear error" {
	run "$HVDRUN" --network-interface nosuch0 --start-timeout 2 -np 2 "$SELFTEST" all
	assert_failure
	assert_line --partial "no interface of HVD_NETWORK_INTERFACES=nosuch0 has an IPv4 address here"
}

@test "the probe's port under a flood: 700 strangers held open, the probe still answers at once and checks" {
	run "$WORKERS/probe_flood.py" "$HVDRUN"
	assert_success
	assert_line "ok"
}

@test "check --nccl without a GPU: not run, each host's reason, a finding, exit 1" {
	run --separate-stderr "$HVDRUN" check --nccl
	assert_failure 1
	assert_line "NCCL (--nccl)"
	assert_line "  not run: no usable host has a GPU with NCCL"
	assert_line --regexp '^  localhost +no (GPU|NCCL)'
	assert_line --regexp '^  NCCL: localhost: no (GPU|NCCL)'
	assert_line --regexp '; NCCL: failed$'
	run --separate-stderr "$HVDRUN" check --nccl --json
	assert_failure 1
	echo "$output" | jq -e '(.ok | not) and .nccl.not_run == "no usable host has a GPU with NCCL" and .nccl.status == null'
	echo "$output" | jq -e '.nccl.hosts[0] | .ranks == 0 and (.joined | not) and (.reason | startswith("no "))'
	echo "$output" | jq -e '[.findings[] | select(.kind == "nccl")] | length == 1'
	# Without --nccl, no NCCL section and no finding.
	run --separate-stderr "$HVDRUN" check --json
	echo "$output" | jq -e '.nccl == null and ([.findings[] | select(.kind == "nccl")] | length == 0)'
}

# The probe sees 2 CUDA devices (a stand-in runtime: tests/cli/workers/
# fake_cudart.c); the job of hvd-ncclcheck really starts, a rank each, and
# each fails at its GPU with libhvd's reason.
@test "check --nccl: the job starts a rank a GPU; a rank that fails is reported with its stage and reason" {
	local fake=$ROOT/build/tests/fake worker=$ROOT/build/libexec/hvdrun/hvd-ncclcheck
	[ -x "$worker" ] || skip "libhvd built without its GPU engine (no $worker)"
	[ -e "$fake/libcudart.so" ] || skip "no $fake/libcudart.so (make test builds it)"
	if nvidia-smi -L >/dev/null 2>&1; then
		skip "this machine has a GPU: tests/cli/gpu.bats runs the check for real"
	fi
	run --separate-stderr env LD_LIBRARY_PATH="$fake" "$HVDRUN" check --nccl -H localhost:2 --json
	assert_failure 1
	echo "$output" | jq -e '.nccl.not_run == null and .nccl.status == 1 and (.nccl.timed_out | not)'
	echo "$output" | jq -e '.nccl.hosts[0] | .ranks == 2 and (.joined | not) and (.reason | startswith("rank "))'
	echo "$output" | jq -e '[.nccl.ranks[] | select(.stage == "gpu" and (.error | startswith("no GPU for this rank")))] | length >= 1'
	echo "$output" | jq -e '.nccl.launcher | any(test("rank [01] on localhost exited with code 1"))'
	echo "$output" | jq -e '[.findings[] | select(.kind == "nccl" and .host == "localhost")] | length == 1'
	run --separate-stderr env LD_LIBRARY_PATH="$fake" "$HVDRUN" check --nccl -H localhost:2
	assert_failure 1
	assert_line --regexp '^  2 ranks on the hosts with GPUs, 0 of 1 hosts joined, [0-9.]+ s$'
	assert_line --regexp '^  localhost +rank [01]: no GPU for this rank: '
	# Nothing of the job is left.
	run pgrep -f "$worker"
	assert_failure
}

# The probe sees FAKE_CUDA_DEVICES devices (fake_cudart.c): a host given
# more slots than that is a finding, which fails nothing.
@test "check: a host with more slots than GPUs is a finding (gpu_slots), in the table and the JSON" {
	local fake=$ROOT/build/tests/fake
	[ -e "$fake/libcudart.so" ] || skip "no $fake/libcudart.so (make test builds it)"
	run --separate-stderr env LD_LIBRARY_PATH="$fake" FAKE_CUDA_DEVICES=1 "$HVDRUN" check -H localhost:3
	assert_success
	assert_line "FINDINGS"
	assert_line "  GPU slots: localhost: 3 slots but 1 GPU: local ranks 1 and 2 of a GPU job have no GPU of their own (NCCL takes one rank a GPU); give it at most 1 slot for GPU jobs"
	run --separate-stderr env LD_LIBRARY_PATH="$fake" FAKE_CUDA_DEVICES=2 "$HVDRUN" check -H localhost:3 --json
	assert_success
	echo "$output" | jq -e '.ok and ([.findings[] | select(.kind == "gpu_slots")] | length == 1)'
	echo "$output" | jq -e '.findings[0] | .host == "localhost" and (.text | startswith("localhost: 3 slots but 2 GPUs: local rank 2 of a GPU job has no GPU of its own"))'
	# As many slots as GPUs: none.
	run --separate-stderr env LD_LIBRARY_PATH="$fake" FAKE_CUDA_DEVICES=3 "$HVDRUN" check -H localhost:3 --json
	assert_success
	echo "$output" | jq -e '[.findings[] | select(.kind == "gpu_slots")] | length == 0'
}

# The probe reads the CPUs it may use and their topology from sysfs
# (HVD_SYSFS_ROOT for another): a host with more slots than CPUs is a
# finding, which fails nothing.
@test "check: each host's CPUs, packages, cores and NUMA nodes; more slots than CPUs is a finding (cpu_slots)" {
	local -a list
	local c sys="$BATS_TEST_TMPDIR/sys"
	mapfile -t list < <(/usr/bin/python3 -c 'import os; print(*sorted(os.sched_getaffinity(0))[:2], sep="\n")')
	[ "${#list[@]}" -eq 2 ] || skip "one CPU: nothing to count"
	# Two packages, one core of two threads, one NUMA node.
	for c in 0 1; do
		mkdir -p "$sys/devices/system/cpu/cpu${list[c]}/topology"
		echo "$c" >"$sys/devices/system/cpu/cpu${list[c]}/topology/physical_package_id"
		echo "${list[0]},${list[1]}" >"$sys/devices/system/cpu/cpu${list[c]}/topology/thread_siblings_list"
	done
	mkdir -p "$sys/devices/system/node/node0"
	echo "${list[0]},${list[1]}" >"$sys/devices/system/node/node0/cpulist"
	run --separate-stderr env HVD_SYSFS_ROOT="$sys" taskset -c "${list[0]},${list[1]}" "$HVDRUN" check -H localhost:2
	assert_success
	assert_line "CPUS"
	assert_line --regexp "^  localhost +2 CPUs: 2 packages, 2 cores, 1 NUMA node$"
	refute_line "FINDINGS"
	# One core of two threads, in one package.
	echo 0 >"$sys/devices/system/cpu/cpu${list[1]}/topology/physical_package_id"
	run --separate-stderr env HVD_SYSFS_ROOT="$sys" taskset -c "${list[0]},${list[1]}" "$HVDRUN" check -H localhost:3 --json
	assert_success
	echo "$output" | jq -e '.ok and .hosts[0].cpus == {"cpus": 2, "packages": 1, "cores": 1, "numa_nodes": 1}'
	echo "$output" | jq -e '[.findings[] | select(.kind == "cpu_slots")] | length == 1'
	echo "$output" | jq -e '.findings[0].text == "localhost: 3 slots but 2 CPUs that its workers may use: --bind-to core binds none of them, and they share the CPUs; give it at most 2 slots"'
	run --separate-stderr env HVD_SYSFS_ROOT="$sys" taskset -c "${list[0]},${list[1]}" "$HVDRUN" check -H localhost:3
	assert_line --regexp "^  localhost +2 CPUs: 1 package, 1 core \(2 threads a core\), 1 NUMA node$"
	assert_line "  CPU slots: localhost: 3 slots but 2 CPUs that its workers may use: --bind-to core binds none of them, and they share the CPUs; give it at most 2 slots"
}

@test "check --nccl-timeout: checked like every option; the NCCL options are the check's" {
	run "$HVDRUN" check --nccl --nccl-timeout 0
	assert_failure 2
	assert_output --partial "--nccl-timeout"
	run "$HVDRUN" -np 1 --nccl true
	assert_failure 2
	assert_line "hvdrun: --nccl is an option of 'hvdrun check'"
	run "$HVDRUN" -np 1 --nccl-timeout 5 true
	assert_failure 2
	assert_line "hvdrun: --nccl-timeout is an option of 'hvdrun check'"
}
