#!/usr/bin/env python3
"""`agentstream parse FILE >/dev/null` as a whole process, side by side with the validate-only floor.

The floor is the shared yardstick (``../shared/bench/floor``, mode ``b``: read in chunks, split lines
with ``memchr``, ``serde_json::from_slice::<IgnoredAny>`` per non-empty line), built from there
into ``target/bench-floor``; the corpora are ``../shared/bench/make_corpus.py`` output (64 MiB per
harness). For each harness, ``--pairs`` pairs are run, alternating which goes first: the parse
process's wall time (start to exit: reading, decoding, writing every event as JSON to /dev/null)
against the floor's own timing of one pass over the same file (which leaves out its process start
and its warm-up pass, so the comparison is, if anything, strict). The ratio reported is the
median over the pairs of floor time / parse time (1.0 = as fast as the floor).

    python3 ../shared/bench/make_corpus.py /tmp/agentstream-bench-corpus --size-mib 64
    python3 benches/parse_ratio.py [CORPUS_DIR] [--pairs 7] [--agents claude,codex]

Never a test: the machine is shared and noisy; these are numbers to report, not to assert.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_FLOOR = REPO.parent / "shared" / "bench" / "floor"
AGENTS = ["claude", "codex", "gemini", "qwen", "kimi", "opencode", "droid"]


def build() -> tuple[Path, Path]:
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "agentstream-cli"], cwd=REPO, check=True)
    if not (SHARED_FLOOR / "Cargo.toml").exists():
        sys.exit(f"the floor is not at {SHARED_FLOOR} (../shared/bench/floor): nothing to compare with")
    target = REPO / "target" / "bench-floor"
    subprocess.run(
        ["cargo", "build", "--release", "-q", "--no-default-features", "--manifest-path",
         str(SHARED_FLOOR / "Cargo.toml"), "--target-dir", str(target)],
        check=True,
    )
    return REPO / "target" / "release" / "agentstream", target / "release" / "agentstream-floor"


def parse_seconds(agentstream: Path, agent: str, corpus: Path) -> float:
    with open(os.devnull, "wb") as sink:
        start = time.perf_counter()
        subprocess.run([str(agentstream), "parse", "--agent", agent, str(corpus)], stdout=sink,
                       stderr=subprocess.DEVNULL, check=True)
        return time.perf_counter() - start


def floor_seconds(floor: Path, corpus: Path) -> float:
    out = subprocess.run([str(floor), str(corpus), "--runs", "1", "--modes", "b"], capture_output=True,
                         text=True, check=True).stdout
    row = next(line.split() for line in out.splitlines() if line.startswith("b "))
    # mode bytes lines ok best_MB/s …: one counted pass, timed inside the process.
    return int(row[1]) / 1e6 / float(row[4])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus_dir", nargs="?", default=os.path.join(tempfile.gettempdir(), "agentstream-bench-corpus"))
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--agents", default=",".join(AGENTS))
    args = ap.parse_args()
    corpus_dir = Path(args.corpus_dir)
    agentstream, floor = build()
    print(f"{'agent':<10} {'parse MB/s':>11} {'floor MB/s':>11} {'ratio':>7} {'p25-p75':>11}")
    for agent in args.agents.split(","):
        corpus = corpus_dir / f"{agent}.jsonl"
        if not corpus.exists():
            sys.exit(f"{corpus} is missing: build the corpora with ../shared/bench/make_corpus.py {corpus_dir}")
        size = corpus.stat().st_size
        ratios, parse_times, floor_times = [], [], []
        for i in range(args.pairs):
            if i % 2 == 0:
                p = parse_seconds(agentstream, agent, corpus)
                f = floor_seconds(floor, corpus)
            else:
                f = floor_seconds(floor, corpus)
                p = parse_seconds(agentstream, agent, corpus)
            parse_times.append(p)
            floor_times.append(f)
            ratios.append(f / p)
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
        print(f"{agent:<10} {size / 1e6 / min(parse_times):>11.0f} {size / 1e6 / min(floor_times):>11.0f} "
              f"{statistics.median(ratios):>7.2f} {q[0]:>5.2f}-{q[2]:.2f}")


if __name__ == "__main__":
    main()
