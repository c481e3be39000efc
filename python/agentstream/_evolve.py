"""``Evolve`` and ``AgentConfig``: the seed's client object over the core's bridge.

Every rule is the core's (agent names, channel names, option fields and ranges, run vs. command,
which channels a run buffers, the harness conversation successive runs continue, the controls,
``status()``), so the messages and the behaviour are the same in every language binding. This
module converts arguments, keeps the handler objects (under the core's subscription ids) and
dispatches deliveries (``_run``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, TypedDict, Unpack, overload

from . import _native
from ._client_types import Limits, Millis, Status
from ._run import (
    BackgroundRun,
    Done,
    HookHandler,
    Op,
    RunResult,
    RunStream,
    SyncRunStream,
    millis,
    run_async,
    run_sync,
)
from .types import AgentName, LifecycleEvent, OutputEvent

__all__ = ["AgentConfig", "Evolve", "Handler"]

Handler = Callable[[Any], object]
"""A handler: a plain function, or an ``async def`` (awaited on the caller's event loop)."""


@dataclass(frozen=True)
class AgentConfig:
    """Which harness to run and how, validated by the core when it is made.

    ``type`` is the harness (``"claude"``, ``"codex"``, ``"gemini"``, ``"qwen"``, ``"kimi"``,
    ``"opencode"``, ``"droid"``; ``"claude-code"`` means ``"claude"``); an unknown name raises
    :class:`~agentstream.InvalidAgentError` (a ``ValueError``) listing the valid ones; any other
    bad field :class:`~agentstream.InvalidArgumentError` naming it.
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
        if isinstance(self.extra_args, str):
            raise TypeError("AgentConfig.extra_args must be a sequence of str, e.g. ['--verbose'], not a str")
        object.__setattr__(self, "extra_args", tuple(self.extra_args))
        object.__setattr__(self, "env", dict(self.env))
        object.__setattr__(self, "type", _native.agent_spec(self.type, **self._fields()))

    def _fields(self) -> dict[str, Any]:
        """The keyword arguments of the native client (everything but ``type``)."""
        return dict(
            agent_id=self.agent_id,
            bin=os.fspath(self.bin) if self.bin is not None else None,
            model=self.model,
            extra_args=list(self.extra_args),
            cwd=os.fspath(self.cwd) if self.cwd is not None else None,
            env=dict(self.env),
        )

    @property
    def agent(self) -> AgentName:
        """The canonical agent name (``type`` after validation)."""
        return _native.agent_name(self.type)


class _RunOptions(TypedDict, total=False):
    """The keyword arguments of ``run`` (for the overloads; the methods spell them out)."""

    model: str | None
    cwd: str | os.PathLike[str] | None
    env: Mapping[str, str] | None
    timeout_ms: Millis | None
    resume: str | None
    on_event: HookHandler | None
    redact: bool
    limits: Limits | None
    idempotent_tools: Iterable[str]
    kill_grace_ms: Millis | None


class _CommandOptions(TypedDict, total=False):
    """The keyword arguments of ``execute_command`` (for the overloads)."""

    cwd: str | os.PathLike[str] | None
    env: Mapping[str, str] | None
    timeout_ms: Millis | None
    on_event: HookHandler | None
    limits: Limits | None
    kill_grace_ms: Millis | None


def _request(
    *,
    model: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout_ms: Millis | None = None,
    resume: str | None = None,
    redact: bool = True,
    limits: Limits | None = None,
    idempotent_tools: Iterable[str] = (),
    kill_grace_ms: Millis | None = None,
    background: bool = False,
) -> dict[str, Any]:
    """The keyword arguments of ``_native.Client.start`` (types only; the core checks values)."""
    if limits is not None and not isinstance(limits, Limits):
        raise TypeError(f"limits must be an agentstream.Limits, not {type(limits).__name__}")
    if isinstance(idempotent_tools, str):
        raise TypeError("idempotent_tools must be a sequence of str, not a str")
    return dict(
        model=model,
        cwd=os.fspath(cwd) if cwd is not None else None,
        env=dict(env) if env is not None else {},
        timeout_ms=millis(timeout_ms, "timeout_ms"),
        resume=resume,
        redact=bool(redact),
        idempotent_tools=list(idempotent_tools),
        kill_grace_ms=millis(kill_grace_ms, "kill_grace_ms"),
        background=bool(background),
        high_water=limits.high_water if limits else None,
        byte_budget=limits.byte_budget if limits else None,
        stall_ms=millis(limits.stall_ms, "limits.stall_ms") if limits else None,
        max_line_bytes=limits.max_line_bytes if limits else None,
    )


def _command(command: str | Sequence[str]) -> dict[str, Any]:
    """A shell string (run through ``sh -c`` by the core) or an argv."""
    if isinstance(command, str):
        return {"shell": command}
    return {"command": list(command)}


class Evolve:
    """A client for one agent harness (the seed's ``Evolve``).

    ``on(name, handler)`` subscribes to one of the four channels: ``content`` (parsed
    ``OutputEvent`` dicts), ``lifecycle`` (``LifecycleEvent`` dicts), ``stdout`` and ``stderr``
    (raw text). ``run()`` / ``execute_command()`` start the harness (or a command) as a process
    and deliver its output to the handlers in real time, in sequence order, one at a time;
    plain functions are called, ``async def`` handlers are awaited. Successive runs continue
    the same harness conversation (``get_session()`` / ``set_session()`` choose otherwise). One
    operation at a time per ``Evolve``: use several for parallel runs.

    ``with Evolve(...) as evolve:`` / ``async with``: leaving the block kills a run still going
    on (and waits for background runs started here to end).

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
        self._client = _native.Client(config.type, **config._fields())
        self._handlers: dict[int, Handler] = {}
        self._table: dict[str, tuple[Handler, ...]] = {name: () for name in _native.CHANNELS}
        self._ids: dict[str, tuple[int, ...]] = {name: () for name in _native.CHANNELS}
        self._version = 0
        self._background: list[BackgroundRun] = []

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
        if not callable(handler):
            _native.channel_name(name)
            raise TypeError(f"handler for {name!r} must be callable, not {type(handler).__name__}")
        self._handlers[self._client.on(name)] = handler
        self._changed(name)
        return self

    def off(self, name: str, handler: Callable[[Any], object] | None = None) -> Evolve:
        """Remove ``handler`` from channel ``name`` (every handler of it when ``None``). An
        unknown name raises :class:`~agentstream.InvalidChannelError`, as ``on`` does."""
        if handler is None:
            removed = self._client.off(name)
        else:
            # `==`, not `is`: each `obj.method` is a new bound-method object, equal to the one
            # given to `on` (as logging.removeHandler compares).
            removed = [i for i in self._client.subscribers(name) if self._handlers[i] == handler]
            for i in removed:
                self._client.off_id(i)
        for i in removed:
            del self._handlers[i]
        self._changed(name)
        return self

    def handlers(self, name: str) -> tuple[Handler, ...]:
        """The handlers subscribed to ``name``, in the order they are called."""
        return self._table[_native.channel_name(name)]

    def _changed(self, name: str) -> None:
        channel = _native.channel_name(name)
        ids = tuple(self._client.subscribers(channel))
        self._ids = {**self._ids, channel: ids}
        self._table = {**self._table, channel: tuple(self._handlers[i] for i in ids)}
        self._version += 1

    def _dispatch_table(self) -> tuple[dict[str, tuple[Handler, ...]], dict[str, tuple[int, ...]]]:
        """The handlers of each channel in the core's order, and their subscription ids."""
        return dict(self._table), dict(self._ids)

    # -- operations ----------------------------------------------------------------------------

    def _start(self, spec: dict[str, Any], on_event: HookHandler | None, read: str) -> Op:
        if on_event is not None and not callable(on_event):
            raise TypeError(f"on_event must be callable, not {type(on_event).__name__}")
        run = self._client.start(**spec, hooks=on_event is not None, read=read)
        return Op(self, run, on_event)

    def _background_handle(self, op: Op, in_loop: bool) -> BackgroundRun:
        handle = BackgroundRun.in_task(op) if in_loop else BackgroundRun.in_thread(op)
        self._background = [h for h in self._background if not h.done()] + [handle]
        return handle

    @overload
    async def run(self, prompt: str, *, background: Literal[False] = False,
                  **options: Unpack[_RunOptions]) -> RunResult: ...
    @overload
    async def run(self, prompt: str, *, background: Literal[True],
                  **options: Unpack[_RunOptions]) -> BackgroundRun: ...

    async def run(
        self,
        prompt: str,
        *,
        model: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        timeout_ms: Millis | None = None,
        background: bool = False,
        resume: str | None = None,
        on_event: HookHandler | None = None,
        redact: bool = True,
        limits: Limits | None = None,
        idempotent_tools: Iterable[str] = (),
        kill_grace_ms: Millis | None = None,
    ) -> RunResult | BackgroundRun:
        """Run the harness with ``prompt``; deliver its output to the ``on(...)`` handlers and
        its hook events to ``on_event`` in real time; return the :class:`RunResult`.

        The run continues this ``Evolve``'s harness conversation (the session the previous run
        reported, or the one given to :meth:`set_session`); ``resume`` continues another
        session instead. ``model``, ``cwd`` and ``env`` override the configuration for this run
        only. ``timeout_ms`` (milliseconds or a ``timedelta``) stops the run
        (``cancel_kind == "timeout"``, hook ``run.stopped``); ``redact`` masks secret shapes in
        tool-call inputs (default on); ``limits`` bounds the buffer between the harness and the
        handlers; ``idempotent_tools`` names tools whose calls in flight at a cancel are safe to
        retry; ``kill_grace_ms`` is the time between SIGTERM and SIGKILL when cancelling
        (default 5000). ``background=True`` returns at once a :class:`BackgroundRun` (driven by
        a task of this event loop; ``await`` it for the result). Cancelling the awaiting task
        cancels the run.
        """
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, not {type(prompt).__name__}")
        spec = _request(model=model, cwd=cwd, env=env, timeout_ms=timeout_ms, resume=resume, redact=redact,
                        limits=limits, idempotent_tools=idempotent_tools, kill_grace_ms=kill_grace_ms,
                        background=background)
        op = self._start({"prompt": prompt, **spec}, on_event, "handlers")
        if background:
            return self._background_handle(op, in_loop=True)
        return await run_async(op)

    @overload
    def run_sync(self, prompt: str, *, background: Literal[False] = False,
                 **options: Unpack[_RunOptions]) -> RunResult: ...
    @overload
    def run_sync(self, prompt: str, *, background: Literal[True],
                 **options: Unpack[_RunOptions]) -> BackgroundRun: ...

    def run_sync(
        self,
        prompt: str,
        *,
        model: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        timeout_ms: Millis | None = None,
        background: bool = False,
        resume: str | None = None,
        on_event: HookHandler | None = None,
        redact: bool = True,
        limits: Limits | None = None,
        idempotent_tools: Iterable[str] = (),
        kill_grace_ms: Millis | None = None,
    ) -> RunResult | BackgroundRun:
        """:meth:`run` for scripts: blocks the calling thread (Ctrl-C cancels the run);
        ``async def`` handlers run on a private event loop. ``background=True`` returns at once
        a :class:`BackgroundRun` driven by a thread of its own (``handle.wait()`` for the
        result)."""
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, not {type(prompt).__name__}")
        spec = _request(model=model, cwd=cwd, env=env, timeout_ms=timeout_ms, resume=resume, redact=redact,
                        limits=limits, idempotent_tools=idempotent_tools, kill_grace_ms=kill_grace_ms,
                        background=background)
        op = self._start({"prompt": prompt, **spec}, on_event, "handlers")
        if background:
            return self._background_handle(op, in_loop=False)
        return run_sync(op)

    @overload
    async def execute_command(self, command: str | Sequence[str], *, background: Literal[False] = False,
                              **options: Unpack[_CommandOptions]) -> RunResult: ...
    @overload
    async def execute_command(self, command: str | Sequence[str], *, background: Literal[True],
                              **options: Unpack[_CommandOptions]) -> BackgroundRun: ...

    async def execute_command(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        timeout_ms: Millis | None = None,
        background: bool = False,
        on_event: HookHandler | None = None,
        limits: Limits | None = None,
        kill_grace_ms: Millis | None = None,
    ) -> RunResult | BackgroundRun:
        """Run a command (a shell string through ``sh -c``, or an argv list) in the agent's
        environment with the same streaming: ``stdout``/``stderr`` and ``command_*`` lifecycle
        events to the handlers (no content decoding); returns the :class:`RunResult`."""
        spec = _request(cwd=cwd, env=env, timeout_ms=timeout_ms, limits=limits, kill_grace_ms=kill_grace_ms,
                        background=background)
        op = self._start({**_command(command), **spec}, on_event, "handlers")
        if background:
            return self._background_handle(op, in_loop=True)
        return await run_async(op)

    @overload
    def execute_command_sync(self, command: str | Sequence[str], *, background: Literal[False] = False,
                             **options: Unpack[_CommandOptions]) -> RunResult: ...
    @overload
    def execute_command_sync(self, command: str | Sequence[str], *, background: Literal[True],
                             **options: Unpack[_CommandOptions]) -> BackgroundRun: ...

    def execute_command_sync(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        timeout_ms: Millis | None = None,
        background: bool = False,
        on_event: HookHandler | None = None,
        limits: Limits | None = None,
        kill_grace_ms: Millis | None = None,
    ) -> RunResult | BackgroundRun:
        """:meth:`execute_command` for scripts (blocking)."""
        spec = _request(cwd=cwd, env=env, timeout_ms=timeout_ms, limits=limits, kill_grace_ms=kill_grace_ms,
                        background=background)
        op = self._start({**_command(command), **spec}, on_event, "handlers")
        if background:
            return self._background_handle(op, in_loop=False)
        return run_sync(op)

    def stream(self, prompt: str, **options: Unpack[_RunOptions]) -> RunStream:
        """A run as an async iterator of sequenced envelopes (see :class:`RunStream`)::

            async with evolve.stream("...") as stream:
                async for envelope in stream:
                    ...
            result = await stream

        Takes :meth:`run`'s options (but ``background``). The run starts when the block is
        entered (or at the first ``async for`` step, or at ``await stream``); starting errors
        are raised there.
        """
        return RunStream(self._stream_starter(prompt, options))

    def stream_sync(self, prompt: str, **options: Unpack[_RunOptions]) -> SyncRunStream:
        """:meth:`stream` for scripts: ``with evolve.stream_sync(prompt) as s: for e in s: ...``,
        then ``s.wait()``."""
        return SyncRunStream(self._stream_starter(prompt, options))

    def _stream_starter(self, prompt: str, options: _RunOptions) -> Callable[[bool], Op]:
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, not {type(prompt).__name__}")
        opts: dict[str, Any] = dict(options)
        on_event = opts.pop("on_event", None)
        if opts.pop("background", False):
            raise TypeError("stream() takes no background option: a stream is read by its caller "
                            "(run(..., background=True) runs one in the background)")
        try:
            spec = _request(**opts)
        except TypeError as e:
            # The private helper's name would say nothing: name the method called.
            raise TypeError(str(e).replace("_request()", "stream()")) from None
        return lambda iterate: self._start({"prompt": prompt, **spec}, on_event,
                                           "iterate" if iterate else "handlers")

    # -- control -------------------------------------------------------------------------------

    def pause(self) -> Done:
        """Pause the running operation (SIGSTOP to its process group; lifecycle
        ``sandbox_pause``). Acts at once; ``await evolve.pause()`` works too. Raises
        :class:`~agentstream.NotRunningError` when nothing runs."""
        self._client.pause()
        return Done()

    def resume(self) -> Done:
        """Resume a paused operation (SIGCONT; lifecycle ``sandbox_resume``).
        :class:`~agentstream.NotRunningError` when nothing runs."""
        self._client.resume()
        return Done()

    def interrupt(self, reason: str = "interrupted by the caller") -> bool:
        """Stop the running operation: SIGTERM, then SIGKILL after the kill grace; it ends
        ``run_interrupted`` (``cancel_kind == "caller"``, ``cancel_reason`` with ``reason``).
        Returns whether anything was interrupted (``False`` when nothing runs)."""
        return self._client.interrupt(reason)

    def kill(self) -> bool:
        """Kill the running operation at once (SIGKILL; lifecycle ``sandbox_killed``, then
        ``run_interrupted``). Returns whether anything was killed."""
        return self._client.kill()

    def status(self) -> Status:
        """The sandbox and agent state, whether a run was ever started, the active run's id,
        the session the next run continues and how the last run ended."""
        status: dict[str, Any] = dict(self._client.status())
        return Status(**{k: v for k, v in status.items() if k in Status.__dataclass_fields__})

    def get_session(self) -> str | None:
        """The harness session the next run continues: the one the last run reported, or the
        one given to :meth:`set_session`; ``None`` when the next run starts a new one."""
        return self._client.session_id()

    def set_session(self, session_id: str | None) -> None:
        """Choose the harness session the next run continues; ``None`` starts a new
        conversation. The core checks the id (:class:`~agentstream.InvalidArgumentError`)."""
        self._client.set_session_id(session_id)

    @property
    def active_run_id(self) -> str | None:
        """The id of the operation going on, if any."""
        return self._client.active_run_id

    # -- scope ---------------------------------------------------------------------------------

    def close(self) -> None:
        """Kill a run still going on, and wait for background runs started with ``run_sync``
        to end. The ``Evolve`` stays usable."""
        self._client.kill()
        for handle in self._background:
            if handle._loop is None:
                try:
                    handle.wait()
                except Exception:
                    pass  # its outcome is its owner's to read
        self._background = []

    async def aclose(self) -> None:
        """:meth:`close` for ``async with``: kills a run still going on and awaits background
        runs started here."""
        self._client.kill()
        handles, self._background = self._background, []
        for handle in handles:
            try:
                await handle
            except Exception:
                pass  # its outcome is its owner's to read

    def __enter__(self) -> Evolve:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> Evolve:
        return self

    async def __aexit__(self, et: type[BaseException] | None, ev: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}={len(v)}" for k, v in self._table.items() if v)
        return f"Evolve(agent={self._config.type!r}{', ' + counts if counts else ''})"

