"""Runs: results, handler dispatch, the pull loops (sync and asyncio) and the stream objects.

Delivery model. The Rust core runs the harness on its own threads and buffers what it
delivers (with backpressure). This module PULLS batches of up to 256 deliveries from it —
``_native.Run.try_pull`` when something is ready, otherwise ``_native.Run.pull``, which waits with
the GIL released (on a small reader thread pool under asyncio, so the event loop never blocks)
— and then dispatches each delivery in order, one at a time, to the ``on(...)`` handlers of its
channel and to ``on_event``. No Rust thread ever calls into Python. A handler that raises is
reported once (a :class:`~agentstream.errors.HandlerWarning` carrying the event) and the run goes
on; ``async def`` handlers are awaited in order.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import warnings
from collections import deque
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from inspect import isawaitable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, cast

from . import _native
from .errors import HandlerWarning
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
    "Backpressure",
    "RunResult",
    "RunStream",
    "SyncRunStream",
    "Replay",
    "replay",
    "Done",
    "HookHandler",
]

BATCH = 256
"""Deliveries taken per pull."""
WAIT = 0.25
"""Seconds a blocking pull waits before returning to Python (signals, cancellation)."""
ABORT_WAIT = 2.0
"""Seconds a blocking call waits for a run it cancelled because the caller's code raised."""

HookHandler = Callable[[HookEvent], object]
"""An ``on_event`` handler: gets each hook event (a flat snake_case dict); may be ``async def``."""
Timeout = float | int | timedelta | None

_ITEMS = _native.CH_CONTENT | _native.CH_LIFECYCLE | _native.CH_STDOUT | _native.CH_STDERR
_BITS = {
    "content": _native.CH_CONTENT,
    "lifecycle": _native.CH_LIFECYCLE,
    "stdout": _native.CH_STDOUT,
    "stderr": _native.CH_STDERR,
    "hook": _native.CH_HOOKS,
}

# -------------------------------------------------------------------------------------------------
# Options and results
# -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Backpressure:
    """The bounded buffer between a run and its reader (decisions.md §3).

    Past ``high_water`` unread items or ``byte_budget`` unread bytes, arriving text deltas
    (message/thought text, stdout, stderr) merge into the newest buffered one (exactly, counted
    in ``coalesced``); nothing else merges and nothing is dropped. A reader that leaves items
    unread for ``stall_seconds`` gets the run cancelled (``cancel_kind == "stalled"``).
    """

    high_water: int = 256
    byte_budget: int = 8 * 1024 * 1024
    stall_seconds: float = 30.0


@dataclass(frozen=True)
class RunResult:
    """How a run or command ended (returned, not raised: check ``state`` or ``ok``).

    ``state`` is ``"completed"`` (exit 0, every line and tool call complete), ``"failed"``
    (non-zero exit, a signal, a fatal harness error, output cut mid-line or mid tool call;
    ``error`` says which) or ``"cancelled"`` (``cancel_kind``: ``caller``, ``reader_left``,
    ``stalled`` or ``timeout``; ``cancel_reason`` says it in words). ``final_text`` is the answer
    of a completed harness run only: partial text is never presented as an answer.
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
    """How many handler calls raised during the run (each was reported as a HandlerWarning)."""

    @property
    def ok(self) -> bool:
        """True when the run completed."""
        return self.state == "completed"

    @property
    def timed_out(self) -> bool:
        """True when the run was stopped by its ``timeout``."""
        return self.cancel_kind == "timeout"

    @classmethod
    def _from_native(cls, d: Mapping[str, Any], handler_errors: int) -> RunResult:
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in known}, handler_errors=handler_errors)


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


def seconds(value: Timeout, what: str = "timeout") -> float | None:
    """``timeout``-like arguments: seconds (int/float) or a ``timedelta``; ``None`` = no limit."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds or a timedelta, not {type(value).__name__}")
    return float(value)


def backpressure_kwargs(bp: Backpressure | None) -> dict[str, Any]:
    if bp is None:
        return {}
    if not isinstance(bp, Backpressure):
        raise TypeError(f"backpressure must be an agentstream.Backpressure, not {type(bp).__name__}")
    return {"high_water": bp.high_water, "byte_budget": bp.byte_budget, "stall_seconds": bp.stall_seconds}


class Done:
    """An already-completed awaitable: ``pause()`` & co. act at once, and ``await`` on the result
    (as in the seed's ``await evolve.pause()``) also works."""

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


class Dispatch:
    """Calls the handlers of each delivery, in order, one at a time; reports handler errors."""

    __slots__ = ("_evolve", "_on_event", "_version", "_table", "errors", "_loop_runner")

    def __init__(self, evolve: Evolve, on_event: HookHandler | None) -> None:
        self._evolve = evolve
        self._on_event = on_event
        self._version = -1
        self._table: _Table = {}
        self.errors = 0
        self._loop_runner: asyncio.Runner | None = None

    def table(self) -> _Table:
        version = self._evolve._version
        if version != self._version:
            table: _Table = {ch: tuple(self._evolve.handlers(ch)) for ch in _native.CHANNELS}
            table["hook"] = (self._on_event,) if self._on_event is not None else ()
            self._table, self._version = table, version
        return self._table

    def mask(self) -> int:
        return sum(_BITS[ch] for ch, hs in self.table().items() if hs)

    def report(self, channel: str, handler: Callable[[Any], object], payload: Any, sequence: int,
               exc: Exception) -> None:
        self.errors += 1
        warnings.warn(HandlerWarning(channel, handler, payload, sequence, exc), stacklevel=4)

    # -- sync --------------------------------------------------------------------------------

    def call_sync(self, batch: Iterable[tuple[str, Any, int, int]]) -> None:
        table = self.table()
        if isinstance(batch, _native.Batch):
            # The native loop calls the handlers until one returns something (an awaitable?) or
            # raises; that delivery is finished here, from that handler on.
            while (stop := batch.call(table)) is not None:
                channel, payload, sequence, index, result, error = stop
                handlers = table[channel]
                try:
                    if error is not None:
                        raise error
                    if isawaitable(result):
                        self._await_sync(result)
                except Exception as exc:
                    self.report(channel, handlers[index], payload, sequence, exc)
                for handler in handlers[index + 1:]:
                    try:
                        r = handler(payload)
                        if r is not None and isawaitable(r):
                            self._await_sync(r)
                    except Exception as exc:
                        self.report(channel, handler, payload, sequence, exc)
            return
        for channel, payload, sequence, _ in batch:
            for handler in table[channel]:
                try:
                    r = handler(payload)
                    if r is not None and isawaitable(r):
                        self._await_sync(r)
                except Exception as exc:
                    self.report(channel, handler, payload, sequence, exc)

    def _await_sync(self, awaitable: Any) -> None:
        if self._loop_runner is None:
            self._loop_runner = asyncio.Runner()
        async def wait() -> None:
            await awaitable
        self._loop_runner.run(wait())

    def close(self) -> None:
        if self._loop_runner is not None:
            self._loop_runner.close()
            self._loop_runner = None

    # -- async -------------------------------------------------------------------------------

    async def call_async(self, batch: Iterable[tuple[str, Any, int, int]]) -> None:
        table = self.table()
        if isinstance(batch, _native.Batch):
            # As in call_sync: the native loop runs until a handler returns something or raises.
            while (stop := batch.call(table)) is not None:
                channel, payload, sequence, index, result, error = stop
                handlers = table[channel]
                try:
                    if error is not None:
                        raise error
                    if isawaitable(result):
                        await result
                except Exception as exc:
                    self.report(channel, handlers[index], payload, sequence, exc)
                for handler in handlers[index + 1:]:
                    try:
                        r = handler(payload)
                        if r is not None and isawaitable(r):
                            await r
                    except Exception as exc:
                        self.report(channel, handler, payload, sequence, exc)
            return
        for channel, payload, sequence, _ in batch:
            for handler in table[channel]:
                try:
                    r = handler(payload)
                    if r is not None and isawaitable(r):
                        await r
                except Exception as exc:
                    self.report(channel, handler, payload, sequence, exc)

    async def one_async(self, channel: str, payload: Any, sequence: int) -> None:
        for handler in self.table()[channel]:
            try:
                r = handler(payload)
                if r is not None and isawaitable(r):
                    await r
            except Exception as exc:
                self.report(channel, handler, payload, sequence, exc)

    def one_sync(self, channel: str, payload: Any, sequence: int) -> None:
        for handler in self.table()[channel]:
            try:
                r = handler(payload)
                if r is not None and isawaitable(r):
                    self._await_sync(r)
            except Exception as exc:
                self.report(channel, handler, payload, sequence, exc)


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


Batch = _native.Batch
"""Pulled deliveries ``(channel, payload, sequence, coalesced)``, converted as they are iterated."""


class Op:
    """A started operation: the native run, its dispatcher, the pull loops."""

    __slots__ = ("evolve", "run", "dispatch", "_inflight", "result", "__weakref__")

    def __init__(self, evolve: Evolve, run: _native.Run, dispatch: Dispatch) -> None:
        self.evolve = evolve
        self.run = run
        self.dispatch = dispatch
        self._inflight: concurrent.futures.Future[Batch] | None = None
        self.result: RunResult | None = None

    def refresh_mask(self, iterate: bool) -> None:
        self.run.channels = self.dispatch.mask() | (_ITEMS if iterate else 0)

    # -- pulling -----------------------------------------------------------------------------

    def pull_sync(self) -> Batch:
        # What is ready first, as pull_async does: a blocking pull that gets a partial batch
        # lingers for more, which idles this thread while the runner has work queued for it.
        batch = self.run.try_pull(BATCH)
        if batch or self.run.ended:
            return batch
        return self.run.pull(BATCH, WAIT)

    async def pull_async(self) -> Batch:
        """The next batch (possibly empty: check ``run.ended``), without blocking the loop."""
        cf = self._inflight
        if cf is None or cf.cancelled():
            batch = self.run.try_pull(BATCH)
            if batch or self.run.ended:
                return batch
            cf = self._inflight = _pool().submit(self.run.pull, BATCH, WAIT)
        # If this task is cancelled while the pull runs, the pull still completes: its batch is
        # kept in `_inflight` and taken by the next call (nothing is lost for the handlers).
        batch = await asyncio.wrap_future(cf)
        self._inflight = None
        return batch

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
            d = self.run.result()
            while d is None:
                d = self.run.wait(WAIT)
            self.result = RunResult._from_native(d, self.dispatch.errors)
            self.dispatch.close()
            self.evolve._forget(self)
        return self.result

    async def finish_async(self) -> RunResult:
        if self.result is None:
            d = self.run.result()
            while d is None:
                d = await asyncio.wrap_future(_pool().submit(self.run.wait, WAIT))
            self.result = RunResult._from_native(d, self.dispatch.errors)
            self.dispatch.close()
            self.evolve._forget(self)
        return self.result

    def abort(self, why: str, wait: float = 0.0) -> None:
        """The caller's code raised (or its task was cancelled) in the middle of the run: cancel
        it through the one path. The run ends in the background within its kill grace; a
        blocking caller waits up to ``wait`` seconds for that (so that Ctrl-C in a script does
        not leave the harness behind when the interpreter exits right after)."""
        if not self.run.finished:
            self.run.cancel(why)
            if wait > 0:
                self.run.wait(wait)
        self.dispatch.close()


async def run_async(op: Op) -> RunResult:
    try:
        if op.run.channels:
            await op.drain_async()
        return await op.finish_async()
    except BaseException as exc:
        op.abort(f"the caller stopped waiting ({type(exc).__name__})")
        raise


def run_sync(op: Op) -> RunResult:
    try:
        if op.run.channels:
            op.drain_sync()
        return op.finish_sync()
    except BaseException as exc:
        op.abort(f"the caller stopped waiting ({type(exc).__name__})", wait=ABORT_WAIT)
        raise


# -------------------------------------------------------------------------------------------------
# Streams
# -------------------------------------------------------------------------------------------------

_Starter = Callable[[bool], Op]


class _StreamBase:
    """What the async and the sync stream share: starting, envelopes, pressure."""

    def __init__(self, start: _Starter) -> None:
        self._start = start
        self._op: Op | None = None
        self._iterating = False
        self._pending: deque[tuple[str, Any, int, int]] = deque()
        self._exhausted = False

    def _ensure(self, iterate: bool) -> Op:
        if self._op is None:
            self._op = self._start(iterate)
            self._iterating = iterate
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
    def result(self) -> RunResult | None:
        """The result once the stream was drained or closed."""
        return self._op.result if self._op is not None else None

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

    def __del__(self) -> None:
        # An `async for` broken out of without `async with`: still cancel the run.
        try:
            self._leave()
        except Exception:
            pass


class RunStream(_StreamBase):
    """A run as an async iterator of sequenced envelopes (``evolve.stream(...)``).

    ``async with evolve.stream(prompt=...) as stream: async for envelope in stream: ...`` then
    ``result = await stream``. Each envelope is ``{"run_id", "sequence", "channel", "event",
    "coalesced"?}`` (snake_case, like every envelope-level key in Python; ``event`` is the
    content/lifecycle dict or the stdout/stderr text). ``on(...)`` handlers and ``on_event``
    are called too, for each delivery before the iterator yields it. Leaving the ``async with``
    block before the end cancels the run (reason "reader left"); the remaining deliveries
    still go to the handlers, and the result is ``cancelled``. ``await evolve.stream(...)``
    without iterating just runs it to the end and returns the :class:`RunResult`.
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
            if op.run.channels:
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
        """Leave the stream: cancels the run if it has not ended, and waits for its result."""
        if self._op is None:
            return
        self._leave()
        await self._rest()

    def __await__(self) -> Generator[Any, None, RunResult]:
        return self._rest().__await__()


class SyncRunStream(_StreamBase):
    """The blocking twin of :class:`RunStream` (``evolve.stream_sync(...)``), for scripts:
    ``with evolve.stream_sync(prompt=...) as stream: for envelope in stream: ...`` then
    ``result = stream.wait()``."""

    def __enter__(self) -> SyncRunStream:
        self._ensure(iterate=True)
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __iter__(self) -> SyncRunStream:
        return self

    def __next__(self) -> Envelope:
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
            if op.run.channels:
                while self._pending:
                    channel, payload, sequence, _ = self._pending.popleft()
                    op.dispatch.one_sync(channel, payload, sequence)
                op.drain_sync()
            self._exhausted = True
            return op.finish_sync()
        except BaseException as exc:
            op.abort(f"the caller stopped waiting ({type(exc).__name__})", wait=ABORT_WAIT)
            raise

    def close(self) -> None:
        """Leave the stream: cancels the run if it has not ended, and waits for its result."""
        if self._op is None:
            return
        self._leave()
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


def command_argv(command: str | Sequence[str]) -> list[str]:
    """A shell string runs through ``sh -c``; a sequence is the argv itself."""
    if isinstance(command, str):
        if not command.strip():
            raise ValueError("execute_command needs a command, e.g. 'ls -la'")
        return ["sh", "-c", command]
    argv = list(command)
    if not argv or not all(isinstance(a, str) for a in argv):
        raise TypeError("execute_command needs a str or a non-empty sequence of str, e.g. ['ls', '-la']")
    return argv


def env_pairs(env: Mapping[str, str] | None) -> list[tuple[str, str]]:
    if env is None:
        return []
    pairs = list(env.items())
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in pairs):
        raise TypeError("env must map str to str")
    return pairs


def str_list(values: Iterable[str], what: str) -> list[str]:
    if isinstance(values, str):
        raise TypeError(f"{what} must be a sequence of str, not a str")
    out = list(values)
    if not all(isinstance(v, str) for v in out):
        raise TypeError(f"{what} must be a sequence of str")
    return out


Mode = Literal["run", "command"]
