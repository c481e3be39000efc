#!/usr/bin/env bash
# Miri (and the standard library's sources it builds) for `make test-miri`, where a nightly
# toolchain is installed; without one, or when this nightly has no miri, the target says so and
# skips.
set -euo pipefail
if cargo +nightly --version >/dev/null 2>&1; then
  cargo +nightly miri --version >/dev/null 2>&1 \
    || rustup +nightly component add miri rust-src \
    || echo "install-miri: this nightly toolchain has no miri component: make test-miri is skipped"
else
  echo "install-miri: no nightly toolchain: make test-miri is skipped"
fi
