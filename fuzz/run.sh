#!/usr/bin/env bash
# Coverage-guided fuzzing of every agentstream fuzz target with cargo-fuzz (libFuzzer).
#
#   fuzz/run.sh [TARGET...]          every target (or those named) for RUNS executions each
#   RUNS=10000000 (default)          executions per target (libFuzzer -runs)
#   MAX_LEN=4096                     largest input (bytes)
#   SANITIZER=none                   none (fastest) or address (AddressSanitizer)
#   SMOKE=1                          SMOKE_SECONDS (default 5) per target instead, as CI runs it
#
# Needs a nightly toolchain and `cargo install cargo-fuzz`. The seed corpus is made from
# tests/golden (each input split into groups of three lines) and tests/secrets, in
# fuzz/corpus/<target>/ (kept between runs, so coverage accumulates); a finding is written to
# fuzz/artifacts/<target>/ and stops the script with the input to reproduce it:
#   cargo +nightly fuzz run --fuzz-dir fuzz -O <target> fuzz/artifacts/<target>/<file>
# Prints executions per target at the end (also in fuzz/results.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-10000000}
MAX_LEN=${MAX_LEN:-4096}
SANITIZER=${SANITIZER:-none}
LIMIT=(-runs="$RUNS")
if [ "${SMOKE:-}" = 1 ]; then LIMIT=(-max_total_time="${SMOKE_SECONDS:-5}"); fi
ALL=(framing decode_claude decode_codex decode_gemini decode_qwen decode_kimi decode_opencode decode_droid replay redaction pre_scan repair_scan)
TARGETS=("${@:-${ALL[@]}}")
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target/fuzz}

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz/run.sh needs a nightly toolchain and cargo-fuzz (cargo install cargo-fuzz)" >&2
  exit 2
fi

python3 - "$MAX_LEN" <<'PY'
import glob, hashlib, json, os, sys
max_len = int(sys.argv[1])
agents = ["claude", "codex", "gemini", "qwen", "kimi", "opencode", "droid"]

def put(target, data):
    d = os.path.join("fuzz", "corpus", target)
    os.makedirs(d, exist_ok=True)
    data = data[:max_len]
    with open(os.path.join(d, "seed-" + hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)

def groups(path):
    lines = open(path, "rb").read().split(b"\n")
    for i in range(len(lines)):
        g = b"\n".join(lines[i:i + 3])
        if g.strip():
            yield g + b"\n"

for i, agent in enumerate(agents):
    files = sorted(glob.glob(f"tests/golden/{agent}/*.input.jsonl")) + [f"tests/secrets/traces/{agent}.input.jsonl"]
    for path in files:
        for g in groups(path):
            put(f"decode_{agent}", g)
            put("replay", bytes([i]) + g)
            put("framing", g)
            put("repair_scan", g)
corpus = [l for l in open("tests/secrets/corpus.jsonl") if l.strip()]
for a in range(len(agents)):
    for e in range(len(corpus)):
        put("redaction", bytes([a, e]) + b"ls -la")
for line in corpus:
    put("pre_scan", line.encode())
for path in sorted(glob.glob("tests/golden/*/*.input.jsonl"))[:40]:
    for g in groups(path):
        put("pre_scan", g)
PY

cargo +nightly fuzz build --fuzz-dir fuzz -O -s "$SANITIZER" >/dev/null
: > fuzz/results.txt
for t in "${TARGETS[@]}"; do
  mkdir -p "fuzz/artifacts/$t"
  log=$(mktemp)
  echo "== $t: ${LIMIT[*]}"
  if ! cargo +nightly fuzz run --fuzz-dir fuzz -O -s "$SANITIZER" "$t" -- \
      "${LIMIT[@]}" -max_len="$MAX_LEN" -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$t/" \
      >"$log" 2>&1; then
    tail -40 "$log"
    echo "FINDING in $t: see fuzz/artifacts/$t/" >&2
    exit 1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  printf '%-16s %12s executions  %8s exec/s  %s\n' "$t" "$execs" "$rate" "$cov" | tee -a fuzz/results.txt
  rm -f "$log"
done
