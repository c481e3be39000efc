"""Memory is bounded by bytes (issue 24, item 6): with the reader paused or slow, the runner
stops reading the harness's pipes once the byte budget (8 MiB) is buffered, so the harness
blocks instead of this process growing. The peak resident set of this process (``VmHWM``, reset
through ``/proc/self/clear_refs``) must grow by less than the budget plus 64 MiB under the
three floods of the issue, each offered in full and cut short after 1–2 s of a paused stream or
a handler taking 1 ms per event (without the bound, each grew past 1 GB in that time)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentstream import AgentConfig, Evolve
from conftest import GOLDEN

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self")

BOUND = (8 + 64) * 1024 * 1024


def status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) * 1024
    raise AssertionError(field)


def reset_peak() -> int:
    Path("/proc/self/clear_refs").write_text("5")
    return status("VmRSS:")


def flooding(fake_harness: Path, **env: str) -> Evolve:
    variables = {f"AGENTSTREAM_FAKE_{k.upper()}": v for k, v in env.items()}
    variables["AGENTSTREAM_FAKE_TRACE"] = str(GOLDEN / "claude" / "s1-text")
    return Evolve(config=AgentConfig(type="claude", bin=fake_harness, env=variables))


@pytest.mark.parametrize("flood", [{"flood_stderr": str(1 << 30)}, {"flood": "3000000"}],
                         ids=["1GiB-stderr", "3e6-stdout-lines"])
def test_a_paused_stream_keeps_memory_bounded(fake_harness: Path, flood: dict[str, str]) -> None:
    before = reset_peak()
    with flooding(fake_harness, **flood).stream_sync(prompt="x") as stream:
        time.sleep(1.0)  # nothing is read
        grew = status("VmHWM:") - before
        next(iter(stream))
    assert grew < BOUND, f"peak RSS grew by {grew >> 20} MiB"


def test_a_handler_taking_1ms_per_event_keeps_memory_bounded(fake_harness: Path) -> None:
    before = reset_peak()
    seen = 0
    with flooding(fake_harness, flood_text="500000000").stream_sync(prompt="x") as stream:
        until = time.monotonic() + 2.0
        for envelope in stream:
            seen += 1
            time.sleep(0.001)
            if time.monotonic() > until:
                break
    grew = status("VmHWM:") - before
    assert seen > 100
    assert grew < BOUND, f"peak RSS grew by {grew >> 20} MiB"


def test_a_run_whose_handler_takes_1ms_per_event_keeps_memory_bounded(fake_harness: Path) -> None:
    import threading

    evolve = flooding(fake_harness, flood_text="500000000")
    calls: list[Any] = []

    def slow(event: Any) -> None:
        calls.append(None)
        time.sleep(0.001)

    evolve.on("content", slow)
    before = reset_peak()
    stop = threading.Timer(2.0, lambda: evolve.interrupt("enough"))
    stop.start()
    try:
        result = evolve.run_sync(prompt="x")
    finally:
        stop.cancel()
    grew = status("VmHWM:") - before
    assert result.state == "cancelled" and len(calls) > 100
    assert grew < BOUND, f"peak RSS grew by {grew >> 20} MiB"
