"""hvd.run, Horovod's launcher as a Python call: the function runs on
every rank of a job hvdrun starts, the return values come back in rank
order, and a worker's exception is raised in the caller, naming its
rank. Run from a plain process (tests/python/run's jobs)."""

import os
import subprocess
import sys
import textwrap
import time
import warnings

import cloudpickle
import pytest

import hvd

# This module is not importable on the workers: its functions travel by
# value, as a script's (__main__'s) do.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def allreduce_rank(offset, scale=1):
    import torch

    import hvd.torch as h

    h.init()
    total = h.allreduce(torch.tensor([float(h.rank() + offset)]), op=h.Sum).item()
    rank, size = h.rank(), h.size()
    h.shutdown()
    return rank, size, total * scale


def test_results_in_rank_order_with_args_and_kwargs():
    out = hvd.run(allreduce_rank, args=(1,), kwargs={"scale": 2}, num_proc=3)
    assert out == [(r, 3, 2 * (1 + 2 + 3)) for r in range(3)]


def test_over_two_hosts_and_horovods_deprecated_names():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = hvd.run(allreduce_rank, args=(0,), np=2, hosts="localhost:1,127.0.0.1:1",
                      use_gloo=True)
    assert any(issubclass(x.category, DeprecationWarning) for x in w)
    assert out == [(0, 2, 1.0), (1, 2, 1.0)]


def test_under_mpirun_every_rank_returns():
    # mpirun gives its own rank variables, not Horovod's.
    out = hvd.run(allreduce_rank, args=(0,), num_proc=2, use_mpi=True)
    assert out == [(0, 2, 1.0), (1, 2, 1.0)]


def fail_on_rank_1():
    if os.environ["HOROVOD_RANK"] == "1":
        raise KeyError("no such sample")
    return "fine"


def test_a_workers_exception_is_raised_naming_its_rank():
    with pytest.raises(RuntimeError, match="rank 1 raised KeyError") as e:
        hvd.run(fail_on_rank_1, num_proc=2)
    assert isinstance(e.value.__cause__, KeyError)


def a_lock_on_rank_1():
    import threading

    return threading.Lock() if os.environ["HOROVOD_RANK"] == "1" else "fine"


def test_a_return_value_that_cannot_be_pickled_is_named():
    with pytest.raises(RuntimeError, match=r"rank 1 returned a lock, which cannot be "
                       r"pickled \(TypeError: cannot pickle '_thread.lock' object\)") as e:
        hvd.run(a_lock_on_rank_1, num_proc=2)
    assert isinstance(e.value.__cause__, TypeError)


def a_value_of_a_module_only_workers_import(folder):
    sys.path.insert(0, folder)
    import only_on_workers

    return only_on_workers.Sample()


def test_a_return_value_the_caller_cannot_unpickle_is_named(tmp_path):
    (tmp_path / "only_on_workers.py").write_text("class Sample:\n    pass\n")
    with pytest.raises(RuntimeError, match="rank 0's return value cannot be unpickled here "
                       r"\(ModuleNotFoundError: No module named 'only_on_workers'\)"):
        hvd.run(a_value_of_a_module_only_workers_import, args=(str(tmp_path),), num_proc=2)


def test_a_closure_travels_by_value():
    data = {"weights": [1, 2, 3]}
    assert hvd.run(lambda: sum(data["weights"]), num_proc=2) == [6, 6]


def test_bad_arguments_as_horovod():
    with pytest.raises(ValueError, match="hosts and hostfile"):
        hvd.run(len, hosts="localhost:1", hostfile="/dev/null")
    with pytest.raises(ValueError, match="use_gloo and use_mpi"):
        hvd.run(len, use_gloo=True, use_mpi=True)


def test_arguments_hvdrun_refuses_raise_a_value_error_with_its_line(capfd):
    with pytest.raises(ValueError, match=r"^hvd\.run: empty entry in host list 'localhost:1,,'$"):
        hvd.run(len, num_proc=2, hosts="localhost:1,,")
    # In run()'s own words: its arguments, not hvdrun's flags.
    with pytest.raises(ValueError, match=r"^hvd\.run: num_proc=3 is more than the 2 slots of the "
                       r"host list$"):
        hvd.run(len, num_proc=3, hosts="localhost:2")
    with pytest.raises(ValueError, match=r"^hvd\.run: bad value '0' for num_proc \(want"):
        hvd.run(len, num_proc=0)
    with pytest.raises(ValueError, match=r"^hvd\.run: bad value '-1' for min_num_proc"):
        hvd.run(len, num_proc=1, min_num_proc=-1)
    # hvdrun's lines still reach the caller's standard error.
    assert "hvdrun: bad value '0' for --num-proc" in capfd.readouterr().err


def exit_3_on_rank_1():
    if os.environ["HOROVOD_RANK"] == "1":
        os._exit(3)
    return "fine"


def test_a_job_that_fails_raises_with_hvdruns_last_line():
    # Rank 0's value may or may not have come before the job stopped.
    with pytest.raises(RuntimeError, match=r"^hvd\.run: hvdrun exited with status 3 before every "
                       r"rank returned \(ranks \[0?\] did\): rank 1 on localhost exited with "
                       r"code 3; stopping the job$"):
        hvd.run(exit_3_on_rank_1, num_proc=2)


def ended(pid):
    """Whether process pid has ended (gone, or a zombie not yet reaped)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_an_interrupt_of_the_caller_alone_ends_the_job(tmp_path):
    # A notebook's interrupt: SIGINT to the calling process only, not to
    # hvdrun (as a terminal's Ctrl-C would be). The workers sleep 60 s.
    script = tmp_path / "interrupted.py"
    script.write_text(textwrap.dedent("""
        import os, signal, sys, threading, time
        import hvd

        def sleeper(d):
            with open(os.path.join(d, "w" + os.environ["HOROVOD_RANK"]), "w") as f:
                f.write(str(os.getpid()))
            time.sleep(60)

        def interrupt(d):
            for _ in range(600):
                if all(os.path.exists(os.path.join(d, w)) for w in ("w0", "w1")):
                    break
                time.sleep(0.1)
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=interrupt, args=(sys.argv[1],), daemon=True).start()
        try:
            hvd.run(sleeper, args=(sys.argv[1],), num_proc=2)
        except KeyboardInterrupt:
            print("interrupted")
        """))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(hvd.__file__)))
    # Its output to files: a pipe would be held open by whatever it left.
    with open(tmp_path / "out", "w") as o, open(tmp_path / "err", "w") as e:
        t0 = time.monotonic()
        subprocess.run([sys.executable, str(script), str(tmp_path)], env=env, stdout=o,
                       stderr=e, timeout=120)
        took = time.monotonic() - t0
    assert (tmp_path / "out").read_text().strip() == "interrupted", (tmp_path / "err").read_text()
    # The interrupt ends the job: it does not wait out the workers' 60 s.
    assert took < 30, "hvd.run returned %.0f s after the interrupt" % took
    pids = [int((tmp_path / w).read_text()) for w in ("w0", "w1")]
    for _ in range(100):
        if all(ended(p) for p in pids):
            break
        time.sleep(0.1)
    assert all(ended(p) for p in pids), "workers left running: %s" % pids


def latin1_on_stderr():
    os.write(2, b"caf\xe9 from rank " + os.environ["HOROVOD_RANK"].encode() + b"\n")
    return "fine"


def test_the_workers_stderr_reaches_the_caller_byte_for_byte(capfdbinary):
    assert hvd.run(latin1_on_stderr, num_proc=2) == ["fine", "fine"]
    err = capfdbinary.readouterr().err
    assert b"[1]<stderr>:caf\xe9 from rank 1\n" in err
