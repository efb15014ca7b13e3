"""Whole jobs: hvdrun started by the test, as a user starts it. Ranks
that disagree, a rank killed mid-training, uneven data with join, a
missing libhvd, and the examples."""

import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
HVDRUN = os.environ.get("HVDRUN_BIN", os.path.join(ROOT, "build", "bin", "hvdrun"))
PY = sys.executable  # the Python running the tests (tests/python/run picks it)
WORKERS = os.path.join(ROOT, "tests", "python", "workers")


def hvdrun(*args, timeout=300, env=None):
    e = dict(os.environ)
    e.pop("HVD_TEST_RESULTS", None)
    e.update(env or {})
    return subprocess.run([HVDRUN, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=e)


def test_mismatch_raises_on_every_rank():
    r = hvdrun("-np", "3", PY, os.path.join(WORKERS, "mismatch.py"))
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(3):
        line = re.search(r"^\[%d\]<stdout>:rank %d raised: (.*)$" % (rank, rank), r.stdout, re.M)
        assert line, r.stdout
        msg = line.group(1)
        # Which two ranks it names depends on who reached rank 0 first.
        assert re.search(r"ranks disagree on tensor 'allreduce\.weights': rank \d asked for "
                         r"allreduce of \d float32 of shape \[\d\] op average, rank \d for "
                         r"allreduce of \d float32 of shape \[\d\] op average", msg), msg
        flags = re.search(r"^\[%d\]<stdout>:rank %d: flags raised: (.*)$" % (rank, rank),
                          r.stdout, re.M)
        assert flags and "'allreduce.flags'" in flags.group(1), r.stdout
        assert "uint8" in flags.group(1) and "bool" in flags.group(1), flags.group(1)
        assert "[%d]<stdout>:rank %d: after [3.0, 3.0, 3.0]" % (rank, rank) in r.stdout


def test_killed_rank_raises_on_the_others():
    r = hvdrun("-np", "3", PY, os.path.join(WORKERS, "killed.py"), timeout=120)
    # The first failure hvdrun sees decides its status: the kill (137), or
    # a survivor that raised first (3).
    assert r.returncode in (137, 3), r.stdout + r.stderr
    for rank in (0, 2):
        line = re.search(r"^\[%d\]<stdout>:rank %d: HorovodInternalError after (\d+) ms: (.*)$"
                         % (rank, rank), r.stdout, re.M)
        assert line, r.stdout + r.stderr
        assert int(line.group(1)) < 10000
    assert "finished without error" not in r.stdout


def test_is_homogeneous_is_the_jobs_on_every_rank():
    """Hosts of 3, 1 and 2 ranks: no rank's own local size times cross
    size decides it (rank 4's is 2 x 3, the job's size); as Horovod's,
    every rank answers False. Hosts of 2 and 2: True."""
    code = ("import sys; sys.path.insert(0, %r); import hvd.torch as hvd; hvd.init(); "
            "print('rank', hvd.rank(), 'homogeneous', hvd.is_homogeneous()); hvd.shutdown()"
            % os.path.join(ROOT, "python"))
    for hosts, n, want in (("localhost:3,127.0.0.1:1,localhost.localdomain:2", 6, False),
                           ("localhost:2,127.0.0.1:2", 4, True)):
        r = hvdrun("-H", hosts, PY, "-c", code, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        for rank in range(n):
            assert "[%d]<stdout>:rank %d homogeneous %s" % (rank, rank, want) in r.stdout, \
                r.stdout


@pytest.mark.parametrize("elastic", [False, True], ids=["static", "elastic"])
def test_a_fork_of_a_rank_neither_hangs_nor_harms_it(elastic, tmp_path):
    """A process forked from a rank (a subprocess, DataLoader workers)
    answers hvd.rank(), refuses collectives with a reason, and exits
    through hvd.torch's atexit shutdown without touching the rank's
    engine: before, that shutdown waited for a background thread the
    fork does not have, and the rank waited for the fork. A subprocess
    with the rank's environment is refused at hvd.init(): before, it
    registered as the rank starting a new round, and hvdrun stopped the
    job at its start timeout; in an elastic job it took the worker's
    place at the rendezvous (a reset of the job) and waited there."""
    more = ("--min-np", "1", "--max-np", "2", "-H", "localhost:2") if elastic else ()
    who = "worker" if elastic else "rank"
    r = hvdrun("-np", "2", *more, "-x", "PYTHONPATH=" + os.path.join(ROOT, "python"),
               "-x", "FORKED_MARK=" + str(tmp_path / "forked"),
               PY, os.path.join(WORKERS, "forked.py"), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[0]<stdout>:rank 0: a fork's wait on an allreduce in flight exited 7" in r.stdout, \
        r.stdout + r.stderr
    for rank in range(2):
        assert ("[%d]<stdout>:rank %d: fork exited 0: rank %d in the fork; refused: "
                "allreduce.in.fork: this process is a fork of rank %d's, which ran hvd_init()"
                % (rank, rank, rank, rank)) in r.stdout, r.stdout + r.stderr
        assert ("[%d]<stdout>:rank %d: subprocess exited 1: hvd.exceptions.HorovodInternalError: "
                "hvd.init: %s %d of this job runs in another process of this host"
                % (rank, rank, who, rank)) in r.stdout, r.stdout + r.stderr
        assert "[%d]<stdout>:rank %d: in flight [2.0, 2.0, 2.0]" % (rank, rank) in r.stdout
        assert "[%d]<stdout>:rank %d: after [2.0, 2.0, 2.0], batches 56" % (rank, rank) \
            in r.stdout, r.stdout + r.stderr


def test_join_with_uneven_batches():
    r = hvdrun("-np", "3", PY, os.path.join(WORKERS, "uneven.py"))
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(3):
        assert "[%d]<stdout>:rank %d: joined, last 2" % (rank, rank) in r.stdout


def test_missing_libhvd_names_every_path():
    env = dict(os.environ, HVD_LIBRARY="/nonexistent/libhvd.so",
               PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([PY, "-c", "import hvd.torch"], capture_output=True, text=True, env=env)
    assert r.returncode != 0
    assert "ImportError" in r.stderr
    assert "/nonexistent/libhvd.so: no such file" in r.stderr

    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    env.pop("HVD_LIBRARY", None)
    r = subprocess.run([PY, "-c", "import hvd._lib as l; print(l.lib._name)"],
                       capture_output=True, text=True, env=env)
    assert r.stdout.strip() == os.path.join(ROOT, "build", "lib", "libhvd.so")


def test_libhvd_of_another_version_is_refused(tmp_path):
    """A libhvd that says another version (another build, whose ABI may
    differ) is refused before any of its functions is bound, naming both
    versions; the package's own version is libhvd's and hvdrun's."""
    src = tmp_path / "other.c"
    src.write_text('const char *hvd_version(void) { return "9.9.9"; }\n')
    so = tmp_path / "libhvd.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    env = dict(os.environ, HVD_LIBRARY=str(so), PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([PY, "-c", "import hvd.torch"], capture_output=True, text=True, env=env)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: hvd: libhvd at %s is version 9.9.9, this hvd package is "
                           % so), r.stderr
    assert "they come from different builds" in last

    env.pop("HVD_LIBRARY")
    r = subprocess.run([PY, "-c", "import hvd, hvd._lib as l; "
                        "print(hvd.__version__, l.lib.hvd_version().decode())"],
                       capture_output=True, text=True, env=env)
    ours = subprocess.run([HVDRUN, "--version"], capture_output=True, text=True).stdout
    version = ours.splitlines()[0].split()[1]
    assert r.stdout.split() == [version, version], r.stdout + r.stderr


def test_no_libhvd_anywhere_names_every_path(tmp_path):
    """A copy of the package far from any libhvd: the ImportError names
    each place it looked and why each failed."""
    pkg = tmp_path / "site" / "hvd"
    shutil.copytree(os.path.join(ROOT, "python", "hvd"), pkg,
                    ignore=shutil.ignore_patterns("__pycache__", "_install.py"))
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    for k in ("HVD_LIBRARY", "LD_LIBRARY_PATH"):
        env.pop(k, None)
    r = subprocess.run([PY, "-c", "import hvd.torch"], capture_output=True, text=True,
                       env=env)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: hvd: cannot load libhvd")
    assert "%s: no such file" % (tmp_path / "build" / "lib" / "libhvd.so") in last
    assert "libhvd.so.0: libhvd.so.0: cannot open shared object file" in last


def test_example_torch_iris():
    r = hvdrun("-np", "2", PY, "examples/torch_iris.py", "examples/data/iris.csv")
    assert r.returncode == 0, r.stdout + r.stderr
    acc = re.search(r"^\[0\]<stdout>:.*accuracy ([0-9.]+)", r.stdout, re.M)
    assert acc, r.stdout
    assert float(acc.group(1)) >= 0.9


def test_example_synthetic_benchmark():
    r = hvdrun("-np", "2", PY, "examples/torch_synthetic_benchmark.py", "--model", "mlp",
               "--num-iters", "2", "--num-warmup-batches", "1", "--num-batches-per-iter", "2",
               "--batch-size", "8", "--fp16-allreduce")
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^\[0\]<stdout>:Total img/sec on 2 ranks: [0-9.]+", r.stdout, re.M), \
        r.stdout


@pytest.mark.parametrize("engine", ["hvd", "--ddp", "--local", "--use-adasum"])
def test_example_synthetic_benchmark_two_passes(engine):
    """Two backward passes an optimizer step: samples count both; --local
    exchanges nothing (the ceiling the bench measures against);
    --use-adasum combines the steps by Adasum."""
    r = hvdrun("-np", "2", PY, "examples/torch_synthetic_benchmark.py", "--model", "cnn",
               "--num-iters", "2", "--num-warmup-batches", "1", "--num-batches-per-iter", "2",
               "--batch-size", "4", "--threads", "1", "--backward-passes-per-step", "2",
               *([] if engine == "hvd" else [engine]))
    assert r.returncode == 0, r.stdout + r.stderr
    want = {"hvd": "hvd.torch DistributedOptimizer", "--ddp": "DistributedDataParallel (gloo)",
            "--local": "each rank alone (no exchange)",
            "--use-adasum": "hvd.torch DistributedOptimizer (Adasum)"}[engine]
    assert re.search(r"^\[0\]<stdout>:Model: cnn .*batch size 4, 2 backward passes a step, "
                     + re.escape(want) + ", 2 ranks", r.stdout, re.M), r.stdout
    assert re.search(r"^\[0\]<stdout>:Total img/sec on 2 ranks: [0-9.]+", r.stdout, re.M), \
        r.stdout


def test_example_synthetic_benchmark_bad_arguments():
    for args, err in ((["--ddp", "--local"], "--ddp and --local exclude each other"),
                      (["--backward-passes-per-step", "0"],
                       "--backward-passes-per-step must be at least 1, not 0"),
                      (["--use-adasum", "--ddp"], "--use-adasum is hvd.torch's")):
        r = hvdrun("-np", "1", PY, "examples/torch_synthetic_benchmark.py", *args)
        assert r.returncode != 0
        assert err in r.stderr, r.stderr


def test_runs_without_hvdrun():
    """A script run alone is a job of one."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    for k in list(env):
        if k.startswith("HOROVOD_") or k.startswith("HVD_"):
            env.pop(k)
    code = ("import torch, hvd.torch as hvd; hvd.init(); "
            "print(hvd.rank(), hvd.size(), hvd.allreduce(torch.ones(2)).tolist())")
    r = subprocess.run([PY, "-c", code],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0 1 [1.0, 1.0]"
