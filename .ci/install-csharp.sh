#!/usr/bin/env bash
# What `make test-csharp` needs on a fresh Debian machine: Mono's C# compiler and runtime (mcs,
# mono; C# 7, no .NET SDK) and binutils' strip (dist-csharp strips the library it ships).
# Idempotent and quick when everything is present.
set -euo pipefail

need=()
command -v mcs >/dev/null 2>&1 || need+=(mono-mcs)
command -v mono >/dev/null 2>&1 || need+=(mono-runtime)
command -v strip >/dev/null 2>&1 || need+=(binutils)

if [ ${#need[@]} -gt 0 ]; then
  echo "install-csharp: apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
echo "install-csharp: $(mcs --version); $(mono --version | head -1)"
