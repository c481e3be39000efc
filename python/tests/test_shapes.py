"""Shapes: the dicts match the seed's TypedDicts (agentstream.types) exactly, and the TypedDicts
match the core's generated JSON Schema (core/schema/events.schema.json)."""

from __future__ import annotations

import json
from typing import Any, Literal, get_args, get_origin

import pytest

import agentstream
from agentstream import _native
from agentstream import types as t
from conftest import REPO, GoldenCase, assert_conforms

# One event per SessionUpdate variant with every optional field present.
SAMPLES: list[dict[str, Any]] = [
    {
        "sessionId": "s-1",
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "héllo ✓"}},
        "timestamp": "2026-12-02T10:00:00.000Z",
        "model": "m-1",
        "messageId": "msg-1",
        "parentToolCallId": "call-0",
        "extra": {"stop_reason": None, "nested": {"a": [1, 2.5, True, None]}},
    },
    {
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png", "uri": "file:///a.png"},
        }
    },
    {"update": {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "thinking"}}},
    {"update": {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}},
    {
        "update": {
            "sessionUpdate": "tool_call",
            "toolCallId": "call-1",
            "title": "`ls -la`",
            "toolName": "Bash",
            "kind": "execute",
            "status": "pending",
            "rawInput": {"command": "ls -la", "timeout": 120000},
            "content": [{"type": "content", "content": {"type": "text", "text": "List files"}}],
            "locations": [{"path": "/tmp/a", "line": 3}, {"path": "/tmp/b"}],
        }
    },
    {
        "update": {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call-1",
            "status": "completed",
            "title": "Edit a.py",
            "content": [
                {"type": "diff", "path": "/a.py", "oldText": None, "newText": "x = 1\n"},
                {"type": "diff", "path": "/b.py", "oldText": "y", "newText": "z"},
            ],
            "locations": [{"path": "/a.py"}],
            "rawOutput": {"stdout": "ok", "exitCode": 0, "big": 18446744073709551615},
        }
    },
    {
        "update": {
            "sessionUpdate": "plan",
            "entries": [
                {"content": "read", "status": "completed", "priority": "high"},
                {"content": "edit", "status": "in_progress", "priority": "medium"},
                {"content": "test", "status": "pending", "priority": "low"},
            ],
        }
    },
    {"update": {"sessionUpdate": "error", "message": "stream disconnected", "fatal": False}},
    {
        "messageId": "msg-2",
        "update": {
            "sessionUpdate": "usage",
            "scope": "call",
            "usage": {
                "promptTokens": 150,
                "completionTokens": 7,
                "cachedTokens": 30,
                "costUsd": 0.0125,
                "extra": {"cache_creation_input_tokens": 20, "service_tier": "standard"},
            },
        },
    },
    {"update": {"sessionUpdate": "usage", "scope": "run", "usage": {}}},
]


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s["update"]["sessionUpdate"])
def test_every_variant_converts_exactly(sample: dict[str, Any]) -> None:
    got = _native._output_event_from_json(json.dumps(sample))
    assert got == sample
    canonical = json.loads(_native._output_event_canonical_json(json.dumps(sample)))
    assert json.dumps(got) == json.dumps(canonical), "same keys in the same order as the core's serde form"
    assert_conforms(got, t.OutputEvent)


def test_all_eight_variants_sampled() -> None:
    kinds = {s["update"]["sessionUpdate"] for s in SAMPLES}
    assert kinds == set(get_args(t.SessionUpdateKind))
    assert len(get_args(t.SessionUpdate)) == 8


def test_absent_means_absent_not_none() -> None:
    got = _native._output_event_from_json('{"update":{"sessionUpdate":"tool_call_update","toolCallId":"t"}}')
    assert got == {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t"}}


def test_numbers_keep_their_python_types() -> None:
    got = _native._output_event_from_json(json.dumps(SAMPLES[5]))
    raw = got["update"]["rawOutput"]
    assert raw["exitCode"] == 0 and type(raw["exitCode"]) is int
    assert raw["big"] == 2**64 - 1
    usage = _native._output_event_from_json(json.dumps(SAMPLES[8]))["update"]["usage"]
    assert type(usage["promptTokens"]) is int and type(usage["costUsd"]) is float


def test_lifecycle_is_snake_case_with_null_sandbox_id() -> None:
    ev = {"sandbox_id": None, "sandbox": "ready", "agent": "idle", "timestamp": "2026-12-02T00:00:00.000Z",
          "reason": "run_complete"}
    got = _native._lifecycle_event_from_json(json.dumps(ev))
    assert got == ev
    assert_conforms(got, t.LifecycleEvent)
    browser = dict(ev, reason="browser_ready",
                   browser={"live_url": "https://x", "session_id": "b1", "session_tag": "t"})
    got = _native._lifecycle_event_from_json(json.dumps(browser))
    assert got == browser
    assert_conforms(got, t.LifecycleEvent)


def test_hook_events_are_flat_snake_case() -> None:
    canonical = {
        "type": "tool.completed", "run_id": "r1", "agent_id": "claude", "timestamp": "2026-12-02T00:00:00.000Z",
        "status": "running", "sequence": 7,
        "details": {"step_index": 0, "tool_call_id": "call-1", "tool_name": "Bash", "output": "ok",
                    "raw_output": {"exitCode": 0}},
    }
    got = _native._hook_to_flat_snake(json.dumps(canonical))
    assert got == {**{k: v for k, v in canonical.items() if k != "details"}, **canonical["details"]}
    assert_conforms(got, t.HookEvent)
    pause = dict(canonical, type="run.waiting_for_human",
                 details={"step_index": 1, "pause": {"kind": "permission", "tool_call_id": "c", "reason": "asked"}})
    assert_conforms(_native._hook_to_flat_snake(json.dumps(pause)), t.HookEvent)


def test_golden_expected_events_conform(golden: GoldenCase) -> None:
    for ev in golden.expected():
        assert_conforms(ev, t.OutputEvent)


def test_decode_stats_and_diagnostics_conform() -> None:
    d = agentstream.Decoder("claude", max_line_bytes=8)
    d.feed(b"\xff\xfe\n" + b"x" * 20 + b"\n")
    assert_conforms(d.stats, t.DecodeStats)
    assert len(d.diagnostics) == 2
    for diag in d.diagnostics:
        assert_conforms(diag, t.Diagnostic)


# --- the TypedDicts against the generated JSON Schema ---------------------------------------------

SCHEMA = json.loads((REPO / "core" / "schema" / "events.schema.json").read_text())
DEFS: dict[str, Any] = SCHEMA["$defs"]

OBJECTS: dict[str, Any] = {
    "OutputEvent": t.OutputEvent,
    "ImageContent": t.ImageContent,
    "DiffContent": t.DiffContent,
    "ToolCallLocation": t.ToolCallLocation,
    "ToolCall": t.ToolCall,
    "ToolCallUpdate": t.ToolCallUpdate,
    "PlanEntry": t.PlanEntry,
    "TokenUsage": t.TokenUsage,
    "LifecycleEvent": t.LifecycleEvent,
    "DecodeStats": t.DecodeStats,
}
ENUMS: dict[str, Any] = {
    "ToolKind": t.ToolKind,
    "ToolCallStatus": t.ToolCallStatus,
    "PlanEntryStatus": t.PlanEntryStatus,
    "PlanEntryPriority": t.PlanEntryPriority,
    "UsageScope": t.UsageScope,
    "SandboxState": t.SandboxState,
    "AgentState": t.AgentState,
    "LifecycleReason": t.LifecycleReason,
    "Agent": t.AgentName,
}
DISCRIMINATORS = {"type", "sessionUpdate"}


def schema_keys(obj: dict[str, Any]) -> tuple[set[str], set[str]]:
    props = set(obj.get("properties", {}))
    required = set(obj.get("required", []))
    # serde writes an Option without skip_serializing_if as null, so the key is always present;
    # schemars lists it as not required. The seed has two: LifecycleEvent.sandbox_id and
    # DiffContent.oldText (both `str | None`).
    always = {k for k in ("sandbox_id", "oldText") if k in props}
    return props, required | always


def typed_keys(td: Any) -> tuple[set[str], set[str]]:
    keys = set(td.__required_keys__ | td.__optional_keys__) - DISCRIMINATORS
    return keys, set(td.__required_keys__) - DISCRIMINATORS


@pytest.mark.parametrize("name", sorted(OBJECTS))
def test_typeddict_matches_schema(name: str) -> None:
    assert typed_keys(OBJECTS[name]) == schema_keys(DEFS[name])


def enum_values(d: dict[str, Any]) -> set[str]:
    if "enum" in d:
        return set(d["enum"])
    return {arm["const"] for arm in d["oneOf"]}


@pytest.mark.parametrize("name", sorted(ENUMS))
def test_literal_matches_schema(name: str) -> None:
    assert get_origin(ENUMS[name]) is Literal
    assert set(get_args(ENUMS[name])) == enum_values(DEFS[name])


def test_session_update_variants_match_schema() -> None:
    by_kind = {get_args(td.__annotations__["sessionUpdate"])[0]: td for td in get_args(t.SessionUpdate)}
    for arm in DEFS["SessionUpdate"]["oneOf"]:
        kind = arm["properties"]["sessionUpdate"]["const"]
        td = by_kind.pop(kind)
        if "$ref" in arm:
            target = DEFS[arm["$ref"].rsplit("/", 1)[1]]
            assert typed_keys(td) == schema_keys(target), kind
        else:
            props, required = schema_keys(arm)
            assert typed_keys(td) == (props - DISCRIMINATORS, required - DISCRIMINATORS), kind
    assert not by_kind, f"TypedDicts without a schema variant: {sorted(by_kind)}"


def test_content_blocks_match_schema() -> None:
    arms = {a["properties"]["type"]["const"]: a for a in DEFS["ContentBlock"]["oneOf"]}
    assert set(arms) == {"text", "image"}
    assert typed_keys(t.TextContent) == (set(arms["text"]["properties"]) - DISCRIMINATORS,
                                         set(arms["text"]["required"]) - DISCRIMINATORS)
    tc_arms = {a["properties"]["type"]["const"] for a in DEFS["ToolCallContent"]["oneOf"]}
    assert tc_arms == {"content", "diff"}
