#!/usr/bin/env bash
# The .deb under a real systemd (issue "gpufaultd", Done when): systemd booted as PID 1 in new
# namespaces over an overlay of this machine's / (tmpfs upper layer; fresh proc, sysfs, cgroup2,
# /run, /tmp), the package installed there with dpkg, then: group and modes, the service active
# with Type=notify's status "collecting", `gpufault status` for root and refused for another
# user, a kernel record injected into /dev/kmsg seen by `gpufault watch --json`, the metrics
# textfile, a reload in place, a stop, a purge. Opt-in (GPUFAULT_TEST_SYSTEMD=1: it injects a
# kernel log line and needs root, unshare and overlayfs); skipped (77) otherwise or when systemd
# does not come up. Usage: test_systemd.sh BUILD_DIR SOURCE_DIR.
set -euo pipefail
build=$(cd "$1" && pwd)
if [ "${GPUFAULT_TEST_SYSTEMD:-}" != 1 ]; then echo "SKIP: set GPUFAULT_TEST_SYSTEMD=1"; exit 77; fi
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || [ ! -x /lib/systemd/systemd ]; then
  echo "SKIP: needs root, unshare and systemd"; exit 77
fi
work=$(mktemp -d)
boot=""
cleanup() {
  [ -n "$boot" ] && kill -9 "$boot" 2>/dev/null || true
  sleep 0.5
  rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT
(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg" >"$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log"; exit 1; }
cat >"$work/boot.sh" <<'BOOT'
#!/bin/bash
set -e
w=$1
mkdir -p "$w/t" "$w/root"
mount -t tmpfs tmpfs "$w/t"
mkdir -p "$w/t/upper" "$w/t/work"
mount -t overlay overlay -o "lowerdir=/,upperdir=$w/t/upper,workdir=$w/t/work" "$w/root"
mount -t proc proc "$w/root/proc"
mount -t sysfs sysfs "$w/root/sys"
mount -t cgroup2 cgroup2 "$w/root/sys/fs/cgroup"
mount -t tmpfs tmpfs "$w/root/run"
mount -t tmpfs tmpfs "$w/root/tmp"
mount --rbind /dev "$w/root/dev"
exec chroot "$w/root" /usr/bin/env container=gpufault-test /lib/systemd/systemd --system \
  --unit=multi-user.target
BOOT
chmod +x "$work/boot.sh"
unshare --mount --pid --fork --uts --ipc --propagation private "$work/boot.sh" "$work" \
  >"$work/boot.log" 2>&1 &
for _ in $(seq 1 100); do
  boot=$(pgrep -f "systemd --system --unit=multi-user.target" | while read -r p; do
    [ "$(readlink /proc/$p/root)" = "$work/root" ] && echo "$p"; done | head -1) || true
  [ -n "$boot" ] && break
  sleep 0.1
done
if [ -z "$boot" ]; then echo "SKIP: systemd did not start"; cat "$work/boot.log"; exit 77; fi
inside() { timeout "${T:-60}" nsenter -t "$boot" -m -p -u -i -r -w /bin/sh -c "$1"; }
state=""
deadline=$((SECONDS + 120))  # the manager's bus comes up after its PID 1; a unit may hang
while [ "$SECONDS" -lt "$deadline" ]; do
  state=$(T=$((deadline - SECONDS + 1)) inside 'systemctl is-system-running --wait 2>/dev/null' || true)
  [ -n "$state" ] && break
  sleep 0.5
done
case "$state" in
  running | degraded) ;;
  *) echo "SKIP: systemd is '${state:-not answering after 120 s}'"; exit 77 ;;
esac
cp "$work"/pkg/gpufault_*.deb "/proc/$boot/root/tmp/gpufault.deb"

fail=0
check() { if ! eval "$1"; then echo "FAIL: $2"; fail=1; fi; }
inside 'dpkg -i /tmp/gpufault.deb >/tmp/dpkg.log 2>&1 && systemctl enable --now gpufaultd' ||
  { inside 'cat /tmp/dpkg.log; journalctl -u gpufaultd --no-pager | tail -20'; exit 1; }
show() { inside "systemctl show -p $1 --value gpufaultd"; }
for _ in $(seq 1 50); do [ "$(show StatusText)" = collecting ] && break; sleep 0.2; done
check '[ "$(show ActiveState)" = active ]' "service not active: $(show ActiveState)"
check '[ "$(show StatusText)" = collecting ]' "status text '$(show StatusText)'"
check 'inside "getent group gpufault" >/dev/null' "no gpufault group"
check '[ "$(inside "stat -c %a:%U:%G /var/lib/gpufault")" = 2750:root:gpufault ]' \
  "/var/lib/gpufault is $(inside 'stat -c %a:%U:%G /var/lib/gpufault')"
check '[ "$(inside "stat -c %a:%U:%G /run/gpufault/gpufaultd.sock")" = 660:root:gpufault ]' \
  "socket is $(inside 'stat -c %a:%U:%G /run/gpufault/gpufaultd.sock')"
check 'inside "gpufault status" | grep -q "^kmsg"' "gpufault status has no kmsg source"
inside 'useradd -M nobody2 2>/dev/null || true'
other=$(inside 'setpriv --reuid=nobody2 --regid=nogroup --clear-groups gpufault status 2>&1; echo "rc=$?"' || true)
check 'echo "$other" | grep -q "Permission denied" && echo "$other" | grep -q "rc=2"' \
  "gpufault status for a user outside the gpufault group: $other"
# A kernel record, seen through watch.
tag="gpufault-test-$(cat /proc/sys/kernel/random/uuid)"
inside "timeout 8 gpufault watch --json > /tmp/watch.out 2>&1 &" || true
sleep 1
printf '<3>%s[4242]: segfault at 8a ip 00007f0000001000 sp 00007ffd00000000 error 4 in libx.so[7f0000000000+2000]\n' \
  "$tag" >/dev/kmsg
for _ in $(seq 1 40); do inside "grep -q '$tag' /tmp/watch.out" && break; sleep 0.2; done
check 'inside "grep -q \"$tag\" /tmp/watch.out"' "watch did not show the injected record"
# Metrics: switched on by the configuration, written atomically, world-readable.
inside "sed -i '/^\[metrics\]/,/^\[/ { s|^path = .*|path = \"/run/gpufault/gpufault.prom\"|; s|^interval_ms = .*|interval_ms = 200| }' /etc/gpufault/gpufaultd.conf"
pid=$(show MainPID)
inside 'systemctl reload gpufaultd'
sleep 2
check '[ "$(show MainPID)" = "$pid" ] && [ "$(show ActiveState)" = active ]' "reload restarted the service"
check 'inside "grep -q ^gpufault_ /run/gpufault/gpufault.prom"' "no metrics textfile after the reload"
start=$(date +%s%N)
inside 'systemctl stop gpufaultd'
ms=$((($(date +%s%N) - start) / 1000000))
check '[ "$(show ActiveState)" = inactive ]' "not stopped: $(show ActiveState)"
check '[ "$ms" -lt 5000 ]' "stop took $ms ms"
inside 'dpkg --purge gpufault >/dev/null 2>&1'
check '! inside "getent group gpufault" >/dev/null' "purge left the gpufault group"
check '! inside "test -e /etc/gpufault"' "purge left /etc/gpufault"
[ "$fail" = 0 ] && echo "OK: .deb under systemd $(inside 'systemctl --version | head -1'), stop $ms ms"
exit "$fail"
