#!/usr/bin/env python3
"""Latency from the harness writing a line to the user's handler, in every language, in one run.

The harness is ``emitter`` (benches/latency/emitter.c), given to each binding as the ``bin`` of a
``claude`` agent: it prints one stream-json assistant message per line at a steady rate, each
carrying the CLOCK_MONOTONIC time (ns) read just before the line's write(2). In each language a
small program (``latency.*`` here; Kotlin's is ``LatencyBench.kt`` in the Kotlin project's test
sources) starts one run with an ``on("content")`` handler, exactly as a user of that language
writes it; the handler reads CLOCK_MONOTONIC first and records ``now - stamp`` for the stamps in
the event's text. Same machine, same clock, same run of this script for every language.

For each rate, every language runs ``--rounds`` times, the order rotating between rounds so that
a noisy neighbour hits every language alike. The first ``--warmup`` seconds of lines of each run
are not counted (process start, JIT, the first page faults: they are counted as lines, not as
latency). Per language and rate the table gives the median over rounds of each run's p50, p99
and max (and the worst p99 of any round). Every run must complete, deliver every line exactly
once (``lost`` counts lines that never reached the handler, ``dup`` lines that did twice) and
give no negative latency (which would mean two different clocks).

    python3 benches/latency/run.py [--rates 1000,20000] [--seconds 3] [--rounds 3]
                                   [--langs rust,c,...] [--json OUT]

``make bench-latency`` builds every program first, then runs this script. A language whose
program is not built is skipped (with what to build), unless ``--langs`` names it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
RELEASE = TARGET / "release"
OUT = TARGET / "latency"
JAVA25_HOME = Path(os.environ.get("JAVA25_HOME", "/usr/lib/jvm/temurin-25-jdk-amd64"))
KOTLIN = REPO / "bindings" / "uniffi" / "kotlin"


@dataclass
class Lang:
    name: str
    argv: list[str]
    needs: list[Path]
    build: str
    env: dict[str, str] = field(default_factory=dict)

    def missing(self) -> list[str]:
        """What this language's program needs and is not built."""
        return [str(p) for p in self.needs if not p.exists()]

    def environment(self, rate: int, lines: int, **emitter: str) -> dict[str, str]:
        """The environment of one run: the emitter's pace and line count, and `emitter`'s
        further AGENTSTREAM_LATENCY_* settings (REPORT=path, STAMPS=path)."""
        return {**os.environ, **self.env, "AGENTSTREAM_LATENCY_RATE": str(rate),
                "AGENTSTREAM_LATENCY_LINES": str(lines),
                **{f"AGENTSTREAM_LATENCY_{key}": value for key, value in emitter.items()}}


def languages() -> list[Lang]:
    python = REPO / ".venv" / "bin" / "python"
    kotlin_cp = OUT / "kotlin.classpath"
    kotlin_classpath = ":".join(
        [str(KOTLIN / "target" / "test-classes"), str(KOTLIN / "target" / "classes")]
        + ([kotlin_cp.read_text().strip()] if kotlin_cp.exists() else [])
    )
    return [
        Lang("pipe (floor)", [str(OUT / "latency-c"), "--pipe"], [OUT / "latency-c"], "make bench-latency-build"),
        Lang("rust", [str(RELEASE / "examples" / "latency")], [RELEASE / "examples" / "latency"],
             "cargo build --release -p agentstream-core --features runner --example latency"),
        Lang("c", [str(OUT / "latency-c")], [OUT / "latency-c"], "make bench-latency-build"),
        Lang("go", [str(OUT / "latency-go")], [OUT / "latency-go"], "make bench-latency-build"),
        Lang("python", [str(python), str(REPO / "benches" / "latency" / "latency.py")], [python],
             "make python-develop"),
        Lang("python-asyncio", [str(python), str(REPO / "benches" / "latency" / "latency.py"), "--async"], [python],
             "make python-develop"),
        Lang("node", ["node", str(REPO / "benches" / "latency" / "latency.mjs")],
             [REPO / "node" / "dist"], "make build-node"),
        Lang("java", [str(JAVA25_HOME / "bin" / "java"), "--enable-native-access=ALL-UNNAMED", "-cp",
                      f"{REPO / 'bindings' / 'java' / 'target' / 'classes'}:{OUT / 'java'}", "Latency"],
             [OUT / "java" / "Latency.class"], "make bench-latency-build",
             {"AGENTSTREAM_LIBRARY": str(RELEASE / "libagentstream.so")}),
        Lang("csharp", ["mono", str(OUT / "Latency.exe")], [OUT / "Latency.exe"], "make bench-latency-build",
             {"LD_LIBRARY_PATH": str(RELEASE)}),
        Lang("kotlin", ["java", "-cp", kotlin_classpath, "dev.agentstream.kotlin.LatencyBench"],
             [KOTLIN / "target" / "test-classes" / "dev" / "agentstream" / "kotlin" / "LatencyBench.class", kotlin_cp],
             "make bench-latency-build"),
    ]


@dataclass
class Round:
    p50: float
    p99: float
    max: float
    counted: int
    lost: int
    dup: int
    late: int


def percentile(sorted_values: list[int], q: float) -> float:
    """Nearest-rank percentile (q in 0..1) of an ascending list."""
    if not sorted_values:
        return float("nan")
    rank = max(1, math.ceil(q * len(sorted_values) - 1e-9))  # 1e-9: 0.99 * 3000 is 2970.0000000000005
    return float(sorted_values[min(rank, len(sorted_values)) - 1])


def run_once(lang: Lang, emitter: Path, rate: int, lines: int, warmup_lines: int, work: Path) -> Round:
    out = work / f"{lang.name}-{rate}.txt"
    report = work / f"{lang.name}-{rate}.emitter"
    for f in (out, report):
        f.unlink(missing_ok=True)
    env = lang.environment(rate, lines, REPORT=str(report))
    proc = subprocess.run([*lang.argv, str(emitter), str(out)], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=120 + 2 * lines / rate)
    state = proc.stdout.strip().rsplit("state ", 1)[-1] if "state " in proc.stdout else "?"
    if proc.returncode != 0 or state.lower() != "completed":
        raise SystemExit(f"{lang.name} at {rate} lines/s: exit {proc.returncode}, run state {state!r}\n"
                         f"{proc.stdout}{proc.stderr}")
    seen = [0] * lines
    latencies: list[int] = []
    for row in out.read_text().splitlines():
        line_text, latency_text = row.split()
        line, latency = int(line_text), int(latency_text)
        if latency < 0:
            raise SystemExit(f"{lang.name}: line {line} reached the handler {-latency} ns BEFORE it was written: "
                             "the handler reads another clock than CLOCK_MONOTONIC")
        seen[line] += 1
        if line >= warmup_lines:
            latencies.append(latency)
    latencies.sort()
    late = int(report.read_text().split()[1]) if report.exists() else -1
    return Round(p50=percentile(latencies, 0.50), p99=percentile(latencies, 0.99),
                 max=float(latencies[-1]) if latencies else float("nan"), counted=len(latencies),
                 lost=seen.count(0), dup=sum(n - 1 for n in seen if n > 1), late=late)


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="1000,20000", help="lines per second, comma-separated (default 1000,20000)")
    ap.add_argument("--seconds", type=float, default=3.0, help="measured seconds per run (default 3)")
    ap.add_argument("--warmup", type=float, default=0.5, help="seconds of lines not counted at a run's start (0.5)")
    ap.add_argument("--rounds", type=int, default=3, help="runs per language and rate, interleaved (default 3)")
    ap.add_argument("--langs", default=None, help="only these languages (comma-separated); default: every built one")
    ap.add_argument("--json", default=None, help="also write every round's figures to this JSON file")
    args = ap.parse_args()

    emitter = OUT / "emitter"
    if not emitter.exists():
        sys.exit(f"{emitter} is missing: make bench-latency-build (or make bench-latency)")
    every = languages()
    if args.langs:
        wanted = args.langs.split(",")
        unknown = sorted(set(wanted) - {lang.name for lang in every})
        if unknown:
            sys.exit(f"unknown language(s) {', '.join(unknown)}; known: {', '.join(lang.name for lang in every)}")
        langs = [lang for lang in every if lang.name in wanted]
        for lang in langs:
            missing = lang.missing()
            if missing:
                sys.exit(f"{lang.name}: {', '.join(missing)} missing: {lang.build}")
    else:
        langs = []
        for lang in every:
            missing = lang.missing()
            if missing:
                print(f"skipping {lang.name}: {missing[0]} is missing ({lang.build})", file=sys.stderr)
            else:
                langs.append(lang)
    if shutil.which("node") is None:
        langs = [lang for lang in langs if lang.name != "node"]
    rates = [int(r) for r in args.rates.split(",")]

    load_before = loadavg()
    started = time.monotonic()
    results: dict[tuple[str, int], list[Round]] = {}
    with tempfile.TemporaryDirectory(prefix="agentstream-latency-") as tmp:
        for rate in rates:
            lines = int((args.seconds + args.warmup) * rate)
            warmup_lines = int(args.warmup * rate)
            for r in range(args.rounds):
                order = langs[r % len(langs):] + langs[: r % len(langs)]
                for lang in order:
                    print(f"  round {r + 1}/{args.rounds}, {rate} lines/s: {lang.name}", file=sys.stderr, flush=True)
                    results.setdefault((lang.name, rate), []).append(
                        run_once(lang, emitter, rate, lines, warmup_lines, Path(tmp)))
    elapsed = time.monotonic() - started

    print(f"latency: harness write -> user's handler, CLOCK_MONOTONIC; {args.seconds:g} s per run after "
          f"{args.warmup:g} s of warm-up lines; median of {args.rounds} rounds (interleaved); "
          f"{os.cpu_count()} CPUs, load average {load_before} before, {loadavg()} after ({elapsed:.0f} s)")
    print(f"{'language':<15}{'lines/s':>8}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'worst p99':>11}"
          f"{'lines':>8}{'lost':>6}{'dup':>5}{'late':>6}")
    failed = False
    for rate in rates:
        for lang in langs:
            rounds = results[(lang.name, rate)]
            med = lambda k: statistics.median(getattr(x, k) for x in rounds) / 1e6  # noqa: E731
            lost = sum(x.lost for x in rounds)
            dup = sum(x.dup for x in rounds)
            failed |= lost > 0 or dup > 0
            print(f"{lang.name:<15}{rate:>8}{med('p50'):>9.3f}{med('p99'):>9.3f}{med('max'):>9.3f}"
                  f"{max(x.p99 for x in rounds) / 1e6:>11.3f}{sum(x.counted for x in rounds):>8}{lost:>6}{dup:>5}"
                  f"{sum(max(x.late, 0) for x in rounds):>6}")
    print("late: lines the emitter wrote more than one period behind its schedule (a busy machine); "
          "lost/dup over every round, warm-up lines included")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"load_before": load_before, "load_after": loadavg(), "seconds": args.seconds, "warmup": args.warmup,
             "rounds": {f"{name}@{rate}": [vars(x) for x in rs] for (name, rate), rs in results.items()}},
            indent=1) + "\n")
    if failed:
        print("FAILED: a line was lost or delivered twice", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
