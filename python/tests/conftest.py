"""Shared fixtures: the repository's golden cases (discovered by globbing, so new cases count)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"


@dataclass(frozen=True)
class GoldenCase:
    agent: str
    name: str
    input_path: Path

    @property
    def id(self) -> str:
        return f"{self.agent}/{self.name}"

    def input(self) -> bytes:
        return self.input_path.read_bytes()

    def expected(self) -> list[dict[str, Any]]:
        path = self.input_path.with_name(f"{self.name}.expected.jsonl")
        text = path.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def golden_cases() -> list[GoldenCase]:
    cases = [
        GoldenCase(p.parent.name, p.name[: -len(".input.jsonl")], p)
        for p in sorted(GOLDEN.glob("*/*.input.jsonl"))
    ]
    if not cases:
        raise RuntimeError(f"no golden cases under {GOLDEN}")
    return cases


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "golden" in metafunc.fixturenames:
        cases = golden_cases()
        metafunc.parametrize("golden", cases, ids=[c.id for c in cases])


def assert_conforms(value: Any, tp: Any, path: str = "$") -> None:
    """Check a run-time value against a typing annotation (TypedDict, Literal, Union, list,
    dict, str, int, float, bool, None, Any), with exact TypedDict key sets: every required key
    present, no key the TypedDict does not declare."""
    import types as pytypes
    from typing import Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

    if tp is Any or tp is object:
        return
    if is_typeddict(tp):
        assert isinstance(value, dict), f"{path}: expected a dict for {tp.__name__}, got {value!r}"
        keys = set(value)
        missing = tp.__required_keys__ - keys
        unknown = keys - tp.__required_keys__ - tp.__optional_keys__
        assert not missing, f"{path}: {tp.__name__} lacks required keys {sorted(missing)}: {value!r}"
        assert not unknown, f"{path}: {tp.__name__} has undeclared keys {sorted(unknown)}: {value!r}"
        hints = get_type_hints(tp)
        for k, v in value.items():
            assert_conforms(v, hints[k], f"{path}.{k}")
        return
    origin = get_origin(tp)
    if origin is Literal:
        assert value in get_args(tp), f"{path}: {value!r} is not one of {get_args(tp)}"
        return
    if origin is Union or origin is pytypes.UnionType:
        errors = []
        for arm in get_args(tp):
            try:
                assert_conforms(value, arm, path)
                return
            except AssertionError as e:
                errors.append(str(e))
        raise AssertionError(f"{path}: {value!r} matches no arm of {tp}: {errors}")
    if origin is list:
        assert isinstance(value, list), f"{path}: expected a list, got {value!r}"
        (item,) = get_args(tp)
        for i, v in enumerate(value):
            assert_conforms(v, item, f"{path}[{i}]")
        return
    if origin is dict:
        assert isinstance(value, dict), f"{path}: expected a dict, got {value!r}"
        k_tp, v_tp = get_args(tp)
        for k, v in value.items():
            assert_conforms(k, k_tp, f"{path}.<key>")
            assert_conforms(v, v_tp, f"{path}.{k}")
        return
    if tp is type(None) or tp is None:
        assert value is None, f"{path}: expected None, got {value!r}"
        return
    if tp is float:
        assert isinstance(value, (int, float)) and not isinstance(value, bool), f"{path}: {value!r} not a float"
        return
    if tp is int:
        assert isinstance(value, int) and not isinstance(value, bool), f"{path}: {value!r} not an int"
        return
    assert isinstance(value, tp), f"{path}: {value!r} is not a {tp}"
