"""Golden replay through ``agentstream.replay`` (the core's whole pipeline without a process):
every tests/golden/<agent>/<case>.input.jsonl gives exactly the expected content events AND the
expected hook events. The golden hook files hold the canonical shape
(``{type, run_id, agent_id, timestamp, status, sequence, details}``); the conversion to the flat
snake_case dicts Python delivers is done HERE, independently of the binding."""

from __future__ import annotations

from typing import Any

import pytest

import agentstream
from agentstream import Replay
from conftest import GoldenCase

ENVELOPE_FIELDS = ("type", "run_id", "agent_id", "timestamp", "status", "sequence")


def flat_snake(canonical: dict[str, Any]) -> dict[str, Any]:
    """decisions.md §5 for Python: the envelope fields, then the details merged in at the top
    level (an envelope field is never overwritten by a detail of the same name)."""
    out = {k: canonical[k] for k in ENVELOPE_FIELDS}
    for key, value in canonical.get("details", {}).items():
        out.setdefault(key, value)
    return out


def golden_replay(golden: GoldenCase) -> Replay:
    return agentstream.replay(golden.agent, golden.input(), run_id="golden")


def test_content_events(golden: GoldenCase) -> None:
    r = golden_replay(golden)
    assert r.events == golden.expected()


def test_hook_events(golden: GoldenCase) -> None:
    r = golden_replay(golden)
    expected = [flat_snake(h) for h in golden.hooks()]
    assert len(r.hooks) == len(expected)
    for i, (got, want) in enumerate(zip(r.hooks, expected)):
        assert got == want, f"hook {i}"
    # Key order: the envelope fields first, as to_flat_snake builds them.
    for got in r.hooks:
        assert tuple(got)[: len(ENVELOPE_FIELDS)] == ENVELOPE_FIELDS


def test_one_ordered_stream(golden: GoldenCase) -> None:
    r = golden_replay(golden)
    assert [e["sequence"] for e in r.items] == list(range(len(r.items)))
    assert all(e["run_id"] == "golden" for e in r.items)
    lifecycle = [e["event"] for e in r.items if e["channel"] == "lifecycle"]
    assert lifecycle[0]["reason"] == "run_start"
    terminal = r.items[-1]
    assert terminal["channel"] == "lifecycle"
    assert terminal["event"]["reason"] in ("run_complete", "run_failed", "run_interrupted")
    assert [x["reason"] for x in lifecycle].count(terminal["event"]["reason"]) == 1
    assert r.hooks[0]["type"] == "run.started"
    assert r.hooks[-1]["type"] in ("run.completed", "run.failed", "run.cancelled", "run.stopped")
    assert sum(h["type"].startswith("run.") and h["type"] != "run.started"
               and h["type"] != "run.waiting_for_human" for h in r.hooks) == 1
    assert r.state == {"run_complete": "completed", "run_failed": "failed"}[terminal["event"]["reason"]]
    # Every stdout line as printed (a final line without a newline gets one).
    stdout = "".join(e["event"] for e in r.items if e["channel"] == "stdout")
    text = golden.input().decode("utf-8", errors="replace")
    if not text.endswith("\n") and text:
        text += "\n"
    assert stdout.replace("\r", "") == text.replace("\r", "") or r.stats["oversize_lines"] > 0
    assert r.stats["bytes"] == len(golden.input())


def test_replay_options_and_errors() -> None:
    data = b'{"type":"thread.started","thread_id":"t"}\n{"type":"turn.started"}\n{"type":"turn.completed"}\n'
    r = agentstream.replay("codex", data, run_id="r1", agent_id="bot", timestamp="2026-01-01T00:00:00.000Z")
    assert {e["run_id"] for e in r.items} == {"r1"}
    assert {h["agent_id"] for h in r.hooks} == {"bot"}
    assert {h["timestamp"] for h in r.hooks} == {"2026-01-01T00:00:00.000Z"}
    assert r.outcome == {"state": "completed"}
    assert agentstream.replay("codex", data.decode()).events == agentstream.parse("codex", data)
    with pytest.raises(agentstream.InvalidAgentError):
        agentstream.replay("cursor", data)
    with pytest.raises(agentstream.InvalidArgumentError, match="ISO 8601"):
        agentstream.replay("codex", data, timestamp="noon")
    # Without codex's `turn.completed` the harness did not finish (decisions.md §1).
    cut = agentstream.replay("codex", data.rsplit(b"\n", 2)[0] + b"\n")
    assert cut.outcome["state"] == "failed" and cut.outcome["error"] == "no_final_result"
    with pytest.raises(TypeError):
        agentstream.replay("codex", 42)  # type: ignore[arg-type]
