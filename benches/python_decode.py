#!/usr/bin/env python3
"""Python throughput against the shared pure-Python reference, per harness corpus, side by side in
one run (docs/benchmarks.md).

    python benches/python_decode.py [--corpus DIR | --size-mib 16] [--clis claude,...,mixed]
                                    [--pairs 5] [--no-runs] [--json OUT]

The reference is ../shared/bench/py_baseline.py (imported from there, never copied): what a Python
user would write — ``json.loads`` per line, a small per-CLI mapping to ACP-style dicts, a callback
(its ``callback`` mode). The corpora are ../shared/bench/make_corpus.py's (one per CLI and
``mixed``, built into a temporary folder at --size-mib unless --corpus names a folder of them).
Both sides call the same callback (one lookup, one increment); agentstream hands it each event's
``update``.

In memory:
  reference    py_baseline.run_callback(corpus file): buffered line iteration + json.loads + mapping
  Decoder      the same file read in 64 KiB chunks, Decoder(cli).feed(chunk), every event to the
               callback (mixed: each segment of mixed.segments.tsv to a decoder of its CLI)
Real runs: the fake harness (target/release/fake-harness) prints the corpus on its stdout line by
line, as the CLI would, one process per run (mixed: one per CLI, in turn):
  reference    subprocess.Popen of the harness, 64 KiB read1 from the pipe, the reference's line
               handling and mapping, the callback
  run          Evolve.run_sync with an on("content") handler (the buffer's marks raised so no
               text delta is merged: every event reaches Python)
  run asyncio  the same through await evolve.run(...)

The machine is shared and noisy: each comparison runs as --pairs pairs, the order alternating
(reference first, then agentstream first, ...); each pair gives a ratio of MB/s (wall clock; CPU
time of this process, threads included, beside it), and the median ratio is reported with the
lowest and highest. The reference maps less than agentstream (no usage, titles, locations or
envelope fields), so events/s are not comparable: MB/s are.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import agentstream

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("AGENTSTREAM_SHARED", REPO.parent / "shared"))
FAKE = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release" / "fake-harness"
CHUNK = 64 * 1024
# Raised so that no text delta is merged: every event reaches Python, as on the reference's side.
NO_MERGE = agentstream.Limits(high_water=1_000_000_000, byte_budget=4_000_000_000, stall_ms=600_000)


def load_reference() -> Any:
    path = SHARED / "bench" / "py_baseline.py"
    if not path.exists():
        sys.exit(f"python_decode: {path} not found (set AGENTSTREAM_SHARED to the shared folder)")
    spec = importlib.util.spec_from_file_location("py_baseline", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = load_reference()


def counting_callback() -> Callable[[dict[str, Any]], None]:
    """The reference's callback: one lookup, one increment."""
    counts: dict[str, int] = {}

    def on_event(ev: dict[str, Any]) -> None:
        k = ev["sessionUpdate"]
        counts[k] = counts.get(k, 0) + 1

    return on_event


class Corpus:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.traces: dict[str, list[tuple[str, str]]] = {}

    def path(self, name: str) -> Path:
        return self.folder / f"{name}.jsonl"

    def segments(self) -> list[tuple[str, int, int]]:
        """(cli, first byte, bytes) of each replay in mixed.jsonl."""
        rows = []
        for line in (self.folder / "mixed.segments.tsv").read_text().splitlines():
            cli, _first, _count, offset, nbytes = line.split("\t")
            rows.append((cli, int(offset), int(nbytes)))
        return rows

    def traces_of(self, name: str, work: Path) -> list[tuple[str, str]]:
        """(cli, trace prefix the fake harness plays) per process of a run of this corpus."""
        if name in self.traces:
            return self.traces[name]
        folder = work / "traces" / name
        folder.mkdir(parents=True, exist_ok=True)
        out = []
        if name != "mixed":
            (folder / f"{name}.input.jsonl").symlink_to(self.path(name))
            out.append((name, str(folder / name)))
        else:
            data = self.path("mixed").read_bytes()
            parts: dict[str, list[bytes]] = {}
            for cli, first, n in self.segments():
                parts.setdefault(cli, []).append(data[first:first + n])
            for cli, chunks in parts.items():
                (folder / f"{cli}.input.jsonl").write_bytes(b"".join(chunks))
                out.append((cli, str(folder / cli)))
        self.traces[name] = out
        return out


# ---- in memory ----------------------------------------------------------------------------------


def reference_decode(corpus: Corpus, name: str, _work: Path) -> None:
    ref.run_callback(corpus.path(name), ref.routes_for(corpus.folder, name))


def agentstream_decode(corpus: Corpus, name: str, _work: Path) -> None:
    on_event = counting_callback()
    if name != "mixed":
        decoder = agentstream.Decoder(name)
        with open(corpus.path(name), "rb") as f:
            while chunk := f.read(CHUNK):
                for ev in decoder.feed(chunk):
                    on_event(ev["update"])
        for ev in decoder.finish():
            on_event(ev["update"])
        return
    decoders: dict[str, agentstream.Decoder] = {}
    segments = corpus.segments()
    s = 0
    offset = 0
    with open(corpus.path("mixed"), "rb") as f:
        while chunk := f.read(CHUNK):
            at = 0
            while at < len(chunk) and s < len(segments):
                cli, first, n = segments[s]
                end = min(len(chunk), first + n - offset)
                decoder = decoders.get(cli) or decoders.setdefault(cli, agentstream.Decoder(cli))
                for ev in decoder.feed(chunk[at:end]):
                    on_event(ev["update"])
                at = end
                if offset + at >= first + n:
                    s += 1
            offset += len(chunk)
    for decoder in decoders.values():
        for ev in decoder.finish():
            on_event(ev["update"])


# ---- real runs ----------------------------------------------------------------------------------


def reference_run(corpus: Corpus, name: str, work: Path) -> None:
    loads = json.loads
    for cli, prefix in corpus.traces_of(name, work):
        norm = ref.NORMALIZERS[cli]
        on_event = counting_callback()
        env = {**os.environ, "AGENTSTREAM_FAKE_TRACE": prefix}
        with subprocess.Popen([str(FAKE), "-p", "bench"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL, env=env) as proc:
            assert proc.stdout is not None
            pending = b""
            while chunk := proc.stdout.read1(CHUNK):
                lines = (pending + chunk).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if not line:
                        continue
                    try:
                        o = loads(line)
                    except ValueError:
                        continue
                    if type(o) is dict:
                        for ev in norm(o):
                            on_event(ev)


def evolve_for(cli: str, prefix: str) -> agentstream.Evolve:
    evolve = agentstream.Evolve(agentstream.AgentConfig(type=cli, bin=str(FAKE),
                                                        env={"AGENTSTREAM_FAKE_TRACE": prefix}))
    on_event = counting_callback()
    evolve.on("content", lambda ev: on_event(ev["update"]))
    return evolve


def check(result: agentstream.RunResult, cli: str) -> None:
    if result.handler_errors or result.pressure["coalesced"]:
        raise SystemExit(f"{cli}: {result.handler_errors} handler errors, {result.pressure['coalesced']} merged")


def agentstream_run(corpus: Corpus, name: str, work: Path) -> None:
    for cli, prefix in corpus.traces_of(name, work):
        check(evolve_for(cli, prefix).run_sync(prompt="bench", limits=NO_MERGE), cli)


def agentstream_run_async(corpus: Corpus, name: str, work: Path) -> None:
    async def main() -> None:
        for cli, prefix in corpus.traces_of(name, work):
            check(await evolve_for(cli, prefix).run(prompt="bench", limits=NO_MERGE), cli)

    asyncio.run(main())


# ---- measuring ----------------------------------------------------------------------------------

Contender = Callable[[Corpus, str, Path], None]


def timed(fn: Contender, corpus: Corpus, name: str, work: Path) -> tuple[float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    fn(corpus, name, work)
    return time.perf_counter() - w0, time.process_time() - c0


def compare(pairs: int, reference: Contender, ours: Contender, corpus: Corpus, name: str,
            work: Path) -> list[dict[str, float]]:
    out = []
    for p in range(pairs):
        if p % 2 == 0:
            r = timed(reference, corpus, name, work)
            o = timed(ours, corpus, name, work)
        else:
            o = timed(ours, corpus, name, work)
            r = timed(reference, corpus, name, work)
        out.append({"reference_wall": r[0], "reference_cpu": r[1], "agentstream_wall": o[0],
                    "agentstream_cpu": o[1], "wall": r[0] / o[0], "cpu": r[1] / o[1]})
    return out


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=None, help="a folder of make_corpus.py corpora (default: build them)")
    ap.add_argument("--size-mib", type=float, default=16, help="corpus size when building them (default 16)")
    ap.add_argument("--clis", default="claude,codex,gemini,qwen,kimi,opencode,droid,mixed")
    ap.add_argument("--pairs", type=int, default=5, help="alternating pairs per comparison (default 5)")
    ap.add_argument("--no-runs", action="store_true", help="only the in-memory Decoder (no fake harness)")
    ap.add_argument("--json", default=None, help="also write every pair's figures to this JSON file")
    args = ap.parse_args()
    if not args.no_runs and not FAKE.exists():
        sys.exit(f"{FAKE} is missing: cargo build --release -p agentstream-cli --bins (or --no-runs)")

    with tempfile.TemporaryDirectory(prefix="agentstream-py-bench-") as tmp:
        work = Path(tmp)
        if args.corpus:
            folder = Path(args.corpus)
        else:
            folder = work / "corpus"
            subprocess.run([sys.executable, str(SHARED / "bench" / "make_corpus.py"), str(folder), "--size-mib",
                            str(args.size_mib)], check=True, stdout=subprocess.DEVNULL)
        corpus = Corpus(folder)
        kinds: list[tuple[str, Contender, Contender]] = [("Decoder", reference_decode, agentstream_decode)]
        if not args.no_runs:
            kinds += [("run", reference_run, agentstream_run), ("run asyncio", reference_run, agentstream_run_async)]
        load0 = loadavg()
        rows = []
        results: dict[str, Any] = {}
        for name in args.clis.split(","):
            size = corpus.path(name).stat().st_size
            for kind, reference, ours in kinds:
                pairs = compare(args.pairs, reference, ours, corpus, name, work)
                results[f"{name}/{kind}"] = {"bytes": size, "pairs": pairs}
                walls = [p["wall"] for p in pairs]
                mbs = {side: size / 1e6 / statistics.median(p[f"{side}_wall"] for p in pairs)
                       for side in ("reference", "agentstream")}
                rows.append((name, kind, mbs["reference"], mbs["agentstream"], statistics.median(walls), min(walls),
                             max(walls), statistics.median(p["cpu"] for p in pairs)))
                print(f"  {name} {kind}: {rows[-1][4]:.2f}x", file=sys.stderr, flush=True)

    where = args.corpus or f"make_corpus.py --size-mib {args.size_mib:g}"
    print(f"python {sys.version.split()[0]}; corpus {where}; median of {args.pairs} alternating pairs; "
          f"load average {load0} before, {loadavg()} after")
    print(f"{'corpus':<9} {'mode':<12} {'ref MB/s':>9} {'ours MB/s':>10} {'ratio':>6} {'(min..max)':>13} {'cpu ratio':>9}")
    for name, kind, r, o, ratio, lo, hi, cpu in rows:
        print(f"{name:<9} {kind:<12} {r:>9.1f} {o:>10.1f} {ratio:>5.2f}x {f'({lo:.2f}..{hi:.2f})':>13} {cpu:>8.2f}x")
    print("ratio: reference time / agentstream time (wall clock; > 1 = agentstream faster); target: >= 3x")
    if args.json:
        Path(args.json).write_text(json.dumps({"python": sys.version, "load": [load0, loadavg()],
                                               "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
