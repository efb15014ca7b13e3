#!/usr/bin/env bats
# Local launches: each worker's environment, and output multiplexing.
bats_require_minimum_version 1.5.0
load helper

@test "make demo's job: hvdrun -np 4 -H localhost:4 over the example" {
	run "$HVDRUN" -np 4 -H localhost:4 "$HELLO"
	assert_success
	[ "${#lines[@]}" -eq 4 ]
	assert_output --regexp '\[3\]<stdout>:rank 3 of 4 on localhost \(pid [0-9]+\): local 3 of 4, cross 0 of 1, master localhost:[0-9]+'
}

@test "each worker gets Horovod's and torchrun's rank variables" {
	run "$HVDRUN" -np 3 -H localhost:3 "$WORKERS/env.sh"
	assert_success
	local r
	for r in 0 1 2; do
		assert_line "[$r]<stdout>:HOROVOD_RANK=$r"
		assert_line "[$r]<stdout>:HOROVOD_SIZE=3"
		assert_line "[$r]<stdout>:HOROVOD_LOCAL_RANK=$r"
		assert_line "[$r]<stdout>:HOROVOD_LOCAL_SIZE=3"
		assert_line "[$r]<stdout>:HOROVOD_CROSS_RANK=0"
		assert_line "[$r]<stdout>:HOROVOD_CROSS_SIZE=1"
		assert_line "[$r]<stdout>:HOROVOD_HOSTNAME=localhost"
		assert_line "[$r]<stdout>:RANK=$r"
		assert_line "[$r]<stdout>:WORLD_SIZE=3"
		assert_line "[$r]<stdout>:LOCAL_RANK=$r"
		assert_line "[$r]<stdout>:LOCAL_WORLD_SIZE=3"
		assert_line "[$r]<stdout>:MASTER_ADDR=localhost"
		assert_line "[$r]<stdout>:GROUP_RANK=0"
		assert_line "[$r]<stdout>:GROUP_WORLD_SIZE=1"
		assert_line "[$r]<stdout>:ROLE_RANK=$r"
		assert_line "[$r]<stdout>:ROLE_WORLD_SIZE=3"
	done
	# One MASTER_PORT for the whole job, a real port number.
	ports=$(printf '%s\n' "${lines[@]}" | sed -n 's/.*MASTER_PORT=//p' | sort -u)
	[ "$(echo "$ports" | wc -l)" -eq 1 ]
	[ "$ports" -gt 0 ] && [ "$ports" -lt 65536 ]
}

@test "a Python worker's output shows as it is printed, not at its end (PYTHONUNBUFFERED=1 unless set)" {
	local out=$BATS_TEST_TMPDIR/out go=$BATS_TEST_TMPDIR/go i seen=no
	# The worker prints, then waits (10 s at most) for the test to have
	# seen that line: through a pipe, Python would hold it until its end.
	env -u PYTHONUNBUFFERED "$HVDRUN" -np 1 /usr/bin/python3 -c '
import os, sys, time
print("first")
for _ in range(200):
    if os.path.exists(sys.argv[1]):
        break
    time.sleep(0.05)
print("second")' "$go" >"$out" 2>&1 &
	local job=$!
	for i in $(seq 1 100); do
		grep -q first "$out" && { seen=yes; break; }
		sleep 0.1
	done
	touch "$go"
	wait "$job"
	[ "$seen" = yes ]
	run cat "$out"
	assert_output "$(printf '[0]<stdout>:first\n[0]<stdout>:second')"
	# As the launcher's environment or -x has it: an empty value buffers.
	run env -u PYTHONUNBUFFERED "$HVDRUN" -np 1 "$WORKERS/env.sh" PYTHONUNBUFFERED
	assert_line "[0]<stdout>:PYTHONUNBUFFERED=1"
	run env PYTHONUNBUFFERED=0 "$HVDRUN" -np 1 "$WORKERS/env.sh" PYTHONUNBUFFERED
	assert_line "[0]<stdout>:PYTHONUNBUFFERED=0"
	run env -u PYTHONUNBUFFERED "$HVDRUN" -x PYTHONUNBUFFERED= -np 1 "$WORKERS/env.sh" PYTHONUNBUFFERED
	assert_line "[0]<stdout>:PYTHONUNBUFFERED="
}

@test "MASTER_ADDR is rank 0's address on the interface the job uses" {
	run "$HVDRUN" -np 2 -H localhost:2 --network-interface lo "$WORKERS/env.sh" MASTER_ADDR
	assert_success
	assert_line "[0]<stdout>:MASTER_ADDR=127.0.0.1"
	assert_line "[1]<stdout>:MASTER_ADDR=127.0.0.1"
	# An interface without an IPv4 address here: the host's name stays.
	run "$HVDRUN" -np 1 -H localhost:1 --network-interface nosuchif0 "$WORKERS/env.sh" MASTER_ADDR
	assert_success
	assert_line "[0]<stdout>:MASTER_ADDR=localhost"
}

@test "-np below the slots starts exactly -np workers" {
	run "$HVDRUN" -np 2 -H localhost:8 "$WORKERS/env.sh"
	assert_success
	assert_line "[1]<stdout>:HOROVOD_SIZE=2"
	assert_line "[1]<stdout>:HOROVOD_LOCAL_SIZE=2"
	refute_output --partial "[2]<stdout>"
}

@test "-x sets and forwards; the launcher's environment is passed as is" {
	export FORWARD_ME="a b  'c' \$d"
	export PASSED_THROUGH=yes
	run "$HVDRUN" -np 2 -x "SET_ME=x=y z" -x FORWARD_ME -x NOT_SET_ANYWHERE \
		"$WORKERS/env.sh" SET_ME FORWARD_ME PASSED_THROUGH
	assert_success
	assert_line "[0]<stdout>:SET_ME=x=y z"
	assert_line "[1]<stdout>:FORWARD_ME=a b  'c' \$d"
	assert_line "[1]<stdout>:PASSED_THROUGH=yes"
	assert_line "hvdrun: warning: -x NOT_SET_ANYWHERE: not set in hvdrun's environment; not forwarded"
}

@test "tuning options become Horovod's variables, and only those set" {
	run "$HVDRUN" -np 1 --fusion-threshold-mb 32 --cycle-time-ms 0.5 \
		--cache-capacity 0 --hierarchical-allreduce \
		--timeline-filename /tmp/tl.json --timeline-mark-cycles \
		--no-stall-check --stall-check-warning-time-seconds 30 \
		--stall-check-shutdown-time-seconds 90 --log-level debug \
		"$WORKERS/env.sh" HOROVOD_FUSION_THRESHOLD HOROVOD_CYCLE_TIME \
		HOROVOD_CACHE_CAPACITY HOROVOD_HIERARCHICAL_ALLREDUCE \
		HOROVOD_TIMELINE HOROVOD_TIMELINE_MARK_CYCLES \
		HOROVOD_STALL_CHECK_DISABLE HOROVOD_STALL_CHECK_TIME_SECONDS \
		HOROVOD_STALL_SHUTDOWN_TIME_SECONDS HOROVOD_LOG_LEVEL
	assert_success
	assert_line "[0]<stdout>:HOROVOD_FUSION_THRESHOLD=33554432"
	assert_line "[0]<stdout>:HOROVOD_CYCLE_TIME=0.5"
	assert_line "[0]<stdout>:HOROVOD_CACHE_CAPACITY=0"
	assert_line "[0]<stdout>:HOROVOD_HIERARCHICAL_ALLREDUCE=1"
	assert_line "[0]<stdout>:HOROVOD_TIMELINE=/tmp/tl.json"
	assert_line "[0]<stdout>:HOROVOD_TIMELINE_MARK_CYCLES=1"
	assert_line "[0]<stdout>:HOROVOD_STALL_CHECK_DISABLE=1"
	assert_line "[0]<stdout>:HOROVOD_STALL_CHECK_TIME_SECONDS=30"
	assert_line "[0]<stdout>:HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=90"
	assert_line "[0]<stdout>:HOROVOD_LOG_LEVEL=debug"
	run env -u HOROVOD_CYCLE_TIME "$HVDRUN" -np 1 "$WORKERS/env.sh" HOROVOD_CYCLE_TIME
	assert_line "[0]<stdout>:HOROVOD_CYCLE_TIME=<unset>"
}

@test "a tuning value hvdrun takes, libhvd takes; one it refuses starts nothing" {
	# Every option at its largest value: libhvd starts with all of them.
	run "$HVDRUN" -np 2 --cache-capacity 1048576 --fusion-threshold-mb 1048576 \
		--stall-check-warning-time-seconds 604800 \
		--stall-check-shutdown-time-seconds 604800 --log-level fatal "$HELLO"
	assert_success
	assert_line --partial "[1]<stdout>:rank 1 of 2"
	run --separate-stderr "$HVDRUN" -np 2 --cache-capacity 1048577 "$HELLO"
	[ "$status" -eq 2 ]
	[ "$output" = "" ]
	[ "${stderr_lines[0]}" = "hvdrun: bad value '1048577' for --cache-capacity (want an integer from 0 to 1048576)" ]
	# Set by hand past the contract: hvdrun refuses it as it refuses the
	# option, before any worker starts; from a config file, naming the
	# line.
	run --separate-stderr "$HVDRUN" -np 1 -x HOROVOD_CACHE_CAPACITY=2000000 "$HELLO"
	[ "$status" -eq 2 ]
	[ "$output" = "" ]
	[ "${stderr_lines[0]}" = "hvdrun: bad value '2000000' for HOROVOD_CACHE_CAPACITY (want an integer from 0 to 1048576)" ]
	printf '[job]\nnp = 1\n[env]\nHOROVOD_CYCLE_TIME = fast\n' >"$BATS_TEST_TMPDIR/job.ini"
	run --separate-stderr "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/job.ini" "$HELLO"
	[ "$status" -eq 2 ]
	[ "$output" = "" ]
	[ "${stderr_lines[0]}" = "hvdrun: $BATS_TEST_TMPDIR/job.ini:4: bad value 'fast' for HOROVOD_CYCLE_TIME (want a number from 0 to 10000)" ]
}

@test "output: whole prefixed lines from concurrent partial writes" {
	run --separate-stderr "$HVDRUN" -np 4 "$WORKERS/chatter.sh"
	assert_success
	local r i
	for r in 0 1 2 3; do
		for i in 1 2 3 4 5; do
			assert_line "[$r]<stdout>:rank$r-line$i-end"
		done
		assert_line "[$r]<stdout>:no newline at the end"
	done
	[ "${#lines[@]}" -eq 24 ]
	# Every stdout line has the form, nothing torn.
	local l
	for l in "${lines[@]}"; do
		[[ $l == "["[0-3]"]<stdout>:"* ]]
	done
	[ "$(grep -c '^\[[0-3]\]<stderr>:err[1-5]$' <<<"$stderr")" -eq 20 ]
}

@test "output: any bytes pass through" {
	run "$HVDRUN" -np 1 printf 'tab\there\001\377\n'
	assert_success
	[ "$output" = "$(printf '[0]<stdout>:tab\there\001\377')" ]
}

@test "--output-filename writes each rank's raw output to DIR/rank.N, N zero-padded as horovodrun's so the folders sort by rank" {
	run "$HVDRUN" -np 2 --output-filename "$BATS_TEST_TMPDIR/logs" "$WORKERS/chatter.sh"
	assert_success
	[ "$(head -1 "$BATS_TEST_TMPDIR/logs/rank.1/stdout")" = "rank1-line1-end" ]
	[ "$(tail -c 21 "$BATS_TEST_TMPDIR/logs/rank.0/stdout")" = "no newline at the end" ]
	[ "$(cat "$BATS_TEST_TMPDIR/logs/rank.1/stderr" | wc -l)" -eq 5 ]
	run "$HVDRUN" -np 11 --output-filename "$BATS_TEST_TMPDIR/eleven" sh -c 'echo "$HOROVOD_RANK"'
	assert_success
	run ls "$BATS_TEST_TMPDIR/eleven"
	assert_output "$(printf 'rank.%02d\n' 0 1 2 3 4 5 6 7 8 9 10)"
	[ "$(cat "$BATS_TEST_TMPDIR/eleven/rank.07/stdout")" = 7 ]
	# A folder that cannot be made starts nothing.
	touch "$BATS_TEST_TMPDIR/file"
	run "$HVDRUN" -np 1 --output-filename "$BATS_TEST_TMPDIR/file/sub" touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_output --partial "cannot create '$BATS_TEST_TMPDIR/file/sub'"
	[ ! -e "$BATS_TEST_TMPDIR/started" ]
}

@test "--wdir (mpirun's): every worker starts in DIR, a relative command found from there; a folder missing here starts nothing" {
	local wd=$BATS_TEST_TMPDIR/wd
	mkdir -p "$wd/sub" "$wd/tl"
	printf '#!/bin/sh\necho "$HOROVOD_RANK $(pwd) $PWD"\n' >"$wd/sub/show.sh"
	chmod +x "$wd/sub/show.sh"
	cd "$BATS_TEST_TMPDIR"
	# Relative to hvdrun's folder, trailing slashes dropped; -wdir and -wd
	# as mpirun spells it.
	for opt in --wdir -wdir -wd; do
		run "$HVDRUN" -np 2 "$opt" wd/ ./sub/show.sh
		assert_success
		assert_line "[0]<stdout>:0 $wd $wd"
		assert_line "[1]<stdout>:1 $wd $wd"
	done
	run "$HVDRUN" -np 1 --wdir "$wd" sh -c pwd
	assert_line "[0]<stdout>:$wd"
	# A missing folder, or a command missing from it: nothing starts.
	run "$HVDRUN" -np 1 --wdir "$BATS_TEST_TMPDIR/nowhere" touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: --wdir '$BATS_TEST_TMPDIR/nowhere': workers cannot start there on this machine (No such file or directory)"
	run -127 "$HVDRUN" -np 1 --wdir wd ./show.sh
	assert_failure 127
	assert_line --index 0 "hvdrun: command not found: '$wd/show.sh'"
	# Rank 0's files from there: tl/ exists in wd, not here.
	run "$HVDRUN" -np 1 --wdir wd --timeline-filename tl/t.json touch "$BATS_TEST_TMPDIR/started"
	assert_success
	run "$HVDRUN" -np 1 --timeline-filename tl/t.json touch "$BATS_TEST_TMPDIR/started2"
	assert_failure 2
	assert_line --index 0 "hvdrun: --timeline-filename 'tl/t.json': rank 0 cannot write it (No such file or directory)"
	[ -e "$BATS_TEST_TMPDIR/started" ] && [ ! -e "$BATS_TEST_TMPDIR/started2" ]
	# In a config file, relative to the file's folder; mpirun gets its own.
	printf '[job]\nwdir = wd\n' >"$BATS_TEST_TMPDIR/job.ini"
	cd /
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/job.ini" -np 1 ./sub/show.sh
	assert_success
	assert_line "[0]<stdout>:0 $wd $wd"
	run "$HVDRUN" --wdir "$wd" -np 1 --mpi --dry-run ./sub/show.sh
	assert_success
	assert_output --partial " -wdir $wd -np 1 "
	run "$HVDRUN" --wdir "$wd" -np 2 --mpi ./sub/show.sh
	assert_success
	# (mpirun sets no HOROVOD_RANK: the rank is its tag.)
	assert_line "[1,1]<stdout>: $wd $wd"
}

@test "--output-filename on a full file system: one line names the file, the job and its output go on" {
	[ "$(id -u)" -eq 0 ] || skip "mounting a tmpfs needs root"
	mkdir "$BATS_TEST_TMPDIR/full"
	# A tmpfs of 16 KiB, in a mount namespace of the test's own.
	run unshare --mount --propagation private sh -c \
		'mount -t tmpfs -o size=16k none "$1" && exec "$2" -np 2 --output-filename "$1/logs" sh -c "head -c 100000 /dev/zero | tr \"\\\\0\" a; echo; echo done \$HOROVOD_RANK"' \
		sh "$BATS_TEST_TMPDIR/full" "$HVDRUN"
	assert_success
	assert_line "hvdrun: cannot write '$BATS_TEST_TMPDIR/full/logs/rank.0/stdout': No space left on device; rank 0's stdout goes on to hvdrun's own stdout only"
	assert_line "hvdrun: cannot write '$BATS_TEST_TMPDIR/full/logs/rank.1/stdout': No space left on device; rank 1's stdout goes on to hvdrun's own stdout only"
	assert_line "[0]<stdout>:done 0"
	assert_line "[1]<stdout>:done 1"
}

@test "hvdrun's own stdout closed (hvdrun | head -1): the workers end, hvdrun exits 141" {
	run bash -c '"$1" -np 2 sh -c "echo \$\$ >\"\$PIDDIR/rank\$HOROVOD_RANK\"; exec yes" | head -1; echo "hvdrun: ${PIPESTATUS[0]}"' \
		sh "$HVDRUN"
	assert_line --regexp '^\[[01]\]<stdout>:y$'
	assert_line "hvdrun: cannot write its standard output (Broken pipe); stopping the job"
	assert_line "hvdrun: 141"
	wait_no_leftovers
}

@test "a worker's 100 MiB line with no newline: 64 KiB lines, every byte, hvdrun's memory bounded" {
	assert_long_line_bounded -np 1
}

@test "--prefix-output-with-timestamp" {
	run "$HVDRUN" -np 1 --prefix-output-with-timestamp echo hi
	assert_success
	assert_output --regexp '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z\[0\]<stdout>:hi$'
}

@test "standard input: rank 0 reads hvdrun's whole (a file, a pipe of 1 MiB), the others end of file; --stdin RANK and none" {
	local f=$BATS_TEST_TMPDIR/in big=$BATS_TEST_TMPDIR/big
	printf 'one\ntwo\nthree\n' >"$f"
	run timeout 10 "$HVDRUN" -np 2 cat </dev/null
	assert_success
	assert_output ""
	# Started with no standard input at all: rank 0 reads /dev/null,
	# not a descriptor of hvdrun's that took the number.
	run bash -c 'exec <&-; exec timeout 10 "$0" -np 1 sh -c "cat | wc -c"' "$HVDRUN"
	assert_success
	assert_output "[0]<stdout>:0"
	run timeout 10 "$HVDRUN" -np 3 sh -c 'echo "rank $HOROVOD_RANK read $(wc -l) lines"' <"$f"
	assert_success
	assert_line "[0]<stdout>:rank 0 read 3 lines"
	assert_line "[1]<stdout>:rank 1 read 0 lines"
	assert_line "[2]<stdout>:rank 2 read 0 lines"
	run timeout 10 "$HVDRUN" -np 3 --stdin 2 sh -c 'echo "rank $HOROVOD_RANK read $(wc -l) lines"' <"$f"
	assert_success
	assert_line "[0]<stdout>:rank 0 read 0 lines"
	assert_line "[2]<stdout>:rank 2 read 3 lines"
	run timeout 10 "$HVDRUN" -np 2 --stdin none sh -c 'echo "rank $HOROVOD_RANK read $(wc -l) lines"' <"$f"
	assert_success
	assert_line "[0]<stdout>:rank 0 read 0 lines"
	# Through a pipe, every byte, at the pace of a rank that reads
	# slowly, and the end.
	head -c 1048576 /dev/urandom >"$big"
	run bash -c "cat '$big' | timeout 20 '$HVDRUN' -np 2 sh -c '[ \$HOROVOD_RANK = 0 ] && { sleep 1; cksum; } || cksum'"
	assert_success
	assert_line "[0]<stdout>:$(cksum <"$big")"
	assert_line "[1]<stdout>:$(cksum </dev/null)"
}

@test "standard input from a terminal: hvdrun reads it a line at a time for rank 0 (pdb works there), passes on its end, Ctrl-C still ends the job, and in the background it waits unstopped" {
	# script(1) runs hvdrun on a terminal of its own, typing what it
	# reads from its standard input, then the terminal's end of file.
	run timeout 30 script -qec "'$HVDRUN' -np 2 sh -c 'read x; echo \"got:\$x\"; echo \"rest: \$(wc -l)\"'" /dev/null <<<$'hello\nmore\nlast'
	assert_success
	assert_line --partial "[0]<stdout>:got:hello"
	assert_line --partial "[0]<stdout>:rest: 2"
	assert_line --partial "[1]<stdout>:got:"
	assert_line --partial "[1]<stdout>:rest: 0"
	# A rank that never reads: the job ends as it would.
	run timeout 30 script -qec "'$HVDRUN' -np 1 true" /dev/null <<<$'typed ahead'
	assert_success
	# pdb at rank 0, as under mpirun or horovodrun -np 1.
	printf 'x = 41\nprint("x+1 =", x + 1)\n' >"$BATS_TEST_TMPDIR/p.py"
	run timeout 30 script -qec "'$HVDRUN' -np 1 /usr/bin/python3 -m pdb '$BATS_TEST_TMPDIR/p.py'" /dev/null <<<$'n\np x\nq'
	assert_success
	assert_output --partial "(Pdb) 41"
	# Ctrl-C typed while rank 0 waits for a line: hvdrun, in the
	# terminal's foreground, gets it and ends the whole job (130).
	run timeout 30 bash -c "(sleep 1.5; printf '\\003'; sleep 2) | script -qec \"'$HVDRUN' -np 2 sh -c 'read x; echo got:\\\$x'\" /dev/null"
	assert_failure 130
	assert_output --partial "[1]<stdout>:got:"
	refute_output --partial "[0]<stdout>:got:"
	# Started in the background of a shell with job control, where a
	# read of the terminal would stop it (SIGTTIN): it reads nothing
	# there, and the job runs to its end.
	run timeout 30 script -qec "bash --norc -i -c 'set -m; \"$HVDRUN\" -np 1 sh -c \"sleep 1; echo ran\" & wait \$!; echo status \$?'" /dev/null </dev/null
	assert_success
	assert_output --partial "[0]<stdout>:ran"
	assert_output --partial "status 0"
}

@test "--stdin: a rank outside the job, or not a rank, starts nothing (exit 2), named with its file and line" {
	run "$HVDRUN" -np 2 --stdin 2 sh -c 'echo started'
	assert_failure 2
	assert_output --partial "hvdrun: --stdin 2: the job's ranks are 0 to 1; name one of them, or none"
	refute_output --partial started
	run "$HVDRUN" -np 2 --stdin first true
	assert_failure 2
	assert_output --partial "hvdrun: bad value 'first' for --stdin (want a rank, 0 or more, or none)"
	printf '[job]\nstdin = -1\n' >"$BATS_TEST_TMPDIR/c.ini"
	run "$HVDRUN" -np 2 --config-file "$BATS_TEST_TMPDIR/c.ini" true
	assert_failure 2
	assert_output --partial "c.ini:2: bad value '-1' for 'stdin' in [job] (want a rank, 0 or more, or none)"
	printf '[job]\nstdin = none\n' >"$BATS_TEST_TMPDIR/c.ini"
	run timeout 10 "$HVDRUN" -np 1 --config-file "$BATS_TEST_TMPDIR/c.ini" wc -l <<<$'one\ntwo'
	assert_success
	assert_output "[0]<stdout>:0"
}

@test "--verbose shows the plan and each start" {
	run "$HVDRUN" -np 2 --verbose true
	assert_success
	assert_line "hvdrun: 2 workers on 1 hosts: true"
	assert_line "hvdrun: starting rank 1 on localhost"
	# The command as a shell takes it, as --mpi's mpirun line.
	run "$HVDRUN" -np 1 --verbose sh -c 'echo "a  b"'
	assert_success
	assert_line "hvdrun: 1 workers on 1 hosts: sh -c 'echo \"a  b\"'"
	assert_line "hvdrun: rank 0 reads standard input"
	run "$HVDRUN" -np 2 --verbose --stdin none true
	assert_success
	refute_line --partial "standard input"
}

@test "--bind-to core (the default) gives each local rank its own share of the cores; none, or more ranks than CPUs, binds none" {
	local n full cpus='grep Cpus_allowed_list /proc/self/status | cut -f2'
	n=$(nproc)
	[ "$n" -ge 2 ] || skip "one CPU: nothing to share"
	full=$(eval "$cpus")
	run "$HVDRUN" -np 2 sh -c "$cpus"
	assert_success
	local r0 r1
	r0=$(sed -n 's/^\[0\]<stdout>://p' <<<"$output")
	r1=$(sed -n 's/^\[1\]<stdout>://p' <<<"$output")
	[ -n "$r0" ] && [ -n "$r1" ] && [ "$r0" != "$r1" ] && [ "$r0" != "$full" ]
	run "$HVDRUN" -np 2 --bind-to none sh -c "$cpus"
	assert_line "[0]<stdout>:$full"
	assert_line "[1]<stdout>:$full"
	run "$HVDRUN" -np 2 -x HVD_BIND_TO=none sh -c "$cpus"
	assert_line "[1]<stdout>:$full"
	# Choices are not case-sensitive, in the workers' binding too.
	run "$HVDRUN" -np 2 --bind-to NONE sh -c "$cpus"
	assert_line "[0]<stdout>:$full"
	assert_line "[1]<stdout>:$full"
	run "$HVDRUN" -np $((n + 1)) sh -c "$cpus"
	assert_line "[$n]<stdout>:$full"
	run "$HVDRUN" -np 1 --bind-to cores true
	assert_failure 2
	assert_output --partial "bad value 'cores' for --bind-to"
}

# A sysfs of two of this host's CPUs, list[0] and list[1], under $sys: the
# first in the second package, the other in the first, a core each.
two_packages() {
	local c
	sys="$BATS_TEST_TMPDIR/sys"
	cpus='echo "$HOROVOD_LOCAL_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)"'
	mapfile -t list < <(/usr/bin/python3 -c 'import os; print(*sorted(os.sched_getaffinity(0))[:2], sep="\n")')
	[ "${#list[@]}" -eq 2 ] || skip "one CPU: nothing to share"
	for c in 0 1; do
		mkdir -p "$sys/devices/system/cpu/cpu${list[c]}/topology"
		echo $((1 - c)) >"$sys/devices/system/cpu/cpu${list[c]}/topology/physical_package_id"
		echo "${list[c]}" >"$sys/devices/system/cpu/cpu${list[c]}/topology/thread_siblings_list"
	done
}

@test "--bind-to core shares out cores as sysfs gives them (HVD_SYSFS_ROOT): a core's threads together, by package" {
	local -a list
	local c sys cpus
	two_packages
	# The first rank gets the first package.
	run env HVD_SYSFS_ROOT="$sys" taskset -c "${list[0]},${list[1]}" "$HVDRUN" -np 2 sh -c "$cpus"
	assert_success
	assert_line "[0]<stdout>:0 ${list[1]}"
	assert_line "[1]<stdout>:1 ${list[0]}"
	# Two threads of one core, one rank: both.
	echo 0 >"$sys/devices/system/cpu/cpu${list[0]}/topology/physical_package_id"
	for c in 0 1; do
		echo "${list[0]},${list[1]}" >"$sys/devices/system/cpu/cpu${list[c]}/topology/thread_siblings_list"
	done
	run env HVD_SYSFS_ROOT="$sys" taskset -c "${list[0]},${list[1]}" "$HVDRUN" -np 1 sh -c "$cpus"
	local both="${list[0]},${list[1]}" # as the kernel lists them
	[ "${list[1]}" -ne $((list[0] + 1)) ] || both="${list[0]}-${list[1]}"
	assert_line "[0]<stdout>:0 $both"
	# Two ranks on that one core: a thread each.
	run env HVD_SYSFS_ROOT="$sys" taskset -c "${list[0]},${list[1]}" "$HVDRUN" -np 2 sh -c "$cpus"
	assert_line "[0]<stdout>:0 ${list[0]}"
	assert_line "[1]<stdout>:1 ${list[1]}"
}

@test "--bind-to socket and numa: a package or NUMA node each, consecutive local ranks together" {
	local -a list
	local sys cpus
	two_packages
	run env HVD_SYSFS_ROOT="$sys" taskset -c "${list[0]},${list[1]}" "$HVDRUN" -np 4 --bind-to socket sh -c "$cpus"
	assert_success
	assert_line "[0]<stdout>:0 ${list[1]}"
	assert_line "[1]<stdout>:1 ${list[1]}"
	assert_line "[2]<stdout>:2 ${list[0]}"
	assert_line "[3]<stdout>:3 ${list[0]}"
	# NUMA nodes 0 and 3 (node numbers may have gaps), against the
	# packages: the nodes rule.
	mkdir -p "$sys/devices/system/node/node0" "$sys/devices/system/node/node3"
	echo "${list[0]}" >"$sys/devices/system/node/node0/cpulist"
	echo "${list[1]}" >"$sys/devices/system/node/node3/cpulist"
	run env HVD_SYSFS_ROOT="$sys" taskset -c "${list[0]},${list[1]}" "$HVDRUN" -np 2 -x HVD_BIND_TO=NUMA sh -c "$cpus"
	assert_success
	assert_line "[0]<stdout>:0 ${list[0]}"
	assert_line "[1]<stdout>:1 ${list[1]}"
	# This host's own sysfs: one rank, every CPU of its package.
	run "$HVDRUN" -np 1 --bind-to socket sh -c "$cpus"
	assert_success
	[[ $output == "[0]<stdout>:0 "* ]]
}

@test "--bind-to gpu: each local rank on the CPUs near its GPU, the NVIDIA GPUs in PCI bus order; without one, unbound and said" {
	local -a list
	local d sys="$BATS_TEST_TMPDIR/sys" dev
	mapfile -t list < <(/usr/bin/python3 -c 'import os; print(*sorted(os.sched_getaffinity(0))[:2], sep="\n")')
	[ "${#list[@]}" -eq 2 ] || skip "one CPU: nothing to share"
	dev="$sys/bus/pci/devices"
	# GPU 0 (first in bus order) near the first CPU, GPU 1 near the
	# other; a network card and another vendor's display are not GPUs.
	for d in "0000:3b:00.0 0x10de 0x030200 ${list[1]}" "0000:1a:00.0 0x10de 0x030000 ${list[0]}" \
		"0000:05:00.0 0x15b3 0x020700 ${list[0]}" "0000:02:00.0 0x1a03 0x030000 ${list[1]}"; do
		set -- $d
		mkdir -p "$dev/$1"
		echo "$2" >"$dev/$1/vendor"
		echo "$3" >"$dev/$1/class"
		echo "$4" >"$dev/$1/local_cpulist"
	done
	run env HVD_SYSFS_ROOT="$sys" taskset -c "${list[0]},${list[1]}" "$HVDRUN" -np 3 --bind-to gpu --report-bindings true
	assert_success
	assert_line "[0]<stderr>:hvdrun: rank 0 on localhost (local rank 0 of 3): bound to CPUs ${list[0]} (gpu)"
	assert_line "[1]<stderr>:hvdrun: rank 1 on localhost (local rank 1 of 3): bound to CPUs ${list[1]} (gpu)"
	assert_line --partial "[2]<stderr>:hvdrun: rank 2 on localhost (local rank 2 of 3): not bound, CPUs "
	assert_line --partial "(no GPU of its own known)"
	# CUDA_VISIBLE_DEVICES renumbers them; a UUID cannot be placed.
	run env HVD_SYSFS_ROOT="$sys" taskset -c "${list[0]},${list[1]}" "$HVDRUN" -np 1 --bind-to gpu --report-bindings \
		-x CUDA_VISIBLE_DEVICES=1 true
	assert_output "[0]<stderr>:hvdrun: rank 0 on localhost (local rank 0 of 1): bound to CPUs ${list[1]} (gpu)"
	run env HVD_SYSFS_ROOT="$sys" "$HVDRUN" -np 1 --bind-to gpu --report-bindings -x CUDA_VISIBLE_DEVICES=GPU-5ab3 true
	assert_output --partial "(no GPU of its own known)"
	# No NVIDIA GPU here: unbound.
	run env HVD_SYSFS_ROOT="$BATS_TEST_TMPDIR/none" "$HVDRUN" -np 1 --bind-to gpu --report-bindings true
	assert_output --partial "not bound, CPUs "
	assert_output --partial "(no NVIDIA GPU)"
	run "$HVDRUN" --mpi -np 1 --bind-to gpu true
	assert_failure 2
	assert_line --index 0 "hvdrun: --bind-to gpu with --mpi: mpirun has no binding by GPU; give it --bind-to socket or numa"
}

@test "--report-bindings: each worker says which CPUs it runs on, bound or not and why" {
	local -a list
	local sys cpus
	two_packages
	run env HVD_SYSFS_ROOT="$sys" taskset -c "${list[0]},${list[1]}" "$HVDRUN" -np 2 --report-bindings true
	assert_success
	assert_line "[0]<stderr>:hvdrun: rank 0 on localhost (local rank 0 of 2): bound to CPUs ${list[1]} (core)"
	assert_line "[1]<stderr>:hvdrun: rank 1 on localhost (local rank 1 of 2): bound to CPUs ${list[0]} (core)"
	printf '[job]\nreport_bindings = true\nbind_to = Socket\n' >"$BATS_TEST_TMPDIR/job.ini"
	run env HVD_SYSFS_ROOT="$sys" taskset -c "${list[0]},${list[1]}" "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/job.ini" -np 3 true
	assert_line "[2]<stderr>:hvdrun: rank 2 on localhost (local rank 2 of 3): bound to CPUs ${list[0]} (socket)"
	run taskset -c "${list[0]}" "$HVDRUN" -np 2 --report-bindings true
	assert_line "[1]<stderr>:hvdrun: rank 1 on localhost (local rank 1 of 2): not bound, CPUs ${list[0]} (more local ranks than CPUs)"
	run taskset -c "${list[0]}" "$HVDRUN" -np 1 --report-bindings --bind-to none true
	assert_output "[0]<stderr>:hvdrun: rank 0 on localhost (local rank 0 of 1): not bound, CPUs ${list[0]} (--bind-to none)"
	# Without it, nothing is said.
	run "$HVDRUN" -np 1 true
	assert_output ""
}

@test "--bind-to core:overload-allowed binds a host with more ranks than CPUs too: local rank r on CPU r modulo the CPUs, one each" {
	local n r cpus='grep Cpus_allowed_list /proc/self/status | cut -f2'
	local -a list
	n=$(nproc)
	# The CPUs hvdrun may use, in order (nproc counts them).
	mapfile -t list < <(/usr/bin/python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
	[ "${#list[@]}" -eq "$n" ]
	run "$HVDRUN" -np $((n + 2)) --bind-to core:overload-allowed sh -c "$cpus"
	assert_success
	for ((r = 0; r < n + 2; r++)); do
		assert_line "[$r]<stdout>:${list[r % n]}"
	done
	# Not oversubscribed, it is core: a share each.
	[ "$n" -ge 2 ] || return 0
	run "$HVDRUN" -np 2 -x HVD_BIND_TO=core:overload-allowed sh -c "$cpus"
	assert_success
	local r0 r1
	r0=$(sed -n 's/^\[0\]<stdout>://p' <<<"$output")
	r1=$(sed -n 's/^\[1\]<stdout>://p' <<<"$output")
	[ -n "$r0" ] && [ -n "$r1" ] && [ "$r0" != "$r1" ]
	run "$HVDRUN" -np 1 --bind-to core:overload true
	assert_failure 2
	assert_output --partial "bad value 'core:overload' for --bind-to (want one of core, none, core:overload-allowed, socket, numa, gpu)"
	# Given by -x (no worker's hvd_init reads it): checked as --bind-to is.
	run "$HVDRUN" -np 1 -x HVD_BIND_TO=nnone true
	assert_failure 2
	assert_output --partial "bad value 'nnone' for HVD_BIND_TO (want one of core, none, core:overload-allowed, socket, numa, gpu)"
	HVD_BIND_TO=cores run "$HVDRUN" -np 1 -x HVD_BIND_TO true
	assert_failure 2
	assert_output --partial "bad value 'cores' for HVD_BIND_TO"
}

@test "hvdrun lifts its own open-files limit to the hard one (descriptors a rank); its workers keep the limit it started with" {
	local soft hard
	soft=$(ulimit -Sn)
	hard=$(ulimit -Hn)
	[ "$soft" != "$hard" ] || skip "the soft limit is already the hard one"
	run "$HVDRUN" -np 2 sh -c 'echo "soft=$(ulimit -Sn) parent=$(sed -n "s/^Max open files *\([0-9a-z]*\) .*/\1/p" /proc/$PPID/limits)"'
	assert_success
	assert_line "[0]<stdout>:soft=$soft parent=$hard"
	assert_line "[1]<stdout>:soft=$soft parent=$hard"
}

@test "hvdrun starts more workers than its caller's soft limit on open files has room for (about three descriptors a worker); each worker keeps that limit" {
	local r
	[ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -gt 256 ] || skip "the hard limit is 256 or less"
	run sh -c "ulimit -Sn 64; exec '$HVDRUN' -np 32 sh -c 'echo soft=\$(ulimit -Sn)'"
	assert_success
	for ((r = 0; r < 32; r++)); do
		assert_line "[$r]<stdout>:soft=64"
	done
}

@test "a hard limit on open files too low for hvdrun's workers (and --output-filename's files): one line says so, nothing starts, exit 125" {
	run sh -c "ulimit -n 64; exec '$HVDRUN' -np 30 sh -c 'echo started'"
	assert_failure 125
	assert_output "hvdrun: 30 workers need about 122 open files of hvdrun (three a worker of this host); it may open 64 (its hard limit on open files, ulimit -Hn): raise it, or start fewer workers"
	run sh -c "ulimit -n 64; exec '$HVDRUN' -np 10 sh -c 'echo started'"
	assert_success
	assert_equal "$(grep -c started <<<"$output")" 10
	# --output-filename: two files more a worker. Before, 30 workers under
	# 128 failed half-started with 'pipe: Too many open files'.
	run sh -c "ulimit -n 128; exec '$HVDRUN' -np 30 --output-filename '$BATS_TEST_TMPDIR/o' sh -c 'echo started'"
	assert_failure 125
	assert_output "hvdrun: 30 workers need about 182 open files of hvdrun (three a worker of this host, two more each for --output-filename); it may open 128 (its hard limit on open files, ulimit -Hn): raise it, or start fewer workers"
	[ ! -e "$BATS_TEST_TMPDIR/o" ]
	run sh -c "ulimit -n 128; exec '$HVDRUN' -np 18 --output-filename '$BATS_TEST_TMPDIR/o' sh -c 'echo started'"
	assert_success
	assert_equal "$(grep -c started <<<"$output")" 18
	assert_equal "$(cat "$BATS_TEST_TMPDIR"/o/rank.*/stdout | grep -c started)" 18
}

@test "a node agent (hvdrun --node-agent, as srun starts it) says its hard limit on open files in its hello; a rank it has no descriptor for fails with why, and nothing is left" {
	# hvdrun's records on its stdin (agent/records.h): task 0, then 12
	# ranks, each 'sh -c ...' from /, then 'Z'. The end of its input
	# ends the agent and its workers.
	/usr/bin/python3 - "$PIDDIR" >"$BATS_TEST_TMPDIR/recs" <<'PY'
import struct, sys
def rec(t, data=b""):
    return t.encode() + struct.pack(">I", len(data)) + data
out = rec("T", struct.pack(">I", 0))
for r in range(12):
    cmd = 'echo $$ >"%s/w%d"; exec sleep 30' % (sys.argv[1], r)
    out += rec("R", struct.pack(">I", r)) + rec("D", b"/")
    out += rec("A", b"/bin/sh") + rec("A", b"-c") + rec("A", cmd.encode()) + rec("G")
sys.stdout.buffer.write(out + rec("Z"))
PY
	run env SLURM_PROCID=0 prlimit --nofile=20:20 "$HVDRUN" --node-agent <"$BATS_TEST_TMPDIR/recs"
	assert_success
	# The hello: its node, its hard limit, the protocol it speaks and its
	# version, as hvdrun --version says them.
	assert_line --index 0 "h $(hostname) 20 $(hvdrun_says agent) $(hvdrun_says version)"$'\x1e'
	# Four descriptors of its own and two pipes a rank, more for a moment
	# while one starts: the first ranks start, the others fail. Before,
	# they said 'out of file descriptors' or 'fork failed'.
	refute_output --partial "e 0 "
	assert_output --partial "e 11 hvdrun: on $(hostname): cannot start it: Too many open files (this node's hard limit on open files, which slurmd sets: raise LimitNOFILE in slurmd's service, or start fewer workers here)\\x0a"
	wait_no_leftovers
}

# The records hvdrun sends an SSH agent (lib/agent/records.h), framed:
# TYPE PAYLOAD pairs; a 'V' payload is "PROTO VERSION".
agent_records() {
	/usr/bin/python3 -c '
import struct, sys
out = b""
for t, p in zip(sys.argv[1::2], sys.argv[2::2]):
    p = p.encode()
    if t == "V":
        n, _, v = p.partition(b" ")
        p = struct.pack(">I", int(n)) + v
    out += t.encode() + struct.pack(">I", len(p)) + p
sys.stdout.buffer.write(out)' "$@"
}

@test "an agent of another protocol than the launching hvdrun's starts nothing and names both hvdruns" {
	# The remote end of an SSH start (hvdrun --agent), fed its records
	# here as the channel would: the launching hvdrun says protocol 9.
	local proto
	proto=$(hvdrun_says agent)
	agent_records V "9 9.9.9" D "$BATS_TEST_TMPDIR" E PATH=/usr/bin:/bin \
		A touch A started G "" >"$BATS_TEST_TMPDIR/other"
	run bash -c '{ cat "$1"; sleep 1; } | "$0" --agent' "$HVDRUN" "$BATS_TEST_TMPDIR/other"
	assert_failure 125
	assert_output --regexp "^hvdrun: on [^:]+: this host's hvdrun \([0-9.]+, agent protocol $proto\) cannot start ranks for the hvdrun that launched the job \(9\.9\.9, agent protocol 9\): install the same hvdrun on every host$"
	[ ! -e "$BATS_TEST_TMPDIR/started" ]
	# Its own protocol, whatever the version, starts the rank.
	agent_records V "$proto 0.0.1" D "$BATS_TEST_TMPDIR" E PATH=/usr/bin:/bin \
		A touch A started G "" >"$BATS_TEST_TMPDIR/same"
	run bash -c '{ cat "$1"; sleep 1; } | "$0" --agent' "$HVDRUN" "$BATS_TEST_TMPDIR/same"
	assert_success
	[ -e "$BATS_TEST_TMPDIR/started" ]
}
