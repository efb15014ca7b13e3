"""hvd: Python over libhvd, the data-parallel core of hvdrun.

``import hvd.torch as hvd`` gives Horovod's PyTorch API (horovod.torch)
over libhvd's C ABI (hvd.h). All the work (negotiation, fusion,
transports, errors) happens in libhvd; this package maps tensors to
pointers and libhvd's handles to Python objects.
"""

from hvd.exceptions import HorovodInternalError, HostsUpdatedInterrupt

__version__ = "0.1.0"
__all__ = ["HorovodInternalError", "HostsUpdatedInterrupt", "__version__"]
