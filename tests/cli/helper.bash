# helper.bash: shared set-up of the CLI tests: the freshly built binaries,
# bats-assert, and checks that a job left no process behind.
load /usr/lib/bats/bats-support/load
load /usr/lib/bats/bats-assert/load

ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
HVDRUN=${HVDRUN_BIN:-$ROOT/build/bin/hvdrun}
HELLO=$ROOT/build/examples/hello
WORKERS=$ROOT/tests/cli/workers
# The self-test: the sanitized run's own build where it sets one
# (tests/run), so that libhvd's collectives run under ASan and UBSan
# too; a job bounded in time (100 re-initialisations, 28 ranks under a
# limit of open files) names the plain build itself.
SELFTEST=${HVD_SELFTEST_BIN:-$ROOT/build/tests/hvd_selftest}

# Open MPI's ranks poll while they wait; with more ranks than this
# machine's cores they take the cores from one another (the self-test at
# np 3 under mpirun: 28 s polling, 1.7 s yielding).
export OMPI_MCA_mpi_yield_when_idle=1

# A test that make test's sanitizer run skips, saying why (the default:
# it runs neither $HVDRUN nor the self-test, a build or an install, and
# would repeat itself to the byte; else one that another sanitized test
# covers, named in the reason).
plain_run_only() {
	[ -z "${HVD_SANITIZER_RUN-}" ] || skip "the plain run has it: ${1:-it uses no sanitized binary}"
}

# hvdrun_says version|agent: what hvdrun --version says: its version, or
# its agent protocol.
hvdrun_says() {
	case $1 in
	version) "$HVDRUN" --version | sed -n 's/^hvdrun //p' ;;
	agent) "$HVDRUN" --version | sed -n 's/^agent protocol \([0-9]*\),.*/\1/p' ;;
	esac
}

# Tests run as if outside any batch job (hvdrun reads SLURM_*, PBS's,
# Grid Engine's and LSF's variables); those that test one set their own.
for v in $(compgen -e | grep -E '^(SLURM_|PBS_|LSB_)'); do unset "$v"; done
unset JOB_ID PE_HOSTFILE

# Every worker script records its pid (and its children's) here.
setup() {
	export PIDDIR=$BATS_TEST_TMPDIR/pids
	mkdir -p "$PIDDIR"
}

# Fail if any recorded process still exists (zombies of others count:
# they would be a leak of ours too).
assert_no_leftovers() {
	local f pid left=""
	for f in "$PIDDIR"/*; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		# Empty: a worker stopped by the job between its shell's
		# opening the file and writing its pid; it has ended.
		case $pid in '' | *[!0-9]*) continue ;; esac
		# A zombie has ended; only its parent has yet to reap it.
		if [ -d "/proc/$pid" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$pid/stat" 2>/dev/null; then
			left="$left $pid($(tr '\0' ' ' <"/proc/$pid/cmdline"| head -c 60), $(cut -d' ' -f3,4 "/proc/$pid/stat"))"
		fi
	done
	if [ -n "$left" ]; then
		echo "processes left behind:$left"
		return 1
	fi
}

# Wait (at most S tenths of a second, default 60) until assert_no_leftovers
# holds; then assert it.
wait_no_leftovers() {
	local i
	for i in $(seq 1 "${1:-60}"); do
		assert_no_leftovers >/dev/null && return 0
		sleep 0.1
	done
	assert_no_leftovers
}

# Wait (bounded) until N pid files exist: the job is fully up.
wait_pids() {
	local n=$1 i
	for i in $(seq 1 100); do
		[ "$(ls "$PIDDIR" | wc -l)" -ge "$n" ] && return 0
		sleep 0.05
	done
	echo "only $(ls "$PIDDIR" | wc -l) of $n processes started"
	return 1
}

# Stop the worker whose pid is in PIDFILE while the job JOB (hvdrun's pid,
# its output in OUT) runs; the line LINE must name it within 5 s. Then
# Ctrl-C: the job must end with 130 within 2 s, not after the grace
# period's SIGKILL (3 s): the stopped worker is continued with its SIGINT.
stop_rank_then_ctrl_c() {
	local job=$1 out=$2 pidfile=$3 line=$4 i t0 t1 status=0
	kill -STOP "$(cat "$pidfile")"
	for i in $(seq 1 50); do
		grep -q "was stopped" "$out" && break
		sleep 0.1
	done
	run cat "$out"
	assert_line "$line"
	t0=${EPOCHREALTIME/./}
	kill -INT "$job"
	wait "$job" || status=$?
	t1=${EPOCHREALTIME/./}
	[ "$status" -eq 130 ]
	echo "ended $(((t1 - t0) / 1000)) ms after Ctrl-C"
	[ $((t1 - t0)) -lt 2000000 ]
}

# hvdrun ARGS... running a worker that writes 100 MiB with no newline:
# 1,600 lines of 65,536 bytes after their 12-byte prefix, every byte
# there, and hvdrun's peak resident memory under 64 MiB.
assert_long_line_bounded() {
	local out=$BATS_TEST_TMPDIR/out
	# Under AddressSanitizer (make test's second run), freed memory is
	# held back in a quarantine of up to 256 MiB: not hvdrun's own.
	ASAN_OPTIONS=quarantine_size_mb=0:thread_local_quarantine_size_kb=0 \
		/usr/bin/time -f '%M' -o "$BATS_TEST_TMPDIR/rss" "$HVDRUN" "$@" \
		sh -c 'head -c 104857600 /dev/zero | tr "\0" a' >"$out"
	[ "$(wc -l <"$out")" -eq 1600 ]
	[ "$(awk 'substr($0, 1, 12) != "[0]<stdout>:" || length($0) != 65548 ||
		substr($0, 13) ~ /[^a]/ { bad++ } END { print bad + 0 }' "$out")" -eq 0 ]
	echo "hvdrun's peak resident memory: $(cat "$BATS_TEST_TMPDIR/rss") KiB"
	[ "$(cat "$BATS_TEST_TMPDIR/rss")" -lt 65536 ]
}

# Wait until file $1 has $3 (default 1) lines with the text $2: 20 s at
# most.
wait_line() {
	local i
	for i in $(seq 1 400); do
		[ "$(grep -cF -- "$2" "$1")" -ge "${3:-1}" ] && return 0
		sleep 0.05
	done
	echo "no '$2' in $1:"
	cat "$1"
	return 1
}

# A discovery script that prints the file $BATS_TEST_TMPDIR/hosts.
discovery_script() {
	printf '#!/bin/sh\ncat "%s/hosts"\n' "$BATS_TEST_TMPDIR" >"$BATS_TEST_TMPDIR/discover"
	chmod +x "$BATS_TEST_TMPDIR/discover"
}

# After rank 1 of 4 was killed: ranks 0, 2 and 3 each saw an error within a
# second. The survivors see the death so fast that one of them may exit
# (3) before hvdrun reaps rank 1: the first failure hvdrun sees decides.
assert_survivors_failed_fast() {
	[ "$status" -eq 137 ] || [ "$status" -eq 3 ]
	local r ms
	for r in 0 2 3; do
		ms=$(printf '%s\n' "${lines[@]}" | sed -n "s/^\[$r\]<stdout>:rank $r: error after \([0-9]*\) ms: .*/\1/p")
		[ -n "$ms" ] && [ "$ms" -lt 1000 ]
	done
}

# The timeline $1 is valid JSON laid out as Horovod's (hvd(3),
# HOROVOD_TIMELINE): in each tensor's row, every part (QUEUE, the copies,
# the ring's, the segment's, MPI's, Adasum's or NCCL's phases) lies inside
# one span of its operation (ALLREDUCE, BROADCAST, ...), every operation
# follows its negotiation (NEGOTIATE_ALLREDUCE, ...), every coordinator's
# tick (a span named by a rank) lies inside a negotiation, no span is of
# negative length. Prints the rows that break one of these.
assert_timeline_nested() {
	jq -e '[.[] | select(.ph == "X")] | group_by(.tid) | map(
		map(select(.name | test("^(ALLREDUCE|ADASUM|BROADCAST|ALLGATHER|ALLTOALL|REDUCESCATTER|BARRIER|PROCESS_SET)$"))) as $ops |
		map(select(.name | startswith("NEGOTIATE_"))) as $neg |
		map(select(.name | test("^(QUEUE|MEMCPY_|RING_|SHM_|MPI_|ADASUM_|NCCL_)"))) as $parts |
		map(select(.name | test("^[0-9]+$"))) as $ticks |
		def inside($s): . as $k | $s | any(.ts <= $k.ts and $k.ts + $k.dur <= .ts + .dur);
		def after($s): . as $k | $s | any(.ts + .dur <= $k.ts);
		select(($parts | map(inside($ops)) | all | not) or
		       ($ticks | map(inside($neg)) | all | not) or
		       ($ops | map(after($neg)) | all | not) or
		       ($ops | length) > ($neg | length) or
		       any(.[]; .dur < 0))) |
		if length == 0 then true else (. | debug | false) end' "$1"
}
