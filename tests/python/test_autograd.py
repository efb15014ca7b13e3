"""The gradients of hvd.torch's differentiable collectives, Horovod's:
each checked against the gradient worked out by hand from every rank's
seeded inputs."""

import torch


def weights(r, shape, seed):
    g = torch.Generator().manual_seed(500 + 1000 * seed + r)
    return torch.rand(shape, generator=g, dtype=torch.float64)


def test_allreduce_grad(hvd):
    """loss_r = sum(w_r * allreduce(x)): d/dx_r = the same op of every w."""
    n = hvd.size()
    x = torch.ones(4, 3, dtype=torch.float64, requires_grad=True)
    for op, scale in ((hvd.Sum, 1.0), (hvd.Average, 1.0 / n)):
        x.grad = None
        y = hvd.allreduce(x, op=op, prescale_factor=2.0, postscale_factor=0.5)
        (y * weights(hvd.rank(), (4, 3), 1)).sum().backward()
        want = sum(weights(r, (4, 3), 1) for r in range(n)) * scale
        assert torch.allclose(x.grad, want)


def test_grouped_allreduce_grad(hvd):
    n = hvd.size()
    xs = [torch.ones(i + 2, dtype=torch.float64, requires_grad=True) for i in range(3)]
    ys = hvd.grouped_allreduce(xs, op=hvd.Sum)
    sum((y * weights(hvd.rank(), y.shape, 2 + i)).sum() for i, y in enumerate(ys)).backward()
    for i, x in enumerate(xs):
        want = sum(weights(r, x.shape, 2 + i) for r in range(n))
        assert torch.allclose(x.grad, want)


def test_allgather_grad(hvd):
    """Each rank gets its own rows of the averaged output gradient."""
    n, me = hvd.size(), hvd.rank()
    x = torch.ones(me + 1, 2, dtype=torch.float64, requires_grad=True)
    y = hvd.allgather(x)
    (y * weights(me, y.shape, 3)).sum().backward()
    total = sum(r + 1 for r in range(n))
    avg = sum(weights(r, (total, 2), 3) for r in range(n)) / n
    at = sum(r + 1 for r in range(me))
    assert torch.allclose(x.grad, avg[at:at + me + 1])


def test_grouped_allgather_grad(hvd):
    n, me = hvd.size(), hvd.rank()
    xs = [torch.ones(me + 1 + i, 2, dtype=torch.float64, requires_grad=True) for i in range(2)]
    ys = hvd.grouped_allgather(xs)
    sum((y * weights(me, y.shape, 4 + i)).sum() for i, y in enumerate(ys)).backward()
    for i, x in enumerate(xs):
        total = sum(r + 1 + i for r in range(n))
        avg = sum(weights(r, (total, 2), 4 + i) for r in range(n)) / n
        at = sum(r + 1 + i for r in range(me))
        assert torch.allclose(x.grad, avg[at:at + me + 1 + i])


def test_broadcast_grad(hvd):
    """The root gets the averaged gradient, every other rank zeros."""
    n = hvd.size()
    root = n - 1
    x = torch.ones(5, dtype=torch.float64, requires_grad=True)
    y = hvd.broadcast(x, root)
    (y * weights(hvd.rank(), (5,), 5)).sum().backward()
    avg = sum(weights(r, (5,), 5) for r in range(n)) / n
    want = avg if hvd.rank() == root else torch.zeros(5, dtype=torch.float64)
    assert torch.allclose(x.grad, want)


def test_alltoall_grad(hvd):
    """The gradient of each sent row is what its receiver's loss gives it."""
    n, me = hvd.size(), hvd.rank()
    splits = [(me + d) % 2 + 1 for d in range(n)]
    x = torch.zeros(sum(splits), 3, dtype=torch.float64, requires_grad=True)
    y, got = hvd.alltoall(x, splits=splits)
    (y * weights(me, y.shape, 6)).sum().backward()
    # Rows I sent to rank d sit in d's output after the rows of ranks < me.
    def sent(src, dst):
        return (src + dst) % 2 + 1

    want = []
    for d in range(n):
        w = weights(d, (sum(sent(src, d) for src in range(n)), 3), 6)
        at = sum(sent(src, d) for src in range(me))
        want.append(w[at:at + sent(me, d)])
    assert torch.allclose(x.grad, torch.cat(want))


def test_reducescatter_grad(hvd):
    """The gradient is the allgather of the outputs' gradients (times the
    size for Sum, as Horovod's), scaled as the forward was."""
    n, me = hvd.size(), hvd.rank()
    rows = 2 * n + 1
    x = torch.ones(rows, 2, dtype=torch.float64, requires_grad=True)
    counts = [rows // n + (1 if i < rows % n else 0) for i in range(n)]
    for op, scale in ((hvd.Sum, 3.0 * n), (hvd.Average, 3.0)):
        x.grad = None
        y = hvd.reducescatter(x, op=op, postscale_factor=3.0)
        (y * weights(me, y.shape, 7)).sum().backward()
        want = torch.cat([weights(r, (counts[r], 2), 7) for r in range(n)]) * scale
        assert torch.allclose(x.grad, want)


def test_grouped_reducescatter_grad(hvd):
    n, me = hvd.size(), hvd.rank()
    xs = [torch.ones(n + i, dtype=torch.float64, requires_grad=True) for i in range(2)]
    ys = hvd.grouped_reducescatter(xs, op=hvd.Sum)
    sum((y * weights(me, y.shape, 8 + i)).sum() for i, y in enumerate(ys)).backward()
    for i, x in enumerate(xs):
        rows = n + i
        counts = [rows // n + (1 if k < rows % n else 0) for k in range(n)]
        want = torch.cat([weights(r, (counts[r],), 8 + i) for r in range(n)]) * n
        assert torch.allclose(x.grad, want)
