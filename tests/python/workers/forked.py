"""A rank that forks: a child process of its own (which asks hvd.rank(),
tries a collective, and exits the Python way, so that hvd.torch's atexit
shutdown runs in it), then a DataLoader whose worker processes are forks
that seed themselves by hvd.rank(), then a subprocess that inherits the
rank's environment and calls hvd.init(), then (rank 0) a fork that waits
on an allreduce of the rank's still in flight (rank 1 submits its part
only once rank 0's fork has ended: FORKED_MARK, a file rank 0 then
writes; a fixed pause lost the race when the host was busy). The rank's
collectives go on."""

import os
import subprocess
import sys
import time

import torch

import hvd.torch as hvd

hvd.init()
hvd.allreduce(torch.ones(3), name="before")
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    said = ["rank %d in the fork" % hvd.rank()]
    try:
        hvd.allreduce(torch.ones(3), name="in.fork")
        said.append("the fork's allreduce ran")
    except NotImplementedError as e:
        said.append("refused: %s" % e)
    os.write(w, "; ".join(said).encode())
    sys.exit(0)
os.close(w)
_, status = os.waitpid(pid, 0)
print("rank %d: fork exited %d: %s" % (hvd.rank(), status, os.read(r, 4096).decode()))
seeds = torch.utils.data.DataLoader(
    torch.arange(8), batch_size=2, num_workers=2,
    worker_init_fn=lambda w: torch.manual_seed(100 * hvd.rank() + w))
total = sum(hvd.allreduce(b.sum(), op=hvd.Sum).item() for b in seeds)
sub = subprocess.run([sys.executable, "-c", "import hvd.torch as hvd; hvd.init()"],
                     capture_output=True, text=True, timeout=60)
print("rank %d: subprocess exited %d: %s" % (hvd.rank(), sub.returncode,
                                              sub.stderr.strip().splitlines()[-1]))
mark = os.environ["FORKED_MARK"]
if hvd.rank() == 1:  # rank 0's allreduce waits for this one meanwhile
    deadline = time.monotonic() + 60
    while not os.path.exists(mark) and time.monotonic() < deadline:
        time.sleep(0.05)
flight = hvd.allreduce_async(torch.ones(3), op=hvd.Sum, name="in.flight")
if hvd.rank() == 0:
    pid = os.fork()
    if pid == 0:
        try:
            hvd.synchronize(flight)
            os._exit(0)
        except hvd.HorovodInternalError as e:
            os._exit(7 if "is a fork of rank 0's" in str(e) else 1)
    print("rank 0: a fork's wait on an allreduce in flight exited %d"
          % (os.waitpid(pid, 0)[1] >> 8))
    open(mark, "w").close()
print("rank %d: in flight %s" % (hvd.rank(), hvd.synchronize(flight).tolist()))
after = hvd.allreduce(torch.ones(3), op=hvd.Sum, name="after")
print("rank %d: after %s, batches %g" % (hvd.rank(), after.tolist(), total))
