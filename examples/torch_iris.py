#!/usr/bin/python3
"""torch_iris.py: the Iris network of `make demo` (examples/iris_mlp.c), in
PyTorch, trained data-parallel with hvd.torch. The lines marked HVD are
all it takes to make a one-process PyTorch script distributed; they are
the same lines a Horovod script has, with `import horovod.torch as hvd`.

    hvdrun -np 4 /usr/bin/python3 examples/torch_iris.py [CSV] [--epochs N]

Every rank walks the same shuffled global batches and trains on its own
shard of each; DistributedOptimizer averages the gradients.
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import hvd.torch as hvd  # noqa: E402  HVD: instead of `import horovod.torch as hvd`

BATCH = 24  # global batch: divisible by 1, 2, 3, 4, 6, 8 ranks


def load(path):
    rows = []
    with open(path) as f:
        next(f)
        for lineno, line in enumerate(f, start=2):
            parts = line.strip().split(",")
            try:
                rows.append([float(v) for v in parts[:4]] + [int(parts[4])])
            except (ValueError, IndexError):
                sys.exit("torch_iris: %s:%d: bad row '%s'" % (path, lineno, line.strip()))
    data = torch.tensor(rows, dtype=torch.float64)
    x, y = data[:, :4], data[:, 4].long()
    return (x - x.mean(0)) / x.std(0), y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="?", default="examples/data/iris.csv")
    ap.add_argument("--epochs", type=int, default=300)
    ap.add_argument("--lr", type=float, default=0.1)
    args = ap.parse_args()

    hvd.init()  # HVD
    if BATCH % hvd.size():
        sys.exit("torch_iris: %d ranks do not divide the batch of %d" % (hvd.size(), BATCH))
    torch.manual_seed(1)
    x, y = load(args.csv)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(),
                                torch.nn.Linear(16, 3)).double()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())  # HVD
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)  # HVD: rank 0's weights
    hvd.broadcast_optimizer_state(opt, root_rank=0)  # HVD

    shard = BATCH // hvd.size()
    order_rng = torch.Generator().manual_seed(7)  # the same shuffles on every rank
    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(len(x), generator=order_rng)
        for b in range(0, len(x) - BATCH + 1, BATCH):
            mine = order[b + hvd.rank() * shard:b + (hvd.rank() + 1) * shard]  # HVD: my shard
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x[mine]), y[mine]).backward()
            opt.step()
        if epoch % 50 == 0 or epoch == args.epochs:
            with torch.no_grad():
                mine = torch.arange(hvd.rank(), len(x), hvd.size())  # HVD: my share
                out = model(x[mine])
                stats = torch.stack([
                    torch.nn.functional.cross_entropy(out, y[mine], reduction="sum"),
                    (out.argmax(1) == y[mine]).sum().double()])
                stats = hvd.allreduce(stats, op=hvd.Sum, name="stats")  # HVD: over all ranks
            if hvd.rank() == 0:
                print("epoch %3d  loss %.4f  accuracy %.3f (%d ranks)"
                      % (epoch, stats[0] / len(x), stats[1] / len(x), hvd.size()), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
