"""DistributedOptimizer and the start-up helpers: several steps of
data-parallel training must leave every rank with the same weights, and
those of one process training on the global batch."""

import pytest
import torch

B = 4  # samples per rank per step


class Net(torch.nn.Module):
    def __init__(self, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.fc1 = torch.nn.Linear(5, 8)
        self.fc2 = torch.nn.Linear(8, 3)
        self.extra = torch.nn.Linear(3, 3)

    def forward(self, x, use_extra=True):
        y = self.fc2(torch.tanh(self.fc1(x)))
        return self.extra(y) if use_extra else y


def batch(step, r, micro=0):
    g = torch.Generator().manual_seed(10000 * step + 100 * r + micro)
    return torch.randn(B, 5, generator=g, dtype=torch.float64), torch.randint(
        0, 3, (B,), generator=g)


def loss_of(model, x, y, **kw):
    return torch.nn.functional.cross_entropy(model(x, **kw), y)


def flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def same_everywhere(hvd, model):
    # Named: after join, ranks have made different numbers of collectives,
    # and an unnamed one ("allgather.noname.<handle>") would not meet, as
    # in Horovod.
    everyone = hvd.allgather(flat(model).unsqueeze(0), name="same_everywhere")
    return all(torch.equal(everyone[0], everyone[i]) for i in range(hvd.size()))


def reference(hvd, steps, passes=1, momentum=0.9):
    """One process, the global batch (every rank's samples) each step."""
    model = Net().double()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=momentum)
    for s in range(steps):
        opt.zero_grad()
        for m in range(passes):
            xs, ys = zip(*[batch(s, r, m) for r in range(hvd.size())])
            loss_of(model, torch.cat(xs), torch.cat(ys)).backward()
        opt.step()
    return flat(model)


def train(hvd, steps, passes=1, **kw):
    model = Net().double()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(),
                                   backward_passes_per_step=passes, **kw)
    for s in range(steps):
        opt.zero_grad()
        for m in range(passes):
            x, y = batch(s, hvd.rank(), m)
            loss_of(model, x, y).backward()
        opt.step()
    return model


def test_matches_one_process(hvd):
    model = train(hvd, 5)
    assert same_everywhere(hvd, model)
    assert torch.allclose(flat(model), reference(hvd, 5), rtol=1e-9, atol=1e-10)


def test_backward_passes_per_step(hvd):
    model = train(hvd, 3, passes=2)
    assert same_everywhere(hvd, model)
    assert torch.allclose(flat(model), reference(hvd, 3, passes=2), rtol=1e-9, atol=1e-10)


def test_fp16_compression(hvd):
    model = train(hvd, 3, compression=hvd.Compression.fp16)
    assert same_everywhere(hvd, model)
    assert torch.allclose(flat(model), reference(hvd, 3), rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("groups", [2, "lists"])
def test_groups(hvd, groups):
    model = Net().double()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = 2 if groups == 2 else [[model.fc1.weight, model.fc1.bias],
                               [model.fc2.weight, model.fc2.bias, model.extra.weight,
                                model.extra.bias]]
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(), groups=g)
    for s in range(3):
        opt.zero_grad()
        x, y = batch(s, hvd.rank())
        loss_of(model, x, y).backward()
        opt.step()
    assert same_everywhere(hvd, model)
    assert torch.allclose(flat(model), reference(hvd, 3), rtol=1e-9, atol=1e-10)


def test_gradient_predivide_and_sum(hvd):
    model = train(hvd, 2, gradient_predivide_factor=2.0)
    assert torch.allclose(flat(model), reference(hvd, 2), rtol=1e-9, atol=1e-10)
    with pytest.raises(ValueError, match="gradient_predivide_factor"):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 op=hvd.Sum, gradient_predivide_factor=2.0)


def test_parameter_without_gradient_on_some_ranks(hvd):
    """Rank 0 skips a layer: its gradient there is zeros, nobody hangs."""
    model = Net().double()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    for s in range(3):
        opt.zero_grad()
        x, y = batch(s, hvd.rank())
        loss_of(model, x, y, use_extra=hvd.rank() != 0).backward()
        opt.step()
    assert same_everywhere(hvd, model)


def test_synchronize_by_hand(hvd):
    model = Net().double()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                   named_parameters=model.named_parameters())
    for s in range(2):
        opt.zero_grad()
        x, y = batch(s, hvd.rank())
        loss_of(model, x, y).backward()
        opt.synchronize()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)
        with opt.skip_synchronize():
            opt.step()
    assert torch.allclose(flat(model), reference(hvd, 2), rtol=1e-9, atol=1e-10)


def test_zero_grad_before_step_is_refused(hvd):
    if hvd.size() == 1:
        pytest.skip("one rank allreduces nothing")
    model = Net().double()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    x, y = batch(0, hvd.rank())
    loss_of(model, x, y).backward()
    with pytest.raises(AssertionError, match="zero_grad"):
        opt.zero_grad()
    opt.step()


def test_bad_named_parameters(hvd):
    model = Net().double()
    named = list(model.named_parameters())
    dup = [("w", p) for _, p in named]
    with pytest.raises(ValueError, match="duplicates: w"):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 named_parameters=dup)
    with pytest.raises(ValueError, match="not named"):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 named_parameters=named[:2])


def test_broadcast_parameters_and_optimizer_state(hvd):
    """Each rank starts from its own weights and its own Adam state; after
    the broadcasts every rank holds rank 0's."""
    me = hvd.rank()
    model = Net(seed=me).double()
    opt = torch.optim.Adam(model.parameters(), lr=0.01 * (me + 1), betas=(0.8, 0.9))
    x, y = batch(0, me)
    loss_of(model, x, y).backward()
    opt.step()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)

    root = Net(seed=0).double()
    ropt = torch.optim.Adam(root.parameters(), lr=0.01, betas=(0.8, 0.9))
    x, y = batch(0, 0)
    loss_of(root, x, y).backward()
    ropt.step()
    assert torch.allclose(flat(model), flat(root))
    assert opt.param_groups[0]["lr"] == 0.01
    for p, rp in zip(model.parameters(), root.parameters()):
        for key in ("exp_avg", "exp_avg_sq"):
            assert torch.allclose(opt.state[p][key], ropt.state[rp][key])
        assert float(opt.state[p]["step"]) == 1.0


def test_broadcast_optimizer_state_fresh(hvd):
    """An optimizer that never stepped gets its state first, as Horovod's."""
    model = Net(seed=0).double()
    opt = hvd.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=0.001 * (hvd.rank() + 1)),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert opt.param_groups[0]["lr"] == 0.001
    assert all("exp_avg" in opt.state[p] for p in model.parameters())


def test_join_uneven_batches(hvd):
    """Rank r has r + 1 batches, then joins: at step k the average is over
    the ranks still giving data; join returns the last rank to join (-1 in
    a job of one, as Horovod)."""
    n, me = hvd.size(), hvd.rank()
    got = []
    for k in range(me + 1):
        got.append(hvd.allreduce(torch.full((3,), float(me + 1)), name="join.%d" % k))
    last = hvd.join()
    for k, out in enumerate(got):
        givers = [r + 1 for r in range(n) if r + 1 > k]
        assert torch.allclose(out, torch.full((3,), sum(givers) / len(givers)))
    assert last == (n - 1 if n > 1 else -1)


def test_join_with_optimizer(hvd):
    """Training with uneven data per rank and join() at the end finishes."""
    model = Net().double()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    for s in range(hvd.rank() + 2):
        opt.zero_grad()
        x, y = batch(s, hvd.rank())
        loss_of(model, x, y).backward()
        opt.step()
    assert hvd.join() == (hvd.size() - 1 if hvd.size() > 1 else -1)


@pytest.mark.parametrize("as_dense", [False, True])
def test_sparse_gradients(hvd, as_dense):
    """An embedding's sparse gradient: gathered from every rank (or
    allreduced as dense), the same step as one process on the global
    batch."""
    def model_of():
        torch.manual_seed(3)
        return torch.nn.Sequential(torch.nn.Embedding(20, 4, sparse=True),
                                   torch.nn.Flatten(), torch.nn.Linear(8, 2)).double()

    def ids(step, r):
        return torch.randint(0, 20, (B, 2), generator=torch.Generator().manual_seed(
            77 * step + r))

    model = model_of()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.5),
                                   named_parameters=model.named_parameters(),
                                   sparse_as_dense=as_dense)
    ref = model_of()
    ropt = torch.optim.SGD(ref.parameters(), lr=0.5)
    for s in range(3):
        opt.zero_grad()
        model(ids(s, hvd.rank())).sum().div(B).backward()
        opt.step()
        ropt.zero_grad()
        everyone = torch.cat([ids(s, r) for r in range(hvd.size())])
        ref(everyone).sum().div(B * hvd.size()).backward()
        ropt.step()
    assert same_everywhere(hvd, model)
    assert torch.allclose(flat(model), flat(ref), rtol=1e-9, atol=1e-10)
