"""hvd: Python over libhvd, the data-parallel core of hvdrun.

``import hvd.torch as hvd`` gives Horovod's PyTorch API (horovod.torch)
over libhvd's C ABI (hvd.h). All the work (negotiation, fusion,
transports, errors) happens in libhvd; this package maps tensors to
pointers and libhvd's handles to Python objects. ``hvd.run(func, ...)``
is Horovod's launcher as a Python call (horovod.run), through hvdrun.
"""

# libhvd's version (the Makefile's VERSION): hvd._lib loads no other.
__version__ = "0.1.0"

from hvd.exceptions import HorovodInternalError, HostsUpdatedInterrupt
from hvd.runner import run

__all__ = ["HorovodInternalError", "HostsUpdatedInterrupt", "run", "__version__"]
