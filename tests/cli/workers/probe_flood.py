#!/usr/bin/python3
"""tests/cli/workers/probe_flood.py HVDRUN: the network check's probe port
under a flood, for tests/cli/check.bats. Starts `HVDRUN --probe` as hvdrun
does, reads its description (records.h, probe_msg.h) for its port and
token, then opens 500 silent connections to the port, 100 that send
random bytes and 100 that send part of a token line and stall, all held
open. Then a new connection must get the probe's token at once, the
probe's own check of itself must succeed, its descriptors stay few, and
it must end when its input closes. Loopback only. Prints one line per
fact; exits 1 at the first that fails."""
import os
import select
import socket
import struct
import subprocess
import sys
import time


def fail(msg):
    print("probe flood: " + msg)
    sys.exit(1)


def read_record(f):
    head = f.read(5)
    if len(head) < 5:
        fail("the probe's output ended")
    kind, n = chr(head[0]), struct.unpack(">I", head[1:])[0]
    return kind, f.read(n).decode()


def record(kind, text):
    data = text.encode()
    return kind.encode() + struct.pack(">I", len(data)) + data


def main():
    p = subprocess.Popen([sys.argv[1], "--probe"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    port = token = None
    while True:
        kind, text = read_record(p.stdout)
        if kind == "P":
            port = int(text)
        elif kind == "K":
            token = text
        elif kind == "R":
            break
    held = []
    end = time.monotonic() + 10
    for kind, count in (("silent", 500), ("random", 100), ("stalled", 100)):
        for _ in range(count):
            if time.monotonic() > end:
                fail("out of time")
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            if kind == "random":
                s.sendall(os.urandom(64))
            elif kind == "stalled":
                s.sendall(token[:10].encode())
            held.append(s)
    t0 = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    got = s.recv(64).decode()
    s.close()
    if got != token + "\n":
        fail("a new connection got %r" % got)
    print("a new connection got the token in %.0f ms"
          % ((time.monotonic() - t0) * 1000))
    fds = len(os.listdir("/proc/%d/fd" % p.pid))
    print("the probe holds %d descriptors beside 700 strangers" % fds)
    if fds > 32:
        fail("the probe holds %d descriptors" % fds)
    p.stdin.write(record("T", "7\t127.0.0.1\t%d\t%s" % (port, token)))
    p.stdin.write(record("G", "2000"))
    p.stdin.flush()
    while True:
        kind, text = read_record(p.stdout)
        if kind == "C":
            result = text.split("\t")
            if result[:2] != ["7", "1"]:
                fail("its check of itself failed: %r" % text)
            print("its check of itself succeeded in %s us" % result[2])
        elif kind == "F":
            break
    p.stdin.close()
    try:
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("the probe did not end when its input closed")
    for s in held:
        s.close()
    print("ok")


if __name__ == "__main__":
    main()
