#!/usr/bin/env bash
# What the Python binding needs on a fresh Debian machine: a python3 (>= 3.11) with venv and pip,
# and a C compiler (`cc`: Rust links with it, and the extension's allocator, mimalloc, is C).
# Everything else (maturin, pytest, mypy) is installed from PyPI into .venv by mk/python.mk.
# Idempotent, and fast when everything is already there.
set -euo pipefail

have_python() {
  command -v python3 >/dev/null 2>&1 &&
    python3 -c 'import sys, venv, ensurepip; sys.exit(0 if sys.version_info >= (3, 11) else 1)' >/dev/null 2>&1
}

need=()
have_python || need+=(python3 python3-venv python3-pip)
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)

if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
have_python || { echo "python3 >= 3.11 with venv is required; found: $(python3 --version 2>&1)" >&2; exit 1; }
echo "python: $(python3 --version) with venv/ensurepip; cc: $(cc --version | head -1)"
