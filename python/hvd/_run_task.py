"""A worker of hvd.run (python -m hvd._run_task, started by hvdrun): fetch
the function from the caller's store (HVD_RUN_ADDRS, HVD_RUN_TOKEN), run
it, and send back its return value, or its exception with the traceback,
or why the value cannot be pickled (then exit 1, so that hvdrun ends the
job as after any failure)."""

import os
import socket
import struct
import sys
import traceback

import cloudpickle

from hvd.runner import _recv_blob, _send_blob


def _connect():
    """A connection to the caller's store: the first of its addresses that
    answers (another machine's loopback does not)."""
    last = None
    for addr in os.environ["HVD_RUN_ADDRS"].split(","):
        host, _, port = addr.rpartition(":")
        try:
            return socket.create_connection((host, int(port)), timeout=10)
        except OSError as e:
            last = e
    raise ConnectionError("hvd.run: cannot reach the caller at %s: %s"
                          % (os.environ["HVD_RUN_ADDRS"], last))


def _fetch():
    """The function, its arguments and keyword arguments, pickled."""
    with _connect() as sock:
        sock.settimeout(60)
        sock.sendall(os.environ["HVD_RUN_TOKEN"].encode("ascii") + b"G")
        return _recv_blob(sock)


def _rank():
    """This worker's rank (an elastic job's: its id; under mpirun, as
    use_mpi=True starts it, mpirun's, as Horovod's workers read it)."""
    for name in ("HVD_WORKER_ID", "HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        if os.environ.get(name):
            return int(os.environ[name])
    return 0


def main():
    func, args, kwargs = cloudpickle.loads(_fetch())
    try:
        value = func(*args, **kwargs)
    except BaseException as e:  # noqa: B902: every failure goes back
        _fail("raised %s: %s\n%s" % (type(e).__name__, e, traceback.format_exc()), e)
        traceback.print_exc()
        sys.exit(1)
    try:
        blob = cloudpickle.dumps(value)
    except Exception as e:  # noqa: B902: whatever the pickler raises
        what = "returned a %s, which cannot be pickled (%s: %s)" % (
            type(value).__name__, type(e).__name__, e)
        _fail(what, e)
        print("hvd.run: rank %d %s" % (_rank(), what), file=sys.stderr)
        sys.exit(1)
    _report(b"r", blob)


def _fail(text, exc):
    """Send back what went wrong: text (after "rank N "), and the exception
    itself where it can be pickled."""
    try:
        blob = cloudpickle.dumps((text, exc))
    except Exception:  # noqa: B902
        blob = cloudpickle.dumps((text, None))
    _report(b"e", blob)


def _report(kind, blob):
    with _connect() as sock:
        sock.settimeout(60)
        sock.sendall(os.environ["HVD_RUN_TOKEN"].encode("ascii") + b"R"
                     + struct.pack("!Ic", _rank(), kind))
        _send_blob(sock, blob)
        if sock.recv(1) != b"K":
            raise ConnectionError("hvd.run: the caller did not take rank %d's result"
                                  % _rank())


if __name__ == "__main__":
    main()
