"""hvd.torch on CUDA tensors (libhvd's NCCL engine), against the same
serial reference as the CPU tests. Skipped where torch sees no GPU or
libhvd was built without NCCL. Each rank uses the GPU libhvd gives it:
its local rank's, or the one GPU CUDA_VISIBLE_DEVICES shows (several
ranks on one GPU: tests/cli/workers/gpu_share.sh)."""

import pytest
import torch

from test_ops import check_bool, check_complex, close, data, reference

GPU_DTYPES = [torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16,
              torch.bfloat16, torch.float32, torch.float64]


@pytest.mark.parametrize("dtype", GPU_DTYPES, ids=str)
def test_allreduce(hvd, dev, dtype):
    ops = [hvd.Sum, hvd.Min, hvd.Max] + ([hvd.Average] if dtype.is_floating_point else [])
    shape = (17, 33)
    outs = [hvd.allreduce(data(hvd.rank(), shape, dtype, seed=k).to(dev), op=op,
                          name="gpu.ar.%s.%d" % (dtype, k))
            for k, op in enumerate(ops)]
    for k, (op, out) in enumerate(zip(ops, outs)):
        assert out.device == dev and out.dtype == dtype
        assert close(out.cpu(), reference(hvd, shape, dtype, op, k), dtype), (op, out)


def test_bool(hvd, dev):
    check_bool(hvd, dev)


def test_complex(hvd, dev):
    check_complex(hvd, dev)


def test_allreduce_int16_refused(hvd, dev):
    with pytest.raises(Exception, match="int16"):
        hvd.allreduce(torch.ones(4, dtype=torch.int16, device=dev), name="gpu.i16")


def test_adasum_averages_within_the_host(hvd, dev):
    """Adasum of CUDA tensors as Horovod's NCCL build does it: each host's
    ranks average, and only the hosts combine by Adasum. On one host, the
    average (scaling factors before and after)."""
    if hvd.cross_size() != 1:
        pytest.skip("the hosts' combination is checked on the CPU stand-ins (gpu_standin.bats)")
    shapes = [(5,), (17, 33), (1000,)]
    ts = [data(hvd.rank(), s, torch.float32, seed=k).to(dev) for k, s in enumerate(shapes)]
    outs = hvd.grouped_allreduce(ts, op=hvd.Adasum, name="gpu.adasum")
    for k, (s, out) in enumerate(zip(shapes, outs)):
        assert out.device == dev
        assert close(out.cpu(), reference(hvd, s, torch.float32, hvd.Average, k), torch.float32)
    scaled = hvd.allreduce(ts[1], op=hvd.Adasum, prescale_factor=2.0, postscale_factor=0.25,
                           name="gpu.adasum.scaled")
    assert close(scaled.cpu(), reference(hvd, shapes[1], torch.float32, hvd.Average, 1) * 0.5,
                 torch.float32)


def test_adasum_orthogonal_and_parallel_as_horovod_expects(hvd, dev):
    """What Horovod's own GPU Adasum tests expect of its NCCL build:
    orthogonal vectors give their sum divided by the ranks a host (each
    host averages, the hosts' averages are orthogonal), parallel ones
    their average."""
    n, r = hvd.size(), hvd.rank()
    g = torch.Generator().manual_seed(2)
    for k, m in enumerate((n * 20 - 17, n + 2, 1 << 16)):
        q = torch.linalg.qr(torch.randn(m, n, generator=g, dtype=torch.float64))[0].float()
        out = hvd.allreduce(q[:, r].to(dev), op=hvd.Adasum, name="gpu.adasum.orth.%d" % k)
        want = q.double().sum(1) / hvd.local_size()
        assert torch.allclose(out.cpu().double(), want, rtol=1e-5, atol=1e-6), k
        p = (torch.randn(m, 1, generator=g, dtype=torch.float64)
             @ torch.randn(1, n, generator=g, dtype=torch.float64)).float()
        out = hvd.allreduce(p[:, r].to(dev), op=hvd.Adasum, name="gpu.adasum.par.%d" % k)
        want = p.double().sum(1) / n
        assert torch.allclose(out.cpu().double(), want, rtol=1e-5, atol=1e-5), k


def test_grouped_and_scaled(hvd, dev):
    ts = [data(hvd.rank(), (k + 1,), torch.float32, seed=k).to(dev) for k in range(40)]
    outs = hvd.grouped_allreduce(ts, op=hvd.Sum, name="gpu.group")
    scaled = hvd.allreduce(ts[7], op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.25,
                           name="gpu.scaled")
    for k, out in enumerate(outs):
        assert close(out.cpu(), reference(hvd, (k + 1,), torch.float32, hvd.Sum, k),
                     torch.float32)
    assert close(scaled.cpu(), reference(hvd, (8,), torch.float32, hvd.Sum, 7) * 0.5,
                 torch.float32)


def test_large_allreduce(hvd, dev):
    x = torch.full((48 << 20,), float(hvd.rank() + 1), device=dev)  # 192 MiB
    hvd.allreduce_(x, op=hvd.Sum, name="gpu.big")
    want = hvd.size() * (hvd.size() + 1) / 2
    assert torch.all(x == want).item()


@pytest.mark.parametrize("dtype", [torch.int16, torch.bfloat16, torch.float64], ids=str)
def test_broadcast_every_root(hvd, dev, dtype):
    outs = []
    for root in range(hvd.size()):
        t = data(hvd.rank(), (777,), dtype, seed=root).to(dev)
        hvd.broadcast_(t, root_rank=root, name="gpu.bc.%s.%d" % (dtype, root))
        outs.append(t)
    for root, t in enumerate(outs):
        assert torch.equal(t.cpu(), data(root, (777,), dtype, seed=root))


def test_allgather_uneven(hvd, dev):
    r = hvd.rank()
    g = hvd.allgather(data(r, (r + 1, 5), torch.float32).to(dev), name="gpu.ag")
    assert g.device == dev
    want = torch.cat([data(k, (k + 1, 5), torch.float32) for k in range(hvd.size())])
    assert torch.equal(g.cpu(), want)


def test_alltoall_and_reducescatter(hvd, dev):
    n, r = hvd.size(), hvd.rank()
    a = hvd.alltoall(torch.arange(2 * n, dtype=torch.float32, device=dev) + 100 * r,
                     name="gpu.a2a")
    rs = hvd.reducescatter(data(r, (4 * n, 3), torch.float32).to(dev), op=hvd.Sum,
                           name="gpu.rs")
    assert torch.equal(a.cpu(), torch.tensor([100.0 * k + 2 * r + j
                                              for k in range(n) for j in range(2)]))
    full = reference(hvd, (4 * n, 3), torch.float32, hvd.Sum, 0)
    assert close(rs.cpu(), full[4 * r:4 * r + 4], torch.float32)


def test_distributed_optimizer_keeps_ranks_equal(hvd, dev):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 4)).to(dev)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    g = torch.Generator().manual_seed(100 + hvd.rank())
    grads = []
    for _ in range(3):
        xb = torch.randn(16, 32, generator=g).to(dev)
        opt.zero_grad()
        model(xb).pow(2).mean().backward()
        opt.step()
        grads.append(model[0].weight.grad.clone())
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    every = hvd.allgather(flat.unsqueeze(0), name="gpu.params")
    last = hvd.allgather(grads[-1].unsqueeze(0), name="gpu.grads")
    for k in range(hvd.size()):
        assert torch.allclose(every[k], every[0])
        assert torch.allclose(last[k], last[0])


@pytest.mark.parametrize("count", [7, 40961, (1 << 20) + 7, (3 << 20) + 4099])
def test_scaled_and_average_every_element(hvd, dev, count):
    """Every element, odd counts on both sides of NCCL's block sizes (its
    one-rank scaling kernel dropped the tail before 2.29.7)."""
    x = data(hvd.rank(), (count,), torch.float16, seed=count).to(dev)
    avg = hvd.allreduce(x, op=hvd.Average, name="gpu.avg.%d" % count)
    scaled = hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0,
                           name="gpu.scaled.%d" % count)
    ref = reference(hvd, (count,), torch.float16, hvd.Sum, count).double()
    assert close(avg.cpu(), (ref / hvd.size()).half(), torch.float16)
    assert close(scaled.cpu(), (ref * 1.5).half(), torch.float16)


def test_join_uneven_batches_on_the_gpu(hvd, dev):
    """Horovod's join with CUDA tensors: rank r has r + 1 batches, then
    joins (its device, as Horovod's scripts pass it); at step k the
    average is over the ranks still giving data, fused gradients too,
    and an allgather leaves the joined ranks out."""
    n, me = hvd.size(), hvd.rank()
    got = []
    for k in range(me + 1):
        one = hvd.allreduce(torch.full((3,), float(me + 1), device=dev), name="gjoin.%d" % k)
        many = hvd.grouped_allreduce([torch.full((s,), float(me + 1), device=dev)
                                      for s in (1, 7, 1000)], name="gjoin.g.%d" % k)
        rows = hvd.allgather(torch.full((1, 2), float(me), device=dev), name="gjoin.ag.%d" % k)
        got.append((one, many, rows))
    last = hvd.join(dev.index)
    for k, (one, many, rows) in enumerate(got):
        givers = [r + 1 for r in range(n) if r + 1 > k]
        want = sum(givers) / len(givers)
        assert one.device == dev and torch.allclose(one.cpu(), torch.full((3,), want))
        assert all(torch.allclose(t.cpu(), torch.full_like(t.cpu(), want)) for t in many)
        assert rows.device == dev and rows[:, 0].tolist() == [r - 1.0 for r in givers]
    assert last == (n - 1 if n > 1 else -1)


def test_horovod_behaviours_on_the_gpu(hvd, dev):
    """Horovod's: grouped tensors on two devices raise RuntimeError; join
    takes a GPU device."""
    with pytest.raises(RuntimeError, match="one device"):
        hvd.grouped_allreduce([torch.ones(3), torch.ones(3, device=dev)])
    last = hvd.join(dev.index)
    assert last == -1 if hvd.size() == 1 else 0 <= last < hvd.size()


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=str)
def test_integers_scale_on_the_gpu_as_horovod(hvd, dev, dtype):
    """What Horovod's own prescale and postscale tests expect of integer
    CUDA tensors: scaled in float64 and truncated, the prescale on each
    rank's values before the sum, the postscale on the sum."""
    n = hvd.size()
    t = torch.arange(-8, 9, dtype=dtype) * 7
    pre = hvd.allreduce(t.to(dev), average=False, prescale_factor=0.37, name="gpu.int.pre")
    assert pre.device == dev and pre.dtype == dtype
    assert torch.equal(pre.cpu(), (t.double() * 0.37).to(dtype) * n)
    post = hvd.allreduce(t.to(dev), average=False, postscale_factor=0.37, name="gpu.int.post")
    assert torch.equal(post.cpu(), ((t * n).double() * 0.37).to(dtype))
    rows = hvd.reducescatter(t.to(dev), op=hvd.Sum, prescale_factor=0.37, name="gpu.int.rs")
    counts = [17 // n + (1 if r < 17 % n else 0) for r in range(n)]
    start = sum(counts[:hvd.rank()])
    whole = (t.double() * 0.37).to(dtype) * n
    assert rows.device == dev and torch.equal(rows.cpu(), whole[start:start + counts[hvd.rank()]])


def test_sync_batch_norm_on_cuda(hvd, dev):
    """SyncBatchNorm on CUDA tensors: torch's BatchNorm over every rank's
    batch (each rank's batch of another size)."""
    n, r = hvd.size(), hvd.rank()

    def batch(k):
        g = torch.Generator().manual_seed(7 + k)
        return torch.randn(2 + k, 3, 4, generator=g, dtype=torch.float64)

    every = [batch(k) for k in range(n)]
    sync = hvd.SyncBatchNorm(3).double().to(dev)
    ref = torch.nn.BatchNorm1d(3).double()
    x = every[r].to(dev).requires_grad_()
    out = sync(x)
    out.sum().backward()
    whole = torch.cat(every).requires_grad_()
    ref_out = ref(whole)
    ref_out.sum().backward()
    at = sum(every[k].shape[0] for k in range(r))
    mine = slice(at, at + every[r].shape[0])
    assert out.device == dev
    assert torch.allclose(out.cpu(), ref_out[mine].detach(), atol=1e-9)
    assert torch.allclose(x.grad.cpu(), whole.grad[mine], atol=1e-9)
    assert torch.allclose(sync.running_var.cpu(), ref.running_var, atol=1e-12)


def test_allreduce_follows_the_computation(hvd, dev):
    """Gradients submitted while the GPU still computes them (a long
    kernel queued before each), waited for on torch's stream
    (synchronize: hvd_wait_stream) and used there at once: every result
    is the reduction of the finished values, in any order of readiness."""
    n = 24
    a = torch.randn(3072, 3072, device=dev)
    results = []
    for step in range(2):  # the second step reuses the names at once
        hs, expect = [], []
        for k in range(n):
            # Queued, not run: the tensor's value depends on a product
            # the GPU is still computing when the allreduce is submitted.
            busy = (a @ a).sum() * 0
            t = torch.full((1000 + k,), float(hvd.rank() + k + step), device=dev) + busy
            hs.append((hvd.allreduce_async_(t, op=hvd.Sum, name="gpu.follow.%d" % k), t))
            expect.append(sum(r + k + step for r in range(hvd.size())))
        doubled = []
        for h, t in reversed(hs):
            out = hvd.synchronize(h)
            assert out is t
            doubled.append(out * 2)  # queued on the stream behind the allreduce
        results.append((expect, list(reversed(doubled))))
    for step, (expect, doubled) in enumerate(results):
        for k, d in enumerate(doubled):
            assert torch.all(d.cpu() == 2 * expect[k]), (step, k, d[:4])


def test_synchronize_on_a_side_stream(hvd, dev):
    """synchronize() under another current stream makes that stream wait."""
    side = torch.cuda.Stream(device=dev)
    t = torch.full((4096,), float(hvd.rank() + 1), device=dev)
    h = hvd.allreduce_async(t, op=hvd.Sum, name="gpu.side")
    with torch.cuda.stream(side):
        out = hvd.synchronize(h)
        got = (out + 0).cpu()
    assert torch.all(got == sum(r + 1 for r in range(hvd.size())))


def grad_scaler(**kw):
    """torch's GradScaler for CUDA: torch.amp's, or torch.cuda.amp's before 2.3."""
    if hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda", **kw)
    return torch.cuda.amp.GradScaler(**kw)


def test_mixed_precision_with_a_grad_scaler(hvd, dev):
    """torch.autocast (float16) with a GradScaler, stepped as Horovod
    documents (synchronize(), then scaler.step inside skip_synchronize()):
    the scaler unscales the average of every rank's scaled gradients and
    the step applies it; a step where one rank's gradients overflow is
    skipped on every rank, and every rank's scale backs off alike."""
    import copy

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 4)).to(dev)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    alone = copy.deepcopy(model)  # this rank's own gradients, no exchange
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    scaler = grad_scaler(init_scale=2.0 ** 12)
    g = torch.Generator().manual_seed(200 + hvd.rank())

    def loss_of(m, x):
        with torch.autocast("cuda", dtype=torch.float16):
            return m(x).float().pow(2).mean()

    def step(x):
        before = [p.detach().clone() for p in model.parameters()]
        opt.zero_grad()
        scaler.scale(loss_of(model, x)).backward()
        opt.synchronize()
        scaler.unscale_(opt)
        got = torch.cat([p.grad.flatten() for p in model.parameters()])
        with opt.skip_synchronize():
            scaler.step(opt)
        scaler.update()
        return before, got

    x = torch.randn(16, 32, generator=g).to(dev)
    scale = scaler.get_scale()
    (loss_of(alone, x) * scale).backward()
    mine = torch.cat([p.grad.flatten() for p in alone.parameters()]) / scale
    expect = hvd.allgather(mine.unsqueeze(0), name="gpu.amp.mine").mean(0)
    before, got = step(x)
    assert torch.all(torch.isfinite(got))
    assert torch.allclose(got, expect, rtol=1e-4, atol=1e-7)
    for p, b in zip(model.parameters(), before):
        assert torch.allclose(p.detach(), b - 0.1 * p.grad, rtol=1e-6, atol=1e-7)
    assert scaler.get_scale() == scale

    # The last rank's input overflows: its gradients are not finite, so
    # the average on every rank is not, and every rank skips the step.
    x = torch.randn(16, 32, generator=g).to(dev)
    if hvd.rank() == hvd.size() - 1:
        x[0, 0] = float("inf")
    before, got = step(x)
    assert not torch.all(torch.isfinite(got))
    for p, b in zip(model.parameters(), before):
        assert torch.equal(p.detach(), b)
    scales = hvd.allgather(torch.tensor([scaler.get_scale()]), name="gpu.amp.scales")
    assert scales.tolist() == [scale / 2] * hvd.size()
