#!/usr/bin/env bash
# What `make test-kotlin` needs on a fresh Debian machine: a JDK (17 or newer) and Maven. Maven
# fetches everything else from Maven Central into ~/.m2 on first use (kotlin-maven-plugin,
# the Kotlin standard library, JNA, kotlinx-coroutines, kotlinx-serialization-json, JUnit 5,
# Surefire); the Kotlin compiler comes with the plugin, so no kotlinc is installed.
# Idempotent, and quick when both are present.
set -euo pipefail

java_ok() {
  command -v javac >/dev/null 2>&1 &&
    [ "$(javac -version 2>&1 | sed -E 's/^javac ([0-9]+).*/\1/')" -ge 17 ] 2>/dev/null
}

need=()
java_ok || need+=(default-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)

if [ ${#need[@]} -gt 0 ]; then
  echo "install-kotlin: apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
java_ok || { echo "a JDK >= 17 is required; found: $(javac -version 2>&1 || true)" >&2; exit 1; }
echo "install-kotlin: $(javac -version 2>&1); $(mvn -v 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g')"
