"""Golden content replay: every tests/golden/<agent>/<case>.input.jsonl through the Python
Decoder, whole, byte by byte and in seeded random chunks, gives exactly <case>.expected.jsonl."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import agentstream
from agentstream import _native
from conftest import GoldenCase


def decode_in_chunks(agent: str, data: bytes, sizes: Iterator[int]) -> list[dict[str, Any]]:
    decoder = agentstream.Decoder(agent)
    out: list[dict[str, Any]] = []
    pos = 0
    while pos < len(data):
        n = max(1, next(sizes))
        out.extend(decoder.feed(data[pos : pos + n]))
        pos += n
    out.extend(decoder.finish())
    return out


def constant(n: int) -> Iterator[int]:
    while True:
        yield n


def seeded(seed: int) -> Iterator[int]:
    rng = random.Random(seed)
    while True:
        yield rng.randint(1, 97)


def test_whole(golden: GoldenCase) -> None:
    data = golden.input()
    assert decode_in_chunks(golden.agent, data, constant(len(data) + 1)) == golden.expected()


def test_byte_by_byte(golden: GoldenCase) -> None:
    assert decode_in_chunks(golden.agent, golden.input(), constant(1)) == golden.expected()


def test_random_chunks(golden: GoldenCase) -> None:
    data, expected = golden.input(), golden.expected()
    for seed in range(1, 6):
        assert decode_in_chunks(golden.agent, data, seeded(seed)) == expected, f"seed {seed}"


def test_parse_accepts_bytes_str_and_buffers(golden: GoldenCase) -> None:
    data, expected = golden.input(), golden.expected()
    assert agentstream.parse(golden.agent, data) == expected
    assert agentstream.parse(golden.agent, bytearray(data)) == expected
    assert agentstream.parse(golden.agent, memoryview(data)) == expected
    text = data.decode("utf-8", errors="replace")
    if text.encode("utf-8") == data:
        assert agentstream.parse(golden.agent, text) == expected


def test_dicts_are_the_core_serde_form(golden: GoldenCase) -> None:
    """The binding converts shapes only: each dict equals json.loads of the core's own JSON,
    key order included (bindings/python/src/convert.rs follows serde's field order)."""
    data = golden.input()
    core = [json.loads(line) for line in _native._parse_json_lines(golden.agent, data)]
    got = agentstream.parse(golden.agent, data)
    assert got == core
    assert [list(e) for e in got] == [list(e) for e in core]


def test_session_id_and_stats(golden: GoldenCase) -> None:
    decoder = agentstream.Decoder(golden.agent)
    events = decoder.feed(golden.input()) + decoder.finish()
    stats = decoder.stats
    assert stats["bytes"] == len(golden.input())
    assert stats["events"] == len(events)
    session_ids = {e["sessionId"] for e in events if "sessionId" in e}
    assert len(session_ids) <= 1
    if session_ids:
        assert decoder.session_id == session_ids.pop()
