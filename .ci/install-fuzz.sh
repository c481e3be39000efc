#!/usr/bin/env bash
# cargo-fuzz (from crates.io) for `make test-fuzz`'s coverage-guided smoke run, where a nightly
# toolchain is installed; without one the stable smoke run still runs.
set -euo pipefail
if cargo +nightly --version >/dev/null 2>&1; then
  cargo +nightly fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --version 0.13.2 --locked
else
  echo "install-fuzz: no nightly toolchain: make test-fuzz runs the stable smoke only"
fi
