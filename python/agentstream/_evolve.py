"""``Evolve`` and ``AgentConfig``: the seed's client object over the core's process runner.

All validation is the core's (agent names, channel names, option ranges), so the messages are
the same in every language binding; running, sequencing, backpressure, hooks and cancellation
are the core's too. This module only converts arguments and dispatches deliveries (``_run``).
"""

from __future__ import annotations

import inspect
import os
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from . import _native
from ._run import (
    Backpressure,
    Dispatch,
    Done,
    HookHandler,
    Op,
    RunResult,
    RunStream,
    SyncRunStream,
    Timeout,
    backpressure_kwargs,
    command_argv,
    env_pairs,
    run_async,
    run_sync,
    seconds,
    str_list,
)
from .types import AgentName, LifecycleEvent, OutputEvent

__all__ = ["AgentConfig", "Evolve", "Handler"]

Handler = Callable[[Any], object]
"""A handler: a plain function, or an ``async def`` (awaited on the caller's event loop)."""


@dataclass(frozen=True)
class AgentConfig:
    """Which harness to run and how.

    ``type`` is the harness (``"claude"``, ``"codex"``, ``"gemini"``, ``"qwen"``, ``"kimi"``,
    ``"opencode"``, ``"droid"``; ``"claude-code"`` means ``"claude"``); an unknown name raises
    :class:`~agentstream.InvalidAgentError` (a ``ValueError``) listing the valid ones.
    """

    type: AgentName | str
    agent_id: str | None = None
    """Reported as ``agent_id`` on hook events (default: the agent's name)."""
    bin: str | os.PathLike[str] | None = None
    """The harness executable (default: its usual command name on PATH)."""
    model: str | None = None
    """The model to ask for, passed with the harness's own flag."""
    extra_args: Sequence[str] = field(default_factory=tuple)
    """Extra arguments, after the streaming flags and before the prompt."""
    cwd: str | os.PathLike[str] | None = None
    """Working directory of the harness (default: the current one)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment variables added to (or overriding) the inherited environment."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", _native.agent_name(self.type))
        if isinstance(self.extra_args, str) or not all(isinstance(a, str) for a in self.extra_args):
            raise TypeError("AgentConfig.extra_args must be a sequence of str, e.g. ['--verbose']")
        object.__setattr__(self, "extra_args", tuple(self.extra_args))
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in self.env.items()):
            raise TypeError("AgentConfig.env must map str to str, e.g. {'HOME': '/tmp'}")
        object.__setattr__(self, "env", dict(self.env))

    @property
    def agent(self) -> AgentName:
        """The canonical agent name (``type`` after validation)."""
        return _native.agent_name(self.type)


@dataclass(frozen=True)
class _Registered:
    handler: Handler
    is_async: bool


def _is_async(handler: Handler) -> bool:
    if inspect.iscoroutinefunction(handler):
        return True
    call = getattr(handler, "__call__", None)  # noqa: B004 - callable objects with async __call__
    return call is not None and inspect.iscoroutinefunction(call)


class Evolve:
    """A client for one agent harness (the seed's ``Evolve``).

    ``on(name, handler)`` subscribes to one of the four channels: ``content`` (parsed
    ``OutputEvent`` dicts), ``lifecycle`` (``LifecycleEvent`` dicts), ``stdout`` and ``stderr``
    (raw text). ``run()`` / ``execute_command()`` start the harness (or a command) as a process
    and deliver its output to the handlers in real time, in sequence order, one at a time;
    plain functions are called, ``async def`` handlers are awaited. One operation at a time per
    ``Evolve``: use several for parallel runs.

    Errors: starting raises at the API edge (``HarnessNotFoundError``, ``AlreadyRunningError``,
    ``SpawnFailedError``, ``InvalidArgumentError``); a run that starts always RETURNS a
    :class:`RunResult`, whose ``state`` says whether it completed, failed or was cancelled.
    """

    def __init__(self, config: AgentConfig | None = None) -> None:
        if config is None:
            config = AgentConfig(type="claude")
        if not isinstance(config, AgentConfig):
            raise TypeError(f"config must be an AgentConfig, not {type(config).__name__}")
        self._config = config
        self._handlers: dict[str, list[_Registered]] = {name: [] for name in _native.CHANNELS}
        self._version = 0
        self._session: _native.Session | None = None
        self._ops: weakref.WeakSet[Op] = weakref.WeakSet()
        self._iterating: weakref.WeakSet[Op] = weakref.WeakSet()

    @property
    def config(self) -> AgentConfig:
        return self._config

    # -- handlers ------------------------------------------------------------------------------

    @overload
    def on(self, name: Literal["content"], handler: Callable[[OutputEvent], object]) -> Evolve: ...
    @overload
    def on(self, name: Literal["lifecycle"], handler: Callable[[LifecycleEvent], object]) -> Evolve: ...
    @overload
    def on(self, name: Literal["stdout", "stderr"], handler: Callable[[str], object]) -> Evolve: ...

    def on(self, name: str, handler: Callable[[Any], object]) -> Evolve:
        """Subscribe ``handler`` to channel ``name``; returns ``self`` so calls can be chained.

        Raises :class:`~agentstream.InvalidChannelError` (a ``ValueError``) for any name but
        ``content``, ``lifecycle``, ``stdout`` and ``stderr``, and ``TypeError`` when
        ``handler`` is not callable. A handler added during a run gets the rest of it (unless
        the run had no handler at all when it started: such a run is await-only).
        """
        channel = _native.channel_name(name)
        if not callable(handler):
            raise TypeError(f"handler for {channel!r} must be callable, not {type(handler).__name__}")
        self._handlers[channel].append(_Registered(handler, _is_async(handler)))
        self._changed()
        return self

    def off(self, name: str, handler: Callable[[Any], object] | None = None) -> Evolve:
        """Remove ``handler`` from channel ``name`` (every handler of it when ``None``)."""
        channel = _native.channel_name(name)
        if handler is None:
            self._handlers[channel].clear()
        else:
            self._handlers[channel] = [r for r in self._handlers[channel] if r.handler is not handler]
        self._changed()
        return self

    def handlers(self, name: str) -> tuple[Handler, ...]:
        """The handlers subscribed to ``name``, in registration order."""
        return tuple(r.handler for r in self._handlers[_native.channel_name(name)])

    def _changed(self) -> None:
        self._version += 1
        for op in list(self._ops):
            op.refresh_mask(op in self._iterating)

    # -- operations ----------------------------------------------------------------------------

    def _native_session(self) -> _native.Session:
        if self._session is None:
            c = self._config
            self._session = _native.Session(
                c.type,
                agent_id=c.agent_id,
                bin=os.fspath(c.bin) if c.bin is not None else None,
                model=c.model,
                extra_args=list(c.extra_args),
                cwd=os.fspath(c.cwd) if c.cwd is not None else None,
                env=list(c.env.items()),
            )
        return self._session

    def _start(self, mode: Literal["run", "command"], spec: dict[str, Any], on_event: HookHandler | None,
               iterate: bool) -> Op:
        if on_event is not None and not callable(on_event):
            raise TypeError(f"on_event must be callable, not {type(on_event).__name__}")
        dispatch = Dispatch(self, on_event)
        channels = dispatch.mask() | (_ALL_ITEMS if iterate else 0)
        common: dict[str, Any] = dict(hooks=on_event is not None, attach_reader=channels != 0, channels=channels)
        session = self._native_session()
        if mode == "run":
            run = session.start_run(spec.pop("prompt"), **spec, **common)
        else:
            run = session.start_command(spec.pop("argv"), **spec, **common)
        op = Op(self, run, dispatch)
        self._ops.add(op)
        if iterate:
            self._iterating.add(op)
        return op

    def _forget(self, op: Op) -> None:
        self._ops.discard(op)
        self._iterating.discard(op)

    @staticmethod
    def _run_spec(prompt: str, timeout: Timeout, redact: bool, backpressure: Backpressure | None,
                  idempotent_tools: Iterable[str], background: bool, kill_grace: Timeout) -> dict[str, Any]:
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, not {type(prompt).__name__}")
        return dict(
            prompt=prompt,
            timeout=seconds(timeout),
            redact=bool(redact),
            idempotent_tools=str_list(idempotent_tools, "idempotent_tools"),
            background=bool(background),
            kill_grace=seconds(kill_grace, "kill_grace"),
            **backpressure_kwargs(backpressure),
        )

    @staticmethod
    def _command_spec(command: str | Sequence[str], cwd: str | os.PathLike[str] | None,
                      env: Mapping[str, str] | None, timeout: Timeout, backpressure: Backpressure | None,
                      background: bool, kill_grace: Timeout) -> dict[str, Any]:
        return dict(
            argv=command_argv(command),
            cwd=os.fspath(cwd) if cwd is not None else None,
            env=env_pairs(env),
            timeout=seconds(timeout),
            background=bool(background),
            kill_grace=seconds(kill_grace, "kill_grace"),
            **backpressure_kwargs(backpressure),
        )

    async def run(
        self,
        prompt: str,
        *,
        on_event: HookHandler | None = None,
        timeout: Timeout = None,
        redact: bool = True,
        backpressure: Backpressure | None = None,
        idempotent_tools: Iterable[str] = (),
        background: bool = False,
        kill_grace: Timeout = None,
    ) -> RunResult:
        """Run the harness with ``prompt``; deliver its output to the ``on(...)`` handlers and
        its hook events to ``on_event`` in real time; return the :class:`RunResult`.

        ``timeout`` (seconds or a ``timedelta``) stops the run (``cancel_kind == "timeout"``,
        hook ``run.stopped``); ``redact`` masks secret shapes in tool-call inputs (default on);
        ``backpressure`` bounds the buffer between the harness and the handlers;
        ``idempotent_tools`` names tools whose calls in flight at a cancel are safe to retry;
        ``kill_grace`` is the time between SIGTERM and SIGKILL when cancelling (default 5 s).
        Cancelling the awaiting task cancels the run.
        """
        spec = self._run_spec(prompt, timeout, redact, backpressure, idempotent_tools, background, kill_grace)
        return await run_async(self._start("run", spec, on_event, iterate=False))

    def run_sync(
        self,
        prompt: str,
        *,
        on_event: HookHandler | None = None,
        timeout: Timeout = None,
        redact: bool = True,
        backpressure: Backpressure | None = None,
        idempotent_tools: Iterable[str] = (),
        background: bool = False,
        kill_grace: Timeout = None,
    ) -> RunResult:
        """:meth:`run` for scripts: blocks the calling thread (Ctrl-C cancels the run);
        ``async def`` handlers run on a private event loop."""
        spec = self._run_spec(prompt, timeout, redact, backpressure, idempotent_tools, background, kill_grace)
        return run_sync(self._start("run", spec, on_event, iterate=False))

    async def execute_command(
        self,
        command: str | Sequence[str],
        *,
        on_event: HookHandler | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        timeout: Timeout = None,
        backpressure: Backpressure | None = None,
        background: bool = False,
        kill_grace: Timeout = None,
    ) -> RunResult:
        """Run a command (a shell string through ``sh -c``, or an argv list) in the agent's
        environment with the same streaming: ``stdout``/``stderr`` and ``command_*`` lifecycle
        events to the handlers (no content decoding); returns the :class:`RunResult`."""
        spec = self._command_spec(command, cwd, env, timeout, backpressure, background, kill_grace)
        return await run_async(self._start("command", spec, on_event, iterate=False))

    def execute_command_sync(
        self,
        command: str | Sequence[str],
        *,
        on_event: HookHandler | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        timeout: Timeout = None,
        backpressure: Backpressure | None = None,
        background: bool = False,
        kill_grace: Timeout = None,
    ) -> RunResult:
        """:meth:`execute_command` for scripts (blocking)."""
        spec = self._command_spec(command, cwd, env, timeout, backpressure, background, kill_grace)
        return run_sync(self._start("command", spec, on_event, iterate=False))

    def stream(
        self,
        prompt: str,
        *,
        on_event: HookHandler | None = None,
        timeout: Timeout = None,
        redact: bool = True,
        backpressure: Backpressure | None = None,
        idempotent_tools: Iterable[str] = (),
        background: bool = False,
        kill_grace: Timeout = None,
    ) -> RunStream:
        """A run as an async iterator of sequenced envelopes (see :class:`RunStream`)::

            async with evolve.stream(prompt="...") as stream:
                async for envelope in stream:
                    ...
            result = await stream

        The run starts when the block is entered (or at the first ``async for`` step, or at
        ``await stream``); starting errors are raised there.
        """
        spec = self._run_spec(prompt, timeout, redact, backpressure, idempotent_tools, background, kill_grace)
        return RunStream(lambda iterate: self._start("run", dict(spec), on_event, iterate))

    def stream_sync(
        self,
        prompt: str,
        *,
        on_event: HookHandler | None = None,
        timeout: Timeout = None,
        redact: bool = True,
        backpressure: Backpressure | None = None,
        idempotent_tools: Iterable[str] = (),
        background: bool = False,
        kill_grace: Timeout = None,
    ) -> SyncRunStream:
        """:meth:`stream` for scripts: ``with evolve.stream_sync(prompt=...) as s: for e in s: ...``,
        then ``s.wait()``."""
        spec = self._run_spec(prompt, timeout, redact, backpressure, idempotent_tools, background, kill_grace)
        return SyncRunStream(lambda iterate: self._start("run", dict(spec), on_event, iterate))

    # -- control -------------------------------------------------------------------------------

    def pause(self) -> Done:
        """Pause the running operation (SIGSTOP to its process group; lifecycle
        ``sandbox_pause``). Acts at once; ``await evolve.pause()`` works too. Raises
        :class:`~agentstream.NotRunningError` when nothing runs."""
        self._native_session().pause()
        return Done()

    def resume(self) -> Done:
        """Resume a paused operation (SIGCONT; lifecycle ``sandbox_resume``)."""
        self._native_session().resume()
        return Done()

    def interrupt(self, reason: str = "interrupted by the caller") -> Done:
        """Stop the running operation: SIGTERM, then SIGKILL after the kill grace; it ends
        ``run_interrupted`` (``cancel_kind == "caller"``, ``cancel_reason`` with ``reason``)."""
        self._native_session().interrupt(reason)
        return Done()

    def kill(self) -> Done:
        """Kill the running operation at once (SIGKILL; lifecycle ``sandbox_killed``, then
        ``run_interrupted``). A no-op when nothing runs."""
        self._native_session().kill()
        return Done()

    @property
    def active_run_id(self) -> str | None:
        """The id of the operation going on, if any."""
        return self._session.active_run_id if self._session is not None else None

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}={len(v)}" for k, v in self._handlers.items() if v)
        return f"Evolve(agent={self._config.type!r}{', ' + counts if counts else ''})"


_ALL_ITEMS = _native.CH_CONTENT | _native.CH_LIFECYCLE | _native.CH_STDOUT | _native.CH_STDERR
