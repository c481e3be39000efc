#!/usr/bin/env bash
# Instruction counts (valgrind cachegrind) of the decode bench's corpus per agent: the decoder
# versus the serde_json validate-only floor, minus the fixed cost of building the corpus.
# Counts do not move with machine load, so they compare changes on a busy 2-core box; the
# wall-clock ratio (`cargo bench -p agentstream-core --bench decode`) is the one we report.
# usage: benches/decode_instructions.sh [AGENT ...]   (default: all seven)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p agentstream-core --example count_decode
bin=target/release/examples/count_decode
irefs() { valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1 \
  | sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' | tr -d ,; }
agents=("$@"); [ ${#agents[@]} -eq 0 ] && agents=(claude codex gemini qwen kimi opencode droid)
printf '%-9s %14s %14s %7s\n' agent decode_instr floor_instr ratio
for a in "${agents[@]}"; do
  none=$(irefs "$a" none); floor=$(irefs "$a" floor); decode=$(irefs "$a" decode)
  awk -v a="$a" -v n="$none" -v f="$floor" -v d="$decode" \
    'BEGIN { printf "%-9s %14d %14d %7.2f\n", a, d-n, f-n, (f-n)/(d-n) }'
done
