#!/usr/bin/env bash
# Builds the .deb with CPack and installs it into a scratch root with dpkg (maintainer scripts
# run chrootless with DPKG_ROOT set), then checks files, the gpufault group and modes; then
# purges it. Usage: test_deb.sh BUILD_DIR. Needs root (dpkg, chown).
set -euo pipefail
build=$(cd "$1" && pwd)
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
         etc/gpufault/gpufaultd.conf usr/share/man/man1/gpufault.1 usr/share/man/man8/gpufaultd.8 \
         usr/share/man/man5/gpufaultd.conf.5 usr/lib/python3/dist-packages/gpufault_operands.py \
         usr/lib/gpufault/libgpufault-preload.so usr/share/doc/gpufault/README.md; do
  check "[ -f '$root/$f' ]" "$f missing"
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
check "'$root/usr/sbin/gpufaultd' --check-config --config '$root/etc/gpufault/gpufaultd.conf' >/dev/null" \
  "the shipped config is invalid"
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
[ $fail = 0 ] && echo "deb: installed, checked and purged in a scratch root"
exit $fail
