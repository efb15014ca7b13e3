"""Rank 1 dies by SIGKILL in the middle of training: every other rank's
next step must raise HorovodInternalError within seconds."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import torch  # noqa: E402

import hvd.torch as hvd  # noqa: E402

hvd.init()
# hvdrun ends the job when rank 1 dies (SIGTERM, SIGKILL after a grace
# period): hold SIGTERM off so that the survivors can report what libhvd
# told them.
signal.signal(signal.SIGTERM, lambda *args: None)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                               named_parameters=model.named_parameters())
x, y = torch.randn(32, 64), torch.randint(0, 4, (32,))
t0 = None
try:
    for step in range(1000):
        if step == 5 and hvd.rank() == 1:
            # Die while the others wait in step() for this rank's data.
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGKILL)
        if step == 5:
            t0 = time.monotonic()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    print("rank %d: finished without error" % hvd.rank(), flush=True)
except hvd.HorovodInternalError as e:
    ms = int((time.monotonic() - (t0 or time.monotonic())) * 1000)
    print("rank %d: HorovodInternalError after %d ms: %s" % (hvd.rank(), ms, e), flush=True)
    sys.exit(3)
