#!/usr/bin/env bats
# Supervision: one failure ends the job with the failing worker's code;
# signals to hvdrun reach every worker; nothing is left behind.
bats_require_minimum_version 1.5.0
load helper

@test "all workers succeed: exit 0" {
	run "$HVDRUN" -np 4 true
	assert_success
	assert_output ""
}

@test "a failing rank ends the job with its code and names it" {
	SECONDS=0
	run "$HVDRUN" -np 4 "$WORKERS/fail.sh" 2 3
	assert_failure 3
	assert_line "hvdrun: rank 2 on localhost exited with code 3; stopping the job"
	[ "$SECONDS" -lt 8 ]
	assert_no_leftovers
}

@test "a rank killed by a signal: exit 128+N" {
	run "$HVDRUN" -np 3 "$WORKERS/fail.sh" 0 -KILL
	assert_failure 137
	assert_line "hvdrun: rank 0 on localhost was killed by signal 9 (Killed); stopping the job"
	assert_no_leftovers
}

@test "a rank killed by a signal is the cause, not a peer that exits with a code on seeing it (within 0.2 s)" {
	# Rank 1 dies by SIGKILL 50 ms after rank 0 exits 7, as a killed
	# rank's peers exit on the broken connection before hvdrun sees the
	# death: the job ends with the death.
	run "$HVDRUN" -np 2 sh -c \
		'if [ "$HOROVOD_RANK" = 0 ]; then sleep 0.5; exit 7; fi; sleep 0.55; kill -KILL $$'
	assert_failure 137
	assert_line "hvdrun: rank 1 on localhost was killed by signal 9 (Killed); stopping the job"
	# A death long after the exit changes nothing: the exit is the cause.
	run "$HVDRUN" -np 2 sh -c \
		'if [ "$HOROVOD_RANK" = 0 ]; then sleep 0.2; exit 7; fi; trap "" TERM; sleep 1.5; kill -KILL $$'
	assert_failure 7
	assert_line "hvdrun: rank 0 on localhost exited with code 7; stopping the job"
}

@test "workers that ignore SIGTERM get SIGKILL after the grace period" {
	SECONDS=0
	run "$HVDRUN" -np 3 "$WORKERS/fail.sh" 1 5 ignore-term
	assert_failure 5
	[ "$SECONDS" -ge 3 ] && [ "$SECONDS" -lt 10 ]
	assert_no_leftovers
}

@test "children and setsid grandchildren of a failed job are ended" {
	"$HVDRUN" -np 2 "$WORKERS/family.sh" &
	local pid=$!
	wait_pids 6
	kill -KILL "$(cat "$PIDDIR/rank1")"
	local status=0
	wait $pid || status=$?
	[ "$status" -eq 137 ]
	sleep 0.2
	assert_no_leftovers
}

@test "a worker that cannot start (fork refused) is named; those started before it are ended" {
	local shim=$ROOT/build/tests/fake/fork_fails.so forks
	[ -e "$shim" ] || skip "no $shim (make test builds it)"
	# AddressSanitizer's runtime wants to come first among the libraries.
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
	# The forks of a whole job of 3: its workers' and hvdrun's own.
	mkdir "$BATS_TEST_TMPDIR/all"
	HVD_TEST_FORK_PIDS=$BATS_TEST_TMPDIR/all LD_PRELOAD=$shim run "$HVDRUN" -np 3 true
	assert_success
	forks=$(ls "$BATS_TEST_TMPDIR/all" | wc -l)
	[ "$forks" -ge 3 ]
	# Now the fork of rank 1 fails (as at a limit on processes), after
	# rank 0 has started: rank 0 is ended, rank 2 never starts.
	HVD_TEST_FORKS=$((forks - 2)) HVD_TEST_FORK_PIDS=$PIDDIR LD_PRELOAD=$shim \
		run "$HVDRUN" -np 3 sleep 30
	assert_failure 125
	assert_output "hvdrun: rank 1 on localhost: fork: Resource temporarily unavailable (a limit on processes: raise ulimit -u, or start fewer workers)"
	[ "$(ls "$PIDDIR" | wc -l)" -eq $((forks - 2)) ]
	wait_no_leftovers 20
}

@test "--timeout: the job is ended once it has run that long (exit 124), saying how many still ran; nothing left" {
	SECONDS=0
	run "$HVDRUN" --timeout 1 -np 3 "$WORKERS/fail.sh" none 0
	assert_failure 124
	assert_output "hvdrun: --timeout 1: the job ran for 1 s, with 3 ranks still running; stopping it"
	[ "$SECONDS" -lt 5 ]
	assert_no_leftovers
	# Workers that ignore SIGTERM get SIGKILL after the grace period.
	run "$HVDRUN" --timeout 1 -np 2 "$WORKERS/fail.sh" none 0 ignore-term
	assert_failure 124
	assert_no_leftovers
	# A worker that fails first stays the cause; a job that ends in time
	# ends as it would have.
	run "$HVDRUN" --timeout 3 -np 2 "$WORKERS/fail.sh" 1 5
	assert_failure 5
	refute_output --partial "timeout"
	run "$HVDRUN" --timeout 5 -np 2 true
	assert_success
	assert_output ""
	# An elastic job's workers are named as such.
	run "$HVDRUN" --timeout 1 -np 2 --min-np 1 "$WORKERS/fail.sh" none 0
	assert_failure 124
	assert_output "hvdrun: --timeout 1: the job ran for 1 s, with 2 workers still running; stopping it"
	assert_no_leftovers
}

@test "--timeout from the config file is named as the file gives it; 0 is no limit; a bad value is refused" {
	printf '[job]\ntimeout = 1\n' >"$BATS_TEST_TMPDIR/job.ini"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/job.ini" -np 1 sleep 30
	assert_failure 124
	assert_output "hvdrun: timeout = 1 ($BATS_TEST_TMPDIR/job.ini:2): the job ran for 1 s, with 1 rank still running; stopping it"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/job.ini" --timeout 0 -np 1 sleep 1.5
	assert_success
	run "$HVDRUN" --timeout -1 -np 1 true
	assert_failure 2
	assert_line --index 0 "hvdrun: bad value '-1' for --timeout (want an integer from 0 to 31622400)"
	# mpirun's MPIEXEC_TIMEOUT, where neither the command line nor a
	# config file gives one.
	MPIEXEC_TIMEOUT=1 run "$HVDRUN" -np 1 sleep 30
	assert_failure 124
	assert_output "hvdrun: timeout = 1 (MPIEXEC_TIMEOUT in the environment): the job ran for 1 s, with 1 rank still running; stopping it"
	MPIEXEC_TIMEOUT=1 run "$HVDRUN" --timeout 0 -np 1 sleep 1.5
	assert_success
}

@test "children adopted only when SIGKILL ends their parent are ended too" {
	# Ranks 1 and 2 ignore SIGTERM: they die at SIGKILL, after the first
	# sweep of orphans, and leave their setsid children to hvdrun.
	run "$HVDRUN" -np 3 sh -c \
		'[ $HOROVOD_RANK = 0 ] && { sleep 0.5; exit 3; }; exec "$0" ignore-term' \
		"$WORKERS/family.sh"
	assert_failure 3
	[ -e "$PIDDIR/setsid2" ]
	assert_no_leftovers
}

@test "workers that succeed but leave children behind: children ended" {
	SECONDS=0
	run "$HVDRUN" -np 2 "$WORKERS/family.sh" exit
	assert_success
	[ "$SECONDS" -lt 8 ]
	[ -e "$PIDDIR/setsid1" ]
	assert_no_leftovers
}

# A job started with `&` from a script has SIGINT ignored; start hvdrun
# with the signal at its default, as from a terminal.
signal_test() {
	local sig=$1 code=$2
	env --default-signal=INT,TERM,HUP "$HVDRUN" -np 3 "$WORKERS/family.sh" >"$BATS_TEST_TMPDIR/out" 2>&1 &
	local pid=$!
	wait_pids 9
	kill -"$sig" $pid
	local status=0
	wait $pid || status=$?
	[ "$status" -eq "$code" ]
	sleep 0.2
	assert_no_leftovers
}

@test "a worker SIGSTOPped mid-job is named at once, and Ctrl-C still ends the job at once" {
	env --default-signal=INT,TERM,HUP "$HVDRUN" -np 3 "$WORKERS/family.sh" >"$BATS_TEST_TMPDIR/out" 2>&1 &
	wait_pids 9
	stop_rank_then_ctrl_c $! "$BATS_TEST_TMPDIR/out" "$PIDDIR/rank1" \
		"hvdrun: rank 1 on localhost was stopped (SIGSTOP); every rank waits for it (libhvd's ranks for their peer timeout, --gloo-timeout-seconds): SIGCONT resumes it, Ctrl-C ends the job"
	sleep 0.2
	assert_no_leftovers
}

@test "SIGINT (Ctrl-C) is forwarded; exit 130; nothing left" {
	signal_test INT 130
}

@test "SIGTERM is forwarded to every worker; exit 143" {
	signal_test TERM 143
	run cat "$BATS_TEST_TMPDIR/out"
	assert_line "[0]<stdout>:rank 0 got TERM"
	assert_line "[2]<stdout>:rank 2 got TERM"
}

@test "SIGHUP is forwarded; exit 129" {
	signal_test HUP 129
	run cat "$BATS_TEST_TMPDIR/out"
	assert_line "[1]<stdout>:rank 1 got HUP"
}

@test "SIGUSR1 and SIGUSR2 reach every worker, not its children, and the job goes on (mpirun's forwarding)" {
	local sig out=$BATS_TEST_TMPDIR/out i status
	for sig in USR1 USR2; do
		"$HVDRUN" -np 2 --verbose "$WORKERS/usr1.sh" $sig >"$out" 2>&1 &
		local pid=$!
		for i in $(seq 1 100); do
			[ "$(grep -c '<stdout>:ready' "$out")" -eq 2 ] && break
			sleep 0.1
		done
		kill -$sig $pid
		status=0
		wait $pid || status=$?
		[ "$status" -eq 0 ]
		run cat "$out"
		assert_line "[0]<stdout>:$sig yes, child alive"
		assert_line "[1]<stdout>:$sig yes, child alive"
		assert_line --partial "; forwarding it to every worker"
	done
	assert_no_leftovers
}

@test "SIGKILL of hvdrun still ends its local workers and their children" {
	"$HVDRUN" -np 2 "$WORKERS/family.sh" >/dev/null 2>&1 &
	local pid=$!
	wait_pids 6
	# The setsid grandchildren left every group: out of the watchdog's
	# reach. The test ends them itself, after the check.
	local escaped
	escaped=$(cat "$PIDDIR"/setsid*)
	rm "$PIDDIR"/setsid*
	kill -KILL $pid
	wait $pid || true
	# The watchdog ends the workers' groups, SIGKILL after its grace.
	wait_no_leftovers 50 || true
	kill $escaped
	assert_no_leftovers
}

@test "a signal ignored when hvdrun starts (nohup) stays ignored" {
	nohup "$HVDRUN" -np 2 sh -c 'echo $$ >"$PIDDIR/rank$HOROVOD_RANK"; sleep 1; echo survived' \
		>"$BATS_TEST_TMPDIR/out" 2>&1 &
	local pid=$! status=0
	wait_pids 2
	kill -HUP $pid
	wait $pid || status=$?
	[ "$status" -eq 0 ]
	run cat "$BATS_TEST_TMPDIR/out"
	assert_line "[0]<stdout>:survived"
	assert_line "[1]<stdout>:survived"
}
