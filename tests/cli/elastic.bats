#!/usr/bin/env bats
# Elastic jobs (--min-np) on this host, localhost, 127.0.0.1 and
# localhost.localdomain being three hosts to hvdrun: a worker killed mid-training takes its host out of the
# job and the others go on from their last commit (examples/elastic.c,
# whose final weights are the same whatever the resets); failures during
# a reset; --min-np and --reset-limit ending the job with the failing
# code; 100 resets without growth; a failed host that returns after its
# cool-down and the job growing back; a host discovery script whose hosts
# join and leave, a failed host it must list again after the cool-down,
# and one that fails, hangs or prints garbage; the options' errors.
bats_require_minimum_version 1.5.0
load helper

ELASTIC=${HVD_ELASTIC_BIN:-$ROOT/build/examples/elastic}
KILL=$WORKERS/elastic_kill.sh

# The weights of STEPS steps of examples/elastic.c, from a job of one.
weights() {
	"$ELASTIC" "$1" 5 0 | sed -n 's/.*weights \(.*\)/\1/p'
}

# Workers 0 .. N-1 all end as ranks of N, after STEPS steps, in generation
# GEN (a regex), with the weights of a job of one.
assert_weights() {
	local n=$1 steps=$2 gen=$3 want w
	want=$(weights "$steps")
	for ((w = 0; w < n; w++)); do
		assert_line --regexp "^\[$w\]<stdout>:rank $w of $n: $steps steps, generation $gen, [0-9]+ resets, weights $want$"
	done
}

@test "elastic: a worker killed mid-training: its host leaves, the others go on from the last commit to the same weights" {
	local want
	want=$(weights 150)
	ELASTIC_KILL="3:1" run "$HVDRUN" -np 4 -H localhost:2,127.0.0.1:2 --min-np 2 \
		"$KILL" "$ELASTIC" 150 5 10
	assert_success
	assert_line "hvdrun: worker 3 on 127.0.0.1 was killed by signal 9 (Killed); its host leaves the job and 2 workers go on (generation 2)"
	assert_line "[0]<stdout>:rank 0 of 2: 150 steps, generation 2, 1 resets, weights $want"
	assert_line "[1]<stdout>:rank 1 of 2: 150 steps, generation 2, 1 resets, weights $want"
	# Worker 2 shared the host: ended with it, quietly.
	refute_output --partial "[2]<stdout>"
	refute_output --partial "stopping the job"
	wait_no_leftovers
}

@test "elastic: Adasum goes on at 3 ranks after a host of one is lost (Horovod's Adasum needs a power of two), and grows back to 4" {
	ELASTIC_ADASUM=1 ELASTIC_KILL="3:1" run "$HVDRUN" -np 4 -x ELASTIC_ADASUM \
		-H localhost:2,127.0.0.1:1,localhost.localdomain:1 --min-np 2 \
		--blacklist-cooldown-range 2 2 "$KILL" "$ELASTIC" 400 5 10
	assert_success
	assert_line "hvdrun: worker 3 on localhost.localdomain was killed by signal 9 (Killed); its host leaves the job and 3 workers go on (generation 2); the host may return in 2 s"
	assert_line "hvdrun: 4 workers form generation 3 once the running ones reach their next commit"
	assert_weights 4 400 3
	refute_output --partial "power"
	wait_no_leftovers
}

@test "elastic: rank 0's host fails: the other host's workers become ranks 0 and 1" {
	local want
	want=$(weights 150)
	ELASTIC_KILL="0:1" run "$HVDRUN" -np 4 -H localhost:2,127.0.0.1:2 --min-np 2 \
		"$KILL" "$ELASTIC" 150 5 10
	assert_success
	assert_line "[2]<stdout>:rank 0 of 2: 150 steps, generation 2, 1 resets, weights $want"
	assert_line "[3]<stdout>:rank 1 of 2: 150 steps, generation 2, 1 resets, weights $want"
	wait_no_leftovers
}

@test "elastic: a second host fails during the first reset: one more generation, the last host goes on" {
	local want
	want=$(weights 150)
	ELASTIC_KILL="5:1 1:1.05" run "$HVDRUN" -np 6 -H localhost:2,127.0.0.1:2,localhost.localdomain:2 \
		--min-np 2 "$KILL" "$ELASTIC" 150 5 10
	assert_success
	assert_line --regexp "^hvdrun: worker 5 on localhost.localdomain was killed by signal 9 \(Killed\); its host leaves the job and [24] workers go on \(generation [23]\)$"
	assert_line --regexp "^hvdrun: worker 1 on localhost was killed by signal 9 \(Killed\); its host leaves the job and [24] workers go on \(generation [23]\)$"
	assert_line --regexp "^\[2\]<stdout>:rank 0 of 2: 150 steps, generation 3, [12] resets, weights $want$"
	assert_line --regexp "^\[3\]<stdout>:rank 1 of 2: 150 steps, generation 3, [12] resets, weights $want$"
	wait_no_leftovers
}

@test "elastic: fewer than --min-np left: the job ends with the failing worker's code" {
	ELASTIC_KILL="1:0.5" run "$HVDRUN" -np 4 -H localhost:2,127.0.0.1:2 --min-np 3 \
		"$KILL" "$ELASTIC" 1000 5 10
	assert_failure 137
	assert_line "hvdrun: worker 1 on localhost was killed by signal 9 (Killed); 2 workers would go on, fewer than --min-np 3; stopping the job"
	wait_no_leftovers
}

@test "elastic: --reset-limit: the failure after the last reset allowed ends the job" {
	ELASTIC_KILL="5:1 1:5" run "$HVDRUN" -np 6 -H localhost:2,127.0.0.1:2,localhost.localdomain:2 \
		--min-np 2 --reset-limit 1 "$KILL" "$ELASTIC" 3000 5 10
	assert_failure 137
	assert_line "hvdrun: worker 5 on localhost.localdomain was killed by signal 9 (Killed); its host leaves the job and 4 workers go on (generation 2)"
	assert_line "hvdrun: worker 1 on localhost was killed by signal 9 (Killed) after 1 resets (--reset-limit); stopping the job"
	wait_no_leftovers
}

@test "elastic: 100 resets (hvd_shutdown, hvd_init) leak no descriptor, thread, memory or shared-memory segment" {
	local kib=2048 r
	# Under the sanitizers, memory is ASan's to judge (it checks leaks at
	# exit); its quarantine holds freed memory.
	[ -z "${HVD_SANITIZER_RUN-}" ] || kib=0
	run "$HVDRUN" -np 4 -H localhost:2,127.0.0.1:2 --min-np 2 "$SELFTEST" resets 100 "$kib"
	assert_success
	refute_output --partial FAIL
	for r in 0 1 2 3; do
		assert_line "[$r]<stdout>:rank $r: ok"
	done
	run ls /dev/shm
	refute_output --partial hvd-shm-
}

@test "elastic: an exit 0 is no failure; a job that is not elastic still ends at the first failure" {
	run "$HVDRUN" -np 2 --min-np 1 "$ELASTIC" 20 5 0
	assert_success
	assert_line --regexp "^\[0\]<stdout>:rank 0 of 2: 20 steps, generation 1, 0 resets"
	ELASTIC_KILL="1:0.5" run "$HVDRUN" -np 4 -H localhost:2,127.0.0.1:2 "$KILL" "$ELASTIC" 1000 5 10
	assert_failure 137
	assert_line "hvdrun: rank 1 on localhost was killed by signal 9 (Killed); stopping the job"
	wait_no_leftovers
}

@test "elastic: a failed host returns after --blacklist-cooldown-range: its workers start again and the job grows back at the next commit" {
	ELASTIC_KILL="3:1" run "$HVDRUN" -np 4 -H localhost:2,127.0.0.1:2 --min-np 2 \
		--blacklist-cooldown-range 1 1 "$KILL" "$ELASTIC" 500 5 10
	assert_success
	assert_line "hvdrun: worker 3 on 127.0.0.1 was killed by signal 9 (Killed); its host leaves the job and 2 workers go on (generation 2); the host may return in 1 s"
	assert_line "hvdrun: host 127.0.0.1 is back after its cool-down: 2 workers start there"
	assert_line "hvdrun: 4 workers form generation 3 once the running ones reach their next commit"
	# Every worker, the two started again too, ends with the weights of a
	# job of one: the new ones took rank 0's committed state.
	assert_weights 4 500 3
	wait_no_leftovers
}

@test "elastic: a returning host's worker that fails before it joined, after the others moved on to wait for it: only the growth loses the host, it counts no reset, and the host returns again" {
	# Worker 3, started again, fails 0.5 s later: by then the others
	# (a commit every 50 ms) wait in hvd_init for the grown generation.
	# Three changes: the loss, the growth that failed, the growth at last;
	# a fourth (that failure taken for a member's) would end the job.
	ELASTIC_KILL="3:1" ELASTIC_AGAIN_FAIL="3:0.5" run "$HVDRUN" -np 4 \
		-H localhost:2,127.0.0.1:2 --min-np 2 --reset-limit 3 \
		--blacklist-cooldown-range 1 1 "$KILL" "$ELASTIC" 800 5 10
	assert_success
	assert_line "hvdrun: worker 3 on 127.0.0.1 was killed by signal 9 (Killed); its host leaves the job and 2 workers go on (generation 2); the host may return in 1 s"
	assert_line "hvdrun: worker 3 on 127.0.0.1 exited with code 3 before it joined; its host leaves again and 2 workers form generation 4; the host may return in 1 s"
	assert_weights 4 800 5
	wait_no_leftovers
}

@test "elastic: without a cool-down a failed host stays out; with a cool-down of 0 it returns at once" {
	# No --blacklist-cooldown-range: the host never returns.
	ELASTIC_KILL="3:0.5" run "$HVDRUN" -np 4 -H localhost:2,127.0.0.1:2 --min-np 2 \
		"$KILL" "$ELASTIC" 200 5 10
	assert_success
	refute_output --partial "back after its cool-down"
	assert_line --regexp "^\[0\]<stdout>:rank 0 of 2: 200 steps, generation 2"
	rm -rf "$PIDDIR"/killed*
	ELASTIC_KILL="3:0.5" run "$HVDRUN" -np 4 -H localhost:2,127.0.0.1:2 --min-np 2 --max-np 4 \
		--blacklist-cooldown-range 0 0 "$KILL" "$ELASTIC" 400 5 10
	assert_success
	assert_line "hvdrun: host 127.0.0.1 is back after its cool-down: 2 workers start there"
	assert_line --regexp "^\[3\]<stdout>:rank 3 of 4: 400 steps, generation 3"
	wait_no_leftovers
}

@test "elastic: the job ends before a returning host's workers could join: they end quietly, nothing is left" {
	# A commit only at the start: the growth never forms. The host
	# returns 1 s after its failure, once the survivors form generation 2
	# (with no cool-down, a reset slower than the new workers' start
	# would take them into generation 3), and 2 s before the end.
	ELASTIC_KILL="3:0.5" run "$HVDRUN" -np 4 -H localhost:2,127.0.0.1:2 --min-np 2 \
		--blacklist-cooldown-range 1 1 "$KILL" "$ELASTIC" 300 1000 10
	assert_success
	assert_line "hvdrun: host 127.0.0.1 is back after its cool-down: 2 workers start there"
	assert_line --regexp "^\[0\]<stdout>:rank 0 of 2: 300 steps, generation 2"
	refute_output --partial "[2]<stdout>"
	refute_output --partial "stopping the job"
	wait_no_leftovers
}

@test "elastic: --host-discovery-script: a host it lists joins up to --max-np, one it drops leaves, and joins again when listed; all end with the same weights" {
	local want out=$BATS_TEST_TMPDIR/out hosts=$BATS_TEST_TMPDIR/hosts job w
	want=$(weights 1000)
	discovery_script
	echo localhost:2 >"$hosts"
	# ELASTIC_TRACE: each worker says when it steps in a new generation.
	ELASTIC_TRACE=1 "$HVDRUN" --min-np 2 --max-np 4 \
		--host-discovery-script "$BATS_TEST_TMPDIR/discover" \
		"$KILL" "$ELASTIC" 1000 5 10 >"$out" 2>&1 &
	job=$!
	wait_pids 2
	printf 'localhost:2\n127.0.0.1:2\n' >"$hosts"
	wait_line "$out" "hvdrun: host 127.0.0.1 has free slots: 2 workers start there"
	wait_line "$out" "hvdrun: 4 workers form generation 2 once the running ones reach their next commit"
	# The host leaves once its workers are in: dropped before they have
	# joined, it takes them along (another test's case).
	wait_line "$out" "[2]<stdout>:trace step"
	wait_line "$out" "[3]<stdout>:trace step"
	echo localhost:2 >"$hosts"
	wait_line "$out" "hvdrun: host 127.0.0.1 is no longer listed by the discovery script: 2 workers go on without it from their next commit (generation 3)"
	sleep 0.5
	printf 'localhost:2\n127.0.0.1:2\n' >"$hosts"
	wait_line "$out" "hvdrun: host 127.0.0.1 has free slots: 2 workers start there" 2
	local rc=0
	wait "$job" || rc=$?
	run cat "$out"
	[ "$rc" -eq 0 ]
	for w in 0 1 2 3; do
		assert_line --regexp "^\[$w\]<stdout>:rank $w of 4: 1000 steps, generation [0-9]+, [0-9]+ resets, weights $want$"
	done
	refute_output --partial "stopping the job"
	wait_no_leftovers
}

@test "elastic: a host found later whose workers cannot start (--wdir gone): one line says why, and the host is out as a failed one, for good or for its cool-down; the others go on" {
	local want out=$BATS_TEST_TMPDIR/out hosts=$BATS_TEST_TMPDIR/hosts
	local dir=$BATS_TEST_TMPDIR/w job rc cool
	want=$(weights 1000)
	discovery_script
	for cool in "" "--blacklist-cooldown-range 1 1"; do
		rm -f "$PIDDIR"/*
		mkdir "$dir"
		echo localhost:2 >"$hosts"
		# shellcheck disable=SC2086 # cool: no option, or two words
		"$HVDRUN" --min-np 2 --max-np 4 $cool --wdir "$dir" \
			--host-discovery-script "$BATS_TEST_TMPDIR/discover" \
			"$KILL" "$ELASTIC" 1000 5 10 >"$out" 2>&1 &
		job=$!
		wait_pids 2
		# The running workers' folder goes; a host joins.
		rmdir "$dir"
		printf 'localhost:2\n127.0.0.1:2\n' >"$hosts"
		wait_line "$out" "hvdrun: host 127.0.0.1 could not start workers: cannot use the working directory '$dir': No such file or directory"
		rc=0
		wait "$job" || rc=$?
		run cat "$out"
		[ "$rc" -eq 0 ]
		for w in 0 1; do
			assert_line --regexp "^\[$w\]<stdout>:rank $w of 2: 1000 steps, generation 1, 0 resets, weights $want$"
		done
		# Never started: no worker of its exits, none counts a reset.
		refute_output --partial "exited with code"
		refute_output --partial "cannot execute"
		refute_output --partial "workers start there"
		if [ -z "$cool" ]; then
			[ "$(grep -c "could not start" "$out")" -eq 1 ]
			assert_output --partial "No such file or directory; it stays out (no --blacklist-cooldown-range)"
		else
			assert_output --partial "No such file or directory; it may return in 1 s"
		fi
		wait_no_leftovers
	done
}

@test "elastic: with a discovery script, a failed host returns after its cool-down only once a list that came after the cool-down names it: dropped meanwhile, it stays out; listed again, it returns" {
	local want d=$BATS_TEST_TMPDIR out=$BATS_TEST_TMPDIR/out job w rc=0
	want=$(weights 1200)
	# While $d/slow is there, a run takes 3 s (longer than the 2 s
	# cool-down) and reads the list at its end; runs logs its runs.
	printf '#!/bin/sh\nif [ -e "%s/slow" ]; then\n\techo began >>"%s/runs"\n\tsleep 3\n\tcat "%s/hosts"\n\techo ended >>"%s/runs"\nelse\n\tcat "%s/hosts"\nfi\n' \
		"$d" "$d" "$d" "$d" "$d" >"$d/discover"
	chmod +x "$d/discover"
	: >"$d/runs"
	printf 'localhost:2\n127.0.0.1:2\n' >"$d/hosts"
	ELASTIC_KILL="3:1" "$HVDRUN" --min-np 2 --max-np 4 --blacklist-cooldown-range 2 2 \
		--host-discovery-script "$d/discover" "$KILL" "$ELASTIC" 1200 5 10 >"$out" 2>&1 &
	job=$!
	wait_line "$out" "hvdrun: worker 3 on 127.0.0.1 was killed by signal 9 (Killed); its host leaves the job and 2 workers go on (generation 2); the host may return in 2 s"
	# The last list before the cool-down's end names the host; the
	# script drops it during a run that ends after the cool-down.
	touch "$d/slow"
	wait_line "$d/runs" began
	echo localhost:2 >"$d/hosts"
	wait_line "$d/runs" ended
	sleep 0.3
	run cat "$out"
	refute_output --partial "back after its cool-down"
	rm "$d/slow"
	printf 'localhost:2\n127.0.0.1:2\n' >"$d/hosts"
	wait_line "$out" "hvdrun: host 127.0.0.1 is back after its cool-down: 2 workers start there"
	wait "$job" || rc=$?
	run cat "$out"
	[ "$rc" -eq 0 ]
	[ "$(grep -c "back after its cool-down" "$out")" -eq 1 ]
	for w in 0 1 2 3; do
		assert_line --regexp "^\[$w\]<stdout>:rank $w of 4: 1200 steps, generation 3, [0-9]+ resets, weights $want$"
	done
	wait_no_leftovers
}

@test "elastic: a host with more free slots than hvdrun's limit on open files has room for: as many workers start as fit, one line says why, and they train to the same weights" {
	local want out=$BATS_TEST_TMPDIR/out hosts=$BATS_TEST_TMPDIR/hosts job w
	want=$(weights 1000)
	discovery_script
	echo localhost:2 >"$hosts"
	# Under 64 open files hvdrun holds 32 of its own and 3 a local worker
	# (hl_worker_fds): with 2 running, room for 8 more. Before, all 30
	# started until a pipe failed ("could not start workers: pipe: Too
	# many open files"), and those started were left out and failed.
	(
		ulimit -n 64
		exec "$HVDRUN" --min-np 2 --max-np 40 \
			--host-discovery-script "$BATS_TEST_TMPDIR/discover" \
			"$KILL" "$ELASTIC" 1000 5 10
	) >"$out" 2>&1 &
	job=$!
	wait_pids 2
	printf 'localhost:2\n127.0.0.1:30\n' >"$hosts"
	wait_line "$out" "hvdrun: host 127.0.0.1 has 30 free slots; hvdrun may open 64 files (its hard limit on open files, ulimit -Hn), room for 8 workers more: raise it to use the others"
	wait_line "$out" "hvdrun: host 127.0.0.1 has free slots: 8 workers start there"
	wait_line "$out" "hvdrun: 10 workers form generation 2 once the running ones reach their next commit"
	local rc=0
	wait "$job" || rc=$?
	run cat "$out"
	[ "$rc" -eq 0 ]
	for w in $(seq 0 9); do
		assert_line --regexp "^\[$w\]<stdout>:rank $w of 10: 1000 steps, generation [0-9]+, [0-9]+ resets, weights $want$"
	done
	refute_output --partial "Too many open files"
	refute_output --partial "could not start"
	# Told once: the cut stays the same while the job runs.
	[ "$(grep -c "room for 8 workers more" "$out")" -eq 1 ]
	wait_no_leftovers
}

@test "elastic: a discovery script that prints garbage or hangs during the job: told once, the last good list kept; a host dropped below --min-np keeps its workers" {
	local out=$BATS_TEST_TMPDIR/out mode=$BATS_TEST_TMPDIR/mode job
	cat >"$BATS_TEST_TMPDIR/discover" <<-EOF
		#!/bin/sh
		case \$(cat "$mode") in
		garbage) echo localhost:two ;;
		hang) sleep 30 ;;
		dropped) echo localhost:2 ;;
		*) printf 'localhost:2\\n127.0.0.1:2\\n' ;;
		esac
	EOF
	chmod +x "$BATS_TEST_TMPDIR/discover"
	echo good >"$mode"
	# Workers that wait for the test's word (30 s at most).
	"$HVDRUN" --min-np 4 --host-discovery-script "$BATS_TEST_TMPDIR/discover" \
		"$KILL" sh -c 'for i in $(seq 300); do [ -e "$0" ] && break; sleep 0.1; done; echo done' \
		"$BATS_TEST_TMPDIR/done" >"$out" 2>&1 &
	job=$!
	wait_pids 4
	echo garbage >"$mode"
	wait_line "$out" "hvdrun: host discovery script '$BATS_TEST_TMPDIR/discover' line 1: bad slot count (want 1..4096) in host list entry 'localhost:two'; the last good list stays"
	sleep 2.5 # two more runs: the same failure is not told again
	echo hang >"$mode"
	wait_line "$out" "hvdrun: host discovery script '$BATS_TEST_TMPDIR/discover' did not finish within 5 s and was killed; the last good list stays"
	echo dropped >"$mode"
	wait_line "$out" "hvdrun: host discovery script '$BATS_TEST_TMPDIR/discover' works again"
	wait_line "$out" "hvdrun: host 127.0.0.1 is no longer listed by the discovery script, but without it 2 workers would go on, fewer than --min-np 4: its workers stay"
	sleep 1.5
	touch "$BATS_TEST_TMPDIR/done"
	local rc=0
	wait "$job" || rc=$?
	run cat "$out"
	[ "$rc" -eq 0 ]
	[ "$(grep -c "line 1: bad slot count" "$out")" -eq 1 ]
	[ "$(grep -c "its workers stay" "$out")" -eq 1 ]
	[ "$(grep -c "<stdout>:done" "$out")" -eq 4 ]
	wait_no_leftovers
	# The hanging script's sleep went with its process group.
	run pgrep -f "^sleep 30$"
	assert_failure
}

@test "elastic: bad --host-discovery-script and --slots-per-host: one line, nothing started" {
	discovery_script
	run "$HVDRUN" --host-discovery-script "$BATS_TEST_TMPDIR/discover" "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: --host-discovery-script is for an elastic job: add --min-np"
	run "$HVDRUN" --min-np 1 -H localhost:2 --host-discovery-script "$BATS_TEST_TMPDIR/discover" "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: --host-discovery-script $BATS_TEST_TMPDIR/discover gives the hosts: leave out -H localhost:2"
	run "$HVDRUN" --min-np 1 --host-discovery-script "$BATS_TEST_TMPDIR/nothing" "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: --host-discovery-script '$BATS_TEST_TMPDIR/nothing': No such file or directory"
	chmod -x "$BATS_TEST_TMPDIR/discover"
	run "$HVDRUN" --min-np 1 --host-discovery-script "$BATS_TEST_TMPDIR/discover" "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: --host-discovery-script '$BATS_TEST_TMPDIR/discover': not an executable file"
	run "$HVDRUN" -np 2 --min-np 1 --slots-per-host 2 "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: --slots-per-host 2 is for the bare names a --host-discovery-script prints"
	chmod +x "$BATS_TEST_TMPDIR/discover"
	echo localhost:2 >"$BATS_TEST_TMPDIR/hosts"
	SLURM_JOB_ID=42 SLURM_JOB_NODELIST=localhost SLURM_TASKS_PER_NODE=2 run "$HVDRUN" --launcher srun \
		--min-np 1 --host-discovery-script "$BATS_TEST_TMPDIR/discover" "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: --host-discovery-script: srun reaches only the allocation's nodes, not the hosts a script finds; use --launcher ssh"
	# Its first run fails: the job cannot start (125).
	printf 'localhost:2\n\nlocalhost\n' >"$BATS_TEST_TMPDIR/hosts"
	run "$HVDRUN" --min-np 1 --host-discovery-script "$BATS_TEST_TMPDIR/discover" "$HELLO"
	[ "$status" -eq 125 ]
	assert_line --index 0 "hvdrun: host discovery script '$BATS_TEST_TMPDIR/discover' line 3: host 'localhost' is listed twice (give it once, with all its slots: 'localhost:3')"
	refute_output --partial "Hello"
	printf '#!/no/such/shell\necho localhost\n' >"$BATS_TEST_TMPDIR/discover"
	run "$HVDRUN" --min-np 1 --host-discovery-script "$BATS_TEST_TMPDIR/discover" "$HELLO"
	[ "$status" -eq 125 ]
	assert_line --index 0 "hvdrun: host discovery script '$BATS_TEST_TMPDIR/discover' exited with code 127: cannot execute it: its interpreter (#! line) was not found"
	discovery_script
	printf '[elastic]\nmin_np = 1\nhost_discovery_script = %s\n' "$BATS_TEST_TMPDIR/discover" >"$BATS_TEST_TMPDIR/job.ini"
	printf 'localhost\n127.0.0.1:1\n' >"$BATS_TEST_TMPDIR/hosts"
	run "$HVDRUN" --config "$BATS_TEST_TMPDIR/job.ini" --slots-per-host 3 --dry-run "$HELLO"
	assert_success
	assert_line "hvdrun: hosts: the hosts of the discovery script '$BATS_TEST_TMPDIR/discover'"
	assert_line "rank=2 host=localhost local_rank=2 local_size=3 cross_rank=0 cross_size=1"
	assert_line "rank=3 host=127.0.0.1 local_rank=0 local_size=1 cross_rank=1 cross_size=2"
}

@test "elastic: bad --max-np and --blacklist-cooldown-range: one line, exit 2, nothing started" {
	run "$HVDRUN" -np 2 --min-np 1 --max-np 1 "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: --max-np 1 is less than the 2 workers the job starts with"
	run "$HVDRUN" -np 2 --max-np 4 "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: --max-np is for an elastic job: add --min-np"
	run "$HVDRUN" -np 2 --blacklist-cooldown-range 1 5 "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: --blacklist-cooldown-range is for an elastic job: add --min-np"
	run "$HVDRUN" -np 2 --min-np 1 --blacklist-cooldown-range 9 5 "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: bad value '9 5' for --blacklist-cooldown-range (want two integers MIN MAX, 0 <= MIN <= MAX <= 86400)"
	run "$HVDRUN" -np 2 --min-np 1 --blacklist-cooldown-range 5 "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 --partial "bad value '5 "
	printf '[elastic]\nmin_np = 1\nblacklist_cooldown_range = 3 x\n' >"$BATS_TEST_TMPDIR/bad.ini"
	run "$HVDRUN" --config "$BATS_TEST_TMPDIR/bad.ini" -np 2 "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 --partial "bad.ini:3: bad value '3 x' for 'blacklist_cooldown_range' in [elastic]"
	refute_output --partial "Hello"
}

@test "elastic: bad --min-np and --reset-limit: one line, exit 2, nothing started" {
	run "$HVDRUN" -np 2 --min-np 3 "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: --min-np 3 is more than the 2 workers the job starts with"
	run "$HVDRUN" -np 2 --reset-limit 2 "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: --reset-limit is for an elastic job: add --min-np"
	# From a config file: its line, and the fix in its terms.
	printf '[elastic]\nreset_limit = 2\n' >"$BATS_TEST_TMPDIR/job.ini"
	run "$HVDRUN" -np 2 --config-file "$BATS_TEST_TMPDIR/job.ini" "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: reset_limit = 2 ($BATS_TEST_TMPDIR/job.ini:2) is for an elastic job: set min_np in [elastic]"
	printf '[elastic]\nhost_discovery_script = discover\n' >"$BATS_TEST_TMPDIR/job.ini"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/job.ini" "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: host_discovery_script = discover ($BATS_TEST_TMPDIR/job.ini:2) is for an elastic job: set min_np in [elastic]"
	printf '[elastic]\nmin_np = 1\nhost_discovery_script = discover\n[job]\nhosts = localhost:2\n' >"$BATS_TEST_TMPDIR/job.ini"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/job.ini" "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: host_discovery_script = discover ($BATS_TEST_TMPDIR/job.ini:3) gives the hosts: leave out hosts = localhost:2 ($BATS_TEST_TMPDIR/job.ini:5)"
	run "$HVDRUN" -np 2 --min-np 1 --mpi "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: --min-np 1: an elastic job runs on hvdrun's own rendezvous, not --mpi"
	# From a config file: its lines ('enabled' is a name of several sections).
	printf '[elastic]\nmin_np = 1\n[mpi]\nenabled = true\n' >"$BATS_TEST_TMPDIR/job.ini"
	run "$HVDRUN" -np 2 --config-file "$BATS_TEST_TMPDIR/job.ini" "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 "hvdrun: min_np = 1 ($BATS_TEST_TMPDIR/job.ini:2): an elastic job runs on hvdrun's own rendezvous, not enabled = true in [mpi] ($BATS_TEST_TMPDIR/job.ini:4)"
	run "$HVDRUN" -np 2 --min-np 0 "$HELLO"
	[ "$status" -eq 2 ]
	assert_line --index 0 --partial "--min-np"
	refute_output --partial "Hello"
}

@test "elastic: without --max-np the job starts on every slot of -H, whatever -np says, as horovodrun does" {
	run "$HVDRUN" --dry-run -np 2 -H localhost:2,127.0.0.1:2 --min-np 2 true
	assert_success
	assert_equal "${#lines[@]}" 4
	assert_line "rank=3 host=127.0.0.1 local_rank=1 local_size=2 cross_rank=1 cross_size=2"
	# --max-np bounds it; -np is the start.
	run "$HVDRUN" --dry-run -np 2 -H localhost:2,127.0.0.1:2 --min-np 2 --max-np 3 true
	assert_success
	assert_equal "${#lines[@]}" 2
	# A job that is not elastic starts -np workers.
	run "$HVDRUN" --dry-run -np 2 -H localhost:2,127.0.0.1:2 true
	assert_equal "${#lines[@]}" 2
}

@test "elastic: below --min-np while a host may return, the others wait for it (--elastic-timeout), then go on with it; past the timeout the job ends with the failing code" {
	local want w
	want=$(weights 500)
	# horovodrun's HOROVOD_ELASTIC_TIMEOUT, where no option gives it.
	HOROVOD_ELASTIC_TIMEOUT=300 ELASTIC_KILL="3:1" run "$HVDRUN" -np 4 -H localhost:2,127.0.0.1:2 --min-np 3 \
		--blacklist-cooldown-range 1 1 "$KILL" "$ELASTIC" 500 5 10
	assert_success
	assert_line "hvdrun: worker 3 on 127.0.0.1 was killed by signal 9 (Killed); 2 workers remain, fewer than --min-np 3: they wait up to 300 s (--elastic-timeout) for hosts"
	assert_line "hvdrun: host 127.0.0.1 is back after its cool-down: 2 workers start there"
	assert_line --regexp "^hvdrun: 4 workers form generation [0-9]+, --min-np met again$"
	for w in 0 1 2 3; do
		assert_line --regexp "^\[$w\]<stdout>:rank $w of 4: 500 steps, generation [0-9]+, [0-9]+ resets, weights $want$"
	done
	wait_no_leftovers
	rm -rf "$PIDDIR"/killed*
	# The host does not return in time.
	HOROVOD_ELASTIC_TIMEOUT=300 ELASTIC_KILL="3:1" run "$HVDRUN" -np 4 -H localhost:2,127.0.0.1:2 --min-np 3 \
		--blacklist-cooldown-range 30 30 --elastic-timeout 2 "$KILL" "$ELASTIC" 3000 5 10
	assert_failure 137
	assert_line "hvdrun: fewer than --min-np 3 workers for 2 s (--elastic-timeout) since worker 3 on 127.0.0.1 was killed by signal 9 (Killed); stopping the job"
	wait_no_leftovers
}
