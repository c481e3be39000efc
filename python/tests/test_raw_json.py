"""A harness's own records (``rawInput``/``rawOutput``, kept as JSON text by the core) become
exactly what ``json.loads`` makes of that text: same types, same values, same key order,
duplicate keys, big integers, float rounding and surrogates included."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

import agentstream
from agentstream import _native

CASES = [
    "null",
    "true",
    "false",
    "0",
    "-0",
    "-0.0",
    "0.1",
    "1E400",
    "-1e400",
    "1.7976931348623157e308",
    "2.2250738585072014e-308",
    "5e-324",
    "123456789.123456789e-5",
    "9007199254740993",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "123456789012345678901234567890123456789",
    '"plain"',
    r'"a\"b\\c\/d\b\f\n\r\t"',
    r'"\u00e9\u20ac\ud83d\ude00 é😀"',
    r'"\ud800"',
    r'"x\udc00y"',
    r'"\ud800\ud800\udc00"',
    r'"\u0000\u001f"',
    '[]',
    '{}',
    ' [1 , [2, {"x" : null}], true, false] ',
    '{"dup": 1, "other": 2, "dup": 3}',
    '{"a": {"a": {"a": [1.5, -2, "3"]}}}',
    '{"k\\"ey": 1, "\\u006b": 2, "": 3, " sp ace ": "v"}',
]


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down, the same key order, and NaN/inf/-0.0 kept."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return bool(a == b)


@pytest.mark.parametrize("text", CASES)
def test_edge_cases_are_what_json_loads_makes(text: str) -> None:
    assert same(_native._raw_json_to_py(text), json.loads(text)), text


def test_not_json_is_none() -> None:
    assert _native._raw_json_to_py("{nope") is None


def random_text(rng: random.Random, depth: int = 0) -> str:
    """JSON text with every kind of value, spacing and escape."""
    pick = rng.randrange(10 if depth < 4 else 6)
    if pick == 0:
        return rng.choice(["null", "true", "false"])
    if pick == 1:
        return str(rng.choice([0, -1, 7, 2**53 + 1, 2**63 - 1, -(2**63), 2**64, -(2**70), 10**30]))
    if pick == 2:
        return rng.choice(["0.5", "-1.25e-3", "1e21", "3.141592653589793238", "1E-400", "6.02214076e23", repr(rng.random())])
    if pick in (3, 4, 5):
        chars = rng.choices(['a', 'Z', ' ', '"', '\\', '/', '\n', '\t', '\x01', 'é', '€', '😀', '\u2028', 'key'], k=rng.randrange(6))
        s = json.dumps("".join(chars), ensure_ascii=rng.random() < 0.5)
        return s
    if pick in (6, 7):
        items = [random_text(rng, depth + 1) for _ in range(rng.randrange(4))]
        return "[" + rng.choice([",", ", ", " ,\n "]).join(items) + "]"
    keys = [rng.choice(["a", "b", "command", "é", "dup", ""]) for _ in range(rng.randrange(5))]
    members = [f"{json.dumps(k)}{rng.choice([':', ' : '])}{random_text(rng, depth + 1)}" for k in keys]
    return "{" + ",".join(members) + "}"


def test_random_documents_are_what_json_loads_makes() -> None:
    rng = random.Random(20260601)
    for _ in range(3000):
        text = random_text(rng)
        assert same(_native._raw_json_to_py(text), json.loads(text)), text


def test_records_in_events_are_converted_the_same_way() -> None:
    # (What reaches the record is the decoder's business: claude's goes through a serde Value,
    # where integers beyond 64 bits already became floats.)
    raw = r'{"big": 18446744073709551615, "dup": 1, "dup": 2, "s": "a\"b\u00e9\ud83d\ude00", "f": 0.1}'
    line = ('{"type":"assistant","message":{"id":"m","type":"message","role":"assistant","model":"x","content":'
            '[{"type":"tool_use","id":"t1","name":"Bash","input":' + raw + '}]},"session_id":"s"}\n')
    [event] = agentstream.Decoder("claude").feed(line.encode())
    assert same(event["update"]["rawInput"], json.loads(raw))


def test_object_keys_come_from_the_key_cache_unmixed() -> None:
    # Object keys come from a per-decoder cache of Python strings (convert.rs, Keys; bounded in
    # keys and in key length): keys that share both ends, differ in one byte anywhere, hold NUL
    # or non-ASCII, or pass the length bound must each come out as themselves, on first sight
    # and from the cache, past the cache's bound, in one record and across events.
    keys = ["", "a", "a\u0000", "ab", "abcdefgh", "abcdefghi", "abcdefgh_", "abcdefgh_abcdefg",
            "abcdefgh_abcdefh", "abcdefghXabcdefgh", "abcdefghYabcdefgh", "é", "éé", "k" * 64,
            "k" * 63 + "j", "k" * 65, "k" * 64 + "j"]
    keys += [f"key{i:05d}" for i in range(3000)]  # more than the cache's slots: keys take turns
    record = {k: i for i, k in enumerate(keys)}
    text = json.dumps([record, record, {k: [record] for k in keys[:20]}])
    assert same(_native._raw_json_to_py(text), json.loads(text))
    decoder = agentstream.Decoder("claude", redact=False)
    for round_ in range(3):
        raw = json.dumps({k: round_ for k in reversed(keys[:40])} | record)
        line = ('{"type":"assistant","message":{"id":"m","type":"message","role":"assistant","model":"x",'
                '"content":[{"type":"tool_use","id":"t%d","name":"Bash","input":%s}]},"session_id":"s"}\n'
                % (round_, raw))
        [event] = decoder.feed(line.encode())
        assert same(event["update"]["rawInput"], json.loads(raw)), round_
