#!/usr/bin/env bash
# What `make test-server` needs on a fresh Debian machine beyond Rust and Node (install-node.sh):
# Debian's chromium for the browser test of the live run view, and that test's npm dependency
# (playwright-core, pinned in server/webtest/package-lock.json; it downloads no browser).
# Idempotent, and fast when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ]; then
  echo "install-server: apt-get install chromium"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
echo "install-server: $(/usr/bin/chromium --version 2>/dev/null || echo 'chromium: version unknown')"

# npm ci only when the lock changed since the last install (the rule of mk/server.mk).
webtest=server/webtest
stamp=$webtest/node_modules/.package-lock.json
if [ ! -e "$stamp" ] || [ $webtest/package-lock.json -nt "$stamp" ] || [ $webtest/package.json -nt "$stamp" ]; then
  (cd $webtest && npm ci --no-audit --no-fund)
  touch "$stamp"
else
  echo "install-server: $webtest/node_modules up to date"
fi
