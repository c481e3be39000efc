#!/usr/bin/env bash
# The README's C# quick start, run the way a user runs it: a fresh temporary folder holding only
# the artifact (Agentstream.dll with libagentstream.so beside it, as `make dist-csharp` ships it),
# Program.cs copied from the README (between the csharp-quickstart markers), compiled with mcs and
# run with mono, with no cargo, rustc or build tree on PATH or LD_LIBRARY_PATH. The fake harness
# stands in for claude (CLAUDE_BIN), replaying a recorded trace.
#   quickstart-test.sh <dist dir> <fake-harness> <tests/golden>
set -euo pipefail
dist=$(cd "$1" && pwd)
fake=$2
golden=$(cd "$3" && pwd)
readme=$(cd "$(dirname "$0")/../.." && pwd)/README.md

dir=$(mktemp -d "${TMPDIR:-/tmp}/agentstream-csharp-quickstart.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cp "$dist/Agentstream.dll" "$dist/libagentstream.so" "$dir/"
awk '/<!-- csharp-quickstart: begin -->/{on=1; next} /<!-- csharp-quickstart: end -->/{on=0} on' "$readme" |
  sed '1{/^```/d}; ${/^```/d}' > "$dir/Program.cs"
grep -q "static int Main" "$dir/Program.cs" || { echo "quickstart: no C# program between the markers in $readme" >&2; exit 1; }
cp "$golden/claude/s2-bash.input.jsonl" "$dir/recorded.jsonl"

cd "$dir"
clean_env=(env -i "PATH=/usr/bin:/bin" "HOME=$dir" "LANG=C.UTF-8")
"${clean_env[@]}" bash -c '! command -v cargo && ! command -v rustc' >/dev/null
"${clean_env[@]}" mcs -nologo -r:Agentstream.dll Program.cs

"${clean_env[@]}" mono Program.exe parse recorded.jsonl > parse.out
grep -q '^tool_call {"sessionId":"66c0abf3' parse.out || { cat parse.out; echo "quickstart: parse printed no tool call" >&2; exit 1; }
[ "$(wc -l < parse.out)" -eq "$(grep -c . "$golden/claude/s2-bash.expected.jsonl")" ] || { echo "quickstart: parse printed $(wc -l < parse.out) events" >&2; exit 1; }

"${clean_env[@]}" CLAUDE_BIN="$fake" AGENTSTREAM_FAKE_TRACE="$golden/claude/s2-bash" mono Program.exe "List the files" > run.out
for want in "lifecycle SandboxReady" "hook      run.started" "Completed: The directory contains" \
            "Completed in session 66c0abf3-0bc5-46a7-8e73-4fef192280ea" "stream    0 Lifecycle" "stream    " ; do
  grep -qF "$want" run.out || { cat run.out; echo "quickstart: no \"$want\" in the run's output" >&2; exit 1; }
done
grep -q "run.completed" run.out || { cat run.out; echo "quickstart: no run.completed hook" >&2; exit 1; }
echo "C# quick start: compiled and ran from a fresh folder ($(wc -l < run.out) lines of output)"
