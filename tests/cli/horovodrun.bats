#!/usr/bin/env bats
# horovodrun 0.28's command line, flag by flag: hvdrun knows every one,
# takes it with horovodrun's meaning where it has that meaning, and
# refuses the others with a reason (never "unknown option"); --help lists
# them all.
bats_require_minimum_version 1.5.0
load helper

# horovodrun 0.28's flags (horovod/runner/launch.py, parse_args), as
# data: the flag, and a value where it takes one.
HOROVODRUN_FLAGS=(
	"-v" "--version" "-np 1" "--num-proc 1" "-cb" "--check-build"
	"--disable-cache" "--start-timeout 30" "--network-interface lo"
	"--network-interfaces lo" "--output-filename OUT" "--verbose"
	"--config-file CONFIG" "-p 22" "--ssh-port 22" "-i KEY"
	"--ssh-identity-file KEY" "--fusion-threshold-mb 64"
	"--cycle-time-ms 2" "--cache-capacity 512" "--hierarchical-allreduce"
	"--no-hierarchical-allreduce" "--hierarchical-allgather"
	"--no-hierarchical-allgather" "--autotune" "--no-autotune"
	"--autotune-log-file LOG" "--autotune-warmup-samples 3"
	"--autotune-steps-per-sample 10" "--autotune-bayes-opt-max-samples 20"
	"--autotune-gaussian-process-noise 0.8" "--min-np 1" "--max-np 2"
	"--min-num-proc 1" "--max-num-proc 2"
	"--slots-per-host 1" "--elastic-timeout 600" "--reset-limit 3"
	"--blacklist-cooldown-range 1 2" "--timeline-filename TL"
	"--timeline-mark-cycles" "--no-timeline-mark-cycles" "--no-stall-check"
	"--stall-check" "--stall-check-warning-time-seconds 60"
	"--stall-check-shutdown-time-seconds 0" "--mpi-threads-disable"
	"--no-mpi-threads-disable" "--mpi-args -v" "--tcp"
	"--binding-args -v" "--num-nccl-streams 1" "--thread-affinity 0"
	"--gloo-timeout-seconds 30" "--log-level DEBUG" "--log-with-timestamp"
	"--log-without-timestamp" "-prefix-timestamp"
	"--prefix-output-with-timestamp" "--log-hide-timestamp"
	"--no-log-hide-timestamp" "-H localhost:1" "--hosts localhost:1"
	"-hostfile HOSTFILE" "--hostfile HOSTFILE"
	"--host-discovery-script DISCOVER" "--gloo" "--mpi" "--jsrun"
)

@test "every flag of horovodrun 0.28 is known: taken, or refused with a reason" {
	local f words help
	echo "localhost slots=1" >"$BATS_TEST_TMPDIR/HOSTFILE"
	printf '[job]\nnp = 1\n' >"$BATS_TEST_TMPDIR/CONFIG"
	printf '#!/bin/sh\necho localhost:1\n' >"$BATS_TEST_TMPDIR/DISCOVER"
	chmod +x "$BATS_TEST_TMPDIR/DISCOVER"
	cd "$BATS_TEST_TMPDIR"
	help=$("$HVDRUN" --help)
	for f in "${HOROVODRUN_FLAGS[@]}"; do
		read -r -a words <<<"$f"
		run "$HVDRUN" "${words[@]}" --dry-run true
		if [[ $output == *"unknown option"* || $output == *"needs a value"* ]]; then
			echo "horovodrun's $f: $output"
			return 1
		fi
		# A refusal is one line that says why.
		if [ "$status" -eq 2 ]; then
			[ "${#lines[@]}" -le 2 ]
			[[ ${lines[0]} == "hvdrun: "* ]]
		fi
		# --help names it.
		[[ $help == *"${words[0]#-}"* ]] || { echo "--help lacks $f"; return 1; }
	done
}

@test "horovodrun's spellings mean what they mean there" {
	# --gloo: hvdrun's own engine; with --mpi, a contradiction.
	run "$HVDRUN" --gloo -np 1 sh -c 'echo ${OMPI_COMM_WORLD_RANK:-own}'
	assert_success
	assert_output "[0]<stdout>:own"
	run "$HVDRUN" --mpi --gloo -np 1 true
	assert_failure 2
	assert_output --partial "hvdrun: '--gloo' contradicts '--mpi'"
	# --tcp: no shared memory; under --mpi, Open MPI's tcp transport.
	run "$HVDRUN" --tcp -np 1 sh -c 'echo $HVD_SHM'
	assert_output "[0]<stdout>:0"
	run "$HVDRUN" --mpi --tcp --verbose -np 1 true
	assert_output --partial -- "--mca btl tcp,self --mca pml ob1"
	# The negations and the timestamps.
	run "$HVDRUN" --no-hierarchical-allreduce --no-hierarchical-allgather \
		--stall-check --no-timeline-mark-cycles --log-with-timestamp -np 1 \
		sh -c 'echo $HOROVOD_HIERARCHICAL_ALLREDUCE $HOROVOD_HIERARCHICAL_ALLGATHER $HOROVOD_STALL_CHECK_DISABLE $HOROVOD_TIMELINE_MARK_CYCLES $HOROVOD_LOG_HIDE_TIME'
	assert_output "[0]<stdout>:0 0 0 0 0"
	run "$HVDRUN" --no-stall-check --stall-check -np 1 true
	assert_failure 2
	assert_output --partial "'--stall-check' contradicts '--no-stall-check'"
	# --gloo-timeout-seconds: libhvd's peer timeout, in milliseconds.
	run "$HVDRUN" --gloo-timeout-seconds 30 -np 1 sh -c 'echo $HVD_TRANSPORT_TIMEOUT_MS'
	assert_output "[0]<stdout>:30000"
	# --network-interfaces is --network-interface.
	run "$HVDRUN" --network-interfaces lo -np 1 sh -c 'echo $HVD_NETWORK_INTERFACES'
	assert_output "[0]<stdout>:lo"
	# --autotune and its settings reach libhvd.
	run "$HVDRUN" --autotune --autotune-log-file "$BATS_TEST_TMPDIR/at.csv" \
		--autotune-warmup-samples 2 --autotune-steps-per-sample 4 \
		--autotune-bayes-opt-max-samples 9 --autotune-gaussian-process-noise 0.5 \
		-np 1 sh -c 'echo $HOROVOD_AUTOTUNE $HOROVOD_AUTOTUNE_LOG $HOROVOD_AUTOTUNE_WARMUP_SAMPLES $HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE $HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES $HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE'
	assert_output "[0]<stdout>:1 $BATS_TEST_TMPDIR/at.csv 2 4 9 0.5"
	run "$HVDRUN" --autotune --no-autotune -np 1 true
	assert_failure 2
	assert_output --partial "'--no-autotune' contradicts '--autotune'"
	run "$HVDRUN" --autotune-gaussian-process-noise 2 -np 1 true
	assert_failure 2
	assert_line --index 0 --partial "--autotune-gaussian-process-noise"
	# Refusals name the reason and what to use instead.
	run "$HVDRUN" --num-nccl-streams 2 -np 1 true
	assert_failure 2
	assert_line --index 0 "hvdrun: --num-nccl-streams 2: libhvd runs NCCL on one stream per GPU; leave it out (1 is the only value)"
	run "$HVDRUN" --binding-args "--bind-to socket" -np 1 true
	assert_failure 2
	assert_line --index 0 "hvdrun: --binding-args is for mpirun (--mpi); hvdrun's own workers are bound with --bind-to core|none|core:overload-allowed|socket|numa|gpu"
	run "$HVDRUN" --elastic-timeout 5 -np 1 true
	assert_failure 2
	assert_line --index 0 "hvdrun: --elastic-timeout is for an elastic job: add --min-np"
	# horovodrun's HOROVOD_START_TIMEOUT, where no option gives it.
	HOROVOD_START_TIMEOUT=5 run "$HVDRUN" -np 1 sh -c 'echo $HVD_START_TIMEOUT'
	assert_output "[0]<stdout>:5"
	HOROVOD_START_TIMEOUT=5 run "$HVDRUN" --start-timeout 7 -np 1 sh -c 'echo $HVD_START_TIMEOUT'
	assert_output "[0]<stdout>:7"
	HOROVOD_START_TIMEOUT=soon run "$HVDRUN" -np 1 echo started
	assert_failure 2
	assert_line --index 0 --partial "hvdrun: HOROVOD_START_TIMEOUT in the environment: bad value 'soon'"
	refute_output --partial started
	# --min-num-proc and --max-num-proc are --min-np and --max-np (named
	# as typed).
	run "$HVDRUN" --min-num-proc 1 --max-num-proc 1 -H localhost:1,127.0.0.1:1 -np 2 true
	assert_failure 2
	assert_line --index 0 "hvdrun: --max-num-proc 1 is less than the 2 workers the job starts with"
	# --mpi-threads-disable applies under MPI only, as horovodrun's:
	# without --mpi nothing to do; with it, refused.
	run "$HVDRUN" --mpi-threads-disable -np 1 echo ran
	assert_success
	assert_output "[0]<stdout>:ran"
	run "$HVDRUN" --mpi --mpi-threads-disable -np 1 echo ran
	assert_failure 2
	assert_line --index 0 "hvdrun: --mpi-threads-disable with --mpi: libhvd's background thread calls MPI, which needs MPI_THREAD_SERIALIZED; leave it out"
	refute_output --partial ran
}

@test "-cb prints what this build has in horovodrun's format" {
	run "$HVDRUN" -cb
	assert_success
	assert_line --index 0 --regexp '^hvdrun v[0-9]+\.[0-9]+\.[0-9]+:$'
	assert_line "Available Frameworks:"
	assert_line "Available Controllers:"
	assert_line "Available Tensor Operations:"
	assert_line "    [X] MPI"
	assert_line "    [X] Gloo"
	if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
		assert_line "    [X] PyTorch"
	fi
	assert_line --regexp '^    \[[X ]\] NCCL$'
}

@test "--thread-affinity pins each local rank's background thread; a core it cannot use fails hvd_init, named" {
	run "$HVDRUN" -np 2 --thread-affinity 0 -x HOROVOD_LOG_LEVEL=debug "$ROOT/build/tests/hvd_selftest" all
	assert_success
	assert_line "[0]<stderr>:libhvd debug: pin_background: background thread on core 0"
	assert_line "[1]<stderr>:libhvd debug: pin_background: background thread on core 1"
	run "$HVDRUN" -np 1 --thread-affinity 100000 "$ROOT/build/tests/hvd_selftest" all
	assert_failure
	assert_output --partial "HOROVOD_THREAD_AFFINITY"
}

@test "--no-hierarchical-allgather across 2 hosts x 2 ranks: the flat ring, the same results" {
	run "$HVDRUN" -np 4 -H localhost:2,127.0.0.1:2 --no-hierarchical-allgather "$ROOT/build/tests/hvd_selftest" all
	assert_success
	assert_line "[3]<stdout>:rank 3: ok"
}

@test "--config-file FILE.yaml is horovodrun's config: its sections and keys, file and line in errors" {
	cat >"$BATS_TEST_TMPDIR/hvd.yaml" <<-'YAML'
	controller: gloo
	params:
	  fusion_threshold_mb: 32
	  cycle_time_ms: 10
	  hierarchical_allgather: false
	autotune:
	  enabled: false
	timeline:
	  mark_cycles: true
	stall_check:
	  enabled: false
	  warning_time_seconds: 120
	library_options:
	  gloo_timeout_seconds: 60
	logging:
	  level: DEBUG
	  with_timestamp: true
	YAML
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/hvd.yaml" -np 1 sh -c \
		'echo $HOROVOD_FUSION_THRESHOLD $HOROVOD_CYCLE_TIME $HOROVOD_HIERARCHICAL_ALLGATHER $HOROVOD_TIMELINE_MARK_CYCLES $HOROVOD_STALL_CHECK_DISABLE $HOROVOD_STALL_CHECK_TIME_SECONDS $HVD_TRANSPORT_TIMEOUT_MS $HOROVOD_LOG_LEVEL $HOROVOD_LOG_HIDE_TIME'
	assert_success
	assert_output "[0]<stdout>:33554432 10 0 1 1 120 60000 DEBUG 0"
	# The command line wins.
	run "$HVDRUN" --cycle-time-ms 3 --config-file "$BATS_TEST_TMPDIR/hvd.yaml" -np 1 sh -c 'echo $HOROVOD_CYCLE_TIME'
	assert_output "[0]<stdout>:3"
	# Bad input: one line, file and line, nothing started.
	printf 'params:\n  fusion_treshold_mb: 32\n' >"$BATS_TEST_TMPDIR/typo.yml"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/typo.yml" -np 1 echo started
	assert_failure 2
	assert_line --index 0 "hvdrun: $BATS_TEST_TMPDIR/typo.yml:2: unknown key 'fusion_treshold_mb' in params (horovodrun's config file; did you mean 'fusion_threshold_mb'?)"
	refute_output --partial started
	printf 'autotune:\n  enabled: true\n  steps_per_sample: 5\n' >"$BATS_TEST_TMPDIR/auto.yaml"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/auto.yaml" -np 1 sh -c 'echo $HOROVOD_AUTOTUNE $HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE'
	assert_output "[0]<stdout>:1 5"
	printf 'params: [1\n' >"$BATS_TEST_TMPDIR/broken.yaml"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/broken.yaml" -np 1 true
	assert_failure 2
	assert_line --index 0 --partial "broken.yaml:"
	# horovodrun's other keys: mpi_threads_disable (nothing to do
	# without the mpi controller), ccl_bgt_affinity (no oneCCL),
	# logging's hide_timestamp (with_timestamp's opposite).
	cat >"$BATS_TEST_TMPDIR/full.yaml" <<-'YAML'
	controller: gloo
	params:
	  cache_capacity: 512
	  hierarchical_allreduce: true
	library_options:
	  mpi_threads_disable: true
	  num_nccl_streams: 1
	  ccl_bgt_affinity: 2
	logging:
	  level: INFO
	  hide_timestamp: false
	YAML
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/full.yaml" -np 1 sh -c 'echo $HOROVOD_CACHE_CAPACITY $HOROVOD_HIERARCHICAL_ALLREDUCE $HOROVOD_LOG_LEVEL $HOROVOD_LOG_HIDE_TIME'
	assert_success
	assert_output "[0]<stdout>:512 1 INFO 0"
	sed -i 's/^controller: gloo/controller: mpi/' "$BATS_TEST_TMPDIR/full.yaml"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/full.yaml" -np 1 echo started
	assert_failure 2
	# Named as the file writes them.
	assert_line --index 0 "hvdrun: library_options.mpi_threads_disable: true ($BATS_TEST_TMPDIR/full.yaml:6) with controller: mpi ($BATS_TEST_TMPDIR/full.yaml:1): libhvd's background thread calls MPI, which needs MPI_THREAD_SERIALIZED; leave it out"
	refute_output --partial started
	sed -i 's/num_nccl_streams: 1/num_nccl_streams: 2/' "$BATS_TEST_TMPDIR/full.yaml"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/full.yaml" -np 1 echo started
	assert_failure 2
	assert_line --index 0 "hvdrun: library_options.num_nccl_streams: 2 ($BATS_TEST_TMPDIR/full.yaml:7): libhvd runs NCCL on one stream per GPU; leave it out (1 is the only value)"
	refute_output --partial started
	# Another extension is hvdrun's INI file, as before.
	printf '[tuning]\ncycle_time_ms = 7\n' >"$BATS_TEST_TMPDIR/hvdrun.conf"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/hvdrun.conf" -np 1 sh -c 'echo $HOROVOD_CYCLE_TIME'
	assert_output "[0]<stdout>:7"
}
