"""hvd.torch's collectives against a serial reference: every rank builds
every rank's input from a seed, so each can compute the expected result
alone. Collectives first, assertions after, so that a failing check on
one rank does not leave the others waiting in a collective."""

import json
import os
import time
import warnings

import pytest
import torch

DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def data(r, shape, dtype, seed=0, low=1, high=4):
    """Rank r's input: small integers, exact in every dtype and op."""
    g = torch.Generator().manual_seed(1000 * seed + r)
    return torch.randint(low, high, shape, generator=g).to(dtype)


def close(a, b, dtype):
    if dtype in (torch.float16, torch.bfloat16):
        return torch.allclose(a.double(), b.double(), rtol=2e-2, atol=1e-2)
    if dtype.is_floating_point:
        return torch.allclose(a.double(), b.double(), rtol=1e-6, atol=1e-6)
    return torch.equal(a, b)


def reference(hvd, shape, dtype, op, seed):
    xs = [data(r, shape, dtype, seed).double() for r in range(hvd.size())]
    s = torch.stack(xs)
    if op == hvd.Sum:
        out = s.sum(0)
    elif op == hvd.Average:
        out = s.sum(0) / hvd.size()
        if not dtype.is_floating_point:
            out = torch.trunc(out)
    elif op == hvd.Min:
        out = s.min(0).values
    elif op == hvd.Max:
        out = s.max(0).values
    else:
        out = s.prod(0)
    return out.to(dtype)


def test_ranks(hvd):
    assert hvd.is_initialized()
    assert hvd.rank() == int(os.environ.get("HOROVOD_RANK", "0"))
    assert hvd.size() == int(os.environ.get("HOROVOD_SIZE", "1"))
    assert 0 <= hvd.local_rank() < hvd.local_size()
    assert 0 <= hvd.cross_rank() < hvd.cross_size()
    assert hvd.mpi_built() and not hvd.mpi_enabled()
    assert not hvd.gloo_built() and not hvd.gloo_enabled()
    assert hvd.cuda_built() == (hvd.nccl_built() > 0)
    assert isinstance(hvd.nccl_built(), int)
    # Every host runs as many ranks as every other (hosts of 2 and 3: no).
    assert hvd.is_homogeneous() == (len(set(hvd.allgather_object(hvd.local_size()))) == 1)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", ["Sum", "Average", "Min", "Max", "Product"])
def test_allreduce(hvd, dtype, op):
    op = getattr(hvd, op)
    shape = (3, 5)
    x = data(hvd.rank(), shape, dtype, seed=1)
    keep = x.clone()
    out = hvd.allreduce(x, op=op, name="ar")
    y = x.clone()
    back = hvd.allreduce_(y, op=op, name="ar_")
    z = x.clone()
    h = hvd.allreduce_async_(z, op=op)
    zz = hvd.synchronize(h)
    want = reference(hvd, shape, dtype, op, 1)
    assert torch.equal(x, keep), "the input changed"
    assert out.dtype == dtype and out.shape == shape
    assert close(out, want, dtype)
    assert back is y and close(y, want, dtype)
    assert zz is z and close(z, want, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_allreduce_scaling_factors(hvd, dtype):
    x = data(hvd.rank(), (17,), dtype, seed=2)
    out = hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0)
    avg = hvd.allreduce(x, op=hvd.Average, prescale_factor=2.0)
    want = reference(hvd, (17,), torch.float64, hvd.Sum, 2)
    assert close(out, (want * 1.5).to(dtype), dtype)
    assert close(avg, (want * 2.0 / hvd.size()).to(dtype), dtype)


def test_allreduce_deprecated_average(hvd):
    x = torch.ones(4) * (hvd.rank() + 1)
    with pytest.warns(DeprecationWarning):
        summed = hvd.allreduce(x, average=False)
    with pytest.warns(DeprecationWarning):
        averaged = hvd.allreduce(x, average=True)
    total = sum(range(1, hvd.size() + 1))
    assert torch.allclose(summed, torch.full((4,), float(total)))
    assert torch.allclose(averaged, torch.full((4,), total / hvd.size()))
    with pytest.raises(ValueError, match="supersedes"):
        hvd.allreduce(x, average=True, op=hvd.Sum)


def test_allreduce_noncontiguous_and_empty(hvd):
    base = data(hvd.rank(), (6, 4), torch.float32, seed=3)
    t = base.t()  # not contiguous
    assert not t.is_contiguous()
    out = hvd.allreduce(t, op=hvd.Sum)
    hvd.allreduce_(t, op=hvd.Sum)  # writes back into base
    empty = hvd.allreduce(torch.empty(0, 3), op=hvd.Sum)
    want = reference(hvd, (6, 4), torch.float32, hvd.Sum, 3).t()
    assert torch.equal(out, want)
    assert torch.equal(base.t(), want)
    assert empty.shape == (0, 3)


def test_many_in_flight(hvd):
    """Many tensors at once: libhvd fuses what is ready in one cycle."""
    xs = [data(hvd.rank(), (i + 1, 7), torch.float32, seed=100 + i) for i in range(64)]
    hs = [hvd.allreduce_async(x, name="many.%d" % i, op=hvd.Sum) for i, x in enumerate(xs)]
    assert all(isinstance(h, int) for h in hs)
    outs = [hvd.synchronize(h) for h in hs]
    for i, out in enumerate(outs):
        assert torch.equal(out, reference(hvd, (i + 1, 7), torch.float32, hvd.Sum, 100 + i))


def test_poll(hvd):
    h = hvd.allreduce_async(torch.ones(1000), name="poll")
    while not hvd.poll(h):
        pass
    assert torch.equal(hvd.synchronize(h), torch.ones(1000))
    with pytest.raises(ValueError, match="unknown handle"):
        hvd.poll(h)


@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.bfloat16], ids=str)
def test_grouped_allreduce(hvd, dtype):
    xs = [data(hvd.rank(), (i + 2,), dtype, seed=10 + i) for i in range(5)]
    outs = hvd.grouped_allreduce(xs, op=hvd.Sum, name="grp")
    ys = [x.clone() for x in xs]
    back = hvd.grouped_allreduce_(ys, op=hvd.Max)
    h = hvd.grouped_allreduce_async(xs, op=hvd.Min)
    mins = hvd.synchronize(h)
    for i in range(5):
        assert close(outs[i], reference(hvd, (i + 2,), dtype, hvd.Sum, 10 + i), dtype)
        assert back[i] is ys[i]
        assert close(ys[i], reference(hvd, (i + 2,), dtype, hvd.Max, 10 + i), dtype)
        assert close(mins[i], reference(hvd, (i + 2,), dtype, hvd.Min, 10 + i), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_allgather(hvd, dtype):
    """First dimensions differ per rank: rank r gives r + 1 rows."""
    x = data(hvd.rank(), (hvd.rank() + 1, 3, 2), dtype, seed=4)
    out = hvd.allgather(x, name="ag")
    h = hvd.allgather_async(x)
    out2 = hvd.synchronize(h)
    want = torch.cat([data(r, (r + 1, 3, 2), dtype, seed=4) for r in range(hvd.size())])
    assert torch.equal(out, want)
    assert torch.equal(out2, want)


def test_allgather_empty_rank(hvd):
    x = torch.ones((0 if hvd.rank() == 0 else 2, 3))
    out = hvd.allgather(x)
    assert out.shape == (2 * (hvd.size() - 1), 3)


def test_grouped_allgather(hvd):
    xs = [data(hvd.rank(), (hvd.rank() + i, 2), torch.int64, seed=20 + i) for i in range(3)]
    outs = hvd.grouped_allgather(xs)
    for i in range(3):
        want = torch.cat([data(r, (r + i, 2), torch.int64, seed=20 + i)
                          for r in range(hvd.size())])
        assert torch.equal(outs[i], want)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_broadcast(hvd, dtype):
    results = []
    for root in range(hvd.size()):
        x = data(hvd.rank(), (4, 3), dtype, seed=5)
        keep = x.clone()
        out = hvd.broadcast(x, root, name="bc.%d" % root)
        y = x.clone()
        hvd.broadcast_(y, root)
        results.append((root, x, keep, out, y))
    for root, x, keep, out, y in results:
        want = data(root, (4, 3), dtype, seed=5)
        assert torch.equal(x, keep)
        assert torch.equal(out, want) and torch.equal(y, want)


def test_broadcast_noncontiguous_inplace(hvd):
    base = torch.arange(12.0).reshape(3, 4) + 100 * hvd.rank()
    view = base.t()
    hvd.broadcast_(view, 0, name="bc.nc")
    assert torch.equal(base, torch.arange(12.0).reshape(3, 4))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.float32, torch.float64,
                                   torch.bfloat16], ids=str)
def test_alltoall_uneven(hvd, dtype):
    """Rank r sends (r + d) % 3 rows to rank d, zeros included."""
    n, r = hvd.size(), hvd.rank()

    def splits_of(src):
        return [(src + d) % 3 for d in range(n)]

    def rows_of(src):
        return data(src, (sum(splits_of(src)), 2), dtype, seed=6)

    x = rows_of(r)
    out, got = hvd.alltoall(x, splits=splits_of(r), name="a2a")
    sp = torch.tensor(splits_of(r), dtype=torch.int64)
    out2, got2 = hvd.alltoall(x, splits=sp)
    want, want_splits = [], []
    for src in range(n):
        s = splits_of(src)
        at = sum(s[:r])
        want.append(rows_of(src)[at:at + s[r]])
        want_splits.append(s[r])
    assert torch.equal(out, torch.cat(want))
    assert got.tolist() == want_splits and got.dtype == torch.int32
    assert torch.equal(out2, out) and got2.dtype == torch.int64


def test_alltoall_even(hvd):
    n = hvd.size()
    x = torch.arange(2.0 * n * 3).reshape(2 * n, 3) + 1000 * hvd.rank()
    out = hvd.alltoall(x)
    want = torch.cat([(torch.arange(2.0 * n * 3).reshape(2 * n, 3) + 1000 * src)
                      [2 * hvd.rank():2 * hvd.rank() + 2] for src in range(n)])
    assert torch.equal(out, want)
    with pytest.raises(ValueError, match="splits"):
        hvd.alltoall(x, splits=[1] * (n + 1))


@pytest.mark.parametrize("rows", [1, 2, 7])
@pytest.mark.parametrize("op", ["Sum", "Average", "Max"])
def test_reducescatter(hvd, rows, op):
    """Horovod's split: rows // size each, the first rows % size one more."""
    op = getattr(hvd, op)
    x = data(hvd.rank(), (rows, 3), torch.float32, seed=7)
    out = hvd.reducescatter(x, op=op, name="rs")
    full = reference(hvd, (rows, 3), torch.float32, op, 7)
    n, r = hvd.size(), hvd.rank()
    counts = [rows // n + (1 if i < rows % n else 0) for i in range(n)]
    at = sum(counts[:r])
    assert out.shape == (counts[r], 3)
    assert torch.allclose(out, full[at:at + counts[r]])


def test_reducescatter_scaled_and_grouped(hvd):
    n, r = hvd.size(), hvd.rank()
    xs = [data(r, (2 * n + i, 2), torch.float64, seed=30 + i) for i in range(3)]
    outs = hvd.grouped_reducescatter(xs, op=hvd.Sum)
    scaled = hvd.reducescatter(xs[0], op=hvd.Sum, prescale_factor=0.5, postscale_factor=4.0)
    for i in range(3):
        rows = 2 * n + i
        full = reference(hvd, (rows, 2), torch.float64, hvd.Sum, 30 + i)
        counts = [rows // n + (1 if k < rows % n else 0) for k in range(n)]
        at = sum(counts[:r])
        assert torch.allclose(outs[i], full[at:at + counts[r]])
        if i == 0:
            assert torch.allclose(scaled, 2.0 * full[at:at + counts[r]])


def test_barrier_and_objects(hvd):
    hvd.barrier()
    obj = hvd.broadcast_object({"rank": hvd.rank(), "list": [1, 2]}, root_rank=0)
    everyone = hvd.allgather_object(("r", hvd.rank()))
    assert obj == {"rank": 0, "list": [1, 2]}
    assert everyone == [("r", i) for i in range(hvd.size())]


def bools(r, shape, seed):
    """Rank r's bool input (about a third True, so that or and and differ)."""
    return data(r, shape, torch.int64, seed, low=0, high=3) == 0


def check_bool(hvd, dev):
    """torch.bool tensors, as torch.distributed reduces them: Sum and Max
    a logical or, Min and Product a logical and; moved as they are by
    broadcast, allgather, alltoall and reducescatter."""
    n, r = hvd.size(), hvd.rank()
    x = bools(r, (6, 5), 40).to(dev)
    ops = [hvd.Sum, hvd.Max, hvd.Min, hvd.Product]
    red = [hvd.allreduce(x, op=op, name="bool.ar.%d" % k) for k, op in enumerate(ops)]
    grouped = hvd.grouped_allreduce([x, ~x], op=hvd.Sum, name="bool.g")
    bc = hvd.broadcast(x, n - 1, name="bool.bc")
    ag = hvd.allgather(bools(r, (r + 1, 2), 41).to(dev), name="bool.ag")
    a2a = hvd.alltoall(bools(r, (2 * n, 3), 42).to(dev), name="bool.a2a")
    rs = hvd.reducescatter(bools(r, (2 * n, 3), 43).to(dev), op=hvd.Max, name="bool.rs")
    errors = []
    for kw in [dict(), dict(op=hvd.Adasum), dict(op=hvd.Sum, prescale_factor=2.0)]:
        with pytest.raises(TypeError, match="torch.bool") as e:
            hvd.allreduce(x, **kw)
        errors.append(str(e.value))
    every = torch.stack([bools(k, (6, 5), 40) for k in range(n)])
    anyone, all_of = every.any(0), every.all(0)
    for out, want in zip(red + grouped, [anyone, anyone, all_of, all_of, anyone,
                                         (~every).any(0)]):
        assert out.dtype == torch.bool and out.device == dev
        assert torch.equal(out.cpu(), want)
    # Every byte 0 or 1: a bool of 2 would compare unequal to True.
    assert torch.equal(red[0].cpu().view(torch.uint8).max(), torch.tensor(1, dtype=torch.uint8))
    assert torch.equal(bc.cpu(), bools(n - 1, (6, 5), 40))
    assert torch.equal(ag.cpu(), torch.cat([bools(k, (k + 1, 2), 41) for k in range(n)]))
    assert torch.equal(a2a.cpu(), torch.cat([bools(k, (2 * n, 3), 42)[2 * r:2 * r + 2]
                                             for k in range(n)]))
    rs_all = torch.stack([bools(k, (2 * n, 3), 43) for k in range(n)]).any(0)
    assert torch.equal(rs.cpu(), rs_all[2 * r:2 * r + 2])
    assert "op Average" in errors[0] and "op Adasum" in errors[1]
    assert "prescale_factor" in errors[2]


def test_bool(hvd):
    check_bool(hvd, torch.device("cpu"))


def test_bool_buffers_broadcast_with_the_parameters(hvd):
    """A model's bool buffer (a mask) goes with broadcast_parameters."""
    m = torch.nn.Linear(3, 2)
    m.register_buffer("mask", torch.tensor([hvd.rank() == 0, True, False]))
    hvd.broadcast_parameters(m.state_dict(), root_rank=0)
    assert m.mask.tolist() == [True, True, False]


def complexes(r, shape, dtype, seed):
    """Rank r's complex input: small integers in both parts."""
    part = torch.float32 if dtype == torch.complex64 else torch.float64
    return torch.complex(data(r, shape, part, seed), data(r, shape, part, seed + 100))


def check_complex(hvd, dev):
    """Complex tensors, as torch.distributed's: summed and averaged part by
    part, moved whole by broadcast, allgather, alltoall and reducescatter;
    other ops refused."""
    n, r = hvd.size(), hvd.rank()
    outs = []
    for dt in (torch.complex64, torch.complex128):
        x = complexes(r, (5, 3), dt, 50).to(dev)
        y = x.clone()
        one = complexes(r, (), dt, 55).to(dev)  # a 0-d tensor
        outs.append((dt, [
            hvd.allreduce(x, op=hvd.Sum, name="cx.sum.%s" % dt),
            hvd.allreduce(x, name="cx.avg.%s" % dt),
            hvd.allreduce_(y, op=hvd.Sum, prescale_factor=0.5, postscale_factor=4.0,
                           name="cx.scaled.%s" % dt),
            hvd.grouped_allreduce([x, one], op=hvd.Sum, name="cx.g.%s" % dt),
            hvd.broadcast(x, n - 1, name="cx.bc.%s" % dt),
            hvd.allgather(complexes(r, (r + 1, 2), dt, 51).to(dev), name="cx.ag.%s" % dt),
            hvd.alltoall(complexes(r, (2 * n, 3), dt, 52).to(dev), name="cx.a2a.%s" % dt),
            hvd.reducescatter(complexes(r, (2 * n, 3), dt, 53).to(dev), op=hvd.Sum,
                              name="cx.rs.%s" % dt),
        ]))
    errors = []
    for op in (hvd.Min, hvd.Max, hvd.Product, hvd.Adasum):
        with pytest.raises(TypeError, match="complex64") as e:
            hvd.allreduce(torch.ones(3, dtype=torch.complex64, device=dev), op=op)
        errors.append(str(e.value))
    for dt, (total, avg, scaled, grouped, bc, ag, a2a, rs) in outs:
        want = sum(complexes(k, (5, 3), dt, 50) for k in range(n))
        for out in (total, avg, scaled, bc, ag, a2a, rs, *grouped):
            assert out.dtype == dt and out.device == dev
        assert torch.equal(total.cpu(), want)
        assert torch.allclose(avg.cpu(), want / n)
        assert torch.equal(scaled.cpu(), 2 * want)
        assert torch.equal(grouped[0].cpu(), want)
        assert grouped[1].shape == () and torch.equal(
            grouped[1].cpu(), sum(complexes(k, (), dt, 55) for k in range(n)))
        assert torch.equal(bc.cpu(), complexes(n - 1, (5, 3), dt, 50))
        assert torch.equal(ag.cpu(), torch.cat([complexes(k, (k + 1, 2), dt, 51)
                                                for k in range(n)]))
        assert torch.equal(a2a.cpu(), torch.cat([complexes(k, (2 * n, 3), dt, 52)[2 * r:2 * r + 2]
                                                 for k in range(n)]))
        rs_all = sum(complexes(k, (2 * n, 3), dt, 53) for k in range(n))
        assert torch.equal(rs.cpu(), rs_all[2 * r:2 * r + 2])
    assert all("op %s of" % o in e for o, e in zip(["Min", "Max", "Product", "Adasum"], errors))


def test_complex(hvd):
    check_complex(hvd, torch.device("cpu"))


def test_complex_gradient(hvd):
    """The gradient of a complex allreduce, as torch's conjugate convention
    makes it: the allreduce of the output's gradient."""
    n = hvd.size()
    z = complexes(hvd.rank(), (4,), torch.complex64, 56).requires_grad_()
    out = hvd.allreduce(z, op=hvd.Sum, name="cx.grad")
    out.abs().sum().backward()
    total = sum(complexes(k, (4,), torch.complex64, 56) for k in range(n))
    assert torch.allclose(z.grad, n * total / total.abs())


def test_bad_arguments(hvd):
    with warnings.catch_warnings():  # "ComplexHalf support is experimental"
        warnings.simplefilter("ignore")
        half = torch.zeros(3, dtype=torch.complex32)
    with pytest.raises(TypeError, match="complex32"):
        hvd.allgather(half)
    with pytest.raises(NotImplementedError, match="Adasum needs a floating-point dtype"):
        hvd.allreduce(torch.ones(3, dtype=torch.int64), op=hvd.Adasum)
    with pytest.raises(ValueError, match="has not been added"):
        hvd.allreduce(torch.ones(3), process_set=hvd.ProcessSet([0]))
    with pytest.raises(ValueError, match="HOROVOD_DYNAMIC_PROCESS_SETS"):
        hvd.add_process_set([0])
    with pytest.raises(ValueError, match="scalar"):
        hvd.allgather(torch.tensor(1.0))
    with pytest.raises(TypeError, match="meta"):
        hvd.allreduce(torch.empty(3, device="meta"))


def test_timeline(hvd, tmp_path_factory):
    """What Horovod's own timeline test looks for, read while the timeline
    is still open; and the coordinator's ticks show the rank that came
    late (the last rank, 0.3 s after the others)."""
    path = str(tmp_path_factory.getbasetemp() / ("timeline.%d.json" % hvd.rank()))
    hvd.start_timeline(path, mark_cycles=True)
    hvd.allreduce(torch.ones(10), name="timeline.t")
    text = open(path).read() if hvd.rank() == 0 else ""
    if hvd.rank() == hvd.size() - 1:
        time.sleep(0.3)
    hvd.allreduce(torch.ones(10), name="timeline.late")
    hvd.stop_timeline()
    if hvd.rank() == 0:
        for want in ["allreduce.timeline.t", "NEGOTIATE_ALLREDUCE", "ALLREDUCE",
                     "CYCLE_START"]:
            assert want in text
        events = json.load(open(path))
        row = [e["tid"] for e in events
               if e["ph"] == "M" and e["args"]["name"] == "allreduce.timeline.late"]
        ticks = sorted((e["ts"], e["name"]) for e in events
                       if e["ph"] == "X" and e.get("tid") in row and e["name"].isdigit())
        assert sorted(n for _, n in ticks) == sorted(str(r) for r in range(hvd.size()))
        assert ticks[-1][1] == str(hvd.size() - 1)
        # The operation's span says what it reduced, as Horovod's.
        op = [e for e in events if e.get("tid") in row and e["name"] == "ALLREDUCE"]
        assert op and op[0]["args"] == {"dtype": "float32", "shape": [10]}
    else:
        assert not os.path.exists(path)


def test_a_timeline_rank_0_cannot_create(hvd, tmp_path_factory):
    """Rank 0 says why (as the C call's error); the job goes on without a
    timeline, as Horovod's."""
    path = str(tmp_path_factory.getbasetemp() / "no" / "timeline.json")
    if hvd.rank() == 0:
        with pytest.raises(hvd.HorovodInternalError,
                           match="cannot write the timeline to .*: No such file or directory"):
            hvd.start_timeline(path)
    else:
        hvd.start_timeline(path)
    hvd.stop_timeline()
    assert hvd.allreduce(torch.ones(1), name="timeline.none", op=hvd.Sum).item() == hvd.size()
