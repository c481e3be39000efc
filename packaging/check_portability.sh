#!/usr/bin/env bash
# make check-portability: the crates build for Windows and macOS where rustup has a target for
# them (adding one needs rustup's own download, so nothing is installed here). Per platform
# family, the first installed target of the list is checked with `cargo clippy -D warnings`:
# the decode-only core (no runner), then the runner, the CLI, the C ABI, the server, the uniffi
# crate, the Python binding and the Node binding. Unix-only code (process groups, signals) is behind cfg(unix);
# on these platforms starting a run fails with the core's `unsupported` error.
#
# C code the crates compile (mimalloc) is compiled with zig for the target, through maturin's
# `zig cc` wrapper (ZIG_MATURIN: the venv's maturin with the ziglang package beside it). The
# Node binding is not checked for windows-gnu: napi-build links against node.dll there, which
# only a Windows Node installation has.
set -euo pipefail

cargo=${CARGO:-cargo}
maturin=${ZIG_MATURIN:?ZIG_MATURIN is not set (make check-portability sets it)}
tools=${ZIG_WRAPPERS:?ZIG_WRAPPERS is not set (make check-portability sets it)}
families=(
  "windows: x86_64-pc-windows-gnu x86_64-pc-windows-msvc aarch64-pc-windows-msvc"
  "macos: aarch64-apple-darwin x86_64-apple-darwin"
)
installed=$(rustup target list --installed 2>/dev/null || true)

# zig's name for a target whose C code it can compile (empty: none).
zig_target() {
  case $1 in
    x86_64-pc-windows-gnu) echo x86_64-windows-gnu ;;
    aarch64-apple-darwin) echo aarch64-macos ;;
    x86_64-apple-darwin) echo x86_64-macos ;;
    *) echo "" ;;
  esac
}

checked=()
for family in "${families[@]}"; do
  name=${family%%:*}
  target=""
  for candidate in ${family#*:}; do
    if grep -qx "$candidate" <<<"$installed"; then
      target=$candidate
      break
    fi
  done
  if [ -z "$target" ]; then
    echo "check-portability: no $name target installed (${family#*: }): not checked"
    continue
  fi
  packages=(-p agentstream-core --features agentstream-core/runner -p agentstream-cli -p agentstream-c -p agentstream-server -p agentstream-uniffi)
  env_cc=()
  zig=$(zig_target "$target")
  if [ -n "$zig" ]; then
    mkdir -p "$tools"
    wrapper=$tools/zigcc-$zig
    printf '#!/bin/sh\nPATH="%s:$PATH" exec "%s" zig cc -- -target %s "$@"\n' "$(dirname "$maturin")" "$maturin" "$zig" >"$wrapper"
    chmod +x "$wrapper"
    env_cc=("CC_${target//-/_}=$wrapper")
    packages+=(-p agentstream-python)
  fi
  [[ $target == *-windows-gnu ]] || packages+=(-p agentstream-node)
  echo "== $target: decode-only core"
  env "${env_cc[@]}" "$cargo" clippy -q -p agentstream-core --target "$target" -- -D warnings
  echo "== $target: ${packages[*]}"
  env "${env_cc[@]}" "$cargo" clippy -q "${packages[@]}" --target "$target" -- -D warnings
  checked+=("$target")
done
echo "check-portability: ${#checked[@]} target(s) checked${checked:+: ${checked[*]}}"
