#!/usr/bin/env bats
# libhvd over Open MPI (started by mpirun, or asked for), and `hvdrun
# --mpi`. The collective tests of the TCP engine, run under MPI: every
# result is checked against the same serial reference.
bats_require_minimum_version 1.5.0
load helper

MPI_USER=$ROOT/build/tests/mpi_user
MPIRUN=(mpirun --oversubscribe)
[ "$(id -u)" -ne 0 ] || MPIRUN+=(--allow-run-as-root)

setup() {
	export PIDDIR=$BATS_TEST_TMPDIR/pids
	mkdir -p "$PIDDIR"
	# Open MPI's own allocations are not libhvd's leaks.
	export ASAN_OPTIONS=detect_leaks=0
}

@test "under mpirun: every dtype and op, threads, fusion, disagreements; 1 to 4 ranks" {
	local n r mode
	for n in 1 2 3 4; do
		run "${MPIRUN[@]}" -np "$n" "$SELFTEST" all
		assert_success
		for ((r = 0; r < n; r++)); do
			assert_line "rank $r: ok"
		done
	done
	for mode in threads fusion mismatch; do
		run "${MPIRUN[@]}" -np 3 "$SELFTEST" "$mode"
		assert_success
		refute_output --partial FAIL
	done
}

@test "under mpirun: alltoall, reducescatter, scaling, groups, join, their disagreements" {
	local n mode
	for n in 1 2 4; do
		run "${MPIRUN[@]}" -np "$n" "$SELFTEST" more
		assert_success
		refute_output --partial FAIL
		assert_line "rank 0: ok"
	done
	for mode in groups join mismatch2; do
		run "${MPIRUN[@]}" -np 3 "$SELFTEST" "$mode"
		assert_success
		refute_output --partial FAIL
		assert_line "rank 2: ok"
	done
}

@test "under mpirun, fused tensors go through the fusion buffer to MPI_Allreduce" {
	run "${MPIRUN[@]}" -x HOROVOD_TIMELINE="$BATS_TEST_TMPDIR/tl.json" \
		-np 3 "$SELFTEST" fusion
	assert_success
	refute_output --partial FAIL
	[ "$(grep -c '"MEMCPY_IN_FUSION_BUFFER"' "$BATS_TEST_TMPDIR/tl.json")" -ge 64 ]
	grep -q '"MEMCPY_OUT_FUSION_BUFFER"' "$BATS_TEST_TMPDIR/tl.json"
	# Horovod's name for it, inside each tensor's ALLREDUCE span.
	grep -q '"MPI_ALLREDUCE"' "$BATS_TEST_TMPDIR/tl.json"
	assert_timeline_nested "$BATS_TEST_TMPDIR/tl.json"
}

@test "the ring over MPI point-to-point (HOROVOD_MPI_ALLREDUCE=0) gives the same results; set on one rank only, every rank runs on rank 0's" {
	run "${MPIRUN[@]}" -x HOROVOD_MPI_ALLREDUCE=0 -np 3 "$SELFTEST" all
	assert_success
	assert_line "rank 2: ok"
	# Rank 1 on the ring, the others in MPI_Allreduce: a hang, before.
	run timeout 120 "${MPIRUN[@]}" -np 3 sh -c \
		'[ "$OMPI_COMM_WORLD_RANK" = 1 ] && export HOROVOD_MPI_ALLREDUCE=0; exec "$0" all' "$SELFTEST"
	assert_success
	assert_line "rank 2: ok"
	assert_line "libhvd warning: agree_setting: HOROVOD_MPI_ALLREDUCE is '0' on this rank (1) but unset on rank 0: every rank runs on rank 0's"
	assert_line "libhvd warning: agree_setting: HOROVOD_MPI_ALLREDUCE differs from rank 0's (unset) on 1 of 3 ranks: 1 (rank 1 says its own); every rank runs on rank 0's"
}

@test "under mpirun: hvd_shutdown() then hvd_init() 50 times (MPI stays up until the process exits)" {
	run "${MPIRUN[@]}" -np 3 "$SELFTEST" resets 50 0
	assert_success
	refute_output --partial FAIL
	assert_line "rank 2: ok"
}

@test "HOROVOD_CONTROLLER=mpi without mpirun: a job of one on MPI; in hvdrun's workers (no --mpi) a warning, and they join hvdrun's job" {
	local v r
	HOROVOD_CONTROLLER=mpi run "$SELFTEST" all
	assert_success
	assert_output "rank 0: ok"
	# A shell's export: each worker was an MPI job of one, rank 0 of 1,
	# and the job "passed" without a collective between them.
	for v in HOROVOD_CONTROLLER HOROVOD_CPU_OPERATIONS; do
		run env "$v=mpi" "$HVDRUN" -np 3 "$SELFTEST" all
		assert_success
		for r in 0 1 2; do
			assert_line "[$r]<stdout>:rank $r: ok"
			assert_line "[$r]<stderr>:libhvd warning: hvd__mpi_wanted: $v=mpi, but hvdrun started this worker without --mpi: it runs on hvdrun's own engine (hvdrun --mpi runs the job over MPI)"
		done
	done
	# With --mpi, MPI as asked.
	run env HOROVOD_CONTROLLER=mpi "$HVDRUN" --mpi -np 2 -x HOROVOD_CONTROLLER "$SELFTEST" all
	assert_success
	assert_line "[1,1]<stdout>:rank 1: ok"
	refute_output --partial "warning"
}

@test "the Iris MLP ends with the same weights over MPI as over TCP" {
	run "$HVDRUN" -np 4 "$ROOT/build/examples/iris_mlp" "$ROOT/examples/data/iris.csv" \
		--save "$BATS_TEST_TMPDIR/tcp"
	assert_success
	run "${MPIRUN[@]}" -np 4 "$ROOT/build/examples/iris_mlp" "$ROOT/examples/data/iris.csv" \
		--save "$BATS_TEST_TMPDIR/mpi"
	assert_success
	paste "$BATS_TEST_TMPDIR/tcp" "$BATS_TEST_TMPDIR/mpi" | awk '
		{ d = $2 - $1; if (d < 0) d = -d; if (d > m) m = d }
		END { print "max difference", m; exit !(NR == 131 && m < 1e-9) }'
}

@test "a program that initialised MPI itself: libhvd uses it and leaves it alive" {
	run "${MPIRUN[@]}" -np 2 "$MPI_USER" serialized
	assert_success
	assert_line "rank 0 of 2: allreduce success, 2"
	assert_line "rank 1: MPI still works after hvd_shutdown: 2"
	run "${MPIRUN[@]}" -np 2 "$MPI_USER" single
	assert_failure
	assert_line --partial "MPI gives MPI_THREAD_SINGLE; libhvd's background thread needs MPI_THREAD_SERIALIZED or more"
}

@test "hvdrun --mpi: mpirun built from the same options, hvdrun's environment passed by name as horovodrun --mpi passes it (but its session's); --verbose prints it" {
	run env FOOENV=1 SSH_CONNECTION="1 2 3 4" "$HVDRUN" --mpi --verbose -np 2 -H localhost:2 \
		-x FOO=bar -x HOME --network-interface lo --fusion-threshold-mb 8 \
		--mpi-args "--mca btl self,tcp" sh -c 'echo "$OMPI_COMM_WORLD_RANK $FOO $HOROVOD_FUSION_THRESHOLD $FOOENV"'
	assert_success
	local root="" line
	[ "$(id -u)" -ne 0 ] || root=" --allow-run-as-root"
	line=$(grep '^hvdrun: mpirun' <<<"$output")
	[[ "$line" == "hvdrun: mpirun$root --tag-output -np 2 -H localhost:2 --mca plm_rsh_args '-o StrictHostKeyChecking=accept-new' --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo -x NCCL_SOCKET_IFNAME=lo -x GLOO_SOCKET_IFNAME=lo -x FOO=bar -x HOROVOD_FUSION_THRESHOLD=8388608 -x HOME -x "* ]]
	[[ "$line" == *" --mca btl self,tcp sh -c 'echo \"\$OMPI_COMM_WORLD_RANK \$FOO \$HOROVOD_FUSION_THRESHOLD \$FOOENV\"'" ]]
	[[ "$line" == *" -x FOOENV "* && "$line" == *" -x PATH "* ]]
	[[ "$line" != *SSH_CONNECTION* ]]
	[ "$(grep -o ' -x HOME ' <<<"$line" | wc -l)" -eq 1 ]
	assert_line "[1,0]<stdout>:0 bar 8388608 1"
	assert_line "[1,1]<stdout>:1 bar 8388608 1"
	# The line is the shell's: run as it is printed, the same job.
	FOOENV=1 eval "run ${line#hvdrun: }"
	assert_success
	assert_line "[1,0]<stdout>:0 bar 8388608 1"
	assert_line "[1,1]<stdout>:1 bar 8388608 1"
	# --dry-run: the plan, and the line, and nothing run.
	cd "$BATS_TEST_TMPDIR"
	run env FOOENV=1 "$HVDRUN" --mpi --dry-run -np 2 -H localhost:2 \
		-x FOO=bar -x HOME --network-interface lo --fusion-threshold-mb 8 \
		--mpi-args "--mca btl self,tcp" touch 'started here'
	assert_success
	assert_line --index 0 "rank=0 host=localhost local_rank=0 local_size=2 cross_rank=0 cross_size=1"
	assert_line --index 1 "rank=1 host=localhost local_rank=1 local_size=2 cross_rank=0 cross_size=1"
	[[ "${lines[2]}" == "${line%% -x HOME *} -x HOME "* ]]
	[[ "${lines[2]}" == *" --mca btl self,tcp touch 'started here'" ]]
	[ ! -e "started here" ]
	# NCCL's interface, as hvdrun's own workers get it, unless -x sets it.
	run "$HVDRUN" --mpi -np 1 --network-interface lo -x NCCL_SOCKET_IFNAME=eth9 sh -c 'echo "$NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME"'
	assert_output "[1,0]<stdout>:eth9 lo"
	# --bind-to and --report-bindings in mpirun's words; mpirun reports.
	run "$HVDRUN" --mpi -np 1 --bind-to NONE --report-bindings --dry-run true
	[[ "${lines[1]}" == *" --bind-to none --report-bindings true" ]]
	# --timeout: mpirun's own. Python's output unbuffered, as in
	# hvdrun's own workers.
	run env -u PYTHONUNBUFFERED "$HVDRUN" --mpi -np 1 --timeout 7 --dry-run true
	[[ "${lines[1]}" == "hvdrun: mpirun "*" --timeout 7 -np 1 "* ]]
	[[ "${lines[1]}" == *" -x PYTHONUNBUFFERED=1 "* ]]
	run env PYTHONUNBUFFERED= "$HVDRUN" --mpi -np 1 --dry-run true
	[[ "${lines[1]}" != *"PYTHONUNBUFFERED=1"* ]]
	run "$HVDRUN" --mpi -np 1 --bind-to core --report-bindings true
	assert_success
	assert_line --partial "MCW rank 0 bound to"
	run "$HVDRUN" --mpi -np 1 --bind-to socket --binding-args "-bind-to core" true
	assert_failure 2
	assert_line --index 0 "hvdrun: --bind-to socket and --binding-args -bind-to core both bind mpirun's workers: give one"
}

@test "hvdrun --mpi: output as horovodrun's --mpi gives it: each line tagged by mpirun, timestamps with --prefix-output-with-timestamp, --output-filename to mpirun's own layout" {
	cd "$BATS_TEST_TMPDIR"
	run "$HVDRUN" --mpi --prefix-output-with-timestamp --output-filename logs -np 2 \
		sh -c 'echo "out $OMPI_COMM_WORLD_RANK"; echo "err $OMPI_COMM_WORLD_RANK" >&2'
	assert_success
	assert_line --regexp '^[A-Z][a-z]{2} [A-Z][a-z]{2} +[0-9]+ [0-9:]{8} [0-9]{4}\[1,1\]<stdout>:out 1$'
	assert_line --regexp '^[A-Z][a-z]{2} [A-Z][a-z]{2} +[0-9]+ [0-9:]{8} [0-9]{4}\[1,0\]<stderr>:err 0$'
	grep -q "out 1" logs/1/rank.1/stdout
	grep -q "err 0" logs/1/rank.0/stderr
}

@test "hvdrun --mpi runs a plain MPI program and a libhvd one" {
	run "$HVDRUN" --mpi -np 2 "$MPI_USER" serialized
	assert_success
	assert_line "[1,1]<stdout>:rank 1 of 2: allreduce success, 2"
	run "$HVDRUN" --mpi -np 3 "$SELFTEST" all
	assert_success
	assert_line "[1,2]<stdout>:rank 2: ok"
}

@test "hvdrun --mpi: standard input to rank 0 as mpirun gives it, and --stdin passed on to mpirun's own" {
	local t
	# NONE and 01 as hvdrun reads them: mpirun read NONE as rank 0.
	for t in "" "--stdin 1" "--stdin 01" "--stdin none" "--stdin NONE"; do
		# shellcheck disable=SC2086 # $t: one option or none
		run timeout 30 "$HVDRUN" --mpi -np 2 $t sh -c 'echo "rank $OMPI_COMM_WORLD_RANK read $(wc -l)"' <<<$'one\ntwo'
		assert_success
		case $t in
		"") assert_line "[1,0]<stdout>:rank 0 read 2"; assert_line "[1,1]<stdout>:rank 1 read 0" ;;
		*1) assert_line "[1,0]<stdout>:rank 0 read 0"; assert_line "[1,1]<stdout>:rank 1 read 2" ;;
		*) assert_line "[1,0]<stdout>:rank 0 read 0"; assert_line "[1,1]<stdout>:rank 1 read 0" ;;
		esac
	done
}

@test "hvdrun --mpi: a failing rank ends the job with its code" {
	run "$HVDRUN" --mpi -np 3 sh -c '[ "$OMPI_COMM_WORLD_RANK" = 1 ] && exit 7; sleep 30'
	assert_failure 7
}

@test "hvdrun --mpi: bad --mpi-args is a usage error; nothing starts" {
	run "$HVDRUN" --mpi --mpi-args "'open" -np 2 "$WORKERS/family.sh"
	assert_failure 2
	assert_line "hvdrun: --mpi-args: cannot split ''open' into words (unbalanced quotes, or \$(...))"
	[ -z "$(ls "$PIDDIR")" ]
}

@test "hvdrun --mpi: a timeline or autotune log rank 0 here cannot create is a usage error, as without --mpi; nothing starts" {
	run "$HVDRUN" --mpi -np 2 --timeline-filename "$BATS_TEST_TMPDIR/no/tl.json" touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: --timeline-filename '$BATS_TEST_TMPDIR/no/tl.json': rank 0 cannot write it (No such file or directory)"
	HOROVOD_AUTOTUNE=1 HOROVOD_AUTOTUNE_LOG=$BATS_TEST_TMPDIR run "$HVDRUN" --mpi -np 2 touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: HOROVOD_AUTOTUNE_LOG '$BATS_TEST_TMPDIR': rank 0 cannot write it (Is a directory)"
	[ ! -e "$BATS_TEST_TMPDIR/started" ]
	run "$HVDRUN" --mpi -np 2 --timeline-filename "$BATS_TEST_TMPDIR/tl.json" "$ROOT/build/examples/hello"
	assert_success
	[ -s "$BATS_TEST_TMPDIR/tl.json" ]
}
