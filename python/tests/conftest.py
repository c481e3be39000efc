"""Shared fixtures: the repository's golden cases (discovered by globbing, so new cases count)."""

from __future__ import annotations

import json
import os
import subprocess
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

    @property
    def prefix(self) -> Path:
        """The trace prefix the fake harness plays (``AGENTSTREAM_FAKE_TRACE``)."""
        return self.input_path.with_name(self.name)

    def expected(self) -> list[dict[str, Any]]:
        return read_jsonl(self.input_path.with_name(f"{self.name}.expected.jsonl"))

    def hooks(self) -> list[dict[str, Any]]:
        """The canonical hook events (``{type, run_id, ..., details}``) of the golden file."""
        return read_jsonl(self.input_path.with_name(f"{self.name}.hooks.jsonl"))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def fake_harness_path() -> Path:
    """``$AGENTSTREAM_FAKE_HARNESS`` (``make test-python`` sets it to ``target/debug/fake-harness``,
    which it builds); otherwise an existing ``target/{debug,release}/fake-harness``, built (debug)
    when there is none."""
    override = os.environ.get("AGENTSTREAM_FAKE_HARNESS")
    if override:
        path = Path(override)
        if not path.exists():
            raise RuntimeError(f"AGENTSTREAM_FAKE_HARNESS={override} does not exist: cargo build -p agentstream-cli --bins")
        return path
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    for profile in ("debug", "release"):
        path = target / profile / "fake-harness"
        if path.exists():
            return path
    subprocess.run(["cargo", "build", "-p", "agentstream-cli", "--bins"], cwd=REPO, check=True)
    return target / "debug" / "fake-harness"


@pytest.fixture(scope="session")
def fake_harness() -> Path:
    return fake_harness_path()


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
    if "capture" in metafunc.fixturenames:
        # The real captures (s*): they come with the harness's stderr and exit code.
        cases = [c for c in golden_cases() if c.name.startswith("s")]
        metafunc.parametrize("capture", cases, ids=[c.id for c in cases])


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
