#!/usr/bin/env bash
# Print "<label>: N passed, N failed, N skipped" from Surefire's XML reports (Maven runs with -q,
# which hides Surefire's own summary). Fails when no test ran or any failed.
set -euo pipefail
dir=$1 label=$2
shopt -s nullglob
reports=("$dir"/TEST-*.xml)
[ ${#reports[@]} -gt 0 ] || { echo "$label: no Surefire reports in $dir: no test ran" >&2; exit 1; }
attr() { sed -E "s/.* $1=\"([0-9]+)\".*/\\1/"; }
read -r tests failed skipped < <(
  for f in "${reports[@]}"; do
    suite=$(grep -o '<testsuite [^>]*>' "$f" | head -1)
    echo "$(attr tests <<<"$suite") $(attr failures <<<"$suite") $(attr errors <<<"$suite") $(attr skipped <<<"$suite")"
  done | awk '{t += $1; f += $2 + $3; s += $4} END {print t, f, s}'
)
echo "$label: $((tests - failed - skipped)) passed, $failed failed, $skipped skipped"
[ "$tests" -gt 0 ] && [ "$failed" -eq 0 ]
