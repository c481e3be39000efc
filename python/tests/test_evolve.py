"""Evolve.on() validation (the core's Channel rule) and AgentConfig."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

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
    flags = [r.is_async for r in evolve._handlers["content"]]
    assert flags == [False, True, True]
    assert len(evolve.handlers("stdout")) == 1 and evolve.handlers("stderr") == ()
    evolve.off("content", async_handler)
    assert evolve.handlers("content") == (sync_handler, obj)
    evolve.off("content")
    assert evolve.handlers("content") == ()
    with pytest.raises(ValueError):
        evolve.off("nope")  # type: ignore[arg-type]


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
