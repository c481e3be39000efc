#!/usr/bin/env bash
# make bench-csharp: events/s to a C# handler vs the C callback on the mixed corpus, in one
# process (see Bench.cs). Usage: run.sh <target/csharp> <target/release> [size MiB, default 16]
set -euo pipefail
out=$1
lib=$2
size=${3:-${BENCH_SIZE_MIB:-16}}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
make_corpus=$repo/../shared/bench/make_corpus.py
if [ ! -f "$make_corpus" ]; then
  echo "bench-csharp: $make_corpus not found (the shared bench folder is needed for the mixed corpus)" >&2
  exit 1
fi
corpus=$out/bench-corpus
if [ ! -f "$corpus/mixed.jsonl" ] || [ "$(cat "$corpus/size" 2>/dev/null)" != "$size" ]; then
  python3 "$make_corpus" "$corpus" --size-mib "$size" >/dev/null
  echo "$size" > "$corpus/size"
fi
cc -O2 -shared -fPIC -o "$out/libagentstream_bench_sink.so" "$here/csink.c"
mcs -langversion:7 -nologo -optimize+ -r:"$out/Agentstream.dll" -r:System.Core.dll -out:"$out/Bench.exe" "$here/Bench.cs"
cd "$out"
LD_LIBRARY_PATH="$lib:$out" mono Bench.exe "$corpus" "$lib/fake-harness" "${BENCH_ROUNDS:-5}"
