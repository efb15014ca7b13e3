#!/usr/bin/python3
"""tests/cli/workers/flood.py PORT -- WORKER ARGS...: rank 1 floods a
port that faces the network before it runs the real worker (exec); the
other ranks run the worker at once. For tests/cli/libhvd.bats. Loopback
only, a bounded number of connections.

PORT is `rdv` (hvdrun's rendezvous port, from HVD_RENDEZVOUS)
or `mesh` (the listening port of rank 0's transport, found in /proc once
rank 0 listens). It opens SILENT connections that send nothing, RANDOM
that send 64 random bytes, and STALLED that send the first bytes of a
valid message and then nothing, all held open across the exec (the worker
inherits them, so they stay until the job ends). For `rdv` it prints
hvdrun's open descriptors and resident KiB before and after the flood, on
stderr: "flood: hvdrun fds A -> B, rss A -> B"."""
import os
import socket
import struct
import sys
import time

SILENT, RANDOM, STALLED = 500, 100, 100
DEADLINE_S = 10


def hvdrun_facts():
    ppid = os.getppid()
    fds = len(os.listdir("/proc/%d/fd" % ppid))
    with open("/proc/%d/status" % ppid) as f:
        rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
    return fds, rss


def settle():
    """hvdrun's descriptors once it has taken what it will of the flood."""
    last, same = None, 0
    end = time.monotonic() + 3
    while time.monotonic() < end and same < 5:
        now = hvdrun_facts()[0]
        same = same + 1 if now == last else 0
        last = now
        time.sleep(0.05)


def rank0_mesh_port():
    """The TCP port rank 0 (a child of hvdrun beside us) listens on."""
    ppid, me = os.getppid(), os.getpid()
    end = time.monotonic() + DEADLINE_S
    while time.monotonic() < end:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/stat" % pid) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) != ppid:
                        continue
                with open("/proc/%s/environ" % pid, "rb") as f:
                    if b"HOROVOD_RANK=0" not in f.read().split(b"\0"):
                        continue
                inodes = set()
                for fd in os.listdir("/proc/%s/fd" % pid):
                    link = os.readlink("/proc/%s/fd/%s" % (pid, fd))
                    if link.startswith("socket:["):
                        inodes.add(link[8:-1])
            except (OSError, ValueError, IndexError, StopIteration):
                continue
            if int(pid) == me:
                continue
            with open("/proc/net/tcp") as f:
                for line in f.readlines()[1:]:
                    c = line.split()
                    if c[3] == "0A" and c[9] in inodes:
                        return int(c[1].split(":")[1], 16)
        time.sleep(0.05)
    sys.exit("flood: rank 0 never listened")


def main():
    what = sys.argv[1]
    worker = sys.argv[3:]
    if os.environ.get("HOROVOD_RANK") != "1":
        os.execv(worker[0], worker)
    if what == "rdv":
        addrs = os.environ["HVD_RENDEZVOUS"].split(",")
        host, port = next(a for a in addrs
                          if a.startswith("127.")).rsplit(":", 1)
        # rank 0, size 2, a nonce, an address length: then nothing.
        header = struct.pack(">II", 0, 2) + os.urandom(32) + b"\0\x0f"
    else:
        host, port = "127.0.0.1", rank0_mesh_port()
        header = struct.pack(">I", 0)  # a rank, then never the token
    before = hvdrun_facts()
    held = []
    end = time.monotonic() + DEADLINE_S
    for kind, count in (("silent", SILENT), ("random", RANDOM),
                        ("stalled", STALLED)):
        for _ in range(count):
            if time.monotonic() > end:
                sys.exit("flood: out of time")
            s = socket.create_connection((host, int(port)), timeout=5)
            if kind == "random":
                s.sendall(os.urandom(64))
            elif kind == "stalled":
                s.sendall(header)
            held.append(s)
    if what == "rdv":
        settle()
        after = hvdrun_facts()
        print("flood: hvdrun fds %d -> %d, rss %d -> %d"
              % (before[0], after[0], before[1], after[1]), file=sys.stderr)
    for s in held:
        os.set_inheritable(s.fileno(), True)
    sys.stderr.flush()
    os.execv(worker[0], worker)


if __name__ == "__main__":
    main()
