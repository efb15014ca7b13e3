#!/usr/bin/env bats
# The command line, the config file and bad input: one line naming the bad
# text, exit status 2 (127/126 for the command), nothing started.
bats_require_minimum_version 1.5.0
load helper

@test "--help is generated from the option table, grouped by config section, and exits 0" {
	run "$HVDRUN" --help
	assert_success
	assert_line --index 0 "Usage: hvdrun [options] command [args...]"
	assert_output --partial "-np, -n, --num-proc N"
	assert_output --partial "--config-file FILE"
	assert_line "Network [network]:"
	assert_line --regexp '^  --network-check-timeout S +seconds per connection test \(default 2\)$'
	assert_line --regexp '^  --cache-capacity N +response cache entries \(default 1024\)$'
	assert_line --regexp '^  --log-level trace\|debug\|info\|warning\|error\|fatal$'
	# Short enough to read (horovodrun's other flags take a third of
	# it), and every line fits a terminal.
	[ "${#lines[@]}" -lt 120 ]
	for l in "${lines[@]}"; do [ "${#l}" -le 80 ]; done
	run "$HVDRUN" -h
	assert_success
}

@test "--version" {
	run "$HVDRUN" --version
	assert_success
	assert_line --index 0 --regexp '^hvdrun [0-9]+\.[0-9]+\.[0-9]+$'
	assert_line --index 1 --regexp '^agent protocol [0-9]+, rendezvous protocol [0-9]+$'
	[ "${#lines[@]}" -eq 2 ]
}

@test "--dry-run prints Horovod's plan, one exact line per rank" {
	run "$HVDRUN" -np 5 -H a:2,b:1,c:3 --dry-run
	assert_success
	assert_output "rank=0 host=a local_rank=0 local_size=2 cross_rank=0 cross_size=3
rank=1 host=a local_rank=1 local_size=2 cross_rank=0 cross_size=2
rank=2 host=b local_rank=0 local_size=1 cross_rank=1 cross_size=3
rank=3 host=c local_rank=0 local_size=2 cross_rank=2 cross_size=3
rank=4 host=c local_rank=1 local_size=2 cross_rank=1 cross_size=2"
}

@test "--dry-run refuses what the job would refuse, before the plan: exit 2, one line, no plan" {
	local a words
	for a in "--num-nccl-streams 2" "--elastic-timeout 5" "--binding-args -v" "--mpi --min-np 1"; do
		read -r -a words <<<"$a"
		run "$HVDRUN" "${words[@]}" -np 2 --dry-run true
		assert_failure 2
		assert_line --index 0 --regexp "^hvdrun: --"
		refute_output --partial "rank="
	done
}

@test "without hosts, -np N runs on localhost:N; without -np, every slot" {
	local np
	# horovodrun's -np, its --num-proc, and mpirun's -n and --n.
	for np in -np -n --num-proc --n; do
		run "$HVDRUN" "$np" 3 --dry-run
		assert_success
		[ "${#lines[@]}" -eq 3 ]
		assert_line --index 2 "rank=2 host=localhost local_rank=2 local_size=3 cross_rank=0 cross_size=1"
	done
	# -H, and mpirun's --host (one dash or two).
	for h in -H --hosts --host -host; do
		run "$HVDRUN" "$h" x:2,y:2 --dry-run
		assert_success
		[ "${#lines[@]}" -eq 4 ]
		assert_line --index 3 "rank=3 host=y local_rank=1 local_size=2 cross_rank=1 cross_size=2"
	done
	# --hostfile, and mpirun's -machinefile, --machinefile and -hostfile.
	printf 'x slots=1\ny slots=2\n' >"$BATS_TEST_TMPDIR/hf"
	for h in --hostfile -hostfile --machinefile -machinefile; do
		run "$HVDRUN" "$h" "$BATS_TEST_TMPDIR/hf" --dry-run
		assert_success
		[ "${#lines[@]}" -eq 3 ]
		assert_line --index 2 "rank=2 host=y local_rank=1 local_size=2 cross_rank=0 cross_size=1"
	done
	# MPICH's machinefile lines, host:N; not with slots= as well.
	printf 'x\ny:2\n' >"$BATS_TEST_TMPDIR/mf"
	run "$HVDRUN" --machinefile "$BATS_TEST_TMPDIR/mf" --dry-run
	assert_success
	assert_line --index 2 "rank=2 host=y local_rank=1 local_size=2 cross_rank=0 cross_size=1"
	printf 'x\ny:2 slots=2\n' >"$BATS_TEST_TMPDIR/mf"
	run "$HVDRUN" --machinefile "$BATS_TEST_TMPDIR/mf" --dry-run
	assert_failure 2
	assert_line --index 0 "hvdrun: $BATS_TEST_TMPDIR/mf:2: 'y:2' and 'slots=2' both give the slots: give one"
	# A batch system's node file ($PBS_NODEFILE): a line a slot.
	printf 'x\ny\ny\n' >"$BATS_TEST_TMPDIR/nodefile"
	run "$HVDRUN" --hostfile "$BATS_TEST_TMPDIR/nodefile" --dry-run
	assert_success
	[ "${#lines[@]}" -eq 3 ]
	assert_line --index 2 "rank=2 host=y local_rank=1 local_size=2 cross_rank=0 cross_size=1"
	run "$HVDRUN" --dry-run
	assert_failure 2
	assert_output --partial "give -np N, or hosts with -H or --hostfile"
}

@test "--num-proc and the single-dash -np are the same option" {
	run "$HVDRUN" --num-proc 2 --dry-run
	assert_success
	[ "${#lines[@]}" -eq 2 ]
}

@test "hostfile: comments, blank lines, max_slots ignored with a warning" {
	printf '# cluster\n\nn1 slots=2 max_slots=4\nn2   # one slot\n' >"$BATS_TEST_TMPDIR/hosts"
	run "$HVDRUN" --hostfile "$BATS_TEST_TMPDIR/hosts" --dry-run
	assert_success
	assert_line "hvdrun: warning: $BATS_TEST_TMPDIR/hosts:3: 'max_slots=4' is ignored (hvdrun starts one worker per slot)"
	assert_line "rank=2 host=n2 local_rank=0 local_size=1 cross_rank=1 cross_size=2"
}

@test "-np above the slots names both numbers and starts nothing" {
	run "$HVDRUN" -np 5 -H localhost:4 touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: -np 5 is more than the 4 slots of the host list"
	[ ! -e "$BATS_TEST_TMPDIR/started" ]
	# A host given bare has one slot (mpirun's -H host, not its cores):
	# the line says so, and how to give it more.
	run "$HVDRUN" -np 2 -H localhost touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: -np 2 is more than the 1 slot of the host list: a host given without ':N' has one slot (localhost:2 for 2)"
	[ ! -e "$BATS_TEST_TMPDIR/started" ]
	run "$HVDRUN" -np 3 -H '[::1]' true
	assert_line --index 0 "hvdrun: -np 3 is more than the 1 slot of the host list: a host given without ':N' has one slot ([::1]:3 for 3)"
	run "$HVDRUN" -np 4 -H localhost:2,127.0.0.1 true
	assert_line --index 0 "hvdrun: -np 4 is more than the 3 slots of the host list (a host given without ':N' has one slot)"
	# Named as the user gave it: mpirun's -n, --num-proc=, a config
	# file's line; so are --min-np's and --stdin's numbers.
	run "$HVDRUN" -n 3 -H localhost:2 true
	assert_line --index 0 "hvdrun: -n 3 is more than the 2 slots of the host list"
	run "$HVDRUN" --num-proc=3 -H localhost:2 true
	assert_line --index 0 "hvdrun: --num-proc 3 is more than the 2 slots of the host list"
	printf '[job]\nhosts = localhost:2\nnp = 3\n' >"$BATS_TEST_TMPDIR/job.ini"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/job.ini" true
	assert_failure 2
	assert_line --index 0 "hvdrun: np = 3 ($BATS_TEST_TMPDIR/job.ini:3) is more than the 2 slots of the host list"
	printf '[job]\nstdin = 2\n[elastic]\nmin_np = 4\n' >"$BATS_TEST_TMPDIR/job.ini"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/job.ini" -np 2 true
	assert_line --index 0 "hvdrun: min_np = 4 ($BATS_TEST_TMPDIR/job.ini:4) is more than the 2 workers the job starts with"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/job.ini" --min-num-proc 1 -np 2 true
	assert_line --index 0 "hvdrun: stdin = 2 ($BATS_TEST_TMPDIR/job.ini:2): the job's ranks are 0 to 1; name one of them, or none"
}

@test "inside a Slurm allocation, its nodes and tasks per node are the hosts, -np from SLURM_NTASKS" {
	export SLURM_JOB_ID=42 SLURM_JOB_NODELIST='node[08-09],gpu1' SLURM_TASKS_PER_NODE='2,1(x2)'
	run --separate-stderr "$HVDRUN" --dry-run
	assert_success
	assert_output "rank=0 host=node08 local_rank=0 local_size=2 cross_rank=0 cross_size=3
rank=1 host=node08 local_rank=1 local_size=2 cross_rank=0 cross_size=1
rank=2 host=node09 local_rank=0 local_size=1 cross_rank=1 cross_size=3
rank=3 host=gpu1 local_rank=0 local_size=1 cross_rank=2 cross_size=3"
	[ "$stderr" = "hvdrun: hosts: the Slurm allocation of job 42 (SLURM_JOB_NODELIST=node[08-09],gpu1, SLURM_TASKS_PER_NODE=2,1(x2))" ]
	SLURM_NTASKS=3 run --separate-stderr "$HVDRUN" --dry-run
	assert_success
	[ "${#lines[@]}" -eq 3 ]
	[[ "$stderr" == *", -np from SLURM_NTASKS=3)" ]]
	run --separate-stderr "$HVDRUN" -np 2 --dry-run
	[ "${#lines[@]}" -eq 2 ]
	# Hosts given explicitly win, and --dry-run says so.
	run --separate-stderr "$HVDRUN" -H a:2 --dry-run
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	[ "$stderr" = "hvdrun: hosts: the hosts of -H, not the Slurm allocation of job 42" ]
}

@test "inside a Slurm allocation: -np above it, a malformed list, srun -n4 hvdrun: exit 2, named" {
	export SLURM_JOB_ID=42 SLURM_JOB_NODELIST='node[01-02]' SLURM_TASKS_PER_NODE='2(x2)'
	run "$HVDRUN" -np 5 --dry-run true
	assert_failure 2
	assert_line --index 0 "hvdrun: -np 5 is more than the 4 slots of Slurm job 42 (SLURM_JOB_NODELIST=node[01-02], SLURM_TASKS_PER_NODE=2(x2))"
	SLURM_JOB_NODELIST='node[01-' run "$HVDRUN" true
	assert_failure 2
	assert_line --index 0 "hvdrun: SLURM_JOB_NODELIST 'node[01-': a '[' without its ']'"
	SLURM_TASKS_PER_NODE='2(x3)' run "$HVDRUN" true
	assert_failure 2
	assert_line --index 0 "hvdrun: SLURM_TASKS_PER_NODE '2(x3)': bad repetition at '(x3)'"
	SLURM_STEP_ID=0 SLURM_STEP_NUM_TASKS=4 run "$HVDRUN" true
	assert_failure 2
	assert_output --partial "this hvdrun is one of the 4 tasks of Slurm step 42.0"
	# srun -n1 hvdrun in a 2-node allocation: the step's tasks per node.
	SLURM_STEP_ID=0 SLURM_STEP_NUM_TASKS=1 SLURM_TASKS_PER_NODE=1 run "$HVDRUN" true
	assert_failure 2
	assert_line --index 0 "hvdrun: SLURM_TASKS_PER_NODE '1': counts for 1 of the 2 nodes; inside Slurm step 42.0 these may describe the step, not the allocation: start hvdrun outside srun, or give hosts with -H"
	SLURM_JOB_NODELIST= run "$HVDRUN" true
	assert_failure 2
	assert_line --index 0 "hvdrun: inside Slurm job 42, but SLURM_JOB_NODELIST is not set: give hosts with -H or --hostfile"
}

@test "inside a Slurm allocation of this machine, the job runs with no -H and no -np" {
	SLURM_JOB_ID=7 SLURM_JOB_NODELIST=localhost SLURM_TASKS_PER_NODE=3 \
		run "$HVDRUN" sh -c 'echo "r=$HOROVOD_RANK/$HOROVOD_SIZE l=$HOROVOD_LOCAL_SIZE"'
	assert_success
	assert_output --partial "r=0/3 l=3"
	assert_output --partial "r=2/3 l=3"
}

@test "inside a PBS, Grid Engine or LSF job, its hosts are the job's and -np every slot, as mpirun takes them" {
	printf 'node1\nnode1\nnode2\nnode1\n' >"$BATS_TEST_TMPDIR/pbs"
	PBS_JOBID=123.srv PBS_NODEFILE="$BATS_TEST_TMPDIR/pbs" run --separate-stderr "$HVDRUN" --dry-run
	assert_success
	assert_output "rank=0 host=node1 local_rank=0 local_size=3 cross_rank=0 cross_size=2
rank=1 host=node1 local_rank=1 local_size=3 cross_rank=0 cross_size=1
rank=2 host=node1 local_rank=2 local_size=3 cross_rank=0 cross_size=1
rank=3 host=node2 local_rank=0 local_size=1 cross_rank=1 cross_size=2"
	[ "$stderr" = "hvdrun: hosts: the PBS allocation of job 123.srv (PBS_NODEFILE=$BATS_TEST_TMPDIR/pbs)" ]
	printf 'gpu1 2 all.q@gpu1 UNDEFINED\ngpu2 1 all.q@gpu2 0,1\n' >"$BATS_TEST_TMPDIR/pe"
	JOB_ID=77 PE_HOSTFILE="$BATS_TEST_TMPDIR/pe" run --separate-stderr "$HVDRUN" --dry-run
	assert_success
	[ "${#lines[@]}" -eq 3 ]
	assert_line --index 2 "rank=2 host=gpu2 local_rank=0 local_size=1 cross_rank=1 cross_size=2"
	[ "$stderr" = "hvdrun: hosts: the Grid Engine allocation of job 77 (PE_HOSTFILE=$BATS_TEST_TMPDIR/pe)" ]
	# JOB_ID alone is not Grid Engine: -np runs here.
	JOB_ID=77 run --separate-stderr "$HVDRUN" -np 1 --dry-run
	assert_output "rank=0 host=localhost local_rank=0 local_size=1 cross_rank=0 cross_size=1"
	LSB_JOBID=5 LSB_MCPU_HOSTS='hA 2 hB 1' run --separate-stderr "$HVDRUN" -np 2 --dry-run
	assert_success
	assert_output "rank=0 host=hA local_rank=0 local_size=2 cross_rank=0 cross_size=1
rank=1 host=hA local_rank=1 local_size=2 cross_rank=0 cross_size=1"
	[ "$stderr" = "hvdrun: hosts: the LSF allocation of job 5 (LSB_MCPU_HOSTS=hA 2 hB 1)" ]
	printf 'hA\nhB\nhB\n' >"$BATS_TEST_TMPDIR/lsf"
	LSB_JOBID=5 LSB_DJOB_HOSTFILE="$BATS_TEST_TMPDIR/lsf" run --separate-stderr "$HVDRUN" --dry-run
	[ "${#lines[@]}" -eq 3 ]
	[ "$stderr" = "hvdrun: hosts: the LSF allocation of job 5 (LSB_DJOB_HOSTFILE=$BATS_TEST_TMPDIR/lsf)" ]
	# Hosts given explicitly win, and --dry-run says so.
	PBS_JOBID=123.srv PBS_NODEFILE="$BATS_TEST_TMPDIR/pbs" run --separate-stderr "$HVDRUN" -H a:2 --dry-run
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	[ "$stderr" = "hvdrun: hosts: the hosts of -H, not the PBS allocation of job 123.srv" ]
	# Grid Engine's file given as a hostfile reads the same.
	run --separate-stderr "$HVDRUN" --hostfile "$BATS_TEST_TMPDIR/pe" --dry-run
	[ "${#lines[@]}" -eq 3 ]
}

@test "inside a PBS, Grid Engine or LSF job: -np above it, a variable missing or bad: exit 2, named, nothing started" {
	printf 'node1\nnode1\n' >"$BATS_TEST_TMPDIR/pbs"
	export PBS_JOBID=123.srv PBS_NODEFILE="$BATS_TEST_TMPDIR/pbs"
	run "$HVDRUN" -np 3 touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: -np 3 is more than the 2 slots of PBS job 123.srv (PBS_NODEFILE=$BATS_TEST_TMPDIR/pbs)"
	PBS_NODEFILE= run "$HVDRUN" touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: inside PBS job 123.srv, but PBS_NODEFILE is not set: give hosts with -H or --hostfile"
	PBS_NODEFILE="$BATS_TEST_TMPDIR/none" run "$HVDRUN" touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: inside PBS job 123.srv, PBS_NODEFILE: cannot read hostfile '$BATS_TEST_TMPDIR/none': No such file or directory (or give hosts with -H or --hostfile)"
	unset PBS_JOBID PBS_NODEFILE
	printf 'gpu1 2 all.q@gpu1 UNDEFINED\ngpu2 x all.q@gpu2 UNDEFINED\n' >"$BATS_TEST_TMPDIR/pe"
	JOB_ID=77 PE_HOSTFILE="$BATS_TEST_TMPDIR/pe" run "$HVDRUN" touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: inside Grid Engine job 77, PE_HOSTFILE: $BATS_TEST_TMPDIR/pe:2: expected KEY=VALUE, got 'x' (or give hosts with -H or --hostfile)"
	export LSB_JOBID=5
	run "$HVDRUN" touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: inside LSF job 5, but LSB_MCPU_HOSTS (or LSB_DJOB_HOSTFILE) is not set: give hosts with -H or --hostfile"
	LSB_MCPU_HOSTS='hA 2 hB' run "$HVDRUN" touch "$BATS_TEST_TMPDIR/started"
	assert_line --index 0 "hvdrun: inside LSF job 5, LSB_MCPU_HOSTS 'hA 2 hB': host 'hB' without its slot count (or give hosts with -H or --hostfile)"
	LSB_MCPU_HOSTS='hA 0' run "$HVDRUN" touch "$BATS_TEST_TMPDIR/started"
	assert_line --index 0 "hvdrun: inside LSF job 5, LSB_MCPU_HOSTS 'hA 0': bad slot count '0' of host 'hA' (want 1..4096) (or give hosts with -H or --hostfile)"
	LSB_MCPU_HOSTS='hA:2 1' run "$HVDRUN" touch "$BATS_TEST_TMPDIR/started"
	assert_line --index 0 "hvdrun: inside LSF job 5, LSB_MCPU_HOSTS 'hA:2 1': bad host name 'hA:2' (or give hosts with -H or --hostfile)"
	LSB_MCPU_HOSTS=' ' run "$HVDRUN" touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: inside LSF job 5, LSB_MCPU_HOSTS ' ' names no host (or give hosts with -H or --hostfile)"
	[ ! -e "$BATS_TEST_TMPDIR/started" ]
}

@test "inside a PBS job of this machine, the job runs with no -H and no -np" {
	printf 'localhost\nlocalhost\nlocalhost\n' >"$BATS_TEST_TMPDIR/pbs"
	PBS_JOBID=9 PBS_NODEFILE="$BATS_TEST_TMPDIR/pbs" \
		run "$HVDRUN" sh -c 'echo "r=$HOROVOD_RANK/$HOROVOD_SIZE l=$HOROVOD_LOCAL_SIZE"'
	assert_success
	assert_output --partial "r=0/3 l=3"
	assert_output --partial "r=2/3 l=3"
}

@test "malformed host lists: exit 2, the bad entry named" {
	local bad
	for bad in "a,,b" "a:0" "a:x" ":2" "a b" "[::1" "a:2,a:1" "" "a:-1" "a::2"; do
		run "$HVDRUN" -H "$bad" touch "$BATS_TEST_TMPDIR/started"
		assert_failure 2
		[ "${#lines[@]}" -eq 2 ]
		assert_line --index 1 "Try 'hvdrun --help' for more information."
	done
	run "$HVDRUN" -H "node1:4,node2:four" true
	assert_line --index 0 "hvdrun: bad slot count (want 1..4096) in host list entry 'node2:four'"
	[ ! -e "$BATS_TEST_TMPDIR/started" ]
}

@test "malformed hostfile: file and line named" {
	printf 'n1 slots=2\nn2 slots=two\n' >"$BATS_TEST_TMPDIR/hosts"
	run "$HVDRUN" --hostfile "$BATS_TEST_TMPDIR/hosts" true
	assert_failure 2
	assert_line --index 0 "hvdrun: $BATS_TEST_TMPDIR/hosts:2: bad slot count 'slots=two' (want 1..4096)"
	run "$HVDRUN" --hostfile "$BATS_TEST_TMPDIR/nope" true
	assert_failure 2
	assert_line --index 0 "hvdrun: cannot read hostfile '$BATS_TEST_TMPDIR/nope': No such file or directory"
}

@test "a timeline or autotune log rank 0 could not write (rank 0 on this machine), from an option or Horovod's variables: one line naming it, exit 2, nothing started" {
	run "$HVDRUN" -np 2 --timeline-filename "$BATS_TEST_TMPDIR/no/tl.json" touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: --timeline-filename '$BATS_TEST_TMPDIR/no/tl.json': rank 0 cannot write it (No such file or directory)"
	run "$HVDRUN" -np 2 --autotune --autotune-log-file "$BATS_TEST_TMPDIR" touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: --autotune-log-file '$BATS_TEST_TMPDIR': rank 0 cannot write it (Is a directory)"
	printf '[timeline]\nfilename = %s/no/tl.json\n' "$BATS_TEST_TMPDIR" >"$BATS_TEST_TMPDIR/t.ini"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/t.ini" -np 1 touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: 'filename' in [timeline] '$BATS_TEST_TMPDIR/no/tl.json': rank 0 cannot write it (No such file or directory)"
	# Horovod's own way, the variables: with -x, or exported.
	run "$HVDRUN" -np 2 -x HOROVOD_TIMELINE="$BATS_TEST_TMPDIR/no/tl.json" touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: HOROVOD_TIMELINE '$BATS_TEST_TMPDIR/no/tl.json': rank 0 cannot write it (No such file or directory)"
	HOROVOD_AUTOTUNE=1 HOROVOD_AUTOTUNE_LOG=$BATS_TEST_TMPDIR run "$HVDRUN" -np 2 touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: HOROVOD_AUTOTUNE_LOG '$BATS_TEST_TMPDIR': rank 0 cannot write it (Is a directory)"
	[ ! -e "$BATS_TEST_TMPDIR/started" ]
	# The option wins over the variable, as it does for the workers.
	HOROVOD_TIMELINE=$BATS_TEST_TMPDIR/no/tl.json run "$HVDRUN" -np 1 --timeline-filename "$BATS_TEST_TMPDIR/tl0.json" "$ROOT/build/examples/hello"
	assert_success
	[ -s "$BATS_TEST_TMPDIR/tl0.json" ]
	# Without autotuning no log is written, so none is checked; a
	# relative timeline is rank 0's working folder's, as hvdrun's.
	run "$HVDRUN" -np 1 --autotune-log-file "$BATS_TEST_TMPDIR/no/a.csv" true
	assert_success
	HOROVOD_AUTOTUNE=0 run "$HVDRUN" -np 1 -x HOROVOD_AUTOTUNE_LOG="$BATS_TEST_TMPDIR/no/a.csv" true
	assert_success
	cd "$BATS_TEST_TMPDIR"
	run "$HVDRUN" -np 2 --timeline-filename tl.json "$ROOT/build/examples/hello"
	assert_success
	[ -s "$BATS_TEST_TMPDIR/tl.json" ]
}

@test "bad option values, unknown options, missing values" {
	run "$HVDRUN" -np many true
	assert_failure 2
	assert_line --index 0 "hvdrun: bad value 'many' for --num-proc (want an integer from 1 to 1048576)"
	run "$HVDRUN" --cycle-time-ms fast -np 1 true
	assert_failure 2
	assert_line --index 0 --partial "bad value 'fast' for --cycle-time-ms"
	run "$HVDRUN" --log-level loud -np 1 true
	assert_line --index 0 --partial "(want one of trace, debug, info, warning, error, fatal)"
	# horovodrun's spelling: the levels in capitals.
	run "$HVDRUN" --log-level DEBUG -np 1 sh -c 'echo $HOROVOD_LOG_LEVEL'
	assert_success
	assert_output "[0]<stdout>:DEBUG"
	run "$HVDRUN" --frobnicate -np 1 true
	assert_failure 2
	assert_line --index 0 "hvdrun: unknown option '--frobnicate'"
	# A typo of a real option: the nearest named (a letter dropped,
	# two swapped, one wrong).
	run "$HVDRUN" --fusion-treshold-mb=4 -np 1 touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: unknown option '--fusion-treshold-mb=4' (did you mean '--fusion-threshold-mb'?)"
	run "$HVDRUN" --hostfiel h -np 1 touch "$BATS_TEST_TMPDIR/started"
	assert_line --index 0 "hvdrun: unknown option '--hostfiel' (did you mean '--hostfile'?)"
	run "$HVDRUN" --min-mp 2 -np 1 touch "$BATS_TEST_TMPDIR/started"
	assert_line --index 0 "hvdrun: unknown option '--min-mp' (did you mean '--min-np'?)"
	[ ! -e "$BATS_TEST_TMPDIR/started" ]
	run "$HVDRUN" -q -np 1 true
	assert_failure 2
	assert_line --index 0 "hvdrun: unknown option '-q'"
	# mpirun's and torchrun's options, from habit: what does it here.
	run "$HVDRUN" --oversubscribe -np 4 touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: --oversubscribe is mpirun's option: hvdrun starts one worker a slot: give the hosts the slots they have (-H localhost:8, or 'host slots=8' in a hostfile)"
	run "$HVDRUN" -mca btl self,tcp -np 1 true
	assert_line --index 0 --partial "hvdrun: -mca is mpirun's option: an Open MPI setting: with --mpi, give it in --mpi-args"
	run "$HVDRUN" --nproc_per_node=4 true
	assert_failure 2
	assert_line --index 0 --partial "hvdrun: --nproc_per_node=4 is torchrun's option: -np N for this machine alone;"
	run "$HVDRUN" --rdzv-endpoint h:29400 -np 1 true
	assert_line --index 0 --partial "is torchrun's option: hvdrun runs the job's rendezvous itself"
	run "$HVDRUN" -N 4 -H localhost true
	assert_failure 2
	assert_line --index 0 --partial "hvdrun: -N is mpirun's option: hvdrun places ranks as Horovod does"
	[ ! -e "$BATS_TEST_TMPDIR/started" ]
	run "$HVDRUN" -np
	assert_failure 2
	assert_line --index 0 "hvdrun: option '-np' needs a value"
	# Bad text is quoted as typed, but for bytes a terminal would act
	# on or not show (an escape sequence, a tab, a byte-order mark).
	run "$HVDRUN" -H $'node\e[31m1:2\t,\xef\xbb\xbfb' --dry-run true
	assert_failure 2
	assert_line --index 0 "hvdrun: bad host name in host list entry 'node\x1b[31m1:2\x09'"
	run "$HVDRUN" -H $'\xef\xbb\xbfnode1' --dry-run true
	assert_line --index 0 "hvdrun: bad host name in host list entry '\xef\xbb\xbfnode1'"
	# A key or SSH config that cannot be read: named, before anything
	# starts, where libssh went on without it (trying the default keys).
	run "$HVDRUN" -i "$BATS_TEST_TMPDIR/id_typo" -H localhost:1 touch started
	assert_failure 2
	assert_line --index 0 "hvdrun: cannot read the SSH identity file '$BATS_TEST_TMPDIR/id_typo' (-i, [ssh] identity_file): No such file or directory"
	run "$HVDRUN" --ssh-config "$BATS_TEST_TMPDIR" -np 1 touch started
	assert_failure 2
	assert_line --index 0 "hvdrun: cannot read the SSH config file '$BATS_TEST_TMPDIR' (--ssh-config, [ssh] config_file): Is a directory"
	printf '[ssh]\nidentity_file = ~/.ssh/id_typo_%s\n' "$$" >"$BATS_TEST_TMPDIR/job.ini"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/job.ini" -np 1 touch started
	assert_failure 2
	assert_line --index 0 --partial "hvdrun: cannot read the SSH identity file '"
	# A value left out: the next option is not taken for it.
	cd "$BATS_TEST_TMPDIR"
	run "$HVDRUN" --output-filename -np 2 touch started
	assert_failure 2
	assert_line --index 0 "hvdrun: option '--output-filename' needs a value, not the option '-np'"
	run "$HVDRUN" -np 1 --timeline-filename --verbose touch started
	assert_line --index 0 "hvdrun: option '--timeline-filename' needs a value, not the option '--verbose'"
	run "$HVDRUN" -H -np 2 touch started
	assert_line --index 0 "hvdrun: option '-H' needs a value, not the option '-np'"
	run "$HVDRUN" -np 1 --log-level --hosts=localhost touch started
	assert_line --index 0 "hvdrun: option '--log-level' needs a value, not the option '--hosts=localhost'"
	run "$HVDRUN" -np 1 --output-filename --verb touch started
	assert_line --index 0 "hvdrun: option '--output-filename' needs a value, not the option '--verb'"
	[ ! -e started ] && [ ! -e ./-np ] && [ ! -e ./--verbose ] && [ ! -e ./--verb ]
	# A value that only starts with a dash is a value.
	run "$HVDRUN" -np 1 --stdin -1 true
	assert_line --index 0 "hvdrun: bad value '-1' for --stdin (want a rank, 0 or more, or none)"
	# mpirun's own words are --mpi-args' values; '=' takes any value.
	run "$HVDRUN" -np 1 --mpi-args -x --dry-run true
	assert_success
	run "$HVDRUN" -np 1 --output-filename=-np --dry-run true
	assert_success
	run "$HVDRUN" -H a --hostfile f true
	assert_failure 2
	assert_line --index 0 "hvdrun: give -H or --hostfile, not both"
	# Named as typed, less the value.
	run "$HVDRUN" --hosts=a --machinefile f true
	assert_failure 2
	assert_line --index 0 "hvdrun: give --hosts or --machinefile, not both"
	run "$HVDRUN" -np 1
	assert_failure 2
	assert_line --index 0 "hvdrun: no command to run"
}

@test "-x: bad names and hvdrun's own variables are refused" {
	run "$HVDRUN" -np 1 -x 2BAD=1 true
	assert_failure 2
	assert_line --index 0 "hvdrun: bad environment variable in '-x 2BAD=1'"
	run "$HVDRUN" -np 1 -x HOROVOD_RANK=3 true
	assert_failure 2
	assert_line --index 0 "hvdrun: HOROVOD_RANK is set by hvdrun for each worker and cannot be overridden"
}

@test "a HOROVOD_ variable a typo away from one libhvd or hvdrun reads: a warning names both, and the job runs; Horovod's own others are quiet" {
	run env HOROVOD_FUSION_TRESHOLD=1 HOROVOD_CYCLE_TIMES=3 \
		HOROVOD_GPU_OPERATIONS=NCCL HOROVOD_GPU_ALLREDUCE=NCCL HOROVOD_WITH_PYTORCH=1 \
		HOROVOD_START_TIMEOUT=30 HOROVOD_SOMETHING_ELSE=1 \
		"$HVDRUN" -np 1 -x HOROVOD_CAHCE_CAPACITY=4 echo ran
	assert_success
	assert_line "hvdrun: warning: hvdrun's environment: HOROVOD_FUSION_TRESHOLD is no variable of libhvd's or hvdrun's: did you mean HOROVOD_FUSION_THRESHOLD?"
	assert_line "hvdrun: warning: hvdrun's environment: HOROVOD_CYCLE_TIMES is no variable of libhvd's or hvdrun's: did you mean HOROVOD_CYCLE_TIME?"
	assert_line "hvdrun: warning: -x or [env]: HOROVOD_CAHCE_CAPACITY is no variable of libhvd's or hvdrun's: did you mean HOROVOD_CACHE_CAPACITY?"
	assert_line "[0]<stdout>:ran"
	assert_equal "$(grep -c 'warning' <<<"$output")" 3
}

@test "a command that is not found exits 127; one that cannot run, 126" {
	run -127 "$HVDRUN" -np 2 no-such-command-xyz
	assert_failure 127
	assert_output "hvdrun: command not found: 'no-such-command-xyz'"
	run -127 "$HVDRUN" -np 2 ./no/such/path
	assert_failure 127
	printf 'echo hi\n' >"$BATS_TEST_TMPDIR/noexec"
	run "$HVDRUN" -np 2 "$BATS_TEST_TMPDIR/noexec"
	assert_failure 126
	assert_output --partial "cannot execute '$BATS_TEST_TMPDIR/noexec': Permission denied"
	run "$HVDRUN" -np 2 "$BATS_TEST_TMPDIR"
	assert_failure 126
	assert_output --partial "is a directory"
}

@test "the command's PATH from -x PATH= is where it is looked up" {
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	printf '#!/bin/sh\necho found me\n' >"$BATS_TEST_TMPDIR/bin/only-here"
	chmod +x "$BATS_TEST_TMPDIR/bin/only-here"
	run "$HVDRUN" -np 1 -x PATH="$BATS_TEST_TMPDIR/bin:/usr/bin:/bin" only-here
	assert_success
	assert_output "[0]<stdout>:found me"
}

@test "config file: settings, precedence, and hosts from the file" {
	cat >"$BATS_TEST_TMPDIR/job.ini" <<-'INI'
	[job]
	np = 3
	hosts = h1:2,h2:2
	[env]
	FROM_FILE = file value
	SHARED = from file
	[tuning]
	cycle_time_ms = 5
	INI
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/job.ini" --dry-run
	assert_success
	[ "${#lines[@]}" -eq 3 ]
	assert_line --index 2 "rank=2 host=h2 local_rank=0 local_size=1 cross_rank=1 cross_size=2"
	# The command line wins: -np and -H replace the file's.
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/job.ini" -np 2 -H localhost:2 \
		-x SHARED=cli --cycle-time-ms 2 "$WORKERS/env.sh" FROM_FILE SHARED HOROVOD_CYCLE_TIME
	assert_success
	assert_line "[1]<stdout>:FROM_FILE=file value"
	assert_line "[1]<stdout>:SHARED=cli"
	assert_line "[0]<stdout>:HOROVOD_CYCLE_TIME=2"
}

@test "config file errors name file:line and the bad text" {
	printf '[job]\nnp = 2\n[tuning]\nfusion_threshold_mb = huge\n' >"$BATS_TEST_TMPDIR/a.ini"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/a.ini" touch "$BATS_TEST_TMPDIR/started"
	assert_failure 2
	assert_line --index 0 "hvdrun: $BATS_TEST_TMPDIR/a.ini:4: bad value 'huge' for 'fusion_threshold_mb' in [tuning] (want an integer from 0 to 1048576)"
	printf '[job]\nnp = 2\n[jbo]\n' >"$BATS_TEST_TMPDIR/b.ini"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/b.ini" true
	assert_failure 2
	assert_line --index 0 --partial "b.ini:3: unknown section '[jbo]'"
	printf '[job]\nnum = 2\n' >"$BATS_TEST_TMPDIR/c.ini"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/c.ini" true
	assert_line --index 0 "hvdrun: $BATS_TEST_TMPDIR/c.ini:2: unknown key 'num' in [job]"
	# A typo of a key of the section, and a key of another section.
	printf '[tuning]\nfusion_treshold_mb = 4\n' >"$BATS_TEST_TMPDIR/c.ini"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/c.ini" true
	assert_line --index 0 "hvdrun: $BATS_TEST_TMPDIR/c.ini:2: unknown key 'fusion_treshold_mb' in [tuning] (did you mean 'fusion_threshold_mb'?)"
	printf '[job]\nmin_np = 2\n' >"$BATS_TEST_TMPDIR/c.ini"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/c.ini" true
	assert_failure 2
	assert_line --index 0 "hvdrun: $BATS_TEST_TMPDIR/c.ini:2: unknown key 'min_np' in [job] ('min_np' is a key of [elastic])"
	printf '[job]\nhosts = %0300d\n' 1 >"$BATS_TEST_TMPDIR/d.ini"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/d.ini" true
	assert_failure 2
	assert_line --index 0 --partial "d.ini:2: line too long (308 characters, at most 197)"
	printf '[job]\nhosts = a\nhostfile = b\n' >"$BATS_TEST_TMPDIR/e.ini"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/e.ini" true
	assert_failure 2
	assert_line --index 0 --partial "e.ini: give hosts or hostfile in [job], not both"
	run "$HVDRUN" --config-file "$BATS_TEST_TMPDIR/none.ini" true
	assert_failure 2
	[ ! -e "$BATS_TEST_TMPDIR/started" ]
}

@test "the shipped example config loads" {
	run "$HVDRUN" --config-file "$ROOT/config/hvdrun.ini" -np 2 --dry-run
	assert_success
	[ "${#lines[@]}" -eq 2 ]
}
