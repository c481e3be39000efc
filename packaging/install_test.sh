#!/usr/bin/env bash
# The install test (`make test-install`, after `make dist`): install every artifact of dist/ the
# way a user does, in a fresh temporary folder, with no cargo or rustc on PATH, and run the
# README's quick starts exactly as written (packaging/quickstarts.py extracts them).
#
# Each language's quick start runs in its own empty folder holding only the artifacts a user
# downloads. `claude` on PATH is the fake harness (it stands in for the agent's CLI, not for our
# package) replaying tests/golden/claude/s2-bash. Then the contributors' C and Go path:
# `make install PREFIX=<tmp>` (no cargo either), the C quick start compiled against that prefix
# through pkg-config, shared and static, and the Go quick start with a `replace` to the clone.
#
# Environment: VERSION (the workspace's), AGENTSTREAM_FAKE_HARNESS (the fake harness binary), GO
# (the go command; default: go on PATH). The Go steps read the module from dist/go/proxy
# (GOPROXY=file://…) into a temporary module cache. Ends with "N passed, N failed".
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dist=$repo/dist
version=${VERSION:?VERSION is not set (make test-install sets it)}
fake=${AGENTSTREAM_FAKE_HARNESS:?AGENTSTREAM_FAKE_HARNESS is not set (make test-install sets it)}
go_cmd=$(command -v "${GO:-go}" || true)
trace=$repo/tests/golden/claude/s2-bash
[ -x "$fake" ] || { echo "install test: no fake harness at $fake" >&2; exit 1; }
[ -e "$trace.input.jsonl" ] || { echo "install test: no trace $trace.input.jsonl" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/agentstream-install.XXXXXX")
cleanup() {
  chmod -R u+w "$tmp" 2>/dev/null || true # the Go module cache is read-only
  rm -rf "$tmp"
}
trap cleanup EXIT

# A PATH without cargo and rustc: every PATH entry that holds either is left out; the tools the
# quick starts use must still be found (linked into $tmp/bin from where they are when a left-out
# entry held them too), and `claude` is the stand-in harness.
mkdir -p "$tmp/bin"
ln -s "$fake" "$tmp/bin/claude"
user_path=$tmp/bin
IFS=: read -ra entries <<<"$PATH"
for entry in "${entries[@]}"; do
  [ -n "$entry" ] || continue
  if [ -e "$entry/cargo" ] || [ -e "$entry/rustc" ] || [ -e "$entry/rustup" ]; then continue; fi
  user_path=$user_path:$entry
done
for tool in python3 node npm cc pkg-config tar make; do
  PATH=$user_path command -v "$tool" >/dev/null && continue
  real=$(command -v "$tool") || { echo "install test: $tool is not installed" >&2; exit 1; }
  ln -s "$real" "$tmp/bin/$tool"
done
if [ -n "$go_cmd" ] && ! PATH=$user_path command -v go >/dev/null; then ln -s "$go_cmd" "$tmp/bin/go"; fi
if PATH=$user_path command -v cargo >/dev/null || PATH=$user_path command -v rustc >/dev/null; then
  echo "install test: cannot take cargo/rustc off PATH" >&2
  exit 1
fi
# Nothing of a Rust toolchain's environment either.
for name in $(compgen -e); do
  case $name in CARGO* | RUSTUP* | RUSTC* | RUSTFLAGS | RUSTDOC*) unset "$name" ;; esac
done

export AGENTSTREAM_FAKE_TRACE=$trace
# Go: the module from dist/ (the published module's stand-in), a module cache and a build cache
# of its own (a fresh user's: Go's build cache does not notice when pkg-config's answer changed,
# so a shared one would link a previous run's prefix), no toolchain download.
export GOPROXY=file://$dist/go/proxy GOSUMDB=off GOFLAGS=-modcacherw GOTOOLCHAIN=local
export GOPATH=$tmp/gopath GOCACHE=$tmp/gocache

python3 "$repo/packaging/quickstarts.py" "$repo/README.md" "$tmp/quickstarts" >/dev/null

passed=0
failed=0
# expect_output NAME FILE: the lines every quick start prints for the recorded trace and the run.
expect_output() {
  local name=$1 out=$2 missing=()
  local line
  for line in "event tool_call" "event tool_call_update" "hook run.started" "hook tool.started" \
    "hook tool.completed" "hook run.completed" "state: completed" \
    "answer: The directory contains three files: README.md, hello.py and notes.txt."; do
    grep -qxF -- "$line" "$out" || missing+=("$line")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  echo "FAIL $name: the output lacks: ${missing[*]}" >&2
  return 1
}

# run_check NAME DIR COMMAND...: run COMMAND in DIR with the user's PATH; pass when it exits 0
# (and, with EXPECT=quickstart, prints the quick start's expected lines).
run_check() {
  local name=$1 dir=$2
  shift 2
  local out=$tmp/$name.out
  echo "== $name"
  if (cd "$dir" && PATH=$user_path "$@") >"$out" 2>&1 && { [ "${EXPECT:-}" != quickstart ] || expect_output "$name" "$out"; }; then
    echo "ok   $name"
    passed=$((passed + 1))
  else
    echo "FAIL $name; its output:" >&2
    sed 's/^/    /' "$out" >&2
    failed=$((failed + 1))
  fi
}

# run_step NAME DIR COMMAND...: a quick start's run (run_check, and its expected lines).
run_step() {
  EXPECT=quickstart run_check "$@"
}

# The artifacts each quick start starts from (what a user downloads).
copy_artifacts() {
  local lang=$1 dir=$tmp/quickstarts/$1
  case $lang in
    python) cp "$dist"/python/agentstream-"$version"-*.whl "$dir/" ;;
    node) cp "$dist"/node/agentstream-*"$version".tgz "$dir/" ;;
    c | go) cp "$dist"/c/agentstream-c-"$version"-*.tar.gz "$dir/" ;;
    *) echo "install test: no artifacts known for the $lang quick start" >&2; return 1 ;;
  esac
}

for dir in "$tmp"/quickstarts/*/; do
  lang=$(basename "$dir")
  if [ "$lang" = go ] && [ -z "$go_cmd" ]; then
    echo "FAIL go: no go command" >&2
    failed=$((failed + 1))
    continue
  fi
  copy_artifacts "$lang"
  run_step "quickstart-$lang" "$dir" bash -euo pipefail run.sh
done

# The installed wheel and npm packages supervise their runs with the program they ship (kept
# executable by pip and npm), not with a fork of the interpreter: the harness reads its
# parent's command line.
run_check installed-python-supervisor "$tmp/quickstarts/python" \
  .venv/bin/python "$repo/packaging/check_python_supervisor.py"
run_check installed-node-supervisor "$tmp/quickstarts/node" node "$repo/packaging/check_node_supervisor.cjs"

# Contributors: `make install` into a prefix, with the same PATH (no cargo), then the C quick
# start against it (shared with an rpath, and static) and the Go one through a replace.
prefix=$tmp/prefix
echo "== make install PREFIX=$prefix"
if PATH=$user_path make --no-print-directory -C "$repo" install PREFIX="$prefix" >"$tmp/install.out" 2>&1; then
  echo "ok   make install"
  passed=$((passed + 1))
else
  echo "FAIL make install; its output:" >&2
  sed 's/^/    /' "$tmp/install.out" >&2
  failed=$((failed + 1))
fi
run_check installed-docs "$prefix" bash -euo pipefail -c 'test -s share/doc/agentstream/LICENSE && test -s share/doc/agentstream/CHANGELOG.md'
mkdir -p "$tmp/installed-c" "$tmp/installed-go"
cp "$tmp/quickstarts/c/quickstart.c" "$tmp/installed-c/"
cp "$tmp/quickstarts/go/main.go" "$tmp/installed-go/"
cp "$trace.input.jsonl" "$tmp/installed-c/run.jsonl"
cp "$trace.input.jsonl" "$tmp/installed-go/run.jsonl"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
run_step installed-c-shared "$tmp/installed-c" bash -euo pipefail -c \
  'cc -std=c11 -Wall quickstart.c $(pkg-config --cflags --libs agentstream) -Wl,-rpath,"$(pkg-config --variable=libdir agentstream)" -o quickstart && ./quickstart run.jsonl'
run_step installed-c-static "$tmp/installed-c" bash -euo pipefail -c \
  'cc -std=c11 -Wall quickstart.c $(pkg-config --cflags --libs agentstream-static) -o quickstart-static && ! ldd quickstart-static | grep -q libagentstream && ./quickstart-static run.jsonl'
if [ -n "$go_cmd" ]; then
  module=$(sed -n 's/^module //p' "$repo/bindings/go/go.mod")
  run_step installed-go-replace "$tmp/installed-go" bash -euo pipefail -c \
    "go mod init example.com/fromclone >/dev/null 2>&1 && go mod edit -require=$module@v$version -replace=$module=$repo/bindings/go && go mod tidy >/dev/null 2>&1 && go run -tags agentstream_static . run.jsonl"
fi

echo "install test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
