"""No memory leaks per event (issue 24, item 9): a million events through each path of the
binding — the sans-IO Decoder, and real runs delivering content events to a handler and hook
events to ``on_event`` — leave the resident set where a warm-up left it.

The run case counts the events Python actually received (under backpressure the core merges
text deltas, so a flood of N deltas delivers fewer than N events) and keeps starting runs until
a million arrived, and judges the resident set by the lowest of the last three samples (a leak
raises that floor; the allocator's noise only makes peaks). The slack, 32 MiB over a million events, catches a leak of 32 bytes or more
per event; the allocator's own noise between runs here is about 10 MiB.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

import pytest

import agentstream
from agentstream import AgentConfig, Evolve
from conftest import GOLDEN

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self")

EVENTS = 1_000_000
SLACK = 32 * 1024 * 1024
# Text deltas per run: 67 bytes each (the fake harness's flood_text), about 67 MB a run.
DELTAS_PER_RUN = 1_000_000


def rss() -> int:
    gc.collect()
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("VmRSS")


def delta_lines(start: int, count: int) -> bytes:
    return b"".join(
        b'{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta",'
        b'"text":"%012d abcdefghijklmnopqrstuvwxyz"}},"session_id":"leak","parent_tool_use_id":null}\n' % n
        for n in range(start, start + count)
    )


def test_a_million_decoded_events_leak_nothing() -> None:
    batch = delta_lines(0, 10_000)
    decoder = agentstream.Decoder("claude")

    def decode(batches: int) -> int:
        n = 0
        for _ in range(batches):
            n += len(decoder.feed(batch))
        return n

    decode(20)  # warm-up
    before = rss()
    assert decode(EVENTS // 10_000) == EVENTS
    grew = rss() - before
    assert grew < SLACK, f"RSS grew by {grew >> 20} MiB over {EVENTS} events"


def test_a_million_events_of_real_runs_leak_nothing(fake_harness: Path) -> None:
    def run() -> int:
        evolve = Evolve(config=AgentConfig(type="claude", bin=fake_harness, env={
            "AGENTSTREAM_FAKE_TRACE": str(GOLDEN / "claude" / "s1-text"),
            "AGENTSTREAM_FAKE_FLOOD_TEXT": str(DELTAS_PER_RUN * 67),
        }))
        counts = [0, 0]

        def content(event: Any) -> None:
            counts[0] += 1

        def hook(event: Any) -> None:
            counts[1] += 1

        evolve.on("content", content)
        result = evolve.run_sync(prompt="x", on_event=hook)
        assert result.state == "completed", result
        assert counts[0] > 0 and counts[1] > 0
        return counts[0] + counts[1]

    # Warm-up: two runs (allocator arenas, thread stacks, caches reach their size).
    warm = []
    for _ in range(2):
        run()
        warm.append(rss())
    baseline = max(warm)
    delivered, samples = 0, []
    while delivered < EVENTS or len(samples) < 3:
        delivered += run()
        samples.append(rss())
    # The floor of the last three samples: a leak raises it; the allocator's noise only peaks.
    grew = min(samples[-3:]) - baseline
    assert grew < SLACK, (
        f"RSS grew by {grew >> 20} MiB over {delivered} events in {len(samples)} runs "
        f"(baseline {baseline >> 20} MiB, samples {[s >> 20 for s in samples]} MiB)"
    )
