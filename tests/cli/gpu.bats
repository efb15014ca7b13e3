#!/usr/bin/env bats
# libhvd's GPU engine (NCCL): the collectives on GPU buffers where a GPU
# exists (skipped with the reason where not), several ranks on one GPU,
# the refusal without one, the hierarchical allreduce, the build with
# and without NCCL, and the GPU training benchmark's timeline summary
# (tests/bench/gpu_overlap.py) on a handmade timeline.
bats_require_minimum_version 1.5.0
load helper

# The plain build: CUDA and AddressSanitizer do not mix.
GPU_SELFTEST=$ROOT/build/tests/hvd_selftest
SELFTEST=${HVD_SELFTEST_BIN:-$GPU_SELFTEST}

# How many GPUs the self-test may use: one rank a GPU, at most 4.
gpus() {
	local n
	n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
	echo $((n > 4 ? 4 : n))
}

# Skip, with the self-test's reason, where there is no GPU.
need_gpu() {
	run "$HVDRUN" -np 1 "$GPU_SELFTEST" gpu
	if [ "$status" -eq 77 ]; then
		skip "$(sed -n 's/.*skip: //p' <<<"$output" | head -1)"
	fi
}

@test "GPU collectives over NCCL: every dtype and op, fusion, broadcast, allgather, 1 to 4 GPUs" {
	local n r
	need_gpu
	assert_success
	assert_line "[0]<stdout>:rank 0: ok"
	for ((n = 2; n <= $(gpus); n++)); do
		run "$HVDRUN" -np "$n" "$GPU_SELFTEST" gpu
		assert_success
		for ((r = 0; r < n; r++)); do
			assert_line "[$r]<stdout>:rank $r: ok"
		done
	done
}

@test "several ranks share one GPU (NCCL's network transport over loopback): 2 and 4 ranks" {
	local n r
	need_gpu
	for n in 2 4; do
		run "$HVDRUN" -np "$n" "$WORKERS/gpu_share.sh" "$GPU_SELFTEST" gpu
		assert_success
		for ((r = 0; r < n; r++)); do
			assert_line "[$r]<stdout>:rank $r: ok"
		done
	done
}

@test "GPU collectives under the MPI engine give the same results" {
	need_gpu
	run "$HVDRUN" --mpi -np "$(gpus)" "$GPU_SELFTEST" gpu
	assert_success
	refute_output --partial FAIL
}

@test "hierarchical allreduce (HOROVOD_HIERARCHICAL_ALLREDUCE=1) on every GPU of the host" {
	local n=$(gpus) share=
	need_gpu
	# One GPU: four ranks share it, so that a host has ranks to split.
	if [ "$n" -lt 2 ]; then
		n=4 share=$WORKERS/gpu_share.sh
	fi
	run "$HVDRUN" -np "$n" -x HOROVOD_HIERARCHICAL_ALLREDUCE=1 \
		-x HOROVOD_LOG_LEVEL=debug $share "$GPU_SELFTEST" gpu
	assert_success
	refute_output --partial FAIL
	assert_output --partial "hierarchical allreduce: $n ranks a host"
}

@test "without a GPU, GPU collectives refuse and say why; the CPU ones go on" {
	local r
	CUDA_VISIBLE_DEVICES= run "$HVDRUN" -np 2 "$SELFTEST" nogpu
	assert_success
	for r in 0 1; do
		assert_line --regexp "^\[$r\]<stdout>:rank $r: (no GPU: .+|libhvd was built without CUDA and NCCL.*)$"
		assert_line "[$r]<stdout>:rank $r: ok"
	done
}

@test "tests/bench/gpu_overlap.py on a handmade timeline: a step's allreduce during and after backward, its batches (a fused one counted once), the stream's idle time between them" {
	local tl=$BATS_TEST_TMPDIR/tl.json k t
	# 4 steps, 100 ms apart. Gradients a, c and b are computed at 1, 4.5
	# and 5 ms. a goes alone (NCCL 2 to 4 ms, no copies); b and c are
	# one fused batch: copied in from 6 ms, reduced 6.5 to 9.5, copied
	# out to 10. Backward: 4 ms; allreduce: 5 ms, 2 of them (40%) before
	# the last gradient and 4.5 ms of tail; the stream idle 4 to 6 ms.
	{
		echo "["
		for ((k = 0; k < 4; k++)); do
			t=$((k * 100000))
			for tid in 1 2 3; do
				echo "{\"name\":\"QUEUE\",\"ph\":\"X\",\"pid\":0,\"tid\":$tid,\"ts\":$t,\"dur\":1},"
			done
			echo "{\"name\":\"WAIT_FOR_DATA\",\"ph\":\"X\",\"pid\":0,\"tid\":1,\"ts\":$t,\"dur\":1000},"
			echo "{\"name\":\"WAIT_FOR_DATA\",\"ph\":\"X\",\"pid\":0,\"tid\":2,\"ts\":$t,\"dur\":5000},"
			echo "{\"name\":\"WAIT_FOR_DATA\",\"ph\":\"X\",\"pid\":0,\"tid\":3,\"ts\":$t,\"dur\":4500},"
			echo "{\"name\":\"NCCL_ALLREDUCE\",\"ph\":\"X\",\"pid\":0,\"tid\":1,\"ts\":$((t + 2000)),\"dur\":2000},"
			for tid in 2 3; do
				echo "{\"name\":\"MEMCPY_IN_FUSION_BUFFER\",\"ph\":\"X\",\"pid\":0,\"tid\":$tid,\"ts\":$((t + 6000)),\"dur\":500},"
				echo "{\"name\":\"NCCL_ALLREDUCE\",\"ph\":\"X\",\"pid\":0,\"tid\":$tid,\"ts\":$((t + 6500)),\"dur\":3000},"
				echo "{\"name\":\"MEMCPY_OUT_FUSION_BUFFER\",\"ph\":\"X\",\"pid\":0,\"tid\":$tid,\"ts\":$((t + 9500)),\"dur\":500},"
			done
		done
		echo "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":1,\"args\":{\"name\":\"a\"}}"
		echo "]"
	} >"$tl"
	run /usr/bin/python3 "$ROOT/tests/bench/gpu_overlap.py" "$tl" 0
	assert_success
	assert_output "steps 4 | allreduce 5.0 ms | during backward 2.0 ms (40%) | tail after backward 4.5 ms | backward (first to last gradient) 4.0 ms | batches a step 2 | stream idle between batches 2.0 ms"
	# The first SKIP steps are left out.
	run /usr/bin/python3 "$ROOT/tests/bench/gpu_overlap.py" "$tl" 3
	assert_output --regexp "^steps 1 \|"
}

@test "the build finds CUDA and NCCL under CUDA_HOME and links them" {
	[ -e /usr/local/cuda/include/nccl.h ] || skip "no NCCL under /usr/local/cuda"
	run ldd "$ROOT/build/lib/libhvd.so"
	assert_output --partial libnccl.so
	assert_output --partial libcudart.so
}

@test "make NCCL=0 leaves the GPU engine out, and the GPU calls say so" {
	plain_run_only
	local b=$BATS_TEST_TMPDIR/b
	run make -C "$ROOT" -s -j2 B="$b" NCCL=0 "$b/lib/libhvd.so"
	assert_success
	run ldd "$b/lib/libhvd.so"
	refute_output --partial nccl
	refute_output --partial cudart
	cat >"$BATS_TEST_TMPDIR/g.c" <<-'EOF'
		#include <hvd.h>
		#include <stdio.h>
		int main(void)
		{
			float x = 1;
			int rc = hvd_init();
			if (rc == 0)
				rc = hvd_allreduce_gpu("g", &x, &x, 1, HVD_FLOAT32, HVD_SUM);
			printf("%s: %s\n", hvd_strerror(rc), hvd_error_message());
			hvd_shutdown();
			return rc == HVD_ENOTSUP ? 0 : 1;
		}
	EOF
	cc -I"$ROOT/core/include" "$BATS_TEST_TMPDIR/g.c" -o "$BATS_TEST_TMPDIR/g" \
		-L"$b/lib" -Wl,-rpath,"$b/lib" -lhvd
	run "$BATS_TEST_TMPDIR/g"
	assert_success
	assert_output "not available here: libhvd was built without CUDA and NCCL (NCCL=0, or none found at build time)"
}

@test "hvdrun check: each GPU's PCIe link and NVLinks, and how every pair of GPUs connects" {
	local n
	n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
	[ "$n" -gt 0 ] || skip "no GPU (nvidia-smi lists none)"
	run --separate-stderr "$HVDRUN" check -H localhost --json
	assert_success
	echo "$output" | jq -e --argjson n "$n" '.hosts[0].gpus.count == $n'
	# NVML answers the link of every GPU, and a pair for every two.
	echo "$output" | jq -e '[.hosts[0].gpus.devices[].pcie | .width > 0 and .width_max >= .width] | all'
	echo "$output" | jq -e --argjson n "$n" '(.hosts[0].gpus.pairs | length) == ($n * ($n - 1) / 2)'
	echo "$output" | jq -e '[.hosts[0].gpus.pairs[] | .nvlink == true or .path != null] | all'
	run "$HVDRUN" check -H localhost
	assert_success
	assert_line --regexp '^ +GPU 0: .*, [0-9]+ MiB, PCIe gen [0-9]+ x[0-9]+ \(at most gen [0-9]+ x[0-9]+\)'
}

@test "check --nccl on this machine's GPUs: it joins, the allreduce is right, NCCL's lines are read" {
	need_gpu
	local n
	n=$(nvidia-smi -L | grep -c '^GPU ')
	run --separate-stderr "$HVDRUN" check --nccl --json
	assert_success
	echo "$output" | jq -e --argjson n "$n" '.nccl.hosts[0] | .joined and .ranks == $n and .reason == null'
	echo "$output" | jq -e '.nccl.status == 0 and (.nccl.timed_out | not) and .nccl.bytes == 67108864'
	echo "$output" | jq -e '[.nccl.ranks[] | select(.stage == "done" and .small_ok and (.device | startswith("GPU ")))] | length == (.nccl.ranks | length)'
	echo "$output" | jq -e '.nccl.busbw_gbs >= 0 and .nccl.algbw_gbs > 0'
	if [ "$n" -gt 1 ]; then
		# Between its own GPUs NCCL names a transport (P2P or SHM).
		echo "$output" | jq -e '.nccl.hosts[0].within | length >= 1'
	fi
	run "$HVDRUN" check --nccl
	assert_success
	assert_line --regexp "^  localhost +joined, $n ranks?; within the host: "
	assert_line --regexp '^  allreduce of 64 MiB: bus [0-9.]+ GB/s, algorithm [0-9.]+ GB/s \(median of 5\)$'
}
