#!/usr/bin/env bash
# Runs the README's Java quick start (examples/QuickStart.java) the way a new user would: in an
# empty folder holding only the jar and the program, with the JDK's source launcher and no Maven,
# no repository paths on the class path and no library path. The agent is the fake harness
# (replaying a golden claude trace), given through the program's AGENTSTREAM_BIN variable.
# Usage: quickstart-test.sh <agentstream jar> <fake-harness> <tests/golden>
set -euo pipefail
jar=$(realpath "$1")
harness=$(realpath "$2")
golden=$(realpath "$3")
here=$(cd "$(dirname "$0")/.." && pwd)
java=${JAVA:-java}

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp "$jar" "$dir/agentstream.jar"
cp "$here/examples/QuickStart.java" "$dir/"
cp "$golden/claude/s2-bash.input.jsonl" "$dir/recorded.jsonl"

# The README shows the program and the command; keep them in sync with what runs here.
readme=$here/../../README.md
if ! grep -qF 'java --enable-native-access=ALL-UNNAMED -cp agentstream.jar QuickStart.java' "$readme"; then
  echo "README.md no longer shows the quick start command this test runs" >&2
  exit 1
fi

cd "$dir"
# A temp folder of its own, to see that the library extracted from the jar is not left behind.
mkdir tmp
out=$(env -u AGENTSTREAM_LIBRARY AGENTSTREAM_BIN="$harness" AGENTSTREAM_FAKE_TRACE="$golden/claude/s2-bash" \
  "$java" --enable-native-access=ALL-UNNAMED -Djava.io.tmpdir="$dir/tmp" -cp agentstream.jar QuickStart.java "List the files" 2>&1)
for want in "hook run.started" "content tool_call" "hook run.completed" "completed: " "session 66c0abf3-0bc5-46a7-8e73-4fef192280ea" \
            "hook run.resumed" "decoded 8 events from recorded.jsonl"; do
  grep -qF "$want" <<<"$out" || {
    echo "$out" | sed 's/^/  quickstart| /' >&2
    echo "java quick start: the output lacks \"$want\"" >&2
    exit 1
  }
done
left=$(ls -A tmp)
if [ -n "$left" ]; then
  echo "java quick start: the JVM left in its temp folder: $left" >&2
  exit 1
fi
echo "java quick start: ran from a fresh folder with only the jar, and left no temp files"
