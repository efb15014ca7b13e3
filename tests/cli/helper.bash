# helper.bash: shared set-up of the CLI tests: the freshly built binaries,
# bats-assert, and checks that a job left no process behind.
load /usr/lib/bats/bats-support/load
load /usr/lib/bats/bats-assert/load

ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
HVDRUN=${HVDRUN_BIN:-$ROOT/build/bin/hvdrun}
HELLO=$ROOT/build/examples/hello
WORKERS=$ROOT/tests/cli/workers

# Tests run as if outside any Slurm allocation (hvdrun reads SLURM_*);
# those that test it set their own.
for v in $(compgen -e | grep '^SLURM_'); do unset "$v"; done

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
		[ -e "$f" ] || continue
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
