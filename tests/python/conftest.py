"""pytest under hvdrun: every rank runs the same tests in the same order,
so their collectives meet. hvd is started once per process. With
HVD_TEST_RESULTS set, each rank writes its outcomes there (rank<R>.json)
for tests/python/run to merge into TAP: a test passes only if it passed
on every rank."""

import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

_outcomes = {}


def pytest_runtest_logreport(report):
    prev = _outcomes.get(report.nodeid)
    if report.failed:
        _outcomes[report.nodeid] = "failed"
    elif report.skipped and prev != "failed":
        _outcomes[report.nodeid] = "skipped"
    elif report.when == "call" and prev is None:
        _outcomes[report.nodeid] = "passed"


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("HVD_TEST_RESULTS")
    if out:
        path = os.path.join(out, "rank%s.json" % os.environ.get("HOROVOD_RANK", "0"))
        with open(path, "w") as f:
            json.dump(_outcomes, f)


@pytest.fixture(scope="session")
def hvd():
    import hvd.torch as h

    h.init()
    yield h
    h.shutdown()


@pytest.fixture(scope="module")
def dev(hvd):
    """This rank's GPU (the one libhvd gives it: its local rank's, or the
    one GPU CUDA_VISIBLE_DEVICES shows, which ranks may share), made
    torch's current device; a skip where torch sees none or libhvd was
    built without NCCL."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("torch sees no GPU")
    if not hvd.nccl_built():
        pytest.skip("libhvd was built without CUDA and NCCL")
    gpus, shared = torch.cuda.device_count(), os.environ.get("CUDA_VISIBLE_DEVICES")
    if hvd.local_size() > gpus and not (gpus == 1 and shared):
        pytest.skip("%d ranks on this host, %d GPU(s)" % (hvd.local_size(), gpus))
    d = torch.device("cuda", 0 if gpus == 1 else hvd.local_rank())
    torch.cuda.set_device(d)
    return d
