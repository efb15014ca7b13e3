"""Elastic PyTorch jobs under hvdrun --min-np: a job of 4 workers on two
hosts (this machine's names localhost and 127.0.0.1) loses a worker
mid-epoch; its host leaves and the other two finish every epoch from the
last commit, with hvd.elastic.run, TorchState and ElasticSampler; and
examples/torch_elastic_iris.py with a worker killed from outside; and a
host that returns after its cool-down, the job growing back to 4."""

import json
import os
import re
import signal
import subprocess

from test_jobs import HVDRUN, PY, ROOT, WORKERS, hvdrun

TRAIN = os.path.join(WORKERS, "elastic_train.py")
HOSTS = ["-np", "4", "-H", "localhost:2,127.0.0.1:2"]


def job(kill, min_np=2, how="KILL"):
    return hvdrun(*HOSTS, "--min-np", str(min_np), "env", how + "=" + kill, PY, TRAIN,
                  timeout=120)


def batches(out):
    """The indices each epoch's batches trained on, over all workers."""
    seen = {}
    for epoch, idx in re.findall(r"^\[\d+\]<stdout>:batch (\d+) ([\d,]+)$", out, re.M):
        seen.setdefault(int(epoch), set()).update(int(i) for i in idx.split(","))
    return seen


def no_worker_left(script=TRAIN):
    r = subprocess.run(["pgrep", "-f", script], capture_output=True, text=True)
    return r.stdout.strip() == ""


def finished(r, workers):
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    done = re.findall(r"^\[(\d)\]<stdout>:worker (\d): done: rank (\d) of (\d), generation (\d+), "
                      r"epoch (\d+), loss (\S+) from (\S+), weights (\w+)$", r.stdout, re.M)
    assert sorted(int(d[1]) for d in done) == workers, out
    for prefix, worker, rank, size, gen, epoch, loss, first, _ in done:
        # Output keeps the worker's first label; its rank is the new one.
        assert prefix == worker and size == "2" and gen == "2" and epoch == "3", out
        assert float(loss) < float(first) / 100, out
    assert len({d[8] for d in done}) == 1, "the survivors' weights differ:\n" + out
    # No sample of any epoch was skipped by the reset.
    seen = batches(r.stdout)
    assert sorted(seen) == [0, 1, 2], out
    for epoch, idx in seen.items():
        assert idx == set(range(96)), "epoch %d missed %s" % (epoch, set(range(96)) - idx)
    assert no_worker_left()
    return out


def test_lost_worker_mid_epoch_the_others_finish_from_the_last_commit():
    r = job("3:8")
    out = finished(r, [0, 1])
    assert ("hvdrun: worker 3 on 127.0.0.1 was killed by signal 9 (Killed); its host leaves "
            "the job and 2 workers go on (generation 2)") in out
    for w in (0, 1):
        assert "worker %d: reset: rank %d of 2 (generation 2)" % (w, w) in r.stdout


def test_worker_raising_an_exception_is_a_reset_and_the_others_finish():
    """Horovod's own elastic test: a worker's Python exception (its exit
    runs hvd.shutdown(), then exits 1) is a lost worker for the others,
    who reset and go on, not an error that ends them."""
    r = job("3:8", how="RAISE")
    out = finished(r, [0, 1])
    assert "RuntimeError: worker 3 fails at step 8" in out
    assert ("hvdrun: worker 3 on 127.0.0.1 exited with code 1; its host leaves the job and "
            "2 workers go on (generation 2)") in out


def test_a_worker_whose_work_is_done_ends_the_job_as_horovodrun():
    """A worker that exits 0 has finished: the job is done. The others,
    reset by its leaving, are stopped instead of waiting for a world
    that will never form; the job's status is 0."""
    r = job("3:8", how="EXIT0")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "but worker 3 finished its work: the job is done, so it is stopped" in out
    assert "done:" not in r.stdout
    assert no_worker_left()


def test_rank0s_host_lost_the_other_host_goes_on_as_ranks_0_and_1():
    r = job("0:5")
    out = finished(r, [2, 3])
    assert "hvdrun: worker 0 on localhost was killed by signal 9 (Killed)" in out
    assert "worker 2: reset: rank 0 of 2 (generation 2)" in r.stdout
    assert "worker 3: reset: rank 1 of 2 (generation 2)" in r.stdout


def test_host_back_after_its_cool_down_the_job_grows_back_to_4():
    r = hvdrun(*HOSTS, "--min-np", "2", "--blacklist-cooldown-range", "1", "1", "env",
               "KILL=3:8", "STEP_MS=300", PY, TRAIN, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "hvdrun: host 127.0.0.1 is back after its cool-down: 2 workers start there" in out
    # Workers 0 and 1 went 4 -> 2 -> 4 (HostsUpdatedInterrupt at a commit);
    # 2 and 3 started again and took rank 0's state.
    for w in (0, 1):
        assert "worker %d: reset: rank %d of 2 (generation 2)" % (w, w) in r.stdout, out
        assert "worker %d: reset: rank %d of 4 (generation 3)" % (w, w) in r.stdout, out
    done = re.findall(r"^\[(\d)\]<stdout>:worker \d: done: rank (\d) of 4, generation 3, epoch 3, "
                      r"loss \S+ from \S+, weights (\w+)$", r.stdout, re.M)
    assert sorted(d[0] for d in done) == ["0", "1", "2", "3"], out
    assert len({d[2] for d in done}) == 1, out
    for epoch, idx in batches(r.stdout).items():
        assert idx == set(range(96)), "epoch %d missed %s" % (epoch, set(range(96)) - idx)
    assert no_worker_left()


def test_below_min_np_the_job_ends_with_the_failing_code():
    r = job("3:8", min_np=3)
    out = r.stdout + r.stderr
    assert r.returncode == 137, out
    assert ("hvdrun: worker 3 on 127.0.0.1 was killed by signal 9 (Killed); 2 workers would go "
            "on, fewer than --min-np 3") in out
    assert "done:" not in r.stdout
    assert no_worker_left()


def worker_pid(script, worker):
    """The pid of the process running script with HVD_WORKER_ID=worker."""
    for pid in subprocess.run(["pgrep", "-f", script], capture_output=True,
                              text=True).stdout.split():
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if ("HVD_WORKER_ID=%d" % worker).encode() in env:
            return int(pid)
    return None


def test_example_torch_elastic_iris_survives_a_worker_killed_from_outside():
    script = os.path.join("examples", "torch_elastic_iris.py")
    p = subprocess.Popen([HVDRUN, *HOSTS, "--min-np", "2", PY, script], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        for line in p.stdout:
            lines.append(line)
            if "epoch  25" in line:
                os.kill(worker_pid(script, 2), signal.SIGKILL)
        assert p.wait(timeout=120) == 0, "".join(lines)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    out = "".join(lines)
    assert "hvdrun: worker 2 on 127.0.0.1 was killed by signal 9 (Killed)" in out
    assert "[0]<stdout>:worker 0: now rank 0 of 2" in out
    acc = re.search(r"^\[0\]<stdout>:epoch 100 .*accuracy ([0-9.]+) \(2 workers\)$", out, re.M)
    assert acc and float(acc.group(1)) >= 0.9, out
    assert no_worker_left(script)


HOSTS_SCRIPT = os.path.join(WORKERS, "elastic_hosts.py")


def hosts_job(tmp_path, *extra):
    """Horovod's elastic test, driven as Horovod drives horovodrun: the
    discovery script's hosts change with the epoch rank 0 writes; both
    hosts, then localhost alone for epoch 1, then both again."""
    epoch, log = tmp_path / "epoch", tmp_path / "log"
    script = tmp_path / "discover.sh"
    script.write_text("#!/bin/sh\ncase $(cat %s 2>/dev/null || echo 0) in\n"
                      "1) echo localhost:2 ;;\n*) printf 'localhost:2\\n127.0.0.1:2\\n' ;;\n"
                      "esac\n" % epoch)
    script.chmod(0o755)
    r = hvdrun("--min-np", "2", "--host-discovery-script", str(script), *extra,
               "env", "EPOCH_FILE=%s" % epoch, "LOGFILE=%s" % log,
               "DEFAULT_HOSTS=localhost:2,127.0.0.1:2", "HOSTS_BY_EPOCH=1=localhost:2",
               PY, HOSTS_SCRIPT, timeout=120)
    states = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return r, states


def test_discovery_changes_by_epoch_as_horovods_elastic_test(tmp_path):
    """Removal and addition by the discovery script reach the workers as
    host messages (state._host_messages, which rank 0 waits on); both are
    taken at the next commit, without a lost step: sizes 4, 2, 4, 4, and
    a new rendezvous at each change."""
    r, states = hosts_job(tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "TimeoutError" not in out
    assert [s["size"] for s in states] == [4, 2, 4, 4], out
    assert [s["epoch"] for s in states] == [0, 1, 2, 3], out
    assert [s["rendezvous"] for s in states] == [1, 2, 3, 3], out
    assert ("hvdrun: host 127.0.0.1 is no longer listed by the discovery script: 2 workers go "
            "on without it from their next commit") in out
    assert "hvdrun: host 127.0.0.1 has free slots: 2 workers start there" in out
    done = re.findall(r"^\[\d\]<stdout>:worker (\d): done: rank (\d) of 4, epoch 4$", r.stdout, re.M)
    assert sorted(d[1] for d in done) == ["0", "1", "2", "3"], out
    assert no_worker_left(HOSTS_SCRIPT)


def test_reset_limit_counts_every_change_of_hosts(tmp_path):
    """As horovodrun: each new generation after the first counts toward
    --reset-limit, the discovery script's removals and additions too."""
    r, states = hosts_job(tmp_path, "--reset-limit", "1")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert ("hvdrun: host 127.0.0.1 has free slots, but the job has changed 1 times already "
            "(--reset-limit 1); stopping the job") in out
    assert [s["size"] for s in states][:2] == [4, 2], out
    assert no_worker_left(HOSTS_SCRIPT)


def test_hosts_added_while_the_first_init_runs(tmp_path):
    """The discovery script lists a second host a moment after the start,
    while the first workers are still in their first hvd.init(), outside
    hvd.elastic.run: that init joins whichever generation forms (a hosts
    notice does not fail it), and the job grows to 4."""
    runs = tmp_path / "runs"
    script = tmp_path / "discover.sh"
    script.write_text("#!/bin/sh\necho x >>%s\n"
                      "if [ $(wc -l <%s) -le 1 ]; then echo localhost:2\n"
                      "else printf 'localhost:2\\n127.0.0.1:2\\n'; fi\n" % (runs, runs))
    script.chmod(0o755)
    r = hvdrun("--min-np", "2", "--max-np", "4", "--host-discovery-script", str(script),
               "env", "EPOCHS=2", "STEP_MS=20", PY, TRAIN, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "hvd.init" not in r.stderr, out
    done = re.findall(r"^\[\d\]<stdout>:worker \d: done: rank (\d) of 4, generation \d+, epoch 2",
                      r.stdout, re.M)
    assert sorted(done) == ["0", "1", "2", "3"], out
    assert no_worker_left()


def test_process_sets_are_made_again_after_a_reset():
    """A 4-worker job with the sets of ranks 0, 1 and 2, 3 loses worker 3:
    its host leaves, and the new 2-rank world has the set of ranks 0 and 1
    again (its collectives go on), not the other."""
    script = os.path.join(WORKERS, "elastic_sets.py")
    r = hvdrun(*HOSTS, "--min-np", "2", "env", "KILL=3:4", PY, script, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    for w in (0, 1):
        assert re.search(r"^\[%d\]<stdout>:worker %d: reset: rank %d of 2 \(generation 2\): "
                         r"pair \d+ of 2, rest none$" % (w, w, w), r.stdout, re.M), out
        assert re.search(r"^\[%d\]<stdout>:worker %d: done: rank %d of 2, generation 2, "
                         r"steps 12, pair \d+ of 2, rest none$" % (w, w, w), r.stdout, re.M), out
    assert "is not in this job of 2 ranks; it is left out" in out
    assert no_worker_left(script)
