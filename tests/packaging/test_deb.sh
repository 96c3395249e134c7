#!/usr/bin/env bash
# Builds the .deb with CPack and installs it into a scratch root with dpkg (maintainer scripts
# run chrootless with DPKG_ROOT set), then checks files, the gpufault group and modes; then
# purges it. Usage: test_deb.sh BUILD_DIR SOURCE_DIR. Needs root (dpkg, chown).
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root"; exit 77; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg" >"$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/pkg/gpufault_*.deb)
root="$work/root"
mkdir -p "$root"/var/lib/dpkg/{info,updates,triggers} "$root/etc"
touch "$root/var/lib/dpkg/status"
cp /etc/login.defs "$root/etc/"
printf 'root:x:0:\n' >"$root/etc/group"
printf 'root:*::\n' >"$root/etc/gshadow"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:*:19000:0:99999:7:::\n' >"$root/etc/shadow"
# --force-depends: the scratch root has no libc package; the dependencies are checked below.
dpkg --root="$root" --force-script-chrootless --force-depends --log=/dev/null -i "$deb" \
  >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; exit 1; }

fail=0
check() { if ! eval "$1"; then echo "FAIL: $2"; fail=1; fi; }
for f in usr/bin/gpufault usr/sbin/gpufaultd; do
  check "[ -x '$root/$f' ]" "$f missing or not executable"
done
for f in usr/lib/systemd/system/gpufaultd.service usr/lib/tmpfiles.d/gpufault.conf \
         etc/gpufault/gpufaultd.conf usr/lib/python3/dist-packages/gpufault_operands.py \
         usr/lib/gpufault/libgpufault-preload.so usr/share/doc/gpufault/README.md \
         usr/share/doc/gpufault/copyright usr/share/doc/gpufault/docs/reference/EVIDENCE.md \
         usr/share/doc/gpufault/docs/reference/FORMATS.md; do
  check "[ -f '$root/$f' ]" "$f missing"
done
# Man pages are gzipped with -9n (Debian policy 12.1): a gzip header without file name (FLG 0)
# and time stamp (MTIME 0), maximum compression (XFL 2), mode 0644, the page of packaging/man.
for page in man1/gpufault.1 man8/gpufaultd.8 man5/gpufaultd.conf.5; do
  f="$root/usr/share/man/$page.gz"
  check "[ -f '$f' ]" "usr/share/man/$page.gz missing"
  [ -f "$f" ] || continue
  check "[ ! -e '$root/usr/share/man/$page' ]" "usr/share/man/$page shipped uncompressed"
  check "[ \"\$(od -An -tx1 -N10 '$f' | tr -d ' \\n')\" = 1f8b0800000000000203 ]" \
    "usr/share/man/$page.gz header is $(od -An -tx1 -N10 "$f" | tr -d ' \n') (want gzip -9n: 1f8b0800000000000203)"
  check "[ \"\$(stat -c '%a' '$f')\" = 644 ]" "usr/share/man/$page.gz mode $(stat -c '%a' "$f")"
  check "zcat '$f' | cmp -s - '$src/packaging/man/${page#*/}'" "usr/share/man/$page.gz is not packaging/man/${page#*/}"
done
# The copyright file is machine-readable (DEP-5): its Format line, a Files: * paragraph with
# Copyright and License; mode 0644.
cr="$root/usr/share/doc/gpufault/copyright"
check "head -1 '$cr' | grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/'" \
  "copyright: no DEP-5 Format line"
check "grep -qx 'Files: \\*' '$cr' && grep -q '^Copyright: ' '$cr' && grep -q '^License: ' '$cr'" \
  "copyright: no Files: * paragraph with Copyright and License"
check "[ \"\$(stat -c '%a' '$cr')\" = 644 ]" "copyright mode $(stat -c '%a' "$cr")"
# Every examples/ file the shipped README names is shipped beside it (mode 0644), as in the
# repository, with the examples' own README.
examples=$(grep -o 'examples/[A-Za-z0-9_.-]*\.log' "$root/usr/share/doc/gpufault/README.md" | sort -u)
check "[ -n '$examples' ]" "the shipped README names no examples/ file"
for e in $examples examples/README.md; do
  check "[ -f '$root/usr/share/doc/gpufault/$e' ]" "README names $e, not shipped"
  check "cmp -s '$root/usr/share/doc/gpufault/$e' '$src/$e'" "shipped $e differs from the repository's"
  check "[ \"\$(stat -c '%a' '$root/usr/share/doc/gpufault/$e' 2>/dev/null)\" = 644 ]" "$e mode"
done
# Every docs/*.md the shipped README links is shipped beside it.
for d in $(grep -o 'docs/[a-z-]*\.md' "$root/usr/share/doc/gpufault/README.md" | sort -u); do
  check "[ -f '$root/usr/share/doc/gpufault/$d' ]" "README links $d, not shipped"
done
# Debian's python3 finds the operand helper without PYTHONPATH.
if [ -x /usr/bin/python3 ]; then
  check "/usr/bin/python3 -c 'import sys; sys.exit(\"/usr/lib/python3/dist-packages\" not in sys.path)'" \
    "/usr/lib/python3/dist-packages is not on python3's path"
fi
check "grep -q '^gpufault:x:[0-9]*:' '$root/etc/group'" "group gpufault not created"
gid=$(awk -F: '$1 == "gpufault" { print $3 }' "$root/etc/group")
check "[ \"\$(stat -c '%a %u %g' '$root/var/lib/gpufault')\" = '2750 0 $gid' ]" \
  "/var/lib/gpufault is $(stat -c '%a %u %g' "$root/var/lib/gpufault") (want 2750 0 $gid)"
check "[ \"\$(stat -c '%a' '$root/etc/gpufault/gpufaultd.conf')\" = 644 ]" "config mode"
check "grep -qx '/etc/gpufault/gpufaultd.conf' '$root/var/lib/dpkg/info/gpufault.conffiles'" \
  "config is not a conffile"
check "dpkg --root='$root' -s gpufault | grep -q '^Status: install ok installed'" "not installed"
# The unit starts the gpufaultd the package installed.
check "grep -qx 'ExecStart=/usr/sbin/gpufaultd --config /etc/gpufault/gpufaultd.conf' '$root/usr/lib/systemd/system/gpufaultd.service'" \
  "the unit's ExecStart= is not /usr/sbin/gpufaultd"
# The installed binaries run, and the installed default config is valid.
check "'$root/usr/sbin/gpufaultd' --version | grep -q '^gpufaultd '" "gpufaultd --version"
# A host without the gpufault group (postinst creates it; not run here) fails the check on
# control.group alone, which is then the only error allowed.
rc=0
out=$("$root/usr/sbin/gpufaultd" --check-config --config "$root/etc/gpufault/gpufaultd.conf" 2>&1) ||
  rc=$?
other=$(printf '%s\n' "$out" | grep -vc "control.group: group 'gpufault' does not exist" || true)
if getent group gpufault >/dev/null; then
  check "[ $rc = 0 ]" "the shipped config is invalid: $out"
else
  check "[ $rc = 2 ] && [ $other = 0 ]" \
    "the shipped config is invalid beyond the missing gpufault group: $out"
fi
# A store created in the state directory is 0640 root:gpufault (setgid directory, UMask=0027).
echo 'Memory access fault by GPU node-1 on address 0x1000. Reason: Unknown.' >"$work/one.log"
(umask 0027 && "$root/usr/bin/gpufault" --db "$root/var/lib/gpufault/gpufault.db" ingest -q "$work/one.log")
check "[ \"\$(stat -c '%a %u %g' '$root/var/lib/gpufault/gpufault.db')\" = '640 0 $gid' ]" \
  "store is $(stat -c '%a %u %g' "$root/var/lib/gpufault/gpufault.db") (want 640 0 $gid)"
check "dpkg-deb -f '$deb' Depends | grep -q 'libsqlite3-0'" "Depends lacks libsqlite3-0"
dpkg --root="$root" --force-script-chrootless --log=/dev/null --purge gpufault >"$work/dpkg.log" 2>&1 ||
  { cat "$work/dpkg.log"; exit 1; }
check "! grep -q '^gpufault:' '$root/etc/group'" "purge left the group"
check "[ ! -e '$root/var/lib/gpufault' ]" "purge left the store"
check "[ ! -e '$root/usr/sbin/gpufaultd' ]" "purge left gpufaultd"
check "[ ! -e '$root/usr/share/man/man1/gpufault.1.gz' ]" "purge left the man page"
[ $fail = 0 ] && echo "deb: installed, checked and purged in a scratch root"
exit $fail
