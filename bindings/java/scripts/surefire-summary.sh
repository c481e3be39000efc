#!/usr/bin/env bash
# Prints one closing line for a Surefire run from its XML reports:
#   <label>: N passed, N failed, N skipped
# Usage: surefire-summary.sh <surefire-reports dir> <label>
set -euo pipefail
dir=$1
label=$2
tests=0 failures=0 errors=0 skipped=0
shopt -s nullglob
for f in "$dir"/TEST-*.xml; do
  line=$(grep -m1 -o '<testsuite [^>]*>' "$f")
  attr() { sed -n "s/.* $1=\"\\([0-9]*\\)\".*/\\1/p" <<<"$line"; }
  tests=$((tests + $(attr tests)))
  failures=$((failures + $(attr failures)))
  errors=$((errors + $(attr errors)))
  skipped=$((skipped + $(attr skipped)))
done
failed=$((failures + errors))
echo "$label: $((tests - failed - skipped)) passed, $failed failed, $skipped skipped"
