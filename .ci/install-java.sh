#!/usr/bin/env bash
# What `make test-java` needs on a fresh Debian machine: a JDK 22 or newer for java.lang.foreign
# (this machine kind ships Temurin 25 at /usr/lib/jvm/temurin-25-jdk-amd64 beside the default
# Java 17; Debian has no JDK that new to install) and Maven, which fetches the pinned plugins and
# JUnit from Maven Central into ~/.m2 on first use, then works offline. Idempotent, and quick when
# both are present.
set -euo pipefail

jdk=${JAVA25_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
if [ ! -x "$jdk/bin/javac" ]; then
  echo "install-java: no JDK at $jdk: make test-java needs JDK 22+ (java.lang.foreign); set JAVA25_HOME to one" >&2
  exit 1
fi
version=$("$jdk/bin/javac" -version 2>&1 | sed -E 's/^javac ([0-9]+).*/\1/')
if ! [ "$version" -ge 22 ] 2>/dev/null; then
  echo "install-java: $jdk is javac $version; java.lang.foreign needs 22 or newer" >&2
  exit 1
fi

if ! command -v mvn >/dev/null 2>&1; then
  echo "install-java: apt-get install maven"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends maven >/dev/null
fi
echo "install-java: $("$jdk/bin/javac" -version 2>&1) at $jdk; $(mvn -v 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g')"
