"""Evolve.on()/off() validation (the core's Channel rule), AgentConfig (the core's AgentSpec rule),
status, sessions and the scope of an Evolve without a run."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import agentstream
from agentstream import CHANNELS, AgentConfig, Evolve, InvalidChannelError


def test_the_four_channels() -> None:
    assert CHANNELS == ("content", "lifecycle", "stdout", "stderr")


@pytest.mark.parametrize("name", ["content", "lifecycle", "stdout", "stderr"])
def test_on_accepts_the_four_names(name: str) -> None:
    evolve = Evolve(config=AgentConfig(type="claude"))

    def handler(event: Any) -> None:
        pass

    assert evolve.on(name, handler) is evolve  # type: ignore[call-overload]
    assert evolve.handlers(name) == (handler,)


@pytest.mark.parametrize("name", ["message", "Content", "content ", "", "on_event", "tool_call", "error"])
def test_on_rejects_any_other_name_with_value_error(name: str) -> None:
    evolve = Evolve(config=AgentConfig(type="claude"))
    with pytest.raises(ValueError) as info:
        evolve.on(name, print)  # type: ignore[call-overload]
    assert isinstance(info.value, InvalidChannelError)
    msg = str(info.value)
    for channel in CHANNELS:
        assert f'"{channel}"' in msg, msg
    assert repr(name).strip("'") in msg


def test_on_stores_sync_and_async_handlers_in_order() -> None:
    evolve = Evolve(config=AgentConfig(type="codex"))
    seen: list[Any] = []

    def sync_handler(event: Any) -> None:
        seen.append(event)

    async def async_handler(event: Any) -> None:
        seen.append(event)

    class AsyncCallable:
        async def __call__(self, event: Any) -> None:
            seen.append(event)

    obj = AsyncCallable()
    evolve.on("content", sync_handler).on("content", async_handler).on("content", obj)
    evolve.on("stdout", lambda data: None)
    assert evolve.handlers("content") == (sync_handler, async_handler, obj)
    assert len(evolve.handlers("stdout")) == 1 and evolve.handlers("stderr") == ()
    evolve.off("content", async_handler)
    assert evolve.handlers("content") == (sync_handler, obj)
    evolve.off("content")
    assert evolve.handlers("content") == ()
    with pytest.raises(InvalidChannelError, match="stdout"):
        evolve.off("nope")
    with pytest.raises(InvalidChannelError):
        evolve.off("nope", print)
    # A bound method: each `lines.append` is a new object, equal to the one registered.
    lines: list[Any] = []
    evolve.on("stdout", lines.append).on("stderr", obj.__call__)
    evolve.off("stdout", lines.append).off("stderr", obj.__call__)
    assert len(evolve.handlers("stdout")) == 1 and evolve.handlers("stderr") == ()


def test_on_rejects_non_callables() -> None:
    with pytest.raises(TypeError, match="callable"):
        Evolve(config=AgentConfig(type="claude")).on("content", "print")  # type: ignore[call-overload]


def test_agent_config_is_a_validated_dataclass() -> None:
    cfg = AgentConfig(type="claude-code", model="opus", extra_args=["--verbose"], cwd=Path("/tmp"),
                      env={"A": "1"})
    assert dataclasses.is_dataclass(cfg)
    assert cfg.type == "claude" and cfg.agent == "claude"
    assert cfg.extra_args == ("--verbose",) and cfg.env == {"A": "1"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.model = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        AgentConfig(type="claude", extra_args="--verbose")
    with pytest.raises(TypeError):
        AgentConfig(type="claude", env={"A": 1})  # type: ignore[dict-item]
    assert "claude" in repr(Evolve(config=cfg))
    assert Evolve().config.type == "claude"
    with pytest.raises(TypeError):
        Evolve(config={"type": "claude"})  # type: ignore[arg-type]


def test_agent_config_fields_are_validated_by_the_core() -> None:
    with pytest.raises(agentstream.InvalidAgentError, match="claude"):
        AgentConfig(type="nope")
    with pytest.raises(agentstream.InvalidArgumentError, match="^model must not be empty"):
        AgentConfig(type="codex", model="")
    with pytest.raises(agentstream.InvalidArgumentError, match="^env has an invalid variable name"):
        AgentConfig(type="codex", env={"A=B": "x"})
    with pytest.raises(agentstream.InvalidArgumentError, match=r"^extra_args\[1\] must not contain a NUL"):
        AgentConfig(type="codex", extra_args=["ok", "a\0b"])


def test_status_and_sessions_without_a_run() -> None:
    evolve = Evolve(AgentConfig(type="gemini"))
    status = evolve.status()
    assert isinstance(status, agentstream.Status)
    assert (status.agent, status.has_run, status.active_run_id, status.session_id, status.last_status) == (
        "gemini", False, None, None, None)
    assert status.sandbox == "ready" and status.agent_state == "idle"
    assert evolve.get_session() is None
    evolve.set_session("abc-123")
    assert evolve.get_session() == "abc-123" and evolve.status().session_id == "abc-123"
    evolve.set_session(None)
    assert evolve.get_session() is None
    with pytest.raises(agentstream.InvalidArgumentError, match="^session_id must not start with '-'"):
        evolve.set_session("--help")
    assert evolve.interrupt() is False and evolve.kill() is False
    with pytest.raises(agentstream.NotRunningError):
        evolve.pause()
    with Evolve(AgentConfig(type="codex")) as scoped:
        assert scoped.status().agent == "codex"
    assert scoped.status().has_run is False, "closing an idle Evolve does nothing"


def test_stream_refuses_background_and_names_itself_for_an_unknown_option() -> None:
    evolve = Evolve(config=AgentConfig(type="claude"))
    with pytest.raises(TypeError, match="stream\\(\\) takes no background option"):
        evolve.stream("x", background=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^stream\(\) got an unexpected keyword argument 'timeout'"):
        evolve.stream_sync("x", timeout=5)  # type: ignore[call-arg]
