"""hvd.elastic for PyTorch (horovod.torch.elastic): run, TorchState and
ElasticSampler, over hvd.elastic's loop (python/hvd/elastic.py).

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            for batch_idx, (x, y) in enumerate(loader):
                ...
                state.sampler.record_batch(batch_idx, batch_size)
                if batch_idx % 10 == 0:
                    state.commit()

    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0)
    train(state)

under ``hvdrun --min-np 2 -np 4 ...``.
"""

import copy
import math
import random

import torch

from hvd.elastic import ObjectState, State, join_world, run_fn
from hvd.exceptions import HorovodInternalError, HostsUpdatedInterrupt
from hvd.torch.functions import (allgather_object, broadcast_object,
                                 broadcast_optimizer_state,
                                 broadcast_parameters)
from hvd.torch.mpi_ops import _elastic_init, rank, shutdown, size

__all__ = ["run", "State", "ObjectState", "TorchState", "ElasticSampler",
           "HorovodInternalError", "HostsUpdatedInterrupt"]


def _reset():
    join_world(shutdown, _elastic_init)


def run(func):
    """Decorator: func(state, ...) goes on through the job's resets (see
    hvd.elastic.run_fn); state is a TorchState."""
    return run_fn(func, _reset)


class _Handler:
    """Saves and restores an object through its state_dict(); sync is
    the subclass's."""

    def __init__(self, value):
        self.value = value
        self.save()

    def save(self):
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self):
        self.value.load_state_dict(copy.deepcopy(self._saved))


class _ModelHandler(_Handler):
    def sync(self):
        broadcast_parameters(self.value.state_dict(), root_rank=0)


class _OptimizerHandler(_Handler):
    def restore(self):
        super().restore()
        forget = getattr(self.value, "_hvd_forget", None)
        if forget is not None:
            forget()  # the failed step's handles belong to the old world

    def sync(self):
        broadcast_optimizer_state(self.value, root_rank=0)


class _SamplerHandler(_Handler):
    def sync(self):
        # What any rank has processed this epoch is done, for all; then
        # rank 0's epoch and that union, split over the new world.
        done = set()
        for got in allgather_object(self.value.processed_indices, name="elastic.sampler"):
            done |= got
        state = self.value.state_dict()
        state["processed_indices"] = done
        self.value.load_state_dict(broadcast_object(state, 0, name="elastic.sampler.state"))


def _handler(value):
    if isinstance(value, torch.nn.Module):
        return _ModelHandler(value)
    if isinstance(value, torch.optim.Optimizer):
        return _OptimizerHandler(value)
    if isinstance(value, ElasticSampler):
        return _SamplerHandler(value)
    return None


class TorchState(ObjectState):
    """The model's parameters and buffers, the optimizer's state, any
    ElasticSampler, and other attributes (epoch=0, ...: anything pickle
    can carry), saved by commit(), put back by a reset, and synced from
    rank 0 whenever the world changes."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        handlers, plain = {}, {}
        kwargs.update(model=model, optimizer=optimizer)
        for name, value in kwargs.items():
            h = _handler(value) if value is not None else None
            if h is not None:
                handlers[name] = h
            elif name not in ("model", "optimizer"):
                plain[name] = value
        object.__setattr__(self, "_handlers", handlers)
        for name, h in handlers.items():
            object.__setattr__(self, name, h.value)
        super().__init__(bcast_object=lambda obj: broadcast_object(obj, 0, name="elastic.state"),
                         get_rank=rank, **plain)

    def __setattr__(self, name, value):
        handlers = self.__dict__.get("_handlers", {})
        if name in handlers:
            new = _handler(value)
            if new is None:
                raise ValueError("hvd.elastic.TorchState: %s must stay a %s"
                                 % (name, type(handlers[name].value).__name__))
            handlers[name] = new
        super().__setattr__(name, value)

    def save(self):
        for h in self._handlers.values():
            h.save()
        super().save()

    def restore(self):
        for h in self._handlers.values():
            h.restore()
        super().restore()

    def sync(self):
        for h in self._handlers.values():
            h.sync()
        super().sync()


class ElasticSampler(torch.utils.data.Sampler):
    """A DistributedSampler that survives resets: each rank reads its
    share of the epoch's indices not yet processed (record_batch marks
    them); after a reset or growth the rest of the epoch is split anew
    over the new world. Shuffled by seed + epoch, the same on every rank;
    the share is padded so that every rank has as many batches."""

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_indices = set()
        self.indices = []
        self.reset()

    def set_epoch(self, epoch):
        """A new epoch: nothing of it is processed yet."""
        self.epoch = epoch
        self.processed_indices = set()
        self.reset()

    def get_indices(self, batch_idx, batch_size):
        """This rank's indices of its batch batch_idx."""
        start = batch_idx * batch_size
        return self.indices[start:min(start + batch_size, len(self.indices))]

    def record_batch(self, batch_idx, batch_size):
        self.record_indices(self.get_indices(batch_idx, batch_size))

    def record_indices(self, indices):
        self.processed_indices.update(indices)

    def state_dict(self):
        return {"epoch": self.epoch, "processed_indices": set(self.processed_indices)}

    def load_state_dict(self, state):
        self.epoch = state["epoch"]
        self.processed_indices = set(state["processed_indices"])
        self.reset()

    def reset(self):
        """Split what is left of the epoch over the world as it is now."""
        self.num_replicas = size()
        self.rank = rank()
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        self.remaining_indices = [i for i in order if i not in self.processed_indices]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas
        mine = self.remaining_indices[:]
        if mine:
            while len(mine) < self.total_size:
                mine += mine[:self.total_size - len(mine)]
        self.indices = mine[self.rank:self.total_size:self.num_replicas]

    def __iter__(self):
        return iter(list(self.indices))

    def __len__(self):
        return self.num_samples
