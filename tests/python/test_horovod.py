"""Horovod's own expectations of horovod.torch, each checked the way
Horovod's test suite checks it: init/shutdown/init, integers scaled in
float64, shapes compared between ranks, grouped tensors on one device,
join's answer, nccl_built's version code, sparse_allreduce_async against
a dense allreduce, SyncBatchNorm against torch's BatchNorm on the whole
job's batch. Every rank runs every test in the same order."""

import pytest
import torch

INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def rank_data(r, shape, dtype, seed):
    """Values whose sums and products stay in range for every dtype (an
    overflow saturates in libhvd, where torch's casts wrap)."""
    g = torch.Generator().manual_seed(1000 * seed + r)
    bound = 10 if dtype in (torch.uint8, torch.int8) else 100
    low = 0 if dtype == torch.uint8 else -bound
    return torch.randint(low, bound, shape, generator=g).to(dtype)


def test_init_shutdown_init_keeps_the_ranks(hvd):
    """Horovod's suite calls init() in every test and shutdown() in every
    tearDown: the job must come back each time, with the same ranks."""
    rank, size = hvd.rank(), hvd.size()
    for i in range(5):
        hvd.barrier()
        hvd.shutdown()
        assert not hvd.is_initialized()
        with pytest.raises(ValueError):
            hvd.rank()
        hvd.init()
        assert (hvd.rank(), hvd.size()) == (rank, size)
        out = hvd.allreduce(torch.tensor([float(rank + i)]), op=hvd.Sum, name="reinit")
        assert out.item() == sum(r + i for r in range(size))
    hvd.init()  # while running: nothing happens
    assert hvd.is_initialized()


def scaled(t, factor):
    """Horovod's scaling: integers in float64, float16 in float32, then
    back to the tensor's type (truncated toward zero)."""
    wide = torch.float64 if not t.dtype.is_floating_point else (
        torch.float32 if t.dtype == torch.float16 else t.dtype)
    return (t.to(wide) * factor).to(t.dtype)


@pytest.mark.parametrize("dtype", INTS + [torch.float16], ids=str)
def test_integer_and_half_scaling(hvd, dtype):
    n, pre, post = hvd.size(), 0.37, 2.71
    shape = (4 * n, 3)
    mine = rank_data(hvd.rank(), shape, dtype, 11)
    every = [rank_data(r, shape, dtype, 11) for r in range(n)]
    pre_sum = hvd.allreduce(mine, op=hvd.Sum, prescale_factor=pre, name="pre")
    post_sum = hvd.allreduce(mine, op=hvd.Sum, postscale_factor=post, name="post")
    grouped = hvd.grouped_allreduce([mine, mine[:2]], op=hvd.Sum, prescale_factor=pre)
    rs = hvd.reducescatter(mine, op=hvd.Sum, prescale_factor=pre)
    grs = hvd.grouped_reducescatter([mine], op=hvd.Sum, postscale_factor=post)
    total = lambda ts: torch.stack([t.double() for t in ts]).sum(0)  # noqa: E731
    want_pre = total([scaled(t, pre) for t in every]).to(dtype)
    want_post = scaled(total(every).to(dtype), post)
    tol = dict(rtol=1e-2, atol=1e-1) if dtype == torch.float16 else dict(rtol=0, atol=0)
    assert torch.allclose(pre_sum.double(), want_pre.double(), **tol)
    assert torch.allclose(post_sum.double(), want_post.double(), **tol)
    assert torch.allclose(grouped[0].double(), want_pre.double(), **tol)
    assert torch.allclose(grouped[1].double(), want_pre[:2].double(), **tol)
    rows = 4  # 4n rows over n ranks
    me = slice(hvd.rank() * rows, (hvd.rank() + 1) * rows)
    assert torch.allclose(rs.double(), want_pre[me].double(), **tol)
    assert torch.allclose(grs[0].double(), want_post[me].double(), **tol)


def test_integer_scaling_saturates(hvd):
    x = torch.tensor([100, -100, 3], dtype=torch.int8)
    out = hvd.allreduce(x, op=hvd.Max, prescale_factor=10.0, name="saturate")
    assert out.tolist() == [127, -128, 30]


def test_shapes_differ_with_the_same_count(hvd):
    """Horovod compares shapes, not element counts: an error on every
    rank (RuntimeError, which HorovodInternalError is)."""
    if hvd.size() == 1:
        pytest.skip("needs two ranks")
    r = hvd.rank()
    shapes = [(12,), (2, 6), (3, 4), (4, 3), (6, 2)]
    with pytest.raises(RuntimeError, match="shape"):
        hvd.allreduce(torch.ones(shapes[r % len(shapes)]), name="shape.allreduce")
    with pytest.raises(RuntimeError, match="shape"):
        hvd.broadcast(torch.ones(shapes[r % len(shapes)]), 0, name="shape.broadcast")
    with pytest.raises(RuntimeError, match="shape"):
        hvd.reducescatter(torch.ones((12, 2) if r == 0 else (12, 1, 2)),
                          name="shape.reducescatter")
    # allgather: the first dimension may differ, the others may not.
    with pytest.raises(RuntimeError, match="shape"):
        hvd.allgather(torch.ones((3, 4) if r == 0 else (3, 2, 2)), name="shape.allgather")
    with pytest.raises(RuntimeError, match="shape"):
        hvd.grouped_allgather([torch.ones((2, 4) if r == 0 else (4, 2))],
                              name="shape.grouped")
    ok = hvd.allgather(torch.ones(r + 1, 2, 3), name="shape.rows")
    assert ok.shape == (sum(range(1, hvd.size() + 1)), 2, 3)
    # The job goes on after the errors.
    assert hvd.allreduce(torch.ones(2, 2), op=hvd.Sum).sum().item() == 4 * hvd.size()


def test_grouped_tensors_on_two_devices_raise(hvd):
    cpu = torch.ones(3)
    other = torch.ones(3, device="cuda" if torch.cuda.is_available() else "meta")
    for fn in (hvd.grouped_allreduce, hvd.grouped_allgather, hvd.grouped_reducescatter):
        with pytest.raises(RuntimeError, match="one device"):
            fn([cpu, other])


def test_join_answers_as_horovod(hvd):
    last = hvd.join()
    if hvd.size() == 1:
        assert last == -1  # no other rank joined last
    else:
        assert 0 <= last < hvd.size()
    # A device index (Horovod's place for its own zero tensors) is taken.
    last = hvd.join(0)
    assert last == -1 if hvd.size() == 1 else 0 <= last < hvd.size()


def test_nccl_built_is_a_version_code(hvd):
    v = hvd.nccl_built()
    assert isinstance(v, int) and not isinstance(v, bool)
    assert v == 0 or v >= 2000  # NCCL 2.x: major * 10000 + minor * 100 + patch
    assert hvd.cuda_built() == (v > 0)


def test_sparse_allreduce_async_equals_a_dense_allreduce(hvd):
    """Horovod's own check: allgather of indices and values, reduced."""
    torch.manual_seed(1234 + hvd.rank())

    def sparse(*shape):
        t = torch.rand(*shape)
        t[t < 0.8] = 0
        return t.to_sparse()

    tensors = [sparse(d0, 10) for d0 in [17, 32, 81, 12]]
    dense = [hvd.allreduce(t.to_dense(), name="dense.%d" % i) for i, t in enumerate(tensors)]
    handles = [hvd.sparse_allreduce_async(t, op=hvd.Average, name=str(i))
               for i, t in enumerate(tensors)]
    for want, handle in zip(dense, handles):
        got = handle()
        assert got.is_sparse
        assert torch.allclose(want, got.to_dense(), 1e-6)


def test_distributed_optimizer_with_sparse_gradients(hvd):
    torch.manual_seed(7)
    emb = torch.nn.Embedding(10, 3, sparse=True)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=0.1),
                                   named_parameters=emb.named_parameters())
    hvd.broadcast_parameters(emb.state_dict(), root_rank=0)
    before = emb.weight.detach().clone()
    emb(torch.tensor([hvd.rank() % 10])).sum().backward()
    opt.step()
    # Every rank's row moved by lr / size (Average over the ranks).
    want = before.clone()
    for r in range(hvd.size()):
        want[r % 10] -= 0.1 / hvd.size()
    assert torch.allclose(emb.weight.detach(), want, atol=1e-6)


@pytest.mark.parametrize("dims", [0, 1, 2, 3])
def test_sync_batch_norm_is_batch_norm_over_every_rank(hvd, dims):
    """Forward, input gradients and running statistics as torch's
    BatchNorm over the concatenation of every rank's batch (ranks with
    batches of different sizes)."""
    n, r, channels = hvd.size(), hvd.rank(), 3
    extra = [5] * dims

    def batch(k):
        g = torch.Generator().manual_seed(100 + k)
        return torch.randn([2 + k, channels] + extra, generator=g, dtype=torch.float64)

    every = [batch(k) for k in range(n)]
    x = every[r].clone().requires_grad_()
    sync = hvd.SyncBatchNorm(channels, momentum=0.3).double()
    ref = {0: torch.nn.BatchNorm1d, 1: torch.nn.BatchNorm1d, 2: torch.nn.BatchNorm2d,
           3: torch.nn.BatchNorm3d}[dims](
        channels, momentum=0.3).double()
    with torch.no_grad():
        for m in (sync, ref):
            m.weight.copy_(torch.arange(1.0, 1.0 + channels))
            m.bias.copy_(torch.arange(0.5, 0.5 + channels))
    out = sync(x)
    (out * out).sum().backward()
    whole = torch.cat(every).requires_grad_()
    ref_out = ref(whole)
    (ref_out * ref_out).sum().backward()
    at = sum(every[k].shape[0] for k in range(r))
    mine = slice(at, at + every[r].shape[0])
    assert torch.allclose(out, ref_out[mine].detach(), atol=1e-10)
    assert torch.allclose(x.grad, whole.grad[mine], atol=1e-10)
    assert torch.allclose(sync.running_mean, ref.running_mean, atol=1e-12)
    assert torch.allclose(sync.running_var, ref.running_var, atol=1e-12)
    assert int(sync.num_batches_tracked) == 1
    # Evaluation: the running statistics, no collective.
    sync.eval()
    ref.eval()
    assert torch.allclose(sync(every[r]), ref(every[r]), atol=1e-10)


def test_sync_batch_norm_float32_and_errors(hvd):
    bn = hvd.SyncBatchNorm(4)
    out = bn(torch.randn(3, 4))
    assert out.dtype == torch.float32 and out.shape == (3, 4)
    with pytest.raises(ValueError, match="2D"):
        bn(torch.randn(4))
