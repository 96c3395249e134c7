#!/usr/bin/env bash
# `cmake --install` into scratch roots (DESTDIR): the installed unit's ExecStart= names the
# gpufaultd this install put there, for prefix /usr (then the unit is the one shipped in
# packaging/, as in the .deb), the default /usr/local and another prefix; the installed daemon
# runs and accepts the installed config; a second install keeps an edited config. Usage:
# test_install.sh BUILD_DIR SOURCE_DIR.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
for prefix in /usr /usr/local /opt/gpufault; do
  root="$work/root${prefix//\//_}"
  DESTDIR="$root" cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; exit 1; }
  unit="$root$prefix/lib/systemd/system/gpufaultd.service"
  exec=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' "$unit")
  if [ "$exec" != "$prefix/sbin/gpufaultd" ]; then
    echo "FAIL: prefix $prefix: the unit says ExecStart=$exec"; fail=1; continue
  fi
  if ! [ -x "$root$exec" ] || ! [ -x "$root$prefix/bin/gpufault" ]; then
    echo "FAIL: prefix $prefix: $exec or $prefix/bin/gpufault not installed"; fail=1; continue
  fi
  # Without the gpufault group on this host (the package's postinst creates it), the check
  # fails on control.group alone, which is then the only error allowed.
  out=$("$root$exec" --check-config --config "$root/etc/gpufault/gpufaultd.conf" 2>&1) ||
    if getent group gpufault >/dev/null ||
      printf '%s\n' "$out" | grep -qv "control.group: group 'gpufault' does not exist"; then
      echo "FAIL: prefix $prefix: the installed gpufaultd refuses the installed config: $out"; fail=1
    fi
done
# A configuration edited after the first install is kept by the next one (as dpkg keeps a
# conffile); the shipped one is installed where none is.
cmp "$work/root_usr/etc/gpufault/gpufaultd.conf" "$src/packaging/gpufaultd.conf" ||
  { echo "FAIL: the first install did not put packaging/gpufaultd.conf in /etc/gpufault"; fail=1; }
echo "# edited by the administrator" >>"$work/root_usr/etc/gpufault/gpufaultd.conf"
DESTDIR="$work/root_usr" cmake --install "$build" --prefix /usr >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; exit 1; }
tail -n 1 "$work/root_usr/etc/gpufault/gpufaultd.conf" | grep -qx "# edited by the administrator" ||
  { echo "FAIL: a second cmake --install replaced the edited /etc/gpufault/gpufaultd.conf"; fail=1; }
cmp "$work/root_usr/usr/lib/systemd/system/gpufaultd.service" "$src/packaging/gpufaultd.service" ||
  { echo "FAIL: with prefix /usr the installed unit differs from packaging/gpufaultd.service"; fail=1; }
[ $fail = 0 ] && echo "install: the unit's ExecStart= is the installed gpufaultd for /usr, /usr/local, /opt/gpufault"
exit $fail
