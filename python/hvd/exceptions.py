"""Horovod's exceptions: HorovodInternalError for a failed collective,
HostsUpdatedInterrupt for an elastic job's new hosts (hvd.elastic)."""


class HorovodInternalError(RuntimeError):
    """A collective failed: a peer died, ranks disagreed on a tensor, or
    libhvd was shut down. The message is libhvd's; rc is libhvd's code
    (hvd.h), None where none applies. In an elastic job a lost peer is
    rc == HVD_ERESET (-13): hvd.elastic.run restores the committed state
    and goes on; any other failure ends the program as it does outside
    one."""

    def __init__(self, message, rc=None):
        super().__init__(message)
        self.rc = rc


class HostsUpdatedInterrupt(RuntimeError):
    """Raised by state.commit() (state.check_host_updates()) on every rank
    at once when hvdrun started workers on new hosts: hvd.elastic.run
    re-joins with them. skip_sync: the state need not be broadcast again
    (no worker joins that lacks it)."""

    def __init__(self, skip_sync):
        super().__init__("hosts were updated")
        self.skip_sync = skip_sync
