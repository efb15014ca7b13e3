"""libhvd, loaded with ctypes, and its C ABI (hvd.h) declared once.

Where libhvd is looked for, in order: where HVD_LIBRARY points (then
nowhere else); the library directory this package was installed with
(make install writes it to _install.py); build/lib of the source tree
this package sits in; the dynamic loader's own search (libhvd.so.0).
If none loads, the ImportError names every path tried and why each
failed; one of another version (another build, whose functions may take
other arguments) is refused, naming both versions. Nothing here is
compiled against torch.
"""

import ctypes
import os

from hvd.exceptions import HorovodInternalError

_SONAME = "libhvd.so.0"
_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    forced = os.environ.get("HVD_LIBRARY")
    if forced:
        return [forced]
    paths = []
    try:
        from hvd import _install  # written by make install

        paths.append(os.path.join(_install.LIBDIR, _SONAME))
    except ImportError:
        pass
    paths.append(os.path.join(_HERE, "..", "..", "build", "lib", "libhvd.so"))
    paths.append(_SONAME)
    return [os.path.normpath(p) if os.sep in p else p for p in paths]


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s: no such file" % path)
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s: %s" % (path, e))
    raise ImportError(
        "hvd: cannot load libhvd (build it with `make`, install it with "
        "`make install`, or set HVD_LIBRARY to its path); tried: "
        + "; ".join(tried)
    )


def _same_build(lib):
    """Refuse a libhvd whose version is not this package's: its ABI may
    differ, and a call through the wrong signature would crash or
    corrupt, not fail."""
    from hvd import __version__

    version = getattr(lib, "hvd_version", None)
    if version is not None:
        version.restype = ctypes.c_char_p
        version.argtypes = []
        version = version()
        version = version.decode(errors="replace") if version else None
    if version != __version__:
        raise ImportError(
            "hvd: libhvd at %s is version %s, this hvd package is %s: they come "
            "from different builds (set HVD_LIBRARY to the libhvd built with "
            "this package, or `make install` both)"
            % (lib._name, version or "unknown (no hvd_version)", __version__)
        )
    return lib


lib = _same_build(_load())

_c = ctypes
_size_p = _c.POINTER(_c.c_size_t)
_voidpp = _c.POINTER(_c.c_void_p)

# name: (restype, argtypes); one line per function of hvd.h.
_ABI = {
    "hvd_init": (_c.c_int, []),
    "hvd_shutdown": (None, []),
    "hvd_initialized": (_c.c_int, []),
    "hvd_elastic_generation": (_c.c_int, []),
    "hvd_elastic_hosts_updated": (_c.c_int, []),
    "hvd_elastic_host_updates": (_c.c_int, [_c.POINTER(_c.c_int)]),
    "hvd_rank": (_c.c_int, []),
    "hvd_size": (_c.c_int, []),
    "hvd_local_rank": (_c.c_int, []),
    "hvd_local_size": (_c.c_int, []),
    "hvd_cross_rank": (_c.c_int, []),
    "hvd_cross_size": (_c.c_int, []),
    "hvd_is_homogeneous": (_c.c_int, []),
    "hvd_mpi_built": (_c.c_int, []),
    "hvd_nccl_built": (_c.c_int, []),
    "hvd_mpi_enabled": (_c.c_int, []),
    "hvd_start_timeline": (_c.c_int, [_c.c_char_p, _c.c_int]),
    "hvd_stop_timeline": (_c.c_int, []),
    "hvd_wait": (_c.c_int, [_c.c_void_p]),
    "hvd_wait_stream": (_c.c_int, [_c.c_void_p, _c.c_void_p]),
    "hvd_poll": (_c.c_int, [_c.c_void_p]),
    "hvd_barrier": (_c.c_int, []),
    "hvd_join": (_c.c_int, []),
    "hvd_group_start": (_c.c_int, []),
    "hvd_group_end": (_c.c_int, []),
    "hvd_next_shape": (_c.c_int, [_c.c_int, _c.POINTER(_c.c_int64)]),
    "hvd_gpu_device": (_c.c_int, []),
    "hvd_strerror": (_c.c_char_p, [_c.c_int]),
    "hvd_error_message": (_c.c_char_p, []),
    "hvd_version": (_c.c_char_p, []),
    "hvd_reducescatter_count": (_c.c_size_t, [_c.c_size_t, _c.c_size_t, _c.c_int]),
    "hvd_init_process_sets": (_c.c_int, [_c.POINTER(_c.c_int), _c.POINTER(_c.c_int), _c.c_int]),
    "hvd_add_process_set": (_c.c_int, [_c.POINTER(_c.c_int), _c.c_int]),
    "hvd_remove_process_set": (_c.c_int, [_c.c_int]),
    "hvd_next_process_set": (_c.c_int, [_c.c_int]),
    "hvd_process_set_rank": (_c.c_int, [_c.c_int]),
    "hvd_process_set_size": (_c.c_int, [_c.c_int]),
    "hvd_process_set_included": (_c.c_int, [_c.c_int]),
    "hvd_process_set_ranks": (_c.c_int, [_c.c_int, _c.POINTER(_c.c_int), _c.c_int]),
    "hvd_number_of_process_sets": (_c.c_int, []),
    "hvd_process_set_ids": (_c.c_int, [_c.POINTER(_c.c_int), _c.c_int]),
}
# The collectives, CPU and GPU forms alike.
_REDUCE = [_c.c_char_p, _c.c_void_p, _c.c_void_p, _c.c_size_t, _c.c_int, _c.c_int,
           _c.c_double, _c.c_double, _voidpp]
_BCAST = [_c.c_char_p, _c.c_void_p, _c.c_size_t, _c.c_int, _c.c_int, _voidpp]
_GATHER = [_c.c_char_p, _c.c_void_p, _c.c_size_t, _c.c_int, _voidpp, _size_p, _voidpp]
_A2A = [_c.c_char_p, _c.c_void_p, _size_p, _c.c_size_t, _c.c_int, _voidpp, _size_p,
        _size_p, _voidpp]
_RS = [_c.c_char_p, _c.c_void_p, _c.c_void_p, _c.c_size_t, _c.c_size_t, _c.c_int,
       _c.c_int, _c.c_double, _c.c_double, _voidpp]
for _gpu in ("", "_gpu"):
    _ABI["hvd_allreduce_scaled%s_async" % _gpu] = (_c.c_int, _REDUCE)
    _ABI["hvd_broadcast%s_async" % _gpu] = (_c.c_int, _BCAST)
    _ABI["hvd_allgather%s_async" % _gpu] = (_c.c_int, _GATHER)
    _ABI["hvd_alltoall%s_async" % _gpu] = (_c.c_int, _A2A)
    _ABI["hvd_reducescatter%s_async" % _gpu] = (_c.c_int, _RS)

for _name, (_res, _args) in _ABI.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

# libhvd's error codes (hvd.h).
EINVAL, ENOMEM, ENOTINIT, EALREADY = -1, -2, -3, -4
ENOTSUP = -12
ERESET = -13
ENOSET, ENOTINSET = -14, -15

# free() for the results libhvd allocates with malloc (allgather,
# alltoall): the C library libhvd itself uses.
_libc = ctypes.CDLL(None)
free = _libc.free
free.restype = None
free.argtypes = [_c.c_void_p]


def message(rc):
    """libhvd's words for the calling thread's last failure, rc's name if
    there are none."""
    m = lib.hvd_error_message()
    m = m.decode(errors="replace") if m else ""
    return m or lib.hvd_strerror(rc).decode()


def check(rc, what):
    """Raise for a libhvd failure at submission: a bad argument is the
    caller's (ValueError: so is a process set that is unknown or that this
    rank is not in), a missing feature NotImplementedError, libhvd
    not started ValueError as Horovod's own, anything else
    HorovodInternalError."""
    if rc >= 0:
        return rc
    text = "%s: %s" % (what, message(rc))
    if rc in (EINVAL, ENOSET, ENOTINSET):
        raise ValueError(text)
    if rc == ENOTSUP:
        raise NotImplementedError(text)
    if rc == ENOTINIT:
        raise ValueError("%s: Horovod has not been initialized; use hvd.init()." % what)
    raise HorovodInternalError(text, rc)
