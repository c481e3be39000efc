#!/usr/bin/env bash
# What the Node binding needs on a fresh Debian machine: Node.js >= 20.17 with npm (the engines
# of @napi-rs/cli 3), and the pinned npm dev dependencies (npm ci from package-lock.json).
# Cargo/rustc come with the machine. Idempotent, and fast when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

node_ok() {
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 &&
    node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 17) ? 0 : 1)'
}

if ! node_ok; then
  # Debian's own nodejs may be older than 20.17; try it, then say clearly what is missing.
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null || true
  node_ok || { echo "Node.js >= 20.17 with npm is required; found: $(node --version 2>&1 || true)" >&2; exit 1; }
fi
echo "node: $(node --version), npm $(npm --version)"

# npm ci only when the lock changed since the last install (same rule as mk/node.mk).
stamp=node_modules/.package-lock.json
if [ ! -e "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ package.json -nt "$stamp" ] || [ node/package.json -nt "$stamp" ]; then
  npm ci --no-audit --no-fund
  touch "$stamp"
else
  echo "node_modules: up to date"
fi
