"""The API parity table (``tests/parity/api.json``, see its README) run against the Python API:
the same cases every language's suite runs against its own idiom (Rust: cli/tests/parity.rs).
Each case runs twice: with the blocking calls (``run_sync``) and under asyncio (``await run``)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

import agentstream
from agentstream import AgentConfig, Evolve
from conftest import GOLDEN, REPO

TABLE = json.loads((REPO / "tests" / "parity" / "api.json").read_text(encoding="utf-8"))
CASES = TABLE["cases"]


class Case:
    def __init__(self, fake_harness: Path, argv_file: Path, mode: str) -> None:
        self.fake_harness = fake_harness
        self.argv_file = argv_file
        self.mode = mode
        self.evolve: Evolve | None = None
        self.handler_calls = 0
        self.hooks: list[str] = []

    def client(self) -> Evolve:
        assert self.evolve is not None, "the case built a client"
        return self.evolve

    def new(self, config: dict[str, Any], harness: str | None) -> None:
        config = dict(config)
        if harness is not None:
            config["bin"] = self.fake_harness
            config["env"] = {**config.get("env", {}), "AGENTSTREAM_FAKE_TRACE": str(GOLDEN / harness),
                             "AGENTSTREAM_FAKE_ARGV_FILE": str(self.argv_file)}
        self.evolve = Evolve(AgentConfig(**config))

    def handler(self, kind: str) -> Any:
        def record(_: Any) -> None:
            self.handler_calls += 1

        def throw(_: Any) -> None:
            self.handler_calls += 1
            raise RuntimeError("a throwing handler")

        return throw if kind == "throw" else record

    def run(self, step: dict[str, Any]) -> Any:
        self.hooks = []
        kwargs: dict[str, Any] = dict(step.get("request", {}))
        prompt = kwargs.pop("prompt")
        if step.get("on_event"):
            kwargs["on_event"] = lambda hook: self.hooks.append(hook["type"])
        evolve = self.client()
        if self.mode == "sync":
            result = evolve.run_sync(prompt, **kwargs)
        else:
            async def main() -> agentstream.RunResult:
                return await evolve.run(prompt, **kwargs)

            result = asyncio.run(asyncio.wait_for(main(), 60))
        if "hooks_first" in step:
            assert self.hooks[:1] == [step["hooks_first"]], self.hooks
        return dataclasses.asdict(result)

    def call(self, step: dict[str, Any]) -> Any:
        call = step["call"]
        channel = step.get("channel", "")
        if call == "new":
            return self.new(step["config"], None)
        if call == "on":
            return self.client().on(channel, self.handler(step.get("handler", "record")))  # type: ignore[call-overload]
        if call == "off":
            return self.client().off(channel)
        if call == "run":
            return self.run(step)
        if call == "status":
            return dataclasses.asdict(self.client().status())
        if call == "get_session":
            return self.client().get_session()
        if call == "set_session":
            return self.client().set_session(step["session_id"])
        if call == "interrupt":
            return self.client().interrupt("parity")
        if call == "kill":
            return self.client().kill()
        if call == "pause":
            return self.client().pause()
        if call == "resume":
            return self.client().resume()
        if call == "argv":
            return json.loads(self.argv_file.read_text(encoding="utf-8"))
        pytest.fail(f"the parity table names a call this runner does not know: {call}")


def assert_matches(expected: Any, got: Any, what: str) -> None:
    """Every key of ``expected`` matches in ``got`` (``None`` = absent or None)."""
    if isinstance(expected, dict):
        for k, v in expected.items():
            assert_matches(v, got.get(k) if isinstance(got, dict) else None, f"{what}.{k}")
    else:
        assert got == expected, f"{what}: {got!r} != {expected!r}"


def contains_run(argv: list[str], needle: list[str]) -> bool:
    return any(argv[i:i + len(needle)] == needle for i in range(len(argv) - len(needle) + 1))


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_parity_table(case: dict[str, Any], mode: str, fake_harness: Path, tmp_path: Path) -> None:
    c = Case(fake_harness, tmp_path / "argv.json", mode)
    if "config" in case:
        c.new(case["config"], case.get("harness"))
    for step in case["steps"]:
        what = f"{case['name']} / {step['call']}"
        calls_before = c.handler_calls
        kind = step.get("error")
        try:
            value = c.call(step)
        except agentstream.AgentstreamError as e:
            assert kind is not None, f"{what}: unexpected error {e!r}"
            assert e.kind == kind, f"{what}: {e.kind} != {kind}: {e}"
            for needle in step.get("message_has", []):
                assert needle in str(e), f"{what}: {needle!r} not in {e}"
            continue
        assert kind is None, f"{what}: expected a {kind} error, got {value!r}"
        if "returns" in step:
            assert_matches(step["returns"], value, what)
        if "handler_calls_at_least" in step:
            assert c.handler_calls - calls_before >= step["handler_calls_at_least"], what
        if "handler_errors_at_least" in step:
            assert value["handler_errors"] >= step["handler_errors_at_least"], f"{what}: {value}"
        if "argv_has" in step:
            has = step["argv_has"]
            # `--opt value` in the table also matches the joined `--opt=value` a harness gets.
            joined = [f"{has[0]}={' '.join(has[1:])}"]
            assert contains_run(value, has) or (len(has) == 2 and contains_run(value, joined)), f"{what}: {value}"
        for lack in step.get("argv_lacks", []):
            assert not any(a == lack or a.startswith(f"{lack}=") for a in value), f"{what}: {lack} in {value}"
