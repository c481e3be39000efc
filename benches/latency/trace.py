#!/usr/bin/env python3
"""Catch one long latency stall of a language's handler under a scheduler trace, and say where the
time went.

    python3 benches/latency/trace.py [--lang c] [--rate 20000] [--seconds 3] [--warmup 0.5]
                                     [--stall-ms 20] [--tries 20] [--keep DIR]

Runs the language's latency program (the same ones as benches/latency/run.py) under
``perf record -a -k CLOCK_MONOTONIC`` with the scheduler's ``sched_waking`` and ``sched_switch``
events, try after try, until a line reaches the handler ``--stall-ms`` or more after the emitter
wrote it (the first ``--warmup`` seconds of lines not counted, as in run.py). The emitter records
when it wrote each line (``AGENTSTREAM_LATENCY_STAMPS``) and perf reads the same clock, so the
stall's window is known exactly. For that window it prints:

* every thread that waited 1 ms or more between being woken (``sched_waking``, on the waker's
  CPU) and running (``sched_switch`` onto a CPU) — a woken reader whose CPU does not take it is
  what a host that leaves an idle virtual CPU halted looks like;
* per CPU, what ran for 0.5 ms or more and how long the CPU was idle.

``--keep DIR`` leaves the trace (``perf.data``; ``perf script -i DIR/perf.data``) and the samples
there. Needs ``perf`` and permission to trace the whole machine (root, or
``kernel.perf_event_paranoid`` ≤ -1). The programs must be built: ``make bench-latency-build``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench  # noqa: E402  (benches/latency/run.py: the languages and their programs)

EVENTS = ["sched:sched_waking", "sched:sched_switch"]
EVENT = re.compile(r"^\s*(?P<comm>.+?)\s+(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<time>[\d.]+):\s+(?P<event>[\w:]+):\s*(?P<rest>.*)$")
SWITCH = re.compile(r"prev_comm=(?P<pc>.*?) prev_pid=(?P<pp>\d+) .*?prev_state=(?P<ps>\S+) ==> "
                    r"next_comm=(?P<nc>.*?) next_pid=(?P<np>\d+)")
WAKING = re.compile(r"comm=(?P<c>.*?) pid=(?P<p>\d+) .*?target_cpu=(?P<t>\d+)")


@dataclass
class Stall:
    line: int
    written_ns: int
    handled_ns: int

    @property
    def ms(self) -> float:
        return (self.handled_ns - self.written_ns) / 1e6


def worst_line(out: Path, stamps: Path, first_line: int) -> Stall | None:
    """The line from `first_line` on that waited longest, from the handler's "<line> <latency>"
    rows and the emitter's "<line> <written ns>" rows."""
    written = {}
    for row in stamps.read_text().split("\n"):
        if row:
            line_text, ns_text = row.split()
            written[int(line_text)] = int(ns_text)
    worst: Stall | None = None
    for row in out.read_text().split("\n"):
        if not row:
            continue
        line, latency = (int(x) for x in row.split())
        if line >= first_line and line in written and (worst is None or latency > worst.handled_ns - worst.written_ns):
            worst = Stall(line, written[line], written[line] + latency)
    return worst


def explain(perf_data: Path, stall: Stall) -> None:
    start, end = stall.written_ns / 1e9 - 0.0002, stall.handled_ns / 1e9 + 0.0002
    script = subprocess.run(["perf", "script", "-i", str(perf_data), "-F", "comm,tid,cpu,time,event,trace",
                             "--time", f"{start:.6f},{end:.6f}"], capture_output=True, text=True, check=True)

    def ms(t: float) -> float:
        """Milliseconds from the line's write."""
        return (t - stall.written_ns / 1e9) * 1e3

    woken: dict[int, tuple[float, str, int]] = {}  # tid -> (when, comm, waker's cpu)
    late_wakes: list[str] = []
    running: dict[int, tuple[float, str]] = {}  # cpu -> (since, "comm/tid")
    spans: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
    for row in script.stdout.split("\n"):
        m = EVENT.match(row)
        if not m:
            continue
        t, cpu, event, rest = float(m["time"]), int(m["cpu"]), m["event"], m["rest"]
        if event == "sched:sched_waking" and (w := WAKING.search(rest)):
            woken.setdefault(int(w["p"]), (t, w["c"], cpu))
        elif event == "sched:sched_switch" and (s := SWITCH.search(rest)):
            prev = f"{s['pc']}/{s['pp']}" if s["pp"] != "0" else "idle"
            since, _ = running.get(cpu, (start, prev))
            spans[cpu].append((since, t, prev))
            nxt = int(s["np"])
            running[cpu] = (t, f"{s['nc']}/{nxt}" if nxt else "idle")
            if nxt in woken:
                when, comm, waker_cpu = woken.pop(nxt)
                if t - when >= 0.001:
                    late_wakes.append(f"  {comm}/{nxt}: woken at {ms(when):+.3f} ms (from cpu {waker_cpu}), "
                                      f"ran at {ms(t):+.3f} ms on cpu {cpu}: waited {(t - when) * 1e3:.3f} ms")
    for cpu, (since, who) in running.items():
        spans[cpu].append((since, end, who))
    for tid, (when, comm, waker_cpu) in woken.items():
        if end - when >= 0.001:
            late_wakes.append(f"  {comm}/{tid}: woken at {ms(when):+.3f} ms (from cpu {waker_cpu}), "
                              "had not run when the line was handled")
    print("wake-ups that waited 1 ms or more to run:")
    print("\n".join(late_wakes) if late_wakes else "  none")
    print("per CPU (ms from the line's write): what ran 0.5 ms or more, and idle time")
    for cpu in sorted(spans):
        idle = sum(b - a for a, b, who in spans[cpu] if who == "idle") * 1e3
        long_ones = [f"{who} {ms(a):+.1f}..{ms(b):+.1f}" for a, b, who in spans[cpu]
                     if b - a >= 0.0005 and who != "idle"]
        longest_idle = max((b - a for a, b, who in spans[cpu] if who == "idle"), default=0.0) * 1e3
        print(f"  cpu {cpu}: idle {idle:.1f} ms in all (longest {longest_idle:.1f} ms); "
              + (", ".join(long_ones) if long_ones else "nothing ran 0.5 ms or more"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lang", default="c", help="a language of benches/latency/run.py (default c)")
    ap.add_argument("--rate", type=int, default=20000, help="lines per second (default 20000)")
    ap.add_argument("--seconds", type=float, default=3.0, help="seconds per try (default 3)")
    ap.add_argument("--warmup", type=float, default=0.5, help="seconds of lines not counted at the start (0.5)")
    ap.add_argument("--stall-ms", type=float, default=20.0, help="the latency to catch (default 20 ms)")
    ap.add_argument("--tries", type=int, default=20, help="runs before giving up (default 20)")
    ap.add_argument("--keep", default=None, help="a folder to leave the trace and the samples in")
    args = ap.parse_args()

    if shutil.which("perf") is None:
        sys.exit("perf is not installed (Debian: apt-get install linux-perf)")
    langs = {lang.name: lang for lang in bench.languages()}
    if args.lang not in langs:
        sys.exit(f"unknown language {args.lang}; known: {', '.join(langs)}")
    lang = langs[args.lang]
    emitter = bench.OUT / "emitter"
    if not emitter.exists():
        sys.exit(f"{emitter} is missing: make bench-latency-build")
    missing = lang.missing()
    if missing:
        sys.exit(f"{lang.name}: {', '.join(missing)} missing: {lang.build}")

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="agentstream-trace-"))
    work.mkdir(parents=True, exist_ok=True)
    out, stamps, perf_data = work / "samples.txt", work / "stamps.txt", work / "perf.data"
    env = lang.environment(args.rate, int((args.seconds + args.warmup) * args.rate), STAMPS=str(stamps))
    try:
        for attempt in range(1, args.tries + 1):
            record = ["perf", "record", "-q", "-a", "-k", "CLOCK_MONOTONIC", "-o", str(perf_data)]
            for event in EVENTS:
                record += ["-e", event]
            proc = subprocess.run([*record, "--", *lang.argv, str(emitter), str(out)], env=env, cwd=bench.REPO,
                                  capture_output=True, text=True, timeout=120 + 2 * args.seconds)
            if proc.returncode != 0 or not out.exists() or not stamps.exists():
                sys.exit(f"try {attempt}: the run or perf failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
            stall = worst_line(out, stamps, int(args.warmup * args.rate))
            if stall is None:
                sys.exit(f"try {attempt}: the handler recorded no line")
            print(f"try {attempt}: worst line {stall.line}, {stall.ms:.3f} ms", flush=True)
            if stall.ms >= args.stall_ms:
                print(f"\n{lang.name} at {args.rate} lines/s: line {stall.line} reached the handler "
                      f"{stall.ms:.3f} ms after it was written (CLOCK_MONOTONIC {stall.written_ns / 1e9:.6f} s)")
                explain(perf_data, stall)
                if args.keep:
                    print(f"\nthe trace: perf script -i {perf_data}")
                return 0
        print(f"no stall of {args.stall_ms:g} ms or more in {args.tries} tries")
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
