"""Shapes: the dicts agentstream hands out match the TypedDicts of ``agentstream.types`` exactly
(key sets and value types, checked at run time), and those TypedDicts (generated from the core's
JSON Schema, core/schema/events.schema.json, by ``make generate``) say what the schema says."""

from __future__ import annotations

import json
from typing import Any, Literal, get_args, get_origin

import pytest

import agentstream
from agentstream import _native
from agentstream import types as t
from conftest import REPO, GoldenCase, assert_conforms
from pathlib import Path

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
                 details={"step_index": 1, "pause": {"kind": "permission", "tool_call_id": "c", "tool_name": None,
                                                   "reason": "asked"}})
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


def test_replays_conform(golden: GoldenCase) -> None:
    r = agentstream.replay(golden.agent, golden.input())
    for item in r.items:
        assert_conforms(item, t.Envelope)
    for hook in r.hooks:
        assert_conforms(hook, t.HookEvent)
    assert_conforms(r.outcome, t.ReplayOutcome)
    assert_conforms(r.stats, t.DecodeStats)


def test_run_results_conform(fake_harness: Path) -> None:
    """Results of real runs (completed, failed, timed out) against ``RunResultDict``, and the
    ``RunResult`` dataclass built from them keeps every field of the record."""
    from agentstream import AgentConfig, Evolve

    cases = [({}, {}), ({"AGENTSTREAM_FAKE_EXIT": "3"}, {}), ({"AGENTSTREAM_FAKE_HANG": "1"}, {"timeout_ms": 200})]
    states = []
    for env, kwargs in cases:
        trace = REPO / "tests" / "golden" / "claude" / "s2-bash"
        config = AgentConfig(type="claude", bin=str(fake_harness),
                             env={"AGENTSTREAM_FAKE_TRACE": str(trace), **env})
        stream = Evolve(config=config).stream_sync(prompt="x", **kwargs)
        for _ in stream:
            pass
        raw = stream._op.run.result() if stream._op is not None else None
        assert raw is not None
        assert_conforms(raw, t.RunResultDict)
        result = stream.wait()
        for key, value in raw.items():
            assert getattr(result, key) == value, key
        states.append(result.state)
    assert states == ["completed", "failed", "cancelled"]


def test_the_run_result_dataclass_has_every_field_of_the_record() -> None:
    fields = set(agentstream.RunResult.__dataclass_fields__)
    record = set(t.RunResultDict.__required_keys__ | t.RunResultDict.__optional_keys__)
    assert fields == record, "RunResult (python/agentstream/_run.py) must follow RunResultDict"


# --- the generated TypedDicts against the schema ------------------------------------------------

SCHEMA = json.loads((REPO / "core" / "schema" / "events.schema.json").read_text())
DEFS: dict[str, Any] = SCHEMA["$defs"]
# Public names that differ from the schema's (the names agentstream.types had before it was generated).
RENAMED = {"Agent": "AgentName", "Channel": "ChannelName", "RunOutcome": "ReplayOutcome",
           "RunResult": "RunResultDict"}
# Python envelopes are built by the binding with snake_case keys (run_id), like every record.
SNAKE = {"Envelope"}


def snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def ref_name(node: dict[str, Any]) -> str:
    return str(node["$ref"]).rsplit("/", 1)[1]


def keys_of(node: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(every key, the required keys) of an object schema, following a variant's ``$ref``."""
    props = set(node.get("properties", {}))
    required = set(node.get("required", []))
    if "$ref" in node:
        p, r = keys_of(DEFS[ref_name(node)])
        props, required = props | p, required | r
    return props, required


def typed_keys(td: Any) -> tuple[set[str], set[str]]:
    return set(td.__required_keys__ | td.__optional_keys__), set(td.__required_keys__)


def is_enum(d: dict[str, Any]) -> bool:
    return "enum" in d or ("properties" not in d and all("const" in a and a.get("type") == "string"
                                                         for a in d.get("oneOf", [{}])))


def tag_of(arm: dict[str, Any]) -> str:
    return next(k for k, v in arm.get("properties", {}).items() if "const" in v)


DETAILS = {ref_name(arm["properties"]["details"]) for arm in DEFS["HookEvent"]["oneOf"]}
VARIANT_STRUCTS = {ref_name(arm) for d in DEFS.values() for arm in d.get("oneOf", []) if "$ref" in arm}


@pytest.mark.parametrize("name", sorted(set(DEFS) - DETAILS - VARIANT_STRUCTS))
def test_every_schema_type_has_its_python_declaration(name: str) -> None:
    d = DEFS[name]
    py = getattr(t, RENAMED.get(name, name))
    assert RENAMED.get(name, name) in t.__all__
    if is_enum(d):
        assert get_origin(py) is Literal
        assert list(get_args(py)) == d.get("enum") or list(get_args(py)) == [a["const"] for a in d["oneOf"]]
    elif "properties" in d and "oneOf" in d:
        props, required = keys_of(d)
        if name == "HookEvent":
            # One flat dict: the envelope fields, then every hook type's details (all optional).
            details = set().union(*(keys_of(DEFS[n])[0] for n in DETAILS))
            assert typed_keys(py) == ((props - {"details"}) | details, required - {"details"})
            hook_types = [arm["properties"]["type"]["const"] for arm in d["oneOf"]]
            assert list(get_args(t.HookType)) == hook_types
        else:
            rename = snake if name in SNAKE else (lambda k: k)
            assert typed_keys(py) == ({rename(k) for k in props}, {rename(k) for k in required})
    elif "properties" in d:
        assert typed_keys(py) == keys_of(d)
    elif "oneOf" in d:
        members = get_args(py)
        tag = tag_of(d["oneOf"][0])
        by_tag = {get_args(m.__annotations__[tag])[0]: m for m in members}
        assert list(by_tag) == [arm["properties"][tag]["const"] for arm in d["oneOf"]]
        for arm in d["oneOf"]:
            assert typed_keys(by_tag[arm["properties"][tag]["const"]]) == keys_of(arm), arm
    else:
        assert get_origin(py) is dict


def test_all_eight_session_update_kinds() -> None:
    assert list(get_args(t.SessionUpdateKind)) == [a["properties"]["sessionUpdate"]["const"]
                                                   for a in DEFS["SessionUpdate"]["oneOf"]]
