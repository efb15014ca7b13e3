"""hvd.run: Horovod's launcher as a Python call (horovod.run).

    results = hvd.run(train, args=(lr,), num_proc=2, hosts="localhost:2")

runs train(lr) on every rank of a job that hvdrun starts, with the same
arguments as horovodrun's flags, and returns the list of its return
values in rank order. The function and its arguments travel to the
workers with cloudpickle, and each worker's return value (or exception)
comes back the same way, over a TCP connection to a small server in the
calling process (as Horovod's key-value store): workers on other hosts
reach it as they reach hvdrun's rendezvous, trying this machine's
addresses in turn, and prove they belong to the job with a random token
that travels in their environment, never on a command line. A worker
that raises makes hvd.run raise a RuntimeError naming its rank, with the
worker's exception (when it can be unpickled) as its cause. Arguments
that hvdrun refuses (a bad host list, more ranks than slots) raise a
ValueError with hvdrun's line, its flags named as run()'s arguments
(num_proc, not -np), as Horovod's own checks do; a job that
fails otherwise, a RuntimeError ending with hvdrun's last line (the
failing rank, or why the job could not start). hvdrun's standard error
goes on to this process's sys.stderr as it comes. An interrupt of the
caller alone (a notebook's) has hvdrun end the job before it is raised. As with
Horovod, a function of the script (__main__) travels by value, one of an
importable module by reference: that module must be importable on the
workers too (or registered with cloudpickle.register_pickle_by_value).
"""

import fcntl
import hmac
import os
import re
import secrets
import shutil
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import warnings

_HERE = os.path.dirname(os.path.abspath(__file__))


def _hvdrun():
    """hvdrun's path: HVDRUN_BIN, else the one installed beside this
    package, else the source tree's build, else the PATH's."""
    forced = os.environ.get("HVDRUN_BIN")
    if forced:
        return forced
    try:
        from hvd import _install  # written by make install

        path = os.path.join(_install.BINDIR, "hvdrun")
        if os.access(path, os.X_OK):
            return path
    except (ImportError, AttributeError):
        pass
    built = os.path.normpath(os.path.join(_HERE, "..", "..", "build", "bin", "hvdrun"))
    if os.access(built, os.X_OK):
        return built
    found = shutil.which("hvdrun")
    if found is None:
        raise RuntimeError("hvd.run: hvdrun is not built or installed (make; make install), "
                           "and HVDRUN_BIN is not set")
    return found


# run()'s arguments that become hvdrun's flags with a value, in order:
# (the argument, the flag run() passes, other names hvdrun's messages
# give the same option).
_VALUED = (
    ("num_proc", "-np", "--num-proc"),
    ("hosts", "-H", "--hosts"),
    ("hostfile", "--hostfile"),
    ("min_num_proc", "--min-np"),
    ("max_num_proc", "--max-np"),
    ("slots", "--slots-per-host"),
    ("reset_limit", "--reset-limit"),
    ("cooldown_range", "--blacklist-cooldown-range"),  # two words: MIN MAX
    ("start_timeout", "--start-timeout"),
    ("ssh_port", "-p", "--ssh-port"),
    ("ssh_identity_file", "-i", "--ssh-identity-file"),
    ("output_filename", "--output-filename"),
    ("mpi_args", "--mpi-args"),
    ("network_interface", "--network-interface"),
)
# ... and those that become a flag alone when true.
_SWITCHES = (("disable_cache", "--disable-cache"), ("verbose", "--verbose"),
             ("use_gloo", "--gloo"), ("use_mpi", "--mpi"))


def _flags(given):
    """horovodrun's arguments (given: run()'s, by name) as hvdrun's flags."""
    f = []
    for name, flag, *_ in _VALUED:
        v = given[name]
        if v is not None:
            f += [flag] + ([str(x) for x in v] if name == "cooldown_range" else [str(v)])
    return f + [flag for name, flag in _SWITCHES if given[name]]


# hvdrun's names of the options _flags gives, by the argument of run() they
# come from: a refusal names the argument the caller passed.
_ARG_OF = {spelling: name for name, *spellings in _VALUED for spelling in spellings}
_FLAG = re.compile(r"(?<![\w-])(%s)(?: (\d+)\b)?(?![\w-])"
                   % "|".join(sorted(map(re.escape, _ARG_OF), key=len, reverse=True)))


def _own_words(line):
    """hvdrun's line in run()'s words: "-np 3 is more than ..." as
    "num_proc=3 is more than ...", "bad value '0' for --num-proc" as
    "... for num_proc"."""
    def arg(m):
        return _ARG_OF[m.group(1)] + ("=" + m.group(2) if m.group(2) else "")
    return _FLAG.sub(arg, line)


def run(func, args=(), kwargs=None, num_proc=1, min_num_proc=None, max_num_proc=None,
        slots=None, reset_limit=None, cooldown_range=None, hosts=None, hostfile=None,
        start_timeout=None, ssh_port=None, ssh_identity_file=None, disable_cache=None,
        output_filename=None, verbose=None, use_gloo=None, use_mpi=None, mpi_args=None,
        network_interface=None, executable=None, np=None, min_np=None, max_np=None):
    """Run func(*args, **kwargs) on every rank of a job started by hvdrun;
    return the list of its return values, in rank order (Horovod's
    horovod.run; np, min_np and max_np are its deprecated names)."""
    import cloudpickle

    if np is not None:
        if num_proc == 1:
            num_proc = np
        warnings.warn("np is deprecated, use num_proc instead", DeprecationWarning)
    if min_np is not None:
        if min_num_proc is None:
            min_num_proc = min_np
        warnings.warn("min_np is deprecated, use min_num_proc instead", DeprecationWarning)
    if max_np is not None:
        if max_num_proc is None:
            max_num_proc = max_np
        warnings.warn("max_np is deprecated, use max_num_proc instead", DeprecationWarning)
    if hosts is not None and hostfile is not None:
        raise ValueError("Argument hosts and hostfile only allow one provided.")
    if use_gloo and use_mpi:
        raise ValueError("Argument use_gloo and use_mpi only allow one set True.")
    kwargs = kwargs or {}
    flags = _flags(locals())  # run()'s arguments, the deprecated names folded in
    store = _Store(cloudpickle.dumps((func, tuple(args), dict(kwargs))))
    try:
        env = dict(os.environ)
        # The workers find this very package first, wherever it lies.
        env["PYTHONPATH"] = os.pathsep.join(
            [os.path.dirname(_HERE)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env["HVD_RUN_ADDRS"] = ",".join("%s:%d" % (a, store.port) for a in _addresses())
        env["HVD_RUN_TOKEN"] = store.token
        cmd = [_hvdrun()] + flags + ["-x", "PYTHONPATH", "-x", "HVD_RUN_ADDRS", "-x",
                                     "HVD_RUN_TOKEN", executable or sys.executable, "-m",
                                     "hvd._run_task"]
        said = _Said()
        proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE)
        relay = threading.Thread(target=said.relay, args=(proc.stderr,), daemon=True)
        relay.start()
        try:
            rc = proc.wait()
        except BaseException:
            # Interrupted here alone (a notebook's interrupt, not the
            # terminal's Ctrl-C, which hvdrun gets too): hvdrun ends the
            # job and its workers, as on its own SIGTERM.
            _stop(proc)
            raise
        finally:
            relay.join(10)
            proc.stderr.close()
        # An elastic job's number of workers is its own to change.
        expect = num_proc if min_num_proc is None and max_num_proc is None else None
        return _results(store, rc, cloudpickle, expect, said)
    finally:
        store.close()


def _stop(proc):
    """hvdrun told to end the job (SIGTERM), then waited for; killed if it
    does not end within 30 s."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class _Said:
    """hvdrun's standard error, passed on to sys.stderr line by line; its
    own last line kept (not its warnings, nor the workers' lines, which
    come prefixed with their rank), and whether it refused its usage."""

    USAGE = "Try 'hvdrun --help' for more information."

    def __init__(self):
        self.last = None
        self.usage = False

    def relay(self, pipe):
        for raw in iter(pipe.readline, b""):
            text = raw.decode("utf-8", "replace").rstrip("\n")
            if text.startswith("hvdrun: ") and not text.startswith("hvdrun: warning:"):
                self.last = text[len("hvdrun: "):]
            elif text == self.USAGE:
                self.usage = True
            try:
                # The bytes as they came where the stream takes bytes (a
                # worker's output need not be UTF-8), else the text.
                out = getattr(sys.stderr, "buffer", None)
                sys.stderr.flush()
                if out is not None:
                    out.write(raw)
                    out.flush()
                else:
                    sys.stderr.write(raw.decode("utf-8", "replace"))
                    sys.stderr.flush()
            except (OSError, ValueError):
                pass  # the caller's stream is gone: drain on, so hvdrun never blocks


def _addresses():
    """This machine's IPv4 addresses, loopback last: a worker tries each."""
    found, loop = [], []
    for _, name in socket.if_nameindex():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                packed = fcntl.ioctl(s.fileno(), 0x8915,  # SIOCGIFADDR
                                     struct.pack("256s", name[:15].encode()))
            except OSError:
                continue
        addr = socket.inet_ntoa(packed[20:24])
        (loop if addr.startswith("127.") else found).append(addr)
    return found + (loop or ["127.0.0.1"])


def _recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def _recv_blob(sock):
    (n,) = struct.unpack("!Q", _recv_exact(sock, 8))
    return _recv_exact(sock, n)


def _send_blob(sock, blob):
    sock.sendall(struct.pack("!Q", len(blob)) + blob)


class _Store:
    """The function for every worker, and what each sends back, keyed by
    rank. Messages: the token, then G (the function comes back) or R,
    rank, r|e and a blob (a result or an error)."""

    def __init__(self, func_blob):
        self.token = secrets.token_hex(32)
        self.func_blob = func_blob
        self.results, self.errors = {}, {}
        self.lock = threading.Lock()  # protects results and errors
        store = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                sock = self.request
                sock.settimeout(60)
                try:
                    token = _recv_exact(sock, len(store.token)).decode("ascii", "replace")
                    if not hmac.compare_digest(token, store.token):
                        return
                    op = _recv_exact(sock, 1)
                    if op == b"G":
                        _send_blob(sock, store.func_blob)
                    elif op == b"R":
                        rank, kind = struct.unpack("!Ic", _recv_exact(sock, 5))
                        blob = _recv_blob(sock)
                        with store.lock:
                            (store.results if kind == b"r" else store.errors)[rank] = blob
                        sock.sendall(b"K")
                except (OSError, ConnectionError, struct.error):
                    pass

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("0.0.0.0", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _results(store, rc, cloudpickle, expect, said):
    """The ranks' return values, in rank order; a worker's exception, a
    job that failed without one (said: what hvdrun said of it), or one
    whose ranks 0 to expect - 1 did not each return (expect None: whatever
    came), raised."""
    with store.lock:
        blobs, errors = dict(store.results), dict(store.errors)
    if errors:
        rank = min(errors)
        try:
            text, exc = cloudpickle.loads(errors[rank])
        except Exception:  # noqa: B902: the exception's class is not here
            text, exc = "raised an exception that cannot be unpickled here", None
        raise RuntimeError("hvd.run: rank %d %s" % (rank, text)) from exc
    results = {}
    for rank in sorted(blobs):
        try:
            results[rank] = cloudpickle.loads(blobs[rank])
        except Exception as e:  # noqa: B902: its class or module is not here
            raise RuntimeError("hvd.run: rank %d's return value cannot be unpickled here "
                               "(%s: %s)" % (rank, type(e).__name__, e)) from e
    if rc != 0 and said.usage and said.last and not results:
        raise ValueError("hvd.run: %s" % _own_words(said.last))
    if rc != 0:
        raise RuntimeError("hvd.run: hvdrun exited with status %d before every rank returned "
                           "(ranks %s did)%s" % (rc, sorted(results),
                                                 ": " + said.last if said.last else ""))
    if expect is not None and sorted(results) != list(range(expect)):
        raise RuntimeError("hvd.run: the job ended well, but ranks %s returned where ranks "
                           "0 to %d should have" % (sorted(results), expect - 1))
    return [results[r] for r in sorted(results)]
