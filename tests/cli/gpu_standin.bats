#!/usr/bin/env bats
# libhvd's GPU engine (core/gpu/: fusion on the device, batches in flight
# on its stream, tensors held until the GPU has computed them, NCCL's
# communicators, the hierarchical allreduce, aborts) on machines without
# a GPU: with the CPU stand-ins for CUDA's runtime and NCCL
# (tests/cli/workers/standin_cudart.c, standin_nccl.c) found first on the
# library path. Streams there run later than they are queued, as a GPU's
# do, so the engine's ordering is tested, and each collective's result
# is checked by the self-test. What needs NCCL and a GPU themselves is in
# gpu.bats. In the sanitizer run the engine runs under ASan and UBSan.
bats_require_minimum_version 1.5.0
load helper

SETS=${HVD_SETS_BIN:-$ROOT/build/tests/hvd_sets}
STANDIN=$ROOT/build/tests/standin

setup() {
	export PIDDIR=$BATS_TEST_TMPDIR/pids
	mkdir -p "$PIDDIR"
	readelf -d "$ROOT/build/lib/libhvd.so" | grep -q 'NEEDED.*libnccl' ||
		skip "libhvd was built without CUDA and NCCL (make NCCL=0, or none under CUDA_HOME)"
	[ -n "$(ls "$STANDIN"/libnccl.so* 2>/dev/null)" ] ||
		skip "no stand-ins in $STANDIN: make test builds them"
	export LD_LIBRARY_PATH=$STANDIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export STANDIN_GPUS=4
}

assert_all_ok() { # ranks
	local r
	assert_success
	refute_output --partial FAIL
	for ((r = 0; r < $1; r++)); do
		assert_line "[$r]<stdout>:rank $r: ok"
	done
}

@test "stand-in: libhvd loads the stand-ins, not CUDA's and NCCL's own" {
	run ldd "$ROOT/build/lib/libhvd.so"
	assert_line --regexp "libcudart\.so\.[0-9]+ => $STANDIN/"
	assert_line --regexp "libnccl\.so\.[0-9]+ => $STANDIN/"
}

@test "stand-in: GPU collectives, every dtype and op, fusion, a tensor still being written, integers with scaling factors (through host memory): 1 to 3 ranks, a GPU each" {
	local n
	for n in 1 2 3; do
		run "$HVDRUN" -np "$n" "$SELFTEST" gpu
		assert_all_ok "$n"
	done
}

@test "stand-in: the fusion buffer's copies: one batched call a batch, one a tensor where the runtime has no batched copies (said once), and one a tensor from the start with HOROVOD_BATCH_D2D_MEMCOPIES=0; a bad value is refused before launch" {
	STANDIN_NO_BATCH_COPIES=1 run "$HVDRUN" -np 2 -x HOROVOD_LOG_LEVEL=debug "$SELFTEST" gpu
	assert_all_ok 2
	assert_line --regexp "cudaMemcpyBatchAsync: operation not supported; copying one at a time$"
	[ "$(grep -c "cudaMemcpyBatchAsync:" <<<"$output")" -eq 2 ] # once a rank
	STANDIN_NO_BATCH_COPIES=1 run "$HVDRUN" -np 2 -x HOROVOD_LOG_LEVEL=debug \
		-x HOROVOD_BATCH_D2D_MEMCOPIES=0 "$SELFTEST" gpu
	assert_all_ok 2
	refute_output --partial "cudaMemcpyBatchAsync"
	HOROVOD_BATCH_D2D_MEMCOPIES=yes run "$HVDRUN" -np 2 "$SELFTEST" gpu
	assert_failure 2
	assert_output --partial "HOROVOD_BATCH_D2D_MEMCOPIES in the environment: bad value 'yes'"
	refute_output --partial "rank 0"
}

@test "stand-in: 3 ranks share one GPU; the MPI engine" {
	run "$HVDRUN" -np 3 "$WORKERS/gpu_share.sh" "$SELFTEST" gpu
	assert_all_ok 3
	# Open MPI's own allocations are not libhvd's leaks.
	ASAN_OPTIONS=detect_leaks=0 run "$HVDRUN" --mpi -np 2 "$SELFTEST" gpu
	assert_success
	refute_output --partial FAIL
	assert_output --partial "rank 1: ok"
}

@test "stand-in: hierarchical allreduce on 2 hosts x 2 GPUs (NCCL communicators split by host)" {
	run "$HVDRUN" -H localhost:2,127.0.0.1:2 -x HOROVOD_HIERARCHICAL_ALLREDUCE=1 \
		-x HOROVOD_LOG_LEVEL=debug "$SELFTEST" gpu
	assert_all_ok 4
	assert_output --partial "NCCL split by host: 2 ranks a host, 2 hosts"
}

@test "stand-in: join with GPU collectives: the joined ranks give zeros from GPU memory, averages (of integers too, and Adasum on one host) divide by the ranks that gave data, allgathers leave them out; Adasum across hosts refused while ranks have joined (1 to 4 ranks, 2 hosts x 2 flat and hierarchical, without shared memory, under mpirun)" {
	local n
	for n in 1 2 4; do
		run "$HVDRUN" -np "$n" "$SELFTEST" gpujoin
		assert_all_ok "$n"
	done
	run "$HVDRUN" -H localhost:2,127.0.0.1:2 "$SELFTEST" gpujoin
	assert_all_ok 4
	run "$HVDRUN" -H localhost:2,127.0.0.1:2 --hierarchical-allreduce \
		-x HOROVOD_LOG_LEVEL=debug "$SELFTEST" gpujoin
	assert_all_ok 4
	assert_output --partial "NCCL split by host: 2 ranks a host, 2 hosts"
	run "$HVDRUN" -np 3 --no-shared-memory "$SELFTEST" gpujoin
	assert_all_ok 3
	ASAN_OPTIONS=detect_leaks=0 run "$HVDRUN" --mpi -np 3 "$SELFTEST" gpujoin
	assert_success
	refute_output --partial FAIL
	assert_output --partial "rank 2: ok"
}

@test "stand-in: Adasum of GPU tensors as Horovod's NCCL build does it: each host's ranks average by NCCL, the hosts combine (2 hosts x 2, with shared memory and without; one rank a host); on one host, the average (3 ranks, without shared memory too, under mpirun); on 3 hosts, of one rank and of two, the third folding into the first" {
	local r o
	run "$HVDRUN" -H localhost:2,127.0.0.1:2 -x STANDIN_NCCL_CALLS=1 "$SELFTEST" gpuadasum
	assert_all_ok 4
	# Each host's average and its gathering on the host's communicator
	# (split for it), one of each a batch; nothing on the world's.
	for r in 0 1 2 3; do
		assert_line --regexp "^\[$r\]<stderr>:standin nccl: a communicator of 2 ranks ran 0 allreduce, 0 broadcast, [2-3] allgather, [2-3] reduce-scatter$"
		assert_line "[$r]<stderr>:standin nccl: a communicator of 4 ranks ran 0 allreduce, 0 broadcast, 0 allgather, 0 reduce-scatter"
	done
	# One host: the GPU's average allreduce, also without shared memory.
	for o in "" --no-shared-memory; do
		# shellcheck disable=SC2086 # no option, or one
		run "$HVDRUN" -np 3 $o -x STANDIN_NCCL_CALLS=1 "$SELFTEST" gpuadasum
		assert_all_ok 3
		for r in 0 1 2; do
			assert_line --regexp "^\[$r\]<stderr>:standin nccl: a communicator of 3 ranks ran [2-3] allreduce, 0 broadcast, 0 allgather, 0 reduce-scatter$"
		done
	done
	run "$HVDRUN" -H localhost:1,127.0.0.1:1 --no-shared-memory "$SELFTEST" gpuadasum
	assert_all_ok 2
	# Without shared memory: the host's sums by NCCL too (its
	# communicator's allreduces), the hosts over a group of their own.
	run "$HVDRUN" -H localhost:2,127.0.0.1:2 --no-shared-memory -x STANDIN_NCCL_CALLS=1 "$SELFTEST" gpuadasum
	assert_all_ok 4
	for r in 0 1 2 3; do
		assert_line --regexp "^\[$r\]<stderr>:standin nccl: a communicator of 2 ranks ran [1-9][0-9]* allreduce, 0 broadcast, [2-3] allgather, [2-3] reduce-scatter$"
	done
	run "$HVDRUN" -H localhost:1,127.0.0.1:1,localhost.localdomain:1 "$SELFTEST" gpuadasum
	assert_all_ok 3
	# 3 hosts x 2 (Horovod refuses it): each host's average, the third
	# host's folding into the first's, with shared memory and without.
	for o in "" --no-shared-memory; do
		# shellcheck disable=SC2086 # no option, or one
		STANDIN_GPUS=6 run "$HVDRUN" -H localhost:2,127.0.0.1:2,localhost.localdomain:2 $o \
			-x STANDIN_NCCL_CALLS=1 "$SELFTEST" gpuadasum
		assert_all_ok 6
		for r in 0 1 2 3 4 5; do
			assert_line --regexp "^\[$r\]<stderr>:standin nccl: a communicator of 2 ranks ran [0-9]+ allreduce, 0 broadcast, [2-3] allgather, [2-3] reduce-scatter$"
		done
	done
	ASAN_OPTIONS=detect_leaks=0 run "$HVDRUN" --mpi -np 2 "$SELFTEST" gpuadasum
	assert_success
	refute_output --partial FAIL
	assert_output --partial "rank 1: ok"
}

@test "stand-in: Adasum of GPU tensors on hosts that run different numbers of ranks is refused on every rank alike, and the job goes on (2 + 1 ranks, with shared memory and without; 3 + 1 + 2)" {
	local c
	# Rank 1 is the only local rank 1 (its cross size is 1), as rank 2
	# of the 3 + 1 + 2 is: neither may take the job for one host.
	for c in "3|-H localhost:2,127.0.0.1:1" "3|-H localhost:2,127.0.0.1:1 --no-shared-memory" \
		"6|-H localhost:3,127.0.0.1:1,localhost.localdomain:2"; do
		# shellcheck disable=SC2086 # the hosts and an option
		STANDIN_GPUS=6 run "$HVDRUN" ${c#*|} "$SELFTEST" gpuadasum
		assert_all_ok "${c%%|*}"
	done
}

@test "stand-in: GPU collectives in process sets (a communicator each): the even and the odd ranks' sets at once, the job's, a set removed and added again; 3 and 4 ranks, and hosts of 3, 1 and 2" {
	local n
	for n in 3 4; do
		run "$HVDRUN" -np "$n" -x HOROVOD_DYNAMIC_PROCESS_SETS=1 \
			-x HOROVOD_LOG_LEVEL=debug "$SETS" gpu
		assert_all_ok "$n"
		# rank 0's: the even set's twice (added again), the job's once
		assert_equal "$(grep -c '^\[0\]<stderr>:.*NCCL on GPU 0, 2 ranks$' <<<"$output")" 2
		assert_line --regexp "^\[0\]<stderr>:.*NCCL on GPU 0, $n ranks$"
	done
	# Hosts of 3, 1 and 2 ranks: the job's GPU Adasum refused alike.
	STANDIN_GPUS=6 run "$HVDRUN" -H localhost:3,127.0.0.1:1,localhost.localdomain:2 \
		-x HOROVOD_DYNAMIC_PROCESS_SETS=1 "$SETS" gpu
	assert_all_ok 6
}

@test "stand-in: --autotune while GPU steps run (each tensor still being written as it is submitted) on 2 hosts x 2: every setting it tries gives the right results, the GPU's hierarchical allreduce included; it keeps the flat one, the faster here, and ends the communicators it split" {
	local log=$BATS_TEST_TMPDIR/autotune.csv r
	# Each reduce-scatter 250 ms slower: the hierarchical allreduce loses,
	# whatever the sanitizers and a busy machine do to the other scores.
	run "$HVDRUN" -H localhost:2,127.0.0.1:2 --autotune --autotune-steps-per-sample 3 \
		--autotune-warmup-samples 1 --autotune-bayes-opt-max-samples 3 \
		--autotune-log-file "$log" -x STANDIN_NCCL_CALLS=1 \
		-x STANDIN_NCCL_SLOW_REDUCESCATTER_MS=250 -x HOROVOD_LOG_LEVEL=debug \
		"$SELFTEST" gpusteps 140
	assert_all_ok 4
	# The communicators split by host (made for the tuner): each rank's
	# host pair ran reduce-scatters, so the allreduce went within hosts
	# and across while the tuner tried it; the flat one kept, they ended
	# while the job ran on (before the world's, at its end).
	for r in 0 1 2 3; do
		assert_line --regexp "^\[$r\]<stderr>:standin nccl: a communicator of 2 ranks ran 0 allreduce, 0 broadcast, [1-9][0-9]* allgather, [1-9][0-9]* reduce-scatter$"
		assert_line --regexp "^\[$r\]<stderr>:.*hierarchical allreduce: the communicators of hosts and across them ended$"
		[ "$(grep -n "^\[$r\]<stderr>:.*communicators of hosts and across them ended$" <<<"$output" | cut -d: -f1)" -lt \
			"$(grep -n "^\[$r\]<stderr>:standin nccl: a communicator of 4 ranks" <<<"$output" | cut -d: -f1)" ]
	done
	run cat "$log"
	# the header, 3 settings of fusion and cycle (the two first points,
	# one the Gaussian process chose), then no response cache, the GPU's
	# hierarchical allreduce, the one kept; not shared memory or the
	# hierarchical allgather, which no GPU collective runs through
	[ "${#lines[@]}" -eq 7 ]
	assert_line --index 1 --regexp '^1,1,1,1\.000,134217728,[0-9.]+,0$'
	assert_line --index 2 --regexp '^1,1,1,5\.000,4194304,[0-9.]+,0$'
	assert_line --index 4 --regexp '^1,1,0,.*,0$'
	assert_line --index 5 --regexp '^1,1,[01],.*,1$'
	assert_line --index 6 --regexp '^1,1,[01],.*,0$'
}

@test "stand-in: --autotune leaves the GPU allreduce the job chose alone: hierarchical (--hierarchical-allreduce), flat (--no-hierarchical-allreduce: nothing split), and one rank a host (nothing to split)" {
	local log=$BATS_TEST_TMPDIR/autotune.csv want n rows
	# Three jobs of 4 ranks take a minute under the sanitizers, whose
	# run has the split, the trial and the end in the test before.
	plain_run_only "the sanitized run tries the split in the test before"
	for want in 1 0 one; do
		local args=(-H localhost:2,127.0.0.1:2 --hierarchical-allreduce)
		n=4 rows=6 # the header, 3 settings, the response cache, the
		# one kept
		[ "$want" != 0 ] || args=(-H localhost:2,127.0.0.1:2 --no-hierarchical-allreduce)
		[ "$want" != one ] || { args=(-H localhost:1,127.0.0.1:1); n=2; }
		run "$HVDRUN" "${args[@]}" --autotune --autotune-steps-per-sample 3 \
			--autotune-warmup-samples 1 --autotune-bayes-opt-max-samples 3 \
			--autotune-log-file "$log" -x STANDIN_NCCL_CALLS=1 "$SELFTEST" gpusteps 120
		assert_all_ok "$n"
		if [ "$want" = 1 ]; then
			assert_line --regexp '^\[0\]<stderr>:standin nccl: a communicator of 2 ranks ran 0 allreduce, 0 broadcast, [1-9][0-9]* allgather, [1-9][0-9]* reduce-scatter$'
		else
			refute_line --regexp '^\[0\]<stderr>:standin nccl: .*, [1-9][0-9]* reduce-scatter$'
		fi
		run cat "$log"
		[ "${#lines[@]}" -eq "$rows" ]
		[ "$(tail -n +2 "$log" | cut -d, -f7 | sort -u)" = "$([ "$want" = 1 ] && echo 1 || echo 0)" ]
	done
}

@test "stand-in: the timeline of GPU steps: each tensor's wait for its data ends before its NCCL allreduce starts, every step; fused ones have their copies" {
	local tl=$BATS_TEST_TMPDIR/tl.json
	run "$HVDRUN" -np 2 --timeline-filename "$tl" "$SELFTEST" gpusteps 20
	assert_all_ok 2
	# 12 tensors, 20 steps each
	jq -e '[.[] | select(.ph == "X")] | group_by(.tid) | length == 12' "$tl"
	jq -e '[.[] | select(.ph == "X")] | group_by(.tid) | map(
		(map(select(.name == "WAIT_FOR_DATA")) | sort_by(.ts) | map(.ts + .dur)) as $w |
		(map(select(.name == "NCCL_ALLREDUCE")) | sort_by(.ts) | map(.ts)) as $n |
		($w | length) == 20 and ($n | length) == 20 and
		([range(0; 20) | $w[.] <= $n[.]] | all)) | all' "$tl"
	jq -e '[.[] | select(.ph == "X" and .name == "MEMCPY_IN_FUSION_BUFFER")] | length > 0' "$tl"
	jq -e '([.[] | select(.name == "MEMCPY_IN_FUSION_BUFFER")] | length) ==
		([.[] | select(.name == "MEMCPY_OUT_FUSION_BUFFER")] | length)' "$tl"
	jq -e '[.[] | select(.ph == "X" and .dur < 0)] | length == 0' "$tl"
	assert_timeline_nested "$tl"
}

@test "stand-in: GPU batches mark their end with one untimed event each, CUDA's cheapest; timed events only for the timeline (rank 0's)" {
	local rec=$BATS_TEST_TMPDIR/records
	STANDIN_RECORDS=$rec run "$HVDRUN" -np 2 "$SELFTEST" gpusteps 20
	assert_all_ok 2
	run cat "$rec"
	assert_output --regexp "^records: 0 timed, [1-9][0-9]* untimed
records: 0 timed, [1-9][0-9]* untimed$"
	rm "$rec"
	STANDIN_RECORDS=$rec run "$HVDRUN" -np 2 --timeline-filename "$BATS_TEST_TMPDIR/tl.json" \
		"$SELFTEST" gpusteps 20
	assert_all_ok 2
	run sort "$rec"
	assert_line --index 0 --regexp "^records: 0 timed, [1-9][0-9]* untimed$"
	assert_line --index 1 --regexp "^records: [1-9][0-9]* timed, [1-9][0-9]* untimed$"
}

@test "stand-in: re-initialisation with GPU work: 30 times hvd_shutdown() then hvd_init() and a GPU allreduce at np 3, nothing leaked" {
	local kib=2048 r
	[ -z "${HVD_SANITIZER_RUN-}" ] || kib=0
	run "$HVDRUN" -np 3 "$SELFTEST" gpuresets 30 "$kib"
	assert_all_ok 3
	for r in 0 1 2; do
		assert_line --regexp "^\[$r\]<stdout>:rank $r: 30 resets: [0-9]+ descriptors, [0-9]+ threads"
	done
}

@test "stand-in: without a GPU (CUDA_VISIBLE_DEVICES empty) GPU collectives refuse and say why" {
	CUDA_VISIBLE_DEVICES= run "$HVDRUN" -np 2 "$SELFTEST" nogpu
	assert_success
	assert_line --regexp '^\[0\]<stdout>:rank 0: no GPU: .+'
}

@test "stand-in: a rank killed while GPU allreduces are in flight (flat, hierarchical, Adasum across 2 hosts x 2 with shared memory and without): the others fail within a second, later calls too" {
	local r c opts op
	# hvdrun's options | the self-test's op
	for c in "-np 4|" "-H localhost:2,127.0.0.1:2 -x HOROVOD_HIERARCHICAL_ALLREDUCE=1|" \
		"-H localhost:2,127.0.0.1:2|adasum" "-H localhost:2,127.0.0.1:2 --no-shared-memory|adasum"; do
		IFS='|' read -r opts op <<<"$c"
		# shellcheck disable=SC2086 # the options, word by word
		run "$HVDRUN" $opts "$SELFTEST" killgpu $op
		assert_survivors_failed_fast
		for r in 0 2 3; do
			assert_line --regexp "^\[$r\]<stdout>:rank $r: later: .+"
			refute_line "[$r]<stdout>:rank $r: later: success"
		done
	done
}
