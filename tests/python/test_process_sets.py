"""Process sets in hvd.torch, as Horovod's test suite uses them: the even
and the odd ranks (and the ranks but the last), added with
hvd.add_process_set under hvd.init(process_sets="dynamic"); every
collective and its gradient within them, DistributedOptimizer within a
set, the objects' broadcast and allgather, sets given to init, and the
errors. Every rank runs every test in the same order; at np 1 the tests
that need two ranks are skipped."""

import pytest
import torch


class Sets(dict):
    """The module's sets by name. "mine", the rank's own set, is looked
    up each time from "even" and "odd" (the job's set where none is
    added), so a test that replaces those cannot leave it stale."""

    def __init__(self, hvd):
        super().__init__()
        self.hvd = hvd

    def __getitem__(self, key):
        if key == "mine":
            return self.get("even" if self.hvd.rank() % 2 == 0 else "odd", self.hvd.global_process_set)
        return super().__getitem__(key)


@pytest.fixture(scope="module")
def ps(hvd):
    """hvd re-initialised with dynamic sets; the even and odd ranks' sets
    (at np 1, the odd set is the job's own: only the even one is added)."""
    hvd.shutdown()
    hvd.init(process_sets="dynamic")
    rank, size = hvd.rank(), hvd.size()
    even = [r for r in range(size) if r % 2 == 0]
    odd = [r for r in range(size) if r % 2 == 1]
    sets = Sets(hvd)
    if size > 1:
        sets["even"] = hvd.add_process_set(even)
        sets["odd"] = hvd.add_process_set(odd)
    sets["ranks"] = even if rank % 2 == 0 else odd
    yield sets
    for k in ("even", "odd"):
        if k in sets:
            assert hvd.remove_process_set(sets[k])
    hvd.barrier()


def need2(hvd):
    if hvd.size() < 2:
        pytest.skip("needs two ranks")


def test_process_set_queries(hvd, ps):
    need2(hvd)
    mine, ranks = ps["mine"], ps["ranks"]
    assert mine.size() == len(ranks)
    assert mine.rank() == ranks.index(hvd.rank())
    assert mine.included()
    other = ps["odd"] if mine is ps["even"] else ps["even"]
    assert not other.included()
    with pytest.raises(ValueError):
        other.rank()
    assert hvd.global_process_set.process_set_id == 0
    assert hvd.global_process_set.ranks == list(range(hvd.size()))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64])
def test_allreduce_process_sets(hvd, ps, dtype):
    need2(hvd)
    mine, ranks = ps["mine"], ps["ranks"]
    torch.manual_seed(1234)
    tensors = {r: torch.randint(-100, 100, (17, 3)).to(dtype) for r in range(hvd.size())}
    summed = hvd.allreduce(tensors[hvd.rank()], op=hvd.Sum, name="ps.sum", process_set=mine)
    assert torch.equal(summed, sum(tensors[r] for r in ranks))
    if dtype.is_floating_point:
        avg = hvd.allreduce(tensors[hvd.rank()], name="ps.avg", process_set=mine)
        assert torch.allclose(avg, sum(tensors[r] for r in ranks) / len(ranks))


def test_allreduce_grad_process_sets(hvd, ps):
    need2(hvd)
    mine = ps["mine"]
    x = torch.ones(5, requires_grad=True)
    y = hvd.allreduce(x, op=hvd.Sum, name="ps.grad", process_set=mine)
    y.sum().backward()
    assert torch.equal(x.grad, torch.full((5,), float(mine.size())))


def test_unnamed_operations_in_a_set_then_the_job(hvd, ps):
    """Unnamed operations are numbered in their own process set: the even
    ranks run unnamed ones in their set, then every rank runs the job's.
    Before (Horovod numbers them by handle, counting every set's), the
    job's had another name on the set's members than on the odd ranks,
    and every rank waited for ever."""
    need2(hvd)
    if hvd.rank() % 2 == 0:
        for _ in range(3):
            hvd.allreduce(torch.ones(2), op=hvd.Sum, process_set=ps["even"])
        hvd.grouped_allgather([torch.ones(1, 1)], process_set=ps["even"])
        hvd.broadcast(torch.ones(1), root_rank=0, process_set=ps["even"])
    out = hvd.allreduce(torch.ones(2), op=hvd.Sum)
    assert torch.equal(out, torch.full((2,), float(hvd.size())))
    out = hvd.grouped_allreduce([torch.ones(1), torch.ones(3)], op=hvd.Sum)
    assert torch.equal(out[1], torch.full((3,), float(hvd.size())))
    assert hvd.allgather(torch.ones(1, 2)).shape == (hvd.size(), 2)


def test_grouped_allreduce_process_sets(hvd, ps):
    need2(hvd)
    mine, ranks = ps["mine"], ps["ranks"]
    ts = [torch.full((4,), float(hvd.rank() + k)) for k in range(3)]
    out = hvd.grouped_allreduce(ts, op=hvd.Sum, name="ps.group", process_set=mine)
    for k, o in enumerate(out):
        assert torch.equal(o, torch.full((4,), float(sum(r + k for r in ranks))))


def test_allgather_process_sets(hvd, ps):
    need2(hvd)
    mine, ranks = ps["mine"], ps["ranks"]
    t = torch.full((hvd.rank() + 1, 2), float(hvd.rank()))
    out = hvd.allgather(t, name="ps.gather", process_set=mine)
    want = torch.cat([torch.full((r + 1, 2), float(r)) for r in ranks])
    assert torch.equal(out, want)
    # the gradient: this rank's rows of the averaged gradient
    x = t.clone().requires_grad_(True)
    g = hvd.allgather(x, name="ps.gather.grad", process_set=mine)
    (g * 2).sum().backward()
    assert torch.equal(x.grad, torch.full_like(t, 2.0))
    objs = hvd.allgather_object({"r": hvd.rank()}, process_set=mine)
    assert objs == [{"r": r} for r in ranks]


def test_grouped_allgather_process_sets(hvd, ps):
    need2(hvd)
    mine, ranks = ps["mine"], ps["ranks"]
    ts = [torch.full((hvd.rank() + 1,), float(hvd.rank() * 10 + k)) for k in range(2)]
    out = hvd.grouped_allgather(ts, name="ps.ggather", process_set=mine)
    for k, o in enumerate(out):
        want = torch.cat([torch.full((r + 1,), float(r * 10 + k)) for r in ranks])
        assert torch.equal(o, want)


def test_broadcast_process_sets(hvd, ps):
    need2(hvd)
    mine, ranks = ps["mine"], ps["ranks"]
    root = ranks[-1]  # a rank of the job, in the set
    t = torch.full((3, 3), float(hvd.rank()))
    out = hvd.broadcast(t, root_rank=root, name="ps.bcast", process_set=mine)
    assert torch.equal(out, torch.full((3, 3), float(root)))
    x = t.clone().requires_grad_(True)
    hvd.broadcast(x, root_rank=root, name="ps.bcast.grad", process_set=mine).sum().backward()
    want = 1.0 if hvd.rank() == root else 0.0
    assert torch.equal(x.grad, torch.full((3, 3), want))
    obj = hvd.broadcast_object({"from": hvd.rank()}, root_rank=root, process_set=mine)
    assert obj == {"from": root}
    if hvd.size() > 2:  # a root outside the set
        outside = [r for r in range(hvd.size()) if r not in ranks][0]
        with pytest.raises(ValueError):
            hvd.broadcast(t, root_rank=outside, name="ps.bcast.bad", process_set=mine)


def test_alltoall_process_sets(hvd, ps):
    need2(hvd)
    mine, ranks = ps["mine"], ps["ranks"]
    n, me = len(ranks), mine.rank()
    splits = torch.tensor([k + 1 for k in range(n)], dtype=torch.int32)
    t = torch.cat([torch.full((k + 1, 2), float(100 * hvd.rank() + k)) for k in range(n)])
    out, got = hvd.alltoall(t, splits=splits, name="ps.a2a", process_set=mine)
    assert got.tolist() == [me + 1] * n
    want = torch.cat([torch.full((me + 1, 2), float(100 * r + me)) for r in ranks])
    assert torch.equal(out, want)


def test_reducescatter_process_sets(hvd, ps):
    need2(hvd)
    mine, ranks = ps["mine"], ps["ranks"]
    n, me = len(ranks), mine.rank()
    t = torch.arange(2 * n * 3, dtype=torch.float32).reshape(2 * n, 3) + hvd.rank()
    out = hvd.reducescatter(t, op=hvd.Sum, name="ps.rs", process_set=mine)
    full = sum(torch.arange(2 * n * 3, dtype=torch.float32).reshape(2 * n, 3) + r
               for r in ranks)
    assert torch.equal(out, full[2 * me:2 * me + 2])
    outs = hvd.grouped_reducescatter([t, t * 2], op=hvd.Sum, name="ps.grs", process_set=mine)
    assert torch.equal(outs[0], full[2 * me:2 * me + 2])
    assert torch.equal(outs[1], 2 * full[2 * me:2 * me + 2])
    x = t.clone().requires_grad_(True)
    hvd.reducescatter(x, op=hvd.Sum, name="ps.rs.grad", process_set=mine).sum().backward()
    assert torch.equal(x.grad, torch.full_like(t, float(n)))


def test_sparse_allreduce_process_sets(hvd, ps):
    need2(hvd)
    mine, ranks = ps["mine"], ps["ranks"]
    i = torch.tensor([[hvd.rank() % 4], [0]])
    v = torch.tensor([float(hvd.rank() + 1)])
    s = torch.sparse_coo_tensor(i, v, (4, 2))
    h = hvd.sparse_allreduce_async(s, name="ps.sparse", op=hvd.Sum, process_set=mine)
    got = h().to_dense()
    want = sum(torch.sparse_coo_tensor(torch.tensor([[r % 4], [0]]),
                                       torch.tensor([float(r + 1)]), (4, 2)).to_dense()
               for r in ranks)
    assert torch.equal(got, want)


def test_optimizer_process_sets(hvd, ps):
    """DistributedOptimizer(process_set=...): the set's ranks average their
    gradients among themselves: the same weights within a set."""
    need2(hvd)
    mine, ranks = ps["mine"], ps["ranks"]
    torch.manual_seed(7)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(),
                                   process_set=mine)
    g = torch.Generator().manual_seed(hvd.rank())
    for _ in range(3):
        x = torch.randn(8, 4, generator=g)
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
    w = torch.cat([p.detach().flatten() for p in model.parameters()])
    ws = hvd.allgather(w.unsqueeze(0), name="ps.opt.w", process_set=mine)
    for row in ws:
        assert torch.allclose(row, w)
    hvd.barrier(process_set=mine)


def test_adasum_process_sets(hvd, ps):
    """op=hvd.Adasum within a set (every set here has 1 or 2 ranks):
    its members' tensors only, paired in the set's order.
    The Adasum optimizer combines over the job, so a set is refused."""
    from test_adasum import off_by, reference

    need2(hvd)
    mine, ranks = ps["mine"], ps["ranks"]

    def vec(r):
        return torch.tensor([1.0 + r, 2.0 - r, 0.5 * r, 3.0, -r])

    got = hvd.allreduce(vec(hvd.rank()), op=hvd.Adasum, name="ps.adasum", process_set=mine)
    assert off_by(got, reference([vec(r) for r in ranks])) < 1e-6
    model = torch.nn.Linear(2, 1)
    with pytest.raises(NotImplementedError, match="process_set must be the global one"):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 op=hvd.Adasum, process_set=mine)
    hvd.barrier(process_set=mine)


def test_process_set_errors(hvd, ps):
    need2(hvd)
    mine = ps["mine"]
    other = ps["odd"] if mine is ps["even"] else ps["even"]
    t = torch.ones(2)
    with pytest.raises(ValueError):  # not in the set
        hvd.allreduce(t, name="ps.outside", process_set=other)
    with pytest.raises(ValueError):  # a set without an id
        hvd.allreduce(t, name="ps.unadded", process_set=hvd.ProcessSet([0]))
    with pytest.raises(ValueError, match="duplicate"):  # every rank: the even ranks again
        hvd.add_process_set(list(ps["even"].ranks))
    assert not hvd.remove_process_set(hvd.global_process_set)
    # a set removed, then added again: a new id, and it works
    odd = ps["odd"]
    ranks, old = odd.ranks, odd.process_set_id
    assert hvd.remove_process_set(odd)
    assert odd.process_set_id is None
    if hvd.rank() % 2 == 1:
        with pytest.raises(ValueError):
            hvd.allreduce(t, name="ps.removed", process_set=odd)
    again = hvd.add_process_set(list(ranks))
    assert again.process_set_id > old
    if again.included():
        out = hvd.allreduce(t, op=hvd.Sum, name="ps.again", process_set=again)
        assert torch.equal(out, torch.full((2,), float(len(ranks))))
    ps["odd"] = again
    assert ps["mine"] is (again if mine is odd else mine)
    # the job's collectives are unaffected
    assert hvd.allreduce(t, op=hvd.Sum, name="ps.job").tolist() == [float(hvd.size())] * 2


def test_process_sets_given_to_init(hvd, ps):
    """hvd.init(process_sets=[...]) without dynamic sets: ids from the
    ranks; a set of every rank is the job's; a clone is left without."""
    need2(hvd)
    for k in ("even", "odd"):
        assert hvd.remove_process_set(ps[k])
    size = hvd.size()
    hvd.shutdown()
    even = hvd.ProcessSet(range(0, size, 2))
    every = hvd.ProcessSet(range(size))
    clone = hvd.ProcessSet(range(0, size, 2))
    hvd.init(process_sets=[even, every, clone])
    assert even.process_set_id == 1 and every.process_set_id == 0
    assert clone.process_set_id is None
    if even.included():
        out = hvd.allreduce(torch.ones(1), op=hvd.Sum, name="ps.static", process_set=even)
        assert out.item() == even.size()
    hvd.barrier()
    # the module's sets again, for the fixture to remove (this job's
    # environment has HOROVOD_DYNAMIC_PROCESS_SETS=1 from the fixture)
    ps["even"] = even
    ps["odd"] = hvd.add_process_set([r for r in range(size) if r % 2 == 1])


def test_the_module_sets_after_reinit(hvd, ps):
    """After the tests that remove, re-add and re-initialise sets, the
    fixture's sets are the live ones: each rank's own set (ps["mine"])
    reduces and broadcasts among its ranks. On the CPU, so that a stale
    set shows where no GPU runs the test after this one."""
    mine, ranks = ps["mine"], ps["ranks"]
    assert mine.included() and mine.size() == len(ranks)
    t = torch.full((10,), float(hvd.rank() + 1))
    out = hvd.allreduce(t, op=hvd.Sum, name="ps.cpu.mine", process_set=mine)
    assert torch.all(out == sum(r + 1 for r in ranks))
    b = hvd.broadcast(t, root_rank=ranks[-1], name="ps.cpu.mine.bc", process_set=mine)
    assert torch.all(b == ranks[-1] + 1)


def test_gpu_collectives_in_process_sets(hvd, ps, dev):
    """On the GPU (NCCL, a communicator of the set's own): allreduce,
    grouped allreduce, broadcast and allgather within each rank's set.
    Skipped where torch sees no GPU or libhvd has no NCCL (dev)."""
    mine, ranks = ps["mine"], ps["ranks"]
    t = torch.full((1000,), float(hvd.rank() + 1), device=dev)
    out = hvd.allreduce(t, op=hvd.Sum, name="ps.gpu.sum", process_set=mine)
    assert out.device == dev and torch.all(out.cpu() == sum(r + 1 for r in ranks))
    outs = hvd.grouped_allreduce([t, t * 2], op=hvd.Sum, name="ps.gpu.group",
                                 process_set=mine)
    assert torch.all(outs[1].cpu() == 2 * sum(r + 1 for r in ranks))
    b = hvd.broadcast(t, root_rank=ranks[-1], name="ps.gpu.bc", process_set=mine)
    assert torch.all(b.cpu() == ranks[-1] + 1)
    g = hvd.allgather(t[:hvd.rank() + 1], name="ps.gpu.ag", process_set=mine)
    assert g.cpu().tolist() == [float(r + 1) for r in ranks for _ in range(r + 1)]
