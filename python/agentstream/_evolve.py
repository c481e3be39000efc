"""``Evolve`` and ``AgentConfig``: the seed's client object over the core.

Phase 1 holds configuration and handler registration; ``run()`` / ``execute_command()`` come
with the process runner. All validation is the core's (agent names, channel names), so the
messages are the same in every language binding.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from . import _native
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
    """A client for one agent harness.

    ``on(name, handler)`` subscribes to one of the four channels: ``content`` (parsed
    ``OutputEvent`` dicts), ``lifecycle`` (``LifecycleEvent`` dicts), ``stdout`` and ``stderr``
    (raw text). Handlers may be plain functions or coroutine functions; they are called in
    sequence order, one at a time.
    """

    def __init__(self, config: AgentConfig | None = None) -> None:
        if config is None:
            config = AgentConfig(type="claude")
        if not isinstance(config, AgentConfig):
            raise TypeError(f"config must be an AgentConfig, not {type(config).__name__}")
        self._config = config
        self._handlers: dict[str, list[_Registered]] = {name: [] for name in _native.CHANNELS}

    @property
    def config(self) -> AgentConfig:
        return self._config

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
        ``handler`` is not callable.
        """
        channel = _native.channel_name(name)
        if not callable(handler):
            raise TypeError(f"handler for {channel!r} must be callable, not {type(handler).__name__}")
        self._handlers[channel].append(_Registered(handler, _is_async(handler)))
        return self

    def off(self, name: str, handler: Callable[[Any], object] | None = None) -> Evolve:
        """Remove ``handler`` from channel ``name`` (every handler of it when ``None``)."""
        channel = _native.channel_name(name)
        if handler is None:
            self._handlers[channel].clear()
        else:
            self._handlers[channel] = [r for r in self._handlers[channel] if r.handler is not handler]
        return self

    def handlers(self, name: str) -> tuple[Handler, ...]:
        """The handlers subscribed to ``name``, in registration order."""
        return tuple(r.handler for r in self._handlers[_native.channel_name(name)])

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}={len(v)}" for k, v in self._handlers.items() if v)
        return f"Evolve(agent={self._config.type!r}{', ' + counts if counts else ''})"
