#!/usr/bin/env bash
# Developer check: runs the parsers (no store) over every real fixture and prints PASS/FAIL.
# usage: scripts/check-fixtures.sh [BUILD_DIR] [CASE_PREFIX...]
set -u
build=${1:-build}; shift || true
dir=$(dirname "$0")/../tests/data/real
pass=0; fail=0; failed=()
for exp in "$dir"/*.expected.jsonl; do
  case_name=$(basename "$exp" .expected.jsonl)
  if (($#)); then m=0; for p in "$@"; do [[ $case_name == $p* ]] && m=1; done; ((m)) || continue; fi
  if "$build/tests/gpufault_parse" "$dir/$case_name.txt" --check "$exp" >/dev/null 2>/tmp/check.$$; then
    pass=$((pass+1))
  else
    fail=$((fail+1)); failed+=("$case_name"); (($#)) && cat /tmp/check.$$
  fi
done
rm -f /tmp/check.$$
((${#failed[@]})) && printf "FAIL %s\n" "${failed[@]}"
echo "$pass passed, $fail failed"
