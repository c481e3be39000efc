#!/usr/bin/env bash
# Events/s delivered to a Java handler, as a ratio to a C callback, side by side in one run, on
# the mixed corpus of ../shared/bench/make_corpus.py (every CLI's real captures, replayed and
# varied; split per CLI with mixed.segments.tsv so each line reaches its own decoder).
#
#   bash bindings/java/bench/run.sh [MiB, default 8] [seconds per decode mode, default 3]
#   (or `make bench-java`)
#
# Both sides get the same files:
#   decode: the C bench's `callback` (agentstream_decoder_feed, one C callback per event, 64 KiB
#           chunks) vs `java-decode` (Decoder.feed, each typed OutputEvent to a Java lambda);
#   run:    the C bench's `run-callback` (a real run of the fake harness per agent, an
#           on("content") C callback) vs `java-run` (the same runs through Evolve.run with an
#           on("content") handler).
# The C side is bindings/c/bench/bench.c (`make bench-c`), built here against the same release
# build of the core. Prints every line of both, then the ratios.
set -euo pipefail
cd "$(dirname "$0")/../../.."
REPO=$PWD
MIB=${1:-8}
SECONDS_PER_MODE=${2:-3}
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

echo "== C (bindings/c/bench/bench.c)"
"$WORK/bench-c" "$WORK/traces" "$SECONDS_PER_MODE" "$FAKE" 1 | tee "$WORK/c.txt"
echo "== Java (java.lang.foreign)"
"$JAVA25_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "$JAVA_DIR/target/classes" \
  "$JAVA_DIR/bench/Bench.java" "$WORK/traces" "$FAKE" "$SECONDS_PER_MODE" | tee "$WORK/java.txt"

rate() { awk -v m="$1" '$1 == m {print $2; exit}' "$2"; }
c_dec=$(rate callback "$WORK/c.txt"); j_dec=$(rate java-decode "$WORK/java.txt")
c_run=$(rate run-callback "$WORK/c.txt"); j_run=$(rate java-run "$WORK/java.txt")
echo "== Java handler / C callback (events/s, same corpus, same run)"
awk -v a="$j_dec" -v b="$c_dec" 'BEGIN {printf "decode: %.2fx  (%.0f vs %.0f event/s)\n", a / b, a, b}'
awk -v a="$j_run" -v b="$c_run" 'BEGIN {printf "run:    %.2fx  (%.0f vs %.0f event/s)\n", a / b, a, b}'
