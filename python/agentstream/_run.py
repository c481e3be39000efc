"""Runs: results, handler dispatch, the pull loops (sync and asyncio), background runs and the
stream objects.

Delivery model. The Rust core runs the harness on its own threads and buffers what it delivers
(with backpressure); which channels it buffers, what a result is before the end and what
dropping an unread run does are the core's bridge's rules. This module PULLS batches from it —
``_native.Run.try_pull`` when something is ready, otherwise ``_native.Run.pull``, which waits
with the GIL released (under asyncio, ``_native.Run.pull_or_arm``, whose wake-up makes a
descriptor the event loop watches readable, so the loop never blocks and no thread sits in
between); a batch is what is ready, never a wait to fill one — and then dispatches each delivery
in order, one at a time, to the ``on(...)`` handlers of its channel (in the core's subscription
order) and to ``on_event``. No Rust thread ever calls into Python. ``async def`` handlers are
awaited in order.

A handler that raises does not stop the run: the core counts the failure
(``RunResult.handler_errors``) and says whether it is that handler's first on this run; the
first is logged with its traceback on the ``agentstream`` logger (:mod:`logging`, level
ERROR), the later ones are only counted.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from inspect import isawaitable
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from . import _native
from ._client_types import Millis
from .errors import BusyError, StillRunningError
from .types import (
    CancelKind,
    DecodeStats,
    Envelope,
    HookEvent,
    OutputEvent,
    Pressure,
    ReplayOutcome,
    RunState,
    UsageTotals,
)

if TYPE_CHECKING:
    from ._evolve import Evolve

__all__ = [
    "BackgroundRun",
    "RunResult",
    "RunStream",
    "SyncRunStream",
    "Replay",
    "replay",
    "Done",
    "HookHandler",
]

logger = logging.getLogger("agentstream")
"""Where a failing handler is reported (once per handler and run, with its traceback)."""

WAIT_MS = 250.0
"""How long a blocking pull waits before returning to Python (signals, cancellation)."""
ABORT_WAIT_MS = 2000.0
"""How long a blocking call waits for a run it cancelled because the caller's code raised."""
HOOK_HANDLER_ID = 0
"""The handler id of ``on_event`` in the core's handler-error count (subscriptions start at 1)."""

HookHandler = Callable[[HookEvent], object]
"""An ``on_event`` handler: gets each hook event (a flat snake_case dict); may be ``async def``."""


def millis(value: Millis | None, what: str) -> float | None:
    """A duration argument in milliseconds (int/float) or a ``timedelta``; ``None`` = none. The
    core checks the range and names the field."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        return value / timedelta(milliseconds=1)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of milliseconds or a timedelta, not {type(value).__name__}")
    return float(value)


# -------------------------------------------------------------------------------------------------
# Results
# -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunResult:
    """How a run or command ended (returned, not raised: check ``state`` or ``ok``).

    ``state`` is ``"completed"`` (exit 0, every line and tool call complete, the harness's
    end-of-run record printed), ``"failed"`` (non-zero exit, a signal, a fatal harness error,
    output cut mid-line or mid tool call, or a harness that stopped without its end-of-run
    record; ``error`` says which) or ``"cancelled"`` (``cancel_kind``: ``caller``,
    ``reader_left``, ``stalled`` or ``timeout``; ``cancel_reason`` says it in words).
    ``final_text`` is the answer of a completed harness run, and the answer so far of one that
    failed because the harness stopped without its end-of-run record; otherwise ``None``.
    """

    run_id: str
    state: RunState
    exit_code: int | None = None
    signal: int | None = None
    session_id: str | None = None
    usage: UsageTotals = field(default_factory=lambda: cast(UsageTotals, {}))
    final_text: str | None = None
    error: str | None = None
    cancel_reason: str | None = None
    cancel_kind: CancelKind | None = None
    pressure: Pressure = field(default_factory=lambda: _zero_pressure())
    stats: DecodeStats = field(default_factory=lambda: _zero_stats())
    last_sequence: int = 0
    diagnostics: list[str] = field(default_factory=list)
    duration_ms: int = 0
    handler_errors: int = 0
    """How many handler calls raised during the run (the first of each handler was logged)."""

    @property
    def ok(self) -> bool:
        """True when the run completed."""
        return self.state == "completed"

    @property
    def timed_out(self) -> bool:
        """True when the run was stopped by its ``timeout_ms``."""
        return self.cancel_kind == "timeout"

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> RunResult:
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in known})


def _zero_pressure() -> Pressure:
    return {
        "buffered": 0,
        "bytes": 0,
        "peak": 0,
        "peak_bytes": 0,
        "coalesced": 0,
        "oversize": 0,
        "stalled": False,
        "dropped_after_terminal": 0,
        "refused_terminals": 0,
    }


def _zero_stats() -> DecodeStats:
    return {
        "bytes": 0,
        "lines": 0,
        "events": 0,
        "blank_lines": 0,
        "invalid_json": 0,
        "non_object": 0,
        "unknown_type": 0,
        "unexpected_shape": 0,
        "oversize_lines": 0,
        "invalid_utf8_lines": 0,
    }


class Done:
    """An already-completed awaitable: ``pause()`` and ``resume()`` act at once, and ``await`` on
    the result (as in the seed's ``await evolve.pause()``) also works."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield  # pragma: no cover - makes this a generator

    def __repr__(self) -> str:
        return "<agentstream.Done>"


# -------------------------------------------------------------------------------------------------
# Dispatch
# -------------------------------------------------------------------------------------------------

_Table = dict[str, tuple[Callable[[Any], object], ...]]
_Ids = dict[str, tuple[int, ...]]


def _describe(exc: BaseException) -> str:
    """``Type: message`` of a handler's exception, even when its ``__str__`` raises or holds a
    lone surrogate (a file name ``os.listdir`` could not decode), which cannot cross into the
    native library as UTF-8: the report must never be what stops the run."""
    try:
        text = f"{type(exc).__name__}: {exc}"
    except Exception as unreadable:
        return f"{type(exc).__name__} (its message could not be read: {type(unreadable).__name__})"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class _LoopThread:
    """An event loop on a thread of its own, for the async handlers of a blocking run whose
    caller's thread already runs a loop."""

    def __init__(self) -> None:
        self._loop = loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=_serve_until_stopped, args=(loop,), name="agentstream-handlers",
                                       daemon=True)
        self.thread.start()
        # A blocking stream dropped without close() never closes its dispatch: its loop stops
        # (and its thread ends) when this object is collected. Refers to the loop, not to self.
        self._stop = weakref.finalize(self, _stop_soon, loop)

    def run(self, coroutine: Any) -> None:
        async def guarded() -> BaseException | None:
            # What the handler raised is raised here, on the caller's thread, as asyncio.Runner
            # would: a SystemExit escaping the loop would end its thread and leave this waiting.
            try:
                await coroutine
            except BaseException as exc:
                return exc
            return None

        raised = asyncio.run_coroutine_threadsafe(guarded(), self._loop).result()
        if raised is not None:
            raise raised

    def close(self) -> None:
        self._stop()  # once, whoever comes first
        self.thread.join()


def _stop_soon(loop: asyncio.AbstractEventLoop) -> None:
    # A loop whose run_forever already returned (a handler raised SystemExit on it) is closed.
    try:
        loop.call_soon_threadsafe(loop.stop)
    except RuntimeError:
        pass


def _serve_until_stopped(loop: asyncio.AbstractEventLoop) -> None:
    try:
        loop.run_forever()
    finally:
        loop.close()


class Dispatch:
    """Calls the handlers of each delivery of one run, in order, one at a time; reports handler
    failures to the core (which counts them) and logs the first of each handler."""

    __slots__ = ("_evolve", "_run", "_on_event", "_version", "_table", "_ids", "_loop_runner", "_loop_thread")

    def __init__(self, evolve: Evolve, run: _native.Run, on_event: HookHandler | None) -> None:
        self._evolve = evolve
        self._run = run
        self._on_event = on_event
        self._version = -1
        self._table: _Table = {}
        self._ids: _Ids = {}
        self._loop_runner: asyncio.Runner | None = None
        self._loop_thread: _LoopThread | None = None

    def table(self) -> _Table:
        """The handlers of each channel (and ``hook``: ``on_event``), as subscribed now."""
        version = self._evolve._version
        if version != self._version:
            table, ids = self._evolve._dispatch_table()
            table["hook"] = (self._on_event,) if self._on_event is not None else ()
            ids["hook"] = (HOOK_HANDLER_ID,) if self._on_event is not None else ()
            self._table, self._ids, self._version = table, ids, version
        return self._table

    def _subscribed(self, handler_id: int) -> bool:
        """Whether a handler of this delivery's table is still subscribed: one removed by an
        earlier handler of the same delivery is not called (the next delivery gets a new table)."""
        evolve = self._evolve
        return evolve._version == self._version or handler_id in evolve._handlers or handler_id == HOOK_HANDLER_ID

    def report(self, channel: str, index: int, payload: Any, sequence: int, exc: Exception) -> None:
        handler = self._table[channel][index]
        handler_id = self._ids[channel][index]
        message = _describe(exc)
        if not self._run.handler_failed(handler_id, "on_event" if channel == "hook" else channel, sequence, message):
            return
        name = getattr(handler, "__qualname__", None) or object.__repr__(handler)
        where = "on_event" if channel == "hook" else f"on({channel!r})"
        logger.error(
            "%s handler %s raised %s on sequence %d of run %s; the run goes on (this handler's later "
            "failures in this run are counted in RunResult.handler_errors, not logged)",
            where, name, message, sequence, self._run.run_id,
            exc_info=exc,
            extra={"agentstream_channel": channel, "agentstream_sequence": sequence,
                   "agentstream_run_id": self._run.run_id, "agentstream_event": payload},
        )

    # -- sync --------------------------------------------------------------------------------

    def call_sync(self, batch: Iterable[tuple[str, Any, int, int]]) -> None:
        if isinstance(batch, _native.Batch):
            # The native loop calls the handlers until one returns something (an awaitable?) or
            # raises; that delivery is finished here, from that handler on.
            while (stop := batch.call(self.table())) is not None:
                channel, payload, sequence, index, result, error = stop
                try:
                    if error is not None:
                        raise error
                    if isawaitable(result):
                        self._await_sync(result)
                except Exception as exc:
                    self.report(channel, index, payload, sequence, exc)
                self._rest_sync(channel, payload, sequence, index + 1)
            return
        for channel, payload, sequence, _ in batch:
            self.table()
            self._rest_sync(channel, payload, sequence, 0)

    def one_sync(self, channel: str, payload: Any, sequence: int) -> None:
        self.table()
        self._rest_sync(channel, payload, sequence, 0)

    def _rest_sync(self, channel: str, payload: Any, sequence: int, start: int) -> None:
        handlers, ids = self._table[channel], self._ids[channel]
        for index in range(start, len(handlers)):
            if not self._subscribed(ids[index]):
                continue
            try:
                r = handlers[index](payload)
                if r is not None and isawaitable(r):
                    self._await_sync(r)
            except Exception as exc:
                self.report(channel, index, payload, sequence, exc)

    def _await_sync(self, awaitable: Any) -> None:
        async def wait() -> None:
            await awaitable

        if _running_loop() is not None:
            # run_sync inside a running event loop (Jupyter, a blocking helper called from async
            # code): that loop is stuck in this call, so async handlers run on a loop of their own.
            if self._loop_thread is None:
                self._loop_thread = _LoopThread()
            self._loop_thread.run(wait())
            return
        if self._loop_runner is None:
            self._loop_runner = asyncio.Runner()
        self._loop_runner.run(wait())

    def loop_thread(self) -> threading.Thread | None:
        """The thread the async handlers of a blocking run run on, when not the reader's."""
        return self._loop_thread.thread if self._loop_thread is not None else None

    def close(self) -> None:
        if self._loop_runner is not None:
            self._loop_runner.close()
            self._loop_runner = None
        if self._loop_thread is not None:
            self._loop_thread.close()
            self._loop_thread = None

    # -- async -------------------------------------------------------------------------------

    async def call_async(self, batch: Iterable[tuple[str, Any, int, int]]) -> None:
        if isinstance(batch, _native.Batch):
            # As in call_sync: the native loop runs until a handler returns something or raises.
            while (stop := batch.call(self.table())) is not None:
                channel, payload, sequence, index, result, error = stop
                try:
                    if error is not None:
                        raise error
                    if isawaitable(result):
                        await result
                except Exception as exc:
                    self.report(channel, index, payload, sequence, exc)
                await self._rest_async(channel, payload, sequence, index + 1)
            return
        for channel, payload, sequence, _ in batch:
            self.table()
            await self._rest_async(channel, payload, sequence, 0)

    async def one_async(self, channel: str, payload: Any, sequence: int) -> None:
        self.table()
        await self._rest_async(channel, payload, sequence, 0)

    async def _rest_async(self, channel: str, payload: Any, sequence: int, start: int) -> None:
        handlers, ids = self._table[channel], self._ids[channel]
        for index in range(start, len(handlers)):
            if not self._subscribed(ids[index]):
                continue
            try:
                r = handlers[index](payload)
                if r is not None and isawaitable(r):
                    await r
            except Exception as exc:
                self.report(channel, index, payload, sequence, exc)


# -------------------------------------------------------------------------------------------------
# One operation
# -------------------------------------------------------------------------------------------------

_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _forget_pool_after_fork() -> None:
    # A child made by fork() has none of the pool's threads: start afresh (the core's runner
    # does the same with its runtime).
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_after_fork)


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    """Threads that wait for deliveries (GIL released) on behalf of asyncio tasks."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = concurrent.futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="agentstream-pull")
        return _POOL


def _settle(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


_WATCHES: dict[type, bool] = {}
"""Per event loop class: whether ``add_reader`` works there (see below)."""


def _loop_watches_descriptors(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop.add_reader`` works there (selector loops and uvloop do; Windows'
    proactor loop does not, and waits on the reader pool instead)."""
    known = _WATCHES.get(type(loop))
    if known is None:
        try:
            r, w = os.pipe()
        except OSError:
            return False
        try:
            loop.add_reader(r, lambda: None)
            loop.remove_reader(r)
            known = True
        except NotImplementedError:
            known = False
        finally:
            os.close(r)
            os.close(w)
        _WATCHES[type(loop)] = known
    return known

Batch = _native.Batch
"""Pulled deliveries ``(channel, payload, sequence, coalesced)``, converted as they are iterated."""


class Op:
    """A started operation: the native run, its dispatcher, the pull loops."""

    __slots__ = ("run", "dispatch", "_inflight", "_on_loop", "result", "__weakref__")

    def __init__(self, evolve: Evolve, run: _native.Run, on_event: HookHandler | None) -> None:
        self.run = run
        self.dispatch = Dispatch(evolve, run, on_event)
        self._inflight: concurrent.futures.Future[Batch] | None = None
        self._on_loop = False  # a task waits on the event loop for this run
        self.result: RunResult | None = None

    # -- pulling -----------------------------------------------------------------------------

    def pull_sync(self) -> Batch:
        # What is ready first, as pull_async does.
        batch = self.run.try_pull()
        if batch or self.run.ended:
            return batch
        return self.run.pull(WAIT_MS)

    async def pull_async(self) -> Batch:
        """The next batch (possibly empty: check ``run.ended``), without blocking the loop."""
        cf = self._inflight
        if cf is None or cf.cancelled():
            batch = self.run.try_pull()
            if batch or self.run.ended:
                return batch
            if _loop_watches_descriptors(asyncio.get_running_loop()):
                return await self._pull_on_loop()
            cf = self._inflight = _pool().submit(self.run.pull, WAIT_MS)
        # If this task is cancelled while the pull runs, the pull still completes: its batch is
        # kept in `_inflight` and taken by the next call (nothing is lost for the handlers).
        batch = await asyncio.wrap_future(cf)
        self._inflight = None
        return batch

    async def _pull_on_loop(self) -> Batch:
        """Wait on the event loop itself: the native wait's waker makes ``wake_fd`` readable
        (one wake-up per batch, no thread in between). A wait left armed by a cancelled task
        is the one the next call polls: nothing it takes is lost."""
        if self._on_loop:
            raise RuntimeError("a run is read by one task at a time (another task is waiting for its next batch)")
        loop = asyncio.get_running_loop()
        fd = self.run.wake_fd
        self._on_loop = True
        try:
            while (batch := self.run.pull_or_arm()) is None:
                woken = loop.create_future()
                loop.add_reader(fd, _settle, woken)
                try:
                    await woken
                finally:
                    loop.remove_reader(fd)
            return batch
        finally:
            self._on_loop = False

    # -- draining ----------------------------------------------------------------------------

    def drain_sync(self) -> None:
        while True:
            batch = self.pull_sync()
            if batch:
                self.dispatch.call_sync(batch)
            elif self.run.ended:
                return

    async def drain_async(self) -> None:
        while True:
            batch = await self.pull_async()
            if batch:
                await self.dispatch.call_async(batch)
                await asyncio.sleep(0)  # let other tasks run between batches of a flood
            elif self.run.ended:
                return

    # -- result ------------------------------------------------------------------------------

    def finish_sync(self) -> RunResult:
        if self.result is None:
            d = self.run.wait(WAIT_MS)
            while d is None:
                d = self.run.wait(WAIT_MS)
            self.result = RunResult._from_native(d)
            self.dispatch.close()
        return self.result

    async def finish_async(self) -> RunResult:
        if self.result is None:
            d = self.run.wait(0)
            while d is None:
                d = await asyncio.wrap_future(_pool().submit(self.run.wait, WAIT_MS))
            self.result = RunResult._from_native(d)
            self.dispatch.close()
        return self.result

    def abort(self, why: str, wait_ms: float = 0.0) -> None:
        """The caller's code raised (or its task was cancelled) in the middle of the run: cancel
        it through the one path. The run ends in the background within its kill grace; a
        blocking caller waits up to ``wait_ms`` for that (so that Ctrl-C in a script does not
        leave the harness behind when the interpreter exits right after)."""
        if not self.run.finished:
            self.run.cancel(why)
            if wait_ms > 0:
                self.run.wait_finished(wait_ms)
        self.dispatch.close()


async def run_async(op: Op) -> RunResult:
    try:
        if op.run.has_reader:
            await op.drain_async()
        return await op.finish_async()
    except BaseException as exc:
        op.abort(f"the caller stopped waiting ({type(exc).__name__})")
        if isinstance(exc, asyncio.CancelledError) and not op.run.finished:
            # A timeout or a cancelled task: the Evolve stays busy until the harness has exited
            # (SIGTERM, then SIGKILL after its grace period). Waiting for that here (bounded, as
            # run_sync does) lets the caller start its next run at once instead of meeting
            # AlreadyRunningError. Cancelled again meanwhile: it goes on in the background.
            # Nothing the wait raises may replace the CancelledError (asyncio.timeout turns
            # only that into TimeoutError).
            try:
                await asyncio.wrap_future(_pool().submit(op.run.wait_finished, ABORT_WAIT_MS))
            except Exception:
                pass
        raise


def run_sync(op: Op) -> RunResult:
    try:
        if op.run.has_reader:
            op.drain_sync()
        return op.finish_sync()
    except BaseException as exc:
        op.abort(f"the caller stopped waiting ({type(exc).__name__})", wait_ms=ABORT_WAIT_MS)
        raise


# -------------------------------------------------------------------------------------------------
# Background runs
# -------------------------------------------------------------------------------------------------

_RUNNING: set[BackgroundRun] = set()
"""Background runs not finished yet: their task or thread must not be garbage-collected."""


class BackgroundRun:
    """A run started with ``background=True``: it goes on (its handlers are called) while the
    caller does other things. ``await handle`` or ``handle.wait()`` gives the
    :class:`RunResult`.

    A background run started from ``await evolve.run(...)`` is driven by a task of that event
    loop (it is cancelled with the loop); one started from ``run_sync(...)`` by a thread of its
    own, which keeps the interpreter alive until the run ends.
    """

    def __init__(self, op: Op, future: concurrent.futures.Future[RunResult],
                 loop: asyncio.AbstractEventLoop | None) -> None:
        self._op = op
        self._future = future
        self._loop = loop
        self._task: asyncio.Task[RunResult] | None = None
        self._thread: threading.Thread | None = None
        _RUNNING.add(self)
        future.add_done_callback(lambda _: _RUNNING.discard(self))

    @classmethod
    def in_task(cls, op: Op) -> BackgroundRun:
        loop = asyncio.get_running_loop()
        future: concurrent.futures.Future[RunResult] = concurrent.futures.Future()
        task = loop.create_task(run_async(op))

        def settle(t: asyncio.Task[RunResult]) -> None:
            if t.cancelled():
                future.cancel()
            elif (e := t.exception()) is not None:
                future.set_exception(e)
            else:
                future.set_result(t.result())

        task.add_done_callback(settle)
        handle = cls(op, future, loop)
        handle._task = task  # the loop holds tasks weakly
        return handle

    @classmethod
    def in_thread(cls, op: Op) -> BackgroundRun:
        future: concurrent.futures.Future[RunResult] = concurrent.futures.Future()

        def drive() -> None:
            try:
                future.set_result(run_sync(op))
            except BaseException as e:
                future.set_exception(e)

        thread = threading.Thread(target=drive, name=f"agentstream-{op.run.run_id}")
        handle = cls(op, future, None)
        handle._thread = thread
        thread.start()
        return handle

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self._op.run.run_id

    @property
    def pressure(self) -> Pressure:
        """Live backpressure statistics of the run."""
        return self._op.run.pressure

    def done(self) -> bool:
        """True once the run ended and every delivery was handed to the handlers."""
        return self._future.done()

    def cancel(self, reason: str = "cancelled by the caller") -> None:
        """Cancel the run (first reason stands); its result then says ``cancelled``."""
        self._op.run.cancel(reason)

    def wait(self, timeout_ms: Millis | None = None) -> RunResult:
        """Block until the run ended and return its result; :class:`StillRunningError` when
        ``timeout_ms`` passed first (the run goes on). From inside the event loop that drives
        the run, ``await`` the handle instead (:class:`BusyError`)."""
        if self._loop is not None and self._loop.is_running() and _running_loop() is self._loop:
            raise BusyError("this background run is driven by the running event loop: await it instead of wait()")
        if threading.current_thread() is self._thread and not self.done():
            raise BusyError(_WAITS_FOR_ITSELF)
        timeout = millis(timeout_ms, "timeout_ms")
        try:
            return self._future.result(None if timeout is None else timeout / 1000.0)
        except concurrent.futures.TimeoutError:
            raise StillRunningError(
                f"run {self.run_id} is still running after {timeout_ms} ms; wait longer or cancel it"
            ) from None

    def __await__(self) -> Generator[Any, None, RunResult]:
        if self._task is not None and not self.done() and _running_loop() and asyncio.current_task() is self._task:
            raise BusyError(_WAITS_FOR_ITSELF)
        # Shielded: an awaiter that gives up (``wait_for``'s timeout, a cancelled task group) must
        # not cancel the result every other awaiter and the run itself share.
        return asyncio.shield(asyncio.wrap_future(self._future)).__await__()

    def __repr__(self) -> str:
        return f"<agentstream.BackgroundRun {self.run_id} {'done' if self.done() else 'running'}>"


_WAITS_FOR_ITSELF = (
    "a run's own handler waited for the run to end, which it cannot do while that handler runs: return "
    "from the handler (act on the run's end in an on('lifecycle', ...) handler, or wait from elsewhere)")


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


# -------------------------------------------------------------------------------------------------
# Streams
# -------------------------------------------------------------------------------------------------

_Starter = Callable[[bool], Op]


class _StreamBase:
    """What the async and the sync stream share: starting, envelopes, pressure."""

    def __init__(self, start: _Starter) -> None:
        self._start = start
        self._op: Op | None = None
        self._pending: deque[tuple[str, Any, int, int]] = deque()
        self._exhausted = False
        # Held while a reader takes the next envelope: handlers are called one at a time, in
        # order, and a second thread or task reading the same stream meanwhile is an error.
        self._reader = threading.Lock()
        # Who holds it (the task, else the thread): closing from elsewhere waits for that reader.
        self._reader_owner: object | None = None
        self._closing = False

    def _one_reader(self, ended: type[Exception]) -> None:
        if not self._reader.acquire(blocking=False):
            if self._closing:
                raise ended  # closed from another thread or task, which delivers the rest
            raise RuntimeError(
                "a stream is read by one reader at a time: another thread or task is taking its next "
                "envelope (share the envelopes, not the stream)")
        if self._closing:
            # Closed from elsewhere: this iterator is over; the closer delivers the rest.
            self._reader.release()
            raise ended
        self._reader_owner = self._identity()

    def _identity(self) -> object:
        """Who is reading, as :meth:`_read_by_caller` compares it: the task (inside a running
        event loop), else the thread."""
        try:
            task = asyncio.current_task()
        except RuntimeError:
            task = None
        return task if task is not None else threading.current_thread()

    def _done_reading(self) -> None:
        self._reader_owner = None
        self._reader.release()

    def _read_by_caller(self) -> bool:
        """Whether the reader taking an envelope now is the caller itself (a handler closing)."""
        return self._reader_owner is not None and self._reader_owner is self._identity()

    def _closer_delivers(self) -> bool:
        """Leave the stream (the run is cancelled if unfinished). True when the caller is to take
        the reader's place once its step ends and deliver the rest; False when there is nothing
        to read or the caller is the reader itself (one of the run's handlers), which goes on."""
        if self._op is None:
            return False
        self._leave()
        if self._read_by_caller():
            return False
        self._closing = True
        return True

    def _ensure(self, iterate: bool) -> Op:
        if self._op is None:
            self._op = self._start(iterate)
        return self._op

    @property
    def run_id(self) -> str | None:
        """The run's id once started."""
        return self._op.run.run_id if self._op is not None else None

    @property
    def pressure(self) -> Pressure:
        """Live backpressure statistics of the run (zeros before it starts)."""
        return self._op.run.pressure if self._op is not None else _zero_pressure()

    @property
    def result(self) -> RunResult:
        """The run's result, once its terminal envelope was delivered: yielded by the iterator,
        or taken by ``wait()`` / ``await`` / leaving the block. :class:`StillRunningError`
        before (decisions.md §1: a result is final only after the terminal)."""
        op = self._op
        if op is not None and op.result is not None:
            return op.result
        # The terminal is the last item: while any item waits to be yielded, it has not been.
        if op is None or any(channel != "hook" for channel, *_ in self._pending):
            raise StillRunningError(
                "the run's terminal envelope has not been delivered yet: read the stream to its end, "
                "or wait() / await it")
        return RunResult._from_native(op.run.result())

    def cancel(self, reason: str = "cancelled by the caller") -> None:
        """Cancel the run (first reason stands); the iterator then ends with the terminal."""
        if self._op is not None:
            self._op.run.cancel(reason)

    def _envelope(self, channel: str, payload: Any, sequence: int, coalesced: int) -> Envelope:
        assert self._op is not None
        env: dict[str, Any] = {"run_id": self._op.run.run_id, "sequence": sequence, "channel": channel,
                               "event": payload}
        if coalesced:
            env["coalesced"] = coalesced
        return cast(Envelope, env)

    def _leave(self) -> None:
        """Leaving before the end cancels the run through the one path ("reader left")."""
        op = self._op
        if op is not None and op.result is None and not op.run.ended:
            op.run.reader_left()


class RunStream(_StreamBase):
    """A run as an async iterator of sequenced envelopes (``evolve.stream(...)``).

    ``async with evolve.stream(prompt) as stream: async for envelope in stream: ...`` then
    ``result = await stream``. Each envelope is ``{"run_id", "sequence", "channel", "event",
    "coalesced"?}`` (snake_case, like every envelope-level key in Python; ``event`` is the
    content/lifecycle dict or the stdout/stderr text). ``on(...)`` handlers and ``on_event``
    are called too, for each delivery before the iterator yields it. Leaving the ``async with``
    block before the end cancels the run (reason "reader left"); the remaining deliveries
    still go to the handlers, and the result is ``cancelled``. An abandoned stream (no
    ``async with``, dropped mid-way) cancels its run when it is garbage-collected.
    ``await evolve.stream(...)`` without iterating just runs it to the end and returns the
    :class:`RunResult`.
    """

    async def __aenter__(self) -> RunStream:
        self._ensure(iterate=True)
        return self

    async def __aexit__(self, et: type[BaseException] | None, ev: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    def __aiter__(self) -> RunStream:
        return self

    async def __anext__(self) -> Envelope:
        self._one_reader(StopAsyncIteration)
        try:
            return await self._next_async()
        finally:
            self._done_reading()

    async def _next_async(self) -> Envelope:
        op = self._ensure(iterate=True)
        while True:
            if not self._pending:
                if self._exhausted or op.result is not None:
                    raise StopAsyncIteration
                batch = await op.pull_async()
                if not batch:
                    if op.run.ended:
                        self._exhausted = True
                    continue
                self._pending.extend(batch)
            channel, payload, sequence, coalesced = self._pending.popleft()
            await op.dispatch.one_async(channel, payload, sequence)
            if channel != "hook":
                return self._envelope(channel, payload, sequence, coalesced)

    async def _rest(self) -> RunResult:
        """Deliver what is left to the handlers only, then the result."""
        op = self._ensure(iterate=False)
        if op.result is not None:
            return op.result
        try:
            if op.run.has_reader:
                while self._pending:
                    channel, payload, sequence, _ = self._pending.popleft()
                    await op.dispatch.one_async(channel, payload, sequence)
                await op.drain_async()
            self._exhausted = True
            return await op.finish_async()
        except BaseException as exc:
            op.abort(f"the caller stopped waiting ({type(exc).__name__})")
            raise

    async def aclose(self) -> None:
        """Leave the stream: cancels the run if it has not ended, and waits for its result (after
        the envelope another task is taking, if one is; from one of the run's own handlers it only
        cancels: the reader it interrupts delivers the rest)."""
        if not self._closer_delivers():
            return
        while not self._reader.acquire(blocking=False):
            await asyncio.sleep(0.005)  # another task's step ends soon: the run was cancelled
        try:
            await self._rest()
        finally:
            self._reader.release()

    def __await__(self) -> Generator[Any, None, RunResult]:
        return self._rest().__await__()


class SyncRunStream(_StreamBase):
    """The blocking twin of :class:`RunStream` (``evolve.stream_sync(...)``), for scripts:
    ``with evolve.stream_sync(prompt) as stream: for envelope in stream: ...`` then
    ``result = stream.wait()``."""

    def __enter__(self) -> SyncRunStream:
        self._ensure(iterate=True)
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __iter__(self) -> SyncRunStream:
        return self

    def _identity(self) -> object:
        # A blocking stream is read by a thread: its async handlers run in a task on that thread,
        # or on the dispatch's own loop thread, which acts for it.
        thread = threading.current_thread()
        op = self._op
        loop_thread = op.dispatch.loop_thread() if op is not None else None
        return self._reader_owner if loop_thread is thread and self._reader_owner is not None else thread

    def __next__(self) -> Envelope:
        self._one_reader(StopIteration)
        try:
            return self._next_sync()
        finally:
            self._done_reading()

    def _next_sync(self) -> Envelope:
        op = self._ensure(iterate=True)
        while True:
            if not self._pending:
                if self._exhausted or op.result is not None:
                    raise StopIteration
                batch = op.pull_sync()
                if not batch:
                    if op.run.ended:
                        self._exhausted = True
                    continue
                self._pending.extend(batch)
            channel, payload, sequence, coalesced = self._pending.popleft()
            op.dispatch.one_sync(channel, payload, sequence)
            if channel != "hook":
                return self._envelope(channel, payload, sequence, coalesced)

    def wait(self) -> RunResult:
        """Deliver what is left to the handlers (not the iterator) and return the result."""
        op = self._ensure(iterate=False)
        if op.result is not None:
            return op.result
        try:
            if op.run.has_reader:
                while self._pending:
                    channel, payload, sequence, _ = self._pending.popleft()
                    op.dispatch.one_sync(channel, payload, sequence)
                op.drain_sync()
            self._exhausted = True
            return op.finish_sync()
        except BaseException as exc:
            op.abort(f"the caller stopped waiting ({type(exc).__name__})", wait_ms=ABORT_WAIT_MS)
            raise

    def close(self) -> None:
        """Leave the stream: cancels the run if it has not ended, and waits for its result (after
        the envelope another thread is taking, if one is; from one of the run's own handlers it
        only cancels: the reader it interrupts delivers the rest)."""
        if self._closer_delivers():
            with self._reader:  # another thread's step ends soon: the run was cancelled
                self.wait()


# -------------------------------------------------------------------------------------------------
# Replay (sans-IO)
# -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replay:
    """Everything a replayed run delivers (``agentstream.replay``)."""

    items: list[Envelope]
    """The sequenced stream: ``run_start``, each stdout line followed by its content events,
    the terminal lifecycle event last."""
    hooks: list[HookEvent]
    """The ``on_event`` hook events derived from it, in order (flat snake_case dicts)."""
    outcome: ReplayOutcome
    """``{"state": "completed"}``, ``{"state": "failed", "error", "detail"}`` or
    ``{"state": "cancelled", "reason"}``."""
    stats: DecodeStats

    @property
    def events(self) -> list[OutputEvent]:
        """The content events, in order (what ``parse`` returns for the same input)."""
        return [cast(OutputEvent, e["event"]) for e in self.items if e["channel"] == "content"]

    @property
    def state(self) -> RunState:
        return self.outcome["state"]


def replay(
    agent: str,
    data: bytes | bytearray | memoryview | str,
    *,
    run_id: str = "replay",
    agent_id: str | None = None,
    timestamp: str | None = None,
    redact: bool = True,
) -> Replay:
    """Replay recorded harness stdout through the whole pipeline — decoder, run stream, terminal,
    hooks — exactly as a live run would deliver it, without a process. Deterministic: lifecycle
    and hook events carry ``timestamp`` (default ``1970-01-01T00:00:00.000Z``). Secret shapes in
    tool-call inputs are masked as in a run; ``redact=False`` keeps them."""
    r = _native.replay(agent, data, run_id=run_id, agent_id=agent_id, timestamp=timestamp, redact=redact)
    return Replay(items=r["items"], hooks=r["hooks"], outcome=r["outcome"], stats=r["stats"])
