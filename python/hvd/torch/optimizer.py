"""DistributedOptimizer: Horovod's wrapper of a torch optimizer.

A hook on each parameter's gradient accumulator starts the gradient's
allreduce the moment backward() has accumulated it, so communication
overlaps the rest of backward and libhvd fuses whatever is ready in the
same cycle; step() waits for them all, then steps the wrapped optimizer.
"""

import contextlib
import warnings

import torch

from hvd._lib import lib
from hvd.torch.compression import Compression
from hvd.torch.mpi_ops import (Adasum, Average, _check_set, allreduce_async_,
                               global_process_set, grouped_allreduce_async_, size,
                               sparse_allreduce_async, synchronize)


def _split(items, n):
    """items in n nearly equal consecutive parts."""
    q, r = divmod(len(items), n)
    out, at = [], 0
    for i in range(n):
        k = q + (1 if i < r else 0)
        out.append(items[at:at + k])
        at += k
    return [g for g in out if g]


def _names(all_params, named_parameters):
    """Each parameter's name (its allreduce's), checked as Horovod checks
    them: tuples, unique, every parameter named."""
    if named_parameters is not None:
        named_parameters = list(named_parameters)
    else:
        named_parameters = [("allreduce.noname.%s" % i, p) for i, p in enumerate(all_params)]
    if any(not isinstance(p, tuple) or len(p) != 2 for p in named_parameters):
        raise ValueError("named_parameters should be a sequence of tuples (name, "
                         "parameter), usually produced by model.named_parameters().")
    names = [k for k, _ in named_parameters]
    dups = sorted({k for k in names if names.count(k) > 1})
    if dups:
        raise ValueError("Parameter names in named_parameters must be unique. Found "
                         "duplicates: %s" % ", ".join(dups))
    named_ids = {id(v) for _, v in named_parameters}
    unnamed = [p for p in all_params if id(p) not in named_ids]
    if unnamed:
        raise ValueError("named_parameters was specified, but one or more model parameters "
                         "were not named. Python object ids: %s"
                         % ", ".join(str(id(p)) for p in unnamed))
    return {v: k for k, v in named_parameters}


def _hook_every(opt):
    """opt._make_hook(p) on every parameter that takes a gradient, run
    once backward has accumulated p's gradient."""
    for group in opt.param_groups:
        for p in group["params"]:
            if not p.requires_grad:
                continue
            if hasattr(p, "register_post_accumulate_grad_hook"):
                p.register_post_accumulate_grad_hook(opt._make_hook(p))
            else:
                # The accumulator of p.grad: its hook runs once the
                # gradient is summed into p.grad.
                acc = p.expand_as(p).grad_fn.next_functions[0][0]
                acc.register_hook(opt._make_hook(p))
                opt._grad_accs.append(acc)


def _last_pass(opt, p):
    """A hook counts p's backward pass: True on the step's last one (its
    gradient is complete). One pass too many is an error."""
    if p in opt._handles and opt._handles[p][0] is not None:
        if opt._allreduce_delay[p] <= 0:
            raise AssertionError(
                "Gradients were computed more than backward_passes_per_step times "
                "before call to step(). Increase backward_passes_per_step to "
                "accumulate gradients locally.")
    opt._allreduce_delay[p] -= 1
    return opt._allreduce_delay[p] == 0


def _no_race(opt):
    """zero_grad() between backward() and step() would race the
    allreduces still writing the gradients."""
    if opt._handles:
        raise AssertionError("optimizer.zero_grad() was called after loss.backward() but "
                             "before optimizer.step() or optimizer.synchronize(). This is "
                             "prohibited as it can cause a race condition.")


class _DistributedOptimizer(torch.optim.Optimizer):
    _hvd_distributed = True

    def __init__(self, params, named_parameters, compression, backward_passes_per_step=1,
                 op=Average, gradient_predivide_factor=1.0, groups=None,
                 sparse_as_dense=False, process_set=global_process_set):
        super(self.__class__, self).__init__(params)
        _check_set(process_set)
        self._compression = compression
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        self.process_set = process_set
        self.backward_passes_per_step = backward_passes_per_step

        all_params = [p for g in self.param_groups for p in g["params"]]
        self._parameter_names = _names(all_params, named_parameters)

        self._requires_update = {p for p in all_params if p.requires_grad}
        self._handles = {}
        self._grad_accs = []
        self._allreduce_delay = {p: backward_passes_per_step for p in all_params}
        self._synchronized = False
        self._should_synchronize = True

        self._p_to_group = {}
        self._group_counts = {}
        if groups is not None:
            if isinstance(groups, int):
                if groups <= 0:
                    raise ValueError("groups must be a positive int or a list of lists of "
                                     "parameters, not %d" % groups)
                # Reversed: backward computes gradients roughly back to front.
                plist = [p for p in all_params if p.requires_grad][::-1]
                glist = _split(plist, groups)
            elif isinstance(groups, list) and all(isinstance(g, list) for g in groups):
                glist = groups
            else:
                raise ValueError("groups must be an int or a list of lists of parameters")
            for g in glist:
                key = tuple(g)
                for p in g:
                    if p not in self._parameter_names:
                        raise ValueError("a parameter in groups is not one of the optimizer's")
                    self._p_to_group[p] = key
                self._group_counts[key] = 0

        # An elastic job may grow from one worker: its hooks are there.
        if size() > 1 or lib.hvd_elastic_generation() > 0:
            _hook_every(self)

    # --- hooks ----------------------------------------------------------

    def _make_hook(self, p):
        def hook(*ignore):
            handle, ctx = None, None
            if _last_pass(self, p):
                if p in self._p_to_group:
                    key = self._p_to_group[p]
                    self._group_counts[key] += 1
                    if self._group_counts[key] == len(key):
                        handle, ctx = self._grouped_allreduce_grad_async(key)
                        self._handles[key] = (handle, ctx)
                        for q in key:
                            self._handles.pop(q, None)
                        self._group_counts[key] = 0
                        return
                    self._handles[p] = (None, None)
                    return
                handle, ctx = self._allreduce_grad_async(p)
            self._handles[p] = (handle, ctx)

        return hook

    # --- allreduce of one gradient ---------------------------------------

    def _scales(self):
        if self.op == Average:
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _grad(self, p):
        if p.grad is None:
            # No gradient here this step, but other ranks may have one:
            # send zeros, as Horovod does, so that nobody waits forever.
            p.grad = torch.zeros_like(p)
        if p.grad.is_sparse and self.sparse_as_dense:
            p.grad = p.grad.to_dense()
        return p.grad

    def _allreduce_grad_async(self, p):
        name = self._parameter_names.get(p)
        grad = self._grad(p)
        if grad.is_sparse:
            return (sparse_allreduce_async(grad.coalesce(), name, self.op, self.process_set),
                    ("sparse",))
        compressed, ctx = self._compression.compress(grad)
        pre, post = self._scales()
        handle = allreduce_async_(compressed, name=name, op=self.op, prescale_factor=pre,
                                  postscale_factor=post, process_set=self.process_set)
        return handle, (compressed, ctx)

    def _grouped_allreduce_grad_async(self, params):
        grads = [self._grad(p) for p in params]
        if any(g.is_sparse for g in grads):
            raise NotImplementedError("sparse gradients cannot be grouped; pass "
                                      "sparse_as_dense=True")
        pairs = [self._compression.compress(g) for g in grads]
        pre, post = self._scales()
        name = "group." + self._parameter_names[params[0]]
        handle = grouped_allreduce_async_([c for c, _ in pairs], name=name, op=self.op,
                                          prescale_factor=pre, postscale_factor=post,
                                          process_set=self.process_set)
        return handle, pairs

    def _finish(self, p, handle, ctx):
        if ctx == ("sparse",):  # handle: sparse_allreduce_async's callable
            p.grad = handle().coalesce()
            return
        compressed, cctx = ctx
        out = synchronize(handle)
        p.grad.set_(self._compression.decompress(out, cctx))

    def _finish_group(self, params, handle, pairs):
        outs = synchronize(handle)
        for p, out, (_, cctx) in zip(params, outs, pairs):
            p.grad.set_(self._compression.decompress(out, cctx))

    def _hvd_forget(self):
        """Drop what a failed step left (hvd.elastic, after a reset): the
        handles of the old world and the passes counted toward them."""
        self._handles.clear()
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step
        for key in self._group_counts:
            self._group_counts[key] = 0
        self._synchronized = False

    # --- Horovod's public methods ----------------------------------------

    def synchronize(self):
        """Wait for every gradient's allreduce; start those that backward
        did not (a parameter with no gradient on this rank this step)."""
        if size() == 1 and not self._handles:
            # Alone, with no hook (an elastic job's hooks stay when it
            # shrinks to one: their handles are finished below).
            self._synchronized = True
            return
        done = set()
        for k in self._handles:
            done.update(k if isinstance(k, tuple) else (k,))
        for p in self._requires_update - done:
            if p in self._p_to_group:
                continue
            self._handles[p] = self._allreduce_grad_async(p)
        # Groups with members that never got a gradient: start them whole.
        for key in self._group_counts:
            if key not in self._handles:
                for q in key:
                    self._handles.pop(q, None)
                self._handles[key] = self._grouped_allreduce_grad_async(key)
                self._group_counts[key] = 0
        for k, (handle, ctx) in list(self._handles.items()):
            if handle is None:
                self._handles[k] = self._allreduce_grad_async(k)
        try:
            for k, (handle, ctx) in self._handles.items():
                if isinstance(k, tuple):
                    self._finish_group(k, handle, ctx)
                    for q in k:
                        self._allreduce_delay[q] = self.backward_passes_per_step
                else:
                    self._finish(k, handle, ctx)
                    self._allreduce_delay[k] = self.backward_passes_per_step
        finally:
            self._handles.clear()
        self._synchronized = True

    @contextlib.contextmanager
    def skip_synchronize(self):
        """Within it, step() does not synchronize: for a synchronize()
        called by hand before step(), e.g. to clip gradients."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() "
                              "context after optimizer.synchronize(). This can cause training "
                              "slowdown. You may want to consider using "
                              "optimizer.skip_synchronize() context if you use "
                              "optimizer.synchronize() in your code.")
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, *args, **kwargs):
        _no_race(self)
        return super(self.__class__, self).zero_grad(*args, **kwargs)


class _DistributedAdasumOptimizer(torch.optim.Optimizer):
    """op=hvd.Adasum, Horovod's way: Adasum combines the ranks' updates,
    not their gradients. Once backward has a parameter's gradient, its
    hook steps the wrapped optimizer on that parameter alone (its state,
    momentum say, moves as it would alone) and starts the Adasum of the
    step's delta, the new value less the old; step() adds each combined
    delta to the parameter's value before the step. Adasum is no linear
    function of the gradients, so the delta is what it combines: the
    learning rate, momentum and the rest act on each rank's own gradient
    first."""

    _hvd_distributed = True

    def __init__(self, params, named_parameters, compression, backward_passes_per_step=1):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        all_params = [p for g in self.param_groups for p in g["params"]]
        self._parameter_names = _names(all_params, named_parameters)
        self.backward_passes_per_step = backward_passes_per_step
        self._allreduce_delay = {p: backward_passes_per_step for p in all_params}
        self._requires_update = {p for p in all_params if p.requires_grad}
        self._handles = {}
        self._grad_accs = []
        # Each parameter's value before its step (the delta's base).
        self._starting_models = {p: torch.zeros_like(p, requires_grad=False)
                                 for p in self._requires_update}
        _hook_every(self)

    def set_backward_passes_per_step(self, passes):
        self.backward_passes_per_step = passes
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = passes

    def _make_hook(self, p):
        def hook(*ignore):
            self._handles[p] = self._delta_async(p) if _last_pass(self, p) else (None, None)

        return hook

    def _delta_async(self, p):
        """Step the wrapped optimizer on p alone; p then holds the step's
        delta, whose Adasum starts."""
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        start = self._starting_models[p]
        kept = [g["params"] for g in self.param_groups]
        for g in self.param_groups:
            g["params"] = [p] if any(p is q for q in g["params"]) else []
        try:
            start.copy_(p.data)
            super(self.__class__, self).step()
            p.data.sub_(start)
        finally:
            for g, params in zip(self.param_groups, kept):
                g["params"] = params
        compressed, ctx = self._compression.compress(p.data)
        handle = allreduce_async_(compressed, name=self._parameter_names.get(p), op=Adasum)
        return handle, (compressed, ctx)

    def _hvd_forget(self):
        """After a reset (hvd.elastic): the failed step's handles and
        passes go (its parameters, deltas then, come back with the
        model's committed state)."""
        self._handles.clear()
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step

    def synchronize(self):
        """Nothing to do before step(): step() applies the deltas."""

    @contextlib.contextmanager
    def skip_synchronize(self):
        raise AssertionError("Skipping synchronization is not supported when using the "
                             "Adasum optimizer.")
        yield  # pragma: no cover  (a generator, for contextmanager)

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for p in self._requires_update - set(self._handles):
            self._handles[p] = self._delta_async(p)
        try:
            for p, (handle, ctx) in list(self._handles.items()):
                if handle is None:  # fewer passes than backward_passes_per_step
                    handle, ctx = self._delta_async(p)
                delta = self._compression.decompress(synchronize(handle), ctx[1])
                start = self._starting_models[p]
                start.add_(delta)
                p.data.copy_(start)
                self._allreduce_delay[p] = self.backward_passes_per_step
        finally:
            self._handles.clear()
        return loss

    def zero_grad(self, *args, **kwargs):
        _no_race(self)
        return super(self.__class__, self).zero_grad(*args, **kwargs)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         process_set=global_process_set):
    """Wrap a torch optimizer so that step() applies the gradients
    averaged (op) over every rank, as horovod.torch.DistributedOptimizer.

    named_parameters: model.named_parameters(), to name each allreduce
    (unique names; every parameter named). backward_passes_per_step: how
    many backward() calls accumulate locally before the allreduce.
    gradient_predivide_factor: the average's division, split before and
    after the sum. groups: an int (that many groups, in backward order) or
    lists of parameters, each allreduced as one group (num_groups is its
    deprecated name). sparse_as_dense: allreduce sparse gradients as dense
    tensors instead of gathering them. op=hvd.Adasum (more than one rank,
    any number of them; on CUDA, each host's ranks average and the hosts
    combine): each rank steps the
    wrapped optimizer on its own gradients and Adasum combines the
    updates (_DistributedAdasumOptimizer), as Horovod does."""
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if num_groups != 0:
        warnings.warn("Parameter `num_groups` has been replaced by `groups`", DeprecationWarning)
        if groups is None:
            groups = num_groups
    if op == Adasum and size() > 1:
        if process_set != global_process_set:
            raise NotImplementedError("the Adasum optimizer combines over every rank: "
                                      "process_set must be the global one")
        cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
                   dict(_DistributedAdasumOptimizer.__dict__))
        return cls(optimizer.param_groups, named_parameters, compression,
                   backward_passes_per_step)
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedOptimizer.__dict__))
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step,
               op, gradient_predivide_factor, groups, sparse_as_dense, process_set)
