#!/usr/bin/env bats
# hvdrun inside a real Slurm cluster (slurm.bash): slurmctld on the login
# namespace, a slurmd on each of 3 namespace hosts (4 CPUs each), munge;
# jobs through salloc and sbatch as users run them. Workers start over
# SSH to the same namespace hosts (rig.bash).
bats_require_minimum_version 1.5.0
load ../cli/helper
load rig
load slurm

setup_file() {
	[ "$(id -u)" -eq 0 ] || skip "the rig needs root (ip netns, unshare, sshd, slurmd)"
	[ -x /usr/sbin/slurmctld ] && [ -x /usr/sbin/slurmd ] && [ -x /usr/sbin/munged ] ||
		skip "Slurm is not installed (make deps installs it)"
	rig_up 1
	RIG_NS_DOCKER=0 rig_ns_up 3 0
	slurm_up
	export RIG RIG_PORT RIG_NS RIG_SLURM
}

teardown_file() {
	rig_down
}

# A failed test shows what each node's slurmd and slurmstepd logged
# last: a step's I/O error is theirs to explain.
teardown() {
	[ -n "${BATS_TEST_COMPLETED-}" ] && return 0
	local f
	for f in "$RIG_SLURM"/slurmd.*.log; do
		[ -f "$f" ] || continue
		echo "== ${f##*/}, its last lines"
		tail -n 15 "$f"
	done
}

setup() {
	rig_test_setup RIG_NS
	# The test's own environment must not leak a job of its own.
	unset SLURM_JOB_ID SLURM_JOB_NODELIST SLURM_TASKS_PER_NODE SLURM_NTASKS
	# Each test starts on idle nodes: one still completing an earlier
	# test's job would hold an allocation back (and one whose slurmd a
	# test stops would never complete it).
	slurm_wait_idle 30 || { slurm_exec sinfo -N; return 1; }
}

@test "Slurm's own expansion of node lists is hvdrun's" {
	local list want got n
	for list in 'ns[1-3]' 'node[01-04,07]' 'a[1-2],b3' 'r[1-2]n[08-10]' 'x[9-11]y,z[0-1]' 'c1,c[3-4]-ib'; do
		want=$(slurm_exec scontrol show hostnames "$list" | paste -sd,)
		n=$(echo "$want" | tr , '\n' | wc -l)
		got=$(SLURM_JOB_ID=1 SLURM_JOB_NODELIST="$list" SLURM_TASKS_PER_NODE="1(x$n)" \
			"$HVDRUN" --dry-run 2>/dev/null | sed -n 's/.* host=\([^ ]*\) .*/\1/p' | paste -sd,)
		[ "$got" = "$want" ] || { echo "$list: Slurm $want, hvdrun $got"; return 1; }
	done
}

@test "salloc -N3 --ntasks-per-node=2: hvdrun with no hosts and no -np runs 6 workers on the allocation's nodes" {
	run --separate-stderr slurm_exec salloc -Q -N3 --ntasks-per-node=2 \
		"$HVDRUN" "${SSH[@]}" --verbose sh -c 'echo "$HOROVOD_RANK/$HOROVOD_SIZE on $(hostname) local $HOROVOD_LOCAL_RANK/$HOROVOD_LOCAL_SIZE"'
	assert_success
	[[ "$stderr" == *"hvdrun: hosts: the Slurm allocation of job "*"(SLURM_JOB_NODELIST=ns[1-3], SLURM_TASKS_PER_NODE=2(x3), -np from SLURM_NTASKS=6)"* ]]
	assert_line "[0]<stdout>:0/6 on ns1 local 0/2"
	assert_line "[1]<stdout>:1/6 on ns1 local 1/2"
	assert_line "[3]<stdout>:3/6 on ns2 local 1/2"
	assert_line "[5]<stdout>:5/6 on ns3 local 1/2"
}

@test "salloc -N3 -n6: Slurm's uneven placement (4,1,1) is the plan" {
	run --separate-stderr slurm_exec salloc -Q -N3 -n6 "$HVDRUN" --dry-run
	assert_success
	[[ "$stderr" == *"SLURM_TASKS_PER_NODE=4,1(x2)"* ]]
	assert_line --index 3 "rank=3 host=ns1 local_rank=3 local_size=4 cross_rank=0 cross_size=1"
	assert_line --index 4 "rank=4 host=ns2 local_rank=0 local_size=1 cross_rank=1 cross_size=3"
	assert_line --index 5 "rank=5 host=ns3 local_rank=0 local_size=1 cross_rank=2 cross_size=3"
	# More workers than the allocation has: refused, the allocation named.
	run slurm_exec salloc -Q -N2 --ntasks-per-node=1 "$HVDRUN" -np 3 true
	assert_failure 2
	assert_line --index 0 --partial "hvdrun: -np 3 is more than the 2 slots of Slurm job"
}

@test "sbatch: the batch script's hvdrun runs the job on every node of the allocation" {
	local out=$BATS_TEST_TMPDIR/job.out id t state
	id=$(slurm_exec sbatch --parsable -N2 --ntasks-per-node=2 -o "$out" \
		--wrap "'$HVDRUN' ${SSH[*]} sh -c 'echo \$HOROVOD_RANK on \$(hostname)'")
	for t in $(seq 1 300); do
		state=$(slurm_exec scontrol show job "$id" | sed -n 's/.*JobState=\([A-Z]*\).*/\1/p')
		case $state in COMPLETED | FAILED | CANCELLED | TIMEOUT) break ;; esac
		sleep 0.1
	done
	cat "$out"
	[ "$state" = COMPLETED ]
	grep -qx '\[0\]<stdout>:0 on ns1' "$out"
	grep -qx '\[3\]<stdout>:3 on ns2' "$out"
}

@test "in an allocation: a failing worker's code is the job's, and libhvd's self-test passes across its nodes" {
	run slurm_exec salloc -Q -N2 --ntasks-per-node=1 "$HVDRUN" "${SSH[@]}" sh -c 'echo $$ >"$PIDDIR/w$HOROVOD_RANK"; [ "$HOROVOD_RANK" = 1 ] && exit 7; exec sleep 30'
	assert_failure 7
	assert_no_leftovers
	run slurm_exec salloc -Q -N2 --ntasks-per-node=2 "$HVDRUN" "${SSH[@]}" "$SELFTEST" all
	assert_success
	assert_line "[3]<stdout>:rank 3: ok"
}

@test "srun -n2 hvdrun inside an allocation: refused, the step named" {
	run slurm_exec salloc -Q -N2 --ntasks-per-node=1 srun -n2 "$HVDRUN" true
	assert_failure
	assert_output --partial "this hvdrun is one of the 2 tasks of Slurm step"
}

# No agent, nor srun running one, left on any node within 10 s: once
# hvdrun has ended srun, Slurm ends the step's tasks on its own time.
assert_no_agent() {
	rig_wait_gone "--node-agent" 100
}

# A 3-node job of family.sh workers (hvdrun options in "$@"), hvdrun
# SIGKILLed once every family is up: nothing may be left on any node.
# hvdrun itself is the oldest process that runs it (salloc's command line
# names it too, and its own helpers are younger).
sigkill_job() {
	slurm_exec salloc -Q -N3 --ntasks-per-node=1 "$HVDRUN" "$@" -x PIDDIR "$WORKERS/family.sh" \
		>/dev/null 2>&1 &
	local salloc=$! pid
	wait_pids 9
	pid=$(pgrep -o -f "^$HVDRUN ")
	[ -n "$pid" ]
	kill -KILL "$pid"
	wait "$salloc" || true
	wait_no_leftovers
}

@test "hvdrun SIGKILLed inside an allocation (--launcher ssh): no worker is left on any node" {
	sigkill_job --launcher ssh "${SSH[@]}"
}

@test "hvdrun --mpi inside an allocation: mpirun reads the allocation itself (no -H) and starts its daemons through srun" {
	export ASAN_OPTIONS=detect_leaks=0 # Open MPI's own, at exit
	run slurm_exec salloc -Q -N2 --ntasks-per-node=2 "$HVDRUN" --mpi --verbose \
		--network-interface eth0 "$ROOT/build/tests/mpi_user" serialized
	assert_success
	assert_line --regexp "^hvdrun: mpirun( --allow-run-as-root)? --tag-output -np 4 --mca plm_rsh_args"
	refute_output --partial " -H "
	assert_line "[1,3]<stdout>:rank 3 of 4: allreduce success, 4"
	# Pinned: a free choice may take ns3 (while ns2 still ends the job
	# before).
	run slurm_exec salloc -Q -N2 -w ns1,ns2 --ntasks-per-node=2 "$HVDRUN" --mpi \
		--network-interface eth0 sh -c 'echo "$OMPI_COMM_WORLD_RANK on $(hostname)"'
	assert_success
	assert_line "[1,1]<stdout>:1 on ns1"
	assert_line "[1,2]<stdout>:2 on ns2"
	run slurm_exec salloc -Q -N2 --ntasks-per-node=2 "$HVDRUN" --mpi \
		--network-interface eth0 "$SELFTEST" all
	assert_success
	assert_line "[1,3]<stdout>:rank 3: ok"
}

@test "hvdrun check inside an allocation checks the allocation's nodes" {
	run slurm_exec salloc -Q -N3 --ntasks-per-node=1 "$HVDRUN" check "${SSH[@]}" \
		--network-check-timeout 0.5
	assert_success
	assert_output --partial ns1
	assert_output --partial ns2
	assert_output --partial ns3
}

# The elastic example (the sanitized run's own build, where it sets one).
ELASTIC=${HVD_ELASTIC_BIN:-$ROOT/build/examples/elastic}

# The worker's view of its job: every variable but the ones that differ
# from run to run (ports, the rendezvous address, the job's secret),
# Slurm's own, and those of the SSH session beneath hvdrun's for a worker
# started over SSH (sshd's SSH_*, USER, LOGNAME, MAIL, SHELL), as a remote
# shell's are beneath horovodrun's: where hvdrun's own environment lacks
# one (SHELL, under a CI runner), a worker over SSH still has sshd's.
ENVDUMP='env | grep -Ev "^(SLURMD_|_=|SHLVL=|PWD=|OLDPWD=|SSH_|USER=|LOGNAME=|MAIL=|SHELL=)" | grep -Ev "PORT=|SECRET=|RENDEZVOUS=" | sort | sed "s/^/$HOROVOD_RANK /"'

@test "--launcher srun and --launcher ssh: the same plan and the same environment for every rank, a worker srun started with its node's own beneath" {
	local a=$BATS_TEST_TMPDIR/srun b=$BATS_TEST_TMPDIR/ssh
	run --separate-stderr slurm_exec salloc -Q -N3 -n6 "$HVDRUN" --verbose "${SSH[@]}" sh -c "$ENVDUMP"
	assert_success
	[[ "$stderr" == *"hvdrun: other hosts' workers start through srun"* ]]
	sed 's/^\[[0-9]*\]<stdout>://' <<<"$output" | sort >"$a"
	run --separate-stderr slurm_exec salloc -Q -N3 -n6 "$HVDRUN" --verbose --launcher ssh "${SSH[@]}" sh -c "$ENVDUMP"
	assert_success
	[[ "$stderr" == *"hvdrun: other hosts' workers start over SSH"* ]]
	sed 's/^\[[0-9]*\]<stdout>://' <<<"$output" | sort >"$b"
	# Slurm's placement, 4,1,1, in both.
	grep -qx '3 HOROVOD_LOCAL_SIZE=4' "$a"
	grep -qx '5 HOROVOD_CROSS_RANK=2' "$a"
	[ "$(grep -c ' HOROVOD_RANK=' "$a")" -eq 6 ]
	# Every worker, local or started through srun, sees the allocation's
	# facts, and no task's (SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS),
	# which would contradict its Horovod rank.
	[ "$(grep -c ' SLURM_JOB_ID=' "$a")" -eq 6 ]
	[ "$(grep -c ' SLURM_JOB_NODELIST=' "$a")" -eq 6 ]
	[ "$(grep -c ' SLURM_CLUSTER_NAME=' "$a")" -eq 6 ]
	! grep -E ' SLURM_(PROCID|LOCALID|NTASKS|NODEID|STEP_ID)=' "$a"
	# The two allocations differ only in their ids, and a worker srun
	# started has its node's own beneath hvdrun's (what the step's task
	# got there: Slurm's TMPDIR, the job's user, ...): every variable of
	# a worker started over SSH is there, with the same value.
	sed -E 's/(SLURM_JOB_?ID)=[0-9]+/\1=N/' "$a" | sort >"$a.n"
	sed -E 's/(SLURM_JOB_?ID)=[0-9]+/\1=N/' "$b" | sort >"$b.n"
	comm -13 "$a.n" "$b.n" >"$b.missing"
	[ ! -s "$b.missing" ] || { cat "$b.missing"; return 1; }
	grep -q '^5 TMPDIR=' "$a"
}

@test "--launcher srun --wdir: the workers of every node start in DIR" {
	local wd=$BATS_TEST_TMPDIR/wd
	mkdir -p "$wd"
	run slurm_exec salloc -Q -N3 --ntasks-per-node=1 "$HVDRUN" --launcher srun "${SSH[@]}" \
		--wdir "$wd" sh -c 'echo "$(hostname) $(pwd) $PWD"'
	assert_success
	[ "$(grep -c " $wd $wd\$" <<<"$output")" -eq 3 ]
	# One a node: ns1, ns2, ns3.
	[ "$(grep " $wd $wd\$" <<<"$output" | sed 's/^.*<stdout>:\([^ ]*\) .*/\1/' | sort -u | wc -l)" -eq 3 ]
}

@test "--launcher srun: a failing worker's code is the job's, output arrives whole, libhvd's self-test passes, nothing is left" {
	run slurm_exec salloc -Q -N3 --ntasks-per-node=2 "$HVDRUN" --launcher srun "${SSH[@]}" \
		sh -c 'echo $$ >"$PIDDIR/w$HOROVOD_RANK"; [ "$HOROVOD_RANK" = 4 ] && exit 9; exec sleep 30'
	assert_failure 9
	assert_output --partial "hvdrun: rank 4 on ns3 exited with code 9; stopping the job"
	wait_no_leftovers
	# Every byte value, 256 KiB of them per rank, through the agents'
	# escaped lines: the same bytes at both ends. Four ranks a node that
	# end at once leave slurmstepd holding output that srun cuts into
	# pieces (records.h); before they were joined, about one rank in
	# eight lost part of its last KiB here.
	export DATA=$BATS_TEST_TMPDIR/data
	mkdir -p "$DATA"
	run slurm_exec salloc -Q -N2 --ntasks-per-node=4 "$HVDRUN" --launcher srun -x DATA \
		--output-filename "$BATS_TEST_TMPDIR/out" \
		sh -c 'head -c 262144 /dev/urandom >"$DATA/in$HOROVOD_RANK"; cat "$DATA/in$HOROVOD_RANK" >&2'
	assert_success
	local r
	for r in 0 1 2 3 4 5 6 7; do
		cmp "$DATA/in$r" "$BATS_TEST_TMPDIR/out/rank.$r/stderr"
	done
	run slurm_exec salloc -Q -N3 --ntasks-per-node=2 "$HVDRUN" --launcher srun "$SELFTEST" all
	assert_success
	assert_line "[5]<stdout>:rank 5: ok"
	# Re-initialisation: 100 times hvd_shutdown() then hvd_init(), the
	# same ranks, no descriptor or thread more.
	run slurm_exec salloc -Q -N3 --ntasks-per-node=1 "$HVDRUN" --launcher srun \
		"$ROOT/build/tests/hvd_selftest" resets 100 0
	assert_success
	refute_output --partial FAIL
	assert_line "[2]<stdout>:rank 2: ok"
}

@test "--launcher srun: standard input reaches rank 0 on its node byte for byte, --stdin another rank; a rank that reads none of an endless input holds a bounded buffer" {
	head -c 1048576 /dev/urandom >"$BATS_TEST_TMPDIR/in"
	local want empty
	want=$(md5sum <"$BATS_TEST_TMPDIR/in" | cut -d' ' -f1)
	empty=$(md5sum </dev/null | cut -d' ' -f1)
	run slurm_exec salloc -Q -N2 --ntasks-per-node=2 "$HVDRUN" --launcher srun --verbose \
		sh -c 'sleep 1; echo "$(hostname) $(md5sum | cut -d" " -f1)"' <"$BATS_TEST_TMPDIR/in"
	assert_success
	assert_line "hvdrun: rank 0 reads standard input"
	assert_line "[0]<stdout>:ns1 $want"
	assert_line "[1]<stdout>:ns1 $empty"
	assert_line "[3]<stdout>:ns2 $empty"
	run slurm_exec salloc -Q -N2 --ntasks-per-node=1 "$HVDRUN" --launcher srun --stdin 1 \
		sh -c 'echo "$(hostname) read $(wc -l)"' <<<$'one\ntwo\nthree'
	assert_success
	assert_line "[0]<stdout>:ns1 read 0"
	assert_line "[1]<stdout>:ns2 read 3"
	# A rank that never reads: its agent holds what its pipe took and
	# no more than the window beside it.
	run timeout 60 bash -c "yes | ip netns exec '${RIG_NS}c' env SLURM_CONF='$RIG_SLURM/slurm.conf' salloc -Q -N1 '$HVDRUN' --launcher srun sh -c 'sleep 2; grep VmRSS /proc/\$PPID/status; echo done'"
	assert_success
	assert_line "[0]<stdout>:done"
	assert_rank0_agent_rss_under 20000
}

@test "--launcher srun: hvdrun SIGKILLed ends the step and every worker on every node" {
	sigkill_job --launcher srun
	assert_no_agent
}

@test "--launcher srun: SIGUSR1 to hvdrun reaches every worker on every node, not its children, and the job goes on" {
	local out=$BATS_TEST_TMPDIR/out i pid status=0
	slurm_exec salloc -Q -N3 --ntasks-per-node=1 "$HVDRUN" --launcher srun -x PIDDIR \
		"$WORKERS/usr1.sh" >"$out" 2>&1 &
	local salloc=$!
	for i in $(seq 1 150); do
		[ "$(grep -c '<stdout>:ready' "$out")" -eq 3 ] && break
		sleep 0.1
	done
	pid=$(pgrep -o -f "^$HVDRUN ")
	[ -n "$pid" ]
	kill -USR1 "$pid"
	wait "$salloc" || status=$?
	[ "$status" -eq 0 ]
	run cat "$out"
	for i in 0 1 2; do
		assert_line "[$i]<stdout>:USR1 yes, child alive"
	done
	wait_no_leftovers
}

@test "--launcher srun: hosts that are not the allocation's nodes are named, nothing starts; outside an allocation it is refused" {
	# The allocation is pinned: a free choice of nodes may take ns3
	# (while ns2 still ends an earlier job), and the list would be valid.
	run slurm_exec salloc -Q -N2 -w ns1,ns2 --ntasks-per-node=1 "$HVDRUN" --launcher srun --start-timeout 10 \
		-H ns1:1,ns3:1 -x PIDDIR sh -c 'echo $$ >"$PIDDIR/w$HOROVOD_RANK"'
	assert_failure 125
	assert_output --partial "hvdrun: srun ended before 'ns1', 'ns3' answered (its own message is above)"
	[ -z "$(ls "$PIDDIR")" ]
	run "$HVDRUN" --launcher srun -np 1 true
	assert_failure 2
	assert_output --partial "--launcher srun: not inside a Slurm allocation (SLURM_JOB_ID is not set)"
}

@test "--launcher srun: a node's agent opens two pipes a worker beyond the soft limit srun hands on, and each worker gets that limit back; a node whose hard limit has no room for its workers is named, and nothing starts" {
	# srun hands the caller's soft limit on to the step (Slurm's
	# PropagateResourceLimits): 64, for 40 workers on one node. Before,
	# the agent stayed under it and some ranks failed to start ('out of
	# file descriptors'). Each worker waits until all have started.
	run slurm_exec bash -c "ulimit -Sn 64 && exec salloc -Q -N1 -w ns1 -O -n40 '$HVDRUN' --launcher srun -x PIDDIR sh -c 'echo \$HOROVOD_RANK \$(ulimit -Sn); touch \$PIDDIR/w\$HOROVOD_RANK; for t in \$(seq 100); do [ \$(ls \$PIDDIR | wc -l) -ge 40 ] && exit; sleep 0.1; done; exit 1'"
	assert_success
	rm -f "$PIDDIR"/*
	assert_line "[0]<stdout>:0 64"
	assert_line "[39]<stdout>:39 64"
	# The node's hard limit is slurmd's, which the step inherits: 96 for
	# a while, under a soft limit of 48 (lowering it cannot be undone:
	# slurmd is started again). 40 workers fit (the agent's count holds:
	# each of them starts); 41 are refused.
	slurm_slurmd_restart 1 prlimit --nofile=48:96
	run slurm_exec bash -c "ulimit -Sn 48 && exec salloc -Q -N1 -w ns1 -O -n40 '$HVDRUN' --launcher srun sh -c 'echo \$HOROVOD_RANK \$(ulimit -Hn)'"
	local fit=$status out=$output
	run slurm_exec bash -c "ulimit -Sn 48 && exec salloc -Q -N1 -w ns1 -O -n41 '$HVDRUN' --launcher srun -x PIDDIR sh -c 'echo \$\$ >\$PIDDIR/w\$HOROVOD_RANK'"
	slurm_slurmd_restart 1
	assert_failure 125
	assert_output --partial "hvdrun: node 'ns1': 41 workers need about 98 open files of hvdrun's agent there (two each); it may open 96 (the hard limit on open files that slurmd sets there): raise LimitNOFILE in slurmd's service, or start fewer workers there"
	[ -z "$(ls "$PIDDIR")" ]
	assert_no_agent
	echo "$out"
	[ "$fit" = 0 ]
	[[ "$out" == *"[39]<stdout>:39 96"* ]]
}

@test "--launcher srun: a node whose hvdrun speaks a newer agent protocol is named with both versions, and nothing starts" {
	# One path on every node, $RIG/hvdrun: this hvdrun, but on ns1 (in
	# its slurmd's own mount namespace, for a while) one of another
	# agent protocol and version, whose node agent says so in its hello.
	local OTHER VERSION PROTO
	rig_other_hvdrun
	cp "$HVDRUN" "$RIG/hvdrun"
	slurm_slurmd_restart 1 unshare --mount --propagation private sh -c \
		'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh "$OTHER" "$RIG/hvdrun"
	run slurm_exec salloc -Q -N2 -w ns1,ns2 -O -n2 "$RIG/hvdrun" --launcher srun \
		-x PIDDIR sh -c 'echo $$ >$PIDDIR/w$HOROVOD_RANK'
	slurm_slurmd_restart 1
	rm -f "$RIG/hvdrun"
	assert_failure 125
	assert_output --partial "hvdrun: node 'ns1': its hvdrun ($VERSION-other, agent protocol 999) is newer than this one ($VERSION, agent protocol $PROTO), which cannot start ranks through it: install the same hvdrun on every node"
	[ -z "$(ls "$PIDDIR")" ]
	assert_no_agent
}

@test "--launcher srun: hvdrun counts one open file a worker of another node (its rendezvous connection; the output comes through srun): 28 workers start under its hard limit of 64, and 40 are refused before anything starts" {
	# Counted as over SSH (two a worker), 28 were refused: 88 > 64.
	run slurm_exec bash -c "ulimit -n 64 && exec salloc -Q -N2 -O -n28 '$HVDRUN' --launcher srun '$ROOT/build/tests/hvd_selftest' resets 1 0"
	assert_success
	refute_output --partial FAIL
	assert_line "[27]<stdout>:rank 27: ok"
	run slurm_exec bash -c "ulimit -n 64 && exec salloc -Q -N2 -O -n40 '$HVDRUN' --launcher srun -x PIDDIR sh -c 'echo \$\$ >\$PIDDIR/w\$HOROVOD_RANK'"
	assert_failure 125
	assert_output --partial "hvdrun: 40 workers need about 72 open files of hvdrun (one a worker of another node, through srun); it may open 64 (its hard limit on open files, ulimit -Hn): raise it, or start fewer workers"
	[ -z "$(ls "$PIDDIR")" ]
}

@test "--launcher srun: a node whose slurmd does not answer is named within the start timeout, and nothing starts" {
	local slurmd
	slurmd=$(pgrep -f "slurmd -D -N ns3 -f $RIG_SLURM/slurm.conf")
	[ -n "$slurmd" ]
	kill -STOP "$slurmd"
	run slurm_exec timeout 60 salloc -Q -N3 --ntasks-per-node=1 "$HVDRUN" --launcher srun \
		--start-timeout 3 -x PIDDIR sh -c 'echo $$ >"$PIDDIR/w$HOROVOD_RANK"'
	kill -CONT "$slurmd"
	assert_failure 125
	assert_output --partial "hvdrun: srun: node 'ns3' did not start the agent within 3 s (start timeout)"
	[ -z "$(ls "$PIDDIR")" ]
	assert_no_agent
}

@test "--launcher srun, elastic: a node's worker killed: its node leaves and the others go on; after its cool-down a step of its own starts its workers again and the job grows back; then the other node, the same" {
	local want w
	want=$("$ELASTIC" 1200 5 0 | sed -n 's/.*weights \(.*\)/\1/p')
	# Worker 3 dies at 1 s, worker 1 (the other node) at 4 s: the
	# second return's step comes once the first step has ended.
	ELASTIC_KILL="3:1 1:4" run slurm_exec salloc -Q -N2 --ntasks-per-node=2 "$HVDRUN" --launcher srun \
		-x PIDDIR -x ELASTIC_KILL --min-np 2 --blacklist-cooldown-range 1 1 \
		"$WORKERS/elastic_kill.sh" "$ELASTIC" 1200 5 10
	assert_success
	assert_line --regexp "^hvdrun: worker 3 on ns[1-3] was killed by signal 9 \(Killed\); its host leaves the job and 2 workers go on \(generation 2\); the host may return in 1 s$"
	assert_line --regexp "^hvdrun: worker 1 on ns[1-3] was killed by signal 9 \(Killed\); its host leaves the job and 2 workers go on \(generation 4\); the host may return in 1 s$"
	[ "$(grep -Ec "^hvdrun: host ns[1-3] is back after its cool-down: 2 workers start there$" <<<"$output")" -eq 2 ]
	for w in 0 1 2 3; do
		assert_line --regexp "^\[$w\]<stdout>:rank $w of 4: 1200 steps, generation 5, [0-9]+ resets, weights $want$"
	done
	wait_no_leftovers
	assert_no_agent
}
