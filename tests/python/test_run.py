"""hvd.run, Horovod's launcher as a Python call: the function runs on
every rank of a job hvdrun starts, the return values come back in rank
order, and a worker's exception is raised in the caller, naming its
rank. Run from a plain process (tests/python/run's jobs)."""

import os
import sys
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


def test_a_job_that_cannot_start_raises():
    with pytest.raises(RuntimeError, match="hvdrun exited with status 2"):
        hvd.run(len, num_proc=2, hosts="localhost:1,,")
