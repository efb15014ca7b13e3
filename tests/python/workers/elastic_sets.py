"""Process sets through an elastic job's resets, as a Horovod user has
them: hvd.init(process_sets="dynamic"), the set of ranks 0 and 1 ("pair")
and of ranks 2 and 3 ("rest") added, then hvd.elastic.run steps, each an
allreduce in every set this rank is in and one in the job. KILL="ID:STEP"
makes worker ID SIGKILL itself at its STEP-th step of the first
generation. After each reset, each worker prints the sets' ids and sizes:
the sets are made again in the new world where it still has their ranks
(a 2-rank world has "pair", not "rest"). At the end: "worker W: done:
rank R of N, generation G, steps S, pair P, rest Q"."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import torch  # noqa: E402

import hvd.torch as hvd  # noqa: E402
from hvd._lib import lib  # noqa: E402

STEPS = 12
WORKER = os.environ.get("HVD_WORKER_ID", os.environ.get("HOROVOD_RANK", "0"))
v = os.environ.get("KILL", "")
kill_step = int(v.split(":")[1]) if v.split(":")[0] == WORKER else -1

hvd.init(process_sets="dynamic")
pair = hvd.add_process_set([0, 1])
rest = hvd.add_process_set([2, 3])
steps_here = 0


def desc(ps):
    return "none" if ps.process_set_id is None else "%d of %d" % (ps.process_set_id, ps.size())


def on_reset():
    print("worker %s: reset: rank %d of %d (generation %d): pair %s, rest %s"
          % (WORKER, hvd.rank(), hvd.size(), lib.hvd_elastic_generation(), desc(pair),
             desc(rest)), flush=True)


@hvd.elastic.run
def train(state):
    global steps_here
    while state.step < STEPS:
        if lib.hvd_elastic_generation() == 1 and steps_here == kill_step:
            os.kill(os.getpid(), signal.SIGKILL)
        steps_here += 1
        for ps in (pair, rest):
            if ps.process_set_id is not None and ps.included():
                got = hvd.allreduce(torch.tensor([1.0]), op=hvd.Sum, name="in.set",
                                    process_set=ps)
                assert got.item() == ps.size(), (got, ps)
        got = hvd.allreduce(torch.tensor([1.0]), op=hvd.Sum, name="in.job")
        assert got.item() == hvd.size(), got
        state.step += 1
        state.commit()


state = hvd.elastic.TorchState(step=0)
state.register_reset_callbacks([on_reset])
train(state)
print("worker %s: done: rank %d of %d, generation %d, steps %d, pair %s, rest %s"
      % (WORKER, hvd.rank(), hvd.size(), lib.hvd_elastic_generation(), state.step,
         desc(pair), desc(rest)), flush=True)
