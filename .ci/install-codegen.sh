#!/usr/bin/env bash
# What `make test-generated-compile` needs on a fresh Debian machine: Mono's C# compiler (mcs)
# and a JDK (javac 17 or newer: records, sealed interfaces), to compile the generated C# and Java
# declarations. Idempotent and quick when both are present.
set -euo pipefail

need=()
command -v mcs >/dev/null 2>&1 || need+=(mono-mcs mono-runtime)
javac_ok() {
  command -v javac >/dev/null 2>&1 &&
    [ "$(javac -version 2>&1 | sed -E 's/^javac ([0-9]+).*/\1/')" -ge 17 ] 2>/dev/null
}
javac_ok || need+=(default-jdk-headless)

if [ ${#need[@]} -gt 0 ]; then
  echo "install-codegen: apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
javac_ok || { echo "javac >= 17 is required; found: $(javac -version 2>&1 || true)" >&2; exit 1; }
echo "install-codegen: $(mcs --version); $(javac -version 2>&1)"
