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
