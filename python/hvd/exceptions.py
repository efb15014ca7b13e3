"""Horovod's exception for a failed collective, raised by hvd.torch."""


class HorovodInternalError(RuntimeError):
    """A collective failed: a peer died, ranks disagreed on a tensor, or
    libhvd was shut down. The message is libhvd's."""
