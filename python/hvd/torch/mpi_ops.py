"""horovod.torch's collectives over libhvd.

Every call maps its tensors to pointers, names the operation the way
Horovod does ("allreduce.<name>", or "allreduce.noname.<N>", N counted
in its process set) and
hands it to libhvd's *_async call; libhvd negotiates, fuses and runs it
on its background thread. A handle is an int, as in Horovod; poll() and
synchronize() take it. The tensors an operation reads or writes are kept
alive until synchronize() returns.
"""

import atexit
import ctypes
import itertools
import os
import threading
import warnings

import torch

from hvd import _lib
from hvd._lib import check, lib
from hvd.exceptions import HorovodInternalError
from hvd.torch.compression import Compression

# Horovod's values for its reduction ops (horovod.common.basics).
Average, Sum, Adasum, Min, Max, Product = 0, 1, 2, 3, 4, 5
# ... and libhvd's (enum hvd_op).
_C_OP = {Sum: 0, Average: 1, Min: 2, Max: 3, Product: 4, Adasum: 5}

# enum hvd_dtype.
_C_DTYPE = {
    torch.uint8: 0,
    torch.int8: 1,
    torch.int32: 2,
    torch.int64: 3,
    torch.float16: 4,
    torch.bfloat16: 5,
    torch.float32: 6,
    torch.float64: 7,
    torch.int16: 8,
    # libhvd's bool: a byte of 0 or 1, reduced as torch.distributed does
    # (Sum and Max: or; Min and Product: and), and no uint8 to the check
    # that ranks agree.
    torch.bool: 9,
    # A complex number is two floats, its real and imaginary parts: moved
    # and summed as such (_width).
    torch.complex64: 6,
    torch.complex128: 7,
}
_COMPLEX = frozenset((torch.complex64, torch.complex128))
_ODD = _COMPLEX | {torch.bool}  # with ops of their own (_c_reduce)
_OP_NAMES = {Average: "Average", Sum: "Sum", Adasum: "Adasum", Min: "Min", Max: "Max",
             Product: "Product"}


# --- the job -------------------------------------------------------------


def init(comm=None, process_sets=None):
    """Start libhvd: read the rank environment hvdrun (or mpirun) set and
    connect to the other ranks. Without one, this process is a job of one.
    process_sets: ProcessSet objects (or rank lists) that the job has from
    the start, each then given its id; or "dynamic": sets may be added and
    removed later (as HOROVOD_DYNAMIC_PROCESS_SETS=1). Calling it again
    while running does nothing, as in Horovod."""
    if comm is not None:
        raise NotImplementedError("hvd.torch.init: libhvd takes no MPI communicator; "
                                  "start the job with hvdrun (or mpirun)")
    global _counter
    if lib.hvd_initialized():
        return
    if isinstance(process_sets, str):
        if process_sets != "dynamic":
            raise ValueError("hvd.torch.init: process_sets is a list of ProcessSet or "
                             "'dynamic', not %r" % process_sets)
        os.environ["HOROVOD_DYNAMIC_PROCESS_SETS"] = "1"
        process_sets = None
    sets = [ps if isinstance(ps, ProcessSet) else ProcessSet(ps)
            for ps in (process_sets or [])]
    for ps in sets:
        if ps.ranks is None:
            raise ValueError("hvd.torch.init: %s has no ranks" % ps)
    _handles.clear()
    # Handles, and unnamed operations' numbers in each set, count from 1
    # again on every rank, as Horovod's handle manager does at each init.
    _counter = itertools.count(1)
    _noname.clear()
    # Each set once (a clone of one is left without an id, below).
    distinct = list({tuple(ps.ranks): ps for ps in reversed(sets)}.keys())[::-1]
    ranks = [r for rs in distinct for r in rs]
    counts = [len(rs) for rs in distinct]
    check(lib.hvd_init_process_sets((ctypes.c_int * max(len(ranks), 1))(*ranks),
                                    (ctypes.c_int * max(len(counts), 1))(*counts),
                                    len(counts)), "hvd.init")
    _live_sets.clear()
    _bind_sets(sets)
    atexit.register(shutdown)  # a script that ends without shutdown()


def _bind_sets(sets):
    """Give each ProcessSet its id, by its ranks, from libhvd's table (a
    set of every rank is the job's, 0); one that libhvd has not (an
    elastic job that shrank below its ranks), or a second object of the
    same ranks, is left without."""
    global_process_set.ranks = list(range(size()))
    by_ranks = {}
    n = lib.hvd_number_of_process_sets()
    ids = (ctypes.c_int * max(n, 1))()
    lib.hvd_process_set_ids(ids, n)
    for i in ids[:n]:
        k = lib.hvd_process_set_size(i)
        rs = (ctypes.c_int * max(k, 1))()
        lib.hvd_process_set_ranks(i, rs, k)
        by_ranks[tuple(rs[:k])] = i
    seen = set()
    for ps in sets:
        ps.process_set_id = by_ranks.get(tuple(ps.ranks))
        if ps.process_set_id is None:
            warnings.warn("hvd.torch: %s is not in this job of %d ranks; it is left out"
                          % (ps, size()))
        elif ps.process_set_id in seen:
            ps.process_set_id = None  # a clone, as Horovod invalidates them
        else:
            seen.add(ps.process_set_id)
            if ps.process_set_id != 0:  # the job's own set is always there
                _live_sets.append(ps)


def _elastic_init():
    """An elastic job's next world, with the process sets of the last one
    (those given to init and those added since) made again, as Horovod's
    elastic mode re-creates them."""
    sets = list(_live_sets)
    for ps in sets:
        ps.process_set_id = None
    init(process_sets=sets)


def shutdown():
    """Stop libhvd; operations still in flight fail."""
    lib.hvd_shutdown()


def is_initialized():
    return bool(lib.hvd_initialized())


def _query(fn, what):
    v = fn()
    if v < 0:
        raise ValueError("Horovod has not been initialized; use hvd.init() (hvd.%s)" % what)
    return v


def rank():
    return _query(lib.hvd_rank, "rank")


def size():
    return _query(lib.hvd_size, "size")


def local_rank():
    return _query(lib.hvd_local_rank, "local_rank")


def local_size():
    return _query(lib.hvd_local_size, "local_size")


def cross_rank():
    return _query(lib.hvd_cross_rank, "cross_rank")


def cross_size():
    return _query(lib.hvd_cross_size, "cross_size")


def is_homogeneous():
    """True when every host runs the same number of ranks: the same answer
    on every rank, as Horovod's."""
    return _query(lib.hvd_is_homogeneous, "is_homogeneous") == 1


def mpi_built():
    return bool(lib.hvd_mpi_built())


def mpi_enabled():
    """True when this job's collectives run over MPI (mpirun started it)."""
    return lib.hvd_mpi_enabled() == 1


def mpi_threads_supported():
    return mpi_enabled()


def gloo_built():
    return False


def gloo_enabled():
    return False


def nccl_built():
    """The version code of the NCCL libhvd was built against (22809 for
    2.28.9), 0 without the GPU engine: Horovod's int."""
    return int(lib.hvd_nccl_built())


def cuda_built():
    return nccl_built() > 0


def rocm_built():
    return False


def ddl_built():
    return False


def ccl_built():
    return False


def start_timeline(file_path, mark_cycles=False):
    """Write libhvd's timeline (Chrome trace JSON, rank 0) to file_path."""
    rc = lib.hvd_start_timeline(str(file_path).encode(), 1 if mark_cycles else 0)
    check(rc, "hvd.start_timeline(%r)" % str(file_path))


def stop_timeline():
    check(lib.hvd_stop_timeline(), "hvd.stop_timeline")


# --- process sets --------------------------------------------------------


class ProcessSet:
    """Horovod's process set: some of the job's ranks, which run
    collectives among themselves (process_set= on every collective).
    Made from a list of ranks; given an id by init(process_sets=[...]) or
    add_process_set()."""

    def __init__(self, ranks_or_comm):
        try:
            ranks = sorted(ranks_or_comm)
        except TypeError:
            raise ValueError("ProcessSet should be initialized with a list of process ranks "
                             "(libhvd takes no MPI communicator)") from None
        if any(not isinstance(r, int) for r in ranks):
            raise ValueError("ProcessSet should be initialized with a list of process ranks")
        self.ranks = ranks
        self.process_set_id = None
        self.mpi_comm = None

    def _invalidate(self):
        self.process_set_id = None

    def size(self):
        """The number of its ranks, or None if it has no id."""
        if self.process_set_id is None:
            return None
        return check(lib.hvd_process_set_size(self.process_set_id), "ProcessSet.size")

    def rank(self):
        """This process's rank within the set (ranks of the set in
        ascending order), or None if it has no id. Collectives still name
        roots by their rank in the job (hvd.rank())."""
        if self.process_set_id is None:
            return None
        return check(lib.hvd_process_set_rank(self.process_set_id), "ProcessSet.rank")

    def included(self):
        """Whether this process is one of its ranks (None without ranks)."""
        if self.ranks is None:
            return None
        return rank() in self.ranks

    def __str__(self):
        return "ProcessSet(process_set_id=%s, ranks=%s, mpi_comm=None)" % (
            self.process_set_id, self.ranks)

    __repr__ = __str__


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0

# The sets of this world besides the job's: made again after an elastic
# reset (_elastic_init).
_live_sets = []


def _set_id(process_set):
    """The libhvd id of a process_set= argument."""
    if process_set is None or process_set is global_process_set:
        return 0
    if not isinstance(process_set, ProcessSet):
        raise ValueError("process_set must be a ProcessSet, not %r" % (process_set,))
    if process_set.process_set_id is None:
        raise ValueError("%s has not been added to Horovod (hvd.init(process_sets=...) or "
                         "hvd.add_process_set)" % process_set)
    return process_set.process_set_id


def _check_set(process_set):
    """Check a process_set= argument; its libhvd id."""
    return _set_id(process_set)


def _set_size(process_set):
    sid = _set_id(process_set)
    return size() if sid == 0 else check(lib.hvd_process_set_size(sid), "process set size")


def _set_rank(process_set):
    sid = _set_id(process_set)
    return rank() if sid == 0 else check(lib.hvd_process_set_rank(sid), "process set rank")


def add_process_set(process_set):
    """Add a process set (a ProcessSet, or a list of ranks) on every rank
    (all call it, in the same order); returns it with its id. Needs
    hvd.init(process_sets="dynamic") or HOROVOD_DYNAMIC_PROCESS_SETS=1."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    ranks = process_set.ranks
    rc = lib.hvd_add_process_set((ctypes.c_int * max(len(ranks), 1))(*ranks), len(ranks))
    if rc == _lib.EINVAL and "exists already" in _lib.message(rc):
        raise ValueError("Attempted to add a duplicate process set: %s (%s)"
                         % (process_set, _lib.message(rc)))
    process_set.process_set_id = check(rc, "hvd.add_process_set(%s)" % ranks)
    _live_sets.append(process_set)
    return process_set


def remove_process_set(process_set):
    """Remove a process set on every rank; True if it was removed. The
    job's own set and a set without an id are not."""
    sid = process_set.process_set_id
    if sid is None or sid == 0:
        return False
    rc = lib.hvd_remove_process_set(sid)
    if rc == _lib.ENOSET:
        return False
    check(rc, "hvd.remove_process_set(%s)" % process_set)
    for ps in list(_live_sets):
        if ps.process_set_id == sid:
            ps._invalidate()
            _live_sets.remove(ps)
    process_set._invalidate()
    return True


# --- tensors -------------------------------------------------------------


def _c_dtype(tensor):
    try:
        return _C_DTYPE[tensor.dtype]
    except KeyError:
        raise TypeError(
            "hvd.torch: tensors of dtype %s are not supported (bool, uint8, int8, int16, "
            "int32, int64, float16, bfloat16, float32, float64, complex64 and complex128 are)"
            % tensor.dtype) from None


def _width(tensor):
    """libhvd's elements per element of tensor: 2 for a complex dtype."""
    return 2 if tensor.dtype in _COMPLEX else 1


def _shape(tensor):
    """The shape libhvd sees: a complex tensor's, of (real, imaginary)
    pairs, has a last dimension of 2 (torch.view_as_real's)."""
    if tensor.dtype in _COMPLEX:
        return tuple(tensor.shape) + (2,)
    return tensor.shape


def _on_gpu(tensor):
    """False for a CPU tensor, True for one on this rank's GPU; an error
    for anything libhvd cannot reach."""
    kind = tensor.device.type
    if kind == "cpu":
        return False
    if kind != "cuda":
        raise TypeError("hvd.torch: tensors on %s are not supported (cpu and cuda are)"
                        % tensor.device)
    if not lib.hvd_nccl_built():
        raise RuntimeError("hvd.torch: libhvd was built without CUDA and NCCL, so it cannot "
                           "reduce CUDA tensors; move the tensor to the CPU or rebuild "
                           "libhvd where CUDA and NCCL are installed")
    dev = lib.hvd_gpu_device()
    if dev < 0:
        raise RuntimeError("hvd.torch: %s" % _lib.message(dev))
    if tensor.device.index != dev:
        raise ValueError("hvd.torch: the tensor is on %s, but this rank's GPU is cuda:%d "
                         "(torch.cuda.set_device(hvd.local_rank()))" % (tensor.device, dev))
    return True


def _contig(tensor):
    return tensor if tensor.is_contiguous() else tensor.contiguous()


def _rows(tensor, what):
    """(rows, elements per row) of a tensor's first dimension."""
    if tensor.dim() == 0:
        raise ValueError("hvd.%s needs a tensor of at least one dimension, not a scalar" % what)
    n = tensor.shape[0]
    return n, (tensor.numel() // n if n else _prod(tensor.shape[1:]))


def _prod(shape):
    p = 1
    for s in shape:
        p *= s
    return p


# Unnamed operations are numbered per process set (its libhvd id -> a
# count): every member of a set calls the same operations on it in the
# same order, which is all the numbers must agree on. Horovod numbers them
# by handle, which counts every set's operations: after an unnamed
# operation in a set, the job's next unnamed one had another name on the
# set's members than on the other ranks, and every rank waited for ever.
_noname = {}


def _base(kind, name, sid):
    """kind.name, or kind.noname.N for an unnamed operation of set sid."""
    if name:
        return "%s.%s" % (kind, name)
    return "%s.noname.%d" % (kind, next(_noname.setdefault(sid, itertools.count(1))))


def _name(kind, name, sid):
    return _base(kind, name, sid).encode()


# --- handles -------------------------------------------------------------


class _Op:
    """What one handle stands for: libhvd's handles (one, or a group's),
    the tensors to keep alive, and how to make the result once done.
    device: the GPU whose current stream may wait for the result instead
    of the host (a GPU allreduce's result is only used on the GPU)."""

    __slots__ = ("chandles", "keep", "finish", "what", "device")

    def __init__(self, chandles, keep, finish, what, device=None):
        self.chandles = chandles
        self.keep = keep
        self.finish = finish
        self.what = what
        self.device = device


_handles = {}
_counter = itertools.count(1)
_lock = threading.Lock()  # protects _handles across the user's threads


def _new_handle():
    return next(_counter)


def _store(handle, op):
    with _lock:
        _handles[handle] = op
    return handle


def _submit(fn, args, what, shape=None, set_id=0):
    """Call one libhvd *_async function; its libhvd handle. shape: the
    tensor's, which the ranks then compare (not only element counts);
    set_id: the process set it runs in."""
    h = ctypes.c_void_p()
    if shape is not None:
        dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        check(lib.hvd_next_shape(len(shape), dims), what)
    lib.hvd_next_process_set(set_id)
    check(fn(*args, ctypes.byref(h)), what)
    return h


def poll(handle):
    """True when the operation is done: synchronize() then returns at once."""
    with _lock:
        op = _handles.get(handle)
    if op is None:
        raise ValueError("hvd.poll: unknown handle %r" % (handle,))
    return all(lib.hvd_poll(h) != 0 for h in op.chandles)


def synchronize(handle):
    """Wait for the operation and return its result; a failure (a peer
    died, ranks disagreed) raises HorovodInternalError with libhvd's
    message. A GPU allreduce returns once it is launched, with torch's
    current stream made to wait for it on the GPU (as Horovod does): what
    is queued on that stream next sees the result."""
    with _lock:
        op = _handles.pop(handle, None)
    if op is None:
        return None
    err = None
    # As Horovod's: a GPU allreduce makes torch's current stream wait for
    # it on the GPU (hvd_wait_stream), so that what comes next (the
    # optimizer's step) queues behind it without the host waiting.
    stream = (ctypes.c_void_p(torch.cuda.current_stream(op.device).cuda_stream)
              if op.device is not None else None)
    for h in op.chandles:
        rc = lib.hvd_wait(h) if stream is None else lib.hvd_wait_stream(h, stream)
        if rc != 0 and err is None:
            err = HorovodInternalError("%s: %s" % (op.what, _lib.message(rc)), rc)
    if err is not None:
        raise err
    return op.finish()


def _group(submits):
    """Submit several operations as one libhvd group: none starts until
    all are ready on every rank. submits: callables returning a libhvd
    handle. Returns their handles."""
    check(lib.hvd_group_start(), "hvd.group")
    hs, err = [], None
    try:
        for s in submits:
            hs.append(s())
    except BaseException as e:  # end the group whatever happens
        err = e
    rc = lib.hvd_group_end()
    if err is None and rc != 0:
        err = HorovodInternalError("hvd.group: %s" % _lib.message(rc), rc)
    if err is not None:
        for h in hs:
            lib.hvd_wait(h)
        raise err
    return hs


# --- allreduce -----------------------------------------------------------


def handle_average_backwards_compatibility(op, average):
    if op is not None:
        if average is not None:
            raise ValueError("The op parameter supersedes average. Please provide only one of them.")
        return op
    if average is not None:
        warnings.warn("Parameter `average` has been replaced with `op` and will be removed",
                      DeprecationWarning)
        return Average if average else Sum
    return Average


def _c_op(op):
    try:
        return _C_OP[op]
    except (KeyError, TypeError):
        raise ValueError("hvd.torch: unknown reduction op %r" % (op,)) from None


# Ops on bool tensors, as torch.distributed reduces them: Sum and Max are
# a logical or, Min and Product a logical and (libhvd reduces them so).
_BOOL_OPS = frozenset((Sum, Max, Min, Product))


def _c_reduce(tensor, op, prescale, postscale):
    """libhvd's (op, prescale, postscale) for reducing tensor with op."""
    c = _c_op(op)
    if tensor.dtype not in _ODD:
        return c, float(prescale), float(postscale)
    if tensor.dtype in _COMPLEX:
        # Parts add up on their own; no other op of libhvd's is complex.
        if op not in (Sum, Average):
            raise TypeError("hvd.torch: op %s of %s tensors has no meaning (Sum and Average "
                            "do)" % (_OP_NAMES[op], tensor.dtype))
        return c, float(prescale), float(postscale)
    if op not in _BOOL_OPS:
        raise TypeError("hvd.torch: op %s of torch.bool tensors has no meaning (Sum or Max: "
                        "logical or; Min or Product: logical and)" % _OP_NAMES[op])
    if prescale != 1.0 or postscale != 1.0:
        raise TypeError("hvd.torch: torch.bool tensors take no prescale_factor or "
                        "postscale_factor")
    return c, 1.0, 1.0


def _allreduce_submit(tensor, output, name, op, prescale, postscale, set_id=0):
    """Submit one allreduce of tensor into output (both contiguous, maybe
    the same). Returns libhvd's handle."""
    gpu = _on_gpu(tensor)
    fn = lib.hvd_allreduce_scaled_gpu_async if gpu else lib.hvd_allreduce_scaled_async
    return _submit(fn, (name, tensor.data_ptr(), output.data_ptr(),
                        tensor.numel() * _width(tensor),
                        _c_dtype(tensor)) + _c_reduce(tensor, op, prescale, postscale),
                   name.decode(), _shape(tensor), set_id)


def _allreduce_async(tensor, output, name, op, prescale, postscale, process_set):
    """tensor into output (output may be tensor); a handle whose result is
    output, written back into output if it is not contiguous."""
    sid = _check_set(process_set)
    src = _contig(tensor)
    dst = src if output is tensor else _contig(output)
    handle = _new_handle()
    h = _allreduce_submit(src, dst, _name("allreduce", name, sid), op, prescale, postscale,
                          sid)

    def finish():
        if dst is not output:
            output.copy_(dst)
        return output

    return _store(handle, _Op([h], (src, dst, output), finish, "allreduce",
                              src.device if src.is_cuda else None))


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    """Start reducing tensor over every rank (Average by default); the
    tensor is not changed. Returns a handle for poll() and synchronize()."""
    op = handle_average_backwards_compatibility(op, average)
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return _allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor,
                            process_set)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    """Start reducing tensor in place."""
    op = handle_average_backwards_compatibility(op, average)
    return _allreduce_async(tensor, tensor, name, op, prescale_factor, postscale_factor,
                            process_set)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    """Reduce tensor in place; returns it."""
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor,
                                        postscale_factor, process_set))


class HorovodAllreduce(torch.autograd.Function):
    """allreduce as an autograd function: the gradient is the allreduce
    of the output's gradient, with the same op and factors."""

    @staticmethod
    def forward(ctx, tensor, average, name, op, prescale_factor, postscale_factor, process_set):
        ctx.average, ctx.op = average, op
        ctx.prescale_factor, ctx.postscale_factor = prescale_factor, postscale_factor
        ctx.process_set = process_set
        return synchronize(allreduce_async(tensor, average, name, op, prescale_factor,
                                           postscale_factor, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        return (allreduce(grad_output, average=ctx.average, op=ctx.op,
                          prescale_factor=ctx.prescale_factor,
                          postscale_factor=ctx.postscale_factor,
                          process_set=ctx.process_set),
                None, None, None, None, None, None)


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """The reduction of tensor over every rank (Average by default), a new
    tensor; differentiable."""
    compressed, cctx = compression.compress(tensor)
    reduced = HorovodAllreduce.apply(compressed, average, name, op, prescale_factor,
                                     postscale_factor, process_set)
    return compression.decompress(reduced, cctx)


def _one_device(tensors, what):
    """A group's tensors must all be on one device, as Horovod requires."""
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        raise RuntimeError("hvd.%s: the tensors of a group must be on one device, not %s"
                           % (what, ", ".join(sorted(str(d) for d in devices))))


def _grouped_allreduce_async(tensors, outputs, name, op, prescale, postscale, process_set):
    sid = _check_set(process_set)
    _c_op(op)
    _one_device(tensors, "grouped_allreduce")
    for t in tensors:
        _c_dtype(t)
        _c_reduce(t, op, prescale, postscale)
        _on_gpu(t)
    handle = _new_handle()
    base = _base("grouped_allreduce", name, sid)
    srcs = [_contig(t) for t in tensors]
    dsts = [s if o is t else _contig(o) for s, t, o in zip(srcs, tensors, outputs)]
    hs = _group([
        (lambda i=i: _allreduce_submit(srcs[i], dsts[i], ("%s.%d" % (base, i)).encode(), op,
                                       prescale, postscale, sid))
        for i in range(len(tensors))
    ])

    def finish():
        for d, o in zip(dsts, outputs):
            if d is not o:
                o.copy_(d)
        return list(outputs)

    dev = srcs[0].device if srcs and srcs[0].is_cuda else None
    return _store(handle, _Op(hs, (srcs, dsts, outputs), finish, "grouped_allreduce", dev))


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    """Start reducing a list of tensors as one group: none starts until
    all are ready on every rank, and they are fused together."""
    op = handle_average_backwards_compatibility(op, average)
    outputs = [torch.empty_like(t, memory_format=torch.contiguous_format) for t in tensors]
    return _grouped_allreduce_async(tensors, outputs, name, op, prescale_factor,
                                    postscale_factor, process_set)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    op = handle_average_backwards_compatibility(op, average)
    return _grouped_allreduce_async(tensors, tensors, name, op, prescale_factor,
                                    postscale_factor, process_set)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                                postscale_factor, process_set))


class HorovodGroupedAllreduce(torch.autograd.Function):
    """grouped_allreduce as an autograd function."""

    @staticmethod
    def forward(ctx, average, name, op, prescale_factor, postscale_factor, process_set,
                *tensors):
        ctx.average, ctx.op = average, op
        ctx.prescale_factor, ctx.postscale_factor = prescale_factor, postscale_factor
        ctx.process_set = process_set
        return tuple(synchronize(grouped_allreduce_async(
            list(tensors), average, name, op, prescale_factor, postscale_factor,
            process_set)))

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = grouped_allreduce(list(grad_outputs), average=ctx.average, op=ctx.op,
                                  prescale_factor=ctx.prescale_factor,
                                  postscale_factor=ctx.postscale_factor,
                                  process_set=ctx.process_set)
        return (None, None, None, None, None, None, *grads)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set):
    """The reductions of a list of tensors, as one group; differentiable."""
    pairs = [compression.compress(t) for t in tensors]
    reduced = HorovodGroupedAllreduce.apply(average, name, op, prescale_factor,
                                            postscale_factor, process_set,
                                            *[p[0] for p in pairs])
    return [compression.decompress(r, p[1]) for r, p in zip(reduced, pairs)]


def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """Start reducing a sparse COO tensor over every rank by gathering
    every rank's indices and values (Horovod's way: duplicates add up when
    the result is used). Returns a callable that waits and gives the
    reduced sparse tensor."""
    _check_set(process_set)
    if not tensor.is_sparse:
        raise ValueError("hvd.sparse_allreduce_async needs a sparse tensor, not a %s one"
                         % tensor.layout)
    if op == Adasum:
        raise NotImplementedError("Adasum cannot reduce sparse tensors; pass "
                                  "sparse_as_dense=True to DistributedOptimizer")
    t = tensor
    indices = allgather_async(t._indices().transpose(0, 1).contiguous(),
                              name="%s.indices" % name, process_set=process_set)
    values = allgather_async(t._values().contiguous(), name="%s.values" % name,
                             process_set=process_set)

    def handle():
        vals = synchronize(values)
        idx = synchronize(indices)
        if op == Average:
            vals = vals / _set_size(process_set)
        elif op != Sum:
            raise ValueError("hvd.sparse_allreduce_async: op must be Average or Sum")
        return torch.sparse_coo_tensor(idx.transpose(0, 1), vals, t.size())

    return handle


# --- allgather -----------------------------------------------------------


class _Result:
    """A buffer libhvd allocates for a result (malloc'ed, or cudaMalloc'ed
    for a GPU collective), and the counts it writes, kept until done."""

    def __init__(self, nranks=0):
        self.buf = ctypes.c_void_p()
        self.count = ctypes.c_size_t()
        self.counts = (ctypes.c_size_t * nranks)() if nranks else None

    def take(self, like, shape):
        """The result as a new tensor like `like` of shape; frees libhvd's
        buffer."""
        out = torch.empty(shape, dtype=like.dtype, device=like.device)
        n = out.numel() * out.element_size()
        if self.buf.value:
            try:
                if out.device.type == "cpu":
                    ctypes.memmove(out.data_ptr(), self.buf.value, n)
                else:
                    _gpu_copy(out, self.buf.value, n)
            finally:
                _free(self.buf.value, out.device.type != "cpu")
            self.buf.value = None
        return out


def _free(ptr, gpu):
    if gpu:
        lib.cudaFree(ctypes.c_void_p(ptr))
    else:
        _lib.free(ptr)


def _gpu_copy(out, src, nbytes):
    """Copy nbytes of GPU memory at src into out (cudaMemcpy, from the
    CUDA runtime libhvd is linked with)."""
    rc = lib.cudaMemcpy(ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(src),
                        ctypes.c_size_t(nbytes), 3)  # cudaMemcpyDeviceToDevice
    if rc != 0:
        raise HorovodInternalError("hvd.torch: cudaMemcpy of a GPU result failed (%d)" % rc)


def _allgather_submit(src, name, res, set_id=0):
    gpu = _on_gpu(src)
    fn = lib.hvd_allgather_gpu_async if gpu else lib.hvd_allgather_async
    return _submit(fn, (name, src.data_ptr(), src.numel() * _width(src), _c_dtype(src),
                        ctypes.byref(res.buf), ctypes.byref(res.count)), name.decode(),
                   _shape(src), set_id)


def _gathered(src, res, row, name):
    """The allgather result of src as a tensor of whole rows."""
    total = res.count.value // _width(src)
    if row == 0:
        rows = 0
    elif total % row:
        res.take(src, (0,))
        raise HorovodInternalError(
            "%s: ranks gave rows of different sizes (%d elements in all, rows of %d here): "
            "every dimension but the first must agree" % (name, total, row))
    else:
        rows = total // row
    return res.take(src, (rows,) + tuple(src.shape[1:]))


def allgather_async(tensor, name=None, process_set=global_process_set):
    """Start concatenating every rank's tensor along the first dimension
    (its size may differ between ranks)."""
    sid = _check_set(process_set)
    _, row = _rows(tensor, "allgather")
    src = _contig(tensor)
    handle = _new_handle()
    cname = _name("allgather", name, sid)
    res = _Result()
    h = _allgather_submit(src, cname, res, sid)
    return _store(handle, _Op([h], (src, res), lambda: _gathered(src, res, row, cname.decode()),
                              "allgather"))


class HorovodAllgather(torch.autograd.Function):
    """allgather as an autograd function: each rank's gradient is its
    slice of the averaged gradient, as in Horovod."""

    @staticmethod
    def forward(ctx, tensor, name, process_set):
        handle = allgather_async(tensor, name, process_set)
        ctx.dim = tensor.shape[0]
        ctx.process_set = process_set
        return synchronize(handle)

    @staticmethod
    def backward(ctx, grad_output):
        grad_reduced = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        dims = allgather(torch.tensor([ctx.dim], dtype=torch.int64),
                         process_set=ctx.process_set)
        offset = int(dims[:_set_rank(ctx.process_set)].sum())
        return grad_reduced.narrow(0, offset, ctx.dim), None, None


def allgather(tensor, name=None, process_set=global_process_set):
    """Every rank's tensor concatenated along the first dimension;
    differentiable."""
    return HorovodAllgather.apply(tensor, name, process_set)


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    """Start allgathers of a list of tensors as one group."""
    sid = _check_set(process_set)
    rows = [_rows(t, "grouped_allgather")[1] for t in tensors]
    _one_device(tensors, "grouped_allgather")
    for t in tensors:
        _c_dtype(t)
        _on_gpu(t)
    handle = _new_handle()
    base = _base("grouped_allgather", name, sid)
    srcs = [_contig(t) for t in tensors]
    names = [("%s.%d" % (base, i)).encode() for i in range(len(srcs))]
    ress = [_Result() for _ in srcs]
    hs = _group([(lambda i=i: _allgather_submit(srcs[i], names[i], ress[i], sid))
                 for i in range(len(srcs))])

    def finish():
        return [_gathered(s, r, row, n.decode()) for s, r, row, n in zip(srcs, ress, rows, names)]

    return _store(handle, _Op(hs, (srcs, ress), finish, "grouped_allgather"))


class HorovodGroupedAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        handle = grouped_allgather_async(list(tensors), name, process_set)
        ctx.dims = [t.shape[0] for t in tensors]
        ctx.process_set = process_set
        return tuple(synchronize(handle))

    @staticmethod
    def backward(ctx, *grad_outputs):
        reduced = grouped_allreduce(list(grad_outputs), op=Average, process_set=ctx.process_set)
        dims = allgather(torch.tensor([ctx.dims], dtype=torch.int64),
                         process_set=ctx.process_set)
        me = _set_rank(ctx.process_set)
        offsets = dims[:me].sum(dim=0).tolist() if me else [0] * len(ctx.dims)
        grads = [g.narrow(0, int(o), d) for g, o, d in zip(reduced, offsets, ctx.dims)]
        return (None, None, *grads)


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """allgather of each tensor of a list, as one group; differentiable."""
    return list(HorovodGroupedAllgather.apply(name, process_set, *tensors))


# --- broadcast -----------------------------------------------------------


def _broadcast_async(tensor, output, root_rank, name, process_set):
    """Broadcast root's tensor into output (tensor itself for the in-place
    forms)."""
    sid = _check_set(process_set)
    if output is tensor:
        buf = _contig(tensor)
    else:
        buf = tensor.clone(memory_format=torch.contiguous_format)
    gpu = _on_gpu(buf)
    handle = _new_handle()
    cname = _name("broadcast", name, sid)
    fn = lib.hvd_broadcast_gpu_async if gpu else lib.hvd_broadcast_async
    h = _submit(fn, (cname, buf.data_ptr(), buf.numel() * _width(buf), _c_dtype(buf),
                     int(root_rank)),
                cname.decode(), _shape(buf), sid)

    def finish():
        if output is tensor and buf is not tensor:
            tensor.copy_(buf)
            return tensor
        return buf

    return _store(handle, _Op([h], (tensor, buf), finish, "broadcast"))


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    """Start broadcasting root_rank's tensor into a new tensor on every
    rank; the input is not changed."""
    return _broadcast_async(tensor, None, root_rank, name, process_set)


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    """Start broadcasting root_rank's tensor into tensor on every rank."""
    return _broadcast_async(tensor, tensor, root_rank, name, process_set)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


class HorovodBroadcast(torch.autograd.Function):
    """broadcast as an autograd function: the root's gradient is the
    averaged gradient, the others' zero, as in Horovod."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return synchronize(broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad_reduced = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        if rank() != ctx.root_rank:
            grad_reduced = grad_reduced * 0
        return grad_reduced, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """root_rank's tensor, on every rank, as a new tensor; differentiable."""
    return HorovodBroadcast.apply(tensor, root_rank, name, process_set)


# --- alltoall ------------------------------------------------------------


def _splits_list(splits, rows, n):
    if splits is None:
        if rows % n:
            raise ValueError("hvd.alltoall: without splits, the first dimension (%d) must be "
                             "divisible by the number of ranks (%d)" % (rows, n))
        return [rows // n] * n
    if isinstance(splits, torch.Tensor):
        splits = splits.tolist()
    splits = [int(s) for s in splits]
    if len(splits) != n:
        raise ValueError("hvd.alltoall: splits has %d entries, one per rank (%d) is needed"
                         % (len(splits), n))
    if any(s < 0 for s in splits) or sum(splits) != rows:
        raise ValueError("hvd.alltoall: splits %s must be counts that add up to the first "
                         "dimension (%d)" % (splits, rows))
    return splits


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Start sending splits[i] rows of tensor to rank i (an even split if
    splits is None). synchronize() returns (output, received_splits)."""
    sid = _check_set(process_set)
    nrows, row = _rows(tensor, "alltoall")
    n = _set_size(process_set)
    rows = _splits_list(splits, nrows, n)
    src = _contig(tensor)
    gpu = _on_gpu(src)
    handle = _new_handle()
    cname = _name("alltoall", name, sid)
    w = _width(src)
    counts = (ctypes.c_size_t * n)(*[r * row * w for r in rows])
    res = _Result(n)
    fn = lib.hvd_alltoall_gpu_async if gpu else lib.hvd_alltoall_async
    h = _submit(fn, (cname, src.data_ptr(), counts, max(row * w, 1), _c_dtype(src),
                     ctypes.byref(res.buf), ctypes.byref(res.count), res.counts),
                cname.decode(), _shape(src), sid)
    split_dtype = splits.dtype if isinstance(splits, torch.Tensor) else torch.int32

    def finish():
        got = [c // (row * w) if row else 0 for c in res.counts]
        out = res.take(src, (sum(got),) + tuple(src.shape[1:]))
        return out, torch.tensor(got, dtype=split_dtype)

    return _store(handle, _Op([h], (src, counts, res), finish, "alltoall"))


class HorovodAlltoall(torch.autograd.Function):
    """alltoall as an autograd function: the gradient goes back the way
    the rows came (an alltoall with the received splits)."""

    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received = synchronize(alltoall_async(tensor, splits, name, process_set))
        ctx.process_set = process_set
        ctx.recvsplits = received
        if splits is None:
            return output
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad_output, *unused):
        grad, _ = alltoall(grad_output, splits=ctx.recvsplits, process_set=ctx.process_set)
        return grad, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Send splits[i] rows of tensor to rank i; receive every rank's rows
    for this one, in rank order. Returns the output, and with splits
    given, also the received splits. Differentiable."""
    return HorovodAlltoall.apply(tensor, splits, name, process_set)


# --- reducescatter -------------------------------------------------------


def _reducescatter_submit(src, name, op, prescale, postscale, process_set=None):
    """Submit one reducescatter of src; (libhvd handle, output)."""
    nrows, row = _rows(src, "reducescatter")
    reduce = _c_reduce(src, op, prescale, postscale)
    sid = _check_set(process_set)
    me = _set_rank(process_set)
    lib.hvd_next_process_set(sid)  # the count is the set's (not used up)
    w = _width(src)
    mine = lib.hvd_reducescatter_count(src.numel() * w, max(row * w, 1), me)
    out = torch.empty((mine // (row * w) if row else 0,) + tuple(src.shape[1:]),
                      dtype=src.dtype, device=src.device)
    gpu = _on_gpu(src)
    fn = lib.hvd_reducescatter_gpu_async if gpu else lib.hvd_reducescatter_async
    h = _submit(fn, (name, src.data_ptr(), out.data_ptr(), src.numel() * w, max(row * w, 1),
                     _c_dtype(src)) + reduce,
                name.decode(), _shape(src), sid)
    return h, out


def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0):
    """Start reducing tensor over every rank and giving each rank its rows
    of the result: rows // size each, the first rows % size ranks one
    more, as Horovod splits them."""
    sid = _check_set(process_set)
    src = _contig(tensor)
    handle = _new_handle()
    h, out = _reducescatter_submit(src, _name("reducescatter", name, sid), op,
                                   prescale_factor, postscale_factor, process_set)
    return _store(handle, _Op([h], (src, out), lambda: out, "reducescatter"))


class HorovodReducescatter(torch.autograd.Function):
    """reducescatter as an autograd function: the gradient is the
    allgather of the output's gradients, times the number of ranks for
    op Sum (as Horovod's), scaled as the forward was."""

    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.op, ctx.process_set = op, process_set
        ctx.scale = prescale_factor * postscale_factor
        return synchronize(reducescatter_async(tensor, name, op, process_set, prescale_factor,
                                               postscale_factor))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allgather(grad_output, process_set=ctx.process_set)
        if ctx.op == Sum:
            grad = grad * _set_size(ctx.process_set)
        if ctx.scale != 1.0:
            grad = grad * ctx.scale
        return grad, None, None, None, None, None


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """This rank's rows of the reduction of tensor over every rank;
    differentiable."""
    compressed, cctx = compression.compress(tensor)
    out = HorovodReducescatter.apply(compressed, name, op, process_set, prescale_factor,
                                     postscale_factor)
    return compression.decompress(out, cctx)


def grouped_reducescatter_async(tensors, name=None, op=Average,
                                process_set=global_process_set, prescale_factor=1.0,
                                postscale_factor=1.0):
    """Start reducescatters of a list of tensors as one group."""
    sid = _check_set(process_set)
    _one_device(tensors, "grouped_reducescatter")
    for t in tensors:
        _rows(t, "grouped_reducescatter")
        _c_dtype(t)
        _c_reduce(t, op, prescale_factor, postscale_factor)
        _on_gpu(t)
    _c_op(op)
    handle = _new_handle()
    base = _base("grouped_reducescatter", name, sid)
    srcs = [_contig(t) for t in tensors]
    outs = [None] * len(srcs)

    def submit(i):
        h, outs[i] = _reducescatter_submit(srcs[i], ("%s.%d" % (base, i)).encode(), op,
                                           prescale_factor, postscale_factor, process_set)
        return h

    hs = _group([(lambda i=i: submit(i)) for i in range(len(srcs))])
    return _store(handle, _Op(hs, (srcs, outs), lambda: list(outs), "grouped_reducescatter"))


class HorovodGroupedReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor, postscale_factor, *tensors):
        ctx.op, ctx.process_set = op, process_set
        ctx.scale = prescale_factor * postscale_factor
        return tuple(synchronize(grouped_reducescatter_async(
            list(tensors), name, op, process_set, prescale_factor, postscale_factor)))

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = grouped_allgather(list(grad_outputs), process_set=ctx.process_set)
        if ctx.op == Sum:
            grads = [g * _set_size(ctx.process_set) for g in grads]
        if ctx.scale != 1.0:
            grads = [g * ctx.scale for g in grads]
        return (None, None, None, None, None, *grads)


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    """reducescatter of each tensor of a list, as one group; differentiable."""
    pairs = [compression.compress(t) for t in tensors]
    outs = HorovodGroupedReducescatter.apply(name, op, process_set, prescale_factor,
                                             postscale_factor, *[p[0] for p in pairs])
    return [compression.decompress(o, p[1]) for o, p in zip(outs, pairs)]


# --- join and barrier ----------------------------------------------------


def join(device=-1):
    """This rank has run out of data: until every rank has joined, the
    others' collectives complete without it (it gives zeros to their
    allreduces; an average divides by the ranks that gave data). Returns
    the rank that joined last, -1 in a job of one (no other rank joined
    last), as Horovod does. device: Horovod's device for the join's own
    tensors; libhvd needs none (a joined rank's zeros for the others' CUDA
    collectives are on the GPU libhvd gives it), so any device is taken."""
    if device is not None and not isinstance(device, (int, torch.device, str)):
        raise TypeError("hvd.join: device must be a device index, a torch.device or a "
                        "name, not %r" % (device,))
    rc = lib.hvd_join()
    if rc < 0:
        raise HorovodInternalError("hvd.join: %s" % _lib.message(rc), rc)
    return -1 if size() == 1 else rc


def barrier(process_set=global_process_set):
    """Returns when every rank has called it."""
    lib.hvd_next_process_set(_check_set(process_set))
    rc = lib.hvd_barrier()
    if rc != 0:
        raise HorovodInternalError("hvd.barrier: %s" % _lib.message(rc), rc)
