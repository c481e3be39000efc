"""A tool input nested a million levels deep (issue 24, item 1) crashed the interpreter with a
segmentation fault in ``parse`` and in a run: the conversion to Python objects recursed without
bound. The core now delivers every record with containers past ``MAX_DEPTH`` (64) levels as
``{"$rawJson": "<their JSON text>"}`` (masked whole, ``"[redacted]"``, when redaction is on:
what is too deep to judge is not passed through), so every conversion is bounded; these tests
go through each path a record takes into Python at 10^6 levels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import agentstream
from agentstream import AgentConfig, Evolve

DEPTH = 1_000_000
MAX_DEPTH = 64
MARKER = "$rawJson"


def deep_line() -> bytes:
    nested = "[" * DEPTH + "]" * DEPTH
    line = {
        "type": "assistant",
        "session_id": "s",
        "message": {
            "id": "m1", "type": "message", "role": "assistant", "model": "x",
            "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls", "deep": "@"}}],
        },
    }
    # json.dumps cannot write the nested value (RecursionError): spliced in as text.
    return json.dumps(line).replace('"@"', nested).encode() + b"\n"


def assert_deep_input(raw_input: Any, masked: bool = True) -> None:
    assert raw_input["command"] == "ls"
    value = raw_input["deep"]
    for _ in range(MAX_DEPTH - 1):
        (value,) = value
    if masked:
        assert value == "[redacted]"
    else:
        assert set(value) == {MARKER}
        assert len(value[MARKER]) == 2 * (DEPTH - MAX_DEPTH + 1)


def tool_call(events: list[Any]) -> Any:
    return next(e["update"] for e in events if e["update"]["sessionUpdate"] == "tool_call")


def test_parse_and_decoder_survive_a_million_levels() -> None:
    line = deep_line()
    assert_deep_input(tool_call(agentstream.parse("claude", line))["rawInput"])
    assert_deep_input(tool_call(agentstream.parse("claude", line, redact=False))["rawInput"], masked=False)
    decoder = agentstream.Decoder("claude", redact=False)
    events = [e for i in range(0, len(line), 65536) for e in decoder.feed(line[i:i + 65536])] + decoder.finish()
    assert_deep_input(tool_call(events)["rawInput"], masked=False)
    assert any("nested deeper than 64 levels" in d["message"] for d in decoder.diagnostics)
    # The private conversion helper bounds its own depth too (text that never went through the core).
    assert_deep_input(agentstream._native._raw_json_to_py(json.dumps({"command": "ls", "deep": "@"})
                                                          .replace('"@"', "[" * DEPTH + "]" * DEPTH)), masked=False)


def test_replay_hooks_survive_a_million_levels() -> None:
    r = agentstream.replay("claude", deep_line())
    started = next(h for h in r.hooks if h["type"] == "tool.started")
    assert_deep_input(started["arguments"])
    r = agentstream.replay("claude", deep_line(), redact=False)
    started = next(h for h in r.hooks if h["type"] == "tool.started")
    assert_deep_input(started["arguments"], masked=False)


def test_a_run_survives_a_million_levels(fake_harness: Path, tmp_path: Path) -> None:
    (tmp_path / "deep.input.jsonl").write_bytes(deep_line())
    evolve = Evolve(config=AgentConfig(type="claude", bin=fake_harness,
                                       env={"AGENTSTREAM_FAKE_TRACE": str(tmp_path / "deep")}))
    contents: list[Any] = []
    hooks: list[Any] = []
    evolve.on("content", contents.append)
    result = evolve.run_sync(prompt="x", on_event=hooks.append)
    assert result.state in ("completed", "failed"), result
    assert_deep_input(tool_call(contents)["rawInput"])
    assert_deep_input(next(h for h in hooks if h["type"] == "tool.started")["arguments"])
    contents.clear()
    hooks.clear()
    evolve.run_sync(prompt="x", on_event=hooks.append, redact=False)
    assert_deep_input(tool_call(contents)["rawInput"], masked=False)
    assert_deep_input(next(h for h in hooks if h["type"] == "tool.started")["arguments"], masked=False)
