"""hvd.elastic's pieces inside one world (np 1, 2, 3): TorchState's
commit, restore and sync, ElasticSampler's split of an epoch, and
run()'s handling of a reset, of new hosts, and of other failures. The
resets of a real elastic job are in test_elastic.py."""

import pytest
import torch

from hvd import _lib


def make(hvd, seed):
    torch.manual_seed(seed)
    model = torch.nn.Linear(4, 2)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                   named_parameters=model.named_parameters())
    return model, opt


def step(hvd, model, opt, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(8, 4, generator=g)
    opt.zero_grad()
    model(x).pow(2).sum().backward()
    opt.step()


def test_commit_then_restore_puts_everything_back(hvd):
    model, opt = make(hvd, 1)
    sampler = hvd.elastic.ElasticSampler(list(range(20)), seed=3)
    state = hvd.elastic.TorchState(model, opt, sampler=sampler, epoch=2, log=["a"])
    step(hvd, model, opt, 5)
    sampler.record_batch(0, 2)
    state.commit()
    weights = [p.detach().clone() for p in model.parameters()]
    momentum = [v["momentum_buffer"].clone() for v in opt.state_dict()["state"].values()]
    done = set(sampler.processed_indices)

    step(hvd, model, opt, 6)
    sampler.record_batch(1, 2)
    state.epoch = 7
    state.log.append("b")
    state.restore()

    assert all(torch.equal(a, b) for a, b in zip(weights, model.parameters()))
    assert all(torch.equal(a, v["momentum_buffer"])
               for a, v in zip(momentum, opt.state_dict()["state"].values()))
    assert sampler.processed_indices == done and len(done) == 2
    assert state.epoch == 2 and state.log == ["a"]
    # The attribute names the same objects the program holds.
    assert state.model is model and state.optimizer is opt and state.sampler is sampler


def test_sync_gives_every_rank_rank0s_state(hvd):
    model, opt = make(hvd, 100 + hvd.rank())  # different weights per rank
    state = hvd.elastic.TorchState(model, opt, epoch=hvd.rank() * 10, name="r%d" % hvd.rank())
    state.sync()
    ref, _ = make(hvd, 100)
    assert all(torch.equal(a, b) for a, b in zip(ref.parameters(), model.parameters()))
    assert state.epoch == 0 and state.name == "r0"


def test_sampler_splits_what_is_left_of_the_epoch(hvd):
    n = 23
    sampler = hvd.elastic.ElasticSampler(list(range(n)), shuffle=True, seed=7)
    sampler.set_epoch(4)
    shares = hvd.allgather_object(list(sampler))
    assert all(len(s) == len(sampler) for s in shares)
    assert set().union(*map(set, shares)) == set(range(n))
    # The same order on every rank, another one each epoch.
    first = hvd.allgather_object(sampler.remaining_indices)
    assert all(f == first[0] for f in first)
    sampler.set_epoch(5)
    assert sampler.remaining_indices != first[0]

    # Two batches of 3 done on every rank: after a sync the rest of the
    # epoch, and only that, is split again.
    sampler.set_epoch(4)
    sampler.record_batch(0, 3)
    sampler.record_batch(1, 3)
    state = hvd.elastic.TorchState(sampler=sampler)
    state.sync()
    done = set().union(*map(set, (s[:6] for s in shares)))
    assert sampler.processed_indices == done
    rest = hvd.allgather_object(list(sampler))
    assert set().union(*map(set, rest)) == set(range(n)) - done
    assert len(sampler) == -(-(n - len(done)) // hvd.size())


def test_check_host_updates_is_quiet_without_new_hosts(hvd):
    state = hvd.elastic.ObjectState(lambda obj: hvd.broadcast_object(obj, 0), hvd.rank, x=1)
    state.commit()
    assert _lib.lib.hvd_elastic_hosts_updated() == 0


def test_host_messages_as_horovods_state_keeps_them(hvd):
    """Horovod's State._host_messages (a queue of (timestamp, update))
    and _last_updated_timestamp: scripts read and set them; a message
    newer than the last acted on raises HostsUpdatedInterrupt on every
    rank at the commit, rank 0's view deciding."""
    import queue

    from hvd.elastic import HostUpdateResult, ObjectState

    state = ObjectState(lambda obj: hvd.broadcast_object(obj, 0), hvd.rank, x=1)
    assert isinstance(state._host_messages, queue.Queue)
    assert state._host_messages.empty() and state._last_updated_timestamp == 0
    if hvd.rank() == 0:
        state.on_hosts_updated(7, HostUpdateResult.added)
        assert not state._host_messages.empty()
    with pytest.raises(hvd.elastic.HostsUpdatedInterrupt):
        state.commit()
    assert state._last_updated_timestamp == 7
    assert state._host_messages.empty()
    state.commit()  # nothing newer: quiet
    if hvd.rank() == 0:
        state.on_hosts_updated(5, HostUpdateResult.removed)  # older: no update
    state.commit()


def test_run_restores_and_rejoins_after_a_reset_only(hvd):
    from hvd.elastic import ObjectState, run_fn

    calls, resets = [], []

    def bcast(obj):
        return obj

    state = ObjectState(bcast, hvd.rank, value=1)
    state.register_reset_callbacks([lambda: resets.append("callback")])

    def train(st, fail):
        calls.append(st.value)
        st.value += 1
        if fail:
            e = fail.pop(0)
            raise e
        return st.value

    # A reset: back to the commit (value 1), re-join, callbacks, again.
    wrapped = run_fn(train, lambda: resets.append("reset"))
    assert wrapped(state, [hvd.HorovodInternalError("lost", _lib.ERESET)]) == 2
    assert calls == [1, 1] and resets == ["reset", "callback"]

    # New hosts: the state is kept as it is (no restore).
    calls.clear()
    resets.clear()
    state.value = 5
    state.commit()  # the first sync starts from the last commit
    assert wrapped(state, [hvd.HostsUpdatedInterrupt(True)]) == 7
    assert calls == [5, 6] and resets == ["reset", "callback"]

    # Any other failure is the program's: raised, no retry.
    calls.clear()
    with pytest.raises(hvd.HorovodInternalError, match="disagree"):
        wrapped(state, [hvd.HorovodInternalError("ranks disagree", _lib.EINVAL)])
    assert len(calls) == 1


def test_failed_collective_carries_libhvds_code(hvd):
    if hvd.size() == 1:
        pytest.skip("a mismatch needs two ranks")
    t = torch.ones(2 + hvd.rank())  # different shapes: ranks disagree
    with pytest.raises(hvd.HorovodInternalError) as err:
        hvd.allreduce(t, name="elastic.mismatch")
    assert err.value.rc is not None and err.value.rc < 0
    assert err.value.rc != _lib.ERESET  # not elastic: never a reset
