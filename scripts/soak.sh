#!/usr/bin/env bash
# Soak: 64 concurrent runs of the fake harness for 10 minutes in one process, under one shared
# byte budget (64 MiB divided among them) — zero lost events, flat memory (see
# cli/examples/soak.rs for what each run checks and how flatness is judged).
#
#   scripts/soak.sh [--runs 64] [--minutes 10 | --seconds S] [--budget-mib 64]
#                   [--flood-deltas 20000] [--sample-seconds N]
#
# Prints a resident-set sample every N s (default: a twelfth of the duration, at most 10 s)
# and the totals; exits 1 when an event was lost or memory grew by more than 32 MiB between
# the quarter after the warm-up and the last quarter.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p agentstream-cli --bins --examples
export AGENTSTREAM_FAKE_HARNESS=${AGENTSTREAM_FAKE_HARNESS:-$PWD/target/release/fake-harness}
exec target/release/examples/soak "$@"
