#!/usr/bin/env bash
# Events/s delivered to a Kotlin listener, as a ratio to a C callback, side by side in one run,
# on the mixed corpus of ../shared/bench/make_corpus.py (every CLI's real captures, replayed and
# varied; split per CLI with mixed.segments.tsv so each line reaches its own decoder).
#
#   bash bindings/uniffi/bench/run.sh [MiB, default 8] [seconds per decode mode, default 3]
#   (or `make bench-kotlin`)
#
# Both sides get the same files:
#   decode: the C bench's `callback` (agentstream_decoder_feed, one C callback per event, 64 KiB
#           chunks) vs `kt-decode` (Decoder.feed, each typed OutputEvent to a Kotlin lambda);
#   run:    the C bench's `run-callback` (a real run of the fake harness, an on("content") C
#           callback) vs `kt-run` (the same run through Evolve.run with an onContent lambda).
# The C side is bindings/c/bench/bench.c (`make bench-c`), built here against the same release
# build of the core. Prints every line of both, then the ratios.
set -euo pipefail
cd "$(dirname "$0")/../../.."
REPO=$PWD
MIB=${1:-8}
SECONDS_PER_MODE=${2:-3}
SHARED=${AGENTSTREAM_SHARED:-$REPO/../shared}
[ -f "$SHARED/bench/make_corpus.py" ] || { echo "bench-kotlin: $SHARED/bench/make_corpus.py not found (set AGENTSTREAM_SHARED)" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/agentstream-bench-kotlin.XXXXXX")
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

cargo build -q --release -p agentstream-c -p agentstream-uniffi
cargo build -q --release -p agentstream-cli --bins
FAKE=$REPO/target/release/fake-harness

cc -std=c11 -O2 -Iinclude -Ibindings/c/tests bindings/c/bench/bench.c target/release/libagentstream.a \
  -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc -o "$WORK/bench-c"

KOTLIN=bindings/uniffi/kotlin
(cd $KOTLIN && mvn -q -B -Dstyle.color=never test-compile &&
  mvn -q -B -Dstyle.color=never org.apache.maven.plugins:maven-dependency-plugin:3.11.0:build-classpath \
    -Dmdep.outputFile="$WORK/classpath.txt" -Dmdep.includeScope=test)
CP="$KOTLIN/target/test-classes:$KOTLIN/target/classes:$(cat "$WORK/classpath.txt")"

echo "== C (bindings/c/bench/bench.c)"
"$WORK/bench-c" "$WORK/traces" "$SECONDS_PER_MODE" "$FAKE" 1 | tee "$WORK/c.txt"
echo "== Kotlin (uniffi, JNA)"
java -cp "$CP" dev.agentstream.kotlin.Bench "$WORK/traces" "$FAKE" "$SECONDS_PER_MODE" | tee "$WORK/kt.txt"

rate() { awk -v m="$1" '$1 == m {print $2; exit}' "$2"; }
c_dec=$(rate callback "$WORK/c.txt"); kt_dec=$(rate kt-decode "$WORK/kt.txt")
c_run=$(rate run-callback "$WORK/c.txt"); kt_run=$(rate kt-run "$WORK/kt.txt")
echo "== Kotlin listener / C callback (events/s, same corpus, same run)"
awk -v a="$kt_dec" -v b="$c_dec" 'BEGIN {printf "decode: %.2fx  (%.0f vs %.0f event/s)\n", a / b, a, b}'
awk -v a="$kt_run" -v b="$c_run" 'BEGIN {printf "run:    %.2fx  (%.0f vs %.0f event/s)\n", a / b, a, b}'
