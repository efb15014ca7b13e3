"""The elastic loop of Horovod's API, for any framework (horovod.common
.elastic): a State the program commits in memory, and run(), which goes
on after hvdrun resets the job (a worker lost: HVD_ERESET) or grows it
(new hosts: HostsUpdatedInterrupt).

After a reset every survivor restores its last commit, leaves the old
world (hvd_shutdown) and joins the next (hvd_init), and rank 0's state
is broadcast to all: the training goes on from the last commit of the
new rank 0. A failure that is not a reset (ranks that disagree on a
tensor, a program error) is raised as it is: retrying it would fail
again.
"""

import copy
import ctypes
import functools
import queue

from hvd import _lib
from hvd.exceptions import HorovodInternalError, HostsUpdatedInterrupt

# hvd_init attempts in a row that a new failure interrupts before the
# program gives up (hvdrun's --reset-limit normally ends such a job
# first).
MAX_JOIN_ATTEMPTS = 100


class HostUpdateResult:
    """Horovod's kinds of host update (bits)."""
    no_update = 0
    removed = 1
    added = 2
    mixed = 3


class _HostMessages(queue.Queue):
    """Horovod's State._host_messages: (timestamp, update) for each host
    update hvdrun announced, filled from libhvd whenever it is looked at
    (so a loop that waits on empty() sees an update as it comes). The
    timestamp is the generation the update leads to."""

    def _pull(self):
        gen = ctypes.c_int(0)
        bits = _lib.lib.hvd_elastic_host_updates(ctypes.byref(gen))
        if bits > 0:
            self.put((gen.value, bits))

    def empty(self):
        self._pull()
        return super().empty()

    def qsize(self):
        self._pull()
        return super().qsize()

    def get(self, block=True, timeout=None):
        self._pull()
        return super().get(block, timeout)


def is_reset(err):
    """Whether HorovodInternalError err is an elastic reset."""
    return getattr(err, "rc", None) == _lib.ERESET


class State:
    """What the training must not lose. save() copies it, restore() puts
    the copy back, sync() makes every rank's equal to rank 0's; a
    subclass says how for its objects."""

    def __init__(self, bcast_object, get_rank):
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._host_messages = _HostMessages()
        self._last_updated_timestamp = 0
        self._reset_callbacks = []

    def register_reset_callbacks(self, callbacks):
        """Functions called, in order, after each reset, once the new
        world is joined (to scale a learning rate by the new size, for
        instance)."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp, update_res):
        """Horovod's hook for a host update; hvdrun's come by themselves."""
        self._host_messages.put((timestamp, update_res))

    def commit(self):
        """Save the state (the point a reset goes back to), then raise
        HostsUpdatedInterrupt if hvdrun changed the hosts. Every rank must
        commit at the same steps: it is a collective."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """Raise HostsUpdatedInterrupt on every rank if hvdrun announced
        host updates newer than the last one acted on (rank 0's view
        decides, so that every rank stops at the same step), as Horovod's.
        An update that led to the generation already joined (a removal's
        reset) is not one. The state is synced after it even when hosts
        were only removed (where Horovod skips that): a removal also
        resets the job, and a rank that the reset reached first syncs."""
        last = prev = self._last_updated_timestamp
        current = _lib.lib.hvd_elastic_generation()
        everything = HostUpdateResult.no_update
        while not self._host_messages.empty():
            timestamp, update = self._host_messages.get()
            if timestamp > last and timestamp > current:
                last = timestamp
                everything |= update
        prev, self._last_updated_timestamp, everything = self._bcast_object(
            (prev, last, everything))
        if self._last_updated_timestamp > prev:
            raise HostsUpdatedInterrupt(False)

    def save(self):
        raise NotImplementedError()

    def restore(self):
        raise NotImplementedError()

    def sync(self):
        raise NotImplementedError()


class ObjectState(State):
    """State held as attributes (epoch=0, batch=0, ...): any value pickle
    can carry. Saved by deep copy; synced as rank 0's."""

    def __init__(self, bcast_object, get_rank, **kwargs):
        self._saved_state = kwargs
        self._set_attrs()
        super().__init__(bcast_object, get_rank)

    def save(self):
        self._saved_state = {k: copy.deepcopy(getattr(self, k)) for k in self._saved_state}

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self):
        for k, v in self._saved_state.items():
            setattr(self, k, copy.deepcopy(v))


def join_world(shutdown, init):
    """Leave the old world and join the next. A join that a further
    failure interrupts (HVD_ERESET from hvd_init) is tried again, into
    the generation after it."""
    shutdown()
    for _ in range(MAX_JOIN_ATTEMPTS):
        try:
            init()
            return
        except HorovodInternalError as e:
            if not is_reset(e):
                raise
            shutdown()
    raise HorovodInternalError("hvd.elastic: %d joins in a row were interrupted by resets; "
                               "giving up" % MAX_JOIN_ATTEMPTS)


def run_fn(func, reset):
    """func(state, ...) run until it returns, through every reset: a
    reset restores the last commit, new hosts keep the state as it is;
    both re-join (reset) and, unless nobody new joined, sync from rank
    0 before func runs again."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        skip_sync = False
        while True:
            try:
                if not skip_sync:
                    state.sync()
                return func(state, *args, **kwargs)
            except HorovodInternalError as e:
                if not is_reset(e):
                    raise
                state.restore()
                skip_sync = False
            except HostsUpdatedInterrupt as e:
                skip_sync = e.skip_sync
            reset()
            state.on_reset()

    return wrapper
