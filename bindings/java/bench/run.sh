#!/usr/bin/env bash
# Events/s delivered to a Java handler, as a ratio to a C callback, side by side in one run, on
# the mixed corpus of ../shared/bench/make_corpus.py (every CLI's real captures, replayed and
# varied; split per CLI with mixed.segments.tsv so each line reaches its own decoder).
#
#   bash bindings/java/bench/run.sh [MiB, default 8] [seconds per decode mode, default 2] [pairs, default 3]
#   (or `make bench-java`)
#
# Both sides get the same files:
#   decode: the C bench's `callback` (agentstream_decoder_feed, one C callback per event, 64 KiB
#           chunks) vs `java-decode` (Decoder.feed, each typed OutputEvent to a Java lambda);
#   run:    the C bench's `run-callback` (a real run of the fake harness per agent, an
#           on("content") C callback) vs `java-run` (the same runs through Evolve.run with an
#           on("content") handler).
# The C side is bindings/c/bench/bench.c (`make bench-c`), built here against the same release
# build of the core. The machine is shared and noisy, so the two sides run as several pairs, the
# order alternating (C first, then Java first, …); each pair gives a ratio, and the median ratio
# is reported with every pair's.
set -euo pipefail
cd "$(dirname "$0")/../../.."
REPO=$PWD
MIB=${1:-8}
SECONDS_PER_MODE=${2:-2}
PAIRS=${3:-3}
SHARED=${AGENTSTREAM_SHARED:-$REPO/../shared}
JAVA25_HOME=${JAVA25_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
[ -f "$SHARED/bench/make_corpus.py" ] || { echo "bench-java: $SHARED/bench/make_corpus.py not found (set AGENTSTREAM_SHARED)" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/agentstream-bench-java.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
python3 "$SHARED/bench/make_corpus.py" "$WORK/corpus" --size-mib "$MIB" >/dev/null
python3 - "$WORK/corpus" "$WORK/traces" <<'PY'
import sys
from pathlib import Path
corpus, out = Path(sys.argv[1]), Path(sys.argv[2])
lines = (corpus / "mixed.jsonl").read_bytes().splitlines(keepends=True)
per_cli = {}
for row in (corpus / "mixed.segments.tsv").read_text().splitlines():
    cli, first, count = row.split("\t")[:3]
    if not first.isdigit():
        continue  # the header
    per_cli.setdefault(cli, []).extend(lines[int(first):int(first) + int(count)])
for cli, part in per_cli.items():
    (out / cli).mkdir(parents=True, exist_ok=True)
    (out / cli / "s-mixed.input.jsonl").write_bytes(b"".join(part))
print(f"corpus: {sum(len(p) for p in per_cli.values())} lines of {len(per_cli)} CLIs", file=sys.stderr)
PY

cargo build -q --release -p agentstream-c
cargo build -q --release -p agentstream-cli --bins
FAKE=$REPO/target/release/fake-harness

cc -std=c11 -O2 -Iinclude -Ibindings/c/tests bindings/c/bench/bench.c target/release/libagentstream.a \
  -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc -o "$WORK/bench-c"

JAVA_DIR=bindings/java
(cd $JAVA_DIR && JAVA_HOME=$JAVA25_HOME MAVEN_OPTS="--sun-misc-unsafe-memory-access=allow" mvn -q -B -Dstyle.color=never compile 2>&1 |
  sed 's/\x1b\[[0-9;]*m//g')

run_c() {
  echo "== C (bindings/c/bench/bench.c), pair $1"
  "$WORK/bench-c" "$WORK/traces" "$SECONDS_PER_MODE" "$FAKE" 1 | tee "$WORK/c$1.txt"
}
run_java() {
  echo "== Java (java.lang.foreign), pair $1"
  "$JAVA25_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "$JAVA_DIR/target/classes" \
    "$JAVA_DIR/bench/Bench.java" "$WORK/traces" "$FAKE" "$SECONDS_PER_MODE" | tee "$WORK/java$1.txt"
}
rate() { awk -v m="$1" '$1 == m {print $2; exit}' "$2"; }
: >"$WORK/decode.txt"
: >"$WORK/run.txt"
for pair in $(seq 1 "$PAIRS"); do
  if [ $((pair % 2)) = 1 ]; then run_c "$pair"; run_java "$pair"; else run_java "$pair"; run_c "$pair"; fi
  awk -v a="$(rate java-decode "$WORK/java$pair.txt")" -v b="$(rate callback "$WORK/c$pair.txt")" \
    'BEGIN {printf "%.3f %.0f %.0f\n", a / b, a, b}' >>"$WORK/decode.txt"
  awk -v a="$(rate java-run "$WORK/java$pair.txt")" -v b="$(rate run-callback "$WORK/c$pair.txt")" \
    'BEGIN {printf "%.3f %.0f %.0f\n", a / b, a, b}' >>"$WORK/run.txt"
done

report() { # name file
  sort -n "$2" | awk -v name="$1" '{r[NR] = $1; line[NR] = sprintf("%.2fx (%.0f vs %.0f event/s)", $1, $2, $3)}
    END {m = int((NR + 1) / 2); printf "%s: median %.2fx of %d pairs; each: ", name, r[m], NR;
         for (i = 1; i <= NR; i++) printf "%s%s", line[i], (i < NR ? ", " : "\n")}'
}
echo "== Java handler / C callback (events/s, same corpus, same run)"
report decode "$WORK/decode.txt"
report run "$WORK/run.txt"
