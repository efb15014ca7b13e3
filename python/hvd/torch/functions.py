"""Horovod's helpers for starting every rank from the same state:
broadcast_parameters, broadcast_optimizer_state, broadcast_object,
allgather_object."""

import io
import pickle

import torch

from hvd.torch.mpi_ops import (_check_set, allgather, broadcast_, broadcast_async_,
                               global_process_set, rank, synchronize)


def broadcast_parameters(params, root_rank):
    """Overwrite every rank's parameters with root_rank's, in place.
    params: a model's state_dict(), or a list of parameters or of (name,
    parameter) pairs such as named_parameters()."""
    if isinstance(params, dict):
        params = sorted(params.items())
    elif isinstance(params, list):
        params = [p if isinstance(p, tuple) else (None, p) for p in params]
    else:
        raise ValueError("hvd.broadcast_parameters: params must be a state_dict or a list "
                         "of parameters, not %s" % type(params).__name__)
    handles = []
    for name, p in params:
        data = p.data if isinstance(p, torch.nn.Parameter) else p
        handles.append(broadcast_async_(data, root_rank, name))
    for h in handles:
        synchronize(h)


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """root_rank's obj (anything pickle can carry), on every rank (of
    process_set; root_rank is a rank of the job)."""
    _check_set(process_set)
    name = name or type(obj).__name__
    if rank() == root_rank:
        buf = io.BytesIO()
        pickle.dump(obj, buf)
        data = torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)
        sz = torch.tensor([data.numel()], dtype=torch.int64)
        broadcast_(sz, root_rank, name + ".sz", process_set=process_set)
    else:
        sz = torch.tensor([0], dtype=torch.int64)
        broadcast_(sz, root_rank, name + ".sz", process_set=process_set)
        data = torch.empty(int(sz.item()), dtype=torch.uint8)
    broadcast_(data, root_rank, name + ".t", process_set=process_set)
    if rank() == root_rank:
        return obj
    return pickle.loads(data.numpy().tobytes())


def allgather_object(obj, name=None, process_set=global_process_set):
    """Every rank's obj (of process_set), as a list in rank order."""
    _check_set(process_set)
    name = name or type(obj).__name__
    data = torch.frombuffer(bytearray(pickle.dumps(obj)), dtype=torch.uint8)
    sizes = allgather(torch.tensor([data.numel()], dtype=torch.int64), name=name + ".sz",
                      process_set=process_set)
    gathered = allgather(data, name=name + ".t", process_set=process_set).numpy().tobytes()
    out, at = [], 0
    for n in sizes.tolist():
        out.append(pickle.loads(gathered[at:at + n]))
        at += n
    return out


def broadcast_optimizer_state(optimizer, root_rank, model=None):
    """Overwrite every rank's optimizer state (its tensors, its per-
    parameter values and every param group's options, such as the
    learning rate) with root_rank's. An optimizer that has not stepped yet
    is first given its state by one step with zero gradients, as Horovod
    does."""
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("hvd.broadcast_optimizer_state: cannot broadcast torch.optim.LBFGS "
                         "state")
    state_dict = optimizer.state_dict()
    if len(state_dict["state"]) == 0:
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.requires_grad and p.grad is None:
                    p.grad = torch.zeros_like(p)
        # A DistributedOptimizer's step() would allreduce, and only this
        # rank may be here: step the wrapped optimizer's class instead.
        if getattr(optimizer, "_hvd_distributed", False):
            super(optimizer.__class__, optimizer).step()
        else:
            optimizer.step()
        state_dict = optimizer.state_dict()
    if len(state_dict["state"]) == 0:
        return  # a stateless optimizer

    # Options of every group (lr, momentum, betas, ...): root's win.
    options = [{k: v for k, v in g.items() if k != "params"} for g in state_dict["param_groups"]]
    options = broadcast_object(options, root_rank, name="optimizer.options")
    for group, opts in zip(optimizer.param_groups, options):
        group.update(opts)

    # Per-parameter state, in the groups' order: tensors in place, other
    # values (a step count kept as a number) by pickling.
    tensors, values = [], []
    for group in state_dict["param_groups"]:
        for pid in group["params"]:
            for key, v in sorted(state_dict["state"].get(pid, {}).items()):
                if torch.is_tensor(v):
                    tensors.append(("optimizer.state.%d.%s" % (pid, key), v))
                else:
                    values.append((pid, key, v))
    broadcast_parameters(tensors, root_rank)
    if values:
        got = broadcast_object([v for _, _, v in values], root_rank, name="optimizer.values")
        for (pid, key, _), v in zip(values, got):
            state_dict["state"][pid][key] = v
