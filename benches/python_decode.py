#!/usr/bin/env python3
"""Throughput delivered to a Python callback: agentstream (Decoder, and a real run) vs pure Python.

The corpus is the mixed corpus of every real golden capture (``tests/golden/<agent>/s*.input.jsonl``),
repeated in memory to about ``--mb`` MiB per agent (nothing large is committed). Both sides get the
same bytes in 64 KiB chunks, as a pipe would deliver them, and call the same callback once per
event, in one run:

* ``agentstream``: ``Decoder(agent).feed(chunk)`` -> dicts (the full seed shapes, camelCase).
* ``pure python``: line splitting + ``json.loads`` + a simple per-agent mapping to OutputEvent-like
  dicts (message/thought chunks, tool calls and results, usage) - much less than the real decoders
  do, so the ratio is conservative.

And end to end, through a real process: the fake harness (``target/release/fake-harness``)
prints each agent's corpus on its stdout, line by line, as the real CLI would:

* ``agentstream run``: ``Evolve.run_sync`` with an ``on("content", callback)`` handler (the core's
  runner reads the pipe, decodes, sequences and buffers; Python pulls batches and dispatches).
* ``agentstream run async``: the same through ``await Evolve.run(...)`` under asyncio.
* ``pure python run``: ``subprocess.Popen`` of the same harness, 64 KiB ``read1`` from the pipe,
  then the same pure-Python normalizer and callback.
* ``harness alone``: the same process, its output read and discarded: the ceiling of the runs.

Prints events/s and MB/s for each (CPU time of this process, which for the runs includes the
runner's threads but never the harness; and wall-clock time), the ratios (target: agentstream >=
2x the pure-Python MB/s), plus the Rust-only floor (decoding without building any Python object).
``python benches/python_decode.py [--mb 2] [--repeat 7]``; ``--json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import agentstream
from agentstream import _native

REPO = Path(__file__).resolve().parents[1]
CHUNK = 64 * 1024
FAKE_HARNESS = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release" / "fake-harness"
TRACES: dict[str, str] = {}
"""agent -> trace prefix of its corpus on disk (what the fake harness plays)."""

Event = dict[str, Any]
Emit = Callable[[Event], None]


def corpus(mb: float) -> list[tuple[str, bytes]]:
    out = []
    for agent in agentstream.AGENTS:
        paths = sorted((REPO / "tests" / "golden" / agent).glob("s*.input.jsonl"))
        one = b"".join(p.read_bytes() for p in paths)
        if not one:
            continue
        times = max(1, int(mb * 1024 * 1024) // len(one))
        out.append((agent, one * times))
    if not out:
        sys.exit("no golden traces found under tests/golden")
    return out


def chunks(data: bytes) -> Iterator[bytes]:
    for i in range(0, len(data), CHUNK):
        yield data[i : i + CHUNK]


# --- the pure-Python baseline: json.loads + a simple mapping per agent ------------------------


def text_event(kind: str, text: str, sid: str | None) -> Event:
    ev: Event = {"update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}}}
    if sid:
        ev["sessionId"] = sid
    return ev


def tool_call(call_id: str, name: str, raw_input: Any, sid: str | None) -> Event:
    ev: Event = {
        "update": {
            "sessionUpdate": "tool_call",
            "toolCallId": call_id,
            "title": name,
            "toolName": name,
            "kind": "other",
            "status": "pending",
            "rawInput": raw_input,
        }
    }
    if sid:
        ev["sessionId"] = sid
    return ev


def tool_result(call_id: str, text: Any, failed: bool, sid: str | None) -> Event:
    ev: Event = {
        "update": {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": "failed" if failed else "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": str(text)}}],
        }
    }
    if sid:
        ev["sessionId"] = sid
    return ev


def usage(scope: str, u: dict[str, Any], sid: str | None) -> Event:
    ev: Event = {
        "update": {
            "sessionUpdate": "usage",
            "scope": scope,
            "usage": {"promptTokens": u.get("input_tokens", 0), "completionTokens": u.get("output_tokens", 0)},
        }
    }
    if sid:
        ev["sessionId"] = sid
    return ev


class PyNormalizer:
    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.sid: str | None = None
        self.partial = b""
        self.map_line: Callable[[dict[str, Any], Emit], None] = getattr(self, "_" + agent)

    def feed(self, data: bytes, emit: Emit) -> None:
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()
        for line in lines:
            self._line(line, emit)

    def finish(self, emit: Emit) -> None:
        if self.partial:
            self._line(self.partial, emit)
            self.partial = b""

    def _line(self, line: bytes, emit: Emit) -> None:
        if not line.strip():
            return
        try:
            obj = json.loads(line)
        except ValueError:
            return
        if isinstance(obj, dict):
            self.map_line(obj, emit)

    def _claude(self, o: dict[str, Any], emit: Emit) -> None:
        t = o.get("type")
        self.sid = self.sid or o.get("session_id")
        if t == "assistant":
            msg = o.get("message") or {}
            for block in msg.get("content") or []:
                bt = block.get("type")
                if bt == "text":
                    emit(text_event("agent_message_chunk", block.get("text", ""), self.sid))
                elif bt == "thinking":
                    emit(text_event("agent_thought_chunk", block.get("thinking", ""), self.sid))
                elif bt == "tool_use":
                    emit(tool_call(block.get("id", ""), block.get("name", ""), block.get("input"), self.sid))
            if msg.get("usage"):
                emit(usage("call", msg["usage"], self.sid))
        elif t == "user":
            for block in (o.get("message") or {}).get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    emit(tool_result(block.get("tool_use_id", ""), block.get("content"), bool(block.get("is_error")),
                                     self.sid))
        elif t == "result":
            emit(usage("run", o.get("usage") or {}, self.sid))

    _qwen = _claude

    def _codex(self, o: dict[str, Any], emit: Emit) -> None:
        t = o.get("type")
        if t == "thread.started":
            self.sid = o.get("thread_id")
        item = o.get("item") or {}
        it = item.get("type")
        if t == "item.completed" and it == "agent_message":
            emit(text_event("agent_message_chunk", item.get("text", ""), self.sid))
        elif t == "item.completed" and it == "reasoning":
            emit(text_event("agent_thought_chunk", item.get("text", ""), self.sid))
        elif t == "item.started":
            emit(tool_call(item.get("id", ""), it or "", item, self.sid))
        elif t == "item.completed":
            emit(tool_result(item.get("id", ""), item.get("aggregated_output", ""), item.get("status") == "failed",
                             self.sid))
        elif t == "turn.completed":
            emit(usage("run", o.get("usage") or {}, self.sid))

    def _gemini(self, o: dict[str, Any], emit: Emit) -> None:
        t = o.get("type")
        if t == "init":
            self.sid = o.get("session_id")
        elif t == "message" and o.get("role") == "assistant":
            emit(text_event("agent_message_chunk", o.get("content", ""), self.sid))
        elif t == "tool_use":
            emit(tool_call(o.get("tool_id", ""), o.get("tool_name", ""), o.get("parameters"), self.sid))
        elif t == "tool_result":
            emit(tool_result(o.get("tool_id", ""), o.get("output", ""), o.get("status") != "success", self.sid))
        elif t == "result":
            emit(usage("run", o.get("stats") or {}, self.sid))

    def _kimi(self, o: dict[str, Any], emit: Emit) -> None:
        role = o.get("role")
        if role == "assistant":
            if isinstance(o.get("content"), str) and o["content"]:
                emit(text_event("agent_message_chunk", o["content"], self.sid))
            for call in o.get("tool_calls") or []:
                fn = call.get("function") or {}
                emit(tool_call(call.get("id", ""), fn.get("name", ""), json.loads(fn.get("arguments") or "{}"),
                               self.sid))
        elif role == "tool":
            parts = o.get("content") or []
            text = "".join(p.get("text", "") for p in parts if isinstance(p, dict))
            emit(tool_result(o.get("tool_call_id", ""), text, False, self.sid))

    def _opencode(self, o: dict[str, Any], emit: Emit) -> None:
        t = o.get("type")
        self.sid = self.sid or o.get("sessionID")
        part = o.get("part") or {}
        if t == "text":
            emit(text_event("agent_message_chunk", part.get("text", ""), self.sid))
        elif t == "tool_use":
            state = part.get("state") or {}
            emit(tool_call(part.get("callID", ""), part.get("tool", ""), state.get("input"), self.sid))
            if state.get("status") in ("completed", "error"):
                emit(tool_result(part.get("callID", ""), state.get("output", ""), state.get("status") == "error",
                                 self.sid))
        elif t == "step_finish":
            tokens = part.get("tokens") or {}
            emit(usage("call", {"input_tokens": tokens.get("input"), "output_tokens": tokens.get("output")}, self.sid))

    def _droid(self, o: dict[str, Any], emit: Emit) -> None:
        t = o.get("type")
        self.sid = self.sid or o.get("session_id")
        if t == "message" and o.get("role") == "assistant":
            emit(text_event("agent_message_chunk", o.get("text", ""), self.sid))
        elif t == "tool_call":
            emit(tool_call(o.get("id", ""), o.get("toolName", ""), o.get("parameters"), self.sid))
        elif t == "tool_result":
            emit(tool_result(o.get("id", ""), o.get("value", ""), bool(o.get("isError")), self.sid))
        elif t == "completion":
            emit(usage("run", o.get("usage") or {}, self.sid))


# --- the contenders -----------------------------------------------------------------------------


def run_agentstream(data: list[tuple[str, bytes]], callback: Emit) -> None:
    for agent, bytes_ in data:
        decoder = agentstream.Decoder(agent)
        for chunk in chunks(bytes_):
            for event in decoder.feed(chunk):
                callback(event)
        for event in decoder.finish():
            callback(event)


def run_python(data: list[tuple[str, bytes]], callback: Emit) -> None:
    for agent, bytes_ in data:
        normalizer = PyNormalizer(agent)
        for chunk in chunks(bytes_):
            normalizer.feed(chunk, callback)
        normalizer.finish(callback)


def run_rust_only(data: list[tuple[str, bytes]], callback: Emit) -> int:
    """Decode without building Python objects (no callback): the floor under agentstream."""
    return sum(_native._decode_count(agent, bytes_) for agent, bytes_ in data)


def harness_env(agent: str) -> dict[str, str]:
    return {"AGENTSTREAM_FAKE_TRACE": TRACES[agent]}


def run_agentstream_process(data: list[tuple[str, bytes]], callback: Emit) -> None:
    for agent, _ in data:
        evolve = agentstream.Evolve(agentstream.AgentConfig(type=agent, bin=FAKE_HARNESS, env=harness_env(agent)))
        evolve.on("content", callback)
        result = evolve.run_sync(prompt="bench")
        assert result.handler_errors == 0 and result.state in ("completed", "failed"), result


def run_agentstream_process_async(data: list[tuple[str, bytes]], callback: Emit) -> None:
    async def main() -> None:
        for agent, _ in data:
            evolve = agentstream.Evolve(agentstream.AgentConfig(type=agent, bin=FAKE_HARNESS, env=harness_env(agent)))
            evolve.on("content", callback)
            result = await evolve.run(prompt="bench")
            assert result.handler_errors == 0, result

    asyncio.run(main())


def run_python_process(data: list[tuple[str, bytes]], callback: Emit) -> None:
    for agent, _ in data:
        normalizer = PyNormalizer(agent)
        env = {**os.environ, **harness_env(agent)}
        with subprocess.Popen([str(FAKE_HARNESS), "-p", "bench"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env) as proc:
            assert proc.stdout is not None
            while chunk := proc.stdout.read1(CHUNK):
                normalizer.feed(chunk, callback)
            normalizer.finish(callback)


def run_pipe_only(data: list[tuple[str, bytes]], callback: Emit) -> int:
    """The ceiling of the run contenders: the harness's output read and discarded (no decoding,
    no callback). The fake harness writes and flushes line by line, like the real CLIs."""
    for agent, _ in data:
        env = {**os.environ, **harness_env(agent)}
        with subprocess.Popen([str(FAKE_HARNESS)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL, env=env) as proc:
            assert proc.stdout is not None
            while proc.stdout.read1(CHUNK):
                pass
    return 0


Contender = Callable[[list[tuple[str, bytes]], Emit], Any]
DECODE: list[tuple[str, Contender]] = [
    ("agentstream", run_agentstream),
    ("pure python", run_python),
    ("rust only", run_rust_only),
]
RUNS: list[tuple[str, Contender]] = [
    ("agentstream run", run_agentstream_process),
    ("agentstream run async", run_agentstream_process_async),
    ("pure python run", run_python_process),
    ("harness alone", run_pipe_only),
]


def measure(data: list[tuple[str, bytes]], repeat: int, contenders: list[tuple[str, Contender]]
            ) -> dict[str, dict[str, float]]:
    """Best CPU and best wall-clock time and the event count per contender. Runs are interleaved
    (A, B, C, A, B, C, ...) so that load from other processes hits every contender alike."""
    best = {name: {"cpu": float("inf"), "wall": float("inf"), "events": 0.0} for name, _ in contenders}
    for _ in range(repeat):
        for name, fn in contenders:
            seen = [0]

            def callback(event: Event) -> None:
                # What a consumer does at least: look at the update kind.
                if event["update"]["sessionUpdate"]:
                    seen[0] += 1

            c0, w0 = time.process_time(), time.perf_counter()
            returned = fn(data, callback)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            count = returned if isinstance(returned, int) else seen[0]
            b = best[name]
            b["cpu"], b["wall"] = min(b["cpu"], cpu), min(b["wall"], wall)
            if b["events"] and b["events"] != count:
                raise SystemExit(f"{name}: {count} events this time, {b['events']:.0f} before")
            b["events"] = count
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=2.0, help="MiB of corpus per agent (default 2)")
    ap.add_argument("--repeat", type=int, default=7, help="runs per contender, interleaved; the best counts (default 7)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    ap.add_argument("--no-runs", action="store_true", help="only the in-memory Decoder path (no fake harness)")
    args = ap.parse_args()

    data = corpus(args.mb)
    total = sum(len(b) for _, b in data)
    contenders = list(DECODE)
    with tempfile.TemporaryDirectory(prefix="agentstream-bench-") as tmp:
        if not args.no_runs:
            if not FAKE_HARNESS.exists():
                sys.exit(f"{FAKE_HARNESS} is missing: cargo build --release -p agentstream-cli --bins")
            for agent, bytes_ in data:
                (Path(tmp) / f"{agent}.input.jsonl").write_bytes(bytes_)
                TRACES[agent] = str(Path(tmp) / agent)
            contenders += RUNS
        best = measure(data, args.repeat, contenders)

    results = {
        name: {
            "cpu_seconds": b["cpu"],
            "wall_seconds": b["wall"],
            "events": int(b["events"]),
            "events_per_s_cpu": b["events"] / b["cpu"],
            "mb_per_s_cpu": total / b["cpu"] / 1e6,
            "events_per_s_wall": b["events"] / b["wall"],
            "mb_per_s_wall": total / b["wall"] / 1e6,
        }
        for name, b in best.items()
    }

    def ratio(a: str, b: str, clock: str) -> float:
        return results[a][f"mb_per_s_{clock}"] / results[b][f"mb_per_s_{clock}"]

    ratios = {f"decoder/{clock}": ratio("agentstream", "pure python", clock) for clock in ("cpu", "wall")}
    if not args.no_runs:
        for clock in ("cpu", "wall"):
            ratios[f"run/{clock}"] = ratio("agentstream run", "pure python run", clock)
            ratios[f"run async/{clock}"] = ratio("agentstream run async", "pure python run", clock)
    if args.json:
        print(json.dumps({"bytes": total, "agents": [a for a, _ in data], "results": results, "ratios": ratios}))
        return 0
    print(f"mixed corpus: {total / 1e6:.1f} MB, {len(data)} agents, 64 KiB chunks, best of {args.repeat}, interleaved")
    print(f"{'':23}{'events':>9}{'events/s cpu':>14}{'MB/s cpu':>10}{'events/s wall':>15}{'MB/s wall':>11}")
    for name, r in results.items():
        print(f"{name:23}{r['events']:>9}{r['events_per_s_cpu']:>14,.0f}{r['mb_per_s_cpu']:>10.1f}"
              f"{r['events_per_s_wall']:>15,.0f}{r['mb_per_s_wall']:>11.1f}")
    if "harness alone" in results:
        print("(harness alone = the fake harness's output read and discarded: the ceiling of every run contender)")
    print("ratios of MB/s (target >= 2x):")
    for key, value in ratios.items():
        what, clock = key.split("/")
        label = {"decoder": "agentstream / pure python", "run": "agentstream run / pure python run",
                 "run async": "agentstream run async / pure python run"}[what]
        print(f"  {label:42} {value:5.2f}x ({clock})")
    share = max(0.0, 1 - results["rust only"]["cpu_seconds"] / results["agentstream"]["cpu_seconds"])
    print(f"(rust only = decoding without Python objects; dicts + callback take {share:.0%} of agentstream's CPU time;"
          " run CPU time counts the runner's threads, not the harness process)")
    if results["agentstream"]["events"] == 0:
        print("note: the agentstream decoders produced no events for this corpus")
    return 0


if __name__ == "__main__":
    sys.exit(main())
