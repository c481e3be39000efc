#!/usr/bin/env bash
# What `make dist` and `make test-install` need on a fresh Debian machine beyond the bindings'
# own installs (install-python.sh, install-node.sh, install-c.sh): pkg-config (the C and Go
# quick starts link through it), binutils (objdump and strip: glibc floor, soname, the static
# library's debug info) and tar. zig and auditwheel come from PyPI into .venv (mk/release.mk).
# Idempotent and quick when everything is present.
set -euo pipefail

need=()
command -v pkg-config >/dev/null 2>&1 || need+=(pkgconf)
command -v objdump >/dev/null 2>&1 || need+=(binutils)
command -v strip >/dev/null 2>&1 || need+=(binutils)
command -v tar >/dev/null 2>&1 || need+=(tar)

if [ ${#need[@]} -gt 0 ]; then
  echo "install-dist: apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
echo "install-dist: $(pkg-config --version 2>&1 | head -1) (pkg-config); $(objdump --version | head -1)"
