#!/usr/bin/python3
"""torch_synthetic_benchmark.py: training throughput (samples per second)
of a model on synthetic data, data-parallel with hvd.torch's
DistributedOptimizer, or with --ddp with torch's DistributedDataParallel
over gloo (over NCCL with --cuda) for comparison (hvdrun sets torchrun's environment, so the same
command line starts both).

    hvdrun -np 2 /usr/bin/python3 examples/torch_synthetic_benchmark.py --model mlp
    hvdrun -np 2 /usr/bin/python3 examples/torch_synthetic_benchmark.py --model mlp --ddp

With --cuda, each rank trains on its GPU (torch.cuda.set_device(local
rank)); --ddp then runs DistributedDataParallel over NCCL, and each timed
block ends when the GPU has finished its work.

    hvdrun -np 2 /usr/bin/python3 examples/torch_synthetic_benchmark.py --model resnet50 \
        --batch-size 64 --cuda

With --backward-passes-per-step N, each optimizer step accumulates the
gradients of N batches (hvd.torch's backward_passes_per_step; DDP's
no_sync() for all but the last) and exchanges them once. With --local,
each rank trains its own copy alone and nothing is exchanged: the same
work with no communication, the ceiling that the two are measured against.

With --amp, forward and loss run under torch.autocast (float16 on the
GPU, bfloat16 on the CPU); on the GPU the loss is scaled by a GradScaler,
which hvd.torch steps as Horovod documents: optimizer.synchronize(), then
scaler.step(optimizer) inside optimizer.skip_synchronize(), so the scaler
unscales and checks the averaged gradients, not the rank's own.

With --data-workers N, a torch DataLoader with N worker processes per
rank makes each batch (random samples, augmented as training images are:
padded, cropped and flipped at random, then normalised), as a real input
pipeline competes with the ranks for the cores.

Models: mlp (about 25 M parameters in three wide layers: communication
heavy), cnn (a small ResNet-style network for 32x32 images, runs on CPUs),
and with python3-torchvision installed any of torchvision's models
(resnet18, resnet50, ...) on 224x224 images.
"""

import argparse
import contextlib
import os
import sys
import timeit

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import hvd.torch as hvd  # noqa: E402


class MLP(torch.nn.Module):
    """1024 -> 4096 -> 4096 -> 1024 -> 10: 25.2 M parameters."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(1024, 4096)
        self.fc2 = torch.nn.Linear(4096, 4096)
        self.fc3 = torch.nn.Linear(4096, 1024)
        self.fc4 = torch.nn.Linear(1024, 10)

    def forward(self, x):
        return self.fc4(F.relu(self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))))


class Block(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = torch.nn.BatchNorm2d(cout)
        self.c2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = torch.nn.BatchNorm2d(cout)
        self.skip = None
        if stride != 1 or cin != cout:
            self.skip = torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            torch.nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        return F.relu(y + (x if self.skip is None else self.skip(x)))


class CNN(torch.nn.Module):
    """A small ResNet for 32x32 images: 16-32-64 channels, 0.7 M parameters."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, 1, 1, bias=False),
                                        torch.nn.BatchNorm2d(16), torch.nn.ReLU())
        self.layers = torch.nn.Sequential(Block(16, 16, 1), Block(16, 32, 2), Block(32, 64, 2),
                                          Block(64, 64, 1))
        self.fc = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1).flatten(1))


def make_model(name):
    """The model and one synthetic input sample's shape."""
    if name == "mlp":
        return MLP(), (1024,)
    if name == "cnn":
        return CNN(), (3, 32, 32)
    try:
        import torchvision.models
    except ImportError:
        sys.exit("torch_synthetic_benchmark: --model %s needs python3-torchvision "
                 "(or use mlp or cnn)" % name)
    if not hasattr(torchvision.models, name):
        sys.exit("torch_synthetic_benchmark: torchvision has no model '%s'" % name)
    return getattr(torchvision.models, name)(), (3, 224, 224)


class SyntheticData(torch.utils.data.Dataset):
    """Random samples of a shape, each made afresh and augmented: a
    stand-in for decoding and augmenting real data in DataLoader workers."""

    def __init__(self, shape, length=1 << 20):
        self.shape, self.length = shape, length

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.rand(self.shape, generator=g)
        if len(self.shape) == 3:  # an image: pad, crop, flip
            c, h, w = self.shape
            x = F.pad(x, (4, 4, 4, 4), mode="reflect")
            top, left = (int(v) for v in torch.randint(0, 9, (2,), generator=g))
            x = x[:, top:top + h, left:left + w]
            if torch.rand(1, generator=g).item() < 0.5:
                x = x.flip(2)
        x = (x - x.mean()) / (x.std() + 1e-6)
        return x, int(torch.randint(0, 10, (1,), generator=g))


def main():
    ap = argparse.ArgumentParser(description="PyTorch synthetic benchmark over hvd.torch")
    ap.add_argument("--model", default="mlp", help="mlp, cnn, or a torchvision model")
    ap.add_argument("--batch-size", type=int, default=32, help="samples per rank per batch")
    ap.add_argument("--num-warmup-batches", type=int, default=3)
    ap.add_argument("--num-batches-per-iter", type=int, default=5)
    ap.add_argument("--num-iters", type=int, default=5)
    ap.add_argument("--fp16-allreduce", action="store_true", help="send gradients as float16")
    ap.add_argument("--use-adasum", action="store_true",
                    help="combine the ranks' steps by Adasum (op=hvd.Adasum), not an average")
    ap.add_argument("--ddp", action="store_true",
                    help="torch DistributedDataParallel over gloo (NCCL with --cuda) "
                    "instead of hvd.torch")
    ap.add_argument("--local", action="store_true",
                    help="no gradient exchange: each rank trains its own copy (the ceiling)")
    ap.add_argument("--backward-passes-per-step", type=int, default=1,
                    help="batches whose gradients each optimizer step accumulates")
    ap.add_argument("--cuda", action="store_true",
                    help="train on this rank's GPU (the local rank's)")
    ap.add_argument("--amp", action="store_true",
                    help="mixed precision: torch.autocast, and a GradScaler on the GPU")
    ap.add_argument("--data-workers", type=int, default=0,
                    help="make each batch in a DataLoader with this many worker processes "
                    "per rank (default: one fixed synthetic batch)")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch threads per rank (default: the cores shared by the ranks)")
    args = ap.parse_args()
    if args.ddp and args.local:
        ap.error("--ddp and --local exclude each other")
    if args.use_adasum and (args.ddp or args.local):
        ap.error("--use-adasum is hvd.torch's: not with --ddp or --local")
    if args.backward_passes_per_step < 1:
        ap.error("--backward-passes-per-step must be at least 1, not %d"
                 % args.backward_passes_per_step)
    passes = args.backward_passes_per_step

    hvd.init()
    local = hvd.local_size()
    torch.set_num_threads(args.threads or max(1, (os.cpu_count() or 1) // local))
    torch.manual_seed(0)
    model, shape = make_model(args.model)
    device = torch.device("cpu")
    if args.cuda:
        if not torch.cuda.is_available():
            sys.exit("torch_synthetic_benchmark: --cuda, but torch sees no GPU")
        device = torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())
        torch.cuda.set_device(device)
        model = model.to(device)
    # Adasum needs no learning rate scaled by the ranks (Horovod's advice);
    # on the GPU each host's ranks average first: scaled by those.
    scale = hvd.size()
    if args.use_adasum:
        scale = hvd.local_size() if args.cuda else 1
    opt = torch.optim.SGD(model.parameters(), lr=0.01 * scale)

    if args.ddp:
        import torch.distributed as dist

        backend = "nccl" if args.cuda else "gloo"
        dist.init_process_group(backend)
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if args.cuda else None)
        engine = "DistributedDataParallel (%s)" % backend
    elif args.local:
        engine = "each rank alone (no exchange)"
    else:
        compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
        opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(),
                                       compression=compression,
                                       backward_passes_per_step=passes,
                                       op=hvd.Adasum if args.use_adasum else hvd.Average)
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(opt, root_rank=0)
        engine = ("hvd.torch DistributedOptimizer" + (" (fp16)" if args.fp16_allreduce else "")
                  + (" (Adasum)" if args.use_adasum else ""))

    data = torch.randn(args.batch_size, *shape, device=device)
    target = torch.randint(0, 10, (args.batch_size,), device=device)
    batches = None
    if args.data_workers > 0:
        loader = torch.utils.data.DataLoader(
            SyntheticData(shape), batch_size=args.batch_size, shuffle=True,
            num_workers=args.data_workers, persistent_workers=True)
        batches = iter(loader)

    scaler = None
    if args.amp and args.cuda:
        scaler = (torch.amp.GradScaler("cuda") if hasattr(torch.amp, "GradScaler")
                  else torch.cuda.amp.GradScaler())

    def autocast():
        if not args.amp:
            return contextlib.nullcontext()
        return torch.autocast(device.type,
                              dtype=torch.float16 if args.cuda else torch.bfloat16)

    def step():
        opt.zero_grad()
        for i in range(passes):
            x, y = next(batches) if batches is not None else (data, target)
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            # DDP exchanges on the last pass only, as hvd.torch does with
            # backward_passes_per_step.
            with model.no_sync() if args.ddp and i < passes - 1 else contextlib.nullcontext():
                with autocast():
                    loss = F.cross_entropy(model(x), y)
                (scaler.scale(loss) if scaler is not None else loss).backward()
        if scaler is None:
            opt.step()
            return
        if not (args.ddp or args.local):  # hvd.torch's DistributedOptimizer
            opt.synchronize()
            with opt.skip_synchronize():
                scaler.step(opt)
        else:
            scaler.step(opt)
        scaler.update()

    def timed(n):
        """Seconds for n steps, the GPU's work included."""
        def run():
            for _ in range(n):
                step()
            if args.cuda:
                torch.cuda.synchronize()
        return timeit.timeit(run, number=1)

    def log(s):
        if hvd.rank() == 0:
            print(s, flush=True)

    params = sum(p.numel() for p in model.parameters())
    log("Model: %s (%.1f M parameters), batch size %d%s%s, %s, %d ranks, %s%s"
        % (args.model, params / 1e6, args.batch_size,
           ", mixed precision" + (" with a GradScaler" if scaler is not None else "")
           if args.amp else "",
           ", %d backward passes a step" % passes if passes > 1 else "", engine, hvd.size(),
           "on GPU" if args.cuda else "%d threads each" % torch.get_num_threads(),
           ", %d DataLoader workers each" % args.data_workers if batches is not None else ""))
    timed(args.num_warmup_batches)
    rates = []
    for i in range(args.num_iters):
        t = timed(args.num_batches_per_iter)
        rate = args.batch_size * passes * args.num_batches_per_iter / t
        log("Iter #%d: %.1f img/sec per rank" % (i, rate))
        rates.append(rate)
    r = torch.tensor(rates, dtype=torch.float64)
    mean, conf = float(r.mean()), float(1.96 * r.std()) if len(rates) > 1 else 0.0
    log("Img/sec per rank: %.1f +-%.1f" % (mean, conf))
    log("Total img/sec on %d ranks: %.1f +-%.1f" % (hvd.size(), hvd.size() * mean,
                                                   hvd.size() * conf))
    if args.ddp:
        import torch.distributed as dist

        dist.destroy_process_group()
    hvd.shutdown()


if __name__ == "__main__":
    main()
