#!/usr/bin/env bats
# Process sets: collectives over some of a job's ranks (hvd.h's
# hvd_add_process_set and the rest), checked by tests/cli/workers/hvd_sets.c
# inside real jobs: over TCP, through the hosts' shared memory, across
# two hosts, under mpirun.
bats_require_minimum_version 1.5.0
load helper

SETS=${HVD_SETS_BIN:-$ROOT/build/tests/hvd_sets}
MPIRUN=(mpirun --oversubscribe)
[ "$(id -u)" -ne 0 ] || MPIRUN+=(--allow-run-as-root)

setup() {
	export PIDDIR=$BATS_TEST_TMPDIR/pids
	mkdir -p "$PIDDIR"
}

# every_rank_ok N: each of N ranks printed "rank R: ok", none FAIL.
every_rank_ok() {
	local r
	refute_output --partial FAIL
	for ((r = 0; r < $1; r++)); do
		assert_line --regexp "^(\[$r\]<stdout>:)?rank $r: ok$"
	done
}

@test "process sets at np 3 and 4: sets of 1, 2 and all ranks, disjoint and overlapping sets at once, join, removed and added again, errors" {
	local n
	for n in 3 4; do
		run "$HVDRUN" -np "$n" -x HOROVOD_DYNAMIC_PROCESS_SETS=1 "$SETS" dynamic
		assert_success
		every_rank_ok "$n"
		# Ranks that disagree about a set fail, all of them, naming it.
		assert_output --regexp "ranks disagree on tensor 'hvd\.process_set\.[0-9]+': rank 0 asked for adding a process set of 2 ranks \(ranks hash [0-9a-f]+\), rank 1 for adding a process set of 2 ranks"
	done
}

@test "process sets share memory where the job does: a segment for each set with as many ranks on each host; over TCP without" {
	run "$HVDRUN" -np 4 -x HOROVOD_DYNAMIC_PROCESS_SETS=1 -x HOROVOD_LOG_LEVEL=debug "$SETS" dynamic
	assert_success
	every_rank_ok 4
	# The pair (0, 1) and the even ranks, on one host.
	assert_line --regexp '^\[0\]<stderr>:libhvd debug: hvd__hier_subset: process set 2: shared memory for 2 local ranks, 1 host$'
	assert_line --regexp '^\[0\]<stderr>:libhvd debug: hvd__hier_subset: process set 3: shared memory for 2 local ranks, 1 host$'
	run "$HVDRUN" -np 4 --no-shared-memory -x HOROVOD_DYNAMIC_PROCESS_SETS=1 -x HOROVOD_LOG_LEVEL=debug "$SETS" dynamic
	assert_success
	every_rank_ok 4
	refute_output --partial 'hier_subset'
}

@test "process sets across 2 hosts: 2 x 2 ranks (a set's ranks on one host share memory, the even ranks go over TCP), and hosts of 2 and 1" {
	run "$HVDRUN" -np 4 -H localhost:2,127.0.0.1:2 -x HOROVOD_DYNAMIC_PROCESS_SETS=1 -x HOROVOD_LOG_LEVEL=debug "$SETS" dynamic
	assert_success
	every_rank_ok 4
	assert_line '[0]<stderr>:libhvd debug: hvd__hier_subset: process set 2: shared memory for 2 local ranks, 1 host'
	refute_line --partial 'hvd__hier_subset: process set 3'
	run "$HVDRUN" -np 3 -H localhost:2,127.0.0.1:1 -x HOROVOD_DYNAMIC_PROCESS_SETS=1 "$SETS" dynamic
	assert_success
	every_rank_ok 3
}

@test "process sets given to hvd_init_process_sets; adding or removing one later needs HOROVOD_DYNAMIC_PROCESS_SETS=1, rank 0's on every rank" {
	run "$HVDRUN" -np 3 "$SETS" static
	assert_success
	every_rank_ok 3
	# Rank 1 without it: its add failed where the others' went on.
	run "$HVDRUN" -np 3 -x HOROVOD_DYNAMIC_PROCESS_SETS=1 sh -c \
		'[ "$HOROVOD_RANK" = 1 ] && export HOROVOD_DYNAMIC_PROCESS_SETS=0; exec "$0" dynamic' "$SETS"
	assert_success
	every_rank_ok 3
	assert_line "[1]<stderr>:libhvd warning: agree_setting: HOROVOD_DYNAMIC_PROCESS_SETS is '0' on this rank (1) but '1' on rank 0: every rank runs on rank 0's"
}

@test "a stall within a process set names the missing rank as a rank of the job, then fails the tensor" {
	run "$HVDRUN" -np 3 -x HOROVOD_DYNAMIC_PROCESS_SETS=1 \
		--stall-check-warning-time-seconds 1 \
		--stall-check-shutdown-time-seconds 2 "$SETS" stall
	assert_success
	every_rank_ok 3
	assert_output --partial "stall: tensor 'lonely' was submitted by 1 of 2 ranks"
	assert_line "[1]<stdout>:rank 1: stalled: tensor 'lonely' was never submitted by ranks 2 (of process set 1)"
}

@test "a set removed while a rank's engine waits on the set's bell for its peer: 40 times, the pending allreduce fails with the removed set's error, over shared memory and TCP" {
	local t
	for t in "" --no-shared-memory; do
		run "$HVDRUN" -np 3 $t -x HOROVOD_DYNAMIC_PROCESS_SETS=1 "$SETS" churn
		assert_success
		every_rank_ok 3
	done
}

@test "a set's run of collectives does not wait for the job's agreement each time: 400 allreduces of a 2-rank set in a 4-rank job take a few job cycles, not one each" {
	local t n
	for t in "" --no-shared-memory; do
		# shellcheck disable=SC2086 # $t: one option or none
		run "$HVDRUN" -np 4 $t -x HOROVOD_DYNAMIC_PROCESS_SETS=1 \
			-x HOROVOD_TIMELINE_MARK_CYCLES=1 \
			--timeline-filename "$BATS_TEST_TMPDIR/tl.json" "$SETS" burst
		assert_success
		every_rank_ok 4
		python3 -m json.tool "$BATS_TEST_TMPDIR/tl.json" >/dev/null
		# Rank 0's job cycles: one a collective (400 and more) before
		# sets ran their own rounds.
		n=$(grep -o '"CYCLE_START"' "$BATS_TEST_TMPDIR/tl.json" | wc -l)
		echo "job cycles${t:+ with $t}: $n"
		[ "$n" -ge 1 ]
		[ "$n" -lt 100 ]
	done
	# The same on the MPI engine, whose background thread alone runs
	# the cycles.
	ASAN_OPTIONS=detect_leaks=0 run "${MPIRUN[@]}" -np 4 \
		-x HOROVOD_DYNAMIC_PROCESS_SETS=1 "$SETS" burst
	assert_success
	every_rank_ok 4
}

@test "under mpirun: process sets on the MPI engine, at np 3 and 4" {
	local n
	for n in 3 4; do
		ASAN_OPTIONS=detect_leaks=0 run "${MPIRUN[@]}" -np "$n" \
			-x HOROVOD_DYNAMIC_PROCESS_SETS=1 "$SETS" dynamic
		assert_success
		every_rank_ok "$n"
	done
}

@test "the timeline shows the collectives of the process sets rank 0 is in, and stays valid JSON" {
	run "$HVDRUN" -np 3 -x HOROVOD_DYNAMIC_PROCESS_SETS=1 \
		--timeline-filename "$BATS_TEST_TMPDIR/tl.json" "$SETS" dynamic
	assert_success
	every_rank_ok 3
	python3 -m json.tool "$BATS_TEST_TMPDIR/tl.json" >/dev/null
	assert_timeline_nested "$BATS_TEST_TMPDIR/tl.json"
	grep -q '"PROCESS_SET"' "$BATS_TEST_TMPDIR/tl.json"
	for t in pair.allreduce pair.allgather pair.broadcast pair.alltoall evens.reducescatter job.allreduce; do
		grep -q "\"$t\"" "$BATS_TEST_TMPDIR/tl.json"
	done
	# Rank 0 is not in the set of the last rank alone.
	run grep -c '"one\.' "$BATS_TEST_TMPDIR/tl.json"
	assert_output 0
}
