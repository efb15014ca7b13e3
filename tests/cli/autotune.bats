#!/usr/bin/env bats
# --autotune: libhvd tunes its fusion threshold, cycle time, shared-memory
# choices and response cache while a job of training-like steps runs (the
# self-test's steps mode checks every result under every setting), and
# rank 0 logs each setting and its score as CSV.
bats_require_minimum_version 1.5.0
load helper

TUNE=(--autotune --autotune-steps-per-sample 3 --autotune-warmup-samples 1
	--autotune-bayes-opt-max-samples 7)

setup() {
	export PIDDIR=$BATS_TEST_TMPDIR/pids
	mkdir -p "$PIDDIR"
	LOG=$BATS_TEST_TMPDIR/autotune.csv
}

@test "--autotune at np 2: the job's setting, Horovod's first points, then Bayesian ones, then TCP instead of shared memory, then no response cache; the best kept, last; every result right" {
	run "$HVDRUN" -np 2 "${TUNE[@]}" --autotune-log-file "$LOG" "$SELFTEST" steps 200
	assert_success
	assert_line "[0]<stdout>:rank 0: ok"
	assert_line "[1]<stdout>:rank 1: ok"
	run cat "$LOG"
	assert_line --index 0 "hierarchical_allreduce,hierarchical_allgather,cache_enabled,cycle_time_ms,tensor_fusion_threshold,score,hierarchical_allreduce_gpu"
	# The job's own setting first (128 MiB, 1 ms), then Horovod's points.
	assert_line --index 1 --regexp '^1,1,1,1\.000,134217728,[0-9.]+,0$'
	assert_line --index 2 --regexp '^1,1,1,5\.000,4194304,[0-9.]+,0$'
	assert_line --index 3 --regexp '^1,1,1,50\.000,33554432,[0-9.]+,0$'
	# 7 settings of fusion and cycle, then the best over TCP, then the
	# best so far without the response cache, then the best of all, kept
	# where it scored more than 5% above the job's own, else the job's own.
	[ "${#lines[@]}" -eq 11 ]
	assert_line --index 8 --regexp '^0,1,1,'
	assert_line --index 9 --regexp '^[01],1,0,'
	best=$(tail -n +2 "$LOG" | head -n -1 | sort -t, -k6 -g | tail -1)
	awk -F, -v b="$(cut -d, -f6 <<<"$best")" -v o="$(cut -d, -f6 <<<"${lines[1]}")" \
		'BEGIN { exit !(b > o * 1.05) }' ||
		best=${lines[1]}
	[ "${lines[10]}" = "$best" ]
}

@test "--autotune leaves a setting the job gave alone: --fusion-threshold-mb 8, over TCP (no shared memory to try)" {
	run "$HVDRUN" -np 3 --no-shared-memory --fusion-threshold-mb 8 "${TUNE[@]}" \
		--autotune-log-file "$LOG" "$SELFTEST" steps 150
	assert_success
	refute_output --partial FAIL
	[ "$(tail -n +2 "$LOG" | cut -d, -f5 | sort -u)" = 8388608 ]
	[ "$(tail -n +2 "$LOG" | cut -d, -f1 | sort -u)" = 1 ]
	[ "$(tail -n +2 "$LOG" | cut -d, -f4 | sort -u | wc -l)" -gt 3 ]
	# The response cache is still tried.
	[ "$(tail -n +2 "$LOG" | cut -d, -f3 | sort -u | wc -l)" -eq 2 ]
}

@test "--autotune leaves a response cache the job sized alone: --cache-capacity 64" {
	run "$HVDRUN" -np 2 --cache-capacity 64 "${TUNE[@]}" \
		--autotune-log-file "$LOG" "$SELFTEST" steps 150
	assert_success
	refute_output --partial FAIL
	[ "$(tail -n +2 "$LOG" | cut -d, -f3 | sort -u)" = 1 ]
}

@test "--autotune across 2 hosts x 2 ranks also tries the other hierarchical allgather" {
	run "$HVDRUN" -np 4 -H localhost:2,127.0.0.1:2 "${TUNE[@]}" \
		--autotune-log-file "$LOG" "$SELFTEST" steps 200
	assert_success
	refute_output --partial FAIL
	run cat "$LOG"
	[ "${#lines[@]}" -eq 12 ]
	assert_line --index 8 --regexp '^0,1,1,'
	assert_line --index 9 --regexp '^[01],0,1,'
	assert_line --index 10 --regexp '^[01],[01],0,'
}
