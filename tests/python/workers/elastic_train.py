"""An elastic PyTorch job as a Horovod user writes one: hvd.elastic.run,
TorchState (model, optimizer, ElasticSampler, epoch), a commit every
COMMIT batches and at each epoch's end. KILL="ID:STEP" makes worker ID
SIGKILL itself when it reaches its STEP-th step of the first generation
(mid-epoch); RAISE="ID:STEP" makes it raise an exception there instead
(the interpreter's exit then runs hvd.shutdown(), and exits 1), and
EXIT0="ID:STEP" makes it leave with sys.exit(0), as if its work were
done; STEP_MS: a pause after each step; EPOCHS: how many (3).
Every batch's indices are printed ("batch EPOCH i,j,...") so that the
test can check that no sample of any epoch was skipped; at
the end each worker prints its world and a digest of its weights."""

import hashlib
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import torch  # noqa: E402

import hvd.torch as hvd  # noqa: E402
from hvd._lib import lib  # noqa: E402

EPOCHS, N, B, COMMIT = int(os.environ.get("EPOCHS", "3")), 96, 4, 3
WORKER = os.environ.get("HVD_WORKER_ID", os.environ.get("HOROVOD_RANK", "0"))


def step_of(var):
    """The STEP of VAR="ID:STEP" when ID is this worker, else -1."""
    v = os.environ.get(var, "")
    return int(v.split(":")[1]) if v.split(":")[0] == WORKER else -1


kill_step, raise_step, exit_step = step_of("KILL"), step_of("RAISE"), step_of("EXIT0")
pause = int(os.environ.get("STEP_MS", "0")) / 1000

hvd.init()
torch.manual_seed(0)
X = torch.randn(N, 8, dtype=torch.float64)
Y = X @ torch.linspace(-1, 1, 8, dtype=torch.float64) + 0.5
data = list(range(N))
model = torch.nn.Linear(8, 1).double()
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5),
                               named_parameters=model.named_parameters())
sampler = hvd.elastic.ElasticSampler(data, shuffle=True, seed=11)
steps_here = 0


def loss_all():
    with torch.no_grad():
        return float(torch.nn.functional.mse_loss(model(X).squeeze(1), Y))


def on_reset():
    print("worker %s: reset: rank %d of %d (generation %d)"
          % (WORKER, hvd.rank(), hvd.size(), lib.hvd_elastic_generation()), flush=True)


@hvd.elastic.run
def train(state):
    global steps_here
    while state.epoch < EPOCHS:
        loader = torch.utils.data.DataLoader(data, batch_size=B, sampler=state.sampler)
        for i, idx in enumerate(loader):
            if lib.hvd_elastic_generation() == 1:
                if steps_here == kill_step:
                    os.kill(os.getpid(), signal.SIGKILL)
                if steps_here == raise_step:
                    raise RuntimeError("worker %s fails at step %d" % (WORKER, steps_here))
                if steps_here == exit_step:
                    sys.exit(0)
            steps_here += 1
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(X[idx]).squeeze(1), Y[idx]).backward()
            opt.step()
            print("batch %d %s" % (state.epoch, ",".join(str(int(j)) for j in idx)), flush=True)
            state.sampler.record_batch(i, B)
            time.sleep(pause)
            if i % COMMIT == COMMIT - 1:
                state.commit()
        state.epoch += 1
        state.sampler.set_epoch(state.epoch)
        state.commit()


first = loss_all()
state = hvd.elastic.TorchState(model, opt, sampler=sampler, epoch=0)
state.register_reset_callbacks([on_reset])
train(state)
digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes()
                                 for p in model.parameters())).hexdigest()[:16]
print("worker %s: done: rank %d of %d, generation %d, epoch %d, loss %.3g from %.3g, weights %s"
      % (WORKER, hvd.rank(), hvd.size(), lib.hvd_elastic_generation(), state.epoch,
         loss_all(), first, digest), flush=True)
