#!/usr/bin/python3
"""torch_elastic_iris.py: examples/torch_iris.py as an elastic job, the way
a Horovod user writes one: the lines marked HVD are hvd.elastic's.

    hvdrun -np 4 -H server1:2,server2:2 --min-np 2 \\
        /usr/bin/python3 examples/torch_elastic_iris.py [CSV] [--epochs N]

When a worker fails, its host leaves the job; the others restore their
last commit (every COMMIT batches and each epoch's end), re-join as a
smaller world, take rank 0's state, and train on the part of the epoch
that nobody has done yet (ElasticSampler).
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import hvd.torch as hvd  # noqa: E402  HVD
from torch_iris import load  # noqa: E402  (the same CSV reader)

BATCH = 8  # per worker
COMMIT = 5  # batches between commits


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="?", default="examples/data/iris.csv")
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--lr", type=float, default=0.05)
    args = ap.parse_args()

    hvd.init()  # HVD
    torch.manual_seed(1)
    x, y = load(args.csv)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(),
                                torch.nn.Linear(16, 3)).double()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=args.lr),  # HVD
                                   named_parameters=model.named_parameters())
    sampler = hvd.elastic.ElasticSampler(range(len(x)), shuffle=True, seed=7)  # HVD

    def report(state):
        with torch.no_grad():
            out = model(x)
            loss = torch.nn.functional.cross_entropy(out, y).item()
            acc = (out.argmax(1) == y).double().mean().item()
        if hvd.rank() == 0:
            print("epoch %3d  loss %.4f  accuracy %.3f (%d workers)"
                  % (state.epoch, loss, acc, hvd.size()), flush=True)

    @hvd.elastic.run  # HVD: resumes from the last commit after a reset
    def train(state):
        while state.epoch < args.epochs:
            loader = torch.utils.data.DataLoader(range(len(x)), batch_size=BATCH,
                                                 sampler=state.sampler)
            for i, idx in enumerate(loader):
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
                opt.step()
                state.sampler.record_batch(i, BATCH)  # HVD: these are done
                if i % COMMIT == COMMIT - 1:
                    state.commit()  # HVD
            state.epoch += 1
            state.sampler.set_epoch(state.epoch)  # HVD
            state.commit()  # HVD
            if state.epoch % 25 == 0 or state.epoch == args.epochs:
                report(state)

    state = hvd.elastic.TorchState(model, opt, sampler=sampler, epoch=0)  # HVD
    state.register_reset_callbacks([lambda: print(  # HVD: after each reset
        "worker %s: now rank %d of %d" % (os.environ.get("HVD_WORKER_ID", "0"), hvd.rank(),
                                          hvd.size()), flush=True)])
    train(state)
    hvd.shutdown()


if __name__ == "__main__":
    main()
