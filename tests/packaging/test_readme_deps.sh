#!/usr/bin/env bash
# README.md names every Debian package scripts/install-deps.sh installs (the script is the list;
# the README must not lag behind it). Usage: test_readme_deps.sh SOURCE_DIR.
set -euo pipefail
src=$1
pkgs=$(sed -n '/^pkgs=(/,/^)/p' "$src/scripts/install-deps.sh" | sed -e '1d;$d' -e 's/#.*//')
[ -n "$pkgs" ] || { echo "FAIL: no package list in scripts/install-deps.sh"; exit 1; }
fail=0
for p in $pkgs; do
  grep -Eq -- "(^|[\` ])$p([\` ]|$)" "$src/README.md" || { echo "FAIL: README.md does not name $p"; fail=1; }
done
[ $fail = 0 ] && echo "README names all $(echo $pkgs | wc -w) packages of install-deps.sh"
exit $fail
