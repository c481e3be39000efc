#!/usr/bin/env bash
# What `make test-c` and `make test-go` need on a fresh Debian machine: a C and C++ compiler
# (gcc/g++ with the ASan/UBSan runtimes), valgrind, git (header drift check) and Go with cgo.
# Idempotent and quick when everything is present.
set -euo pipefail

need=()
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)
command -v git >/dev/null 2>&1 || need+=(git)
command -v make >/dev/null 2>&1 || need+=(make)
# The sanitizer runtimes ship with gcc on Debian (libasan8/libubsan1 for gcc 12); check anyway.
if command -v gcc >/dev/null 2>&1; then
  [ -e "$(gcc -print-file-name=libasan.so)" ] || need+=(libasan8)
  [ -e "$(gcc -print-file-name=libubsan.so)" ] || need+=(libubsan1)
fi

# Go: use the machine's (the developers' and CI machines have a modern one in /usr/local/go);
# Debian's golang-go only as a fallback. The module says `go 1.21` and uses nothing newer.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null 2>&1 || need+=(golang-go)

if [ ${#need[@]} -gt 0 ]; then
  echo "install-c: apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

echo "install-c: $(gcc --version | head -1); $(valgrind --version); $(PATH="/usr/local/go/bin:$PATH" go version)"
