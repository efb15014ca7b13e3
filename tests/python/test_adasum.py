"""op=hvd.Adasum, checked as Horovod's Adasum tests check it: orthogonal
tensors add up, parallel ones average, every tensor of a fused batch
combines on its own dot product and norms (against a serial reference in
float64), a wrong dtype or collective is refused, and any number of
ranks combines (Horovod refuses those that are not a power of two: here
the ranks past the largest power of two fold in first), and
DistributedOptimizer(op=hvd.Adasum) combines each rank's
optimizer step, not its gradients. Every collective is named: the tests
before these may leave the ranks' counts of unnamed ones apart (a
process set's collectives run on its ranks only)."""

import copy

import pytest
import torch

TOL = {torch.float64: 1e-12, torch.float32: 2e-6, torch.float16: 4e-3,
       torch.bfloat16: 3e-2}


def power_of_two(n):
    return n & (n - 1) == 0


@pytest.fixture
def pow2(hvd):
    if not power_of_two(hvd.size()):
        pytest.skip("the tree averages parallel tensors evenly on a power-of-two number of ranks")
    return hvd


def pair(a, b):
    ab, aa, bb = float(a @ b), float(a @ a), float(b @ b)
    ca = 1 - ab / (2 * aa) if aa > 0 else 1.0
    cb = 1 - ab / (2 * bb) if bb > 0 else 1.0
    return ca * a + cb * b


def reference(vectors):
    """Adasum of the ranks' vectors in float64, pairing ranks as libhvd
    does: P being the largest power of two not above their number, rank
    P + q's first combines into rank q's; then blocks of 2, 4, ... of the
    P ranks, each its lower half's result with its upper half's."""
    v = [x.double().clone() for x in vectors]
    p = 1
    while 2 * p <= len(v):
        p *= 2
    for q in range(len(v) - p):
        v[q] = pair(v[q], v[p + q])
    w = 1
    while w < p:
        for base in range(0, p, 2 * w):
            v[base] = pair(v[base], v[base + w])
        w *= 2
    return v[0]


def off_by(got, want):
    """The largest difference, relative to the largest element."""
    return float((got.double() - want).abs().max() / want.abs().max())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16], ids=str)
def test_orthogonal_tensors_add_up(hvd, dtype):
    n, me = hvd.size(), hvd.rank()
    g = torch.Generator().manual_seed(2)
    sizes = [n * 20 - 17, n * 2 + 1, n + 2, 1 << 17]
    cols = [torch.linalg.qr(torch.randn(m, n, generator=g, dtype=torch.float64))[0]
            for m in sizes]
    handles = [hvd.allreduce_async(q[:, me].to(dtype), op=hvd.Adasum, name="orth.%d" % i)
               for i, q in enumerate(cols)]
    for q, h in zip(cols, handles):
        got = hvd.synchronize(h)
        want = q.to(dtype).double().sum(1)
        assert got.dtype == dtype
        assert off_by(got, want) < TOL[dtype]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_parallel_tensors_average(pow2, dtype):
    hvd = pow2
    n, me = hvd.size(), hvd.rank()
    g = torch.Generator().manual_seed(3)
    # Multiples of one vector, some negative, no block's average zero.
    scale = [(r + 1) * (-1 if r % 3 == 2 else 1) for r in range(n)]
    for m in (n * 20 - 13, 2 * n + 1, 1 << 17):
        u = torch.randn(m, generator=g, dtype=torch.float64).to(dtype).double()
        got = hvd.allreduce((u * scale[me]).to(dtype), op=hvd.Adasum,
                            name="parallel.%s.%d" % (dtype, m))
        want = u * sum(scale) / n
        assert off_by(got, want) < TOL[dtype]


def test_fused_tensors_combine_each_on_its_own(hvd):
    """Tensors submitted together are fused into one batch; each still
    gets its own coefficients (a whole-batch dot product would differ)."""
    n, me = hvd.size(), hvd.rank()
    sizes = [1, 7, 3000, 0, 65, 100003]
    every = [[torch.randn(m, generator=torch.Generator().manual_seed(100 * r + i))
              for i, m in enumerate(sizes)] for r in range(n)]
    handles = [hvd.allreduce_async(t, op=hvd.Adasum, name="fused.%d" % i)
               for i, t in enumerate(every[me])]
    for i, h in enumerate(handles):
        got = hvd.synchronize(h)
        if sizes[i] == 0:
            assert got.numel() == 0
            continue
        want = reference([every[r][i] for r in range(n)])
        assert off_by(got, want) < TOL[torch.float32]
    # Scaling factors apply before and after, as for any allreduce.
    t = every[me][2]
    got = hvd.allreduce(t, op=hvd.Adasum, prescale_factor=2.0, postscale_factor=0.25,
                        name="scaled")
    assert off_by(got, reference([2 * every[r][2] for r in range(n)]) * 0.25) < 1e-5
    grouped = hvd.grouped_allreduce(every[me][1:3], op=hvd.Adasum, name="grouped")
    for j, got in enumerate(grouped):
        assert off_by(got, reference([every[r][1 + j] for r in range(n)])) < 1e-5


def test_refusals_say_why(hvd):
    with pytest.raises(NotImplementedError, match="floating-point dtype"):
        hvd.allreduce(torch.ones(4, dtype=torch.int32), op=hvd.Adasum, name="refused.int")
    with pytest.raises(NotImplementedError, match="allreduce's op, not reducescatter's"):
        hvd.reducescatter(torch.ones(4 * hvd.size()), op=hvd.Adasum, name="refused.rs")
    with pytest.raises(NotImplementedError, match="sparse"):
        hvd.sparse_allreduce_async(torch.ones(3).to_sparse(), "sparse.adasum", hvd.Adasum)
    if hvd.size() > 1:
        # Ranks that disagree on the op: an error on every rank.
        op = hvd.Adasum if hvd.rank() == 0 else hvd.Sum
        with pytest.raises(hvd.HorovodInternalError, match="op adasum, rank 1 for .* op sum"):
            hvd.allreduce(torch.ones(4), op=op, name="refused.op")
    # The job goes on.
    assert hvd.allreduce(torch.ones(2), op=hvd.Sum, name="after").tolist() == [hvd.size()] * 2


def test_distributed_optimizer_combines_steps(hvd):
    """Each rank steps SGD with momentum on its own data; Adasum combines
    the steps: start + Adasum(step of rank 0, step of rank 1, ...), the
    same parameters on every rank, step after step."""
    n, me = hvd.size(), hvd.rank()
    torch.manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    local = copy.deepcopy(model)
    base = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    local_opt = torch.optim.SGD(local.parameters(), lr=0.1, momentum=0.9)
    opt = hvd.DistributedOptimizer(base, named_parameters=model.named_parameters(),
                                   op=hvd.Adasum)
    if n > 1:  # alone, it is the plain DistributedOptimizer, as Horovod's
        with pytest.raises(AssertionError, match="not supported"):
            with opt.skip_synchronize():
                pass
    g = torch.Generator().manual_seed(11 + me)
    for step in range(3):
        x, y = torch.randn(8, 5, generator=g), torch.randn(8, 2, generator=g)
        before = [p.detach().clone() for p in model.parameters()]
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        # This rank's own step, from the same parameters and momentum.
        with torch.no_grad():
            for q, p in zip(local.parameters(), before):
                q.copy_(p)
        local_opt.zero_grad()
        torch.nn.functional.mse_loss(local(x), y).backward()
        local_opt.step()
        for i, (p, q, b) in enumerate(zip(model.parameters(), local.parameters(), before)):
            name = "%d.%d" % (step, i)
            steps = hvd.allgather((q.detach() - b).reshape(1, -1), name="steps." + name)
            want = b.double().reshape(-1) + reference(list(steps))
            assert off_by(p.detach().reshape(-1), want) < 1e-5
            same = hvd.allgather(p.detach().reshape(1, -1), name="same." + name)
            assert all(torch.equal(same[0], s) for s in same)


def test_process_set_of_three(hvd):
    """A set of 3 ranks of 4 or more (Horovod refuses it): its members'
    tensors only, the third folding into the first, the same bits on
    each; the ranks outside it go on."""
    if hvd.size() < 4:
        pytest.skip("needs four ranks")
    hvd.shutdown()
    hvd.init(process_sets="dynamic")
    three = hvd.add_process_set([0, 1, 2])
    for m in (5, 1000, 100003):
        every = [torch.randn(m, generator=torch.Generator().manual_seed(50 + r)) for r in range(3)]
        if three.included():
            got = hvd.allreduce(every[hvd.rank()], op=hvd.Adasum, name="three.%d" % m,
                                process_set=three)
            assert off_by(got, reference(every)) < TOL[torch.float32]
            same = hvd.allgather(got.reshape(1, -1), name="three.same.%d" % m, process_set=three)
            assert all(torch.equal(same[0], s) for s in same)
    assert hvd.remove_process_set(three)
    hvd.barrier()
