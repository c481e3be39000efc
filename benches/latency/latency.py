#!/usr/bin/env python3
"""The Python handler of the latency benchmark (benches/latency/run.py): one run of the paced
emitter with an ``on("content", handler)`` handler, as a Python user writes it. The handler reads
CLOCK_MONOTONIC first (``time.monotonic_ns``), then the stamps ``@@<line>:<ns>;`` in the event's
text, and records ``now - stamp``.

    python latency.py EMITTER OUT_FILE [--async]

``--async`` runs it through ``await evolve.run(...)`` under asyncio instead of ``run_sync``.
Writes ``<line> <latency ns>`` per stamp; prints ``state <state>``.
"""

from __future__ import annotations

import asyncio
import sys
import time

import agentstream


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--async"]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    emitter, out_path = args
    lines: list[int] = []
    latencies: list[int] = []
    monotonic_ns = time.monotonic_ns

    def on_content(event: agentstream.OutputEvent) -> None:
        now = monotonic_ns()
        update = event["update"]
        if update["sessionUpdate"] != "agent_message_chunk":
            return
        for token in update["content"]["text"].split("@@")[1:]:  # type: ignore[typeddict-item]
            line, _, rest = token.partition(":")
            lines.append(int(line))
            latencies.append(now - int(rest.partition(";")[0]))

    evolve = agentstream.Evolve(agentstream.AgentConfig(type="claude", bin=emitter))
    evolve.on("content", on_content)
    if "--async" in sys.argv:
        result = asyncio.run(evolve.run(prompt="latency"))
    else:
        result = evolve.run_sync(prompt="latency")
    with open(out_path, "w") as f:
        f.writelines(f"{line} {latency}\n" for line, latency in zip(lines, latencies))
    print("state", result.state)
    return 0


if __name__ == "__main__":
    sys.exit(main())
