#!/usr/bin/env bash
# nats-server for `make test-nats` and `make bench-server` (the JetStream backend of `agentstream
# serve --nats` and `agentstream worker`): v2.15.3, built from its Go module — Debian's 2.9.10 is
# too old (no key-value buckets for async-nats, no per-key TTL). Built once and cached:
#   ${AGENTSTREAM_TOOLS:-target/tools}/nats-server-v2.15.3/nats-server
# with target/tools/bin/nats-server pointing at it (.ci/run puts target/tools/bin on PATH).
# Idempotent, and instant when the binary is there. Needs Go (>= 1.24) and the Go module proxy.
set -euo pipefail
cd "$(dirname "$0")/.."

version=v2.15.3
tools=${AGENTSTREAM_TOOLS:-$PWD/target/tools}
dir=$tools/nats-server-$version
bin=$dir/nats-server

if [ ! -x "$bin" ]; then
  go=$(command -v go || true)
  [ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
  if [ -z "$go" ]; then
    echo "install-nats: Go is needed to build nats-server $version (apt-get install golang-go, or /usr/local/go)" >&2
    exit 1
  fi
  echo "install-nats: building nats-server $version with $("$go" version)"
  mkdir -p "$dir.tmp"
  GOBIN="$dir.tmp" "$go" install "github.com/nats-io/nats-server/v2@$version"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
fi
mkdir -p "$tools/bin"
ln -sfn "$bin" "$tools/bin/nats-server"
echo "install-nats: $("$bin" --version) at $bin"
